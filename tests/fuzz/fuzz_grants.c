/*
 * fuzz_grants.c: grant_store_parse on arbitrary bytes.
 *
 * A store that parses is written back with grant_store_write into memory
 * and parsed again: it must give the same grants, field for field, and the
 * same mode and learned lines. Each
 * wildcard is matched against every grant's host and that host with a
 * label in front: a match must be a strict subdomain of the suffix. Each
 * for= scope must come back in the same canonical text, and a grant must
 * serve what its own scopes describe: ADDR@NET and ADDR stamps. Budget
 * words (max-up=, max-requests=, per=) must come back equal, within their
 * bounds, and per= only beside a max-.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grant.h"

#define MAX_GRANTS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool same_fields(const struct grant *a, const struct grant *b)
{
	if (a->nscopes != b->nscopes)
		return false;
	for (size_t i = 0; i < a->nscopes; i++)
		if (a->scopes[i].kind != b->scopes[i].kind ||
		    strcmp(a->scopes[i].text, b->scopes[i].text) != 0)
			return false;
	if (a->max_up != b->max_up || a->max_requests != b->max_requests || a->per != b->per)
		return false;
	return strcmp(a->host, b->host) == 0 && a->wildcard == b->wildcard && a->port == b->port &&
	       a->level == b->level && a->added == b->added &&
	       (a->level != GRANT_ONCE || a->expires == b->expires) &&
	       (a->level != GRANT_SESSION || strcmp(a->run, b->run) == 0) && grant_same(a, b);
}

/* A budget that parsed is within its bounds, and a window has a budget to reset. */
static void check_budget(const struct grant *g)
{
	if (g->max_up > GRANT_BUDGET_BYTES_MAX || g->max_requests > GRANT_BUDGET_REQUESTS_MAX ||
	    g->per > GRANT_BUDGET_PER_MAX || (g->per > 0 && !grant_budgeted(g)))
		abort();
}

/* A grant scoped to ADDR@NET or ADDR serves that stamp, and nothing unattributed. */
static void check_serves(const struct grant *g)
{
	if (g->nscopes > 0 && grant_serves(g, NULL, NULL, NULL))
		abort();
	for (size_t i = 0; i < g->nscopes; i++) {
		const struct scope *sc = &g->scopes[i];
		char src[SCOPE_TEXT_MAX + 1];

		if (sc->kind == SCOPE_SRC_NET) {
			snprintf(src, sizeof(src), "%.*s", (int)(strrchr(sc->text, '@') - sc->text),
				 sc->text);
			if (!grant_serves(g, sc->text, src, NULL))
				abort();
		} else if (sc->kind == SCOPE_ADDR && !grant_serves(g, "x@y", sc->text, NULL)) {
			abort();
		} else if (sc->kind == SCOPE_AS && !grant_serves(g, "x@y", "x", sc->text)) {
			abort();
		}
	}
}

/* grant_wildcard_covers(suffix, name) may hold only for a strict subdomain of suffix */
static void check_cover(const char *suffix, const char *name)
{
	size_t nl = strlen(name), sl = strlen(suffix);

	if (grant_wildcard_covers(suffix, name) &&
	    !(nl > sl + 1 && name[nl - sl - 1] == '.' && strcmp(name + nl - sl, suffix) == 0))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct grant a[MAX_GRANTS], b[MAX_GRANTS];
	struct grant_mode ma, mb;
	size_t na, nb, line, i, len = 0;
	const char *err;
	char *out = NULL;
	FILE *f;

	if (grant_store_parse((const char *)data, size, a, MAX_GRANTS, &na, &ma, &line, &err) ==
	    -1) {
		if (line == 0 || err == NULL)
			abort();
		return 0;
	}
	f = open_memstream(&out, &len);
	if (f == NULL)
		abort();
	if (grant_store_write(f, a, na, &ma) == -1)
		abort();
	fclose(f);
	if (grant_store_parse(out, len, b, MAX_GRANTS, &nb, &mb, &line, &err) == -1)
		abort();
	if (nb != na || ma.set != mb.set || ma.learned != mb.learned ||
	    (ma.set && (ma.kind != mb.kind || ma.since != mb.since ||
			(ma.kind == GRANT_MODE_LEARN && ma.until != mb.until))) ||
	    (ma.learned && (ma.learn_start != mb.learn_start || ma.learn_end != mb.learn_end)))
		abort();
	for (i = 0; i < na; i++)
		if (!same_fields(&a[i], &b[i]))
			abort();
	for (i = 0; i < na; i++) {
		check_serves(&a[i]);
		check_budget(&a[i]);
	}
	for (i = 0; i < na; i++) {
		if (!a[i].wildcard)
			continue;
		for (size_t j = 0; j < na; j++) {
			char name[HOST_NAME_MAX_LEN + 8];

			check_cover(a[i].host, a[j].host);
			snprintf(name, sizeof(name), "x.%s", a[j].host);
			check_cover(a[i].host, name);
		}
	}
	free(out);
	return 0;
}
