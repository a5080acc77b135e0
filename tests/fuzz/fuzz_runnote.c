/*
 * fuzz_runnote.c: the run note parser on arbitrary bytes (lib/runnote.c).
 *
 * A note that parses is formatted back and parsed again: the same note.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runnote.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct runnote a, b;
	static char out[RUNNOTE_MAX_BYTES + 1];
	int len;

	if (runnote_parse((const char *)data, size, &a) == -1)
		return 0;
	len = runnote_format(&a, out, sizeof(out));
	if (len < 0)
		abort();
	if (runnote_parse(out, (size_t)len, &b) == -1 || memcmp(&a, &b, sizeof(a)) != 0)
		abort();
	return 0;
}
