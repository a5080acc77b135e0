/*
 * run.c: `sluice run`: one command puts CMD, or a container, behind sluice.
 *
 * Reads like a script, each step recorded before it is taken (run.h):
 * the project's band, stale runs cleaned, the sandbox user, the project's
 * proxy and sluice-dns (found by their run files, else started for this
 * run), session grants for --allow, the namespace, for --image a podman
 * network in it, the sandbox and guard walls inside, the forwarder
 * (listeners inside, upstreams here: the proxy and sluice-dns), then
 * `sluice verify` inside as the sandbox user: CMD starts only if the walls
 * hold and the forwarder serves (else exit 3). Then CMD, with the proxy
 * variables and the CA's and nothing else of ours; its status is ours. On
 * its end, or SIGINT/SIGTERM, everything recorded is taken down.
 *
 * CMD's stdout is CMD's alone: from the start, this process's stdout
 * (and so every tool's it starts: key and CA creation, useradd, podman,
 * the walls) is its stderr; CMD is started with the stdout we were given.
 *
 * Exit: CMD's status; 3 the sandbox did not verify; 125 sluice run itself
 * failed before CMD; 2 usage.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "file.h"
#include "hex.h"
#include "netns.h"
#include "ports.h"
#include "wall.h"
#include "run.h"
#include "runfile.h"
#include "sockaddr.h"
#include "sockdiag.h"

#define EXIT_UNVERIFIED 3
#define EXIT_RUN_FAILED 125
#define SANDBOX_USER "sluice-sandbox"
#define SANDBOX_HOME "/var/lib/sluice-sandbox"
#define VERIFY_TARGET "198.18.0.1"   /* in the deny list: the control request is never dialed */
#define VERIFY_TARGET6 "2001:db8::1"
#define READY_MS 10000               /* a daemon started for the run has this long to answer */
#define STOP_GRACE_MS 10000          /* after a signal is passed on, CMD has this long */

static int usage_error(const char *msg, const char *arg)
{
	fprintf(stderr, "run: %s%s%s\n", msg, arg != NULL ? ": " : "", arg != NULL ? arg : "");
	cli_usage(stderr, "run");
	return EXIT_USAGE;
}

/* Options up to `--` (and for --image, podman's options between IMAGE and `--`), then CMD. */
static int args_parse(int argc, char **argv, struct run_opts *o)
{
	int i = 1;

	memset(o, 0, sizeof(*o));
	o->podman = "podman";
	for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
		const char *opt = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(opt, "-h") == 0 || strcmp(opt, "--help") == 0) {
			cli_usage(stdout, "run");
			return 1;
		}
		if (strcmp(opt, "--image") == 0 && val != NULL) {
			o->image = val;
			o->podman_opts = argv + i + 2;
			for (i += 2; i < argc && strcmp(argv[i], "--") != 0; i++)
				o->npodman_opts++;
			break;
		}
		if (val == NULL)
			return usage_error("option needs a value, or CMD is missing its `--`", opt);
		if (strcmp(opt, "--project") == 0) {
			if (!ports_name_valid(val))
				return usage_error("--project NAME: [A-Za-z0-9._-], at most 40 bytes, not",
						   val);
			o->project = val;
		} else if (strcmp(opt, "--name") == 0) {
			if (!ports_name_valid(val))
				return usage_error("--name AGENT: [A-Za-z0-9._-], at most 40 bytes, not",
						   val);
			o->name = val;
		} else if (strcmp(opt, "--allow") == 0) {
			if (o->nallow == RUN_GRANTS_MAX)
				return usage_error("too many --allow", NULL);
			o->allow[o->nallow++] = val;
		} else if (strcmp(opt, "--user") == 0) {
			o->user = val;
		} else if (strcmp(opt, "--env") == 0) {
			if (o->nenv == RUN_ENV_MAX / 2)
				return usage_error("too many --env", NULL);
			o->env[o->nenv++] = val;
		} else if (strcmp(opt, "--podman") == 0) {
			o->podman = val;
		} else if (strcmp(opt, "--agent") == 0) {
			if (!ports_name_valid(val))
				return usage_error("--agent PROFILE: [A-Za-z0-9._-], at most 40 bytes, not",
						   val);
			o->agent = val;
		} else {
			return usage_error("unknown option", opt);
		}
		i++;
	}
	if (i >= argc || i + 1 >= argc)
		return usage_error("no CMD: sluice run [OPTIONS] -- CMD [ARGS...]", NULL);
	o->cmd = argv + i + 1;
	return 0;
}

/* The sandbox user: --user, else sluice-sandbox, made when missing. Returns 0 or -1. */
static int user_resolve(struct run *x)
{
	const char *name = x->o.user != NULL ? x->o.user : SANDBOX_USER;
	struct passwd *pw = getpwnam(name);

	if (pw == NULL && x->o.user == NULL) {
		char *argv[] = { "useradd", "--system", "--user-group", "--create-home",
				 "--home-dir", SANDBOX_HOME, "--shell", "/usr/sbin/nologin",
				 SANDBOX_USER, NULL };

		if (run_tool(argv, -1, 30000) != 0) {
			fprintf(stderr, "run: could not create the sandbox user %s\n", SANDBOX_USER);
			return -1;
		}
		fprintf(stderr, "run: created the sandbox user %s\n", SANDBOX_USER);
		pw = getpwnam(name);
	}
	if (pw == NULL) {
		fprintf(stderr, "run: no user %s\n", name);
		return -1;
	}
	if (pw->pw_uid == 0) {
		fprintf(stderr, "run: the sandbox user may not be root\n");
		return -1;
	}
	snprintf(x->user.name, sizeof(x->user.name), "%s", pw->pw_name);
	snprintf(x->user.home, sizeof(x->user.home), "%s", pw->pw_dir);
	x->user.uid = pw->pw_uid;
	x->user.gid = pw->pw_gid;
	return 0;
}

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

/* `sluice [-c CONF] ARGS...` with argv built here: the CLI's own verbs as tools. */
static int self_tool(struct run *x, const char *const *args, size_t n, int log_fd)
{
	char *argv[32];
	size_t k = 0;

	argv[k++] = x->self;
	if (x->conf[0] != '\0') {
		argv[k++] = "-c";
		argv[k++] = x->conf;
	}
	for (size_t i = 0; i < n && k < 31; i++)
		argv[k++] = (char *)args[i];
	argv[k] = NULL;
	return run_tool(argv, log_fd, 30000);
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

/*
 * Who the run is, to the proxy. Its principal outlives it: every
 * connection its forwarder stamps says as=project:NAME (sluice-forward
 * --as), or with --name AGENT project:NAME/AGENT, so grants, budgets and
 * connection caps are the project's (the agent's), shared by its runs
 * and kept for the next (`allow approve` of its refusal grants to it).
 * NAME is --project's, else the current directory's (ports_name_of: its
 * basename and a hash of its path; the registry keeps the path). Each
 * stamp also names one source (sluice-forward --src), whatever address
 * CMD binds, on the run's own network sluice-ID (the row's who, and its
 * "sandbox"): without --image 127.0.0.1; with it, the container's own
 * address, which it is given (--ip: the one after the gateway, gw on the
 * bridge), so `sluice log` names the container from the engine's
 * snapshot. The one place the run's principal is chosen. Returns 0, or
 * -1 after printing.
 */
static int run_principal(struct run *x, const struct sockaddr_storage *gw)
{
	char name[PORTS_NAME_MAX + 1], cwd[PATH_MAX];
	struct in_addr a;

	if (gw == NULL) {
		if (x->o.project != NULL) {
			snprintf(name, sizeof(name), "%s", x->o.project);
		} else if (realpath(".", cwd) != NULL) {
			ports_name_of(cwd, strlen(cwd), name);
		} else {
			fprintf(stderr, "run: the current directory: %s; use --project NAME\n",
				strerror(errno));
			return -1;
		}
		snprintf(x->principal_as, sizeof(x->principal_as), "project:%s%s%s", name,
			 x->o.name != NULL ? "/" : "", x->o.name != NULL ? x->o.name : "");
		snprintf(x->principal_src, sizeof(x->principal_src), "127.0.0.1");
		return 0;
	}
	a.s_addr = htonl(ntohl(((const struct sockaddr_in *)(const void *)gw)->sin_addr.s_addr) + 1);
	if (inet_ntop(AF_INET, &a, x->principal_src, sizeof(x->principal_src)) == NULL) {
		fprintf(stderr, "run: podman network %s: no address after its gateway\n", x->r.name);
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
	if (self_tool(x, sandbox, x->o.image != NULL ? 15 : 13, x->log_fd) != 0 ||
	    self_tool(x, guard, 9, x->log_fd) != 0) {
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

/*
 * Wait for CMD (pid). A SIGINT/SIGTERM/SIGHUP sent to us is passed on (one
 * from the terminal reached CMD already); STOP_GRACE_MS later CMD is killed.
 * Returns CMD's exit status.
 */
static int cmd_wait(pid_t pid)
{
	sigset_t set;
	long stop_at = 0, now_ms;
	int st;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	for (;;) {
		struct timespec ts = { 0, 50000000 }, now;
		siginfo_t si;
		pid_t w = waitpid(pid, &st, WNOHANG);

		if (w == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		if (w == -1 && errno != EINTR)
			return EXIT_RUN_FAILED;
		clock_gettime(CLOCK_MONOTONIC, &now);
		now_ms = now.tv_sec * 1000L + now.tv_nsec / 1000000L;
		if (stop_at != 0 && now_ms >= stop_at)
			kill(pid, SIGKILL);
		if (sigtimedwait(&set, &si, &ts) > 0) {
			if (si.si_code == SI_USER || si.si_code == SI_QUEUE || si.si_code == SI_TKILL)
				kill(pid, si.si_signo);
			if (stop_at == 0)
				stop_at = now_ms + STOP_GRACE_MS;
		}
	}
}

/* run_reaper for the run's container: `podman ... rm -f -t 0 NAME`. */
static int container_reaper(struct run *x)
{
	char words[RUN_PODMAN_MAX], *argv[PODMAN_ARGS_MAX + 8];
	size_t n = run_podman_argv(x, words, sizeof(words), argv, PODMAN_ARGS_MAX);

	argv[n] = "rm", argv[n + 1] = "-f", argv[n + 2] = "-t", argv[n + 3] = "0";
	argv[n + 4] = x->r.container, argv[n + 5] = NULL;
	return run_reaper(argv);
}

static int cmd_start(struct run *x)
{
	char *env[RUN_ENV_MAX + 1], words[RUN_PODMAN_MAX], *pargv[PODMAN_ARGS_MAX + 3 * RUN_ENV_MAX + 64];
	char cwd[PATH_MAX], pub[PATH_MAX + 8], home[PATH_MAX + 8];
	struct stat st;
	struct run_exec e = { .netns = x->netns, .pub_dir = pub, .close_fd = x->lock_fd };
	struct run_proc *p;
	int code;

	snprintf(pub, sizeof(pub), "%s/pub", x->dir);
	if (run_env_build(x, x->o.image != NULL ? "/etc/sluice" : "/run/sluice", x->o.image != NULL,
		      env) == -1) {
		fprintf(stderr, "run: the environment is too large\n");
		run_env_free(env);
		return EXIT_RUN_FAILED;
	}
	if (x->o.image != NULL) {
		e.argv = run_image_argv(x, env, words, sizeof(words), pargv,
				    sizeof(pargv) / sizeof(pargv[0]) - 1);
		snprintf(x->r.container, sizeof(x->r.container), "%s", x->r.name);
		if (e.argv != NULL && (x->reaper_fd = container_reaper(x)) == -1)
			e.argv = NULL;
	} else {
		e.argv = x->o.cmd;
		e.envp = env;
		e.user = &x->user;
		e.cwd = getcwd(cwd, sizeof(cwd));
		if (e.cwd != NULL) {
			/* not a directory the user could not reach: as root, it would */
			int access = run_cwd_access(&x->user, e.cwd);

			e.cwd_writable = access == 1;
			if (access == -1)
				e.cwd = NULL;
		}
		/* ours: a home of the project's, not the user's shared one; --user's own */
		if (x->o.user == NULL) {
			if (run_home_make(x, home, sizeof(home)) == -1)
				e.argv = NULL;
			e.home_dir = home;
		} else if (stat(x->user.home, &st) == 0 && S_ISDIR(st.st_mode) &&
			   strcmp(x->user.home, "/") != 0) {
			e.home_dir = x->user.home;
		}
	}
	if (e.argv == NULL || run_record_save(x->c, &x->r) == -1) {
		run_env_free(env);
		return EXIT_RUN_FAILED;
	}
	p = &x->r.procs[x->r.nprocs];
	/* CMD (its init, or podman) is started with the operator's stdout, and only it */
	fflush(stdout);
	if (dup2(x->out_fd, STDOUT_FILENO) == -1) {
		fprintf(stderr, "run: dup2: %s\n", strerror(errno));
		run_env_free(env);
		return EXIT_RUN_FAILED;
	}
	p->pid = run_exec_start(&e);
	fflush(stdout);
	dup2(STDERR_FILENO, STDOUT_FILENO);
	if (p->pid == -1) {
		run_env_free(env);
		return EXIT_RUN_FAILED;
	}
	p->start = run_proc_start(p->pid);
	snprintf(p->what, sizeof(p->what), "cmd");
	x->r.nprocs++;
	run_record_save(x->c, &x->r);
	code = cmd_wait(p->pid);
	run_env_free(env);
	return code;
}

/* The steps before CMD, in order. Returns 0, EXIT_UNVERIFIED, 128+signal or EXIT_RUN_FAILED. */
static int sandbox_up(struct run *x)
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

/* STATE's CA and stamp key, made when missing (as `make run` would). */
static int state_ready(struct run *x)
{
	static const char *const ca[] = { "ca", "init" }, *const key[] = { "key", "init" };
	char path[PATH_MAX + 16];
	struct stat st;

	snprintf(path, sizeof(path), "%s/ca.crt", x->c->state_dir);
	if (x->c->intercept && stat(path, &st) == -1 && self_tool(x, ca, 2, -1) != 0)
		return -1;
	snprintf(path, sizeof(path), "%s/stamp.key", x->c->state_dir);
	if (stat(path, &st) == -1 && self_tool(x, key, 2, -1) != 0)
		return -1;
	return 0;
}

static int paths_init(struct run *x)
{
	const char *conf = cli_config_path();
	ssize_t n = readlink("/proc/self/exe", x->self, sizeof(x->self) - 1);
	char *slash;

	if (n <= 0) {
		fprintf(stderr, "run: /proc/self/exe: %s\n", strerror(errno));
		return -1;
	}
	x->self[n] = '\0';
	snprintf(x->bindir, sizeof(x->bindir), "%s", x->self);
	slash = strrchr(x->bindir, '/');
	if (slash != NULL)
		*slash = '\0';
	if (conf != NULL && realpath(conf, x->conf) == NULL) {
		fprintf(stderr, "run: %s: %s\n", conf, strerror(errno));
		return -1;
	}
	return 0;
}

static int record_new(struct run *x)
{
	unsigned char raw[RUN_ID_LEN / 2];
	char path[PATH_MAX + 16];

	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		return -1;
	hex_encode(raw, sizeof(raw), x->r.id);
	snprintf(x->r.name, sizeof(x->r.name), "sluice-%s", x->r.id);
	snprintf(x->netns, sizeof(x->netns), "/run/netns/%s", x->r.name);
	snprintf(x->r.podman, sizeof(x->r.podman), "%s", x->o.podman);
	x->r.supervisor = getpid();
	if (run_dir(x->c, x->r.id, x->dir, sizeof(x->dir)) == -1)
		return -1;
	x->lock_fd = run_record_begin(x->c, &x->r);
	if (x->lock_fd == -1 || run_record_save(x->c, &x->r) == -1)
		return -1;
	snprintf(path, sizeof(path), "%s/daemons.log", x->dir);
	x->log_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (x->log_fd == -1) {
		fprintf(stderr, "run: %s: %s\n", path, strerror(errno));
		return -1;
	}
	return run_pub_make(x);
}

const char *run_scope_word(const struct run *x, char *buf, size_t size)
{
	snprintf(buf, size, "%s", x->principal_as);
	return buf;
}

int cmd_run(int argc, char **argv)
{
	struct run x = { .lock_fd = -1, .log_fd = -1, .users_fd = -1, .reaper_fd = -1,
			 .out_fd = -1 };
	sigset_t set;
	int rc, code;

	rc = args_parse(argc, argv, &x.o);
	if (rc != 0)
		return rc == 1 ? EXIT_OK : rc;
	if (geteuid() != 0) {
		fprintf(stderr, "run: needs root (it makes a network namespace and loads walls)\n");
		return EXIT_RUN_FAILED;
	}
	/* from here on nothing of ours, nor of a tool's we start, reaches CMD's stdout */
	x.out_fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
	if (x.out_fd == -1 || dup2(STDERR_FILENO, STDOUT_FILENO) == -1) {
		fprintf(stderr, "run: stdout: %s\n", strerror(errno));
		return EXIT_RUN_FAILED;
	}
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, NULL);
	x.c = cli_config_load();
	if (x.c == NULL)
		return EXIT_RUN_FAILED;
	code = EXIT_RUN_FAILED;
	if (x.o.agent != NULL) {
		if (x.o.name == NULL) /* the run is the agent's: project:NAME/PROFILE */
			x.o.name = x.o.agent;
		x.agent = agent_load(x.o.agent, x.agent_path, sizeof(x.agent_path));
		if (x.agent == NULL)
			goto out;
		/* the profile's sandbox-env after --env: an operator's own value wins */
		for (size_t i = 0; i < x.agent->nagent_env && x.o.nenv < RUN_ENV_MAX / 2; i++)
			x.o.env[x.o.nenv++] = x.agent->agent_env[i];
	}
	if (paths_init(&x) == -1 || ports_band_of(x.o.project, true, &x.r.base) == -1)
		goto out;
	x.fwd_port = x.r.base + RUN_FWD_OFF;
	snprintf(x.gateway, sizeof(x.gateway), "127.0.0.1");
	if (run_principal(&x, NULL) == -1)
		goto out;
	/*
	 * A dead run that cannot be taken down (each thing named above) keeps
	 * its record for `sluice doctor --clean` or a later try; it is no reason
	 * to refuse this run, which shares nothing with it.
	 */
	if (run_clean_stale(x.c) == -1)
		fprintf(stderr, "run: going on; `sluice doctor --clean` tries again\n");
	x.users_fd = run_users_join(x.c);
	if (x.users_fd == -1 || user_resolve(&x) == -1 || state_ready(&x) == -1 ||
	    record_new(&x) == -1)
		goto out_down;
	code = sandbox_up(&x);
	if (code == 0)
		code = cmd_start(&x);
	/* before the teardown, which may stop the proxy the run started */
	run_note_end(&x, code);
out_down:
	if (x.r.id[0] != '\0' && run_teardown(x.c, &x.r, x.users_fd) == -1) {
		fprintf(stderr, "run: %s was not fully taken down; `sluice doctor --clean` or the next "
				"run retries\n", x.r.name);
		if (code == 0)
			code = EXIT_RUN_FAILED;
	} else if (x.r.id[0] != '\0') {
		/*
		 * A run killed while we ran, whose daemons we may have used: the
		 * last run out takes it down too (its daemons were never handed
		 * over), not only the next run to start.
		 */
		run_clean_stale(x.c);
	}
	if (x.reaper_fd != -1) {
		(void)!write(x.reaper_fd, "x", 1);
		close(x.reaper_fd);
	}
out:
	if (x.log_fd != -1)
		close(x.log_fd);
	if (x.lock_fd != -1)
		close(x.lock_fd);
	if (x.users_fd != -1)
		close(x.users_fd);
	fflush(stdout);
	close(x.out_fd);
	config_free(x.agent);
	config_free(x.c);
	return code;
}
