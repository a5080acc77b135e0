/*
 * run_proc.c: the processes `sluice run` starts (run.h): daemons and tools,
 * `sluice verify` inside the sandbox, and CMD behind the sandbox's init.
 *
 * Every child gets SIGTERM (CMD's init SIGKILL) when the supervisor dies,
 * so a killed run leaves at most what its record names. Processes are
 * named by pid and start time together: a pid reused by another process is
 * never signalled. Nothing here decides what a run makes; run.c does.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "priv.h"
#include "run.h"

extern char **environ;

/* /proc/PID/stat's state and starttime (field 22). Returns 0 or -1 (gone). */
static int proc_stat(pid_t pid, char *state, unsigned long long *start)
{
	char path[64], buf[1024], *p;
	ssize_t n;
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
	*start = strtoull(p, NULL, 10);
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

/* In a child: the default signal mask (the supervisor blocks the ones it waits for). */
static void child_signals(void)
{
	sigset_t none;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

static int netns_enter(const char *netns)
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

/*
 * fork, and in the child: SIGTERM when we die, the default signal mask,
 * close_fd closed, the namespace at netns (NULL: ours), stdio (tty: ours
 * kept, for CMD; else child_stdio's), then exec argv (a PATH search when
 * argv[0] has no '/'). Returns the pid or -1 after printing.
 */
static pid_t fork_exec(char *const argv[], const char *netns, bool tty, int out_fd, int err_fd,
		       int close_fd)
{
	pid_t parent = getpid(), pid = fork();

	if (pid == -1) {
		fprintf(stderr, "run: fork: %s\n", strerror(errno));
		return -1;
	}
	if (pid > 0)
		return pid;
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != parent)
		_exit(126);
	if (close_fd != -1)
		close(close_fd);
	child_signals();
	if (netns != NULL && netns_enter(netns) == -1)
		_exit(126);
	if (!tty)
		child_stdio(out_fd, err_fd);
	execvp(argv[0], argv);
	fprintf(stderr, "run: %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

pid_t run_spawn(struct run_record *r, const char *what, char *const argv[], const char *netns,
		int log_fd)
{
	struct run_proc *p;
	pid_t pid;

	if (r->nprocs == RUN_PROCS_MAX) {
		fprintf(stderr, "run: too many processes\n");
		return -1;
	}
	pid = fork_exec(argv, netns, false, log_fd, log_fd, -1);
	if (pid == -1)
		return -1;
	p = &r->procs[r->nprocs++];
	p->pid = pid;
	p->start = run_proc_start(pid);
	snprintf(p->what, sizeof(p->what), "%s", what);
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
	pid_t pid = fork_exec(argv, NULL, false, log_fd, log_fd, -1);

	return pid == -1 ? -1 : wait_code(pid, timeout_ms);
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
	pid = fork_exec(argv, NULL, false, fds[1], -1, -1);
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
		child_signals();
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
		child_signals();
		child_stdio(err_fd, err_fd);
		if (netns_enter(netns) == -1 ||
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

/* The sandbox's mounts, in its own mount namespace. Returns 0 or -1 after printing. */
static int sandbox_mounts(const struct run_exec *x)
{
	char resolv[4200];

	snprintf(resolv, sizeof(resolv), "%s/resolv.conf", x->pub_dir);
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == -1) {
		fprintf(stderr, "run: make / private: %s\n", strerror(errno));
		return -1;
	}
	if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) == -1) {
		fprintf(stderr, "run: mount /proc: %s\n", strerror(errno));
		return -1;
	}
	if (mount(x->pub_dir, "/run/sluice", NULL, MS_BIND, NULL) == -1) {
		fprintf(stderr, "run: bind %s on /run/sluice: %s\n", x->pub_dir, strerror(errno));
		return -1;
	}
	if (mount(resolv, "/etc/resolv.conf", NULL, MS_BIND, NULL) == -1) {
		fprintf(stderr, "run: bind %s on /etc/resolv.conf: %s\n", resolv, strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * SIGKILL when the supervisor dies, set after the drop (changing
 * credentials clears it). The supervisor holds the only write end of
 * alive_fd: seen closed, it died before this, and we go now.
 */
static void supervised(int alive_fd)
{
	struct pollfd pfd = { .fd = alive_fd, .events = POLLIN };

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (poll(&pfd, 1, 0) != 0)
		_exit(126);
	close(alive_fd);
}

/*
 * CMD shares the operator's terminal (so that ^C reaches it). TIOCSTI on it
 * pushes input that the operator's shell, root's, reads once the run ends,
 * and TIOCLINUX on a console pastes a selection there: a seccomp filter
 * refuses both ioctls (EPERM) to the init and all it starts. The request is
 * the kernel's unsigned int, so only the argument's low 32 bits are looked
 * at (high bits set would not get past). 32-bit calls are filtered the same
 * (ioctl is 54 there); x32's are refused. Needs no_new_privs (set by the
 * drop). Returns 0, or -1 after printing (then CMD must not start).
 */
#if defined(__x86_64__)
#define RUN_ARCH AUDIT_ARCH_X86_64
#define RUN_ARCH32 AUDIT_ARCH_I386
#elif defined(__aarch64__)
#define RUN_ARCH AUDIT_ARCH_AARCH64
#define RUN_ARCH32 AUDIT_ARCH_ARM
#endif
#define RUN_IOCTL32 54
#define RUN_X32_BIT 0x40000000
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define RUN_ARG1_LOW (offsetof(struct seccomp_data, args[1]) + 4)
#else
#define RUN_ARG1_LOW offsetof(struct seccomp_data, args[1])
#endif

static int tty_inject_refuse(void)
{
#ifdef RUN_ARCH
	struct sock_filter f[] = {
		/* 0 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		/* 1 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, RUN_ARCH, 2, 0),
		/* 2 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, RUN_ARCH32, 4, 0),
		/* 3 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		/* 4 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		/* 5 */ BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, RUN_X32_BIT, 7, 0),
		/* 6 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_ioctl, 2, 5),
		/* 7 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		/* 8 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, RUN_IOCTL32, 0, 3),
		/* 9 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, RUN_ARG1_LOW),
		/* 10 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TIOCSTI, 2, 0),
		/* 11 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TIOCLINUX, 1, 0),
		/* 12 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		/* 13 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) == 0)
		return 0;
	fprintf(stderr, "run: the terminal filter: %s\n", strerror(errno));
#else
	fprintf(stderr, "run: no terminal filter for this architecture; CMD not started\n");
#endif
	return -1;
}

/* What the init passes on to CMD. */
static const int forwarded[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH };

static void on_forwarded(int sig)
{
	(void)sig; /* a handler, so that PID 1 of a namespace is sent the signal at all */
}

/* CMD itself: as the user, in the directory asked for (else home, else /). */
static void cmd_exec(const struct run_exec *x)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };

	/* the default first: one passed on before the exec stays pending, then acts */
	for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
		sigaction(forwarded[i], &dfl, NULL);
	child_signals();
	if (x->cwd == NULL || chdir(x->cwd) == -1)
		if (chdir(x->user->home) == -1 && chdir("/") == -1)
			_exit(127);
	environ = (char **)x->envp;
	execvp(x->argv[0], x->argv);
	fprintf(stderr, "sluice run: %s: %s\n", x->argv[0], strerror(errno));
	_exit(127);
}

/*
 * PID 1 of the sandbox's PID namespace: mounts, the drop to the user, then
 * CMD as its child; passes on the signals it is sent, reaps whatever ends
 * up with it, and exits with CMD's status (the kernel then kills the rest).
 */
static int init_main(const struct run_exec *x)
{
	struct sigaction sa = { .sa_handler = on_forwarded };
	sigset_t set;
	pid_t cmd;
	int st, code = 127;

	/*
	 * Only stdio and the liveness pipe's read end stay: not the record's
	 * lock, the daemons' log or the pipe's write end (held here, it would
	 * keep supervised() from ever seeing the supervisor gone), nor what
	 * the operator's shell left open (CMD would read root's files by it).
	 */
	if (x->alive_fd > 3)
		close_range(3, (unsigned)x->alive_fd - 1, 0);
	close_range((unsigned)x->alive_fd + 1, ~0U, 0);
	if (netns_enter(x->netns) == -1 || sandbox_mounts(x) == -1 ||
	    priv_switch("run", x->user->name, x->user->uid, x->user->gid) == -1 ||
	    tty_inject_refuse() == -1)
		_exit(126);
	supervised(x->alive_fd);
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++) {
		sigaction(forwarded[i], &sa, NULL);
		sigaddset(&set, forwarded[i]);
	}
	sigprocmask(SIG_BLOCK, &set, NULL);
	cmd = fork();
	if (cmd == -1)
		_exit(126);
	if (cmd == 0)
		cmd_exec(x);
	for (;;) {
		siginfo_t si;
		pid_t w;

		if (sigwaitinfo(&set, &si) == -1)
			continue;
		if (si.si_signo != SIGCHLD) {
			kill(cmd, si.si_signo);
			continue;
		}
		while ((w = waitpid(-1, &st, WNOHANG)) > 0)
			if (w == cmd) {
				code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
				_exit(code);
			}
	}
}

pid_t run_exec_start(const struct run_exec *x)
{
	static const int passed_on[] = { SIGINT, SIGTERM, SIGHUP };
	struct sigaction sa = { .sa_handler = on_forwarded };
	pid_t pid;
	struct run_exec ix;
	int alive[2];

	if (x->user == NULL)
		return fork_exec(x->argv, x->netns, true, -1, -1, x->close_fd);
	if (mkdir("/run/sluice", 0755) == -1 && errno != EEXIST) {
		fprintf(stderr, "run: mkdir /run/sluice: %s\n", strerror(errno));
		return -1;
	}
	if (pipe2(alive, O_CLOEXEC) == -1) {
		fprintf(stderr, "run: pipe: %s\n", strerror(errno));
		return -1;
	}
	/*
	 * The signals cmd_wait passes on get a handler (still blocked here, where
	 * sigtimedwait takes them) before the clone, so the init has one from
	 * its first instant: a namespace's init is not sent a signal it has no
	 * handler for, and one passed on while it was still setting up was lost
	 * (CMD then ran to the grace's end and was killed).
	 */
	for (size_t i = 0; i < sizeof(passed_on) / sizeof(passed_on[0]); i++)
		sigaction(passed_on[i], &sa, NULL);
	ix = *x;
	ix.alive_fd = alive[0];
	/* fork(2) into new PID and mount namespaces: the child, on a copy of our stack, is PID 1 */
	pid = (pid_t)syscall(SYS_clone, CLONE_NEWPID | CLONE_NEWNS | SIGCHLD, NULL, NULL, NULL, 0);
	if (pid == 0)
		_exit(init_main(&ix));
	if (pid == -1)
		fprintf(stderr, "run: clone: %s\n", strerror(errno));
	close(alive[0]);
	/* alive[1] stays open, never written, until we exit: the init's sign that we live */
	return pid;
}
