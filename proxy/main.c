/*
 * main.c: sluice-proxy, the chokepoint.
 *
 * Reads like a script: arguments, config, state directory, replay window,
 * CA, log, listeners, resolver, policy and stamp keys (as root, when started
 * so), then the drop to `user` (priv.c), signals, then the loop. Runs in the
 * foreground; stops on SIGINT or SIGTERM; SIGHUP reloads the policy
 * (reload.c). Under systemd (Type=notify) it tells the manager READY=1
 * once its listeners are open and it runs as `user`, and STOPPING=1 on the
 * way out; without NOTIFY_SOCKET sd_notify does nothing.
 */
#include "proxy.h"
#include "request.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "signals.h"

#define ACCEPT_BATCH 64

static int reserve_fd = -1; /* given up to accept and refuse when out of fds */

static void usage(void)
{
	fprintf(stderr, "usage: sluice-proxy [-d] [-c FILE]\n"
			"       sluice-proxy -t [-c FILE]\n"
			"  -c FILE  configuration (default etc/sluice.conf)\n"
			"  -d       trace: each connection's state transitions and deadlines on stderr\n"
			"  -t       check the configuration and exit\n"
			"exit: 0 stopped by a signal, 1 could not start, 2 usage\n");
}

static void on_accept(struct loop *l, struct loop_io *io, uint32_t events)
{
	struct proxy *px = io->arg;

	for (int i = 0; i < ACCEPT_BATCH; i++) {
		struct sockaddr_storage peer = { 0 }; /* a unix peer fills in its family alone */
		socklen_t len = sizeof(peer);
		int fd = accept4(io->fd, (struct sockaddr *)&peer, &len,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd >= 0) {
			session_accept(px, fd, &peer, &h1_codec, &h1_head_state);
			continue;
		}
		if (errno == EMFILE || errno == ENFILE) {
			/* out of descriptors: take the connection and close it at once,
			 * rather than leave it to spin in the backlog */
			if (reserve_fd >= 0) {
				close(reserve_fd);
				fd = accept4(io->fd, NULL, NULL, SOCK_CLOEXEC);
				if (fd >= 0)
					close(fd);
				reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
			}
			fprintf(stderr, "sluice-proxy: accept: %s\n", strerror(errno));
			return;
		}
		if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
			fprintf(stderr, "sluice-proxy: accept: %s\n", strerror(errno));
		return;
	}
}

/*
 * A unix:PATH listener's file: a socket left by an earlier run is removed;
 * anything else there is not ours to remove. Returns 0, or -1 with errno.
 */
static int unix_path_free(const char *path)
{
	struct stat st;

	if (lstat(path, &st) == -1)
		return errno == ENOENT ? 0 : -1;
	if (!S_ISSOCK(st.st_mode)) {
		errno = EEXIST;
		return -1;
	}
	return unlink(path);
}

static int listen_on(struct proxy *px, const struct sockaddr_storage *ss)
{
	struct listener *ln = &px->listeners[px->nlisteners];
	const char *path = ss->ss_family == AF_UNIX ? ((const struct sockaddr_un *)ss)->sun_path
						    : NULL;
	char name[128];
	int fd;

	sockaddr_format(ss, name, sizeof(name));
	if (path != NULL && unix_path_free(path) == -1)
		goto fail;
	/* accepted sockets inherit TCP_NODELAY from the listener: one call, not one per client;
	 * a unix socket file is made 0600 (only its owner, root: sluice-forward, may connect) */
	fd = sock_listen(ss, SOCK_LISTEN_NODELAY | SOCK_LISTEN_V6ONLY);
	if (fd == -1)
		goto fail;
	if (loop_io_add(px->loop, &ln->io, fd, EPOLLIN, on_accept, px) == -1) {
		int e = errno;
		close(fd);
		errno = e;
		goto fail;
	}
	ln->addr = *ss;
	px->nlisteners++;
	fprintf(stderr, "sluice-proxy: listening on %s\n", name);
	return 0;
fail:
	fprintf(stderr, "sluice-proxy: listen %s: %s\n", name, strerror(errno));
	return -1;
}

static void on_signal(struct loop *l, struct loop_io *io, uint32_t events)
{
	struct proxy *px = io->arg;
	struct signalfd_siginfo si;

	while (read(io->fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGHUP) {
			reload_now(px, "SIGHUP");
			sandbox_scan(px);
		} else {
			fprintf(stderr, "sluice-proxy: stopping on signal %u\n", si.ssi_signo);
			loop_stop(l);
		}
	}
}

static int signals_init(struct proxy *px)
{
	int fd = signals_open();

	if (fd == -1)
		return -1;
	if (loop_io_add(px->loop, &px->sig_io, fd, EPOLLIN, on_signal, px) == -1) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return 0;
}

static void raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static void before_sleep(struct loop *l, void *arg)
{
	session_free_dead(arg);
}

/*
 * doctor-on-start: `sluice -c CONFIG doctor --before-proxy` (the sluice
 * beside this binary) must exit 0 before anything is opened; its report
 * goes to our stderr. Before the loop exists, so no fd of it is inherited.
 * Returns 0 or -1 after printing.
 */
static int doctor_first(const char *config_path)
{
	char self[PATH_MAX], *slash;
	char *argv[] = { self, "-c", (char *)config_path, "doctor", "--before-proxy", NULL };
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 16);
	pid_t pid;
	int st;

	if (n <= 0 || (slash = memrchr(self, '/', (size_t)n)) == NULL) {
		fprintf(stderr, "sluice-proxy: doctor-on-start: where is sluice? %s\n", strerror(errno));
		return -1;
	}
	snprintf(slash + 1, sizeof(self) - (size_t)(slash + 1 - self), "sluice");
	pid = fork();
	if (pid == 0) {
		sigset_t none;

		sigemptyset(&none); /* ours are blocked from the start (signals_block): not doctor's */
		sigprocmask(SIG_SETMASK, &none, NULL);
		dup2(2, 1);
		execv(self, argv);
		fprintf(stderr, "sluice-proxy: doctor-on-start: %s: %s\n", self, strerror(errno));
		_exit(2);
	}
	if (pid == -1 || waitpid(pid, &st, 0) != pid) {
		fprintf(stderr, "sluice-proxy: doctor-on-start: %s\n", strerror(errno));
		return -1;
	}
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 0;
	fprintf(stderr, "sluice-proxy: doctor-on-start: sluice doctor %s %d (above); not started\n",
		WIFEXITED(st) ? "exited" : "killed by signal",
		WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	return -1;
}

/* -c FILE into *config_path, -d into px->trace, -t into *check_only. Returns 0, or 2 after the usage. */
static int args_parse(int argc, char **argv, struct proxy *px, const char **config_path,
		      bool *check_only)
{
	int opt;

	while ((opt = getopt(argc, argv, "c:dth")) != -1) {
		switch (opt) {
		case 'c':
			*config_path = optarg;
			break;
		case 'd':
			px->trace = true;
			break;
		case 't':
			*check_only = true;
			break;
		default:
			usage();
			return 2;
		}
	}
	if (optind != argc) {
		usage();
		return 2;
	}
	return 0;
}

/* The network log opened for root or the proxy's user to own. Returns 0 or -1 after printing. */
static int log_open(struct proxy *px)
{
	const char *why = NULL;
	uid_t log_owner;

	if (priv_owner(px->config, &log_owner) == -1)
		return -1;
	px->netlog = netlog_open(px->config->log_path, px->config->log_rotate_bytes,
				 px->config->log_keep, px->config->log_chain, log_owner, &why);
	if (px->netlog == NULL) {
		fprintf(stderr, "sluice-proxy: log %s: %s\n", px->config->log_path,
			why != NULL ? why : strerror(errno));
		if (why != NULL)
			fprintf(stderr, "sluice-proxy: refusing to open it: the log and its rotated "
					"files must be regular files of root's or the proxy user's, "
					"with one name; remove what is there, then start again\n");
		return -1;
	}
	return 0;
}

/* Every listener closed, a unix socket's path unlinked. */
static void listeners_close(struct proxy *px)
{
	for (size_t i = 0; i < px->nlisteners; i++) {
		int fd = px->listeners[i].io.fd;
		loop_io_del(px->loop, &px->listeners[i].io);
		close(fd);
		if (px->listeners[i].addr.ss_family == AF_UNIX) /* as the user it runs as: may fail */
			unlink(((const struct sockaddr_un *)&px->listeners[i].addr)->sun_path);
	}
}

/* After the loop: every session closed ("proxy stopping"), the signals no longer read. */
static void stopping(struct proxy *px)
{
	while (!list_empty(&px->sessions))
		session_close(list_entry(px->sessions.first, struct session, link), "proxy stopping");
	session_free_dead(px);
	if (px->sig_io.fd >= 0) {
		int fd = px->sig_io.fd;
		loop_io_del(px->loop, &px->sig_io);
		close(fd);
	}
}

int main(int argc, char **argv)
{
	struct proxy px;
	const char *config_path = "etc/sluice.conf";
	bool check_only = false;
	int ret = 1;

	/* a reload asked while we start (sluice run's hand-over) waits for the loop, not kills us */
	if (signals_block() == -1) {
		perror("sluice-proxy: sigprocmask");
		return 1;
	}
	memset(&px, 0, sizeof(px));
	px.sig_io.fd = -1;
	px.run_fd = -1;
	if (args_parse(argc, argv, &px, &config_path, &check_only) != 0)
		return 2;

	px.config = config_new();
	if (px.config == NULL || config_load(px.config, config_path, stderr) != 0) {
		fprintf(stderr, "sluice-proxy: %s: not started\n", config_path);
		goto out;
	}
	snprintf(px.config_path, sizeof(px.config_path), "%s", config_path);
	if (check_only) {
		ret = 0;
		goto out;
	}
	if (px.config->doctor_on_start && doctor_first(config_path) == -1)
		goto out;
	if (mkdir(px.config->state_dir, 0700) == -1 && errno != EEXIST) {
		fprintf(stderr, "sluice-proxy: state %s: %s\n", px.config->state_dir,
			strerror(errno));
		goto out;
	}
	if (replay_open(&px) == -1 || tls_init(&px) == -1)
		goto out;
	if (log_open(&px) == -1)
		goto out;
	px.loop = loop_new();
	if (px.loop == NULL || limit_init(&px) == -1 || budget_init(&px) == -1 ||
	    lograte_init(&px) == -1)
		goto out_loop;
	raise_fd_limit();
	reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	for (size_t i = 0; i < px.config->nlisten; i++)
		if (listen_on(&px, &px.config->listen[i]) == -1)
			goto out_loop;
	if (stats_init(&px) == -1) /* bound as root, like the listeners */
		goto out_loop;
	if (resolve_init(&px) == -1)
		goto out_loop;
	if (reload_init(&px) == -1)
		goto out_resolve;
	if (priv_drop(&px) == -1)
		goto out_reload;
	inject_warn_sources(&px);
	if (signals_init(&px) == -1) {
		fprintf(stderr, "sluice-proxy: signals: %s\n", strerror(errno));
		goto out_reload;
	}
	loop_set_hook(px.loop, before_sleep, &px);
	fprintf(stderr, "sluice-proxy: running: mode %s, %zu grants, state %s, log %s, run %s\n",
		policy_mode_name(px.policy, time(NULL)), px.policy->ngrants,
		px.config->state_dir, px.config->log_path, px.run_id);
	sd_notify(0, "READY=1"); /* listening, dropped: what a unit after this one may rely on */

	ret = loop_run(px.loop) == 0 ? 0 : 1;
	sd_notify(0, "STOPPING=1");

	stopping(&px);
out_reload:
	reload_release(&px);
out_resolve:
	resolve_release(&px);
out_loop:
	stats_release(&px);
	token_release_all(&px);
	limit_release(&px);
	budget_release(&px);
	lograte_release(&px); /* the suppression rows still due, before the log closes */
	listeners_close(&px);
	loop_free(px.loop);
	netlog_close(px.netlog);
out:
	tls_release(&px);
	replay_close(&px);
	config_free(px.config);
	return ret;
}
