/*
 * snapids.h: the container ids in an engine snapshot, for sluice-forward.
 *
 * STATE/engine.jsonl holds one JSON object per line, written by `sluice
 * engine` (cli/snapshot.c has the format):
 *   {"t":"...","net":"podman","containers":[{"id":"<64 hex>","name":...},...]}
 * The forwarder links no JSON library, so this reads just enough of a line:
 * its "t" (a string), "net" and each container's "id", skipping every other
 * value, through a bounds-checked cursor. Strict where it reads (a
 * duplicate or missing key, a bad id, trailing bytes: malformed). Allocates
 * nothing; does no I/O.
 */
#ifndef SLUICE_SNAPIDS_H
#define SLUICE_SNAPIDS_H

#include <stdbool.h>
#include <stddef.h>

#define SNAPIDS_ID_LEN 64
#define SNAPIDS_NET_MAX 64
#define SNAPIDS_MAX 4096   /* containers in one snapshot; more is malformed here */

/*
 * Parse one line (line[0..len), no newline) into net and ids (cap
 * entries), sorted, *n of them. Returns 0, or -1 with *err (malformed, or
 * more than cap containers).
 */
int snapids_parse(const char *line, size_t len, char net[SNAPIDS_NET_MAX + 1],
		  char (*ids)[SNAPIDS_ID_LEN + 1], size_t cap, size_t *n, const char **err);

/*
 * The last snapshot of net in buf[0..len), a tail of the file (at_start:
 * it begins the file, else its first line is taken as cut off). Only lines
 * ending in a newline count; one that does not parse is passed over.
 * Returns 1 found (ids, *n), 0 none.
 */
int snapids_last(const char *buf, size_t len, bool at_start, const char *net,
		 char (*ids)[SNAPIDS_ID_LEN + 1], size_t cap, size_t *n);

/* Whether id is among ids[0..n) (sorted, as snapids_parse leaves them). */
bool snapids_has(const char (*ids)[SNAPIDS_ID_LEN + 1], size_t n, const char *id);

#endif
