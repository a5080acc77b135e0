/*
 * test_config.c: unit tests for lib/config.c: the file's grammar (comments,
 * CRLF, line length, control and NUL bytes, many errors at once), the
 * daemon's own settings (listen, mode, state, log, the numbers, nameserver,
 * log-chain, user), config_print (the defaults, print -> parse -> print over
 * every directive) and config_load.
 *
 * Not here: the directives about destinations (test_config_hosts.c) and
 * inject rules (test_config_inject.c). Every input is placed before a
 * guard page and errors are compared as whole lines (config_fixture.h).
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
#include "config_fixture.h"
#include "sockaddr.h"

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
	assert_int_equal(nerr, 2);
	assert_non_null(strstr(errs, "t.conf:1: state: path too long for the default log"));
	assert_non_null(strstr(errs, "t.conf:1: state: path too long for the default dns-log"));
	free(errs);
	config_free(c);

	/* with explicit logs it is fine */
	strcpy(text + 6 + 4090, "\nlog x.log\ndns-log y.log\n");
	c = parse_ok(text);
	assert_string_equal(c->log_path, "x.log");
	assert_string_equal(c->dns_log_path, "y.log");
	config_free(c);
}

static void test_dns(void **state)
{
	struct config *c = parse_ok("state /s\n"
				    "dns-listen 127.0.0.1:5300\ndns-listen [::1]:53\n"
				    "dns-upstream 192.0.2.2 tls=DNS.test ca=/ca.pem\n"
				    "dns-upstream 192.0.2.3:5353\n"
				    "dns-timeout 1\ndns-min-ttl 0\ndns-max-ttl 3600\n"
				    "dns-negative-ttl 5\ndns-cache-entries 10\n"
				    "dns-allow-type *.example.com txt\ndns-allow-type mx.test TYPE15\n"
				    "dns-wildcard-budget 3 60\n");
	char errs_expected[][96] = {
		"t.conf:1: dns-allow-type: HTTPS cannot be allowed",
		"t.conf:2: dns-allow-type: AAAA cannot be allowed this way",
		"t.conf:3: dns-upstream: ca= without tls=",
		"t.conf:4: dns-upstream: tls=192.0.2.9: expected the server's host name",
		"t.conf:5: dns-allow-type: bad pattern \"x.com:80\": no port here",
		"t.conf:6: dns-allow-type: unknown type \"FOO\"",
		"t.conf:7: dns-upstream: unknown option \"tsl=x.test\"",
		"t.conf:8: dns-listen: bad address \"localhost:53\"",
		"t.conf:9: dns-wildcard-budget: 0 out of range",
	};
	char *errs;
	int nerr;

	assert_int_equal(c->ndns_listen, 2);
	assert_int_equal(c->ndns_upstreams, 2);
	assert_string_equal(c->dns_upstreams[0].tls_name, "dns.test");
	assert_string_equal(c->dns_upstreams[0].ca_file, "/ca.pem");
	assert_int_equal(ntohs(((struct sockaddr_in *)&c->dns_upstreams[0].addr)->sin_port), 853);
	assert_int_equal(ntohs(((struct sockaddr_in *)&c->dns_upstreams[1].addr)->sin_port), 5353);
	assert_string_equal(c->dns_upstreams[1].tls_name, "");
	assert_int_equal(c->dns_timeout_ms, 1000);
	assert_int_equal(c->dns_min_ttl, 0);
	assert_int_equal(c->dns_max_ttl, 3600);
	assert_int_equal(c->dns_negative_ttl, 5);
	assert_int_equal(c->dns_cache_entries, 10);
	assert_int_equal(c->dns_wildcard_budget, 3);
	assert_int_equal(c->dns_wildcard_window, 60);
	assert_string_equal(c->dns_log_path, "/s/dns.log");
	assert_true(config_dns_type_allowed(c, "a.example.com", 16));
	assert_false(config_dns_type_allowed(c, "example.com", 16));
	assert_false(config_dns_type_allowed(c, "a.example.com", 15));
	assert_true(config_dns_type_allowed(c, "mx.test", 15));
	config_free(c);

	c = parse("dns-allow-type x.com HTTPS\ndns-allow-type x.com aaaa\n"
		  "dns-upstream 192.0.2.9 ca=/x\ndns-upstream 192.0.2.9 tls=192.0.2.9\n"
		  "dns-allow-type x.com:80 TXT\ndns-allow-type x.com FOO\n"
		  "dns-upstream 192.0.2.9 tsl=x.test\ndns-listen localhost:53\n"
		  "dns-wildcard-budget 0 60\n",
		  &nerr, &errs);
	assert_int_equal(nerr, 9);
	for (size_t i = 0; i < sizeof(errs_expected) / sizeof(errs_expected[0]); i++)
		if (strstr(errs, errs_expected[i]) == NULL)
			fail_msg("missing \"%s\" in:\n%s", errs_expected[i], errs);
	free(errs);
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
	c = parse_ok("doctor-on-start on\n");
	assert_true(c->doctor_on_start);
	config_free(c);
	c = parse_ok("doctor-on-start off\n");
	assert_false(c->doctor_on_start);
	config_free(c);
	c = parse_ok("log-chain off\nuser _s.lu-ice9\n");
	assert_false(c->log_chain);
	assert_string_equal(c->user, "_s.lu-ice9");
	assert_int_equal(c->log_row_rate, 100);
	assert_int_equal(c->log_row_burst, 200);
	config_free(c);
	c = parse_ok("log-row-rate 0\nlog-row-burst 5\n");
	assert_int_equal(c->log_row_rate, 0);
	assert_int_equal(c->log_row_burst, 5);
	assert_int_equal(c->log_open_after_ms, 5000);
	assert_int_equal(c->log_progress_ms, 60000);
	config_free(c);
	c = parse_ok("log-open-after 0\nlog-progress 86400\n");
	assert_int_equal(c->log_open_after_ms, 0);
	assert_int_equal(c->log_progress_ms, 86400000);
	config_free(c);
	expect_errors("log-open-after 86401\n", 1,
		      "t.conf:1: log-open-after: 86401 out of range 0..86400\n");
	expect_errors("log-progress 2s\n", 1, "t.conf:1: log-progress: bad number \"2s\"\n");
	c = parse_ok("user abcdefghijklmnopqrstuvwxyz012345\n"); /* 32 bytes */
	assert_int_equal(strlen(c->user), 32);
	config_free(c);
	expect_errors("log-chain yes\n", 1, "t.conf:1: log-chain: expected on or off, got \"yes\"\n");
	expect_errors("doctor-on-start yes\n", 1,
		      "t.conf:1: doctor-on-start: expected on or off, got \"yes\"\n");
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

/* metrics-listen and dns-metrics-listen: off unless given, a bare port on loopback */
static void test_metrics_listen(void **state)
{
	struct config *c = parse_ok("");
	char buf[64];
	const char *words[] = { "0", "65536", "099", "localhost:9100", "9100x", "[::1]", "" };

	assert_false(c->metrics_on);
	assert_false(c->dns_metrics_on);
	config_free(c);
	c = parse_ok("metrics-listen 9100\ndns-metrics-listen [::1]:9101\n");
	assert_true(c->metrics_on);
	assert_string_equal(sockaddr_text(&c->metrics_listen, buf, sizeof(buf)), "127.0.0.1:9100");
	assert_true(c->dns_metrics_on);
	assert_string_equal(sockaddr_text(&c->dns_metrics_listen, buf, sizeof(buf)),
			    "[::1]:9101");
	config_free(c);
	c = parse_ok("metrics-listen 0.0.0.0:65535\n");
	assert_string_equal(sockaddr_text(&c->metrics_listen, buf, sizeof(buf)), "0.0.0.0:65535");
	config_free(c);
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		char text[64], want[256];

		snprintf(text, sizeof(text), "metrics-listen %s\n", words[i]);
		if (words[i][0] == '\0') {
			expect_errors(text, 1, "t.conf:1: metrics-listen: expects 1 argument, got 0\n");
			continue;
		}
		snprintf(want, sizeof(want), "t.conf:1: metrics-listen: bad address \"%s\": expected "
			 "a numeric ADDR:PORT, [ADDR]:PORT or a PORT (1..65535) on 127.0.0.1\n",
			 words[i]);
		expect_errors(text, 1, want);
	}
	expect_errors("dns-metrics-listen 1\ndns-metrics-listen 2\n", 1,
		      "t.conf:2: dns-metrics-listen: given twice (first on line 1)\n");
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
	assert_int_equal(a->metrics_on, b->metrics_on);
	assert_memory_equal(&a->metrics_listen, &b->metrics_listen, sizeof(a->metrics_listen));
	assert_int_equal(a->dns_metrics_on, b->dns_metrics_on);
	assert_memory_equal(&a->dns_metrics_listen, &b->dns_metrics_listen,
			    sizeof(a->dns_metrics_listen));
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
		   "nameserver 192.0.2.1\nnameserver [2001:db8::1]:5353\n"
		   "metrics-listen 9100\ndns-metrics-listen [::1]:9101\n");
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
			       "log-row-rate 100\n"
			       "log-row-burst 200\n"
			       "log-open-after 5\n"
			       "log-progress 60\n"
			       "doctor-on-start off\n"
			       "max-connections 4096\n"
			       "max-connections-per-client 256\n"
			       "max-body-bytes 0\n"
			       "head-timeout 10\n"
			       "connect-timeout 10\n"
			       "response-timeout 60\n"
			       "idle-timeout 300\n"
			       "token-min-interval 10\n"
			       "# nameserver: none given, /etc/resolv.conf is used\n"
			       "intercept on\n"
			       "refuse-page on\n"
			       "# metrics-listen: none given, no metrics served\n"
			       "dns-listen 127.0.0.1:53\n"
			       "# dns-upstream: none given, /etc/resolv.conf's nameservers, plain\n"
			       "dns-timeout 2\n"
			       "dns-min-ttl 60\n"
			       "dns-max-ttl 86400\n"
			       "dns-negative-ttl 300\n"
			       "dns-cache-entries 100000\n"
			       "dns-wildcard-budget 256 600\n"
			       "dns-log ./state/dns.log\n"
			       "# dns-metrics-listen: none given, no metrics served\n");
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
		cmocka_unit_test(test_mode),
		cmocka_unit_test(test_state_and_log),
		cmocka_unit_test(test_path_too_long),
		cmocka_unit_test(test_dns),
		cmocka_unit_test(test_numbers),
		cmocka_unit_test(test_number_errors),
		cmocka_unit_test(test_nameserver),
		cmocka_unit_test(test_nameserver_too_many),
		cmocka_unit_test(test_line_errors),
		cmocka_unit_test(test_crlf_and_no_final_newline),
		cmocka_unit_test(test_many_errors),
		cmocka_unit_test(test_null_errs),
		cmocka_unit_test(test_log_chain_and_user),
		cmocka_unit_test(test_metrics_listen),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_print_defaults),
		cmocka_unit_test(test_load),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
