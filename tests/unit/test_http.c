/*
 * test_http.c: unit tests for lib/http.c.
 *
 * Every input is parsed from a read-only copy that ends exactly at a
 * PROT_NONE guard page, so a parser that reads one byte too far crashes.
 * Accepted heads are also fed as every proper prefix (each must say "need
 * more"); refused heads must never be accepted on a prefix either.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "http.h"

/* --- guard-page copies ---------------------------------------------------- */

#define MAX_MAPS 64

struct guard_map {
	char *base;
	size_t len;
};

static struct guard_map maps[MAX_MAPS];
static size_t nmaps;

/* Unmap every copy handed out so far. */
static void guard_release(void)
{
	while (nmaps > 0) {
		nmaps--;
		munmap(maps[nmaps].base, maps[nmaps].len);
		maps[nmaps].base = NULL;
	}
}

/*
 * A read-only copy of src[0..len) whose last byte sits right before a
 * PROT_NONE page. Valid until guard_release().
 */
static const char *guarded(const void *src, size_t len)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	size_t data_pages = len == 0 ? 1 : (len + pg - 1) / pg;
	size_t total = (data_pages + 1) * pg;
	char *base, *dst;

	if (nmaps == MAX_MAPS)
		fail_msg("too many guarded copies");
	base = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(base != MAP_FAILED);
	assert_int_equal(mprotect(base + data_pages * pg, pg, PROT_NONE), 0);
	dst = base + data_pages * pg - len;
	if (len > 0)
		memcpy(dst, src, len);
	assert_int_equal(mprotect(base, data_pages * pg, PROT_READ), 0);
	maps[nmaps].base = base;
	maps[nmaps].len = total;
	nmaps++;
	return dst;
}

static int teardown(void **state)
{
	guard_release();
	return 0;
}

/* --- helpers -------------------------------------------------------------- */

#define NHDR 32
#define REQ_CAP (32 * 1024)  /* the heads' ceilings, as sluice-proxy's */
#define RESP_CAP (64 * 1024)

static struct http_header hdrs[NHDR];

static ssize_t req_n(const char *s, size_t len, struct http_request *r, size_t max)
{
	return http_parse_request(guarded(s, len), len, REQ_CAP, r, hdrs, max);
}

static ssize_t req(const char *s, struct http_request *r)
{
	return req_n(s, strlen(s), r, NHDR);
}

static ssize_t resp_n(const char *s, size_t len, enum http_method m, struct http_response *r)
{
	return http_parse_response(guarded(s, len), len, RESP_CAP, m, r, hdrs, NHDR);
}

static ssize_t resp(const char *s, enum http_method m, struct http_response *r)
{
	return resp_n(s, strlen(s), m, r);
}

/* Every proper prefix of s must be "need more". */
static void all_prefixes_need_more(const char *s, size_t len, bool response)
{
	struct http_request r;
	struct http_response p;
	ssize_t n;
	size_t i;

	for (i = 0; i < len; i++) {
		if (response)
			n = resp_n(s, i, HTTP_GET, &p);
		else
			n = req_n(s, i, &r, NHDR);
		if (n != -2)
			fail_msg("prefix of %zu bytes returned %zd", i, n);
		guard_release();
	}
}

/* s is one complete head: accepted whole, -2 on every prefix. */
static void accept_req(const char *s, struct http_request *r)
{
	size_t len = strlen(s);

	all_prefixes_need_more(s, len, false);
	assert_int_equal(req(s, r), (ssize_t)len);
	assert_int_equal(r->error, HTTP_OK);
}

static void accept_resp(const char *s, enum http_method m, struct http_response *r)
{
	size_t len = strlen(s);

	all_prefixes_need_more(s, len, true);
	assert_int_equal(resp(s, m, r), (ssize_t)len);
	assert_int_equal(r->error, HTTP_OK);
}

/* Refused whole with err; no prefix is ever accepted. */
static void refuse_req(const char *s, size_t len, enum http_error err)
{
	struct http_request r;
	size_t i;

	for (i = 0; i < len; i++) {
		assert_true(req_n(s, i, &r, NHDR) < 0);
		guard_release();
	}
	assert_int_equal(req_n(s, len, &r, NHDR), -1);
	assert_int_equal(r.error, err);
}

static void refuse_resp(const char *s, size_t len, enum http_error err)
{
	struct http_response r;
	size_t i;

	for (i = 0; i < len; i++) {
		assert_true(resp_n(s, i, HTTP_GET, &r) < 0);
		guard_release();
	}
	assert_int_equal(resp_n(s, len, HTTP_GET, &r), -1);
	assert_int_equal(r.error, err);
}

static void assert_span(const char *p, size_t len, const char *want)
{
	assert_non_null(p);
	assert_int_equal(len, strlen(want));
	assert_memory_equal(p, want, len);
}

#define REFUSE(name, input, err)                                 \
	static void name(void **state)                           \
	{                                                        \
		refuse_req(input, sizeof(input) - 1, err);       \
	}

#define REFUSE_RESP(name, input, err)                            \
	static void name(void **state)                           \
	{                                                        \
		refuse_resp(input, sizeof(input) - 1, err);      \
	}

/* --- requests: accepted forms --------------------------------------------- */

static void test_absolute_basic(void **state)
{
	struct http_request r;

	accept_req("GET http://example.com HTTP/1.1\r\nHost: example.com\r\n\r\n", &r);
	assert_int_equal(r.method, HTTP_GET);
	assert_span(r.method_str, r.method_len, "GET");
	assert_span(r.target, r.target_len, "http://example.com");
	assert_int_equal(r.form, HTTP_FORM_ABSOLUTE);
	assert_int_equal(r.minor, 1);
	assert_span(r.host, r.host_len, "example.com");
	assert_int_equal(r.port, 80);
	assert_false(r.has_port);
	assert_span(r.path, r.path_len, "/");
	assert_int_equal(r.nheaders, 1);
	assert_int_equal(r.host_header, 0);
	assert_ptr_equal(r.headers, hdrs);
	assert_span(hdrs[0].name, hdrs[0].name_len, "Host");
	assert_span(hdrs[0].value, hdrs[0].value_len, "example.com");
	assert_int_equal(r.body, HTTP_BODY_NONE);
	assert_false(r.close);
	assert_false(r.expect_continue);
	assert_false(r.upgrade);
}

static void test_absolute_port_path_query(void **state)
{
	struct http_request r;

	accept_req("GET http://example.com:8080/a/b?x=1&y=%41 HTTP/1.1\r\n"
		   "Host: example.com:8080\r\n\r\n", &r);
	assert_span(r.host, r.host_len, "example.com");
	assert_int_equal(r.port, 8080);
	assert_true(r.has_port);
	assert_span(r.path, r.path_len, "/a/b?x=1&y=%41");
}

static void test_absolute_scheme_case(void **state)
{
	struct http_request r;

	accept_req("GET HTTP://Example.COM:65535/ HTTP/1.1\r\nHost: x\r\n\r\n", &r);
	assert_span(r.host, r.host_len, "Example.COM");
	assert_int_equal(r.port, 65535);
	assert_span(r.path, r.path_len, "/");
}

static void test_absolute_ipv6(void **state)
{
	struct http_request r;

	accept_req("GET http://[2001:db8::1]:8080/p HTTP/1.1\r\nHost: [2001:db8::1]:8080\r\n\r\n", &r);
	assert_span(r.host, r.host_len, "2001:db8::1");
	assert_int_equal(r.port, 8080);
	assert_span(r.path, r.path_len, "/p");
	guard_release();
	accept_req("GET http://[::ffff:1.2.3.4] HTTP/1.1\r\nHost: x\r\n\r\n", &r);
	assert_span(r.host, r.host_len, "::ffff:1.2.3.4");
	assert_int_equal(r.port, 80);
	assert_false(r.has_port);
}

static void test_connect(void **state)
{
	struct http_request r;

	/* no Host needed for CONNECT */
	accept_req("CONNECT example.com:443 HTTP/1.1\r\n\r\n", &r);
	assert_int_equal(r.method, HTTP_CONNECT);
	assert_int_equal(r.form, HTTP_FORM_AUTHORITY);
	assert_span(r.host, r.host_len, "example.com");
	assert_int_equal(r.port, 443);
	assert_true(r.has_port);
	assert_null(r.path);
	assert_int_equal(r.host_header, -1);
	assert_int_equal(r.body, HTTP_BODY_NONE);
}

static void test_connect_ipv6_with_host(void **state)
{
	struct http_request r;

	accept_req("CONNECT [::1]:8443 HTTP/1.1\r\nHost: [::1]:8443\r\n"
		   "Proxy-Authorization: Basic eA==\r\n\r\n", &r);
	assert_span(r.host, r.host_len, "::1");
	assert_int_equal(r.port, 8443);
	assert_int_equal(r.host_header, 0);
	assert_int_equal(r.nheaders, 2);
}

static void test_connect_content_length_zero(void **state)
{
	struct http_request r;

	accept_req("CONNECT a:1 HTTP/1.1\r\nContent-Length: 0\r\n\r\n", &r);
	assert_int_equal(r.port, 1);
	assert_int_not_equal(r.body, HTTP_BODY_CHUNKED);
	assert_int_equal(r.content_length, 0);
}

static void test_origin_form(void **state)
{
	struct http_request r;

	accept_req("GET /index.html?q=1 HTTP/1.1\r\nHost: example.com\r\n\r\n", &r);
	assert_int_equal(r.form, HTTP_FORM_ORIGIN);
	assert_span(r.path, r.path_len, "/index.html?q=1");
	assert_null(r.host);
	assert_false(r.has_port);
}

static void test_asterisk(void **state)
{
	struct http_request r;

	accept_req("OPTIONS * HTTP/1.1\r\nHost: example.com\r\n\r\n", &r);
	assert_int_equal(r.method, HTTP_OPTIONS);
	assert_int_equal(r.form, HTTP_FORM_ASTERISK);
}

static void test_http10(void **state)
{
	struct http_request r;

	accept_req("GET http://a/ HTTP/1.0\r\n\r\n", &r);
	assert_int_equal(r.minor, 0);
	assert_int_equal(r.host_header, -1);
	assert_true(r.close);
	guard_release();
	accept_req("GET http://a/ HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", &r);
	assert_false(r.close);
}

static void test_connection_close(void **state)
{
	struct http_request r;

	accept_req("GET http://a/ HTTP/1.1\r\nHost: a\r\nConnection: keep-alive , CLOSE\r\n\r\n", &r);
	assert_true(r.close);
	guard_release();
	accept_req("GET http://a/ HTTP/1.1\r\nHost: a\r\nConnection: closed, xclose\r\n\r\n", &r);
	assert_false(r.close);
	guard_release();
	accept_req("GET http://a/ HTTP/1.0\r\nConnection: keep-alive\r\nConnection: close\r\n\r\n", &r);
	assert_true(r.close);
}

static void test_content_length(void **state)
{
	static const char s[] = "POST http://a/ HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello"
				"GET http://a/ HTTP/1.1\r\n";
	struct http_request r;

	/* the body and the next request are not part of the head */
	assert_int_equal(req(s, &r), (ssize_t)(strstr(s, "hello") - s));
	assert_int_equal(r.method, HTTP_POST);
	assert_int_equal(r.body, HTTP_BODY_LENGTH);
	assert_int_equal(r.content_length, 5);
}

static void test_content_length_zero_and_max(void **state)
{
	struct http_request r;

	accept_req("GET http://a/ HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n", &r);
	assert_int_equal(r.body, HTTP_BODY_LENGTH);
	assert_int_equal(r.content_length, 0);
	guard_release();
	accept_req("PUT http://a/ HTTP/1.1\r\nHost: a\r\nContent-Length: 4611686018427387904\r\n\r\n", &r);
	assert_int_equal(r.content_length, UINT64_C(1) << 62);
	guard_release();
	accept_req("PUT http://a/ HTTP/1.1\r\nHost: a\r\nContent-Length: 007\r\n\r\n", &r);
	assert_int_equal(r.content_length, 7);
}

static void test_chunked_request(void **state)
{
	struct http_request r;

	accept_req("POST http://a/ HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: Chunked\r\n\r\n", &r);
	assert_int_equal(r.body, HTTP_BODY_CHUNKED);
}

static void test_expect_continue(void **state)
{
	struct http_request r;

	accept_req("PUT http://a/ HTTP/1.1\r\nHost: a\r\nExpect: 100-Continue\r\n"
		   "Content-Length: 3\r\n\r\n", &r);
	assert_true(r.expect_continue);
	guard_release();
	/* ignored in HTTP/1.0 */
	accept_req("PUT http://a/ HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n", &r);
	assert_false(r.expect_continue);
}

static void test_upgrade(void **state)
{
	struct http_request r;

	accept_req("GET http://a/ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\n"
		   "Upgrade: websocket\r\n\r\n", &r);
	assert_true(r.upgrade);
	assert_false(r.close);
}

static void test_value_trim_and_bytes(void **state)
{
	struct http_request r;

	accept_req("GET http://a/ HTTP/1.1\r\nHost: \t a \t\r\nX-Empty:\r\nX-Blank:   \r\n"
		   "X-Obs: caf\xc3\xa9 \x80\xff\r\nX-Inner: a \t b\r\n\r\n", &r);
	assert_int_equal(r.nheaders, 5);
	assert_span(hdrs[0].value, hdrs[0].value_len, "a");
	assert_int_equal(hdrs[1].value_len, 0);
	assert_int_equal(hdrs[2].value_len, 0);
	assert_span(hdrs[3].value, hdrs[3].value_len, "caf\xc3\xa9 \x80\xff");
	assert_span(hdrs[4].value, hdrs[4].value_len, "a \t b");
}

static void test_header_name_tchars(void **state)
{
	struct http_request r;

	accept_req("GET http://a/ HTTP/1.1\r\nHost: a\r\nX-a!#$%&'*+-.^_`|~09: v\r\n\r\n", &r);
	assert_span(hdrs[1].name, hdrs[1].name_len, "X-a!#$%&'*+-.^_`|~09");
}

static void test_all_methods(void **state)
{
	static const struct {
		const char *name;
		enum http_method m;
	} t[] = {
		{ "GET", HTTP_GET },	     { "HEAD", HTTP_HEAD },	{ "POST", HTTP_POST },
		{ "PUT", HTTP_PUT },	     { "DELETE", HTTP_DELETE }, { "OPTIONS", HTTP_OPTIONS },
		{ "TRACE", HTTP_TRACE },     { "PATCH", HTTP_PATCH },
	};
	struct http_request r;
	char line[128];
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		snprintf(line, sizeof(line), "%s http://a/ HTTP/1.1\r\nHost: a\r\n\r\n", t[i].name);
		assert_int_equal(req(line, &r), (ssize_t)strlen(line));
		assert_int_equal(r.method, t[i].m);
		assert_string_equal(http_method_name(t[i].m), t[i].name);
		guard_release();
	}
	assert_string_equal(http_method_name(HTTP_CONNECT), "CONNECT");
	assert_non_null(http_method_name(HTTP_UNKNOWN));
	assert_non_null(http_method_name((enum http_method)1000));
}

static void test_empty_and_partial(void **state)
{
	struct http_request r;
	struct http_response p;

	assert_int_equal(req_n("", 0, &r, NHDR), -2);
	assert_int_equal(r.error, HTTP_OK);
	assert_int_equal(resp_n("", 0, HTTP_GET, &p), -2);
	assert_int_equal(req("GET http://a/ HTTP/1.1\r\nHost: a\r\n\r", &r), -2);
}

static void test_max_headers(void **state)
{
	static const char s[] = "GET http://a/ HTTP/1.1\r\nHost: a\r\nA: 1\r\nB: 2\r\n\r\n";
	struct http_request r;

	assert_int_equal(req_n(s, sizeof(s) - 1, &r, 3), (ssize_t)sizeof(s) - 1);
	assert_int_equal(r.nheaders, 3);
	assert_int_equal(req_n(s, sizeof(s) - 1, &r, 2), -1);
	assert_int_equal(r.error, HTTP_E_TOO_MANY);
	/* refused as soon as the extra line is complete */
	assert_int_equal(req_n(s, sizeof(s) - 3, &r, 2), -1);
	assert_int_equal(r.error, HTTP_E_TOO_MANY);
	assert_int_equal(req_n(s, sizeof(s) - 1, &r, 0), -1);
	assert_int_equal(r.error, HTTP_E_TOO_MANY);
}

/* A request whose X header line has exactly value_len bytes of value. */
/*
 * "GET http://a/ HTTP/1.1\r\nHost: a\r\nX: vvv...\r\n\r\n" of total bytes
 * (complete) or total bytes without the final CRLF CRLF.
 */
static size_t long_head(char *buf, size_t size, size_t total, bool complete)
{
	size_t n = (size_t)snprintf(buf, size, "GET http://a/ HTTP/1.1\r\nHost: a\r\nX: ");

	assert_true(total >= n + 5 && total <= size);
	memset(buf + n, 'v', total - n - 4);
	if (complete)
		memcpy(buf + total - 4, "\r\n\r\n", 4);
	return complete ? total : total - 4;
}

/* A header line may be as long as the head's ceiling allows, no longer. */
static void test_line_limit(void **state)
{
	static char buf[REQ_CAP + 128];
	struct http_request r;
	size_t n;

	/* a 12 KiB header line (past the old 8 KiB line limit) in a head under its ceiling */
	n = long_head(buf, sizeof(buf), 12 * 1024 + 64, true);
	assert_int_equal(req_n(buf, n, &r, NHDR), (ssize_t)n);
	assert_int_equal(r.nheaders, 2);
	assert_int_equal(r.headers[1].value_len, n - 36 - 4);
	guard_release();
	/* the whole head exactly at its ceiling; a byte more is too large */
	n = long_head(buf, sizeof(buf), REQ_CAP, true);
	assert_int_equal(req_n(buf, n, &r, NHDR), (ssize_t)n);
	n = long_head(buf, sizeof(buf), REQ_CAP + 1, true);
	assert_int_equal(req_n(buf, n, &r, NHDR), -1);
	assert_int_equal(r.error, HTTP_E_TOO_LARGE);
	guard_release();

	/* incomplete: short of the ceiling is "need more", at it "too large" */
	n = long_head(buf, sizeof(buf), REQ_CAP, false);
	assert_int_equal(req_n(buf, n, &r, NHDR), -2);
	memcpy(buf + n, "\r\n\r", 3);
	assert_int_equal(req_n(buf, n + 3, &r, NHDR), -2);
	buf[n + 3] = 'v';
	assert_int_equal(req_n(buf, n + 4, &r, NHDR), -1);
	assert_int_equal(r.error, HTTP_E_TOO_LARGE);
	guard_release();
	n = long_head(buf, sizeof(buf), REQ_CAP + 100, false);
	assert_int_equal(req_n(buf, n, &r, NHDR), -1);
	assert_int_equal(r.error, HTTP_E_TOO_LARGE);
	guard_release();
	/* a smaller ceiling: the same 12 KiB line is too large, complete or not */
	n = long_head(buf, sizeof(buf), 12 * 1024 + 64, true);
	assert_int_equal(http_parse_request(guarded(buf, n), n, 8192, &r, hdrs, NHDR), -1);
	assert_int_equal(r.error, HTTP_E_TOO_LARGE);
}

static void test_request_line_limit(void **state)
{
	static char buf[REQ_CAP + 128];
	struct http_request r;
	size_t n;

	/* a target of 20 KiB: one long request line */
	memcpy(buf, "GET http://a/", 13);
	memset(buf + 13, 'p', REQ_CAP);
	n = 20 * 1024;
	memcpy(buf + n, " HTTP/1.1\r\nHost: a\r\n\r\n", 22);
	assert_int_equal(req_n(buf, n + 22, &r, NHDR), (ssize_t)n + 22);
	assert_int_equal(r.path_len, n - 12);
	guard_release();
	/* a request line that does not end within the ceiling */
	memset(buf + n, 'p', 22);
	assert_int_equal(req_n(buf, REQ_CAP, &r, NHDR), -1);
	assert_int_equal(r.error, HTTP_E_TOO_LARGE);
	n = REQ_CAP - 22;
	memcpy(buf + n, " HTTP/1.1\r\nHost: a\r\n\r\n", 22);
	assert_int_equal(req_n(buf, n + 22, &r, NHDR), (ssize_t)n + 22);
	buf[n++] = 'p'; /* one byte more of target: the head ends a byte past the ceiling */
	memcpy(buf + n, " HTTP/1.1\r\nHost: a\r\n\r\n", 22);
	assert_int_equal(req_n(buf, n + 22, &r, NHDR), -1);
	assert_int_equal(r.error, HTTP_E_TOO_LARGE);
}

/* A response's Set-Cookie of 60 KiB passes under a 64 KiB ceiling; past it is too large. */
static void test_response_line_limit(void **state)
{
	static char buf[RESP_CAP + 128];
	static const char st[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nSet-Cookie: ";
	struct http_response r;
	size_t n = sizeof(st) - 1;

	memcpy(buf, st, n);
	memset(buf + n, 'c', 60 * 1024);
	n += 60 * 1024;
	memcpy(buf + n, "\r\n\r\n", 4);
	assert_int_equal(resp_n(buf, n + 4, HTTP_GET, &r), (ssize_t)n + 4);
	assert_int_equal(r.nheaders, 2);
	assert_int_equal(r.headers[1].value_len, 60 * 1024);
	guard_release();
	n = sizeof(st) - 1;
	memset(buf + n, 'c', RESP_CAP);
	memcpy(buf + RESP_CAP - 3, "\r\n\r\n", 4);
	assert_int_equal(resp_n(buf, RESP_CAP + 1, HTTP_GET, &r), -1);
	assert_int_equal(r.error, HTTP_E_TOO_LARGE);
	assert_int_equal(resp_n(buf, RESP_CAP - 3, HTTP_GET, &r), -2);
}

static void test_headers_with_nul(void **state)
{
	static const char s[] = "GET http://a/ HTTP/1.1\r\nHost: a\r\nX: a\0b\r\n\r\n";

	refuse_req(s, sizeof(s) - 1, HTTP_E_MALFORMED);
}

/* --- requests: refused ---------------------------------------------------- */

REFUSE(test_method_lower, "get http://a/ HTTP/1.1\r\nHost: a\r\n\r\n", HTTP_E_METHOD)
REFUSE(test_method_mixed, "Get http://a/ HTTP/1.1\r\nHost: a\r\n\r\n", HTTP_E_METHOD)
REFUSE(test_method_unknown, "PROPFIND http://a/ HTTP/1.1\r\nHost: a\r\n\r\n", HTTP_E_METHOD)
REFUSE(test_method_prefix, "GETS http://a/ HTTP/1.1\r\nHost: a\r\n\r\n", HTTP_E_METHOD)
REFUSE(test_version_09, "GET /\r\n\r\n", HTTP_E_VERSION)
REFUSE(test_version_2, "GET http://a/ HTTP/2.0\r\nHost: a\r\n\r\n", HTTP_E_VERSION)
REFUSE(test_version_12, "GET http://a/ HTTP/1.2\r\nHost: a\r\n\r\n", HTTP_E_VERSION)
REFUSE(test_version_lower, "GET http://a/ http/1.1\r\nHost: a\r\n\r\n", HTTP_E_VERSION)
REFUSE(test_version_junk, "GET http://a/ HTTP/1.1x\r\nHost: a\r\n\r\n", HTTP_E_VERSION)
REFUSE(test_version_short, "GET http://a/ HTTP/1\r\nHost: a\r\n\r\n", HTTP_E_VERSION)
REFUSE(test_double_space_method, "GET  http://a/ HTTP/1.1\r\nHost: a\r\n\r\n", HTTP_E_MALFORMED)
REFUSE(test_double_space_version, "GET http://a/  HTTP/1.1\r\nHost: a\r\n\r\n", HTTP_E_MALFORMED)
REFUSE(test_trailing_space, "GET http://a/ HTTP/1.1 \r\nHost: a\r\n\r\n", HTTP_E_MALFORMED)
REFUSE(test_tab_separator, "GET\thttp://a/ HTTP/1.1\r\nHost: a\r\n\r\n", HTTP_E_MALFORMED)
REFUSE(test_leading_space, " GET http://a/ HTTP/1.1\r\nHost: a\r\n\r\n", HTTP_E_MALFORMED)
REFUSE(test_space_in_target, "GET http://a/b c HTTP/1.1\r\nHost: a\r\n\r\n", HTTP_E_MALFORMED)
REFUSE(test_target_del, "GET http://a/\x7f HTTP/1.1\r\nHost: a\r\n\r\n", HTTP_E_MALFORMED)
REFUSE(test_target_high, "GET http://a/\xc3\xa9 HTTP/1.1\r\nHost: a\r\n\r\n", HTTP_E_MALFORMED)
REFUSE(test_target_ctl, "GET http://a/\x01 HTTP/1.1\r\nHost: a\r\n\r\n", HTTP_E_MALFORMED)
REFUSE(test_https_scheme, "GET https://a/ HTTP/1.1\r\nHost: a\r\n\r\n", HTTP_E_MALFORMED)
REFUSE(test_other_scheme, "GET ftp://a/ HTTP/1.1\r\nHost: a\r\n\r\n", HTTP_E_MALFORMED)
REFUSE(test_scheme_no_slashes, "GET http:a/ HTTP/1.1\r\nHost: a\r\n\r\n", HTTP_E_MALFORMED)
REFUSE(test_userinfo, "GET http://user@a/ HTTP/1.1\r\nHost: a\r\n\r\n", HTTP_E_USERINFO)
REFUSE(test_userinfo_pw, "GET http://u:pw@a:80/ HTTP/1.1\r\nHost: a\r\n\r\n", HTTP_E_USERINFO)
REFUSE(test_userinfo_backslash, "GET http://evil\\@good/ HTTP/1.1\r\nHost: good\r\n\r\n",
       HTTP_E_USERINFO)
REFUSE(test_userinfo_connect, "CONNECT u@a:443 HTTP/1.1\r\n\r\n", HTTP_E_USERINFO)
REFUSE(test_zone_pct25, "GET http://[fe80::1%25eth0]/ HTTP/1.1\r\nHost: a\r\n\r\n", HTTP_E_ZONE_ID)
REFUSE(test_zone_pct, "GET http://[fe80::1%eth0]:80/ HTTP/1.1\r\nHost: a\r\n\r\n", HTTP_E_ZONE_ID)
REFUSE(test_zone_connect, "CONNECT [fe80::1%25lo]:443 HTTP/1.1\r\n\r\n", HTTP_E_ZONE_ID)
REFUSE(test_v6_unclosed, "GET http://[::1/ HTTP/1.1\r\nHost: a\r\n\r\n", HTTP_E_MALFORMED)
REFUSE(test_v6_empty, "GET http://[]/ HTTP/1.1\r\nHost: a\r\n\r\n", HTTP_E_MALFORMED)
REFUSE(test_v6_future, "GET http://[v1.x]/ HTTP/1.1\r\nHost: a\r\n\r\n", HTTP_E_MALFORMED)
REFUSE(test_v6_no_colon, "GET http://[1.2.3.4]/ HTTP/1.1\r\nHost: a\r\n\r\n", HTTP_E_MALFORMED)
REFUSE(test_v6_junk_after, "GET http://[::1]x/ HTTP/1.1\r\nHost: a\r\n\r\n", HTTP_E_MALFORMED)
REFUSE(test_port_empty, "GET http://a:/ HTTP/1.1\r\nHost: a\r\n\r\n", HTTP_E_MALFORMED)
REFUSE(test_port_zero, "GET http://a:0/ HTTP/1.1\r\nHost: a\r\n\r\n", HTTP_E_MALFORMED)
REFUSE(test_port_big, "GET http://a:65536/ HTTP/1.1\r\nHost: a\r\n\r\n", HTTP_E_MALFORMED)
REFUSE(test_port_long, "GET http://a:000080/ HTTP/1.1\r\nHost: a\r\n\r\n", HTTP_E_MALFORMED)
REFUSE(test_port_leading_zero, "GET http://a:080/ HTTP/1.1\r\nHost: a\r\n\r\n", HTTP_E_MALFORMED)
REFUSE(test_port_alpha, "GET http://a:8o/ HTTP/1.1\r\nHost: a\r\n\r\n", HTTP_E_MALFORMED)
REFUSE(test_port_twice, "GET http://a:80:80/ HTTP/1.1\r\nHost: a\r\n\r\n", HTTP_E_MALFORMED)
REFUSE(test_fragment, "GET http://a/p#frag HTTP/1.1\r\nHost: a\r\n\r\n", HTTP_E_MALFORMED)
REFUSE(test_fragment_origin, "GET /p#f HTTP/1.1\r\nHost: a\r\n\r\n", HTTP_E_MALFORMED)
REFUSE(test_query_without_path, "GET http://a?q HTTP/1.1\r\nHost: a\r\n\r\n", HTTP_E_MALFORMED)
REFUSE(test_empty_host, "GET http:///p HTTP/1.1\r\nHost: a\r\n\r\n", HTTP_E_MALFORMED)
REFUSE(test_empty_host_port, "GET http://:80/ HTTP/1.1\r\nHost: a\r\n\r\n", HTTP_E_MALFORMED)
REFUSE(test_host_backslash, "GET http://a\\b/ HTTP/1.1\r\nHost: a\r\n\r\n", HTTP_E_MALFORMED)
REFUSE(test_host_pct, "GET http://a%2eb/ HTTP/1.1\r\nHost: a\r\n\r\n", HTTP_E_MALFORMED)
REFUSE(test_authority_for_get, "GET a:80 HTTP/1.1\r\nHost: a\r\n\r\n", HTTP_E_MALFORMED)
REFUSE(test_connect_no_port, "CONNECT a HTTP/1.1\r\n\r\n", HTTP_E_MALFORMED)
REFUSE(test_connect_empty_port, "CONNECT a: HTTP/1.1\r\n\r\n", HTTP_E_MALFORMED)
REFUSE(test_connect_origin, "CONNECT /a HTTP/1.1\r\nHost: a\r\n\r\n", HTTP_E_MALFORMED)
REFUSE(test_connect_absolute, "CONNECT http://a:443/ HTTP/1.1\r\n\r\n", HTTP_E_MALFORMED)
REFUSE(test_connect_asterisk, "CONNECT * HTTP/1.1\r\n\r\n", HTTP_E_MALFORMED)
REFUSE(test_asterisk_get, "GET * HTTP/1.1\r\nHost: a\r\n\r\n", HTTP_E_MALFORMED)
REFUSE(test_space_before_colon, "GET http://a/ HTTP/1.1\r\nHost : a\r\n\r\n", HTTP_E_MALFORMED)
REFUSE(test_tab_before_colon, "GET http://a/ HTTP/1.1\r\nHost: a\r\nContent-Length\t: 1\r\n\r\n",
       HTTP_E_MALFORMED)
REFUSE(test_empty_name, "GET http://a/ HTTP/1.1\r\nHost: a\r\n: v\r\n\r\n", HTTP_E_MALFORMED)
REFUSE(test_no_colon, "GET http://a/ HTTP/1.1\r\nHost: a\r\nJunk\r\n\r\n", HTTP_E_MALFORMED)
REFUSE(test_bad_name_char, "GET http://a/ HTTP/1.1\r\nHost: a\r\nX(y): v\r\n\r\n", HTTP_E_MALFORMED)
REFUSE(test_obs_fold, "GET http://a/ HTTP/1.1\r\nHost: a\r\nX: a\r\n b\r\n\r\n", HTTP_E_MALFORMED)
REFUSE(test_obs_fold_tab, "GET http://a/ HTTP/1.1\r\nHost: a\r\nX: a\r\n\tb\r\n\r\n", HTTP_E_MALFORMED)
REFUSE(test_space_first_header, "GET http://a/ HTTP/1.1\r\n Host: a\r\n\r\n", HTTP_E_MALFORMED)
REFUSE(test_bare_lf_request_line, "GET http://a/ HTTP/1.1\nHost: a\r\n\r\n", HTTP_E_MALFORMED)
REFUSE(test_bare_lf_header, "GET http://a/ HTTP/1.1\r\nHost: a\nX: b\r\n\r\n", HTTP_E_MALFORMED)
REFUSE(test_bare_lf_end, "GET http://a/ HTTP/1.1\r\nHost: a\r\n\n", HTTP_E_MALFORMED)
REFUSE(test_bare_cr_value, "GET http://a/ HTTP/1.1\r\nHost: a\r\nX: a\rb\r\n\r\n", HTTP_E_MALFORMED)
REFUSE(test_bare_cr_end, "GET http://a/ HTTP/1.1\r\nHost: a\r\n\r\r\n", HTTP_E_MALFORMED)
REFUSE(test_ctl_value, "GET http://a/ HTTP/1.1\r\nHost: a\r\nX: a\x01\r\n\r\n", HTTP_E_MALFORMED)
REFUSE(test_del_value, "GET http://a/ HTTP/1.1\r\nHost: a\r\nX: a\x7f\r\n\r\n", HTTP_E_MALFORMED)
REFUSE(test_leading_crlf, "\r\nGET http://a/ HTTP/1.1\r\nHost: a\r\n\r\n", HTTP_E_MALFORMED)
REFUSE(test_no_host, "GET http://a/ HTTP/1.1\r\n\r\n", HTTP_E_MALFORMED)
REFUSE(test_no_host_origin, "GET / HTTP/1.1\r\nX: y\r\n\r\n", HTTP_E_MALFORMED)
REFUSE(test_two_hosts, "GET http://a/ HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n", HTTP_E_MALFORMED)
REFUSE(test_two_hosts_same, "GET http://a/ HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", HTTP_E_MALFORMED)
REFUSE(test_empty_host_header, "GET http://a/ HTTP/1.1\r\nHost:  \r\n\r\n", HTTP_E_MALFORMED)
REFUSE(test_expect_other, "PUT http://a/ HTTP/1.1\r\nHost: a\r\nExpect: 200-ok\r\n\r\n",
       HTTP_E_MALFORMED)
REFUSE(test_expect_list, "PUT http://a/ HTTP/1.1\r\nHost: a\r\nExpect: 100-continue, x\r\n\r\n",
       HTTP_E_MALFORMED)
REFUSE(test_cl_te, "POST http://a/ HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n"
       "Transfer-Encoding: chunked\r\n\r\n", HTTP_E_FRAMING)
REFUSE(test_te_cl, "POST http://a/ HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
       "Content-Length: 5\r\n\r\n", HTTP_E_FRAMING)
REFUSE(test_cl_twice_same, "POST http://a/ HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n"
       "Content-Length: 5\r\n\r\n", HTTP_E_FRAMING)
REFUSE(test_cl_twice_diff, "POST http://a/ HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n"
       "content-length: 6\r\n\r\n", HTTP_E_FRAMING)
REFUSE(test_cl_list, "POST http://a/ HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 5\r\n\r\n",
       HTTP_E_FRAMING)
REFUSE(test_cl_plus, "POST http://a/ HTTP/1.1\r\nHost: a\r\nContent-Length: +5\r\n\r\n",
       HTTP_E_FRAMING)
REFUSE(test_cl_minus, "POST http://a/ HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n",
       HTTP_E_FRAMING)
REFUSE(test_cl_empty, "POST http://a/ HTTP/1.1\r\nHost: a\r\nContent-Length: \r\n\r\n",
       HTTP_E_FRAMING)
REFUSE(test_cl_hex, "POST http://a/ HTTP/1.1\r\nHost: a\r\nContent-Length: 0x10\r\n\r\n",
       HTTP_E_FRAMING)
REFUSE(test_cl_inner_space, "POST http://a/ HTTP/1.1\r\nHost: a\r\nContent-Length: 1 2\r\n\r\n",
       HTTP_E_FRAMING)
REFUSE(test_cl_too_big, "POST http://a/ HTTP/1.1\r\nHost: a\r\n"
       "Content-Length: 4611686018427387905\r\n\r\n", HTTP_E_FRAMING)
REFUSE(test_cl_overflow, "POST http://a/ HTTP/1.1\r\nHost: a\r\n"
       "Content-Length: 99999999999999999999999999\r\n\r\n", HTTP_E_FRAMING)
REFUSE(test_te_twice, "POST http://a/ HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
       "Transfer-Encoding: chunked\r\n\r\n", HTTP_E_FRAMING)
REFUSE(test_te_gzip_chunked, "POST http://a/ HTTP/1.1\r\nHost: a\r\n"
       "Transfer-Encoding: gzip, chunked\r\n\r\n", HTTP_E_FRAMING)
REFUSE(test_te_chunked_gzip, "POST http://a/ HTTP/1.1\r\nHost: a\r\n"
       "Transfer-Encoding: chunked, gzip\r\n\r\n", HTTP_E_FRAMING)
REFUSE(test_te_identity, "POST http://a/ HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: identity\r\n\r\n",
       HTTP_E_FRAMING)
REFUSE(test_te_trailing_comma, "POST http://a/ HTTP/1.1\r\nHost: a\r\n"
       "Transfer-Encoding: chunked,\r\n\r\n", HTTP_E_FRAMING)
REFUSE(test_te_lookalike, "POST http://a/ HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: xchunked\r\n\r\n",
       HTTP_E_FRAMING)
REFUSE(test_te_http10, "POST http://a/ HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
       HTTP_E_FRAMING)
REFUSE(test_connect_te, "CONNECT a:443 HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
       HTTP_E_FRAMING)
REFUSE(test_connect_cl, "CONNECT a:443 HTTP/1.1\r\nContent-Length: 5\r\n\r\n", HTTP_E_FRAMING)

REFUSE(test_conn_lists_te, "POST http://a/ HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
       "Connection: keep-alive, Transfer-Encoding\r\n\r\n", HTTP_E_FRAMING)
REFUSE(test_conn_lists_cl, "POST http://a/ HTTP/1.1\r\nHost: a\r\nConnection: content-length\r\n"
       "Content-Length: 3\r\n\r\n", HTTP_E_FRAMING)
REFUSE(test_conn_lists_host, "GET http://a/ HTTP/1.1\r\nHost: a\r\nConnection: close,HOST\r\n\r\n",
       HTTP_E_MALFORMED)
REFUSE(test_cl_underscore, "POST http://a/ HTTP/1.1\r\nHost: a\r\nContent_Length: 3\r\n"
       "Transfer-Encoding: chunked\r\n\r\n", HTTP_E_FRAMING)
REFUSE(test_te_underscore, "POST http://a/ HTTP/1.1\r\nHost: a\r\ntransfer_encoding: chunked\r\n"
       "Content-Length: 3\r\n\r\n", HTTP_E_FRAMING)

/* --- responses ------------------------------------------------------------ */

static void test_resp_length(void **state)
{
	struct http_response r;

	accept_resp("HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n", HTTP_GET, &r);
	assert_int_equal(r.status, 200);
	assert_int_equal(r.minor, 1);
	assert_span(r.reason, r.reason_len, "OK");
	assert_int_equal(r.body, HTTP_BODY_LENGTH);
	assert_int_equal(r.content_length, 12);
	assert_false(r.close);
	assert_int_equal(r.nheaders, 1);
	assert_ptr_equal(r.headers, hdrs);
}

static void test_resp_chunked(void **state)
{
	struct http_response r;

	accept_resp("HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n", HTTP_POST, &r);
	assert_int_equal(r.status, 404);
	assert_span(r.reason, r.reason_len, "Not Found");
	assert_int_equal(r.body, HTTP_BODY_CHUNKED);
}

static void test_resp_eof(void **state)
{
	struct http_response r;

	accept_resp("HTTP/1.1 200 OK\r\nServer: x\r\n\r\n", HTTP_GET, &r);
	assert_int_equal(r.body, HTTP_BODY_EOF);
	assert_true(r.close);
}

static void test_resp_no_reason(void **state)
{
	struct http_response r;

	accept_resp("HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n", HTTP_GET, &r);
	assert_int_equal(r.status, 200);
	assert_int_equal(r.reason_len, 0);
	guard_release();
	accept_resp("HTTP/1.1 302 \r\nContent-Length: 0\r\n\r\n", HTTP_GET, &r);
	assert_int_equal(r.status, 302);
	assert_int_equal(r.reason_len, 0);
	guard_release();
	accept_resp("HTTP/1.1 500 Internal \xe9rror\tx\r\nContent-Length: 0\r\n\r\n", HTTP_GET, &r);
	assert_span(r.reason, r.reason_len, "Internal \xe9rror\tx");
}

static void test_resp_no_body_cases(void **state)
{
	static const struct {
		const char *head;
		enum http_method m;
	} t[] = {
		{ "HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n", HTTP_HEAD },
		{ "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", HTTP_HEAD },
		{ "HTTP/1.1 100 Continue\r\n\r\n", HTTP_PUT },
		{ "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n", HTTP_GET },
		{ "HTTP/1.1 103 Early Hints\r\nLink: </s.css>\r\n\r\n", HTTP_GET },
		{ "HTTP/1.1 204 No Content\r\n\r\n", HTTP_DELETE },
		{ "HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n", HTTP_GET },
		{ "HTTP/1.1 200 Connection established\r\n\r\n", HTTP_CONNECT },
		{ "HTTP/1.1 299 x\r\nContent-Length: 5\r\n\r\n", HTTP_CONNECT },
	};
	struct http_response r;
	size_t i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		assert_int_equal(resp(t[i].head, t[i].m, &r), (ssize_t)strlen(t[i].head));
		assert_int_equal(r.body, HTTP_BODY_NONE);
		assert_false(r.close);
		guard_release();
	}
}

static void test_resp_connect_refused(void **state)
{
	struct http_response r;

	accept_resp("HTTP/1.1 407 Proxy Auth\r\nContent-Length: 3\r\n\r\n", HTTP_CONNECT, &r);
	assert_int_equal(r.body, HTTP_BODY_LENGTH);
	assert_int_equal(r.content_length, 3);
}

static void test_resp_close(void **state)
{
	struct http_response r;

	accept_resp("HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\n", HTTP_GET, &r);
	assert_int_equal(r.minor, 0);
	assert_true(r.close);
	guard_release();
	accept_resp("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\n",
		    HTTP_GET, &r);
	assert_false(r.close);
	guard_release();
	accept_resp("HTTP/1.1 200 OK\r\nConnection: Close\r\nContent-Length: 1\r\n\r\n", HTTP_GET, &r);
	assert_true(r.close);
	assert_int_equal(r.body, HTTP_BODY_LENGTH);
}

REFUSE_RESP(test_resp_cl_te, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n", HTTP_E_FRAMING)
REFUSE_RESP(test_resp_cl_twice, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n",
	    HTTP_E_FRAMING)
REFUSE_RESP(test_resp_cl_bad, "HTTP/1.1 200 OK\r\nContent-Length: 3a\r\n\r\n", HTTP_E_FRAMING)
REFUSE_RESP(test_resp_te_gzip, "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", HTTP_E_FRAMING)
REFUSE_RESP(test_resp_te_list, "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
	    HTTP_E_FRAMING)
REFUSE_RESP(test_resp_te_http10, "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
	    HTTP_E_FRAMING)
REFUSE_RESP(test_resp_version_2, "HTTP/2 200 OK\r\n\r\n", HTTP_E_VERSION)
REFUSE_RESP(test_resp_version_junk, "HTTP/1.1x 200 OK\r\n\r\n", HTTP_E_VERSION)
REFUSE_RESP(test_resp_version_09, "<html>\r\n\r\n", HTTP_E_VERSION)
REFUSE_RESP(test_resp_status_short, "HTTP/1.1 20 OK\r\n\r\n", HTTP_E_MALFORMED)
REFUSE_RESP(test_resp_status_long, "HTTP/1.1 2000 OK\r\n\r\n", HTTP_E_MALFORMED)
REFUSE_RESP(test_resp_status_range, "HTTP/1.1 600 OK\r\n\r\n", HTTP_E_MALFORMED)
REFUSE_RESP(test_resp_status_low, "HTTP/1.1 099 OK\r\n\r\n", HTTP_E_MALFORMED)
REFUSE_RESP(test_resp_status_glued, "HTTP/1.1 200OK\r\n\r\n", HTTP_E_MALFORMED)
REFUSE_RESP(test_resp_double_space, "HTTP/1.1  200 OK\r\n\r\n", HTTP_E_MALFORMED)
REFUSE_RESP(test_resp_reason_ctl, "HTTP/1.1 200 O\x01K\r\n\r\n", HTTP_E_MALFORMED)
REFUSE_RESP(test_resp_obs_fold, "HTTP/1.1 200 OK\r\nX: a\r\n b\r\n\r\n", HTTP_E_MALFORMED)
REFUSE_RESP(test_resp_bare_lf, "HTTP/1.1 200 OK\nContent-Length: 0\r\n\r\n", HTTP_E_MALFORMED)
REFUSE_RESP(test_resp_space_colon, "HTTP/1.1 200 OK\r\nContent-Length : 0\r\n\r\n",
	    HTTP_E_MALFORMED)

REFUSE_RESP(test_resp_conn_lists_cl, "HTTP/1.1 200 OK\r\nConnection: Content-Length\r\n"
	    "Content-Length: 3\r\n\r\n", HTTP_E_FRAMING)

/* --- chunked -------------------------------------------------------------- */

/* Scan s whole from a guarded copy; returns the result, *c holds the state. */
static ssize_t chunk_whole(const char *s, size_t len, struct http_chunked *c)
{
	memset(c, 0, sizeof(*c));
	return http_chunked_scan(c, guarded(s, len), len);
}

/*
 * Scan s in pieces of at most step bytes, each from its own guarded copy.
 * Returns the total body bytes or -1; *c holds the state.
 */
static ssize_t chunk_pieces(const char *s, size_t len, size_t step, struct http_chunked *c)
{
	size_t off = 0, n;
	ssize_t r;

	memset(c, 0, sizeof(*c));
	while (off < len) {
		n = len - off < step ? len - off : step;
		r = http_chunked_scan(c, guarded(s + off, n), n);
		guard_release();
		if (r == -1)
			return -1;
		assert_true(r >= 0 && (size_t)r <= n);
		off += (size_t)r;
		if ((size_t)r < n) {
			assert_int_equal(c->state, HTTP_CHUNK_DONE);
			break;
		}
	}
	return (ssize_t)off;
}

/* Whole, byte by byte and every two-piece split agree. */
static ssize_t chunk_all_ways(const char *s, size_t len, struct http_chunked *out)
{
	struct http_chunked whole, part;
	ssize_t r, rp;
	size_t cut, off;

	r = chunk_whole(s, len, &whole);
	guard_release();
	rp = chunk_pieces(s, len, 1, &part);
	assert_int_equal(rp, r);
	if (r != -1) {
		assert_int_equal(part.state, whole.state);
		assert_int_equal(part.remaining, whole.remaining);
	}
	for (cut = 1; cut < len; cut++) {
		memset(&part, 0, sizeof(part));
		rp = http_chunked_scan(&part, guarded(s, cut), cut);
		guard_release();
		if (rp == -1) {
			assert_int_equal(r, -1);
			continue;
		}
		off = (size_t)rp;
		if (rp == (ssize_t)cut && part.state != HTTP_CHUNK_DONE) {
			rp = http_chunked_scan(&part, guarded(s + cut, len - cut), len - cut);
			guard_release();
			if (rp == -1) {
				assert_int_equal(r, -1);
				continue;
			}
			off += (size_t)rp;
		}
		assert_int_equal((ssize_t)off, r);
		assert_int_equal(part.state, whole.state);
	}
	*out = whole;
	return r;
}

#define CHUNK(name, input, want_len, want_state)                                  \
	static void name(void **state)                                            \
	{                                                                         \
		struct http_chunked c;                                            \
		ssize_t r = chunk_all_ways(input, sizeof(input) - 1, &c);        \
		assert_int_equal(r, (ssize_t)(want_len));                         \
		if (r != -1)                                                      \
			assert_int_equal(c.state, want_state);                    \
	}

#define CHUNK_BAD(name, input) CHUNK(name, input, -1, HTTP_CHUNK_SIZE)

#define BODY1 "5\r\nhello\r\n0\r\n\r\n"
CHUNK(test_chunk_simple, BODY1, sizeof(BODY1) - 1, HTTP_CHUNK_DONE)
CHUNK(test_chunk_stops_at_end, BODY1 "GET http://a/ HTTP/1.1\r\n", sizeof(BODY1) - 1,
      HTTP_CHUNK_DONE)
#define BODY2 "A\r\n0123456789\r\n1f\r\n0123456789012345678901234567890\r\n0\r\n\r\n"
CHUNK(test_chunk_hex_sizes, BODY2 "XX", sizeof(BODY2) - 1, HTTP_CHUNK_DONE)
#define BODY3 "000005\r\nhello\r\n0000000000000000\r\n\r\n"
CHUNK(test_chunk_leading_zeros, BODY3, sizeof(BODY3) - 1, HTTP_CHUNK_DONE)
#define BODY4 "5;a\r\nhello\r\n3;a=b;c=\"q \\\" ;x\";d\r\nabc\r\n0;last=1\r\n\r\n"
CHUNK(test_chunk_extensions, BODY4, sizeof(BODY4) - 1, HTTP_CHUNK_DONE)
#define BODY5 "2\r\nab\r\n0\r\nX-Sum: 1234\r\nX-Empty:\r\nX-Obs: \xe9 \t\r\n\r\n"
CHUNK(test_chunk_trailers, BODY5 "next", sizeof(BODY5) - 1, HTTP_CHUNK_DONE)
CHUNK(test_chunk_partial_data, "10\r\n0123456", 11, HTTP_CHUNK_DATA)
CHUNK(test_chunk_partial_size, "5\r\nhello\r\n1", 11, HTTP_CHUNK_SIZE)
CHUNK(test_chunk_partial_trailer, "0\r\nX: y\r\n", 9, HTTP_CHUNK_TRAILER)
CHUNK_BAD(test_chunk_empty_size, "\r\nhello\r\n0\r\n\r\n")
CHUNK_BAD(test_chunk_0x, "0x5\r\nhello\r\n0\r\n\r\n")
CHUNK_BAD(test_chunk_leading_space, " 5\r\nhello\r\n0\r\n\r\n")
CHUNK_BAD(test_chunk_trailing_space, "5 \r\nhello\r\n0\r\n\r\n")
CHUNK_BAD(test_chunk_negative, "-5\r\nhello\r\n0\r\n\r\n")
CHUNK_BAD(test_chunk_17_digits, "00000000000000005\r\nhello\r\n0\r\n\r\n")
CHUNK_BAD(test_chunk_overflow, "ffffffffffffffff\r\n")
CHUNK_BAD(test_chunk_over_limit, "4000000000000001\r\n")
CHUNK_BAD(test_chunk_size_bare_lf, "5\nhello\r\n0\r\n\r\n")
CHUNK_BAD(test_chunk_size_bare_cr, "5\rhello\r\n0\r\n\r\n")
CHUNK_BAD(test_chunk_data_no_crlf, "5\r\nhelloX\r\n0\r\n\r\n")
CHUNK_BAD(test_chunk_data_bare_lf, "5\r\nhello\n0\r\n\r\n")
CHUNK_BAD(test_chunk_data_too_long, "3\r\nhello\r\n0\r\n\r\n")
CHUNK_BAD(test_chunk_ext_bws, "5 ;a=b\r\nhello\r\n0\r\n\r\n")
CHUNK_BAD(test_chunk_ext_bws_after, "5; a=b\r\nhello\r\n0\r\n\r\n")
CHUNK_BAD(test_chunk_ext_bws_eq, "5;a = b\r\nhello\r\n0\r\n\r\n")
CHUNK_BAD(test_chunk_ext_empty_name, "5;=b\r\nhello\r\n0\r\n\r\n")
CHUNK_BAD(test_chunk_ext_empty_value, "5;a=\r\nhello\r\n0\r\n\r\n")
CHUNK_BAD(test_chunk_ext_unterminated, "5;a=\"b\r\nhello\r\n0\r\n\r\n")
CHUNK_BAD(test_chunk_ext_after_quote, "5;a=\"b\"c\r\nhello\r\n0\r\n\r\n")
CHUNK_BAD(test_chunk_ext_lf, "5;a\nhello\r\n0\r\n\r\n")
CHUNK_BAD(test_chunk_trailer_fold, "0\r\nX: a\r\n b\r\n\r\n")
CHUNK_BAD(test_chunk_trailer_no_colon, "0\r\nJunk\r\n\r\n")
CHUNK_BAD(test_chunk_trailer_space_colon, "0\r\nX : a\r\n\r\n")
CHUNK_BAD(test_chunk_trailer_bare_lf, "0\r\nX: a\n\r\n")
CHUNK_BAD(test_chunk_trailer_bare_lf_end, "0\r\n\n")
CHUNK_BAD(test_chunk_trailer_ctl, "0\r\nX: a\x01\r\n\r\n")
CHUNK_BAD(test_chunk_end_missing_lf, "0\r\n\rX")

static void test_chunk_ext_line_limit(void **state)
{
	char buf[600];
	struct http_chunked c;
	size_t n;

	/* "5;" then name bytes: the ext counts from ';', CHUNK_LINE_MAX 256 */
	memset(buf, 'x', sizeof(buf));
	memcpy(buf, "5;", 2);
	memcpy(buf + 2 + 200, "\r\nhello\r\n0\r\n\r\n", 14);
	n = 2 + 200 + 14;
	assert_int_equal(chunk_whole(buf, n, &c), (ssize_t)n);
	assert_int_equal(c.state, HTTP_CHUNK_DONE);
	guard_release();
	memset(buf, 'x', sizeof(buf));
	memcpy(buf, "5;", 2);
	memcpy(buf + 2 + 400, "\r\nhello\r\n0\r\n\r\n", 14);
	assert_int_equal(chunk_whole(buf, 2 + 400 + 14, &c), -1);
}

static void test_chunk_trailer_limit(void **state)
{
	static char buf[10000];
	struct http_chunked c;
	size_t n = 3, i;

	/* 819 lines of 10 bytes and the final CRLF: exactly the 8 KiB ceiling */
	memcpy(buf, "0\r\n", 3);
	for (i = 0; i < 819; i++) {
		memcpy(buf + n, "X: 12345\r\n", 10);
		n += 10;
	}
	memcpy(buf + n, "\r\n", 2);
	assert_int_equal(chunk_whole(buf, n + 2, &c), (ssize_t)n + 2);
	assert_int_equal(c.state, HTTP_CHUNK_DONE);
	guard_release();
	memcpy(buf + n, "X\r\n\r\n", 5);
	assert_int_equal(chunk_whole(buf, n + 5, &c), -1);
}

static void test_chunk_done_consumes_nothing(void **state)
{
	struct http_chunked c;

	assert_int_equal(chunk_whole(BODY1, sizeof(BODY1) - 1, &c), (ssize_t)sizeof(BODY1) - 1);
	assert_int_equal(c.state, HTTP_CHUNK_DONE);
	assert_true(c.last);
	assert_int_equal(http_chunked_scan(&c, guarded("5\r\n", 3), 3), 0);
	assert_int_equal(http_chunked_scan(&c, guarded("", 0), 0), 0);
	assert_int_equal(c.state, HTTP_CHUNK_DONE);
}

static void test_chunk_big_data(void **state)
{
	static char buf[70000];
	struct http_chunked c;
	size_t n;

	n = (size_t)snprintf(buf, sizeof(buf), "10000\r\n");
	memset(buf + n, 'd', 0x10000);
	n += 0x10000;
	memcpy(buf + n, "\r\n0\r\n\r\n", 7);
	n += 7;
	assert_int_equal(chunk_whole(buf, n, &c), (ssize_t)n);
	assert_int_equal(c.state, HTTP_CHUNK_DONE);
	guard_release();
	assert_int_equal(chunk_pieces(buf, n, 4093, &c), (ssize_t)n);
	assert_int_equal(c.state, HTTP_CHUNK_DONE);
	/* mid-data the state says how much is left */
	guard_release();
	assert_int_equal(chunk_whole(buf, 100, &c), 100);
	assert_int_equal(c.state, HTTP_CHUNK_DATA);
	assert_int_equal(c.remaining, 0x10000 - (100 - 7));
}

/* --- header helpers ------------------------------------------------------- */

static void test_find_header(void **state)
{
	struct http_request r;

	accept_req("GET http://a/ HTTP/1.1\r\nHost: a\r\nX-Foo: 1\r\nx-foo: 2\r\n\r\n", &r);
	assert_int_equal(http_find_header(r.headers, r.nheaders, "HOST"), 0);
	assert_int_equal(http_find_header(r.headers, r.nheaders, "X-FOO"), 1);
	assert_int_equal(http_find_header(r.headers, r.nheaders, "X-Fo"), -1);
	assert_int_equal(http_find_header(r.headers, r.nheaders, "X-Fooo"), -1);
	assert_int_equal(http_find_header(r.headers, 0, "Host"), -1);
}

static void test_hop_headers(void **state)
{
	static const char *const hop[] = {
		"Connection", "keep-alive", "PROXY-CONNECTION", "TE", "Trailer", "Upgrade",
		"Proxy-Authorization", "proxy-x", "X-Listed", "x-other",
	};
	static const char *const end_to_end[] = {
		"Host", "Transfer-Encoding", "Content-Length", "X-Proxy", "Proxy", "TEx",
		"Accept", "Listed",
	};
	struct http_request r;
	size_t i;
	int k;

	accept_req("GET http://a/ HTTP/1.1\r\nHost: a\r\nConnection: close, X-Listed\r\n"
		   "keep-alive: 1\r\nPROXY-CONNECTION: x\r\nTE: trailers\r\nTrailer: x\r\n"
		   "Upgrade: h2c\r\nProxy-Authorization: x\r\nproxy-x: 1\r\nX-Listed: y\r\n"
		   "Transfer-Encoding: chunked\r\nConnection: X-OTHER\r\nx-other: 1\r\n"
		   "Accept: */*\r\nX-Proxy: 1\r\nProxy: 1\r\nTEx: 1\r\n\r\n", &r);
	for (i = 0; i < sizeof(hop) / sizeof(hop[0]); i++) {
		k = http_find_header(r.headers, r.nheaders, hop[i]);
		assert_true(k >= 0);
		if (!http_is_hop_header(r.headers, r.nheaders, (size_t)k))
			fail_msg("%s should be hop-by-hop", hop[i]);
	}
	for (i = 0; i < sizeof(end_to_end) / sizeof(end_to_end[0]); i++) {
		k = http_find_header(r.headers, r.nheaders, end_to_end[i]);
		if (k < 0)
			continue;
		if (http_is_hop_header(r.headers, r.nheaders, (size_t)k))
			fail_msg("%s should be end-to-end", end_to_end[i]);
	}
	assert_false(http_is_hop_header(r.headers, r.nheaders, r.nheaders));
}

/* Built by hand: a Connection list never makes framing or Host hop-by-hop. */
static void test_hop_never_framing(void **state)
{
	static const char conn[] = "Host, Content-Length, Transfer-Encoding, X-A";
	const struct http_header h[] = {
		{ "Connection", 10, conn, sizeof(conn) - 1 },
		{ "Host", 4, "a", 1 },
		{ "content-length", 14, "1", 1 },
		{ "Transfer-Encoding", 17, "chunked", 7 },
		{ "x-a", 3, "1", 1 },
		{ "X-B", 3, "1", 1 },
	};

	assert_true(http_is_hop_header(h, 6, 0));
	assert_false(http_is_hop_header(h, 6, 1));
	assert_false(http_is_hop_header(h, 6, 2));
	assert_false(http_is_hop_header(h, 6, 3));
	assert_true(http_is_hop_header(h, 6, 4));
	assert_false(http_is_hop_header(h, 6, 5));
	/* only the first n headers are the head */
	assert_false(http_is_hop_header(h, 4, 4));
	assert_false(http_is_hop_header(h + 1, 5, 3));
}

/* --- trailer sections ------------------------------------------------------ */

#define NTR 8

/* Parse s[0..len) from a guarded copy; every proper prefix must need more. */
static ssize_t trailers_all_ways(const char *s, size_t len, struct http_header *f, size_t max,
				 size_t *nf, enum http_error *err)
{
	ssize_t r = http_parse_trailers(guarded(s, len), len, f, max, nf, err);
	struct http_header g[NTR];
	enum http_error e;
	size_t ng, cut;

	for (cut = 0; cut < len && (r < 0 ? cut < len : cut < (size_t)r); cut++) {
		ssize_t rp = http_parse_trailers(guarded(s, cut), cut, g, max, &ng, &e);

		if (r >= 0)
			assert_int_equal(rp, -2);
		else
			assert_true(rp == -2 || rp == -1);
		/* the prefix's copy goes at once; the whole input's stays for *f */
		nmaps--;
		munmap(maps[nmaps].base, maps[nmaps].len);
	}
	return r;
}

static void test_trailers_parse(void **state)
{
	static const char in[] = "X-Sum: 1234\r\nX-Empty:\r\nX-Obs:  \xe9 \t\r\n"
				 "Server-Timing: a;dur=1\r\n\r\nnext";
	struct http_header f[NTR];
	enum http_error err;
	size_t n;

	assert_int_equal(trailers_all_ways(in, sizeof(in) - 1, f, NTR, &n, &err),
			 (ssize_t)sizeof(in) - 1 - 4);
	assert_int_equal(n, 4);
	assert_int_equal(f[0].name_len, 5);
	assert_memory_equal(f[0].value, "1234", 4);
	assert_int_equal(f[1].value_len, 0);
	assert_int_equal(f[2].value_len, 1);
	assert_memory_equal(f[2].value, "\xe9", 1);
	assert_memory_equal(f[3].name, "Server-Timing", 13);
}

static void test_trailers_empty(void **state)
{
	struct http_header f[NTR];
	enum http_error err;
	size_t n = 99;

	assert_int_equal(trailers_all_ways("\r\nGET", 5, f, NTR, &n, &err), 2);
	assert_int_equal(n, 0);
	assert_int_equal(http_parse_trailers(guarded("", 0), 0, f, NTR, &n, &err), -2);
	assert_int_equal(http_parse_trailers(guarded("\r", 1), 1, f, NTR, &n, &err), -2);
}

#define TRAILER_BAD(name, input, want_err)                                                  \
	static void name(void **state)                                                      \
	{                                                                                   \
		struct http_header f[NTR];                                                  \
		enum http_error err;                                                        \
		size_t n;                                                                   \
		assert_int_equal(trailers_all_ways(input, sizeof(input) - 1, f, NTR, &n, &err), \
				 -1);                                                       \
		assert_int_equal(err, want_err);                                            \
	}

TRAILER_BAD(test_trailers_fold, "X: a\r\n b\r\n\r\n", HTTP_E_MALFORMED)
TRAILER_BAD(test_trailers_space_colon, "Host : evil\r\n\r\n", HTTP_E_MALFORMED)
TRAILER_BAD(test_trailers_leading_space, " Host: evil\r\n\r\n", HTTP_E_MALFORMED)
TRAILER_BAD(test_trailers_no_colon, "Junk\r\n\r\n", HTTP_E_MALFORMED)
TRAILER_BAD(test_trailers_bare_lf, "X: a\nHost: evil\r\n\r\n", HTTP_E_MALFORMED)
TRAILER_BAD(test_trailers_bare_lf_end, "X: a\r\n\n", HTTP_E_MALFORMED)
TRAILER_BAD(test_trailers_bare_cr, "X: a\rHost: evil\r\n\r\n", HTTP_E_MALFORMED)
TRAILER_BAD(test_trailers_ctl, "X: a\x01\r\n\r\n", HTTP_E_MALFORMED)
TRAILER_BAD(test_trailers_nul, "X: a\0b\r\n\r\n", HTTP_E_MALFORMED)
TRAILER_BAD(test_trailers_too_many, "A: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\nE: 5\r\nF: 6\r\nG: 7\r\n"
	    "H: 8\r\nI: 9\r\n\r\n", HTTP_E_TOO_MANY)

static void test_trailers_limit(void **state)
{
	static char buf[HTTP_TRAILER_MAX + 64];
	struct http_header f[1];
	enum http_error err;
	size_t n, len;

	/* one field line and the final CRLF: exactly HTTP_TRAILER_MAX bytes */
	len = HTTP_TRAILER_MAX;
	memset(buf, 'v', sizeof(buf));
	memcpy(buf, "X: ", 3);
	memcpy(buf + len - 4, "\r\n\r\n", 4);
	assert_int_equal(http_parse_trailers(guarded(buf, len + 10), len + 10, f, 1, &n, &err),
			 (ssize_t)len);
	assert_int_equal(n, 1);
	assert_int_equal(f[0].value_len, len - 7);
	guard_release();
	/* one byte more is over, whether the end is in the buffer or not */
	memset(buf, 'v', sizeof(buf));
	memcpy(buf, "X: ", 3);
	memcpy(buf + len - 3, "\r\n\r\n", 4);
	assert_int_equal(http_parse_trailers(guarded(buf, len + 1), len + 1, f, 1, &n, &err), -1);
	assert_int_equal(err, HTTP_E_TOO_LARGE);
	assert_int_equal(http_parse_trailers(guarded(buf, len), len, f, 1, &n, &err), -1);
	assert_int_equal(err, HTTP_E_TOO_LARGE);
	/* short of the ceiling an unfinished section needs more */
	assert_int_equal(http_parse_trailers(guarded(buf, len - 1), len - 1, f, 1, &n, &err), -2);
}

static void test_trailers_forbidden(void **state)
{
	static const char *const never[] = {
		"Host", "host", "HOST", "Content-Length", "content_length", "Transfer-Encoding",
		"transfer_encoding", "Trailer", "TE", "Connection", "Keep-Alive", "Upgrade",
		"Authorization", "Proxy-Authorization", "Proxy-Authenticate", "proxy-anything",
		"Proxy_Foo", "Proxy-", "Sluice-Stamp", "SLUICE-STAMP", "sluice_stamp", "Sluice-X",
		"Cookie", "Set-Cookie", "set_cookie", "WWW-Authenticate", "Authentication-Info",
		"Max-Forwards", "Forwarded", "Via", "X-Forwarded-For", "x_forwarded_host",
		"Expect", "Cache-Control", "Pragma", "Range", "If-Match", "If-None-Match",
		"If-Modified-Since", "If-Unmodified-Since", "If-Range", "Age", "Date", "Expires",
		"Location", "Retry-After", "Vary", "Warning", "Content-Encoding", "Content-Type",
		"Content-Range", "Content-Location",
	};
	static const char *const fine[] = {
		"X-Checksum", "Server-Timing", "Content-Digest", "Repr-Digest", "ETag",
		"Hostname", "X-Host", "Hos", "Content-Lengthy", "Content", "Proxy", "ProxyX",
		"Sluice", "X-Forwarded", "X-Sluice-Stamp", "TEx", "Dates", "Cookies", "Tes",
		"Content-Lengt",
	};
	struct http_header h;
	size_t i;

	for (i = 0; i < sizeof(never) / sizeof(never[0]); i++) {
		h.name = guarded(never[i], strlen(never[i]));
		h.name_len = strlen(never[i]);
		h.value = "";
		h.value_len = 0;
		if (!http_is_forbidden_trailer(&h))
			fail_msg("%s must never pass as a trailer", never[i]);
		guard_release();
	}
	for (i = 0; i < sizeof(fine) / sizeof(fine[0]); i++) {
		h.name = guarded(fine[i], strlen(fine[i]));
		h.name_len = strlen(fine[i]);
		h.value = "";
		h.value_len = 0;
		if (http_is_forbidden_trailer(&h))
			fail_msg("%s is a harmless trailer", fine[i]);
		guard_release();
	}
}

/* With hold_trailer the scan stops where the section starts, in any pieces. */
static void test_chunk_hold_trailer(void **state)
{
	static const char in[] = "5\r\nhello\r\n3;x=1\r\nabc\r\n0\r\nHost: evil\r\n\r\n";
	const size_t body = sizeof("5\r\nhello\r\n3;x=1\r\nabc\r\n0\r\n") - 1;
	struct http_chunked c;
	size_t step, off;

	for (step = 1; step <= sizeof(in); step++) {
		memset(&c, 0, sizeof(c));
		c.hold_trailer = true;
		off = 0;
		while (off < sizeof(in) - 1 && c.state != HTTP_CHUNK_TRAILER) {
			size_t n = sizeof(in) - 1 - off < step ? sizeof(in) - 1 - off : step;
			ssize_t r = http_chunked_scan(&c, guarded(in + off, n), n);

			guard_release();
			assert_true(r >= 0 && (size_t)r <= n);
			off += (size_t)r;
		}
		assert_int_equal(off, body);
		assert_int_equal(c.state, HTTP_CHUNK_TRAILER);
		assert_true(c.last);
		/* held: nothing more is taken */
		assert_int_equal(http_chunked_scan(&c, guarded(in + off, 4), 4), 0);
		guard_release();
	}
	/* a trailer-less body stops before its final CRLF too */
	memset(&c, 0, sizeof(c));
	c.hold_trailer = true;
	assert_int_equal(http_chunked_scan(&c, guarded(BODY1, sizeof(BODY1) - 1), sizeof(BODY1) - 1),
			 (ssize_t)sizeof(BODY1) - 3);
	assert_int_equal(c.state, HTTP_CHUNK_TRAILER);
}

#define T(f) cmocka_unit_test_teardown(f, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_absolute_basic),
		T(test_absolute_port_path_query),
		T(test_absolute_scheme_case),
		T(test_absolute_ipv6),
		T(test_connect),
		T(test_connect_ipv6_with_host),
		T(test_connect_content_length_zero),
		T(test_origin_form),
		T(test_asterisk),
		T(test_http10),
		T(test_connection_close),
		T(test_content_length),
		T(test_content_length_zero_and_max),
		T(test_chunked_request),
		T(test_expect_continue),
		T(test_upgrade),
		T(test_value_trim_and_bytes),
		T(test_header_name_tchars),
		T(test_all_methods),
		T(test_empty_and_partial),
		T(test_max_headers),
		T(test_line_limit),
		T(test_request_line_limit),
		T(test_response_line_limit),
		T(test_headers_with_nul),
		T(test_method_lower),
		T(test_method_mixed),
		T(test_method_unknown),
		T(test_method_prefix),
		T(test_version_09),
		T(test_version_2),
		T(test_version_12),
		T(test_version_lower),
		T(test_version_junk),
		T(test_version_short),
		T(test_double_space_method),
		T(test_double_space_version),
		T(test_trailing_space),
		T(test_tab_separator),
		T(test_leading_space),
		T(test_space_in_target),
		T(test_target_del),
		T(test_target_high),
		T(test_target_ctl),
		T(test_https_scheme),
		T(test_other_scheme),
		T(test_scheme_no_slashes),
		T(test_userinfo),
		T(test_userinfo_pw),
		T(test_userinfo_backslash),
		T(test_userinfo_connect),
		T(test_zone_pct25),
		T(test_zone_pct),
		T(test_zone_connect),
		T(test_v6_unclosed),
		T(test_v6_empty),
		T(test_v6_future),
		T(test_v6_no_colon),
		T(test_v6_junk_after),
		T(test_port_empty),
		T(test_port_zero),
		T(test_port_big),
		T(test_port_long),
		T(test_port_leading_zero),
		T(test_port_alpha),
		T(test_port_twice),
		T(test_fragment),
		T(test_fragment_origin),
		T(test_query_without_path),
		T(test_empty_host),
		T(test_empty_host_port),
		T(test_host_backslash),
		T(test_host_pct),
		T(test_authority_for_get),
		T(test_connect_no_port),
		T(test_connect_empty_port),
		T(test_connect_origin),
		T(test_connect_absolute),
		T(test_connect_asterisk),
		T(test_asterisk_get),
		T(test_space_before_colon),
		T(test_tab_before_colon),
		T(test_empty_name),
		T(test_no_colon),
		T(test_bad_name_char),
		T(test_obs_fold),
		T(test_obs_fold_tab),
		T(test_space_first_header),
		T(test_bare_lf_request_line),
		T(test_bare_lf_header),
		T(test_bare_lf_end),
		T(test_bare_cr_value),
		T(test_bare_cr_end),
		T(test_ctl_value),
		T(test_del_value),
		T(test_leading_crlf),
		T(test_no_host),
		T(test_no_host_origin),
		T(test_two_hosts),
		T(test_two_hosts_same),
		T(test_empty_host_header),
		T(test_expect_other),
		T(test_expect_list),
		T(test_cl_te),
		T(test_te_cl),
		T(test_cl_twice_same),
		T(test_cl_twice_diff),
		T(test_cl_list),
		T(test_cl_plus),
		T(test_cl_minus),
		T(test_cl_empty),
		T(test_cl_hex),
		T(test_cl_inner_space),
		T(test_cl_too_big),
		T(test_cl_overflow),
		T(test_te_twice),
		T(test_te_gzip_chunked),
		T(test_te_chunked_gzip),
		T(test_te_identity),
		T(test_te_trailing_comma),
		T(test_te_lookalike),
		T(test_te_http10),
		T(test_connect_te),
		T(test_connect_cl),
		T(test_conn_lists_te),
		T(test_conn_lists_cl),
		T(test_conn_lists_host),
		T(test_cl_underscore),
		T(test_te_underscore),
		T(test_resp_length),
		T(test_resp_chunked),
		T(test_resp_eof),
		T(test_resp_no_reason),
		T(test_resp_no_body_cases),
		T(test_resp_connect_refused),
		T(test_resp_close),
		T(test_resp_cl_te),
		T(test_resp_cl_twice),
		T(test_resp_cl_bad),
		T(test_resp_te_gzip),
		T(test_resp_te_list),
		T(test_resp_te_http10),
		T(test_resp_version_2),
		T(test_resp_version_junk),
		T(test_resp_version_09),
		T(test_resp_status_short),
		T(test_resp_status_long),
		T(test_resp_status_range),
		T(test_resp_status_low),
		T(test_resp_status_glued),
		T(test_resp_double_space),
		T(test_resp_reason_ctl),
		T(test_resp_obs_fold),
		T(test_resp_bare_lf),
		T(test_resp_space_colon),
		T(test_resp_conn_lists_cl),
		T(test_chunk_simple),
		T(test_chunk_stops_at_end),
		T(test_chunk_hex_sizes),
		T(test_chunk_leading_zeros),
		T(test_chunk_extensions),
		T(test_chunk_trailers),
		T(test_chunk_partial_data),
		T(test_chunk_partial_size),
		T(test_chunk_partial_trailer),
		T(test_chunk_empty_size),
		T(test_chunk_0x),
		T(test_chunk_leading_space),
		T(test_chunk_trailing_space),
		T(test_chunk_negative),
		T(test_chunk_17_digits),
		T(test_chunk_overflow),
		T(test_chunk_over_limit),
		T(test_chunk_size_bare_lf),
		T(test_chunk_size_bare_cr),
		T(test_chunk_data_no_crlf),
		T(test_chunk_data_bare_lf),
		T(test_chunk_data_too_long),
		T(test_chunk_ext_bws),
		T(test_chunk_ext_bws_after),
		T(test_chunk_ext_bws_eq),
		T(test_chunk_ext_empty_name),
		T(test_chunk_ext_empty_value),
		T(test_chunk_ext_unterminated),
		T(test_chunk_ext_after_quote),
		T(test_chunk_ext_lf),
		T(test_chunk_trailer_fold),
		T(test_chunk_trailer_no_colon),
		T(test_chunk_trailer_space_colon),
		T(test_chunk_trailer_bare_lf),
		T(test_chunk_trailer_bare_lf_end),
		T(test_chunk_trailer_ctl),
		T(test_chunk_end_missing_lf),
		T(test_chunk_ext_line_limit),
		T(test_chunk_trailer_limit),
		T(test_chunk_done_consumes_nothing),
		T(test_chunk_big_data),
		T(test_find_header),
		T(test_hop_headers),
		T(test_hop_never_framing),
		T(test_trailers_parse),
		T(test_trailers_empty),
		T(test_trailers_fold),
		T(test_trailers_space_colon),
		T(test_trailers_leading_space),
		T(test_trailers_no_colon),
		T(test_trailers_bare_lf),
		T(test_trailers_bare_lf_end),
		T(test_trailers_bare_cr),
		T(test_trailers_ctl),
		T(test_trailers_nul),
		T(test_trailers_too_many),
		T(test_trailers_limit),
		T(test_trailers_forbidden),
		T(test_chunk_hold_trailer),
	};

	return cmocka_run_group_tests_name("http", tests, NULL, NULL);
}
