/*
 * fuzz_stamp.c: stamp_parse and stamp_keys_parse on arbitrary bytes.
 *
 * The first byte chooses: even runs the header parser on the rest, odd the
 * key-file parser. Beyond not crashing: a parsed stamp is canonical, so
 * stamp_format writes back the very bytes it was signed over, and that
 * value parses to the same fields and verifies; a parsed key file written
 * with stamp_keys_write parses to the same keys.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stamp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_stamp(const char *v, size_t len)
{
	struct stamp st, again;
	struct stamp_key key = { .kid = 0, .expires = 0 };
	const char *err;
	char out[STAMP_VALUE_MAX];
	int n;

	if (stamp_parse(v, len, &st, &err) == -1)
		return;
	if (st.signed_len >= len)
		abort();
	memset(key.key, 0x5a, sizeof(key.key));
	key.kid = st.kid;
	n = stamp_format(&st, &key, out, sizeof(out));
	if (n <= 0 || (size_t)n != strlen(out))
		abort();
	if (stamp_parse(out, (size_t)n, &again, &err) == -1)
		abort();
	if (again.signed_len != st.signed_len || memcmp(out, v, st.signed_len) != 0)
		abort();
	if (again.kid != st.kid || again.seq != st.seq || strcmp(again.src, st.src) != 0 ||
	    strcmp(again.net, st.net) != 0 || strcmp(again.as, st.as) != 0 ||
	    strcmp(again.boot, st.boot) != 0)
		abort();
	if (!stamp_verify(&again, out, &key, 1, 1))
		abort();
	/* the original verifies under this key only if it carries the same MAC */
	if (stamp_verify(&st, v, &key, 1, 1) != (memcmp(st.mac, again.mac, sizeof(st.mac)) == 0))
		abort();
}

static void check_keys(const char *buf, size_t len)
{
	struct stamp_key keys[STAMP_KEYS_MAX], again[STAMP_KEYS_MAX];
	size_t n, n2, line, i;
	const char *err;
	char *text = NULL;
	size_t textlen = 0;
	FILE *f;

	if (stamp_keys_parse(buf, len, keys, STAMP_KEYS_MAX, &n, &line, &err) == -1) {
		if (line == 0 || err == NULL)
			abort();
		return;
	}
	f = open_memstream(&text, &textlen);
	if (f == NULL)
		abort();
	if (stamp_keys_write(f, keys, n) == -1 || fclose(f) != 0)
		abort();
	if (stamp_keys_parse(text, textlen, again, STAMP_KEYS_MAX, &n2, &line, &err) == -1)
		abort();
	if (n2 != n)
		abort();
	/* field by field: struct padding need not survive assignment */
	for (i = 0; i < n; i++)
		if (keys[i].kid != again[i].kid || keys[i].expires != again[i].expires ||
		    memcmp(keys[i].key, again[i].key, sizeof(keys[i].key)) != 0)
			abort();
	free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	if ((data[0] & 1) == 0)
		check_stamp((const char *)data + 1, size - 1);
	else
		check_keys((const char *)data + 1, size - 1);
	return 0;
}
