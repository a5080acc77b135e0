/*
 * test_dns_msg.c: reading DNS messages (lib/dns_msg.c): a query with EDNS,
 * an answer with a compressed CNAME chain, and what is refused: a pointer
 * that does not point back, a label byte no host name has, a name over
 * 255 bytes, a response as a query, two questions, bytes after the end,
 * a record running past the message. Inputs end at the buffer's end.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "dns_msg.h"

/* "api.Example.com" A IN, EDNS0 with 1232 bytes and DO */
static const uint8_t query[] = {
	0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 1,
	3, 'a', 'p', 'i', 7, 'E', 'x', 'a', 'm', 'p', 'l', 'e', 3, 'c', 'o', 'm', 0,
	0, 1, 0, 1,
	0, 0, 41, 0x04, 0xd0, 0, 0, 0x80, 0, 0, 0,
};

/* www.example.com: CNAME cdn.example.com (compressed), A 192.0.2.1 */
static const uint8_t answer[] = {
	0x12, 0x34, 0x81, 0x80, 0, 1, 0, 2, 0, 0, 0, 0,
	3, 'w', 'w', 'w', 7, 'e', 'x', 'a', 'm', 'p', 'l', 'e', 3, 'c', 'o', 'm', 0,
	0, 1, 0, 1,
	0xc0, 12, 0, 5, 0, 1, 0, 0, 1, 44, 0, 6, 3, 'c', 'd', 'n', 0xc0, 16,
	0xc0, 45, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 192, 0, 2, 1,
};

static void test_query(void **state)
{
	struct dns_query q;
	const char *why = NULL;

	(void)state;
	assert_int_equal(dns_query_read(query, sizeof(query), &q, &why), 0);
	assert_string_equal(q.name, "api.example.com");
	assert_int_equal(q.qtype, DNS_T_A);
	assert_true(q.edns);
	assert_int_equal(q.udp_size, 1232);
	assert_true(q.do_bit);
	assert_int_equal(q.h.id, 0x1234);
}

static void test_answer_chain(void **state)
{
	struct dns_header h;
	struct dns_rr rr;
	const char *why = NULL;
	char t[DNS_NAME_MAX + 1];
	size_t off, tl;

	(void)state;
	assert_int_equal(dns_header_read(answer, sizeof(answer), &h), 0);
	assert_int_equal(dns_questions_skip(answer, sizeof(answer), &h, &off, &why), 0);
	assert_int_equal(dns_rr_read(answer, sizeof(answer), &off, &rr, &why), 0);
	assert_string_equal(rr.name, "www.example.com");
	assert_int_equal(rr.ttl, 300);
	assert_int_equal(dns_rr_cname(answer, sizeof(answer), &rr, t, &tl, &why), 0);
	assert_string_equal(t, "cdn.example.com");
	assert_int_equal(dns_rr_read(answer, sizeof(answer), &off, &rr, &why), 0);
	assert_string_equal(rr.name, "cdn.example.com");
	assert_int_equal(rr.type, DNS_T_A);
	assert_int_equal(rr.rdlen, 4);
	assert_memory_equal(answer + rr.rdata_off, ((uint8_t[]){ 192, 0, 2, 1 }), 4);
	assert_int_equal(off, sizeof(answer));
	/* one byte short: the record runs past the message */
	off = rr.rdata_off - 10;
	assert_int_equal(dns_rr_read(answer, sizeof(answer) - 1, &off, &rr, &why), -1);
}

static void test_names_refused(void **state)
{
	const char *why = NULL;
	char out[DNS_NAME_MAX + 1];
	size_t off, n;
	/* a pointer to itself, a pointer forward */
	const uint8_t self[] = { 0xc0, 0 }, fwd[] = { 0xc0, 2, 1, 'a', 0 };
	/* a label holding '.', one holding a blank */
	const uint8_t dot[] = { 3, 'a', '.', 'b', 0 }, blank[] = { 3, 'a', ' ', 'b', 0 };
	uint8_t big[300];

	(void)state;
	off = 0;
	assert_int_equal(dns_name_read(self, sizeof(self), &off, out, &n, &why), -1);
	off = 0;
	assert_int_equal(dns_name_read(fwd, sizeof(fwd), &off, out, &n, &why), -1);
	off = 0;
	assert_int_equal(dns_name_read(dot, sizeof(dot), &off, out, &n, &why), -1);
	off = 0;
	assert_int_equal(dns_name_read(blank, sizeof(blank), &off, out, &n, &why), -1);
	/* 4 labels of 63: 257 bytes on the wire, over 255 */
	for (size_t i = 0; i < 4; i++) {
		big[i * 64] = 63;
		memset(big + i * 64 + 1, 'x', 63);
	}
	big[256] = 0;
	off = 0;
	assert_int_equal(dns_name_read(big, 257, &off, out, &n, &why), -1);
}

static void test_queries_refused(void **state)
{
	struct dns_query q;
	const char *why = NULL;
	uint8_t m[sizeof(query) + 1];

	(void)state;
	memcpy(m, query, sizeof(query));
	m[2] |= 0x80; /* QR: a response */
	assert_int_equal(dns_query_read(m, sizeof(query), &q, &why), -1);
	memcpy(m, query, sizeof(query));
	m[5] = 2; /* two questions */
	assert_int_equal(dns_query_read(m, sizeof(query), &q, &why), -1);
	memcpy(m, query, sizeof(query));
	m[sizeof(query)] = 0; /* a byte after the OPT record */
	assert_int_equal(dns_query_read(m, sizeof(m), &q, &why), -1);
	assert_string_equal(why, "bytes after the last record");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_query),
		cmocka_unit_test(test_answer_chain),
		cmocka_unit_test(test_names_refused),
		cmocka_unit_test(test_queries_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
