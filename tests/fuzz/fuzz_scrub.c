/*
 * fuzz_scrub.c: libFuzzer target for the streaming scrubber.
 *
 * The input chooses the secrets, the text, where the text is cut into
 * scrub_feed calls and how small the output buffer is; the streamed
 * result and count must equal a whole-buffer reference written from
 * scrub.h's definition (mask the union of all occurrences of the distinct
 * secrets, count (secret, start) pairs). Any difference aborts.
 *
 * Layout: byte 0: number of secrets (1 + low 4 bits) and, bit 4, a
 * three-letter alphabet for everything (so matches and overlaps are
 * common); byte 1: the seed of the cut and buffer-size generator; then
 * per secret a length byte (4 + value % 29) and that many bytes; the rest
 * is the text.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scrub.h"
#include "../scrub_ref.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint32_t rnd(uint32_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 17;
	*x ^= *x << 5;
	return *x;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char sec[SCRUB_MAX_SECRETS][32];
	const char *ptrs[SCRUB_MAX_SECRETS];
	size_t lens[SCRUB_MAX_SECRETS], n, off = 2, len, from = 0, o = 0, outsz, hold;
	bool small;
	uint32_t x;
	char *in, *want, *got, *buf;
	struct scrub *s;
	uint64_t wc;

	if (size < 2)
		return 0;
	n = 1 + (data[0] & 15);
	small = (data[0] & 16) != 0;
	x = 0x9e3779b9u ^ data[1];
	for (size_t k = 0; k < n; k++) {
		if (off >= size)
			return 0;
		lens[k] = 4 + data[off++] % 29;
		if (size - off < lens[k])
			return 0;
		for (size_t i = 0; i < lens[k]; i++)
			sec[k][i] = small ? (char)('a' + data[off + i] % 3) : (char)data[off + i];
		ptrs[k] = sec[k];
		off += lens[k];
	}
	len = size - off;
	in = malloc(len + 1);
	want = malloc(len + 1);
	got = malloc(len + 1);
	if (in == NULL || want == NULL || got == NULL)
		abort();
	for (size_t i = 0; i < len; i++)
		in[i] = small ? (char)('a' + data[off + i] % 3) : (char)data[off + i];

	s = scrub_new(ptrs, lens, n);
	if (s == NULL)
		abort();
	hold = scrub_hold_max(s);
	outsz = hold + 1 + rnd(&x) % 40;
	buf = malloc(outsz);
	if (buf == NULL)
		abort();
	while (from < len) {
		size_t piece = 1 + rnd(&x) % (rnd(&x) % 4 == 0 ? 2 : 64), used, w;

		if (piece > len - from)
			piece = len - from;
		w = scrub_feed(s, in + from, piece, buf, outsz, &used);
		if (used == 0 || w > outsz || scrub_pending(s) > hold)
			abort();
		memcpy(got + o, buf, w);
		o += w;
		from += used;
	}
	while (scrub_pending(s) > 0) {
		size_t w = scrub_flush(s, buf, 1 + rnd(&x) % outsz);

		memcpy(got + o, buf, w);
		o += w;
	}
	wc = scrub_reference(ptrs, lens, n, in, len, want);
	if (o != len || memcmp(want, got, len) != 0 || wc != scrub_count(s)) {
		fprintf(stderr, "scrub differs: %zu of %zu bytes, count %llu want %llu\n", o, len,
			(unsigned long long)scrub_count(s), (unsigned long long)wc);
		abort();
	}
	scrub_free(s);
	free(buf);
	free(in);
	free(want);
	free(got);
	return 0;
}
