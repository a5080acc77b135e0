/*
 * test_proxy_head.c: the request head sluice writes upstream and the
 * response head it writes back (proxy/head.c), byte for byte, from heads
 * parsed by lib/http.c as the proxy parses them: origin-form target, the
 * judged host's canonical name first as Host (its port only when not the
 * scheme's), hop-by-hop headers, Proxy-*, names Connection lists and the
 * stamp never leaving; a header rule's credential in its one place (the
 * client's own value of that header out, a placeholder replaced); a
 * scrubbed host asked for identity without ranges; Connection: close when
 * the client closes; head_up_size equal to the bytes of the head it
 * charges; a buffer without room refused.
 *
 * head.c's functions take the session and read the request's fields on
 * its exchange (s->x). ctx_new below is the one place that knows how;
 * when the request path takes the exchange alone, only it changes.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"
#include "proxy_fakes.h"
#include "scrub.h"
#include "request.h"

struct ctx {
	struct session s;
	struct exchange x;
	struct http_request req;
	struct http_header hdrs[HEADERS_MAX];
	char *raw;
	struct scrub *scrub;
};

/* A request judged for host:port (canonical), its head raw parsed; intercept: inside TLS. */
static struct ctx *ctx_new(const char *raw, const char *host, uint16_t port, bool intercept)
{
	struct ctx *c = calloc(1, sizeof(*c));
	const char *err = NULL;

	assert_non_null(c);
	c->raw = strdup(raw);
	assert_int_equal(http_parse_request(c->raw, strlen(raw), HEAD_MAX, &c->req, c->hdrs,
					    HEADERS_MAX),
			 (ssize_t)strlen(raw));
	assert_int_equal(host_canon(host, strlen(host), &c->x.t.host, &err), 0);
	c->x.t.port = port;
	c->x.t.via = intercept ? GRANT_VIA_CONNECT : GRANT_VIA_HTTP;
	c->s.x = &c->x;
	c->x.conn = &c->s;
	c->s.intercept = intercept;
	buf_init(&c->s.uout, HEAD_MAX + 1024);
	buf_init(&c->s.cout, RESP_HEAD_MAX);
	return c;
}

/* The request's credential: rule (a config's), its secret. */
static void ctx_rule(struct ctx *c, const struct inject_rule *rule, const char *secret)
{
	c->x.rule = rule;
	c->x.secret = strdup(secret);
	c->x.secret_len = strlen(secret);
}

/* The host's answers are scrubbed. */
static void ctx_scrub(struct ctx *c)
{
	const char *secrets[] = { "s3cret" };
	size_t lens[] = { 6 };

	c->scrub = scrub_new(secrets, lens, 1);
	assert_non_null(c->scrub);
	c->x.scrub = c->scrub;
}

static void ctx_free(struct ctx *c)
{
	buf_release(&c->s.uout);
	buf_release(&c->s.cout);
	scrub_free(c->scrub);
	free(c->x.secret);
	free(c->raw);
	free(c);
}

/* head_upstream's bytes, NUL-terminated in a static buffer. */
static const char *upstream(struct ctx *c)
{
	static char out[HEAD_MAX + 1024];

	assert_int_equal(head_upstream(&c->x, &c->req), 0);
	assert_true(buf_len(&c->s.uout) < sizeof(out));
	memcpy(out, buf_head(&c->s.uout), buf_len(&c->s.uout));
	out[buf_len(&c->s.uout)] = '\0';
	return out;
}

static void test_plain(void **state)
{
	struct ctx *c = ctx_new("GET http://Example.TEST./a/b?c=d HTTP/1.1\r\n"
				"Host: Example.TEST.\r\n"
				"Proxy-Authorization: Basic eDp5\r\n"
				"Proxy-Connection: keep-alive\r\n"
				"Connection: keep-alive, X-Hop\r\n"
				"X-Hop: 1\r\n"
				"Keep-Alive: 5\r\n"
				"TE: trailers\r\n"
				"Sluice-Stamp: v=1;forged\r\n"
				"sluice-stamp: again\r\n"
				"Accept: */*\r\n"
				"X-Empty: \r\n"
				"Transfer-Encoding: chunked\r\n"
				"\r\n",
				"example.test", 80, false);

	/* the canonical Host first, origin-form; chunked framing goes as it is */
	assert_string_equal(upstream(c), "GET /a/b?c=d HTTP/1.1\r\n"
					 "Host: example.test\r\n"
					 "Accept: */*\r\n"
					 "X-Empty: \r\n"
					 "Transfer-Encoding: chunked\r\n"
					 "\r\n");
	/* what a budget charges for it is what went */
	assert_int_equal(head_up_size(&c->x, &c->req), buf_len(&c->s.uout));
	ctx_free(c);

	/* HTTP/1.0, and a client that closes */
	c = ctx_new("POST http://example.test:8080/x HTTP/1.0\r\nContent-Length: 0\r\n\r\n",
		    "example.test", 8080, false);
	c->x.client_close = true;
	assert_string_equal(upstream(c), "POST /x HTTP/1.0\r\n"
					 "Host: example.test:8080\r\n"
					 "Content-Length: 0\r\n"
					 "Connection: close\r\n"
					 "\r\n");
	assert_int_equal(head_up_size(&c->x, &c->req) + 19, buf_len(&c->s.uout)); /* ours, not its */
	ctx_free(c);
}

static void test_authority(void **state)
{
	static const struct {
		const char *host;
		uint16_t port;
		bool intercept;
		const char *want;
	} cases[] = {
		{ "example.test", 80, false, "example.test" },
		{ "example.test", 443, false, "example.test:443" },
		{ "example.test", 443, true, "example.test" },
		{ "example.test", 80, true, "example.test:80" },
		{ "EXAMPLE.test.", 8443, true, "example.test:8443" },
		{ "b\xc3\xbc" "cher.test", 80, false, "xn--bcher-kva.test" },
		{ "127.1", 80, false, "127.0.0.1" },
		{ "::1", 80, false, "[::1]" },
		{ "[::1]", 8080, false, "[::1]:8080" },
		{ "2001:DB8::1", 443, true, "[2001:db8::1]" },
	};
	char out[HOST_NAME_MAX_LEN + 16], host[300], want[320];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ctx *c = ctx_new("GET / HTTP/1.1\r\nHost: whatever.test\r\n\r\n", cases[i].host,
					cases[i].port, cases[i].intercept);

		assert_int_equal(head_authority(&c->x, out, sizeof(out)), (int)strlen(cases[i].want));
		assert_string_equal(out, cases[i].want);
		/* the client's Host is not what goes: the judged one is */
		snprintf(want, sizeof(want), "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", cases[i].want);
		assert_string_equal(upstream(c), want);
		assert_int_equal(head_up_size(&c->x, &c->req), strlen(want));
		ctx_free(c);
	}
	/* a name at its longest */
	memset(host, 'a', 63);
	memcpy(host + 63, ".", 1);
	memset(host + 64, 'b', 63);
	memcpy(host + 127, ".", 1);
	memset(host + 128, 'c', 63);
	memcpy(host + 191, ".", 1);
	memset(host + 192, 'd', 61);
	host[253] = '\0';
	{
		struct ctx *c = ctx_new("GET / HTTP/1.1\r\nHost: h\r\n\r\n", host, 65535, false);

		snprintf(want, sizeof(want), "%s:65535", host);
		assert_int_equal(head_authority(&c->x, out, sizeof(out)), (int)strlen(want));
		assert_string_equal(out, want);
		ctx_free(c);
	}
}

static struct config *rules(void)
{
	struct config *cf = config_new();
	static const char text[] =
		"inject bearer host=api.test header=Authorization prefix=\"Bearer \" env=SLUICE_UNIT_A\n"
		"inject ph host=ph.test header=X-Api-Key env=SLUICE_UNIT_B require=PLACEHOLDER\n";

	assert_non_null(cf);
	assert_int_equal(config_parse(cf, text, sizeof(text) - 1, "unit.conf", stderr), 0);
	assert_int_equal(cf->nrules, 2);
	return cf;
}

static void test_credential(void **state)
{
	struct config *cf = rules();
	struct ctx *c;

	/* the client's own Authorization never goes; ours goes last, once */
	c = ctx_new("GET /v1 HTTP/1.1\r\nHost: api.test\r\nauthorization: Basic stolen\r\n"
		    "Accept: a\r\nAuthorization: again\r\n\r\n",
		    "api.test", 443, true);
	ctx_rule(c, &cf->rules[0], "s3cret");
	assert_string_equal(upstream(c), "GET /v1 HTTP/1.1\r\n"
					 "Host: api.test\r\n"
					 "Accept: a\r\n"
					 "Authorization: Bearer s3cret\r\n"
					 "\r\n");
	assert_true(c->x.injected);
	/* the budget charges the client's bytes, not our credential */
	assert_int_equal(head_up_size(&c->x, &c->req), strlen("GET /v1 HTTP/1.1\r\nHost: api.test\r\n"
								"authorization: Basic stolen\r\nAccept: a\r\n"
								"Authorization: again\r\n\r\n"));
	ctx_free(c);

	/* a rule that requires a placeholder: the one header carrying it is replaced */
	c = ctx_new("GET / HTTP/1.1\r\nHost: ph.test\r\nX-Api-Key: PLACEHOLDER\r\nAccept: a\r\n\r\n", "ph.test", 443,
		    true);
	ctx_rule(c, &cf->rules[1], "k3y");
	assert_string_equal(upstream(c), "GET / HTTP/1.1\r\n"
					 "Host: ph.test\r\n"
					 "Accept: a\r\n"
					 "X-Api-Key: k3y\r\n"
					 "\r\n");
	assert_true(c->x.injected);
	ctx_free(c);

	/* ... not without it (nothing injected, the client's header as it was) */
	c = ctx_new("GET / HTTP/1.1\r\nHost: ph.test\r\nX-Api-Key: mine\r\nAccept: a\r\n\r\n", "ph.test", 443, true);
	ctx_rule(c, &cf->rules[1], "k3y");
	assert_string_equal(upstream(c), "GET / HTTP/1.1\r\n"
					 "Host: ph.test\r\n"
					 "X-Api-Key: mine\r\n"
					 "Accept: a\r\n"
					 "\r\n");
	assert_false(c->x.injected);
	ctx_free(c);

	/* ... nor with two of them */
	c = ctx_new("GET / HTTP/1.1\r\nHost: ph.test\r\nX-Api-Key: PLACEHOLDER\r\nX-Api-Key: PLACEHOLDER\r\n\r\n",
		    "ph.test", 443, true);
	ctx_rule(c, &cf->rules[1], "k3y");
	assert_null(strstr(upstream(c), "k3y"));
	assert_false(c->x.injected);
	ctx_free(c);
	config_free(cf);
}

static void test_scrubbed(void **state)
{
	struct ctx *c = ctx_new("GET /f HTTP/1.1\r\n"
				"Host: api.test\r\n"
				"Accept-Encoding: gzip, br\r\n"
				"Range: bytes=0-5\r\n"
				"If-Range: \"e\"\r\n"
				"Request-Range: bytes=0-5\r\n"
				"Accept: a\r\n"
				"\r\n",
				"api.test", 443, true);

	ctx_scrub(c);
	c->x.client_close = true;
	assert_string_equal(upstream(c), "GET /f HTTP/1.1\r\n"
					 "Host: api.test\r\n"
					 "Accept: a\r\n"
					 "Accept-Encoding: identity\r\n"
					 "Connection: close\r\n"
					 "\r\n");
	ctx_free(c);
}

static void test_no_room(void **state)
{
	static const char raw[] = "GET /a HTTP/1.1\r\nHost: example.test\r\nAccept: a\r\nX-Long: 0123456789\r\n\r\n";
	struct ctx *c = ctx_new(raw, "example.test", 80, false);
	size_t whole;

	whole = strlen(upstream(c));
	ctx_free(c);
	/* every ceiling below the whole head: -1 */
	for (size_t max = 1; max < whole; max++) {
		c = ctx_new(raw, "example.test", 80, false);
		buf_release(&c->s.uout);
		buf_init(&c->s.uout, max);
		assert_int_equal(head_upstream(&c->x, &c->req), -1);
		ctx_free(c);
	}
	c = ctx_new(raw, "example.test", 80, false);
	buf_release(&c->s.uout);
	buf_init(&c->s.uout, whole);
	assert_int_equal(head_upstream(&c->x, &c->req), 0);
	ctx_free(c);
}

/* head_client's bytes for the response raw to a request of method. */
static char *to_client(struct ctx *c, const char *raw)
{
	struct http_response resp;
	struct http_header hdrs[HEADERS_MAX];
	char *out;

	assert_int_equal(http_parse_response(raw, strlen(raw), RESP_HEAD_MAX, HTTP_GET, &resp, hdrs,
					     HEADERS_MAX),
			 (ssize_t)strlen(raw));
	assert_int_equal(head_client(&c->x, &resp), 0);
	out = strndup(buf_head(&c->s.cout), buf_len(&c->s.cout));
	buf_consume(&c->s.cout, buf_len(&c->s.cout));
	return out;
}

static void test_client(void **state)
{
	struct ctx *c = ctx_new("GET / HTTP/1.1\r\nHost: example.test\r\n\r\n", "example.test", 80, false);
	char *out;

	out = to_client(c, "HTTP/1.1 200 Fine\r\n"
			   "Connection: keep-alive, X-Hop\r\n"
			   "Keep-Alive: timeout=5\r\n"
			   "X-Hop: 1\r\n"
			   "Proxy-Authenticate: Basic\r\n"
			   "Content-Length: 3\r\n"
			   "Set-Cookie: a=b\r\n"
			   "\r\n");
	assert_string_equal(out, "HTTP/1.1 200 Fine\r\n"
				 "Content-Length: 3\r\n"
				 "Set-Cookie: a=b\r\n"
				 "\r\n");
	free(out);
	/* a client that closes is told; a 1xx is not */
	c->x.client_close = true;
	out = to_client(c, "HTTP/1.1 100 Continue\r\n\r\n");
	assert_string_equal(out, "HTTP/1.1 100 Continue\r\n\r\n");
	free(out);
	out = to_client(c, "HTTP/1.0 204 No Content\r\n\r\n");
	assert_string_equal(out, "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n");
	free(out);
	ctx_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain),      cmocka_unit_test(test_authority),
		cmocka_unit_test(test_credential), cmocka_unit_test(test_scrubbed),
		cmocka_unit_test(test_no_room),    cmocka_unit_test(test_client),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
