/*
 * fuzz_snapids.c: snapids_parse (the forwarder's reading of one engine
 * snapshot line) and snapids_last (the last snapshot of a net in a tail of
 * STATE/engine.jsonl), on arbitrary bytes.
 *
 * Beyond not crashing: the ids of a line that parses are 64 lower-case hex
 * digits each, sorted, each found by snapids_has; a net that parses is
 * 1-64 bytes; snapids_last over the same bytes plus a newline finds that
 * line's net with the same ids.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "snapids.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CAP 64

static char ids[CAP][SNAPIDS_ID_LEN + 1], again[CAP][SNAPIDS_ID_LEN + 1];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char net[SNAPIDS_NET_MAX + 1];
	const char *err;
	size_t n = 0, m = 0;
	char *buf;

	if (snapids_parse((const char *)data, size, net, ids, CAP, &n, &err) == -1) {
		if (err == NULL)
			abort();
		return 0;
	}
	if (strlen(net) == 0 || strlen(net) > SNAPIDS_NET_MAX || n > CAP)
		abort();
	for (size_t i = 0; i < n; i++) {
		if (strlen(ids[i]) != SNAPIDS_ID_LEN || strspn(ids[i], "0123456789abcdef") != SNAPIDS_ID_LEN)
			abort();
		if (i > 0 && memcmp(ids[i - 1], ids[i], SNAPIDS_ID_LEN) > 0)
			abort();
		if (!snapids_has((const char(*)[SNAPIDS_ID_LEN + 1])ids, n, ids[i]))
			abort();
	}
	if (memchr(data, '\n', size) != NULL)
		return 0; /* whitespace inside the object: not one line of the file */
	buf = malloc(size + 1);
	if (buf == NULL)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\n';
	if (snapids_last(buf, size + 1, true, net, again, CAP, &m) != 1 || m != n ||
	    memcmp(again, ids, n * sizeof(ids[0])) != 0)
		abort();
	free(buf);
	return 0;
}
