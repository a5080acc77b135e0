/*
 * test_proxy_resolve.c: names looked up through c-ares on the proxy's loop
 * (proxy/resolve.c), against a DNS server of the test's on 127.0.0.1 (the
 * config's nameserver: the machine's resolver is never asked) that records
 * each question and answers what the test says: A and AAAA answers handed
 * back as they came, the callback run once; NXDOMAIN, an empty answer and
 * SERVFAIL as errors in c-ares's words; an address literal its own answer; a cancelled lookup's
 * callback never run, its answer arriving anyway; a silent server given up
 * on after c-ares's tries, at the clock the test sets.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy_fakes.h"

struct lookup {
	unsigned calls;
	int status;
	size_t n;
	char addrs[RESOLVE_MAX * 48];
	char error[128];
};

static void on_result(void *arg, int status, const struct sockaddr_storage *addrs, size_t n,
		      const char *error)
{
	struct lookup *lk = arg;

	lk->calls++;
	lk->status = status;
	lk->n = n;
	lk->addrs[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		char a[INET6_ADDRSTRLEN];
		const void *p = addrs[i].ss_family == AF_INET
					? (const void *)&((const struct sockaddr_in *)&addrs[i])->sin_addr
					: (const void *)&((const struct sockaddr_in6 *)&addrs[i])->sin6_addr;

		assert_non_null(inet_ntop(addrs[i].ss_family, p, a, sizeof(a)));
		strcat(lk->addrs, a);
		strcat(lk->addrs, " ");
	}
	snprintf(lk->error, sizeof(lk->error), "%s", error != NULL ? error : "");
}

struct world {
	struct fake_proxy *fp;
	struct fake_dns *dns;
	unsigned phase;
	struct lookup lk[4];
	struct resolve_query *q[4];
};

static struct world *up(void)
{
	struct world *w = calloc(1, sizeof(*w));
	char conf[64];

	assert_non_null(w);
	/* the server first (its port in the config): a throwaway proxy's loop serves nothing */
	w->fp = fake_proxy_new("");
	w->dns = fake_dns_new(&w->fp->px);
	snprintf(conf, sizeof(conf), "nameserver 127.0.0.1:%u\n", fake_dns_port(w->dns));
	{
		struct config *c = config_new();

		assert_int_equal(config_parse(c, conf, strlen(conf), "unit.conf", stderr), 0);
		assert_int_equal(c->nnameservers, 1);
		snprintf(c->state_dir, sizeof(c->state_dir), "%s", w->fp->px.config->state_dir);
		config_free(w->fp->px.config);
		w->fp->px.config = c;
	}
	assert_int_equal(resolve_init(&w->fp->px), 0);
	return w;
}

static void down(struct world *w)
{
	resolve_release(&w->fp->px);
	assert_null(w->fp->px.resolver);
	fake_dns_free(w->dns);
	fake_proxy_free(w->fp);
	free(w);
}

#define NEXT(how) do { w->phase++; return (how); } while (0)

static enum fake_step answers(void *arg, unsigned n)
{
	struct world *w = arg;
	static const char *good[] = { "192.0.2.1", "2001:db8::7", "192.0.2.2", NULL };
	static const char *v6[] = { "2001:db8::1", NULL };

	switch (w->phase) {
	case 0:
		fake_dns_set(w->dns, "good.test", good, 0, false);
		fake_dns_set(w->dns, "empty.test", NULL, 0, false);
		fake_dns_set(w->dns, "broken.test", NULL, 2, false);
		fake_dns_set(w->dns, "six.test", v6, 0, false);
		w->q[0] = resolve_start(&w->fp->px, "good.test", on_result, &w->lk[0]);
		w->q[1] = resolve_start(&w->fp->px, "nowhere.test", on_result, &w->lk[1]);
		w->q[2] = resolve_start(&w->fp->px, "empty.test", on_result, &w->lk[2]);
		w->q[3] = resolve_start(&w->fp->px, "broken.test", on_result, &w->lk[3]);
		for (int i = 0; i < 4; i++) {
			assert_non_null(w->q[i]); /* asked: answered later, on the loop */
			assert_int_equal(w->lk[i].calls, 0);
		}
		NEXT(FAKE_WAIT);
	case 1:
		for (int i = 0; i < 4; i++)
			if (w->lk[i].calls == 0)
				return FAKE_WAIT;
		NEXT(FAKE_TURN);
	case 2:
		/* a turn more: nothing is called twice */
		for (int i = 0; i < 4; i++)
			assert_int_equal(w->lk[i].calls, 1);
		assert_int_equal(w->lk[0].status, 0);
		assert_int_equal(w->lk[0].n, 3);
		assert_string_equal(w->lk[0].addrs, "192.0.2.1 192.0.2.2 2001:db8::7 ");
		assert_string_equal(w->lk[0].error, "");
		assert_int_equal(w->lk[1].status, -1);
		assert_int_equal(w->lk[1].n, 0);
		assert_string_equal(w->lk[1].error, "Domain name not found");
		assert_int_equal(w->lk[2].status, -1);
		assert_string_equal(w->lk[2].error, "DNS server returned answer with no data");
		assert_int_equal(w->lk[3].status, -1);
		assert_string_equal(w->lk[3].error, "Could not contact DNS servers"); /* SERVFAIL */
		/* each name asked for both families */
		assert_int_equal(fake_count(fake_dns_asked(w->dns), "good.test A\n"), 1);
		assert_int_equal(fake_count(fake_dns_asked(w->dns), "good.test AAAA\n"), 1);
		/* an IPv6-only name */
		memset(&w->lk[0], 0, sizeof(w->lk[0]));
		w->q[0] = resolve_start(&w->fp->px, "six.test", on_result, &w->lk[0]);
		NEXT(FAKE_WAIT);
	case 3:
		if (w->lk[0].calls == 0)
			return FAKE_WAIT;
		assert_int_equal(w->lk[0].status, 0);
		assert_string_equal(w->lk[0].addrs, "2001:db8::1 ");
		NEXT(FAKE_STOP);
	}
	return FAKE_STOP;
}

static void test_answers(void **state)
{
	struct world *w = up();

	fake_loop_steps(&w->fp->px, answers, w);
	assert_int_equal(w->phase, 4);
	down(w);
}

static enum fake_step literal(void *arg, unsigned n)
{
	struct world *w = arg;

	switch (w->phase) {
	case 0:
		w->q[0] = resolve_start(&w->fp->px, "192.0.2.9", on_result, &w->lk[0]);
		w->q[1] = resolve_start(&w->fp->px, "2001:db8::9", on_result, &w->lk[1]);
		NEXT(FAKE_WAIT);
	case 1:
		if (w->lk[0].calls == 0 || w->lk[1].calls == 0)
			return FAKE_WAIT;
		assert_int_equal(w->lk[0].status, 0);
		assert_string_equal(w->lk[0].addrs, "192.0.2.9 ");
		assert_int_equal(w->lk[1].status, 0);
		assert_string_equal(w->lk[1].addrs, "2001:db8::9 ");
		NEXT(FAKE_STOP);
	}
	return FAKE_STOP;
}

static void test_literal(void **state)
{
	struct world *w = up();

	/*
	 * An address is its own answer, whatever the server says (c-ares 1.18
	 * still asks it; dial.c never hands a literal here).
	 */
	fake_loop_steps(&w->fp->px, literal, w);
	assert_int_equal(w->phase, 2);
	down(w);
}

static enum fake_step cancelled(void *arg, unsigned n)
{
	struct world *w = arg;
	static const char *good[] = { "192.0.2.1", NULL };

	switch (w->phase) {
	case 0:
		fake_dns_set(w->dns, "good.test", good, 0, false);
		fake_dns_hold(w->dns);
		w->q[0] = resolve_start(&w->fp->px, "good.test", on_result, &w->lk[0]);
		w->q[1] = resolve_start(&w->fp->px, "good.test", on_result, &w->lk[1]);
		assert_non_null(w->q[0]);
		NEXT(FAKE_WAIT);
	case 1:
		/* both asked (A and AAAA each), held: then the first given up, the answers let go */
		if (fake_count(fake_dns_asked(w->dns), "\n") < 4)
			return FAKE_WAIT;
		resolve_cancel(w->q[0]);
		resolve_cancel(NULL); /* nothing */
		fake_dns_release(w->dns);
		NEXT(FAKE_WAIT);
	case 2:
		if (w->lk[1].calls == 0)
			return FAKE_WAIT;
		NEXT(FAKE_TURN);
	case 3:
		assert_int_equal(w->lk[0].calls, 0);
		assert_int_equal(w->lk[1].calls, 1);
		assert_string_equal(w->lk[1].addrs, "192.0.2.1 ");
		NEXT(FAKE_STOP);
	}
	return FAKE_STOP;
}

static void test_cancelled(void **state)
{
	struct world *w = up();

	fake_loop_steps(&w->fp->px, cancelled, w);
	assert_int_equal(w->phase, 4);
	down(w);
}

static enum fake_step silent(void *arg, unsigned n)
{
	struct world *w = arg;

	switch (w->phase) {
	case 0:
		fake_dns_set(w->dns, "mute.test", NULL, 0, true);
		w->q[0] = resolve_start(&w->fp->px, "mute.test", on_result, &w->lk[0]);
		NEXT(FAKE_WAIT);
	case 1:
		/* asked; no answer comes: the clock moves on a second at a time, bounded */
		if (fake_count(fake_dns_asked(w->dns), "\n") < 2)
			return FAKE_WAIT;
		NEXT(FAKE_TURN);
	default:
		if (w->lk[0].calls > 0) {
			assert_int_equal(w->lk[0].calls, 1);
			assert_int_equal(w->lk[0].status, -1);
			assert_string_equal(w->lk[0].error, "Timeout while contacting DNS servers");
			return FAKE_STOP;
		}
		assert_true(w->phase < 40);
		w->phase++;
		fake_clock_advance(1000);
		return FAKE_TURN;
	}
}

static void test_silent(void **state)
{
	struct world *w = up();

	fake_loop_steps(&w->fp->px, silent, w);
	assert_int_equal(w->lk[0].calls, 1);
	/* retried: each family asked twice (tries 2) */
	assert_int_equal(fake_count(fake_dns_asked(w->dns), "mute.test A\n"), 2);
	down(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_answers),   cmocka_unit_test(test_literal),
		cmocka_unit_test(test_cancelled), cmocka_unit_test(test_silent),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
