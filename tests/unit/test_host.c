/*
 * test_host.c: host_canon, host_port_parse, host_port_split,
 * host_port_number, host_port_format and host_equal.
 *
 * Every input is placed right before a PROT_NONE page (guard.h), so an
 * over-read faults. Covers every inet_aton spelling, IPv6 canonical text,
 * IPv4-mapped addresses, zone ids, IDNA and malformed names.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "guard.h"
#include "host.h"

struct canon_case {
	const char *in;
	int ret;
	enum host_kind kind;
	const char *out; /* canonical text, or the error when ret == -1 */
};

static const struct canon_case canon_cases[] = {
	/* names */
	{ "example.com", 0, HOST_NAME, "example.com" },
	{ "Example.COM.", 0, HOST_NAME, "example.com" },
	{ "a_b-c.example", 0, HOST_NAME, "a_b-c.example" },
	{ "localhost", 0, HOST_NAME, "localhost" },
	{ "1.2.3.example", 0, HOST_NAME, "1.2.3.example" },
	{ "0xg.example", 0, HOST_NAME, "0xg.example" },
	{ "123abc", 0, HOST_NAME, "123abc" },
	{ "xn--bcher-kva.example", 0, HOST_NAME, "xn--bcher-kva.example" },
	/* IDNA */
	{ "BÜCHER.example", 0, HOST_NAME, "xn--bcher-kva.example" },
	{ "bücher.example.", 0, HOST_NAME, "xn--bcher-kva.example" },
	{ "faß.de", 0, HOST_NAME, "xn--fa-hia.de" },
	{ "bücher.example\xe3\x80\x82", 0, HOST_NAME, "xn--bcher-kva.example" },
	{ "\xef\xbc\x91\xef\xbc\x92\xef\xbc\x97.0.0.1", 0, HOST_IPV4, "127.0.0.1" },
	/* IPv4, every spelling inet_aton takes */
	{ "127.0.0.1", 0, HOST_IPV4, "127.0.0.1" },
	{ "127.0.0.1.", 0, HOST_IPV4, "127.0.0.1" },
	{ "127.1", 0, HOST_IPV4, "127.0.0.1" },
	{ "127.0.1", 0, HOST_IPV4, "127.0.0.1" },
	{ "0x7f.1", 0, HOST_IPV4, "127.0.0.1" },
	{ "0X7F.0.0.1", 0, HOST_IPV4, "127.0.0.1" },
	{ "2130706433", 0, HOST_IPV4, "127.0.0.1" },
	{ "0177.0.0.1", 0, HOST_IPV4, "127.0.0.1" },
	{ "0x7f000001", 0, HOST_IPV4, "127.0.0.1" },
	{ "017700000001", 0, HOST_IPV4, "127.0.0.1" },
	{ "0", 0, HOST_IPV4, "0.0.0.0" },
	{ "00", 0, HOST_IPV4, "0.0.0.0" },
	{ "4294967295", 0, HOST_IPV4, "255.255.255.255" },
	{ "0xffffffff", 0, HOST_IPV4, "255.255.255.255" },
	{ "1.16777215", 0, HOST_IPV4, "1.255.255.255" },
	{ "1.2.65535", 0, HOST_IPV4, "1.2.255.255" },
	{ "10.0x0.0.010", 0, HOST_IPV4, "10.0.0.8" },
	{ "192.0.2.1", 0, HOST_IPV4, "192.0.2.1" },
	{ "0000000000000000000000010.1", 0, HOST_IPV4, "8.0.0.1" },
	/* IPv4 that looks numeric but is not one */
	{ "4294967296", -1, HOST_NAME, "bad ipv4 literal" },
	{ "0x100000000", -1, HOST_NAME, "bad ipv4 literal" },
	{ "256.0.0.1", -1, HOST_NAME, "bad ipv4 literal" },
	{ "1.16777216", -1, HOST_NAME, "bad ipv4 literal" },
	{ "1.2.65536", -1, HOST_NAME, "bad ipv4 literal" },
	{ "1.2.3.256", -1, HOST_NAME, "bad ipv4 literal" },
	{ "1.2.3.4.5", -1, HOST_NAME, "bad ipv4 literal" },
	{ "08", -1, HOST_NAME, "bad ipv4 literal" },
	{ "0x", -1, HOST_NAME, "bad ipv4 literal" },
	{ "1..1", -1, HOST_NAME, "bad ipv4 literal" },
	{ "example.123", -1, HOST_NAME, "bad ipv4 literal" },
	{ "example.0x1f", -1, HOST_NAME, "bad ipv4 literal" },
	{ "99999999999999999999999", -1, HOST_NAME, "bad ipv4 literal" },
	/* IPv6 */
	{ "::1", 0, HOST_IPV6, "::1" },
	{ "[::1]", 0, HOST_IPV6, "::1" },
	{ "2001:DB8:0:0:0:0:0:1", 0, HOST_IPV6, "2001:db8::1" },
	{ "[2001:0db8::0001]", 0, HOST_IPV6, "2001:db8::1" },
	{ "2001:db8:0:0:1:0:0:1", 0, HOST_IPV6, "2001:db8::1:0:0:1" },
	{ "2001:db8:0:1:1:1:1:1", 0, HOST_IPV6, "2001:db8:0:1:1:1:1:1" },
	{ "::", 0, HOST_IPV6, "::" },
	{ "::ffff:1.2.3.4", 0, HOST_IPV4, "1.2.3.4" },
	{ "[::FFFF:7f00:1]", 0, HOST_IPV4, "127.0.0.1" },
	{ "fe80::1%eth0", -1, HOST_NAME, "zone id refused" },
	{ "[fe80::1%25eth0]", -1, HOST_NAME, "zone id refused" },
	{ "2001:db8::g", -1, HOST_NAME, "bad ipv6 literal" },
	{ "1:2:3:4:5:6:7:8:9", -1, HOST_NAME, "bad ipv6 literal" },
	{ "[1.2.3.4]", -1, HOST_NAME, "bad bracketed ipv6 literal" },
	{ "[::1", -1, HOST_NAME, "bad bracketed ipv6 literal" },
	{ "[]", -1, HOST_NAME, "bad bracketed ipv6 literal" },
	/* bad names */
	{ "", -1, HOST_NAME, "empty host" },
	{ ".", -1, HOST_NAME, "empty name" },
	{ "..", -1, HOST_NAME, "empty label" },
	{ "a..b", -1, HOST_NAME, "empty label" },
	{ ".a", -1, HOST_NAME, "empty label" },
	{ "a.b..", -1, HOST_NAME, "empty label" },
	{ "-a.example", -1, HOST_NAME, "label starts or ends with '-'" },
	{ "a-.example", -1, HOST_NAME, "label starts or ends with '-'" },
	{ "a b", -1, HOST_NAME, "bad character in name" },
	{ "a*b.example", -1, HOST_NAME, "bad character in name" },
	{ "*.example.com", -1, HOST_NAME, "bad character in name" },
	{ "a/b", -1, HOST_NAME, "bad character in name" },
	{ "\xff\xfe", -1, HOST_NAME, "bad international name" },
};

static void test_canon_table(void **state)
{
	size_t i;

	for (i = 0; i < sizeof(canon_cases) / sizeof(canon_cases[0]); i++) {
		const struct canon_case *c = &canon_cases[i];
		size_t len = strlen(c->in);
		char *in = guard_copy(c->in, len);
		struct host h;
		const char *err = NULL;
		int r = host_canon(in, len, &h, &err);

		if (r != c->ret || strcmp(r == 0 ? h.name : err, c->out) != 0)
			if (r != c->ret)
			print_message("case %zu: %s\n", i, c->in);
		assert_int_equal(r, c->ret);
		if (r == 0) {
			assert_int_equal(h.kind, c->kind);
			assert_string_equal(h.name, c->out);
		} else {
			assert_non_null(err);
			assert_string_equal(err, c->out);
			assert_string_equal(h.name, "");
		}
		guard_free(in, len);
	}
}

/* The canonical form canonicalises to itself. */
static void test_canon_idempotent(void **state)
{
	size_t i;

	for (i = 0; i < sizeof(canon_cases) / sizeof(canon_cases[0]); i++) {
		struct host a, b;
		const char *err;
		char *in;
		size_t len;

		if (canon_cases[i].ret != 0)
			continue;
		assert_int_equal(host_canon(canon_cases[i].in, strlen(canon_cases[i].in), &a, &err), 0);
		len = strlen(a.name);
		in = guard_copy(a.name, len);
		assert_int_equal(host_canon(in, len, &b, &err), 0);
		assert_int_equal(a.kind, b.kind);
		assert_string_equal(a.name, b.name);
		assert_true(host_equal(&a, &b));
		guard_free(in, len);
	}
}

static void test_canon_addr_bytes(void **state)
{
	struct host h;
	const char *err;
	static const uint8_t v6[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 };

	assert_int_equal(host_canon("0x7f.1", 6, &h, &err), 0);
	assert_int_equal(ntohl(h.addr.v4.s_addr), 0x7f000001);
	assert_int_equal(host_canon("[2001:db8::1]", 13, &h, &err), 0);
	assert_memory_equal(h.addr.v6.s6_addr, v6, 16);
	assert_int_equal(host_canon("::ffff:10.1.2.3", 15, &h, &err), 0);
	assert_int_equal(ntohl(h.addr.v4.s_addr), 0x0a010203);
}

static void test_canon_lengths(void **state)
{
	char buf[400];
	struct host h;
	const char *err;
	char *in;
	size_t len;

	/* 63-byte label fine, 64 refused */
	memset(buf, 'a', 63);
	memcpy(buf + 63, ".example", 8);
	len = 71;
	in = guard_copy(buf, len);
	assert_int_equal(host_canon(in, len, &h, &err), 0);
	guard_free(in, len);
	memset(buf, 'a', 64);
	memcpy(buf + 64, ".example", 8);
	len = 72;
	in = guard_copy(buf, len);
	assert_int_equal(host_canon(in, len, &h, &err), -1);
	assert_string_equal(err, "label too long");
	guard_free(in, len);

	/* 253 bytes total fine (plus a trailing dot), 254 refused */
	for (len = 0; len < 253; len += 2)
		memcpy(buf + len, "a.", 2);
	buf[252] = 'a';
	len = 253;
	in = guard_copy(buf, len);
	assert_int_equal(host_canon(in, len, &h, &err), 0);
	assert_int_equal(strlen(h.name), 253);
	guard_free(in, len);
	buf[253] = '.';
	in = guard_copy(buf, 254);
	assert_int_equal(host_canon(in, 254, &h, &err), 0);
	guard_free(in, 254);
	buf[253] = 'a';
	in = guard_copy(buf, 254);
	assert_int_equal(host_canon(in, 254, &h, &err), -1);
	assert_string_equal(err, "name too long");
	guard_free(in, 254);

	/* an embedded NUL is not a terminator */
	in = guard_copy("a\0b", 3);
	assert_int_equal(host_canon(in, 3, &h, &err), -1);
	guard_free(in, 3);
}

struct port_case {
	const char *in;
	int ret;
	const char *host; /* or error */
	uint16_t port;
	bool has_port;
};

static const struct port_case port_cases[] = {
	{ "example.com", 0, "example.com", 443, false },
	{ "example.com:8443", 0, "example.com", 8443, true },
	{ "Example.com.:80", 0, "example.com", 80, true },
	{ "example.com:1", 0, "example.com", 1, true },
	{ "example.com:65535", 0, "example.com", 65535, true },
	{ "127.1:80", 0, "127.0.0.1", 80, true },
	{ "[::1]:80", 0, "::1", 80, true },
	{ "[::1]", 0, "::1", 443, false },
	{ "[2001:db8::1]:8443", 0, "2001:db8::1", 8443, true },
	{ "[::ffff:1.2.3.4]:80", 0, "1.2.3.4", 80, true },
	{ "2001:db8::1", 0, "2001:db8::1", 443, false },
	/* a bare v6 takes no port: the last group is part of the address
	   (glibc's inet_ntop writes IPv4-compatible addresses dotted) */
	{ "::1:80", 0, "::0.1.0.128", 443, false },
	{ "2001:db8::1:x", -1, "bad ipv6 literal", 443, false },
	{ "example.com:0", -1, "bad port", 443, false },
	{ "example.com:65536", -1, "bad port", 443, false },
	{ "example.com:", -1, "bad port", 443, false },
	{ "example.com:+80", -1, "bad port", 443, false },
	{ "example.com:080x", -1, "bad port", 443, false },
	{ "example.com:123456", -1, "bad port", 443, false },
	{ ":80", -1, "empty host", 443, false },
	{ "", -1, "empty host", 443, false },
	{ "[::1]:", -1, "bad port", 443, false },
	{ "[::1]80", -1, "junk after ']'", 443, false },
	{ "[::1", -1, "unclosed '['", 443, false },
	{ "[fe80::1%eth0]:80", -1, "zone id refused", 443, false },
	{ "[1.2.3.4]:80", -1, "bad bracketed ipv6 literal", 443, false },
	{ "bücher.example:443", 0, "xn--bcher-kva.example", 443, true },
};

static void test_host_port_table(void **state)
{
	size_t i;

	for (i = 0; i < sizeof(port_cases) / sizeof(port_cases[0]); i++) {
		const struct port_case *c = &port_cases[i];
		size_t len = strlen(c->in);
		char *in = guard_copy(c->in, len);
		struct host h;
		uint16_t port = 1;
		bool has = true;
		const char *err = NULL;
		int r = host_port_parse(in, len, 443, &h, &port, &has, &err);

		if (r != c->ret || port != c->port || has != c->has_port)
			print_message("case %zu: %s\n", i, c->in);
		assert_int_equal(r, c->ret);
		assert_int_equal(port, c->port);
		assert_int_equal(has, c->has_port);
		if (r == 0)
			assert_string_equal(h.name, c->host);
		else
			assert_string_equal(err, c->host);
		guard_free(in, len);
	}
}

/* host_port_number on a guarded copy of s: the port, or -1 when refused (port untouched). */
static int num(const char *s, unsigned flags)
{
	size_t len = strlen(s);
	char *g = guard_copy(s, len);
	uint16_t port = 7;
	int r = host_port_number(g, len, flags, &port);

	guard_free(g, len);
	if (r == -1) {
		assert_int_equal(port, 7);
		return -1;
	}
	assert_int_equal(r, 0);
	return port;
}

static void test_port_number(void **state)
{
	static const unsigned all[] = { 0, HOST_PORT_NO_ZERO, HOST_PORT_ANY_ZEROS };

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		unsigned f = all[i];

		assert_int_equal(num("1", f), 1);
		assert_int_equal(num("80", f), 80);
		assert_int_equal(num("65535", f), 65535);
		assert_int_equal(num("0", f), -1);
		assert_int_equal(num("65536", f), -1);
		assert_int_equal(num("99999", f), -1);
		assert_int_equal(num("18446744073709551696", f), -1); /* 2^64 + 80 */
		assert_int_equal(num("", f), -1);
		assert_int_equal(num("+80", f), -1);
		assert_int_equal(num("-80", f), -1);
		assert_int_equal(num(" 80", f), -1);
		assert_int_equal(num("80 ", f), -1);
		assert_int_equal(num("0x50", f), -1);
		assert_int_equal(num("8O", f), -1);
		assert_int_equal(num("00", f), -1);
	}
	/* leading zeros: up to five digits by default, none with NO_ZERO, any with ANY_ZEROS */
	assert_int_equal(num("08080", 0), 8080);
	assert_int_equal(num("00080", 0), 80);
	assert_int_equal(num("000080", 0), -1);
	assert_int_equal(num("080", HOST_PORT_NO_ZERO), -1);
	assert_int_equal(num("000000000000000000000080", HOST_PORT_ANY_ZEROS), 80);
	assert_int_equal(num("000000000000000000065536", HOST_PORT_ANY_ZEROS), -1);
}

struct split_case {
	const char *in;
	unsigned flags;
	int ret;
	const char *host; /* or the error when ret == -1 */
	bool bracketed;
	int port; /* -1: none written */
};

static const struct split_case split_cases[] = {
	{ "example.com", 0, 0, "example.com", false, -1 },
	{ "example.com:443", 0, 0, "example.com", false, 443 },
	{ "Ex@mple!:1", 0, 0, "Ex@mple!", false, 1 }, /* the host is not judged here */
	{ ":80", 0, 0, "", false, 80 },
	{ "[::1]", 0, 0, "::1", true, -1 },
	{ "[::1]:65535", 0, 0, "::1", true, 65535 },
	{ "[]:80", 0, 0, "", true, 80 },
	{ "[2001:db8::1]:0443", 0, 0, "2001:db8::1", true, 443 },
	{ "[2001:db8::1]:0443", HOST_PORT_NO_ZERO, -1, "bad port", false, -1 },
	{ "2001:db8::1", 0, 0, "2001:db8::1", false, -1 }, /* bare v6: no port */
	{ "::1:80", 0, 0, "::1:80", false, -1 },
	{ "", 0, -1, "empty host", false, -1 },
	{ "[::1", 0, -1, "unclosed '['", false, -1 },
	{ "[::1]80", 0, -1, "junk after ']'", false, -1 },
	{ "[::1]]:80", 0, -1, "junk after ']'", false, -1 },
	{ "[::1]:", 0, -1, "bad port", false, -1 },
	{ "[::1]:0", 0, -1, "bad port", false, -1 },
	{ "[::1]:65536", 0, -1, "bad port", false, -1 },
	{ "a.example:", 0, -1, "bad port", false, -1 },
	{ "a.example:0", 0, -1, "bad port", false, -1 },
	{ "a.example:65536", 0, -1, "bad port", false, -1 },
	{ "a.example:+80", 0, -1, "bad port", false, -1 },
	{ "a.example:80 ", 0, -1, "bad port", false, -1 },
	{ "a.example:000080", 0, -1, "bad port", false, -1 },
	{ "a.example:000080", HOST_PORT_ANY_ZEROS, 0, "a.example", false, 80 },
	{ "a.example:80:", 0, 0, "a.example:80:", false, -1 }, /* two colons: a "bare v6" */
};

static void test_host_port_split(void **state)
{
	for (size_t i = 0; i < sizeof(split_cases) / sizeof(split_cases[0]); i++) {
		const struct split_case *c = &split_cases[i];
		size_t len = strlen(c->in);
		char *in = guard_copy(c->in, len);
		struct host_port hp;
		const char *err = NULL;
		int r = host_port_split(in, len, c->flags, &hp, &err);

		print_message("case %zu: %s\n", i, c->in);
		assert_int_equal(r, c->ret);
		if (r == 0) {
			assert_true(hp.host >= in && hp.host + hp.host_len <= in + len);
			assert_int_equal(hp.host_len, strlen(c->host));
			assert_memory_equal(hp.host, c->host, hp.host_len);
			assert_int_equal(hp.bracketed, c->bracketed);
			assert_int_equal(hp.has_port, c->port != -1);
			assert_int_equal(hp.port, c->port == -1 ? 0 : c->port);
		} else {
			assert_string_equal(err, c->host);
			assert_false(hp.has_port);
		}
		guard_free(in, len);
	}
}

struct format_case {
	const char *host;
	unsigned port;
	const char *out;
};

static const struct format_case format_cases[] = {
	{ "127.0.0.1", 443, "127.0.0.1:443" },
	{ "0.0.0.0", 0, "0.0.0.0:0" },
	{ "a.example", 8080, "a.example:8080" },
	{ "xn--bcher-kva.example", 65535, "xn--bcher-kva.example:65535" },
	{ "::1", 443, "[::1]:443" },
	{ "2001:db8::1", 1, "[2001:db8::1]:1" },
	{ "::ffff:127.0.0.1", 80, "[::ffff:127.0.0.1]:80" }, /* inet_ntop's mapped text */
	{ "a.example", HOST_PORT_NONE, "a.example" },
	{ "10.0.0.1", HOST_PORT_NONE, "10.0.0.1" },
	{ "2001:db8::1", HOST_PORT_NONE, "[2001:db8::1]" },
	/* the bare text is the contract: one already in brackets gets a second pair */
	{ "[::1]", 443, "[[::1]]:443" },
	{ "-", 443, "-:443" }, /* a log row's "no host" */
	{ "", 80, ":80" },
	{ "", HOST_PORT_NONE, "" },
};

/* out[0..size) right before a PROT_NONE page: a write past size faults. */
static char *guard_out(size_t size)
{
	char fill[512];

	assert_true(size <= sizeof(fill));
	memset(fill, 'x', size);
	return guard_copy(fill, size);
}

static void test_host_port_format(void **state)
{
	for (size_t i = 0; i < sizeof(format_cases) / sizeof(format_cases[0]); i++) {
		const struct format_case *c = &format_cases[i];
		size_t n = strlen(c->out);

		print_message("case %zu: %s\n", i, c->out);
		/* exactly room for the text and its NUL, then every size short of it */
		for (size_t size = n + 1;; size--) {
			char *out = guard_out(size);
			int r = host_port_format(out, size, c->host, c->port);

			if (size == n + 1) {
				assert_int_equal(r, (int)n);
				assert_string_equal(out, c->out);
			} else {
				assert_int_equal(r, -1);
				/* cut short as snprintf cuts, NUL-terminated; size 0 writes nothing */
				if (size > 0) {
					assert_memory_equal(out, c->out, size - 1);
					assert_int_equal(out[size - 1], '\0');
				}
			}
			guard_free(out, size);
			if (size == 0)
				break;
		}
	}
}

/* A port and a canonical host, written and read back: the same host and port. */
static void test_host_port_format_round_trip(void **state)
{
	static const char *const hosts[] = { "a.example", "127.0.0.1", "::1", "2001:db8::1:0:0:1",
					     "[fe80::1]", "BÜCHER.example" };
	static const unsigned ports[] = { 1, 80, 443, 65535 };
	char text[HOST_PORT_TEXT_MAX + 1], longest[HOST_NAME_MAX_LEN + 1];
	struct host h, back;
	const char *err = NULL;
	int n;

	for (size_t i = 0; i < sizeof(hosts) / sizeof(hosts[0]); i++) {
		assert_int_equal(host_canon(hosts[i], strlen(hosts[i]), &h, &err), 0);
		for (size_t j = 0; j < sizeof(ports) / sizeof(ports[0]); j++) {
			uint16_t port = 0;
			bool has_port = false;

			n = host_port_format(text, sizeof(text), h.name, ports[j]);

			print_message("%s\n", text);
			assert_true(n > 0 && (size_t)n == strlen(text));
			assert_int_equal(host_port_parse(text, (size_t)n, 9, &back, &port, &has_port,
							 &err),
					 0);
			assert_true(host_equal(&h, &back));
			assert_true(has_port);
			assert_int_equal(port, ports[j]);
		}
		n = host_port_format(text, sizeof(text), h.name, HOST_PORT_NONE);
		assert_int_equal(n, (int)strlen(text));
		assert_int_equal(host_canon(text, strlen(text), &back, &err), 0);
		assert_true(host_equal(&h, &back));
	}
	/* the longest canonical name at the longest port fits HOST_PORT_TEXT_MAX */
	memset(longest, 'a', HOST_NAME_MAX_LEN);
	for (size_t i = 63; i < HOST_NAME_MAX_LEN; i += 64)
		longest[i] = '.';
	longest[HOST_NAME_MAX_LEN] = '\0';
	assert_int_equal(host_canon(longest, HOST_NAME_MAX_LEN, &h, &err), 0);
	assert_int_equal(host_port_format(text, sizeof(text), h.name, 65535),
			 HOST_NAME_MAX_LEN + 6);
}

static void test_host_equal(void **state)
{
	struct host a, b;
	const char *err;

	assert_int_equal(host_canon("Example.COM.", 12, &a, &err), 0);
	assert_int_equal(host_canon("example.com", 11, &b, &err), 0);
	assert_true(host_equal(&a, &b));
	assert_int_equal(host_canon("www.example.com", 15, &b, &err), 0);
	assert_false(host_equal(&a, &b));
	assert_int_equal(host_canon("2130706433", 10, &a, &err), 0);
	assert_int_equal(host_canon("[::ffff:127.0.0.1]", 18, &b, &err), 0);
	assert_true(host_equal(&a, &b));
	assert_int_equal(host_canon("::1", 3, &a, &err), 0);
	assert_int_equal(host_canon("0:0:0:0:0:0:0:1", 15, &b, &err), 0);
	assert_true(host_equal(&a, &b));
	assert_int_equal(host_canon("0.0.0.1", 7, &b, &err), 0);
	assert_false(host_equal(&a, &b));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_canon_table),
		cmocka_unit_test(test_canon_idempotent),
		cmocka_unit_test(test_canon_addr_bytes),
		cmocka_unit_test(test_canon_lengths),
		cmocka_unit_test(test_host_port_table),
		cmocka_unit_test(test_port_number),
		cmocka_unit_test(test_host_port_split),
		cmocka_unit_test(test_host_port_format),
		cmocka_unit_test(test_host_port_format_round_trip),
		cmocka_unit_test(test_host_equal),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
