/*
 * inject.h: credential injection rules and the pure helpers that apply them.
 *
 * A rule (the config's `inject NAME KEY=VALUE...` line, parsed by
 * inject_rule.c) names one exact host and port, an optional path prefix, the header
 * or query parameter to write, where the secret comes from, and whom it
 * serves. Nothing here reads a secret, runs a command or logs: the proxy
 * fetches the secret (env, file, token command) and hands the bytes to
 * these functions, which check and place them, and list the forms the
 * scrubber masks (inject_forms.c, the only one that allocates).
 *
 * Matching (inject_match):
 *   - host: the request's canonical host equals the rule's host exactly;
 *     there are no wildcard rules. host=api.example means port 443;
 *     host=api.example:8443 (host=[2001:db8::1]:8443) names another, and
 *     a rule serves requests to its port only.
 *   - path: the request target up to its first '?' (the query is never
 *     part of the match), compared byte for byte (case matters, no
 *     decoding) on segment boundaries: path=/v1 covers
 *     /v1, /v1/, /v1/x and /v1?q, not /v10; path=/v1/ covers /v1/ and
 *     below, not /v1. No path (or path=/) covers every target.
 *   - a target whose path an origin could read as leaving the prefix (a
 *     "." or ".." segment once percent-decoded, "..;"-style segments, a
 *     backslash, a malformed or NUL escape) matches no rule that has a
 *     path: injection fails closed, the request is sent without it.
 *
 * Overlap (refused at load by the config parser): two rules on the same
 * host and port whose paths (no path counts as "/") are string prefixes of one
 * another, whatever their header, query parameter or principals. That is
 * stricter than the segment matching needs (/v1 and /v10 are refused
 * together) and makes "at most one rule matches a request" obvious: the
 * rule that serves a request never depends on who sent it or on rule order.
 *
 * Principals (inject_serves): an unattributed connection is served only by
 * a rule with unattributed=yes. An attributed one is served by a rule with
 * no principal= at all, or when one of its principals (scope.h: ADDR,
 * ADDR@NET, container:<hex>, build:<scope>, user, a container name that
 * never matches) matches its stamp.
 *
 * Writing a header rule (the proxy's side): with require= set, inject only
 * when the request carries exactly one such header and inject_is_placeholder
 * says its value is the placeholder, and replace that value; otherwise send
 * the request as it is (a client's own credential is neither overwritten
 * nor leaked). Without require=, drop every such header the client sent and
 * add the rule's. Query rules: inject_query_rewrite does both.
 */
#ifndef SLUICE_INJECT_H
#define SLUICE_INJECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "host.h"
#include "scope.h"
#include "scrub.h"

#define INJECT_NAME_MAX 64        /* [A-Za-z0-9._-] */
#define INJECT_PATH_MAX 1024
#define INJECT_FIELD_MAX 64       /* header or query parameter name */
#define INJECT_PREFIX_MAX 256
#define INJECT_SOURCE_MAX 1024    /* env variable name or absolute path */
#define INJECT_ARGS_MAX 1024      /* args= as written */
#define INJECT_ARGV_MAX 32        /* words of args= */
#define INJECT_REQUIRE_MAX 512
#define INJECT_PRINCIPALS_MAX 16
#define INJECT_SECRET_MAX 8192    /* bytes of a secret value */
#define INJECT_TTL_DEFAULT 300    /* seconds, when a token command names none */
#define INJECT_TTL_MAX 86400

struct config;

enum inject_target {
	INJECT_HEADER,
	INJECT_QUERY,
};

enum inject_source {
	INJECT_ENV,     /* the proxy's environment variable source_arg */
	INJECT_FILE,    /* the file source_arg (absolute) */
	INJECT_COMMAND, /* run source_arg (absolute) without a shell; args split on blanks */
	INJECT_KEYS,    /* the key handed over for the serving principal: source_arg/<inject_key_name> */
};

struct inject_rule {
	char name[INJECT_NAME_MAX + 1];
	size_t line;                        /* config line it came from */
	char host[HOST_NAME_MAX_LEN + 1];   /* canonical, exact */
	uint16_t port;                      /* 1..65535; 443 unless host= names one */
	char path[INJECT_PATH_MAX + 1];     /* starts with '/'; "/" when none given */
	enum inject_target target;
	char field[INJECT_FIELD_MAX + 1];   /* header name as written, or query parameter */
	char prefix[INJECT_PREFIX_MAX + 1]; /* written before the secret; "" none */
	enum inject_source source;
	char source_arg[INJECT_SOURCE_MAX + 1];
	char args[INJECT_ARGS_MAX + 1];     /* command arguments as written; "" none */
	char require[INJECT_REQUIRE_MAX + 1]; /* placeholder; "" means always inject */
	struct scope principals[INJECT_PRINCIPALS_MAX];
	size_t nprincipals;                 /* 0: every attributed connection */
	bool unattributed;                  /* serve unattributed connections too */
};

/* inject_rule.c: the config line */

/* Whether s is a rule name: 1-64 bytes of [A-Za-z0-9._-], the first not . or - (a directory's name). */
bool inject_name_valid(const char *s);

/*
 * Fill r from the words w[0..nw) ("host=api.example.com", "prefix=Bearer ",
 * ...: quotes already removed by the config tokenizer). r->name and
 * r->line are kept, every other field is set. Returns 0, or -1 with the first problem in
 * err[0..size) ("unknown key \"hots\"", "missing host=").
 */
int inject_rule_parse(struct inject_rule *r, char *const *w, size_t nw, char *err,
		      size_t size);

/*
 * The normalised line for r, without the newline ("inject gh host=api.github.com
 * header=Authorization prefix=\"Bearer \" env=GH_TOKEN"), values quoted
 * where the tokenizer needs it. Returns its length, or -1 if it does not
 * fit size (NUL included).
 */
int inject_rule_format(const struct inject_rule *r, char *buf, size_t size);

/*
 * The first of rules[0..n) that could match a request r also matches
 * (same host and port, one path a string prefix of the other), or NULL.
 */
const struct inject_rule *inject_rule_overlap(const struct inject_rule *rules, size_t n,
					      const struct inject_rule *r);

/*
 * argv for an INJECT_COMMAND rule: argv[0] is the command, then the
 * words of args, then NULL. The words are copied into buf (size
 * INJECT_ARGS_MAX + 1 always suffices); argv (max entries, NULL included;
 * INJECT_ARGV_MAX + 2 always suffices) points into buf and r. Returns argc,
 * or -1 if r is not a command rule or buf or argv is too small.
 */
int inject_command_argv(const struct inject_rule *r, char *buf, size_t size, char **argv,
			size_t max);

/* inject.c: matching and writing */

/*
 * The rule of c for a request to the canonical host and port with request
 * target path[0..path_len) (origin-form, query included), or NULL.
 * Overlapping rules never load, so at most one rule matches.
 */
const struct inject_rule *inject_match(const struct config *c, const char *host, uint16_t port,
				       const char *path, size_t path_len);

/*
 * Whether r serves the connection: who is its "src@net" or "unattributed"
 * (NULL counts as unattributed), src its stamp's source address, as its
 * stamp's principal (NULL or "" when the stamp carries none).
 */
bool inject_serves(const struct inject_rule *r, const char *who, const char *src,
		   const char *as);

/*
 * The first of r's principals that serves the connection (as inject_serves
 * decides), or NULL: an unattributed one, or r names none.
 */
const struct scope *inject_serving_principal(const struct inject_rule *r, const char *who,
					     const char *src, const char *as);

/*
 * The file name, under a keys= rule's directory, of the key handed over for
 * the principal written text: "k" then the SHA-256 of text in lower-case
 * hex (66 bytes with the NUL: no '/', no dot file, within NAME_MAX however
 * long the principal). Returns its length, 65, or -1 if size is smaller
 * than 66.
 */
int inject_key_name(const char *text, char *out, size_t size);

/*
 * Whether a header value (OWS already trimmed) is r's placeholder: false
 * when r has no require=.
 */
bool inject_is_placeholder(const struct inject_rule *r, const char *value, size_t len);

/*
 * The header value for a header rule: prefix then secret[0..slen), NUL
 * terminated in out. Refuses (-1) a query rule, an empty or over-long
 * secret, a secret holding CR, LF, NUL or another control byte but HTAB,
 * and an out too small. Returns the length.
 */
int inject_header_value(const struct inject_rule *r, const char *secret, size_t slen,
			char *out, size_t size);

/*
 * The request target path[0..len) with a query rule's parameter set to
 * prefix + secret, percent-encoded (every byte outside [A-Za-z0-9._~-]),
 * written NUL-terminated to out. Other parameters keep their bytes and
 * order. Without require=: every occurrence of the parameter is dropped
 * and one name=value takes the place of the first (appended when absent),
 * *injected true. With require=: only when the parameter occurs exactly
 * once with exactly the placeholder as its raw value is that value
 * replaced (*injected true); otherwise out is path unchanged and *injected
 * false. Returns the length written, or -1 (a header rule, an empty or
 * over-long secret, out too small).
 */
int inject_query_rewrite(const struct inject_rule *r, const char *path, size_t len,
			 const char *secret, size_t slen, char *out, size_t size,
			 bool *injected);

/*
 * A token command's stdout buf[0..len): the value on the first line
 * (1..INJECT_SECRET_MAX bytes, no control byte but HTAB), optionally a
 * second line with a TTL in seconds (1..INJECT_TTL_MAX, digits only;
 * INJECT_TTL_DEFAULT when absent), nothing else but a final newline. The
 * value is copied NUL-terminated into secret (ssize > its length).
 * Returns the value's length, or -1 with *err a static message.
 */
int inject_token_parse(const char *buf, size_t len, char *secret, size_t ssize,
		       unsigned *ttl_s, const char **err);

/* inject_forms.c: what the scrubber masks for a secret */

/* Forms of the secrets of a response's host, owned (wiped and freed on release). */
struct inject_forms {
	char *pat[SCRUB_MAX_SECRETS];
	size_t len[SCRUB_MAX_SECRETS];
	size_t n;
};

void inject_forms_init(struct inject_forms *f);

/*
 * Add the forms of secret[0..slen) written after prefix (a rule's prefix=,
 * "" for none): the value raw; percent-encoded as inject_query_rewrite
 * writes it (upper-case hex), with lower-case hex, encoded twice, with '/'
 * left raw (Python's urllib.parse.quote) and with a space as '+'
 * (quote_plus, urlencode); as
 * inside a JSON string (Python's escapes, and with '/' escaped, PHP's); the
 * base64 characters only the value decides at each of the 3 alignments in
 * a larger blob, standard and urlsafe alphabets (so base64 of prefix+value
 * is covered too); with a Basic prefix, the value base64-decoded (user:pass)
 * and the part after its first ':'. A secret shorter than SCRUB_MIN_LEN
 * has no forms; forms shorter than it or already held are skipped. Returns 0, or -1 with errno ENOMEM or E2BIG
 * (more than SCRUB_MAX_SECRETS forms in all; f keeps those added).
 */
int inject_forms_add(struct inject_forms *f, const char *prefix, const char *secret, size_t slen);

/* Wipe and free every form; f is empty again. */
void inject_forms_release(struct inject_forms *f);

#endif
