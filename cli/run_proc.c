/*
 * run_proc.c: the processes `sluice run` starts (run.h): daemons and tools,
 * `sluice verify` inside the sandbox, CMD under podman (the sandbox's init,
 * for a CMD of the host's, is run_init.c's).
 *
 * Every child but the daemons gets SIGTERM (CMD's init SIGKILL) when the
 * supervisor dies, so a killed run leaves at most what its record names;
 * the daemons (which another run may be using) are detached, and stopped
 * by whoever takes the run down (run_record.c). Processes are
 * named by pid and start time together: a pid reused by another process is
 * never signalled. Nothing here decides what a run makes (run_verb.c and
 * run_up.c do), nor records it (run_record.c's run_spawn does, around
 * run_proc_gated).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "digits.h"
#include "priv.h"
#include "run.h"

/* /proc/PID/stat's state and starttime (field 22). Returns 0 or -1 (gone). */
static int proc_stat(pid_t pid, char *state, unsigned long long *start)
{
	char path[64], buf[1024], *p;
	ssize_t n;
	uint64_t v;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd == -1)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	p = strrchr(buf, ')'); /* the command name may hold anything but ends at the last ')' */
	if (p == NULL || p[1] != ' ')
		return -1;
	*state = p[2];
	p += 2;
	for (int field = 3; field < 22; field++) {
		p = strchr(p, ' ');
		if (p == NULL)
			return -1;
		p++;
	}
	if (dec_parse(p, strspn(p, "0123456789"), ULLONG_MAX, &v) == -1)
		return -1;
	*start = v;
	return 0;
}

unsigned long long run_proc_start(pid_t pid)
{
	unsigned long long start;
	char state;

	return proc_stat(pid, &state, &start) == 0 ? start : 0;
}

bool run_proc_alive(const struct run_proc *p)
{
	unsigned long long start;
	char state;

	return proc_stat(p->pid, &state, &start) == 0 && start == p->start && state != 'Z' &&
	       state != 'X';
}

static void sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

/* Reap pid if it is our child and has ended; true when it is gone (reaped, or not ours and dead). */
static bool gone(const struct run_proc *p)
{
	pid_t w = waitpid(p->pid, NULL, WNOHANG);

	if (w == p->pid)
		return true;
	return !run_proc_alive(p);
}

int run_proc_stop(const struct run_proc *p, int grace_ms)
{
	if (gone(p))
		return 0;
	kill(p->pid, SIGTERM);
	for (int waited = 0; waited < grace_ms; waited += 5) {
		if (gone(p))
			return 0;
		sleep_ms(5);
	}
	kill(p->pid, SIGKILL);
	for (int waited = 0; waited < 2000; waited += 5) {
		if (gone(p))
			return 0;
		sleep_ms(5);
	}
	return -1;
}

void run_child_signals(void)
{
	sigset_t none;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

int run_netns_enter(const char *netns)
{
	int fd = open(netns, O_RDONLY | O_CLOEXEC);

	if (fd == -1 || setns(fd, CLONE_NEWNET) == -1) {
		fprintf(stderr, "run: enter %s: %s\n", netns, strerror(errno));
		return -1;
	}
	close(fd);
	return 0;
}

/* In a child: stdout to out_fd and stderr to err_fd (each when not -1), stdin /dev/null. */
static void child_stdio(int out_fd, int err_fd)
{
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);

	if (null != -1)
		dup2(null, 0);
	if (out_fd != -1)
		dup2(out_fd, 1);
	if (err_fd != -1)
		dup2(err_fd, 2);
}

#define EXEC_TTY 1    /* CMD: our stdio kept (the operator's terminal), and what else we hold */
#define EXEC_DETACH 2 /* a daemon others may use after us: its own session, no SIGTERM at
		       * our death */

/*
 * fork, and in the child: SIGTERM when we die (unless EXEC_DETACH), the
 * default signal mask, close_fd closed, a byte read from gate_fd (unless
 * -1: no byte, no exec), the namespace at netns (NULL: ours), stdio
 * (EXEC_TTY: ours kept, for CMD; else child_stdio's and nothing else
 * open), then exec argv (a PATH search when argv[0] has no '/'). Returns
 * the pid or -1 after printing.
 */
static pid_t fork_exec(char *const argv[], const char *netns, int flags, int out_fd, int err_fd,
		       int close_fd, int gate_fd)
{
	char go;

	pid_t parent = getpid(), pid = fork();

	if (pid == -1) {
		fprintf(stderr, "run: fork: %s\n", strerror(errno));
		return -1;
	}
	if (pid > 0)
		return pid;
	if (flags & EXEC_DETACH) {
		setsid(); /* nor the terminal's ^C */
	} else {
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(126);
	}
	if (close_fd != -1)
		close(close_fd);
	if (gate_fd != -1 && read(gate_fd, &go, 1) != 1)
		_exit(126);
	run_child_signals();
	if (netns != NULL && run_netns_enter(netns) == -1)
		_exit(126);
	if (!(flags & EXEC_TTY)) {
		child_stdio(out_fd, err_fd);
		close_range(3, ~0U, 0); /* what the operator's shell left open too */
	}
	execvp(argv[0], argv);
	fprintf(stderr, "run: %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

pid_t run_proc_gated(char *const argv[], bool detach, int log_fd, int *gate_fd)
{
	int gate[2];
	pid_t pid;

	if (pipe2(gate, O_CLOEXEC) == -1) {
		fprintf(stderr, "run: pipe: %s\n", strerror(errno));
		return -1;
	}
	pid = fork_exec(argv, NULL, detach ? EXEC_DETACH : 0, log_fd, log_fd, gate[1], gate[0]);
	close(gate[0]);
	if (pid == -1) {
		close(gate[1]);
		return -1;
	}
	*gate_fd = gate[1];
	return pid;
}

/* Wait for pid up to timeout_ms, then SIGKILL it. Returns its status as an exit code. */
static int wait_code(pid_t pid, int timeout_ms)
{
	int st, waited = 0;
	pid_t w;

	while ((w = waitpid(pid, &st, WNOHANG)) == 0 && waited < timeout_ms) {
		sleep_ms(waited < 50 ? 1 : 5);
		waited += waited < 50 ? 1 : 5;
	}
	if (w == 0) {
		kill(pid, SIGKILL);
		w = waitpid(pid, &st, 0);
	}
	if (w != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int run_tool(char *const argv[], int log_fd, int timeout_ms)
{
	pid_t pid = fork_exec(argv, NULL, 0, log_fd, log_fd, -1, -1);

	return pid == -1 ? -1 : wait_code(pid, timeout_ms);
}

int run_self_tool(const struct run *x, const char *const *args, size_t n, int log_fd)
{
	char *argv[32];
	size_t k = 0;

	argv[k++] = (char *)x->self;
	if (x->conf[0] != '\0') {
		argv[k++] = "-c";
		argv[k++] = (char *)x->conf;
	}
	for (size_t i = 0; i < n && k < 31; i++)
		argv[k++] = (char *)args[i];
	argv[k] = NULL;
	return run_tool(argv, log_fd, 30000);
}

int run_capture(char *const argv[], char *out, size_t size, int timeout_ms)
{
	pid_t pid;
	size_t got = 0;
	int fds[2], code, waited = 0;
	ssize_t n;

	if (pipe2(fds, O_CLOEXEC) == -1) {
		fprintf(stderr, "run: pipe: %s\n", strerror(errno));
		return -1;
	}
	pid = fork_exec(argv, NULL, 0, fds[1], -1, -1, -1);
	close(fds[1]);
	if (pid == -1) {
		close(fds[0]);
		return -1;
	}
	/* what does not fit is read and dropped; the deadline holds even if the tool keeps its stdout */
	while (waited < timeout_ms) {
		struct pollfd pfd = { .fd = fds[0], .events = POLLIN };
		char chunk[512];
		size_t take;

		if (poll(&pfd, 1, 100) == 0) {
			waited += 100;
			continue;
		}
		n = read(fds[0], chunk, sizeof(chunk));
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		take = (size_t)n < size - 1 - got ? (size_t)n : size - 1 - got;
		memcpy(out + got, chunk, take);
		got += take;
	}
	out[got] = '\0';
	close(fds[0]);
	code = wait_code(pid, timeout_ms);
	return code;
}

int run_reaper(char *const argv[])
{
	int fds[2];
	pid_t pid;
	char byte;

	if (pipe2(fds, O_CLOEXEC) == -1) {
		fprintf(stderr, "run: pipe: %s\n", strerror(errno));
		return -1;
	}
	pid = fork();
	if (pid == -1) {
		fprintf(stderr, "run: fork: %s\n", strerror(errno));
		close(fds[0]);
		close(fds[1]);
		return -1;
	}
	if (pid == 0) {
		/* no PDEATHSIG and a session of its own: it is what outlives us */
		setsid();
		run_child_signals();
		if (dup2(fds[0], 3) == -1)
			_exit(1);
		close_range(4, ~0U, 0);
		child_stdio(-1, -1);
		if (read(3, &byte, 1) == 1)
			_exit(0); /* the supervisor took it down itself */
		execvp(argv[0], argv);
		_exit(127);
	}
	close(fds[0]);
	return fds[1];
}

int run_verify(const char *netns, const struct run_user *user, int argc, char **argv, int err_fd,
	       int close_fd)
{
	pid_t parent = getpid(), pid = fork();
	int code;

	if (pid == -1) {
		fprintf(stderr, "run: fork: %s\n", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		close(close_fd);
		run_child_signals();
		child_stdio(err_fd, err_fd);
		if (run_netns_enter(netns) == -1 ||
		    priv_switch("run", user->name, user->uid, user->gid) == -1)
			_exit(2);
		/* after the drop, which clears it */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(2);
		/* in this process, not exec'd: the sandbox user may not be able to reach our binary */
		optind = 1;
		code = cmd_verify(argc, argv);
		fflush(NULL);
		_exit(code);
	}
	return wait_code(pid, 30000);
}

pid_t run_spawn_tty(char *const argv[], const char *netns, int close_fd)
{
	return fork_exec(argv, netns, EXEC_TTY, -1, -1, close_fd, -1);
}

int run_cwd_access(const struct run_user *user, const char *cwd)
{
	pid_t pid = fork();
	int code;

	if (pid == -1) {
		fprintf(stderr, "run: fork: %s\n", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (priv_switch("run", user->name, user->uid, user->gid) == -1 || chdir(cwd) == -1)
			_exit(2);
		_exit(access(".", W_OK) == 0 ? 1 : 0);
	}
	code = wait_code(pid, 10000);
	return code == 0 || code == 1 ? code : -1;
}
