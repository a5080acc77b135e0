/*
 * fuzz_hello.c: tls_hello_sni on arbitrary bytes. Beyond not crashing: a
 * name it finds is printable ASCII of the length it says, and a prefix of
 * the input never yields a different name than the whole.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tls_hello.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char name[TLS_HELLO_NAME_MAX + 1], part[TLS_HELLO_NAME_MAX + 1];
	int r = tls_hello_sni(data, size, name, sizeof(name));

	if (r == TLS_HELLO_FOUND) {
		size_t n = strlen(name);

		if (n == 0 || n > TLS_HELLO_NAME_MAX)
			abort();
		for (size_t i = 0; i < n; i++)
			if (name[i] <= 0x20 || name[i] >= 0x7f)
				abort();
	}
	if (size > 0) {
		int q = tls_hello_sni(data, size / 2, part, sizeof(part));

		if (q == TLS_HELLO_FOUND && (r != TLS_HELLO_FOUND || strcmp(part, name) != 0))
			abort();
	}
	return 0;
}
