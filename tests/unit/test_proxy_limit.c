/*
 * test_proxy_limit.c: connections counted per client (proxy/limit.c):
 * the cap (max-connections-per-client, or max-connections / 16, at
 * least 1) at its edge; a connection counted once however often it asks;
 * moved from its address to its principal, freeing a place, or left where
 * it was when the principal is full; the oldest idle connection found in
 * the order they came, past busy ones, after removals at the head, middle
 * and tail; entries gone with their last connection; thousands of keys.
 * Sessions are bare structs: limit.c reads only their counting fields and
 * session_idle (a head being read makes one busy).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy_fakes.h"
#include "request.h"

#define N 8

static struct fake_proxy *up(const char *conf)
{
	struct fake_proxy *fp = fake_proxy_new(conf);

	assert_int_equal(limit_init(&fp->px), 0);
	return fp;
}

static void down(struct fake_proxy *fp)
{
	limit_release(&fp->px);
	assert_null(fp->px.limits);
	fake_proxy_free(fp);
}

/* n idle sessions, as session_accept leaves one before its first byte. */
static struct session *sessions(size_t n)
{
	struct session *s = calloc(n, sizeof(*s));

	assert_non_null(s);
	for (size_t i = 0; i < n; i++) {
		s[i].st = &h1_head_state;
		assert_true(session_idle(&s[i]));
	}
	return s;
}

static void busy(struct session *s, bool b)
{
	s->head_ms = b ? 1 : 0;
	assert_int_equal(session_idle(s), !b);
}

static void test_cap(void **state)
{
	struct fake_proxy *fp = up("max-connections-per-client 2\n");
	struct session *s = sessions(N);
	struct limit_entry *e;

	e = limit_take(&fp->px, "127.0.0.2", &s[0]);
	assert_non_null(e);
	assert_ptr_equal(s[0].limit, e);
	assert_ptr_equal(limit_take(&fp->px, "127.0.0.2", &s[1]), e);
	/* at the cap: refused, counted nowhere */
	assert_null(limit_take(&fp->px, "127.0.0.2", &s[2]));
	assert_null(s[2].limit);
	/* asking again is no second count */
	assert_ptr_equal(limit_take(&fp->px, "127.0.0.2", &s[0]), e);
	assert_ptr_equal(limit_take(&fp->px, "127.0.0.2", &s[1]), e);
	assert_null(limit_take(&fp->px, "127.0.0.2", &s[2]));
	/* another client has its own */
	assert_non_null(limit_take(&fp->px, "127.0.0.3", &s[2]));
	/* one leaves: a place */
	limit_put(&fp->px, &s[0]);
	assert_null(s[0].limit);
	assert_null(s[0].lim.next);
	assert_null(s[0].lim.prev);
	limit_put(&fp->px, &s[0]); /* counted nowhere: nothing */
	assert_ptr_equal(limit_take(&fp->px, "127.0.0.2", &s[3]), s[1].limit);
	assert_null(limit_take(&fp->px, "127.0.0.2", &s[4]));
	for (size_t i = 0; i < N; i++)
		limit_put(&fp->px, &s[i]);
	/* all gone: a fresh count, the whole cap again */
	assert_non_null(limit_take(&fp->px, "127.0.0.2", &s[0]));
	assert_non_null(limit_take(&fp->px, "127.0.0.2", &s[1]));
	assert_null(limit_take(&fp->px, "127.0.0.2", &s[2]));
	for (size_t i = 0; i < N; i++)
		limit_put(&fp->px, &s[i]);
	free(s);
	down(fp);
}

static void test_default_cap(void **state)
{
	static const struct {
		const char *conf;
		size_t cap;
	} cases[] = {
		{ "max-connections 64\n", 4 },
		{ "max-connections 31\n", 1 },
		{ "max-connections 1\n", 1 }, /* never 0 */
		{ "max-connections 64\nmax-connections-per-client 7\n", 7 },
	};

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct fake_proxy *fp = up(cases[c].conf);
		struct session *s = sessions(N);

		for (size_t i = 0; i < cases[c].cap; i++)
			assert_non_null(limit_take(&fp->px, "k", &s[i]));
		assert_null(limit_take(&fp->px, "k", &s[cases[c].cap]));
		for (size_t i = 0; i < N; i++)
			limit_put(&fp->px, &s[i]);
		free(s);
		down(fp);
	}
}

static void test_move(void **state)
{
	struct fake_proxy *fp = up("max-connections-per-client 2\n");
	struct session *s = sessions(N);
	struct limit_entry *addr, *who;

	addr = limit_take(&fp->px, "127.0.0.2", &s[0]);
	assert_non_null(limit_take(&fp->px, "127.0.0.2", &s[1]));
	/* the stamp names a principal: s[0] counts there now, its address has room */
	who = limit_take(&fp->px, "agent@ci", &s[0]);
	assert_non_null(who);
	assert_ptr_not_equal(who, addr);
	assert_ptr_equal(s[0].limit, who);
	assert_ptr_equal(limit_take(&fp->px, "127.0.0.2", &s[2]), addr);
	/* the principal full: s[3] stays counted at its address, nothing moved */
	assert_non_null(limit_take(&fp->px, "agent@ci", &s[4]));
	assert_non_null(limit_take(&fp->px, "127.0.0.9", &s[3]));
	addr = s[3].limit;
	assert_null(limit_take(&fp->px, "agent@ci", &s[3]));
	assert_ptr_equal(s[3].limit, addr);
	assert_ptr_equal(limit_idle_oldest(&fp->px, "127.0.0.9", session_idle), &s[3]);
	/* and the principal's list is untouched */
	assert_ptr_equal(limit_idle_oldest(&fp->px, "agent@ci", session_idle), &s[0]);
	for (size_t i = 0; i < N; i++)
		limit_put(&fp->px, &s[i]);
	free(s);
	down(fp);
}

static void test_idle_oldest(void **state)
{
	struct fake_proxy *fp = up("max-connections-per-client 5\n");
	struct session *s = sessions(N);

	assert_null(limit_idle_oldest(&fp->px, "k", session_idle)); /* no entry */
	for (size_t i = 0; i < 5; i++)
		assert_non_null(limit_take(&fp->px, "k", &s[i]));
	assert_ptr_equal(limit_idle_oldest(&fp->px, "k", session_idle), &s[0]);
	busy(&s[0], true);
	busy(&s[1], true);
	assert_ptr_equal(limit_idle_oldest(&fp->px, "k", session_idle), &s[2]);
	/* out of the middle, the head and the tail: the order of the rest kept */
	limit_put(&fp->px, &s[2]);
	assert_ptr_equal(limit_idle_oldest(&fp->px, "k", session_idle), &s[3]);
	busy(&s[0], false);
	assert_ptr_equal(limit_idle_oldest(&fp->px, "k", session_idle), &s[0]);
	limit_put(&fp->px, &s[0]);
	assert_ptr_equal(limit_idle_oldest(&fp->px, "k", session_idle), &s[3]);
	limit_put(&fp->px, &s[4]);
	assert_ptr_equal(limit_idle_oldest(&fp->px, "k", session_idle), &s[3]);
	busy(&s[3], true);
	assert_null(limit_idle_oldest(&fp->px, "k", session_idle)); /* s[1] and s[3]: busy */
	/* a newcomer goes last */
	assert_non_null(limit_take(&fp->px, "k", &s[5]));
	assert_ptr_equal(limit_idle_oldest(&fp->px, "k", session_idle), &s[5]);
	busy(&s[1], false);
	assert_ptr_equal(limit_idle_oldest(&fp->px, "k", session_idle), &s[1]);
	/* the last two out: the list empty, the entry gone */
	limit_put(&fp->px, &s[1]);
	limit_put(&fp->px, &s[3]);
	assert_ptr_equal(limit_idle_oldest(&fp->px, "k", session_idle), &s[5]);
	limit_put(&fp->px, &s[5]);
	assert_null(limit_idle_oldest(&fp->px, "k", session_idle));
	free(s);
	down(fp);
}

static void test_many_keys(void **state)
{
	enum { K = 5000 };
	struct fake_proxy *fp = up("max-connections-per-client 1\n");
	struct session *s = sessions(2 * K);
	char key[32];

	/* more keys than buckets: each its own count */
	for (size_t i = 0; i < K; i++) {
		snprintf(key, sizeof(key), "10.%zu.%zu.1", i / 256, i % 256);
		assert_non_null(limit_take(&fp->px, key, &s[i]));
		assert_null(limit_take(&fp->px, key, &s[K + i]));
	}
	for (size_t i = 0; i < K; i += 2)
		limit_put(&fp->px, &s[i]);
	for (size_t i = 0; i < K; i++) {
		snprintf(key, sizeof(key), "10.%zu.%zu.1", i / 256, i % 256);
		assert_int_equal(limit_take(&fp->px, key, &s[K + i]) != NULL, i % 2 == 0);
		assert_ptr_equal(limit_idle_oldest(&fp->px, key, session_idle), i % 2 == 0 ? &s[K + i] : &s[i]);
	}
	/* released with entries still in it: freed (the sanitizer sees a leak) */
	free(s);
	down(fp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cap),         cmocka_unit_test(test_default_cap),
		cmocka_unit_test(test_move),        cmocka_unit_test(test_idle_oldest),
		cmocka_unit_test(test_many_keys),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
