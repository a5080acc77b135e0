/*
 * test_loop.c: the epoll loop with real fds (pipes) and real time. Timers
 * fire in deadline order, cancelled ones never; many random timers keep the
 * heap's order; fd readiness is level-triggered and follows loop_io_set;
 * an io deleted or closed from a callback gets no event already fetched in
 * that round; the hook runs before every sleep; loop_stop ends the run.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "loop.h"

struct rec {
	int order[512];
	int n;
	uint64_t at[512];
};

struct tm_ {
	struct loop_timer t;
	int id;
	struct rec *rec;
	bool stop;
};

static void on_tm(struct loop *l, struct loop_timer *t)
{
	struct tm_ *x = t->arg;

	assert_false(loop_timer_armed(t)); /* disarmed before its callback */
	x->rec->at[x->rec->n] = loop_now(l);
	x->rec->order[x->rec->n++] = x->id;
	if (x->stop)
		loop_stop(l);
}

/* a guard: a run that would hang fails instead */
static void on_guard(struct loop *l, struct loop_timer *t)
{
	(void)t;
	loop_stop(l);
	fail_msg("the loop did not stop by itself within the guard time");
}

static void test_timers_in_order(void **state)
{
	struct loop *l = loop_new();
	struct rec rec = { 0 };
	struct tm_ a = { .id = 1, .rec = &rec }, b = { .id = 2, .rec = &rec },
		   c = { .id = 3, .rec = &rec }, d = { .id = 4, .rec = &rec, .stop = true };
	struct loop_timer guard = { 0 };
	uint64_t t0;

	(void)state;
	assert_non_null(l);
	t0 = loop_now(l);
	loop_timer_set(l, &guard, 3000, on_guard, NULL);
	loop_timer_set(l, &c.t, 60, on_tm, &c);
	loop_timer_set(l, &a.t, 20, on_tm, &a);
	loop_timer_set(l, &b.t, 40, on_tm, &b);
	loop_timer_set(l, &d.t, 80, on_tm, &d);
	assert_true(loop_timer_armed(&b.t));
	loop_timer_cancel(l, &b.t);
	assert_false(loop_timer_armed(&b.t));
	loop_timer_cancel(l, &b.t); /* twice: harmless */
	loop_timer_set(l, &a.t, 50, on_tm, &a); /* re-armed: moves later */
	assert_int_equal(loop_run(l), 0);
	assert_int_equal(rec.n, 3);
	assert_int_equal(rec.order[0], 1);
	assert_int_equal(rec.order[1], 3);
	assert_int_equal(rec.order[2], 4);
	assert_true(rec.at[0] >= t0 + 50);
	assert_true(rec.at[1] >= t0 + 60);
	assert_true(rec.at[2] >= t0 + 80);
	assert_true(rec.at[2] < t0 + 1500);
	loop_timer_cancel(l, &guard);
	loop_free(l);
}

static void test_many_random_timers(void **state)
{
	enum { N = 300 };
	struct loop *l = loop_new();
	static struct tm_ t[N];
	struct rec rec = { 0 };
	struct tm_ last = { .id = -1, .rec = &rec, .stop = true };
	struct loop_timer guard = { 0 };
	bool cancelled[N] = { false };
	int want = 0;
	unsigned seed = 99;

	(void)state;
	assert_non_null(l);
	loop_timer_set(l, &guard, 5000, on_guard, NULL);
	for (int i = 0; i < N; i++) {
		seed = seed * 1103515245u + 12345u;
		t[i] = (struct tm_){ .id = i, .rec = &rec };
		loop_timer_set(l, &t[i].t, (seed >> 8) % 60, on_tm, &t[i]);
	}
	/* cancel a third, re-arm a third elsewhere */
	for (int i = 0; i < N; i++) {
		seed = seed * 1103515245u + 12345u;
		if (i % 3 == 0) {
			loop_timer_cancel(l, &t[i].t);
			cancelled[i] = true;
		} else if (i % 3 == 1) {
			loop_timer_set(l, &t[i].t, (seed >> 8) % 60, on_tm, &t[i]);
		}
	}
	for (int i = 0; i < N; i++)
		want += !cancelled[i];
	loop_timer_set(l, &last.t, 200, on_tm, &last);
	assert_int_equal(loop_run(l), 0);
	assert_int_equal(rec.n, want + 1);
	assert_int_equal(rec.order[rec.n - 1], -1);
	for (int k = 0; k < rec.n - 1; k++) {
		int id = rec.order[k];

		assert_false(cancelled[id]);
		/* fired in deadline order */
		if (k > 0)
			assert_true(t[rec.order[k - 1]].t.when_ms <= t[id].t.when_ms);
		assert_true(rec.at[k] >= t[id].t.when_ms);
	}
	loop_timer_cancel(l, &guard);
	loop_free(l);
}

struct ioc {
	struct loop_io io;
	int calls;
	uint32_t last;
	struct ioc *victim; /* deleted from this one's callback */
	bool close_victim;
	bool stop_after;
};

static void on_io(struct loop *l, struct loop_io *io, uint32_t ev)
{
	struct ioc *c = io->arg;

	c->calls++;
	c->last = ev;
	if (c->victim != NULL) {
		if (c->close_victim)
			loop_io_close(l, &c->victim->io);
		else
			loop_io_del(l, &c->victim->io);
		c->victim = NULL;
	}
	if (c->stop_after)
		loop_stop(l);
}

struct counter {
	int n;
	int stop_at;
};

static void hook(struct loop *l, void *arg)
{
	struct counter *c = arg;

	if (++c->n >= c->stop_at)
		loop_stop(l);
}

static void test_level_triggered_io(void **state)
{
	struct loop *l = loop_new();
	int p[2];
	struct ioc c = { 0 };
	struct counter hk = { .stop_at = 4 };

	(void)state;
	assert_non_null(l);
	assert_int_equal(pipe(p), 0);
	assert_int_equal(loop_io_add(l, &c.io, p[0], EPOLLIN, on_io, &c), 0);
	assert_int_equal(write(p[1], "x", 1), 1);
	/* never read: level-triggered, it fires every round; the hook ends it */
	loop_set_hook(l, hook, &hk);
	assert_int_equal(loop_run(l), 0);
	assert_int_equal(hk.n, 4);
	assert_int_equal(c.calls, 3);
	assert_true(c.last & EPOLLIN);

	/* asked for nothing: no events although data waits (a timer ends the run) */
	struct rec rec = { 0 };
	struct tm_ end = { .id = 9, .rec = &rec, .stop = true };

	assert_int_equal(loop_io_set(l, &c.io, 0), 0);
	assert_int_equal(loop_io_set(l, &c.io, 0), 0); /* unchanged: a no-op */
	/* (loop_stop is sticky: the next run is on a new loop, the pipe still full) */
	struct loop *l2 = loop_new();
	struct ioc c2 = { 0 };

	assert_non_null(l2);
	assert_int_equal(loop_io_add(l2, &c2.io, p[0], EPOLLIN, on_io, &c2), 0);
	assert_int_equal(loop_io_set(l2, &c2.io, 0), 0);
	assert_int_equal(c2.io.events, 0);
	loop_timer_set(l2, &end.t, 50, on_tm, &end);
	assert_int_equal(loop_run(l2), 0);
	assert_int_equal(c2.calls, 0);
	assert_int_equal(rec.n, 1);
	/* EPOLLOUT on the write end fires at once */
	struct ioc w = { .stop_after = true };
	struct loop *l3 = loop_new();

	assert_non_null(l3);
	assert_int_equal(loop_io_add(l3, &w.io, p[1], EPOLLOUT, on_io, &w), 0);
	assert_int_equal(loop_run(l3), 0);
	assert_int_equal(w.calls, 1);
	assert_true(w.last & EPOLLOUT);
	loop_io_del(l3, &w.io);
	assert_int_equal(w.io.fd, -1);
	loop_io_del(l3, &w.io); /* twice: harmless */

	/* a bad fd is refused and leaves the io unregistered */
	struct ioc bad = { 0 };

	assert_int_equal(loop_io_add(l3, &bad.io, 999, EPOLLIN, on_io, &bad), -1);
	assert_int_equal(bad.io.fd, -1);

	loop_io_del(l, &c.io);
	loop_io_del(l2, &c2.io);
	loop_free(l);
	loop_free(l2);
	loop_free(l3);
	close(p[0]);
	close(p[1]);
}

/* Two fds ready in one round: the first callback deletes (or closes) the
 * other; its already-fetched event must not be delivered. */
static void dropped_in_round(bool close_it)
{
	struct loop *l = loop_new();
	int p[2], q[2];
	struct ioc a = { 0 }, b = { 0 };
	struct counter hk = { .stop_at = 3 };

	assert_non_null(l);
	assert_int_equal(pipe(p), 0);
	assert_int_equal(pipe(q), 0);
	assert_int_equal(write(p[1], "x", 1), 1);
	assert_int_equal(write(q[1], "y", 1), 1);
	assert_int_equal(loop_io_add(l, &a.io, p[0], EPOLLIN, on_io, &a), 0);
	assert_int_equal(loop_io_add(l, &b.io, q[0], EPOLLIN, on_io, &b), 0);
	/* whichever runs first deletes the other */
	a.victim = &b;
	b.victim = &a;
	a.close_victim = b.close_victim = close_it;
	loop_set_hook(l, hook, &hk);
	assert_int_equal(loop_run(l), 0);
	/* exactly one of them ran; the other got nothing, in that round or later */
	assert_int_equal(a.calls + b.calls >= 1, 1);
	assert_true(a.calls == 0 || b.calls == 0);
	struct ioc *gone = a.calls == 0 ? &a : &b;

	assert_int_equal(gone->io.fd, -1);
	if (close_it) {
		/* loop_io_close closed it */
		int fd = gone == &a ? p[0] : q[0];

		assert_int_equal(fcntl(fd, F_GETFD), -1);
		assert_int_equal(errno, EBADF);
		if (gone == &a)
			close(q[0]);
		else
			close(p[0]);
	} else {
		close(p[0]);
		close(q[0]);
	}
	close(p[1]);
	close(q[1]);
	loop_free(l);
}

static void test_deleted_io_gets_no_pending_event(void **state)
{
	(void)state;
	dropped_in_round(false);
}

static void test_closed_io_gets_no_pending_event(void **state)
{
	(void)state;
	dropped_in_round(true);
}

static void test_now_moves(void **state)
{
	struct loop *l = loop_new();
	struct rec rec = { 0 };
	struct tm_ x = { .id = 1, .rec = &rec, .stop = true };
	uint64_t t0;

	(void)state;
	assert_non_null(l);
	t0 = loop_now(l);
	usleep(30000);
	assert_int_equal(loop_now(l), t0); /* refreshed only when the loop wakes */
	loop_timer_set(l, &x.t, 0, on_tm, &x); /* due at once */
	assert_int_equal(loop_run(l), 0);
	assert_true(rec.at[0] >= t0 + 30);
	loop_free(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_timers_in_order),
		cmocka_unit_test(test_many_random_timers),
		cmocka_unit_test(test_level_triggered_io),
		cmocka_unit_test(test_deleted_io_gets_no_pending_event),
		cmocka_unit_test(test_closed_io_gets_no_pending_event),
		cmocka_unit_test(test_now_moves),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
