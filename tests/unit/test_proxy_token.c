/*
 * test_proxy_token.c: token commands (proxy/token.c), run for real on the
 * loop (posix_spawn, a pipe, a pidfd) with a clock the test sets. The
 * command is a script the test writes: it records each run's arguments
 * and environment and answers what the test put in its answer file (or
 * exits with the code, or hangs). Checked: one run serves a request and
 * the value is cached until 90% of its TTL, to the millisecond; a failed
 * run's words, then no second run within token-min-interval (the words
 * say so), one after it; a command that printed nothing usable; one that
 * overran its 10 s (killed with its process group); a 401's refused value
 * run again; the variables an env= rule names kept from the command.
 *
 * token_get takes a session: the test's is a bare struct whose px and x
 * are set (a request waiting is woken by the run's end through
 * px->sessions; the test's is not listed there and asks again itself, as
 * a woken one does, with token_waited).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proxy_fakes.h"
#include "request.h"

struct mint {
	struct fake_proxy *fp;
	char dir[64]; /* the script and its files */
	struct session s;
	struct exchange x;
	int got;      /* token_get's last answer */
	char *val;
	size_t len;
	char why[200];
	unsigned phase; /* of the test's script */
	char *whys[4];
	size_t nwhys;
};

static void put(const struct mint *m, const char *name, const char *text)
{
	char p[128];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", m->dir, name);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static void drop(const struct mint *m, const char *name)
{
	char p[128];

	snprintf(p, sizeof(p), "%s/%s", m->dir, name);
	unlink(p);
}

/* The runs the command recorded, one line each ("" none; caller frees). */
static char *asked(const struct mint *m)
{
	char p[128], *out = NULL;
	size_t len = 0;
	FILE *f, *o = open_memstream(&out, &len);
	int c;

	snprintf(p, sizeof(p), "%s/asked", m->dir);
	f = fopen(p, "r");
	while (f != NULL && (c = fgetc(f)) != EOF)
		fputc(c, o);
	if (f != NULL)
		fclose(f);
	fclose(o);
	return out;
}

static void assert_asked(const struct mint *m, const char *want)
{
	char *a = asked(m);

	assert_string_equal(a, want);
	free(a);
}

/* How many runs the command recorded. */
static size_t nasked(const struct mint *m)
{
	char *a = asked(m);
	size_t n = fake_count(a, "\n");

	free(a);
	return n;
}

static struct mint *up(void)
{
	struct mint *m = calloc(1, sizeof(*m));
	char conf[512], script[512];

	assert_non_null(m);
	snprintf(m->dir, sizeof(m->dir), "/tmp/sluice-mint-XXXXXX");
	assert_non_null(mkdtemp(m->dir));
	snprintf(script, sizeof(script),
		 "#!/bin/sh\n"
		 "d=%s\n"
		 /* the pid whole before the run is recorded: the test reads it once it sees the run */
		 "if [ -e $d/hang ]; then echo $$ >$d/pid.new; mv $d/pid.new $d/pid; fi\n"
		 "echo \"$# [$1] [$2] secret=${SLUICE_UNIT_SECRET-unset} path=${PATH:+set}\" >>$d/asked\n"
		 "if [ -e $d/hang ]; then exec sleep 30; fi\n"
		 "cat $d/answer\n"
		 "exit $(cat $d/code)\n",
		 m->dir);
	put(m, "mint", script);
	put(m, "code", "0\n");
	put(m, "answer", "tok-1\n60\n");
	{
		char p[128];

		snprintf(p, sizeof(p), "%s/mint", m->dir);
		assert_int_equal(chmod(p, 0700), 0);
	}
	setenv("SLUICE_UNIT_SECRET", "the other rule's", 1);
	snprintf(conf, sizeof(conf),
		 "token-min-interval 5\n"
		 "inject tok host=tok.example header=X-Api-Key command=%s/mint args=\"one two\"\n"
		 "inject other host=other.example header=X-Key env=SLUICE_UNIT_SECRET\n",
		 m->dir);
	m->fp = fake_proxy_new(conf);
	assert_int_equal(m->fp->px.config->nrules, 2);
	m->s.px = &m->fp->px;
	m->s.x = &m->x;
	m->x.conn = &m->s;
	return m;
}

static void down(struct mint *m)
{
	static const char *files[] = { "mint", "code", "answer", "asked", "hang", "pid" };

	token_release_all(&m->fp->px);
	assert_null(m->fp->px.tokens);
	free(m->val);
	fake_proxy_free(m->fp);
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		drop(m, files[i]);
	rmdir(m->dir);
	unsetenv("SLUICE_UNIT_SECRET");
	free(m);
}

static const struct inject_rule *rule(const struct mint *m)
{
	return &m->fp->px.config->rules[0];
}

/* token_get as a request asks: 1 with val, 0 minting, -1 with why. */
static int get(struct mint *m, bool waited)
{
	free(m->val);
	m->val = NULL;
	m->why[0] = '\0';
	m->s.token_waited = waited;
	m->got = token_get(&m->x, rule(m), &m->val, &m->len, m->why, sizeof(m->why));
	assert_true(m->got >= -1 && m->got <= 1);
	assert_int_equal(m->got == 1, m->val != NULL);
	return m->got;
}

/*
 * A test is a script of phases over one loop (a loop runs once): each
 * returns what the turn after it does; m->phase moves on when it is done.
 */
#define NEXT(how) do { m->phase++; return (how); } while (0)

static void run(struct mint *m, enum fake_step (*script)(void *arg, unsigned n))
{
	fake_loop_steps(&m->fp->px, script, m);
}

static enum fake_step cached(void *arg, unsigned n)
{
	struct mint *m = arg;
	char *peek = NULL;
	size_t plen;

	switch (m->phase) {
	case 0:
		assert_int_equal(token_peek(&m->fp->px, rule(m), &peek, &plen), 0); /* never minted */
		assert_int_equal(get(m, false), 0); /* minting: the request waits */
		NEXT(FAKE_WAIT);
	case 1:
		if (get(m, true) == 0)
			return FAKE_WAIT;
		assert_int_equal(m->got, 1);
		assert_string_equal(m->val, "tok-1");
		assert_int_equal(m->len, 5);
		/* one run, its arguments as written, the env= rules' variables kept from it */
		assert_asked(m, "2 [one] [two] secret=unset path=set\n");
		assert_ptr_equal(m->x.minted, m->fp->px.tokens);
		assert_int_equal(token_peek(&m->fp->px, rule(m), &peek, &plen), 1);
		assert_string_equal(peek, "tok-1");
		free(peek);
		put(m, "answer", "tok-2\n60\n");
		fake_clock_advance(53999);
		NEXT(FAKE_TURN);
	case 2:
		/* 90% of a 60 s TTL: fresh for 54 s, with no second run */
		assert_int_equal(get(m, false), 1);
		assert_string_equal(m->val, "tok-1");
		assert_asked(m, "2 [one] [two] secret=unset path=set\n");
		fake_clock_advance(1);
		NEXT(FAKE_TURN);
	case 3:
		assert_int_equal(get(m, false), 0); /* stale: a new run */
		NEXT(FAKE_WAIT);
	case 4:
		if (get(m, true) == 0)
			return FAKE_WAIT;
		assert_int_equal(m->got, 1);
		assert_string_equal(m->val, "tok-2");
		assert_int_equal(nasked(m), 2);
		/*
		 * The origin answers 401 to it: within the interval another run would
		 * give nothing new, so the 401 is the answer; after it, a run.
		 */
		assert_false(token_refused(m->x.minted, m->x.minted_gen, m->fp->px.config));
		put(m, "answer", "tok-3\n");
		fake_clock_advance(5000);
		NEXT(FAKE_TURN);
	case 5:
		assert_true(token_refused(m->x.minted, m->x.minted_gen, m->fp->px.config));
		assert_int_equal(get(m, false), 0); /* refused by the origin: not used again */
		NEXT(FAKE_WAIT);
	case 6:
		if (get(m, true) == 0)
			return FAKE_WAIT;
		assert_string_equal(m->val, "tok-3");
		/* a value from an earlier run refused late: the new one is there already */
		assert_true(token_refused(m->x.minted, m->x.minted_gen - 1, m->fp->px.config));
		NEXT(FAKE_STOP);
	}
	return FAKE_STOP;
}

static void test_cached(void **state)
{
	struct mint *m = up();

	run(m, cached);
	assert_int_equal(m->phase, 7);
	down(m);
}

static enum fake_step failed(void *arg, unsigned n)
{
	struct mint *m = arg;

	switch (m->phase) {
	case 0:
		put(m, "code", "3\n");
		assert_int_equal(get(m, false), 0);
		NEXT(FAKE_WAIT);
	case 1:
		if (get(m, true) == 0)
			return FAKE_WAIT;
		/* the requests that waited: the run's words, never its output */
		assert_int_equal(m->got, -1);
		assert_string_equal(m->why, "the token command failed");
		/* a new request within the interval: no run, the words say when */
		assert_int_equal(get(m, false), -1);
		assert_string_equal(m->why, "the token command failed (it runs again at most once "
					    "every 5 s)");
		fake_clock_advance(4999);
		NEXT(FAKE_TURN);
	case 2:
		assert_int_equal(get(m, false), -1);
		assert_int_equal(nasked(m), 1);
		put(m, "code", "0\n");
		fake_clock_advance(1);
		NEXT(FAKE_TURN);
	case 3:
		assert_int_equal(get(m, false), 0); /* the interval over: it runs again */
		NEXT(FAKE_WAIT);
	case 4:
		if (get(m, true) == 0)
			return FAKE_WAIT;
		assert_string_equal(m->val, "tok-1");
		assert_int_equal(nasked(m), 2);
		NEXT(FAKE_STOP);
	}
	return FAKE_STOP;
}

static void test_failed(void **state)
{
	struct mint *m = up();

	run(m, failed);
	assert_int_equal(m->phase, 5);
	down(m);
}

static enum fake_step unusable(void *arg, unsigned n)
{
	struct mint *m = arg;

	switch (m->phase) {
	case 0:
		assert_int_equal(get(m, false), 0);
		NEXT(FAKE_WAIT);
	case 1:
		if (get(m, true) == 0)
			return FAKE_WAIT;
		assert_int_equal(m->got, -1);
		m->whys[m->nwhys++] = strdup(m->why);
		NEXT(FAKE_STOP);
	}
	return FAKE_STOP;
}

static void test_unusable(void **state)
{
	static const char *answers[] = { "", "\n", "tok\n0\n", "tok\nsoon\n" };
	struct mint *m;
	char big[20000]; /* more than INJECT_SECRET_MAX + 64 */

	for (size_t i = 0; i < sizeof(answers) / sizeof(answers[0]); i++) {
		m = up();
		put(m, "answer", answers[i]);
		run(m, unusable);
		assert_true(strncmp(m->whys[0], "the token command printed no usable token: ", 43) == 0);
		free(m->whys[0]);
		down(m);
	}
	/* more than a secret and its TTL can be: cut off, the command killed */
	m = up();
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	put(m, "answer", big);
	run(m, unusable);
	assert_string_equal(m->whys[0], "the token command printed too much");
	free(m->whys[0]);
	down(m);
}

static enum fake_step hung(void *arg, unsigned n)
{
	struct mint *m = arg;

	switch (m->phase) {
	case 0:
		put(m, "hang", "");
		assert_int_equal(get(m, false), 0);
		NEXT(FAKE_TURN);
	case 1:
		/* it started (the run is recorded) and runs on: 10 s of the clock later, killed */
		if (nasked(m) == 0) {
			usleep(1000); /* polled: its timer is 10 s of the fake clock away */
			return FAKE_TURN;
		}
		assert_int_equal(get(m, true), 0);
		fake_clock_advance(9999);
		NEXT(FAKE_TURN);
	case 2:
		assert_int_equal(get(m, true), 0);
		fake_clock_advance(1);
		NEXT(FAKE_TURN);
	case 3:
		assert_int_equal(get(m, true), -1);
		assert_string_equal(m->why, "the token command did not finish within 10 s");
		NEXT(FAKE_STOP);
	}
	return FAKE_STOP;
}

static void test_hung(void **state)
{
	struct mint *m = up();
	char p[128];
	FILE *f;
	int pid = 0;

	run(m, hung);
	assert_int_equal(m->phase, 4);
	snprintf(p, sizeof(p), "%s/pid", m->dir);
	f = fopen(p, "r");
	assert_non_null(f);
	assert_int_equal(fscanf(f, "%d", &pid), 1);
	fclose(f);
	assert_true(pid > 1);
	down(m);
	/* killed and reaped: no such process */
	assert_int_equal(kill(pid, 0), -1);
	assert_int_equal(errno, ESRCH);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cached),   cmocka_unit_test(test_failed),
		cmocka_unit_test(test_unusable), cmocka_unit_test(test_hung),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
