/*
 * ports.h: port bands, one per project, and the registry text that records them.
 *
 * A band is 200 ports from a base 41000 + k * 200 (base + 199 <= 65535, so
 * 122 bands): proxy listeners at base+0..89, token services at
 * base+100..189. The registry is a header line and one "<base> <project>"
 * line per band. These functions are pure: they parse, look up, allocate
 * and format in memory; reading, locking and renaming the file is the
 * CLI's (cli/ports.c).
 */
#ifndef SLUICE_PORTS_H
#define SLUICE_PORTS_H

#include <stdbool.h>
#include <stddef.h>

#define PORTS_FIRST 41000
#define PORTS_BAND 200
#define PORTS_PROXY_OFF 0 /* proxy listeners: base+0 .. base+89 */
#define PORTS_PROXY_N 90
#define PORTS_TOKENS_OFF 100 /* token services: base+100 .. base+189 */
#define PORTS_TOKENS_N 90
#define PORTS_BANDS_MAX ((65535 - PORTS_FIRST + 1) / PORTS_BAND) /* 122 */
#define PORTS_LAST_BASE (PORTS_FIRST + (PORTS_BANDS_MAX - 1) * PORTS_BAND)
#define PORTS_PROJECT_MAX 1024 /* bytes */
#define PORTS_HEADER "# sluice port bands v1\n"
/* the longest registry text: header, then every band with the longest project */
#define PORTS_TEXT_MAX (sizeof(PORTS_HEADER) + PORTS_BANDS_MAX * (5 + 1 + PORTS_PROJECT_MAX + 1))

struct ports_band {
	unsigned base;       /* PORTS_FIRST + k * PORTS_BAND, <= PORTS_LAST_BASE */
	const char *project; /* not owned, not NUL-terminated; valid per ports_project_check */
	size_t len;          /* of project, 1..PORTS_PROJECT_MAX */
};

/* A registry: n bands, no base and no project twice; ports_alloc keeps them sorted by base. */
struct ports {
	size_t n;
	struct ports_band band[PORTS_BANDS_MAX];
};

/*
 * Parse registry text buf[0..len) into r, whose projects then point into
 * buf. Returns 0, or -1 with *line (1-based) and *err (a static string)
 * for the first bad line: anything but the exact header, "<base>
 * <project>\n" lines with a canonical in-range band base and a valid
 * project, no base or project twice.
 */
int ports_parse(const char *buf, size_t len, struct ports *r, size_t *line, const char **err);

/*
 * Whether s[0..len) can name a project: 1..PORTS_PROJECT_MAX bytes, no
 * control byte (below 0x20, or 0x7f), no blank at either end. Returns
 * NULL if so, else why (a static string).
 */
const char *ports_project_check(const char *s, size_t len);

/*
 * A project's NAME, its principal (`sluice run` stamps as=project:NAME):
 * short and portable, 1..PORTS_NAME_MAX bytes of [A-Za-z0-9._-], so the
 * same name can mean the same project on every host. The registry keeps
 * the project as it was given (a directory's path stays there).
 */
#define PORTS_NAME_MAX 40
#define PORTS_NAME_HASH_HEX 16 /* 64 bits of SHA-256 of the path: no directory made to match */
#define PORTS_NAME_BASE_MAX (PORTS_NAME_MAX - 1 - PORTS_NAME_HASH_HEX) /* its basename's share */

/* Whether s (NUL-terminated) is a NAME. */
bool ports_name_valid(const char *s);

/*
 * The NAME of project s[0..len) into out (PORTS_NAME_MAX + 1 bytes). A
 * project that is a NAME is its own; any other (a directory's path, a
 * name with spaces) is its last path component with each byte outside
 * [A-Za-z0-9._-] as '-', cut to PORTS_NAME_BASE_MAX ("dir" when empty),
 * then '-' and PORTS_NAME_HASH_HEX hex digits of the SHA-256 of all of s:
 * the same path gives the same NAME on every host, two directories of one
 * basename two NAMEs, and no directory can be made to take another's
 * (a 32-bit hash could: a grant for project:NAME is that project's only).
 */
void ports_name_of(const char *s, size_t len, char *out);

/* Whether base suits an override: base >= 1024 and base + 199 <= 65535. */
bool ports_override_ok(unsigned long base);

/* The band of project s[0..len) in r, or NULL. */
const struct ports_band *ports_find(const struct ports *r, const char *s, size_t len);

/*
 * The base of project s[0..len): its band if it has one, else the lowest
 * free band, added to r (pointing at s, which must outlive r's use).
 * Returns the base, or -1 when all bands are taken.
 */
long ports_alloc(struct ports *r, const char *s, size_t len);

/* Remove the band of project s[0..len). Returns 0, or -1 if it had none. */
int ports_remove(struct ports *r, const char *s, size_t len);

/*
 * Write r as registry text into out[0..size), NUL-terminated when size > 0.
 * Returns the text's length (like snprintf: out was too small if >= size).
 * out must not overlap the text r's projects point into.
 */
size_t ports_format(const struct ports *r, char *out, size_t size);

#endif
