/*
 * wall.h: the nftables walls, rendered as text.
 *
 * wall_render() turns a struct wall_params into the complete nft script for
 * one profile: one `table inet` sluice owns, replaced on every apply by
 * declaring it, deleting it and declaring it again in one batch, so applying
 * twice leaves one copy and nothing outside the table is touched. Pure: no
 * files, no netlink, no allocation. Loading the script is someone else's
 * job (the CLI, through libnftables); nothing here loads anything.
 *
 * Every refusal is logged ("sluice PROFILE REASON: ", to the kernel log or
 * to an NFLOG group, which works in any network namespace; `sluice wall
 * denied` reads it) and rejected (a TCP reset, else ICMP admin-prohibited
 * for either family); nothing is dropped.
 */
#ifndef SLUICE_WALL_H
#define SLUICE_WALL_H

/* a run's fake addresses for granted names (sluice-forward --transparent: forward/fake.c) */
#define WALL_FAKE_NET "240.0.0.0/20"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "iprange.h"

enum wall_profile {
	WALL_SANDBOX, /* in the sandbox: default-deny for the sandbox user and its subuids */
	WALL_GUARD,   /* in the sandbox: only the forwarder reaches the proxy's listeners */
	WALL_HOST,    /* on the host: the sandbox's process, by its cgroup v2 path */
	WALL_EGRESS,  /* on the host: the proxy's own uid may not reach denied ranges */
};

#define WALL_BAND 200      /* a project's ports: base .. base+199 */
#define WALL_LISTENERS 90  /* the proxy's listeners: base .. base+89 */
#define WALL_TOKENS_OFF 100 /* token services: base+100 .. base+189 */
#define WALL_TOKENS_N 90
#define WALL_CT_BYTE 0x53u /* the host profile's default ct mark: this byte over the base */
#define WALL_RANGES_MAX 64 /* subuid ranges, resolvers, gateways: at most this many each */

struct wall_uidrange {
	uint32_t start;
	uint32_t count; /* >= 1; start + count - 1 < UINT32_MAX */
};

struct wall_params {
	enum wall_profile profile;
	unsigned port_base; /* 1 .. 65536 - WALL_BAND */
	const char *table;  /* NULL: "sluice_<profile>_<port_base>"; else [a-z0-9_], < 64 bytes */
	bool nflog;         /* log refusals to NFLOG group nflog_group, not the kernel log */
	uint16_t nflog_group;

	/* sandbox */
	uint32_t sandbox_uid;
	const struct wall_uidrange *subuids; /* the sandbox user's /etc/subuid ranges */
	size_t nsubuids;
	const char *const *bridges;     /* bridged containers' interfaces: "podman0", or "podman*" */
	size_t nbridges;                /* 1 .. WALL_RANGES_MAX */
	struct ipnet forwarder;         /* family 0: no forwarder; else a single address */
	unsigned forwarder_port;        /* 1..65535 when forwarder is set */
	/*
	 * 1..65535: TCP to WALL_FAKE_NET, from any socket here, is redirected
	 * (nat) to this port on 127.0.0.1, the forwarder's --transparent
	 * listener; 0: none
	 */
	unsigned transparent_port;

	/* sandbox, host (and egress: extra resolvers it may reach in private space) */
	const struct ipnet *resolvers; /* none: the local resolvers, 127.0.0.0/8 and ::1 */
	size_t nresolvers;

	/* sandbox, guard: the host as the sandbox sees it (each a single address) */
	const struct ipnet *gateways;
	size_t ngateways;

	/* guard: who the forwarder is. A mark (SO_MARK) wins over the uid when nonzero. */
	uint32_t forwarder_uid;
	uint32_t forwarder_mark;

	/* host */
	const char *cgroup; /* relative to the cgroup2 mount, e.g. "sluice.slice/vm.slice" */
	uint32_t ct_mark;   /* nonzero; wall_ct_mark(port_base) by convention */

	/* egress */
	uint32_t proxy_uid;
	const struct ipnet *deny; /* the ranges the proxy's own sockets may not reach */
	size_t ndeny;
	const struct ipnet *allow; /* inside those, what the config allows anyway (allow-private) */
	size_t nallow;
};

/* "sandbox", "guard", "host", "egress". */
const char *wall_profile_name(enum wall_profile p);

/* The table p's script owns: p->table, else "sluice_<profile>_<port_base>". */
void wall_table_name(const struct wall_params *p, char *buf, size_t size);

/* The profile named s into *out. Returns 0, or -1 for an unknown name. */
int wall_profile_parse(const char *s, enum wall_profile *out);

/* The host profile's conventional conntrack mark: WALL_CT_BYTE over the port base. */
uint32_t wall_ct_mark(unsigned port_base);

/*
 * Render the nft script for p->profile into out (size bytes, NUL-ended).
 * Returns 0, or -1 with *err (a static string, or one in a static buffer
 * valid until the next call) for params the profile cannot use: a missing
 * gateway or cgroup, a resolver in public space (DNS to a public address is
 * a tunnel, not resolution), a name nft would read differently, or a
 * script longer than size.
 */
int wall_render(const struct wall_params *p, char *out, size_t size, const char **err);

/*
 * Read /etc/subuid-format text (buf, len; "name:start:count" lines, names
 * may be numeric uids, blank lines and '#' lines skipped) and copy the
 * ranges of the user called user, or whose uid is uid, into out (max
 * entries). Returns how many were found (0 is fine), or -1 with *err
 * ("line 3: count is not a number", "more than 64 ranges") when any line
 * is malformed: a file read two ways is refused rather than half-used.
 * Reads nothing outside buf[0..len).
 */
int wall_subuid_parse(const char *buf, size_t len, const char *user, uint32_t uid,
		      struct wall_uidrange *out, size_t max, const char **err);

#endif
