/*
 * test_denied.c: reading a packet a wall denied and NFLOG'd: IPv4 TCP,
 * UDP and ICMP, IPv4 options and fragments, IPv6 with extension headers
 * and fragments, every truncation of each packet, the prefix's shapes
 * (ours, not ours, hostile bytes) and the exact lines denied_format writes.
 *
 * Every packet and prefix is placed right before a PROT_NONE page
 * (guard.h), so an over-read faults.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "guard.h"
#include "denied.h"

#define PFX "sluice sandbox egress: "

static uint8_t pkt[512];

/* An IPv4 header at p: ihl words, protocol, total length, fragment field. */
static size_t ip4(uint8_t *p, unsigned ihl, uint8_t proto, size_t total, uint16_t frag)
{
	memset(p, 0, ihl * 4);
	p[0] = (uint8_t)(0x40 | ihl);
	p[2] = (uint8_t)(total >> 8);
	p[3] = (uint8_t)total;
	p[6] = (uint8_t)(frag >> 8);
	p[7] = (uint8_t)frag;
	p[8] = 64;
	p[9] = proto;
	memcpy(p + 12, (const uint8_t[]){ 192, 168, 5, 15 }, 4);
	memcpy(p + 16, (const uint8_t[]){ 203, 0, 113, 10 }, 4);
	return ihl * 4;
}

/* An IPv6 header at p: fd00::15 -> 2001:db8::10. */
static size_t ip6(uint8_t *p, uint8_t nh, size_t plen)
{
	memset(p, 0, 40);
	p[0] = 0x60;
	p[4] = (uint8_t)(plen >> 8);
	p[5] = (uint8_t)plen;
	p[6] = nh;
	p[7] = 64;
	inet_pton(AF_INET6, "fd00::15", p + 8);
	inet_pton(AF_INET6, "2001:db8::10", p + 24);
	return 40;
}

/* The two ports TCP and UDP headers both start with, zeroing the header's n bytes. */
static void ports(uint8_t *p, size_t n, uint16_t sport, uint16_t dport)
{
	memset(p, 0, n);
	p[0] = (uint8_t)(sport >> 8);
	p[1] = (uint8_t)sport;
	p[2] = (uint8_t)(dport >> 8);
	p[3] = (uint8_t)dport;
}

/* A TCP header (20 bytes, SYN) or UDP header (8) at p. */
static size_t tcp(uint8_t *p, uint16_t sport, uint16_t dport)
{
	ports(p, 20, sport, dport);
	p[12] = 0x50;
	p[13] = 0x02;
	return 20;
}

static size_t udp(uint8_t *p, uint16_t sport, uint16_t dport)
{
	ports(p, 8, sport, dport);
	p[5] = 8;
	return 8;
}

/* Parse prefix and pkt[0..len) from guarded copies. */
static int parse(const char *prefix, const uint8_t *p, size_t len, struct denied *r,
		 const char **err)
{
	size_t plen = strlen(prefix);
	char *gp = guard_copy(prefix, plen);
	char *g = guard_copy(p, len);
	int rc = denied_parse(gp, plen, (const uint8_t *)g, len, r, err);

	guard_free(g, len);
	guard_free(gp, plen);
	return rc;
}

static void assert_line(const struct denied *r, uint32_t uid, bool has_uid, bool json,
			const char *want)
{
	char out[DENIED_LINE_MAX];

	assert_int_equal(denied_format(r, uid, has_uid, json, out, sizeof(out)), 0);
	assert_string_equal(out, want);
}

static void test_ipv4_tcp(void **state)
{
	struct denied r;
	const char *err = NULL;
	size_t n = ip4(pkt, 5, IPPROTO_TCP, 40, 0x4000); /* DF */

	n += tcp(pkt + n, 40312, 443);
	assert_int_equal(parse(PFX, pkt, n, &r, &err), 0);
	assert_int_equal(r.family, AF_INET);
	assert_int_equal(r.proto, IPPROTO_TCP);
	assert_int_equal(r.sport, 40312);
	assert_int_equal(r.dport, 443);
	assert_int_equal(r.tcp_flags, 0x02);
	assert_int_equal(r.l4, DENIED_L4_FULL);
	assert_string_equal(r.profile, "sandbox");
	assert_string_equal(r.reason, "egress");
	assert_string_equal(r.prefix, PFX);
	assert_line(&r, 65534, true, false,
		    "sandbox egress uid=65534 tcp 192.168.5.15:40312 -> 203.0.113.10:443");
	assert_line(&r, 65534, true, true,
		    "{\"profile\":\"sandbox\",\"reason\":\"egress\",\"uid\":65534,\"proto\":\"tcp\","
		    "\"src\":\"192.168.5.15\",\"sport\":40312,\"dst\":\"203.0.113.10\",\"dport\":443}");
	assert_line(&r, 0, false, false, "sandbox egress tcp 192.168.5.15:40312 -> 203.0.113.10:443");

	/* options (ihl 6) are stepped over; padding past the total length is not L4 */
	n = ip4(pkt, 6, IPPROTO_TCP, 44, 0);
	n += tcp(pkt + n, 1, 2);
	assert_int_equal(parse(PFX, pkt, n, &r, &err), 0);
	assert_int_equal(r.sport, 1);
	assert_int_equal(r.dport, 2);
	n = ip4(pkt, 5, IPPROTO_TCP, 30, 0);
	n += tcp(pkt + n, 1, 2);
	assert_int_equal(parse(PFX, pkt, n, &r, &err), 0);
	assert_int_equal(r.l4, DENIED_L4_CUT);
	assert_int_equal(r.sport, 0);
	assert_line(&r, 0, false, false, "sandbox egress tcp 192.168.5.15 -> 203.0.113.10 (cut short)");
	assert_line(&r, 0, false, true,
		    "{\"profile\":\"sandbox\",\"reason\":\"egress\",\"proto\":\"tcp\","
		    "\"src\":\"192.168.5.15\",\"dst\":\"203.0.113.10\",\"l4\":\"cut\"}");
}

static void test_ipv4_udp_icmp(void **state)
{
	struct denied r;
	const char *err = NULL;
	size_t n = ip4(pkt, 5, IPPROTO_UDP, 28, 0);

	n += udp(pkt + n, 5353, 443);
	assert_int_equal(parse("sluice sandbox quic:", pkt, n, &r, &err), 0);
	assert_int_equal(r.proto, IPPROTO_UDP);
	assert_int_equal(r.sport, 5353);
	assert_int_equal(r.dport, 443);
	assert_int_equal(r.tcp_flags, 0);
	assert_string_equal(r.reason, "quic");
	assert_line(&r, 1000, true, false,
		    "sandbox quic uid=1000 udp 192.168.5.15:5353 -> 203.0.113.10:443");

	n = ip4(pkt, 5, IPPROTO_ICMP, 28, 0);
	memset(pkt + n, 0, 8);
	pkt[n] = 8; /* echo request */
	n += 8;
	assert_int_equal(parse(PFX, pkt, n, &r, &err), 0);
	assert_int_equal(r.proto, IPPROTO_ICMP);
	assert_int_equal(r.sport, 0);
	assert_int_equal(r.l4, DENIED_L4_FULL);
	assert_line(&r, 0, false, false, "sandbox egress icmp 192.168.5.15 -> 203.0.113.10");
	assert_line(&r, 0, false, true,
		    "{\"profile\":\"sandbox\",\"reason\":\"egress\",\"proto\":\"icmp\","
		    "\"src\":\"192.168.5.15\",\"dst\":\"203.0.113.10\"}");

	/* an unnamed protocol shows as its number */
	n = ip4(pkt, 5, 47, 24, 0);
	assert_int_equal(parse(PFX, pkt, n + 4, &r, &err), 0);
	assert_line(&r, 0, false, false, "sandbox egress 47 192.168.5.15 -> 203.0.113.10");

	/* a non-first fragment has no ports; a first one does */
	n = ip4(pkt, 5, IPPROTO_UDP, 28, 0x0010);
	n += udp(pkt + n, 7, 443);
	assert_int_equal(parse(PFX, pkt, n, &r, &err), 0);
	assert_int_equal(r.l4, DENIED_L4_FRAGMENT);
	assert_int_equal(r.dport, 0);
	assert_line(&r, 0, false, false, "sandbox egress udp 192.168.5.15 -> 203.0.113.10 (fragment)");
	n = ip4(pkt, 5, IPPROTO_UDP, 28, 0x2000); /* MF, offset 0 */
	n += udp(pkt + n, 7, 443);
	assert_int_equal(parse(PFX, pkt, n, &r, &err), 0);
	assert_int_equal(r.l4, DENIED_L4_FULL);
	assert_int_equal(r.dport, 443);
}

static void test_ipv6(void **state)
{
	struct denied r;
	const char *err = NULL;
	char a[INET6_ADDRSTRLEN];
	size_t n = ip6(pkt, 0, 16 + 20); /* hop-by-hop, then destination options, then tcp */

	memset(pkt + n, 0, 16);
	pkt[n] = 60;       /* hop-by-hop: next is dest-opts, 8 bytes */
	pkt[n + 8] = 6;    /* dest-opts: next is tcp, 8 bytes */
	n += 16;
	n += tcp(pkt + n, 40312, 443);
	assert_int_equal(parse(PFX, pkt, n, &r, &err), 0);
	assert_int_equal(r.family, AF_INET6);
	assert_int_equal(r.proto, IPPROTO_TCP);
	assert_int_equal(r.sport, 40312);
	assert_int_equal(r.dport, 443);
	assert_int_equal(r.tcp_flags, 0x02);
	assert_string_equal(inet_ntop(AF_INET6, &r.dst.v6, a, sizeof(a)), "2001:db8::10");
	assert_line(&r, 65534, true, false,
		    "sandbox egress uid=65534 tcp [fd00::15]:40312 -> [2001:db8::10]:443");
	assert_line(&r, 65534, true, true,
		    "{\"profile\":\"sandbox\",\"reason\":\"egress\",\"uid\":65534,\"proto\":\"tcp\","
		    "\"src\":\"fd00::15\",\"sport\":40312,\"dst\":\"2001:db8::10\",\"dport\":443}");

	/* every cut of it: the IPv6 header whole parses, the ports only when all there */
	for (size_t len = 0; len <= n; len++) {
		int rc = parse(PFX, pkt, len, &r, &err);

		if (len < 40) {
			assert_int_equal(rc, -1);
			assert_string_equal(err, len == 0 ? "empty packet" : "truncated ipv6 header");
			continue;
		}
		assert_int_equal(rc, 0);
		assert_int_equal(r.l4, len == n ? DENIED_L4_FULL : DENIED_L4_CUT);
		assert_int_equal(r.proto, len < 48 ? 0 : len < 56 ? 60 : 6);
		assert_int_equal(r.dport, len == n ? 443 : 0);
	}

	/* the payload length bounds the packet: bytes after it are not read as tcp */
	pkt[5] = 16 + 10;
	assert_int_equal(parse(PFX, pkt, n, &r, &err), 0);
	assert_int_equal(r.l4, DENIED_L4_CUT);
	pkt[5] = 16 + 20;

	/* ICMPv6 without ports */
	n = ip6(pkt, IPPROTO_ICMPV6, 8);
	memset(pkt + n, 0, 8);
	n += 8;
	assert_int_equal(parse(PFX, pkt, n, &r, &err), 0);
	assert_line(&r, 0, false, false, "sandbox egress icmpv6 fd00::15 -> 2001:db8::10");
}

static void test_ipv6_fragment(void **state)
{
	struct denied r;
	const char *err = NULL;
	size_t n = ip6(pkt, 44, 16), ext = n;

	memset(pkt + n, 0, 8);
	pkt[n] = IPPROTO_UDP;
	pkt[n + 3] = 0x01; /* offset 0, more fragments */
	n += 8;
	n += udp(pkt + n, 5353, 443);
	assert_int_equal(parse(PFX, pkt, n, &r, &err), 0);
	assert_int_equal(r.proto, IPPROTO_UDP);
	assert_int_equal(r.l4, DENIED_L4_FULL);
	assert_int_equal(r.dport, 443);

	pkt[ext + 2] = 0x05; /* offset 160 bytes: no udp header here */
	pkt[ext + 3] = 0xa8;
	assert_int_equal(parse(PFX, pkt, n, &r, &err), 0);
	assert_int_equal(r.proto, IPPROTO_UDP);
	assert_int_equal(r.l4, DENIED_L4_FRAGMENT);
	assert_int_equal(r.dport, 0);
	assert_line(&r, 0, false, true,
		    "{\"profile\":\"sandbox\",\"reason\":\"egress\",\"proto\":\"udp\","
		    "\"src\":\"fd00::15\",\"dst\":\"2001:db8::10\",\"l4\":\"fragment\"}");

	/* a chain longer than DENIED_EXT_MAX is refused */
	n = ip6(pkt, 60, 0);
	for (int i = 0; i <= DENIED_EXT_MAX; i++, n += 8) {
		memset(pkt + n, 0, 8);
		pkt[n] = 60;
	}
	assert_int_equal(parse(PFX, pkt, n, &r, &err), -1);
	assert_string_equal(err, "too many ipv6 extension headers");
	/* AH counts its length in 4-byte words, plus 2 */
	n = ip6(pkt, 51, 0);
	memset(pkt + n, 0, 12);
	pkt[n] = IPPROTO_UDP;
	pkt[n + 1] = 1;
	n += 12;
	n += udp(pkt + n, 1, 53);
	assert_int_equal(parse(PFX, pkt, n, &r, &err), 0);
	assert_int_equal(r.dport, 53);
}

/* Every cut of an IPv4 TCP and UDP packet: never a read past len. */
static void test_ipv4_truncated(void **state)
{
	struct denied r;
	const char *err;
	size_t n = ip4(pkt, 6, IPPROTO_TCP, 44, 0);

	n += tcp(pkt + n, 40312, 443);
	for (size_t len = 0; len <= n; len++) {
		int rc;

		err = NULL;
		rc = parse(PFX, pkt, len, &r, &err);
		if (len < 24) {
			assert_int_equal(rc, -1);
			assert_string_equal(err, len == 0 ? "empty packet" : "truncated ipv4 header");
			assert_string_equal(r.profile, "sandbox"); /* the prefix is read regardless */
			continue;
		}
		assert_int_equal(rc, 0);
		assert_int_equal(r.l4, len == n ? DENIED_L4_FULL : DENIED_L4_CUT);
		assert_int_equal(r.dport, len == n ? 443 : 0);
	}
	n = ip4(pkt, 5, IPPROTO_UDP, 28, 0);
	n += udp(pkt + n, 1, 443);
	for (size_t len = 20; len <= n; len++) {
		assert_int_equal(parse(PFX, pkt, len, &r, &err), 0);
		assert_int_equal(r.l4, len == n ? DENIED_L4_FULL : DENIED_L4_CUT);
	}
}

static void test_bad_packets(void **state)
{
	struct denied r;
	const char *err = NULL;
	size_t n = ip4(pkt, 5, IPPROTO_TCP, 40, 0);

	n += tcp(pkt + n, 1, 2);
	pkt[0] = 0x75;
	assert_int_equal(parse(PFX, pkt, n, &r, &err), -1);
	assert_string_equal(err, "ip version 7");
	pkt[0] = 0x04;
	assert_int_equal(parse(PFX, pkt, n, &r, &err), -1);
	assert_string_equal(err, "ip version 0");
	pkt[0] = 0x44; /* ihl 16 bytes */
	assert_int_equal(parse(PFX, pkt, n, &r, &err), -1);
	assert_string_equal(err, "bad ipv4 header length");
	pkt[0] = 0x4f; /* ihl 60 bytes > 40 here */
	pkt[3] = 60;
	assert_int_equal(parse(PFX, pkt, n, &r, &err), -1);
	assert_string_equal(err, "truncated ipv4 header");
	pkt[0] = 0x45;
	pkt[3] = 19;
	assert_int_equal(parse(PFX, pkt, n, &r, &err), -1);
	assert_string_equal(err, "bad ipv4 total length");
	pkt[3] = 0; /* 0 is unknown, not short: the copy's length bounds it */
	assert_int_equal(parse(PFX, pkt, n, &r, &err), 0);
	assert_int_equal(parse(PFX, pkt, 0, &r, &err), -1);
	assert_string_equal(err, "empty packet");
}

static void test_prefixes(void **state)
{
	static const struct {
		const char *prefix, *profile, *reason, *shown;
	} cases[] = {
		{ "sluice sandbox egress: ", "sandbox", "egress", "sluice sandbox egress: " },
		{ "sluice sandbox egress:", "sandbox", "egress", "sluice sandbox egress:" },
		{ "sluice host-2 dns_over_tcp: ", "host-2", "dns_over_tcp", NULL },
		{ "sluice sandbox egress:  ", "", "", NULL },
		{ "sluice sandbox egress: x", "", "", NULL },
		{ "sluice sandbox egress ", "", "", NULL },
		{ "sluice sandbox egress", "", "", NULL },
		{ "sluice Sandbox egress: ", "", "", NULL },
		{ "sluice  egress: ", "", "", NULL },
		{ "sluice sandbox : ", "", "", NULL },
		{ "sluice sandbox: ", "", "", NULL },
		{ "sluice ", "", "", NULL },
		{ "sluic", "", "", NULL },
		{ "", "", "", "" },
		{ "other egress: ", "", "", "other egress: " },
		{ "sluice a\"b c: ", "", "", "sluice a?b c: " },
		{ "sluice a b\\: \x01\x7f\xff", "", "", "sluice a b?: ???" },
	};
	struct denied r;
	const char *err;
	size_t n = ip4(pkt, 5, IPPROTO_TCP, 40, 0);
	char name[40], prefix[128], out[DENIED_LINE_MAX];

	n += tcp(pkt + n, 1, 443);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(parse(cases[i].prefix, pkt, n, &r, &err), 0);
		if (strcmp(r.profile, cases[i].profile) != 0 || strcmp(r.reason, cases[i].reason) != 0)
			fail_msg("case %zu: \"%s\" \"%s\"", i, r.profile, r.reason);
		if (cases[i].shown != NULL)
			assert_string_equal(r.prefix, cases[i].shown);
	}
	assert_line(&r, 0, false, false, "prefix \"sluice a b?: ???\" tcp 192.168.5.15:1 -> 203.0.113.10:443");
	assert_line(&r, 7, true, true,
		    "{\"prefix\":\"sluice a b?: ???\",\"uid\":7,\"proto\":\"tcp\",\"src\":\"192.168.5.15\","
		    "\"sport\":1,\"dst\":\"203.0.113.10\",\"dport\":443}");

	/* a NUL inside the prefix is a byte like any other: shown, not ours */
	assert_int_equal(denied_parse("sluice a\0b c: ", 14, pkt, n, &r, &err), 0);
	assert_string_equal(r.profile, "");
	assert_string_equal(r.prefix, "sluice a?b c: ");

	/* names up to 31 bytes; a long prefix is cut to fit */
	memset(name, 'p', 31);
	name[31] = '\0';
	snprintf(prefix, sizeof(prefix), "sluice %s %s: ", name, name);
	assert_int_equal(parse(prefix, pkt, n, &r, &err), 0);
	assert_string_equal(r.profile, name);
	assert_string_equal(r.reason, name);
	assert_int_equal(strlen(r.prefix), DENIED_PREFIX_MAX - 1);
	assert_memory_equal(r.prefix, prefix, DENIED_PREFIX_MAX - 1);
	assert_int_equal(denied_format(&r, UINT32_MAX, true, true, out, sizeof(out)), 0);
	snprintf(prefix, sizeof(prefix), "sluice sandbox %sp: ", name);
	assert_int_equal(parse(prefix, pkt, n, &r, &err), 0);
	assert_string_equal(r.profile, "");
	assert_string_equal(r.reason, "");
}

static void test_format_size(void **state)
{
	struct denied r;
	const char *err;
	const char *want = "sandbox egress tcp 192.168.5.15:1 -> 203.0.113.10:443";
	char out[128];
	size_t n = ip4(pkt, 5, IPPROTO_TCP, 40, 0);

	n += tcp(pkt + n, 1, 443);
	assert_int_equal(parse(PFX, pkt, n, &r, &err), 0);
	assert_int_equal(denied_format(&r, 0, false, false, out, strlen(want) + 1), 0);
	assert_string_equal(out, want);
	assert_int_equal(denied_format(&r, 0, false, false, out, strlen(want)), -1);
	assert_string_equal(out, "");
	assert_int_equal(denied_format(&r, 0, false, true, out, 10), -1);
	assert_int_equal(denied_format(&r, 0, false, true, out, 0), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ipv4_tcp),       cmocka_unit_test(test_ipv4_udp_icmp),
		cmocka_unit_test(test_ipv6),           cmocka_unit_test(test_ipv6_fragment),
		cmocka_unit_test(test_ipv4_truncated), cmocka_unit_test(test_bad_packets),
		cmocka_unit_test(test_prefixes),       cmocka_unit_test(test_format_size),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
