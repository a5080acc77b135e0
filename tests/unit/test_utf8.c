/*
 * test_utf8.c: lib/utf8.c: decoding every code point and the invalid
 * forms; which code points are hidden (each class the issue names, and
 * what must stay visible); terminal widths (ASCII, Latin, CJK, Hangul,
 * fullwidth and halfwidth forms, emoji, combining marks); the display of
 * each class as a visible escape, cut by columns with its marker, never
 * splitting an escape or a wide character, within any output size; and
 * the JSON text unhider. Inputs sit before a PROT_NONE page (guard.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guard.h"
#include "utf8.h"

/* cp in UTF-8 into out; returns its length (written here, apart from the decoder). */
static size_t enc(uint32_t cp, char *out)
{
	unsigned char *o = (unsigned char *)out;

	if (cp < 0x80) {
		o[0] = (unsigned char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (unsigned char)(0xc0 | cp >> 6);
		o[1] = (unsigned char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (unsigned char)(0xe0 | cp >> 12);
		o[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
		o[2] = (unsigned char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (unsigned char)(0xf0 | cp >> 18);
	o[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3f));
	o[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
	o[3] = (unsigned char)(0x80 | (cp & 0x3f));
	return 4;
}

static void test_decode_every_code_point(void **state)
{
	(void)state;
	for (uint32_t cp = 0; cp < 0x110000; cp++) {
		char s[4];
		size_t n = enc(cp, s), got;
		uint32_t back = 0xffffffff;

		/* the guard page only where it matters: every few code points */
		if (cp % 97 == 0) {
			char *g = guard_copy(s, n);

			got = utf8_decode(g, n, &back);
			guard_free(g, n);
		} else {
			got = utf8_decode(s, n, &back);
		}
		if (cp >= 0xd800 && cp <= 0xdfff) {
			assert_int_equal(got, 0); /* a surrogate is not UTF-8 */
			continue;
		}
		assert_int_equal(got, n);
		assert_int_equal(back, cp);
		/* cut short: not a sequence */
		if (n > 1 && cp % 97 == 0) {
			char *g = guard_copy(s, n - 1);

			assert_int_equal(utf8_decode(g, n - 1, &back), 0);
			guard_free(g, n - 1);
		} else if (n > 1) {
			assert_int_equal(utf8_decode(s, n - 1, &back), 0);
		}
	}
}

static void test_decode_invalid(void **state)
{
	static const char *const bad[] = {
		"\xc0\x80", "\xc1\xbf", "\xe0\x80\x80", "\xe0\x9f\xbf", "\xf0\x80\x80\x80",
		"\xf0\x8f\xbf\xbf", "\xf4\x90\x80\x80", "\xf5\x80\x80\x80", "\xf8\x88\x80\x80",
		"\xfe", "\xff", "\x80", "\xbf", "\xc3\xc3", "\xe2\x82" "A",
	};
	uint32_t cp;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t n = strlen(bad[i]);
		char *g = guard_copy(bad[i], n);

		assert_int_equal(utf8_decode(g, n, &cp), 0);
		guard_free(g, n);
	}
}

/* Each class the issue names, and neighbours that must stay visible. */
static void test_hidden_classes(void **state)
{
	static const uint32_t bidi[] = { 0x61c,	 0x200e, 0x200f, 0x202a, 0x202b, 0x202c,
					 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069 };
	static const uint32_t invisible[] = { 0x200b, 0x200c, 0x200d, 0x2028, 0x2029, 0xfeff,
					      0x00ad, 0x2060, 0xe0001, 0xe0041, 0xe007f };
	static const uint32_t visible[] = { 0x20,   0x7e,    0xa0,    0xe9,    0x202f, 0x2030,
					    0x2065, 0x206f + 1, 0x4e00, 0x1f600, 0xe000, 0xfffd,
					    0x301,  0x627,   0xac00,  0x10ffff };

	(void)state;
	for (uint32_t cp = 0; cp < 0x20; cp++)
		assert_true(utf8_hidden(cp));
	for (uint32_t cp = 0x7f; cp <= 0x9f; cp++)
		assert_true(utf8_hidden(cp));
	for (size_t i = 0; i < sizeof(bidi) / sizeof(bidi[0]); i++)
		assert_true(utf8_hidden(bidi[i]));
	for (size_t i = 0; i < sizeof(invisible) / sizeof(invisible[0]); i++)
		assert_true(utf8_hidden(invisible[i]));
	for (size_t i = 0; i < sizeof(visible) / sizeof(visible[0]); i++)
		if (utf8_hidden(visible[i]))
			fail_msg("U+%04X is hidden", visible[i]);
	for (uint32_t cp = 0x20; cp < 0x7f; cp++)
		assert_false(utf8_hidden(cp));
}

static void test_widths(void **state)
{
	static const struct {
		uint32_t cp;
		int w;
	} want[] = {
		{ 'a', 1 }, { 0xe9, 1 }, { 0x3b1, 1 }, { 0x416, 1 }, { 0x5d0, 1 }, { 0x627, 1 },
		{ 0x301, 0 }, { 0x20d7, 0 }, { 0xfe0f, 0 }, { 0x4e00, 2 }, { 0x6f22, 2 },
		{ 0x9fff, 2 }, { 0x3042, 2 }, { 0x30a2, 2 }, { 0xac00, 2 }, { 0xd7a3, 2 },
		{ 0xff21, 2 }, { 0xff61, 1 }, { 0x3000, 2 }, { 0x1f600, 2 }, { 0x1f680, 2 },
		{ 0x2705, 2 }, { 0x2600, 1 }, { 0x20000, 2 }, { 0x1100, 2 }, { 0x2e80, 2 },
		{ 0x303f, 1 }, { 0xe000, 1 }, { 0x10ffff, 1 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (utf8_width(want[i].cp) != want[i].w)
			fail_msg("U+%04X: width %d, want %d", want[i].cp, utf8_width(want[i].cp),
				 want[i].w);
}

/* utf8_display of s (guarded) at width: the output and its columns. */
static size_t show(const char *s, size_t len, size_t width, bool dots, char *out, size_t size,
		   size_t *cols)
{
	char *g = guard_copy(s, len);
	size_t n = utf8_display(g, len, width, dots, out, size, cols);

	guard_free(g, len);
	assert_int_equal(strlen(out), n);
	return n;
}

static void test_display_classes(void **state)
{
	static const struct {
		const char *in, *out;
		size_t cols;
	} cases[] = {
		{ "plain", "plain", 5 },
		{ "a\x1b[31mb", "a\\u001b[31mb", 12 },
		{ "\x7f", "\\u007f", 6 },
		{ "x\xc2\x9b" "31m\xc2\x9d" "52;c;QUJD\xc2\x9c\xe2\x80\xae",
		  "x\\u009b31m\\u009d52;c;QUJD\\u009c\\u202e", 37 },
		{ "\xd8\x9c\xe2\x80\x8e\xe2\x81\xa6", "\\u061c\\u200e\\u2066", 18 },
		{ "\xe2\x80\x8b\xe2\x80\xa8\xef\xbb\xbf", "\\u200b\\u2028\\ufeff", 18 },
		{ "\xf3\xa0\x81\x81", "\\U000e0041", 10 },
		{ "\xff\xc0\x80", "\\xff\\xc0\\x80", 12 },
		{ "\xe6\xbc\xa2\xe5\xad\x97\xf0\x9f\x98\x80\xc3\xa9",
		  "\xe6\xbc\xa2\xe5\xad\x97\xf0\x9f\x98\x80\xc3\xa9", 7 },
		{ "e\xcc\x81", "e\xcc\x81", 1 },
		{ "a\\u009b", "a\\u009b", 7 }, /* a backslash is shown as it is */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char out[256];
		size_t cols;

		show(cases[i].in, strlen(cases[i].in), 200, true, out, sizeof(out), &cols);
		assert_string_equal(out, cases[i].out);
		assert_int_equal(cols, cases[i].cols);
	}
}

static void test_display_cut(void **state)
{
	const char *cjk = "\xe6\xbc\xa2\xe5\xad\x97\xe6\xbc\xa2\xe5\xad\x97"; /* 8 columns */
	char out[64];
	size_t cols;

	(void)state;
	show(cjk, strlen(cjk), 8, true, out, sizeof(out), &cols);
	assert_string_equal(out, cjk);
	assert_int_equal(cols, 8);
	/* 7 columns: 4 for text, a wide character never split: 2 and the dots */
	show(cjk, strlen(cjk), 7, true, out, sizeof(out), &cols);
	assert_string_equal(out, "\xe6\xbc\xa2\xe5\xad\x97...");
	assert_int_equal(cols, 7);
	show(cjk, strlen(cjk), 6, true, out, sizeof(out), &cols);
	assert_string_equal(out, "\xe6\xbc\xa2...");
	assert_int_equal(cols, 5);
	/* an escape is never split either */
	show("ab\xc2\x9b", 4, 7, true, out, sizeof(out), &cols);
	assert_string_equal(out, "ab...");
	assert_int_equal(cols, 5);
	/* too narrow for the dots: only dots */
	show("abcdef", 6, 2, true, out, sizeof(out), &cols);
	assert_string_equal(out, "..");
	show("abcdef", 6, 0, true, out, sizeof(out), &cols);
	assert_string_equal(out, "");
	/* no marker: cut at the width */
	show(cjk, strlen(cjk), 5, false, out, sizeof(out), &cols);
	assert_string_equal(out, "\xe6\xbc\xa2\xe5\xad\x97");
	assert_int_equal(cols, 4);
}

/* Any output size: NUL-terminated inside it, a whole prefix, never half an escape or sequence. */
static void test_display_bounds(void **state)
{
	const char *in = "a\xc2\x9b\xe6\xbc\xa2\xff\xf3\xa0\x81\x81z";
	char full[128];
	size_t n = strlen(in), fn;

	(void)state;
	fn = show(in, n, 100, true, full, sizeof(full), NULL);
	for (size_t size = 1; size <= fn + 1; size++) {
		char *out = malloc(size);
		size_t o;

		assert_non_null(out);
		o = show(in, n, 100, true, out, size, NULL);
		assert_true(o < size);
		assert_memory_equal(out, full, o);
		/* a cut lands between two whole pieces of the full output */
		assert_true(o == 0 || o == fn || full[o] == '\\' || full[o] == 'z' ||
			    (unsigned char)full[o] >= 0xc0);
		free(out);
	}
	assert_int_equal(utf8_display("abc", 3, 10, true, NULL, 0, NULL), 0);
}

static void test_json_unhide(void **state)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "{\"ua\":\"x\xc2\x9b" "31m\"}", "{\"ua\":\"x\\u009b31m\"}" },
		{ "{\"a\":\"\xe2\x80\xae\xf3\xa0\x81\x81\"}", "{\"a\":\"\\u202e\\udb40\\udc41\"}" },
		{ "{\"a\":\"\x7f\"}", "{\"a\":\"\\u007f\"}" },
		{ "{\"a\":\"\xe6\xbc\xa2\xc3\xa9\"}", "{\"a\":\"\xe6\xbc\xa2\xc3\xa9\"}" },
		{ "{\n\t\"a\": 1}", "{\n\t\"a\": 1}" }, /* whitespace between tokens stays */
		{ "\"\xff\"", "\"\\u00ff\"" },
		{ "\"\x1b[31m\"", "\"\\u001b[31m\"" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char out[128], *g;
		size_t n = strlen(cases[i].in), o;

		g = guard_copy(cases[i].in, n);
		o = utf8_json_unhide(g, n, out, sizeof(out));
		guard_free(g, n);
		assert_string_equal(out, cases[i].out);
		assert_int_equal(o, strlen(cases[i].out));
	}
	/* small outputs: cut between characters, NUL-terminated */
	for (size_t size = 1; size < 24; size++) {
		char out[32];
		size_t o = utf8_json_unhide(cases[1].in, strlen(cases[1].in), out, size);

		assert_true(o < size);
		assert_memory_equal(out, cases[1].out, o);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decode_every_code_point),
		cmocka_unit_test(test_decode_invalid),
		cmocka_unit_test(test_hidden_classes),
		cmocka_unit_test(test_widths),
		cmocka_unit_test(test_display_classes),
		cmocka_unit_test(test_display_cut),
		cmocka_unit_test(test_display_bounds),
		cmocka_unit_test(test_json_unhide),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
