/*
 * engine.c: `sluice engine snapshot|watch`: who the containers are.
 *
 * Takes a snapshot of the engine's running containers (podman.c) and
 * appends it as one line (principal.h, snapshot.c) to STATE/engine.jsonl:
 * one O_APPEND write under an flock of the file, and only when the
 * containers differ from the last snapshot of the same net. A failing
 * podman writes nothing. `watch` follows `podman events` and snapshots on
 * every start, died and remove, so a container is recorded both appearing
 * and disappearing. It never changes the engine and never names a row:
 * `sluice log` applies the snapshots when it reads the log.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "file.h"

#define ENGINE_FILE "engine.jsonl"
#define DEFAULT_NET "podman"
#define DEFAULT_PODMAN "podman"
#define TAIL_WINDOW (1024 * 1024)
#define TAIL_MAX (256 * 1024 * 1024) /* look no further back for the last snapshot */
#define EVENT_LINE_MAX (1024 * 1024)
#define RETRY_MS 2000 /* watch: a failed snapshot is tried again after this */

struct engine {
	const char *net;      /* the network name rows of these containers carry */
	struct podman pm;
	char path[PATH_MAX];  /* STATE/engine.jsonl */
	const char *state_dir;
};

static volatile sig_atomic_t stop_signal;

static void on_stop(int sig)
{
	stop_signal = sig;
}

static void put_errno(const char *what, const char *path, int e)
{
	fprintf(stderr, "engine: %s %s: ", what, path);
	cli_put_strerror(stderr, e);
	fputc('\n', stderr);
}

/* The network name a forwarder stamps: 1-64 of [A-Za-z0-9._-], as stamp.c checks. */
static bool net_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > SNAP_NET_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-'))
			return false;
	}
	return true;
}

/*
 * The last snapshot of net in fd's file, read backwards from the end, into
 * *last. Returns 1 found, 0 none (a line that does not parse is passed
 * over: `sluice log` reports it), -1 after printing.
 */
static int last_snapshot(const struct engine *e, int fd, struct snapshot *last)
{
	struct stat st;
	size_t window = TAIL_WINDOW;
	char *buf = NULL;
	int ret = -1;

	if (fstat(fd, &st) == -1) {
		put_errno("stat", e->path, errno);
		return -1;
	}
	for (;;) {
		off_t start = st.st_size > (off_t)window ? st.st_size - (off_t)window : 0;
		size_t len = (size_t)(st.st_size - start), end;
		ssize_t n;
		char *grown = realloc(buf, len + 1);

		if (grown == NULL) {
			fprintf(stderr, "engine: out of memory\n");
			goto out_free;
		}
		buf = grown;
		n = pread(fd, buf, len, start);
		if (n == -1) {
			put_errno("read", e->path, errno);
			goto out_free;
		}
		len = (size_t)n;
		/* lines from the last one back; the first is partial unless start is 0 */
		end = len;
		while (end > 0) {
			size_t b = end;
			const char *why;

			if (buf[b - 1] == '\n')
				b--;
			end = b;
			while (b > 0 && buf[b - 1] != '\n')
				b--;
			if (b == 0 && start > 0)
				break;
			if (end > b && snapshot_parse(buf + b, end - b, last, &why) == 0) {
				if (strcmp(last->net, e->net) == 0) {
					ret = 1;
					goto out_free;
				}
				snapshot_release(last);
			}
			end = b;
		}
		if (start == 0 || window >= TAIL_MAX) {
			ret = 0;
			goto out_free;
		}
		window *= 4;
	}
out_free:
	free(buf);
	return ret;
}

/*
 * Append s to the file unless the last snapshot of its net holds the same
 * containers: under an flock of the file, one write of the whole line
 * (after a newline if a torn write left the file without one). Prints what
 * it did. Returns 0 or -1 after printing.
 */
static int record(const struct engine *e, const struct snapshot *s)
{
	struct snapshot last, check;
	struct stat st;
	char *line, *out;
	const char *why = "?";
	size_t len;
	int fd, found, ret = -1;
	char tail = '\n';
	ssize_t n;

	line = snapshot_format(s);
	if (line == NULL) {
		fprintf(stderr, "engine: out of memory\n");
		return -1;
	}
	len = strlen(line);
	/* never write what could not be read back */
	if (snapshot_parse(line, len - 1, &check, &why) == -1) {
		fprintf(stderr, "engine: internal error: snapshot does not read back: %s\n", why);
		free(line);
		return -1;
	}
	snapshot_release(&check);
	if (file_mkdir_p(e->state_dir, 0700) == -1) {
		put_errno("mkdir", e->state_dir, errno);
		goto out_line;
	}
	fd = cli_open_state("engine", e->path, O_RDWR | O_APPEND | O_CREAT, 0600);
	if (fd == -1)
		goto out_line;
	while (flock(fd, LOCK_EX) == -1) {
		if (errno != EINTR) {
			put_errno("lock", e->path, errno);
			goto out_close;
		}
	}
	found = last_snapshot(e, fd, &last);
	if (found == -1)
		goto out_close;
	if (found == 1) {
		bool same = snapshot_same(&last, s);

		snapshot_release(&last);
		if (same) {
			printf("unchanged: %zu container%s on %s\n", s->nctrs, s->nctrs == 1 ? "" : "s",
			       s->net);
			ret = 0;
			goto out_close;
		}
	}
	if (fstat(fd, &st) == -1) {
		put_errno("stat", e->path, errno);
		goto out_close;
	}
	if (st.st_size > 0 && pread(fd, &tail, 1, st.st_size - 1) != 1)
		tail = '\n';
	out = line;
	if (tail != '\n') {
		out = malloc(len + 2);
		if (out == NULL) {
			fprintf(stderr, "engine: out of memory\n");
			goto out_close;
		}
		out[0] = '\n';
		memcpy(out + 1, line, len + 1);
		len++;
	}
	do {
		n = write(fd, out, len);
	} while (n == -1 && errno == EINTR);
	if (out != line)
		free(out);
	if (n == -1) {
		put_errno("write", e->path, errno);
		goto out_close;
	}
	if ((size_t)n != len) {
		fprintf(stderr, "engine: write %s: short write (%zd of %zu bytes)\n", e->path, n,
			len);
		goto out_close;
	}
	printf("%s: %zu container%s on %s\n", s->t, s->nctrs, s->nctrs == 1 ? "" : "s", s->net);
	ret = 0;
out_close:
	close(fd);
out_line:
	free(line);
	if (fflush(stdout) == EOF)
		ret = -1;
	return ret;
}

static int snapshot_once(const struct engine *e)
{
	struct snapshot s;
	int r;

	if (podman_snapshot(&e->pm, e->net, &s) == -1)
		return -1;
	r = record(e, &s);
	snapshot_release(&s);
	return r;
}

/* Whether an events line is a container start, died or remove. */
static bool event_matters(const char *line, size_t len)
{
	static const char *const keys[] = { "Status", "status", "Action" };
	json_t *ev = json_loadb(line, len, 0, NULL);
	bool yes = false;

	for (size_t i = 0; ev != NULL && i < sizeof(keys) / sizeof(keys[0]) && !yes; i++) {
		const char *st = json_string_value(json_object_get(ev, keys[i]));

		yes = st != NULL && (strcmp(st, "start") == 0 || strcmp(st, "died") == 0 ||
				     strcmp(st, "die") == 0 || strcmp(st, "remove") == 0 ||
				     strcmp(st, "destroy") == 0);
	}
	json_decref(ev);
	return yes;
}

/*
 * watch: follow `podman events` until SIGTERM/SIGINT or the stream ends.
 * SIGTERM and SIGINT are blocked except inside ppoll, so a stop is seen
 * between snapshots, never in the middle of a write.
 */
/* SIGTERM and SIGINT set stop_signal; blocked but in ppoll, whose mask (*orig, less them) lets them in. */
static void stop_signals_catch(sigset_t *orig)
{
	struct sigaction sa;
	sigset_t block;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigprocmask(SIG_BLOCK, &block, orig);
	sigdelset(orig, SIGTERM);
	sigdelset(orig, SIGINT);
}

/*
 * The complete lines in buf[0..*len): whether one is an event that matters
 * (or one was too long to be an event: then look again anyway, dropping it
 * to its newline through *skipping). The partial line left moves to buf's start.
 */
static bool events_scan(char *buf, size_t *len, bool *skipping)
{
	size_t start = 0;
	bool pending = false;

	for (;;) {
		char *nl = memchr(buf + start, '\n', *len - start);

		if (nl == NULL)
			break;
		if (!*skipping && event_matters(buf + start, (size_t)(nl - (buf + start))))
			pending = true;
		*skipping = false;
		start = (size_t)(nl - buf) + 1;
	}
	memmove(buf, buf + start, *len - start);
	*len -= start;
	if (*len == EVENT_LINE_MAX) {
		/* an event too long to be one: drop it to its newline, and look again */
		*skipping = true;
		pending = true;
		*len = 0;
	}
	return pending;
}

/* Send the child sig and reap it. */
static void child_end(pid_t pid, int sig)
{
	int status;

	kill(pid, sig);
	while (waitpid(pid, &status, 0) == -1 && errno == EINTR)
		;
}

/* The stream ended: record the state it leaves, then say how podman ended. Returns the exit status. */
static int events_ended(const struct engine *e, pid_t pid, bool pending)
{
	int status;

	if (pending)
		snapshot_once(e);
	while (waitpid(pid, &status, 0) == -1 && errno == EINTR)
		;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return EXIT_OK;
	fprintf(stderr, "engine: %s events: ended with status %d\n", e->pm.text,
		WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
	return EXIT_ERROR;
}

static int watch(const struct engine *e)
{
	static const char *const ev_args[] = { "events", "--format", "json", "--filter",
					       "type=container" };
	sigset_t orig;
	char *buf;
	size_t len = 0;
	bool pending = true, skipping = false;
	int fd, ret = EXIT_ERROR;
	pid_t pid;

	buf = malloc(EVENT_LINE_MAX + 1);
	if (buf == NULL) {
		fprintf(stderr, "engine: out of memory\n");
		return EXIT_ERROR;
	}
	stop_signals_catch(&orig);

	/* events first, then the first snapshot: nothing starts unseen in between */
	pid = podman_spawn(&e->pm, ev_args, 5, &fd, NULL);
	if (pid == -1)
		goto out_buf;
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		struct timespec retry = { RETRY_MS / 1000, (RETRY_MS % 1000) * 1000000L };
		ssize_t n;

		if (pending && !stop_signal && snapshot_once(e) == 0)
			pending = false;
		if (stop_signal)
			break;
		if (ppoll(&p, 1, pending ? &retry : NULL, &orig) == -1 && errno != EINTR) {
			put_errno("poll", "events", errno);
			goto out_child;
		}
		if (stop_signal)
			break;
		if (p.revents == 0)
			continue;
		n = read(fd, buf + len, EVENT_LINE_MAX - len);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			put_errno("read", "events", errno);
			goto out_child;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (events_scan(buf, &len, &skipping))
			pending = true;
	}
	if (stop_signal) {
		child_end(pid, SIGTERM);
		ret = EXIT_OK;
	} else {
		ret = events_ended(e, pid, pending);
	}
	goto out_fd;
out_child:
	child_end(pid, SIGKILL);
out_fd:
	close(fd);
out_buf:
	free(buf);
	sigprocmask(SIG_SETMASK, &orig, NULL);
	return ret;
}

static int usage_error(const char *msg, const char *arg)
{
	fprintf(stderr, "engine: %s \"%s\"\n", msg, arg);
	cli_usage(stderr, "engine");
	return EXIT_USAGE;
}

int cmd_engine(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "net", required_argument, NULL, 'N' },
		{ "podman", required_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct engine e;
	struct config *c;
	const char *podman = DEFAULT_PODMAN;
	bool is_watch;
	int opt, ret = EXIT_ERROR, n;

	if (argc < 2) {
		cli_usage(stderr, "engine");
		return EXIT_USAGE;
	}
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
		cli_usage(stdout, "engine");
		return EXIT_OK;
	}
	if (strcmp(argv[1], "snapshot") != 0 && strcmp(argv[1], "watch") != 0)
		return usage_error("unknown subcommand", argv[1]);
	is_watch = strcmp(argv[1], "watch") == 0;
	memset(&e, 0, sizeof(e));
	e.net = DEFAULT_NET;
	argc--;
	argv++;
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'N':
			if (!net_ok(optarg))
				return usage_error("bad network name (1-64 of A-Z a-z 0-9 . _ -)",
						   optarg);
			e.net = optarg;
			break;
		case 'P':
			podman = optarg;
			break;
		case 'h':
			cli_usage(stdout, "engine");
			return EXIT_OK;
		default:
			cli_usage(stderr, "engine");
			return EXIT_USAGE;
		}
	}
	if (optind != argc)
		return usage_error("unexpected argument", argv[optind]);
	if (podman_init(&e.pm, podman) == -1) {
		podman_release(&e.pm);
		return usage_error("bad --podman command (1 to 32 words)", podman);
	}
	c = cli_config_load();
	if (c == NULL)
		goto out_cmd;
	e.state_dir = c->state_dir;
	n = snprintf(e.path, sizeof(e.path), "%s/%s", c->state_dir, ENGINE_FILE);
	if (n < 0 || (size_t)n >= sizeof(e.path)) {
		fprintf(stderr, "engine: %s/%s: path too long\n", c->state_dir, ENGINE_FILE);
		goto out_config;
	}
	if (is_watch)
		ret = watch(&e);
	else
		ret = snapshot_once(&e) == 0 ? EXIT_OK : EXIT_ERROR;
out_config:
	config_free(c);
out_cmd:
	podman_release(&e.pm);
	return ret;
}
