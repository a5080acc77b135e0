/*
 * test_hex.c: the one hex encoder and decoder (hex.h): known vectors, every
 * byte value both ways, nothing written past 2n + 1 on encoding, upper-case
 * and stray bytes refused on decoding with out left as it was, and n == 0.
 *
 * Decoder inputs are placed right before a PROT_NONE page (guard.h), so a
 * read past 2n faults.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "guard.h"
#include "hex.h"

/* hex_decode of a guarded copy of s (2n bytes) into out. */
static int dec(const char *s, size_t n, void *out)
{
	char *g = guard_copy(s, 2 * n);
	int rc = hex_decode(g, n, out);

	guard_free(g, 2 * n);
	return rc;
}

static void test_encode(void **state)
{
	const uint8_t in[] = { 0x00, 0x01, 0x7f, 0x80, 0xab, 0xff };
	char out[2 * sizeof(in) + 2];

	(void)state;
	memset(out, 'X', sizeof(out));
	assert_ptr_equal(hex_encode(in, sizeof(in), out), out);
	assert_string_equal(out, "00017f80abff");
	assert_int_equal(out[sizeof(out) - 1], 'X'); /* nothing past the NUL */
	memset(out, 'X', sizeof(out));
	hex_encode(in, 0, out);
	assert_int_equal(out[0], '\0');
	assert_int_equal(out[1], 'X');
}

static void test_every_byte(void **state)
{
	uint8_t in[256], back[256];
	char text[513];

	(void)state;
	for (int i = 0; i < 256; i++)
		in[i] = (uint8_t)i;
	hex_encode(in, sizeof(in), text);
	assert_int_equal(strlen(text), 512);
	for (int i = 0; i < 256; i++) {
		static const char d[] = "0123456789abcdef";

		assert_int_equal(text[2 * i], d[i >> 4]);
		assert_int_equal(text[2 * i + 1], d[i & 15]);
	}
	assert_int_equal(dec(text, sizeof(back), back), 0);
	assert_memory_equal(in, back, sizeof(in));
}

static void test_decode(void **state)
{
	uint8_t out[4];

	(void)state;
	assert_int_equal(dec("00ff7a10", 4, out), 0);
	assert_int_equal(out[0], 0x00);
	assert_int_equal(out[1], 0xff);
	assert_int_equal(out[2], 0x7a);
	assert_int_equal(out[3], 0x10);
	/* n == 0: nothing read, nothing written */
	memset(out, 0x55, sizeof(out));
	assert_int_equal(hex_decode("", 0, out), 0);
	assert_int_equal(out[0], 0x55);
}

static void test_decode_refused(void **state)
{
	static const char *bad[] = { "00FF7a10", "00fF7a10", "00ff7a1g", "0xff7a10", " 0ff7a10",
				     "00ff7a1 ", "00ff-a10", "00ff\0a10" };
	uint8_t out[4];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(out, 0x55, sizeof(out));
		assert_int_equal(dec(bad[i], 4, out), -1);
		for (size_t k = 0; k < sizeof(out); k++)
			assert_int_equal(out[k], 0x55); /* out untouched on refusal */
	}
	/* only s[0..2n) is read: a stray byte after it is not its business */
	assert_int_equal(hex_decode("abZ", 1, out), 0);
	assert_int_equal(out[0], 0xab);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_encode),
		cmocka_unit_test(test_every_byte),
		cmocka_unit_test(test_decode),
		cmocka_unit_test(test_decode_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
