/*
 * test_proxy_states.c: the connection's engine (proxy/session.c) driven
 * alone against states of the test's own, and every state and codec the
 * proxy defines checked whole.
 *
 * - Each state the request path defines (request.h, session.h) has what
 *   the engine calls unconditionally: its name, what it waits for, what
 *   passing its deadline does, whether it reads the client, the readiness
 *   it asks, its deadline and its timeout. Each codec has its refusal,
 *   its close and its release, and its long rows both ways or neither.
 * - session_pump runs the state's step until it stops asking for another
 *   turn, settles, and asks the loop for the readiness the state names;
 *   a step entering another state runs that one's step in the same pump;
 *   a pump asked from inside a step runs once more, never reentrantly.
 * - The timer: the state's timeout runs when the fake clock passes its
 *   deadline, not before; a long row due sooner wakes the codec's rows
 *   first and the state's timeout still waits.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proxy_fakes.h"
#include "request.h"

static const struct state *const all_states[] = {
	&h1_head_state,     &h1_http_state,   &h1_token_state, &dial_resolve_state,
	&dial_connect_state, &tls_accept_state, &tls_connect_state, &tunnel_state,
	&upgrade_state,     &h2_state,        &session_drain_state,
};

static const struct codec *const all_codecs[] = {
	&h1_codec, &tunnel_codec, &upgrade_codec, &tls_alpn_codec, &refuse_page_codec, &h2_codec,
};

static void test_states_whole(void **state)
{
	for (size_t i = 0; i < sizeof(all_states) / sizeof(all_states[0]); i++) {
		const struct state *d = all_states[i];

		assert_non_null(d->name);
		assert_non_null(d->waits);
		assert_non_null(d->late);
		assert_non_null(d->client_in);
		assert_non_null(d->ask);
		assert_non_null(d->due);
		assert_non_null(d->timeout);
		for (size_t j = 0; j < i; j++)
			assert_string_not_equal(d->name, all_states[j]->name); /* -d traces by name */
	}
	/* the one state a connection rests in between requests */
	assert_true(h1_head_state.rest);
	for (size_t i = 1; i < sizeof(all_states) / sizeof(all_states[0]); i++)
		assert_false(all_states[i]->rest);
	/* only a tunnel relays what a peer sent after it hung up */
	assert_non_null(tunnel_state.relay);
	assert_null(h1_http_state.relay);
}

static void test_codecs_whole(void **state)
{
	for (size_t i = 0; i < sizeof(all_codecs) / sizeof(all_codecs[0]); i++) {
		const struct codec *c = all_codecs[i];

		assert_non_null(c->name);
		assert_non_null(c->refuse);
		assert_non_null(c->close);
		assert_non_null(c->release);
		assert_int_equal(c->rows_due == NULL, c->rows_write == NULL);
	}
	/* a handshake can complete under these: each says what follows */
	assert_non_null(h1_codec.tls_up);
	assert_non_null(refuse_page_codec.tls_up);
	/* a request can wait for a token under these */
	assert_non_null(h1_codec.token_ready);
	assert_non_null(h2_codec.token_ready);
	assert_non_null(h2_codec.streams);
}

/* --- the engine, against states of the test's own ---------------------------- */

static struct {
	int steps_a, steps_b, settles, timeouts, rows_written;
	int again_a;  /* turns state a asks for (session_pump from inside its step) */
	bool a_to_b;  /* a's step enters b */
	uint64_t due_ms, rows_at;
	uint32_t ask_c; /* what the states ask for the client */
} seen;

static const struct state test_b;

static bool in_yes(const struct session *s)
{
	return true;
}

static void ask_test(const struct session *s, uint32_t *c, uint32_t *u)
{
	*c |= seen.ask_c;
}

static uint64_t due_test(const struct session *s, const struct config *c)
{
	return seen.due_ms;
}

static void late_test(struct session *s, const struct config *c)
{
	seen.timeouts++;
	seen.due_ms = UINT64_MAX - 1; /* not again */
}

static void settle_test(struct session *s)
{
	seen.settles++;
}

static void step_a(struct session *s)
{
	seen.steps_a++;
	if (seen.again_a > 0) {
		seen.again_a--;
		session_pump(s); /* from inside a step: one more turn, not a nested pump */
		return;
	}
	if (seen.a_to_b) {
		seen.a_to_b = false;
		session_enter(s, &test_b);
	}
}

static void step_b(struct session *s)
{
	seen.steps_b++;
}

static const struct state test_a = {
	.name = "test-a", .waits = "a test", .late = "counted",
	.step = step_a, .client_in = in_yes, .ask = ask_test, .due = due_test,
	.timeout = late_test, .settle = settle_test,
};

static const struct state test_b = {
	.name = "test-b", .waits = "a test", .late = "counted",
	.step = step_b, .client_in = in_yes, .ask = ask_test, .due = due_test,
	.timeout = late_test,
};

static uint64_t rows_due_test(const struct session *s, const struct config *c)
{
	return seen.rows_at;
}

static void rows_write_test(struct session *s, const struct config *c)
{
	seen.rows_written++;
	seen.rows_at = UINT64_MAX;
}

static void refuse_test(struct exchange *x, const struct refusal *r)
{
	fail_msg("no refusal in these tests");
}

static void close_test(struct session *s, const char *why)
{
}

static void release_test(struct session *s)
{
}

static const struct codec test_codec = {
	.name = "test", .refuse = refuse_test, .close = close_test, .release = release_test,
	.rows_due = rows_due_test, .rows_write = rows_write_test,
};

struct conn {
	struct fake_proxy *fp;
	struct session s;
	int peer;
};

static struct conn *conn_new(void)
{
	struct conn *c = calloc(1, sizeof(*c));
	int sp[2];

	assert_non_null(c);
	memset(&seen, 0, sizeof(seen));
	seen.due_ms = seen.rows_at = UINT64_MAX;
	c->fp = fake_proxy_new("");
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sp), 0);
	c->s.px = &c->fp->px;
	c->s.cfd = sp[0];
	c->peer = sp[1];
	c->s.ufd = -1;
	c->s.uio.fd = -1;
	c->s.codec = &test_codec;
	c->s.st = &test_a;
	assert_int_equal(loop_io_add(c->fp->px.loop, &c->s.cio, c->s.cfd, EPOLLIN,
				     session_on_client, &c->s), 0);
	return c;
}

static void conn_free(struct conn *c)
{
	loop_timer_cancel(c->fp->px.loop, &c->s.timer);
	loop_io_close(c->fp->px.loop, &c->s.cio);
	close(c->peer);
	fake_proxy_free(c->fp);
	free(c);
}

static void test_pump_runs_until_still(void **state)
{
	struct conn *c = conn_new();

	seen.again_a = 3;
	seen.ask_c = EPOLLOUT;
	session_pump(&c->s);
	assert_int_equal(seen.steps_a, 4); /* its own turn and the three it asked for */
	assert_int_equal(seen.settles, 1); /* once, after the last */
	assert_int_equal(c->s.cio.events, EPOLLIN | EPOLLOUT); /* reads the client, asks out */
	assert_false(c->s.pumping);
	conn_free(c);
}

static void test_enter_runs_the_next_step(void **state)
{
	struct conn *c = conn_new();

	seen.a_to_b = true;
	session_pump(&c->s);
	assert_ptr_equal(c->s.st, &test_b);
	assert_int_equal(seen.steps_a, 1);
	assert_int_equal(seen.steps_b, 1); /* in the same pump */
	assert_int_equal(seen.settles, 0); /* b has none: a's is not run for b */
	conn_free(c);
}

/* The loop run by the fake clock, 100 ms a turn, to end; at mark, what was seen is kept. */
static uint64_t mark_ms, end_ms;
static int timeouts_at_mark, rows_at_mark;

static enum fake_step turns(void *arg, unsigned n)
{
	if (fake_clock_mono_ms() >= mark_ms && mark_ms != 0) {
		timeouts_at_mark = seen.timeouts;
		rows_at_mark = seen.rows_written;
		mark_ms = 0;
	}
	if (fake_clock_mono_ms() >= end_ms)
		return FAKE_STOP;
	fake_clock_advance(100);
	return FAKE_TURN;
}

static void test_timeout_at_its_deadline(void **state)
{
	struct conn *c = conn_new();

	seen.due_ms = loop_now(c->fp->px.loop) + 1000;
	session_arm_timer(&c->s);
	mark_ms = fake_clock_mono_ms() + 900;
	end_ms = fake_clock_mono_ms() + 1200;
	fake_loop_steps(&c->fp->px, turns, NULL);
	assert_int_equal(timeouts_at_mark, 0); /* not before */
	assert_int_equal(seen.timeouts, 1);
	assert_int_equal(seen.steps_a, 1); /* the pump after a timeout that left it open */
	conn_free(c);
}

static void test_rows_before_the_deadline(void **state)
{
	struct conn *c = conn_new();
	uint64_t now = loop_now(c->fp->px.loop);

	seen.due_ms = now + 5000;
	seen.rows_at = now + 500;
	session_arm_timer(&c->s);
	mark_ms = fake_clock_mono_ms() + 1000;
	end_ms = fake_clock_mono_ms() + 5300;
	fake_loop_steps(&c->fp->px, turns, NULL);
	assert_int_equal(rows_at_mark, 1);     /* woken for the row ... */
	assert_int_equal(timeouts_at_mark, 0); /* ... and the state's deadline still waited */
	assert_int_equal(seen.rows_written, 1);
	assert_int_equal(seen.timeouts, 1);
	conn_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_states_whole),
		cmocka_unit_test(test_codecs_whole),
		cmocka_unit_test(test_pump_runs_until_still),
		cmocka_unit_test(test_enter_runs_the_next_step),
		cmocka_unit_test(test_timeout_at_its_deadline),
		cmocka_unit_test(test_rows_before_the_deadline),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
