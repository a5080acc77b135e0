/*
 * token.c: secrets minted by a rule's token command, cached until shortly
 * before they expire.
 *
 * A command rule's token is kept per source (the rule's name, command and
 * arguments, so a reload that keeps them keeps the token). When a request
 * needs it and it is missing or stale, the command is started (no shell,
 * stdin and stderr /dev/null, the proxy's environment) and the request
 * waits in SS_TOKEN without blocking the loop; its stdout (the value, then
 * optionally a TTL in seconds: inject_token_parse) is read through a pipe
 * watched by the loop. It is fresh for 90% of its TTL. A command that
 * fails, prints something else or runs past TOKEN_RUN_MS fails every
 * request waiting on it: each is refused with a 502 saying why (never the
 * output), and the next request tries again. The value lives in the proxy
 * only; it is wiped when replaced or at exit.
 */
#include "session.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <unistd.h>

#define TOKEN_RUN_MS 10000
#define TOKEN_OUT_MAX (INJECT_SECRET_MAX + 64)
#define TOKEN_KEY_MAX (INJECT_NAME_MAX + INJECT_SOURCE_MAX + INJECT_ARGS_MAX + 3)

struct token {
	struct token *next;
	struct proxy *px;
	char key[TOKEN_KEY_MAX];
	char *value;
	size_t len;
	uint64_t fresh_until; /* loop ms; 0: none */
	pid_t pid;            /* a run in progress */
	struct loop_io io;    /* its stdout */
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
}

/* Wake every session waiting on t: each goes back to its head and asks again. */
static void wake(struct token *t)
{
	for (struct session *s = t->px->sessions, *next; s != NULL; s = next) {
		next = s->next;
		if (s->token != t)
			continue;
		s->token = NULL;
		s->token_waited = true;
		session_enter(s, SS_HEAD);
		session_pump(s);
	}
}

/* The run is over (out read to its end, or killed): reap it and take its value. */
static void run_end(struct token *t, const char *fail)
{
	struct loop *l = t->px->loop;
	int status = 0;
	char secret[INJECT_SECRET_MAX + 1];
	unsigned ttl = 0;
	const char *err = NULL;
	int n = -1;

	loop_timer_cancel(l, &t->timer);
	if (t->io.fd >= 0)
		loop_io_close(l, &t->io);
	/* its stdout is closed: it is exiting; give it 100 ms, then kill it */
	for (int i = 0; fail == NULL && i < 100; i++) {
		if (waitpid(t->pid, &status, WNOHANG) == t->pid)
			break;
		if (i == 99)
			fail = "the token command closed its output but did not exit";
		else
			usleep(1000);
	}
	if (fail != NULL) {
		kill(t->pid, SIGKILL);
		waitpid(t->pid, &status, 0);
	}
	t->pid = 0;
	if (fail == NULL && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
		fail = "the token command failed";
	if (fail == NULL) {
		n = inject_token_parse(buf_head(&t->out), buf_len(&t->out), secret, sizeof(secret),
				       &ttl, &err);
		if (n < 0)
			fail = "the token command printed no usable token";
	}
	explicit_bzero(buf_head(&t->out), buf_len(&t->out));
	buf_release(&t->out);
	value_wipe(t);
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
	wake(t);
}

static void on_out(struct loop *l, struct loop_io *io, uint32_t events)
{
	struct token *t = io->arg;

	for (;;) {
		bool drained = false;
		ssize_t n = buf_read_fd(&t->out, io->fd, 0, &drained);

		if (n > 0)
			continue;
		if (n == 0) {
			run_end(t, NULL);
			return;
		}
		if (errno == EAGAIN)
			return;
		run_end(t, errno == ENOBUFS ? "the token command printed too much"
					    : "reading the token command failed");
		return;
	}
}

static void on_timeout(struct loop *l, struct loop_timer *tm)
{
	run_end(tm->arg, "the token command did not finish within 10 s");
}

static int run_start(struct token *t, const struct inject_rule *r)
{
	char argbuf[INJECT_ARGS_MAX + 1];
	char *argv[INJECT_ARGV_MAX + 2];
	int p[2], devnull;

	if (inject_command_argv(r, argbuf, sizeof(argbuf), argv, INJECT_ARGV_MAX + 2) < 0 ||
	    pipe2(p, O_CLOEXEC | O_NONBLOCK) == -1) {
		snprintf(t->error, sizeof(t->error), "the token command cannot be started");
		return -1;
	}
	t->pid = fork();
	if (t->pid == 0) {
		devnull = open("/dev/null", O_RDWR);
		if (devnull == -1 || dup2(devnull, 0) == -1 || dup2(p[1], 1) == -1 ||
		    dup2(devnull, 2) == -1)
			_exit(127);
		fcntl(1, F_SETFL, 0); /* the command writes blocking */
		signal(SIGPIPE, SIG_DFL);
		execv(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	if (t->pid == -1) {
		close(p[0]);
		t->pid = 0;
		snprintf(t->error, sizeof(t->error), "the token command cannot be started");
		return -1;
	}
	buf_init(&t->out, TOKEN_OUT_MAX);
	if (loop_io_add(t->px->loop, &t->io, p[0], EPOLLIN, on_out, t) == -1) {
		close(p[0]);
		run_end(t, "the token command cannot be watched");
		return -1;
	}
	loop_timer_set(t->px->loop, &t->timer, TOKEN_RUN_MS, on_timeout, t);
	return 0;
}

/*
 * The secret of command rule r for session s: 1 ready (*val a copy the
 * request owns), 0 minting (s waits in SS_TOKEN and is woken), -1 failed
 * (why filled).
 */
int token_get(struct session *s, const struct inject_rule *r, char **val, size_t *len,
	      char *why, size_t size)
{
	struct proxy *px = s->px;
	char key[TOKEN_KEY_MAX];
	struct token *t;
	bool waited = s->token_waited;

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
		memcpy(t->key, key, sizeof(key));
		t->next = px->tokens;
		px->tokens = t;
	}
	if (t->value != NULL && loop_now(px->loop) < t->fresh_until) {
		*val = malloc(t->len + 1);
		if (*val == NULL) {
			snprintf(why, size, "out of memory");
			return -1;
		}
		memcpy(*val, t->value, t->len + 1);
		*len = t->len;
		s->r->minted = t;
		return 1;
	}
	if (waited && t->pid == 0 && t->error[0] != '\0') {
		snprintf(why, size, "%s", t->error);
		return -1;
	}
	if (t->pid == 0 && run_start(t, r) == -1) {
		snprintf(why, size, "%s", t->error);
		return -1;
	}
	s->token = t;
	return 0;
}

/* An upstream said 401 to t's value: the next request mints a new one. */
void token_stale(struct token *t)
{
	value_wipe(t);
}

void token_release_all(struct proxy *px)
{
	while (px->tokens != NULL) {
		struct token *t = px->tokens;

		px->tokens = t->next;
		if (t->pid != 0) {
			kill(t->pid, SIGKILL);
			waitpid(t->pid, NULL, 0);
		}
		if (t->io.fd >= 0)
			loop_io_close(px->loop, &t->io);
		loop_timer_cancel(px->loop, &t->timer);
		buf_release(&t->out);
		value_wipe(t);
		free(t);
	}
}
