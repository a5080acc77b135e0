/*
 * test_proxy_refuse.c: the bytes of a refusal (proxy/refuse.c): the whole
 * response refuse_write puts out, byte for byte; Proxy-Status's details as
 * an sf-string (quotes and backslashes escaped, anything not printable
 * ASCII a '?') while the body keeps the detail as it is; 407's challenge
 * and no one else's; the longest refusal still whole, its Content-Length
 * its body's; a buffer without room left as it was; the status texts; and
 * refusal ids (16 lower-case hex digits, never twice the same).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "proxy.h"

/* refuse_write's bytes onto an empty buffer (max IOBUF_MAX), NUL-terminated (caller frees). */
static char *written(const struct refusal *r)
{
	struct buf b;
	char *out;

	buf_init(&b, IOBUF_MAX);
	assert_int_equal(refuse_write(&b, r), 0);
	out = strndup(buf_head(&b), buf_len(&b));
	assert_non_null(out);
	buf_release(&b);
	return out;
}

static void test_exact(void **state)
{
	struct refusal r = { .status = 403, .reason = "not-granted",
			     .proxy_status = "http_request_denied",
			     .detail = "example.test is not granted", .id = "0123456789abcdef" };
	char *out = written(&r);

	assert_string_equal(out,
			    "HTTP/1.1 403 Forbidden\r\n"
			    "Proxy-Status: sluice; error=http_request_denied; details=\"not-granted "
			    "id=0123456789abcdef: example.test is not granted\"\r\n"
			    "Content-Type: text/plain; charset=utf-8\r\n"
			    "Content-Length: 36\r\n"
			    "Connection: close\r\n"
			    "\r\n"
			    "sluice: example.test is not granted\n");
	free(out);

	/* no id: the details are "REASON: DETAIL" */
	r.id[0] = '\0';
	r.status = 502;
	r.reason = "dns-failed";
	r.proxy_status = "dns_error";
	snprintf(r.detail, sizeof(r.detail), "x");
	out = written(&r);
	assert_string_equal(out,
			    "HTTP/1.1 502 Bad Gateway\r\n"
			    "Proxy-Status: sluice; error=dns_error; details=\"dns-failed: x\"\r\n"
			    "Content-Type: text/plain; charset=utf-8\r\n"
			    "Content-Length: 10\r\n"
			    "Connection: close\r\n"
			    "\r\n"
			    "sluice: x\n");
	free(out);
}

static void test_407_challenge(void **state)
{
	struct refusal r = { .status = 407, .reason = "build-token",
			     .proxy_status = "http_request_denied", .detail = "no token" };
	static const char ch[] = "Proxy-Authenticate: Basic realm=\"sluice-build\"\r\n";
	char *out = written(&r);

	/* the challenge right after the status line, once */
	assert_true(strncmp(out, "HTTP/1.1 407 Proxy Authentication Required\r\n", 44) == 0);
	assert_true(strncmp(out + 44, ch, sizeof(ch) - 1) == 0);
	assert_null(strstr(out + 45, "Proxy-Authenticate"));
	free(out);

	/* nobody else is challenged */
	static const int others[] = { 400, 403, 408, 413, 431, 502, 503, 504, 500 };
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
		r.status = others[i];
		out = written(&r);
		assert_null(strstr(out, "Proxy-Authenticate"));
		free(out);
	}
}

/* The Proxy-Status line of out, without its CRLF, NUL-terminated into line. */
static void status_line(const char *out, char *line, size_t size)
{
	const char *p = strstr(out, "\r\nProxy-Status: ");
	const char *e;

	assert_non_null(p);
	p += 2;
	e = strstr(p, "\r\n");
	assert_non_null(e);
	assert_true((size_t)(e - p) < size);
	memcpy(line, p, (size_t)(e - p));
	line[e - p] = '\0';
}

static void test_sf_string(void **state)
{
	struct refusal r = { .status = 400, .reason = "bad-request", .proxy_status = "http_protocol_error" };
	char line[REFUSE_STATUS_MAX + 32];
	char *out;

	snprintf(r.detail, sizeof(r.detail), "a \"quoted\" \\path\\ \t tab \x7f del \xc3\xa9 utf8\r\nX-Injected: 1");
	out = written(&r);
	status_line(out, line, sizeof(line));
	assert_string_equal(line, "Proxy-Status: sluice; error=http_protocol_error; details=\"bad-request: "
				  "a \\\"quoted\\\" \\\\path\\\\ ? tab ? del ?? utf8??X-Injected: 1\"");
	/* the body keeps the detail's bytes: it is text/plain, its length said */
	assert_non_null(strstr(out, "\r\n\r\nsluice: a \"quoted\" \\path\\ \t tab \x7f del \xc3\xa9 utf8\r\nX-Injected: 1\n"));
	/* no header was made of the detail */
	assert_int_equal(strstr(out, "\r\nX-Injected") > strstr(out, "\r\n\r\n"), 1);
	free(out);
}

/* Content-Length of out equals the bytes after its blank line. */
static void assert_framed(const char *out)
{
	const char *cl = strstr(out, "\r\nContent-Length: ");
	const char *body = strstr(out, "\r\n\r\n");

	assert_non_null(cl);
	assert_non_null(body);
	assert_int_equal(strtoul(cl + 18, NULL, 10), strlen(body + 4));
}

static void test_longest(void **state)
{
	struct refusal r = { .status = 431, .reason = "head-too-large-and-a-long-reason-code",
			     .proxy_status = "http_request_error", .id = "ffffffffffffffff" };
	char line[REFUSE_STATUS_MAX + 32];
	char *out;

	/* every byte of the detail doubles in the sf-string */
	memset(r.detail, '"', sizeof(r.detail) - 1);
	r.detail[sizeof(r.detail) - 1] = '\0';
	out = written(&r);
	assert_true(strncmp(out, "HTTP/1.1 431 Request Header Fields Too Large\r\n", 46) == 0);
	assert_framed(out);
	assert_int_equal(strlen(strstr(out, "\r\n\r\n") + 4), 8 + sizeof(r.detail) - 1 + 1);
	status_line(out, line, sizeof(line));
	/* whole: every quote escaped, the closing one there */
	assert_true(strlen(line) - strlen("Proxy-Status: ") <= REFUSE_STATUS_MAX - 1);
	const char *p = strstr(line, "details=\"head-too-large-and-a-long-reason-code id=ffffffffffffffff: ");
	assert_non_null(p);
	p += strlen("details=\"head-too-large-and-a-long-reason-code id=ffffffffffffffff: ");
	for (size_t i = 0; i < sizeof(r.detail) - 1; i++, p += 2) {
		assert_int_equal(p[0], '\\');
		assert_int_equal(p[1], '"');
	}
	assert_string_equal(p, "\"");
	free(out);

	/* a short detail and the longest reason: framed the same */
	snprintf(r.detail, sizeof(r.detail), "%s", "");
	out = written(&r);
	assert_framed(out);
	assert_non_null(strstr(out, "\r\n\r\nsluice: \n"));
	free(out);
}

static void test_no_room(void **state)
{
	struct refusal r = { .status = 403, .reason = "denied", .proxy_status = "http_request_denied",
			     .detail = "no" };
	struct buf b;
	size_t whole;

	buf_init(&b, IOBUF_MAX);
	assert_int_equal(refuse_write(&b, &r), 0);
	whole = buf_len(&b);
	buf_release(&b);
	/* one byte short: nothing written, -1 */
	buf_init(&b, whole - 1);
	assert_int_equal(buf_append(&b, "", 0), 0);
	assert_int_equal(refuse_write(&b, &r), -1);
	assert_int_equal(buf_len(&b), 0);
	buf_release(&b);
	/* exactly enough: whole */
	buf_init(&b, whole);
	assert_int_equal(refuse_write(&b, &r), 0);
	assert_int_equal(buf_len(&b), whole);
	buf_release(&b);
	/* after bytes already queued: appended, they stay first */
	buf_init(&b, IOBUF_MAX);
	assert_int_equal(buf_append(&b, "HTTP/1.1 100 Continue\r\n\r\n", 25), 0);
	assert_int_equal(refuse_write(&b, &r), 0);
	assert_int_equal(buf_len(&b), 25 + whole);
	assert_true(memcmp(buf_head(&b), "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 403 ", 38) == 0);
	buf_release(&b);
}

static void test_texts(void **state)
{
	struct refusal r = { .status = 403, .reason = "budget", .proxy_status = "http_request_denied",
			     .detail = "spent" };
	char ps[REFUSE_STATUS_MAX], body[REFUSE_BODY_MAX], small[8];

	assert_int_equal(refuse_texts(&r, ps, sizeof(ps), body, sizeof(body)), 14);
	assert_string_equal(ps, "sluice; error=http_request_denied; details=\"budget: spent\"");
	assert_string_equal(body, "sluice: spent\n");
	/* a body buffer too small: cut, its length what it holds */
	assert_int_equal(refuse_texts(&r, ps, sizeof(ps), small, sizeof(small)), 7);
	assert_string_equal(small, "sluice:");

	assert_string_equal(refuse_status_text(400), "Bad Request");
	assert_string_equal(refuse_status_text(403), "Forbidden");
	assert_string_equal(refuse_status_text(407), "Proxy Authentication Required");
	assert_string_equal(refuse_status_text(408), "Request Timeout");
	assert_string_equal(refuse_status_text(413), "Content Too Large");
	assert_string_equal(refuse_status_text(431), "Request Header Fields Too Large");
	assert_string_equal(refuse_status_text(502), "Bad Gateway");
	assert_string_equal(refuse_status_text(503), "Service Unavailable");
	assert_string_equal(refuse_status_text(504), "Gateway Timeout");
	assert_string_equal(refuse_status_text(500), "Error");
	assert_string_equal(refuse_status_text(200), "Error");
	assert_string_equal(refuse_status_text(-1), "Error");
}

static void test_ids(void **state)
{
	char seen[64][REFUSAL_ID_LEN + 1];

	for (size_t i = 0; i < 64; i++) {
		memset(seen[i], 'X', sizeof(seen[i]));
		assert_int_equal(refuse_id(seen[i]), 0);
		assert_int_equal(strlen(seen[i]), REFUSAL_ID_LEN);
		assert_int_equal(strspn(seen[i], "0123456789abcdef"), REFUSAL_ID_LEN);
		for (size_t j = 0; j < i; j++)
			assert_string_not_equal(seen[i], seen[j]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exact),     cmocka_unit_test(test_407_challenge),
		cmocka_unit_test(test_sf_string), cmocka_unit_test(test_longest),
		cmocka_unit_test(test_no_room),   cmocka_unit_test(test_texts),
		cmocka_unit_test(test_ids),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
