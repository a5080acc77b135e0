/*
 * test_grant.c: grant patterns, matching, liveness and the store format.
 *
 * Parser inputs sit right before a PROT_NONE page (guard.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grant.h"
#include "guard.h"

static int parse_guarded(const char *s, struct grant *g, const char **err)
{
	size_t len = strlen(s);
	char *in = guard_copy(s, len);
	int r = grant_parse(in, len, g, err);

	guard_free(in, len);
	return r;
}

#define PUBLIC_SUFFIX \
	"a wildcard over a public suffix would cover every unrelated site under it; exact hosts under it are fine"

struct parse_case {
	const char *in;
	int ret;
	const char *host; /* or the error */
	bool wildcard;
	uint16_t port;
	const char *format;
};

static const struct parse_case parse_cases[] = {
	{ "example.com", 0, "example.com", false, 0, "example.com" },
	{ "Example.COM.", 0, "example.com", false, 0, "example.com" },
	{ "example.com:8443", 0, "example.com", false, 8443, "example.com:8443" },
	{ "*.example.com", 0, "example.com", true, 0, "*.example.com" },
	{ "*.Example.com:22", 0, "example.com", true, 22, "*.example.com:22" },
	{ "*.foo.co.uk", 0, "foo.co.uk", true, 0, "*.foo.co.uk" },
	{ "foo.co.uk", 0, "foo.co.uk", false, 0, "foo.co.uk" },
	{ "co.uk", 0, "co.uk", false, 0, "co.uk" },
	{ "github.io", 0, "github.io", false, 0, "github.io" },
	{ "me.github.io:8443", 0, "me.github.io", false, 8443, "me.github.io:8443" },
	{ "*.me.github.io", 0, "me.github.io", true, 0, "*.me.github.io" },
	{ "*.wild.test", 0, "wild.test", true, 0, "*.wild.test" },
	{ "10.1.2.3", 0, "10.1.2.3", false, 0, "10.1.2.3" },
	{ "0x7f.1:80", 0, "127.0.0.1", false, 80, "127.0.0.1:80" },
	{ "[::1]:80", 0, "::1", false, 80, "[::1]:80" },
	{ "2001:db8::1", 0, "2001:db8::1", false, 0, "[2001:db8::1]" },
	{ "bücher.example", 0, "xn--bcher-kva.example", false, 0, "xn--bcher-kva.example" },
	{ "*.bücher.example", 0, "xn--bcher-kva.example", true, 0, "*.xn--bcher-kva.example" },
	{ "", -1, "empty grant", false, 0, NULL },
	{ "*", -1, "a wildcard is written *.suffix", false, 0, NULL },
	{ "*.", -1, "a wildcard is written *.suffix", false, 0, NULL },
	{ "*example.com", -1, "a wildcard is written *.suffix", false, 0, NULL },
	{ "*.com", -1, "a wildcard suffix needs at least two labels", false, 0, NULL },
	{ "*.com.", -1, "a wildcard suffix needs at least two labels", false, 0, NULL },
	{ "*.co.uk", -1, PUBLIC_SUFFIX, false, 0, NULL },
	{ "*.CO.UK.:8443", -1, PUBLIC_SUFFIX, false, 0, NULL },
	{ "*.github.io", -1, PUBLIC_SUFFIX, false, 0, NULL },
	{ "*.herokuapp.com", -1, PUBLIC_SUFFIX, false, 0, NULL },
	{ "*.s3.amazonaws.com", -1, PUBLIC_SUFFIX, false, 0, NULL },
	{ "*.xn--p1ai", -1, "a wildcard suffix needs at least two labels", false, 0, NULL },
	{ "*.pvt.k12.ma.us", -1, PUBLIC_SUFFIX, false, 0, NULL },
	{ "*.10.1.2.3", -1, "a wildcard needs a name, not an ip literal", false, 0, NULL },
	{ "*.[::1]", -1, "a wildcard needs a name, not an ip literal", false, 0, NULL },
	{ "*.*.example.com", -1, "bad character in name", false, 0, NULL },
	{ "a.*.example.com", -1, "bad character in name", false, 0, NULL },
	{ "example.com:0", -1, "bad port", false, 0, NULL },
	{ "example.com:99999", -1, "bad port", false, 0, NULL },
	{ "[fe80::1%eth0]", -1, "zone id refused", false, 0, NULL },
	{ "example.999", -1, "bad ipv4 literal", false, 0, NULL },
};

static void test_parse_table(void **state)
{
	size_t i;

	for (i = 0; i < sizeof(parse_cases) / sizeof(parse_cases[0]); i++) {
		const struct parse_case *c = &parse_cases[i];
		struct grant g;
		const char *err = NULL;
		char buf[300];
		int r = parse_guarded(c->in, &g, &err);

		if (r != c->ret)
			print_message("case %zu: %s\n", i, c->in);
		assert_int_equal(r, c->ret);
		if (r == -1) {
			assert_string_equal(err, c->host);
			continue;
		}
		assert_string_equal(g.host, c->host);
		assert_int_equal(g.wildcard, c->wildcard);
		assert_int_equal(g.port, c->port);
		assert_int_equal(g.level, GRANT_CONFIG);
		assert_int_equal(g.added, 0);
		assert_string_equal(grant_format(&g, buf, sizeof(buf)), c->format);
	}
}

/* No list at hand: every wildcard is refused, saying why; exact hosts still parse. */
static void test_no_suffix_list(void **state)
{
	struct grant g;
	const char *err = NULL;

	grant_suffix_list("/nonexistent/public_suffix_list.dafsa");
	assert_int_equal(parse_guarded("*.example.com", &g, &err), -1);
	assert_non_null(strstr(err, "the public suffix list cannot be loaded"));
	assert_non_null(strstr(err, "exact hosts are fine"));
	assert_int_equal(parse_guarded("foo.co.uk", &g, &err), 0);
	grant_suffix_list(NULL);
	assert_int_equal(parse_guarded("*.example.com", &g, &err), 0);
}

/* A wildcard parsed while the list was at hand matches nothing once it is not (fail closed). */
static void test_no_suffix_list_at_match(void **state)
{
	struct grant g, exact;
	struct host h;
	uint16_t port;
	bool has, wild, plain;
	const char *err = NULL;

	assert_int_equal(parse_guarded("*.example.com", &g, &err), 0);
	assert_int_equal(parse_guarded("www.example.com", &exact, &err), 0);
	assert_int_equal(host_port_parse("www.example.com", 15, 0, &h, &port, &has, &err), 0);
	assert_true(grant_matches(&g, &h, 443, GRANT_VIA_CONNECT));
	grant_suffix_list("/nonexistent/public_suffix_list.dafsa");
	wild = grant_matches(&g, &h, 443, GRANT_VIA_CONNECT);
	plain = grant_matches(&exact, &h, 443, GRANT_VIA_CONNECT);
	grant_suffix_list(NULL);
	assert_false(wild);
	assert_true(plain);
	assert_true(grant_matches(&g, &h, 443, GRANT_VIA_CONNECT));
}

struct match_case {
	const char *grant;
	const char *host;
	uint16_t port;
	enum grant_via via;
	bool match;
};

#define C GRANT_VIA_CONNECT
#define H GRANT_VIA_HTTP

static const struct match_case match_cases[] = {
	/* a bare grant: CONNECT 443 and plain HTTP 80, nothing else */
	{ "example.com", "example.com", 443, C, true },
	{ "example.com", "example.com", 80, H, true },
	{ "example.com", "example.com", 443, H, false },
	{ "example.com", "example.com", 80, C, false },
	{ "example.com", "example.com", 22, C, false },
	{ "example.com", "example.com", 8080, H, false },
	{ "example.com", "www.example.com", 443, C, false },
	{ "example.com", "example.org", 443, C, false },
	{ "example.com", "Example.COM.", 443, C, true },
	/* host:port: exactly that port, either way in */
	{ "example.com:22", "example.com", 22, C, true },
	{ "example.com:22", "example.com", 22, H, true },
	{ "example.com:22", "example.com", 443, C, false },
	{ "example.com:22", "example.com", 80, H, false },
	{ "example.com:443", "example.com", 443, H, true },
	/* wildcards: subdomains at any depth, never the apex */
	{ "*.example.com", "a.example.com", 443, C, true },
	{ "*.example.com", "a.b.example.com", 443, C, true },
	{ "*.example.com", "example.com", 443, C, false },
	{ "*.example.com", "aexample.com", 443, C, false },
	{ "*.example.com", "a.example.com.evil", 443, C, false },
	{ "*.example.com", "a.example.com", 80, H, true },
	{ "*.example.com", "a.example.com", 22, C, false },
	{ "*.example.com:22", "a.example.com", 22, C, true },
	{ "*.example.com:22", "a.example.com", 443, C, false },
	{ "*.example.com", "a.example.org", 443, C, false },
	/* IP literals in any spelling */
	{ "127.0.0.1", "0x7f.1", 443, C, true },
	{ "127.0.0.1", "2130706433", 80, H, true },
	{ "[::1]:80", "0:0:0:0:0:0:0:1", 80, H, true },
	{ "1.2.3.4", "::ffff:1.2.3.4", 443, C, true },
	{ "1.2.3.4", "1.2.3.5", 443, C, false },
	{ "*.example.com", "xn--bcher-kva.example.com", 443, C, true },
	{ "*.xn--bcher-kva.example", "www.bücher.example", 443, C, true },
	/*
	 * a wildcard never reaches across a public suffix below it: *.S covers H
	 * only when S is H's registrable domain or below it (s3.amazonaws.com
	 * and global.ssl.fastly.net are in the list's private section)
	 */
	{ "*.amazonaws.com", "attacker.s3.amazonaws.com", 443, C, false },
	{ "*.amazonaws.com", "a.b.s3.amazonaws.com", 443, C, false },
	{ "*.amazonaws.com", "attacker.s3.amazonaws.com", 80, H, false },
	{ "*.amazonaws.com", "s3.amazonaws.com", 443, C, false },
	{ "*.amazonaws.com", "ec2.amazonaws.com", 443, C, true },
	{ "*.amazonaws.com", "www.amazonaws.com", 80, H, true },
	{ "*.fastly.net", "tenant.global.ssl.fastly.net", 443, C, false },
	{ "*.fastly.net", "www.fastly.net", 443, C, true },
	{ "*.bucket.s3.amazonaws.com", "x.bucket.s3.amazonaws.com", 443, C, true },
	{ "*.sub.example.com", "x.sub.example.com", 443, C, true },
	{ "*.sub.example.com", "a.b.sub.example.com", 443, C, true },
	{ "*.me.github.io", "www.me.github.io", 443, C, true },
};

static void test_match_table(void **state)
{
	size_t i;

	for (i = 0; i < sizeof(match_cases) / sizeof(match_cases[0]); i++) {
		const struct match_case *c = &match_cases[i];
		struct grant g;
		struct host h;
		uint16_t port;
		bool has;
		const char *err;

		assert_int_equal(grant_parse(c->grant, strlen(c->grant), &g, &err), 0);
		assert_int_equal(host_port_parse(c->host, strlen(c->host), 0, &h, &port, &has, &err), 0);
		if (grant_matches(&g, &h, c->port, c->via) != c->match)
			print_message("case %zu: %s vs %s:%u\n", i, c->grant, c->host, c->port);
		assert_int_equal(grant_matches(&g, &h, c->port, c->via), c->match);
	}
}

static void test_live(void **state)
{
	struct grant g = { .host = "example.com" };

	g.level = GRANT_CONFIG;
	assert_true(grant_live(&g, 0, NULL));
	g.level = GRANT_PERMANENT;
	assert_true(grant_live(&g, 1000, NULL));

	g.level = GRANT_ONCE;
	g.added = 100;
	g.expires = 220;
	assert_true(grant_live(&g, 100, NULL));
	assert_true(grant_live(&g, 219, NULL));
	assert_false(grant_live(&g, 220, NULL));
	assert_false(grant_live(&g, 1000, NULL));

	g.level = GRANT_SESSION;
	memcpy(g.run, "0123456789abcdef", 17);
	assert_true(grant_live(&g, 0, "0123456789abcdef"));
	assert_false(grant_live(&g, 0, "fedcba9876543210"));
	assert_false(grant_live(&g, 0, NULL));

	assert_string_equal(grant_level_name(GRANT_CONFIG), "config");
	assert_string_equal(grant_level_name(GRANT_PERMANENT), "permanent");
	assert_string_equal(grant_level_name(GRANT_SESSION), "session");
	assert_string_equal(grant_level_name(GRANT_ONCE), "once");
}

static int store_guarded(const char *s, struct grant *out, size_t max, size_t *n, size_t *line,
			 const char **err)
{
	size_t len = strlen(s);
	char *in = guard_copy(s, len);
	int r = grant_store_parse(in, len, out, max, n, NULL, line, err);

	guard_free(in, len);
	return r;
}

static void test_store_parse(void **state)
{
	static const char store[] = "# sluice grants v1\n"
				    "example.com permanent 1700000000\n"
				    "\n"
				    "# a comment\n"
				    "*.example.org:8443 session 1700000001 0123456789abcdef\n"
				    "api.example.net once 1700000002 1700000122\n"
				    "[::1]:80\tpermanent  5   \n"
				    "10.1.2.3 once 7 3"; /* no final newline; expiry before added is fine */
	struct grant g[8];
	size_t n = 99, line = 99;
	const char *err = NULL;

	assert_int_equal(store_guarded(store, g, 8, &n, &line, &err), 0);
	assert_int_equal(n, 5);
	assert_string_equal(g[0].host, "example.com");
	assert_int_equal(g[0].level, GRANT_PERMANENT);
	assert_int_equal(g[0].added, 1700000000);
	assert_string_equal(g[1].host, "example.org");
	assert_true(g[1].wildcard);
	assert_int_equal(g[1].port, 8443);
	assert_int_equal(g[1].level, GRANT_SESSION);
	assert_string_equal(g[1].run, "0123456789abcdef");
	assert_int_equal(g[2].level, GRANT_ONCE);
	assert_int_equal(g[2].expires, 1700000122);
	assert_string_equal(g[3].host, "::1");
	assert_int_equal(g[3].port, 80);
	assert_int_equal(g[3].added, 5);
	assert_int_equal(g[4].expires, 3);

	/* empty, header only, other header */
	assert_int_equal(store_guarded("", g, 8, &n, &line, &err), 0);
	assert_int_equal(n, 0);
	assert_int_equal(store_guarded("# sluice grants v1\n", g, 8, &n, &line, &err), 0);
	assert_int_equal(n, 0);
	assert_int_equal(store_guarded("# sluice grants v9\nexample.com permanent 1\n", g, 8, &n,
				       &line, &err),
			 0);
	assert_int_equal(n, 1);
}

struct store_error {
	const char *in;
	size_t line;
	const char *err;
};

static const struct store_error store_errors[] = {
	{ "example.com\n", 1, "missing level" },
	{ "# sluice grants v1\nexample.com permanent\n", 2, "missing field" },
	{ "# sluice grants v1\nexample.com permanent 1 2\n", 2, "trailing junk after the grant" },
	{ "a.example permanent 1\nb.example permanent 1 x y z\n", 2,
	  "trailing junk after the grant" },
	{ "\n\nexample.com forever 1\n", 3, "unknown level (permanent, session or once)" },
	{ "example.com config 1\n", 1, "unknown level (permanent, session or once)" },
	{ "example.com Permanent 1\n", 1, "unknown level (permanent, session or once)" },
	{ "example.com permanent -1\n", 1, "bad added time" },
	{ "example.com permanent 1x\n", 1, "bad added time" },
	{ "example.com permanent 1234567890123456789\n", 1, "bad added time" },
	{ "example.com permanent 1\r\n", 1, "bad added time" },
	{ "example.com session 1\n", 1, "missing field" },
	{ "example.com session 1 0123456789ABCDEF\n", 1, "bad run id (16 lower-case hex digits)" },
	{ "example.com session 1 0123456789abcde\n", 1, "bad run id (16 lower-case hex digits)" },
	{ "example.com session 1 0123456789abcdef0\n", 1, "bad run id (16 lower-case hex digits)" },
	{ "example.com session 1 0123456789abcdeg\n", 1, "bad run id (16 lower-case hex digits)" },
	{ "example.com session 1 0123456789abcdef x\n", 1, "trailing junk after the grant" },
	{ "example.com once 1\n", 1, "missing field" },
	{ "example.com once 1 x\n", 1, "bad expiry time" },
	{ "example.com once 1 2 3\n", 1, "trailing junk after the grant" },
	{ "a.example permanent 1\n*.com permanent 1\n", 2,
	  "a wildcard suffix needs at least two labels" },
	{ "a..example permanent 1\n", 1, "empty label" },
	{ "a.example permanent 1\n*.github.io permanent 1\n", 2, PUBLIC_SUFFIX },
	{ "a.example permanent 1\n a.example permanent 2\n# x\n  # not a comment\n", 4,
	  "bad character in name" },
	{ "a permanent 1\nb permanent 1\nc permanent 1\nd permanent 1\nee permanent 1\n", 5,
	  "too many grants" },
	{ "mode enforce 1\nmode observe 2\n", 2, "a second mode line" },
	{ "mode learn 1\n", 1, "bad mode line (mode enforce|observe SINCE, mode learn SINCE UNTIL)" },
	{ "mode enforce 1 2\n", 1, "bad mode line (mode enforce|observe SINCE, mode learn SINCE UNTIL)" },
	{ "mode on 1\n", 1, "unknown mode (enforce, observe or learn)" },
	{ "mode\n", 1, "unknown mode (enforce, observe or learn)" },
	{ "learned 5 4\n", 1, "bad learned line (learned START END)" },
	{ "learned 1 2\nlearned 1 2\n", 2, "a second learned line" },
	{ "learned 1\n", 1, "bad learned line (learned START END)" },
	{ "a.example permanent 1 for=web\n", 1,
	  "a container name cannot be told from a stamp: name it container:<id> (sluice allow add "
	  "--for NAME looks the id up)" },
	{ "a.example permanent 1 for=unattributed\n", 1,
	  "unattributed is not a principal: a connection without a stamp has none" },
	{ "a.example permanent 1 for=\n", 1, "trailing junk after the grant" },
	{ "a.example permanent 1 4=for\n", 1, "trailing junk after the grant" },
	{ "a.example permanent 1 for=10.0.0.1@lab for=10.0.0.1@lab\n", 1, "the same scope twice" },
	{ "a.example permanent 1 for=container:0123456789ab for=container:0123456789AB\n", 1,
	  "the same scope twice" },
	{ "a.example permanent 1 for=container:0123\n", 1,
	  "container:<id> needs 12 to 64 hex digits" },
	{ "a.example permanent 1 for=10.0.0.1@bad/net\n", 1, "expected ADDR@NET" },
	{ "a.example permanent 1 for=build:\n", 1, "not a stamp principal" },
	{ "a.example permanent 1 for=user for=1.0.0.1 for=1.0.0.2 for=1.0.0.3 for=1.0.0.4 "
	  "for=1.0.0.5 for=1.0.0.6 for=1.0.0.7 for=1.0.0.8\n", 1, "more than 8 scopes" },
	{ "a.example session 1 0123456789abcdef for=user for=1.0.0.1 for=1.0.0.2 for=1.0.0.3 "
	  "for=1.0.0.4 for=1.0.0.5 for=1.0.0.6 for=1.0.0.7 for=1.0.0.8\n", 1,
	  "more than 8 scopes" },
	{ "a.example session 1 0123456789abcdef for=user for=1.0.0.1 for=1.0.0.2 for=1.0.0.3 "
	  "for=1.0.0.4 for=1.0.0.5 for=1.0.0.6 for=1.0.0.7 max-up=1 max-requests=1 per=1 x\n", 1,
	  "trailing junk after the grant" },
};

static void test_store_errors(void **state)
{
	size_t i;

	for (i = 0; i < sizeof(store_errors) / sizeof(store_errors[0]); i++) {
		const struct store_error *c = &store_errors[i];
		struct grant g[4];
		size_t n, line = 0;
		const char *err = NULL;
		int r = store_guarded(c->in, g, 4, &n, &line, &err);

		if (r != -1 || line != c->line)
			print_message("case %zu: %s\n", i, c->in);
		assert_int_equal(r, -1);
		assert_int_equal(line, c->line);
		assert_string_equal(err, c->err);
	}
}

static void test_store_round_trip(void **state)
{
	static const char store[] = "example.com permanent 1700000000\n"
				    "*.example.org:8443 session 1700000001 0123456789abcdef\n"
				    "api.example.net once 1700000002 1700000122\n"
				    "[2001:db8::1]:80 permanent 5\n"
				    "2001:db8::2 permanent 6\n"
				    "bücher.example once 0 0\n";
	struct grant a[8], b[8];
	size_t na, nb, line, len = 0, i;
	const char *err;
	char *out = NULL;
	FILE *f;

	assert_int_equal(grant_store_parse(store, strlen(store), a, 8, &na, NULL, &line, &err), 0);
	assert_int_equal(na, 6);
	f = open_memstream(&out, &len);
	assert_non_null(f);
	assert_int_equal(grant_store_write(f, a, na, NULL), 0);
	assert_int_equal(fclose(f), 0);
	assert_true(strncmp(out, "# sluice grants v1\n", 19) == 0);
	assert_non_null(strstr(out, "\nxn--bcher-kva.example once 0 0\n"));
	assert_non_null(strstr(out, "\n[2001:db8::2] permanent 6\n"));
	assert_int_equal(grant_store_parse(out, len, b, 8, &nb, NULL, &line, &err), 0);
	assert_int_equal(nb, na);
	for (i = 0; i < na; i++) {
		assert_string_equal(a[i].host, b[i].host);
		assert_int_equal(a[i].wildcard, b[i].wildcard);
		assert_int_equal(a[i].port, b[i].port);
		assert_int_equal(a[i].level, b[i].level);
		assert_int_equal(a[i].added, b[i].added);
		assert_int_equal(a[i].expires, b[i].expires);
		assert_string_equal(a[i].run, b[i].run);
	}
	free(out);
}

/* Budget words in the store: parsed strictly, written back, round-tripped. */
static void test_store_budget(void **state)
{
	static const char store[] =
		"a.example permanent 1 max-requests=3\n"
		"b.example once 2 99 for=user max-up=65536 per=2\n"
		"c.example session 3 0123456789abcdef per=60 max-requests=1 max-up=1 for=build:x\n"
		"d.example permanent 4\n";
	struct grant a[8], b[8];
	size_t na, nb, line, len = 0;
	const char *err;
	char *out = NULL, buf[96];
	FILE *f;

	(void)state;
	assert_int_equal(grant_store_parse(store, strlen(store), a, 8, &na, NULL, &line, &err), 0);
	assert_int_equal(na, 4);
	assert_int_equal(a[0].max_requests, 3);
	assert_int_equal(a[0].max_up, 0);
	assert_true(grant_budgeted(&a[0]));
	assert_int_equal(a[1].max_up, 65536);
	assert_int_equal(a[1].per, 2);
	assert_int_equal(a[1].nscopes, 1);
	assert_int_equal(a[2].max_up, 1);
	assert_int_equal(a[2].max_requests, 1);
	assert_int_equal(a[2].per, 60);
	assert_false(grant_budgeted(&a[3]));
	assert_string_equal(grant_budget_format(&a[2], buf, sizeof(buf)),
			    "max-up=1 max-requests=1 per=60");
	assert_string_equal(grant_budget_format(&a[3], buf, sizeof(buf)), "");
	f = open_memstream(&out, &len);
	assert_non_null(f);
	assert_int_equal(grant_store_write(f, a, na, NULL), 0);
	assert_int_equal(fclose(f), 0);
	assert_non_null(strstr(out, "\na.example permanent 1 max-requests=3\n"));
	assert_non_null(strstr(out, "\nb.example once 2 99 for=user max-up=65536 per=2\n"));
	assert_non_null(strstr(out, "\nc.example session 3 0123456789abcdef for=build:x max-up=1 "
				    "max-requests=1 per=60\n"));
	assert_non_null(strstr(out, "\nd.example permanent 4\n"));
	assert_int_equal(grant_store_parse(out, len, b, 8, &nb, NULL, &line, &err), 0);
	assert_int_equal(nb, na);
	for (size_t i = 0; i < na; i++) {
		assert_int_equal(a[i].max_up, b[i].max_up);
		assert_int_equal(a[i].max_requests, b[i].max_requests);
		assert_int_equal(a[i].per, b[i].per);
		assert_true(grant_same(&a[i], &b[i]));
	}
	free(out);
}

/* The tunnel word: only with a port, once, written back, part of what makes a grant the same. */
static void test_store_tunnel(void **state)
{
	static const char store[] = "a.example:22 permanent 1 tunnel\n"
				    "*.b.example:7000 session 2 0123456789abcdef tunnel for=user\n"
				    "a.example:22 permanent 3\n";
	struct grant a[4], b[4];
	size_t na, nb, line, len = 0;
	const char *err;
	char *out = NULL;
	FILE *f;

	(void)state;
	assert_int_equal(grant_store_parse(store, strlen(store), a, 4, &na, NULL, &line, &err), 0);
	assert_int_equal(na, 3);
	assert_true(a[0].tunnel);
	assert_true(a[1].tunnel);
	assert_int_equal(a[1].nscopes, 1);
	assert_false(a[2].tunnel);
	assert_false(grant_same(&a[0], &a[2]));
	f = open_memstream(&out, &len);
	assert_non_null(f);
	assert_int_equal(grant_store_write(f, a, na, NULL), 0);
	assert_int_equal(fclose(f), 0);
	assert_non_null(strstr(out, "\na.example:22 permanent 1 tunnel\n"));
	assert_non_null(strstr(out, "\n*.b.example:7000 session 2 0123456789abcdef tunnel for=user\n"));
	assert_non_null(strstr(out, "\na.example:22 permanent 3\n"));
	assert_int_equal(grant_store_parse(out, len, b, 4, &nb, NULL, &line, &err), 0);
	assert_int_equal(nb, na);
	for (size_t i = 0; i < na; i++)
		assert_true(grant_same(&a[i], &b[i]));
	free(out);

	assert_int_equal(store_guarded("a.example permanent 1 tunnel\n", a, 4, &na, &line, &err), -1);
	assert_string_equal(err, "a tunnel grant needs a port (HOST:PORT tunnel)");
	assert_int_equal(store_guarded("a.example:22 permanent 1 tunnel tunnel\n", a, 4, &na, &line,
				       &err), -1);
	assert_string_equal(err, "tunnel given twice");
	assert_int_equal(store_guarded("a.example:22 permanent 1 tunnels\n", a, 4, &na, &line, &err),
			 -1);
	assert_string_equal(err, "trailing junk after the grant");
}

/* A bad budget word damages the store line, saying which. */
static void test_store_budget_errors(void **state)
{
	static const struct {
		const char *line, *err;
	} bad[] = {
		{ "a permanent 1 per=60\n", "per without max-up or max-requests" },
		{ "a permanent 1 max-up=0\n", "bad max-up (1 to 2^50 bytes, decimal)" },
		{ "a permanent 1 max-up=10k\n", "bad max-up (1 to 2^50 bytes, decimal)" },
		{ "a permanent 1 max-up=1125899906842625\n",
		  "bad max-up (1 to 2^50 bytes, decimal)" },
		{ "a permanent 1 max-requests=\n", "bad max-requests (1 to 10^12, decimal)" },
		{ "a permanent 1 max-requests=1000000000001\n",
		  "bad max-requests (1 to 10^12, decimal)" },
		{ "a permanent 1 max-requests=-1\n", "bad max-requests (1 to 10^12, decimal)" },
		{ "a permanent 1 max-requests=1 per=1m\n",
		  "bad per (1 to 31622400 seconds, decimal)" },
		{ "a permanent 1 max-requests=1 per=31622401\n",
		  "bad per (1 to 31622400 seconds, decimal)" },
		{ "a permanent 1 max-up=1 max-up=2\n", "max-up twice" },
		{ "a permanent 1 max-requests=1 max-requests=1\n", "max-requests twice" },
		{ "a permanent 1 max-requests=1 per=2 per=2\n", "per twice" },
		{ "a permanent 1 max-uploads=1\n", "trailing junk after the grant" },
	};
	struct grant g[2];
	size_t n, line;
	const char *err;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err = NULL;
		assert_int_equal(grant_store_parse(bad[i].line, strlen(bad[i].line), g, 2, &n, NULL,
						   &line, &err), -1);
		assert_int_equal(line, 1);
		assert_string_equal(err, bad[i].err);
	}
}

/* The units the CLI and the config take. */
static void test_budget_units(void **state)
{
	uint64_t v;

	(void)state;
	assert_int_equal(grant_bytes_parse("10", 2, UINT64_MAX, &v), 0);
	assert_int_equal(v, 10);
	assert_int_equal(grant_bytes_parse("64k", 3, UINT64_MAX, &v), 0);
	assert_int_equal(v, 65536);
	assert_int_equal(grant_bytes_parse("2M", 2, UINT64_MAX, &v), 0);
	assert_int_equal(v, 2 * 1024 * 1024);
	assert_int_equal(grant_bytes_parse("1G", 2, UINT64_MAX, &v), 0);
	assert_int_equal(v, 1024 * 1024 * 1024);
	assert_int_equal(grant_bytes_parse("k", 1, UINT64_MAX, &v), -1);
	assert_int_equal(grant_bytes_parse("0k", 2, UINT64_MAX, &v), -1);
	assert_int_equal(grant_bytes_parse("1T", 2, UINT64_MAX, &v), -1);
	assert_int_equal(grant_bytes_parse("1kk", 3, UINT64_MAX, &v), -1);
	assert_int_equal(grant_bytes_parse("2G", 2, 1024 * 1024 * 1024, &v), -1);
	assert_int_equal(grant_bytes_parse("", 0, UINT64_MAX, &v), -1);
	assert_int_equal(grant_bytes_parse("99999999999999999999", 20, UINT64_MAX, &v), -1);
	assert_int_equal(grant_seconds_parse("2s", 2, 100, &v), 0);
	assert_int_equal(v, 2);
	assert_int_equal(grant_seconds_parse("3m", 2, 1000, &v), 0);
	assert_int_equal(v, 180);
	assert_int_equal(grant_seconds_parse("1h", 2, 3600, &v), 0);
	assert_int_equal(v, 3600);
	assert_int_equal(grant_seconds_parse("2h", 2, 3600, &v), -1);
	assert_int_equal(grant_seconds_parse("1d", 2, 86400, &v), 0);
	assert_int_equal(v, 86400);
	assert_int_equal(grant_seconds_parse("1w", 2, UINT64_MAX, &v), -1);
	assert_int_equal(grant_seconds_parse("0", 1, 100, &v), -1);
}

/* Scoped grants: parsed into canonical scopes, written back, served and compared as sets. */
static void test_store_scopes(void **state)
{
	static const char store[] =
		"a.example permanent 1 for=10.0.0.5@lab for=container:0123456789AB\n"
		"b.example once 1 2 for=user\n"
		"c.example session 1 0123456789abcdef for=build:img for=2001:DB8::1\n"
		"a.example permanent 1 for=container:0123456789ab for=10.0.0.5@lab\n"
		"a.example permanent 1\n";
	struct grant g[8], b[8];
	size_t n, nb, line, len = 0;
	const char *err = NULL;
	char list[GRANT_SCOPES_TEXT], *out = NULL;
	FILE *f;

	assert_int_equal(store_guarded(store, g, 8, &n, &line, &err), 0);
	assert_int_equal(n, 5);
	assert_int_equal(g[0].nscopes, 2);
	assert_int_equal(g[0].scopes[0].kind, SCOPE_SRC_NET);
	assert_int_equal(g[0].scopes[1].kind, SCOPE_CONTAINER);
	assert_string_equal(grant_scopes_format(&g[0], list, sizeof(list)),
			    "10.0.0.5@lab,container:0123456789ab");
	assert_string_equal(grant_scopes_format(&g[2], list, sizeof(list)), "build:img,2001:db8::1");
	assert_string_equal(grant_scopes_format(&g[4], list, sizeof(list)), "");

	/* the same pattern and set in another order is the same grant; no scopes is another */
	assert_true(grant_same(&g[0], &g[3]));
	assert_false(grant_same(&g[0], &g[4]));
	assert_false(grant_same(&g[4], &g[0]));
	assert_true(grant_same(&g[4], &g[4]));

	/* serving: an unscoped grant everyone, a scoped one only what its stamp matches */
	assert_true(grant_serves(&g[4], NULL, NULL, NULL));
	assert_true(grant_serves(&g[4], "10.0.0.9@lab", "10.0.0.9", NULL));
	assert_false(grant_serves(&g[0], NULL, NULL, NULL));
	assert_true(grant_serves(&g[0], "10.0.0.5@lab", "10.0.0.5", NULL));
	assert_false(grant_serves(&g[0], "10.0.0.5@other", "10.0.0.5", NULL));
	assert_false(grant_serves(&g[0], "10.0.0.6@lab", "10.0.0.6", NULL));
	assert_true(grant_serves(&g[0], "127.0.0.1@vm", "127.0.0.1",
				 "container:0123456789abcdef0123456789abcdef0123456789abcdef0123456789ab"));
	assert_false(grant_serves(&g[0], "127.0.0.1@vm", "127.0.0.1",
				  "container:1123456789abcdef0123456789abcdef0123456789abcdef0123456789ab"));
	assert_true(grant_serves(&g[1], "127.0.0.1@vm", "127.0.0.1", "user"));
	assert_false(grant_serves(&g[1], "127.0.0.1@vm", "127.0.0.1", ""));
	assert_false(grant_serves(&g[1], "127.0.0.1@vm", "127.0.0.1", "build:user"));
	assert_true(grant_serves(&g[2], "2001:db8::1@lab", "2001:db8::1", NULL));
	assert_true(grant_serves(&g[2], "::1@vm", "::1", "build:img"));
	assert_false(grant_serves(&g[2], "::1@vm", "::1", "build:img2"));

	f = open_memstream(&out, &len);
	assert_non_null(f);
	assert_int_equal(grant_store_write(f, g, n, NULL), 0);
	assert_int_equal(fclose(f), 0);
	assert_non_null(strstr(out, "\na.example permanent 1 for=10.0.0.5@lab "
				    "for=container:0123456789ab\n"));
	assert_non_null(strstr(out, "\nb.example once 1 2 for=user\n"));
	assert_non_null(strstr(out, "\nc.example session 1 0123456789abcdef for=build:img "
				    "for=2001:db8::1\n"));
	assert_non_null(strstr(out, "\na.example permanent 1\n"));
	assert_int_equal(grant_store_parse(out, len, b, 8, &nb, NULL, &line, &err), 0);
	assert_int_equal(nb, n);
	for (size_t i = 0; i < n; i++)
		assert_true(grant_same(&g[i], &b[i]));
	free(out);
}

/* The mode and learned lines: parsed anywhere, written first, kept apart from grants. */
static void test_store_mode(void **state)
{
	static const char store[] = "a.example permanent 1\n"
				    "learned 100 160\n"
				    "mode learn 100 160\n"
				    "mode permanent 2\n"       /* a grant for the host "mode" */
				    "learned once 3 4\n";      /* ... and for "learned" */
	struct grant g[8], b[8];
	struct grant_mode m, mb;
	size_t n, nb, line, len = 0;
	const char *err = NULL;
	char *out = NULL;
	FILE *f;

	assert_int_equal(grant_store_parse(store, strlen(store), g, 8, &n, &m, &line, &err), 0);
	assert_int_equal(n, 3);
	assert_string_equal(g[1].host, "mode");
	assert_string_equal(g[2].host, "learned");
	assert_true(m.set);
	assert_int_equal(m.kind, GRANT_MODE_LEARN);
	assert_int_equal(m.since, 100);
	assert_int_equal(m.until, 160);
	assert_true(m.learned);
	assert_int_equal(m.learn_start, 100);
	assert_int_equal(m.learn_end, 160);
	f = open_memstream(&out, &len);
	assert_non_null(f);
	assert_int_equal(grant_store_write(f, g, n, &m), 0);
	assert_int_equal(fclose(f), 0);
	assert_string_equal(out, "# sluice grants v1\nmode learn 100 160\nlearned 100 160\n"
				 "a.example permanent 1\nmode permanent 2\nlearned once 3 4\n");
	assert_int_equal(grant_store_parse(out, len, b, 8, &nb, &mb, &line, &err), 0);
	assert_int_equal(nb, 3);
	assert_int_equal(mb.kind, m.kind);
	free(out);

	/* no mode line: not set, the config's holds */
	assert_int_equal(grant_store_parse("a.example permanent 1\n", 22, g, 8, &n, &m, &line, &err),
			 0);
	assert_false(m.set);
	assert_false(m.learned);
	assert_int_equal(grant_store_parse("mode observe 7\n", 15, g, 8, &n, &m, &line, &err), 0);
	assert_true(m.set);
	assert_int_equal(m.kind, GRANT_MODE_OBSERVE);
	assert_int_equal(n, 0);
}

static void test_store_write_refuses_config(void **state)
{
	struct grant g = { .host = "example.com", .level = GRANT_CONFIG };
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	assert_non_null(f);
	assert_int_equal(grant_store_write(f, &g, 1, NULL), -1);
	fclose(f);
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_table),
		cmocka_unit_test(test_no_suffix_list),
		cmocka_unit_test(test_no_suffix_list_at_match),
		cmocka_unit_test(test_match_table),
		cmocka_unit_test(test_live),
		cmocka_unit_test(test_store_parse),
		cmocka_unit_test(test_store_errors),
		cmocka_unit_test(test_store_round_trip),
		cmocka_unit_test(test_store_scopes),
		cmocka_unit_test(test_store_budget),
		cmocka_unit_test(test_store_budget_errors),
		cmocka_unit_test(test_store_tunnel),
		cmocka_unit_test(test_budget_units),
		cmocka_unit_test(test_store_mode),
		cmocka_unit_test(test_store_write_refuses_config),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
