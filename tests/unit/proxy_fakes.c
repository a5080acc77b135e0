/*
 * proxy_fakes.c: the clock, the proxy and the loop of the proxy's unit
 * tests (proxy_fakes.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "config.h"
#include "loop.h"
#include "netlog.h"
#include "proxy_fakes.h"

/* --- the clock --------------------------------------------------------- */

static struct timespec base_real, base_mono; /* the kernel's, at the first call */
static bool based;
static int64_t advanced_ms; /* may go below 0: a clock stepped back */
static unsigned long asked_real, asked_mono;

static void clock_base(void)
{
	if (based)
		return;
	syscall(SYS_clock_gettime, CLOCK_REALTIME, &base_real);
	syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &base_mono);
	based = true;
}

static void plus_ms(struct timespec *ts, const struct timespec *base, int64_t ms)
{
	int64_t ns = (int64_t)base->tv_sec * 1000000000 + base->tv_nsec + ms * 1000000;

	ts->tv_sec = (time_t)(ns / 1000000000);
	ts->tv_nsec = (long)(ns % 1000000000);
}

/* Takes the C library's place (the executable's definition comes first). */
int clock_gettime(clockid_t id, struct timespec *ts)
{
	clock_base();
	switch (id) {
	case CLOCK_REALTIME:
		asked_real++;
		plus_ms(ts, &base_real, advanced_ms);
		return 0;
	case CLOCK_MONOTONIC:
		asked_mono++;
		plus_ms(ts, &base_mono, advanced_ms);
		return 0;
	default:
		return (int)syscall(SYS_clock_gettime, id, ts);
	}
}

void fake_clock_advance(uint64_t ms)
{
	clock_base();
	advanced_ms += (int64_t)ms;
}

void fake_clock_back(uint64_t ms)
{
	clock_base();
	advanced_ms -= (int64_t)ms;
}

uint64_t fake_clock_mono_ms(void)
{
	struct timespec ts;

	clock_base();
	plus_ms(&ts, &base_mono, advanced_ms);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int64_t fake_clock_wall_ms(void)
{
	struct timespec ts;

	clock_base();
	plus_ms(&ts, &base_real, advanced_ms);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

unsigned long fake_clock_asked(clockid_t id)
{
	return id == CLOCK_REALTIME ? asked_real : id == CLOCK_MONOTONIC ? asked_mono : 0;
}

/* --- a proxy ----------------------------------------------------------- */

struct fake_proxy *fake_proxy_new(const char *conf)
{
	struct fake_proxy *fp = calloc(1, sizeof(*fp));
	struct config *c = config_new();
	char *errs = NULL;
	size_t errlen = 0;
	FILE *f = open_memstream(&errs, &errlen);
	const char *why = NULL;
	int nerr;

	assert_non_null(fp);
	assert_non_null(c);
	assert_non_null(f);
	snprintf(fp->dir, sizeof(fp->dir), "/tmp/sluice-unit-XXXXXX");
	assert_non_null(mkdtemp(fp->dir));
	nerr = config_parse(c, conf, strlen(conf), "unit.conf", f);
	fclose(f);
	if (nerr != 0)
		print_error("config: %s", errs);
	assert_int_equal(nerr, 0);
	free(errs);
	snprintf(c->state_dir, sizeof(c->state_dir), "%s", fp->dir);
	fp->px.config = c;
	fp->px.run_fd = -1;
	snprintf(fp->px.run_id, sizeof(fp->px.run_id), "0123456789abcdef");
	fp->px.loop = loop_new();
	assert_non_null(fp->px.loop);
	snprintf(fp->log_path, sizeof(fp->log_path), "%s/net.log", fp->dir);
	fp->px.netlog = netlog_open(fp->log_path, 0, 0, false, FILE_NO_UID, &why);
	if (fp->px.netlog == NULL)
		print_error("netlog_open: %s\n", why != NULL ? why : strerror(errno));
	assert_non_null(fp->px.netlog);
	return fp;
}

void fake_proxy_free(struct fake_proxy *fp)
{
	DIR *d;
	struct dirent *e;

	if (fp == NULL)
		return;
	netlog_close(fp->px.netlog);
	loop_free(fp->px.loop);
	config_free(fp->px.config);
	d = opendir(fp->dir);
	while (d != NULL && (e = readdir(d)) != NULL) {
		char p[sizeof(fp->dir) + 256 + 2];

		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(p, sizeof(p), "%s/%s", fp->dir, e->d_name);
		unlink(p);
	}
	if (d != NULL)
		closedir(d);
	rmdir(fp->dir);
	free(fp);
}

char *fake_proxy_log(const struct fake_proxy *fp)
{
	FILE *f = fopen(fp->log_path, "r");
	char *out = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&out, &len);
	char chunk[4096];
	size_t n;

	assert_non_null(m);
	while (f != NULL && (n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		fwrite(chunk, 1, n, m);
	if (f != NULL)
		fclose(f);
	fclose(m);
	return out;
}

size_t fake_count(const char *hay, const char *needle)
{
	size_t n = 0, len = strlen(needle);

	for (const char *p = hay; len > 0 && (p = strstr(p, needle)) != NULL; p += len)
		n++;
	return n;
}

/* --- stderr ------------------------------------------------------------ */

static int saved_err = -1;
static FILE *kept;

void fake_stderr_begin(void)
{
	assert_int_equal(saved_err, -1);
	fflush(stderr);
	kept = tmpfile();
	assert_non_null(kept);
	saved_err = dup(2);
	assert_true(saved_err >= 0);
	assert_int_equal(dup2(fileno(kept), 2), 2);
}

char *fake_stderr_end(void)
{
	char *out = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&out, &len);
	char chunk[4096];
	size_t n;

	assert_true(saved_err >= 0);
	fflush(stderr);
	assert_int_equal(dup2(saved_err, 2), 2);
	close(saved_err);
	saved_err = -1;
	assert_non_null(m);
	rewind(kept);
	while ((n = fread(chunk, 1, sizeof(chunk), kept)) > 0)
		fwrite(chunk, 1, n, m);
	fclose(kept);
	kept = NULL;
	fclose(m);
	return out;
}

/* --- the loop ---------------------------------------------------------- */

struct steps {
	enum fake_step (*step)(void *arg, unsigned n);
	void *arg;
	unsigned n;
	struct timespec began;  /* the kernel's monotonic clock: the bound in real time */
	struct loop_timer tick; /* due at once: the turn does not wait */
};

static void on_tick(struct loop *l, struct loop_timer *t)
{
}

static void on_turn(struct loop *l, void *arg)
{
	struct steps *st = arg;
	struct timespec now;
	enum fake_step next;

	syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &now);
	assert_true(st->n < 10000);
	assert_true(now.tv_sec - st->began.tv_sec < 20);
	next = st->step(st->arg, st->n++);
	loop_timer_cancel(l, &st->tick);
	if (next == FAKE_STOP)
		loop_stop(l);
	else if (next == FAKE_TURN)
		loop_timer_set(l, &st->tick, 0, on_tick, st);
}

/* A loop that never comes back to a step (a timer re-armed for ever, say) ends the test. */
static void on_alarm(int sig)
{
	static const char msg[] = "proxy_fakes: the loop ran 30 s without coming back to a step\n";

	(void)!write(2, msg, sizeof(msg) - 1);
	_exit(1);
}

void fake_loop_steps(struct proxy *px, enum fake_step (*step)(void *arg, unsigned n), void *arg)
{
	struct steps st = { .step = step, .arg = arg };
	struct sigaction sa = { .sa_handler = on_alarm }, old;

	syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &st.began);
	assert_int_equal(sigaction(SIGALRM, &sa, &old), 0);
	alarm(30);
	loop_set_hook(px->loop, on_turn, &st);
	assert_int_equal(loop_run(px->loop), 0);
	loop_set_hook(px->loop, NULL, NULL);
	alarm(0);
	sigaction(SIGALRM, &old, NULL);
}
