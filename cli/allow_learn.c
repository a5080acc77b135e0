/*
 * allow_learn.c: `sluice allow enforce` (the mode, held in the grant store)
 * and `sluice allow learn` (what the last learn window would have refused).
 *
 * enforce on|off|learn writes the store's mode line (grant.h), which the
 * proxy and sluice-dns apply within a second; without one the config's
 * mode holds. learn observes (refuses nothing, logs each would-be refusal)
 * until its deadline (default 1 h, at most 8 h), and from then on the
 * daemons enforce by the clock alone. The store's learned line keeps the
 * last window: from its start to its deadline, or to the moment the mode
 * was changed.
 *
 * learn reads that window's observe rows with reason not-granted from the
 * network log (allow_log_read: the file and its rotations), groups them by
 * the grant that would have allowed them (host, and port unless bare), and
 * leaves out what a live grant now serves for everyone who asked and what
 * the operator said never to (STATE/learn.never, one pattern a line). Each
 * group names its count, first and last time, who asked (named from the
 * engine snapshots when read), up to three user agents and three path
 * prefixes (two segments, no query). On a terminal each is offered: o once
 * (15 min), s session, p permanent (scoped to the principals that asked;
 * to everyone, once the operator confirms it, when one was unattributed or
 * more than GRANT_SCOPES_MAX asked), n later, v never. Without a terminal
 * it prints the `sluice allow add` lines and grants nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "store.h"

#define LEARN_DEFAULT (60 * 60)
#define LEARN_MAX (8 * 60 * 60)
#define ONCE_TTL (15 * 60)
#define NEVER_NAME "learn.never"
#define ENGINE_NAME "engine.jsonl"
#define PATTERN_MAX (HOST_NAME_MAX_LEN + 16)
#define KEEP 3          /* user agents and path prefixes shown per group */
#define WHO_MAX 16      /* principals kept per group */
#define PREFIX_MAX 64   /* bytes of a path prefix */
#define UA_MAX 120

static int usage(const char *msg, const char *arg)
{
	fprintf(stderr, "allow: %s%s%s\n", msg, arg != NULL ? " " : "", arg != NULL ? arg : "");
	cli_usage(stderr, "allow");
	return EXIT_USAGE;
}

/* "1h0m0s" */
static char *span(long long s, char *buf, size_t size)
{
	snprintf(buf, size, "%lldh%lldm%llds", s / 3600, s % 3600 / 60, s % 60);
	return buf;
}

/* What the mode is now, in one line. */
static void mode_print(const struct config *c, const struct grant_mode *m, time_t now)
{
	char a[32], d[32];

	if (!m->set)
		printf("%s (the config's mode; no `sluice allow enforce` yet)\n",
		       c->mode == MODE_OBSERVE ? "observe" : "enforce");
	else if (m->kind == GRANT_MODE_LEARN && now < m->until)
		printf("learn until %s (%s left), then enforce\n", cli_time_text(m->until, a, sizeof(a)),
		       span((long long)(m->until - now), d, sizeof(d)));
	else if (m->kind == GRANT_MODE_LEARN)
		printf("enforce (the learn window ended at %s)\n", cli_time_text(m->until, a, sizeof(a)));
	else
		printf("%s (since %s)\n", grant_mode_name(m->kind), cli_time_text(m->since, a, sizeof(a)));
}

int allow_enforce(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "for", required_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *for_arg = NULL, *what;
	long long secs = LEARN_DEFAULT;
	struct allow_store s;
	struct config *c;
	time_t now;
	int opt, lockfd, ret = EXIT_ERROR;

	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'f':
			for_arg = optarg;
			break;
		case 'h':
			cli_usage(stdout, "allow");
			return EXIT_OK;
		default:
			cli_usage(stderr, "allow");
			return EXIT_USAGE;
		}
	}
	if (argc - optind > 1)
		return usage("enforce takes on, off or learn", NULL);
	what = argc - optind == 1 ? argv[optind] : NULL;
	if (what != NULL && strcmp(what, "on") != 0 && strcmp(what, "off") != 0 &&
	    strcmp(what, "learn") != 0)
		return usage("enforce takes on, off or learn, not", what);
	if (for_arg != NULL && (what == NULL || strcmp(what, "learn") != 0))
		return usage("--for applies only to enforce learn", NULL);
	if (for_arg != NULL && (allow_duration_parse(for_arg, &secs) == -1 || secs > LEARN_MAX))
		return usage("--for takes 1s to 8h (a learn window always ends), not", for_arg);

	c = cli_config_load();
	if (c == NULL)
		return EXIT_ERROR;
	lockfd = allow_store_lock(c);
	if (lockfd == -1)
		goto out_config;
	if (allow_store_load(c, &s) == -1)
		goto out_unlock;
	now = time(NULL);
	if (what == NULL) {
		mode_print(c, &s.mode, now);
		ret = EXIT_OK;
		goto out_free;
	}
	/* a window still open ends now: learn reads it up to here */
	if (s.mode.set && s.mode.kind == GRANT_MODE_LEARN && now < s.mode.until && s.mode.learned)
		s.mode.learn_end = now;
	s.mode.set = true;
	s.mode.since = now;
	s.mode.until = 0;
	if (strcmp(what, "learn") == 0) {
		s.mode.kind = GRANT_MODE_LEARN;
		s.mode.until = now + (time_t)secs;
		s.mode.learned = true;
		s.mode.learn_start = now;
		s.mode.learn_end = s.mode.until;
	} else {
		s.mode.kind = strcmp(what, "on") == 0 ? GRANT_MODE_ENFORCE : GRANT_MODE_OBSERVE;
	}
	if (allow_store_save(c, &s) == -1)
		goto out_free;
	mode_print(c, &s.mode, now);
	ret = EXIT_OK;
out_free:
	free(s.g);
out_unlock:
	close(lockfd);
out_config:
	config_free(c);
	return ret;
}

/* --- the window's would-be refusals -------------------------------------- */

struct asker {
	char word[SCOPE_TEXT_MAX + 1]; /* the scope that names it; "" unattributed */
	char src[64], net[SCOPE_TEXT_MAX + 1], as[SCOPE_TEXT_MAX + 1];
	int64_t t_ms;                  /* its last row, for naming it */
};

struct group {
	char pattern[PATTERN_MAX];
	char host[HOST_NAME_MAX_LEN + 1];
	uint16_t port;
	bool connect;
	size_t count;
	int64_t first_ms, last_ms;
	struct asker who[WHO_MAX];
	size_t nwho;
	bool unattributed;             /* one asker had no stamp */
	bool many;                     /* more askers than WHO_MAX */
	char ua[KEEP][UA_MAX + 1];
	size_t nua;
	char path[KEEP][UA_MAX + 1];   /* prefixes, PREFIX_MAX at most */
	size_t npath;
};

struct groups {
	struct group *v;
	size_t n, cap;
};

static const char *str_of(json_t *row, const char *key)
{
	return json_string_value(json_object_get(row, key));
}

/* "/a/b/c?q" as "/a/b": two segments, no query, capped. */
static void path_prefix(const char *path, char *out, size_t size)
{
	size_t n = 0, slashes = 0;

	while (path[n] != '\0' && path[n] != '?' && path[n] != '#' && n + 1 < size) {
		if (path[n] == '/' && ++slashes == 3)
			break;
		n++;
	}
	memcpy(out, path, n);
	out[n] = '\0';
}

/*
 * Keep s (cut to cap) among v[0..*n) unless there already or KEEP are kept.
 * What a client sent goes to the operator's terminal: every byte that is
 * not printable ASCII (controls, and UTF-8 that could spell a C1 control)
 * is kept as '?'.
 */
static void keep_text(char (*v)[UA_MAX + 1], size_t *n, const char *s, size_t cap)
{
	char clean[UA_MAX + 1];
	size_t i;

	for (i = 0; s[i] != '\0' && i < cap && i < UA_MAX; i++)
		clean[i] = (unsigned char)s[i] >= 0x20 && (unsigned char)s[i] < 0x7f ? s[i] : '?';
	clean[i] = '\0';
	for (i = 0; i < *n; i++)
		if (strcmp(v[i], clean) == 0)
			return;
	if (*n < KEEP)
		memcpy(v[(*n)++], clean, strlen(clean) + 1);
}

static struct group *group_of(struct groups *gs, const char *pattern)
{
	struct group *g;

	for (size_t i = 0; i < gs->n; i++)
		if (strcmp(gs->v[i].pattern, pattern) == 0)
			return &gs->v[i];
	if (gs->n == gs->cap) {
		size_t cap = gs->cap ? gs->cap * 2 : 16;
		struct group *grown = realloc(gs->v, cap * sizeof(*grown));

		if (grown == NULL)
			return NULL;
		gs->v = grown;
		gs->cap = cap;
	}
	g = &gs->v[gs->n++];
	memset(g, 0, sizeof(*g));
	snprintf(g->pattern, sizeof(g->pattern), "%s", pattern);
	return g;
}

/* Count one would-be refusal row into its group. Returns 0, or -1 out of memory. */
static int row_add(struct groups *gs, json_t *row, int64_t t_ms)
{
	const char *host = str_of(row, "host"), *kind = str_of(row, "kind");
	const char *who = str_of(row, "who"), *ua = str_of(row, "ua"), *path = str_of(row, "path");
	const char *src = NULL, *net = NULL, *as = NULL;
	json_int_t port = json_integer_value(json_object_get(row, "port"));
	char pattern[PATTERN_MAX], word[SCOPE_TEXT_MAX + 1] = "", prefix[PREFIX_MAX + 1];
	struct group *g;
	bool connect, bare;
	size_t i;

	/* an exchange's own row only: not a run's probe or its own rows, not a long
	 * exchange's open and progress rows (its own row counts it) */
	if (host == NULL || kind == NULL || port < 1 || port > 65535 || !log_row_is_exchange(row))
		return 0;
	connect = strcmp(kind, "tunnel") == 0 || strcmp(kind, "https") == 0 ||
		  strcmp(kind, "wss") == 0;
	bare = (connect && port == 443) || (!connect && port == 80);
	host_port_format(pattern, sizeof(pattern), host, bare ? HOST_PORT_NONE : (unsigned)port);
	g = group_of(gs, pattern);
	if (g == NULL)
		return -1;
	if (g->count == 0) {
		snprintf(g->host, sizeof(g->host), "%s", host);
		g->port = (uint16_t)port;
		g->connect = connect;
		g->first_ms = t_ms;
	}
	g->count++;
	if (t_ms < g->first_ms)
		g->first_ms = t_ms;
	if (t_ms > g->last_ms)
		g->last_ms = t_ms;
	if (who != NULL && strcmp(who, "unattributed") != 0) {
		src = str_of(row, "src");
		net = str_of(row, "net");
		as = log_row_as(row);
		if (as != NULL && as[0] != '\0')
			snprintf(word, sizeof(word), "%s", as);
		else if (src != NULL && net != NULL)
			snprintf(word, sizeof(word), "%s@%s", src, net);
	}
	if (word[0] == '\0')
		g->unattributed = true; /* only an unscoped grant serves it */
	for (i = 0; i < g->nwho && strcmp(g->who[i].word, word) != 0; i++)
		;
	if (i == g->nwho && g->nwho < WHO_MAX) {
		struct asker *a = &g->who[g->nwho++];

		snprintf(a->word, sizeof(a->word), "%s", word);
		snprintf(a->src, sizeof(a->src), "%s", src != NULL ? src : "");
		snprintf(a->net, sizeof(a->net), "%s", net != NULL ? net : "");
		snprintf(a->as, sizeof(a->as), "%s", as != NULL ? as : "");
	} else if (i == g->nwho) {
		g->many = true;
	}
	if (i < g->nwho && t_ms >= g->who[i].t_ms)
		g->who[i].t_ms = t_ms;
	if (ua != NULL && ua[0] != '\0')
		keep_text(g->ua, &g->nua, ua, UA_MAX);
	if (path != NULL && path[0] == '/') {
		path_prefix(path, prefix, sizeof(prefix));
		keep_text(g->path, &g->npath, prefix, PREFIX_MAX);
	}
	return 0;
}

/* The window's observe rows of reason not-granted, from every file of the log, into gs. */
static int window_read(const struct config *c, time_t start, time_t end, struct groups *gs)
{
	for (unsigned k = c->log_keep + 1; k-- > 0;) {
		char *buf, *line;
		size_t len;
		int r;

		r = allow_log_read(c, k, &buf, &len);
		if (r == -1)
			return -1;
		for (line = buf; r == 1 && line < buf + len;) {
			char *nl = memchr(line, '\n', (size_t)(buf + len - line));
			size_t ll = (size_t)((nl != NULL ? nl : buf + len) - line);
			json_t *row = NULL;
			const char *ts;
			int64_t t_ms;

			/* most rows are not would-be refusals: look before parsing */
			if (memmem(line, ll, "\"decision\":\"observe\"", 20) != NULL &&
			    memmem(line, ll, "\"reason\":\"not-granted\"", 22) != NULL)
				row = json_loadb(line, ll, 0, NULL);
			ts = row != NULL ? str_of(row, "ts") : NULL;
			if (ts != NULL && snapshot_ts_parse(ts, &t_ms) == 0 &&
			    t_ms >= (int64_t)start * 1000 && t_ms < ((int64_t)end + 1) * 1000 &&
			    row_add(gs, row, t_ms) == -1) {
				json_decref(row);
				free(buf);
				fprintf(stderr, "allow: out of memory\n");
				return -1;
			}
			json_decref(row);
			line += ll + 1;
		}
		free(buf);
	}
	return 0;
}

/* STATE/learn.never: whether pattern is in it. */
static bool never_has(const struct config *c, const char *pattern)
{
	char path[PATH_MAX], line[PATTERN_MAX + 2];
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", c->state_dir, NEVER_NAME);
	f = fopen(path, "re");
	if (f == NULL)
		return false;
	while (!found && fgets(line, sizeof(line), f) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		found = strcmp(line, pattern) == 0;
	}
	fclose(f);
	return found;
}

static int never_add(const struct config *c, const char *pattern)
{
	char path[PATH_MAX];
	int fd, ok;

	snprintf(path, sizeof(path), "%s/%s", c->state_dir, NEVER_NAME);
	fd = cli_open_state("allow", path, O_WRONLY | O_CREAT | O_APPEND, 0644);
	if (fd == -1)
		return -1;
	ok = dprintf(fd, "%s\n", pattern) > 0;
	close(fd);
	if (!ok)
		fprintf(stderr, "allow: write %s: %s\n", path, strerror(errno));
	return ok ? 0 : -1;
}

/* Whether p (the policy now) serves every principal of g that asked. */
static bool served(const struct policy *p, const struct group *g, time_t now)
{
	struct host h;
	const char *err;

	if (p == NULL || host_canon(g->host, strlen(g->host), &h, &err) == -1 || g->many ||
	    g->unattributed)
		return false;
	for (size_t i = 0; i < g->nwho; i++) {
		const struct asker *a = &g->who[i];
		char who[sizeof(a->src) + sizeof(a->net) + 2];
		struct policy_request r = { .via = g->connect ? GRANT_VIA_CONNECT : GRANT_VIA_HTTP,
					    .host = &h, .port = g->port };
		struct verdict v;

		snprintf(who, sizeof(who), "%s@%s", a->src, a->net);
		r.who = a->src[0] != '\0' ? who : NULL;
		r.src = a->src[0] != '\0' ? a->src : NULL;
		r.as = a->as;
		policy_judge(p, &r, now, &v);
		if (!v.allow || v.observed)
			return false;
	}
	return true;
}

/* Why g's grant must serve every connection; NULL when it can name each who asked. */
static const char *group_everyone(const struct group *g)
{
	if (g->unattributed)
		return "an unattributed client asked";
	_Static_assert(GRANT_SCOPES_MAX == 8, "the words below name GRANT_SCOPES_MAX");
	if (g->many || g->nwho > GRANT_SCOPES_MAX)
		return "more asked than the 8 principals a grant can name";
	return NULL;
}

/* The grant g asks for into gr, and as a command line into cmd. Returns 0 or -1. */
static int group_grant(const struct group *g, struct grant *gr, char *cmd, size_t size)
{
	const char *err;
	size_t off;

	if (allow_pattern(g->pattern, gr) == -1)
		return -1;
	off = (size_t)snprintf(cmd, size, "sluice allow add %s", g->pattern);
	for (size_t i = 0; group_everyone(g) == NULL && i < g->nwho; i++) {
		if (grant_scope_add(gr, g->who[i].word, &err) == -1) {
			fprintf(stderr, "allow: %s: principal %s: %s\n", g->pattern, g->who[i].word, err);
			return -1;
		}
		if (off < size)
			off += (size_t)snprintf(cmd + off, size - off, " --for %s", g->who[i].word);
	}
	return 0;
}

static void group_print(FILE *out, const struct group *g, const struct snapshots *snaps)
{
	char a[SNAP_TS_LEN + 1], b[SNAP_TS_LEN + 1], label[LOG_WHO_MAX];

	snapshot_ts_format(g->first_ms, a);
	snapshot_ts_format(g->last_ms, b);
	fprintf(out, "# %s: %zu would-be refusal%s, %s .. %s\n#   who: ", g->pattern, g->count,
		g->count == 1 ? "" : "s", a, b);
	for (size_t i = 0; i < g->nwho; i++) {
		const struct asker *w = &g->who[i];
		struct principal_row r = { .t_ms = w->t_ms, .has_t = true,
					   .src = w->src[0] ? w->src : NULL,
					   .net = w->net[0] ? w->net : NULL,
					   .as = w->as[0] ? w->as : NULL };
		struct principal p;

		principal_from_row(snaps, &r, &p);
		principal_label(&p, label, sizeof(label));
		fprintf(out, "%s%s", i ? ", " : "", label);
	}
	fprintf(out, "%s\n", g->many ? ", ..." : "");
	if (group_everyone(g) != NULL)
		fprintf(out, "#   %s: this grant serves every connection\n", group_everyone(g));
	for (size_t i = 0; i < g->nua; i++)
		fprintf(out, "%s%s", i ? ", " : "#   agents: ", g->ua[i]);
	if (g->nua > 0)
		fputc('\n', out);
	for (size_t i = 0; i < g->npath; i++)
		fprintf(out, "%s%s", i ? ", " : "#   paths: ", g->path[i]);
	if (g->npath > 0)
		fputc('\n', out);
}

static int by_count(const void *x, const void *y)
{
	const struct group *a = x, *b = y;

	if (a->count != b->count)
		return a->count > b->count ? -1 : 1;
	return strcmp(a->pattern, b->pattern);
}

/* Ask on the terminal; one of letters typed alone. Returns it, or 0 at end of input. */
static int ask(const char *question, const char *letters)
{
	char line[64];

	for (;;) {
		printf("%s", question);
		fflush(stdout);
		if (fgets(line, sizeof(line), stdin) == NULL)
			return 0;
		if (line[0] != '\0' && strchr(letters, line[0]) != NULL &&
		    (line[1] == '\n' || line[1] == '\0'))
			return line[0];
		printf("answer one of %s\n", letters);
	}
}

/*
 * What to do with g: o, s, p, n or v, or 0 at end of input. A grant that
 * would serve every connection is granted only once that is confirmed.
 */
static int ask_group(const struct group *g)
{
	int a = ask("grant it? [o]nce 15m, [s]ession, [p]ermanent, [n] later, ne[v]er: ", "ospnv");

	if (a == 0 || strchr("osp", a) == NULL || group_everyone(g) == NULL)
		return a;
	switch (ask("to every connection, not only who asked? [y]es, [n]o: ", "yn")) {
	case 'y':
		return a;
	case 'n':
		printf("not granted\n");
		return 'n';
	default:
		return 0;
	}
}

int allow_learn(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char store_path[PATH_MAX + 16], run[GRANT_RUN_ID_LEN + 1], a[32], b[32], cmd[2048];
	struct snapshots snaps = { 0 };
	struct groups gs = { 0 };
	struct allow_store s;
	struct policy *p = NULL;
	struct config *c;
	bool tty = isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
	size_t skipped = 0, offered = 0;
	time_t now = time(NULL), end;
	int opt, ret = EXIT_ERROR;

	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (opt == 'h') {
			cli_usage(stdout, "allow");
			return EXIT_OK;
		}
		cli_usage(stderr, "allow");
		return EXIT_USAGE;
	}
	if (optind != argc)
		return usage("learn takes no arguments", NULL);
	c = cli_config_load();
	if (c == NULL)
		return EXIT_ERROR;
	if (allow_store_load(c, &s) == -1)
		goto out_config;
	if (!s.mode.learned) {
		fprintf(stderr, "allow: no learn window yet: start one with sluice allow enforce learn "
				"[--for DURATION]\n");
		goto out_store;
	}
	end = s.mode.learn_end < now ? s.mode.learn_end : now;
	if (window_read(c, s.mode.learn_start, end, &gs) == -1)
		goto out_groups;
	snprintf(store_path, sizeof(store_path), "%s/grants", c->state_dir);
	p = store_policy(c, store_path, store_run_id(c->state_dir, run) == 0 ? run : NULL, "allow",
			 NULL);
	snprintf(cmd, sizeof(cmd), "%s/%s", c->state_dir, ENGINE_NAME);
	if (snapshot_load(cmd, "allow", &snaps, stderr) == -1)
		snapshots_release(&snaps);
	qsort(gs.v, gs.n, sizeof(*gs.v), by_count);
	printf("# learn window %s .. %s%s: %zu host%s would have been refused\n",
	       cli_time_text(s.mode.learn_start, a, sizeof(a)), cli_time_text(s.mode.learn_end, b, sizeof(b)),
	       s.mode.learn_end > now ? " (still open)" : "", gs.n, gs.n == 1 ? "" : "s");
	ret = EXIT_OK;
	for (size_t i = 0; i < gs.n; i++) {
		struct group *g = &gs.v[i];
		struct grant gr;
		int answer;

		if (never_has(c, g->pattern) || served(p, g, now)) {
			skipped++;
			continue;
		}
		if (group_grant(g, &gr, cmd, sizeof(cmd)) == -1) {
			ret = EXIT_ERROR;
			continue;
		}
		offered++;
		group_print(stdout, g, &snaps);
		printf("%s\n", cmd);
		if (!tty)
			continue;
		answer = ask_group(g);
		if (answer == 0)
			break;
		if ((answer == 'o' && allow_grant(stdout, c, &gr, GRANT_ONCE, ONCE_TTL) == -1) ||
		    (answer == 's' && allow_grant(stdout, c, &gr, GRANT_SESSION, 0) == -1) ||
		    (answer == 'p' && allow_grant(stdout, c, &gr, GRANT_PERMANENT, 0) == -1) ||
		    (answer == 'v' && never_add(c, g->pattern) == -1))
			ret = EXIT_ERROR;
		else if (answer == 'v')
			printf("not offered again (%s/%s)\n", c->state_dir, NEVER_NAME);
	}
	if (skipped > 0)
		printf("# %zu more already granted or marked never\n", skipped);
	if (!tty && offered > 0)
		printf("# not a terminal: nothing granted; run the lines above to grant\n");
out_groups:
	policy_free(p);
	snapshots_release(&snaps);
	free(gs.v);
out_store:
	free(s.g);
out_config:
	config_free(c);
	return ret;
}
