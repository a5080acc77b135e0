/*
 * grant.h: what may leave, and the store the CLI writes it to.
 *
 * A grant is "host", "*.suffix" (subdomains only, never the apex) or either
 * with ":port". A bare grant covers CONNECT to 443 and plain HTTP to 80;
 * any other port needs its own host:port grant, and a host:port grant
 * covers exactly that port (for CONNECT and plain HTTP alike).
 *
 * The store is a text file in the state directory, one grant per line,
 * written atomically (temporary file + rename) by `sluice allow` and read
 * by the proxy when it changes:
 *
 *   # sluice grants v1
 *   <grant> permanent <added> [tunnel] [for=<scope>]... [<budget>]...
 *   <grant> session <added> <run-id> [tunnel] [for=<scope>]... [<budget>]...
 *   <grant> once <added> <expires> [tunnel] [for=<scope>]... [<budget>]...
 *
 * added and expires are Unix seconds. A grant with for= scopes (scope.h:
 * never a container name, which `sluice allow add` resolves to its id)
 * serves only connections whose stamp one of them matches; one without
 * serves every connection, attributed or not. A session grant is live only while
 * the proxy run whose id it names is running (the proxy writes its run id
 * to STATE/proxy.run at start); a once grant until expires. A store with
 * any line that does not parse is damaged as a whole: the proxy then
 * enforces with no grants from it.
 *
 * The word tunnel, only on a grant with a port (HOST:PORT, *.SUFFIX:PORT),
 * lets a CONNECT to that name and port be relayed raw even when the proxy
 * intercepts: bytes either way from the 200 on, whoever speaks first, for
 * protocols that are neither HTTP nor TLS. A plain grant never implies it.
 *
 * A budget word is max-up=BYTES, max-requests=N or per=SECONDS (plain
 * decimal in the store; each at most once, per= only beside a max-): how
 * much each principal the grant serves may send through it, and how many
 * requests, over the grant's life or per window (the proxy counts:
 * proxy/budget.c).
 *
 * At most one mode line, and one learned line, anywhere in the store:
 *
 *   mode enforce|observe <since>
 *   mode learn <since> <until>
 *   learned <start> <end>
 *
 * The mode line, when there is one, is the mode (`sluice allow enforce`);
 * without one the config's mode holds. A learn window observes (refuses
 * nothing, logs each would-be refusal) until `until`, and from then on
 * enforces. The learned line is the last learn window (`sluice allow learn`
 * reads its rows): until the window's end, or until the mode changed.
 */
#ifndef SLUICE_GRANT_H
#define SLUICE_GRANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "host.h"
#include "scope.h"

#define GRANT_RUN_ID_LEN 16 /* hex characters */
#define GRANT_SCOPES_MAX 8
/* the longest scope list grant_scopes_format writes */
#define GRANT_SCOPES_TEXT (GRANT_SCOPES_MAX * (SCOPE_TEXT_MAX + 1))
#define GRANT_BUDGET_BYTES_MAX ((uint64_t)1 << 50) /* max-up: 1 PiB */
#define GRANT_BUDGET_REQUESTS_MAX 1000000000000ull  /* max-requests */
#define GRANT_BUDGET_PER_MAX (366 * 86400)          /* per: seconds, a year and a day */

enum grant_level {
	GRANT_CONFIG,    /* an `allow` line of the config file */
	GRANT_PERMANENT,
	GRANT_SESSION,
	GRANT_ONCE,
};

/* The two ways a request reaches a port; they decide what a bare grant covers. */
enum grant_via {
	GRANT_VIA_CONNECT, /* a CONNECT tunnel (later: decrypted HTTPS) */
	GRANT_VIA_HTTP,    /* a plain http:// request */
};

struct grant {
	char host[HOST_NAME_MAX_LEN + 1]; /* canonical; for a wildcard, the suffix without "*." */
	bool wildcard;                    /* "*.host": subdomains of host only */
	uint16_t port;                    /* 0: bare grant */
	enum grant_level level;
	time_t added;
	time_t expires;                        /* GRANT_ONCE only */
	char run[GRANT_RUN_ID_LEN + 1];        /* GRANT_SESSION only */
	struct scope scopes[GRANT_SCOPES_MAX]; /* who it serves; none: everyone */
	size_t nscopes;
	uint64_t max_up;       /* budget: client bytes up per principal; 0: none */
	uint64_t max_requests; /* budget: requests per principal; 0: none */
	uint32_t per;          /* the budgets' window in seconds; 0: the grant's life */
	bool tunnel;           /* the word tunnel: a CONNECT is relayed raw (port != 0) */
};

/*
 * Parse a grant pattern ("example.com", "*.example.com:8443", "[::1]:80",
 * "10.1.2.3"); canonicalises the host with host_canon. A wildcard over an
 * IP literal, "*" alone, "*.com"-style patterns with a single label, and a
 * wildcard over a public suffix ("*.co.uk", "*.github.io": the system's
 * public suffix list, private section included) are refused; so is every
 * wildcard when that list cannot be loaded. Exact hosts are never checked
 * against the list. Sets host, wildcard, port; other fields are zeroed.
 * Returns 0 or -1 with *err (a static message).
 */
int grant_parse(const char *s, size_t len, struct grant *g, const char **err);

/*
 * The public suffix list file grant_parse loads (a DAFSA or a .dat file);
 * NULL, the default, is the system's (libpsl's psl_dist_filename(),
 * Debian: /usr/share/publicsuffix/public_suffix_list.dafsa). The string
 * must outlive every grant_parse and grant_wildcard_covers. For tests.
 */
void grant_suffix_list(const char *path);

/* Write the pattern as the user would type it ("*.example.com:8443"). */
char *grant_format(const struct grant *g, char *buf, size_t size);

/*
 * Whether a wildcard over the canonical suffix covers the canonical name: a
 * strict subdomain of it whose registrable domain (the public suffix list,
 * private section included) is the suffix or above it, so that *.S never
 * reaches across a public suffix below S (*.amazonaws.com does not cover
 * x.s3.amazonaws.com, nor s3.amazonaws.com itself). False when the list
 * cannot be loaded.
 */
bool grant_wildcard_covers(const char *suffix, const char *name);

/* Whether g covers this canonical host and port reached this way (wildcards: grant_wildcard_covers). */
bool grant_matches(const struct grant *g, const struct host *h, uint16_t port,
		   enum grant_via via);

/*
 * Add the scope word s to g. A container name (SCOPE_NAME), a scope g has
 * already and more than GRANT_SCOPES_MAX are refused. Returns 0 or -1 with
 * *err (a static message).
 */
int grant_scope_add(struct grant *g, const char *s, const char **err);

/*
 * Whether g serves the connection (scope_matches: who is "src@net" or NULL
 * when unattributed): a grant without scopes serves every connection.
 */
bool grant_serves(const struct grant *g, const char *who, const char *src, const char *as);

/* Whether g carries a budget (max-up or max-requests). */
static inline bool grant_budgeted(const struct grant *g)
{
	return g->max_up > 0 || g->max_requests > 0;
}

/*
 * One budget word s[0..len) ("max-up=10M", "max-requests=3", "per=1h")
 * into g. units: the value may carry a suffix (bytes k, M, G: powers of
 * 1024; seconds s, m, h, d), as the config and the CLI write them; the
 * store has plain decimal. A word g already has is refused. Returns 1 it
 * was one, 0 it is not a budget word (g untouched), -1 a bad one with *err
 * (a static message).
 */
int grant_budget_word(struct grant *g, const char *s, size_t len, bool units, const char **err);

/*
 * The budget words together: per= without a max- is refused. Returns 0 or
 * -1 with *err.
 */
int grant_budget_check(const struct grant *g, const char **err);

/*
 * The word s[0..len) "tunnel" into g (parsed first: its port is known).
 * Returns 1 it was that word, 0 it is another (g untouched), -1 with *err
 * (a static message) a second one or a grant without a port.
 */
int grant_tunnel_word(struct grant *g, const char *s, size_t len, const char **err);

/* A byte count with an optional k, M or G suffix (powers of 1024), 1 to max. Returns 0 or -1. */
int grant_bytes_parse(const char *s, size_t len, uint64_t max, uint64_t *out);

/* Seconds with an optional s, m, h or d suffix, 1 to max. Returns 0 or -1. */
int grant_seconds_parse(const char *s, size_t len, uint64_t max, uint64_t *out);

/* g's budget as "max-up=N max-requests=N per=N" (those it has; "" none) into buf. */
char *grant_budget_format(const struct grant *g, char *buf, size_t size);

/* g's scopes joined by "," into buf ("" when none); GRANT_SCOPES_TEXT is enough. */
char *grant_scopes_format(const struct grant *g, char *buf, size_t size);

/* Whether a and b are the same grant: one pattern, tunnel or not, the same set of scopes. */
bool grant_same(const struct grant *a, const struct grant *b);

/* Whether g is live at now for the proxy run run_id (may be NULL: no run). */
bool grant_live(const struct grant *g, time_t now, const char *run_id);

const char *grant_level_name(enum grant_level l);

enum grant_mode_kind {
	GRANT_MODE_ENFORCE,
	GRANT_MODE_OBSERVE,
	GRANT_MODE_LEARN,
};

/* A store's mode and last learn window. */
struct grant_mode {
	bool set;                  /* a mode line: false, the config's mode holds */
	enum grant_mode_kind kind;
	time_t since;              /* when it was set */
	time_t until;              /* GRANT_MODE_LEARN: when enforcing resumes */
	bool learned;              /* a learned line */
	time_t learn_start, learn_end;
};

const char *grant_mode_name(enum grant_mode_kind k);

/*
 * Parse a whole store file buf[0..len). Fills up to max grants into out and
 * sets *n, and *mode (may be NULL: parsed, then dropped) from its mode and
 * learned lines. Returns 0, or -1 with *line (1-based) and *err describing the
 * first bad line (more than max grants is an error too). Lines starting
 * with '#' and empty lines are skipped.
 */
int grant_store_parse(const char *buf, size_t len, struct grant *out, size_t max,
		      size_t *n, struct grant_mode *mode, size_t *line, const char **err);

/*
 * Write grants in store format (header line included) to f, after the mode
 * and learned lines mode holds (may be NULL: none). Returns 0 or -1.
 */
int grant_store_write(FILE *f, const struct grant *g, size_t n, const struct grant_mode *mode);

#endif
