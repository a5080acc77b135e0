/*
 * principal.h: engine snapshots and naming a log row's principal from them.
 *
 * A snapshot is one line of STATE/engine.jsonl, written by `sluice engine`:
 * the containers running at time t as seen by the engine whose containers
 * the forwarder of network `net` stamps. snapshot.c reads and writes those
 * lines; principal.c applies them to rows with the design brief's rule (the
 * snapshot before a row if it still holds the row's address, else the one
 * after, never one past a snapshot that dropped it). Nothing here does I/O
 * except snapshot_load; resolution is a pure function of its inputs, so a
 * fix to it names old rows too. Kept apart from cli.h so the unit tests
 * use it without the rest of the CLI.
 */
#ifndef SLUICE_PRINCIPAL_H
#define SLUICE_PRINCIPAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define SNAP_ID_LEN 64   /* a container id: 64 lower-case hex */
#define SNAP_TS_LEN 24   /* "2026-11-30T03:01:02.123Z" */
#define SNAP_NET_MAX 64  /* a network name's bytes */
#define SNAP_LINE_MAX (16 * 1024 * 1024)

/* An address as compared: family (AF_INET or AF_INET6) and its bytes. */
struct snap_addr {
	int family;
	unsigned char a[16]; /* 4 used for AF_INET */
};

struct snap_ctr {
	char id[SNAP_ID_LEN + 1];
	char *name;              /* owned, never NULL */
	char *project;           /* owned compose project, or NULL */
	char *netmode;           /* owned ("bridge", "host", ...), or NULL */
	struct snap_addr *addrs; /* owned, sorted, no duplicates */
	size_t naddrs;
};

struct snapshot {
	int64_t t_ms;                /* ms since the epoch, UTC */
	char t[SNAP_TS_LEN + 1];     /* as written */
	char net[SNAP_NET_MAX + 1];
	struct snap_ctr *ctrs;       /* owned, sorted by id */
	size_t nctrs;
	size_t line;                 /* line in the file (1-based); order among equal t */
};

/* Where one container id appears: snapshot v[snap], container ctrs[ctr]. */
struct snap_ref {
	uint32_t snap;
	uint32_t ctr;
};

/*
 * Every snapshot read, sorted by (net, t, line) once principal_index has run,
 * with refs: every (snapshot, container) pair sorted by (id, t, line).
 */
struct snapshots {
	struct snapshot *v;
	size_t n, cap;
	struct snap_ref *refs;
	size_t nrefs;
};

enum principal_kind {
	PRINCIPAL_UNATTRIBUTED, /* no verified stamp */
	PRINCIPAL_ADDRESS,      /* a stamp whose address no snapshot names */
	PRINCIPAL_CONTAINER,
	PRINCIPAL_BUILD,
	PRINCIPAL_USER,         /* the sandbox's own user */
	PRINCIPAL_PROJECT,      /* a `sluice run`'s project (name: NAME or NAME/AGENT) */
};

/*
 * A row's principal. Strings point into the snapshots or into the row's
 * strings; they live as long as both.
 */
struct principal {
	enum principal_kind kind;
	const char *name;    /* container name, build scope, or project NAME[/AGENT]; NULL otherwise */
	const char *id;      /* container: 64 hex; NULL otherwise */
	const char *project; /* container: compose project, or NULL */
	const char *src;     /* the row's source address, or NULL */
	const char *net;     /* the row's network name, or NULL */
	const char *run_project; /* as=project:NAME[/AGENT]'s NAME[/AGENT] (a `sluice run`'s), or
				    NULL; the kind is PRINCIPAL_PROJECT unless a snapshot names the
				    run's container (--image) */
	const struct snapshot *snap; /* the snapshot that named the container, or NULL */
};

/* What resolution needs of a row; NULL strings for null or absent keys. */
struct principal_row {
	int64_t t_ms;
	bool has_t;     /* false: ts missing or unreadable (only as= can name it) */
	const char *src;
	const char *net;
	const char *as; /* container:<id> | build:<scope> | user | project:NAME[/AGENT] (a row's
			   build, when it has one) */
};

/* snapshot.c */

/*
 * Parse one snapshot line (len bytes, no newline) into s, which the caller
 * releases with snapshot_release. Returns 0, or -1 with *err set (static
 * text) and s holding nothing.
 */
int snapshot_parse(const char *line, size_t len, struct snapshot *s, const char **err);
void snapshot_release(struct snapshot *s);
void snapshot_ctr_release(struct snap_ctr *c);

/* A container id: 64 lowercase hex. */
bool snapshot_is_id(const char *s);

/* A name fit for the snapshot file, a table cell and a --who argument: 1-255 bytes, no control bytes. */
bool snapshot_is_name(const char *s);

/*
 * Render s as one line ending in '\n' into a new heap string (the caller
 * frees it). Returns NULL when out of memory.
 */
char *snapshot_format(const struct snapshot *s);

/* Same containers (id, name, project, netmode, addresses), ignoring t and line. */
bool snapshot_same(const struct snapshot *a, const struct snapshot *b);

/* Sort s's containers by id and each one's addresses, dropping duplicate addresses. */
void snapshot_normalize(struct snapshot *s);

/* Parse an address literal ("10.88.0.5", "fd00::5") into a. Returns 0 or -1. */
int snapshot_addr_parse(const char *text, struct snap_addr *a);

/* Parse "2026-11-30T03:01:02.123Z" (the log's ts). Returns 0 or -1. */
int snapshot_ts_parse(const char *ts, int64_t *ms);

/* The log's ts text of ms into buf (at least SNAP_TS_LEN + 1 bytes). */
void snapshot_ts_format(int64_t ms, char *buf);

/* Append a parsed snapshot (taken over by all; *s is emptied). Returns 0 or -1 (ENOMEM). */
int snapshots_add(struct snapshots *all, struct snapshot *s);
void snapshots_release(struct snapshots *all);

/*
 * Read the snapshot file path into all (released first) and index it. A
 * missing file is no snapshots. A line that does not parse is reported on
 * err as "PREFIX: PATH:LINE: reason" and skipped; a last line without its
 * newline (a write in progress) is skipped quietly. Returns 0, or -1 after
 * reporting (unreadable file, out of memory).
 */
int snapshot_load(const char *path, const char *prefix, struct snapshots *all, FILE *err);

/* principal.c */

/* Sort all and build its refs, which principal_from_row searches. Returns 0 or -1 (ENOMEM). */
int principal_index(struct snapshots *all);

/*
 * Name the principal of row from all (indexed). An as= of container:<id>
 * names the container from the latest snapshot at or before the row holding
 * that id (of any net), else the first after; build:X and user are taken
 * as they are; project:NAME[/AGENT] is the run's container when the
 * address rule below finds one, else the project. Otherwise, for src@net:
 * the latest snapshot S of net with S.t <= t; if S holds src, that container; else the first snapshot S' of
 * net with S'.t > t; if S' holds src, that container; else the bare
 * address. No src: unattributed, unless as= is build:X (a build token's,
 * which needs no stamp). Fills *p; never fails.
 */
void principal_from_row(const struct snapshots *all, const struct principal_row *row,
			struct principal *p);

/*
 * The principal as one line for people, into buf: "web (demo)",
 * "container:0123456789ab", "build:X", "user", "project:NAME[/AGENT]", "10.88.0.5@podman",
 * "unattributed". Cut to size.
 */
void principal_label(const struct principal *p, char *buf, size_t size);

/* Its kind as the JSON name: container, build, user, project, address, unattributed. */
const char *principal_kind_name(enum principal_kind kind);

/*
 * Whether p answers to who: "unattributed", "user", "build:X",
 * "project:NAME" (its runs, its agents' too), "project:NAME/AGENT", an address
 * (ADDR or ADDR@NET: rows from that source, whatever they resolve to), a
 * container id prefix of 12 to 64 hex, or a container name.
 */
bool principal_matches_who(const char *who, const struct principal *p);

#endif
