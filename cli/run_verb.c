/*
 * run_verb.c: `sluice run`: one command puts CMD, or a container, behind sluice.
 *
 * Reads like a script, each step recorded before it is taken (run.h):
 * the project's band, stale runs cleaned, the sandbox user, then the
 * sandbox brought up (run_up.c: the project's proxy and sluice-dns, found
 * by their run files, else started for this run; session grants for
 * --allow; the namespace, for --image a podman network in it; the sandbox
 * and guard walls inside; the forwarder, listeners inside, upstreams here:
 * the proxy and sluice-dns; then `sluice verify` inside as the sandbox
 * user): CMD starts only if the walls hold and the forwarder serves (else
 * exit 3). Then CMD, with the proxy variables and the CA's and nothing
 * else of ours; its status is ours. On its end, or SIGINT/SIGTERM,
 * everything recorded is taken down.
 *
 * CMD's stdout is CMD's alone: from the start, this process's stdout
 * (and so every tool's it starts: key and CA creation, useradd, podman,
 * the walls) is its stderr; CMD is started with the stdout we were given.
 *
 * Exit: CMD's status; 3 the sandbox did not verify; 125 sluice run itself
 * failed before CMD; 2 usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hex.h"
#include "ports.h"
#include "run.h"

#define SANDBOX_USER "sluice-sandbox"
#define SANDBOX_HOME "/var/lib/sluice-sandbox"
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

/* STATE's CA and stamp key, made when missing (as `make run` would). */
static int state_ready(struct run *x)
{
	static const char *const ca[] = { "ca", "init" }, *const key[] = { "key", "init" };
	char path[PATH_MAX + 16];
	struct stat st;

	snprintf(path, sizeof(path), "%s/ca.crt", x->c->state_dir);
	if (x->c->intercept && stat(path, &st) == -1 && run_self_tool(x, ca, 2, -1) != 0)
		return -1;
	snprintf(path, sizeof(path), "%s/stamp.key", x->c->state_dir);
	if (stat(path, &st) == -1 && run_self_tool(x, key, 2, -1) != 0)
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
	code = run_up(&x);
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
