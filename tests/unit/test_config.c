/*
 * test_config.c: unit tests for lib/config.c.
 *
 * Every input is placed so that its last byte sits right before a page
 * that cannot be read: config_parse must never look past len. Errors are
 * captured in a memory stream and compared as whole lines.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "config.h"
#include "guard.h"
#include "iprange.h"
#include "sockaddr.h"

/* Parse text (len bytes) into a fresh config; *errs gets the messages (caller frees). */
static struct config *parse_n(const char *text, size_t len, int *nerr, char **errs)
{
	struct config *c = config_new();
	char *g;
	size_t errlen = 0;
	char *out = NULL;
	FILE *f = open_memstream(&out, &errlen);

	assert_non_null(c);
	assert_non_null(f);
	g = guard_copy(text, len);
	*nerr = config_parse(c, g, len, "t.conf", f);
	guard_free(g, len);
	fclose(f);
	if (errs != NULL)
		*errs = out;
	else
		free(out);
	return c;
}

static struct config *parse(const char *text, int *nerr, char **errs)
{
	return parse_n(text, strlen(text), nerr, errs);
}

/* Parse text that must be fine. */
static struct config *parse_ok(const char *text)
{
	char *errs;
	int nerr;
	struct config *c = parse(text, &nerr, &errs);

	if (nerr != 0)
		print_error("unexpected errors:\n%s", errs);
	assert_int_equal(nerr, 0);
	assert_string_equal(errs, "");
	free(errs);
	return c;
}

/* text must give exactly the error lines want (each ending in '\n'). */
static void expect_errors(const char *text, int n, const char *want)
{
	char *errs;
	int nerr;
	struct config *c = parse(text, &nerr, &errs);

	assert_string_equal(errs, want);
	assert_int_equal(nerr, n);
	free(errs);
	config_free(c);
}

static char *sockaddr_text(const struct sockaddr_storage *ss, char *buf, size_t size)
{
	char a[INET6_ADDRSTRLEN];

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)ss;

		inet_ntop(AF_INET, &s4->sin_addr, a, sizeof(a));
		snprintf(buf, size, "%s:%u", a, ntohs(s4->sin_port));
	} else {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;

		inet_ntop(AF_INET6, &s6->sin6_addr, a, sizeof(a));
		snprintf(buf, size, "[%s]:%u", a, ntohs(s6->sin6_port));
	}
	return buf;
}

static char *print_text(const struct config *c)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	assert_non_null(f);
	config_print(c, f);
	fclose(f);
	return out;
}

static void test_defaults(void **state)
{
	struct config *c = config_new();
	char buf[64];

	assert_non_null(c);
	assert_int_equal(c->nlisten, 1);
	assert_string_equal(sockaddr_text(&c->listen[0], buf, sizeof(buf)), "127.0.0.1:3128");
	assert_int_equal(c->mode, MODE_ENFORCE);
	assert_string_equal(c->state_dir, "./state");
	assert_string_equal(c->log_path, "./state/network.log");
	assert_int_equal(c->log_rotate_bytes, 16777216);
	assert_int_equal(c->log_keep, 5);
	assert_int_equal(c->max_conns, 4096);
	assert_int_equal(c->head_timeout_ms, 10000);
	assert_int_equal(c->connect_timeout_ms, 10000);
	assert_int_equal(c->response_timeout_ms, 60000);
	assert_int_equal(c->idle_timeout_ms, 300000);
	assert_int_equal(c->ngrants, 0);
	assert_int_equal(c->nexceptions, 0);
	assert_int_equal(c->nnameservers, 0);
	assert_true(c->intercept);
	assert_int_equal(c->npassthrough, 0);
	assert_int_equal(c->nupstream_cas, 0);
	assert_int_equal(c->nbody_limits, 0);
	assert_int_equal(c->nrules, 0);
	assert_null(c->rules);
	config_free(c);
	config_free(NULL);
}

static void test_empty_and_comments(void **state)
{
	struct config *c = parse_ok("# nothing\n\n   \t\n  # indented comment\r\n");
	char buf[64];

	assert_int_equal(c->nlisten, 1);
	assert_string_equal(sockaddr_text(&c->listen[0], buf, sizeof(buf)), "127.0.0.1:3128");
	assert_string_equal(c->log_path, "./state/network.log");
	config_free(c);

	c = parse_ok("");
	assert_int_equal(c->nlisten, 1);
	config_free(c);
}

static void test_listen(void **state)
{
	struct config *c = parse_ok("listen 10.0.0.1:8080\nlisten [::1]:3129 # loopback\n");
	char buf[64];

	assert_int_equal(c->nlisten, 2);
	assert_string_equal(sockaddr_text(&c->listen[0], buf, sizeof(buf)), "10.0.0.1:8080");
	assert_string_equal(sockaddr_text(&c->listen[1], buf, sizeof(buf)), "[::1]:3129");
	config_free(c);
}

static void test_listen_unix(void **state)
{
	struct config *c = parse_ok("listen 127.0.0.1:3128\nlisten unix:/run/sluice/proxy.sock\n");
	char buf[128];

	assert_int_equal(c->nlisten, 2);
	assert_int_equal(c->listen[1].ss_family, AF_UNIX);
	assert_string_equal(sockaddr_format(&c->listen[1], buf, sizeof(buf)),
			    "unix:/run/sluice/proxy.sock");
	config_free(c);
	expect_errors("listen unix:proxy.sock\n", 1,
		      "t.conf:1: listen: bad address \"unix:proxy.sock\": unix:PATH needs an absolute "
		      "path of at most 107 bytes\n");
	expect_errors("listen unix:\n", 1,
		      "t.conf:1: listen: bad address \"unix:\": unix:PATH needs an absolute "
		      "path of at most 107 bytes\n");
	expect_errors("listen unix:/a.sock\nlisten unix:/a.sock\n", 1,
		      "t.conf:2: listen: unix:/a.sock given twice\n");
}

static void test_listen_errors(void **state)
{
	expect_errors("listen 127.0.0.1\n", 1,
		      "t.conf:1: listen: bad address \"127.0.0.1\": expected a numeric ADDR:PORT, [ADDR]:PORT or unix:PATH\n");
	expect_errors("\nlisten localhost:3128\n", 1,
		      "t.conf:2: listen: bad address \"localhost:3128\": expected a numeric ADDR:PORT, [ADDR]:PORT or unix:PATH\n");
	expect_errors("listen ::1:3128\n", 1,
		      "t.conf:1: listen: bad address \"::1:3128\": expected a numeric ADDR:PORT, [ADDR]:PORT or unix:PATH\n");
	expect_errors("listen 127.0.0.1:0\n", 1,
		      "t.conf:1: listen: bad address \"127.0.0.1:0\": expected a numeric ADDR:PORT, [ADDR]:PORT or unix:PATH\n");
	expect_errors("listen 127.0.0.1:65536\n", 1,
		      "t.conf:1: listen: bad address \"127.0.0.1:65536\": expected a numeric ADDR:PORT, [ADDR]:PORT or unix:PATH\n");
	expect_errors("listen 127.1:3128\n", 1,
		      "t.conf:1: listen: bad address \"127.1:3128\": expected a numeric ADDR:PORT, [ADDR]:PORT or unix:PATH\n");
	expect_errors("listen [fe80::1%eth0]:3128\n", 1,
		      "t.conf:1: listen: bad address \"[fe80::1%eth0]:3128\": expected a numeric ADDR:PORT, [ADDR]:PORT or unix:PATH\n");
	expect_errors("listen 127.0.0.1:3128\nlisten 127.0.0.1:3128\n", 1,
		      "t.conf:2: listen: 127.0.0.1:3128 given twice\n");
	expect_errors("listen\n", 1, "t.conf:1: listen: expects 1 argument, got 0\n");
}

static void test_listen_too_many(void **state)
{
	char text[2048] = "";

	for (int i = 0; i <= CONFIG_MAX_LISTEN; i++) {
		char line[64];

		snprintf(line, sizeof(line), "listen 127.0.0.1:%d\n", 4000 + i);
		strcat(text, line);
	}
	expect_errors(text, 1, "t.conf:17: listen: more than 16 addresses\n");
}

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

	c = parse("allow *\nallow a b\n", &nerr, &errs);
	assert_int_equal(nerr, 2);
	assert_non_null(strstr(errs, "t.conf:1: allow: bad grant \"*\": "));
	assert_non_null(strstr(errs, "t.conf:2: allow: expects 1 argument, got 2\n"));
	free(errs);
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

static void test_mode(void **state)
{
	struct config *c = parse_ok("mode observe\n");

	assert_int_equal(c->mode, MODE_OBSERVE);
	config_free(c);
	c = parse_ok("mode enforce\n");
	assert_int_equal(c->mode, MODE_ENFORCE);
	config_free(c);

	expect_errors("mode learn\n", 1,
		      "t.conf:1: mode: unknown mode \"learn\": expected enforce or observe\n");
	expect_errors("mode observe\n# x\nmode enforce\n", 1,
		      "t.conf:3: mode: given twice (first on line 1)\n");
}

static void test_state_and_log(void **state)
{
	struct config *c = parse_ok("state /var/lib/sluice/\n");

	assert_string_equal(c->state_dir, "/var/lib/sluice");
	assert_string_equal(c->log_path, "/var/lib/sluice/network.log");
	config_free(c);

	/* log before or after state: the explicit one wins */
	c = parse_ok("log /tmp/n.log\nstate /srv/s\n");
	assert_string_equal(c->state_dir, "/srv/s");
	assert_string_equal(c->log_path, "/tmp/n.log");
	config_free(c);

	c = parse_ok("state /\n");
	assert_string_equal(c->state_dir, "/");
	config_free(c);

	expect_errors("state a\nstate b\n", 1, "t.conf:2: state: given twice (first on line 1)\n");
	expect_errors("log a\n\n\nlog b\n", 1, "t.conf:4: log: given twice (first on line 1)\n");
	expect_errors("state a b\n", 1, "t.conf:1: state: expects 1 argument, got 2\n");
}

static void test_path_too_long(void **state)
{
	/* a path of PATH_MAX bytes cannot fit a 4096-byte line; but a state that
	 * fits may leave no room for the default log under it */
	char text[4200];
	char *errs;
	int nerr;
	struct config *c;

	strcpy(text, "state ");
	memset(text + 6, 'a', 4090);
	strcpy(text + 6 + 4090, "\n");
	c = parse(text, &nerr, &errs);
	assert_int_equal(nerr, 1);
	assert_non_null(strstr(errs, "t.conf:1: state: path too long for the default log"));
	free(errs);
	config_free(c);

	/* with an explicit log it is fine */
	strcpy(text + 6 + 4090, "\nlog x.log\n");
	c = parse_ok(text);
	assert_string_equal(c->log_path, "x.log");
	config_free(c);
}

static void test_numbers(void **state)
{
	struct config *c = parse_ok("log-rotate-bytes 4096\nlog-keep 0\nmax-connections 1000000\n"
				    "head-timeout 1\nconnect-timeout 86400\nresponse-timeout 5\n"
				    "idle-timeout 7\ntoken-min-interval 86400\n");

	assert_int_equal(c->log_rotate_bytes, 4096);
	assert_int_equal(c->log_keep, 0);
	assert_int_equal(c->max_conns, 1000000);
	assert_int_equal(c->head_timeout_ms, 1000);
	assert_int_equal(c->connect_timeout_ms, 86400000);
	assert_int_equal(c->response_timeout_ms, 5000);
	assert_int_equal(c->idle_timeout_ms, 7000);
	assert_int_equal(c->token_min_interval_ms, 86400000);
	config_free(c);

	c = parse_ok("log-rotate-bytes 1099511627776\nlog-keep 100\nmax-connections 1\n");
	assert_int_equal(c->log_rotate_bytes, (uint64_t)1 << 40);
	assert_int_equal(c->log_keep, 100);
	assert_int_equal(c->max_conns, 1);
	assert_int_equal(config_per_client(c), 1); /* a sixteenth, at least one */
	config_free(c);

	c = parse_ok("max-connections 320\n");
	assert_int_equal(config_per_client(c), 20);
	config_free(c);
	c = parse_ok("max-connections 320\nmax-connections-per-client 300\n");
	assert_int_equal(config_per_client(c), 300);
	config_free(c);
}

static void test_number_errors(void **state)
{
	expect_errors("head-timeout 0\n", 1, "t.conf:1: head-timeout: 0 out of range 1..86400\n");
	expect_errors("connect-timeout 86401\n", 1,
		      "t.conf:1: connect-timeout: 86401 out of range 1..86400\n");
	expect_errors("response-timeout -1\n", 1,
		      "t.conf:1: response-timeout: bad number \"-1\"\n");
	expect_errors("idle-timeout 10s\n", 1, "t.conf:1: idle-timeout: bad number \"10s\"\n");
	expect_errors("idle-timeout +10\n", 1, "t.conf:1: idle-timeout: bad number \"+10\"\n");
	expect_errors("max-connections 0\n", 1,
		      "t.conf:1: max-connections: 0 out of range 1..1000000\n");
	expect_errors("max-connections 1000001\n", 1,
		      "t.conf:1: max-connections: 1000001 out of range 1..1000000\n");
	expect_errors("max-connections-per-client 0\n", 1,
		      "t.conf:1: max-connections-per-client: 0 out of range 1..1000000\n");
	expect_errors("log-keep 101\n", 1, "t.conf:1: log-keep: 101 out of range 0..100\n");
	expect_errors("log-rotate-bytes 4095\n", 1,
		      "t.conf:1: log-rotate-bytes: 4095 out of range 4096..1099511627776\n");
	expect_errors("log-rotate-bytes 1099511627777\n", 1,
		      "t.conf:1: log-rotate-bytes: 1099511627777 out of range 4096..1099511627776\n");
	expect_errors("log-rotate-bytes 99999999999999999999999\n", 1,
		      "t.conf:1: log-rotate-bytes: bad number \"99999999999999999999999\"\n");
	expect_errors("head-timeout 5\nhead-timeout 5\n", 1,
		      "t.conf:2: head-timeout: given twice (first on line 1)\n");
	expect_errors("token-min-interval 0\n", 1,
		      "t.conf:1: token-min-interval: 0 out of range 1..86400\n");
	expect_errors("token-min-interval 1.5\n", 1,
		      "t.conf:1: token-min-interval: bad number \"1.5\"\n");
	expect_errors("idle-timeout\n", 1, "t.conf:1: idle-timeout: expects 1 argument, got 0\n");
}

static void test_nameserver(void **state)
{
	struct config *c = parse_ok("nameserver 192.0.2.53\nnameserver 192.0.2.54:5353\n"
				    "nameserver 2001:db8::53\nnameserver [2001:db8::54]:5300\n"
				    "nameserver [2001:db8::55]\n");
	char buf[64];

	assert_int_equal(c->nnameservers, 5);
	assert_string_equal(sockaddr_text(&c->nameservers[0], buf, sizeof(buf)), "192.0.2.53:53");
	assert_string_equal(sockaddr_text(&c->nameservers[1], buf, sizeof(buf)), "192.0.2.54:5353");
	assert_string_equal(sockaddr_text(&c->nameservers[2], buf, sizeof(buf)), "[2001:db8::53]:53");
	assert_string_equal(sockaddr_text(&c->nameservers[3], buf, sizeof(buf)),
			    "[2001:db8::54]:5300");
	assert_string_equal(sockaddr_text(&c->nameservers[4], buf, sizeof(buf)), "[2001:db8::55]:53");
	config_free(c);

	expect_errors("nameserver dns.example\n", 1,
		      "t.conf:1: nameserver: bad address \"dns.example\": expected a numeric ADDR, ADDR:PORT or [ADDR]:PORT\n");
	expect_errors("nameserver 192.0.2.53\nnameserver 192.0.2.53:53\n", 1,
		      "t.conf:2: nameserver: 192.0.2.53:53 given twice\n");
	expect_errors("nameserver 1.1.1.1:0\n", 1,
		      "t.conf:1: nameserver: bad address \"1.1.1.1:0\": expected a numeric ADDR, ADDR:PORT or [ADDR]:PORT\n");
}

static void test_nameserver_too_many(void **state)
{
	char text[1024] = "";

	for (int i = 0; i <= CONFIG_MAX_NAMESERVERS; i++) {
		char line[64];

		snprintf(line, sizeof(line), "nameserver 192.0.2.%d\n", i + 1);
		strcat(text, line);
	}
	expect_errors(text, 1, "t.conf:9: nameserver: more than 8 addresses\n");
}

static void test_line_errors(void **state)
{
	char text[8192];

	expect_errors("frobnicate 1\n", 1, "t.conf:1: unknown directive \"frobnicate\"\n");
	expect_errors("Mode enforce\n", 1, "t.conf:1: unknown directive \"Mode\"\n");
	expect_errors("mode\x01 enforce\n", 1, "t.conf:1: control character 0x01 in line\n");

	/* a NUL byte: the line is refused, the next still read */
	{
		static const char nul[] = "mode observe\0x\nfoo\n";
		char *errs;
		int nerr;
		struct config *c = parse_n(nul, sizeof(nul) - 1, &nerr, &errs);

		assert_int_equal(nerr, 2);
		assert_string_equal(errs, "t.conf:1: nul byte in line\n"
					  "t.conf:2: unknown directive \"foo\"\n");
		assert_int_equal(c->mode, MODE_ENFORCE);
		free(errs);
		config_free(c);
	}

	/* 4096 bytes is fine, 4097 is not */
	memset(text, ' ', sizeof(text));
	memcpy(text, "mode observe", 12);
	text[4096] = '\n';
	text[4097] = '\0';
	{
		struct config *c = parse_ok(text);

		assert_int_equal(c->mode, MODE_OBSERVE);
		config_free(c);
	}
	text[4096] = ' ';
	text[4097] = '\n';
	text[4098] = '\0';
	expect_errors(text, 1, "t.conf:1: line too long (over 4096 bytes)\n");
}

static void test_crlf_and_no_final_newline(void **state)
{
	struct config *c = parse_ok("mode observe\r\nhead-timeout 3\r\nidle-timeout 9");

	assert_int_equal(c->mode, MODE_OBSERVE);
	assert_int_equal(c->head_timeout_ms, 3000);
	assert_int_equal(c->idle_timeout_ms, 9000);
	config_free(c);
}

static void test_many_errors(void **state)
{
	expect_errors("listen 1.2.3.4\n"
		      "mode x\n"
		      "# fine\n"
		      "state ./s\n"
		      "frob\n"
		      "head-timeout 0\n"
		      "state ./t\n"
		      "log-keep 5 6\n"
		      "max-connections 12\n",
		      6,
		      "t.conf:1: listen: bad address \"1.2.3.4\": expected a numeric ADDR:PORT, [ADDR]:PORT or unix:PATH\n"
		      "t.conf:2: mode: unknown mode \"x\": expected enforce or observe\n"
		      "t.conf:5: unknown directive \"frob\"\n"
		      "t.conf:6: head-timeout: 0 out of range 1..86400\n"
		      "t.conf:7: state: given twice (first on line 4)\n"
		      "t.conf:8: log-keep: expects 1 argument, got 2\n");
}

static void test_null_errs(void **state)
{
	static const char text[] = "frob\nmode x\n";
	struct config *c = config_new();

	assert_int_equal(config_parse(c, text, sizeof(text) - 1, "x", NULL), 2);
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

static void test_log_chain_and_user(void **state)
{
	struct config *c = config_new();

	assert_false(c->log_chain);
	assert_string_equal(c->user, "");
	config_free(c);
	c = parse_ok("log-chain on\nuser sluice\n");
	assert_true(c->log_chain);
	assert_string_equal(c->user, "sluice");
	{
		char *p = print_text(c);

		assert_non_null(strstr(p, "\nlog-chain on\nuser sluice\n"));
		free(p);
	}
	config_free(c);
	c = parse_ok("log-chain off\nuser _s.lu-ice9\n");
	assert_false(c->log_chain);
	assert_string_equal(c->user, "_s.lu-ice9");
	config_free(c);
	c = parse_ok("user abcdefghijklmnopqrstuvwxyz012345\n"); /* 32 bytes */
	assert_int_equal(strlen(c->user), 32);
	config_free(c);
	expect_errors("log-chain yes\n", 1, "t.conf:1: log-chain: expected on or off, got \"yes\"\n");
	expect_errors("log-chain on\nlog-chain on\n", 1,
		      "t.conf:2: log-chain: given twice (first on line 1)\n");
	expect_errors("user a\nuser b\n", 1, "t.conf:2: user: given twice (first on line 1)\n");
	expect_errors("user\n", 1, "t.conf:1: user: expects 1 argument, got 0\n");
	expect_errors("user a b\n", 1, "t.conf:1: user: expects 1 argument, got 2\n");
	expect_errors("user root\n", 1,
		      "t.conf:1: user: root is what the proxy drops; name an unprivileged user\n");
	expect_errors("user abcdefghijklmnopqrstuvwxyz0123456\n", 1,
		      "t.conf:1: user: name longer than 32 bytes\n");
	expect_errors("user -x\n", 1,
		      "t.conf:1: user: bad name \"-x\": a letter or '_' first, then letters, "
		      "digits, '_', '-' or '.'\n");
	expect_errors("user 1x\n", 1,
		      "t.conf:1: user: bad name \"1x\": a letter or '_' first, then letters, "
		      "digits, '_', '-' or '.'\n");
	expect_errors("user a/b\n", 1,
		      "t.conf:1: user: bad name \"a/b\": a letter or '_' first, then letters, "
		      "digits, '_', '-' or '.'\n");
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
	assert_int_equal(r->principals[0].kind, INJECT_P_ADDR);
	assert_string_equal(r->principals[0].text, "10.88.0.5");
	assert_int_equal(r->principals[1].kind, INJECT_P_SRC_NET);
	assert_string_equal(r->principals[1].text, "10.88.0.6@podman");
	assert_int_equal(r->principals[2].kind, INJECT_P_CONTAINER);
	assert_string_equal(r->principals[2].text, "container:0123456789abcdef");
	assert_int_equal(r->principals[3].kind, INJECT_P_AS);
	assert_string_equal(r->principals[3].text, "build:img");
	assert_int_equal(r->principals[4].kind, INJECT_P_AS);
	assert_int_equal(r->principals[5].kind, INJECT_P_NAME);
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
	{ "inject a/b host=a.example header=X env=E", "inject: bad name \"a/b\": 1 to 64 of A-Z a-z 0-9 . _ -" },
	{ "inject aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa host=a.example header=X env=E",
	  "inject: bad name \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\": 1 to 64 of A-Z a-z 0-9 . _ -" },
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
	  "inject a: principal= \"-web\": expected ADDR, ADDR@NET, container:<id>, build:<scope>, user or a container name" },
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

/* print -> parse -> print gives the same text and the same config */
static void round_trip(const char *text)
{
	struct config *a = parse_ok(text), *b;
	char *pa = print_text(a), *pb;

	b = parse_ok(pa);
	pb = print_text(b);
	assert_string_equal(pa, pb);
	assert_int_equal(a->nlisten, b->nlisten);
	assert_memory_equal(a->listen, b->listen, a->nlisten * sizeof(a->listen[0]));
	assert_int_equal(a->ngrants, b->ngrants);
	for (size_t i = 0; i < a->ngrants; i++) {
		assert_string_equal(a->grants[i].host, b->grants[i].host);
		assert_int_equal(a->grants[i].wildcard, b->grants[i].wildcard);
		assert_int_equal(a->grants[i].port, b->grants[i].port);
	}
	assert_int_equal(a->nexceptions, b->nexceptions);
	for (size_t i = 0; i < a->nexceptions; i++) {
		assert_string_equal(a->exceptions[i].host.name, b->exceptions[i].host.name);
		assert_memory_equal(&a->exceptions[i].net, &b->exceptions[i].net,
				    sizeof(a->exceptions[i].net));
	}
	assert_int_equal(a->mode, b->mode);
	assert_string_equal(a->state_dir, b->state_dir);
	assert_string_equal(a->log_path, b->log_path);
	assert_int_equal(a->log_rotate_bytes, b->log_rotate_bytes);
	assert_int_equal(a->log_keep, b->log_keep);
	assert_int_equal(a->max_conns, b->max_conns);
	assert_int_equal(a->head_timeout_ms, b->head_timeout_ms);
	assert_int_equal(a->connect_timeout_ms, b->connect_timeout_ms);
	assert_int_equal(a->response_timeout_ms, b->response_timeout_ms);
	assert_int_equal(a->idle_timeout_ms, b->idle_timeout_ms);
	assert_int_equal(a->token_min_interval_ms, b->token_min_interval_ms);
	assert_int_equal(a->nnameservers, b->nnameservers);
	assert_memory_equal(a->nameservers, b->nameservers,
			    a->nnameservers * sizeof(a->nameservers[0]));
	assert_int_equal(a->intercept, b->intercept);
	assert_int_equal(a->npassthrough, b->npassthrough);
	for (size_t i = 0; i < a->npassthrough; i++) {
		assert_string_equal(a->passthrough[i].host, b->passthrough[i].host);
		assert_int_equal(a->passthrough[i].wildcard, b->passthrough[i].wildcard);
	}
	assert_int_equal(a->nupstream_cas, b->nupstream_cas);
	for (size_t i = 0; i < a->nupstream_cas; i++) {
		assert_string_equal(a->upstream_cas[i].host, b->upstream_cas[i].host);
		assert_string_equal(a->upstream_cas[i].file, b->upstream_cas[i].file);
	}
	assert_int_equal(a->nbody_limits, b->nbody_limits);
	for (size_t i = 0; i < a->nbody_limits; i++) {
		assert_string_equal(a->body_limits[i].host, b->body_limits[i].host);
		assert_int_equal(a->body_limits[i].bytes, b->body_limits[i].bytes);
	}
	assert_int_equal(a->nrules, b->nrules);
	for (size_t i = 0; i < a->nrules; i++) {
		const struct inject_rule *x = &a->rules[i], *y = &b->rules[i];

		assert_string_equal(x->name, y->name);
		assert_string_equal(x->host, y->host);
		assert_int_equal(x->port, y->port);
		assert_string_equal(x->path, y->path);
		assert_int_equal(x->target, y->target);
		assert_string_equal(x->field, y->field);
		assert_string_equal(x->prefix, y->prefix);
		assert_int_equal(x->source, y->source);
		assert_string_equal(x->source_arg, y->source_arg);
		assert_string_equal(x->args, y->args);
		assert_string_equal(x->require, y->require);
		assert_int_equal(x->nprincipals, y->nprincipals);
		for (size_t k = 0; k < x->nprincipals; k++) {
			assert_int_equal(x->principals[k].kind, y->principals[k].kind);
			assert_string_equal(x->principals[k].text, y->principals[k].text);
		}
		assert_int_equal(x->unattributed, y->unattributed);
	}
	free(pa);
	free(pb);
	config_free(a);
	config_free(b);
}

static void test_round_trip(void **state)
{
	round_trip("");
	round_trip("listen [::1]:3128\nlisten 10.9.8.7:80\nmode observe\nstate /srv/st/\n"
		   "log-rotate-bytes 5000\nlog-keep 0\nmax-connections 7\nhead-timeout 2\n"
		   "connect-timeout 3\nresponse-timeout 4\nidle-timeout 5\ntoken-min-interval 2\n"
		   "allow Example.com\nallow *.b.example:8443\nallow [2001:DB8::1]:8080\n"
		   "allow-private git.internal 10.0.0.0/8\nallow-private v6.internal fd00::/8\n"
		   "nameserver 192.0.2.1\nnameserver [2001:db8::1]:5353\n");
	round_trip("intercept off\npassthrough *.Bank.example\npassthrough [2001:db8::7]\n"
		   "passthrough 10.0.0.1\nupstream-ca Git.Internal /etc/sluice/git-ca.pem\n"
		   "upstream-ca ::1 ca=x.pem\nbody-limit api.example.com 1048576\n"
		   "inject gh host=API.github.com path=/repos/ header=Authorization "
		   "prefix=\"Bearer \" env=GH_TOKEN require=\"Bearer ph\" principal=10.88.0.5 "
		   "principal=container:0123456789AB principal=web-1 unattributed=no\n"
		   "inject q host=maps.example query=key file=\"/run/keys/maps key\" "
		   "unattributed=yes principal=build:x principal=user\n"
		   "inject odd host=odd.example header=X-Odd prefix=\"a\\\"b\\\\c #d\" "
		   "command=/usr/bin/tok args=\"--scope \\\"x y\\\"\" require=\"#\"\n"
		   "inject lone host=lone.example header=X-K command=\"/opt/a b/tok\"\n"
		   "inject p1 host=Lone.example:8443 header=X-K env=E\n"
		   "inject p2 host=[2001:db8::1]:8443 header=X-K env=E\n"
		   "inject p3 host=[2001:db8::1]:443 header=X-K env=E\n");
}

static void test_print_defaults(void **state)
{
	struct config *c = config_new();
	char *p = print_text(c);

	assert_string_equal(p, "listen 127.0.0.1:3128\n"
			       "mode enforce\n"
			       "state ./state\n"
			       "log ./state/network.log\n"
			       "log-rotate-bytes 16777216\n"
			       "log-keep 5\n"
			       "log-chain off\n"
			       "max-connections 4096\n"
			       "max-connections-per-client 256\n"
			       "max-body-bytes 0\n"
			       "head-timeout 10\n"
			       "connect-timeout 10\n"
			       "response-timeout 60\n"
			       "idle-timeout 300\n"
			       "token-min-interval 10\n"
			       "# nameserver: none given, /etc/resolv.conf is used\n"
			       "intercept on\n");
	free(p);
	config_free(c);
}

static void test_load(void **state)
{
	char path[] = "/tmp/test_config.XXXXXX";
	static const char body[] = "mode observe\nfrob\n";
	char *out = NULL;
	size_t len = 0;
	FILE *f;
	struct config *c = config_new();
	int fd = mkstemp(path);

	assert_true(fd != -1);
	assert_int_equal(write(fd, body, sizeof(body) - 1), (ssize_t)(sizeof(body) - 1));
	close(fd);

	f = open_memstream(&out, &len);
	assert_int_equal(config_load(c, path, f), 1);
	fclose(f);
	assert_non_null(strstr(out, ":2: unknown directive \"frob\"\n"));
	assert_int_equal(strncmp(out, path, strlen(path)), 0);
	free(out);
	unlink(path);

	f = open_memstream(&out, &len);
	assert_int_equal(config_load(c, "/nonexistent/sluice.conf", f), 1);
	fclose(f);
	assert_string_equal(out, "/nonexistent/sluice.conf: open: no such file or directory\n");
	free(out);
	config_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_empty_and_comments),
		cmocka_unit_test(test_listen),
		cmocka_unit_test(test_listen_unix),
		cmocka_unit_test(test_listen_errors),
		cmocka_unit_test(test_listen_too_many),
		cmocka_unit_test(test_allow),
		cmocka_unit_test(test_allow_errors),
		cmocka_unit_test(test_allow_private),
		cmocka_unit_test(test_allow_private_errors),
		cmocka_unit_test(test_mode),
		cmocka_unit_test(test_state_and_log),
		cmocka_unit_test(test_path_too_long),
		cmocka_unit_test(test_numbers),
		cmocka_unit_test(test_number_errors),
		cmocka_unit_test(test_nameserver),
		cmocka_unit_test(test_nameserver_too_many),
		cmocka_unit_test(test_line_errors),
		cmocka_unit_test(test_crlf_and_no_final_newline),
		cmocka_unit_test(test_many_errors),
		cmocka_unit_test(test_null_errs),
		cmocka_unit_test(test_intercept),
		cmocka_unit_test(test_log_chain_and_user),
		cmocka_unit_test(test_passthrough),
		cmocka_unit_test(test_upstream_ca),
		cmocka_unit_test(test_body_limit),
		cmocka_unit_test(test_inject),
		cmocka_unit_test(test_inject_errors),
		cmocka_unit_test(test_inject_quotes),
		cmocka_unit_test(test_inject_names_and_overlap),
		cmocka_unit_test(test_inject_limits),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_print_defaults),
		cmocka_unit_test(test_load),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
