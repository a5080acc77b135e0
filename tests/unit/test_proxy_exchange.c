/*
 * test_proxy_exchange.c: one exchange alone (proxy/exchange.c), its
 * neighbours faked: a connection with no socket, a codec that records
 * refusals (proxy_fakes.h), a real policy from a small config text, a
 * clock the test sets. Checked: its storage (exchange_new, _reset, _free:
 * zeroed, its connection kept, what it holds given back); exchange_row's
 * fields, from the exchange and from its connection's stamp, build token
 * and client; exchange_log writing the row once, lograte's refusal of a
 * principal's refusal rows past its budget (an agent's telemetry apart),
 * and the secrets going either way; exchange_start and exchange_judge
 * against the policy (allowed with its grant; refused with the status,
 * reason and words each refusal has; a budget charged once); the body's
 * cap (exchange_capped, exchange_body_refuse: 413); an h2 stream's
 * judgement waiting for its rule's token (exchange_judge: 1).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "policy.h"
#include "proxy_fakes.h"
#include "scrub.h"
#include "request.h"

struct ex {
	struct fake_proxy *fp;
	struct session *s;
};

/* A proxy with config conf, its policy, budgets and row budgets; a connection of it. */
static struct ex up(const char *conf)
{
	struct ex e;

	e.fp = fake_proxy_new(conf);
	e.fp->px.policy = policy_new(e.fp->px.config, NULL, 0, false, NULL, 0, e.fp->px.run_id,
				     time(NULL));
	assert_non_null(e.fp->px.policy);
	assert_int_equal(budget_init(&e.fp->px), 0);
	assert_int_equal(lograte_init(&e.fp->px), 0);
	e.s = fake_session_new(&e.fp->px, NULL);
	e.s->codec = &fake_codec;
	fake_refusals_reset();
	fake_dials_reset();
	return e;
}

static void down(struct ex e)
{
	fake_session_free(e.s);
	lograte_release(&e.fp->px);
	budget_release(&e.fp->px);
	policy_free(e.fp->px.policy);
	fake_proxy_free(e.fp);
}

/* A request head, parsed as h1.c parses it; it points into raw (kept with it). */
struct head {
	char *raw;
	struct http_request req;
	struct http_header hdrs[HEADERS_MAX];
};

static struct head *head_of(const char *raw)
{
	struct head *h = calloc(1, sizeof(*h));

	assert_non_null(h);
	h->raw = strdup(raw);
	assert_int_equal(http_parse_request(h->raw, strlen(raw), HEAD_MAX, &h->req, h->hdrs,
					    HEADERS_MAX),
			 (ssize_t)strlen(raw));
	return h;
}

static void head_free(struct head *h)
{
	free(h->raw);
	free(h);
}

/* The network log's rows so far (caller frees). */
static char *rows(const struct ex *e)
{
	return fake_proxy_log(e->fp);
}

static size_t nrows(const struct ex *e)
{
	char *log = rows(e);
	size_t n = fake_count(log, "\n");

	free(log);
	return n;
}

/* Whether the log's last row holds every needle (NULL-terminated list). */
static void assert_last_row(const struct ex *e, const char *const *needles)
{
	char *log = rows(e), *last;
	size_t len = strlen(log);

	assert_true(len > 0 && log[len - 1] == '\n');
	log[len - 1] = '\0';
	last = strrchr(log, '\n');
	last = last != NULL ? last + 1 : log;
	for (size_t i = 0; needles[i] != NULL; i++) {
		if (strstr(last, needles[i]) == NULL)
			print_error("row %s\nlacks %s\n", last, needles[i]);
		assert_non_null(strstr(last, needles[i]));
	}
	free(log);
}

/* A verified stamp on the connection, as who.c keeps one. */
static void stamp(struct session *s, const char *src, const char *net, const char *as)
{
	struct stamp st = { .version = 1, .kid = 7, .seq = 42, .boot = "00000000000000aa" };

	snprintf(st.src, sizeof(st.src), "%s", src);
	snprintf(st.net, sizeof(st.net), "%s", net);
	snprintf(st.as, sizeof(st.as), "%s", as);
	assert_int_equal(session_stamp_keep(s, &st), 0);
}

/* --- storage ------------------------------------------------------------------- */

static void test_storage(void **state)
{
	struct ex e = up("allow budget.test max-requests=5\n");
	struct exchange *x;
	struct head *h = head_of("GET http://budget.test/ HTTP/1.1\r\nHost: budget.test\r\n\r\n");

	assert_null(e.s->x);
	assert_int_equal(exchange_new(e.s), 0);
	x = e.s->x;
	assert_non_null(x);
	assert_ptr_equal(x->conn, e.s);
	assert_false(x->active);
	assert_int_equal(x->phase, XP_JUDGE);
	assert_null(x->budget);

	/* a request judged, a budget held, a WebSocket's state, a secret: all of it goes */
	assert_int_equal(exchange_start(x, &h->req), 0);
	assert_non_null(x->budget);
	x->ws = calloc(1, 4096); /* upgrade.c's (zeroed: not open); only freed here */
	assert_non_null(x->ws);
	x->phase = XP_SEND;
	assert_int_equal(exchange_new(e.s), 0); /* the next request: the same storage, zeroed */
	assert_ptr_equal(e.s->x, x);
	assert_ptr_equal(x->conn, e.s);
	assert_false(x->active);
	assert_int_equal(x->phase, XP_JUDGE);
	assert_null(x->budget);
	assert_null(x->ws);
	assert_string_equal(x->path, "");
	assert_null(x->decision);

	/* a budget given back by the reset: the next exchange finds all five requests but one */
	assert_int_equal(exchange_start(x, &h->req), 0);
	exchange_reset(x);
	assert_null(x->budget);
	assert_ptr_equal(x->conn, e.s);

	x->secret = strdup("s3cret");
	x->secret_len = 6;
	x->ws = calloc(1, 4096);
	assert_int_equal(exchange_start(x, &h->req), 0);
	exchange_free(e.s); /* the secret, the WebSocket, the budget: the sanitizer sees a leak */
	assert_null(e.s->x);
	exchange_free(e.s); /* twice: nothing */
	assert_null(e.s->x);
	/* three requests counted, two left */
	assert_int_equal(exchange_new(e.s), 0);
	assert_int_equal(exchange_start(e.s->x, &h->req), 0);
	assert_int_equal(exchange_new(e.s), 0);
	assert_int_equal(exchange_start(e.s->x, &h->req), 0);
	assert_int_equal(fake_refusals(), 0);
	assert_int_equal(exchange_new(e.s), 0);
	assert_int_equal(exchange_start(e.s->x, &h->req), -1);
	assert_int_equal(fake_refused(0)->status, 403);
	assert_string_equal(fake_refused(0)->reason, "budget");
	head_free(h);
	down(e);
}

/* --- its row ------------------------------------------------------------------- */

static void test_row(void **state)
{
	struct ex e = up("");
	struct netlog_row row;
	struct stamp st;
	char who[SESSION_WHO_MAX];
	struct exchange *x;
	const char *secrets[] = { "s3cret" };
	size_t lens[] = { 6 };

	assert_int_equal(exchange_new(e.s), 0);
	x = e.s->x;
	/* an unattributed connection's exchange, as little as a refused head has */
	x->t_start = loop_clock_ms();
	x->req = 3;
	x->method = HTTP_UNKNOWN;
	exchange_row(x, &row, &st, who, sizeof(who));
	assert_int_equal(row.conn, e.s->id);
	assert_int_equal(row.req, 3);
	assert_string_equal(row.run, "0123456789abcdef");
	assert_string_equal(row.who, "unattributed");
	assert_null(row.build);
	assert_null(row.stamp);
	assert_string_equal(row.client, "127.0.0.7:40000");
	assert_null(row.proto);
	assert_string_equal(row.kind, "http");
	assert_null(row.method);
	assert_null(row.host);
	assert_int_equal(row.port, -1);
	assert_null(row.path);
	assert_null(row.grant);
	assert_null(row.refusal);
	assert_null(row.inject);
	assert_int_equal(row.scrubbed, -1);
	assert_null(row.dialed);
	assert_null(row.ua);
	assert_null(row.detail);

	/* a request with everything a row takes from it */
	stamp(e.s, "10.88.0.5", "podman", "project:demo");
	x->method = HTTP_GET;
	x->minor = 1;
	snprintf(x->t.host.name, sizeof(x->t.host.name), "example.test");
	x->t.port = 8080;
	snprintf(x->path, sizeof(x->path), "/a?b");
	x->path_len = 4;
	snprintf(x->ua, sizeof(x->ua), "curl/8");
	x->ua_len = 6;
	x->status = 204;
	x->decision = "observe";
	x->reason = "not-granted";
	snprintf(x->grant, sizeof(x->grant), "example.test:8080 (config)");
	snprintf(x->refusal, sizeof(x->refusal), "0123456789abcdef");
	snprintf(x->inject_name, sizeof(x->inject_name), "gh");
	x->scrub = scrub_new(secrets, lens, 1);
	assert_non_null(x->scrub);
	snprintf(x->dialed, sizeof(x->dialed), "192.0.2.1:8080");
	x->up = 11;
	x->down = 22;
	x->dns_ms = 1.5;
	x->connect_ms = 2.5;
	snprintf(x->detail, sizeof(x->detail), "would be refused");
	x->t_start = loop_clock_ms();
	fake_clock_advance(250);
	exchange_row(x, &row, &st, who, sizeof(who));
	assert_string_equal(row.who, "10.88.0.5@podman");
	assert_ptr_equal(row.stamp, &st);
	assert_string_equal(st.src, "10.88.0.5");
	assert_string_equal(st.net, "podman");
	assert_string_equal(st.as, "project:demo");
	assert_string_equal(st.boot, "00000000000000aa");
	assert_int_equal(st.seq, 42);
	assert_int_equal(st.kid, 7);
	assert_string_equal(row.proto, "http/1.1");
	assert_string_equal(row.kind, "http");
	assert_string_equal(row.method, "GET");
	assert_string_equal(row.host, "example.test");
	assert_int_equal(row.port, 8080);
	assert_int_equal(row.path_len, 4);
	assert_memory_equal(row.path, "/a?b", 4);
	assert_int_equal(row.status, 204);
	assert_string_equal(row.decision, "observe");
	assert_string_equal(row.reason, "not-granted");
	assert_string_equal(row.grant, "example.test:8080 (config)");
	assert_string_equal(row.refusal, "0123456789abcdef");
	assert_string_equal(row.inject, "gh");
	assert_int_equal(row.scrubbed, 0);
	assert_string_equal(row.dialed, "192.0.2.1:8080");
	assert_int_equal(row.up, 11);
	assert_int_equal(row.down, 22);
	assert_true(row.ms == 250.0);
	assert_true(row.dns_ms == 1.5);
	assert_true(row.connect_ms == 2.5);
	assert_int_equal(row.ua_len, 6);
	assert_memory_equal(row.ua, "curl/8", 6);
	assert_string_equal(row.detail, "would be refused");

	/* HTTP/1.0; inside an intercepted CONNECT; an h2 stream; a CONNECT */
	x->minor = 0;
	exchange_row(x, &row, &st, who, sizeof(who));
	assert_string_equal(row.proto, "http/1.0");
	e.s->intercept = true;
	exchange_row(x, &row, &st, who, sizeof(who));
	assert_string_equal(row.kind, "https");
	x->h2 = true;
	exchange_row(x, &row, &st, who, sizeof(who));
	assert_string_equal(row.proto, "h2");
	e.s->intercept = false;
	x->h2 = false;
	x->method = HTTP_CONNECT;
	exchange_row(x, &row, &st, who, sizeof(who));
	assert_null(row.proto);
	assert_string_equal(row.kind, "tunnel");
	assert_string_equal(row.method, "CONNECT");
	assert_null(row.path); /* a CONNECT's target is its host and port */

	/* a build token's connection: its name is who, over the stamp's */
	e.s->build = malloc(sizeof(*e.s->build) + sizeof("build:ci"));
	assert_non_null(e.s->build);
	strcpy(e.s->build->as, "build:ci");
	exchange_row(x, &row, &st, who, sizeof(who));
	assert_string_equal(row.build, "build:ci");
	assert_string_equal(row.who, "10.88.0.5@podman"); /* the stamp still says where */
	free(e.s->stamp);
	e.s->stamp = NULL;
	exchange_row(x, &row, &st, who, sizeof(who));
	assert_string_equal(row.who, "build:ci");
	assert_null(row.stamp);
	down(e);
}

static void test_log_once(void **state)
{
	struct ex e = up("");
	struct exchange *x;

	assert_int_equal(exchange_new(e.s), 0);
	x = e.s->x;
	/* not begun: no row */
	assert_false(exchange_log(x));
	assert_int_equal(nrows(&e), 0);

	x->active = true;
	x->method = HTTP_GET;
	x->minor = 1;
	x->decision = "allow";
	x->t_start = loop_clock_ms();
	snprintf(x->t.host.name, sizeof(x->t.host.name), "example.test");
	x->t.port = 80;
	x->secret = strdup("s3cret");
	x->secret_len = 6;
	assert_true(exchange_log(x));
	assert_false(x->active);
	assert_null(x->secret); /* the secret goes with the row */
	assert_int_equal(x->secret_len, 0);
	assert_int_equal(nrows(&e), 1);
	assert_last_row(&e, (const char *const[]){ "\"decision\":\"allow\"", "\"host\":\"example.test\"",
						   "\"who\":\"unattributed\"", NULL });
	/* once: a second call writes nothing */
	assert_false(exchange_log(x));
	assert_false(exchange_log(x));
	assert_int_equal(nrows(&e), 1);
	/* nor does the connection's close (its codec's): the row is written already */
	e.s->codec->close(e.s, "closed");
	assert_int_equal(nrows(&e), 1);
	down(e);
}

/* A refused exchange that moved nothing, begun on a fresh connection of e's proxy. */
static struct session *refused_conn(struct ex *e, const char *reason, const char *secret)
{
	struct session *s = fake_session_new(&e->fp->px, NULL);

	s->codec = &fake_codec;
	assert_int_equal(exchange_new(s), 0);
	s->x->active = true;
	s->x->t_start = loop_clock_ms();
	s->x->method = HTTP_GET;
	s->x->decision = "refuse";
	s->x->reason = reason;
	if (secret != NULL) {
		s->x->secret = strdup(secret);
		s->x->secret_len = strlen(secret);
	}
	return s;
}

static void test_log_rate(void **state)
{
	struct ex e = up("log-row-rate 1\nlog-row-burst 2\n");
	struct session *s[6];

	/* one client's refusal rows: its burst of two, then counted, not written */
	for (size_t i = 0; i < 3; i++)
		s[i] = refused_conn(&e, "not-granted", "s3cret");
	assert_true(exchange_log(s[0]->x));
	assert_true(exchange_log(s[1]->x));
	assert_false(exchange_log(s[2]->x));
	assert_int_equal(nrows(&e), 2);
	/* not written, still logged once and its secret gone */
	assert_false(s[2]->x->active);
	assert_null(s[2]->x->secret);
	/* an agent's telemetry ("quiet") spends a budget of its own */
	s[3] = refused_conn(&e, "quiet", NULL);
	assert_true(exchange_log(s[3]->x));
	assert_int_equal(nrows(&e), 3);
	/* an allowed exchange is never held back */
	s[4] = refused_conn(&e, "granted", NULL);
	s[4]->x->decision = "allow";
	assert_true(exchange_log(s[4]->x));
	/* another client has its own budget */
	s[5] = refused_conn(&e, "not-granted", NULL);
	snprintf(s[5]->client, sizeof(s[5]->client), "127.0.0.9:1");
	/* the same /8 of loopback counts as one client: its unit is spent */
	assert_false(exchange_log(s[5]->x));
	stamp(s[5], "10.88.0.5", "podman", "");
	s[5]->x->active = true;
	assert_true(exchange_log(s[5]->x));
	assert_last_row(&e, (const char *const[]){ "\"who\":\"10.88.0.5@podman\"", NULL });
	assert_int_equal(nrows(&e), 5);
	for (size_t i = 0; i < 6; i++)
		fake_session_free(s[i]);
	down(e);
}

/* --- its start and judgement --------------------------------------------------- */

#define POLICY                                                                                    \
	"allow allowed.test\n"                                                                    \
	"allow budget.test max-up=1000\n"                                                         \
	"allow tunnel.test:443\n"                                                                 \
	"max-body-bytes 100\n"                                                                    \
	"body-limit big.test 50\n"                                                              \
	"allow big.test\n"

static void test_start_allowed(void **state)
{
	struct ex e = up(POLICY);
	struct head *h = head_of("GET http://Allowed.TEST/a?b HTTP/1.1\r\n"
				 "Host: allowed.test:80\r\n"
				 "User-Agent: ua/1\r\n"
				 "\r\n");
	struct exchange *x;

	assert_int_equal(exchange_new(e.s), 0);
	x = e.s->x;
	fake_clock_advance(5);
	assert_int_equal(exchange_start(x, &h->req), 0);
	assert_int_equal(fake_refusals(), 0);
	assert_true(x->active);
	assert_int_equal(x->req, 1);
	assert_int_equal(e.s->nreq, 1);
	assert_true(x->t_start == loop_clock_ms());
	assert_true(x->dns_ms < 0 && x->connect_ms < 0);
	assert_int_equal(x->method, HTTP_GET);
	assert_int_equal(x->minor, 1);
	assert_string_equal(x->path, "/a?b");
	assert_string_equal(x->ua, "ua/1");
	assert_false(x->client_close);
	assert_string_equal(x->t.host.name, "allowed.test");
	assert_int_equal(x->t.port, 80);
	assert_int_equal(x->t.via, GRANT_VIA_HTTP);
	assert_string_equal(x->decision, "allow");
	assert_non_null(x->reason);
	assert_string_equal(x->grant, "allowed.test (config)");
	assert_null(x->budget); /* no budget on its grant */
	assert_false(x->raw_tunnel);
	assert_true(exchange_log(x));
	assert_last_row(&e, (const char *const[]){ "\"decision\":\"allow\"", "\"host\":\"allowed.test\"",
						   "\"path\":\"/a?b\"", "\"grant\":\"allowed.test (config)\"",
						   "\"ua\":\"ua/1\"", "\"req\":1,", NULL });

	/* the connection's next request is its second; HTTP/1.0 closes after it */
	head_free(h);
	h = head_of("CONNECT tunnel.test:443 HTTP/1.0\r\n\r\n");
	assert_int_equal(exchange_new(e.s), 0);
	assert_int_equal(exchange_start(x, &h->req), 0);
	assert_int_equal(x->req, 2);
	assert_true(x->client_close);
	assert_int_equal(x->t.via, GRANT_VIA_CONNECT);
	assert_int_equal(x->t.port, 443);
	assert_string_equal(x->grant, "tunnel.test:443 (config)");
	assert_int_equal(fake_refusals(), 0);
	head_free(h);
	down(e);
}

struct refused_case {
	const char *head;
	int status;
	const char *reason, *proxy_status, *detail; /* detail: its start */
	bool id;                                     /* a grantable refusal's id */
};

static void test_start_refused(void **state)
{
	static const struct refused_case cases[] = {
		{ "GET http://other.test/ HTTP/1.1\r\nHost: other.test\r\n\r\n", 403, "not-granted",
		  "http_request_denied", "other.test is not granted; to grant it run: sluice allow approve ",
		  true },
		{ "CONNECT other.test:8443 HTTP/1.1\r\n\r\n", 403, "not-granted", "http_request_denied",
		  "other.test:8443 is not granted; to grant it run: sluice allow approve ", true },
		{ "GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test:8080\r\n\r\n", 403,
		  "host-mismatch", "http_request_denied",
		  "the Host header names port 8080 but the request goes to port 80; nothing to grant",
		  false },
		{ "GET http://allowed.test/ HTTP/1.1\r\nHost: other.test\r\n\r\n", 403, "host-mismatch",
		  "http_request_denied",
		  "the Host header names another host than the request target allowed.test", false },
		{ "GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n", 400, "malformed", "http_request_error",
		  "sluice-proxy is a forward proxy: send http://host/path or CONNECT host:port, not /",
		  false },
		{ "GET http://allowed.test/ HTTP/1.1\r\nHost: a..b\r\n\r\n", 400, "malformed",
		  "http_request_error", "bad Host header: ", false },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct refused_case *c = &cases[i];
		struct ex e = up(POLICY);
		struct head *h = head_of(c->head);
		const struct fake_refusal *r;

		assert_int_equal(exchange_new(e.s), 0);
		assert_int_equal(exchange_start(e.s->x, &h->req), -1);
		assert_int_equal(fake_refusals(), 1); /* refused once */
		r = fake_refused(0);
		assert_ptr_equal(r->x, e.s->x);
		assert_int_equal(r->status, c->status);
		assert_string_equal(r->reason, c->reason);
		assert_string_equal(r->proxy_status, c->proxy_status);
		if (strncmp(r->detail, c->detail, strlen(c->detail)) != 0)
			print_error("case %zu: detail %s\n", i, r->detail);
		assert_int_equal(strncmp(r->detail, c->detail, strlen(c->detail)), 0);
		assert_int_equal(strlen(r->id), c->id ? 16 : 0);
		if (c->id) /* the id the detail names is the refusal's */
			assert_non_null(strstr(r->detail, r->id));
		assert_true(r->logged);
		assert_int_equal(nrows(&e), 1);
		assert_null(e.s->x->budget);
		head_free(h);
		down(e);
	}
}

/* Inside an intercepted CONNECT every request goes to the tunnel's target. */
static void test_start_intercepted(void **state)
{
	struct ex e = up(POLICY);
	struct head *h = head_of("GET /x HTTP/1.1\r\nHost: allowed.test:443\r\n\r\n");
	struct head *abs = head_of("GET http://allowed.test/x HTTP/1.1\r\nHost: allowed.test\r\n\r\n");
	const char *err;

	e.s->ix = calloc(1, sizeof(*e.s->ix));
	assert_non_null(e.s->ix);
	assert_int_equal(host_canon("allowed.test", 12, &e.s->ix->tunnel.host, &err), 0);
	e.s->ix->tunnel.port = 443;
	e.s->ix->tunnel.via = GRANT_VIA_CONNECT;
	e.s->intercept = true;
	assert_int_equal(exchange_new(e.s), 0);
	assert_int_equal(exchange_start(e.s->x, &h->req), 0);
	assert_string_equal(e.s->x->t.host.name, "allowed.test");
	assert_int_equal(e.s->x->t.port, 443);
	assert_string_equal(e.s->x->path, "/x");
	/* an absolute-form target inside TLS is refused */
	assert_int_equal(exchange_new(e.s), 0);
	assert_int_equal(exchange_start(e.s->x, &abs->req), -1);
	assert_int_equal(fake_refused(0)->status, 400);
	assert_int_equal(strncmp(fake_refused(0)->detail,
				 "inside a TLS tunnel send GET /path with a Host header, not "
				 "http://allowed.test/x", 80),
			 0);
	head_free(h);
	head_free(abs);
	down(e);
}

static void test_budget_once(void **state)
{
	struct ex e = up(POLICY);
	struct head *h = head_of("POST http://budget.test/up HTTP/1.1\r\n"
				 "Host: budget.test\r\n"
				 "Content-Length: 10\r\n"
				 "\r\n");
	struct exchange *x;
	uint64_t head;

	assert_int_equal(exchange_new(e.s), 0);
	x = e.s->x;
	assert_int_equal(exchange_judge(x, &h->req), 0);
	assert_non_null(x->budget);
	head = head_up_size(x, &h->req);
	assert_true(head > 0 && head < 400);
	/* its head charged once, its declared body not yet */
	assert_int_equal(budget_room(x->budget), 1000 - head);
	/* judged again (an h2 stream's request is; a reset first): the old charge stays, one more */
	assert_int_equal(exchange_judge(x, &h->req), 0);
	assert_int_equal(budget_room(x->budget), 1000 - 2 * head);
	assert_true(exchange_log(x));
	/* a head whose declared body would pass what is left: refused, nothing charged */
	head_free(h);
	h = head_of("POST http://budget.test/up HTTP/1.1\r\nHost: budget.test\r\n"
		    "Content-Length: 900\r\n\r\n");
	assert_int_equal(exchange_new(e.s), 0);
	assert_int_equal(exchange_judge(x, &h->req), -1);
	assert_int_equal(fake_refusals(), 1);
	assert_int_equal(fake_refused(0)->status, 403);
	assert_string_equal(fake_refused(0)->reason, "budget");
	assert_string_equal(fake_refused(0)->proxy_status, "http_request_denied");
	assert_non_null(strstr(fake_refused(0)->detail, "budget max-up 1000 bytes for unattributed"));
	assert_null(x->budget);
	/* what was left is still left */
	head_free(h);
	h = head_of("POST http://budget.test/up HTTP/1.1\r\nHost: budget.test\r\n"
		    "Content-Length: 10\r\n\r\n");
	assert_int_equal(exchange_new(e.s), 0);
	assert_int_equal(exchange_judge(x, &h->req), 0);
	assert_int_equal(budget_room(x->budget), 1000 - 3 * head);
	head_free(h);
	down(e);
}

static void test_capped(void **state)
{
	static const struct {
		const char *host;
		uint64_t length;
		int rc;
		const char *detail;
	} cases[] = {
		{ "allowed.test", 100, 0, NULL },
		{ "allowed.test", 101, -1,
		  "request body of 101 bytes is over max-body-bytes 100; nothing was sent" },
		{ "big.test", 50, 0, NULL }, /* a host's body-limit lowers the cap */
		{ "big.test", 51, -1, "request body of 51 bytes is over body-limit 50; nothing was sent" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ex e = up(POLICY);
		char raw[256];
		struct head *h;

		snprintf(raw, sizeof(raw), "PUT http://%s/f HTTP/1.1\r\nHost: %s\r\nContent-Length: %llu\r\n\r\n",
			 cases[i].host, cases[i].host, (unsigned long long)cases[i].length);
		h = head_of(raw);
		assert_int_equal(exchange_new(e.s), 0);
		assert_int_equal(exchange_start(e.s->x, &h->req), 0);
		if (exchange_capped(e.s->x, &h->req) != cases[i].rc)
			print_error("case %zu: %s\n", i,
				    fake_refusals() > 0 ? fake_refused(0)->detail : "not refused");
		assert_int_equal(fake_refusals(), cases[i].rc == 0 ? 0 : 1);
		if (cases[i].rc == 0) {
			assert_int_equal(fake_refusals(), 0);
			/* exchange_judge: the same, with its start */
			assert_int_equal(exchange_judge(e.s->x, &h->req), 0);
			assert_int_equal(fake_refusals(), 0);
		} else {
			assert_int_equal(fake_refusals(), 1);
			assert_int_equal(fake_refused(0)->status, 413);
			assert_string_equal(fake_refused(0)->reason, "body-too-large");
			assert_string_equal(fake_refused(0)->proxy_status, "http_request_error");
			assert_string_equal(fake_refused(0)->detail, cases[i].detail);
			/* exchange_judge refuses it the same, with no other refusal first */
			fake_refusals_reset();
			assert_int_equal(exchange_new(e.s), 0);
			assert_int_equal(exchange_judge(e.s->x, &h->req), -1);
			assert_int_equal(fake_refusals(), 1);
			assert_int_equal(fake_refused(0)->status, 413);
		}
		head_free(h);
		down(e);
	}
	/* a chunked body found over its cap on the way */
	{
		struct ex e = up(POLICY);
		struct head *h = head_of("PUT http://allowed.test/f HTTP/1.1\r\nHost: allowed.test\r\n"
					 "Transfer-Encoding: chunked\r\n\r\n");

		assert_int_equal(exchange_new(e.s), 0);
		assert_int_equal(exchange_judge(e.s->x, &h->req), 0); /* no length declared: not yet */
		assert_int_equal(e.s->x->body_cap, 100);
		exchange_body_refuse(e.s->x, 0);
		assert_int_equal(fake_refusals(), 1);
		assert_int_equal(fake_refused(0)->status, 413);
		assert_string_equal(fake_refused(0)->detail,
				    "request body over max-body-bytes 100; the request was cut off");
		head_free(h);
		down(e);
	}
}

/* An h2 stream's judgement waits for its rule's token: 1, charged once, nothing refused. */
static void test_judge_waits(void **state)
{
	char dir[64], path[128], conf[512];
	struct head *h = head_of("GET /a HTTP/1.1\r\nHost: tok.test\r\n\r\n");
	const char *err;
	struct ex e;
	FILE *f;

	snprintf(dir, sizeof(dir), "/tmp/sluice-judge-XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/mint", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("#!/bin/sh\necho tok-1\necho 60\n", f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(path, 0700), 0);
	snprintf(conf, sizeof(conf),
		 "allow tok.test max-up=1000\n"
		 "inject tok host=tok.test header=X-Api-Key command=%s unattributed=yes\n", path);
	e = up(conf);
	e.s->ix = calloc(1, sizeof(*e.s->ix));
	assert_non_null(e.s->ix);
	assert_int_equal(host_canon("tok.test", 8, &e.s->ix->tunnel.host, &err), 0);
	e.s->ix->tunnel.port = 443;
	e.s->ix->tunnel.via = GRANT_VIA_CONNECT;
	e.s->intercept = true;
	assert_int_equal(exchange_new(e.s), 0);
	assert_int_equal(exchange_judge(e.s->x, &h->req), 1);
	assert_int_equal(fake_refusals(), 0);
	assert_non_null(e.s->token); /* the connection waits for it */
	assert_ptr_equal(e.s->x->rule, &e.fp->px.config->rules[0]);
	assert_true(e.s->x->active);
	assert_int_equal(budget_room(e.s->x->budget), 1000 - head_up_size(e.s->x, &h->req));
	e.s->token = NULL;
	token_release_all(&e.fp->px); /* the run killed and reaped */
	head_free(h);
	down(e);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_storage),	      cmocka_unit_test(test_row),
		cmocka_unit_test(test_log_once),      cmocka_unit_test(test_log_rate),
		cmocka_unit_test(test_start_allowed), cmocka_unit_test(test_start_refused),
		cmocka_unit_test(test_start_intercepted), cmocka_unit_test(test_budget_once),
		cmocka_unit_test(test_capped),	      cmocka_unit_test(test_judge_waits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
