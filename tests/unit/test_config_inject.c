/*
 * test_config_inject.c: unit tests for lib/config.c's inject rules: the
 * keys and what each accepts, the principals, quoted values, names and
 * overlapping rules, the port, and the limits (principals, words, field
 * lengths, the normalised line, the number of rules), read and printed.
 *
 * Not here: matching a request to a rule and the bytes written
 * (test_inject.c). Inputs are placed before a guard page and errors compared
 * as whole lines (config_fixture.h).
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
#include "config_fixture.h"

static void test_inject(void **state)
{
	struct config *c = parse_ok(
		"inject gh host=API.GitHub.com path=/repos/ header=Authorization prefix=\"Bearer \" "
		"env=GH_TOKEN require=\"Bearer sluice-placeholder\" principal=10.88.0.5 "
		"principal=::FFFF:10.88.0.6@podman principal=container:0123456789ABCDEF "
		"principal=build:img principal=user principal=web unattributed=no # a comment\n"
		"inject maps host=maps.example query=key file=/run/keys/maps unattributed=yes\n"
		"inject tok host=tok.example header=X-Api-Key command=/usr/local/bin/mint "
		"args=\"--audience tok.example\"\n");
	const struct inject_rule *r = &c->rules[0];

	assert_int_equal(c->nrules, 3);
	assert_string_equal(r->name, "gh");
	assert_int_equal(r->line, 1);
	assert_string_equal(r->host, "api.github.com");
	assert_string_equal(r->path, "/repos/");
	assert_int_equal(r->target, INJECT_HEADER);
	assert_string_equal(r->field, "Authorization");
	assert_string_equal(r->prefix, "Bearer ");
	assert_int_equal(r->source, INJECT_ENV);
	assert_string_equal(r->source_arg, "GH_TOKEN");
	assert_string_equal(r->args, "");
	assert_string_equal(r->require, "Bearer sluice-placeholder");
	assert_int_equal(r->nprincipals, 6);
	assert_int_equal(r->principals[0].kind, SCOPE_ADDR);
	assert_string_equal(r->principals[0].text, "10.88.0.5");
	assert_int_equal(r->principals[1].kind, SCOPE_SRC_NET);
	assert_string_equal(r->principals[1].text, "10.88.0.6@podman");
	assert_int_equal(r->principals[2].kind, SCOPE_CONTAINER);
	assert_string_equal(r->principals[2].text, "container:0123456789abcdef");
	assert_int_equal(r->principals[3].kind, SCOPE_AS);
	assert_string_equal(r->principals[3].text, "build:img");
	assert_int_equal(r->principals[4].kind, SCOPE_AS);
	assert_int_equal(r->principals[5].kind, SCOPE_NAME);
	assert_string_equal(r->principals[5].text, "web");
	assert_false(r->unattributed);

	r = &c->rules[1];
	assert_int_equal(r->line, 2);
	assert_string_equal(r->path, "/");
	assert_int_equal(r->target, INJECT_QUERY);
	assert_string_equal(r->field, "key");
	assert_int_equal(r->source, INJECT_FILE);
	assert_string_equal(r->source_arg, "/run/keys/maps");
	assert_int_equal(r->nprincipals, 0);
	assert_true(r->unattributed);

	r = &c->rules[2];
	assert_int_equal(r->source, INJECT_COMMAND);
	assert_string_equal(r->source_arg, "/usr/local/bin/mint");
	assert_string_equal(r->args, "--audience tok.example");
	{
		char *p = print_text(c);

		assert_non_null(strstr(p, "\ninject gh host=api.github.com path=/repos/ header=Authorization "
					  "prefix=\"Bearer \" env=GH_TOKEN require=\"Bearer sluice-placeholder\" "
					  "principal=10.88.0.5 principal=10.88.0.6@podman "
					  "principal=container:0123456789abcdef principal=build:img "
					  "principal=user principal=web\n"
					  "inject maps host=maps.example query=key file=/run/keys/maps unattributed=yes\n"
					  "inject tok host=tok.example header=X-Api-Key command=/usr/local/bin/mint "
					  "args=\"--audience tok.example\"\n"));
		free(p);
	}
	config_free(c);
}

struct inject_error {
	const char *line;
	const char *msg;
};

static const struct inject_error inject_errors[] = {
	{ "inject", "inject: expects at least 2 arguments, got 0" },
	{ "inject a", "inject: expects at least 2 arguments, got 1" },
	{ "inject a/b host=a.example header=X env=E", "inject: bad name \"a/b\": 1 to 64 of A-Z a-z 0-9 . _ -, the first not . or -" },
	{ "inject aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa host=a.example header=X env=E",
	  "inject: bad name \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\": 1 to 64 of A-Z a-z 0-9 . _ -, the first not . or -" },
	/* a rule's name is a directory's under STATE/agent-keys: never . or .. (a review's finding) */
	{ "inject .. host=a.example header=X env=E", "inject: bad name \"..\": 1 to 64 of A-Z a-z 0-9 . _ -, the first not . or -" },
	{ "inject . host=a.example header=X env=E", "inject: bad name \".\": 1 to 64 of A-Z a-z 0-9 . _ -, the first not . or -" },
	{ "inject -x host=a.example header=X env=E", "inject: bad name \"-x\": 1 to 64 of A-Z a-z 0-9 . _ -, the first not . or -" },
	{ "inject a hots=a.example header=X env=E", "inject a: unknown key \"hots\"" },
	{ "inject a host=a.example header=X env=E header=Y", "inject a: key \"header\" given twice" },
	{ "inject a host=a.example host=b.example header=X env=E", "inject a: key \"host\" given twice" },
	{ "inject a header=X env=E", "inject a: missing host=" },
	{ "inject a host=a.example env=E", "inject a: missing header= or query=" },
	{ "inject a host=a.example header=X query=y env=E", "inject a: header= and query= are exclusive" },
	{ "inject a host=a.example header=X", "inject a: missing env=, file= or command=" },
	{ "inject a host=a.example header=X env=E file=/f", "inject a: only one of env=, file=, command=" },
	{ "inject a host=a.example header=X env=E args=x", "inject a: args= needs command=" },
	{ "inject a host=a.example header=X env=", "inject a: env= is empty" },
	{ "inject a host=a.example header=X env=E prefix=\"\"", "inject a: prefix= is empty" },
	{ "inject a host host=a.example header=X env=E", "inject a: expected KEY=VALUE, got \"host\"" },
	{ "inject a =x host=a.example header=X env=E", "inject a: expected KEY=VALUE, got \"=x\"" },
	{ "inject a host=*.a.example header=X env=E", "inject a: host= \"*.a.example\": wildcard not allowed here" },
	{ "inject a host=a.example:0 header=X env=E", "inject a: host= \"a.example:0\": bad port" },
	{ "inject a host=a.example:65536 header=X env=E", "inject a: host= \"a.example:65536\": bad port" },
	{ "inject a host=a.example: header=X env=E", "inject a: host= \"a.example:\": bad port" },
	{ "inject a host=a.example path=v1 header=X env=E", "inject a: path= \"v1\": must start with '/'" },
	{ "inject a host=a.example path=/v1/../x header=X env=E",
	  "inject a: path= \"/v1/../x\": \".\" and \"..\" segments not allowed" },
	{ "inject a host=a.example path=/v1/. header=X env=E",
	  "inject a: path= \"/v1/.\": \".\" and \"..\" segments not allowed" },
	{ "inject a host=a.example path=/a%20b header=X env=E",
	  "inject a: path= \"/a%20b\": only letters, digits, '/' and -._~!$&'()*+,;=:@ (no %, ?, #)" },
	{ "inject a host=a.example path=/a?b header=X env=E",
	  "inject a: path= \"/a?b\": only letters, digits, '/' and -._~!$&'()*+,;=:@ (no %, ?, #)" },
	{ "inject a host=a.example header=X:Y env=E", "inject a: header= \"X:Y\": not an HTTP field name" },
	{ "inject a host=a.example header=Proxy-Authorization env=E",
	  "inject a: header= \"Proxy-Authorization\": sluice owns that header" },
	{ "inject a host=a.example header=host env=E", "inject a: header= \"host\": sluice owns that header" },
	{ "inject a host=a.example header=Content-Length env=E",
	  "inject a: header= \"Content-Length\": sluice owns that header" },
	{ "inject a host=a.example header=TRANSFER-ENCODING env=E",
	  "inject a: header= \"TRANSFER-ENCODING\": sluice owns that header" },
	{ "inject a host=a.example header=Sluice-Stamp env=E",
	  "inject a: header= \"Sluice-Stamp\": sluice owns that header" },
	{ "inject a host=a.example header=Connection env=E",
	  "inject a: header= \"Connection\": sluice owns that header" },
	{ "inject a host=a.example query=a+b env=E", "inject a: query= \"a+b\": only letters, digits and -._~" },
	{ "inject a host=a.example header=X prefix=\"\xc3\xa9\" env=E", "inject a: prefix=: only printable ASCII" },
	{ "inject a host=a.example header=X env=1ABC", "inject a: env= \"1ABC\": not a variable name" },
	{ "inject a host=a.example header=X env=A-B", "inject a: env= \"A-B\": not a variable name" },
	{ "inject a host=a.example header=X file=rel/path", "inject a: file= \"rel/path\": must be an absolute path" },
	{ "inject a host=a.example header=X command=tok", "inject a: command= \"tok\": must be an absolute path" },
	{ "inject a host=a.example header=X command=/t args=\"  \"", "inject a: args= has no words" },
	{ "inject a host=a.example query=k env=E require=a+b",
	  "inject a: require=: a query placeholder is letters, digits and -._~" },
	{ "inject a host=a.example header=X env=E require=\" ph\"",
	  "inject a: require=: printable ASCII without leading or trailing blanks" },
	{ "inject a host=a.example header=X env=E unattributed=maybe",
	  "inject a: unattributed= \"maybe\": expected yes or no" },
	{ "inject a host=a.example header=X env=E unattributed=yes unattributed=no",
	  "inject a: key \"unattributed\" given twice" },
	{ "inject a host=a.example header=X env=E principal=unattributed",
	  "inject a: principal=unattributed: write unattributed=yes" },
	{ "inject a host=a.example header=X env=E principal=container:0123",
	  "inject a: principal= \"container:0123\": container:<id> needs 12 to 64 hex digits" },
	{ "inject a host=a.example header=X env=E principal=container:0123456789xy",
	  "inject a: principal= \"container:0123456789xy\": container:<id> needs 12 to 64 hex digits" },
	{ "inject a host=a.example header=X env=E principal=build:",
	  "inject a: principal= \"build:\": not a stamp principal" },
	{ "inject a host=a.example header=X env=E principal=foo.example@net",
	  "inject a: principal= \"foo.example@net\": expected ADDR@NET" },
	{ "inject a host=a.example header=X env=E principal=10.0.0.1@bad/net",
	  "inject a: principal= \"10.0.0.1@bad/net\": expected ADDR@NET" },
	{ "inject a host=a.example header=X env=E principal=-web",
	  "inject a: principal= \"-web\": expected ADDR, ADDR@NET, container:<id>, build:<scope>, user, project:NAME[/AGENT] or a container name" },
	{ "inject a host=a.example header=X env=E principal=10.0.0.1 principal=10.0.0.1",
	  "inject a: principal= \"10.0.0.1\" given twice" },
	/* the tokenizer's quotes */
	{ "inject a host=a.example header=X env=E prefix=\"abc", "unterminated quote" },
	{ "inject a host=a.example header=X env=E prefix=\"abc\\", "unterminated quote" },
	{ "inject a host=a.example header=X env=E prefix=\"abc\\\"", "unterminated quote" },
	{ "inject a host=a.example header=X env=E prefix=\"a\\nb\"", "bad escape in quotes: only \\\" and \\\\" },
	{ "inject a host=a.example header=X env=E prefix=\"ab\"c", "text after a closing quote" },
	{ "inject a host=a.example header=X env=E prefix=\"a\tb\"", "control character 0x09 in quotes" },
	{ "mode \"observe\"x", "mode: unknown mode \"\"observe\"x\": expected enforce or observe" },
	{ "state x=\"a b\"", "state: quoted values are only for inject" },
};

static void test_inject_errors(void **state)
{
	for (size_t i = 0; i < sizeof(inject_errors) / sizeof(inject_errors[0]); i++) {
		char text[600], want[700];

		snprintf(text, sizeof(text), "%s\n", inject_errors[i].line);
		snprintf(want, sizeof(want), "t.conf:1: %s\n", inject_errors[i].msg);
		expect_errors(text, 1, want);
	}
}

static void test_inject_quotes(void **state)
{
	struct config *c = parse_ok(
		"inject a host=a.example header=X env=E prefix=\"q\\\"b\\\\s #x\"   # comment \"\n"
		"inject b host=b.example header=X env=E prefix=\"x\"# comment right after\n"
		"inject c host=c.example header=X env=E prefix=a\"b\"  \r\n"
		"inject d host=d.example header=X env=E prefix=\"ab\"\r\n"
		"inject e host=e.example header=X env=E prefix=x=\"y\"\n"
		"inject f host=\"f.example\" header=\"X\" command=\"/t\" args=x\n");

	assert_int_equal(c->nrules, 6);
	assert_string_equal(c->rules[0].prefix, "q\"b\\s #x");
	assert_string_equal(c->rules[1].prefix, "x");
	/* a quote not right after the first '=' is a plain byte */
	assert_string_equal(c->rules[2].prefix, "a\"b\"");
	assert_string_equal(c->rules[3].prefix, "ab");
	assert_string_equal(c->rules[4].prefix, "x=\"y\"");
	assert_string_equal(c->rules[5].host, "f.example");
	assert_string_equal(c->rules[5].args, "x");
	config_free(c);

	/* an unterminated quote at the end of a CRLF line is reported as such */
	expect_errors("inject a host=a.example header=X env=E prefix=\"ab\r\n", 1,
		      "t.conf:1: unterminated quote\n");
	/* other lines still read */
	expect_errors("inject a host=a.example header=X env=E prefix=\"ab\nmode x\n", 2,
		      "t.conf:1: unterminated quote\n"
		      "t.conf:2: mode: unknown mode \"x\": expected enforce or observe\n");
}

static void test_inject_names_and_overlap(void **state)
{
	struct config *c;
	char *p;

	expect_errors("inject a host=a.example header=X env=E\n\ninject a host=b.example header=X env=E\n", 1,
		      "t.conf:3: inject a: name given twice (first on line 1)\n");
	expect_errors("inject a host=a.example header=X env=E\ninject b host=A.EXAMPLE. query=k env=E\n", 1,
		      "t.conf:2: inject b: overlaps inject a (line 1): both on a.example port 443, paths / and /; "
		      "one request could match both\n");
	expect_errors("inject a host=a.example path=/v1 header=X env=E\n"
		      "inject b host=a.example header=Y env=E principal=10.0.0.1\n", 1,
		      "t.conf:2: inject b: overlaps inject a (line 1): both on a.example port 443, paths /v1 and /; "
		      "one request could match both\n");
	expect_errors("inject a host=a.example path=/v1/x header=X env=E principal=10.0.0.1\n"
		      "inject b host=a.example path=/v1 header=X env=E principal=10.0.0.2\n", 1,
		      "t.conf:2: inject b: overlaps inject a (line 1): both on a.example port 443, paths /v1/x and /v1; "
		      "one request could match both\n");
	/* a string prefix is enough, even where segments would tell them apart */
	expect_errors("inject a host=a.example path=/v1 header=X env=E\n"
		      "inject b host=a.example path=/v10 header=X env=E\n", 1,
		      "t.conf:2: inject b: overlaps inject a (line 1): both on a.example port 443, paths /v1 and /v10; "
		      "one request could match both\n");
	/* path=/ is no path */
	expect_errors("inject a host=a.example path=/ header=X env=E\n"
		      "inject b host=a.example path=/v2 header=X env=E\n", 1,
		      "t.conf:2: inject b: overlaps inject a (line 1): both on a.example port 443, paths / and /v2; "
		      "one request could match both\n");

	/* the port is part of the host: 443 written or not is one port */
	expect_errors("inject a host=a.example path=/v1 header=X env=E\n"
		      "inject b host=a.example:443 path=/v1 header=X env=E\n", 1,
		      "t.conf:2: inject b: overlaps inject a (line 1): both on a.example port 443, paths /v1 and /v1; "
		      "one request could match both\n");
	expect_errors("inject a host=a.example:8443 header=X env=E\n"
		      "inject b host=A.example.:8443 path=/v1 header=X env=E\n", 1,
		      "t.conf:2: inject b: overlaps inject a (line 1): both on a.example port 8443, paths / and /v1; "
		      "one request could match both\n");
	c = parse_ok("inject a host=a.example header=X env=E\n"
		     "inject b host=a.example:8443 header=X env=E\n"
		     "inject c host=a.example:80 header=X env=E\n");
	assert_int_equal(c->nrules, 3);
	assert_int_equal(c->rules[0].port, 443);
	assert_int_equal(c->rules[1].port, 8443);
	p = print_text(c);
	assert_non_null(strstr(p, "\ninject a host=a.example header=X env=E\n"));
	assert_non_null(strstr(p, "\ninject b host=a.example:8443 header=X env=E\n"));
	assert_non_null(strstr(p, "\ninject c host=a.example:80 header=X env=E\n"));
	free(p);
	config_free(c);
	c = parse_ok("inject a host=[2001:DB8::1]:8443 header=X env=E\ninject b host=[::1]:443 header=X env=E\n");
	p = print_text(c);
	assert_non_null(strstr(p, "\ninject a host=[2001:db8::1]:8443 header=X env=E\n"));
	assert_non_null(strstr(p, "\ninject b host=::1 header=X env=E\n"));
	free(p);
	config_free(c);

	c = parse_ok("inject a host=a.example path=/v1/ header=X env=E\n"
		     "inject b host=a.example path=/v2 header=X env=E\n"
		     "inject c host=b.example header=X env=E\n"
		     "inject d host=a.example path=/v1x header=X env=E\n");
	assert_int_equal(c->nrules, 4);
	assert_string_equal(c->rules[0].path, "/v1/");
	config_free(c);
}

static void test_inject_limits(void **state)
{
	char text[8192], want[256];
	struct config *c;
	size_t off;

	/* 16 principals are fine, 17 are not; 32 words at most */
	off = (size_t)snprintf(text, sizeof(text), "inject a host=a.example header=X env=E");
	for (int i = 1; i <= 16; i++)
		off += (size_t)snprintf(text + off, sizeof(text) - off, " principal=10.0.0.%d", i);
	snprintf(text + off, sizeof(text) - off, "\n");
	c = parse_ok(text);
	assert_int_equal(c->rules[0].nprincipals, 16);
	config_free(c);
	snprintf(text + off, sizeof(text) - off, " principal=10.0.0.17\n");
	expect_errors(text, 1, "t.conf:1: inject a: more than 16 principal=\n");
	off = (size_t)snprintf(text, sizeof(text), "inject a host=a.example header=X env=E");
	for (int i = 1; i <= 29; i++)
		off += (size_t)snprintf(text + off, sizeof(text) - off, " principal=10.0.0.%d", i);
	snprintf(text + off, sizeof(text) - off, "\n");
	expect_errors(text, 1, "t.conf:1: inject: more than 32 words\n");

	/* a value longer than its field */
	off = (size_t)snprintf(text, sizeof(text), "inject a host=a.example header=X env=E prefix=");
	memset(text + off, 'p', INJECT_PREFIX_MAX + 1);
	snprintf(text + off + INJECT_PREFIX_MAX + 1, sizeof(text) - off - INJECT_PREFIX_MAX - 1, "\n");
	expect_errors(text, 1, "t.conf:1: inject a: prefix= too long (257 bytes, at most 256)\n");

	/*
	 * A line of 4096 bytes whose normalised form is longer (host=0 prints
	 * as 0.0.0.0) would not read back: refused. One byte less is fine.
	 */
	for (int room = 0; room <= 1; room++) {
		size_t target = 4096 - 6 + (size_t)room;

		off = (size_t)snprintf(text, sizeof(text), "inject a host=0 header=X file=/");
		memset(text + off, 'f', 1023);
		off += 1023;
		off += (size_t)snprintf(text + off, sizeof(text) - off, " path=/");
		memset(text + off, 'p', 1023);
		off += 1023;
		off += (size_t)snprintf(text + off, sizeof(text) - off, " prefix=");
		memset(text + off, 'x', 256);
		off += 256;
		off += (size_t)snprintf(text + off, sizeof(text) - off, " require=");
		memset(text + off, 'r', 512);
		off += 512;
		/* fill up with principal=nNN... container names of up to 128 bytes */
		for (int i = 0; off < target; i++) {
			size_t rem = target - off;
			size_t piece = rem >= 139 + 14 ? 139 : rem > 139 ? rem - 14 : rem;

			off += (size_t)snprintf(text + off, sizeof(text) - off, " principal=n%02d", i);
			memset(text + off, 'y', piece - 14);
			off += piece - 14;
		}
		assert_int_equal(off, target);
		snprintf(text + off, sizeof(text) - off, "\n");
		if (room == 0) {
			c = parse_ok(text);
			assert_int_equal(strlen(c->rules[0].path), 1024);
			config_free(c);
		} else {
			expect_errors(text, 1,
				      "t.conf:1: inject a: normalised line longer than 4096 bytes\n");
		}
	}
	off = (size_t)snprintf(text, sizeof(text), "upstream-ca 0 /");
	memset(text + off, 'c', 4096 - off);
	snprintf(text + 4096, sizeof(text) - 4096, "\n");
	expect_errors(text, 1, "t.conf:1: upstream-ca: normalised line longer than 4096 bytes\n");

	/* more than CONFIG_MAX_RULES rules */
	{
		size_t cap = (CONFIG_MAX_RULES + 1) * 64;
		char *many = malloc(cap);

		assert_non_null(many);
		off = 0;
		for (int i = 0; i <= CONFIG_MAX_RULES; i++)
			off += (size_t)snprintf(many + off, cap - off,
						"inject r%d host=h%d.example header=X env=E\n", i, i);
		snprintf(want, sizeof(want), "t.conf:%d: inject: more than %d rules\n",
			 CONFIG_MAX_RULES + 1, CONFIG_MAX_RULES);
		expect_errors(many, 1, want);
		free(many);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_inject),
		cmocka_unit_test(test_inject_errors),
		cmocka_unit_test(test_inject_quotes),
		cmocka_unit_test(test_inject_names_and_overlap),
		cmocka_unit_test(test_inject_limits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
