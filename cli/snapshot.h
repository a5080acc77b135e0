/*
 * snapshot.h: engine snapshots, the lines of STATE/engine.jsonl (snapshot.c).
 *
 * A snapshot is one line written by `sluice engine`: the containers running
 * at time t as seen by the engine whose containers the forwarder of network
 * `net` stamps. snapshot.c reads and writes those lines and indexes them;
 * principal.h applies them to rows. Nothing here does I/O except
 * snapshot_load.
 */
#ifndef SLUICE_SNAPSHOT_H
#define SLUICE_SNAPSHOT_H

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
 * Every snapshot read, sorted by (net, t, line) once snapshots_index has run,
 * with refs: every (snapshot, container) pair sorted by (id, t, line).
 */
struct snapshots {
	struct snapshot *v;
	size_t n, cap;
	struct snap_ref *refs;
	size_t nrefs;
};

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

/* Sort all and build its refs, which principal_from_row searches. Returns 0 or -1 (ENOMEM). */
int snapshots_index(struct snapshots *all);

/*
 * Read the snapshot file path into all (released first) and index it. A
 * missing file is no snapshots. A line that does not parse is reported on
 * err as "PREFIX: PATH:LINE: reason" and skipped; a last line without its
 * newline (a write in progress) is skipped quietly. Returns 0, or -1 after
 * reporting (unreadable file, out of memory).
 */
int snapshot_load(const char *path, const char *prefix, struct snapshots *all, FILE *err);

#endif
