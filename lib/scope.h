/*
 * scope.h: who an inject rule or a grant is for, as the proxy can tell
 * from a connection's verified stamp (stamp.h).
 *
 * A scope is one principal word:
 *   10.88.0.5            the stamp's src (any net)
 *   10.88.0.5@podman     src@net exactly
 *   container:<hex>      the stamp's as=container:<id> starts with <hex>
 *                        (12..64 hex digits, case-insensitive; kept lower-case)
 *   build:<scope>, user  the connection's as= exactly: the stamp's, or a build
 *                        token's build:NAME (buildtok.h), which comes first
 *   build:*              any build: an as= that starts with build:
 *   project:NAME         every run of a project (`sluice run`'s stamps:
 *                        as=project:NAME, or project:NAME/AGENT with
 *                        --name): as= is it or starts with it and '/'
 *   project:NAME/AGENT   only that agent's runs: as= exactly
 *                        (NAME and AGENT 1..40 bytes of [A-Za-z0-9._-])
 *   any other name       a container name: the proxy cannot tell it from a
 *                        stamp, so scope_matches never matches it (kept as
 *                        written for a caller that resolves names)
 *
 * A container on a bridge network is stamped with its address and network
 * only (the forwarder attributes by cgroup, as=, on its --own listeners):
 * name it by ADDR@NET. A connection with no verified stamp matches no
 * scope at all. Parsing and matching allocate nothing and do no I/O.
 */
#ifndef SLUICE_SCOPE_H
#define SLUICE_SCOPE_H

#include <stdbool.h>
#include <stddef.h>

#define SCOPE_TEXT_MAX 128
#define SCOPE_ID_PREFIX_MIN 12
#define SCOPE_ID_LEN 64
#define SCOPE_PROJECT_NAME_MAX 40 /* a project's NAME, an agent's AGENT (lib/ports.h's) */

enum scope_kind {
	SCOPE_ADDR,      /* canonical address: the stamp's src */
	SCOPE_SRC_NET,   /* "src@net": the connection's who */
	SCOPE_CONTAINER, /* "container:<12..64 lower-case hex>": prefix of as= */
	SCOPE_AS,        /* "build:<scope>" or "user": as= exactly */
	SCOPE_NAME,      /* a container name; never matched from a stamp */
	SCOPE_PROJECT,   /* "project:NAME[/AGENT]": as= is it (or, NAME alone, its agents') */
};

struct scope {
	enum scope_kind kind;
	char text[SCOPE_TEXT_MAX + 1]; /* canonical form, as printed */
};

/*
 * Parse the word s (NUL-terminated) into *out. Returns 0, or -1 with *err
 * a static message ("container:<id> needs 12 to 64 hex digits", "expected
 * ADDR@NET", ...). "unattributed" is not a scope: -1.
 */
int scope_parse(const char *s, struct scope *out, const char **err);

/*
 * Whether sc matches a connection: who its "src@net" (NULL: unattributed,
 * which matches nothing), src its stamp's source address, as its stamp's
 * principal (NULL or "" when the stamp carries none).
 */
bool scope_matches(const struct scope *sc, const char *who, const char *src, const char *as);

/* Whether sc is among v[0..n) (the same canonical text). */
bool scope_in(const struct scope *sc, const struct scope *v, size_t n);

#endif
