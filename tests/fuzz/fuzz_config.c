/*
 * fuzz_config.c: libFuzzer target for config_parse and config_print.
 *
 * Any input must parse without a crash or a leak. An input that parses
 * with no error is printed, and the printed form must parse with no error
 * and print the same text again: config_print's promise that its output
 * reads back as the same config. Error messages go to /dev/null.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The normalised text of c, heap-allocated; *len its length. */
static char *print_text(const struct config *c, size_t *len)
{
	char *out = NULL;
	FILE *f = open_memstream(&out, len);

	if (f == NULL)
		abort();
	config_print(c, f);
	if (fclose(f) == EOF)
		abort();
	return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *devnull;
	struct config *a, *b;
	char *pa, *pb;
	size_t la, lb;

	if (devnull == NULL)
		devnull = fopen("/dev/null", "w");
	a = config_new();
	if (a == NULL)
		return 0;
	if (config_parse(a, (const char *)data, size, "fuzz.conf", devnull) != 0) {
		config_free(a);
		return 0;
	}
	pa = print_text(a, &la);
	b = config_new();
	if (b == NULL)
		abort();
	if (config_parse(b, pa, la, "printed.conf", stderr) != 0) {
		fprintf(stderr, "printed form does not parse:\n%s", pa);
		abort();
	}
	pb = print_text(b, &lb);
	if (la != lb || memcmp(pa, pb, la) != 0) {
		fprintf(stderr, "printed form changed:\n%s---\n%s", pa, pb);
		abort();
	}
	free(pa);
	free(pb);
	config_free(a);
	config_free(b);
	return 0;
}
