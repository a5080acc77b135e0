/*
 * test_iprange.c: CIDR parsing and the destination deny list.
 *
 * Every deny range is probed at its first and last address and just
 * outside both ends; the documentation ranges must stay reachable.
 * Parser inputs sit right before a PROT_NONE page (guard.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <string.h>

#include "guard.h"
#include "iprange.h"

static int net_guarded(const char *s, struct ipnet *n, const char **err)
{
	size_t len = strlen(s);
	char *in = guard_copy(s, len);
	int r = ipnet_parse(in, len, n, err);

	guard_free(in, len);
	return r;
}

struct net_case {
	const char *in;
	int ret;
	const char *out; /* formatted, or the error */
};

static const struct net_case net_cases[] = {
	{ "10.0.0.0/8", 0, "10.0.0.0/8" },
	{ "10.1.2.3", 0, "10.1.2.3/32" },
	{ "10.1.2.3/32", 0, "10.1.2.3/32" },
	{ "0.0.0.0/0", 0, "0.0.0.0/0" },
	{ "172.16.0.0/12", 0, "172.16.0.0/12" },
	{ "2001:db8::/32", 0, "2001:db8::/32" },
	{ "2001:DB8:0::/48", 0, "2001:db8::/48" },
	{ "::1", 0, "::1/128" },
	{ "::/0", 0, "::/0" },
	{ "fe80::/10", 0, "fe80::/10" },
	{ "10.0.0.1/8", -1, "host bits set in 10.0.0.1/8" },
	{ "172.17.0.0/12", -1, "host bits set in 172.17.0.0/12" },
	{ "2001:db8::1/32", -1, "host bits set in 2001:db8::1/32" },
	{ "10.0.0.0/33", -1, "bad prefix length" },
	{ "::/129", -1, "bad prefix length" },
	{ "10.0.0.0/", -1, "bad prefix length" },
	{ "10.0.0.0/08", -1, "bad prefix length" },
	{ "10.0.0.0/-1", -1, "bad prefix length" },
	{ "10.0.0.0/8/8", -1, "bad prefix length" },
	{ "10.0.0.0/8 ", -1, "bad prefix length" },
	{ "10/8", -1, "bad address" },
	{ "127.1", -1, "bad address" },
	{ "010.0.0.0/8", -1, "bad address" },
	{ "/8", -1, "bad address" },
	{ "", -1, "bad address" },
	{ "example.com/8", -1, "bad address" },
	{ "fe80::1%eth0", -1, "zone id refused" },
	{ "1:2:3:4:5:6:7:8:9:10:11:12:13:14:15:16:17:18:19:20/8", -1, "bad address" },
};

static void test_ipnet_parse(void **state)
{
	size_t i;

	for (i = 0; i < sizeof(net_cases) / sizeof(net_cases[0]); i++) {
		const struct net_case *c = &net_cases[i];
		struct ipnet n;
		const char *err = NULL;
		char buf[64];
		int r = net_guarded(c->in, &n, &err);

		if (r != c->ret)
			print_message("case %zu: %s\n", i, c->in);
		assert_int_equal(r, c->ret);
		if (r == 0)
			assert_string_equal(ipnet_format(&n, buf, sizeof(buf)), c->out);
		else
			assert_string_equal(err, c->out);
	}
}

static void test_ipnet_contains(void **state)
{
	struct ipnet n;
	const char *err;
	uint8_t a4[4], a6[16];

	assert_int_equal(ipnet_parse("10.0.0.0/8", 10, &n, &err), 0);
	inet_pton(AF_INET, "10.255.255.255", a4);
	assert_true(ipnet_contains(&n, AF_INET, a4));
	inet_pton(AF_INET, "11.0.0.0", a4);
	assert_false(ipnet_contains(&n, AF_INET, a4));
	inet_pton(AF_INET6, "::ffff:10.0.0.1", a6);
	assert_false(ipnet_contains(&n, AF_INET6, a6)); /* families never mix here */

	assert_int_equal(ipnet_parse("0.0.0.0/0", 9, &n, &err), 0);
	inet_pton(AF_INET, "255.255.255.255", a4);
	assert_true(ipnet_contains(&n, AF_INET, a4));

	assert_int_equal(ipnet_parse("2001:db8::/33", 13, &n, &err), 0);
	inet_pton(AF_INET6, "2001:db8:7fff:ffff::", a6);
	assert_true(ipnet_contains(&n, AF_INET6, a6));
	inet_pton(AF_INET6, "2001:db8:8000::", a6);
	assert_false(ipnet_contains(&n, AF_INET6, a6));
}

struct deny_case {
	const char *addr;
	const char *range; /* NULL: not denied */
};

static const struct deny_case deny_cases[] = {
	{ "0.0.0.0", "0.0.0.0/8" },
	{ "0.255.255.255", "0.0.0.0/8" },
	{ "1.0.0.0", NULL },
	{ "9.255.255.255", NULL },
	{ "10.0.0.0", "10.0.0.0/8" },
	{ "10.255.255.255", "10.0.0.0/8" },
	{ "11.0.0.0", NULL },
	{ "100.63.255.255", NULL },
	{ "100.64.0.0", "100.64.0.0/10" },
	{ "100.127.255.255", "100.64.0.0/10" },
	{ "100.128.0.0", NULL },
	{ "126.255.255.255", NULL },
	{ "127.0.0.0", "127.0.0.0/8" },
	{ "127.255.255.255", "127.0.0.0/8" },
	{ "128.0.0.0", NULL },
	{ "169.253.255.255", NULL },
	{ "169.254.0.0", "169.254.0.0/16" },
	{ "169.254.255.255", "169.254.0.0/16" },
	{ "169.255.0.0", NULL },
	{ "172.15.255.255", NULL },
	{ "172.16.0.0", "172.16.0.0/12" },
	{ "172.31.255.255", "172.16.0.0/12" },
	{ "172.32.0.0", NULL },
	{ "191.255.255.255", NULL },
	{ "192.0.0.0", "192.0.0.0/24" },
	{ "192.0.0.255", "192.0.0.0/24" },
	{ "192.0.1.0", NULL },
	{ "192.167.255.255", NULL },
	{ "192.168.0.0", "192.168.0.0/16" },
	{ "192.168.255.255", "192.168.0.0/16" },
	{ "192.169.0.0", NULL },
	{ "198.17.255.255", NULL },
	{ "198.18.0.0", "198.18.0.0/15" },
	{ "198.19.255.255", "198.18.0.0/15" },
	{ "198.20.0.0", NULL },
	{ "223.255.255.255", NULL },
	{ "224.0.0.0", "224.0.0.0/4" },
	{ "239.255.255.255", "224.0.0.0/4" },
	{ "240.0.0.0", "240.0.0.0/4" },
	{ "255.255.255.255", "240.0.0.0/4" },
	/* documentation ranges stay reachable */
	{ "192.0.2.0", NULL },
	{ "192.0.2.255", NULL },
	{ "198.51.100.1", NULL },
	{ "203.0.113.255", NULL },
	{ "8.8.8.8", NULL },
	/* IPv6 */
	{ "::", "::/128" },
	{ "::1", "::1/128" },
	{ "::2", "::/96" },
	{ "::ffff:ffff", "::/96" },
	{ "::1:0:0", NULL },
	{ "fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", NULL },
	{ "fc00::", "fc00::/7" },
	{ "fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "fc00::/7" },
	{ "fe00::", NULL },
	{ "fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff", NULL },
	{ "fe80::", "fe80::/10" },
	{ "febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "fe80::/10" },
	{ "fec0::", "fec0::/10" },
	{ "feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "fec0::/10" },
	{ "ff00::", "ff00::/8" },
	{ "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "ff00::/8" },
	{ "::fffe:ffff:ffff", NULL },
	{ "::ffff:0.0.0.0", "::ffff:0:0/96" },
	{ "::ffff:8.8.8.8", "::ffff:0:0/96" },
	{ "::ffff:255.255.255.255", "::ffff:0:0/96" },
	{ "::1:0:0:0", NULL },
	{ "64:ff9a:ffff:ffff:ffff:ffff:ffff:ffff", NULL },
	{ "64:ff9b::", "64:ff9b::/96" },
	{ "64:ff9b::ffff:ffff", "64:ff9b::/96" },
	{ "64:ff9b::1:0:0", NULL },
	{ "64:ff9b:0:ffff:ffff:ffff:ffff:ffff", NULL },
	{ "64:ff9b:1::", "64:ff9b:1::/48" },
	{ "64:ff9b:1:ffff:ffff:ffff:ffff:ffff", "64:ff9b:1::/48" },
	{ "64:ff9b:2::", NULL },
	{ "2001::", "2001::/32" },
	{ "2001:0:ffff:ffff:ffff:ffff:ffff:ffff", "2001::/32" },
	{ "2001:1::", NULL },
	{ "2001:db8::1", NULL },
	{ "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", NULL },
	{ "2001:ffff:ffff:ffff:ffff:ffff:ffff:ffff", NULL },
	{ "2002::", "2002::/16" },
	{ "2002:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "2002::/16" },
	{ "2003::", NULL },
	{ "2606:4700::1111", NULL },
};

static void test_denied(void **state)
{
	size_t i;

	for (i = 0; i < sizeof(deny_cases) / sizeof(deny_cases[0]); i++) {
		const struct deny_case *c = &deny_cases[i];
		uint8_t a[16];
		int family = strchr(c->addr, ':') != NULL ? AF_INET6 : AF_INET;
		struct ipnet n = { 0 };
		const char *r;

		assert_int_equal(inet_pton(family, c->addr, a), 1);
		r = iprange_denied(family, a, &n);
		if ((r == NULL) != (c->range == NULL) || (r != NULL && strcmp(r, c->range) != 0))
			print_message("case %zu: %s -> %s\n", i, c->addr, r ? r : "(allowed)");
		if (c->range == NULL) {
			assert_null(r);
			continue;
		}
		assert_non_null(r);
		assert_string_equal(r, c->range);
		assert_int_equal(n.family, family);
		assert_true(ipnet_contains(&n, family, a));
		assert_ptr_equal(iprange_denied(family, a, NULL), r);
	}
}

/* The text the deny list reports parses back to the range it copies out. */
static void test_denied_text_matches_range(void **state)
{
	size_t i;

	for (i = 0; i < sizeof(deny_cases) / sizeof(deny_cases[0]); i++) {
		const struct deny_case *c = &deny_cases[i];
		uint8_t a[16];
		int family = strchr(c->addr, ':') != NULL ? AF_INET6 : AF_INET;
		struct ipnet got, parsed;
		const char *err;

		if (c->range == NULL)
			continue;
		inet_pton(family, c->addr, a);
		assert_non_null(iprange_denied(family, a, &got));
		assert_int_equal(ipnet_parse(c->range, strlen(c->range), &parsed, &err), 0);
		assert_int_equal(got.family, parsed.family);
		assert_int_equal(got.prefix, parsed.prefix);
		assert_memory_equal(got.addr, parsed.addr, 16);
	}
}

static void test_ipaddr_format(void **state)
{
	uint8_t a[16];
	char buf[INET6_ADDRSTRLEN];

	inet_pton(AF_INET, "10.1.2.3", a);
	assert_string_equal(ipaddr_format(AF_INET, a, buf, sizeof(buf)), "10.1.2.3");
	inet_pton(AF_INET6, "2001:DB8:0:0:0:0:0:1", a);
	assert_string_equal(ipaddr_format(AF_INET6, a, buf, sizeof(buf)), "2001:db8::1");
	assert_string_equal(ipaddr_format(AF_UNIX, a, buf, sizeof(buf)), "?");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ipnet_parse),
		cmocka_unit_test(test_ipnet_contains),
		cmocka_unit_test(test_denied),
		cmocka_unit_test(test_denied_text_matches_range),
		cmocka_unit_test(test_ipaddr_format),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
