/*
 * test_digits.c: the decimal and hex readers (digits.h): empty input, a
 * stray byte anywhere, leading zeros, the limit at its edge in every base,
 * a limit below one digit's value, the hex digit classes, and digits_text
 * (a whole C string, bounds both ways, C's base-0 prefixes, no sign or blank).
 *
 * Every input is placed right before a PROT_NONE page (guard.h), so a
 * read past len faults.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "digits.h"
#include "guard.h"

#define NONE UINT64_C(0xdeadbeef) /* *out when the reader refused */

/* digits_parse(s, strlen(s), base, max) on a guarded copy: the value, or NONE on -1. */
static uint64_t rd(const char *s, unsigned base, uint64_t max)
{
	size_t len = strlen(s);
	char *g = guard_copy(s, len);
	uint64_t v = NONE;
	int rc = digits_parse(g, len, base, max, &v);

	guard_free(g, len);
	assert_true(rc == 0 || rc == -1);
	assert_true(rc == 0 || v == NONE); /* out is written only on success */
	return v;
}

static void test_dec(void **state)
{
	assert_int_equal(rd("0", 10, UINT64_MAX), 0);
	assert_int_equal(rd("7", 10, UINT64_MAX), 7);
	assert_int_equal(rd("1234567890", 10, UINT64_MAX), 1234567890);
	assert_int_equal(rd("007", 10, UINT64_MAX), 7); /* leading zeros are the caller's call */
	assert_int_equal(rd("0000000000000000000000000000042", 10, 42), 42);
	assert_int_equal(rd("", 10, UINT64_MAX), NONE);
	assert_int_equal(rd("-1", 10, UINT64_MAX), NONE);
	assert_int_equal(rd("+1", 10, UINT64_MAX), NONE);
	assert_int_equal(rd(" 1", 10, UINT64_MAX), NONE);
	assert_int_equal(rd("1 ", 10, UINT64_MAX), NONE);
	assert_int_equal(rd("12a", 10, UINT64_MAX), NONE);
	assert_int_equal(rd("0x10", 10, UINT64_MAX), NONE);
	assert_int_equal(rd("1\n", 10, UINT64_MAX), NONE);
	/* the limit, at its edge */
	assert_int_equal(rd("65535", 10, 65535), 65535);
	assert_int_equal(rd("65536", 10, 65535), NONE);
	assert_int_equal(rd("655350", 10, 65535), NONE);
	assert_int_equal(rd("18446744073709551615", 10, UINT64_MAX), UINT64_MAX);
	assert_int_equal(rd("18446744073709551616", 10, UINT64_MAX), NONE);
	assert_int_equal(rd("99999999999999999999999999", 10, UINT64_MAX), NONE);
	assert_int_equal(rd("4294967295", 10, UINT32_MAX), UINT32_MAX);
	assert_int_equal(rd("4294967296", 10, UINT32_MAX), NONE);
	/* a limit below one digit's value: no wrap-around */
	assert_int_equal(rd("5", 10, 5), 5);
	assert_int_equal(rd("7", 10, 5), NONE);
	assert_int_equal(rd("0", 10, 0), 0);
	assert_int_equal(rd("1", 10, 0), NONE);
}

static void test_dec_len(void **state)
{
	char *g = guard_copy("4096xyz", 7);
	uint64_t v = NONE;

	/* only s[0..len) is read: what follows is the caller's business */
	assert_int_equal(dec_parse(g, 4, UINT64_MAX, &v), 0);
	assert_int_equal(v, 4096);
	assert_int_equal(dec_parse(g, 5, UINT64_MAX, &v), -1);
	assert_int_equal(dec_parse(g, 0, UINT64_MAX, &v), -1);
	guard_free(g, 7);
}

static void test_hex(void **state)
{
	uint64_t v = NONE;

	assert_int_equal(rd("ff", 16, 0xff), 0xff);
	assert_int_equal(rd("FF", 16, 0xff), 0xff);
	assert_int_equal(rd("0aF9", 16, 0xffff), 0xaf9);
	assert_int_equal(rd("100", 16, 0xff), NONE);
	assert_int_equal(rd("ffffffffffffffff", 16, UINT64_MAX), UINT64_MAX);
	assert_int_equal(rd("10000000000000000", 16, UINT64_MAX), NONE);
	assert_int_equal(rd("g", 16, UINT64_MAX), NONE);
	assert_int_equal(rd("0x1", 16, UINT64_MAX), NONE); /* no prefix */
	assert_int_equal(rd("", 16, UINT64_MAX), NONE);
	assert_int_equal(hex_parse("7F", 2, 0xff, &v), 0);
	assert_int_equal(v, 0x7f);
	/* octal, for inet_aton's parts */
	assert_int_equal(rd("777", 8, UINT64_MAX), 0777);
	assert_int_equal(rd("8", 8, UINT64_MAX), NONE);
	assert_int_equal(rd("a", 10, UINT64_MAX), NONE);
}

static void test_classes(void **state)
{
	for (int ch = 0; ch < 256; ch++) {
		int want = ch >= '0' && ch <= '9'   ? ch - '0'
			   : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
			   : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
						    : -1;
		char c = (char)ch;

		assert_int_equal(hex_value((unsigned char)ch), want);
		assert_int_equal(is_digit((unsigned char)ch), ch >= '0' && ch <= '9');
		assert_int_equal(hex_is_lower(&c, 1), want != -1 && !(ch >= 'A' && ch <= 'F'));
	}
	assert_true(hex_is_lower("", 0));
	assert_true(hex_is_lower("0123456789abcdef", 16));
	assert_false(hex_is_lower("0123456789abcdeF", 16));
	assert_true(hex_is_lower("abX", 2)); /* only s[0..n) */
}

/* digits_text on a guarded copy of s (its NUL included): the value, or NONE on -1. */
static uint64_t txt(const char *s, unsigned base, uint64_t lo, uint64_t hi)
{
	size_t len = strlen(s) + 1;
	char *g = guard_copy(s, len);
	uint64_t v = NONE;
	int rc = digits_text(g, base, lo, hi, &v);

	guard_free(g, len);
	assert_true(rc == 0 || rc == -1);
	assert_true(rc == 0 || v == NONE);
	return v;
}

static void test_text(void **state)
{
	(void)state;
	assert_int_equal(txt("0", 10, 0, 10), 0);
	assert_int_equal(txt("10", 10, 0, 10), 10);
	assert_int_equal(txt("010", 10, 0, 10), 10); /* base 10: a leading zero is a zero */
	assert_int_equal(txt("11", 10, 0, 10), NONE);
	assert_int_equal(txt("4", 10, 5, 10), NONE); /* below lo */
	assert_int_equal(txt("5", 10, 5, 10), 5);
	assert_int_equal(txt("18446744073709551615", 10, 1, UINT64_MAX), UINT64_MAX);
	assert_int_equal(txt("18446744073709551616", 10, 1, UINT64_MAX), NONE);
	/* what strtoul took and digits_text does not */
	assert_int_equal(txt("", 10, 0, 10), NONE);
	assert_int_equal(txt(" 5", 10, 0, 10), NONE);
	assert_int_equal(txt("+5", 10, 0, 10), NONE);
	assert_int_equal(txt("-0", 10, 0, 10), NONE);
	assert_int_equal(txt(" -1", 10, 0, UINT64_MAX), NONE);
	assert_int_equal(txt("5 ", 10, 0, 10), NONE);
	assert_int_equal(txt("5\n", 10, 0, 10), NONE);
	/* base 0: C's prefixes */
	assert_int_equal(txt("83", 0, 1, UINT32_MAX), 83);
	assert_int_equal(txt("0x53", 0, 1, UINT32_MAX), 0x53);
	assert_int_equal(txt("0X5a", 0, 1, UINT32_MAX), 0x5a);
	assert_int_equal(txt("0123", 0, 1, UINT32_MAX), 0123);
	assert_int_equal(txt("0", 0, 0, 1), 0);
	assert_int_equal(txt("00", 0, 0, 1), 0);
	assert_int_equal(txt("0x", 0, 0, UINT32_MAX), NONE);
	assert_int_equal(txt("08", 0, 0, UINT32_MAX), NONE);
	assert_int_equal(txt("0x1g", 0, 0, UINT32_MAX), NONE);
	assert_int_equal(txt("+0x53", 0, 0, UINT32_MAX), NONE);
	assert_int_equal(txt("0xffffffff", 0, 1, UINT32_MAX), UINT32_MAX);
	assert_int_equal(txt("0x100000000", 0, 1, UINT32_MAX), NONE);
	assert_int_equal(txt("", 0, 0, 1), NONE);
	/* another base, no prefix taken */
	assert_int_equal(txt("ff", 16, 0, 255), 255);
	assert_int_equal(txt("0xff", 16, 0, 255), NONE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dec),
		cmocka_unit_test(test_dec_len),
		cmocka_unit_test(test_hex),
		cmocka_unit_test(test_classes),
		cmocka_unit_test(test_text),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
