/*
 * test_sockaddr.c: the one ADDR:PORT grammar (sockaddr.h): every form under
 * every flag, the port's limits, the unix:PATH form, what is refused, and
 * parse -> format round trips; sockaddr_same.
 *
 * Every input, with its NUL, is placed right before a PROT_NONE page
 * (guard.h), so a read past the end of the string faults.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <sys/un.h>

#include "guard.h"
#include "sockaddr.h"

/* sockaddr_parse of a guarded copy of s; the result formatted into out (or "-" on -1). */
static int parse(const char *s, unsigned flags, uint16_t port, char *out, size_t size)
{
	size_t len = strlen(s) + 1;
	char *g = guard_copy(s, len);
	struct sockaddr_storage ss;
	int rc;

	memset(&ss, 0xa5, sizeof(ss));
	rc = sockaddr_parse(g, flags, port, &ss);
	guard_free(g, len);
	if (rc == 0)
		sockaddr_format(&ss, out, size);
	else
		snprintf(out, size, "-");
	return rc;
}

static void expect(const char *s, unsigned flags, uint16_t port, const char *want)
{
	char buf[128];
	int rc = parse(s, flags, port, buf, sizeof(buf));

	if (strcmp(buf, want) != 0)
		fail_msg("sockaddr_parse(\"%s\", %#x, %u): got %s (rc %d), want %s", s, flags, port,
			 buf, rc, want);
	assert_int_equal(rc, strcmp(want, "-") == 0 ? -1 : 0);
}

static void test_v4(void **state)
{
	expect("127.0.0.1:3128", 0, 0, "127.0.0.1:3128");
	expect("0.0.0.0:1", 0, 0, "0.0.0.0:1");
	expect("255.255.255.255:65535", 0, 0, "255.255.255.255:65535");
	expect("10.0.0.1:0080", 0, 0, "10.0.0.1:80"); /* leading zeros in the port */
	expect("10.0.0.1:000000000000000000000080", 0, 0, "10.0.0.1:80");
	/* inet_pton's dotted quad only */
	expect("127.1:3128", 0, 0, "-");
	expect("127.0.0.01:3128", 0, 0, "-");
	expect("127.0.0.256:3128", 0, 0, "-");
	expect("0x7f.0.0.1:3128", 0, 0, "-");
	expect("localhost:3128", 0, 0, "-");
	expect(":3128", 0, 0, "-");
	expect(" 127.0.0.1:3128", 0, 0, "-");
	expect("", 0, 0, "-");
}

static void test_port(void **state)
{
	expect("127.0.0.1:0", 0, 0, "-");
	expect("127.0.0.1:00", 0, 0, "-");
	expect("127.0.0.1:65536", 0, 0, "-");
	expect("127.0.0.1:99999999999999999999999", 0, 0, "-");
	expect("127.0.0.1:18446744073709551696", 0, 0, "-"); /* 2^64 + 80 */
	expect("127.0.0.1:", 0, 0, "-");
	expect("127.0.0.1:+80", 0, 0, "-");
	expect("127.0.0.1:-80", 0, 0, "-");
	expect("127.0.0.1: 80", 0, 0, "-");
	expect("127.0.0.1:80 ", 0, 0, "-");
	expect("127.0.0.1:0x50", 0, 0, "-");
	expect("127.0.0.1:8o", 0, 0, "-");
	expect("127.0.0.1:80:80", 0, 0, "-");
	/* a missing port: refused unless the flags let it be left off */
	expect("127.0.0.1", 0, 0, "-");
	expect("127.0.0.1", SOCKADDR_PORT_OPTIONAL, 53, "127.0.0.1:53");
	expect("127.0.0.1:5353", SOCKADDR_PORT_OPTIONAL, 53, "127.0.0.1:5353");
	expect("127.0.0.1:0", SOCKADDR_PORT_OPTIONAL, 53, "-");
	expect("127.0.0.1:", SOCKADDR_PORT_OPTIONAL, 53, "-");
	expect("127.0.0.1", SOCKADDR_NO_PORT, 80, "127.0.0.1:80");
	expect("127.0.0.1:80", SOCKADDR_NO_PORT, 80, "-");
	expect("127.0.0.1:", SOCKADDR_NO_PORT, 80, "-");
}

static void test_v6(void **state)
{
	expect("[::1]:3128", 0, 0, "[::1]:3128");
	expect("[2001:DB8:0:0:0:0:0:1]:443", 0, 0, "[2001:db8::1]:443");
	expect("[::ffff:192.0.2.1]:80", 0, 0, "[::ffff:192.0.2.1]:80");
	expect("[::]:65535", 0, 0, "[::]:65535");
	/* the longest text an IPv6 address has (45 bytes) */
	expect("[ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255]:1", 0, 0,
	       "[ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:1");
	expect("[::1]:0", 0, 0, "-");
	expect("[::1]:65536", 0, 0, "-");
	expect("[::1]:", 0, 0, "-");
	expect("[::1]", 0, 0, "-"); /* a missing port */
	expect("[::1]80", 0, 0, "-");
	expect("[::1]]:80", 0, 0, "-");
	expect("[[::1]]:80", 0, 0, "-");
	expect("[::1:80", 0, 0, "-");
	expect("[]:80", 0, 0, "-");
	expect("[fe80::1%eth0]:3128", 0, 0, "-"); /* no zone ids */
	expect("[1.2.3.4]:80", 0, 0, "-");        /* brackets hold IPv6 only */
	expect("[::1]:80:90", 0, 0, "-");
	expect("[0000:0000:0000:0000:0000:0000:0000:00001]:80", 0, 0, "-");
	/* without brackets a v6 address cannot carry a port: its last colon reads two ways */
	expect("::1:3128", 0, 0, "-");
	expect("2001:db8::1:443", 0, 0, "-");
	expect("::1", 0, 0, "-");
	/* a bracketed or bare v6 without a port, where the port may be left off */
	expect("[::1]", SOCKADDR_PORT_OPTIONAL, 53, "[::1]:53");
	expect("[2001:db8::53]:5353", SOCKADDR_PORT_OPTIONAL, 53, "[2001:db8::53]:5353");
	expect("2001:db8::55", SOCKADDR_PORT_OPTIONAL, 53, "[2001:db8::55]:53");
	/* there, the last group is part of the address */
	expect("2001:db8::1:3128", SOCKADDR_PORT_OPTIONAL, 53, "[2001:db8::1:3128]:53");
	expect("2001:db8::zz", SOCKADDR_PORT_OPTIONAL, 53, "-");
	expect("[::1]", SOCKADDR_NO_PORT, 443, "[::1]:443");
	expect("2001:db8::10", SOCKADDR_NO_PORT, 443, "[2001:db8::10]:443");
	expect("[::1]:443", SOCKADDR_NO_PORT, 443, "-");
}

static void test_unix(void **state)
{
	char s[5 + 108 + 1]; /* "unix:" and a path of 108 bytes */

	expect("unix:/run/sluice/proxy.sock", SOCKADDR_UNIX, 0, "unix:/run/sluice/proxy.sock");
	expect("unix:/", SOCKADDR_UNIX, 0, "unix:/");
	/* not without the flag */
	expect("unix:/run/sluice/proxy.sock", 0, 0, "-");
	expect("unix:/run/sluice/proxy.sock", SOCKADDR_PORT_OPTIONAL, 53, "-");
	/* relative, empty, a newline */
	expect("unix:proxy.sock", SOCKADDR_UNIX, 0, "-");
	expect("unix:./proxy.sock", SOCKADDR_UNIX, 0, "-");
	expect("unix:", SOCKADDR_UNIX, 0, "-");
	expect("unix:/a\nb", SOCKADDR_UNIX, 0, "-");
	expect("UNIX:/a.sock", SOCKADDR_UNIX, 0, "-");
	expect("unix/a.sock", SOCKADDR_UNIX, 0, "-");
	/* 107 bytes fit sun_path with its NUL; 108 do not */
	assert_int_equal(sizeof(((struct sockaddr_un *)0)->sun_path), 108);
	memcpy(s, "unix:/", 6);
	memset(s + 6, 'a', 106);
	s[5 + 107] = '\0';
	expect(s, SOCKADDR_UNIX, 0, s);
	s[5 + 107] = 'a';
	s[5 + 108] = '\0';
	expect(s, SOCKADDR_UNIX, 0, "-");
	/* the numeric forms still parse with the flag */
	expect("127.0.0.1:3128", SOCKADDR_UNIX, 0, "127.0.0.1:3128");
	expect("[::1]:3128", SOCKADDR_UNIX, 0, "[::1]:3128");
	expect("127.0.0.1", SOCKADDR_UNIX, 0, "-");
}

/* A failed parse leaves ss as it was. */
static void test_untouched(void **state)
{
	static const char *const bad[] = { "127.0.0.1:0", "[::1]", "unix:rel", "::1:80", "x" };
	struct sockaddr_storage ss, before;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&ss, 0x5a, sizeof(ss));
		before = ss;
		assert_int_equal(sockaddr_parse(bad[i], SOCKADDR_UNIX, 0, &ss), -1);
		assert_memory_equal(&ss, &before, sizeof(ss));
	}
}

static void test_format(void **state)
{
	struct sockaddr_storage ss;
	char buf[64];

	memset(&ss, 0, sizeof(ss));
	ss.ss_family = AF_UNIX;
	assert_string_equal(sockaddr_format(&ss, buf, sizeof(buf)), "unix");
	ss.ss_family = AF_UNSPEC;
	assert_string_equal(sockaddr_format(&ss, buf, sizeof(buf)), "?");
	assert_int_equal(sockaddr_parse("[2001:db8::1]:8080", 0, 0, &ss), 0);
	assert_string_equal(sockaddr_format(&ss, buf, sizeof(buf)), "[2001:db8::1]:8080");
	/* a short buffer is cut, never overrun */
	assert_string_equal(sockaddr_format(&ss, buf, 8), "[2001:d");
}

/* sockaddr_unit of a guarded copy of s. */
static const char *unit(const char *s, char *out, size_t size)
{
	size_t len = strlen(s) + 1;
	char *g = guard_copy(s, len);

	sockaddr_unit(g, out, size);
	guard_free(g, len);
	return out;
}

/* The unit a client's address belongs to (lograte.c's key for the unattributed). */
static void test_unit(void **state)
{
	char buf[64];

	(void)state;
	/* all of loopback is one unit, IPv6's too */
	assert_string_equal(unit("127.0.0.1:50894", buf, sizeof(buf)), "127.0.0.0/8");
	assert_string_equal(unit("127.200.3.4:1", buf, sizeof(buf)), "127.0.0.0/8");
	assert_string_equal(unit("[::1]:3128", buf, sizeof(buf)), "127.0.0.0/8");
	assert_string_equal(unit("[::ffff:127.0.0.9]:3128", buf, sizeof(buf)), "127.0.0.0/8");
	/* IPv4: its /24 */
	assert_string_equal(unit("192.0.2.1:40000", buf, sizeof(buf)), "192.0.2.0/24");
	assert_string_equal(unit("192.0.2.255:1", buf, sizeof(buf)), "192.0.2.0/24");
	assert_string_equal(unit("192.0.3.1:1", buf, sizeof(buf)), "192.0.3.0/24");
	assert_string_equal(unit("[::ffff:10.1.2.3]:5", buf, sizeof(buf)), "10.1.2.0/24");
	/* IPv6: its /64 */
	assert_string_equal(unit("[2001:db8:1:2:3:4:5:6]:443", buf, sizeof(buf)),
			    "2001:db8:1:2::/64");
	assert_string_equal(unit("[2001:db8:1:2:ffff::1]:443", buf, sizeof(buf)),
			    "2001:db8:1:2::/64");
	assert_string_equal(unit("[fe80::1]:1", buf, sizeof(buf)), "fe80::/64");
	/* what is no address: the unix socket's peers one unit, anything else another */
	assert_string_equal(unit("unix", buf, sizeof(buf)), "unix");
	assert_string_equal(unit("unix:/run/x.sock", buf, sizeof(buf)), "unix");
	assert_string_equal(unit("?", buf, sizeof(buf)), "-");
	assert_string_equal(unit("", buf, sizeof(buf)), "-");
	assert_string_equal(unit("127.0.0.1", buf, sizeof(buf)), "127.0.0.0/8"); /* no port */
	sockaddr_unit(NULL, buf, sizeof(buf));
	assert_string_equal(buf, "-");
	/* a short buffer is cut, never overrun */
	assert_string_equal(unit("192.0.2.1:1", buf, 6), "192.0");
}

static void test_same(void **state)
{
	struct sockaddr_storage a, b;

	assert_int_equal(sockaddr_parse("127.0.0.1:3128", 0, 0, &a), 0);
	assert_int_equal(sockaddr_parse("127.0.0.1:03128", 0, 0, &b), 0);
	assert_true(sockaddr_same(&a, &b));
	assert_int_equal(sockaddr_parse("127.0.0.1:3129", 0, 0, &b), 0);
	assert_false(sockaddr_same(&a, &b));
	assert_int_equal(sockaddr_parse("127.0.0.2:3128", 0, 0, &b), 0);
	assert_false(sockaddr_same(&a, &b));
	assert_int_equal(sockaddr_parse("[::ffff:127.0.0.1]:3128", 0, 0, &b), 0);
	assert_false(sockaddr_same(&a, &b)); /* a mapped v6 address is another family */
	assert_int_equal(sockaddr_parse("[2001:db8::1]:53", 0, 0, &a), 0);
	assert_int_equal(sockaddr_parse("2001:DB8:0::1", SOCKADDR_PORT_OPTIONAL, 53, &b), 0);
	assert_true(sockaddr_same(&a, &b));
	assert_int_equal(sockaddr_parse("unix:/a.sock", SOCKADDR_UNIX, 0, &a), 0);
	assert_int_equal(sockaddr_parse("unix:/a.sock", SOCKADDR_UNIX, 0, &b), 0);
	assert_true(sockaddr_same(&a, &b));
	assert_int_equal(sockaddr_parse("unix:/b.sock", SOCKADDR_UNIX, 0, &b), 0);
	assert_false(sockaddr_same(&a, &b));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_v4),      cmocka_unit_test(test_port),
		cmocka_unit_test(test_v6),      cmocka_unit_test(test_unix),
		cmocka_unit_test(test_untouched), cmocka_unit_test(test_format),
		cmocka_unit_test(test_same),    cmocka_unit_test(test_unit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
