/*
 * test_tls_hello.c: tls_hello_read, tls_hello_read_again and
 * tls_hello_server, the readers of a passthrough tunnel's hellos.
 *
 * ClientHellos, ServerHellos and HelloRetryRequests are built here field
 * by field, cut into records of every size and fed a byte at a time as
 * they would arrive: every prefix must ask for more and the whole must
 * decide; malformed fields, foreign records, the size caps, the record
 * boundary and the server_name rules are refused. Every input is placed
 * right before a PROT_NONE page (guard.h), so an over-read faults.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "guard.h"
#include "tls_hello.h"

static struct tls_hello h;
static uint8_t msg[TLS_HELLO_MAX + 64];
static uint8_t wire[TLS_HELLO_WIRE_MAX + 8192];

/* Read buf[0..len) placed before a guard page. */
static int rd(const uint8_t *buf, size_t len)
{
	char *g = guard_copy(buf, len);
	int r = tls_hello_read(&h, g, len);

	guard_free(g, len);
	return r;
}

static int rd_server(const uint8_t *buf, size_t len)
{
	char *g = guard_copy(buf, len);
	int r = tls_hello_server(&h, g, len);

	guard_free(g, len);
	return r;
}

static int rd_again(const uint8_t *buf, size_t len)
{
	char *g = guard_copy(buf, len);
	int r = tls_hello_read_again(&h, g, len);

	guard_free(g, len);
	return r;
}

static size_t put16(uint8_t *p, size_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
	return 2;
}

/* What a ClientHello is built from; zero fields take the usual values. */
struct shape {
	const char *name;     /* NULL: no server_name extension */
	bool no_exts;         /* no extensions block at all */
	size_t pad;           /* a padding extension (21) of this many bytes */
	size_t sid;           /* session id length (32 unless set; SIZE_MAX for 0) */
	int name_type;        /* host_name (0) unless set */
	bool two_names;       /* a second entry in the server name list */
	bool two_sni;         /* the server_name extension twice */
	bool trailing;        /* a byte after the extensions */
	bool ext_overrun;     /* the last extension's length runs past the block */
};

/* The handshake message for s into msg. Returns its length. */
static size_t build(const struct shape *s)
{
	size_t n = 4, e, sid = s->sid == SIZE_MAX ? 0 : s->sid ? s->sid : 32;
	static const uint8_t suites[] = { 0x13, 0x01, 0x13, 0x02, 0xc0, 0x2f };

	msg[0] = 1;
	n += put16(msg + n, 0x0303);
	memset(msg + n, 0xab, 32);
	n += 32;
	msg[n++] = (uint8_t)sid;
	memset(msg + n, 0xcd, sid);
	n += sid;
	n += put16(msg + n, sizeof(suites));
	memcpy(msg + n, suites, sizeof(suites));
	n += sizeof(suites);
	msg[n++] = 1;
	msg[n++] = 0;
	if (!s->no_exts) {
		e = n;
		n += 2;
		/* supported_versions first: the name is not the first extension */
		n += put16(msg + n, 43);
		n += put16(msg + n, 3);
		msg[n++] = 2;
		n += put16(msg + n, 0x0304);
		for (int k = 0; s->name != NULL && k < (s->two_sni ? 2 : 1); k++) {
			size_t nl = strlen(s->name), list = 3 + nl + (s->two_names ? 3 + nl : 0);

			n += put16(msg + n, 0);
			n += put16(msg + n, 2 + list);
			n += put16(msg + n, list);
			for (int j = 0; j < (s->two_names ? 2 : 1); j++) {
				msg[n++] = (uint8_t)s->name_type;
				n += put16(msg + n, nl);
				memcpy(msg + n, s->name, nl);
				n += nl;
			}
		}
		if (s->pad > 0) {
			n += put16(msg + n, 21);
			n += put16(msg + n, s->pad);
			memset(msg + n, 0, s->pad);
			n += s->pad;
		}
		if (s->ext_overrun) {
			n += put16(msg + n, 99);
			n += put16(msg + n, 10);
			msg[n++] = 0;
		}
		put16(msg + e, n - e - 2);
		if (s->trailing)
			msg[n++] = 0;
	}
	msg[1] = (uint8_t)((n - 4) >> 16);
	msg[2] = (uint8_t)((n - 4) >> 8);
	msg[3] = (uint8_t)(n - 4);
	return n;
}

/* msg[0..len) into records of frag bytes each (type 22, version 3.1) in wire. */
static size_t records(size_t len, size_t frag)
{
	size_t n = 0;

	for (size_t at = 0; at < len; at += frag) {
		size_t k = len - at < frag ? len - at : frag;

		wire[n++] = 22;
		wire[n++] = 3;
		wire[n++] = 1;
		n += put16(wire + n, k);
		memcpy(wire + n, msg + at, k);
		n += k;
	}
	return n;
}

static void expect_not(const uint8_t *buf, size_t len, const char *why)
{
	assert_int_equal(rd(buf, len), TLS_HELLO_NOT);
	assert_non_null(h.why);
	if (strstr(h.why, why) == NULL)
		fail_msg("why \"%s\", not \"%s\"", h.why, why);
}

static void expect_not_again(const uint8_t *buf, size_t len, const char *why)
{
	assert_int_equal(rd_again(buf, len), TLS_HELLO_NOT);
	if (strstr(h.why, why) == NULL)
		fail_msg("why \"%s\", not \"%s\"", h.why, why);
}

static void test_whole_and_every_prefix(void **state)
{
	struct shape s = { .name = "pass.test" };
	size_t n = records(build(&s), 16384);

	assert_int_equal(rd(wire, n), TLS_HELLO_FOUND);
	assert_string_equal(h.name, "pass.test");
	/* as it arrives, a byte at a time: more, until the last byte */
	for (size_t k = 0; k < n; k++)
		assert_int_equal(rd(wire, k), TLS_HELLO_MORE);
}

static void test_records_of_every_size(void **state)
{
	struct shape s = { .name = "Pass.Test." };
	size_t len = build(&s);
	size_t sizes[] = { 1, 2, 3, 4, 5, 7, 31, 64, 100, len - 1, len };

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t n = records(len, sizes[i]);

		assert_int_equal(rd(wire, n), TLS_HELLO_FOUND);
		assert_string_equal(h.name, "Pass.Test."); /* as sent: tls.c canonicalises */
		assert_int_equal(rd(wire, n - 1), TLS_HELLO_MORE);
		/* cut inside a record header too */
		assert_int_equal(rd(wire, 3), TLS_HELLO_MORE);
	}
}

static void test_bytes_after_the_hello(void **state)
{
	struct shape s = { .name = "pass.test" };
	size_t len = build(&s), n, end;

	/* a record of early data after it: not read; wire is the ClientHello's own */
	n = end = records(len, 100);
	wire[n++] = 23;
	wire[n++] = 3;
	wire[n++] = 3;
	n += put16(wire + n, 1);
	wire[n++] = 0;
	assert_int_equal(rd(wire, n), TLS_HELLO_FOUND);
	assert_string_equal(h.name, "pass.test");
	assert_int_equal(h.wire, end);
	assert_int_equal(rd(wire, end), TLS_HELLO_FOUND);
	assert_int_equal(h.wire, end);
	/* more in its last record than the ClientHello (a second message, say): refused */
	msg[len] = 2;
	msg[len + 1] = 0;
	n = records(len + 2, len + 2);
	expect_not(wire, n, "more in the ClientHello's last record");
	/* decided by the record's length, before those bytes arrive */
	expect_not(wire, n - 2, "more in the ClientHello's last record");
}

static void test_no_server_name(void **state)
{
	struct shape s = { 0 };

	assert_int_equal(rd(wire, records(build(&s), 16384)), TLS_HELLO_NONE);
	assert_string_equal(h.name, "");
	s.no_exts = true;
	assert_int_equal(rd(wire, records(build(&s), 16384)), TLS_HELLO_NONE);
	s.sid = SIZE_MAX;
	assert_int_equal(rd(wire, records(build(&s), 7)), TLS_HELLO_NONE);
}

static void test_not_tls(void **state)
{
	const char *get = "GET / HTTP/1.1\r\nHost: pass.test\r\n\r\n";

	expect_not((const uint8_t *)get, strlen(get), "not a TLS handshake record");
	expect_not((const uint8_t *)"G", 1, "not a TLS handshake record"); /* decided at once */
	expect_not((const uint8_t *)"\x80\x2e\x01", 3, "not a TLS handshake record"); /* SSLv2 */
	expect_not((const uint8_t *)"\x16\x02", 2, "record version");
	expect_not((const uint8_t *)"\x16\x03\x01\x00\x00", 5, "length");
	expect_not((const uint8_t *)"\x16\x03\x01\x40\x01", 5, "length");
	/* a ServerHello, a Finished: not a ClientHello */
	expect_not((const uint8_t *)"\x16\x03\x03\x00\x04\x02", 6, "not a ClientHello");
	expect_not((const uint8_t *)"\x16\x03\x03\x00\x04\x14\x00\x00\x00", 9, "not a ClientHello");
	assert_int_equal(rd(wire, 0), TLS_HELLO_MORE);
}

static void test_foreign_record_inside(void **state)
{
	struct shape s = { .name = "pass.test" };
	size_t len = build(&s), n = records(len, 50);

	wire[55] = 23; /* the second record: application data */
	expect_not(wire, n, "not a handshake record");
	expect_not(wire, 56, "not a handshake record"); /* decided on its first byte */
	n = records(len, 50);
	wire[55 + 3] = 0; /* the second record empty */
	wire[55 + 4] = 0;
	expect_not(wire, n, "length");
}

static void test_malformed(void **state)
{
	struct shape s;

	s = (struct shape){ .name = "pass.test", .sid = 33 };
	expect_not(wire, records(build(&s), 16384), "malformed ClientHello");
	s = (struct shape){ .name = "pass.test", .trailing = true };
	expect_not(wire, records(build(&s), 16384), "malformed ClientHello");
	s = (struct shape){ .name = "pass.test", .ext_overrun = true };
	expect_not(wire, records(build(&s), 16384), "malformed extension");
	/* a message cut short inside: its length says less than its fields need */
	s = (struct shape){ .name = "pass.test" };
	build(&s);
	msg[3] = 20;
	msg[2] = 0;
	msg[1] = 0;
	expect_not(wire, records(24, 16384), "malformed ClientHello");
}

static void test_server_name_rules(void **state)
{
	struct shape s;
	char big[300];

	s = (struct shape){ .name = "pass.test", .two_names = true };
	expect_not(wire, records(build(&s), 16384), "more than one name");
	s = (struct shape){ .name = "pass.test", .two_sni = true };
	expect_not(wire, records(build(&s), 16384), "two server_name");
	s = (struct shape){ .name = "pass.test", .name_type = 1 };
	expect_not(wire, records(build(&s), 16384), "malformed server_name");
	s = (struct shape){ .name = "pass test" };
	expect_not(wire, records(build(&s), 16384), "printable");
	s = (struct shape){ .name = "" };
	expect_not(wire, records(build(&s), 16384), "printable");
	memset(big, 'a', 256);
	big[256] = '\0';
	s = (struct shape){ .name = big };
	expect_not(wire, records(build(&s), 16384), "printable");
	big[255] = '\0';
	assert_int_equal(rd(wire, records(build(&s), 16384)), TLS_HELLO_FOUND);
	assert_int_equal(strlen(h.name), 255);
}

static void test_sizes(void **state)
{
	/* a post-quantum key share's worth (X25519MLKEM768: 1216 bytes), in two records */
	struct shape s = { .name = "pass.test", .pad = 1250 };
	size_t len = build(&s), base;

	assert_int_equal(rd(wire, records(len, len / 2 + 1)), TLS_HELLO_FOUND);
	/* exactly TLS_HELLO_MAX: read; one byte more: refused once its header is in */
	s.pad = 0;
	base = build(&s) + 4; /* the padding extension's own header */
	s.pad = TLS_HELLO_MAX - base;
	len = build(&s);
	assert_int_equal(len, TLS_HELLO_MAX);
	assert_int_equal(rd(wire, records(len, 16384)), TLS_HELLO_FOUND);
	s.pad++;
	len = build(&s);
	expect_not(wire, records(len, 16384), "over 16384 bytes");
	expect_not(wire, 9, "over 16384 bytes");
}

static void test_too_many_records(void **state)
{
	/* 4000 bytes in one-byte records: 24000 bytes on the wire, past TLS_HELLO_WIRE_MAX */
	struct shape s = { .name = "pass.test", .pad = 4000 };
	size_t n = records(build(&s), 1);

	assert_true(n > TLS_HELLO_WIRE_MAX);
	expect_not(wire, n, "too many records");
	/* never "more" at the cap */
	expect_not(wire, TLS_HELLO_WIRE_MAX, "too many records");
	assert_int_equal(rd(wire, TLS_HELLO_WIRE_MAX - 6), TLS_HELLO_MORE);
	/* in 8-byte records it fits: 4000 + 5 * 512 */
	n = records(build(&s), 8);
	assert_true(n < TLS_HELLO_WIRE_MAX);
	assert_int_equal(rd(wire, n), TLS_HELLO_FOUND);
}

/* A ServerHello (or, with hrr, a HelloRetryRequest) of pad extra bytes into wire. */
static size_t server(bool hrr, size_t pad, size_t frag)
{
	static const uint8_t hrr_random[32] = {
		0xcf, 0x21, 0xad, 0x74, 0xe5, 0x9a, 0x61, 0x11, 0xbe, 0x1d, 0x8c,
		0x02, 0x1e, 0x65, 0xb8, 0x91, 0xc2, 0xa2, 0x11, 0x16, 0x7a, 0xbb,
		0x8c, 0x5e, 0x07, 0x9e, 0x09, 0xe2, 0xc8, 0xa8, 0x33, 0x9c,
	};
	size_t n = 4;

	msg[0] = 2;
	n += put16(msg + n, 0x0303);
	if (hrr)
		memcpy(msg + n, hrr_random, 32);
	else
		memset(msg + n, 0x5a, 32);
	n += 32;
	memset(msg + n, 0, pad);
	n += pad;
	msg[1] = 0;
	msg[2] = (uint8_t)((n - 4) >> 8);
	msg[3] = (uint8_t)(n - 4);
	return records(n, frag);
}

static void test_server_first_message(void **state)
{
	size_t n = server(true, 50, 16384);

	assert_int_equal(rd_server(wire, n), TLS_HELLO_RETRY);
	for (size_t k = 0; k < n; k++)
		assert_int_equal(rd_server(wire, k), TLS_HELLO_MORE);
	n = server(true, 50, 3); /* in 3-byte records */
	assert_int_equal(rd_server(wire, n), TLS_HELLO_RETRY);
	n = server(false, 50, 16384);
	assert_int_equal(rd_server(wire, n), TLS_HELLO_NONE);
	/* an alert, a record that is not TLS, a ServerHello too short for its random */
	assert_int_equal(rd_server((const uint8_t *)"\x15\x03\x03\x00\x02\x02\x28", 7),
			 TLS_HELLO_NONE);
	assert_int_equal(rd_server((const uint8_t *)"HTTP/1.1", 8), TLS_HELLO_NONE);
	assert_int_equal(rd_server((const uint8_t *)"\x16\x03\x03\x00\x06\x02\x00\x00\x02\x03\x03", 11),
			 TLS_HELLO_NONE);
}

static void test_second_client_hello(void **state)
{
	struct shape s = { .name = "pass.test" };
	size_t len = build(&s), n;
	uint8_t ccs_then[TLS_HELLO_MAX + 64];

	n = records(len, 16384);
	assert_int_equal(rd_again(wire, n), TLS_HELLO_FOUND);
	assert_int_equal(h.wire, n);
	/* after the compatibility mode's change_cipher_spec */
	memcpy(ccs_then, "\x14\x03\x03\x00\x01\x01", 6);
	memcpy(ccs_then + 6, wire, n);
	assert_int_equal(rd_again(ccs_then, n + 6), TLS_HELLO_FOUND);
	assert_string_equal(h.name, "pass.test");
	assert_int_equal(h.wire, n + 6);
	for (size_t k = 0; k < n + 6; k++)
		assert_int_equal(rd_again(ccs_then, k), TLS_HELLO_MORE);
	/* not a ClientHello without it for the first one; two of them, or another, refused */
	assert_int_equal(rd(ccs_then, n + 6), TLS_HELLO_NOT);
	memcpy(ccs_then + 6, "\x14\x03\x03\x00\x01\x01", 6);
	assert_int_equal(rd_again(ccs_then, 12), TLS_HELLO_NOT);
	memcpy(ccs_then, "\x14\x03\x03\x00\x01\x02", 6);
	expect_not_again(ccs_then, 6, "change_cipher_spec");
	assert_int_equal(rd_again(ccs_then, 5), TLS_HELLO_MORE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_whole_and_every_prefix),
		cmocka_unit_test(test_records_of_every_size),
		cmocka_unit_test(test_bytes_after_the_hello),
		cmocka_unit_test(test_no_server_name),
		cmocka_unit_test(test_not_tls),
		cmocka_unit_test(test_foreign_record_inside),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_server_name_rules),
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_too_many_records),
		cmocka_unit_test(test_server_first_message),
		cmocka_unit_test(test_second_client_hello),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
