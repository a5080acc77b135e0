/*
 * test_ws_frame.c: ws_frame_read and ws_frame_write.
 *
 * Headers written for every length form read back the same; every prefix
 * of a header asks for more; what no server may send is refused. Inputs
 * sit right before a PROT_NONE page (guard.h), so an over-read faults.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "guard.h"
#include "ws_frame.h"

static int rd(const uint8_t *p, size_t n, struct ws_frame *f)
{
	return ws_frame_read((const uint8_t *)guard_copy(p, n), n, f);
}

static void test_round_trip(void **state)
{
	static const uint64_t lens[] = { 0, 1, 125, 126, 65535, 65536, 1ull << 40 };
	uint8_t h[WS_FRAME_HEAD_MAX];
	struct ws_frame f;

	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		size_t n = ws_frame_write(h, i % 2 == 0, WS_OP_BINARY, lens[i]);

		assert_int_equal(n, lens[i] < 126 ? 2 : lens[i] <= 0xffff ? 4 : 10);
		for (size_t k = 0; k < n; k++)
			assert_int_equal(rd(h, k, &f), 0); /* every prefix asks for more */
		assert_int_equal(rd(h, n, &f), (int)n);
		assert_true(f.len == lens[i]);
		assert_int_equal(f.fin, i % 2 == 0);
		assert_int_equal(f.opcode, WS_OP_BINARY);
	}
	{
		size_t n = ws_frame_write(h, true, WS_OP_PING, 125);

		assert_int_equal(rd(h, n, &f), 2);
		assert_int_equal(f.opcode, WS_OP_PING);
	}
}

static void test_refused(void **state)
{
	static const struct {
		uint8_t b[10];
		size_t n;
		const char *why;
	} bad[] = {
		{ { 0xc1, 0x05 }, 2, "RSV bits set, though no extension was agreed" },
		{ { 0x81, 0x85 }, 2, "a masked server frame" },
		{ { 0x83, 0x00 }, 2, "an unknown opcode" },
		{ { 0x8b, 0x00 }, 2, "an unknown opcode" },
		{ { 0x09, 0x00 }, 2, "a control frame fragmented or over 125 bytes" },
		{ { 0x89, 0x7e, 0x00, 0x7e }, 4, "a control frame fragmented or over 125 bytes" },
		{ { 0x81, 0x7e, 0x00, 0x7d }, 4, "a length not in its shortest form" },
		{ { 0x82, 0x7f, 0, 0, 0, 0, 0, 0, 0xff, 0xff }, 10, "a length not in its shortest form" },
		{ { 0x82, 0x7f, 0x80, 0, 0, 0, 0, 0, 0, 0 }, 10, "a length with its top bit set" },
	};
	struct ws_frame f;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(rd(bad[i].b, bad[i].n, &f), -1);
		assert_string_equal(f.why, bad[i].why);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
