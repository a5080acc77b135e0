/*
 * fuzz_ports.c: ports_parse on arbitrary bytes.
 *
 * Beyond not crashing: a refused input names a line and a reason; a parsed
 * registry formats to text of the length ports_format promised, and that
 * text parses back to the same bands in the same order. Allocating one
 * more band keeps the registry valid.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ports.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct ports reg, again;
static char out[PORTS_TEXT_MAX + 16], out2[PORTS_TEXT_MAX + 16]; /* again points into out */

static void same(const struct ports *a, const struct ports *b)
{
	if (a->n != b->n)
		abort();
	for (size_t i = 0; i < a->n; i++)
		if (a->band[i].base != b->band[i].base || a->band[i].len != b->band[i].len ||
		    memcmp(a->band[i].project, b->band[i].project, a->band[i].len) != 0)
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data, *err;
	size_t line, n;
	long base;

	if (ports_parse(buf, size, &reg, &line, &err) == -1) {
		if (line == 0 || err == NULL || reg.n != 0)
			abort();
		return 0;
	}
	n = ports_format(&reg, out, sizeof(out));
	if (n >= sizeof(out) || n != strlen(out) || n > size)
		abort();
	if (ports_parse(out, n, &again, &line, &err) == -1)
		abort();
	same(&reg, &again);
	base = ports_alloc(&again, "fuzz-new", 8);
	if (base == -1 ? again.n != PORTS_BANDS_MAX : ports_find(&again, "fuzz-new", 8) == NULL)
		abort();
	n = ports_format(&again, out2, sizeof(out2));
	if (n >= sizeof(out2) || ports_parse(out2, n, &reg, &line, &err) == -1)
		abort();
	return 0;
}
