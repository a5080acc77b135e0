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
#define STORE_MAX_FIELDS (4 + 1 + GRANT_SCOPES_MAX + 3) /* level fields, tunnel, scopes, budget */
#define FOR_KEY "for="
#define TUNNEL_WORD "tunnel"
#define MAX_UP_KEY "max-up="
#define MAX_REQUESTS_KEY "max-requests="
#define PER_KEY "per="

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
	/* a wildcard is a name's suffix, never an address: "*." then the name */
	int n = snprintf(buf, size, "%s", g->wildcard ? "*." : "");

	if (n >= 0 && (size_t)n < size)
		host_port_format(buf + n, size - (size_t)n, g->host,
				 g->port != 0 ? g->port : HOST_PORT_NONE);
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

int grant_scope_add(struct grant *g, const char *s, const char **err)
{
	struct scope sc;

	if (scope_parse(s, &sc, err) == -1)
		return -1;
	if (sc.kind == SCOPE_NAME) {
		*err = "a container name cannot be told from a stamp: name it container:<id> "
		       "(sluice allow add --for NAME looks the id up)";
		return -1;
	}
	if (scope_in(&sc, g->scopes, g->nscopes)) {
		*err = "the same scope twice";
		return -1;
	}
	if (g->nscopes == GRANT_SCOPES_MAX) {
		*err = "more than 8 scopes";
		return -1;
	}
	g->scopes[g->nscopes++] = sc;
	return 0;
}

bool grant_serves(const struct grant *g, const char *who, const char *src, const char *as)
{
	if (g->nscopes == 0)
		return true;
	for (size_t i = 0; i < g->nscopes; i++)
		if (scope_matches(&g->scopes[i], who, src, as))
			return true;
	return false;
}

char *grant_scopes_format(const struct grant *g, char *buf, size_t size)
{
	size_t off = 0;

	if (size == 0)
		return buf;
	buf[0] = '\0';
	for (size_t i = 0; i < g->nscopes; i++) {
		int n = snprintf(buf + off, size - off, "%s%s", i > 0 ? "," : "", g->scopes[i].text);

		if (n < 0 || (size_t)n >= size - off)
			break;
		off += (size_t)n;
	}
	return buf;
}

/* A number and one optional suffix letter from suf (multipliers in mul), 1 to max. */
static int suffixed_parse(const char *s, size_t len, const char *suf, const uint64_t *mul,
			  uint64_t max, uint64_t *out)
{
	const char *at;
	uint64_t v, m = 1;

	if (len > 1 && (at = strchr(suf, s[len - 1])) != NULL && s[len - 1] != '\0') {
		m = mul[at - suf];
		len--;
	}
	if (len == 0 || len > 19 || dec_parse(s, len, UINT64_MAX, &v) == -1 || v == 0 ||
	    v > max / m)
		return -1;
	*out = v * m;
	return 0;
}

int grant_bytes_parse(const char *s, size_t len, uint64_t max, uint64_t *out)
{
	static const uint64_t mul[] = { 1024, 1024, 1024 * 1024, 1024 * 1024 * 1024 };

	return suffixed_parse(s, len, "kKMG", mul, max, out);
}

int grant_seconds_parse(const char *s, size_t len, uint64_t max, uint64_t *out)
{
	static const uint64_t mul[] = { 1, 60, 3600, 86400 };

	return suffixed_parse(s, len, "smhd", mul, max, out);
}

/* Whether s[0..len) starts with key; *v and *vl the rest. */
static bool word_key(const char *s, size_t len, const char *key, const char **v, size_t *vl)
{
	size_t kl = strlen(key);

	if (len < kl || memcmp(s, key, kl) != 0)
		return false;
	*v = s + kl;
	*vl = len - kl;
	return true;
}

int grant_budget_word(struct grant *g, const char *s, size_t len, bool units, const char **err)
{
	const char *v;
	size_t vl;
	uint64_t n;

	if (word_key(s, len, MAX_UP_KEY, &v, &vl)) {
		if (g->max_up > 0) {
			*err = "max-up twice";
			return -1;
		}
		if ((units ? grant_bytes_parse(v, vl, GRANT_BUDGET_BYTES_MAX, &n)
			   : suffixed_parse(v, vl, "", NULL, GRANT_BUDGET_BYTES_MAX, &n)) == -1) {
			*err = units ? "bad max-up (1 to 2^50 bytes, optional k, M or G: powers "
				       "of 1024)"
				     : "bad max-up (1 to 2^50 bytes, decimal)";
			return -1;
		}
		g->max_up = n;
		return 1;
	}
	if (word_key(s, len, MAX_REQUESTS_KEY, &v, &vl)) {
		if (g->max_requests > 0) {
			*err = "max-requests twice";
			return -1;
		}
		if (suffixed_parse(v, vl, "", NULL, GRANT_BUDGET_REQUESTS_MAX, &n) == -1) {
			*err = "bad max-requests (1 to 10^12, decimal)";
			return -1;
		}
		g->max_requests = n;
		return 1;
	}
	if (word_key(s, len, PER_KEY, &v, &vl)) {
		if (g->per > 0) {
			*err = "per twice";
			return -1;
		}
		if ((units ? grant_seconds_parse(v, vl, GRANT_BUDGET_PER_MAX, &n)
			   : suffixed_parse(v, vl, "", NULL, GRANT_BUDGET_PER_MAX, &n)) == -1) {
			*err = units ? "bad per (1 to 31622400 seconds, optional s, m, h or d)"
				     : "bad per (1 to 31622400 seconds, decimal)";
			return -1;
		}
		g->per = (uint32_t)n;
		return 1;
	}
	return 0;
}

int grant_tunnel_word(struct grant *g, const char *s, size_t len, const char **err)
{
	if (len != strlen(TUNNEL_WORD) || memcmp(s, TUNNEL_WORD, len) != 0)
		return 0;
	if (g->tunnel) {
		*err = "tunnel given twice";
		return -1;
	}
	if (g->port == 0) {
		*err = "a tunnel grant needs a port (HOST:PORT tunnel)";
		return -1;
	}
	g->tunnel = true;
	return 1;
}

int grant_budget_check(const struct grant *g, const char **err)
{
	if (g->per > 0 && !grant_budgeted(g)) {
		*err = "per without max-up or max-requests";
		return -1;
	}
	return 0;
}

char *grant_budget_format(const struct grant *g, char *buf, size_t size)
{
	char up[32] = "", req[32] = "", per[24] = "";

	if (g->max_up > 0)
		snprintf(up, sizeof(up), MAX_UP_KEY "%" PRIu64, g->max_up);
	if (g->max_requests > 0)
		snprintf(req, sizeof(req), MAX_REQUESTS_KEY "%" PRIu64, g->max_requests);
	if (g->per > 0)
		snprintf(per, sizeof(per), PER_KEY "%" PRIu32, g->per);
	snprintf(buf, size, "%s%s%s%s%s", up, up[0] != '\0' && req[0] != '\0' ? " " : "", req,
		 per[0] != '\0' ? " " : "", per);
	return buf;
}

bool grant_same(const struct grant *a, const struct grant *b)
{
	if (a->wildcard != b->wildcard || a->port != b->port || strcmp(a->host, b->host) != 0 ||
	    a->tunnel != b->tunnel || a->nscopes != b->nscopes)
		return false;
	/* each holds no scope twice, so equal counts and inclusion make equal sets */
	for (size_t i = 0; i < a->nscopes; i++)
		if (!scope_in(&a->scopes[i], b->scopes, b->nscopes))
			return false;
	return true;
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

/* Split s[0..len) at blanks into at most max fields; *nf of them. Returns 0, or -1 for more. */
static int fields_split(const char *s, size_t len, struct field *f, size_t max, size_t *nf)
{
	size_t i = 0;

	*nf = 0;
	while (i < len) {
		size_t start;

		while (i < len && is_blank(s[i]))
			i++;
		if (i == len)
			break;
		if (*nf == max)
			return -1;
		start = i;
		while (i < len && !is_blank(s[i]))
			i++;
		f[*nf].p = s + start;
		f[*nf].len = i - start;
		(*nf)++;
	}
	return 0;
}

/* Parse one non-comment line s[0..len) into g. */
static int store_line(const char *s, size_t len, struct grant *g, const char **err)
{
	struct field f[STORE_MAX_FIELDS];
	size_t nf, i, want;
	time_t added;

	if (fields_split(s, len, f, STORE_MAX_FIELDS, &nf) == -1) {
		*err = "trailing junk after the grant";
		return -1;
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
	if (nf < want) {
		*err = "missing field";
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
	for (i = want; i < nf; i++) {
		char word[SCOPE_TEXT_MAX + 1];
		size_t kl = strlen(FOR_KEY);

		switch (grant_budget_word(g, f[i].p, f[i].len, false, err)) {
		case 1:
			continue;
		case -1:
			return -1;
		}
		switch (grant_tunnel_word(g, f[i].p, f[i].len, err)) {
		case 1:
			continue;
		case -1:
			return -1;
		}
		if (f[i].len <= kl || memcmp(f[i].p, FOR_KEY, kl) != 0) {
			*err = "trailing junk after the grant";
			return -1;
		}
		if (f[i].len - kl > SCOPE_TEXT_MAX) {
			*err = "scope too long";
			return -1;
		}
		memcpy(word, f[i].p + kl, f[i].len - kl);
		word[f[i].len - kl] = '\0';
		if (grant_scope_add(g, word, err) == -1)
			return -1;
	}
	return grant_budget_check(g, err);
}

const char *grant_mode_name(enum grant_mode_kind k)
{
	switch (k) {
	case GRANT_MODE_ENFORCE:
		return "enforce";
	case GRANT_MODE_OBSERVE:
		return "observe";
	case GRANT_MODE_LEARN:
		return "learn";
	}
	return "unknown";
}

static bool field_is(const struct field *f, const char *word)
{
	return f->len == strlen(word) && memcmp(f->p, word, f->len) == 0;
}

/*
 * A mode or learned line s[0..len) into m: 1 it was one, 0 it is not one
 * (a grant line), -1 with *err a bad one or a second of its kind.
 */
static int mode_line(const char *s, size_t len, struct grant_mode *m, const char **err)
{
	struct field f[4];
	size_t nf;

	if (fields_split(s, len, f, 4, &nf) == -1)
		nf = 5;
	if (nf == 0 || (!field_is(&f[0], "mode") && !field_is(&f[0], "learned")))
		return 0;
	/* a grant for a host named mode or learned: its level comes second */
	if (nf >= 2 && (field_is(&f[1], "permanent") || field_is(&f[1], "session") ||
			field_is(&f[1], "once")))
		return 0;
	if (field_is(&f[0], "learned")) {
		if (m->learned) {
			*err = "a second learned line";
			return -1;
		}
		if (nf != 3 || epoch_parse(f[1].p, f[1].len, &m->learn_start) == -1 ||
		    epoch_parse(f[2].p, f[2].len, &m->learn_end) == -1 ||
		    m->learn_end < m->learn_start) {
			*err = "bad learned line (learned START END)";
			return -1;
		}
		m->learned = true;
		return 1;
	}
	if (m->set) {
		*err = "a second mode line";
		return -1;
	}
	if (nf >= 2 && field_is(&f[1], "enforce"))
		m->kind = GRANT_MODE_ENFORCE;
	else if (nf >= 2 && field_is(&f[1], "observe"))
		m->kind = GRANT_MODE_OBSERVE;
	else if (nf >= 2 && field_is(&f[1], "learn"))
		m->kind = GRANT_MODE_LEARN;
	else {
		*err = "unknown mode (enforce, observe or learn)";
		return -1;
	}
	if (nf != (m->kind == GRANT_MODE_LEARN ? 4u : 3u) ||
	    epoch_parse(f[2].p, f[2].len, &m->since) == -1 ||
	    (m->kind == GRANT_MODE_LEARN && epoch_parse(f[3].p, f[3].len, &m->until) == -1)) {
		*err = "bad mode line (mode enforce|observe SINCE, mode learn SINCE UNTIL)";
		return -1;
	}
	m->set = true;
	return 1;
}

int grant_store_parse(const char *buf, size_t len, struct grant *out, size_t max,
		      size_t *n, struct grant_mode *mode, size_t *line, const char **err)
{
	struct grant_mode scratch;
	size_t pos = 0, lineno = 0;

	if (mode == NULL)
		mode = &scratch;
	memset(mode, 0, sizeof(*mode));
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
		switch (mode_line(s, l, mode, err)) {
		case 1:
			continue;
		case -1:
			*line = lineno;
			return -1;
		}
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

/* Each scope of g as " for=SCOPE" on f. Returns 0 or -1. */
static int scopes_write(FILE *f, const struct grant *g)
{
	for (size_t i = 0; i < g->nscopes; i++)
		if (fprintf(f, " " FOR_KEY "%s", g->scopes[i].text) < 0)
			return -1;
	return 0;
}

/* g's budget words, each as " KEY=N", on f. Returns 0 or -1. */
static int budget_write(FILE *f, const struct grant *g)
{
	char b[96];

	grant_budget_format(g, b, sizeof(b));
	return b[0] != '\0' && fprintf(f, " %s", b) < 0 ? -1 : 0;
}

int grant_store_write(FILE *f, const struct grant *g, size_t n, const struct grant_mode *mode)
{
	char pat[HOST_NAME_MAX_LEN + 16];
	size_t i;

	if (fprintf(f, "%s\n", STORE_HEADER) < 0)
		return -1;
	if (mode != NULL && mode->set &&
	    fprintf(f, "mode %s %" PRId64, grant_mode_name(mode->kind), (int64_t)mode->since) < 0)
		return -1;
	if (mode != NULL && mode->set && mode->kind == GRANT_MODE_LEARN &&
	    fprintf(f, " %" PRId64, (int64_t)mode->until) < 0)
		return -1;
	if (mode != NULL && mode->set && fputc('\n', f) == EOF)
		return -1;
	if (mode != NULL && mode->learned &&
	    fprintf(f, "learned %" PRId64 " %" PRId64 "\n", (int64_t)mode->learn_start,
		    (int64_t)mode->learn_end) < 0)
		return -1;
	for (i = 0; i < n; i++) {
		int r;

		grant_format(&g[i], pat, sizeof(pat));
		switch (g[i].level) {
		case GRANT_PERMANENT:
			r = fprintf(f, "%s permanent %" PRId64, pat, (int64_t)g[i].added);
			break;
		case GRANT_SESSION:
			r = fprintf(f, "%s session %" PRId64 " %s", pat, (int64_t)g[i].added,
				    g[i].run);
			break;
		case GRANT_ONCE:
			r = fprintf(f, "%s once %" PRId64 " %" PRId64, pat,
				    (int64_t)g[i].added, (int64_t)g[i].expires);
			break;
		default:
			/* Config grants live in the config file, never in the store. */
			errno = EINVAL;
			r = -1;
			break;
		}
		if (r >= 0 && g[i].tunnel)
			r = fprintf(f, " " TUNNEL_WORD);
		if (r < 0 || scopes_write(f, &g[i]) == -1 || budget_write(f, &g[i]) == -1 ||
		    fputc('\n', f) == EOF)
			return -1;
	}
	return ferror(f) ? -1 : 0;
}
