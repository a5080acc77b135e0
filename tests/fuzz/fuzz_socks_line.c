/*
 * fuzz_socks_line.c: run_socks_line (the sandbox's init reading one line
 * of a /proc/net/unix, whose names any local user chooses) on arbitrary
 * bytes.
 *
 * Beyond not crashing or reading past the input: a name found is the
 * input's tail, starts with '/', holds no NUL, and follows a space; the
 * line before it starts with a field ending in ':'.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size == 0 ? 1 : size); /* exactly size bytes: ASan sees an over-read */
	const char *name = NULL;
	size_t n;

	if (buf == NULL)
		return 0;
	memcpy(buf, data, size);
	n = run_socks_line(buf, size, &name);
	if (n > 0) {
		if (name == NULL || name <= buf || name + n != buf + size || name[0] != '/' || name[-1] != ' ' ||
		    memchr(name, '\0', n) != NULL || memchr(buf, ':', (size_t)(name - buf)) == NULL)
			abort();
	}
	free(buf);
	return 0;
}
