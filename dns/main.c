/*
 * main.c: sluice-dns, the sandbox's only resolver.
 *
 * Reads like a script: arguments, config (the same file as the proxy's),
 * the DNS log, the loop, listeners, upstreams, cache, policy (as root, when
 * started so), then the drop to `user`, signals, then the loop. Runs in
 * the foreground; stops on SIGINT or SIGTERM; SIGHUP re-reads the config
 * and the grant store (judge.c, which also checks them each second).
 * Under systemd (Type=notify) it tells the manager READY=1 once its
 * listeners are open and it runs as `user`, and STOPPING=1 on the way out;
 * without NOTIFY_SOCKET sd_notify does nothing.
 */
#include "dns.h"

#include <errno.h>
#include <openssl/ssl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "file.h"
#include "metrics.h"
#include "priv.h"
#include "runfile.h"
#include "signals.h"

static void usage(void)
{
	fprintf(stderr, "usage: sluice-dns [-c FILE]\n"
			"       sluice-dns -t [-c FILE]\n"
			"  -c FILE  configuration (default etc/sluice.conf)\n"
			"  -t       check the configuration and exit\n"
			"exit: 0 stopped by a signal, 1 could not start, 2 usage\n");
}

static void on_signal(struct loop *l, struct loop_io *io, uint32_t events)
{
	struct dnsd *d = io->arg;
	struct signalfd_siginfo si;

	while (read(io->fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGHUP) {
			judge_reload(d, "SIGHUP");
		} else {
			fprintf(stderr, "sluice-dns: stopping on signal %u\n", si.ssi_signo);
			loop_stop(l);
		}
	}
}

static void raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* As `user`, what it reads and writes from now on. Returns 0 or -1 after printing. */
static int drop(struct dnsd *d)
{
	const char *user = d->config->user;
	char dir[PATH_MAX], *slash;
	uid_t uid;
	gid_t gid;

	if (user[0] == '\0' || geteuid() != 0)
		return 0;
	if (priv_lookup("sluice-dns", user, &uid, &gid) == -1 ||
	    priv_switch("sluice-dns", user, uid, gid) == -1)
		return -1;
	snprintf(dir, sizeof(dir), "%s", d->config->dns_log_path);
	slash = strrchr(dir, '/');
	if (slash != NULL)
		*slash = '\0';
	if (access(d->config_path, R_OK) == -1 ||
	    (access(d->watch_store.path, R_OK) == -1 && errno != ENOENT) ||
	    access(slash != NULL ? dir : ".", W_OK | X_OK) == -1) {
		fprintf(stderr, "sluice-dns: user %s cannot read the config %s or the grant store "
				"%s, or write the dns-log's directory %s: %s\n", user, d->config_path,
			d->watch_store.path, slash != NULL ? dir : ".", strerror(errno));
		return -1;
	}
	if (access(d->watch_keys.path, R_OK) == -1 && errno != ENOENT) {
		fprintf(stderr, "sluice-dns: user %s cannot read the stamp keys %s (asker tags are "
				"verified with them, re-read as %s): %s; make them readable by its "
				"group (root:GROUP 0640)\n", user, d->watch_keys.path, user,
			strerror(errno));
		return -1;
	}
	if (access(d->config->state_dir, W_OK) == 0) {
		fprintf(stderr, "sluice-dns: user %s can write the state directory %s: what runs as "
				"%s could plant links there that root follows; keep it root:GROUP 0750 "
				"and put the dns-log in its own directory owned by %s\n",
			user, d->config->state_dir, user, user);
		return -1;
	}
	fprintf(stderr, "sluice-dns: running as %s (uid %u gid %u), no capabilities\n", user,
		(unsigned)uid, (unsigned)gid);
	return 0;
}

/*
 * STATE/dns.run (lib/runfile.h): our pid and listeners, share-locked while
 * we run, written once they answer. Returns 0 or -1 after printing.
 */
static int write_run(struct dnsd *d)
{
	struct runfile rf = { .pid = getpid() };

	for (size_t i = 0; i < d->config->ndns_listen && i < RUNFILE_LISTEN_MAX; i++)
		rf.listen[rf.nlisten++] = d->config->dns_listen[i];
	d->run_fd = runfile_write(d->config->state_dir, "dns.run", &rf);
	if (d->run_fd == -1) {
		fprintf(stderr, "sluice-dns: %s/dns.run: %s\n", d->config->state_dir,
			strerror(errno));
		return -1;
	}
	return 0;
}

/* -c FILE into *config_path, -t into *check_only. Returns 0, or 2 after the usage. */
static int args_parse(int argc, char **argv, const char **config_path, bool *check_only)
{
	int opt;

	while ((opt = getopt(argc, argv, "c:th")) != -1) {
		switch (opt) {
		case 'c':
			*config_path = optarg;
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

/* STATE made, and the DNS log opened for the config's user to own. Returns 0 or -1 after printing. */
static int log_open(struct dnsd *d)
{
	const char *why = NULL;
	uid_t log_owner = FILE_NO_UID;
	gid_t gid;

	if (mkdir(d->config->state_dir, 0700) == -1 && errno != EEXIST) {
		fprintf(stderr, "sluice-dns: state %s: %s\n", d->config->state_dir, strerror(errno));
		return -1;
	}
	if (d->config->user[0] != '\0' &&
	    priv_lookup("sluice-dns", d->config->user, &log_owner, &gid) == -1)
		return -1;
	d->log = netlog_open(d->config->dns_log_path, d->config->log_rotate_bytes,
			     d->config->log_keep, d->config->log_chain, log_owner, &why);
	if (d->log == NULL) {
		fprintf(stderr, "sluice-dns: dns-log %s: %s\n", d->config->dns_log_path,
			why != NULL ? why : strerror(errno));
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct dnsd d;
	const char *config_path = "etc/sluice.conf";
	bool check_only = false;
	int ret = 1, sfd;

	/* a reload asked while we start (sluice run's hand-over) waits for the loop, not kills us */
	if (signals_block() == -1) {
		perror("sluice-dns: sigprocmask");
		return 1;
	}
	memset(&d, 0, sizeof(d));
	d.sig_io.fd = -1;
	d.run_fd = -1;
	if (args_parse(argc, argv, &config_path, &check_only) != 0)
		return 2;
	d.config = config_new();
	if (d.config == NULL || config_load(d.config, config_path, stderr) != 0) {
		fprintf(stderr, "sluice-dns: %s: not started\n", config_path);
		goto out;
	}
	snprintf(d.config_path, sizeof(d.config_path), "%s", config_path);
	if (check_only) {
		ret = 0;
		goto out;
	}
	if (log_open(&d) == -1)
		goto out;
	raise_fd_limit(); /* TCP clients and lookups in flight each hold one */
	d.loop = loop_new();
	if (d.loop == NULL || cache_init(&d) == -1)
		goto out_loop;
	for (size_t i = 0; i < d.config->ndns_listen; i++)
		if (client_listen(&d, &d.config->dns_listen[i]) == -1)
			goto out_loop;
	if (row_init(&d) == -1) /* bound as root, like the listeners */
		goto out_loop;
	if (upstream_init(&d) == -1 || judge_init(&d) == -1 || write_run(&d) == -1)
		goto out_judge;
	if (drop(&d) == -1)
		goto out_run;
	sfd = signals_open();
	if (sfd == -1 || loop_io_add(d.loop, &d.sig_io, sfd, EPOLLIN, on_signal, &d) == -1) {
		fprintf(stderr, "sluice-dns: signals: %s\n", strerror(errno));
		goto out_run;
	}
	fprintf(stderr, "sluice-dns: running: mode %s, %zu grants, %zu upstreams, state %s, "
			"dns-log %s\n",
		policy_mode_name(d.policy, time(NULL)), d.policy->ngrants,
		d.nupstreams, d.config->state_dir, d.config->dns_log_path);
	sd_notify(0, "READY=1"); /* listening, dropped: what a unit after this one may rely on */

	ret = loop_run(d.loop) == 0 ? 0 : 1;
	sd_notify(0, "STOPPING=1");

	loop_io_close(d.loop, &d.sig_io);
out_run:
	runfile_remove(d.config->state_dir, "dns.run", d.run_fd);
out_judge:
	judge_release(&d);
out_loop:
	if (d.loop != NULL) {
		metrics_server_free(d.metrics);
		cache_release(&d);
		client_release(&d);
		upstream_release(&d);
	}
	loop_free(d.loop);
	netlog_close(d.log);
out:
	config_free(d.config);
	return ret;
}
