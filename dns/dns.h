/*
 * dns.h: sluice-dns, the sandbox's only resolver: its parts and the state
 * they share.
 *
 *   main.c      arguments, config, listeners, drop to `user`, the loop
 *   judge.c     the policy: which names and types may be answered; the
 *               grant store and the stamp keys re-read each second; the
 *               wildcard budget, per asker
 *   client.c    the listeners: UDP in batches, TCP connections (capped per
 *               asker)
 *   query.c     one query from its asker tag (lib/dnstag.h) to answer and row
 *   cache.c     answers by name and type, with TTLs and a hard cap;
 *               fetches in flight, so identical queries wait for one
 *   upstream.c  the pinned upstreams: UDP, TCP and DNS over TLS
 *   wire.c      writing DNS messages: answers, refusals, EDNS
 *   row.c       the log row of a query, and its count in the metrics
 *
 * Single-threaded on lib/loop.c; nothing blocks.
 */
#ifndef SLUICE_DNS_H
#define SLUICE_DNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "config.h"
#include "dns_msg.h"
#include "dnstag.h"
#include "hmap.h"
#include "loop.h"
#include "lru.h"
#include "netlog.h"
#include "policy.h"
#include "store.h"

#define DNS_UDP_MAX 1232    /* the EDNS0 payload size we offer and answer within */
#define DNS_MSG_MAX 65535   /* a TCP message */
#define DNS_QUESTION_MAX (DNS_NAME_MAX + 2 + 4)
#define DNS_EDE_BLOCKED 15  /* RFC 8914 */
#define DNS_EDE_NETWORK 23  /* "Network Error": no upstream answered */

enum dns_rcode {
	RCODE_NOERROR = 0,
	RCODE_FORMERR = 1,
	RCODE_SERVFAIL = 2,
	RCODE_NXDOMAIN = 3,
	RCODE_NOTIMP = 4,
	WIRE_BADVERS = 16, /* extended: its upper bits in the OPT record */
};

struct dnsd;
struct tcp_client;
struct fetch;

/* Where an answer goes back: a UDP peer on a listener, or a TCP connection. */
struct reply_to {
	int udp_fd;                  /* the listener's socket; -1 for TCP */
	struct tcp_client *tcp;      /* held (tcp_client_hold) until answered */
	struct sockaddr_storage peer;
	socklen_t peer_len;
};

/* One client query, parsed, while it is judged, looked up and answered. */
struct query {
	struct query *next; /* a fetch's waiters */
	struct reply_to to;
	struct dns_query q;
	struct dnstag asker; /* who asked: the forwarder's tag, believed (tagged) */
	bool tagged;         /* false: unattributed (asker zeroed) */
	uint8_t question[DNS_QUESTION_MAX]; /* as the client wrote it, echoed */
	size_t question_len;
	double start_ms;
	/* the judgement */
	struct host host; /* the name, canonical (judge_query) */
	const char *decision, *reason;
	char grant[HOST_NAME_MAX_LEN + 8];
	bool filter;   /* A/AAAA: answers pass the deny list */
	bool cache_hit;
	const char *upstream; /* the one that answered, or NULL */
	char detail[160];
};

/* A cached answer: the upstream's records for a name and type, unfiltered. */
struct cache_entry {
	struct hmap_node node; /* in the cache's table, by cache_hash */
	struct list_node lru;  /* the cache's LRU order */
	uint64_t expires_ms; /* monotonic */
	uint32_t ttl;        /* as stored, after dns-min-ttl and dns-max-ttl */
	uint16_t qtype;
	uint8_t rcode;       /* NOERROR or NXDOMAIN */
	bool loose;          /* not in the cache: freed once answered from */
	int32_t memo_wild;   /* judge.c: the covering wildcard grant's index, -1 none ... */
	uint64_t memo_gen;   /* ... under this policy snapshot (0: nothing remembered) */
	uint16_t ancount;
	uint16_t name_len;
	size_t rr_len;
	uint8_t data[];      /* the name (name_len + 1), then the records */
};

/* One upstream lookup; every identical query meanwhile waits on it. */
struct fetch {
	struct hmap_node node; /* in the fetches' table, by cache_hash */
	char name[DNS_NAME_MAX + 1];
	size_t name_len;
	uint16_t qtype;
	struct query *waiters;
	size_t nwaiters;
	unsigned upstream;   /* the one asked now */
	unsigned tried;      /* how many were asked */
	uint16_t id;         /* our id for it */
	bool tcp;            /* asked over TCP (or TLS) */
	bool retried;        /* asked again after a kept connection ended */
	bool done;
	int udp_fd;
	struct loop_io io;
	struct loop_timer timer;
	struct fetch *cnext; /* an upstream connection's pending list */
	const char *why;     /* the last failure, for the rows */
};

struct upstream;
struct metrics_server;

struct dns_listener {
	struct loop_io io;
	bool tcp;
	struct sockaddr_storage addr;
};

struct dnsd {
	struct config *config;
	char config_path[PATH_MAX];
	struct loop *loop;
	struct netlog *log;
	struct policy *policy;
	uint64_t policy_gen; /* counts the snapshots; the first is 1 */
	time_t next_expiry;  /* the earliest once grant's expiry ahead, 0 none */
	char run_id[GRANT_RUN_ID_LEN + 1]; /* the running proxy's, "" none */
	struct watched_file watch_config, watch_store, watch_run, watch_keys;
	struct stamp_key keys[STAMP_KEYS_MAX]; /* STATE/stamp.key: what a tag is verified with */
	size_t nkeys;
	struct loop_timer watch_timer;
	struct loop_io sig_io;
	int run_fd; /* STATE/dns.run, share-locked while we run */
	struct dns_listener listeners[2 * CONFIG_MAX_LISTEN];
	size_t nlisteners;
	struct upstream *upstreams;
	size_t nupstreams;
	void *cache;   /* cache.c's */
	void *budget;  /* judge.c's wildcard budgets, one per asker and suffix */
	struct list tcp_clients; /* client.c's, newest first */
	size_t ntcp;
	struct netlog_out row; /* row.c's scratch */
	struct metrics_server *metrics; /* row.c: dns-metrics-listen's GET /metrics, or NULL */
};

/* judge.c */
int judge_init(struct dnsd *d);
void judge_release(struct dnsd *d);
void judge_reload(struct dnsd *d, const char *why);
#define JUDGE_LOOKUP (-1)
/* Decide qr's decision and reason: JUDGE_LOOKUP to look it up, else the rcode to answer now. */
int judge_query(struct dnsd *d, struct query *qr, struct cache_entry *memo);
/* Whether an address in an answer for name may reach the client (the deny list, allow-private). */
bool judge_addr(struct dnsd *d, const struct host *h, int family, const void *addr);

/* client.c */
int client_listen(struct dnsd *d, const struct sockaddr_storage *addr);
void client_release(struct dnsd *d);
/* Send a finished answer (msg[0..len)) to where the query came from. */
void client_send(struct dnsd *d, struct reply_to *to, const uint8_t *msg, size_t len);
void tcp_client_hold(struct tcp_client *c);                     /* a waiter needs it */
/*
 * Who asks on c: set by its first query (believed: its tag was, into
 * *asker) and kept for the connection's life; *asker and *tagged then say
 * it for this query. Returns 0, or -1 when c's asker already holds
 * DNS_TCP_PER_CLIENT connections (c is reset; the query is dropped).
 */
int tcp_client_asker(struct dnsd *d, struct tcp_client *c, bool believed, struct dnstag *asker,
		     bool *tagged);
void tcp_client_release(struct dnsd *d, struct tcp_client *c); /* a waiter is done with it */

/* query.c */
/* A message from a client: parse, judge, answer or wait. Returns the answer length when
 * answered into out at once (then the caller sends it), 0 when it waits, -1 to drop it. */
long query_handle(struct dnsd *d, const uint8_t *msg, size_t len, struct reply_to *to,
		  uint8_t *out, size_t outmax);
/* A datagram too long to be a query: its row. */
void query_oversize(struct dnsd *d, const struct reply_to *to);
/* A fetch finished (entry NULL: it failed): answer and log every waiter. */
void query_fetched(struct dnsd *d, struct fetch *f, const struct cache_entry *e,
		   const char *upstream);

/* cache.c */
int cache_init(struct dnsd *d);
void cache_release(struct dnsd *d);
uint64_t cache_hash(struct dnsd *d, const char *name, size_t len, uint16_t qtype);
/* The live entry for name and type, or NULL; not const only for judge.c's memo. */
struct cache_entry *cache_get(struct dnsd *d, uint64_t hash, const char *name, size_t len,
			      uint16_t qtype);
/*
 * Store an upstream's answer to f (lib/dns_answer.c reads it): the entry,
 * or NULL with *why, and *failed when the upstream answered a failure
 * (SERVFAIL, REFUSED) rather than bytes that do not read.
 */
const struct cache_entry *cache_put(struct dnsd *d, const struct fetch *f, const uint8_t *msg,
				    size_t len, bool *failed, const char **why);
struct fetch *fetch_find(struct dnsd *d, uint64_t hash, const char *name, size_t len,
			 uint16_t qtype);
struct fetch *fetch_new(struct dnsd *d, uint64_t hash, const char *name, size_t len,
			uint16_t qtype);
void fetch_free(struct dnsd *d, struct fetch *f);
void cache_trim(struct dnsd *d);   /* down to dns-cache-entries and the byte cap */
void cache_loose_free(const struct cache_entry *e); /* an entry not kept, once used */
size_t fetch_count(struct dnsd *d);

/* upstream.c */
int upstream_init(struct dnsd *d);
void upstream_release(struct dnsd *d);
/* Ask the next upstream for f (from f->tried on); on failure of all, query_fetched(NULL). */
void upstream_ask(struct dnsd *d, struct fetch *f);
void upstream_cancel(struct dnsd *d, struct fetch *f);
/* The config was replaced by one holding the same upstreams. */
void upstream_rebind(struct dnsd *d, struct config *c);

/* wire.c */
/* The answer to qr from e (filtered when qr->filter): returns its length; sets kept/removed. */
size_t wire_answer(struct dnsd *d, struct query *qr, const struct cache_entry *e, uint8_t *out,
		   size_t max, unsigned *kept, unsigned *removed);
/* An answer with no records: rcode, and an EDE (code, text) when the client speaks EDNS. */
size_t wire_empty(const struct query *qr, int rcode, int ede, const char *text, uint8_t *out,
		  size_t max);
/* FORMERR for a message that did not parse, when its header did. */
size_t wire_formerr(const uint8_t *msg, size_t len, uint8_t *out, size_t max);
/* A query for name/qtype with id, our OPT (DNS_UDP_MAX, no options). Returns its length. */
size_t wire_query(uint16_t id, const char *name, size_t name_len, uint16_t qtype, uint8_t *out,
		  size_t max);

/* row.c */
/* The metrics, and their listener when dns-metrics-listen is given. 0, or -1 after printing. */
int row_init(struct dnsd *d);
/* rcode < 0: no answer. hold: written with the batch (netlog_hold). parsed: q holds a question. */
void row_write(struct dnsd *d, const struct query *qr, int rcode, unsigned kept,
	       unsigned removed, bool hold, bool parsed);

#endif
