/*
 * config_allow.c: the config's `allow` and `allow-private` lines, and their
 * normalised form.
 *
 *   allow GRANT [tunnel] [for=SCOPE]... [max-up=BYTES] [max-requests=N] [per=DURATION]
 *   allow-private HOST CIDR
 *
 * A grant (grant.h) at level config, with the principals it serves (for=,
 * scope.h; never a container name) and its budgets; an exception lets HOST
 * resolve into CIDR although the range is denied.
 */
#include "config_parser.h"

#include <stdlib.h>
#include <string.h>

void config_allow(struct parser *p, char **w, size_t nw)
{
	struct config *c = p->c;
	struct grant g, *grown;
	const char *err = "bad grant";

	if (grant_parse(w[1], strlen(w[1]), &g, &err) == -1) {
		config_error(p, "allow: bad grant \"%s\": %s", w[1], err);
		return;
	}
	g.level = GRANT_CONFIG;
	for (size_t i = 2; i < nw; i++) {
		switch (grant_budget_word(&g, w[i], strlen(w[i]), true, &err)) {
		case 1:
			continue;
		case -1:
			config_error(p, "allow %s: %s: %s", w[1], w[i], err);
			return;
		}
		switch (grant_tunnel_word(&g, w[i], strlen(w[i]), &err)) {
		case 1:
			continue;
		case -1:
			config_error(p, "allow %s: %s: %s", w[1], w[i], err);
			return;
		}
		if (strncmp(w[i], "for=", 4) != 0) {
			config_error(p, "allow %s: expected tunnel, for=SCOPE, max-up=BYTES, max-requests=N "
				"or per=DURATION, not \"%s\"", w[1], w[i]);
			return;
		}
		if (grant_scope_add(&g, w[i] + 4, &err) == -1) {
			config_error(p, "allow %s: %s: %s", w[1], w[i], err);
			return;
		}
	}
	if (grant_budget_check(&g, &err) == -1) {
		config_error(p, "allow %s: %s", w[1], err);
		return;
	}
	grown = realloc(c->grants, (c->ngrants + 1) * sizeof(*grown));
	if (grown == NULL) {
		config_error(p, "allow: out of memory");
		return;
	}
	c->grants = grown;
	c->grants[c->ngrants++] = g;
}

void config_allow_private(struct parser *p, char **w, size_t nw)
{
	struct config *c = p->c;
	struct config_exception e, *grown;
	const char *err = "bad host";
	bool bad = false;

	memset(&e, 0, sizeof(e));
	if (strchr(w[1], '*') != NULL) {
		config_error(p, "allow-private: bad host \"%s\": wildcard not allowed here", w[1]);
		bad = true;
	} else if (host_canon(w[1], strlen(w[1]), &e.host, &err) == -1) {
		config_error(p, "allow-private: bad host \"%s\": %s", w[1], err);
		bad = true;
	}
	err = "bad range";
	if (ipnet_parse(w[2], strlen(w[2]), &e.net, &err) == -1) {
		config_error(p, "allow-private: bad range \"%s\": %s", w[2], err);
		bad = true;
	}
	if (bad)
		return;
	grown = realloc(c->exceptions, (c->nexceptions + 1) * sizeof(*grown));
	if (grown == NULL) {
		config_error(p, "allow-private: out of memory");
		return;
	}
	c->exceptions = grown;
	c->exceptions[c->nexceptions++] = e;
}

void config_allow_print(const struct config *c, FILE *out)
{
	char buf[HOST_NAME_MAX_LEN + 64];

	for (size_t i = 0; i < c->ngrants; i++) {
		fprintf(out, "allow %s", grant_format(&c->grants[i], buf, sizeof(buf)));
		if (c->grants[i].tunnel)
			fputs(" tunnel", out);
		for (size_t k = 0; k < c->grants[i].nscopes; k++)
			fprintf(out, " for=%s", c->grants[i].scopes[k].text);
		if (grant_budgeted(&c->grants[i]))
			fprintf(out, " %s", grant_budget_format(&c->grants[i], buf, sizeof(buf)));
		fputc('\n', out);
	}
	for (size_t i = 0; i < c->nexceptions; i++) {
		char net[64];

		fprintf(out, "allow-private %s %s\n", c->exceptions[i].host.name,
			ipnet_format(&c->exceptions[i].net, net, sizeof(net)));
	}
}
