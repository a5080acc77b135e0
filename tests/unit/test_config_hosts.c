/*
 * test_config_hosts.c: unit tests for lib/config.c's directives about
 * destinations: which may be reached (allow, allow-private) and how one is
 * treated (intercept, passthrough, upstream-ca, body-limit), with the
 * look-ups the proxy makes of them (config_passthrough, config_upstream_ca,
 * config_body_limit).
 *
 * Not here: the grammar and the daemon's settings (test_config.c), inject
 * rules (test_config_inject.c). Inputs are placed before a guard page and
 * errors compared as whole lines (config_fixture.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "config.h"
#include "config_fixture.h"
#include "iprange.h"

static void test_allow(void **state)
{
	struct config *c = parse_ok("allow example.com\nallow *.Example.ORG:8443\nallow 10.1.2.3\n");
	char buf[300];

	assert_int_equal(c->ngrants, 3);
	assert_string_equal(c->grants[0].host, "example.com");
	assert_false(c->grants[0].wildcard);
	assert_int_equal(c->grants[0].port, 0);
	assert_int_equal(c->grants[0].level, GRANT_CONFIG);
	assert_string_equal(c->grants[1].host, "example.org");
	assert_true(c->grants[1].wildcard);
	assert_int_equal(c->grants[1].port, 8443);
	assert_int_equal(c->grants[1].level, GRANT_CONFIG);
	assert_string_equal(grant_format(&c->grants[1], buf, sizeof(buf)), "*.example.org:8443");
	assert_string_equal(c->grants[2].host, "10.1.2.3");
	config_free(c);
}

static void test_allow_errors(void **state)
{
	char *errs;
	int nerr;
	struct config *c;

	c = parse("mode enforce\n\nallow *.com\n", &nerr, &errs);
	assert_int_equal(nerr, 1);
	assert_non_null(strstr(errs, "t.conf:3: allow: bad grant \"*.com\": "));
	assert_int_equal(c->ngrants, 0);
	free(errs);
	config_free(c);

	/* a public suffix: refused with the reason; exact hosts under it are fine */
	c = parse("allow *.co.uk\nallow foo.co.uk\nallow *.foo.co.uk\nallow *.github.io:8443\n",
		  &nerr, &errs);
	assert_int_equal(nerr, 2);
	assert_non_null(strstr(errs, "t.conf:1: allow: bad grant \"*.co.uk\": a wildcard over a public "
				     "suffix would cover every unrelated site under it; exact hosts "
				     "under it are fine\n"));
	assert_non_null(strstr(errs, "t.conf:4: allow: bad grant \"*.github.io:8443\": "));
	assert_int_equal(c->ngrants, 2);
	free(errs);
	config_free(c);

	c = parse("allow *\nallow a b\nallow a for=web\nallow a for=user for=user\n"
		  "allow a for=unattributed\n", &nerr, &errs);
	assert_int_equal(nerr, 5);
	assert_non_null(strstr(errs, "t.conf:1: allow: bad grant \"*\": "));
	assert_non_null(strstr(errs, "t.conf:2: allow a: expected tunnel, for=SCOPE, max-up=BYTES, "
				     "max-requests=N or per=DURATION, not \"b\"\n"));
	assert_non_null(strstr(errs, "t.conf:3: allow a: for=web: a container name cannot be told "
				     "from a stamp"));
	assert_non_null(strstr(errs, "t.conf:4: allow a: for=user: the same scope twice\n"));
	assert_non_null(strstr(errs, "t.conf:5: allow a: for=unattributed: unattributed is not a "
				     "principal"));
	free(errs);
	config_free(c);

	/* tunnel: only on a grant with a port, once; written back by the normalised form */
	c = parse("allow a tunnel\nallow a:22 tunnel tunnel\nallow *.b.example:7000 tunnel for=user\n",
		  &nerr, &errs);
	assert_int_equal(nerr, 2);
	assert_non_null(strstr(errs, "t.conf:1: allow a: tunnel: a tunnel grant needs a port "
				     "(HOST:PORT tunnel)\n"));
	assert_non_null(strstr(errs, "t.conf:2: allow a:22: tunnel: tunnel given twice\n"));
	assert_int_equal(c->ngrants, 1);
	assert_true(c->grants[0].tunnel);
	free(errs);
	config_free(c);
	c = parse_ok("allow a.example:22 tunnel\n");
	{
		char *out = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&out, &len);

		assert_non_null(f);
		config_print(c, f);
		assert_int_equal(fclose(f), 0);
		assert_non_null(strstr(out, "\nallow a.example:22 tunnel\n"));
		free(out);
	}
	config_free(c);
}

/* allow with for= scopes: kept canonical, and written back by the normalised form */
/* Budget words on allow lines: units, strictness, and the normalised form. */
static void test_allow_budget(void **state)
{
	struct config *c = parse_ok("allow a.example max-up=10M max-requests=5 per=2h\n"
				    "allow b.example for=user max-requests=1\n"
				    "allow c.example max-up=1k\n");
	char *out = NULL, *errs;
	size_t len = 0;
	int nerr;
	FILE *f;

	(void)state;
	assert_int_equal(c->ngrants, 3);
	assert_int_equal(c->grants[0].max_up, 10 * 1024 * 1024);
	assert_int_equal(c->grants[0].max_requests, 5);
	assert_int_equal(c->grants[0].per, 7200);
	assert_int_equal(c->grants[1].max_requests, 1);
	assert_int_equal(c->grants[1].max_up, 0);
	assert_int_equal(c->grants[1].nscopes, 1);
	assert_int_equal(c->grants[2].max_up, 1024);
	assert_int_equal(c->grants[2].per, 0);
	f = open_memstream(&out, &len);
	assert_non_null(f);
	config_print(c, f);
	assert_int_equal(fclose(f), 0);
	assert_non_null(strstr(out, "\nallow a.example max-up=10485760 max-requests=5 per=7200\n"));
	assert_non_null(strstr(out, "\nallow b.example for=user max-requests=1\n"));
	assert_non_null(strstr(out, "\nallow c.example max-up=1024\n"));
	free(out);
	config_free(c);

	c = parse("allow a per=60\nallow a max-up=0\nallow a max-up=2X\nallow a max-requests=1k\n"
		  "allow a max-requests=2 max-requests=3\nallow a max-up=\nallow a per=367d "
		  "max-up=1\nallow a max-up=1125899906842625\n", &nerr, &errs);
	assert_int_equal(nerr, 8);
	assert_non_null(strstr(errs, "t.conf:1: allow a: per without max-up or max-requests\n"));
	assert_non_null(strstr(errs, "t.conf:2: allow a: max-up=0: bad max-up"));
	assert_non_null(strstr(errs, "t.conf:3: allow a: max-up=2X: bad max-up"));
	assert_non_null(strstr(errs, "t.conf:4: allow a: max-requests=1k: bad max-requests"));
	assert_non_null(strstr(errs, "t.conf:5: allow a: max-requests=3: max-requests twice\n"));
	assert_non_null(strstr(errs, "t.conf:6: allow a: max-up=: bad max-up"));
	assert_non_null(strstr(errs, "t.conf:7: allow a: per=367d: bad per"));
	assert_non_null(strstr(errs, "t.conf:8: allow a: max-up=1125899906842625: bad max-up"));
	assert_int_equal(c->ngrants, 0);
	free(errs);
	config_free(c);
}

static void test_allow_scopes(void **state)
{
	struct config *c = parse_ok("allow api.example for=10.0.0.5@lab for=container:0123456789AB\n"
				    "allow api.example\n");
	char *out = NULL;
	size_t len = 0;
	FILE *f;

	assert_int_equal(c->ngrants, 2);
	assert_int_equal(c->grants[0].nscopes, 2);
	assert_string_equal(c->grants[0].scopes[1].text, "container:0123456789ab");
	assert_int_equal(c->grants[1].nscopes, 0);
	f = open_memstream(&out, &len);
	assert_non_null(f);
	config_print(c, f);
	assert_int_equal(fclose(f), 0);
	assert_non_null(strstr(out, "\nallow api.example for=10.0.0.5@lab "
				    "for=container:0123456789ab\nallow api.example\n"));
	free(out);
	config_free(c);
}

static void test_allow_private(void **state)
{
	struct config *c = parse_ok("allow-private Git.Internal.Example. 10.20.0.0/16\n"
				    "allow-private registry.example fd00::/8\n");
	char buf[64];

	assert_int_equal(c->nexceptions, 2);
	assert_string_equal(c->exceptions[0].host.name, "git.internal.example");
	assert_string_equal(ipnet_format(&c->exceptions[0].net, buf, sizeof(buf)), "10.20.0.0/16");
	assert_int_equal(c->exceptions[1].net.family, AF_INET6);
	config_free(c);
}

static void test_allow_private_errors(void **state)
{
	char *errs;
	int nerr;
	struct config *c;

	expect_errors("allow-private *.example.com 10.0.0.0/8\n", 1,
		      "t.conf:1: allow-private: bad host \"*.example.com\": wildcard not allowed here\n");
	expect_errors("allow-private host.example\n", 1,
		      "t.conf:1: allow-private: expects 2 arguments, got 1\n");

	c = parse("allow-private host.example 10.0.0.1/8\n", &nerr, &errs);
	assert_int_equal(nerr, 1);
	assert_non_null(strstr(errs, "t.conf:1: allow-private: bad range \"10.0.0.1/8\": "));
	assert_int_equal(c->nexceptions, 0);
	free(errs);
	config_free(c);

	/* both words wrong: both reported */
	c = parse("allow-private bad..host 10.0.0.0/99\n", &nerr, &errs);
	assert_int_equal(nerr, 2);
	assert_non_null(strstr(errs, "t.conf:1: allow-private: bad host \"bad..host\": "));
	assert_non_null(strstr(errs, "t.conf:1: allow-private: bad range \"10.0.0.0/99\": "));
	free(errs);
	config_free(c);
}

static void test_intercept(void **state)
{
	struct config *c = parse_ok("intercept off\n");

	assert_false(c->intercept);
	config_free(c);
	c = parse_ok("intercept on\n");
	assert_true(c->intercept);
	config_free(c);
	expect_errors("intercept yes\n", 1,
		      "t.conf:1: intercept: expected on or off, got \"yes\"\n");
	expect_errors("intercept on\nintercept off\n", 1,
		      "t.conf:2: intercept: given twice (first on line 1)\n");
	expect_errors("intercept\n", 1, "t.conf:1: intercept: expects 1 argument, got 0\n");
}

static void test_passthrough(void **state)
{
	struct config *c = parse_ok("passthrough *.Bank.Example.\npassthrough pinned.example\n"
				    "passthrough [2001:DB8::1]\npassthrough 0x7f.1\n");

	assert_int_equal(c->npassthrough, 4);
	assert_string_equal(c->passthrough[0].host, "bank.example");
	assert_true(c->passthrough[0].wildcard);
	assert_string_equal(c->passthrough[1].host, "pinned.example");
	assert_false(c->passthrough[1].wildcard);
	assert_string_equal(c->passthrough[2].host, "2001:db8::1");
	assert_string_equal(c->passthrough[3].host, "127.0.0.1");

	assert_true(config_passthrough(c, "www.bank.example"));
	assert_true(config_passthrough(c, "a.b.bank.example"));
	assert_false(config_passthrough(c, "bank.example"));
	assert_false(config_passthrough(c, "xbank.example"));
	assert_true(config_passthrough(c, "pinned.example"));
	assert_false(config_passthrough(c, "www.pinned.example"));
	assert_true(config_passthrough(c, "2001:db8::1"));
	assert_true(config_passthrough(c, "127.0.0.1"));
	assert_false(config_passthrough(c, "example"));
	config_free(c);

	/* as a wildcard grant: never across a public suffix below the pattern's */
	c = parse_ok("passthrough *.amazonaws.com\n");
	assert_true(config_passthrough(c, "www.amazonaws.com"));
	assert_false(config_passthrough(c, "bucket.s3.amazonaws.com"));
	assert_false(config_passthrough(c, "s3.amazonaws.com"));
	config_free(c);

	expect_errors("passthrough host.example:443\n", 1,
		      "t.conf:1: passthrough: bad pattern \"host.example:443\": no port here (every port is passed through)\n");
	expect_errors("passthrough a.example\npassthrough A.example.\n", 1,
		      "t.conf:2: passthrough: A.example. given twice\n");
	expect_errors("passthrough *\n", 1,
		      "t.conf:1: passthrough: bad pattern \"*\": a wildcard is written *.suffix\n");
	expect_errors("passthrough *.com\n", 1,
		      "t.conf:1: passthrough: bad pattern \"*.com\": a wildcard suffix needs at least two labels\n");
	expect_errors("passthrough *.herokuapp.com\n", 1,
		      "t.conf:1: passthrough: bad pattern \"*.herokuapp.com\": a wildcard over a public "
		      "suffix would cover every unrelated site under it; exact hosts under it are fine\n");
	expect_errors("passthrough a b\n", 1, "t.conf:1: passthrough: expects 1 argument, got 2\n");
}

static void test_upstream_ca(void **state)
{
	struct config *c = parse_ok("upstream-ca Git.Internal. /etc/sluice/git.pem\n"
				    "upstream-ca 10.1.2.3 rel/ca.pem\n");

	assert_int_equal(c->nupstream_cas, 2);
	assert_string_equal(c->upstream_cas[0].host, "git.internal");
	assert_string_equal(c->upstream_cas[0].file, "/etc/sluice/git.pem");
	assert_string_equal(config_upstream_ca(c, "git.internal"), "/etc/sluice/git.pem");
	assert_string_equal(config_upstream_ca(c, "10.1.2.3"), "rel/ca.pem");
	assert_null(config_upstream_ca(c, "www.git.internal"));
	config_free(c);

	expect_errors("upstream-ca *.git.internal a.pem\n", 1,
		      "t.conf:1: upstream-ca: bad host \"*.git.internal\": wildcard not allowed here\n");
	expect_errors("upstream-ca git.internal a.pem\nupstream-ca GIT.internal b.pem\n", 1,
		      "t.conf:2: upstream-ca: git.internal given twice\n");
	expect_errors("upstream-ca git.internal\n", 1,
		      "t.conf:1: upstream-ca: expects 2 arguments, got 1\n");
	expect_errors("upstream-ca git.internal x=\"a b.pem\"\n", 1,
		      "t.conf:1: upstream-ca: quoted values are only for inject\n");
}

static void test_body_limit(void **state)
{
	struct config *c = parse_ok("body-limit api.example.com 1048576\nbody-limit up.example 1125899906842624\n");

	assert_int_equal(c->nbody_limits, 2);
	assert_string_equal(c->body_limits[0].host, "api.example.com");
	assert_int_equal(c->body_limits[0].bytes, 1048576);
	/* no max-body-bytes: the host's own cap, or none */
	assert_int_equal(config_body_limit(c, "api.example.com"), 1048576);
	assert_int_equal(config_body_limit(c, "other.example"), 0);
	config_free(c);

	/* with max-body-bytes the smaller applies */
	c = parse_ok("max-body-bytes 4096\nbody-limit small.example 100\nbody-limit big.example 100000\n");
	assert_int_equal(config_body_limit(c, "small.example"), 100);
	assert_int_equal(config_body_limit(c, "big.example"), 4096);
	assert_int_equal(config_body_limit(c, "other.example"), 4096);
	config_free(c);

	expect_errors("body-limit a.example 0\n", 1,
		      "t.conf:1: body-limit: 0 out of range 1..1125899906842624\n");
	expect_errors("body-limit a.example 1k\n", 1, "t.conf:1: body-limit: bad number \"1k\"\n");
	expect_errors("body-limit *.a.example x\n", 2,
		      "t.conf:1: body-limit: bad host \"*.a.example\": wildcard not allowed here\n"
		      "t.conf:1: body-limit: bad number \"x\"\n");
	expect_errors("body-limit a.example 5\nbody-limit A.EXAMPLE 6\n", 1,
		      "t.conf:2: body-limit: a.example given twice\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_allow),
		cmocka_unit_test(test_allow_errors),
		cmocka_unit_test(test_allow_budget),
		cmocka_unit_test(test_allow_scopes),
		cmocka_unit_test(test_allow_private),
		cmocka_unit_test(test_allow_private_errors),
		cmocka_unit_test(test_intercept),
		cmocka_unit_test(test_passthrough),
		cmocka_unit_test(test_upstream_ca),
		cmocka_unit_test(test_body_limit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
