/*
 * test_proxy_longrow.c: a long exchange's open and progress rows
 * (proxy/longrow.c), asked through each codec's rows_due and rows_write
 * as the connection's timer asks them, on a connection with no socket and a clock the test
 * moves (the loop's time is the clock's at its last turn). Checked: when
 * the next row is due (log-open-after after it began, then every
 * log-progress), to the millisecond; what a row says (kind open, then
 * progress; its own kind in "of"; its bytes and time so far), and that
 * it is written once when due and not before; none for an exchange
 * refused, not begun, waiting on its judgement, dial or token, a tunnel
 * still at its hellos; none with log-open-after 0, only the open row with
 * log-progress 0; an HTTP/2 connection's streams each on their own clock,
 * only those sent upstream and still relaying.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "h2_stream.h"
#include "proxy_fakes.h"

struct lr {
	struct fake_proxy *fp;
	struct session *s;
	struct exchange *x;
	uint64_t began; /* loop ms the exchange began */
};

/* A connection relaying an allowed request (h1_http_state) that began now. */
static struct lr up(const char *conf)
{
	struct lr l;

	l.fp = fake_proxy_new(conf);
	l.s = fake_session_new(&l.fp->px, NULL);
	assert_int_equal(exchange_new(l.s), 0);
	l.x = l.s->x;
	l.x->active = true;
	l.x->decision = "allow";
	l.x->method = HTTP_GET;
	l.x->minor = 1;
	snprintf(l.x->t.host.name, sizeof(l.x->t.host.name), "example.test");
	l.x->t.port = 80;
	l.x->req = 1;
	l.began = loop_now(l.fp->px.loop);
	l.x->t_start = (double)l.began;
	l.s->codec = &h1_codec;
	l.s->st = &h1_http_state;
	return l;
}

static void down(struct lr l)
{
	l.x->active = false; /* no closing row */
	fake_session_free(l.s);
	fake_proxy_free(l.fp);
}

static uint64_t now(const struct lr *l)
{
	return loop_now(l->fp->px.loop);
}

static uint64_t due(const struct lr *l)
{
	const struct codec *c = l->s->codec;

	return c->rows_due != NULL ? c->rows_due(l->s, l->fp->px.config) : UINT64_MAX;
}

static void write_rows(struct lr *l)
{
	if (l->s->codec->rows_write != NULL)
		l->s->codec->rows_write(l->s, l->fp->px.config);
}

/* The network log's rows (caller frees). */
static size_t nrows(const struct lr *l, const char *needle)
{
	char *log = fake_proxy_log(l->fp);
	size_t n = 0;

	for (char *line = strtok(log, "\n"); line != NULL; line = strtok(NULL, "\n"))
		if (needle == NULL || strstr(line, needle) != NULL)
			n++;
	free(log);
	return n;
}

struct script {
	struct lr l;
	unsigned phase;
};

static enum fake_step opened(void *arg, unsigned n)
{
	struct script *sc = arg;
	struct lr *l = &sc->l;

	switch (sc->phase) {
	case 0:
		/* log-open-after 10 s after it began */
		assert_int_equal(due(l), l->began + 10000);
		write_rows(l);
		assert_int_equal(nrows(l, NULL), 0);
		l->x->up = 123;
		l->x->down = 4567;
		fake_clock_advance(9999);
		sc->phase++;
		return FAKE_TURN;
	case 1:
		/* a millisecond before: nothing */
		assert_int_equal(now(l), l->began + 9999);
		write_rows(l);
		assert_int_equal(nrows(l, NULL), 0);
		assert_int_equal(l->x->long_at, 0);
		fake_clock_advance(1);
		sc->phase++;
		return FAKE_TURN;
	case 2:
		/* due: the open row, what it moved so far, its own kind in "of" */
		write_rows(l);
		assert_int_equal(nrows(l, NULL), 1);
		assert_int_equal(nrows(l, "\"kind\":\"open\",\"of\":\"http\",\"proto\":\"http/1.1\","
					  "\"method\":\"GET\",\"host\":\"example.test\""), 1);
		assert_int_equal(nrows(l, "\"up\":123,\"down\":4567,\"ms\":10000"), 1);
		assert_int_equal(nrows(l, "\"decision\":\"allow\""), 1);
		assert_int_equal(l->x->long_at, now(l));
		assert_true(l->x->active); /* its final row is still to come */
		/* written once: not again at the same time */
		write_rows(l);
		assert_int_equal(nrows(l, NULL), 1);
		/* then every log-progress 30 s */
		assert_int_equal(due(l), now(l) + 30000);
		fake_clock_advance(29999);
		sc->phase++;
		return FAKE_TURN;
	case 3:
		write_rows(l);
		assert_int_equal(nrows(l, NULL), 1);
		fake_clock_advance(1);
		sc->phase++;
		return FAKE_TURN;
	case 4:
		write_rows(l);
		assert_int_equal(nrows(l, NULL), 2);
		assert_int_equal(nrows(l, "\"kind\":\"progress\",\"of\":\"http\""), 1);
		assert_int_equal(nrows(l, "\"ms\":40000"), 1);
		assert_int_equal(due(l), now(l) + 30000);
		/* late (the timer fired late): one row, the next due from it */
		fake_clock_advance(45000);
		sc->phase++;
		return FAKE_TURN;
	case 5:
		write_rows(l);
		assert_int_equal(nrows(l, "\"kind\":\"progress\""), 2);
		assert_int_equal(due(l), now(l) + 30000);
		sc->phase++;
		return FAKE_STOP;
	}
	return FAKE_STOP;
}

static void test_opened(void **state)
{
	struct script sc = { .l = up("log-open-after 10\nlog-progress 30\n") };

	fake_loop_steps(&sc.l.fp->px, opened, &sc);
	assert_int_equal(sc.phase, 6);
	down(sc.l);
}

/* After 10 s of the clock: what rows l's exchange got (0 or 1), its state set by set. */
struct case_ {
	const char *name;
	void (*set)(struct lr *l);
	size_t rows;
};

static void set_refused(struct lr *l)
{
	l->x->decision = "refuse";
}

static void set_undecided(struct lr *l)
{
	l->x->decision = NULL;
}

static void set_inactive(struct lr *l)
{
	l->x->active = false;
}

static void set_observed(struct lr *l)
{
	l->x->decision = "observe";
}

static void set_waiting(struct lr *l)
{
	l->s->codec = &h1_codec;
	l->s->st = &dial_resolve_state;
}

static void set_connecting(struct lr *l)
{
	l->s->codec = &h1_codec;
	l->s->st = &dial_connect_state;
}

static void set_token(struct lr *l)
{
	l->s->codec = &h1_codec;
	l->s->st = &h1_token_state;
}

static void set_head(struct lr *l)
{
	l->s->codec = &h1_codec;
	l->s->st = &h1_head_state;
}

static void set_websocket(struct lr *l)
{
	l->s->codec = &upgrade_codec;
	l->s->st = &upgrade_state;
}

static void set_hello(struct lr *l)
{
	l->x->method = HTTP_CONNECT;
	l->s->codec = &tunnel_codec;
	l->s->st = &tunnel_state;
	l->s->tun = calloc(1, sizeof(*l->s->tun));
	assert_non_null(l->s->tun);
	l->s->tun->hello = HELLO_CLIENT;
}

static void set_tunnel(struct lr *l)
{
	set_hello(l);
	l->s->tun->hello = HELLO_DONE;
}

static const struct case_ cases[] = {
	{ "refused", set_refused, 0 },     { "undecided", set_undecided, 0 },
	{ "inactive", set_inactive, 0 },   { "observed", set_observed, 1 },
	{ "resolving", set_waiting, 0 },   { "connecting", set_connecting, 0 },
	{ "token", set_token, 0 },	   { "head", set_head, 0 },
	{ "websocket", set_websocket, 1 }, { "hellos", set_hello, 0 },
	{ "tunnel", set_tunnel, 1 },
};

struct one {
	struct lr l;
	const struct case_ *c;
};

static enum fake_step one_step(void *arg, unsigned n)
{
	struct one *o = arg;

	if (n == 0) {
		o->c->set(&o->l);
		assert_int_equal(due(&o->l), o->c->rows ? o->l.began + 10000 : UINT64_MAX);
		fake_clock_advance(10000);
		return FAKE_TURN;
	}
	write_rows(&o->l);
	if (nrows(&o->l, NULL) != o->c->rows)
		print_error("%s: %zu rows\n", o->c->name, nrows(&o->l, NULL));
	assert_int_equal(nrows(&o->l, NULL), o->c->rows);
	return FAKE_STOP;
}

static void test_which(void **state)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct one o = { .l = up("log-open-after 10\nlog-progress 30\n"), .c = &cases[i] };

		fake_loop_steps(&o.l.fp->px, one_step, &o);
		if (cases[i].set == set_tunnel)
			assert_int_equal(nrows(&o.l, "\"kind\":\"open\",\"of\":\"tunnel\""), 1);
		if (cases[i].set == set_observed)
			assert_int_equal(nrows(&o.l, "\"decision\":\"observe\""), 1);
		down(o.l);
	}
}

static enum fake_step off_step(void *arg, unsigned n)
{
	struct lr *l = arg;

	switch (n) {
	case 0:
		fake_clock_advance(10000);
		return FAKE_TURN;
	case 1:
		write_rows(l);
		fake_clock_advance(3600 * 1000);
		return FAKE_TURN;
	default:
		write_rows(l);
		return FAKE_STOP;
	}
}

static void test_off(void **state)
{
	struct lr l = up("log-open-after 0\nlog-progress 30\n");

	/* no open rows at all */
	assert_int_equal(due(&l), UINT64_MAX);
	fake_loop_steps(&l.fp->px, off_step, &l);
	assert_int_equal(nrows(&l, NULL), 0);
	down(l);

	/* an open row, then none */
	l = up("log-open-after 10\nlog-progress 0\n");
	fake_loop_steps(&l.fp->px, off_step, &l);
	assert_int_equal(nrows(&l, NULL), 1);
	assert_int_equal(nrows(&l, "\"kind\":\"open\""), 1);
	assert_int_equal(due(&l), UINT64_MAX);
	down(l);
}

/* --- HTTP/2: each stream on its own clock ------------------------------------------ */

struct streams {
	struct lr l;
	struct h2 h2;
	struct h2_stream st[4];
	struct exchange x[4];
};

/* Stream i's exchange, begun at began + at ms, as it stands. */
static void stream(struct streams *m, size_t i, uint64_t at, bool sent)
{
	struct h2_stream *st = &m->st[i];
	struct exchange *x = &m->x[i];

	x->conn = m->l.s;
	x->active = true;
	x->h2 = true;
	x->decision = "allow";
	x->method = HTTP_GET;
	x->req = i + 1;
	snprintf(x->t.host.name, sizeof(x->t.host.name), "s%zu.example.test", i);
	x->t.port = 443;
	x->t_start = (double)(m->l.began + at);
	st->x = x;
	st->sent = sent;
	list_insert_head(&m->h2.streams, &st->link);
}

static enum fake_step streams_step(void *arg, unsigned n)
{
	struct streams *m = arg;
	struct lr *l = &m->l;

	switch (n) {
	case 0:
		/* the sooner of the relaying streams': stream 1 (began at 2 s) */
		assert_int_equal(due(l), l->began + 12000);
		fake_clock_advance(12000);
		return FAKE_TURN;
	case 1:
		write_rows(l);
		assert_int_equal(nrows(l, NULL), 1);
		assert_int_equal(nrows(l, "\"kind\":\"open\",\"of\":\"https\",\"proto\":\"h2\""), 1);
		assert_int_equal(nrows(l, "\"host\":\"s1.example.test\""), 1);
		/* then stream 0 (began at 5 s) */
		assert_int_equal(due(l), l->began + 15000);
		fake_clock_advance(3000);
		return FAKE_TURN;
	case 2:
		write_rows(l);
		assert_int_equal(nrows(l, NULL), 2);
		assert_int_equal(nrows(l, "\"host\":\"s0.example.test\""), 1);
		/* stream 1's progress row is next, 30 s after its open one */
		assert_int_equal(due(l), l->began + 42000);
		fake_clock_advance(27000);
		return FAKE_TURN;
	case 3:
		write_rows(l);
		assert_int_equal(nrows(l, "\"kind\":\"progress\""), 1);
		assert_int_equal(nrows(l, "\"kind\":\"progress\",\"of\":\"https\",\"proto\":\"h2\","
					  "\"method\":\"GET\",\"host\":\"s1.example.test\""), 1);
		assert_int_equal(due(l), l->began + 45000); /* stream 0's, 30 s after its open row */
		/* never: a stream not sent upstream, one refused, one closed on the client's side */
		assert_int_equal(nrows(l, "\"host\":\"s2.example.test\""), 0);
		assert_int_equal(nrows(l, "\"host\":\"s3.example.test\""), 0);
		return FAKE_STOP;
	}
	return FAKE_STOP;
}

static void test_h2_streams(void **state)
{
	struct streams *m = calloc(1, sizeof(*m));

	assert_non_null(m);
	m->l = up("log-open-after 10\nlog-progress 30\n");
	m->l.x->active = false; /* the connection's own: none on an h2 connection */
	m->l.s->codec = &h2_codec;
	m->l.s->st = &h2_state;
	m->l.s->intercept = true;
	m->l.s->h2 = &m->h2;
	m->h2.s = m->l.s;
	stream(m, 0, 5000, true);
	stream(m, 1, 2000, true);
	stream(m, 2, 0, false); /* not sent: waiting on its judgement, dial or token */
	stream(m, 3, 0, true);
	m->st[3].refused = true;
	fake_loop_steps(&m->l.fp->px, streams_step, m);
	/* a stream whose client side closed (its row written) gets none either */
	m->st[3].refused = false;
	m->st[3].cli_closed = true;
	m->st[1].sent = false;
	m->st[0].sent = false;
	assert_int_equal(due(&m->l), UINT64_MAX);
	m->l.s->h2 = NULL;
	down(m->l);
	free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_opened),
		cmocka_unit_test(test_which),
		cmocka_unit_test(test_off),
		cmocka_unit_test(test_h2_streams),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
