/*
 * run_up.c: the steps of `sluice run` before CMD, in order (run_up): the
 * project's proxy and sluice-dns, found by their run files or started for
 * the run; the session grants of --allow; the namespace, and for --image
 * a podman network in it and `sluice engine watch`; the sandbox and guard
 * walls inside; the forwarder (listeners inside, upstreams here: the
 * proxy and sluice-dns); then `sluice verify` inside as the sandbox user.
 * Each thing is recorded (run_record.c) before it is made.
 *
 * It starts no CMD and takes nothing down: run_verb.c does the one,
 * run_record.c's run_teardown the other.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "file.h"
#include "netns.h"
#include "wall.h"
#include "run.h"
#include "runfile.h"
#include "sockaddr.h"
#include "sockdiag.h"

#define VERIFY_TARGET "198.18.0.1"   /* in the deny list: the control request is never dialed */
#define VERIFY_TARGET6 "2001:db8::1"
#define READY_MS 10000               /* a daemon started for the run has this long to answer */

/* Whether SIGINT, SIGTERM or SIGHUP waits (they are blocked while we set up). */
static int pending_signal(void)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
	sigset_t set;

	if (sigpending(&set) == -1)
		return 0;
	for (size_t i = 0; i < 3; i++)
		if (sigismember(&set, sigs[i]))
			return sigs[i];
	return 0;
}

/* The last lines of path (what the run's processes wrote), for a failure's message. */
static void log_tail(const char *path)
{
	char *buf, *p;
	size_t len;
	int lines = 0;

	if (file_read(path, 1 << 20, &buf, &len) == -1)
		return;
	for (p = buf + len; p > buf && lines <= 6; p--)
		lines += p[-1] == '\n';
	fprintf(stderr, "run: %s says:\n%s", path, p == buf ? p : p + 1);
	free(buf);
}

/* The run's own log, STATE/runs/ID/daemons.log: the forwarder's and the engine's. */
static void run_log_tail(const struct run *x)
{
	char path[PATH_MAX + 16];

	snprintf(path, sizeof(path), "%s/daemons.log", x->dir);
	log_tail(path);
}

/* The daemon's run file, waiting up to READY_MS for pid (started by us) to write it. */
static int daemon_wait(struct run *x, const char *file, pid_t pid, struct runfile *rf,
		       const char *log)
{
	for (int waited = 0; waited < READY_MS; waited += 5) {
		struct timespec ts = { 0, 5000000 };

		if (runfile_read(x->c->state_dir, file, rf) == 0 && rf->pid == pid)
			return 0;
		if (waitpid(pid, NULL, WNOHANG) == pid)
			break;
		nanosleep(&ts, NULL);
	}
	fprintf(stderr, "run: %s did not start\n", file);
	log_tail(log);
	return -1;
}

/*
 * Start prog (sluice-proxy or sluice-dns) for the project, detached: another
 * run may come to use it, and the last run out stops it (run_record.c's
 * shared_release). Its stderr goes to STATE/runs/.daemons.log, which
 * outlives the run. Returns 0 or -1 after printing.
 */
static int daemon_start(struct run *x, const char *what, const char *file, const char *prog,
			struct runfile *rf)
{
	char path[PATH_MAX + 32], log[PATH_MAX + 32];
	char *argv[] = { path, "-c", x->conf, NULL };
	pid_t pid;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", x->bindir, prog);
	snprintf(log, sizeof(log), "%s/runs/.daemons.log", x->c->state_dir);
	if (x->conf[0] == '\0')
		argv[1] = NULL;
	fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd == -1) {
		fprintf(stderr, "run: %s: %s\n", log, strerror(errno));
		return -1;
	}
	pid = run_spawn(x->c, &x->r, what, argv, true, fd);
	close(fd);
	if (pid == -1 || daemon_wait(x, file, pid, rf, log) == -1)
		return -1;
	fprintf(stderr, "run: started %s for this run (pid %d)\n", prog, (int)pid);
	return 0;
}

/*
 * Not running, or its run file unreadable (said here): one run starts it, under
 * STATE/runs/.daemons.lock; the others wait for that run and read its run
 * file. Returns 0 or -1 after printing.
 */
static int daemon_up(struct run *x, const char *what, const char *file, const char *prog,
		     struct runfile *rf)
{
	char lock[PATH_MAX + 32];
	int fd, rc = -1;

	snprintf(lock, sizeof(lock), "%s/runs/.daemons.lock", x->c->state_dir);
	fd = cli_open_state("run", lock, O_RDWR | O_CREAT, 0600);
	if (fd == -1)
		return -1;
	while (flock(fd, LOCK_EX) == -1 && errno == EINTR)
		;
	if (runfile_read(x->c->state_dir, file, rf) == 0)
		rc = 0; /* another run started it meanwhile */
	else if (errno != ENOENT && errno != ESRCH) {
		fprintf(stderr, "run: %s/%s: ", x->c->state_dir, file);
		cli_put_strerror(stderr, errno);
		fputc('\n', stderr);
	} else
		rc = daemon_start(x, what, file, prog, rf);
	close(fd);
	return rc;
}

/*
 * The project's daemon (proxy or dns) as its run file names it; not running:
 * started (daemon_up). Its first listener (the proxy's unix socket when it
 * has one: no TCP hop) into up. Returns 0 or -1 after printing.
 */
static int daemon_find(struct run *x, const char *what, const char *file, const char *prog,
		       struct runfile *rf, char *up, size_t upsize)
{
	const struct sockaddr_storage *pick = NULL;
	struct sockaddr_storage ss;

	if (runfile_read(x->c->state_dir, file, rf) == -1 && daemon_up(x, what, file, prog, rf) == -1)
		return -1;
	for (size_t i = 0; i < rf->nlisten; i++)
		if (pick == NULL || rf->listen[i].ss_family == AF_UNIX)
			pick = &rf->listen[i];
	if (pick == NULL) {
		fprintf(stderr, "run: %s/%s names no listener\n", x->c->state_dir, file);
		return -1;
	}
	ss = *pick;
	/* a wildcard listener is reached at loopback */
	if (ss.ss_family == AF_INET &&
	    ((struct sockaddr_in *)&ss)->sin_addr.s_addr == htonl(INADDR_ANY))
		((struct sockaddr_in *)&ss)->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sockaddr_format(&ss, up, upsize);
	return 0;
}

/*
 * The --allow grants, then SIGHUP to the proxy and sluice-dns so they load
 * them now rather than at their next look (each second): the rest of the
 * setup takes longer than a reload.
 */
static int allow_grants(struct run *x)
{
	size_t added = x->r.ngrants;

	for (size_t i = 0; i < x->o.nallow; i++) {
		int rc = allow_session_add(x->c, x->o.allow[i], x->proxy_run);

		if (rc == -1)
			return -1;
		if (rc == 1) {
			struct run_grant *g = &x->r.grants[x->r.ngrants++];

			snprintf(g->pattern, sizeof(g->pattern), "%s", x->o.allow[i]);
			snprintf(g->run, sizeof(g->run), "%s", x->proxy_run);
			if (run_record_save(x->c, &x->r) == -1)
				return -1;
		}
	}
	if (x->r.ngrants > added && x->proxy_pid > 0)
		kill(x->proxy_pid, SIGHUP);
	if (x->r.ngrants > added && x->dns_pid > 0)
		kill(x->dns_pid, SIGHUP);
	return 0;
}

static int netns_make(struct run *x)
{
	char *add[] = { "ip", "netns", "add", x->r.name, NULL };
	char *lo[] = { "ip", "-n", x->r.name, "link", "set", "lo", "up", NULL };
	/* the fake addresses are local here: the walls' nat leads them to the forwarder */
	char *fake[] = { "ip", "-n", x->r.name, "route", "add", "local", WALL_FAKE_NET, "dev", "lo",
			 NULL };

	x->r.netns = true;
	if (run_record_save(x->c, &x->r) == -1)
		return -1;
	if (run_tool(add, x->log_fd, 10000) != 0 || run_tool(lo, x->log_fd, 10000) != 0 ||
	    run_tool(fake, x->log_fd, 10000) != 0) {
		fprintf(stderr, "run: could not make the network namespace %s\n", x->netns);
		run_log_tail(x);
		return -1;
	}
	return 0;
}

/* --image: a podman network of the run's own; the sandbox reaches the forwarder at its gateway. */
static int network_make(struct run *x)
{
	char words[RUN_PODMAN_MAX], *argv[PODMAN_ARGS_MAX + 8], out[256];
	size_t n = run_podman_argv(x, words, sizeof(words), argv, PODMAN_ARGS_MAX);
	struct sockaddr_storage ss;

	snprintf(x->r.network, sizeof(x->r.network), "%s", x->r.name);
	if (run_record_save(x->c, &x->r) == -1)
		return -1;
	/* no aardvark-dns on the bridge: the forwarder's relay answers there */
	argv[n] = "network", argv[n + 1] = "create", argv[n + 2] = "--disable-dns";
	argv[n + 3] = x->r.name, argv[n + 4] = NULL;
	if (run_tool(argv, x->log_fd, 60000) != 0) {
		fprintf(stderr, "run: podman network create %s failed\n", x->r.name);
		run_log_tail(x);
		return -1;
	}
	argv[n] = "network", argv[n + 1] = "inspect", argv[n + 2] = "-f";
	argv[n + 3] = "{{range .Subnets}}{{.Gateway}} {{end}}", argv[n + 4] = x->r.name;
	argv[n + 5] = NULL;
	if (run_capture(argv, out, sizeof(out), 60000) != 0 || strtok(out, " \n") == NULL ||
	    sockaddr_parse(out, SOCKADDR_NO_PORT, 1, &ss) == -1 || ss.ss_family != AF_INET) {
		fprintf(stderr, "run: podman network %s: no IPv4 gateway\n", x->r.name);
		return -1;
	}
	snprintf(x->gateway, sizeof(x->gateway), "%s", out);
	return run_principal(x, &ss);
}

static int walls_apply(struct run *x)
{
	char base[16], fwd[80], tp[16];
	const char *sandbox[] = { "wall", "apply", "sandbox", "--user", x->user.name, "--gateway",
				  "127.0.0.1", "--port-base", base, "--netns", x->netns,
				  "--transparent", tp, "--forwarder", fwd };
	const char *guard[] = { "wall", "apply", "guard", "--gateway", "127.0.0.1",
				"--port-base", base, "--netns", x->netns };

	snprintf(base, sizeof(base), "%u", x->r.base);
	host_port_format(fwd, sizeof(fwd), x->gateway, x->fwd_port);
	snprintf(tp, sizeof(tp), "%u", x->r.base + RUN_TRANSPARENT_OFF);
	x->r.walls = true;
	if (run_record_save(x->c, &x->r) == -1)
		return -1;
	/* the bridge's input rules name the forwarder only for --image */
	if (run_self_tool(x, sandbox, x->o.image != NULL ? 15 : 13, x->log_fd) != 0 ||
	    run_self_tool(x, guard, 9, x->log_fd) != 0) {
		fprintf(stderr, "run: the walls did not apply in %s\n", x->netns);
		run_log_tail(x);
		return -1;
	}
	return 0;
}

/* Until a TCP socket listens on 0.0.0.0:port in the namespace (sock_diag, no connection). */
static int listening(struct run *x, unsigned port, pid_t pid)
{
	struct sockaddr_storage ss;
	int saved = netns_enter_saved(x->netns), nl = -1;
	bool found = false;

	if (saved != -1) {
		nl = sockdiag_open();
		if (netns_leave(saved) == -1) {
			fprintf(stderr, "run: back from %s: %s\n", x->netns, strerror(errno));
			exit(EXIT_RUN_FAILED); /* in the wrong namespace: nothing after this is safe */
		}
	}
	if (nl == -1) {
		fprintf(stderr, "run: sock_diag in %s: %s\n", x->netns, strerror(errno));
		return -1;
	}
	sockaddr_parse("0.0.0.0", SOCKADDR_NO_PORT, (uint16_t)port, &ss);
	for (int waited = 0; waited < READY_MS && !found; waited += 2) {
		struct timespec ts = { 0, 2000000 };

		if (sockdiag_find_listener(nl, &ss, &found) == -1 ||
		    waitpid(pid, NULL, WNOHANG) == pid)
			break;
		if (!found)
			nanosleep(&ts, NULL);
	}
	close(nl);
	if (!found) {
		fprintf(stderr, "run: the forwarder is not listening on port %u in %s\n", port,
			x->netns);
		run_log_tail(x);
		return -1;
	}
	return 0;
}

static int forwarder_start(struct run *x)
{
	char path[PATH_MAX + 32], key[PATH_MAX + 16], pair[200], dns[200], tp[200];
	char *argv[] = { path, "--key", key, "--net", x->r.name, "--src", x->principal_src,
			 "--as", x->principal_as, "--netns", x->netns, "--dns", dns, "--transparent", tp,
			 pair, NULL };
	pid_t pid;

	snprintf(path, sizeof(path), "%s/sluice-forward", x->bindir);
	snprintf(key, sizeof(key), "%s/stamp.key", x->c->state_dir);
	snprintf(pair, sizeof(pair), "0.0.0.0:%u=%s", x->fwd_port, x->proxy_up);
	snprintf(dns, sizeof(dns), "0.0.0.0:53=%s", x->dns_up);
	snprintf(tp, sizeof(tp), "127.0.0.1:%u=%s", x->r.base + RUN_TRANSPARENT_OFF, x->proxy_up);
	pid = run_spawn(x->c, &x->r, "forward", argv, false, x->log_fd);
	if (pid == -1)
		return -1;
	return listening(x, x->fwd_port, pid);
}

/* --image: `sluice engine watch` names the run's container in STATE/engine.jsonl for log. */
static int engine_watch(struct run *x)
{
	char *argv[] = { x->self, "-c", x->conf, "engine", "watch", "--net", x->r.name,
			 "--podman", (char *)x->o.podman, NULL };

	if (x->conf[0] == '\0')
		memmove(argv + 1, argv + 3, 7 * sizeof(argv[0]));
	return run_spawn(x->c, &x->r, "engine", argv, false, x->log_fd) == -1 ? -1 : 0;
}

/* SLUICE_RUN_TEST_HOOK: a test's shell command, run before verify, told the namespace. */
static int test_hook(struct run *x)
{
	const char *hook = getenv("SLUICE_RUN_TEST_HOOK");
	char *argv[] = { "/bin/sh", "-c", (char *)hook, NULL };

	if (hook == NULL || hook[0] == '\0')
		return 0;
	setenv("SLUICE_RUN_NETNS", x->netns, 1);
	if (run_tool(argv, -1, 60000) != 0) {
		fprintf(stderr, "run: SLUICE_RUN_TEST_HOOK failed\n");
		return -1;
	}
	return 0;
}

/* `sluice verify` inside, as the sandbox user. Returns 0 proven, 1 not (said), -1 could not run. */
static int sandbox_verify(struct run *x)
{
	char path[PATH_MAX + 16], proxy[80], *buf;
	char *argv[] = { "verify", "--target", VERIFY_TARGET, "--target6", VERIFY_TARGET6,
			 "--proxy", proxy, "--timeout-ms", "1000", "--probe", x->note.nonce, NULL };
	size_t len;
	int fd, rc;

	snprintf(proxy, sizeof(proxy), "127.0.0.1:%u", x->fwd_port);
	snprintf(path, sizeof(path), "%s/verify.out", x->dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd == -1) {
		fprintf(stderr, "run: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (!x->noted)
		argv[9] = NULL; /* no note: the proxy could not know the probe */
	rc = run_verify(x->netns, &x->user, x->noted ? 11 : 9, argv, fd, x->lock_fd);
	run_note_verified(x);
	close(fd);
	if (rc == 0)
		return 0;
	fprintf(stderr, "sluice run: the sandbox %s does not hold (verify exit %d); CMD not started\n",
		x->r.name, rc);
	if (file_read(path, 1 << 16, &buf, &len) == 0) {
		fputs(buf, stderr);
		free(buf);
	}
	return rc == -1 ? -1 : 1;
}

int run_up(struct run *x)
{
	struct runfile prf, drf;
	int sig, rc;

	/* before the daemons: one started now loads it; one running is told (SIGHUP) */
	if (x->agent != NULL && run_agent_begin(x, x->agent, x->agent_path) == -1)
		return EXIT_RUN_FAILED;
	if (daemon_find(x, "proxy", "proxy.run", "sluice-proxy", &prf, x->proxy_up,
			sizeof(x->proxy_up)) == -1)
		return EXIT_RUN_FAILED;
	snprintf(x->proxy_run, sizeof(x->proxy_run), "%s", prf.id);
	if (daemon_find(x, "dns", "dns.run", "sluice-dns", &drf, x->dns_up, sizeof(x->dns_up)) == -1)
		return EXIT_RUN_FAILED;
	x->proxy_pid = prf.pid;
	x->dns_pid = drf.pid;
	/* a daemon starting while we handed over may have read agents.conf before us, and had no run file to be told by */
	if (x->agent != NULL && x->proxy_pid > 0)
		kill(x->proxy_pid, SIGHUP);
	if (x->agent != NULL && x->dns_pid > 0)
		kill(x->dns_pid, SIGHUP);
	if ((sig = pending_signal()) != 0)
		return 128 + sig;
	if (run_note_begin(x) == -1 || allow_grants(x) == -1 || netns_make(x) == -1)
		return EXIT_RUN_FAILED;
	if (x->o.image != NULL && (network_make(x) == -1 || engine_watch(x) == -1))
		return EXIT_RUN_FAILED;
	if (walls_apply(x) == -1 || forwarder_start(x) == -1 || test_hook(x) == -1)
		return EXIT_RUN_FAILED;
	if ((sig = pending_signal()) != 0)
		return 128 + sig;
	rc = sandbox_verify(x);
	if (rc != 0)
		return rc == 1 ? EXIT_UNVERIFIED : EXIT_RUN_FAILED;
	if ((sig = pending_signal()) != 0)
		return 128 + sig;
	return 0;
}
