/*
 * config_tls.c: the directives of TLS interception and credential
 * injection (intercept, refuse-page, passthrough, upstream-ca, body-limit, inject),
 * parsed and printed.
 *
 * Hosts are canonicalised here once (host_canon, grant_parse), so the
 * proxy compares canonical text. A line whose normalised form would be
 * longer than a line may be is refused, so config_print's output always
 * reads back. Whether files exist or commands run is the proxy's to find
 * out; the inject line's own words are inject_rule.c's.
 */
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "config_parser.h"

void config_tls_intercept(struct parser *p, char **w, size_t nw)
{
	if (strcmp(w[1], "on") == 0)
		p->c->intercept = true;
	else if (strcmp(w[1], "off") == 0)
		p->c->intercept = false;
	else
		config_error(p, "intercept: expected on or off, got \"%s\"", w[1]);
}

void config_tls_refuse_page(struct parser *p, char **w, size_t nw)
{
	if (strcmp(w[1], "on") == 0)
		p->c->refuse_page = true;
	else if (strcmp(w[1], "off") == 0)
		p->c->refuse_page = false;
	else
		config_error(p, "refuse-page: expected on or off, got \"%s\"", w[1]);
}

/* A grow-by-one array of element size; NULL after reporting. */
static void *grow(struct parser *p, const char *dir, void *arr, size_t n, size_t elem)
{
	void *grown = realloc(arr, (n + 1) * elem);

	if (grown == NULL)
		config_error(p, "%s: out of memory", dir);
	return grown;
}

void config_tls_passthrough(struct parser *p, char **w, size_t nw)
{
	struct config *c = p->c;
	struct config_pattern *grown;
	struct grant g;
	const char *err = "bad pattern";

	if (grant_parse(w[1], strlen(w[1]), &g, &err) == -1) {
		config_error(p, "passthrough: bad pattern \"%s\": %s", w[1], err);
		return;
	}
	if (g.port != 0) {
		config_error(p, "passthrough: bad pattern \"%s\": no port here (every port is passed through)",
		     w[1]);
		return;
	}
	for (size_t i = 0; i < c->npassthrough; i++) {
		if (c->passthrough[i].wildcard == g.wildcard &&
		    strcmp(c->passthrough[i].host, g.host) == 0) {
			config_error(p, "passthrough: %s given twice", w[1]);
			return;
		}
	}
	grown = grow(p, "passthrough", c->passthrough, c->npassthrough, sizeof(*grown));
	if (grown == NULL)
		return;
	c->passthrough = grown;
	memcpy(grown[c->npassthrough].host, g.host, sizeof(grown->host));
	grown[c->npassthrough++].wildcard = g.wildcard;
}

/* An exact canonical host into out (HOST_NAME_MAX_LEN + 1). Returns 0 or -1 after an error. */
static int exact_host_arg(struct parser *p, const char *dir, const char *s, char *out)
{
	struct host h;
	const char *err = "bad host";

	if (strchr(s, '*') != NULL) {
		config_error(p, "%s: bad host \"%s\": wildcard not allowed here", dir, s);
		return -1;
	}
	if (host_canon(s, strlen(s), &h, &err) == -1) {
		config_error(p, "%s: bad host \"%s\": %s", dir, s, err);
		return -1;
	}
	memcpy(out, h.name, HOST_NAME_MAX_LEN + 1);
	return 0;
}

/* Whether a line of this many bytes could not be read back (config_print's promise). */
static bool printed_too_long(struct parser *p, const char *dir, size_t len)
{
	if (len <= CONFIG_LINE_MAX)
		return false;
	config_error(p, "%s: normalised line longer than %d bytes", dir, CONFIG_LINE_MAX);
	return true;
}

void config_tls_upstream_ca(struct parser *p, char **w, size_t nw)
{
	struct config *c = p->c;
	struct config_upstream_ca u, *grown;

	memset(&u, 0, sizeof(u));
	if (exact_host_arg(p, "upstream-ca", w[1], u.host) == -1 ||
	    config_path_arg(p, "upstream-ca", w[2], u.file) == -1)
		return;
	if (printed_too_long(p, "upstream-ca", strlen("upstream-ca  ") + strlen(u.host) +
							 strlen(u.file)))
		return;
	for (size_t i = 0; i < c->nupstream_cas; i++) {
		if (strcmp(c->upstream_cas[i].host, u.host) == 0) {
			config_error(p, "upstream-ca: %s given twice", u.host);
			return;
		}
	}
	grown = grow(p, "upstream-ca", c->upstream_cas, c->nupstream_cas, sizeof(*grown));
	if (grown == NULL)
		return;
	c->upstream_cas = grown;
	c->upstream_cas[c->nupstream_cas++] = u;
}

void config_tls_body_limit(struct parser *p, char **w, size_t nw)
{
	struct config *c = p->c;
	struct config_body_limit b, *grown;
	bool bad;

	memset(&b, 0, sizeof(b));
	bad = exact_host_arg(p, "body-limit", w[1], b.host) == -1;
	if (config_number_arg(p, "body-limit", w[2], 1, (uint64_t)1 << 50, &b.bytes) == -1 || bad)
		return;
	for (size_t i = 0; i < c->nbody_limits; i++) {
		if (strcmp(c->body_limits[i].host, b.host) == 0) {
			config_error(p, "body-limit: %s given twice", b.host);
			return;
		}
	}
	grown = grow(p, "body-limit", c->body_limits, c->nbody_limits, sizeof(*grown));
	if (grown == NULL)
		return;
	c->body_limits = grown;
	c->body_limits[c->nbody_limits++] = b;
}

void config_tls_inject(struct parser *p, char **w, size_t nw)
{
	struct config *c = p->c;
	struct inject_rule *r, *grown;
	const struct inject_rule *other;
	char err[512], line[CONFIG_LINE_MAX + 1];

	if (!inject_name_valid(w[1])) {
		config_error(p, "inject: bad name \"%s\": 1 to %d of A-Z a-z 0-9 . _ -, the first not . or -", w[1],
		     INJECT_NAME_MAX);
		return;
	}
	for (size_t i = 0; i < c->nrules; i++) {
		if (strcmp(c->rules[i].name, w[1]) == 0) {
			config_error(p, "inject %s: name given twice (first on line %zu)", w[1],
			     c->rules[i].line);
			return;
		}
	}
	if (c->nrules == CONFIG_MAX_RULES) {
		config_error(p, "inject: more than %d rules", CONFIG_MAX_RULES);
		return;
	}
	r = calloc(1, sizeof(*r));
	if (r == NULL) {
		config_error(p, "inject: out of memory");
		return;
	}
	memcpy(r->name, w[1], strlen(w[1]) + 1);
	r->line = p->line;
	if (inject_rule_parse(r, w + 2, nw - 2, err, sizeof(err)) == -1) {
		config_error(p, "inject %s: %s", w[1], err);
		goto out_free_rule;
	}
	if (inject_rule_format(r, line, sizeof(line)) == -1) {
		config_error(p, "inject %s: normalised line longer than %d bytes", w[1], CONFIG_LINE_MAX);
		goto out_free_rule;
	}
	other = inject_rule_overlap(c->rules, c->nrules, r);
	if (other != NULL) {
		config_error(p, "inject %s: overlaps inject %s (line %zu): both on %s port %u, paths %s and %s; "
			"one request could match both",
		     r->name, other->name, other->line, r->host, (unsigned)r->port, other->path, r->path);
		goto out_free_rule;
	}
	grown = grow(p, "inject", c->rules, c->nrules, sizeof(*grown));
	if (grown == NULL)
		goto out_free_rule;
	c->rules = grown;
	c->rules[c->nrules++] = *r;
out_free_rule:
	free(r);
}

void config_tls_print(const struct config *c, FILE *out)
{
	char buf[HOST_NAME_MAX_LEN + 64];

	fprintf(out, "intercept %s\n", c->intercept ? "on" : "off");
	fprintf(out, "refuse-page %s\n", c->refuse_page ? "on" : "off");
	for (size_t i = 0; i < c->npassthrough; i++) {
		struct grant g;

		memset(&g, 0, sizeof(g));
		memcpy(g.host, c->passthrough[i].host, sizeof(g.host));
		g.wildcard = c->passthrough[i].wildcard;
		fprintf(out, "passthrough %s\n", grant_format(&g, buf, sizeof(buf)));
	}
	for (size_t i = 0; i < c->nupstream_cas; i++)
		fprintf(out, "upstream-ca %s %s\n", c->upstream_cas[i].host,
			c->upstream_cas[i].file);
	for (size_t i = 0; i < c->nbody_limits; i++)
		fprintf(out, "body-limit %s %llu\n", c->body_limits[i].host,
			(unsigned long long)c->body_limits[i].bytes);
	for (size_t i = 0; i < c->nrules; i++) {
		char line[CONFIG_LINE_MAX + 1];

		/* the parser refused any rule whose line would not fit */
		if (inject_rule_format(&c->rules[i], line, sizeof(line)) != -1)
			fprintf(out, "%s\n", line);
	}
}
