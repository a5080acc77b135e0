/*
 * test_dns_fake.c: lib/dns_fake.c: which answers get a fake address, and
 * the replacement's bytes.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "dns_fake.h"

/* a response for tls.test of type qtype, rcode rc, with n A records */
static size_t answer(uint8_t *m, uint16_t qtype, uint8_t rc, unsigned n, bool tc)
{
	static const uint8_t head[] = { 0x12, 0x34, 0x81, 0x80, 0, 1, 0, 0, 0, 0, 0, 0,
					3, 't', 'l', 's', 4, 't', 'e', 's', 't', 0 };
	size_t len = sizeof(head);

	memcpy(m, head, len);
	m[3] |= rc;
	if (tc)
		m[2] |= 0x02;
	m[7] = (uint8_t)n;
	m[len++] = 0, m[len++] = (uint8_t)qtype, m[len++] = 0, m[len++] = 1;
	for (unsigned i = 0; i < n; i++) {
		static const uint8_t rr[] = { 0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 1, 0x2c, 0, 4,
					      203, 0, 113, 13 };

		memcpy(m + len, rr, sizeof(rr));
		len += sizeof(rr);
	}
	return len;
}

static void test_match(void **state)
{
	uint8_t m[512];
	struct dns_fake_q q;
	size_t len;

	(void)state;
	len = answer(m, 1, 0, 2, false);
	assert_int_equal(dns_fake_match(m, len, &q), 1);
	assert_string_equal(q.name, "tls.test");
	assert_int_equal(q.qtype, 1);
	assert_int_equal(q.qend, 26);
	len = answer(m, 28, 0, 0, false);
	assert_int_equal(dns_fake_match(m, len, &q), 1); /* AAAA: no record needed */
	len = answer(m, 1, 0, 0, false);
	assert_int_equal(dns_fake_match(m, len, &q), 0); /* NODATA: nothing resolves */
	len = answer(m, 1, 3, 0, false);
	assert_int_equal(dns_fake_match(m, len, &q), 0); /* NXDOMAIN */
	len = answer(m, 1, 0, 1, true);
	assert_int_equal(dns_fake_match(m, len, &q), 0); /* truncated */
	len = answer(m, 16, 0, 1, false);
	assert_int_equal(dns_fake_match(m, len, &q), 0); /* TXT passes as it came */
	len = answer(m, 1, 0, 1, false);
	assert_int_equal(dns_fake_match(m, len - 1, &q), 0); /* a record cut short */
	m[2] &= 0x7f;
	assert_int_equal(dns_fake_match(m, len, &q), 0); /* a query, not a response */
}

static void test_write(void **state)
{
	static const uint8_t addr[4] = { 240, 0, 0, 9 };
	uint8_t m[512], out[512];
	struct dns_fake_q q;
	size_t len = answer(m, 1, 0, 2, false);
	long n;

	(void)state;
	assert_int_equal(dns_fake_match(m, len, &q), 1);
	assert_int_equal(dns_fake_write(m, &q, addr, 10, out, 41), -1);
	n = dns_fake_write(m, &q, addr, 10, out, sizeof(out));
	assert_int_equal(n, 42);
	assert_memory_equal(out, "\x12\x34\x81\x80\0\1\0\1\0\0\0\0", 12);
	assert_memory_equal(out + 12, m + 12, 14);
	assert_memory_equal(out + 26, "\xc0\x0c\0\1\0\1\0\0\0\x0a\0\4\xf0\0\0\x09", 16);
	len = answer(m, 28, 0, 0, false);
	assert_int_equal(dns_fake_match(m, len, &q), 1);
	n = dns_fake_write(m, &q, addr, 10, out, sizeof(out));
	assert_int_equal(n, 26);
	assert_memory_equal(out, "\x12\x34\x81\x80\0\1\0\0\0\0\0\0", 12);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_match),
		cmocka_unit_test(test_write),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
