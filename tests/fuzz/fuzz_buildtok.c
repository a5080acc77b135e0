/*
 * fuzz_buildtok.c: the build token file and Proxy-Authorization parsers on
 * arbitrary bytes (lib/buildtok.c).
 *
 * A file that parses is written back and parsed again: the same tokens.
 * The bytes as a header value: a secret taken must be 64 lower-case hex
 * digits, and looking it up must not fault.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buildtok.h"

#define MAX 16

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct buildtok a[MAX], b[MAX];
	char secret[BUILDTOK_SECRET_LEN + 1], *out = NULL;
	size_t na, nb, line, len = 0, slen;
	const char *err;
	bool expired;
	FILE *f;
	int r;

	r = buildtok_auth_parse((const char *)data, size, secret, sizeof(secret), &slen);
	if (r == 1) {
		if (slen != BUILDTOK_SECRET_LEN || strlen(secret) != slen)
			abort();
		for (size_t i = 0; i < slen; i++)
			if (!((secret[i] >= '0' && secret[i] <= '9') || (secret[i] >= 'a' && secret[i] <= 'f')))
				abort();
	}
	if (buildtok_file_parse((const char *)data, size, a, MAX, &na, &line, &err) == -1) {
		if (line == 0 || err == NULL)
			abort();
		return 0;
	}
	if (r == 1)
		buildtok_find(a, na, secret, slen, 0, &expired);
	f = open_memstream(&out, &len);
	if (f == NULL || buildtok_file_write(f, a, na) == -1)
		abort();
	fclose(f);
	if (buildtok_file_parse(out, len, b, MAX, &nb, &line, &err) == -1 || nb != na)
		abort();
	for (size_t i = 0; i < na; i++)
		if (strcmp(a[i].name, b[i].name) != 0 || memcmp(a[i].hash, b[i].hash, 32) != 0 ||
		    a[i].created != b[i].created || a[i].expires != b[i].expires)
			abort();
	free(out);
	return 0;
}
