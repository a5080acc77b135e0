/*
 * fuzz_inject_forms.c: libFuzzer target for the forms of a secret
 * (lib/inject_forms.c) and the scrubber built from them.
 *
 * Layout: byte 0: bit 0 a Basic prefix, bits 1-3 how many junk bytes lead
 * the base64'd blob (0..7), bits 4-5 how many trail it; byte 1: the
 * secret's length (4 + value % 60); then the secret; the rest is text.
 * Checks: every form is at least SCRUB_MIN_LEN and distinct, the raw
 * value is one; base64 of junk + secret + junk holds a form; and scrubbing
 * text + that blob equals the whole-buffer reference of tests/scrub_ref.h.
 * Any difference aborts.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "inject.h"
#include "scrub.h"
#include "../scrub_ref.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct inject_forms f;
	unsigned char blob[80];
	size_t slen, pre, post, tlen, blen, len, used, w;
	const char *sec;
	char *in, *want, *got;
	struct scrub *sc;
	bool found = false, raw = false;
	uint64_t wc;

	if (size < 2)
		return 0;
	slen = 4 + data[1] % 60;
	if (size - 2 < slen)
		return 0;
	pre = (data[0] >> 1) & 7;
	post = (data[0] >> 4) & 3;
	sec = (const char *)data + 2;
	tlen = size - 2 - slen;
	inject_forms_init(&f);
	if (inject_forms_add(&f, (data[0] & 1) ? "Basic " : "", sec, slen) == -1)
		abort();
	for (size_t i = 0; i < f.n; i++) {
		if (f.len[i] < SCRUB_MIN_LEN)
			abort();
		for (size_t j = 0; j < i; j++)
			if (f.len[i] == f.len[j] && memcmp(f.pat[i], f.pat[j], f.len[i]) == 0)
				abort();
		raw |= f.len[i] == slen && memcmp(f.pat[i], sec, slen) == 0;
	}
	if (!raw)
		abort();
	memset(blob, 'j', pre);
	memcpy(blob + pre, sec, slen);
	memset(blob + pre + slen, 'k', post);
	len = tlen + 4 * ((pre + slen + post + 2) / 3);
	in = malloc(len + 1); /* EVP_EncodeBlock ends with a NUL */
	want = malloc(len);
	got = malloc(len + SCRUB_MAX_LEN);
	if (in == NULL || want == NULL || got == NULL)
		abort();
	memcpy(in, data + 2 + slen, tlen);
	blen = (size_t)EVP_EncodeBlock((unsigned char *)in + tlen, blob, (int)(pre + slen + post));
	for (size_t i = 0; i < f.n && !found; i++)
		found = memmem(in + tlen, blen, f.pat[i], f.len[i]) != NULL;
	if (!found)
		abort();
	sc = scrub_new((const char *const *)f.pat, f.len, f.n);
	if (sc == NULL)
		abort();
	w = scrub_feed(sc, in, len, got, len + SCRUB_MAX_LEN, &used);
	while (scrub_pending(sc) > 0)
		w += scrub_flush(sc, got + w, len + SCRUB_MAX_LEN - w);
	wc = scrub_reference((const char *const *)f.pat, f.len, f.n, in, len, want);
	if (used != len || w != len || memcmp(got, want, len) != 0 || scrub_count(sc) != wc ||
	    wc == 0)
		abort();
	scrub_free(sc);
	free(in);
	free(want);
	free(got);
	inject_forms_release(&f);
	return 0;
}
