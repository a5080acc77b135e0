/*
 * podman.c: asking the container engine, bounded.
 *
 * Runs the engine's command (podman, or what --podman names: split on
 * blanks, no shell) with fork and exec: stdin from /dev/null, the default
 * signal mask, killed when we die. A run that answers is killed after
 * 20 s, its output capped at 16 MiB, and a non-zero exit is an error
 * carrying the first line of its stderr. podman_snapshot turns `ps -q
 * --no-trunc` and `inspect` into a snapshot (principal.h); a container
 * removed between the two is left out (the ids `ps -a` no longer lists),
 * any other failure of inspect fails the snapshot. It never changes the
 * engine: no command here but ps, inspect and (engine.c) events.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

#define PODMAN_TIMEOUT_MS 20000
#define PODMAN_OUT_MAX (16 * 1024 * 1024)
#define PODMAN_IDS_MAX 4096  /* containers asked about in one inspect */
#define ERR_KEEP 512         /* bytes of podman's stderr kept for the message */
#define ADDRS_MAX 32

/* What a podman run printed: all of stdout (bounded), the start of stderr. */
struct capture {
	char *out; /* owned, NUL-ended */
	size_t len, cap;
	char err[ERR_KEEP];
	size_t errlen;
};

static void put_errno(const char *what, const char *path, int e)
{
	fprintf(stderr, "engine: %s %s: ", what, path);
	cli_put_strerror(stderr, e);
	fputc('\n', stderr);
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int podman_init(struct podman *pm, const char *cmd)
{
	char *save = NULL, *w;

	memset(pm, 0, sizeof(*pm));
	pm->text = cmd;
	pm->buf = strdup(cmd);
	if (pm->buf == NULL)
		return -1;
	for (w = strtok_r(pm->buf, " \t", &save); w != NULL; w = strtok_r(NULL, " \t", &save)) {
		if (pm->argc == PODMAN_ARGS_MAX)
			return -1;
		pm->argv[pm->argc++] = w;
	}
	pm->argv[pm->argc] = NULL;
	return pm->argc == 0 ? -1 : 0;
}

void podman_release(struct podman *pm)
{
	free(pm->buf);
	pm->buf = NULL;
	pm->argc = 0;
	pm->argv[0] = NULL;
}

pid_t podman_spawn(const struct podman *pm, const char *const *args, size_t nargs, int *out_fd,
		   int *err_fd)
{
	int outp[2] = { -1, -1 }, errp[2] = { -1, -1 }, devnull;
	const char **argv;
	pid_t parent = getpid(), pid = -1;

	argv = calloc(pm->argc + nargs + 1, sizeof(*argv));
	if (argv == NULL) {
		fprintf(stderr, "engine: out of memory\n");
		return -1;
	}
	for (size_t i = 0; i < pm->argc; i++)
		argv[i] = pm->argv[i];
	for (size_t i = 0; i < nargs; i++)
		argv[pm->argc + i] = args[i];
	devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (devnull == -1) {
		put_errno("open", "/dev/null", errno);
		goto out_argv;
	}
	if (pipe2(outp, O_CLOEXEC) == -1 || (err_fd != NULL && pipe2(errp, O_CLOEXEC) == -1)) {
		put_errno("run", pm->text, errno);
		goto out_close;
	}
	pid = fork();
	if (pid == 0) {
		sigset_t none;
		const char *msg;

		sigemptyset(&none);
		signal(SIGTERM, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		sigprocmask(SIG_SETMASK, &none, NULL);
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) == -1 || getppid() != parent)
			_exit(127);
		if (dup2(devnull, 0) == -1 || dup2(outp[1], 1) == -1 ||
		    (err_fd != NULL && dup2(errp[1], 2) == -1))
			_exit(127);
		execvp(argv[0], (char *const *)argv);
		msg = strerror(errno);
		dprintf(2, "exec %s: %c%s\n", argv[0], tolower((unsigned char)msg[0]), msg + 1);
		_exit(127);
	}
	if (pid == -1) {
		put_errno("run", pm->text, errno);
		goto out_close;
	}
	*out_fd = outp[0];
	outp[0] = -1;
	if (err_fd != NULL) {
		*err_fd = errp[0];
		errp[0] = -1;
	}
out_close:
	for (int i = 0; i < 2; i++) {
		if (outp[i] != -1)
			close(outp[i]);
		if (errp[i] != -1)
			close(errp[i]);
	}
	close(devnull);
out_argv:
	free(argv);
	return pid;
}

/* Kill and reap pid (it is ours and not yet reaped). */
static void kill_reap(pid_t pid)
{
	kill(pid, SIGKILL);
	while (waitpid(pid, NULL, 0) == -1 && errno == EINTR)
		;
}

/*
 * Read what fd has into c (stdout: grown as needed; stderr: the start kept).
 * Returns read(2)'s result, or -2 when out of memory.
 */
static ssize_t capture_read(int fd, struct capture *c, bool is_err)
{
	char junk[4096];
	ssize_t n;

	if (is_err) {
		n = read(fd, junk, sizeof(junk));
		if (n > 0 && c->errlen < sizeof(c->err) - 1) {
			size_t k = (size_t)n < sizeof(c->err) - 1 - c->errlen
					   ? (size_t)n
					   : sizeof(c->err) - 1 - c->errlen;

			memcpy(c->err + c->errlen, junk, k);
			c->errlen += k;
			c->err[c->errlen] = '\0';
		}
		return n;
	}
	if (c->cap - c->len < 65536 + 1) {
		size_t ncap = c->cap != 0 ? c->cap * 2 : 131072;
		char *grown;

		if (ncap > PODMAN_OUT_MAX + 65536 + 1)
			ncap = PODMAN_OUT_MAX + 65536 + 1;
		grown = realloc(c->out, ncap);
		if (grown == NULL)
			return -2;
		c->out = grown;
		c->cap = ncap;
		c->out[c->len] = '\0'; /* NUL-ended even when the command prints nothing */
	}
	n = read(fd, c->out + c->len, c->cap - c->len - 1);
	if (n > 0) {
		c->len += (size_t)n;
		c->out[c->len] = '\0';
	}
	return n;
}

/* The first line of podman's stderr, control bytes as '?', for a message. */
static const char *err_line(struct capture *c)
{
	size_t i;

	for (i = 0; i < c->errlen && c->err[i] != '\n'; i++) {
		if ((unsigned char)c->err[i] < 0x20 || c->err[i] == 0x7f)
			c->err[i] = '?';
	}
	c->err[i] = '\0';
	return i > 0 ? c->err : "no message";
}

/*
 * Run the engine command with args (args[0] names it in messages), bounded
 * in time and output, into c (the caller frees c->out). Returns its exit
 * status (0 or more, not printed: put_exit says it), or -1 after printing
 * why it did not exit (not run, timed out, killed, too much output).
 */
static int run_exit(const struct podman *pm, const char *const *args, size_t nargs,
		    struct capture *c)
{
	struct pollfd fds[2];
	int64_t deadline = mono_ms() + PODMAN_TIMEOUT_MS;
	int status, open_fds = 2;
	const char *fail = NULL;
	pid_t pid, w;

	memset(c, 0, sizeof(*c));
	pid = podman_spawn(pm, args, nargs, &fds[0].fd, &fds[1].fd);
	if (pid == -1)
		return -1;
	fds[0].events = fds[1].events = POLLIN;
	while (open_fds > 0 && fail == NULL) {
		int64_t left = deadline - mono_ms();
		int r;

		if (left <= 0) {
			fail = "timed out after 20 s";
			break;
		}
		r = poll(fds, 2, (int)left);
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1) {
			fail = "poll failed";
			break;
		}
		for (int i = 0; i < 2; i++) {
			ssize_t n;

			if (fds[i].fd == -1 || fds[i].revents == 0)
				continue;
			n = capture_read(fds[i].fd, c, i == 1);
			if (n == -2) {
				fail = "out of memory";
				break;
			}
			if (n == -1 && errno == EINTR)
				continue;
			if (n <= 0) { /* end of output (a read error on a pipe ends it too) */
				close(fds[i].fd);
				fds[i].fd = -1;
				open_fds--;
			}
			if (c->len > PODMAN_OUT_MAX) {
				fail = "output over 16 MiB";
				break;
			}
		}
	}
	for (int i = 0; i < 2; i++) {
		if (fds[i].fd != -1)
			close(fds[i].fd);
	}
	if (fail != NULL) {
		kill_reap(pid);
		fprintf(stderr, "engine: %s %s: %s\n", pm->text, args[0], fail);
		return -1;
	}
	/* both pipes closed: the command has ended or is about to */
	for (;;) {
		w = waitpid(pid, &status, WNOHANG);
		if (w == pid || (w == -1 && errno != EINTR))
			break;
		if (mono_ms() >= deadline) {
			kill_reap(pid);
			fprintf(stderr, "engine: %s %s: timed out after 20 s\n", pm->text, args[0]);
			return -1;
		}
		poll(NULL, 0, 10);
	}
	if (w != pid) {
		fprintf(stderr, "engine: %s %s: lost track of it\n", pm->text, args[0]);
		return -1;
	}
	if (WIFSIGNALED(status)) {
		fprintf(stderr, "engine: %s %s: killed by signal %d\n", pm->text, args[0],
			WTERMSIG(status));
		return -1;
	}
	return WEXITSTATUS(status);
}

/* Say that the engine's command what exited status, with the first line of its stderr. */
static void put_exit(const struct podman *pm, const char *what, int status, struct capture *c)
{
	fprintf(stderr, "engine: %s %s: exited %d: %s\n", pm->text, what, status, err_line(c));
}

/* run_exit, for a command that must exit 0. Returns 0, or -1 after printing why not. */
static int run_capture(const struct podman *pm, const char *const *args, size_t nargs,
		       struct capture *c)
{
	int status = run_exit(pm, args, nargs, c);

	if (status > 0)
		put_exit(pm, args[0], status, c);
	return status == 0 ? 0 : -1;
}

static void addr_add(struct snap_ctr *c, json_t *v)
{
	const char *text = json_string_value(v);

	if (text == NULL || text[0] == '\0' || c->naddrs == ADDRS_MAX)
		return;
	if (snapshot_addr_parse(text, &c->addrs[c->naddrs]) == 0)
		c->naddrs++;
}

/*
 * One element of `podman inspect`'s list into c. Returns 1 for a running
 * (or paused) container, 0 for one to leave out, -1 (out of memory, no id).
 */
static int ctr_from_inspect(json_t *o, struct snap_ctr *c)
{
	json_t *state = json_object_get(o, "State");
	json_t *labels = json_object_get(json_object_get(o, "Config"), "Labels");
	json_t *ns = json_object_get(o, "NetworkSettings"), *net;
	const char *id = json_string_value(json_object_get(o, "Id"));
	const char *name = json_string_value(json_object_get(o, "Name"));
	const char *project, *mode, *key;

	memset(c, 0, sizeof(*c));
	if (id == NULL || !snapshot_is_id(id))
		return -1;
	if (!json_is_true(json_object_get(state, "Running")) &&
	    !json_is_true(json_object_get(state, "Paused")))
		return 0;
	memcpy(c->id, id, SNAP_ID_LEN + 1);
	if (name != NULL && name[0] == '/')
		name++; /* the docker API's spelling */
	c->name = snapshot_is_name(name) ? strdup(name) : strndup(id, 12);
	project = json_string_value(json_object_get(labels, "com.docker.compose.project"));
	if (project == NULL)
		project = json_string_value(json_object_get(labels, "io.podman.compose.project"));
	if (snapshot_is_name(project))
		c->project = strdup(project);
	mode = json_string_value(json_object_get(json_object_get(o, "HostConfig"), "NetworkMode"));
	if (snapshot_is_name(mode))
		c->netmode = strdup(mode);
	c->addrs = calloc(ADDRS_MAX, sizeof(*c->addrs));
	if (c->name == NULL || c->addrs == NULL || (project != NULL && snapshot_is_name(project) &&
						     c->project == NULL))
		return -1;
	addr_add(c, json_object_get(ns, "IPAddress"));
	addr_add(c, json_object_get(ns, "GlobalIPv6Address"));
	json_object_foreach(json_object_get(ns, "Networks"), key, net) {
		addr_add(c, json_object_get(net, "IPAddress"));
		addr_add(c, json_object_get(net, "GlobalIPv6Address"));
	}
	return 1;
}

/*
 * The ids in text (ps -q output, cut up in place) into args from args[1]
 * on. Returns how many args that makes (1: no containers), or -1 after
 * printing.
 */
static int ids_parse(const struct podman *pm, char *text, const char **args)
{
	char *save = NULL, *id;
	int nargs = 1;

	if (text == NULL)
		return nargs; /* ps printed nothing: no containers */
	for (id = strtok_r(text, "\n", &save); id != NULL; id = strtok_r(NULL, "\n", &save)) {
		if (!snapshot_is_id(id)) {
			fprintf(stderr, "engine: %s ps: not a container id: \"%.80s\"\n", pm->text, id);
			return -1;
		}
		if (nargs == PODMAN_IDS_MAX + 1) {
			fprintf(stderr, "engine: more than %d containers\n", PODMAN_IDS_MAX);
			return -1;
		}
		args[nargs++] = id;
	}
	return nargs;
}

static int id_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/*
 * Leave out of ids[0..*n) the containers the engine no longer has: those
 * `ps -a` (every container, running or not) does not list, removed since
 * ps listed them. ids is sorted on the way. Returns how many it left out,
 * or -1 after printing.
 */
static int ids_drop_gone(const struct podman *pm, const char **ids, size_t *n)
{
	static const char *const ps_all[] = { "ps", "-a", "-q", "--no-trunc" };
	bool listed[PODMAN_IDS_MAX] = { false };
	struct capture c;
	char *save = NULL, *line;
	size_t kept = 0, before = *n;

	if (run_capture(pm, ps_all, 4, &c) == -1) {
		free(c.out);
		return -1;
	}
	qsort(ids, *n, sizeof(*ids), id_cmp);
	line = c.out != NULL ? strtok_r(c.out, "\n", &save) : NULL;
	for (; line != NULL; line = strtok_r(NULL, "\n", &save)) {
		const char **hit = bsearch(&line, ids, *n, sizeof(*ids), id_cmp);

		if (hit != NULL)
			listed[hit - ids] = true;
	}
	free(c.out);
	for (size_t i = 0; i < *n; i++) {
		if (listed[i])
			ids[kept++] = ids[i];
	}
	*n = kept;
	return (int)(before - kept);
}

/*
 * Run `inspect` of args[1..*nargs) into c (the caller frees c->out). One
 * container removed since ps listed it fails the whole inspect: then the
 * ids the engine no longer has are left out and the rest inspected again,
 * for as long as each round leaves one out (so at most once per id). When
 * none is left out the failure is the engine's own and is reported.
 * Returns 0 (*nargs 1 when every container went: c->out holds nothing), or
 * -1 after printing.
 */
static int inspect_run(const struct podman *pm, const char **args, size_t *nargs,
		       struct capture *c)
{
	for (;;) {
		int status = run_exit(pm, args, *nargs, c), gone;
		size_t nids = *nargs - 1;

		if (status <= 0)
			return status;
		gone = ids_drop_gone(pm, args + 1, &nids);
		if (gone == 0)
			put_exit(pm, args[0], status, c);
		if (gone <= 0)
			return -1;
		*nargs = nids + 1;
		free(c->out);
		c->out = NULL;
		if (*nargs == 1)
			return 0;
	}
}

/* Inspect the ids in text (ps -q output) into s. Returns 0, or -1 after printing. */
static int inspect(const struct podman *pm, char *text, struct snapshot *s)
{
	const char *args[PODMAN_IDS_MAX + 1] = { "inspect" };
	int nparsed = ids_parse(pm, text, args);
	size_t nargs, i;
	struct capture c;
	json_error_t jerr;
	json_t *list, *o;
	int ret = -1;

	if (nparsed <= 1)
		return nparsed == 1 ? 0 : -1;
	nargs = (size_t)nparsed;
	if (inspect_run(pm, args, &nargs, &c) == -1) {
		free(c.out);
		return -1;
	}
	if (nargs == 1)
		return 0; /* every container went away: none to inspect */
	list = json_loadb(c.out, c.len, 0, &jerr);
	free(c.out);
	if (!json_is_array(list)) {
		fprintf(stderr, "engine: %s inspect: not a JSON list: %s\n", pm->text, jerr.text);
		goto out_list;
	}
	s->ctrs = calloc(json_array_size(list) + 1, sizeof(*s->ctrs));
	if (s->ctrs == NULL) {
		fprintf(stderr, "engine: out of memory\n");
		goto out_list;
	}
	json_array_foreach(list, i, o) {
		int r = ctr_from_inspect(o, &s->ctrs[s->nctrs]);

		if (r == 1) {
			s->nctrs++;
			continue;
		}
		snapshot_ctr_release(&s->ctrs[s->nctrs]);
		if (r == -1) {
			fprintf(stderr, "engine: %s inspect: a container without an id "
					"(or out of memory)\n", pm->text);
			goto out_list;
		}
	}
	ret = 0;
out_list:
	json_decref(list);
	return ret;
}

int podman_snapshot(const struct podman *pm, const char *net, struct snapshot *s)
{
	static const char *const ps[] = { "ps", "-q", "--no-trunc" };
	struct capture c;
	int r;

	memset(s, 0, sizeof(*s));
	snapshot_ts_format(wall_ms(), s->t);
	snapshot_ts_parse(s->t, &s->t_ms);
	snprintf(s->net, sizeof(s->net), "%s", net);
	if (run_capture(pm, ps, 3, &c) == -1) {
		free(c.out);
		return -1;
	}
	r = inspect(pm, c.out, s);
	free(c.out);
	if (r == -1) {
		snapshot_release(s);
		return -1;
	}
	snapshot_normalize(s);
	return 0;
}
