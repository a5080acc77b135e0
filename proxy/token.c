/*
 * token.c: secrets minted by a rule's token command, cached until shortly
 * before they expire, and minted at most once per token-min-interval.
 *
 * A command rule's token is kept per source (the rule's name, command and
 * arguments, so a reload that keeps them keeps the token). When a request
 * needs it and it is missing, stale (an upstream answered 401 to it) or
 * past 90% of its TTL, the command is started (posix_spawn, no shell,
 * stdin and stderr /dev/null, the proxy's environment without any variable
 * an env= rule of the config names: those are other rules' secrets) and
 * the request waits in h1_token_state;
 * so do the requests that need it while that run is in flight: one run
 * serves them all. Its stdout (the value, then optionally a TTL in
 * seconds: inject_token_parse) is read through a pipe watched by the loop,
 * and its exit through a pidfd watched by the loop: nothing here sleeps
 * or waits. A run must close its output within TOKEN_RUN_MS and exit
 * within TOKEN_EXIT_MS after that, exit 0 and print a usable token; when
 * it overruns or fails, its process group is killed (SIGKILL), also when
 * the command itself has exited and what it started holds the output, and
 * the command is reaped when its pidfd says so.
 * A failed run fails every request waiting on it: each is refused with a
 * 502 saying why (never the output).
 *
 * A run starts at most once per token-min-interval (config.h) per token:
 * in between, a request reuses the last value even if stale or expired,
 * and when the last run failed it is refused with that run's error. So an
 * origin that answers every request 401, or a command that always fails,
 * costs one run per interval, not one per request. The value lives in the
 * proxy only; it is wiped when replaced or at exit.
 */
#include "request.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/pidfd.h>
#include <sys/wait.h>
#include <unistd.h>

#define TOKEN_RUN_MS 10000 /* from the start until its output is closed */
#define TOKEN_EXIT_MS 1000 /* from its output closed until it exited */
#define TOKEN_OUT_MAX (INJECT_SECRET_MAX + 64)
#define TOKEN_KEY_MAX (INJECT_NAME_MAX + INJECT_SOURCE_MAX + INJECT_ARGS_MAX + 3)

struct token {
	struct token *next;
	struct proxy *px;
	char key[TOKEN_KEY_MAX];
	char *value;
	size_t len;
	unsigned gen;         /* bumped each time value is replaced */
	uint64_t fresh_until; /* loop ms; 0: none */
	bool stale;           /* an upstream refused value (401) */
	bool ran;             /* a run was ever started */
	uint64_t started;     /* loop ms the last run started */
	bool running;         /* a run in progress: requests wait for it */
	bool out_closed;      /* ... its stdout reached its end */
	bool exited;          /* ... it was reaped, with status */
	int status;
	pid_t pid;            /* the child not reaped yet (a run, or a killed one); 0 none */
	pid_t pgid;           /* the run's process group (the child's pid), kept once reaped; 0 none */
	struct loop_io io;    /* its stdout */
	struct loop_io pidio; /* its pidfd: readable once it exited */
	struct loop_timer timer;
	struct buf out;
	char error[200]; /* the last run's failure, for the requests that waited on it */
};

static void token_key(const struct inject_rule *r, char *key)
{
	snprintf(key, TOKEN_KEY_MAX, "%s\n%s\n%s", r->name, r->source_arg, r->args);
}

static void value_wipe(struct token *t)
{
	if (t->value != NULL) {
		explicit_bzero(t->value, t->len);
		free(t->value);
	}
	t->value = NULL;
	t->len = 0;
	t->fresh_until = 0;
	t->stale = false;
}

/*
 * SIGKILL the command's process group (pid > 0, not reaped yet, so the
 * group is still its own), and the command itself should the group be gone.
 */
static void kill_group(pid_t pid)
{
	if (kill(-pid, SIGKILL) == -1)
		kill(pid, SIGKILL);
}

/*
 * Wake every session waiting on t: each goes back to its head, read again
 * from its credential step on (exchange.c: judged once), and asks again
 * (an HTTP/2 connection's waiting streams, whatever token each waits for:
 * one still running keeps its stream waiting).
 */
static void wake(struct token *t)
{
	struct list_node *n, *next;

	list_foreach_safe(n, next, &t->px->sessions) {
		struct session *s = list_entry(n, struct session, link);

		if (s->codec->token_ready != NULL)
			s->codec->token_ready(s, t);
	}
}

/*
 * The run is over: output read to its end and the child reaped (fail
 * NULL), or it failed (the child, if not reaped yet, is killed and reaped
 * later by on_reaped). Takes its value or its error and wakes its waiters.
 */
static void run_end(struct token *t, const char *fail)
{
	struct loop *l = t->px->loop;
	char secret[INJECT_SECRET_MAX + 1];
	unsigned ttl = 0;
	const char *err = NULL;
	int n = -1;

	loop_timer_cancel(l, &t->timer);
	if (t->io.fd >= 0)
		loop_io_close(l, &t->io);
	t->running = false;
	if (fail == NULL && !(WIFEXITED(t->status) && WEXITSTATUS(t->status) == 0))
		fail = "the token command failed";
	if (fail == NULL) {
		n = inject_token_parse(buf_head(&t->out), buf_len(&t->out), secret, sizeof(secret),
				       &ttl, &err);
		if (n < 0)
			fail = "the token command printed no usable token";
	}
	if (t->pid > 0 && !t->exited)
		kill_group(t->pid);
	else if (fail != NULL && t->pgid > 0)
		kill(-t->pgid, SIGKILL); /* reaped: what it started may still hold the output */
	t->pgid = 0;
	if (buf_len(&t->out) > 0) /* no output: no buffer either */
		explicit_bzero(buf_head(&t->out), buf_len(&t->out));
	buf_release(&t->out);
	value_wipe(t);
	t->gen++;
	if (fail != NULL) {
		snprintf(t->error, sizeof(t->error), "%s%s%s", fail, err != NULL ? ": " : "",
			 err != NULL ? err : "");
	} else {
		t->value = malloc((size_t)n + 1);
		if (t->value != NULL) {
			memcpy(t->value, secret, (size_t)n + 1);
			t->len = (size_t)n;
			t->fresh_until = loop_now(l) + (uint64_t)ttl * 900; /* 90% of its TTL */
			t->error[0] = '\0';
		} else {
			snprintf(t->error, sizeof(t->error), "out of memory");
		}
	}
	explicit_bzero(secret, sizeof(secret));
	stats_token(t->value != NULL);
	wake(t);
}

/* The child's pidfd is readable: it exited (or was killed); reap it. */
static void on_reaped(struct loop *l, struct loop_io *io, uint32_t events)
{
	struct token *t = io->arg;
	int status = 0;
	pid_t p = waitpid(t->pid, &status, WNOHANG);

	if (p == 0)
		return;
	loop_io_close(l, &t->pidio);
	t->pid = 0;
	if (!t->running)
		return; /* a run that already failed (killed): only reaped */
	if (p == -1) {
		run_end(t, "the token command cannot be waited for");
		return;
	}
	t->exited = true;
	t->status = status;
	if (t->out_closed)
		run_end(t, NULL);
	/* else a child of it still holds the output: read on, within TOKEN_RUN_MS */
}

static void on_out(struct loop *l, struct loop_io *io, uint32_t events)
{
	struct token *t = io->arg;

	for (;;) {
		bool drained = false;
		ssize_t n = buf_read_fd(&t->out, io->fd, 0, &drained);

		if (n > 0)
			continue;
		if (n == 0)
			break;
		if (errno == EAGAIN)
			return;
		run_end(t, errno == ENOBUFS ? "the token command printed too much"
					    : "reading the token command failed");
		return;
	}
	loop_io_close(l, &t->io);
	t->out_closed = true;
	if (t->exited) {
		run_end(t, NULL);
		return;
	}
	/* its output is closed: it is exiting; it gets TOKEN_EXIT_MS, not the rest of the run */
	if (t->timer.when_ms > loop_now(l) + TOKEN_EXIT_MS)
		loop_timer_set(l, &t->timer, TOKEN_EXIT_MS, t->timer.fn, t);
}

static void on_timeout(struct loop *l, struct loop_timer *tm)
{
	struct token *t = tm->arg;

	run_end(t, t->out_closed ? "the token command closed its output but did not exit"
				 : "the token command did not finish within 10 s");
}

/* Whether the environment entry e ("NAME=value") is a variable an env= rule of c names. */
static bool env_secret(const char *e, const struct config *c)
{
	size_t n = strcspn(e, "=");

	for (size_t i = 0; i < c->nrules; i++) {
		const struct inject_rule *r = &c->rules[i];

		if (r->source == INJECT_ENV && strlen(r->source_arg) == n &&
		    memcmp(r->source_arg, e, n) == 0)
			return true;
	}
	return false;
}

/*
 * The environment for a token command: the proxy's, without the variables
 * env= rules name. The array is the caller's to free; its strings are
 * environ's. NULL when out of memory.
 */
static char **command_env(const struct config *c)
{
	size_t n = 0, k = 0;
	char **envp;

	while (environ[n] != NULL)
		n++;
	envp = calloc(n + 1, sizeof(*envp));
	if (envp == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (!env_secret(environ[i], c))
			envp[k++] = environ[i];
	envp[k] = NULL;
	return envp;
}

/*
 * Start the command with posix_spawn: the proxy is suspended until the
 * child has exec'd (glibc's CLONE_VFORK), so no copy of a client socket
 * outlives the exec in a child while the loop closes that socket (a
 * closed socket still held elsewhere stays in epoll: loop_io_drop). The
 * child gets stdin and stderr /dev/null, stdout the pipe (blocking), no
 * blocked signals, SIGPIPE at its default, and a process group of its own
 * (its pid), so killing it kills what it started too.
 */
static int spawn(const struct inject_rule *r, const struct config *c, int out, pid_t *pid)
{
	char argbuf[INJECT_ARGS_MAX + 1];
	char *argv[INJECT_ARGV_MAX + 2];
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, pipe_only;
	char **envp;
	int ret = -1;

	if (inject_command_argv(r, argbuf, sizeof(argbuf), argv, INJECT_ARGV_MAX + 2) < 0)
		return -1;
	envp = command_env(c);
	if (envp == NULL)
		return -1;
	sigemptyset(&none);
	sigemptyset(&pipe_only);
	sigaddset(&pipe_only, SIGPIPE);
	if (posix_spawn_file_actions_init(&fa) != 0)
		goto out_env;
	if (posix_spawnattr_init(&at) != 0)
		goto out_fa;
	if (posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0) == 0 &&
	    posix_spawn_file_actions_adddup2(&fa, out, 1) == 0 &&
	    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0) == 0 &&
	    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
					      POSIX_SPAWN_SETPGROUP) == 0 &&
	    posix_spawnattr_setpgroup(&at, 0) == 0 &&
	    posix_spawnattr_setsigmask(&at, &none) == 0 &&
	    posix_spawnattr_setsigdefault(&at, &pipe_only) == 0 &&
	    posix_spawn(pid, argv[0], &fa, &at, argv, envp) == 0)
		ret = 0;
	posix_spawnattr_destroy(&at);
out_fa:
	posix_spawn_file_actions_destroy(&fa);
out_env:
	free(envp);
	return ret;
}

static int run_start(struct token *t, const struct inject_rule *r, const struct config *c)
{
	struct loop *l = t->px->loop;
	int p[2], pfd;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) == -1) {
		snprintf(t->error, sizeof(t->error), "the token command cannot be started");
		return -1;
	}
	/* only our end is non-blocking: the command writes blocking */
	if (fcntl(p[0], F_SETFL, O_NONBLOCK) == -1 || spawn(r, c, p[1], &pid) == -1) {
		close(p[0]);
		close(p[1]);
		snprintf(t->error, sizeof(t->error), "the token command cannot be started");
		return -1;
	}
	close(p[1]);
	t->ran = true;
	t->started = loop_now(l);
	t->pid = pid;
	t->pgid = pid;
	t->running = true;
	t->out_closed = false;
	t->exited = false;
	t->status = 0;
	buf_init(&t->out, TOKEN_OUT_MAX);
	loop_timer_set(l, &t->timer, TOKEN_RUN_MS, on_timeout, t);
	if (loop_io_add(l, &t->io, p[0], EPOLLIN, on_out, t) == -1) {
		close(p[0]);
		goto out_watch_failed;
	}
	pfd = pidfd_open(t->pid, 0);
	if (pfd == -1 || loop_io_add(l, &t->pidio, pfd, EPOLLIN, on_reaped, t) == -1) {
		if (pfd != -1)
			close(pfd);
		goto out_watch_failed;
	}
	return 0;
out_watch_failed:
	/* nothing waits on it yet; killed, and reaped here: SIGKILL ends it at once */
	kill_group(t->pid);
	waitpid(t->pid, NULL, 0);
	t->pid = 0;
	run_end(t, "the token command cannot be watched");
	return -1;
}

/* Whether t may start a run now: never ran, or the interval since the last start is over. */
static bool may_run(const struct token *t, const struct config *c)
{
	return !t->ran || loop_now(t->px->loop) >= t->started + c->token_min_interval_ms;
}

/*
 * The secret of command rule r for session s: 1 ready (*val a copy the
 * request owns), 0 minting (s waits in h1_token_state and is woken), -1 failed
 * (why filled).
 */
int token_get(struct exchange *x, const struct inject_rule *r, char **val, size_t *len,
	      char *why, size_t size)
{
	struct session *s = x->conn;
	struct proxy *px = s->px;
	const struct config *c = session_config(s);
	char key[TOKEN_KEY_MAX];
	struct token *t;
	bool waited = s->token_waited, usable, runnable;

	s->token_waited = false;
	token_key(r, key);
	for (t = px->tokens; t != NULL && strcmp(t->key, key) != 0; t = t->next)
		;
	if (t == NULL) {
		t = calloc(1, sizeof(*t));
		if (t == NULL) {
			snprintf(why, size, "out of memory");
			return -1;
		}
		t->px = px;
		t->io.fd = -1;
		t->pidio.fd = -1;
		memcpy(t->key, key, sizeof(key));
		t->next = px->tokens;
		px->tokens = t;
	}
	usable = t->value != NULL && !t->stale && loop_now(px->loop) < t->fresh_until;
	if (!usable && t->running) {
		s->token = t;
		return 0;
	}
	/* a woken request never starts a run; nor does one within the interval */
	runnable = !usable && !waited && t->pid == 0 && may_run(t, c);
	if (runnable) {
		if (run_start(t, r, c) == -1) {
			snprintf(why, size, "%s", t->error);
			return -1;
		}
		s->token = t;
		return 0;
	}
	if (t->value == NULL) {
		if (waited)
			snprintf(why, size, "%s", t->error);
		else if (t->error[0] != '\0')
			snprintf(why, size, "%s (it runs again at most once every %u s)", t->error,
				 c->token_min_interval_ms / 1000);
		else
			snprintf(why, size, "the previous token command is still exiting");
		return -1;
	}
	*val = malloc(t->len + 1);
	if (*val == NULL) {
		snprintf(why, size, "out of memory");
		return -1;
	}
	memcpy(*val, t->value, t->len + 1);
	*len = t->len;
	x->minted = t;
	x->minted_gen = t->gen;
	return 1;
}

/*
 * The last token command rule r minted, fresh or not, for scrubbing a
 * response: 1 (*val a copy the caller owns and wipes), 0 none (never
 * minted, or refused by a 401), -1 out of memory. Never starts a run.
 */
int token_peek(struct proxy *px, const struct inject_rule *r, char **val, size_t *len)
{
	char key[TOKEN_KEY_MAX];
	struct token *t;

	token_key(r, key);
	for (t = px->tokens; t != NULL && strcmp(t->key, key) != 0; t = t->next)
		;
	if (t == NULL || t->value == NULL)
		return 0;
	*val = malloc(t->len + 1);
	if (*val == NULL)
		return -1;
	memcpy(*val, t->value, t->len + 1);
	*len = t->len;
	return 1;
}

bool token_refused(struct token *t, unsigned gen, const struct config *c)
{
	if (t->gen == gen && t->value != NULL)
		t->stale = true;
	if (t->running)
		return true;
	if (t->gen != gen)
		return t->value != NULL;
	return t->pid == 0 && may_run(t, c);
}

void token_release_all(struct proxy *px)
{
	while (px->tokens != NULL) {
		struct token *t = px->tokens;

		px->tokens = t->next;
		if (t->pid > 0) {
			/* at exit: SIGKILL ends it at once */
			kill_group(t->pid);
			waitpid(t->pid, NULL, 0);
		} else if (t->running && t->pgid > 0) {
			kill(-t->pgid, SIGKILL); /* reaped, but what it started holds the output */
		}
		if (t->io.fd >= 0)
			loop_io_close(px->loop, &t->io);
		if (t->pidio.fd >= 0)
			loop_io_close(px->loop, &t->pidio);
		loop_timer_cancel(px->loop, &t->timer);
		buf_release(&t->out);
		value_wipe(t);
		free(t);
	}
}
