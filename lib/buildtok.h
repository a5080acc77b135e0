/*
 * buildtok.h: build tokens, the build gate's secrets (issue 14).
 *
 * `sluice build-token new --name NAME` mints a secret (64 lower-case hex
 * digits: 32 random bytes) and prints a proxy URL carrying it,
 * http://sluice-build:SECRET@ADDR:PORT, for a build to pass as its
 * http_proxy. Only the secret's SHA-256 is stored, in STATE/build-tokens:
 *
 *   # sluice build tokens v1
 *   <name> <sha256 hex of the secret> <created> <expires>
 *
 * (Unix seconds; name 1-64 bytes of [A-Za-z0-9._-]). A connection whose
 * first head carries Proxy-Authorization: Basic base64(sluice-build:SECRET)
 * naming a live token is principal build:NAME, alongside any stamp. Both
 * parsers here take untrusted bytes (the file is the operator's, the header
 * the client's) and allocate nothing; the SHA-256 is OpenSSL's.
 */
#ifndef SLUICE_BUILDTOK_H
#define SLUICE_BUILDTOK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#define BUILDTOK_USER "sluice-build"
#define BUILDTOK_NAME_MAX 64
#define BUILDTOK_SECRET_LEN 64 /* hex digits */
#define BUILDTOK_MAX 1024

struct buildtok {
	char name[BUILDTOK_NAME_MAX + 1];
	uint8_t hash[32]; /* SHA-256 of the secret's hex text */
	time_t created, expires;
};

/* Whether s is a token name: 1-64 bytes of [A-Za-z0-9._-]. */
bool buildtok_name_valid(const char *s);

/*
 * Parse a token file buf[0..len) into out (at most max) and *n. Returns 0,
 * or -1 with *line (1-based) and *err for the first bad line.
 */
int buildtok_file_parse(const char *buf, size_t len, struct buildtok *out, size_t max,
			size_t *n, size_t *line, const char **err);

/* Write tokens in file format (header included) to f. Returns 0 or -1. */
int buildtok_file_write(FILE *f, const struct buildtok *t, size_t n);

/*
 * A Proxy-Authorization value v[0..len) (blanks around it trimmed): 1 it is
 * Basic with user sluice-build, its password copied to secret (size at
 * least BUILDTOK_SECRET_LEN + 1) with *slen; 0 it is not one of ours
 * (another scheme or user, or base64 that does not decode: left alone); -1
 * user sluice-build with a password that is not 64 lower-case hex digits.
 */
int buildtok_auth_parse(const char *v, size_t len, char *secret, size_t size, size_t *slen);

/*
 * The token among t[0..n) whose hash is SHA-256(secret), compared in
 * constant time: returned when live at now; NULL otherwise, with *expired
 * true when it matched one that expired.
 */
const struct buildtok *buildtok_find(const struct buildtok *t, size_t n, const char *secret,
				     size_t slen, time_t now, bool *expired);

/* The SHA-256 of secret[0..slen) into hash. */
void buildtok_hash(const char *secret, size_t slen, uint8_t hash[32]);

#endif
