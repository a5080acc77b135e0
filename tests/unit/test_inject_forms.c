/*
 * test_inject_forms.c: the forms of a secret the scrubber masks
 * (lib/inject_forms.c). Expected strings were computed with Python's
 * urllib.parse.quote, quote_plus and base64; the alignment property is checked
 * against a plain base64 encoder written here, and a scrubber built from
 * the forms against the whole-buffer reference of tests/scrub_ref.h.
 * Secrets are read from guard pages so a read past one faults.
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

#include <openssl/evp.h>

#include "guard.h"
#include "inject.h"
#include "scrub.h"
#include "../scrub_ref.h"

static bool has(const struct inject_forms *f, const char *form)
{
	for (size_t i = 0; i < f->n; i++)
		if (f->len[i] == strlen(form) && memcmp(f->pat[i], form, f->len[i]) == 0)
			return true;
	return false;
}

static void forms_of(struct inject_forms *f, const char *prefix, const char *secret, size_t len)
{
	char *g = guard_copy(secret, len);

	inject_forms_init(f);
	assert_int_equal(inject_forms_add(f, prefix, g, len), 0);
	guard_free(g, len);
}

static void no_duplicates(const struct inject_forms *f)
{
	for (size_t i = 0; i < f->n; i++) {
		assert_true(f->len[i] >= SCRUB_MIN_LEN);
		for (size_t j = 0; j < i; j++)
			assert_false(f->len[i] == f->len[j] &&
				     memcmp(f->pat[i], f->pat[j], f->len[i]) == 0);
	}
}

/* A value with bytes a query encodes: every form, as Python writes it. */
static void test_reserved_value(void **state)
{
	static const char *const want[] = {
		"a+b/c=d:e f?",
		"a%2Bb%2Fc%3Dd%3Ae%20f%3F",       /* what inject_query_rewrite sends */
		"a%2bb%2fc%3dd%3ae%20f%3f",       /* lower-case hex */
		"a%252Bb%252Fc%253Dd%253Ae%2520f%253F", /* inside another URL */
		"a%2Bb/c%3Dd%3Ae%20f%3F",         /* urllib.parse.quote: '/' left raw */
		"a%2Bb%2Fc%3Dd%3Ae+f%3F",         /* urllib.parse.quote_plus: ' ' as '+' */
		"YStiL2M9ZDplIGY/", "YStiL2M9ZDplIGY_", /* base64, urlsafe, aligned */
		"ErYi9jPWQ6ZSBmP", "hK2IvYz1kOmUgZj", /* one and two bytes in */
		"a+b\\/c=d:e f?",                 /* in PHP's JSON; Python's is the raw form */
	};
	struct inject_forms f;

	forms_of(&f, "", "a+b/c=d:e f?", 12);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		assert_true(has(&f, want[i]));
	assert_int_equal(f.n, sizeof(want) / sizeof(want[0]));
	no_duplicates(&f);
	inject_forms_release(&f);
	assert_int_equal(f.n, 0);
}

/*
 * Python's urllib.parse.quote (safe="/" by default) and quote_plus (space
 * as '+', what urlencode writes): as Python writes them, each only when it
 * differs from the other forms.
 */
static void test_python_quote(void **state)
{
	struct inject_forms f;

	forms_of(&f, "", "hdr+sec/ret=0123456789~x", 24);
	assert_true(has(&f, "hdr%2Bsec/ret%3D0123456789~x"));   /* quote */
	assert_true(has(&f, "hdr%2Bsec%2Fret%3D0123456789~x")); /* quote_plus, as quote(safe="") */
	no_duplicates(&f);
	inject_forms_release(&f);
	forms_of(&f, "", "two words+x=", 12);
	assert_true(has(&f, "two+words%2Bx%3D"));   /* quote_plus */
	assert_true(has(&f, "two%20words%2Bx%3D")); /* quote, as quote(safe="") */
	no_duplicates(&f);
	inject_forms_release(&f);
	/* a '/' and a space, nothing else reserved: raw-slash and plus forms */
	forms_of(&f, "", "a/b c", 5);
	assert_true(has(&f, "a/b%20c"));
	assert_true(has(&f, "a%2Fb+c"));
	assert_true(has(&f, "a%2Fb%20c"));
	no_duplicates(&f);
	inject_forms_release(&f);
}

/* Unreserved bytes encode to themselves: the raw form once, no copies. */
static void test_unreserved_value(void **state)
{
	struct inject_forms f;

	forms_of(&f, "Bearer ", "abcd-1234_xyz.~", 15);
	assert_true(has(&f, "abcd-1234_xyz.~"));
	assert_true(has(&f, "YWJjZC0xMjM0X3h5ei5+"));
	assert_true(has(&f, "YWJjZC0xMjM0X3h5ei5-"));
	assert_true(has(&f, "FiY2QtMTIzNF94eXouf"));
	assert_true(has(&f, "hYmNkLTEyMzRfeHl6Ln"));
	assert_int_equal(f.n, 5);
	no_duplicates(&f);
	inject_forms_release(&f);
}

/* Bytes whose base64 differs between the alphabets. */
static void test_binary_value(void **state)
{
	static const char v[] = { (char)0xfb, (char)0xff, (char)0xbf, (char)0xfe, 0x3e, 0x3f };
	struct inject_forms f;

	forms_of(&f, "", v, sizeof(v));
	assert_true(has(&f, "+/+//j4/"));
	assert_true(has(&f, "-_-__j4_"));
	assert_true(has(&f, "%FB%FF%BF%FE%3E%3F"));
	assert_true(has(&f, "%fb%ff%bf%fe%3e%3f"));
	no_duplicates(&f);
	inject_forms_release(&f);
}

/* Inside a JSON string, as Python's json.dumps and PHP's json_encode write it. */
static void test_json(void **state)
{
	struct inject_forms f;

	forms_of(&f, "", "q\"u/o\\t\te\x01", 10);
	assert_true(has(&f, "q\\\"u/o\\\\t\\te\\u0001"));
	assert_true(has(&f, "q\\\"u\\/o\\\\t\\te\\u0001"));
	no_duplicates(&f);
	inject_forms_release(&f);
}

static void test_basic(void **state)
{
	struct inject_forms f;

	/* base64 of "alice:pa55word" */
	forms_of(&f, "Basic ", "YWxpY2U6cGE1NXdvcmQ=", 20);
	assert_true(has(&f, "YWxpY2U6cGE1NXdvcmQ="));
	assert_true(has(&f, "alice:pa55word"));
	assert_true(has(&f, "pa55word"));
	no_duplicates(&f);
	inject_forms_release(&f);
	/* the scheme is case-insensitive, padding optional */
	forms_of(&f, "BASIC  ", "YWxpY2U6cGE1NXdvcmQ", 19);
	assert_true(has(&f, "alice:pa55word"));
	inject_forms_release(&f);
	/* not base64: no decoded form */
	forms_of(&f, "Basic ", "not-base64!", 11);
	assert_true(has(&f, "not-base64!"));
	for (size_t i = 0; i < f.n; i++)
		assert_null(memchr(f.pat[i], ':', f.len[i]));
	inject_forms_release(&f);
	/* another scheme: the value is not decoded */
	forms_of(&f, "Bearer ", "YWxpY2U6cGE1NXdvcmQ=", 20);
	assert_false(has(&f, "alice:pa55word"));
	inject_forms_release(&f);
}

/* Too short to mask: no forms at all (the raw value would not be masked either). */
static void test_short_value(void **state)
{
	struct inject_forms f;

	forms_of(&f, "", "abc", 3);
	assert_int_equal(f.n, 0);
	forms_of(&f, "", "abcd", 4);
	assert_true(has(&f, "abcd"));
	no_duplicates(&f);
	inject_forms_release(&f);
}

static uint32_t rnd(uint32_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 17;
	*x ^= *x << 5;
	return *x;
}

/*
 * Wherever the value sits in a base64'd blob (after any prefix, before
 * anything), one form occurs in it, and a scrubber of the forms masks
 * there what the reference masks.
 */
static void test_base64_any_alignment(void **state)
{
	uint32_t x = 12345;

	for (int round = 0; round < 3000; round++) {
		unsigned char v[40], blob[60];
		char enc[90], out[90];
		size_t n = 4 + rnd(&x) % 36, pre = rnd(&x) % 9, post = rnd(&x) % 4, len;
		struct inject_forms f;
		struct scrub *sc;
		bool found = false;
		uint64_t want;

		for (size_t i = 0; i < n; i++)
			v[i] = (unsigned char)rnd(&x);
		for (size_t i = 0; i < pre; i++)
			blob[i] = (unsigned char)rnd(&x);
		memcpy(blob + pre, v, n);
		for (size_t i = 0; i < post; i++)
			blob[pre + n + i] = (unsigned char)rnd(&x);
		EVP_EncodeBlock((unsigned char *)enc, blob, (int)(pre + n + post)); /* OpenSSL's, not ours */
		len = strlen(enc);
		forms_of(&f, "", (const char *)v, n);
		for (size_t i = 0; i < f.n && !found; i++)
			found = memmem(enc, len, f.pat[i], f.len[i]) != NULL;
		assert_true(found);
		sc = scrub_new((const char *const *)f.pat, f.len, f.n);
		assert_non_null(sc);
		{
			char got[90];
			size_t used, w = scrub_feed(sc, enc, len, got, sizeof(got), &used);

			while (scrub_pending(sc) > 0)
				w += scrub_flush(sc, got + w, sizeof(got) - w);
			want = scrub_reference((const char *const *)f.pat, f.len, f.n, enc, len, out);
			assert_int_equal(w, len);
			assert_memory_equal(got, out, len);
			assert_true(want >= 1);
			assert_int_equal(scrub_count(sc), want);
		}
		scrub_free(sc);
		inject_forms_release(&f);
	}
}

/* More forms than a scrubber takes: E2BIG, and what was added is still released. */
static void test_too_many(void **state)
{
	struct inject_forms f;
	char v[16];
	int k = 0;

	inject_forms_init(&f);
	for (int i = 0; i < 100 && k == 0; i++) {
		snprintf(v, sizeof(v), "s%02d+/=", i);
		k = inject_forms_add(&f, "", v, strlen(v));
	}
	assert_int_equal(k, -1);
	assert_int_equal(errno, E2BIG);
	assert_int_equal(f.n, SCRUB_MAX_SECRETS);
	no_duplicates(&f);
	inject_forms_release(&f);
	assert_int_equal(f.n, 0);
}

/* The longest secret: its forms fit the scrubber (in JSON, \u0001 each, the longest). */
static void test_longest_value(void **state)
{
	static char v[INJECT_SECRET_MAX];
	struct inject_forms f;
	size_t longest = 0;
	struct scrub *sc;

	memset(v, 1, sizeof(v));
	forms_of(&f, "", v, sizeof(v));
	for (size_t i = 0; i < f.n; i++)
		if (f.len[i] > longest)
			longest = f.len[i];
	assert_int_equal(longest, 6 * INJECT_SECRET_MAX);
	assert_int_equal(longest, SCRUB_MAX_LEN);
	sc = scrub_new((const char *const *)f.pat, f.len, f.n);
	assert_non_null(sc);
	scrub_free(sc);
	inject_forms_release(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reserved_value),
		cmocka_unit_test(test_python_quote),
		cmocka_unit_test(test_unreserved_value),
		cmocka_unit_test(test_binary_value),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_basic),
		cmocka_unit_test(test_short_value),
		cmocka_unit_test(test_base64_any_alignment),
		cmocka_unit_test(test_too_many),
		cmocka_unit_test(test_longest_value),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
