/*
 * test_proxy_page.c: a refusal's page (proxy/page.c), the codec of a
 * refused CONNECT answered inside its TLS, on a connection with no socket
 * (proxy_fakes.h) and, where interception must be active, a CA made fresh
 * in the proxy's state directory.
 *
 * - refuse_page_wanted: a 403 of a CONNECT to a name sluice intercepts
 *   (intercept on with its CA loaded, not a passthrough name), refuse-page
 *   on, not quiet, nothing answered yet, not inside TLS or HTTP/2; each
 *   condition alone turns it off.
 * - refuse_page_begin: the CONNECT head alone in cin: our 200, the client's
 *   handshake next, the page's codec over the one it resumes, a copy of the
 *   refusal kept; bytes behind the head: -1, nothing changed.
 * - refuse_page_answer: the page response in cout for a request (its
 *   method and URL in the body, Proxy-Status, the refusal id; a port not
 *   443 in the URL; an absolute-form target not echoed; bytes not printable
 *   as '?'; a HEAD without the body) and for none (a timeout: the CONNECT);
 *   the codec back to the one the page resumes, then the drain; a handshake
 *   that did not complete: closed, nothing said.
 * - refuse_page_codec: its refuse answers with the page's refusal, not the
 *   one it is handed; its tls_up is the resumed codec's.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ca.h"
#include "host.h"
#include "proxy_fakes.h"
#include "request.h"

struct pg {
	struct fake_proxy *fp;
	struct session *s;
	struct exchange *x;
};

/*
 * A proxy with config conf (with_ca: a CA in its state directory, TLS set
 * up), a connection of it and its CONNECT to host:443, judged (the row's
 * fields set, not active: its refusal's row was written).
 */
static struct pg pg_new(const char *conf, bool with_ca, const char *host)
{
	struct pg p;
	const char *err = NULL;

	p.fp = fake_proxy_new(conf);
	if (with_ca) {
		assert_int_equal(ca_create(p.fp->dir, &err), 0);
		assert_int_equal(tls_init(&p.fp->px), 0);
	}
	p.s = fake_session_new(&p.fp->px, NULL);
	assert_int_equal(exchange_new(p.s), 0);
	p.x = p.s->x;
	p.x->method = HTTP_CONNECT;
	p.x->minor = 1;
	p.x->req = ++p.s->nreq;
	assert_int_equal(host_canon(host, strlen(host), &p.x->t.host, &err), 0);
	p.x->t.port = 443;
	p.x->t.via = GRANT_VIA_CONNECT;
	return p;
}

static void pg_free(struct pg *p)
{
	fake_session_free(p->s);
	tls_release(&p->fp->px);
	fake_proxy_free(p->fp);
}

static const struct refusal not_granted = {
	.status = 403,
	.reason = "not-granted",
	.proxy_status = "http_request_denied",
	.detail = "example.test is not granted; to allow it: sluice allow example.test",
	.id = "0123456789abcdef",
};

/* --- refuse_page_wanted ------------------------------------------------------- */

static void test_wanted(void **state)
{
	struct pg p = pg_new("", true, "example.test");
	struct refusal r = not_granted;

	assert_true(tls_active(&p.fp->px));
	assert_true(refuse_page_wanted(p.x, &r));

	/* 403 only */
	static const int others[] = { 400, 407, 413, 502, 503, 504 };
	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
		r.status = others[i];
		assert_false(refuse_page_wanted(p.x, &r));
	}
	r.status = 403;
	/* not quiet (an agent's telemetry) */
	r.reason = "quiet";
	assert_false(refuse_page_wanted(p.x, &r));
	r.reason = "not-granted";
	/* CONNECT only */
	p.x->method = HTTP_GET;
	assert_false(refuse_page_wanted(p.x, &r));
	p.x->method = HTTP_CONNECT;
	/* nothing answered yet, not inside TLS nor an intercepted tunnel's state */
	p.x->resp_started = true;
	assert_false(refuse_page_wanted(p.x, &r));
	p.x->resp_started = false;
	p.s->intercept = true;
	assert_false(refuse_page_wanted(p.x, &r));
	p.s->intercept = false;
	p.s->ix = calloc(1, sizeof(*p.s->ix));
	assert_non_null(p.s->ix);
	assert_false(refuse_page_wanted(p.x, &r));
	free(p.s->ix);
	p.s->ix = NULL;
	p.s->h2 = (struct h2 *)&r; /* any: only whether there is one is asked */
	assert_false(refuse_page_wanted(p.x, &r));
	p.s->h2 = NULL;
	assert_true(refuse_page_wanted(p.x, &r));
	pg_free(&p);

	/* a name, not an IP literal (no leaf to make) */
	p = pg_new("", true, "192.0.2.7");
	assert_false(refuse_page_wanted(p.x, &r));
	pg_free(&p);
	p = pg_new("", true, "[2001:db8::7]");
	assert_false(refuse_page_wanted(p.x, &r));
	pg_free(&p);

	/* refuse-page off; a passthrough name; intercept off; no CA loaded */
	p = pg_new("refuse-page off\n", true, "example.test");
	assert_false(refuse_page_wanted(p.x, &r));
	pg_free(&p);
	p = pg_new("passthrough example.test\n", true, "example.test");
	assert_false(refuse_page_wanted(p.x, &r));
	pg_free(&p);
	p = pg_new("passthrough other.test\n", true, "example.test");
	assert_true(refuse_page_wanted(p.x, &r));
	pg_free(&p);
	p = pg_new("intercept off\n", true, "example.test");
	assert_false(tls_active(&p.fp->px));
	assert_false(refuse_page_wanted(p.x, &r));
	pg_free(&p);
	p = pg_new("", false, "example.test");
	assert_false(refuse_page_wanted(p.x, &r));
	pg_free(&p);
}

/* --- refuse_page_begin ------------------------------------------------------ */

static void test_begin(void **state)
{
	static const char head[] = "CONNECT example.test:443 HTTP/1.1\r\nHost: example.test:443\r\n\r\n";
	struct pg p = pg_new("", true, "example.test");
	struct refusal r = not_granted;

	/* bytes behind the CONNECT head: no page (the caller sends the plain refusal) */
	assert_int_equal(buf_append(&p.s->cin, head, sizeof(head) - 1), 0);
	assert_int_equal(buf_append(&p.s->cin, "\x16\x03\x01", 3), 0);
	assert_int_equal(refuse_page_begin(p.x, &r), -1);
	assert_ptr_equal(p.s->codec, &h1_codec);
	assert_null(p.s->ix);
	assert_int_equal(buf_len(&p.s->cout), 0);

	/* the head alone: our 200, the client's handshake next, under the page's codec */
	buf_consume(&p.s->cin, buf_len(&p.s->cin));
	assert_int_equal(buf_append(&p.s->cin, head, sizeof(head) - 1), 0);
	assert_int_equal(refuse_page_begin(p.x, &r), 0);
	assert_int_equal(buf_len(&p.s->cin), 0);
	assert_ptr_equal(p.s->codec, &refuse_page_codec);
	assert_non_null(p.s->ix);
	assert_ptr_equal(p.s->ix->resume, &h1_codec);
	assert_non_null(p.s->ix->page);
	assert_ptr_not_equal(p.s->ix->page, &r); /* a copy: the caller's goes */
	assert_int_equal(p.s->ix->page->status, 403);
	assert_string_equal(p.s->ix->page->id, r.id);
	assert_string_equal(p.s->ix->page->detail, r.detail);
	assert_string_equal(p.s->ix->tunnel.host.name, "example.test");
	assert_ptr_equal(p.s->st, &tls_accept_state);
	assert_int_equal(buf_len(&p.s->cout), sizeof(TUNNEL_OK) - 1);
	assert_memory_equal(buf_head(&p.s->cout), TUNNEL_OK, sizeof(TUNNEL_OK) - 1);
	pg_free(&p);
}

/* --- refuse_page_answer ------------------------------------------------------ */

/*
 * p's connection as refuse_page_begin and the client's handshake leave it:
 * the page's refusal r kept, the codec the page resumes h1's, inside TLS.
 */
static void page_up(struct pg *p, const struct refusal *r, uint16_t port)
{
	p->x->t.port = port;
	p->s->ix = calloc(1, sizeof(*p->s->ix));
	assert_non_null(p->s->ix);
	p->s->ix->tunnel = p->x->t;
	p->s->ix->page = malloc(sizeof(*p->s->ix->page));
	assert_non_null(p->s->ix->page);
	*p->s->ix->page = *r;
	p->s->ix->resume = &h1_codec;
	p->s->codec = &refuse_page_codec;
	p->s->intercept = true;
}

/* A request head as h1.c parses it, into req (pointing into raw, which the caller keeps). */
static void parse(const char *raw, struct http_request *req, struct http_header *hdrs)
{
	assert_int_equal(http_parse_request(raw, strlen(raw), HEAD_MAX, req, hdrs, HEADERS_MAX),
			 (ssize_t)strlen(raw));
}

/* cout, NUL-terminated (caller frees). */
static char *cout_text(const struct session *s)
{
	char *out = strndup(buf_head(&s->cout), buf_len(&s->cout));

	assert_non_null(out);
	return out;
}

/* The response r's page must be, its body's first line first. */
static char *expected(const struct refusal *r, const char *first, bool head)
{
	char ps[REFUSE_STATUS_MAX], line[REFUSE_BODY_MAX], body[1024], *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	assert_non_null(f);
	refuse_texts(r, ps, sizeof(ps), line, sizeof(line));
	snprintf(body, sizeof(body), "%s%s%s%s%s", first, line, r->id[0] ? "refusal id: " : "",
		 r->id, r->id[0] ? "\n" : "");
	fprintf(f,
		"HTTP/1.1 %d %s\r\nProxy-Status: %s\r\nContent-Type: text/plain; "
		"charset=utf-8\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s",
		r->status, refuse_status_text(r->status), ps, strlen(body), head ? "" : body);
	fclose(f);
	return out;
}

/* Answer req (NULL: none) under the page; the response must be the page's. */
static void answer_is(const struct http_request *req, uint16_t port, const char *first, bool head)
{
	struct pg p = pg_new("", false, "example.test");
	char *got, *want;

	page_up(&p, &not_granted, port);
	refuse_page_answer(p.s, req);
	assert_false(p.s->closed);
	assert_ptr_equal(p.s->codec, &h1_codec); /* back to the codec the page resumed */
	assert_null(p.s->ix->page);
	assert_ptr_equal(p.s->st, &session_drain_state);
	got = cout_text(p.s);
	want = expected(&not_granted, first, head);
	assert_string_equal(got, want);
	free(got);
	free(want);
	pg_free(&p);
}

static void test_answer(void **state)
{
	struct http_header hdrs[HEADERS_MAX];
	struct http_request req;
	struct pg p = pg_new("", false, "example.test");
	char *got;

	/* one whole, byte for byte */
	parse("GET /v1/models?limit=2 HTTP/1.1\r\nHost: example.test\r\n\r\n", &req, hdrs);
	page_up(&p, &not_granted, 443);
	refuse_page_answer(p.s, &req);
	got = cout_text(p.s);
	assert_string_equal(got,
			    "HTTP/1.1 403 Forbidden\r\n"
			    "Proxy-Status: sluice; error=http_request_denied; details=\"not-granted "
			    "id=0123456789abcdef: example.test is not granted; to allow it: sluice "
			    "allow example.test\"\r\n"
			    "Content-Type: text/plain; charset=utf-8\r\n"
			    "Content-Length: 164\r\n"
			    "Connection: close\r\n"
			    "\r\n"
			    "sluice: refused GET https://example.test/v1/models?limit=2\n"
			    "sluice: example.test is not granted; to allow it: sluice allow example.test\n"
			    "refusal id: 0123456789abcdef\n");
	free(got);
	pg_free(&p);

	/* the rest against the same shape (expected): the first line of the body differs */
	answer_is(&req, 443, "sluice: refused GET https://example.test/v1/models?limit=2\n", false);
	/* the body names the Proxy-Status' refusal id (checked whole in expected) */
	answer_is(&req, 8443, "sluice: refused GET https://example.test:8443/v1/models?limit=2\n",
		  false);
	parse("POST /upload HTTP/1.1\r\nHost: example.test\r\nContent-Length: 0\r\n\r\n", &req, hdrs);
	answer_is(&req, 443, "sluice: refused POST https://example.test/upload\n", false);
	/* a HEAD: the head alone, its Content-Length the body's it would have */
	parse("HEAD /x HTTP/1.1\r\nHost: example.test\r\n\r\n", &req, hdrs);
	answer_is(&req, 443, "sluice: refused HEAD https://example.test/x\n", true);
	/* an absolute-form target is not echoed: the tunnel's host is what was refused */
	parse("GET http://evil.test/steal HTTP/1.1\r\nHost: evil.test\r\n\r\n", &req, hdrs);
	answer_is(&req, 443, "sluice: refused GET https://example.test/\n", false);
	/* what is not printable ASCII is a '?' */
	req.target = "/a\x01" "b\x7f" "c d\xc3\xa9";
	req.target_len = strlen(req.target);
	req.form = HTTP_FORM_ORIGIN;
	answer_is(&req, 443, "sluice: refused GET https://example.test/a?b?c?d??\n", false);
	/* no request came whole (a timeout, a malformed head): the CONNECT is named */
	answer_is(NULL, 443, "sluice: refused CONNECT example.test:443\n", false);
	answer_is(NULL, 8443, "sluice: refused CONNECT example.test:8443\n", false);
}

static void test_answer_no_id(void **state)
{
	struct refusal r = not_granted;
	struct pg p = pg_new("", false, "example.test");
	char *got, *want;

	/* a budget's refusal has no id: no id line */
	r.reason = "budget";
	r.id[0] = '\0';
	page_up(&p, &r, 443);
	refuse_page_answer(p.s, NULL);
	got = cout_text(p.s);
	want = expected(&r, "sluice: refused CONNECT example.test:443\n", false);
	assert_string_equal(got, want);
	assert_null(strstr(got, "refusal id"));
	free(got);
	free(want);
	pg_free(&p);
}

static void test_answer_no_handshake(void **state)
{
	struct pg p = pg_new("", false, "example.test");

	/* the client's handshake did not complete: nothing can be said, closed */
	page_up(&p, &not_granted, 443);
	p.s->intercept = false;
	refuse_page_answer(p.s, NULL);
	assert_true(p.s->closed);
	assert_ptr_equal(p.s->codec, &h1_codec);
	assert_null(p.s->ix->page);
	assert_int_equal(buf_len(&p.s->cout), 0);
	pg_free(&p);
}

/* --- the codec ------------------------------------------------------------------ */

static void test_codec_refuse(void **state)
{
	struct pg p = pg_new("", false, "example.test");
	struct refusal late = { .status = 504, .reason = "head-timeout",
				.proxy_status = "connection_timeout", .detail = "no request head" };
	char *got, *want;

	/* refused again inside the page (its head timed out): the page's refusal answers */
	page_up(&p, &not_granted, 443);
	exchange_refuse(p.x, &late);
	assert_ptr_equal(p.s->codec, &h1_codec);
	assert_ptr_equal(p.s->st, &session_drain_state);
	got = cout_text(p.s);
	want = expected(&not_granted, "sluice: refused CONNECT example.test:443\n", false);
	assert_string_equal(got, want);
	assert_null(strstr(got, "504"));
	free(got);
	free(want);
	pg_free(&p);
}

static struct {
	int calls;
	struct session *s;
	bool h2;
} tls_upped;

static void tls_up_test(struct session *s, bool h2)
{
	tls_upped.calls++;
	tls_upped.s = s;
	tls_upped.h2 = h2;
}

static const struct codec resumed = {
	.name = "resumed", .refuse = NULL, .close = exchange_conn_close,
	.release = exchange_conn_release, .tls_up = tls_up_test,
};

static void test_codec_tls_up(void **state)
{
	struct pg p = pg_new("", false, "example.test");

	page_up(&p, &not_granted, 443);
	p.s->ix->resume = &resumed;
	refuse_page_codec.tls_up(p.s, false);
	assert_int_equal(tls_upped.calls, 1);
	assert_ptr_equal(tls_upped.s, p.s);
	assert_false(tls_upped.h2);
	refuse_page_codec.tls_up(p.s, true);
	assert_int_equal(tls_upped.calls, 2);
	assert_true(tls_upped.h2);
	/* the page's refusal is still to say: the request inside is read by the resumed codec */
	assert_non_null(p.s->ix->page);
	p.s->ix->resume = &h1_codec;
	pg_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wanted),
		cmocka_unit_test(test_begin),
		cmocka_unit_test(test_answer),
		cmocka_unit_test(test_answer_no_id),
		cmocka_unit_test(test_answer_no_handshake),
		cmocka_unit_test(test_codec_refuse),
		cmocka_unit_test(test_codec_tls_up),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
