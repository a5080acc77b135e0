/*
 * test_inject.c: unit tests for lib/inject.c (matching, principals, the
 * bytes written) and the parts of lib/inject_rule.c the config tests do
 * not reach (argv).
 *
 * Rules come from real config text through config_parse, so what is
 * tested is what the proxy will hold. Every request target and token
 * output is placed right before an unreadable page (guard.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "guard.h"
#include "inject.h"

static struct config *load(const char *text)
{
	struct config *c = config_new();

	assert_non_null(c);
	if (config_parse(c, text, strlen(text), "t.conf", stderr) != 0)
		fail_msg("config did not parse:\n%s", text);
	return c;
}

static const char *match_name(const struct config *c, const char *host, uint16_t port,
			      const char *path)
{
	size_t len = strlen(path);
	char *g = guard_copy(path, len);
	const struct inject_rule *r = inject_match(c, host, port, g, len);

	guard_free(g, len);
	return r != NULL ? r->name : NULL;
}

static void expect_match_port(const struct config *c, const char *host, uint16_t port,
			      const char *path, const char *want)
{
	const char *got = match_name(c, host, port, path);

	if (want == NULL && got != NULL)
		fail_msg("%s:%u%s: matched %s, want none", host, port, path, got);
	if (want != NULL && (got == NULL || strcmp(got, want) != 0))
		fail_msg("%s:%u%s: matched %s, want %s", host, port, path, got ? got : "none",
			 want);
}

/* A request to port 443. */
static void expect_match(const struct config *c, const char *host, const char *path,
			 const char *want)
{
	expect_match_port(c, host, 443, path, want);
}

/* A rule serves its port only: 443 unless host= names another. */
static void test_match_ports(void **state)
{
	struct config *c = load("inject a host=api.example header=X-Key env=K1\n"
				"inject b host=api.example:8443 header=X-Key env=K2\n"
				"inject c host=[2001:db8::1]:8443 path=/x header=X-Key env=K3\n"
				"inject d host=other.example:443 header=X-Key env=K4\n");

	expect_match_port(c, "api.example", 443, "/", "a");
	expect_match_port(c, "api.example", 8443, "/", "b");
	expect_match_port(c, "api.example", 80, "/", NULL);
	expect_match_port(c, "api.example", 9443, "/v1", NULL);
	expect_match_port(c, "2001:db8::1", 8443, "/x/y", "c");
	expect_match_port(c, "2001:db8::1", 443, "/x/y", NULL);
	expect_match_port(c, "other.example", 443, "/", "d");
	expect_match_port(c, "other.example", 8443, "/", NULL);
	assert_int_equal(c->rules[0].port, 443);
	assert_int_equal(c->rules[1].port, 8443);
	assert_int_equal(c->rules[3].port, 443);
	config_free(c);
}

static void test_match_paths(void **state)
{
	struct config *c = load("inject v1 host=api.example.com path=/v1 header=X-Key env=K1\n"
				"inject v2 host=api.example.com path=/v2/ header=X-Key env=K2\n"
				"inject all host=other.example header=X-Key env=K3\n"
				"inject ip host=[2001:DB8::1] path=/a/b query=key env=K4\n");

	expect_match(c, "api.example.com", "/v1", "v1");
	expect_match(c, "api.example.com", "/v1/", "v1");
	expect_match(c, "api.example.com", "/v1/x/y", "v1");
	expect_match(c, "api.example.com", "/v1?q=1", "v1");
	expect_match(c, "api.example.com", "/v1;x", NULL);
	expect_match(c, "api.example.com", "/v10", NULL);
	expect_match(c, "api.example.com", "/V1", NULL);
	expect_match(c, "api.example.com", "/", NULL);
	expect_match(c, "api.example.com", "", NULL);
	expect_match(c, "api.example.com", "/v2", NULL);
	expect_match(c, "api.example.com", "/v2?x", NULL);
	expect_match(c, "api.example.com", "/v2/", "v2");
	expect_match(c, "api.example.com", "/v2/models", "v2");
	expect_match(c, "api.example.com", "/v3", NULL);
	expect_match(c, "api2.example.com", "/v1", NULL);
	expect_match(c, "example.com", "/v1", NULL);

	/* the query is not part of the path */
	expect_match(c, "api.example.com", "/x?/v1", NULL);
	expect_match(c, "api.example.com", "/v1?x=/../../admin", "v1");

	/* paths an origin could read as leaving the prefix match no path rule */
	expect_match(c, "api.example.com", "/v1/../admin", NULL);
	expect_match(c, "api.example.com", "/v1/..", NULL);
	expect_match(c, "api.example.com", "/v1/.", NULL);
	expect_match(c, "api.example.com", "/v1/./x", NULL);
	expect_match(c, "api.example.com", "/v1/%2e%2E/admin", NULL);
	expect_match(c, "api.example.com", "/v1/.%2e/admin", NULL);
	expect_match(c, "api.example.com", "/v1/..%2fadmin", NULL);
	expect_match(c, "api.example.com", "/v1/..;/admin", NULL);
	expect_match(c, "api.example.com", "/v1/.;x/admin", NULL);
	expect_match(c, "api.example.com", "/v1/a\\..\\b", NULL);
	expect_match(c, "api.example.com", "/v1/%5c", NULL);
	expect_match(c, "api.example.com", "/v1/%00", NULL);
	expect_match(c, "api.example.com", "/v1/%zz", NULL);
	expect_match(c, "api.example.com", "/v1/%4", NULL);
	expect_match(c, "api.example.com", "/v1/%", NULL);
	/* ... but these are plain */
	expect_match(c, "api.example.com", "/v1/...", "v1");
	expect_match(c, "api.example.com", "/v1/.x/..y", "v1");
	expect_match(c, "api.example.com", "/v1/group%2Fproject", "v1");
	expect_match(c, "api.example.com", "/v1/a%20b", "v1");
	expect_match(c, "api.example.com", "/v1//x", "v1");
	expect_match(c, "api.example.com", "/v1/x;a=b", "v1");

	/* a rule without a path covers every target, whatever it holds */
	expect_match(c, "other.example", "/", "all");
	expect_match(c, "other.example", "/../x", "all");
	expect_match(c, "other.example", "*", "all");
	expect_match(c, "other.example", "", "all");

	expect_match(c, "2001:db8::1", "/a/b", "ip");
	expect_match(c, "2001:db8::1", "/a/b/c?d", "ip");
	expect_match(c, "2001:db8::1", "/a/bc", NULL);
	expect_match(c, "2001:db8::1", "/a", NULL);
	config_free(c);
}

static void test_match_none(void **state)
{
	struct config *c = load("");

	expect_match(c, "api.example.com", "/", NULL);
	config_free(c);
}

static void test_serves(void **state)
{
	struct config *c = load(
		"inject open host=a.example header=X-K env=A\n"
		"inject anon host=b.example header=X-K env=B unattributed=yes\n"
		"inject scoped host=c.example header=X-K env=C principal=10.88.0.5 "
		"principal=10.88.0.6@podman principal=container:0123456789ABcd "
		"principal=build:img-1 principal=user principal=web\n"
		"inject v6 host=d.example header=X-K env=D principal=fd00::0:5 principal=::ffff:10.0.0.9@vm\n");
	const struct inject_rule *open = &c->rules[0], *anon = &c->rules[1];
	const struct inject_rule *scoped = &c->rules[2], *v6 = &c->rules[3];
	const char *id = "container:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

	assert_int_equal(c->nrules, 4);
	/* no principal: every attributed connection, no unattributed one */
	assert_true(inject_serves(open, "10.88.0.5@podman", "10.88.0.5", NULL));
	assert_true(inject_serves(open, "127.0.0.1@vm", "127.0.0.1", id));
	assert_false(inject_serves(open, "unattributed", NULL, NULL));
	assert_false(inject_serves(open, NULL, NULL, NULL));
	assert_true(inject_serves(anon, "unattributed", NULL, NULL));
	assert_true(inject_serves(anon, NULL, NULL, NULL));
	assert_true(inject_serves(anon, "10.0.0.1@n", "10.0.0.1", ""));

	/* principals */
	assert_true(inject_serves(scoped, "10.88.0.5@podman", "10.88.0.5", NULL));
	assert_true(inject_serves(scoped, "10.88.0.5@other", "10.88.0.5", NULL));
	assert_true(inject_serves(scoped, "10.88.0.6@podman", "10.88.0.6", NULL));
	assert_false(inject_serves(scoped, "10.88.0.6@other", "10.88.0.6", NULL));
	assert_false(inject_serves(scoped, "10.88.0.7@podman", "10.88.0.7", NULL));
	assert_true(inject_serves(scoped, "127.0.0.1@vm", "127.0.0.1", id));
	assert_true(inject_serves(scoped, "127.0.0.1@vm", "127.0.0.1",
				  "container:0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef"));
	assert_false(inject_serves(scoped, "127.0.0.1@vm", "127.0.0.1",
				   "container:0123456789abce0f0123456789abcdef0123456789abcdef0123456789abcdef"));
	assert_false(inject_serves(scoped, "127.0.0.1@vm", "127.0.0.1", "container:0123456789ab"));
	assert_true(inject_serves(scoped, "127.0.0.1@vm", "127.0.0.1", "build:img-1"));
	assert_false(inject_serves(scoped, "127.0.0.1@vm", "127.0.0.1", "build:img-12"));
	assert_true(inject_serves(scoped, "127.0.0.1@vm", "127.0.0.1", "user"));
	assert_false(inject_serves(scoped, "127.0.0.1@vm", "127.0.0.1", ""));
	assert_false(inject_serves(scoped, "127.0.0.1@vm", "127.0.0.1", "web"));
	assert_false(inject_serves(scoped, "unattributed", NULL, NULL));
	assert_false(inject_serves(scoped, "unattributed", "10.88.0.5", NULL));

	assert_true(inject_serves(v6, "fd00::5@podman", "fd00::5", NULL));
	assert_true(inject_serves(v6, "10.0.0.9@vm", "10.0.0.9", NULL));
	assert_false(inject_serves(v6, "10.0.0.9@podman", "10.0.0.9", NULL));
	config_free(c);
}

static void test_placeholder_and_header_value(void **state)
{
	struct config *c = load("inject h host=a.example header=Authorization prefix=\"Bearer \" "
				"env=T require=\"Bearer sluice-placeholder\"\n"
				"inject q host=b.example query=key env=T\n"
				"inject plain host=c.example header=X-Api-Key env=T\n");
	const struct inject_rule *h = &c->rules[0], *q = &c->rules[1], *plain = &c->rules[2];
	char out[64];

	assert_true(inject_is_placeholder(h, "Bearer sluice-placeholder", 25));
	assert_false(inject_is_placeholder(h, "Bearer sluice-placeholde", 24));
	assert_false(inject_is_placeholder(h, "Bearer sluice-placeholderx", 26));
	assert_false(inject_is_placeholder(h, "bearer sluice-placeholder", 25));
	assert_false(inject_is_placeholder(plain, "", 0));
	assert_false(inject_is_placeholder(plain, "x", 1));

	assert_int_equal(inject_header_value(h, "tok\tEN", 6, out, sizeof(out)), 13);
	assert_string_equal(out, "Bearer tok\tEN");
	assert_int_equal(inject_header_value(plain, "k", 1, out, sizeof(out)), 1);
	assert_string_equal(out, "k");
	/* exactly fitting, and one short */
	assert_int_equal(inject_header_value(h, "abc", 3, out, 11), 10);
	assert_int_equal(inject_header_value(h, "abc", 3, out, 10), -1);
	assert_int_equal(inject_header_value(h, "a\rb", 3, out, sizeof(out)), -1);
	assert_int_equal(inject_header_value(h, "a\nb", 3, out, sizeof(out)), -1);
	assert_int_equal(inject_header_value(h, "a\0b", 3, out, sizeof(out)), -1);
	assert_int_equal(inject_header_value(h, "a\x01", 2, out, sizeof(out)), -1);
	assert_int_equal(inject_header_value(h, "a\x7f", 2, out, sizeof(out)), -1);
	assert_int_equal(inject_header_value(h, "", 0, out, sizeof(out)), -1);
	assert_int_equal(inject_header_value(q, "abc", 3, out, sizeof(out)), -1);
	{
		static char big[INJECT_SECRET_MAX + 1];
		char *o = malloc(sizeof(big) + 16);

		assert_non_null(o);
		memset(big, 'x', sizeof(big));
		assert_int_equal(inject_header_value(plain, big, INJECT_SECRET_MAX, o, sizeof(big) + 16),
				 INJECT_SECRET_MAX);
		assert_int_equal(inject_header_value(plain, big, sizeof(big), o, sizeof(big) + 16), -1);
		free(o);
	}
	config_free(c);
}

struct rewrite_case {
	int rule;          /* 0: no require, 1: require=PH, 2: prefix */
	const char *in;
	const char *secret;
	const char *out;   /* NULL: -1 */
	bool injected;
};

static const struct rewrite_case rewrite_cases[] = {
	{ 0, "/p", "S", "/p?key=S", true },
	{ 0, "/p?", "S", "/p?key=S", true },
	{ 0, "/", "S", "/?key=S", true },
	{ 0, "/p?a=1", "S", "/p?a=1&key=S", true },
	{ 0, "/p?key=old&a=1", "S", "/p?key=S&a=1", true },
	{ 0, "/p?a=1&key=old", "S", "/p?a=1&key=S", true },
	{ 0, "/p?a=1&key=x&b&key=y", "S", "/p?a=1&key=S&b", true },
	{ 0, "/p?key=x&key=y&key", "S", "/p?key=S", true },
	{ 0, "/p?key", "S", "/p?key=S", true },
	{ 0, "/p?key=", "S", "/p?key=S", true },
	{ 0, "/p?keyx=1&xkey=2&Key=3", "S", "/p?keyx=1&xkey=2&Key=3&key=S", true },
	{ 0, "/p?a&&b", "S", "/p?a&&b&key=S", true },
	{ 0, "/p?&", "S", "/p?&&key=S", true },
	{ 0, "/p?a&", "S", "/p?a&&key=S", true },
	{ 0, "/p?key=1&", "S", "/p?key=S&", true },
	{ 0, "/p?=x", "S", "/p?=x&key=S", true },
	{ 0, "/p?a=b=c&key=d=e", "S", "/p?a=b=c&key=S", true },
	{ 0, "/p?key=1", "a b/+=&%?#\xff~-._Z9", "/p?key=a%20b%2F%2B%3D%26%25%3F%23%FF~-._Z9", true },
	{ 1, "/p?key=PH", "S", "/p?key=S", true },
	{ 1, "/p?a=1&key=PH&b=2", "S", "/p?a=1&key=S&b=2", true },
	{ 1, "/p?key=other", "S", "/p?key=other", false },
	{ 1, "/p?key=PH&key=PH", "S", "/p?key=PH&key=PH", false },
	{ 1, "/p?key=PH&key=x", "S", "/p?key=PH&key=x", false },
	{ 1, "/p?key=PHX", "S", "/p?key=PHX", false },
	{ 1, "/p?key=P%48", "S", "/p?key=P%48", false },
	{ 1, "/p?key", "S", "/p?key", false },
	{ 1, "/p?xkey=PH", "S", "/p?xkey=PH", false },
	{ 1, "/p", "S", "/p", false },
	{ 2, "/p?x=1", "t0k", "/p?x=1&key=tok%20t0k", true },
	{ 0, "/p", "", NULL, false },
};

static void test_query_rewrite(void **state)
{
	struct config *c = load("inject plain host=a.example query=key env=T\n"
				"inject req host=b.example query=key env=T require=PH\n"
				"inject pre host=c.example query=key env=T prefix=\"tok \"\n"
				"inject hdr host=d.example header=X-Key env=T\n");
	char out[256];

	for (size_t i = 0; i < sizeof(rewrite_cases) / sizeof(rewrite_cases[0]); i++) {
		const struct rewrite_case *t = &rewrite_cases[i];
		size_t len = strlen(t->in);
		char *g = guard_copy(t->in, len);
		bool injected = !t->injected;
		int n = inject_query_rewrite(&c->rules[t->rule], g, len, t->secret, strlen(t->secret),
					     out, sizeof(out), &injected);

		guard_free(g, len);
		if (t->out == NULL) {
			assert_int_equal(n, -1);
			continue;
		}
		if (n == -1 || strcmp(out, t->out) != 0)
			fail_msg("case %zu: %s -> %s, want %s", i, t->in, n == -1 ? "-1" : out, t->out);
		assert_int_equal(n, (int)strlen(t->out));
		assert_int_equal(injected, t->injected);
	}

	/* out exactly fitting and one byte short, in both branches */
	{
		bool inj;

		assert_int_equal(inject_query_rewrite(&c->rules[0], "/p", 2, "S", 1, out, 9, &inj), 8);
		assert_int_equal(inject_query_rewrite(&c->rules[0], "/p", 2, "S", 1, out, 8, &inj), -1);
		assert_false(inj);
		assert_int_equal(inject_query_rewrite(&c->rules[1], "/p?x", 4, "S", 1, out, 5, &inj), 4);
		assert_string_equal(out, "/p?x");
		assert_int_equal(inject_query_rewrite(&c->rules[1], "/p?x", 4, "S", 1, out, 4, &inj), -1);
		assert_int_equal(inject_query_rewrite(&c->rules[3], "/p", 2, "S", 1, out, sizeof(out), &inj),
				 -1);
		assert_int_equal(inject_query_rewrite(&c->rules[0], "/p", 2, "S", 1, out, 0, &inj), -1);
	}
	config_free(c);
}

struct token_case {
	const char *in;
	size_t len; /* 0: strlen */
	int ret;
	const char *secret; /* or the error */
	unsigned ttl;
};

static const struct token_case token_cases[] = {
	{ "abc", 0, 3, "abc", 300 },
	{ "abc\n", 0, 3, "abc", 300 },
	{ "a b\tc\n", 0, 5, "a b\tc", 300 },
	{ "abc\n60", 0, 3, "abc", 60 },
	{ "abc\n60\n", 0, 3, "abc", 60 },
	{ "abc\n1\n", 0, 3, "abc", 1 },
	{ "abc\n86400\n", 0, 3, "abc", 86400 },
	{ "abc\n00060\n", 0, 3, "abc", 60 },
	{ "", 0, -1, "empty token", 0 },
	{ "\n", 0, -1, "empty token", 0 },
	{ "\n60\n", 0, -1, "empty token", 0 },
	{ "abc\r\n", 0, -1, "carriage return in token", 0 },
	{ "abc\r", 0, -1, "carriage return in token", 0 },
	{ "a\0c\n", 4, -1, "nul byte in token", 0 },
	{ "a\x01" "c\n", 0, -1, "control byte in token", 0 },
	{ "a\x7f" "c\n", 0, -1, "control byte in token", 0 },
	{ "abc\n\n", 0, -1, "empty ttl line", 0 },
	{ "abc\n0\n", 0, -1, "ttl out of range 1..86400", 0 },
	{ "abc\n86401\n", 0, -1, "ttl out of range 1..86400", 0 },
	{ "abc\n999999\n", 0, -1, "bad ttl", 0 },
	{ "abc\n-5\n", 0, -1, "bad ttl", 0 },
	{ "abc\n 60\n", 0, -1, "bad ttl", 0 },
	{ "abc\n60 \n", 0, -1, "bad ttl", 0 },
	{ "abc\n60\r\n", 0, -1, "bad ttl", 0 },
	{ "abc\n60\n\n", 0, -1, "junk after the ttl", 0 },
	{ "abc\n60\nx", 0, -1, "junk after the ttl", 0 },
	{ "abc\ndef\n", 0, -1, "bad ttl", 0 },
};

static void test_token_parse(void **state)
{
	char secret[INJECT_SECRET_MAX + 1];

	for (size_t i = 0; i < sizeof(token_cases) / sizeof(token_cases[0]); i++) {
		const struct token_case *t = &token_cases[i];
		size_t len = t->len != 0 ? t->len : strlen(t->in);
		char *g = guard_copy(t->in, len);
		const char *err = NULL;
		unsigned ttl = 12345;
		int n = inject_token_parse(g, len, secret, sizeof(secret), &ttl, &err);

		guard_free(g, len);
		if (n != t->ret)
			fail_msg("case %zu: returned %d (%s), want %d", i, n, err ? err : "", t->ret);
		if (n == -1) {
			assert_string_equal(err, t->secret);
			assert_int_equal(ttl, 12345);
		} else {
			assert_string_equal(secret, t->secret);
			assert_int_equal(ttl, t->ttl);
		}
	}
}

static void test_token_sizes(void **state)
{
	char *buf = malloc(INJECT_SECRET_MAX + 8), secret[INJECT_SECRET_MAX + 1];
	const char *err;
	unsigned ttl;
	char *g;

	assert_non_null(buf);
	memset(buf, 'x', INJECT_SECRET_MAX + 1);
	buf[INJECT_SECRET_MAX] = '\n';
	g = guard_copy(buf, INJECT_SECRET_MAX + 1);
	assert_int_equal(inject_token_parse(g, INJECT_SECRET_MAX + 1, secret, sizeof(secret), &ttl, &err),
			 INJECT_SECRET_MAX);
	/* the caller's buffer must hold the value and its NUL */
	assert_int_equal(inject_token_parse(g, INJECT_SECRET_MAX + 1, secret, INJECT_SECRET_MAX, &ttl,
					    &err),
			 -1);
	assert_string_equal(err, "token does not fit");
	guard_free(g, INJECT_SECRET_MAX + 1);
	buf[INJECT_SECRET_MAX] = 'x';
	g = guard_copy(buf, INJECT_SECRET_MAX + 1);
	assert_int_equal(inject_token_parse(g, INJECT_SECRET_MAX + 1, secret, sizeof(secret), &ttl, &err),
			 -1);
	assert_string_equal(err, "token longer than 8192 bytes");
	guard_free(g, INJECT_SECRET_MAX + 1);
	free(buf);
}

static void test_command_argv(void **state)
{
	struct config *c = load("inject a host=a.example header=X-K command=/usr/bin/mint args=\" --scope  read  -v \"\n"
				"inject b host=b.example header=X-K command=/bin/tok\n"
				"inject e host=e.example header=X-K env=TOKEN\n");
	char buf[INJECT_ARGS_MAX + 1], *argv[INJECT_ARGV_MAX + 2];

	assert_int_equal(inject_command_argv(&c->rules[0], buf, sizeof(buf), argv, 5), 4);
	assert_string_equal(argv[0], "/usr/bin/mint");
	assert_string_equal(argv[1], "--scope");
	assert_string_equal(argv[2], "read");
	assert_string_equal(argv[3], "-v");
	assert_null(argv[4]);
	assert_int_equal(inject_command_argv(&c->rules[0], buf, sizeof(buf), argv, 4), -1);
	assert_int_equal(inject_command_argv(&c->rules[0], buf, 5, argv, 5), -1);
	assert_int_equal(inject_command_argv(&c->rules[1], buf, sizeof(buf), argv, 2), 1);
	assert_string_equal(argv[0], "/bin/tok");
	assert_null(argv[1]);
	assert_int_equal(inject_command_argv(&c->rules[2], buf, sizeof(buf), argv, 8), -1);
	config_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_match_paths),
		cmocka_unit_test(test_match_ports),
		cmocka_unit_test(test_match_none),
		cmocka_unit_test(test_serves),
		cmocka_unit_test(test_placeholder_and_header_value),
		cmocka_unit_test(test_query_rewrite),
		cmocka_unit_test(test_token_parse),
		cmocka_unit_test(test_token_sizes),
		cmocka_unit_test(test_command_argv),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
