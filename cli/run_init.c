/*
 * run_init.c: CMD's side of the sandbox (run.h's run_exec_start): the
 * init, PID 1 of new PID, mount and IPC namespaces inside the run's
 * network namespace, which makes CMD's view of the machine (its mounts),
 * drops to the sandbox user, installs CMD's seccomp filter, then starts
 * CMD, passes signals on and reaps. It decides nothing about what the run
 * makes (run_verb.c, run_up.c) and starts nothing else (run_proc.c).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/openat2.h>
#include <linux/keyctl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "file.h"
#include "priv.h"
#include "run.h"

extern char **environ;

/*
 * A detached copy of the mount tree at path (open_tree), taken before /
 * goes read-only so that it stays writable, to be attached (tree_attach)
 * where CMD may write. dirfd and path as for openat; "" with AT_EMPTY_PATH
 * in flags: dirfd itself. Returns the fd, or -1 after printing.
 */
static int tree_copy(int dirfd, const char *path, unsigned flags, const char *what)
{
	int fd = open_tree(dirfd, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | flags);

	if (fd == -1)
		fprintf(stderr, "run: copy %s: %s\n", what, strerror(errno));
	return fd;
}

/* Attach the tree at fd on target. Returns 0 or -1 after printing. */
static int tree_attach(int fd, const char *target)
{
	if (move_mount(fd, "", AT_FDCWD, target, MOVE_MOUNT_F_EMPTY_PATH) == 0)
		return 0;
	fprintf(stderr, "run: attach on %s: %s\n", target, strerror(errno));
	return -1;
}

#define RUN_PRIVATE_MAX 32
#define RUN_MQUEUE_MAGIC 0x19800202 /* linux/magic.h's MQUEUE_MAGIC */
#define RUN_POOL_SIZE "25%"         /* of RAM: all of a run's private directories together */

/* The directories that get a fresh instance of their own in this mount namespace. */
struct privates {
	struct {
		char path[64];
		mode_t mode;
		bool noexec; /* the machine's is */
		bool mqueue;
	} dir[RUN_PRIVATE_MAX];
	size_t n;
};

/*
 * Every directory anyone may write directly under /, /var, /run and /dev:
 * on Debian /tmp, /var/tmp, /run/lock, /dev/shm and /dev/mqueue. Returns 0
 * or -1 after printing.
 */
static int private_scan(struct privates *pv)
{
	static const char *const parents[] = { "/", "/var", "/run", "/dev" };

	pv->n = 0;
	for (size_t i = 0; i < sizeof(parents) / sizeof(parents[0]); i++) {
		DIR *d = opendir(parents[i]);
		struct dirent *e;

		while (d != NULL && (e = readdir(d)) != NULL) {
			struct statfs fs;
			struct stat st;

			if (e->d_name[0] == '.' ||
			    fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == -1 ||
			    !S_ISDIR(st.st_mode) || (st.st_mode & S_IWOTH) == 0)
				continue;
			if (pv->n == RUN_PRIVATE_MAX ||
			    (size_t)snprintf(pv->dir[pv->n].path, sizeof(pv->dir[0].path), "%s/%s",
					     strcmp(parents[i], "/") == 0 ? "" : parents[i],
					     e->d_name) >= sizeof(pv->dir[0].path)) {
				fprintf(stderr, "run: %s/%s: too many writable directories\n", parents[i],
					e->d_name);
				closedir(d);
				return -1;
			}
			if (statfs(pv->dir[pv->n].path, &fs) == -1)
				memset(&fs, 0, sizeof(fs));
			pv->dir[pv->n].mode = st.st_mode & 07777;
			pv->dir[pv->n].noexec = (fs.f_flags & ST_NOEXEC) != 0;
			pv->dir[pv->n].mqueue = fs.f_type == RUN_MQUEUE_MAGIC;
			pv->n++;
		}
		if (d != NULL)
			closedir(d);
	}
	return 0;
}

/*
 * Each of pv's directories a fresh one, with its mode: a directory of one
 * tmpfs of the run's own (its size capped at RUN_POOL_SIZE of RAM, for all
 * of them together; nosuid, nodev, noexec where the machine's is), or the
 * IPC namespace's own mqueue. What one run leaves there (a file, a socket
 * relaying to its forwarder) no other run sees. Returns 0 or -1 after
 * printing.
 */
static int private_mount(const struct privates *pv)
{
	int fs = fsopen("tmpfs", FSOPEN_CLOEXEC), pool = -1, ret = -1;

	if (fs == -1 || fsconfig(fs, FSCONFIG_SET_STRING, "size", RUN_POOL_SIZE, 0) == -1 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "mode", "0755", 0) == -1 ||
	    fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) == -1 ||
	    (pool = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV)) == -1) {
		fprintf(stderr, "run: a tmpfs for the private directories: %s\n", strerror(errno));
		goto out;
	}
	for (size_t i = 0; i < pv->n; i++) {
		struct mount_attr noexec = { .attr_set = MOUNT_ATTR_NOEXEC };
		char sub[16];
		int t;

		if (pv->dir[i].mqueue) {
			if (mount("mqueue", pv->dir[i].path, "mqueue", MS_NOSUID | MS_NODEV | MS_NOEXEC,
				  NULL) == -1) {
				fprintf(stderr, "run: a private %s: %s\n", pv->dir[i].path, strerror(errno));
				goto out;
			}
			continue;
		}
		snprintf(sub, sizeof(sub), "%zu", i);
		if (mkdirat(pool, sub, 0700) == -1 || fchmodat(pool, sub, pv->dir[i].mode, 0) == -1) {
			fprintf(stderr, "run: a private %s: %s\n", pv->dir[i].path, strerror(errno));
			goto out;
		}
		t = tree_copy(pool, sub, 0, pv->dir[i].path);
		if (t == -1)
			goto out;
		if ((pv->dir[i].noexec &&
		     mount_setattr(t, "", AT_EMPTY_PATH, &noexec, sizeof(noexec)) == -1) ||
		    tree_attach(t, pv->dir[i].path) == -1) {
			fprintf(stderr, "run: a private %s: %s\n", pv->dir[i].path, strerror(errno));
			close(t);
			goto out;
		}
		close(t);
	}
	ret = 0;
out:
	if (fs != -1)
		close(fs);
	if (pool != -1)
		close(pool);
	return ret;
}

/* Whether path is under dir. */
static bool path_under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	return strncmp(path, dir, n) == 0 && path[n] == '/';
}

/* Which of pv's directories path is or is under: -1 none, else its index; *exact when it is it. */
static int private_of(const struct privates *pv, const char *path, bool *exact)
{
	for (size_t i = 0; i < pv->n; i++) {
		*exact = strcmp(path, pv->dir[i].path) == 0;
		if (*exact || path_under(path, pv->dir[i].path))
			return (int)i;
	}
	return -1;
}

/* Whether a fresh directory (a private one, or /run) hides path; *exact when path is one. */
static bool hidden(const struct privates *pv, const char *path, bool *exact)
{
	if (private_of(pv, path, exact) != -1)
		return true;
	*exact = strcmp(path, "/run") == 0;
	return *exact || path_under(path, "/run");
}

/*
 * A copy of CMD's working directory, the operator's, when CMD is to write
 * it (the user may: cwd_writable) or see it under a fresh directory
 * (hidden), which hides it; not when it is that directory itself (CMD gets
 * the fresh one). Opened without following a symlink: getcwd's path has none,
 * and one put there since is not followed as root. Returns the fd, -1
 * none (CMD starts in the read-only view, or at home), -2 failed (said).
 */
static int cwd_copy(const struct run_exec *x, const struct privates *pv)
{
	struct open_how how = { .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
				.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS };
	bool exact = false, under;
	int dir, t;

	if (x->cwd == NULL)
		return -1;
	under = hidden(pv, x->cwd, &exact);
	if (exact || (!under && !x->cwd_writable))
		return -1;
	dir = (int)syscall(SYS_openat2, AT_FDCWD, x->cwd, &how, sizeof(how));
	if (dir == -1) {
		fprintf(stderr, "run: %s: %s; CMD starts at home\n", x->cwd, strerror(errno));
		return -1;
	}
	t = tree_copy(dir, "", AT_EMPTY_PATH, x->cwd);
	close(dir);
	return t == -1 ? -2 : t;
}

/* tree on target, made first (as root, 0755: only the way to it) when a fresh dir hid it. */
static int attach_at(int tree, const char *target, const struct privates *pv)
{
	bool exact;

	if (hidden(pv, target, &exact) && file_mkdir_p(target, 0755) == -1) {
		fprintf(stderr, "run: mkdir %s: %s\n", target, strerror(errno));
		return -1;
	}
	return tree_attach(tree, target);
}

/*
 * A fresh /run: a tmpfs of the run's own holding only the mount points of
 * what the run puts there (sluice, for the pub files; the private
 * directories under /run), made read-only by fresh_run_seal once all is
 * attached. What the machine keeps there (its daemons' sockets: D-Bus,
 * systemd-resolved's, nscd's; the network namespaces) CMD does not see,
 * nor what the machine binds there later. /etc/resolv.conf, a link into
 * /run on some machines, has the run's own attached on the link itself.
 * Returns the mount's fd, or -1 after printing.
 */
static int fresh_run(const struct privates *pv)
{
	int fs = fsopen("tmpfs", FSOPEN_CLOEXEC), mnt = -1;

	if (fs == -1 || fsconfig(fs, FSCONFIG_SET_STRING, "size", "64k", 0) == -1 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "mode", "0755", 0) == -1 ||
	    fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) == -1 ||
	    (mnt = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC)) == -1 ||
	    mkdirat(mnt, "sluice", 0755) == -1)
		goto fail;
	for (size_t i = 0; i < pv->n; i++)
		if (path_under(pv->dir[i].path, "/run") && mkdirat(mnt, pv->dir[i].path + strlen("/run/"), 0755) == -1)
			goto fail;
	if (tree_attach(mnt, "/run") == -1)
		goto out;
	close(fs);
	return mnt;
fail:
	fprintf(stderr, "run: a fresh /run: %s\n", strerror(errno));
out:
	if (mnt != -1)
		close(mnt);
	if (fs != -1)
		close(fs);
	return -1;
}

/*
 * The fresh /run (its mount at fd, which this closes) read-only, and on
 * /var/run too where that is no link to it. Returns 0 or -1 after printing.
 */
static int fresh_run_seal(int fd)
{
	struct mount_attr ro = { .attr_set = MOUNT_ATTR_RDONLY };
	struct stat st;
	int t, ret = -1;

	if (mount_setattr(fd, "", AT_EMPTY_PATH, &ro, sizeof(ro)) == -1) {
		fprintf(stderr, "run: a fresh /run read-only: %s\n", strerror(errno));
		goto out;
	}
	if (lstat("/var/run", &st) == 0 && S_ISDIR(st.st_mode)) {
		if ((t = tree_copy(AT_FDCWD, "/run", 0, "/run")) == -1)
			goto out;
		if (tree_attach(t, "/var/run") == -1) {
			close(t);
			goto out;
		}
		close(t);
	}
	ret = 0;
out:
	close(fd);
	return ret;
}

/* A devpts of the sandbox's own: a pty one run opens (the same uid's) is not another's. */
static int devpts_own(void)
{
	struct group *tty = getgrnam("tty");
	char data[96];

	snprintf(data, sizeof(data), "newinstance,ptmxmode=0666,mode=0620,gid=%u",
		 tty != NULL ? (unsigned)tty->gr_gid : 5U);
	if (mount("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, data) == -1 ||
	    mount("/dev/pts/ptmx", "/dev/ptmx", NULL, MS_BIND, NULL) == -1) {
		fprintf(stderr, "run: a devpts of the sandbox's own: %s\n", strerror(errno));
		return -1;
	}
	return 0;
}

/* The run's trust over the machine's: detached read-only copies of its files and where each goes. */
struct trust_binds {
	int fd[RUN_TRUST_MAX];
	char target[RUN_TRUST_MAX][PATH_MAX];
	size_t n;
};

/*
 * A copy of pub_dir/name for each of paths the machine has, in tb, by its
 * real path (a link's file gets it, not the link; each file once). Taken
 * while pub_dir is still reachable. Returns 0 or -1 after printing.
 */
static int trust_copy(struct trust_binds *tb, const char *pub_dir, const char *name,
		      const char *const *paths)
{
	struct mount_attr ro = { .attr_set = MOUNT_ATTR_RDONLY };
	char src[PATH_MAX], real[PATH_MAX];
	struct stat st;
	bool seen;

	snprintf(src, sizeof(src), "%s/%s", pub_dir, name);
	if (stat(src, &st) == -1)
		return 0; /* no CA (intercept off): nothing to trust */
	for (size_t i = 0; paths[i] != NULL; i++) {
		if (realpath(paths[i], real) == NULL || stat(real, &st) == -1 || !S_ISREG(st.st_mode))
			continue;
		seen = false;
		for (size_t j = 0; j < tb->n; j++)
			seen |= strcmp(tb->target[j], real) == 0;
		if (seen)
			continue;
		if (tb->n == RUN_TRUST_MAX) {
			fprintf(stderr, "run: more than %d trust files to cover\n", RUN_TRUST_MAX);
			return -1;
		}
		tb->fd[tb->n] = tree_copy(AT_FDCWD, src, 0, src);
		if (tb->fd[tb->n] == -1)
			return -1;
		snprintf(tb->target[tb->n], sizeof(tb->target[tb->n]), "%s", real);
		if (mount_setattr(tb->fd[tb->n++], "", AT_EMPTY_PATH, &ro, sizeof(ro)) == -1) {
			fprintf(stderr, "run: %s read-only: %s\n", src, strerror(errno));
			return -1;
		}
	}
	return 0;
}

/*
 * The sandbox's mounts, in its own mount namespace. Everything the
 * machine has is there read-only (every mount, recursively, locked so: a
 * user namespace of CMD's cannot undo it), but what CMD is to write: the
 * private directories (private_scan, private_mount), the user's home (the
 * project's, home_dir, for sluice-sandbox), and the working directory
 * when the user may write it. Also a fresh /proc, /run (fresh_run) and
 * devpts, the run's pub directory on /run/sluice, its resolv.conf on
 * /etc/resolv.conf and its hosts (the localhost lines) on /etc/hosts, its
 * trust (run_trust.c: the machine's roots and the CA) over the machine's
 * bundle files and Java keystores, read-only, and an empty file over each
 * of the machine's sockets (socks, run_socks_cover). What is attached
 * writable is copied before / goes read-only, and before the fresh
 * directories hide it. Returns 0 or -1 after printing.
 */
static int sandbox_mounts(const struct run_exec *x, const struct run_socks *socks)
{
	enum { PUB, RESOLV, HOSTS, HOME, CWD, NTREES };
	struct mount_attr ro = { .attr_set = MOUNT_ATTR_RDONLY };
	char resolv[4200], hosts[4200];
	struct privates pv;
	struct trust_binds tb = { .n = 0 };
	int t[NTREES] = { -1, -1, -1, -1, -1 }, run = -1, ret = -1;

	snprintf(resolv, sizeof(resolv), "%s/resolv.conf", x->pub_dir);
	snprintf(hosts, sizeof(hosts), "%s/hosts", x->pub_dir);
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == -1) {
		fprintf(stderr, "run: make / private: %s\n", strerror(errno));
		return -1;
	}
	if (private_scan(&pv) == -1 || (t[PUB] = tree_copy(AT_FDCWD, x->pub_dir, 0, x->pub_dir)) == -1 ||
	    (t[RESOLV] = tree_copy(AT_FDCWD, resolv, 0, resolv)) == -1 ||
	    (t[HOSTS] = tree_copy(AT_FDCWD, hosts, 0, hosts)) == -1 ||
	    (x->home_dir != NULL && (t[HOME] = tree_copy(AT_FDCWD, x->home_dir, 0, x->home_dir)) == -1) ||
	    (t[CWD] = cwd_copy(x, &pv)) == -2 ||
	    trust_copy(&tb, x->pub_dir, "ca-bundle.crt", run_trust_bundles) == -1 ||
	    trust_copy(&tb, x->pub_dir, "cacerts", run_trust_keystores) == -1)
		goto out;
	if (mount_setattr(AT_FDCWD, "/", AT_RECURSIVE, &ro, sizeof(ro)) == -1) {
		fprintf(stderr, "run: / read-only: %s\n", strerror(errno));
		goto out;
	}
	if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) == -1) {
		fprintf(stderr, "run: mount /proc: %s\n", strerror(errno));
		goto out;
	}
	if ((run = fresh_run(&pv)) == -1 || private_mount(&pv) == -1 || devpts_own() == -1 ||
	    tree_attach(t[PUB], "/run/sluice") == -1 || tree_attach(t[RESOLV], "/etc/resolv.conf") == -1 ||
	    tree_attach(t[HOSTS], "/etc/hosts") == -1 ||
	    (t[HOME] != -1 && attach_at(t[HOME], x->user->home, &pv) == -1) ||
	    (t[CWD] >= 0 && attach_at(t[CWD], x->cwd, &pv) == -1))
		goto out;
	for (size_t i = 0; i < tb.n; i++)
		if (tree_attach(tb.fd[i], tb.target[i]) == -1)
			goto out;
	ret = fresh_run_seal(run) == -1 || run_socks_cover(socks) == -1 ? -1 : 0;
	run = -1;
out:
	if (run != -1)
		close(run);
	for (size_t i = 0; i < NTREES; i++)
		if (t[i] >= 0)
			close(t[i]);
	for (size_t i = 0; i < tb.n; i++)
		close(tb.fd[i]);
	return ret;
}

/*
 * A session keyring of CMD's own (empty, the user's): it would possess the
 * operator's, whose keys /proc/keys then lists by name. After the drop
 * and before run_filter_install refuses keyctl. Returns 0 (also for a
 * kernel without keys) or -1 after printing.
 */
static int session_keyring_own(void)
{
	if (syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, NULL) != -1 || errno == ENOSYS)
		return 0;
	fprintf(stderr, "run: a session keyring of CMD's own: %s\n", strerror(errno));
	return -1;
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
	run_child_signals();
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
	struct run_socks socks;
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
	/* the machine's sockets are listed first: the scan enters other namespaces, and needs its /proc */
	if (run_socks_scan(&socks) == -1 || run_netns_enter(x->netns) == -1 || sandbox_mounts(x, &socks) == -1 ||
	    priv_switch("run", x->user->name, x->user->uid, x->user->gid) == -1 ||
	    session_keyring_own() == -1 || run_filter_install() == -1)
		_exit(126);
	run_socks_release(&socks);
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
		return run_spawn_tty(x->argv, x->netns, x->close_fd);
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
	pid = (pid_t)syscall(SYS_clone, CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC | SIGCHLD, NULL,
			     NULL, NULL, 0);
	if (pid == 0)
		_exit(init_main(&ix));
	if (pid == -1)
		fprintf(stderr, "run: clone: %s\n", strerror(errno));
	close(alive[0]);
	/* alive[1] stays open, never written, until we exit: the init's sign that we live */
	return pid;
}
