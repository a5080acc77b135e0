/*
 * principal.h: naming a log row's principal from engine snapshots.
 *
 * principal.c applies the snapshots (snapshot.h) to rows with the design
 * brief's rule (the snapshot before a row if it still holds the row's
 * address, else the one after, never one past a snapshot that dropped it).
 * Nothing here does I/O; resolution is a pure function of its inputs, so a
 * fix to it names old rows too. Kept apart from cli.h so the unit tests
 * use it without the rest of the CLI.
 */
#ifndef SLUICE_PRINCIPAL_H
#define SLUICE_PRINCIPAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "snapshot.h"

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

/* principal.c */

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
