/*
 * test_dns_answer.c: an upstream's answer read into the records kept
 * (lib/dns_answer.c): a CNAME chain given out of order and compressed comes
 * back first and uncompressed, records of other owners and other types are
 * dropped, an MX's name is decompressed, the SOA's negative TTL is read, a
 * SERVFAIL is a failure and an answer to another question malformed, and
 * dns_name_write refuses what does not fit.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "dns_answer.h"

static struct dns_answer a;

/* www.example.com A: the A of cdn first, then the CNAME to it, an A of another owner */
static const uint8_t chain[] = {
	0x12, 0x34, 0x81, 0x80, 0, 1, 0, 3, 0, 0, 0, 0,
	3, 'w', 'w', 'w', 7, 'e', 'x', 'a', 'm', 'p', 'l', 'e', 3, 'c', 'o', 'm', 0,
	0, 1, 0, 1,
	/* 33: cdn.example.com A 192.0.2.1 TTL 60 (the name written out) */
	3, 'c', 'd', 'n', 0xc0, 16, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 192, 0, 2, 1,
	/* www.example.com CNAME cdn.example.com TTL 300 */
	0xc0, 12, 0, 5, 0, 1, 0, 0, 1, 44, 0, 2, 0xc0, 33,
	/* evil.example.com A 10.0.0.1: not of the chain */
	4, 'e', 'v', 'i', 'l', 0xc0, 16, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 10, 0, 0, 1,
};

static const uint8_t cdn_a[] = { 3, 'c', 'd', 'n', 7, 'e', 'x', 'a', 'm', 'p', 'l', 'e', 3, 'c',
				 'o', 'm', 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 4, 192, 0, 2, 1 };
static const uint8_t www_cname[] = { 3, 'w', 'w', 'w', 7, 'e', 'x', 'a', 'm', 'p', 'l', 'e', 3,
				     'c', 'o', 'm', 0, 0, 5, 0, 1, 0, 0, 0, 0, 0, 17,
				     3, 'c', 'd', 'n', 7, 'e', 'x', 'a', 'm', 'p', 'l', 'e', 3,
				     'c', 'o', 'm', 0 };

static void test_chain(void **state)
{
	const char *why = NULL;

	(void)state;
	assert_int_equal(dns_answer_read(chain, sizeof(chain), "www.example.com", 15, DNS_T_A, &a,
					 &why),
			 DNS_ANSWER_OK);
	assert_int_equal(a.rcode, 0);
	assert_int_equal(a.n, 2);
	assert_int_equal(a.min_ttl, 60);
	assert_int_equal(a.len, sizeof(www_cname) + sizeof(cdn_a));
	assert_memory_equal(a.rrs, www_cname, sizeof(www_cname));
	assert_memory_equal(a.rrs + sizeof(www_cname), cdn_a, sizeof(cdn_a));
	/* the same answer read for CNAME keeps only the CNAME */
	assert_int_equal(dns_answer_read(chain, sizeof(chain), "www.example.com", 15, DNS_T_CNAME,
					 &a, &why),
			 DNS_ANSWER_MALFORMED); /* its question was for A: another question */
}

/* mx.test MX 10 mail.mx.test (compressed against the question) */
static const uint8_t mx[] = {
	0, 7, 0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0,
	2, 'm', 'x', 4, 't', 'e', 's', 't', 0, 0, 15, 0, 1,
	0xc0, 12, 0, 15, 0, 1, 0, 0, 0, 30, 0, 9, 0, 10, 4, 'm', 'a', 'i', 'l', 0xc0, 12,
};

static void test_mx_decompressed(void **state)
{
	const char *why = NULL;
	static const uint8_t want_rdata[] = { 0, 16, 0, 10, 4, 'm', 'a', 'i', 'l', 2, 'm', 'x',
					      4, 't', 'e', 's', 't', 0 };

	(void)state;
	assert_int_equal(dns_answer_read(mx, sizeof(mx), "mx.test", 7, 15, &a, &why), DNS_ANSWER_OK);
	assert_int_equal(a.n, 1);
	/* owner (9) + type, class, ttl (8), then rdlength and the data */
	assert_int_equal(a.len, 9 + 8 + sizeof(want_rdata));
	assert_memory_equal(a.rrs + 17, want_rdata, sizeof(want_rdata));
}

/* nx.test A: NXDOMAIN, SOA TTL 3600 MINIMUM 30 */
static const uint8_t nx[] = {
	0, 8, 0x81, 0x83, 0, 1, 0, 0, 0, 1, 0, 0,
	2, 'n', 'x', 4, 't', 'e', 's', 't', 0, 0, 1, 0, 1,
	0xc0, 12, 0, 6, 0, 1, 0, 0, 0x0e, 0x10, 0, 22, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3,
	0, 0, 0, 4, 0, 0, 0, 30,
};

static void test_negative(void **state)
{
	const char *why = NULL;
	uint8_t fail[sizeof(nx)];

	(void)state;
	assert_int_equal(dns_answer_read(nx, sizeof(nx), "nx.test", 7, DNS_T_A, &a, &why),
			 DNS_ANSWER_OK);
	assert_int_equal(a.rcode, 3);
	assert_int_equal(a.n, 0);
	assert_int_equal(a.soa_ttl, 30);
	assert_int_equal(a.min_ttl, UINT32_MAX);
	memcpy(fail, nx, sizeof(nx));
	fail[3] = 0x82; /* SERVFAIL */
	assert_int_equal(dns_answer_read(fail, sizeof(fail), "nx.test", 7, DNS_T_A, &a, &why),
			 DNS_ANSWER_FAILED);
	assert_int_equal(dns_answer_read(nx, sizeof(nx), "other.test", 10, DNS_T_A, &a, &why),
			 DNS_ANSWER_MALFORMED);
	assert_string_equal(why, "an answer to another question");
	assert_int_equal(dns_answer_read(nx, sizeof(nx) - 3, "nx.test", 7, DNS_T_A, &a, &why),
			 DNS_ANSWER_OK); /* a cut SOA is no SOA: no negative TTL from it */
	assert_int_equal(a.soa_ttl, UINT32_MAX);
}

/* an A record of 5 bytes is refused */
static const uint8_t bad_a[] = {
	0, 9, 0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0,
	1, 'a', 0, 0, 1, 0, 1,
	0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 30, 0, 5, 1, 2, 3, 4, 5,
};

static void test_refused(void **state)
{
	const char *why = NULL;

	(void)state;
	assert_int_equal(dns_answer_read(bad_a, sizeof(bad_a), "a", 1, DNS_T_A, &a, &why),
			 DNS_ANSWER_MALFORMED);
	assert_string_equal(why, "an address record of the wrong length");
	assert_int_equal(dns_answer_read(bad_a, 11, "a", 1, DNS_T_A, &a, &why),
			 DNS_ANSWER_MALFORMED);
}

static void test_ttl_top_bit(void **state)
{
	uint8_t m[sizeof(chain)];
	const char *why = NULL;

	(void)state;
	memcpy(m, chain, sizeof(m));
	/* the CNAME's TTL (offset 33 + 20 + 6) set to 0xffffffff: read as zero */
	memset(m + 59, 0xff, 4);
	assert_int_equal(dns_answer_read(m, sizeof(m), "www.example.com", 15, DNS_T_A, &a, &why),
			 DNS_ANSWER_OK);
	assert_int_equal(a.n, 2);
	assert_int_equal(a.min_ttl, 0);
}

static void test_name_write(void **state)
{
	uint8_t out[16];

	(void)state;
	assert_int_equal(dns_name_write("a.bc", 4, out, sizeof(out)), 6);
	assert_memory_equal(out, "\1a\2bc\0", 6);
	assert_int_equal(dns_name_write("", 0, out, sizeof(out)), 1);
	assert_int_equal(out[0], 0);
	assert_int_equal(dns_name_write("a.bc", 4, out, 5), 0);
	assert_int_equal(dns_name_write("a..b", 4, out, sizeof(out)), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_chain),	    cmocka_unit_test(test_mx_decompressed),
		cmocka_unit_test(test_negative),    cmocka_unit_test(test_refused),
		cmocka_unit_test(test_ttl_top_bit), cmocka_unit_test(test_name_write),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
