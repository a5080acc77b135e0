/*
 * run_record.c: what a `sluice run` made, in STATE/runs/ID/record, and
 * taking it down (run.h).
 *
 * The record is written before each thing is made and rewritten after, so
 * a run killed at any point leaves a record naming at least what exists.
 * The supervisor holds STATE/runs/ID/lock for its life; a run whose lock is
 * free is gone, and whoever takes the lock takes the run down. The record
 * is root's (STATE is root's 0700): it is trusted like the config, and a
 * line this file did not write stops the reading.
 *
 *   sluice-run v1
 *   id ID
 *   supervisor PID
 *   base N
 *   podman WORDS...
 *   netns 0|1
 *   walls 0|1
 *   proc PID START WHAT     (each process started)
 *   grant RUNID PATTERN     (each session grant added)
 *   network NAME
 *   container NAME
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "digits.h"
#include "file.h"
#include "run.h"

#define RECORD_MAX 16384

int run_dir(const struct config *c, const char *id, char *buf, size_t size)
{
	int n = snprintf(buf, size, "%s/runs/%s", c->state_dir, id);

	if (n < 0 || (size_t)n >= size) {
		fprintf(stderr, "run: %s: path too long\n", c->state_dir);
		return -1;
	}
	return 0;
}

static int run_path(const struct config *c, const char *id, const char *file, char *buf,
		    size_t size)
{
	char dir[PATH_MAX];
	int n;

	if (run_dir(c, id, dir, sizeof(dir)) == -1)
		return -1;
	n = snprintf(buf, size, "%s/%s", dir, file);
	if (n < 0 || (size_t)n >= size) {
		fprintf(stderr, "run: %s: path too long\n", dir);
		return -1;
	}
	return 0;
}

int run_record_begin(const struct config *c, const struct run_record *r)
{
	char dir[PATH_MAX], lock[PATH_MAX];
	int fd;

	if (run_dir(c, r->id, dir, sizeof(dir)) == -1 ||
	    run_path(c, r->id, "lock", lock, sizeof(lock)) == -1)
		return -1;
	if (file_mkdir_p(dir, 0700) == -1) {
		fprintf(stderr, "run: mkdir %s: ", dir);
		cli_put_strerror(stderr, errno);
		fputc('\n', stderr);
		return -1;
	}
	fd = cli_open_state("run", lock, O_RDWR | O_CREAT, 0600);
	if (fd == -1)
		return -1;
	/* waits: a starting run's clean_stale may hold it a moment (and lets go: no record) */
	if (flock(fd, LOCK_EX) == -1) {
		fprintf(stderr, "run: %s: ", lock);
		cli_put_strerror(stderr, errno);
		fputc('\n', stderr);
		close(fd);
		return -1;
	}
	return fd;
}

/* r in the record's format; id and supervisor only when r has them (STATE/runs/.shared has not). */
static int record_write(FILE *f, const struct run_record *r)
{
	fputs("sluice-run v1\n", f);
	if (r->id[0] != '\0')
		fprintf(f, "id %s\n", r->id);
	if (r->supervisor > 0)
		fprintf(f, "supervisor %d\n", (int)r->supervisor);
	fprintf(f, "base %u\npodman %s\nnetns %d\nwalls %d\n", r->base,
		r->podman[0] != '\0' ? r->podman : "-", r->netns, r->walls);
	for (size_t i = 0; i < r->nprocs; i++)
		fprintf(f, "proc %d %llu %s\n", (int)r->procs[i].pid, r->procs[i].start,
			r->procs[i].what);
	for (size_t i = 0; i < r->ngrants; i++)
		fprintf(f, "grant %s %s\n", r->grants[i].run, r->grants[i].pattern);
	if (r->network[0] != '\0')
		fprintf(f, "network %s\n", r->network);
	if (r->container[0] != '\0')
		fprintf(f, "container %s\n", r->container);
	return fflush(f) == EOF ? -1 : 0;
}

int run_record_save(const struct config *c, const struct run_record *r)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	FILE *f;
	int fd;

	if (run_path(c, r->id, "record", path, sizeof(path)) == -1 ||
	    run_path(c, r->id, ".record.tmp", tmp, sizeof(tmp)) == -1)
		return -1;
	unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	f = fd == -1 ? NULL : fdopen(fd, "w");
	if (f == NULL) {
		fprintf(stderr, "run: create %s: ", tmp);
		cli_put_strerror(stderr, errno);
		fputc('\n', stderr);
		if (fd != -1)
			close(fd);
		return -1;
	}
	if (record_write(f, r) == -1 || fclose(f) == EOF || rename(tmp, path) == -1) {
		fprintf(stderr, "run: write %s: ", path);
		cli_put_strerror(stderr, errno);
		fputc('\n', stderr);
		unlink(tmp);
		return -1;
	}
	return 0;
}

pid_t run_spawn(const struct config *c, struct run_record *r, const char *what,
		char *const argv[], bool detach, int log_fd)
{
	struct run_proc *p;
	pid_t pid;
	int gate;

	if (r->nprocs == RUN_PROCS_MAX) {
		fprintf(stderr, "run: too many processes\n");
		return -1;
	}
	pid = run_proc_gated(argv, detach, log_fd, &gate);
	if (pid == -1)
		return -1;
	p = &r->procs[r->nprocs++];
	p->pid = pid;
	p->start = run_proc_start(pid);
	snprintf(p->what, sizeof(p->what), "%s", what);
	/* recorded before it runs: killed in between, we leave it nothing to outlive us by */
	if (run_record_save(c, r) == -1 || write(gate, "x", 1) != 1) {
		close(gate);
		return -1;
	}
	close(gate);
	return pid;
}

/* One line of the record into r. Returns 0, or -1 for a line this file does not write. */
static int record_line(char *line, struct run_record *r)
{
	char *val = strchr(line, ' ');
	uint64_t v;

	if (val == NULL)
		return -1;
	*val++ = '\0';
	if (strcmp(line, "id") == 0)
		return snprintf(r->id, sizeof(r->id), "%s", val) == RUN_ID_LEN ? 0 : -1;
	if (strcmp(line, "supervisor") == 0)
		return digits_text(val, 10, 1, INT_MAX, &v) == 0 ? (r->supervisor = (pid_t)v, 0) : -1;
	if (strcmp(line, "base") == 0)
		return digits_text(val, 10, 0, UINT_MAX, &v) == 0 ? (r->base = (unsigned)v, 0) : -1;
	if (strcmp(line, "podman") == 0)
		return strcmp(val, "-") == 0 ? 0 : (snprintf(r->podman, sizeof(r->podman), "%s", val), 0);
	if (strcmp(line, "netns") == 0)
		return (r->netns = strcmp(val, "1") == 0, 0);
	if (strcmp(line, "walls") == 0)
		return (r->walls = strcmp(val, "1") == 0, 0);
	if (strcmp(line, "proc") == 0 && r->nprocs < RUN_PROCS_MAX) {
		struct run_proc *p = &r->procs[r->nprocs];
		char *start = strchr(val, ' '), *what = start != NULL ? strchr(start + 1, ' ') : NULL;
		uint64_t st;

		/* "PID START WHAT", as record_write spells it */
		if (what == NULL || dec_parse(val, (size_t)(start - val), INT_MAX, &v) == -1 ||
		    v == 0 || dec_parse(start + 1, (size_t)(what - start - 1), ULLONG_MAX, &st) == -1 ||
		    what[1] == '\0' || strlen(what + 1) >= sizeof(p->what) || strchr(what + 1, ' ') != NULL)
			return -1;
		p->pid = (pid_t)v;
		p->start = st;
		snprintf(p->what, sizeof(p->what), "%s", what + 1);
		r->nprocs++;
		return 0;
	}
	if (strcmp(line, "grant") == 0 && r->ngrants < RUN_GRANTS_MAX) {
		struct run_grant *g = &r->grants[r->ngrants];
		char *pat = strchr(val, ' ');

		if (pat == NULL || pat - val != GRANT_RUN_ID_LEN)
			return -1;
		memcpy(g->run, val, GRANT_RUN_ID_LEN);
		snprintf(g->pattern, sizeof(g->pattern), "%s", pat + 1);
		r->ngrants++;
		return 0;
	}
	if (strcmp(line, "network") == 0)
		return (snprintf(r->network, sizeof(r->network), "%s", val), 0);
	if (strcmp(line, "container") == 0)
		return (snprintf(r->container, sizeof(r->container), "%s", val), 0);
	return -1;
}

static int record_load(const char *path, struct run_record *r, bool need_id)
{
	char *buf, *line, *save = NULL;
	size_t len;
	int ret = 0;

	memset(r, 0, sizeof(*r));
	if (file_read(path, RECORD_MAX, &buf, &len) == -1)
		return -1;
	line = strtok_r(buf, "\n", &save);
	if (line == NULL || strcmp(line, "sluice-run v1") != 0)
		ret = -1;
	while (ret == 0 && (line = strtok_r(NULL, "\n", &save)) != NULL)
		ret = record_line(line, r);
	free(buf);
	if (ret == 0 && need_id && r->id[0] == '\0')
		ret = -1;
	if (ret == 0)
		snprintf(r->name, sizeof(r->name), "sluice-%s", r->id);
	return ret;
}

/* The engine's command words and then args, run to the end (30 s at most). */
static int podman_do(const struct run_record *r, const char *const *args, size_t nargs)
{
	char words[RUN_PODMAN_MAX], *argv[PODMAN_ARGS_MAX + 8], *save = NULL;
	size_t n = 0;

	snprintf(words, sizeof(words), "%s", r->podman[0] != '\0' ? r->podman : "podman");
	for (char *w = strtok_r(words, " \t", &save); w != NULL && n < PODMAN_ARGS_MAX;
	     w = strtok_r(NULL, " \t", &save))
		argv[n++] = w;
	for (size_t i = 0; i < nargs && n < PODMAN_ARGS_MAX + 7; i++)
		argv[n++] = (char *)args[i];
	argv[n] = NULL;
	return run_tool(argv, -1, 30000);
}

/* The walls' STATE files for this run's namespace (cli/wall.c's state_path). */
static void walls_forget(const struct config *c, const struct run_record *r)
{
	static const char *const profiles[] = { "sandbox", "guard" };
	static const char *const exts[] = { "nft", "live" };
	char path[PATH_MAX];

	for (size_t i = 0; i < 2; i++)
		for (size_t j = 0; j < 2; j++) {
			snprintf(path, sizeof(path), "%s/wall-sluice_%s_%u@_run_netns_%s.%s",
				 c->state_dir, profiles[i], r->base, r->name, exts[j]);
			unlink(path);
		}
}

static int netns_remove(const struct run_record *r)
{
	char *argv[] = { "ip", "netns", "delete", (char *)r->name, NULL };
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/run/netns/%s", r->name);
	if (stat(path, &st) == -1 && errno == ENOENT)
		return 0;
	if (run_tool(argv, -1, 10000) == 0)
		return 0;
	fprintf(stderr, "run: %s: could not remove the namespace\n", path);
	return -1;
}

/* rm -r of the run's directory: files only, one level down (pub/). */
static void dir_remove(const char *dir)
{
	char path[PATH_MAX];
	struct dirent *e;
	DIR *d = opendir(dir);

	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (unlink(path) == -1 && errno == EISDIR)
			dir_remove(path);
	}
	closedir(d);
	rmdir(dir);
}

/* Drop s's grants. Returns 0, or -1 when one could not be dropped (said). */
static int grants_drop(const struct config *c, const struct run_record *s)
{
	int ret = 0;

	for (size_t i = 0; i < s->ngrants; i++)
		if (allow_session_drop(c, s->grants[i].pattern, s->grants[i].run) == -1)
			ret = -1;
	return ret;
}

/* A daemon the run started: the project's, which another run may be using. */
static bool proc_shared(const struct run_proc *p)
{
	return strcmp(p->what, "proxy") == 0 || strcmp(p->what, "dns") == 0;
}

/* Stop s's daemons. Returns 0, or -1 when one would not stop (said). */
static int daemons_stop(const struct run_record *s)
{
	int ret = 0;

	for (size_t i = s->nprocs; i-- > 0;)
		if (proc_shared(&s->procs[i]) && run_proc_stop(&s->procs[i], 2000) == -1) {
			fprintf(stderr, "run: %s (pid %d) would not stop\n", s->procs[i].what,
				(int)s->procs[i].pid);
			ret = -1;
		}
	return ret;
}

/* held, the grants and daemons handed over, written to path (atomically). Returns 0 or -1. */
static int shared_save(const char *path, const struct run_record *held)
{
	char tmp[PATH_MAX + 16];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "we");
	if (f == NULL || record_write(f, held) == -1 || fclose(f) == EOF || rename(tmp, path) == -1) {
		fprintf(stderr, "run: %s: %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * STATE/runs/.shared into held (empty when there is none). One that does
 * not read as a record is moved aside to .shared.bad, said, and read from
 * there line by line (up to 1 MiB), each line that parses kept: the
 * daemons it names are still stopped by the last run out (only each one
 * that is still the process recorded), its grants still dropped.
 */
static void held_load(const char *path, struct run_record *held)
{
	char bad[PATH_MAX + 32], *buf, *line, *save = NULL;
	size_t len;

	if (record_load(path, held, false) == 0)
		return;
	memset(held, 0, sizeof(*held));
	if (access(path, F_OK) == -1 && errno == ENOENT)
		return;
	snprintf(bad, sizeof(bad), "%s.bad", path);
	if (rename(path, bad) == -1) {
		fprintf(stderr, "run: %s: not a record, and not moved aside: %s\n", path,
			strerror(errno));
		return;
	}
	fprintf(stderr, "run: %s: not a record; moved to %s, its lines that parse kept\n", path, bad);
	if (file_read(bad, 1 << 20, &buf, &len) == -1)
		return;
	for (line = strtok_r(buf, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save))
		(void)record_line(line, held);
	free(buf);
}

/*
 * r's daemons and grants into held, each once (a run whose teardown keeps
 * failing is handed over at each try), held's dead daemons out. Past the
 * limits, one is left as it is (said), never stopped under a live run.
 */
static void held_add(struct run_record *held, const struct run_record *r)
{
	size_t kept = 0;

	for (size_t i = 0; i < held->nprocs; i++)
		if (run_proc_alive(&held->procs[i]))
			held->procs[kept++] = held->procs[i];
	held->nprocs = kept;
	for (size_t i = 0; i < r->nprocs; i++) {
		const struct run_proc *p = &r->procs[i];
		bool have = false;

		for (size_t j = 0; j < held->nprocs && !have; j++)
			have = held->procs[j].pid == p->pid && held->procs[j].start == p->start;
		if (!proc_shared(p) || have || !run_proc_alive(p))
			continue;
		if (held->nprocs < RUN_PROCS_MAX)
			held->procs[held->nprocs++] = *p;
		else
			fprintf(stderr, "run: too many daemons handed over; %s (pid %d) left running\n",
				p->what, (int)p->pid);
	}
	for (size_t i = 0; i < r->ngrants; i++) {
		const struct run_grant *g = &r->grants[i];
		bool have = false;

		for (size_t j = 0; j < held->ngrants && !have; j++)
			have = strcmp(held->grants[j].pattern, g->pattern) == 0 &&
			       strcmp(held->grants[j].run, g->run) == 0;
		if (have)
			continue;
		if (held->ngrants < RUN_GRANTS_MAX)
			held->grants[held->ngrants++] = *g;
		else
			fprintf(stderr, "run: too many grants handed over; %s left\n", g->pattern);
	}
}

/*
 * What r leaves that another live run of this state directory may be
 * using: the grants it added (the other found them live and added none)
 * and the daemons it started. With no other run live (STATE/runs/.users.lock
 * taken exclusively), they are dropped and stopped, with what earlier runs
 * handed over in STATE/runs/.shared; else handed over there for the last
 * run out. Under STATE/runs/.shared.lock, which is let go only after ours
 * on .users.lock: two runs ending at once cannot both see the other live.
 * Returns 0 or -1.
 */
static int shared_release(const struct config *c, const struct run_record *r, int users_fd)
{
	char path[PATH_MAX + 16], lock[PATH_MAX + 16];
	struct run_record held;
	int lfd, ufd = users_fd, ret = 0;
	bool alone;

	snprintf(path, sizeof(path), "%s/runs/.shared", c->state_dir);
	snprintf(lock, sizeof(lock), "%s/runs/.shared.lock", c->state_dir);
	lfd = cli_open_state("run", lock, O_RDWR | O_CREAT, 0600);
	if (lfd == -1 || flock(lfd, LOCK_EX) == -1) {
		if (lfd != -1)
			close(lfd);
		/* no lock, no handing over: fewer grants and daemons, not more */
		return grants_drop(c, r) | daemons_stop(r);
	}
	if (ufd == -1) {
		snprintf(lock, sizeof(lock), "%s/runs/.users.lock", c->state_dir);
		ufd = open(lock, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	}
	/* (failing, the conversion may drop our shared lock too: we are ending anyway) */
	alone = ufd == -1 || flock(ufd, LOCK_EX | LOCK_NB) == 0;
	held_load(path, &held);
	if (alone) {
		ret = daemons_stop(r) | daemons_stop(&held) | grants_drop(c, r) | grants_drop(c, &held);
		unlink(path);
	} else {
		held_add(&held, r);
		if (shared_save(path, &held) == -1)
			ret = -1;
	}
	if (ufd != -1)
		flock(ufd, LOCK_UN);
	if (ufd != users_fd && ufd != -1)
		close(ufd);
	close(lfd);
	return ret;
}

int run_teardown(const struct config *c, struct run_record *r, int users_fd)
{
	char dir[PATH_MAX];
	int ret = 0;

	for (size_t i = r->nprocs; i-- > 0;)
		if (!proc_shared(&r->procs[i]) && run_proc_stop(&r->procs[i], 2000) == -1) {
			fprintf(stderr, "run: %s (pid %d) would not stop\n", r->procs[i].what,
				(int)r->procs[i].pid);
			ret = -1;
		}
	if (r->container[0] != '\0') {
		const char *args[] = { "rm", "-f", "-t", "0", r->container };

		if (podman_do(r, args, 5) != 0) {
			fprintf(stderr, "run: could not remove container %s\n", r->container);
			ret = -1;
		}
	}
	if (r->network[0] != '\0') {
		const char *args[] = { "network", "rm", "-f", r->network };

		if (podman_do(r, args, 4) != 0) {
			fprintf(stderr, "run: could not remove podman network %s\n", r->network);
			ret = -1;
		}
	}
	if (r->walls)
		walls_forget(c, r);
	if (r->netns && netns_remove(r) == -1)
		ret = -1;
	if (r->id[0] != '\0')
		run_note_remove(c, r->id); /* a run killed before it could say it ended */
	if (run_agent_end(c, r->id) == -1)
		ret = -1;
	if (shared_release(c, r, users_fd) == -1)
		ret = -1;
	if (ret == 0 && run_dir(c, r->id, dir, sizeof(dir)) == 0)
		dir_remove(dir);
	return ret;
}

int run_users_join(const struct config *c)
{
	char dir[PATH_MAX + 8], path[PATH_MAX + 16];
	int fd;

	snprintf(dir, sizeof(dir), "%s/runs", c->state_dir);
	snprintf(path, sizeof(path), "%s/.users.lock", dir);
	if (file_mkdir_p(dir, 0700) == -1) {
		fprintf(stderr, "run: mkdir %s: %s\n", dir, strerror(errno));
		return -1;
	}
	fd = cli_open_state("run", path, O_RDWR | O_CREAT, 0600);
	if (fd == -1)
		return -1;
	while (flock(fd, LOCK_SH) == -1)
		if (errno != EINTR) {
			fprintf(stderr, "run: lock %s: %s\n", path, strerror(errno));
			close(fd);
			return -1;
		}
	return fd;
}

/* Take down the run in STATE/runs/name when its lock is free. 1 cleaned, 0 live, -1 failed. */
static int clean_one(const struct config *c, const char *name)
{
	struct run_record r;
	char lock[PATH_MAX], record[PATH_MAX];
	int fd, ret;

	if (strlen(name) != RUN_ID_LEN || run_path(c, name, "lock", lock, sizeof(lock)) == -1 ||
	    run_path(c, name, "record", record, sizeof(record)) == -1)
		return 0;
	fd = open(lock, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (fd == -1)
		return 0;
	if (flock(fd, LOCK_EX | LOCK_NB) == -1) {
		close(fd);
		return 0; /* its supervisor holds it: a live run */
	}
	/*
	 * No record: a run just starting (its lock made, not yet taken, or
	 * taken by us before it) or one just gone (its directory being
	 * removed). Nothing was made before the first record: not ours.
	 */
	if (access(record, F_OK) == -1 && errno == ENOENT) {
		close(fd);
		return 0;
	}
	if (record_load(record, &r, true) == -1 || strcmp(r.id, name) != 0) {
		fprintf(stderr, "run: %s: not a run record; remove %s/runs/%s by hand\n", record,
			c->state_dir, name);
		close(fd);
		return -1;
	}
	ret = run_teardown(c, &r, -1) == 0 ? 1 : -1;
	fprintf(stderr, "run: %s %s (supervisor %d, gone)\n", ret == 1 ? "cleaned up" : "could not clean up",
	       r.name, (int)r.supervisor);
	close(fd);
	return ret;
}

int run_clean_stale(const struct config *c)
{
	char dir[PATH_MAX];
	struct dirent *e;
	DIR *d;
	int n = 0, failed = 0, rc;

	snprintf(dir, sizeof(dir), "%s/runs", c->state_dir);
	d = opendir(dir);
	if (d == NULL)
		return 0;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		rc = clean_one(c, e->d_name);
		if (rc == 1)
			n++;
		else if (rc == -1)
			failed = 1;
	}
	closedir(d);
	return failed ? -1 : n;
}
