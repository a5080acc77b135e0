/*
 * forward.h: sluice-forward's table of contents.
 *
 * main.c    arguments, key, listeners, signals, the loop; --wait hands over
 *           to wait.c
 * listen.c  the listeners: inside --netns (followed when the namespace
 *           there is re-created) and in our own namespace (--own)
 * conn.c    one client connection: read the first head, refuse it unless
 *           canonical, strip every client stamp, add ours, then relay bytes;
 *           on a --dns listener (TCP) the first query tagged (with --key
 *           and --net; else nothing), then bytes relayed
 * dns.c     --dns over UDP: one connected upstream socket per client
 *           address, a bounded pool of them, each query tagged with who
 *           asked (lib/dnstag.h: with --key and --net; else passed as is)
 * cgroup.c  who is behind a connection on an --own listener: the client
 *           socket's cgroup (sock_diag), classified into a principal
 *           (lib/cgpath.c) where the engine made it, for a container the
 *           engine's snapshot lists (lib/snapids.c)
 * wait.c    --wait: until something listens on ADDR:PORT in a namespace
 * fake.c    --transparent: a fake address per granted name in the run's
 *           answers, and back from the address to the name
 *
 * Runs inside the sandbox as root, at the last point where a container
 * still has its own address. Parses nothing after the first head; of
 * --dns traffic only what tagging needs (each UDP query, a TCP
 * connection's first) and, with --transparent, each UDP answer's question
 * and record types (lib/dns_fake.c). Upstream sockets are always made in our own
 * namespace.
 */
#ifndef SLUICE_FORWARD_H
#define SLUICE_FORWARD_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>

#include "loop.h"
#include "snapids.h"
#include "stamp.h"

#define FWD_LISTEN_MAX 16
#define FWD_HEAD_MAX (16 * 1024)   /* the first head, all lines */
#define FWD_HEAD_TIMEOUT_MS 10000
#define FWD_DIAL_TIMEOUT_MS 2000   /* an unanswered connect is re-dialled */
#define FWD_DIAL_TRIES 8
#define FWD_RST_WAIT_MS 2000       /* waiting for the client to ack before an RST */
#define FWD_FOLLOW_MS 100          /* how often --netns PATH is looked at */
#define FWD_DNS_MAX 4              /* --dns pairs (each is two listeners) */
#define FWD_DNS_FLOWS_MAX 1024     /* UDP clients relayed at once; past it the LRU one goes */
#define FWD_DNS_IDLE_MS 10000      /* a UDP flow without a datagram this long is closed */
#define FWD_DNS_SWEEP_MS 1000      /* how often idle flows are looked for */
#define FWD_DNS_QUERY_MAX 65535    /* a TCP connection's first query, as it came and tagged */
#define FAKE_NET 0xf0000000u       /* 240.0.0.0: --transparent's addresses, FAKE_NET + 1 + slot */
#define FAKE_PREFIX 20             /* 240.0.0.0/20 */
#define FAKE_SLOTS 4094            /* 240.0.0.1 .. 240.0.15.254 */
#define FAKE_TTL 10                /* seconds, in the answers */
#define FAKE_HOLD_MS 120000        /* an address unanswered this long may name another name */

enum fwd_kind {
	FWD_STAMP,   /* LISTEN=UPSTREAM or --own: TCP, the first head stamped */
	FWD_DNS_TCP, /* --dns: TCP, the first query tagged (dns_tag), then bytes relayed */
	FWD_DNS_UDP, /* --dns: UDP, each client's queries tagged, on its own upstream socket */
	FWD_TRANSPARENT, /* --transparent: TCP to a fake address, sent on as a CONNECT to its name */
};

struct fwd_listener {
	struct loop_io io;
	struct sockaddr_storage addr;
	struct sockaddr_storage upstream;
	struct forwarder *fw;
	enum fwd_kind kind;
	bool own; /* --own: in our own namespace, attributed by cgroup */
};

struct dns_relay;
struct fake_map;

#define CGROUP_CACHE 8
#define FWD_ENGINE_CGROUPS_MAX 8

/*
 * The engine's containers as its latest snapshot of our --net lists them
 * (STATE/engine.jsonl, re-read when the file changes).
 */
struct engine_state {
	char path[PATH_MAX];       /* --engine-state, or engine.jsonl beside --key */
	bool looked;               /* the fields below say what was last seen there */
	bool present;              /* a file was there (then dev ... ctime are it) */
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	struct timespec ctime;     /* a chmod or chown changes only this */
	char (*ids)[SNAPIDS_ID_LEN + 1]; /* SNAPIDS_MAX, sorted; owned */
	size_t nids;
};

/*
 * The cgroup2 hierarchy, where the engine makes its cgroups, and the last
 * few cgroup id -> principal answers.
 */
struct cgroup_map {
	char root[PATH_MAX]; /* where cgroup2 is mounted */
	const char *parents[FWD_ENGINE_CGROUPS_MAX]; /* --engine-cgroup, relative to root */
	size_t nparents;
	uid_t engine_uid;    /* --engine-uid: owns the parents and what the engine makes there */
	struct engine_state engine;
	struct {
		uint64_t id;
		uint64_t until_ms; /* loop time; 0: empty */
		char principal[STAMP_AS_MAX + 1];
	} cache[CGROUP_CACHE];
	size_t next; /* the slot written next */
};

struct forwarder {
	struct loop *loop;
	struct fwd_listener listeners[FWD_LISTEN_MAX];
	size_t nlisteners;
	struct stamp_key key; /* the current key, used to sign */
	char net[STAMP_NET_MAX + 1];
	bool dns_tag;         /* --key and --net: --dns queries carry a tag (lib/dnstag.h) */
	char src[46];         /* --src: every stamp's src, canonical; "": the client's address */
	char as[STAMP_AS_MAX + 1]; /* --as: every non-own listener's stamps' as=; "": none */
	struct sockaddr_storage dial_from; /* our own loopback source toward a loopback upstream */
	char boot[17];        /* random per start */
	uint64_t seq;         /* per boot, one per connection */
	uint32_t mark;        /* --mark: SO_MARK on upstream sockets; 0 none */
	bool trace;           /* --trace: each connection's state transitions on stderr */
	struct conn *dead;    /* closed, freed before the loop sleeps */
	unsigned nconns;
	bool failed;          /* stopped by an error, not a signal */
	struct dns_relay *dns; /* the UDP flows of every --dns listener; NULL without */
	struct fake_map *fake; /* --transparent: name <-> fake address; NULL without */

	/* --netns */
	const char *netns;    /* PATH, or NULL: every listener in our own namespace */
	int self_ns;          /* our own namespace; -1 without --netns */
	dev_t ns_dev;         /* the namespace the --netns listeners are in */
	ino_t ns_ino;
	dev_t bad_dev;        /* a namespace listening in failed (said once) */
	ino_t bad_ino;
	struct loop_timer follow;

	/* --own */
	int diag;             /* NETLINK_SOCK_DIAG socket in our own namespace; -1 */
	struct cgroup_map cgroups;
};

/* listen.c */
/*
 * Open every listener: --own ones here, the others inside fw->netns (then
 * followed every FWD_FOLLOW_MS) or here. Returns 0, or -1 after printing.
 */
int listen_start(struct forwarder *fw);
void listen_stop(struct forwarder *fw);

/* conn.c */
/* Take the accepted fd; as is the principal for the stamp, or NULL for none. */
void conn_accept(struct forwarder *fw, struct fwd_listener *ln, int fd,
		 const struct sockaddr_storage *peer, const char *as);
void conn_free_dead(struct forwarder *fw);
/* A client's address as a stamp or a tag names it (IPv4-mapped becomes IPv4). */
void conn_addr_text(const struct sockaddr_storage *ss, char *out, size_t size);

/* dns.c */
/* The flow pool, when a listener is FWD_DNS_UDP. Returns 0, or -1 after printing. */
int dns_start(struct forwarder *fw);
void dns_stop(struct forwarder *fw);
/*
 * A nonblocking UDP socket bound to addr (IP_FREEBIND, and IP(V6)_PKTINFO to
 * answer from the address asked), in whatever namespace we are in now.
 * Returns the fd, or -1 with errno and nothing left open.
 */
int dns_socket(const struct sockaddr_storage *addr);
/* The loop callback of a FWD_DNS_UDP listener (io->arg is the listener). */
void dns_on_query(struct loop *l, struct loop_io *io, uint32_t events);
/* Close the flows of ln, whose socket is being replaced (their clients were elsewhere). */
void dns_forget(struct forwarder *fw, const struct fwd_listener *ln);
/*
 * The query q[0..len) from the client at src (conn_addr_text) tagged with
 * fw's net and key into out: its length, or -1 when q is no query
 * lib/dnstag.c can read (the caller answers dns_formerr) or out is short.
 */
long dns_tag(struct forwarder *fw, const char *src, const uint8_t *q, size_t len, uint8_t *out,
	     size_t max);
/* A FORMERR answer to q[0..len) into out[12]: its length, 0 when q has no header. */
size_t dns_formerr(const uint8_t *q, size_t len, uint8_t *out);

/* fake.c */
/* The map, for --transparent. Returns 0, or -1 after printing. */
int fake_start(struct forwarder *fw);
void fake_stop(struct forwarder *fw);
/*
 * The answer msg[0..len) (room for max) as the run gets it: a name that
 * resolves gets its fake address instead (lib/dns_fake.h); anything else
 * passes as it came. Returns the new length.
 */
size_t fake_answer(struct forwarder *fw, uint8_t *msg, size_t len, size_t max);
/* The name whose fake address is dst, or NULL (not one, or not given). */
const char *fake_name(const struct forwarder *fw, const struct sockaddr_storage *dst);

/* cgroup.c */
/*
 * Find the cgroup2 mount and make room for the engine's ids; the caller
 * has set parents, nparents, engine_uid and engine.path. Returns 0, or -1
 * with *err.
 */
int cgroup_map_init(struct cgroup_map *m, const char **err);
void cgroup_map_release(struct cgroup_map *m);
/*
 * The principal of the client of fd, accepted on an --own listener from
 * peer, into out. Returns 0, or -1 after printing one line (the caller
 * resets the client).
 */
int cgroup_attribute(struct forwarder *fw, int fd, const struct sockaddr_storage *peer,
		     char out[STAMP_AS_MAX + 1]);

/* wait.c */
/* `--wait NETNS_PATH ADDR:PORT [--timeout S]` (argv[0] is "--wait"). Returns the exit code. */
int wait_main(int argc, char **argv);

#endif
