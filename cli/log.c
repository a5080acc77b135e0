/*
 * log.c: `sluice log`: read the network log (docs/network-log.md).
 *
 * Reads the live log file named by the config's `log`, names each row's
 * principal from the engine snapshots in STATE/engine.jsonl (principal.c:
 * at read time, so a better resolution or a later snapshot names old rows
 * too), filters rows by host, decision and principal, and prints them as a
 * table, as the JSON lines with a "principal" object added, or grouped
 * (--by-host, --by-who, --by-rule, --refused: logview.c). With -f it keeps
 * polling (every 200 ms), follows the file across rotation (a new inode at
 * the path) and truncation, and re-reads the snapshots when they change
 * (log_reader.c, shared with `sluice watch`). A row or a
 * snapshot that does not parse is reported with its line number and
 * skipped. It does not read rotated files (FILE.1 ...) and never writes to
 * the log or the snapshots. `log verify` (log_verify.c) checks a chained
 * log's hashes, rotated files included.
 *
 * --dns reads sluice-dns's query log (the config's `dns-log`) through the
 * same reader: a DNS row is one query, with no stamp and so no principal
 * (no snapshots are read, --who and the views but --refused do not apply,
 * --json prints the rows as they are). struct rows holds what differs between the two.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "digits.h"
#include "file.h"
#include "runnote.h"
#include "utf8.h"

#define TAIL_MAX 10000000
#define POLL_NS (200 * 1000 * 1000L)
#define VERIFY_DNS_WHY "log verify checks the network log; name the DNS log's files instead: " \
		       "sluice log verify FILE FILE.1 ..."

/* What differs between the network log's rows and the DNS log's. */
struct filter {
	struct host host; /* exact host, or the suffix when host_suffix */
	bool has_host;
	bool host_suffix;     /* "*.suffix": subdomains only */
	const char *decision; /* NULL: any */
	const char *who;      /* --who: principal_matches_who; NULL: any */
	char run[RUNNOTE_ID_LEN + 1]; /* --run ID (or --who sluice-ID): that run's rows; "" any */
	const char *name;     /* --name AGENT: the rows of runs named so; NULL any */
};

#define RUNS_SEEN_MAX 1024

/* The runs whose start or end row was read, so far: their names, for --name and the table. */
struct runs_seen {
	struct {
		char id[RUNNOTE_ID_LEN + 1];
		char name[RUNNOTE_NAME_MAX + 1];
	} v[RUNS_SEEN_MAX];
	size_t n, next; /* past RUNS_SEEN_MAX the oldest is replaced */
};

/* The last n matching raw rows, oldest first from head. */
struct tail {
	char **rows; /* n slots, owned */
	size_t n;
	size_t head; /* oldest row */
	size_t count;
};

struct view {
	const struct log_rows *rows;
	const struct filter *f;
	struct tail *tail;      /* not NULL: collect instead of printing */
	struct logview *group;  /* not NULL: count into it, print at the end */
	struct log_snaps *snaps;
	struct runs_seen *runs;
	bool json;
};

const char *log_row_as(json_t *row)
{
	const char *build = json_string_value(json_object_get(row, "build"));

	/* a build token's build:NAME comes before the stamp's as=, as the proxy judged it */
	if (build != NULL && strncmp(build, "build:", 6) == 0)
		return build;
	return json_string_value(json_object_get(row, "as"));
}

/*
 * The `sluice run` a row is of, its 12-hex id, in id (RUNNOTE_ID_LEN + 1):
 * its "sandbox", else a network named sluice-ID. Returns false for none.
 */
static bool row_sandbox(json_t *row, char *id)
{
	const char *s = json_string_value(json_object_get(row, "sandbox"));
	const char *net = json_string_value(json_object_get(row, "net"));

	if (s == NULL && net != NULL && strncmp(net, "sluice-", 7) == 0)
		s = net + 7;
	if (s == NULL || !runnote_id_ok(s, strlen(s)))
		return false;
	memcpy(id, s, RUNNOTE_ID_LEN + 1);
	return true;
}

/* The name of run id, as its rows read so far say, or NULL. */
static const char *run_name(const struct runs_seen *rs, const char *id)
{
	for (size_t i = 0; i < rs->n; i++)
		if (strcmp(rs->v[i].id, id) == 0)
			return rs->v[i].name;
	return NULL;
}

/* A run's own row ("kind":"run") read: its name kept for the rows after it. */
static void runs_learn(struct runs_seen *rs, json_t *row)
{
	const char *kind = json_string_value(json_object_get(row, "kind"));
	const char *name = json_string_value(json_object_get(row, "name"));
	char id[RUNNOTE_ID_LEN + 1];
	size_t slot;

	if (kind == NULL || strcmp(kind, "run") != 0 || name == NULL || !row_sandbox(row, id) ||
	    run_name(rs, id) != NULL)
		return;
	if (rs->n < RUNS_SEEN_MAX) {
		slot = rs->n++;
	} else {
		slot = rs->next;
		rs->next = (rs->next + 1) % RUNS_SEEN_MAX;
	}
	snprintf(rs->v[slot].id, sizeof(rs->v[slot].id), "%s", id);
	snprintf(rs->v[slot].name, sizeof(rs->v[slot].name), "%s", name);
}

/*
 * A row's principal, from the snapshots, in *p; returns p, or NULL for a
 * row that has none (a DNS row). Its strings live as long as row and v->snaps.
 */
static const struct principal *row_principal(const struct view *v, json_t *row,
					     struct principal *p)
{
	struct principal_row r;
	const char *ts = json_string_value(json_object_get(row, "ts"));
	const char *who = json_string_value(json_object_get(row, "who"));

	if (!v->rows->principals)
		return NULL;
	memset(&r, 0, sizeof(r));
	r.has_t = ts != NULL && snapshot_ts_parse(ts, &r.t_ms) == 0;
	/* an unattributed row has no verified stamp, whatever else it carries */
	if (who == NULL || strcmp(who, "unattributed") != 0) {
		r.src = json_string_value(json_object_get(row, "src"));
		r.net = json_string_value(json_object_get(row, "net"));
		r.as = log_row_as(row);
	}
	principal_from_row(&v->snaps->all, &r, p);
	return p;
}

static bool row_matches(const struct view *v, json_t *row, const struct principal *p)
{
	const struct filter *f = v->f;

	if (f->has_host) {
		const char *h = json_string_value(json_object_get(row, v->rows->host_key));
		size_t hl, sl;

		if (h == NULL)
			return false;
		if (!f->host_suffix)
			return strcmp(h, f->host.name) == 0;
		hl = strlen(h);
		sl = strlen(f->host.name);
		if (hl <= sl + 1 || h[hl - sl - 1] != '.' || strcmp(h + hl - sl, f->host.name) != 0)
			return false;
	}
	if (f->decision != NULL) {
		const char *d = json_string_value(json_object_get(row, "decision"));

		if (d == NULL || strcmp(d, f->decision) != 0)
			return false;
	}
	if (f->run[0] != '\0' || f->name != NULL) {
		char id[RUNNOTE_ID_LEN + 1];
		const char *name;

		if (!row_sandbox(row, id) || (f->run[0] != '\0' && strcmp(id, f->run) != 0))
			return false;
		name = run_name(v->runs, id);
		if (f->name != NULL && (name == NULL || strcmp(name, f->name) != 0))
			return false;
	}
	return f->who == NULL || (p != NULL && principal_matches_who(f->who, p));
}

static bool is_json_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/*
 * The raw row with ,"principal":{...} added before its closing brace: the
 * row's own bytes are kept as the proxy wrote them, except what a terminal
 * would act on, which an older writer left raw (log_put_json). p NULL: the
 * row as it is.
 */
static void put_json_row(const char *s, size_t len, const struct principal *p)
{
	json_t *o = p != NULL ? log_principal_json(p) : NULL;
	char *text = o != NULL ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
	size_t end = len, before;

	while (end > 0 && is_json_space(s[end - 1]))
		end--;
	if (text == NULL || end == 0 || s[end - 1] != '}') {
		log_put_json(s, len); /* no principal, or out of memory */
	} else {
		for (before = end - 1; before > 0 && is_json_space(s[before - 1]); before--)
			;
		log_put_json(s, end - 1);
		fputs(before > 0 && s[before - 1] == '{' ? "\"principal\":" : ",\"principal\":",
		      stdout);
		log_put_json(text, strlen(text));
		putchar('}');
	}
	putchar('\n');
	free(text);
	json_decref(o);
}

/* Print (or count) one raw row that is known to parse and match. */
static void emit(const struct view *v, const char *s, size_t len, json_t *row,
		 const struct principal *p)
{
	if (v->group != NULL) {
		if (logview_add(v->group, row, p) == -1)
			fprintf(stderr, "log: out of memory; a row left out\n");
	} else if (v->json) {
		put_json_row(s, len, p);
	} else {
		char id[RUNNOTE_ID_LEN + 1];
		const char *name;

		/* a run's request names the run, as its start row did */
		if (v->runs != NULL && json_object_get(row, "name") == NULL && row_sandbox(row, id) &&
		    (name = run_name(v->runs, id)) != NULL)
			json_object_set_new(row, "name", json_string(name));
		v->rows->row(row, p);
	}
}

static void tail_push(struct tail *t, const char *s, size_t len)
{
	char *copy;
	size_t slot;

	if (t->n == 0)
		return;
	copy = strndup(s, len);
	if (copy == NULL) {
		fprintf(stderr, "log: out of memory; a row left out\n");
		return;
	}
	if (t->count == t->n) {
		slot = t->head;
		free(t->rows[slot]);
		t->head = (t->head + 1) % t->n;
	} else {
		slot = (t->head + t->count) % t->n;
		t->count++;
	}
	t->rows[slot] = copy;
}

/* One complete line of r's file (a log_line_fn; arg is the view). */
static void row_handle(void *arg, const struct log_reader *r, const char *s, size_t len)
{
	const struct view *v = arg;
	json_t *row;
	json_error_t jerr;
	struct principal p;
	const struct principal *pp;
	const char *kind;

	if (len > 0 && s[len - 1] == '\r')
		len--;
	if (len == 0)
		return;
	row = json_loadb(s, len, 0, &jerr);
	if (row == NULL || !json_is_object(row)) {
		fprintf(stderr, "log: %s:%zu: unreadable row\n", r->path, r->line);
		json_decref(row);
		return;
	}
	kind = json_string_value(json_object_get(row, "kind"));
	if (v->rows->kind != NULL && (kind == NULL || strcmp(kind, v->rows->kind) != 0)) {
		fprintf(stderr, "log: %s:%zu: not a %s row\n", r->path, r->line, v->rows->kind);
		json_decref(row);
		return;
	}
	if (v->runs != NULL)
		runs_learn(v->runs, row);
	pp = row_principal(v, row, &p);
	if (row_matches(v, row, pp)) {
		if (v->tail != NULL)
			tail_push(v->tail, s, len);
		else
			emit(v, s, len, row, pp);
	}
	json_decref(row);
}

static void tail_flush(struct view *v)
{
	struct tail *t = v->tail;

	v->tail = NULL;
	for (size_t i = 0; i < t->count; i++) {
		size_t slot = (t->head + i) % t->n;
		json_t *row = json_loads(t->rows[slot], 0, NULL);
		struct principal p;

		if (row != NULL)
			emit(v, t->rows[slot], strlen(t->rows[slot]), row,
			     row_principal(v, row, &p));
		json_decref(row);
		free(t->rows[slot]);
		t->rows[slot] = NULL;
	}
	t->count = 0;
}

static void put_read_error(const char *path, int e)
{
	fprintf(stderr, "log: read %s: ", path);
	cli_put_strerror(stderr, e);
	fputc('\n', stderr);
}

/* -f: poll for growth, rotation and truncation until killed. */
static int follow(const struct view *v, struct log_reader *r)
{
	const struct timespec pause = { 0, POLL_NS };

	for (;;) {
		if (v->rows->principals)
			log_snaps_refresh(v->snaps, "log");
		if (r->fd != -1 && log_reader_drain(r) == -1) {
			put_read_error(r->path, errno);
			return EXIT_ERROR;
		}
		if (fflush(stdout) == EOF)
			return EXIT_ERROR;
		nanosleep(&pause, NULL);
		if (log_reader_poll(r) == -1) {
			put_read_error(r->path, errno);
			return EXIT_ERROR;
		}
	}
}

static int usage_error(const char *msg, const char *arg)
{
	fprintf(stderr, "log: %s \"%s\"\n", msg, arg);
	cli_usage(stderr, "log");
	return EXIT_USAGE;
}

/* Options that do not go together, and why. */
static int conflict(const char *opts, const char *why)
{
	fprintf(stderr, "log: conflicting options \"%s\": %s\n", opts, why);
	cli_usage(stderr, "log");
	return EXIT_USAGE;
}

static bool has_arg(int argc, char **argv, const char *arg)
{
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], arg) == 0)
			return true;
	}
	return false;
}

/*
 * What --dns rules out: a DNS row names no principal, so neither --who nor
 * a view counting principals (view, its option's name, or NULL) applies;
 * --decision error (a query that failed) is a DNS row's. Returns 0, or
 * EXIT_USAGE after saying why.
 */
static int dns_options_check(bool dns, const struct filter *f, const char *view, bool refused)
{
	bool error = f->decision != NULL && strcmp(f->decision, "error") == 0;
	char both[32];

	if (dns && f->who != NULL)
		return conflict("--dns --who", "a DNS row names no principal");
	if (dns && view != NULL && !refused) {
		snprintf(both, sizeof(both), "--dns %s", view);
		return conflict(both, "it counts principals and a DNS row names none (--dns "
				      "--refused counts per name)");
	}
	if (!dns && error)
		return usage_error("bad decision (allow, refuse or observe; error only with --dns)",
				   f->decision);
	if (refused && error)
		return conflict("--refused --decision error",
				"a query that failed was not refused");
	return 0;
}

static int host_filter(const char *arg, struct filter *f)
{
	const char *s = arg, *err = "bad host";

	if (strncmp(s, "*.", 2) == 0) {
		f->host_suffix = true;
		s += 2;
	}
	if (host_canon(s, strlen(s), &f->host, &err) == -1) {
		fprintf(stderr, "log: bad host \"%s\": %s\n", arg, err);
		return -1;
	}
	f->has_host = true;
	return 0;
}

/* --who: a principal as principal_matches_who reads it; "build:" needs its scope. */
static bool who_arg_ok(const char *w)
{
	size_t n = strlen(w);

	if (n == 0 || n > LOG_WHO_MAX || strcmp(w, "build:") == 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		if ((unsigned char)w[i] < 0x20 || w[i] == 0x7f)
			return false;
	}
	return true;
}

/* What the options of `sluice log` ask for. */
struct log_opts {
	struct filter f;
	const char *view; /* the grouping view's option, NULL: rows listed */
	enum logview_kind kind;
	size_t tail_n;    /* -n N: the last N rows */
	bool has_tail, do_follow, refused, dns, all, json;
};

/* --by-host, --by-who, --by-rule or --refused (opt B, W, U or R): one view only. */
static int view_option(struct log_opts *o, int opt)
{
	const char *name = opt == 'B' ? "--by-host" : opt == 'W' ? "--by-who"
			 : opt == 'U' ? "--by-rule" : "--refused";
	char both[48];

	if (o->view != NULL && strcmp(o->view, name) != 0) {
		snprintf(both, sizeof(both), "%s %s", o->view, name);
		return usage_error("conflicting options", both);
	}
	o->view = name;
	o->refused = opt == 'R';
	o->kind = opt == 'B' ? LOGVIEW_BY_HOST : opt == 'W' ? LOGVIEW_BY_WHO
		: opt == 'U' ? LOGVIEW_BY_RULE : LOGVIEW_REFUSED;
	return 0;
}

/* --who: a principal, or a run by its network's name (sluice-ID: that run's rows). */
static int who_option(struct filter *f, const char *arg)
{
	if (!who_arg_ok(arg))
		return usage_error("bad principal", arg);
	if (strncmp(arg, "sluice-", 7) == 0 && runnote_id_ok(arg + 7, strlen(arg + 7))) {
		snprintf(f->run, sizeof(f->run), "%s", arg + 7);
		return 0;
	}
	f->who = arg;
	return 0;
}

/* --run ID or sluice-ID. */
static int run_option(struct filter *f, const char *arg)
{
	const char *id = strncmp(arg, "sluice-", 7) == 0 ? arg + 7 : arg;

	if (!runnote_id_ok(id, strlen(id)))
		return usage_error("bad run (its 12 hex digits, or sluice-ID)", arg);
	snprintf(f->run, sizeof(f->run), "%s", id);
	return 0;
}

/* One option (getopt_long's opt, its optarg) into o. Returns 0, or the exit status. */
static int option_read(struct log_opts *o, int opt, const char *arg)
{
	uint64_t cnt;

	switch (opt) {
	case 'j':
		o->json = true;
		return 0;
	case 'H':
		return host_filter(arg, &o->f) == -1 ? EXIT_USAGE : 0;
	case 'd':
		if (strcmp(arg, "allow") != 0 && strcmp(arg, "refuse") != 0 &&
		    strcmp(arg, "observe") != 0 && strcmp(arg, "error") != 0)
			return usage_error("bad decision (allow, refuse or observe; "
					   "with --dns also error)", arg);
		o->f.decision = arg;
		return 0;
	case 'w':
		return who_option(&o->f, arg);
	case 'r':
		return run_option(&o->f, arg);
	case 'N':
		if (!runnote_name_ok(arg))
			return usage_error("bad name", arg);
		o->f.name = arg;
		return 0;
	case 'B':
	case 'W':
	case 'U':
	case 'R':
		return view_option(o, opt);
	case 'D':
		o->dns = true;
		return 0;
	case 'A':
		o->all = true;
		return 0;
	case 'n':
		if (dec_parse(arg, strlen(arg), TAIL_MAX, &cnt) == -1)
			return usage_error("bad row count", arg);
		o->tail_n = (size_t)cnt;
		o->has_tail = true;
		return 0;
	case 'f':
		o->do_follow = true;
		return 0;
	case 'h':
		cli_usage(stdout, "log");
		return EXIT_OK;
	default:
		cli_usage(stderr, "log");
		return EXIT_USAGE;
	}
}

/* The options that do not go together, once all are read. Returns 0 or EXIT_USAGE. */
static int options_check(struct log_opts *o, int argc, char **argv)
{
	struct filter *f = &o->f;
	char both[48];

	if (optind != argc && o->dns && strcmp(argv[optind], "verify") == 0)
		return conflict("--dns verify", VERIFY_DNS_WHY);
	if (optind != argc)
		return usage_error("unexpected argument", argv[optind]);
	if (o->all && (o->view == NULL || o->dns))
		return conflict(o->dns ? "--all --dns" : "--all without a view",
				"--all counts the quiet rows in --by-host, --by-who, --by-rule or --refused; "
				"listed, every row shows");
	if (dns_options_check(o->dns, f, o->view, o->refused) != 0)
		return EXIT_USAGE;
	if (o->dns && (f->run[0] != '\0' || f->name != NULL))
		return conflict("--dns --run/--name", "a DNS row names no run");
	if (o->do_follow && o->view != NULL) { /* a view counts rows up to the end */
		snprintf(both, sizeof(both), "-f %s", o->view);
		return usage_error("conflicting options", both);
	}
	if (o->refused && f->decision == NULL)
		f->decision = "refuse";
	if (o->refused && strcmp(f->decision, "allow") == 0)
		return usage_error("conflicting options", "--refused --decision allow");
	return 0;
}

static const struct option log_longopts[] = {
	{ "json", no_argument, NULL, 'j' },
	{ "host", required_argument, NULL, 'H' },
	{ "decision", required_argument, NULL, 'd' },
	{ "who", required_argument, NULL, 'w' },
	{ "run", required_argument, NULL, 'r' },
	{ "name", required_argument, NULL, 'N' },
	{ "by-host", no_argument, NULL, 'B' },
	{ "by-who", no_argument, NULL, 'W' },
	{ "by-rule", no_argument, NULL, 'U' },
	{ "refused", no_argument, NULL, 'R' },
	{ "all", no_argument, NULL, 'A' },
	{ "dns", no_argument, NULL, 'D' },
	{ "follow", no_argument, NULL, 'f' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* The options into o. Returns -1 to go on, or the exit status. */
static int args_parse(int argc, char **argv, struct log_opts *o)
{
	int opt, ret;

	memset(o, 0, sizeof(*o));
	o->kind = LOGVIEW_BY_HOST;
	while ((opt = getopt_long(argc, argv, "n:fh", log_longopts, NULL)) != -1) {
		ret = option_read(o, opt, optarg);
		if (ret != 0 || opt == 'h')
			return ret;
	}
	if (options_check(o, argc, argv) != 0)
		return EXIT_USAGE;
	return -1;
}

/* Open r's file; a missing one is fine when following. Returns 0, or -1 after printing why. */
static int reader_open(struct log_reader *r, bool dns, bool do_follow)
{
	int e;

	if (log_reader_open(r) == 0 || (do_follow && errno == ENOENT))
		return 0;
	e = errno;
	fprintf(stderr, "log: open %s: ", r->path);
	if (r->why != NULL)
		fputs(r->why, stderr);
	else
		cli_put_strerror(stderr, e);
	if (dns && r->why == NULL && e == ENOENT)
		fputs("; sluice-dns writes it (the config's dns-log)", stderr);
	fputc('\n', stderr);
	return -1;
}

/* The rows of r's file through v: listed, last N, or grouped; then -f. Returns the exit status. */
static int rows_show(struct view *v, struct log_reader *r, const struct log_opts *o)
{
	int ret;

	if (!v->json && v->group == NULL)
		v->rows->header();
	if (r->fd != -1 && log_reader_drain(r) == -1) {
		put_read_error(r->path, errno);
		return EXIT_ERROR;
	}
	if (!o->do_follow)
		log_reader_finish(r);
	if (o->has_tail)
		tail_flush(v);
	if (v->group != NULL)
		logview_print(v->group, v->json);
	ret = o->do_follow ? follow(v, r) : EXIT_OK;
	if (fflush(stdout) == EOF) {
		fprintf(stderr, "log: write stdout failed\n");
		ret = EXIT_ERROR;
	}
	return ret;
}

/* The log the options name, read and shown. Returns the exit status. */
static int log_show(struct log_opts *o)
{
	struct tail t;
	struct view v;
	struct log_reader r;
	struct log_snaps sn;
	struct config *c;
	int ret = EXIT_ERROR;

	memset(&t, 0, sizeof(t));
	memset(&v, 0, sizeof(v));
	memset(&sn, 0, sizeof(sn));
	t.n = o->tail_n;
	v.f = &o->f;
	v.snaps = &sn;
	v.json = o->json;
	v.rows = o->dns ? &log_dns_rows : &log_network_rows;
	if (!o->dns) {
		v.runs = calloc(1, sizeof(*v.runs));
		if (v.runs == NULL) {
			fprintf(stderr, "log: out of memory\n");
			return EXIT_ERROR;
		}
	}
	c = cli_config_load();
	if (c == NULL) {
		free(v.runs);
		return EXIT_ERROR;
	}
	if (v.rows->principals && log_snaps_init(&sn, c, "log") == -1)
		goto out_config;
	log_reader_init(&r, o->dns ? c->dns_log_path : c->log_path, cli_user_uid(c), row_handle,
			&v);
	if (reader_open(&r, o->dns, o->do_follow) == -1)
		goto out_snaps;
	if (o->view != NULL) {
		v.group = logview_new(o->dns ? LOGVIEW_DNS_REFUSED : o->kind, o->all);
		if (v.group == NULL) {
			fprintf(stderr, "log: out of memory\n");
			goto out_close;
		}
	}
	if (o->has_tail) {
		t.rows = calloc(t.n + 1, sizeof(*t.rows));
		if (t.rows == NULL) {
			fprintf(stderr, "log: out of memory\n");
			goto out_group;
		}
		v.tail = &t;
	}
	ret = rows_show(&v, &r, o);
	for (size_t i = 0; i < t.count; i++)
		free(t.rows[(t.head + i) % t.n]);
	free(t.rows);
out_group:
	logview_free(v.group);
out_close:
	log_reader_release(&r);
out_snaps:
	snapshots_release(&sn.all);
out_config:
	config_free(c);
	free(v.runs);
	return ret;
}

int cmd_log(int argc, char **argv)
{
	struct log_opts o;
	int ret;

	if (argc >= 2 && strcmp(argv[1], "verify") == 0) {
		if (has_arg(argc, argv, "--dns"))
			return conflict("verify --dns", VERIFY_DNS_WHY);
		return log_verify_cmd(argc - 1, argv + 1);
	}
	ret = args_parse(argc, argv, &o);
	if (ret != -1)
		return ret;
	return log_show(&o);
}
