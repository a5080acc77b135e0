/*
 * test_scrub.c: the streaming scrubber against the whole-buffer reference
 * in tests/scrub_ref.h (scrub.h's definition written the slow, obvious
 * way). Every streamed result, however the input is cut and however small
 * the output buffer, must equal it. Inputs are fed from guard pages so a
 * read past a piece faults.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guard.h"
#include "scrub.h"
#include "../scrub_ref.h"

/*
 * Stream in[0..len) cut at cuts[0..ncuts) (increasing) with an output
 * buffer of outsz bytes (0: len + hold, always enough) into out; returns the count.
 */
static uint64_t stream(struct scrub *s, const char *in, size_t len, const size_t *cuts,
		       size_t ncuts, size_t outsz, char *out)
{
	size_t from = 0, o = 0;
	char *buf;

	if (outsz == 0)
		outsz = len + scrub_hold_max(s) + 1;
	buf = malloc(outsz);
	assert_non_null(buf);
	for (size_t c = 0; c <= ncuts; c++) {
		size_t to = c < ncuts ? cuts[c] : len, n = to - from;
		char *piece = guard_copy(in + from, n);
		size_t off = 0;

		while (off < n) {
			size_t used, w = scrub_feed(s, piece + off, n - off, buf, outsz, &used);

			assert_true(used > 0 || outsz <= scrub_hold_max(s));
			assert_true(scrub_pending(s) <= scrub_hold_max(s));
			memcpy(out + o, buf, w);
			o += w;
			off += used;
		}
		guard_free(piece, n);
		from = to;
	}
	while (scrub_pending(s) > 0) {
		size_t w = scrub_flush(s, buf, outsz);

		memcpy(out + o, buf, w);
		o += w;
	}
	assert_int_equal(o, len);
	free(buf);
	return scrub_count(s);
}

/* One check: the streamed form of in under cuts equals the reference. */
static void check_cuts(const char *const *sec, const size_t *lens, size_t n, const char *in,
		       size_t len, const size_t *cuts, size_t ncuts, size_t outsz)
{
	char *want = malloc(len + 1), *got = malloc(len + 1);
	struct scrub *s = scrub_new(sec, lens, n);
	uint64_t wc, gc;

	assert_non_null(s);
	assert_non_null(want);
	assert_non_null(got);
	wc = scrub_reference(sec, lens, n, in, len, want);
	gc = stream(s, in, len, cuts, ncuts, outsz, got);
	if (len > 0 && memcmp(want, got, len) != 0)
		print_error("want %.*s\ngot  %.*s\n", (int)len, want, (int)len, got);
	assert_memory_equal(want, got, len);
	assert_int_equal(wc, gc);
	scrub_free(s);
	free(want);
	free(got);
}

/* Every single cut, every pair of cuts, and one byte per call. */
static void check_all_splits(const char *const *sec, size_t n, const char *in)
{
	size_t lens[SCRUB_MAX_SECRETS], len = strlen(in), cuts[2];
	size_t *each = malloc((len + 1) * sizeof(*each));

	assert_non_null(each);
	for (size_t k = 0; k < n; k++)
		lens[k] = strlen(sec[k]);
	check_cuts(sec, lens, n, in, len, NULL, 0, 0);
	for (size_t i = 0; i <= len; i++) {
		cuts[0] = i;
		check_cuts(sec, lens, n, in, len, cuts, 1, 0);
		for (size_t j = i; j <= len; j++) {
			cuts[1] = j;
			check_cuts(sec, lens, n, in, len, cuts, 2, 0);
		}
	}
	for (size_t i = 0; i < len; i++)
		each[i] = i + 1;
	check_cuts(sec, lens, n, in, len, each, len > 0 ? len - 1 : 0, 0);
	free(each);
}

/* The whole stream as one string, for literal expectations. */
static char *scrubbed(const char *const *sec, size_t n, const char *in, uint64_t *count)
{
	size_t lens[SCRUB_MAX_SECRETS], len = strlen(in);
	char *out = calloc(1, len + 1);
	struct scrub *s;

	for (size_t k = 0; k < n; k++)
		lens[k] = strlen(sec[k]);
	s = scrub_new(sec, lens, n);
	assert_non_null(s);
	assert_non_null(out);
	*count = stream(s, in, len, NULL, 0, 0, out);
	scrub_free(s);
	return out;
}

static void expect(const char *const *sec, size_t n, const char *in, const char *want,
		   uint64_t want_count)
{
	uint64_t count;
	char *got = scrubbed(sec, n, in, &count);

	assert_string_equal(got, want);
	assert_int_equal(count, want_count);
	free(got);
	check_all_splits(sec, n, in);
}

static void test_simple(void **state)
{
	const char *sec[] = { "s3cr3t" };

	expect(sec, 1, "", "", 0);
	expect(sec, 1, "nothing here", "nothing here", 0);
	expect(sec, 1, "s3cr3t", "******", 1);
	expect(sec, 1, "key=s3cr3t; again s3cr3ts3cr3t.", "key=******; again ************.", 3);
	expect(sec, 1, "s3cr3", "s3cr3", 0);
	expect(sec, 1, "s3cr3s3cr3t", "s3cr3******", 1);
	expect(sec, 1, "3cr3t s3cr", "3cr3t s3cr", 0);
}

static void test_overlapping(void **state)
{
	const char *abcab[] = { "abcab" };
	const char *aaaa[] = { "aaaa" };

	/* two occurrences sharing "ab": the union is masked */
	expect(abcab, 1, "abcabcab", "********", 2);
	expect(abcab, 1, "xabcabcabx", "x********x", 2);
	expect(abcab, 1, "abcabxabcab", "*****x*****", 2);
	expect(abcab, 1, "abcacabcab", "abcac*****", 1);
	expect(aaaa, 1, "aaaaaaa", "*******", 4);
	expect(aaaa, 1, "aaabaaaa", "aaab****", 1);
}

static void test_prefixes_and_nesting(void **state)
{
	const char *pre[] = { "abcd", "abcdef", "abcdefgh" };
	const char *nest[] = { "abcdef", "bcde" };
	const char *suffix[] = { "xyzw", "wxyzw" };

	expect(pre, 3, "abcdefgh", "********", 3);
	expect(pre, 3, "--abcdefg--", "--******g--", 2);
	expect(pre, 3, "abcabcdeabc", "abc****eabc", 1);
	expect(nest, 2, "abcdefg", "******g", 2);
	expect(nest, 2, "abcdeg", "a****g", 1);
	expect(nest, 2, "abcdabcdef", "abcd******", 2);
	expect(suffix, 2, "wxyzwxyzw", "*********", 4);
}

static void test_duplicates_count_once(void **state)
{
	const char *dup[] = { "token", "token", "tok3n" };

	expect(dup, 3, "token tok3n token", "***** ***** *****", 3);
}

static void test_binary_secrets(void **state)
{
	static const char sec0[] = { 'a', '\0', '\r', '\n', (char)0xff };
	static const char in[] = { 'x', 'a', '\0', '\r', '\n', (char)0xff, 'a', '\0' };
	static const char want[] = { 'x', '*', '*', '*', '*', '*', 'a', '\0' };
	const char *sec[] = { sec0 };
	size_t lens[] = { sizeof(sec0) }, cuts[1];

	for (size_t i = 0; i <= sizeof(in); i++) {
		char got[sizeof(in)];
		struct scrub *s = scrub_new(sec, lens, 1);

		assert_non_null(s);
		cuts[0] = i;
		assert_int_equal(stream(s, in, sizeof(in), cuts, 1, 0, got), 1);
		assert_memory_equal(got, want, sizeof(in));
		scrub_free(s);
	}
}

static void test_small_output(void **state)
{
	const char *sec[] = { "abcab", "bcabxyz", "zzzz" };
	size_t lens[] = { 5, 7, 4 };
	const char *in = "abcabcabxyzzzzzabcabxyabcabcab-zzz-zzzz";
	size_t len = strlen(in), cuts[] = { 3, 9, 10, 20 };

	/* the least that always makes progress is hold + 1 (7 here) */
	for (size_t outsz = 7; outsz < 20; outsz++)
		check_cuts(sec, lens, 3, in, len, cuts, 4, outsz);
}

static void test_flush_in_pieces_and_new_stream(void **state)
{
	const char *sec[] = { "abcdef" };
	size_t lens[] = { 6 }, used;
	struct scrub *s = scrub_new(sec, lens, 1);
	char out[16];

	assert_non_null(s);
	assert_int_equal(scrub_hold_max(s), 5);
	/* "xabcde" : "x" is final, "abcde" waits */
	assert_int_equal(scrub_feed(s, "xabcde", 6, out, sizeof(out), &used), 1);
	assert_int_equal(used, 6);
	assert_int_equal(scrub_pending(s), 5);
	/* too little room: nothing is consumed */
	assert_int_equal(scrub_feed(s, "f", 1, out, 5, &used), 0);
	assert_int_equal(used, 0);
	/* end of stream: the partial match is released as it was, 2 bytes at a time */
	assert_int_equal(scrub_flush(s, out, 2), 2);
	assert_memory_equal(out, "ab", 2);
	assert_int_equal(scrub_pending(s), 3);
	assert_int_equal(scrub_flush(s, out, 16), 3);
	assert_memory_equal(out, "cde", 3);
	assert_int_equal(scrub_pending(s), 0);
	/* a new stream: "f" does not complete the old one */
	assert_int_equal(scrub_feed(s, "fabcdef", 7, out, sizeof(out), &used), 7);
	assert_memory_equal(out, "f******", 7);
	assert_int_equal(scrub_count(s), 1);
	assert_int_equal(scrub_flush(s, out, 16), 0);
	scrub_free(s);
	scrub_free(NULL);
}

static void test_no_secrets(void **state)
{
	struct scrub *s = scrub_new(NULL, NULL, 0);
	char out[8];
	size_t used;

	assert_non_null(s);
	assert_int_equal(scrub_hold_max(s), 0);
	assert_int_equal(scrub_feed(s, "abc", 3, out, 3, &used), 3);
	assert_int_equal(used, 3);
	assert_memory_equal(out, "abc", 3);
	assert_int_equal(scrub_pending(s), 0);
	scrub_free(s);
}

static void test_bad_arguments(void **state)
{
	const char *sec[SCRUB_MAX_SECRETS + 1];
	size_t lens[SCRUB_MAX_SECRETS + 1];
	static char big[SCRUB_MAX_LEN + 1];

	for (size_t i = 0; i <= SCRUB_MAX_SECRETS; i++) {
		sec[i] = "abcd";
		lens[i] = 4;
	}
	errno = 0;
	assert_null(scrub_new(sec, lens, SCRUB_MAX_SECRETS + 1));
	assert_int_equal(errno, EINVAL);
	lens[0] = 3;
	errno = 0;
	assert_null(scrub_new(sec, lens, 1));
	assert_int_equal(errno, EINVAL);
	memset(big, 'q', sizeof(big));
	sec[0] = big;
	lens[0] = SCRUB_MAX_LEN + 1;
	errno = 0;
	assert_null(scrub_new(sec, lens, 1));
	assert_int_equal(errno, EINVAL);
	lens[0] = SCRUB_MAX_LEN;
	{
		struct scrub *s = scrub_new(sec, lens, SCRUB_MAX_SECRETS);

		assert_non_null(s);
		assert_int_equal(scrub_hold_max(s), SCRUB_MAX_LEN - 1);
		scrub_free(s);
	}
}

/* A secret of 8192 'q's in a long run of them: every byte masked, linear time. */
static void test_longest_secret(void **state)
{
	static char sec0[SCRUB_MAX_LEN];
	const char *sec[] = { sec0 };
	size_t lens[] = { SCRUB_MAX_LEN }, len = 3 * SCRUB_MAX_LEN + 5, cuts[] = { 1, 8191, 8192, 20000 };
	char *in = malloc(len);

	assert_non_null(in);
	memset(sec0, 'q', sizeof(sec0));
	memset(in, 'q', len);
	in[0] = 'x';
	check_cuts(sec, lens, 1, in, len, cuts, 4, 0);
	check_cuts(sec, lens, 1, in, len, cuts, 4, SCRUB_MAX_LEN);
	in[10000] = 'x';
	check_cuts(sec, lens, 1, in, len, cuts, 4, 0);
	free(in);
}

static uint32_t rnd(uint32_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 17;
	*x ^= *x << 5;
	return *x;
}

/* Random secrets over "abc", random text, random cuts and output sizes. */
static void test_random(void **state)
{
	uint32_t x = 2463534242u;

	for (int round = 0; round < 3000; round++) {
		char secbuf[SCRUB_MAX_SECRETS][12], in[200];
		const char *sec[SCRUB_MAX_SECRETS];
		size_t lens[SCRUB_MAX_SECRETS], n = 1 + rnd(&x) % 5, len = rnd(&x) % sizeof(in);
		size_t cuts[8], ncuts = rnd(&x) % 8, hold = 0, outsz;

		for (size_t k = 0; k < n; k++) {
			lens[k] = 4 + rnd(&x) % 8;
			for (size_t i = 0; i < lens[k]; i++)
				secbuf[k][i] = (char)('a' + rnd(&x) % 3);
			sec[k] = secbuf[k];
			if (lens[k] - 1 > hold)
				hold = lens[k] - 1;
		}
		for (size_t i = 0; i < len; i++)
			in[i] = (char)('a' + rnd(&x) % 3);
		for (size_t c = 0; c < ncuts; c++)
			cuts[c] = len == 0 ? 0 : rnd(&x) % (len + 1);
		for (size_t c = 1; c < ncuts; c++)
			for (size_t d = c; d > 0 && cuts[d - 1] > cuts[d]; d--) {
				size_t t = cuts[d];

				cuts[d] = cuts[d - 1];
				cuts[d - 1] = t;
			}
		outsz = rnd(&x) % 2 ? 0 : hold + 1 + rnd(&x) % 16;
		check_cuts(sec, lens, n, in, len, cuts, ncuts, outsz);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_simple),
		cmocka_unit_test(test_overlapping),
		cmocka_unit_test(test_prefixes_and_nesting),
		cmocka_unit_test(test_duplicates_count_once),
		cmocka_unit_test(test_binary_secrets),
		cmocka_unit_test(test_small_output),
		cmocka_unit_test(test_flush_in_pieces_and_new_stream),
		cmocka_unit_test(test_no_secrets),
		cmocka_unit_test(test_bad_arguments),
		cmocka_unit_test(test_longest_secret),
		cmocka_unit_test(test_random),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
