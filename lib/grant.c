/*
 * grant.c: grant patterns, what they cover, and the grant store's format.
 *
 * Patterns are canonicalised once at parse time (host_canon), so matching
 * is byte comparison of canonical text. The store parser is strict: one
 * bad line damages the whole store, and the caller then enforces with no
 * store grants (fail closed). Reading and writing the file itself (atomic
 * rename, change detection) is the caller's job; this file only turns
 * bytes into grants and grants into lines, allocating nothing (but the
 * public suffix list, loaded once on the first wildcard and kept).
 *
 * A wildcard whose suffix is a public suffix (co.uk, github.io: the
 * system's list, private section included) is refused everywhere a grant
 * is parsed: the config's allow and passthrough, `sluice allow add`, the
 * store. When the list cannot be loaded every wildcard is refused, saying
 * so: a wildcard that cannot be checked is not accepted.
 *
 * A wildcard that parsed still never reaches across a public suffix below
 * its own: *.S covers a name only when S is the name's registrable domain
 * or below it, so *.amazonaws.com covers www.amazonaws.com but not a
 * tenant of s3.amazonaws.com (grant_wildcard_covers, for grants and
 * passthrough alike). Without the list at match time it covers nothing.
 */
#include "grant.h"

#include <errno.h>
#include <inttypes.h>
#include <libpsl.h>
#include <string.h>

#include "digits.h"

#define STORE_HEADER "# sluice grants v1"
#define STORE_MAX_FIELDS 4

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static const char *psl_path; /* NULL: the system's (psl_dist_filename) */

void grant_suffix_list(const char *path)
{
	psl_path = path;
}

/*
 * The public suffix list, loaded on first use, kept, and loaded again when
 * its path changes; NULL: not at hand (tried again on the next call). Once
 * a wildcard parsed, the list is loaded, so matching reads no file.
 */
static const psl_ctx_t *suffix_list(void)
{
	static psl_ctx_t *psl;
	static const char *loaded; /* the path psl came from */
	const char *path = psl_path != NULL ? psl_path : psl_dist_filename();

	if (psl == NULL || loaded != path) {
		psl_free(psl);
		psl = path != NULL && path[0] != '\0' ? psl_load_file(path) : NULL;
		loaded = path;
	}
	return psl;
}

/*
 * Whether a wildcard over the canonical suffix may be granted: false, with
 * *err, when the suffix is a public suffix or the list is not at hand.
 */
static bool suffix_private(const char *suffix, const char **err)
{
	const psl_ctx_t *psl = suffix_list();

	if (psl == NULL) {
		*err = "the public suffix list cannot be loaded (Debian: install publicsuffix), so no "
		       "wildcard can be checked and none is accepted; exact hosts are fine";
		return false;
	}
	/* PSL_TYPE_ANY: the private section (github.io) counts, and so does an unlisted TLD */
	if (psl_is_public_suffix2(psl, suffix, PSL_TYPE_ANY)) {
		*err = "a wildcard over a public suffix would cover every unrelated site under it; "
		       "exact hosts under it are fine";
		return false;
	}
	return true;
}

int grant_parse(const char *s, size_t len, struct grant *g, const char **err)
{
	struct host h;
	uint16_t port;
	bool has_port, wildcard = false;

	memset(g, 0, sizeof(*g));
	if (len == 0) {
		*err = "empty grant";
		return -1;
	}
	if (s[0] == '*') {
		if (len < 3 || s[1] != '.') {
			*err = "a wildcard is written *.suffix";
			return -1;
		}
		wildcard = true;
		s += 2;
		len -= 2;
	}
	if (host_port_parse(s, len, 0, &h, &port, &has_port, err) == -1)
		return -1;
	if (wildcard && h.kind != HOST_NAME) {
		*err = "a wildcard needs a name, not an ip literal";
		return -1;
	}
	if (wildcard && strchr(h.name, '.') == NULL) {
		*err = "a wildcard suffix needs at least two labels";
		return -1;
	}
	if (wildcard && !suffix_private(h.name, err))
		return -1;
	memcpy(g->host, h.name, sizeof(g->host));
	g->wildcard = wildcard;
	g->port = has_port ? port : 0;
	return 0;
}

char *grant_format(const struct grant *g, char *buf, size_t size)
{
	bool v6 = strchr(g->host, ':') != NULL;
	char port[8] = "";

	if (g->port != 0)
		snprintf(port, sizeof(port), ":%u", (unsigned)g->port);
	snprintf(buf, size, "%s%s%s%s%s", g->wildcard ? "*." : "", v6 ? "[" : "", g->host,
		 v6 ? "]" : "", port);
	return buf;
}

bool grant_wildcard_covers(const char *suffix, const char *name)
{
	size_t nl = strlen(name), sl = strlen(suffix);
	const psl_ctx_t *psl;
	const char *reg;

	/* A strict subdomain: at least one label and a dot before the suffix. */
	if (!(nl > sl + 1 && name[nl - sl - 1] == '.' && memcmp(name + nl - sl, suffix, sl) == 0))
		return false;
	psl = suffix_list();
	if (psl == NULL)
		return false;
	/*
	 * NULL: the name is itself a public suffix (s3.amazonaws.com). Else reg
	 * and the suffix both end name on a label boundary, so the suffix is reg
	 * or below it exactly when it is no shorter.
	 */
	reg = psl_registrable_domain(psl, name);
	return reg != NULL && sl >= strlen(reg);
}

bool grant_matches(const struct grant *g, const struct host *h, uint16_t port,
		   enum grant_via via)
{
	if (g->port == 0) {
		if (!((via == GRANT_VIA_CONNECT && port == 443) || (via == GRANT_VIA_HTTP && port == 80)))
			return false;
	} else if (g->port != port) {
		return false;
	}
	if (g->wildcard)
		return h->kind == HOST_NAME && grant_wildcard_covers(g->host, h->name);
	/* Canonical text is unambiguous across kinds: a name never reads as an IP. */
	return strcmp(h->name, g->host) == 0;
}

bool grant_live(const struct grant *g, time_t now, const char *run_id)
{
	switch (g->level) {
	case GRANT_CONFIG:
	case GRANT_PERMANENT:
		return true;
	case GRANT_SESSION:
		return run_id != NULL && strcmp(g->run, run_id) == 0;
	case GRANT_ONCE:
		return now < g->expires;
	}
	return false;
}

const char *grant_level_name(enum grant_level l)
{
	switch (l) {
	case GRANT_CONFIG:
		return "config";
	case GRANT_PERMANENT:
		return "permanent";
	case GRANT_SESSION:
		return "session";
	case GRANT_ONCE:
		return "once";
	}
	return "unknown";
}

/* Unix seconds: 1-18 decimal digits, so it always fits a 64-bit time_t. */
static int epoch_parse(const char *s, size_t len, time_t *out)
{
	uint64_t v;

	if (len > 18 || dec_parse(s, len, UINT64_MAX, &v) == -1)
		return -1;
	*out = (time_t)v;
	return 0;
}

static int run_id_parse(const char *s, size_t len, char *out)
{
	if (len != GRANT_RUN_ID_LEN || !hex_is_lower(s, len))
		return -1;
	memcpy(out, s, len);
	out[len] = '\0';
	return 0;
}

struct field {
	const char *p;
	size_t len;
};

/* Parse one non-comment line s[0..len) into g. */
static int store_line(const char *s, size_t len, struct grant *g, const char **err)
{
	struct field f[STORE_MAX_FIELDS];
	size_t nf = 0, i = 0, want;
	time_t added;

	while (i < len) {
		size_t start;

		while (i < len && is_blank(s[i]))
			i++;
		if (i == len)
			break;
		if (nf == STORE_MAX_FIELDS) {
			*err = "trailing junk after the grant";
			return -1;
		}
		start = i;
		while (i < len && !is_blank(s[i]))
			i++;
		f[nf].p = s + start;
		f[nf].len = i - start;
		nf++;
	}
	if (nf < 2) {
		*err = "missing level";
		return -1;
	}
	if (grant_parse(f[0].p, f[0].len, g, err) == -1)
		return -1;
	if (f[1].len == 9 && memcmp(f[1].p, "permanent", 9) == 0) {
		g->level = GRANT_PERMANENT;
		want = 3;
	} else if (f[1].len == 7 && memcmp(f[1].p, "session", 7) == 0) {
		g->level = GRANT_SESSION;
		want = 4;
	} else if (f[1].len == 4 && memcmp(f[1].p, "once", 4) == 0) {
		g->level = GRANT_ONCE;
		want = 4;
	} else {
		*err = "unknown level (permanent, session or once)";
		return -1;
	}
	if (nf != want) {
		*err = nf < want ? "missing field" : "trailing junk after the grant";
		return -1;
	}
	if (epoch_parse(f[2].p, f[2].len, &added) == -1) {
		*err = "bad added time";
		return -1;
	}
	g->added = added;
	if (g->level == GRANT_SESSION && run_id_parse(f[3].p, f[3].len, g->run) == -1) {
		*err = "bad run id (16 lower-case hex digits)";
		return -1;
	}
	if (g->level == GRANT_ONCE && epoch_parse(f[3].p, f[3].len, &g->expires) == -1) {
		*err = "bad expiry time";
		return -1;
	}
	return 0;
}

int grant_store_parse(const char *buf, size_t len, struct grant *out, size_t max,
		      size_t *n, size_t *line, const char **err)
{
	size_t pos = 0, lineno = 0;

	*n = 0;
	*line = 0;
	while (pos < len) {
		const char *nl = memchr(buf + pos, '\n', len - pos);
		size_t end = nl != NULL ? (size_t)(nl - buf) : len;
		const char *s = buf + pos;
		size_t l = end - pos;

		lineno++;
		pos = nl != NULL ? end + 1 : len;
		while (l > 0 && is_blank(s[l - 1]))
			l--;
		if (l == 0 || s[0] == '#')
			continue;
		if (*n == max) {
			*line = lineno;
			*err = "too many grants";
			return -1;
		}
		if (store_line(s, l, &out[*n], err) == -1) {
			*line = lineno;
			return -1;
		}
		(*n)++;
	}
	return 0;
}

int grant_store_write(FILE *f, const struct grant *g, size_t n)
{
	char pat[HOST_NAME_MAX_LEN + 16];
	size_t i;

	if (fprintf(f, "%s\n", STORE_HEADER) < 0)
		return -1;
	for (i = 0; i < n; i++) {
		int r;

		grant_format(&g[i], pat, sizeof(pat));
		switch (g[i].level) {
		case GRANT_PERMANENT:
			r = fprintf(f, "%s permanent %" PRId64 "\n", pat, (int64_t)g[i].added);
			break;
		case GRANT_SESSION:
			r = fprintf(f, "%s session %" PRId64 " %s\n", pat, (int64_t)g[i].added,
				    g[i].run);
			break;
		case GRANT_ONCE:
			r = fprintf(f, "%s once %" PRId64 " %" PRId64 "\n", pat,
				    (int64_t)g[i].added, (int64_t)g[i].expires);
			break;
		default:
			/* Config grants live in the config file, never in the store. */
			errno = EINVAL;
			r = -1;
			break;
		}
		if (r < 0)
			return -1;
	}
	return ferror(f) ? -1 : 0;
}
