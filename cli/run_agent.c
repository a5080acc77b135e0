/*
 * run_agent.c: agent profiles (etc/agents/NAME.conf): `sluice agents`, and
 * `sluice run --agent NAME`'s hand-over of the profile and its keys.
 *
 * A profile is found by name in, in order: $SLUICE_AGENTS_DIR, the config
 * file's directory's agents/, the directory the sluice binary is in's
 * ../etc/agents (a checkout's build/, an install's PREFIX/bin), and
 * /etc/sluice/agents. The first holding NAME.conf wins.
 *
 * The hand-over. The key is the operator's, in the environment of the `sluice
 * run` that asks for the profile; the proxy may be a daemon started long
 * before. So the run, as root:
 *   - writes each inject rule's env= value from its own environment into
 *     STATE/agent-keys/RULE/k<SHA-256 hex of the run's principal>, 0600, owned by
 *     the proxy's user (the config's `user`, else root);
 *   - records itself in STATE/agents.d/ID (its principal, the profile's path);
 *   - writes STATE/agents.conf (0644, no secret) from every record: each
 *     profile rule once, keys=STATE/agent-keys/RULE, principal= each run
 *     of it, each allow line for= those principals, and each quiet line
 *     (telemetry, refused with reason quiet) for= the principals of the
 *     runs whose profile lists it; then SIGHUPs the
 *     proxy and sluice-dns, whose config_load reads agents.conf after the
 *     config (lib/config.c).
 * At teardown (its own, or a later run's of a killed run) the record goes,
 * agents.conf is written again and every key no record names is removed:
 * a key lives while a run of its principal does. All of it under flock of
 * STATE/agents.lock.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "file.h"
#include "inject.h"
#include "run.h"
#include "runfile.h"

#define AGENTS_MAX GRANT_SCOPES_MAX /* runs with a profile at once: an allow line's for= each */
#define AGENT_NAME_MAX 64

static bool agent_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > AGENT_NAME_MAX || s[0] == '.')
		return false;
	for (; *s != '\0'; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-' || *s == '_' ||
		      *s == '.'))
			return false;
	return true;
}

/* The i-th directory of the search path into buf; false past the last. */
static bool agents_dir(size_t i, char *buf, size_t size)
{
	const char *env = getenv("SLUICE_AGENTS_DIR"), *conf = cli_config_path();
	char self[PATH_MAX], *slash;
	ssize_t n;

	switch (i) {
	case 0:
		snprintf(buf, size, "%s", env != NULL ? env : "");
		return true;
	case 1:
		buf[0] = '\0';
		if (conf != NULL && realpath(conf, self) != NULL && (slash = strrchr(self, '/')) != NULL) {
			*slash = '\0';
			snprintf(buf, size, "%s/agents", self);
		}
		return true;
	case 2:
		buf[0] = '\0';
		n = readlink("/proc/self/exe", self, sizeof(self) - 1);
		if (n > 0) {
			self[n] = '\0';
			slash = strrchr(self, '/');
			if (slash != NULL)
				*slash = '\0';
			snprintf(buf, size, "%s/../etc/agents", self);
		}
		return true;
	case 3:
		snprintf(buf, size, "/etc/sluice/agents");
		return true;
	}
	return false;
}

/* NAME's profile file into path. Returns 0, or -1 after printing. */
static int agent_find(const char *name, char *path, size_t size)
{
	char dir[PATH_MAX];
	struct stat st;

	if (!agent_name_ok(name)) {
		fprintf(stderr, "agents: \"%s\" is not a profile name (a-z 0-9 . _ -)\n", name);
		return -1;
	}
	for (size_t i = 0; agents_dir(i, dir, sizeof(dir)); i++) {
		if (dir[0] == '\0')
			continue;
		snprintf(path, size, "%s/%s.conf", dir, name);
		if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
			return 0;
	}
	fprintf(stderr, "agents: no profile %s (`sluice agents` lists them)\n", name);
	return -1;
}

struct config *agent_load(const char *name, char *path, size_t size)
{
	struct config *p;

	if (agent_find(name, path, size) == -1)
		return NULL;
	p = config_new();
	if (p == NULL || config_profile_load(p, path, stderr) != 0) {
		config_free(p);
		return NULL;
	}
	return p;
}

static void put_hosts(const char *label, const struct config *p)
{
	printf("  %s:", label);
	for (size_t i = 0; i < p->ngrants; i++)
		printf(" %s%s", p->grants[i].wildcard ? "*." : "", p->grants[i].host);
	putchar('\n');
}

/* One profile, as `sluice agents` shows it. */
static void agent_show(const char *name, const char *path, const struct config *p)
{
	printf("%s  %s\n  profile: %s\n", name, p->agent_about, path);
	put_hosts("allows", p);
	for (size_t i = 0; i < p->nrules; i++)
		printf("  key: %s on %s, from $%s of `sluice run`\n",
		       p->rules[i].target == INJECT_HEADER ? p->rules[i].field : "query", p->rules[i].host,
		       p->rules[i].source_arg);
	if (p->nagent_quiet > 0) {
		printf("  refused quietly:");
		for (size_t i = 0; i < p->nagent_quiet; i++)
			printf(" %s%s", p->agent_quiet[i].wildcard ? "*." : "", p->agent_quiet[i].host);
		putchar('\n');
	}
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int cmd_agents(int argc, char **argv)
{
	char dir[PATH_MAX], path[PATH_MAX + 80], *names[256];
	size_t n = 0;
	int bad = 0;

	if (argc > 1 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
		cli_usage(stdout, "agents");
		return EXIT_OK;
	}
	if (argc > 1) {
		fprintf(stderr, "agents: unexpected argument %s\n", argv[1]);
		cli_usage(stderr, "agents");
		return EXIT_USAGE;
	}
	for (size_t i = 0; agents_dir(i, dir, sizeof(dir)); i++) {
		DIR *d = dir[0] != '\0' ? opendir(dir) : NULL;
		struct dirent *e;

		while (d != NULL && (e = readdir(d)) != NULL && n < 256) {
			size_t len = strlen(e->d_name);
			bool seen = false;

			if (len < 6 || strcmp(e->d_name + len - 5, ".conf") != 0)
				continue;
			e->d_name[len - 5] = '\0';
			for (size_t k = 0; k < n; k++)
				seen = seen || strcmp(names[k], e->d_name) == 0;
			if (!seen && agent_name_ok(e->d_name))
				names[n++] = strdup(e->d_name);
		}
		if (d != NULL)
			closedir(d);
	}
	qsort(names, n, sizeof(names[0]), name_cmp);
	for (size_t i = 0; i < n; i++) {
		struct config *p = names[i] != NULL ? agent_load(names[i], path, sizeof(path)) : NULL;

		if (p == NULL)
			bad = 1;
		else
			agent_show(names[i], path, p);
		config_free(p);
		free(names[i]);
	}
	if (n == 0)
		printf("no agent profiles (searched $SLUICE_AGENTS_DIR, CONFIG_DIR/agents, "
		       "BINDIR/../etc/agents, /etc/sluice/agents)\n");
	fflush(stdout);
	return bad ? EXIT_ERROR : EXIT_OK;
}

/* ------------------------------------------------------------ hand-over */

struct agent_rec {
	char id[RUN_ID_LEN + 1];
	char scope[SCOPE_TEXT_MAX + 1];
	char path[PATH_MAX];
	struct config *p;
};

/* STATE/a, or STATE/a/b when b is not NULL, into buf. */
static void state_path(const struct config *c, char *buf, size_t size, const char *a,
		       const char *b)
{
	snprintf(buf, size, "%s/%s%s%s", c->state_dir, a, b != NULL ? "/" : "", b != NULL ? b : "");
}

/* Every record of STATE/agents.d, each with its profile loaded (one that does not load: skipped). */
static size_t recs_load(const struct config *c, struct agent_rec *recs)
{
	char dir[PATH_MAX + 16], path[PATH_MAX + 64], *buf;
	size_t n = 0, len;
	DIR *d;
	struct dirent *e;

	state_path(c, dir, sizeof(dir), "agents.d", NULL);
	d = opendir(dir);
	while (d != NULL && (e = readdir(d)) != NULL && n < AGENTS_MAX) {
		struct agent_rec *r = &recs[n];
		char *nl;

		if (e->d_name[0] == '.' || strlen(e->d_name) != RUN_ID_LEN)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (file_read(path, 8192, &buf, &len) == -1)
			continue;
		nl = strchr(buf, '\n');
		if (nl != NULL && sscanf(buf, "%128s", r->scope) == 1 && strchr(nl + 1, '\n') != NULL) {
			*strchr(nl + 1, '\n') = '\0';
			snprintf(r->path, sizeof(r->path), "%s", nl + 1);
			snprintf(r->id, sizeof(r->id), "%s", e->d_name);
			r->p = config_new();
			if (r->p != NULL && config_profile_load(r->p, r->path, stderr) == 0)
				n++;
			else
				config_free(r->p);
		}
		free(buf);
	}
	if (d != NULL)
		closedir(d);
	return n;
}

/* Whether (rule, key name) is one some record hands over. */
static bool key_live(const struct config *c, const struct agent_rec *recs, size_t n,
		     const char *rule, const char *key)
{
	char name[2 * SCOPE_TEXT_MAX + 2];

	(void)c;
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < recs[i].p->nrules; k++)
			if (strcmp(recs[i].p->rules[k].name, rule) == 0 &&
			    inject_key_name(recs[i].scope, name, sizeof(name)) > 0 && strcmp(name, key) == 0)
				return true;
	return false;
}

/* Remove every key no record names. */
static void keys_sweep(const struct config *c, const struct agent_rec *recs, size_t n)
{
	char dir[PATH_MAX + 16], sub[PATH_MAX + 300], path[PATH_MAX + 900];
	DIR *d, *ds;
	struct dirent *e, *f;

	state_path(c, dir, sizeof(dir), "agent-keys", NULL);
	d = opendir(dir);
	while (d != NULL && (e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", dir, e->d_name);
		ds = opendir(sub);
		while (ds != NULL && (f = readdir(ds)) != NULL) {
			if (f->d_name[0] == '.' || key_live(c, recs, n, e->d_name, f->d_name))
				continue;
			snprintf(path, sizeof(path), "%s/%s", sub, f->d_name);
			unlink(path);
		}
		if (ds != NULL)
			closedir(ds);
		rmdir(sub); /* fails while a key is left: fine */
	}
	if (d != NULL)
		closedir(d);
}

static bool agent_grant_same(const struct grant *a, const struct grant *b)
{
	return a->wildcard == b->wildcard && a->port == b->port && strcmp(a->host, b->host) == 0;
}

/* Whether no record before i allows what g does. */
static bool grant_first(const struct agent_rec *recs, size_t i, const struct grant *g)
{
	for (size_t j = 0; j < i; j++)
		for (size_t k = 0; k < recs[j].p->ngrants; k++)
			if (agent_grant_same(&recs[j].p->grants[k], g))
				return false;
	return true;
}

/*
 * One allow line for g, for= the principal of every record from i on
 * that allows it: one grant a host, whoever many runs want it.
 */
static void allow_put(FILE *f, const struct agent_rec *recs, size_t i, size_t n,
		      const struct grant *g)
{
	fprintf(f, "allow %s%s", g->wildcard ? "*." : "", g->host);
	if (g->port != 0)
		fprintf(f, ":%u", (unsigned)g->port);
	for (size_t j = i; j < n; j++) {
		bool has = false, seen = false;

		for (size_t k = 0; k < recs[j].p->ngrants; k++)
			has = has || agent_grant_same(&recs[j].p->grants[k], g);
		for (size_t q = i; q < j; q++)
			seen = seen || strcmp(recs[q].scope, recs[j].scope) == 0;
		if (has && !seen)
			fprintf(f, " for=%s", recs[j].scope);
	}
	fputc('\n', f);
}

static bool quiet_same(const struct grant *a, const struct grant *b)
{
	return a->wildcard == b->wildcard && strcmp(a->host, b->host) == 0;
}

/*
 * Each quiet host of record i no record before it lists, once, for= the
 * principal of every record from i on whose profile lists it: its
 * requests there are refused quietly, another principal's as ever.
 */
static void quiet_put(FILE *f, const struct agent_rec *recs, size_t i, size_t n)
{
	const struct config *p = recs[i].p;

	for (size_t k = 0; k < p->nagent_quiet; k++) {
		const struct grant *q = &p->agent_quiet[k];
		bool first = true;

		for (size_t j = 0; j < i; j++)
			for (size_t m = 0; m < recs[j].p->nagent_quiet; m++)
				first = first && !quiet_same(&recs[j].p->agent_quiet[m], q);
		if (!first)
			continue;
		fprintf(f, "quiet %s%s", q->wildcard ? "*." : "", q->host);
		for (size_t j = i; j < n; j++) {
			bool has = false, seen = false;

			for (size_t m = 0; m < recs[j].p->nagent_quiet; m++)
				has = has || quiet_same(&recs[j].p->agent_quiet[m], q);
			for (size_t r = i; r < j; r++)
				seen = seen || strcmp(recs[r].scope, recs[j].scope) == 0;
			if (has && !seen)
				fprintf(f, " for=%s", recs[j].scope);
		}
		fputc('\n', f);
	}
}

/* STATE/agents.conf from the records (removed when there is none). Returns 0 or -1. */
static int handover_write(const struct config *c, const struct agent_rec *recs, size_t n)
{
	char path[PATH_MAX + 32], tmp[PATH_MAX + 40], line[4097];
	FILE *f;
	int fd;

	state_path(c, path, sizeof(path), CONFIG_HANDOVER_FILE, NULL);
	if (n == 0)
		return unlink(path) == -1 && errno != ENOENT ? -1 : 0;
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	unlink(tmp);
	fd = cli_open_state("run", tmp, O_WRONLY | O_CREAT | O_EXCL, 0644);
	if (fd == -1 || (f = fdopen(fd, "w")) == NULL) {
		if (fd != -1)
			close(fd);
		return -1;
	}
	fprintf(f, "# written by `sluice run --agent` (cli/run_agent.c): the profiles of the runs "
		   "now up; do not edit\n");
	for (size_t i = 0; i < n; i++) {
		const struct config *p = recs[i].p;

		for (size_t k = 0; k < p->nrules; k++) {
			struct inject_rule r = p->rules[k];
			bool first = true;
			const char *why;

			for (size_t j = 0; j < i; j++)
				for (size_t q = 0; q < recs[j].p->nrules; q++)
					first = first && strcmp(recs[j].p->rules[q].name, r.name) != 0;
			if (!first)
				continue;
			r.source = INJECT_KEYS;
			state_path(c, r.source_arg, sizeof(r.source_arg), "agent-keys", r.name);
			r.nprincipals = 0;
			for (size_t j = i; j < n && r.nprincipals < INJECT_PRINCIPALS_MAX; j++) {
				bool has = false;

				for (size_t q = 0; q < recs[j].p->nrules; q++)
					has = has || strcmp(recs[j].p->rules[q].name, r.name) == 0;
				if (has && scope_parse(recs[j].scope, &r.principals[r.nprincipals], &why) == 0 &&
				    !scope_in(&r.principals[r.nprincipals], r.principals, r.nprincipals))
					r.nprincipals++;
			}
			if (inject_rule_format(&r, line, sizeof(line)) > 0)
				fprintf(f, "%s\n", line);
		}
		for (size_t k = 0; k < p->ngrants; k++)
			if (grant_first(recs, i, &p->grants[k]))
				allow_put(f, recs, i, n, &p->grants[k]);
		quiet_put(f, recs, i, n);
	}
	if (fclose(f) == EOF || rename(tmp, path) == -1) {
		fprintf(stderr, "run: write %s: %s\n", path, strerror(errno));
		unlink(tmp);
		return -1;
	}
	return 0;
}

/* SIGHUP to the proxy and sluice-dns of STATE, when they run. */
static void daemons_reload(const struct config *c)
{
	static const char *const files[] = { "proxy.run", "dns.run" };
	struct runfile rf;

	for (size_t i = 0; i < 2; i++)
		if (runfile_read(c->state_dir, files[i], &rf) == 0 && rf.pid > 0)
			kill(rf.pid, SIGHUP);
}

/* Under STATE/agents.lock: fn, then agents.conf and the keys from the records. Returns 0 or -1. */
static int handover_locked(const struct config *c, int (*fn)(const struct config *c, void *arg),
			   void *arg)
{
	char lock[PATH_MAX + 32];
	struct agent_rec *recs;
	size_t n;
	int fd, rc;

	state_path(c, lock, sizeof(lock), "agents.lock", NULL);
	fd = cli_open_state("run", lock, O_RDWR | O_CREAT, 0600);
	if (fd == -1)
		return -1;
	while (flock(fd, LOCK_EX) == -1 && errno == EINTR)
		;
	recs = calloc(AGENTS_MAX, sizeof(*recs));
	rc = recs == NULL || fn(c, arg) == -1 ? -1 : 0;
	if (recs != NULL) {
		n = recs_load(c, recs);
		if (handover_write(c, recs, n) == -1)
			rc = -1;
		keys_sweep(c, recs, n);
		for (size_t i = 0; i < n; i++)
			config_free(recs[i].p);
		free(recs);
	}
	close(fd);
	daemons_reload(c);
	return rc;
}

struct begin_arg {
	const struct run *x;
	const struct config *p;
	const char *path;
	const char *scope;
};

/* The key file of rule for scope: its value from our environment, for the proxy's user alone. */
static int key_write(const struct config *c, const struct inject_rule *r, const char *scope)
{
	char dir[PATH_MAX + 96], path[PATH_MAX + 700], tmp[PATH_MAX + 710], name[2 * SCOPE_TEXT_MAX + 2];
	const char *v = getenv(r->source_arg);
	uid_t uid = cli_user_uid(c);
	bool held;
	int fd;

	state_path(c, dir, sizeof(dir), "agent-keys", r->name);
	if (inject_key_name(scope, name, sizeof(name)) == -1) {
		fprintf(stderr, "run: %s: no key name for it\n", scope);
		return -1;
	}
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	/* one key a principal: runs of one project's agent at once share the last one given */
	held = access(path, F_OK) == 0;
	if (v == NULL || v[0] == '\0') {
		if (held)
			fprintf(stderr, "run: %s is not set here: requests to %s carry the key another run "
					"of %s handed over (rule %s)\n", r->source_arg, r->host, scope, r->name);
		else
			fprintf(stderr, "run: %s is not set here: requests to %s are refused (rule %s)\n",
				r->source_arg, r->host, r->name);
		return 0;
	}
	if (held)
		fprintf(stderr, "run: %s replaces the key another run of %s handed over: its requests "
				"carry this one now (rule %s)\n", r->source_arg, scope, r->name);
	if (file_mkdir_p(dir, 0711) == -1 || chmod(dir, 0711) == -1) {
		fprintf(stderr, "run: %s: %s\n", dir, strerror(errno));
		return -1;
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd == -1 || write(fd, v, strlen(v)) != (ssize_t)strlen(v) ||
	    (uid != FILE_NO_UID && fchown(fd, uid, (gid_t)-1) == -1)) {
		fprintf(stderr, "run: write %s: %s\n", tmp, strerror(errno));
		if (fd != -1)
			close(fd);
		unlink(tmp);
		return -1;
	}
	if (close(fd) == -1 || rename(tmp, path) == -1) {
		fprintf(stderr, "run: write %s: %s\n", path, strerror(errno));
		unlink(tmp);
		return -1;
	}
	return 0;
}

static int begin_fn(const struct config *c, void *arg)
{
	const struct begin_arg *a = arg;
	char dir[PATH_MAX + 16], path[PATH_MAX + 64];
	size_t n = 0;
	DIR *d;
	FILE *f;

	state_path(c, dir, sizeof(dir), "agents.d", NULL);
	d = opendir(dir);
	while (d != NULL && readdir(d) != NULL)
		n++;
	if (d != NULL)
		closedir(d);
	if (n >= AGENTS_MAX + 2) { /* "." and ".." */
		fprintf(stderr, "run: %d runs with an agent profile are up already; at most %d at once\n",
			AGENTS_MAX, AGENTS_MAX);
		return -1;
	}

	for (size_t i = 0; i < a->p->nrules; i++)
		if (key_write(c, &a->p->rules[i], a->scope) == -1)
			return -1;
	state_path(c, dir, sizeof(dir), "agents.d", NULL);
	if (file_mkdir_p(dir, 0700) == -1)
		return -1;
	snprintf(path, sizeof(path), "%s/%s", dir, a->x->r.id);
	f = fopen(path, "we");
	if (f == NULL || fprintf(f, "%s\n%s\n", a->scope, a->path) < 0 || fclose(f) == EOF) {
		fprintf(stderr, "run: write %s: %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

int run_agent_begin(const struct run *x, const struct config *p, const char *path)
{
	char scope[SCOPE_TEXT_MAX + 1], line[PATH_MAX + 64];
	struct begin_arg a = { .x = x, .p = p, .path = path, .scope = scope };
	struct config *check;
	int rc;

	run_scope_word(x, scope, sizeof(scope));
	if (handover_locked(x->c, begin_fn, &a) == -1)
		return -1;
	/* the config the daemons now load must load: else they keep the old one, and we say why */
	check = config_new();
	rc = check == NULL ? 1 : config_load(check, x->conf[0] != '\0' ? x->conf : cli_config_path() != NULL ? cli_config_path() : "/dev/null", stderr);
	config_free(check);
	if (rc != 0) {
		snprintf(line, sizeof(line), "%s/%s", x->c->state_dir, CONFIG_HANDOVER_FILE);
		fprintf(stderr, "run: the profile %s does not join the config (%s)\n", path, line);
		return -1;
	}
	return 0;
}

static int end_fn(const struct config *c, void *arg)
{
	char path[PATH_MAX + 64];

	state_path(c, path, sizeof(path), "agents.d", (const char *)arg);
	return unlink(path) == -1 && errno != ENOENT ? -1 : 0;
}

int run_agent_end(const struct config *c, const char *id)
{
	char path[PATH_MAX + 64];
	struct stat st;

	state_path(c, path, sizeof(path), "agents.d", id);
	if (stat(path, &st) == -1)
		return 0;
	return handover_locked(c, end_fn, (void *)id);
}
