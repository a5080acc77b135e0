/*
 * allow.c: `sluice allow add|rm|list`: the grant store.
 *
 * The store is STATE/grants in grant.h's format. Every change reads the
 * store, edits it in memory and replaces it whole (a temporary file in the
 * same directory, fsync, rename, fsync of the directory) while holding an
 * exclusive flock on STATE/grants.lock, so two CLIs never lose each
 * other's writes and the proxy never reads half a file. A store that does
 * not parse is never rewritten: the operator repairs or deletes it. It
 * does not signal the proxy: the proxy picks the file up when it changes.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <libpsl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "digits.h"
#include "file.h"
#include "store.h"

#define STORE_NAME "grants"
#define LOCK_NAME "grants.lock"
#define RUN_NAME "proxy.run"
#define STORE_MAX_BYTES (16 * 1024 * 1024)
#define ONCE_TTL_DEFAULT 120
#define ONCE_TTL_MAX (366 * 86400)
#define PATTERN_MAX (HOST_NAME_MAX_LEN + 16)

/* The store as read: grants owned by the caller, who frees g. */
struct store {
	struct grant *g;
	size_t n;
};

static int state_file(const struct config *c, const char *name, char *buf, size_t size)
{
	int n = snprintf(buf, size, "%s/%s", c->state_dir, name);

	if (n < 0 || (size_t)n >= size) {
		fprintf(stderr, "allow: %s/%s: path too long\n", c->state_dir, name);
		return -1;
	}
	return 0;
}

static void put_errno(const char *what, const char *path, int e)
{
	fprintf(stderr, "allow: %s %s: ", what, path);
	cli_put_strerror(stderr, e);
	fputc('\n', stderr);
}

/*
 * Load the store. A missing file is an empty store. Returns 0, or -1 after
 * printing why (unreadable, or damaged: then nothing may rewrite it).
 */
static int store_load(const struct config *c, struct store *s)
{
	char path[PATH_MAX];
	char *buf;
	size_t len, max = 1, line = 0;
	const char *err = "bad line";

	s->g = NULL;
	s->n = 0;
	if (state_file(c, STORE_NAME, path, sizeof(path)) == -1)
		return -1;
	if (file_read(path, STORE_MAX_BYTES, &buf, &len) == -1) {
		if (errno == ENOENT)
			return 0;
		put_errno("read", path, errno);
		return -1;
	}
	for (size_t i = 0; i < len; i++)
		max += buf[i] == '\n';
	s->g = calloc(max, sizeof(*s->g));
	if (s->g == NULL) {
		free(buf);
		fprintf(stderr, "allow: out of memory\n");
		return -1;
	}
	if (grant_store_parse(buf, len, s->g, max, &s->n, &line, &err) == -1) {
		fprintf(stderr,
			"allow: %s:%zu: %s; repair or delete that file (deleting means no grants)\n",
			path, line, err);
		free(buf);
		free(s->g);
		s->g = NULL;
		return -1;
	}
	free(buf);
	return 0;
}

/* Create STATE if needed and take the store lock. Returns the lock fd or -1 after printing. */
static int store_lock(const struct config *c)
{
	char path[PATH_MAX];
	int fd;

	if (file_mkdir_p(c->state_dir, 0700) == -1) {
		put_errno("mkdir", c->state_dir, errno);
		return -1;
	}
	if (state_file(c, LOCK_NAME, path, sizeof(path)) == -1)
		return -1;
	fd = cli_open_state("allow", path, O_RDWR | O_CREAT, 0600);
	if (fd == -1)
		return -1;
	while (flock(fd, LOCK_EX) == -1) {
		if (errno != EINTR) {
			put_errno("lock", path, errno);
			close(fd);
			return -1;
		}
	}
	return fd;
}

/*
 * Replace the store with g[0..n): a temporary file beside it, fsync,
 * rename, fsync of the directory. Returns 0 or -1 after printing.
 */
static int store_save(const struct config *c, const struct grant *g, size_t n)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	FILE *f;
	int fd, dfd, ret = -1;

	if (state_file(c, STORE_NAME, path, sizeof(path)) == -1 ||
	    state_file(c, "." STORE_NAME ".XXXXXX", tmp, sizeof(tmp)) == -1)
		return -1;
	/* O_CREAT | O_EXCL (mkostemp's own): a new file, never a name planted before */
	fd = mkostemp(tmp, O_CLOEXEC | O_NOFOLLOW);
	if (fd == -1) {
		put_errno("create", tmp, errno);
		return -1;
	}
	/* the grants are not secret; the proxy may read them after dropping root */
	if (fchmod(fd, 0644) == -1) {
		put_errno("chmod", tmp, errno);
		close(fd);
		goto out_unlink;
	}
	f = fdopen(fd, "w");
	if (f == NULL) {
		put_errno("open", tmp, errno);
		close(fd);
		goto out_unlink;
	}
	if (grant_store_write(f, g, n) == -1 || fflush(f) == EOF || fsync(fd) == -1) {
		put_errno("write", tmp, errno);
		fclose(f);
		goto out_unlink;
	}
	if (fclose(f) == EOF) {
		put_errno("write", tmp, errno);
		goto out_unlink;
	}
	if (rename(tmp, path) == -1) {
		put_errno("rename to", path, errno);
		goto out_unlink;
	}
	dfd = open(c->state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd != -1) {
		fsync(dfd);
		close(dfd);
	}
	return 0;
out_unlink:
	unlink(tmp);
	return ret;
}

static bool same_pattern(const struct grant *a, const struct grant *b)
{
	return a->wildcard == b->wildcard && a->port == b->port && strcmp(a->host, b->host) == 0;
}

/*
 * Drop expired once grants and (when like is not NULL) every grant with
 * like's pattern, counted in *removed (may be NULL).
 */
static void store_prune(struct store *s, const struct grant *like, time_t now, size_t *removed)
{
	size_t j = 0, dropped = 0;

	for (size_t i = 0; i < s->n; i++) {
		if (like != NULL && same_pattern(&s->g[i], like)) {
			dropped++;
			continue;
		}
		if (s->g[i].level == GRANT_ONCE && s->g[i].expires <= now)
			continue;
		s->g[j++] = s->g[i];
	}
	s->n = j;
	if (removed != NULL)
		*removed = dropped;
}

/* "1m52s", "3h4m", "2d1h" for a positive number of seconds. */
static char *duration_format(long long secs, char *buf, size_t size)
{
	if (secs < 60)
		snprintf(buf, size, "%llds", secs);
	else if (secs < 3600)
		snprintf(buf, size, "%lldm%llds", secs / 60, secs % 60);
	else if (secs < 86400)
		snprintf(buf, size, "%lldh%lldm", secs / 3600, secs % 3600 / 60);
	else
		snprintf(buf, size, "%lldd%lldh", secs / 86400, secs % 86400 / 3600);
	return buf;
}

/* SECONDS with an optional s, m, h or d suffix. Returns 0 or -1. */
static int ttl_parse(const char *s, long long *out)
{
	const char *end = s + strspn(s, "0123456789");
	long long v, mul = 1;
	uint64_t n;

	if (dec_parse(s, (size_t)(end - s), LLONG_MAX, &n) == -1)
		return -1;
	v = (long long)n;
	if (*end != '\0') {
		if (end[1] != '\0')
			return -1;
		switch (*end) {
		case 's': mul = 1; break;
		case 'm': mul = 60; break;
		case 'h': mul = 3600; break;
		case 'd': mul = 86400; break;
		default: return -1;
		}
	}
	if (v < 1 || v > ONCE_TTL_MAX / mul)
		return -1;
	*out = v * mul;
	return 0;
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Print "allow: MESSAGE" and the synopsis to stderr. Returns EXIT_USAGE. */
static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "allow: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	cli_usage(stderr, "allow");
	return EXIT_USAGE;
}

/*
 * The text public suffix list beside the one libpsl loads (Debian:
 * public_suffix_list.dat next to the .dafsa) into buf. Returns 0, or -1
 * when there is none to name.
 */
static int suffix_text_path(char *buf, size_t size)
{
	const char *dist = psl_dist_filename();
	const char *slash = dist != NULL ? strrchr(dist, '/') : NULL;
	int n;

	if (slash == NULL)
		return -1;
	n = snprintf(buf, size, "%.*s/public_suffix_list.dat", (int)(slash - dist), dist);
	return n < 0 || (size_t)n >= size ? -1 : 0;
}

/*
 * A wildcard *.S never covers a name under a public suffix below S (grant.h):
 * say so when the list names some (a cloud's tenants), with two of them.
 * Silent when the text list is not at hand; this note is advice, the
 * proxy's rule holds regardless.
 */
static void suffix_note(const struct grant *g)
{
	char path[4096], line[512], first[2][HOST_NAME_MAX_LEN + 1];
	size_t sl = strlen(g->host), n = 0;
	FILE *f;

	if (!g->wildcard || suffix_text_path(path, sizeof(path)) == -1)
		return;
	f = fopen(path, "re");
	if (f == NULL)
		return;
	while (fgets(line, sizeof(line), f) != NULL) {
		char *e = line + strcspn(line, " \t\r\n"), *p = line;
		size_t len;

		*e = '\0';
		/* comments, blank lines, and exceptions ("!x.y": not a suffix) */
		if (p[0] == '/' || p[0] == '\0' || p[0] == '!')
			continue;
		if (p[0] == '*' && p[1] == '.')
			p += 2; /* "*.x.S": every name under x.S is a suffix */
		len = strlen(p);
		if (len > sl + 1 && p[len - sl - 1] == '.' && strcasecmp(p + len - sl, g->host) == 0) {
			if (n < 2 && strlen(line) < sizeof(first[n]))
				memcpy(first[n], line, strlen(line) + 1);
			n++;
		}
	}
	fclose(f);
	if (n > 0)
		fprintf(stderr,
			"allow: note: *.%s does not cover names under the %zu public suffix%s listed "
			"below it (%s%s%s); grant such a host exactly\n",
			g->host, n, n == 1 ? "" : "es", first[0], n > 1 ? ", " : "", n > 1 ? first[1] : "");
}

static int pattern_arg(const char *s, struct grant *g)
{
	const char *err = "bad grant";

	if (grant_parse(s, strlen(s), g, &err) == -1) {
		fprintf(stderr, "allow: bad grant \"%s\": %s\n", s, err);
		return -1;
	}
	return 0;
}

static int allow_add(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "level", required_argument, NULL, 'l' },
		{ "ttl", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	enum grant_level level = GRANT_PERMANENT;
	const char *ttl_arg = NULL;
	long long ttl = ONCE_TTL_DEFAULT;
	struct config *c;
	struct store s;
	struct grant g, *grown;
	char pat[PATTERN_MAX], dur[32];
	size_t replaced;
	time_t now;
	int opt, lockfd, ret = EXIT_ERROR;

	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'l':
			if (strcmp(optarg, "once") == 0)
				level = GRANT_ONCE;
			else if (strcmp(optarg, "session") == 0)
				level = GRANT_SESSION;
			else if (strcmp(optarg, "permanent") == 0)
				level = GRANT_PERMANENT;
			else
				return usage_error("bad level \"%s\": expected once, session or permanent",
						   optarg);
			break;
		case 't':
			ttl_arg = optarg;
			break;
		case 'h':
			cli_usage(stdout, "allow");
			return EXIT_OK;
		default:
			cli_usage(stderr, "allow");
			return EXIT_USAGE;
		}
	}
	if (argc - optind != 1)
		return usage_error("add takes one GRANT");
	if (ttl_arg != NULL && level != GRANT_ONCE)
		return usage_error("--ttl applies only to --level once");
	if (ttl_arg != NULL && ttl_parse(ttl_arg, &ttl) == -1)
		return usage_error("bad ttl \"%s\": expected 1 to 31622400 seconds (or Nm, Nh, Nd)",
				   ttl_arg);
	if (pattern_arg(argv[optind], &g) == -1)
		return EXIT_ERROR;

	c = cli_config_load();
	if (c == NULL)
		return EXIT_ERROR;
	now = time(NULL);
	g.level = level;
	g.added = now;
	if (level == GRANT_ONCE) {
		struct timespec ts;

		/* expiry is kept in whole seconds: round up, so a grant never lasts less than its ttl */
		clock_gettime(CLOCK_REALTIME, &ts);
		g.expires = ts.tv_sec + (ts.tv_nsec > 0 ? 1 : 0) + (time_t)ttl;
	}
	if (level == GRANT_SESSION && store_run_id(c->state_dir, g.run) == -1) {
		if (errno == ENOENT)
			fprintf(stderr,
				"allow: no running sluice-proxy (%s/%s missing); a session grant lasts only while it runs\n",
				c->state_dir, RUN_NAME);
		else if (errno == ESRCH)
			fprintf(stderr,
				"allow: no running sluice-proxy (%s/%s is left from one that stopped); a session grant lasts only while it runs\n",
				c->state_dir, RUN_NAME);
		else if (errno == EINVAL)
			fprintf(stderr,
				"allow: %s/%s: not a run id (16 lowercase hex digits and a newline)\n",
				c->state_dir, RUN_NAME);
		else
			put_errno("read", RUN_NAME, errno);
		goto out_config;
	}

	lockfd = store_lock(c);
	if (lockfd == -1)
		goto out_config;
	if (store_load(c, &s) == -1)
		goto out_unlock;
	store_prune(&s, &g, now, &replaced);
	grown = realloc(s.g, (s.n + 1) * sizeof(*grown));
	if (grown == NULL) {
		fprintf(stderr, "allow: out of memory\n");
		goto out_free;
	}
	s.g = grown;
	s.g[s.n++] = g;
	if (store_save(c, s.g, s.n) == -1)
		goto out_free;
	grant_format(&g, pat, sizeof(pat));
	if (level == GRANT_ONCE)
		printf("%s %s once, expires in %s\n", replaced ? "replaced" : "added", pat,
		       duration_format(ttl, dur, sizeof(dur)));
	else if (level == GRANT_SESSION)
		printf("%s %s session, until sluice-proxy run %s stops\n",
		       replaced ? "replaced" : "added", pat, g.run);
	else
		printf("%s %s permanent\n", replaced ? "replaced" : "added", pat);
	suffix_note(&g);
	ret = EXIT_OK;
out_free:
	free(s.g);
out_unlock:
	close(lockfd);
out_config:
	config_free(c);
	return ret;
}

static int allow_rm(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct config *c;
	struct store s;
	struct grant g;
	char pat[PATTERN_MAX];
	size_t removed;
	int opt, lockfd, ret = EXIT_ERROR;

	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (opt == 'h') {
			cli_usage(stdout, "allow");
			return EXIT_OK;
		}
		cli_usage(stderr, "allow");
		return EXIT_USAGE;
	}
	if (argc - optind != 1)
		return usage_error("rm takes one GRANT");
	if (pattern_arg(argv[optind], &g) == -1)
		return EXIT_ERROR;
	grant_format(&g, pat, sizeof(pat));

	c = cli_config_load();
	if (c == NULL)
		return EXIT_ERROR;
	lockfd = store_lock(c);
	if (lockfd == -1)
		goto out_config;
	if (store_load(c, &s) == -1)
		goto out_unlock;
	store_prune(&s, &g, time(NULL), &removed);
	if (removed == 0) {
		bool in_config = false;

		for (size_t i = 0; i < c->ngrants; i++)
			in_config |= same_pattern(&c->grants[i], &g);
		if (in_config)
			fprintf(stderr, "allow: %s is granted by the config file %s; remove it there\n",
				pat, cli_config_path());
		else
			fprintf(stderr, "allow: no grant %s in %s/%s\n", pat, c->state_dir,
				STORE_NAME);
		goto out_free;
	}
	if (store_save(c, s.g, s.n) == -1)
		goto out_free;
	printf("removed %s\n", pat);
	ret = EXIT_OK;
out_free:
	free(s.g);
out_unlock:
	close(lockfd);
out_config:
	config_free(c);
	return ret;
}

/*
 * A run's grant (`sluice run --allow`): pattern at level session for the
 * proxy run `run`, added only when no live grant of that pattern is stored
 * or in the config (an operator's grant is never replaced, so taking the
 * run's away later cannot take theirs). Returns 1 added, 0 already granted,
 * -1 after printing why.
 */
int allow_session_add(const struct config *c, const char *pattern, const char *run)
{
	struct store s;
	struct grant g, *grown;
	time_t now = time(NULL);
	int lockfd, ret = -1;

	if (pattern_arg(pattern, &g) == -1)
		return -1;
	for (size_t i = 0; i < c->ngrants; i++)
		if (same_pattern(&c->grants[i], &g))
			return 0;
	lockfd = store_lock(c);
	if (lockfd == -1)
		return -1;
	if (store_load(c, &s) == -1)
		goto out_unlock;
	store_prune(&s, NULL, now, NULL);
	ret = 0;
	for (size_t i = 0; i < s.n; i++)
		if (same_pattern(&s.g[i], &g) && grant_live(&s.g[i], now, run))
			goto out_free;
	ret = -1;
	store_prune(&s, &g, now, NULL); /* a dead grant of that pattern (a stopped run's) */
	grown = realloc(s.g, (s.n + 1) * sizeof(*grown));
	if (grown == NULL) {
		fprintf(stderr, "allow: out of memory\n");
		goto out_free;
	}
	s.g = grown;
	g.level = GRANT_SESSION;
	g.added = now;
	snprintf(g.run, sizeof(g.run), "%s", run);
	s.g[s.n++] = g;
	if (store_save(c, s.g, s.n) == 0)
		ret = 1;
out_free:
	free(s.g);
out_unlock:
	close(lockfd);
	return ret;
}

/* Take back what allow_session_add added: the session grant of pattern for run, if still there. */
int allow_session_drop(const struct config *c, const char *pattern, const char *run)
{
	struct store s;
	struct grant g;
	size_t j = 0;
	int lockfd, ret = -1;

	if (pattern_arg(pattern, &g) == -1)
		return -1;
	lockfd = store_lock(c);
	if (lockfd == -1)
		return -1;
	if (store_load(c, &s) == -1)
		goto out_unlock;
	for (size_t i = 0; i < s.n; i++)
		if (!(same_pattern(&s.g[i], &g) && s.g[i].level == GRANT_SESSION &&
		      strcmp(s.g[i].run, run) == 0))
			s.g[j++] = s.g[i];
	ret = j == s.n ? 0 : store_save(c, s.g, j);
	free(s.g);
out_unlock:
	close(lockfd);
	return ret;
}

/* The EXPIRES column, and whether the grant is live now. */
static bool expires_text(const struct grant *g, time_t now, const char *run, char *buf,
			 size_t size)
{
	char dur[32];

	switch (g->level) {
	case GRANT_ONCE:
		if (g->expires <= now) {
			snprintf(buf, size, "expired");
			return false;
		}
		snprintf(buf, size, "in %s",
			 duration_format((long long)(g->expires - now), dur, sizeof(dur)));
		return true;
	case GRANT_SESSION:
		if (run != NULL && strcmp(run, g->run) == 0) {
			snprintf(buf, size, "when proxy stops");
			return true;
		}
		snprintf(buf, size, "ended (run %s)", g->run);
		return false;
	default:
		snprintf(buf, size, "never");
		return true;
	}
}

static char *added_text(const struct grant *g, char *buf, size_t size)
{
	struct tm tm;

	if (g->level == GRANT_CONFIG || localtime_r(&g->added, &tm) == NULL)
		snprintf(buf, size, "-");
	else
		strftime(buf, size, "%Y-%m-%d %H:%M", &tm);
	return buf;
}

static int list_json(const struct grant *all, size_t n, time_t now, const char *run)
{
	json_t *arr = json_array();
	char pat[PATTERN_MAX], exp[64];
	int ret = EXIT_ERROR;

	if (arr == NULL)
		goto out_oom;
	for (size_t i = 0; i < n; i++) {
		const struct grant *g = &all[i];
		bool live = expires_text(g, now, run, exp, sizeof(exp));
		json_t *o = json_pack("{s:s, s:s, s:o, s:o, s:o, s:b}", "grant",
				      grant_format(g, pat, sizeof(pat)), "level",
				      grant_level_name(g->level), "added",
				      g->level == GRANT_CONFIG ? json_null()
							       : json_integer(g->added),
				      "expires",
				      g->level == GRANT_ONCE ? json_integer(g->expires) : json_null(),
				      "run", g->level == GRANT_SESSION ? json_string(g->run) : json_null(),
				      "live", live);

		if (o == NULL || json_array_append_new(arr, o) == -1)
			goto out_oom;
	}
	if (json_dumpf(arr, stdout, JSON_INDENT(2)) == -1)
		goto out_free;
	putchar('\n');
	ret = EXIT_OK;
	goto out_free;
out_oom:
	fprintf(stderr, "allow: out of memory\n");
out_free:
	json_decref(arr);
	return ret;
}

static void list_table(const struct grant *all, size_t n, time_t now, const char *run)
{
	char pat[PATTERN_MAX], exp[64], added[32];
	int w = (int)strlen("GRANT");

	for (size_t i = 0; i < n; i++) {
		int l = (int)strlen(grant_format(&all[i], pat, sizeof(pat)));

		if (l > w)
			w = l;
	}
	printf("%-*s  %-9s  %-22s  %s\n", w, "GRANT", "LEVEL", "EXPIRES", "ADDED");
	for (size_t i = 0; i < n; i++) {
		expires_text(&all[i], now, run, exp, sizeof(exp));
		printf("%-*s  %-9s  %-22s  %s\n", w, grant_format(&all[i], pat, sizeof(pat)),
		       grant_level_name(all[i].level), exp, added_text(&all[i], added, sizeof(added)));
	}
}

static int allow_list(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char run[GRANT_RUN_ID_LEN + 1];
	const char *runp = NULL;
	struct grant *all;
	struct config *c;
	struct store s;
	bool json = false;
	int opt, ret = EXIT_ERROR;

	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'j':
			json = true;
			break;
		case 'h':
			cli_usage(stdout, "allow");
			return EXIT_OK;
		default:
			cli_usage(stderr, "allow");
			return EXIT_USAGE;
		}
	}
	if (optind != argc)
		return usage_error("list takes no arguments");

	c = cli_config_load();
	if (c == NULL)
		return EXIT_ERROR;
	/* no lock: the store is only ever replaced whole, by rename */
	if (store_load(c, &s) == -1)
		goto out_config;
	if (store_run_id(c->state_dir, run) == 0)
		runp = run;
	all = calloc(c->ngrants + s.n + 1, sizeof(*all));
	if (all == NULL) {
		fprintf(stderr, "allow: out of memory\n");
		goto out_store;
	}
	if (c->ngrants > 0)
		memcpy(all, c->grants, c->ngrants * sizeof(*all));
	if (s.n > 0)
		memcpy(all + c->ngrants, s.g, s.n * sizeof(*all));
	if (json) {
		ret = list_json(all, c->ngrants + s.n, time(NULL), runp);
	} else {
		list_table(all, c->ngrants + s.n, time(NULL), runp);
		ret = EXIT_OK;
	}
	if (fflush(stdout) == EOF) {
		fprintf(stderr, "allow: write stdout failed\n");
		ret = EXIT_ERROR;
	}
	free(all);
out_store:
	free(s.g);
out_config:
	config_free(c);
	return ret;
}

int cmd_allow(int argc, char **argv)
{
	if (argc < 2) {
		cli_usage(stderr, "allow");
		return EXIT_USAGE;
	}
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
		cli_usage(stdout, "allow");
		return EXIT_OK;
	}
	if (strcmp(argv[1], "add") == 0)
		return allow_add(argc - 1, argv + 1);
	if (strcmp(argv[1], "rm") == 0)
		return allow_rm(argc - 1, argv + 1);
	if (strcmp(argv[1], "list") == 0)
		return allow_list(argc - 1, argv + 1);
	return usage_error("unknown subcommand \"%s\"", argv[1]);
}
