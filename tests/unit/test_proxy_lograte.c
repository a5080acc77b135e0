/*
 * test_proxy_lograte.c: each principal's refusal-row budget
 * (proxy/lograte.c), driven on the loop step by step at a clock the test
 * sets (proxy_fakes.h), its suppression rows read back from a real network
 * log: the burst written, the rest counted, by reason; the suppression row
 * due a second after the first counted row and not a millisecond before;
 * the bucket refilled at log-row-rate; rows that moved bytes or were not
 * refusals never held; principals apart; the eighth reason and past it
 * "other"; a full table giving up the slot used least recently, its row
 * written first; a proxy stopped with counts untold (kill -9) telling them
 * at the next start, once; the unattributed key by unit.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "netlog.h"
#include "proxy_fakes.h"

#define CONF "log-row-rate 2\nlog-row-burst 3\n"

static struct fake_proxy *up(void)
{
	struct fake_proxy *fp = fake_proxy_new(CONF);

	assert_int_equal(lograte_init(&fp->px), 0);
	return fp;
}

/* A refusal row that moved nothing, for reason. */
static struct netlog_row refusal(const char *reason)
{
	struct netlog_row r;

	memset(&r, 0, sizeof(r));
	r.decision = "refuse";
	r.reason = reason;
	r.who = "10.88.0.5@podman";
	r.client = "127.0.0.7:40000";
	r.kind = "http";
	return r;
}

static bool admit(struct fake_proxy *fp, const char *key, const char *reason)
{
	struct netlog_row r = refusal(reason);

	return lograte_admit(&fp->px, key, &r);
}

/* The network log's suppression rows. */
static size_t suppressed(struct fake_proxy *fp, const char *also)
{
	char *log = fake_proxy_log(fp);
	size_t n = 0;

	for (char *line = strtok(log, "\n"); line != NULL; line = strtok(NULL, "\n"))
		if (strstr(line, "\"kind\":\"suppressed\"") != NULL &&
		    (also == NULL || strstr(line, also) != NULL))
			n++;
	free(log);
	return n;
}

struct flow {
	struct fake_proxy *fp;
};

static enum fake_step flow_step(void *arg, unsigned n)
{
	struct fake_proxy *fp = ((struct flow *)arg)->fp;

	switch (n) {
	case 0:
		/* the burst, then counted */
		for (int i = 0; i < 3; i++)
			assert_true(admit(fp, "p", "too-many-streams"));
		assert_false(admit(fp, "p", "too-many-streams"));
		assert_false(admit(fp, "p", "not-granted"));
		/* never held: allowed rows, observed ones, a refusal that moved bytes */
		{
			struct netlog_row r = refusal("not-granted");

			r.decision = "allow";
			assert_true(lograte_admit(&fp->px, "p", &r));
			r.decision = "observe";
			assert_true(lograte_admit(&fp->px, "p", &r));
			r.decision = NULL;
			assert_true(lograte_admit(&fp->px, "p", &r));
			r = refusal("budget");
			r.up = 1;
			assert_true(lograte_admit(&fp->px, "p", &r));
			r.up = 0;
			r.down = 1;
			assert_true(lograte_admit(&fp->px, "p", &r));
		}
		/* another principal has its own burst */
		for (int i = 0; i < 3; i++)
			assert_true(admit(fp, "q", "not-granted"));
		fake_clock_advance(999);
		return FAKE_TURN;
	case 1:
		/* a millisecond before the window's end: nothing told, still counting */
		assert_int_equal(suppressed(fp, NULL), 0);
		assert_false(admit(fp, "p", "too-many-streams"));
		fake_clock_advance(1);
		return FAKE_TURN;
	case 2:
		/* told by the timer: 3 rows, by reason */
		assert_int_equal(suppressed(fp, NULL), 1);
		assert_int_equal(suppressed(fp, "\"rows\":3,"), 1);
		assert_int_equal(suppressed(fp, "\"reasons\":{\"too-many-streams\":2,\"not-granted\":1}"), 1);
		assert_int_equal(suppressed(fp, "\"who\":\"10.88.0.5@podman\""), 1);
		assert_int_equal(suppressed(fp, "\"run\":\"0123456789abcdef\""), 1);
		assert_int_equal(suppressed(fp, "past its budget of 2 rows a second (log-row-rate, "
						"burst log-row-burst 3)"), 1);
		/* a second at 2 a second: two rows, then counted again */
		assert_true(admit(fp, "p", "x"));
		assert_true(admit(fp, "p", "x"));
		assert_false(admit(fp, "p", "x"));
		/* half a second: one more row's worth, but a window counting holds them all */
		fake_clock_advance(500);
		return FAKE_TURN;
	case 3:
		assert_false(admit(fp, "p", "x"));
		assert_int_equal(suppressed(fp, NULL), 1);
		return FAKE_STOP;
	}
	return FAKE_STOP;
}

static void test_flow(void **state)
{
	struct flow fl = { up() };

	fake_loop_steps(&fl.fp->px, flow_step, &fl);
	/* stopping tells what is still counted */
	lograte_release(&fl.fp->px);
	assert_null(fl.fp->px.lograte);
	assert_int_equal(suppressed(fl.fp, NULL), 2);
	assert_int_equal(suppressed(fl.fp, "\"rows\":2,\"first\""), 1);
	assert_int_equal(suppressed(fl.fp, "\"reasons\":{\"x\":2}"), 1);
	fake_proxy_free(fl.fp);
}

struct refill {
	struct fake_proxy *fp;
	uint64_t wait; /* ms between the burst and the next row */
	bool want;     /* that row written */
};

static enum fake_step refill_step(void *arg, unsigned n)
{
	struct refill *r = arg;

	switch (n) {
	case 0:
		for (int i = 0; i < 3; i++)
			assert_true(admit(r->fp, "p", "r"));
		fake_clock_advance(r->wait);
		return FAKE_TURN;
	case 1:
		/* at 2 a second, a row's worth takes 500 ms */
		assert_int_equal(admit(r->fp, "p", "r"), r->want);
		if (!r->want)
			return FAKE_STOP;
		fake_clock_advance(3600 * 1000);
		return FAKE_TURN;
	case 2:
		/* an hour idle refills to the burst, no more */
		for (int i = 0; i < 3; i++)
			assert_true(admit(r->fp, "p", "r"));
		assert_false(admit(r->fp, "p", "r"));
		return FAKE_STOP;
	}
	return FAKE_STOP;
}

static void test_refill(void **state)
{
	/* one proxy at a time: a loop's time is the clock's at its last turn */
	struct refill at = { up(), 500, true }, before = { NULL, 499, false };

	fake_loop_steps(&at.fp->px, refill_step, &at);
	lograte_release(&at.fp->px);
	assert_int_equal(suppressed(at.fp, "\"rows\":1,"), 1);
	fake_proxy_free(at.fp);

	before.fp = up();
	fake_loop_steps(&before.fp->px, refill_step, &before);
	lograte_release(&before.fp->px);
	assert_int_equal(suppressed(before.fp, "\"rows\":1,"), 1);
	fake_proxy_free(before.fp);

	/* nothing counted: no row */
	at.fp = up();
	for (int i = 0; i < 3; i++)
		assert_true(admit(at.fp, "p", "r"));
	lograte_release(&at.fp->px);
	assert_int_equal(suppressed(at.fp, NULL), 0);
	fake_proxy_free(at.fp);
}

static enum fake_step reasons_step(void *arg, unsigned n)
{
	struct fake_proxy *fp = arg;
	char why[16];

	if (n > 0)
		return FAKE_STOP;
	for (int i = 0; i < 3; i++)
		assert_true(admit(fp, "p", "first"));
	/* ten reasons counted: seven kept, the eighth and after "other" */
	for (int i = 0; i < 10; i++) {
		snprintf(why, sizeof(why), "r%d", i);
		assert_false(admit(fp, "p", why));
	}
	assert_false(admit(fp, "p", "r0")); /* a kept one counts where it is */
	{
		struct netlog_row r = refusal(NULL);

		assert_false(lograte_admit(&fp->px, "p", &r));
	}
	return FAKE_STOP;
}

static void test_reasons(void **state)
{
	struct fake_proxy *fp = up();

	fake_loop_steps(&fp->px, reasons_step, fp);
	lograte_release(&fp->px);
	assert_int_equal(suppressed(fp, "\"rows\":12,"), 1);
	assert_int_equal(suppressed(fp, "\"reasons\":{\"r0\":2,\"r1\":1,\"r2\":1,\"r3\":1,\"r4\":1,"
					"\"r5\":1,\"r6\":1,\"other\":4}"), 1);
	fake_proxy_free(fp);
}

static enum fake_step full_step(void *arg, unsigned n)
{
	struct fake_proxy *fp = arg;
	char key[32];

	switch (n) {
	case 0:
		/* 512 principals counting, each slot held */
		for (int p = 0; p < 512; p++) {
			snprintf(key, sizeof(key), "p%d", p);
			for (int i = 0; i < 3; i++)
				assert_true(admit(fp, key, "r"));
			assert_false(admit(fp, key, "r"));
		}
		assert_int_equal(suppressed(fp, NULL), 0);
		fake_clock_advance(1); /* the loop's time moves at the next turn */
		return FAKE_TURN;
	case 1:
		assert_false(admit(fp, "p0", "r")); /* p0 used again: counting, no longer the oldest */
		fake_clock_advance(1);
		return FAKE_TURN;
	case 2:
		/* one more principal: the slot used least recently (p1's) is told, then given up */
		assert_true(admit(fp, "newcomer", "r"));
		assert_int_equal(suppressed(fp, NULL), 1);
		assert_int_equal(suppressed(fp, "\"rows\":1,"), 1);
		return FAKE_STOP;
	}
	return FAKE_STOP;
}

static void test_full_table(void **state)
{
	struct fake_proxy *fp = up();

	fake_loop_steps(&fp->px, full_step, fp);
	/* p1 told when its slot changed hands: the rest (p0 with 2, 510 others) at the stop */
	lograte_release(&fp->px);
	assert_int_equal(suppressed(fp, NULL), 512);
	assert_int_equal(suppressed(fp, "\"rows\":2,"), 1);
	fake_proxy_free(fp);
}

static enum fake_step kill_step(void *arg, unsigned n)
{
	struct fake_proxy *fp = arg;

	if (n > 0)
		return FAKE_STOP;
	for (int i = 0; i < 3; i++)
		assert_true(admit(fp, "p", "not-granted"));
	for (int i = 0; i < 5; i++)
		assert_false(admit(fp, "p", "not-granted"));
	return FAKE_STOP;
}

static void test_kill(void **state)
{
	struct fake_proxy *old = up(), *next = fake_proxy_new(CONF);

	fake_loop_steps(&old->px, kill_step, old);
	/* killed: nothing told; the next start on the same state directory tells it, late */
	snprintf(next->px.config->state_dir, sizeof(next->px.config->state_dir), "%s", old->dir);
	snprintf(next->px.run_id, sizeof(next->px.run_id), "fedcba9876543210");
	assert_int_equal(lograte_init(&next->px), 0);
	assert_int_equal(suppressed(next, NULL), 1);
	assert_int_equal(suppressed(next, "\"rows\":5,"), 1);
	assert_int_equal(suppressed(next, "\"run\":\"0123456789abcdef\""), 1); /* the run that counted */
	assert_int_equal(suppressed(next, "told at the proxy's next start"), 1);
	assert_int_equal(suppressed(next, "\"client\":\"127.0.0.0/8\""), 1);
	/* and once: the old one (sharing the map, as a kill leaves it) has nothing left to tell */
	lograte_release(&old->px);
	assert_int_equal(suppressed(old, NULL), 0);
	lograte_release(&next->px);
	assert_int_equal(suppressed(next, NULL), 1);
	/* a third start: nothing from before */
	assert_int_equal(lograte_init(&next->px), 0);
	lograte_release(&next->px);
	assert_int_equal(suppressed(next, NULL), 1);
	fake_proxy_free(old);
	fake_proxy_free(next);
}

static void test_off(void **state)
{
	struct fake_proxy *fp = fake_proxy_new("log-row-rate 0\n");

	assert_int_equal(lograte_init(&fp->px), 0);
	for (int i = 0; i < 100; i++)
		assert_true(admit(fp, "p", "r"));
	lograte_release(&fp->px);
	assert_int_equal(suppressed(fp, NULL), 0);
	fake_proxy_free(fp);
}

static void test_unattributed(void **state)
{
	char out[80];

	assert_string_equal(lograte_unattributed("127.0.0.7:40000", out, sizeof(out)),
			    "unattributed 127.0.0.0/8");
	assert_string_equal(lograte_unattributed("127.200.1.1", out, sizeof(out)),
			    "unattributed 127.0.0.0/8");
	assert_string_equal(lograte_unattributed("192.0.2.77:1", out, sizeof(out)),
			    "unattributed 192.0.2.0/24");
	assert_string_equal(lograte_unattributed("[2001:db8:1:2:3:4:5:6]:80", out, sizeof(out)),
			    "unattributed 2001:db8:1:2::/64");
	assert_string_equal(lograte_unattributed(NULL, out, sizeof(out)), "unattributed -");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flow),       cmocka_unit_test(test_refill),
		cmocka_unit_test(test_reasons),    cmocka_unit_test(test_full_table),
		cmocka_unit_test(test_kill),       cmocka_unit_test(test_off),
		cmocka_unit_test(test_unattributed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
