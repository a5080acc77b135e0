/*
 * test_proxy_h2.c: the HTTP/2 codec (proxy/h2.c, h2_stream.c, h2_up.c)
 * between two real nghttp2 sessions the test plays: a client session
 * whose frames go to the connection's client socket, and a server session
 * playing the upstream at the other end of its upstream socket. Each is
 * one end of a socket pair; no TLS (s->cssl and s->ussl are NULL, so
 * sio_read and sio_write use the fds), no loop: h2_state's step is called
 * by hand. The connection is an intercepted CONNECT to api.test:443 that
 * chose h2 (h2_begin), under a policy that allows api.test.
 *
 * - A stream to api.test is judged and opened upstream with :authority
 *   api.test; its answer reaches the client; its row says allow, h2.
 * - A stream whose :authority names another host is answered 403 with a
 *   Proxy-Status by sluice while the connection goes on; nothing of it goes
 *   upstream; its row says refuse host-mismatch.
 * - The client's bytes split at every offset give the same; so do the
 *   upstream's, read a byte at a time.
 * - h2_codec.streams counts the open streams; h2_codec.close (the
 *   connection's close) writes each open stream's row, saying why.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <nghttp2/nghttp2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "host.h"
#include "policy.h"
#include "proxy_fakes.h"
#include "request.h"
#include "session.h"

#define STREAMS 8

/* What the test's client saw of a stream. */
struct seen {
	int status;
	char proxy_status[128];
	bool closed;
	uint32_t code; /* its RST_STREAM's, or 0 */
};

/* What the test's upstream saw of a stream. */
struct asked {
	int32_t id;
	char authority[64];
	char path[64];
};

struct h2t {
	struct fake_proxy *fp;
	struct session *s;
	int client, server; /* the test's ends of s->cfd's and s->ufd's pairs */
	nghttp2_session *cli, *srv;
	struct seen seen[STREAMS * 2 + 2];
	struct asked asked[STREAMS];
	size_t nasked;
	bool hold;       /* the client's frames are kept in out, not written */
	bool trickle;    /* the upstream's frames go a byte at a time, the connection stepped after each */
	uint8_t out[4096];
	size_t out_len;
};

/* --- the test's client -------------------------------------------------------- */

static struct seen *seen_of(struct h2t *t, int32_t id)
{
	assert_true(id > 0 && (size_t)id < sizeof(t->seen) / sizeof(t->seen[0]));
	return &t->seen[id];
}

static int cli_header(nghttp2_session *ng, const nghttp2_frame *f, const uint8_t *name,
		      size_t nlen, const uint8_t *value, size_t vlen, uint8_t flags, void *arg)
{
	struct seen *w = seen_of(arg, f->hd.stream_id);

	(void)ng, (void)flags;
	if (nlen == 7 && memcmp(name, ":status", 7) == 0)
		w->status = atoi((const char *)value);
	else if (nlen == 12 && memcmp(name, "proxy-status", 12) == 0)
		snprintf(w->proxy_status, sizeof(w->proxy_status), "%.*s", (int)vlen, value);
	return 0;
}

static int cli_close(nghttp2_session *ng, int32_t id, uint32_t code, void *arg)
{
	struct seen *w = seen_of(arg, id);

	(void)ng;
	w->closed = true;
	w->code = code;
	return 0;
}

/* --- the test's upstream ------------------------------------------------------ */

static int srv_header(nghttp2_session *ng, const nghttp2_frame *f, const uint8_t *name,
		      size_t nlen, const uint8_t *value, size_t vlen, uint8_t flags, void *arg)
{
	struct h2t *t = arg;
	struct asked *a = NULL;

	(void)ng, (void)flags;
	for (size_t i = 0; i < t->nasked; i++)
		if (t->asked[i].id == f->hd.stream_id)
			a = &t->asked[i];
	if (a == NULL) {
		assert_true(t->nasked < STREAMS);
		a = &t->asked[t->nasked++];
		a->id = f->hd.stream_id;
	}
	if (nlen == 10 && memcmp(name, ":authority", 10) == 0)
		snprintf(a->authority, sizeof(a->authority), "%.*s", (int)vlen, value);
	else if (nlen == 5 && memcmp(name, ":path", 5) == 0)
		snprintf(a->path, sizeof(a->path), "%.*s", (int)vlen, value);
	return 0;
}

/* A request ended: 200, no body, unless its path is /hang (never answered). */
static int srv_frame(nghttp2_session *ng, const nghttp2_frame *f, void *arg)
{
	struct h2t *t = arg;
	nghttp2_nv nv[] = { { (uint8_t *)":status", (uint8_t *)"200", 7, 3, NGHTTP2_NV_FLAG_NONE } };

	if (f->hd.type != NGHTTP2_HEADERS || !(f->hd.flags & NGHTTP2_FLAG_END_STREAM))
		return 0;
	for (size_t i = 0; i < t->nasked; i++)
		if (t->asked[i].id == f->hd.stream_id && strcmp(t->asked[i].path, "/hang") == 0)
			return 0;
	assert_int_equal(nghttp2_submit_response(ng, f->hd.stream_id, nv, 1, NULL), 0);
	return 0;
}

/* --- the connection ---------------------------------------------------------- */

static void pair(int *ours, int *theirs)
{
	int sp[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sp), 0);
	*ours = sp[0];
	*theirs = sp[1];
}

static nghttp2_nv nv(const char *name, const char *value)
{
	nghttp2_nv v = { (uint8_t *)name, (uint8_t *)value, strlen(name), strlen(value),
			 NGHTTP2_NV_FLAG_NONE };

	return v;
}

/* A request from the test's client, no body; returns its stream id. */
static int32_t ask(struct h2t *t, const char *authority, const char *path)
{
	nghttp2_nv h[] = { nv(":method", "GET"), nv(":scheme", "https"),
			   nv(":authority", authority), nv(":path", path) };
	int32_t id = nghttp2_submit_request(t->cli, NULL, h, 4, NULL, NULL);

	assert_true(id > 0);
	return id;
}

/*
 * An intercepted CONNECT to api.test:443 under "allow api.test" that chose
 * h2 (h2_begin), the test's client and upstream sessions at the other ends.
 */
static struct h2t *h2t_new(void)
{
	struct h2t *t = calloc(1, sizeof(*t));
	nghttp2_session_callbacks *cb;
	const char *err = NULL;
	struct session *s;

	assert_non_null(t);
	t->fp = fake_proxy_new("allow api.test\n");
	t->fp->px.policy = policy_new(t->fp->px.config, NULL, 0, false, NULL, 0, t->fp->px.run_id,
				      time(NULL));
	assert_non_null(t->fp->px.policy);
	assert_int_equal(budget_init(&t->fp->px), 0);
	assert_int_equal(lograte_init(&t->fp->px), 0);
	s = t->s = fake_session_new(&t->fp->px, NULL);
	close(s->cfd);
	pair(&s->cfd, &t->client);
	pair(&s->ufd, &t->server);
	s->intercept = true;
	s->ix = calloc(1, sizeof(*s->ix));
	assert_non_null(s->ix);
	assert_int_equal(host_canon("api.test", 8, &s->ix->tunnel.host, &err), 0);
	s->ix->tunnel.port = 443;
	s->ix->tunnel.via = GRANT_VIA_CONNECT;
	s->ix->alpn = ALPN_H2;
	h2_begin(s);
	assert_ptr_equal(s->st, &h2_state);
	assert_ptr_equal(s->codec, &h2_codec);

	assert_int_equal(nghttp2_session_callbacks_new(&cb), 0);
	nghttp2_session_callbacks_set_on_header_callback(cb, cli_header);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb, cli_close);
	assert_int_equal(nghttp2_session_client_new(&t->cli, cb, t), 0);
	nghttp2_session_callbacks_del(cb);
	assert_int_equal(nghttp2_submit_settings(t->cli, NGHTTP2_FLAG_NONE, NULL, 0), 0);

	assert_int_equal(nghttp2_session_callbacks_new(&cb), 0);
	nghttp2_session_callbacks_set_on_header_callback(cb, srv_header);
	nghttp2_session_callbacks_set_on_frame_recv_callback(cb, srv_frame);
	assert_int_equal(nghttp2_session_server_new(&t->srv, cb, t), 0);
	nghttp2_session_callbacks_del(cb);
	assert_int_equal(nghttp2_submit_settings(t->srv, NGHTTP2_FLAG_NONE, NULL, 0), 0);
	return t;
}

static void h2t_free(struct h2t *t)
{
	nghttp2_session_del(t->cli);
	nghttp2_session_del(t->srv);
	close(t->client);
	close(t->server);
	fake_session_free(t->s);
	lograte_release(&t->fp->px);
	budget_release(&t->fp->px);
	policy_free(t->fp->px.policy);
	fake_proxy_free(t->fp);
	free(t);
}

/* Every byte of p written to fd (a socket pair's: small amounts, never full here). */
static void put(int fd, const uint8_t *p, size_t n)
{
	assert_int_equal(write(fd, p, n), (ssize_t)n);
}

/* What one session has to send, to its socket (the client's kept in out while held). */
static void send_all(struct h2t *t, nghttp2_session *ng, int fd)
{
	const uint8_t *p;
	ssize_t n;

	while ((n = nghttp2_session_mem_send(ng, &p)) > 0) {
		if (ng == t->cli && t->hold) {
			assert_true(t->out_len + (size_t)n <= sizeof(t->out));
			memcpy(t->out + t->out_len, p, (size_t)n);
			t->out_len += (size_t)n;
		} else if (ng == t->srv && t->trickle) {
			for (ssize_t i = 0; i < n; i++) {
				put(fd, p + i, 1);
				if (!t->s->closed && t->s->st->step != NULL)
					t->s->st->step(t->s);
			}
		} else {
			put(fd, p, (size_t)n);
		}
	}
	assert_true(n == 0);
}

/* What fd has for one session, fed to it. */
static void recv_all(nghttp2_session *ng, int fd)
{
	uint8_t b[16384];
	ssize_t n;

	while ((n = read(fd, b, sizeof(b))) > 0)
		assert_int_equal(nghttp2_session_mem_recv(ng, b, (size_t)n), n);
}

static void step(struct h2t *t)
{
	if (!t->s->closed && t->s->st->step != NULL)
		t->s->st->step(t->s);
}

/* One round: each party sends, the connection steps, each reads. */
static void round_trip(struct h2t *t)
{
	send_all(t, t->cli, t->client);
	step(t);
	recv_all(t->srv, t->server);
	send_all(t, t->srv, t->server);
	step(t);
	recv_all(t->cli, t->client);
}

/* Rounds until stream id is closed at the client (or n rounds). */
static void until_closed(struct h2t *t, int32_t id, int n)
{
	for (int i = 0; i < n && !seen_of(t, id)->closed; i++)
		round_trip(t);
}

/* The network log's lines holding every needle (NULL-terminated). */
static size_t rows(const struct h2t *t, const char *const *needles)
{
	char *log = fake_proxy_log(t->fp);
	size_t n = 0;

	for (char *line = strtok(log, "\n"); line != NULL; line = strtok(NULL, "\n")) {
		bool all = true;

		for (size_t i = 0; needles[i] != NULL; i++)
			all = all && strstr(line, needles[i]) != NULL;
		n += all;
	}
	free(log);
	return n;
}

/* The two streams' outcome, as every test here expects it. */
static void expect_judged(struct h2t *t, int32_t ok, int32_t bad)
{
	/* the allowed stream went up with the tunnel's host as :authority, and was answered */
	assert_int_equal(t->nasked, 1);
	assert_int_equal(t->asked[0].id, 1);
	assert_string_equal(t->asked[0].authority, "api.test");
	assert_string_equal(t->asked[0].path, "/ok");
	assert_true(seen_of(t, ok)->closed);
	assert_int_equal(seen_of(t, ok)->status, 200);
	assert_int_equal(seen_of(t, ok)->code, 0);
	/* the other: 403 from sluice, with its Proxy-Status, the stream closed cleanly */
	assert_true(seen_of(t, bad)->closed);
	assert_int_equal(seen_of(t, bad)->status, 403);
	assert_non_null(strstr(seen_of(t, bad)->proxy_status, "error=http_request_denied"));
	assert_int_equal(seen_of(t, bad)->code, 0);
	/* ... and the connection goes on */
	assert_false(t->s->closed);
	assert_ptr_equal(t->s->st, &h2_state);
	assert_int_equal(h2_codec.streams(t->s), 0);
	assert_int_equal(rows(t, (const char *const[]){ "\"kind\":\"https\"", "\"proto\":\"h2\"",
							"\"path\":\"/ok\"", "\"status\":200",
							"\"decision\":\"allow\"", NULL }),
			 1);
	assert_int_equal(rows(t, (const char *const[]){ "\"proto\":\"h2\"", "\"path\":\"/no\"",
							"\"status\":403", "\"decision\":\"refuse\"",
							"\"reason\":\"host-mismatch\"", NULL }),
			 1);
}

static void test_judged(void **state)
{
	struct h2t *t = h2t_new();
	int32_t ok, bad, again;

	(void)state;
	ok = ask(t, "api.test", "/ok");
	bad = ask(t, "other.test", "/no");
	until_closed(t, ok, 50);
	until_closed(t, bad, 50);
	expect_judged(t, ok, bad);
	/* a stream after them is judged anew on the same connection */
	again = ask(t, "other.test", "/no");
	until_closed(t, again, 50);
	assert_int_equal(seen_of(t, again)->status, 403);
	assert_int_equal(t->nasked, 1);
	h2t_free(t);
}

static void test_split(void **state)
{
	size_t len;

	(void)state;
	/* the client's first bytes: its preface, SETTINGS and both requests' HEADERS */
	{
		struct h2t *t = h2t_new();

		t->hold = true;
		ask(t, "api.test", "/ok");
		ask(t, "other.test", "/no");
		send_all(t, t->cli, t->client);
		len = t->out_len;
		h2t_free(t);
	}
	assert_true(len > 24);
	for (size_t k = 0; k <= len; k++) {
		struct h2t *t = h2t_new();

		t->hold = true;
		ask(t, "api.test", "/ok");
		ask(t, "other.test", "/no");
		send_all(t, t->cli, t->client);
		assert_int_equal(t->out_len, len);
		t->hold = false;
		put(t->client, t->out, k);
		step(t);
		recv_all(t->srv, t->server);
		step(t);
		put(t->client, t->out + k, len - k);
		until_closed(t, 1, 50);
		until_closed(t, 3, 50);
		expect_judged(t, 1, 3);
		h2t_free(t);
	}
}

/* The upstream's bytes (its SETTINGS, its answer) cut at every offset: each byte read alone. */
static void test_upstream_trickle(void **state)
{
	struct h2t *t = h2t_new();

	(void)state;
	t->trickle = true;
	ask(t, "api.test", "/ok");
	ask(t, "other.test", "/no");
	until_closed(t, 1, 50);
	until_closed(t, 3, 50);
	expect_judged(t, 1, 3);
	h2t_free(t);
}

static void test_close(void **state)
{
	struct h2t *t = h2t_new();
	int32_t a, b, c;

	(void)state;
	assert_int_equal(h2_codec.streams(t->s), 0);
	a = ask(t, "api.test", "/hang");
	b = ask(t, "api.test", "/hang");
	c = ask(t, "api.test", "/ok");
	until_closed(t, c, 50);
	assert_int_equal(seen_of(t, c)->status, 200);
	for (int i = 0; i < 10 && t->nasked < 3; i++)
		round_trip(t);
	assert_int_equal(t->nasked, 3);
	/* two streams open, up and waiting for their answers */
	assert_false(seen_of(t, a)->closed);
	assert_false(seen_of(t, b)->closed);
	assert_int_equal(h2_codec.streams(t->s), 2);
	assert_int_equal(rows(t, (const char *const[]){ "\"path\":\"/hang\"", NULL }), 0);
	/* the connection closes: each open stream's row, saying why; the done one's not again */
	session_close(t->s, "a test's close");
	assert_int_equal(rows(t, (const char *const[]){ "\"path\":\"/hang\"", "\"decision\":\"allow\"",
							"a test's close", NULL }),
			 2);
	assert_int_equal(rows(t, (const char *const[]){ "\"path\":\"/ok\"", NULL }), 1);
	h2t_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_judged),
		cmocka_unit_test(test_split),
		cmocka_unit_test(test_upstream_trickle),
		cmocka_unit_test(test_close),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
