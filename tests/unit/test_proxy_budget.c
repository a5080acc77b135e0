/*
 * test_proxy_budget.c: a grant's budgets per principal (proxy/budget.c),
 * against a clock the test sets (proxy_fakes.h) and a state directory of
 * its own: max-requests counted and refused past it; max-up charged for
 * heads at the take and for bytes as they are spent, a head and body that
 * would pass it refused before anything goes (each edge at the byte);
 * the room left; a window of `per` seconds reopening at its end to the
 * millisecond, and the time left in the words; principals and grants
 * (a re-added grant is another) counted apart; the counts surviving a
 * restart (STATE/budgets) unless their window ended; a clock stepped
 * back; a network's share of the table; the refusal's words, which name
 * the command that raises the budget.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grant.h"
#include "policy.h"
#include "proxy_fakes.h"

static struct fake_proxy *up(void)
{
	struct fake_proxy *fp = fake_proxy_new("");

	assert_int_equal(budget_init(&fp->px), 0);
	return fp;
}

static void down(struct fake_proxy *fp)
{
	budget_release(&fp->px);
	assert_null(fp->px.budgets);
	fake_proxy_free(fp);
}

/* The grant pattern with a budget (words as the config writes them: "max-up=100 per=10s"). */
static struct grant grant(const char *pattern, const char *words, time_t added)
{
	struct grant g;
	const char *err = NULL;
	char *w = strdup(words), *save = NULL;

	assert_int_equal(grant_parse(pattern, strlen(pattern), &g, &err), 0);
	g.level = GRANT_PERMANENT;
	g.added = added;
	for (char *t = strtok_r(w, " ", &save); t != NULL; t = strtok_r(NULL, " ", &save))
		assert_int_equal(grant_budget_word(&g, t, strlen(t), true, &err), 1);
	assert_int_equal(grant_budget_check(&g, &err), 0);
	free(w);
	return g;
}

/* budget_take: 0 with the entry in *e, or 1 with its words in why. */
static int take(struct fake_proxy *fp, const struct grant *g, const char *who, const char *net,
		uint64_t head, uint64_t body, struct budget_entry **e, char *why)
{
	int r;

	why[0] = '\0';
	r = budget_take(&fp->px, g, who, net, head, body, e, why, 320);
	assert_true(r == 0 || r == 1);
	if (r == 0) {
		assert_non_null(*e);
		assert_string_equal(why, "");
	} else {
		assert_null(*e);
		assert_string_not_equal(why, "");
	}
	return r;
}

static void test_max_requests(void **state)
{
	struct fake_proxy *fp = up();
	struct grant g = grant("api.example.test", "max-requests=3", 1000);
	struct budget_entry *e[4];
	char why[320];

	for (int i = 0; i < 3; i++) {
		assert_int_equal(take(fp, &g, "agent@ci", NULL, 0, 0, &e[i], why), 0);
		assert_int_equal(budget_room(e[i]), UINT64_MAX); /* no max-up */
		assert_true(budget_spend(e[i], 1u << 30));      /* no max-up: bytes are free */
	}
	assert_ptr_equal(e[0], e[1]); /* one count per principal and grant */
	assert_int_equal(take(fp, &g, "agent@ci", NULL, 0, 0, &e[3], why), 1);
	assert_string_equal(why, "budget max-requests 3 for agent@ci is spent; to raise it run: "
				 "sluice allow add api.example.test --max-requests N");
	/* giving the entries back gives no request back */
	for (int i = 0; i < 3; i++)
		budget_put(e[i]);
	budget_put(NULL);
	assert_int_equal(take(fp, &g, "agent@ci", NULL, 0, 0, &e[3], why), 1);
	/* another principal has its own three */
	for (int i = 0; i < 3; i++) {
		assert_int_equal(take(fp, &g, "other@ci", NULL, 0, 0, &e[i], why), 0);
		budget_put(e[i]);
	}
	assert_int_equal(take(fp, &g, "other@ci", NULL, 0, 0, &e[3], why), 1);
	down(fp);
}

static void test_max_up_edges(void **state)
{
	struct fake_proxy *fp = up();
	struct grant g = grant("*.example.test:8443", "max-up=100", 1000);
	struct budget_entry *e, *e2;
	char why[320];

	/* a head and a declared body that would pass it: refused, nothing charged */
	assert_int_equal(take(fp, &g, "a@n", NULL, 101, 0, &e, why), 1);
	assert_string_equal(why, "budget max-up 100 bytes for a@n is spent (0 sent); to raise it run: "
				 "sluice allow add *.example.test:8443 --max-up BYTES");
	assert_int_equal(take(fp, &g, "a@n", NULL, 60, 41, &e, why), 1);
	assert_int_equal(take(fp, &g, "a@n", NULL, 0, 101, &e, why), 1);
	assert_int_equal(take(fp, &g, "a@n", NULL, 60, UINT64_MAX, &e, why), 1);
	/* exactly the budget: taken, the head charged */
	assert_int_equal(take(fp, &g, "a@n", NULL, 60, 40, &e, why), 0);
	assert_int_equal(budget_room(e), 40);
	assert_true(budget_spend(e, 39));
	assert_int_equal(budget_room(e), 1);
	assert_true(budget_spend(e, 1)); /* at the budget: still within it */
	assert_int_equal(budget_room(e), 0);
	/* a second exchange of the same principal sees at once what is left: nothing */
	assert_int_equal(take(fp, &g, "a@n", NULL, 0, 0, &e2, why), 1);
	assert_string_equal(why, "budget max-up 100 bytes for a@n is spent (100 sent); to raise it "
				 "run: sluice allow add *.example.test:8443 --max-up BYTES");
	assert_false(budget_spend(e, 1)); /* one byte past: over */
	assert_int_equal(budget_room(e), 0);
	budget_words(e, true, why, sizeof(why));
	assert_non_null(strstr(why, "(101 sent)"));
	/* spent bytes saturate, never wrap to a small count */
	assert_false(budget_spend(e, UINT64_MAX));
	assert_false(budget_spend(e, UINT64_MAX));
	assert_int_equal(budget_room(e), 0);
	budget_words(e, true, why, sizeof(why));
	assert_non_null(strstr(why, "(18446744073709551615 sent)"));
	budget_put(e);
	down(fp);
}

static void test_window(void **state)
{
	struct fake_proxy *fp = up();
	struct grant g = grant("example.test", "max-requests=1 max-up=1k per=10s", 1000);
	struct budget_entry *e;
	char why[320];

	assert_int_equal(take(fp, &g, "w@n", NULL, 10, 0, &e, why), 0);
	budget_put(e);
	assert_int_equal(take(fp, &g, "w@n", NULL, 10, 0, &e, why), 1);
	assert_string_equal(why, "budget max-requests 1 for w@n is spent in this window (it ends in "
				 "10s); to raise it run: sluice allow add example.test --max-requests N "
				 "--max-up 1024 --per 10s");
	fake_clock_advance(8500);
	assert_int_equal(take(fp, &g, "w@n", NULL, 10, 0, &e, why), 1);
	assert_non_null(strstr(why, "(it ends in 2s)")); /* 1.5s, rounded up */
	fake_clock_advance(1499);
	assert_int_equal(take(fp, &g, "w@n", NULL, 10, 0, &e, why), 1);
	assert_non_null(strstr(why, "(it ends in 1s)"));
	/* the window's last millisecond over: a new window, counts from zero */
	fake_clock_advance(1);
	assert_int_equal(take(fp, &g, "w@n", NULL, 1014, 10, &e, why), 0);
	assert_int_equal(budget_room(e), 10);
	/* spending in the next window starts it again for this one too */
	assert_false(budget_spend(e, 11));
	budget_words(e, true, why, sizeof(why));
	assert_string_equal(why, "budget max-up 1024 bytes for w@n is spent (1025 sent) in this window "
				 "(it ends in 10s); to raise it run: sluice allow add example.test "
				 "--max-up BYTES --max-requests 1 --per 10s");
	fake_clock_advance(10000);
	assert_true(budget_spend(e, 1000)); /* a new window: 1000 of 1024 */
	assert_int_equal(budget_room(e), 24);
	budget_put(e);
	down(fp);
}

static void test_per_words(void **state)
{
	static const struct {
		const char *per, *flag;
	} cases[] = {
		{ "per=59s", " --per 59s" }, { "per=60s", " --per 1m" },  { "per=90m", " --per 90m" },
		{ "per=2h", " --per 2h" },   { "per=25h", " --per 25h" }, { "per=86400s", " --per 1d" },
		{ "per=7d", " --per 7d" },   { "per=3601s", " --per 3601s" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fake_proxy *fp = up();
		char words[64], why[320], want[64];
		struct budget_entry *e;
		struct grant g;

		snprintf(words, sizeof(words), "max-requests=1 %s", cases[i].per);
		g = grant("example.test", words, 1000);
		assert_int_equal(take(fp, &g, "p@n", NULL, 0, 0, &e, why), 0);
		assert_int_equal(take(fp, &g, "p@n", NULL, 0, 0, &e, why), 1);
		snprintf(want, sizeof(want), "--max-requests N%s", cases[i].flag);
		assert_non_null(strstr(why, want));
		assert_int_equal(strlen(strstr(why, want)), strlen(want)); /* the last words */
		down(fp);
	}
}

static void test_grants_apart(void **state)
{
	struct fake_proxy *fp = up();
	struct grant a = grant("example.test", "max-requests=1", 1000);
	struct grant b = grant("example.test", "max-requests=1", 2000); /* re-added */
	struct grant c = grant("other.test", "max-requests=1", 1000);
	struct grant scoped = grant("example.test", "max-requests=1", 1000);
	struct budget_entry *e;
	const char *err;
	char why[320];

	assert_int_equal(grant_scope_add(&scoped, "10.88.0.5@podman", &err), 0);
	assert_int_equal(take(fp, &a, "p@n", NULL, 0, 0, &e, why), 0);
	assert_int_equal(take(fp, &a, "p@n", NULL, 0, 0, &e, why), 1);
	assert_int_equal(take(fp, &b, "p@n", NULL, 0, 0, &e, why), 0);
	assert_int_equal(take(fp, &c, "p@n", NULL, 0, 0, &e, why), 0);
	assert_int_equal(take(fp, &scoped, "p@n", NULL, 0, 0, &e, why), 0);
	assert_int_equal(take(fp, &scoped, "p@n", NULL, 0, 0, &e, why), 1);
	/* a scoped grant's command names its scopes */
	assert_string_equal(why, "budget max-requests 1 for p@n is spent; to raise it run: sluice "
				 "allow add example.test --for 10.88.0.5@podman --max-requests N");
	down(fp);
}

static void test_restart(void **state)
{
	struct fake_proxy *fp = up();
	struct grant life = grant("example.test", "max-requests=2", 1000);
	struct grant win = grant("win.test", "max-requests=1 per=1m", 1000);
	struct budget_entry *e;
	char why[320];

	assert_int_equal(take(fp, &life, "p@n", NULL, 0, 0, &e, why), 0);
	assert_int_equal(take(fp, &win, "p@n", NULL, 0, 0, &e, why), 0);
	/* a restart: the same state directory, a new table */
	budget_release(&fp->px);
	assert_int_equal(budget_init(&fp->px), 0);
	assert_int_equal(take(fp, &life, "p@n", NULL, 0, 0, &e, why), 0);
	assert_int_equal(take(fp, &life, "p@n", NULL, 0, 0, &e, why), 1);
	assert_int_equal(take(fp, &win, "p@n", NULL, 0, 0, &e, why), 1);
	/* restarted once its window ended: that count is dropped, the other kept */
	fake_clock_advance(60000);
	budget_release(&fp->px);
	assert_int_equal(budget_init(&fp->px), 0);
	assert_int_equal(take(fp, &win, "p@n", NULL, 0, 0, &e, why), 0);
	assert_int_equal(take(fp, &life, "p@n", NULL, 0, 0, &e, why), 1);
	down(fp);
}

static void test_clock_back(void **state)
{
	struct fake_proxy *fp = up();
	struct grant g = grant("example.test", "max-requests=1 per=10s", 1000);
	struct budget_entry *e;
	char why[320];

	fake_clock_advance(3600 * 1000);
	assert_int_equal(take(fp, &g, "p@n", NULL, 0, 0, &e, why), 0);
	assert_int_equal(take(fp, &g, "p@n", NULL, 0, 0, &e, why), 1);
	/* the wall clock set back an hour: the window begins now, never longer than per */
	fake_clock_back(3600 * 1000);
	assert_int_equal(take(fp, &g, "p@n", NULL, 0, 0, &e, why), 1);
	assert_non_null(strstr(why, "(it ends in 10s)"));
	fake_clock_advance(9999);
	assert_int_equal(take(fp, &g, "p@n", NULL, 0, 0, &e, why), 1);
	fake_clock_advance(1);
	assert_int_equal(take(fp, &g, "p@n", NULL, 0, 0, &e, why), 0);
	down(fp);
}

static void test_network_share(void **state)
{
	struct fake_proxy *fp = up();
	struct grant g = grant("example.test", "max-requests=5", 1000);
	struct budget_entry *e;
	char who[64], why[320];
	int i;

	/* the grant is in the policy: its counts matter (a table full of them is not pruned) */
	fp->px.policy = policy_new(fp->px.config, &g, 1, false, NULL, 0, fp->px.run_id, time(NULL));
	assert_non_null(fp->px.policy);
	/* one network holds 8192 / 16 principals' counts; the next is refused, fail closed */
	for (i = 0; i < 512; i++) {
		snprintf(who, sizeof(who), "p%d@flood", i);
		assert_int_equal(take(fp, &g, who, "flood", 0, 0, &e, why), 0);
		budget_put(e);
	}
	assert_int_equal(take(fp, &g, "p512@flood", "flood", 0, 0, &e, why), 1);
	assert_string_equal(why, "budget counts cannot be kept for p512@flood: network flood holds "
				 "its share (512 of 8192 principals and grants counted); nothing was sent");
	/* its principals already counted go on; another network is not touched */
	assert_int_equal(take(fp, &g, "p0@flood", "flood", 0, 0, &e, why), 0);
	assert_int_equal(take(fp, &g, "q@calm", "calm", 0, 0, &e, why), 0);
	/* nor is an unstamped principal (no network) */
	assert_int_equal(take(fp, &g, "unattributed 127.0.0.0/8", NULL, 0, 0, &e, why), 0);
	budget_put(e);
	/*
	 * The grant gone from the policy (a reload removed it): at the next
	 * principal past the share, a second later, the counts no exchange
	 * holds are freed, and it is counted.
	 */
	policy_free(fp->px.policy);
	fp->px.policy = NULL;
	assert_int_equal(take(fp, &g, "p513@flood", "flood", 0, 0, &e, why), 1); /* pruned < 1s ago */
	fake_clock_advance(1000);
	assert_int_equal(take(fp, &g, "p513@flood", "flood", 0, 0, &e, why), 0);
	down(fp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_max_requests), cmocka_unit_test(test_max_up_edges),
		cmocka_unit_test(test_window),       cmocka_unit_test(test_per_words),
		cmocka_unit_test(test_grants_apart), cmocka_unit_test(test_restart),
		cmocka_unit_test(test_clock_back),   cmocka_unit_test(test_network_share),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
