/*
 * fuzz_grants.c: grant_store_parse on arbitrary bytes.
 *
 * A store that parses is written back with grant_store_write into memory
 * and parsed again: it must give the same grants, field for field.
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
	free(out);
	return 0;
}
