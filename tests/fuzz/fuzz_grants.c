/*
 * fuzz_grants.c: grant_store_parse on arbitrary bytes.
 *
 * A store that parses is written back with grant_store_write into memory
 * and parsed again: it must give the same grants, field for field. Each
 * wildcard is matched against every grant's host and that host with a
 * label in front: a match must be a strict subdomain of the suffix.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grant.h"

#define MAX_GRANTS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool grant_same(const struct grant *a, const struct grant *b)
{
	return strcmp(a->host, b->host) == 0 && a->wildcard == b->wildcard && a->port == b->port &&
	       a->level == b->level && a->added == b->added &&
	       (a->level != GRANT_ONCE || a->expires == b->expires) &&
	       (a->level != GRANT_SESSION || strcmp(a->run, b->run) == 0);
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
	size_t na, nb, line, i, len = 0;
	const char *err;
	char *out = NULL;
	FILE *f;

	if (grant_store_parse((const char *)data, size, a, MAX_GRANTS, &na, &line, &err) == -1) {
		if (line == 0 || err == NULL)
			abort();
		return 0;
	}
	f = open_memstream(&out, &len);
	if (f == NULL)
		abort();
	if (grant_store_write(f, a, na) == -1)
		abort();
	fclose(f);
	if (grant_store_parse(out, len, b, MAX_GRANTS, &nb, &line, &err) == -1)
		abort();
	if (nb != na)
		abort();
	for (i = 0; i < na; i++)
		if (!grant_same(&a[i], &b[i]))
			abort();
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
