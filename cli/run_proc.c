/*
 * run_proc.c: the processes `sluice run` starts (run.h): daemons and tools,
 * `sluice verify` inside the sandbox, and CMD behind the sandbox's init.
 *
 * Every child but the daemons gets SIGTERM (CMD's init SIGKILL) when the
 * supervisor dies, so a killed run leaves at most what its record names;
 * the daemons (which another run may be using) are detached, and stopped
 * by whoever takes the run down (run_record.c). Processes are
 * named by pid and start time together: a pid reused by another process is
 * never signalled. Nothing here decides what a run makes; run.c does.
 */
#include <dirent.h>
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
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "file.h"
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

#define EXEC_TTY 1    /* CMD: our stdio kept (the operator's terminal), and what else we hold */
#define EXEC_DETACH 2 /* a daemon others may use after us: its own session, no SIGTERM at our death */

/*
 * fork, and in the child: SIGTERM when we die (unless EXEC_DETACH), the
 * default signal mask, close_fd closed, the namespace at netns (NULL:
 * ours), stdio (EXEC_TTY: ours kept, for CMD; else child_stdio's and
 * nothing else open), then exec argv (a PATH search when argv[0] has no
 * '/'). Returns the pid or -1 after printing.
 */
static pid_t fork_exec(char *const argv[], const char *netns, int flags, int out_fd, int err_fd,
		       int close_fd)
{
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
	child_signals();
	if (netns != NULL && netns_enter(netns) == -1)
		_exit(126);
	if (!(flags & EXEC_TTY)) {
		child_stdio(out_fd, err_fd);
		close_range(3, ~0U, 0); /* what the operator's shell left open too */
	}
	execvp(argv[0], argv);
	fprintf(stderr, "run: %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

pid_t run_spawn(struct run_record *r, const char *what, char *const argv[], bool detach,
		int log_fd)
{
	struct run_proc *p;
	pid_t pid;

	if (r->nprocs == RUN_PROCS_MAX) {
		fprintf(stderr, "run: too many processes\n");
		return -1;
	}
	pid = fork_exec(argv, NULL, detach ? EXEC_DETACH : 0, log_fd, log_fd, -1);
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
	pid_t pid = fork_exec(argv, NULL, 0, log_fd, log_fd, -1);

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
	pid = fork_exec(argv, NULL, 0, fds[1], -1, -1);
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

/* An O_PATH fd on path (a file or a directory), opened before the mounts hide it. */
static int path_open(const char *path)
{
	int fd = open(path, O_PATH | O_CLOEXEC);

	if (fd == -1)
		fprintf(stderr, "run: open %s: %s\n", path, strerror(errno));
	return fd;
}

/* Bind what fd names on target. Returns 0 or -1 after printing. */
static int bind_fd(int fd, const char *target)
{
	char src[32];

	snprintf(src, sizeof(src), "/proc/self/fd/%d", fd);
	if (mount(src, target, NULL, MS_BIND | MS_REC, NULL) == 0)
		return 0;
	fprintf(stderr, "run: bind on %s: %s\n", target, strerror(errno));
	return -1;
}

#define RUN_PRIVATE_MAX 32
#define RUN_MQUEUE_MAGIC 0x19800202 /* linux/magic.h's MQUEUE_MAGIC */

/* The directories made private (a fresh tmpfs, or mqueue) in this mount namespace. */
struct privates {
	char dir[RUN_PRIVATE_MAX][64];
	size_t n;
};

/*
 * Every directory anyone may write directly under /, /var, /run and /dev
 * (on Debian /tmp, /var/tmp, /run/lock, /dev/shm and /dev/mqueue) gets a
 * fresh instance of its own, with its mode: what one run leaves there
 * (a file, a socket relaying to its forwarder) no other run sees. mqueue
 * gets the IPC namespace's own. Returns 0 or -1 after printing.
 */
static int private_dirs(struct privates *pv)
{
	static const char *const parents[] = { "/", "/var", "/run", "/dev" };

	pv->n = 0;
	for (size_t i = 0; i < sizeof(parents) / sizeof(parents[0]); i++) {
		DIR *d = opendir(parents[i]);
		struct dirent *e;

		if (d == NULL)
			continue;
		while ((e = readdir(d)) != NULL) {
			char *dir = pv->dir[pv->n], data[64];
			struct statfs fs;
			struct stat st;
			int rc;

			if (e->d_name[0] == '.' ||
			    fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == -1 ||
			    !S_ISDIR(st.st_mode) || (st.st_mode & S_IWOTH) == 0)
				continue;
			if (pv->n == RUN_PRIVATE_MAX ||
			    (size_t)snprintf(dir, sizeof(pv->dir[0]), "%s/%s",
					     strcmp(parents[i], "/") == 0 ? "" : parents[i],
					     e->d_name) >= sizeof(pv->dir[0])) {
				fprintf(stderr, "run: %s/%s: too many writable directories\n", parents[i],
					e->d_name);
				closedir(d);
				return -1;
			}
			snprintf(data, sizeof(data), "mode=%o", (unsigned)(st.st_mode & 07777));
			if (statfs(dir, &fs) == 0 && fs.f_type == RUN_MQUEUE_MAGIC)
				rc = mount("mqueue", dir, "mqueue", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
			else
				rc = mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV, data);
			if (rc == -1) {
				fprintf(stderr, "run: a private %s: %s\n", dir, strerror(errno));
				closedir(d);
				return -1;
			}
			pv->n++;
		}
		closedir(d);
	}
	return 0;
}

/* Whether path is under dir. */
static bool path_under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	return strncmp(path, dir, n) == 0 && path[n] == '/';
}

/*
 * The sandbox's mounts, in its own mount namespace: a fresh /proc, the
 * run's pub directory on /run/sluice and its resolv.conf on
 * /etc/resolv.conf, private_dirs, the project's home (home_dir) on the
 * user's, and CMD's working directory when a private directory hid it.
 * What is bound is opened first: it may be under what private_dirs hides.
 * Returns 0 or -1 after printing.
 */
static int sandbox_mounts(const struct run_exec *x)
{
	enum { PUB, RESOLV, HOME, CWD, NFDS };
	char resolv[4200];
	struct privates pv;
	int fd[NFDS] = { -1, -1, -1, -1 }, ret = -1;

	snprintf(resolv, sizeof(resolv), "%s/resolv.conf", x->pub_dir);
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == -1) {
		fprintf(stderr, "run: make / private: %s\n", strerror(errno));
		return -1;
	}
	if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) == -1) {
		fprintf(stderr, "run: mount /proc: %s\n", strerror(errno));
		return -1;
	}
	if ((fd[PUB] = path_open(x->pub_dir)) == -1 || (fd[RESOLV] = path_open(resolv)) == -1 ||
	    (x->home_dir != NULL && (fd[HOME] = path_open(x->home_dir)) == -1))
		goto out;
	if (x->cwd != NULL)
		fd[CWD] = open(x->cwd, O_PATH | O_DIRECTORY | O_CLOEXEC); /* gone: CMD starts at home */
	if (private_dirs(&pv) == -1 || bind_fd(fd[PUB], "/run/sluice") == -1 ||
	    bind_fd(fd[RESOLV], "/etc/resolv.conf") == -1 ||
	    (fd[HOME] != -1 && bind_fd(fd[HOME], x->user->home) == -1))
		goto out;
	for (size_t i = 0; fd[CWD] != -1 && i < pv.n; i++)
		if (strcmp(x->cwd, pv.dir[i]) == 0) {
			break; /* started in /tmp itself: in the run's own, not the machine's again */
		} else if (path_under(x->cwd, pv.dir[i])) {
			/* as root, 0755: only the way to the bind */
			if (file_mkdir_p(x->cwd, 0755) == -1) {
				fprintf(stderr, "run: mkdir %s: %s\n", x->cwd, strerror(errno));
				goto out; /* CMD would start elsewhere than asked */
			}
			if (bind_fd(fd[CWD], x->cwd) == -1)
				goto out;
			break;
		}
	ret = 0;
out:
	for (size_t i = 0; i < NFDS; i++)
		if (fd[i] != -1)
			close(fd[i]);
	return ret;
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
 * CMD's seccomp filter, for the init and all it starts (needs no_new_privs,
 * set by the drop). It refuses (EPERM):
 *
 * - TIOCSTI and TIOCLINUX. CMD shares the operator's terminal (so that ^C
 *   reaches it); TIOCSTI on it pushes input that the operator's shell,
 *   root's, reads once the run ends, and TIOCLINUX on a console pastes a
 *   selection there. The request is the kernel's unsigned int, so only the
 *   argument's low 32 bits are looked at (high bits set would not get past).
 * - The key calls (add_key, request_key, keyctl). Keyrings are no
 *   namespace's: CMD possesses the operator's session keyring, and the
 *   sandbox user's own is the same for every project's runs.
 *
 * 32-bit calls are filtered the same (their own numbers); x32's and other
 * architectures' are refused. Returns 0, or -1 after printing (then CMD
 * must not start).
 */
#if defined(__x86_64__)
#define RUN_ARCH AUDIT_ARCH_X86_64
#define RUN_ARCH32 AUDIT_ARCH_I386
#define RUN_IOCTL32 54
#define RUN_KEYS32 286 /* add_key; request_key and keyctl follow */
#elif defined(__aarch64__)
#define RUN_ARCH AUDIT_ARCH_AARCH64
#define RUN_ARCH32 AUDIT_ARCH_ARM
#define RUN_IOCTL32 54
#define RUN_KEYS32 309
#endif
#define RUN_X32_BIT 0x40000000
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define RUN_ARG1_LOW (offsetof(struct seccomp_data, args[1]) + 4)
#else
#define RUN_ARG1_LOW offsetof(struct seccomp_data, args[1])
#endif
#define LD(what) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (what))
#define RET(what) BPF_STMT(BPF_RET | BPF_K, (what))
/* at instruction at, go to instruction to when equal to k (when ge: at least k), else on */
#define IF_EQ(at, k, to) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (k), (to) - (at) - 1, 0)
#define IF_GE(at, k, to) BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, (k), (to) - (at) - 1, 0)

static int cmd_filter(void)
{
#ifdef RUN_ARCH
	enum {
		ARCH, IS64, IS32, OTHER,
		NR, X32, IOCTL, ADD, REQ, CTL, ALLOW,
		NR32, IOCTL32, ADD32, REQ32, CTL32, ALLOW32,
		ARG, STI, LINUX, ALLOW_IOCTL,
		DENY, LEN
	};
	struct sock_filter f[LEN] = {
		[ARCH] = LD(offsetof(struct seccomp_data, arch)),
		[IS64] = IF_EQ(IS64, RUN_ARCH, NR),
		[IS32] = IF_EQ(IS32, RUN_ARCH32, NR32),
		[OTHER] = RET(SECCOMP_RET_ERRNO | EPERM),

		[NR] = LD(offsetof(struct seccomp_data, nr)),
		[X32] = IF_GE(X32, RUN_X32_BIT, DENY),
		[IOCTL] = IF_EQ(IOCTL, __NR_ioctl, ARG),
		[ADD] = IF_EQ(ADD, __NR_add_key, DENY),
		[REQ] = IF_EQ(REQ, __NR_request_key, DENY),
		[CTL] = IF_EQ(CTL, __NR_keyctl, DENY),
		[ALLOW] = RET(SECCOMP_RET_ALLOW),

		[NR32] = LD(offsetof(struct seccomp_data, nr)),
		[IOCTL32] = IF_EQ(IOCTL32, RUN_IOCTL32, ARG),
		[ADD32] = IF_EQ(ADD32, RUN_KEYS32, DENY),
		[REQ32] = IF_EQ(REQ32, RUN_KEYS32 + 1, DENY),
		[CTL32] = IF_EQ(CTL32, RUN_KEYS32 + 2, DENY),
		[ALLOW32] = RET(SECCOMP_RET_ALLOW),

		[ARG] = LD(RUN_ARG1_LOW),
		[STI] = IF_EQ(STI, TIOCSTI, DENY),
		[LINUX] = IF_EQ(LINUX, TIOCLINUX, DENY),
		[ALLOW_IOCTL] = RET(SECCOMP_RET_ALLOW),

		[DENY] = RET(SECCOMP_RET_ERRNO | EPERM),
	};
	struct sock_fprog prog = { .len = LEN, .filter = f };

	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) == 0)
		return 0;
	fprintf(stderr, "run: the seccomp filter: %s\n", strerror(errno));
#else
	fprintf(stderr, "run: no seccomp filter for this architecture; CMD not started\n");
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
	    cmd_filter() == -1)
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
		return fork_exec(x->argv, x->netns, EXEC_TTY, -1, -1, x->close_fd);
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
	pid = (pid_t)syscall(SYS_clone, CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC | SIGCHLD, NULL, NULL, NULL, 0);
	if (pid == 0)
		_exit(init_main(&ix));
	if (pid == -1)
		fprintf(stderr, "run: clone: %s\n", strerror(errno));
	close(alive[0]);
	/* alive[1] stays open, never written, until we exit: the init's sign that we live */
	return pid;
}
