/*
 * watch.c: `sluice watch`: a live view of the network log on a terminal.
 *
 * Reads the config's `log` as `sluice log -f` does (log_reader.c: from its
 * start, then following growth, rotation and truncation) and keeps the last
 * ROWS_KEEP rows. Each row is one line: time, who asked (named from the
 * engine snapshots, read again when STATE/engine.jsonl changes), kind,
 * method, host:port, a short path, status, decision and reason; refusals in
 * red and marked '!', observe rows in yellow and marked '~', the selection
 * in reverse video. The selection (the cursor) starts on the newest row and
 * follows new rows while it is there; j, k and the arrows move it. On a
 * not-granted refusal (refuse or observe) o, s and p grant what it asked
 * for (allow_row_grant) once for 15 minutes, for the session or
 * permanently, for every connection; P permanently for the principal that
 * asked only. The key acts on the row under the cursor in the frame on
 * the screen, never on a newer one, and stores nothing yet: a confirmation
 * names that row's refusal id, its full host and port and the grant's
 * scope, and only y stores it (any other key cancels); rows arriving
 * meanwhile change neither. / filters on a substring of the line. q quits.
 *
 * Cells are cut and padded by the columns a terminal gives them, and what
 * a terminal would act on or hide is shown as an escape (utf8_display):
 * a row cannot drive the operator's terminal.
 *
 * While the screen is up stderr goes to a memory file, and what lands
 * there (a grant's error, a row that does not parse) is shown on the
 * status line. The terminal itself is watch_term.c's. It writes nothing
 * but grants, through allow_grant, and only on a key.
 */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "utf8.h"

#define ROWS_KEEP 10000
#define LINE_MAX_BYTES 4096
#define STATUS_MAX 400
#define PROMPT_MAX 1024
#define REFUSAL_ID_MAX 16 /* hex digits (12 from older proxies) */
#define FILTER_MAX 128
#define POLL_MS 200
#define ONCE_TTL (15 * 60)
#define HEAD_LINES 2              /* title, column names */
#define FOOT_LINES 2              /* status, keys or the filter being typed */

enum mark { MARK_ALLOW, MARK_REFUSE, MARK_OBSERVE };

struct wrow {
	json_t *row; /* owned */
	char *line;  /* rendered (utf8_display: nothing a terminal acts on), owned */
	enum mark mark;
};

struct watch {
	const struct config *c;
	struct log_reader r;
	struct log_snaps sn;
	struct wrow *rows;  /* ring of ROWS_KEEP: row seq lives at rows[seq % ROWS_KEEP] */
	size_t total;       /* rows ever taken: the kept ones are [total - n, total) */
	size_t n;
	size_t sel;         /* the selected row's seq (when newest is false) */
	bool newest;        /* the selection is the newest row shown, and follows */
	size_t bottom;      /* seq of the bottom row on screen, when scrolled */
	char filter[FILTER_MAX];
	bool editing;       /* the filter is being typed */
	char edit[FILTER_MAX];
	size_t elen;
	char status[STATUS_MAX];
	int lines, cols;
	bool dirty;
	struct watch_capture err; /* stderr while the screen is up */
	bool drawn;         /* the last frame had a row under the cursor: drawn_sel */
	size_t drawn_sel;   /* its seq */
	struct {
		json_t *row; /* the row a grant key came on (a reference), NULL: no confirmation */
		int key;     /* 'o', 's', 'p' or 'P' */
		char prompt[PROMPT_MAX];
	} confirm;
};

/* A growing screen buffer; on out of memory it stops growing and the frame is dropped. */
struct sbuf {
	char *p;
	size_t len, cap;
	bool failed;
};

static void sb_add(struct sbuf *b, const char *s, size_t len)
{
	if (b->failed)
		return;
	if (b->cap - b->len < len) {
		size_t ncap = (b->cap + len) * 2;
		char *grown = realloc(b->p, ncap);

		if (grown == NULL) {
			b->failed = true;
			return;
		}
		b->p = grown;
		b->cap = ncap;
	}
	memcpy(b->p + b->len, s, len);
	b->len += len;
}

static void sb_put(struct sbuf *b, const char *s)
{
	sb_add(b, s, strlen(s));
}

static void status_set(struct watch *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void status_set(struct watch *w, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(w->status, sizeof(w->status), fmt, ap);
	va_end(ap);
	w->dirty = true;
}

/* ----------------------------------------------------------------- rows */

static const char *str_of(json_t *row, const char *key)
{
	return json_string_value(json_object_get(row, key));
}

/*
 * One cell into line at *at (LINE_MAX_BYTES), width columns: shown as
 * utf8_display shows it, cut with "..." at its end, padded and two spaces
 * after (last: neither).
 */
static void cell(char *line, size_t *at, const char *s, int width, bool last)
{
	size_t cols;

	*at += utf8_display(s, strlen(s), width > 0 ? (size_t)width : 0, true, line + *at,
			    LINE_MAX_BYTES - *at, &cols);
	if (!last)
		for (size_t i = cols; i < (size_t)width + 2 && *at < LINE_MAX_BYTES - 1; i++)
			line[(*at)++] = ' ';
	line[*at] = '\0';
}

static void number_text(json_t *v, char *buf, size_t size)
{
	if (json_is_integer(v))
		snprintf(buf, size, "%lld", (long long)json_integer_value(v));
	else
		snprintf(buf, size, "-");
}

/* The columns' widths, the header's names. */
#define COLUMNS(X)                                                                             \
	X("TIME", 14) X("WHO", 20) X("KIND", 6) X("METHOD", 7) X("HOST:PORT", 30) X("PATH", 20) \
	X("STATUS", 6) X("DECISION", 8)
#define REASON_WIDTH 16

static void header_line(char *line)
{
	size_t at = 0;

	cell(line, &at, "", 0, false);
#define HEAD(name, width) cell(line, &at, name, width, false);
	COLUMNS(HEAD)
#undef HEAD
	cell(line, &at, "REASON", REASON_WIDTH, true);
}

/* The row's principal, named from the snapshots, as its label. */
static void who_label(struct watch *w, json_t *row, char *buf, size_t size)
{
	struct principal_row r;
	struct principal p;
	const char *ts = str_of(row, "ts"), *who = str_of(row, "who");

	memset(&r, 0, sizeof(r));
	r.has_t = ts != NULL && snapshot_ts_parse(ts, &r.t_ms) == 0;
	/* an unattributed row has no verified stamp, whatever else it carries */
	if (who == NULL || strcmp(who, "unattributed") != 0) {
		r.src = str_of(row, "src");
		r.net = str_of(row, "net");
		r.as = log_row_as(row);
	}
	principal_from_row(&w->sn.all, &r, &p);
	principal_label(&p, buf, size);
}

static const char *or_dash(const char *s)
{
	return s != NULL ? s : "-";
}

/* Render row into a new line (NULL when out of memory). */
static char *row_render(struct watch *w, json_t *row, enum mark mark)
{
	char line[LINE_MAX_BYTES], tbuf[32], who[LOG_WHO_MAX], status[32], port[32];
	char hostport[HOST_NAME_MAX_LEN + 48];
	const char *ts = str_of(row, "ts"), *host = or_dash(str_of(row, "host"));
	const char *kind = str_of(row, "kind");
	char why[128];
	size_t at = 0;

	number_text(json_object_get(row, "port"), port, sizeof(port));
	number_text(json_object_get(row, "status"), status, sizeof(status));
	/* a suppression row: its count where the host would be */
	if (!log_row_suppressed(row, hostport, sizeof(hostport), why, sizeof(why)))
		log_host_port(hostport, sizeof(hostport), host, port);
	who_label(w, row, who, sizeof(who));
	at = 2;
	line[0] = mark == MARK_REFUSE ? '!' : mark == MARK_OBSERVE ? '~' : ' ';
	line[1] = ' ';
	cell(line, &at, ts != NULL ? log_time_cell(ts, tbuf, sizeof(tbuf)) : "-", 14, false);
	cell(line, &at, who, 20, false);
	/* a long exchange's progress row: "prog" fits the column ("open" does) */
	cell(line, &at, kind != NULL && strcmp(kind, "progress") == 0 ? "prog" : or_dash(kind), 6,
	     false);
	cell(line, &at, or_dash(str_of(row, "method")), 7, false);
	cell(line, &at, hostport, 30, false);
	cell(line, &at, or_dash(str_of(row, "path")), 20, false);
	cell(line, &at, status, 6, false);
	cell(line, &at, or_dash(str_of(row, "decision")), 8, false);
	cell(line, &at, or_dash(str_of(row, "reason")), REASON_WIDTH, true);
	return strdup(line);
}

static struct wrow *row_at(struct watch *w, size_t seq)
{
	return &w->rows[seq % ROWS_KEEP];
}

static size_t oldest(const struct watch *w)
{
	return w->total - w->n;
}

/* One line of the log (a log_line_fn): kept as a row, the oldest dropped past ROWS_KEEP. */
static void row_take(void *arg, const struct log_reader *r, const char *s, size_t len)
{
	struct watch *w = arg;
	struct wrow *slot;
	json_t *row;
	const char *d;
	enum mark mark;
	char *line;

	if (len > 0 && s[len - 1] == '\r')
		len--;
	if (len == 0)
		return;
	row = json_loadb(s, len, 0, NULL);
	if (row == NULL || !json_is_object(row)) {
		fprintf(stderr, "watch: %s:%zu: unreadable row\n", r->path, r->line);
		json_decref(row);
		return;
	}
	d = or_dash(str_of(row, "decision"));
	mark = strcmp(d, "refuse") == 0 ? MARK_REFUSE : strcmp(d, "observe") == 0 ? MARK_OBSERVE
										   : MARK_ALLOW;
	/* a run's probe or its start and end, an agent's quiet telemetry: shown, never marked as a refusal */
	if ((!log_row_is_exchange(row) && !json_is_integer(json_object_get(row, "rows"))) ||
	    log_row_is_quiet(row))
		mark = MARK_ALLOW;
	line = row_render(w, row, mark);
	if (line == NULL) {
		fprintf(stderr, "watch: out of memory; a row left out\n");
		json_decref(row);
		return;
	}
	slot = row_at(w, w->total);
	if (w->n == ROWS_KEEP) {
		json_decref(slot->row);
		free(slot->line);
	} else {
		w->n++;
	}
	slot->row = row;
	slot->line = line;
	slot->mark = mark;
	w->total++;
	w->dirty = true;
}

/* The snapshots changed: name every kept row's principal again. */
static void rows_rerender(struct watch *w)
{
	for (size_t s = oldest(w); s < w->total; s++) {
		struct wrow *x = row_at(w, s);
		char *line = row_render(w, x->row, x->mark);

		if (line != NULL) {
			free(x->line);
			x->line = line;
		}
	}
	w->dirty = true;
}

static void rows_free(struct watch *w)
{
	for (size_t s = oldest(w); s < w->total; s++) {
		json_decref(row_at(w, s)->row);
		free(row_at(w, s)->line);
	}
	free(w->rows);
	w->rows = NULL;
	w->n = 0;
}

/* ------------------------------------------------------------ selection */

static bool shown(struct watch *w, size_t seq)
{
	return w->filter[0] == '\0' || strstr(row_at(w, seq)->line, w->filter) != NULL;
}

/* The newest row shown at or before seq (past the newest: the newest); false when none. */
static bool shown_before(struct watch *w, size_t seq, size_t *out)
{
	size_t s = seq < w->total ? seq + 1 : w->total;

	while (s > oldest(w)) {
		s--;
		if (shown(w, s)) {
			*out = s;
			return true;
		}
	}
	return false;
}

/* The oldest row shown after seq; false when none. */
static bool shown_after(struct watch *w, size_t seq, size_t *out)
{
	for (size_t s = seq + 1; s < w->total; s++) {
		if (shown(w, s)) {
			*out = s;
			return true;
		}
	}
	return false;
}

/* The selected row's seq (the nearest shown when it is not); false when no row is shown. */
static bool selected(struct watch *w, size_t *seq)
{
	size_t from = w->newest || w->sel >= w->total ? w->total : w->sel;

	if (!w->newest && w->sel < oldest(w))
		from = oldest(w); /* it was dropped: the oldest kept */
	return shown_before(w, from, seq) || shown_after(w, from, seq);
}

/* Move the selection by delta rows shown (negative: older). */
static void select_move(struct watch *w, int delta)
{
	size_t s, next;

	if (!selected(w, &s))
		return;
	for (; delta < 0 && shown_before(w, s - (s > 0), &next) && next < s; delta++)
		s = next;
	for (; delta > 0 && shown_after(w, s, &next); delta--)
		s = next;
	w->sel = s;
	w->newest = !shown_after(w, s, &next);
	w->dirty = true;
}

/* --------------------------------------------------------------- grants */

/* Why row is not a refusal a grant would change, or NULL when it is one. */
static const char *not_grantable(json_t *row, char *buf, size_t size)
{
	const char *d = or_dash(str_of(row, "decision")), *reason = or_dash(str_of(row, "reason"));

	if (strcmp(d, "allow") == 0) {
		snprintf(buf, size, "this row was allowed (%s): there is nothing to grant", reason);
		return buf;
	}
	if (strcmp(reason, "not-granted") != 0) {
		snprintf(buf, size,
			 "this row was %s for %s, which a grant does not change: nothing granted",
			 d, reason);
		return buf;
	}
	if (strcmp(d, "refuse") != 0 && strcmp(d, "observe") != 0) {
		snprintf(buf, size, "this row's decision is %s: nothing granted", d);
		return buf;
	}
	return NULL;
}

/* Store g at level through allow_grant; what it said (or its error) on the status line. */
static void grant_store(struct watch *w, struct grant *g, enum grant_level level, long long ttl)
{
	char *said = NULL, err[STATUS_MAX];
	size_t saidlen = 0;
	FILE *out = open_memstream(&said, &saidlen);
	int r;

	if (out == NULL) {
		status_set(w, "out of memory: nothing granted");
		return;
	}
	watch_capture_take(&w->err, err, sizeof(err)); /* what came before is not this grant's */
	r = allow_grant(out, w->c, g, level, ttl);
	fclose(out);
	watch_capture_take(&w->err, err, sizeof(err));
	if (r == 0)
		status_set(w, "%.*s", (int)strcspn(said != NULL ? said : "", "\n"),
			   said != NULL ? said : "");
	else
		status_set(w, "%s", err[0] != '\0' ? err : "the grant failed: nothing granted");
	free(said);
}

/*
 * The grant key on row: the grant into g (scoped to who asked for P), or
 * -1 with why on the status line.
 */
static int row_grant(struct watch *w, json_t *row, int key, struct grant *g, char *who,
		     size_t size)
{
	char why[STATUS_MAX];
	const char *err = "bad scope", *text = not_grantable(row, why, sizeof(why));

	if (text != NULL) {
		status_set(w, "%s", text);
		return -1;
	}
	if (allow_row_grant(row, g, who, size, &err) == -1) {
		status_set(w, "this refusal cannot be granted: %s", err);
		return -1;
	}
	if (key != 'P')
		return 0;
	if (who[0] == '\0') {
		status_set(w, "P: this refusal is unattributed (no stamp), so a grant "
			   "cannot be scoped to who asked: nothing granted (o, s, p grant "
			   "it for every connection)");
		return -1;
	}
	if (grant_scope_add(g, who, &err) == -1) {
		status_set(w, "P: its principal %s: %s: nothing granted", who, err);
		return -1;
	}
	return 0;
}

/* A refusal id as the proxy writes it (hex, 12 or 16 digits), else "". */
static const char *refusal_id(json_t *row)
{
	const char *id = str_of(row, "refusal");
	size_t n = id != NULL ? strlen(id) : 0;

	if (n != 12 && n != REFUSAL_ID_MAX)
		return "";
	for (size_t i = 0; i < n; i++)
		if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
			return "";
	return id;
}

static void confirm_clear(struct watch *w)
{
	json_decref(w->confirm.row);
	w->confirm.row = NULL;
	w->dirty = true;
}

/*
 * A grant key: on the row under the cursor in the frame on the screen
 * (drawn_sel), never a newer one; nothing is stored yet, the confirmation
 * says what y would store.
 */
static void grant_key(struct watch *w, int key)
{
	char who[SCOPE_TEXT_MAX + 1], hostport[HOST_NAME_MAX_LEN + 16], idtext[48];
	const char *host, *id, *level;
	struct grant g;
	json_t *row;

	if (!w->drawn || w->drawn_sel < oldest(w) || w->drawn_sel >= w->total) {
		status_set(w, "no row under the cursor: nothing granted");
		return;
	}
	row = row_at(w, w->drawn_sel)->row;
	if (row_grant(w, row, key, &g, who, sizeof(who)) == -1)
		return;
	host = str_of(row, "host");
	/* allow_row_grant took its port: 1-65535 */
	host_port_format(hostport, sizeof(hostport), host,
			 (unsigned)json_integer_value(json_object_get(row, "port")));
	id = refusal_id(row);
	level = key == 'o' ? "once, for 15 minutes" : key == 's' ? "for this proxy run (session)"
							   : "permanently";
	snprintf(idtext, sizeof(idtext), id[0] != '\0' ? " (refusal %s)" : "", id);
	snprintf(w->confirm.prompt, sizeof(w->confirm.prompt),
		 "%c: grant %s %s, %s%s%s? y stores it, any other key cancels", key, hostport,
		 level, key == 'P' ? "only to " : "to every connection", key == 'P' ? who : "",
		 idtext);
	json_decref(w->confirm.row);
	w->confirm.row = json_incref(row);
	w->confirm.key = key;
	status_set(w, "confirm the grant below");
}

/* The key after a confirmation: y stores the grant of the row it names, anything else cancels. */
static void confirm_key(struct watch *w, int key)
{
	char who[SCOPE_TEXT_MAX + 1];
	struct grant g;
	json_t *row = w->confirm.row;
	int gkey = w->confirm.key;

	w->confirm.row = NULL;
	w->dirty = true;
	if (key != 'y') {
		status_set(w, "nothing granted (cancelled)");
	} else if (row_grant(w, row, gkey, &g, who, sizeof(who)) == 0) {
		if (gkey == 'o')
			grant_store(w, &g, GRANT_ONCE, ONCE_TTL);
		else if (gkey == 's')
			grant_store(w, &g, GRANT_SESSION, 0);
		else
			grant_store(w, &g, GRANT_PERMANENT, 0);
	}
	json_decref(row);
}

/* --------------------------------------------------------------- screen */

/*
 * Line y (1-based) of the screen: text as utf8_display shows it, cut to
 * the width in columns, in attr ("" none), the rest erased. Returns the
 * bytes of text shown (for safe text: the prefix that fits).
 */
static size_t put_line(struct watch *w, struct sbuf *b, int y, const char *attr,
		       const char *text, bool fill)
{
	char pos[32], shown_text[LINE_MAX_BYTES];
	size_t width = w->cols > 0 ? (size_t)w->cols : 0, cols, n;

	n = utf8_display(text, strlen(text), width, false, shown_text, sizeof(shown_text), &cols);
	snprintf(pos, sizeof(pos), "\x1b[%d;1H", y);
	sb_put(b, pos);
	sb_put(b, attr);
	sb_add(b, shown_text, n);
	if (fill) /* the attribute across the whole line (the selection) */
		for (size_t i = cols; i < width; i++)
			sb_add(b, " ", 1);
	if (attr[0] != '\0')
		sb_put(b, "\x1b[0m");
	if (cols < width && !fill)
		sb_put(b, "\x1b[K");
	return n;
}

/*
 * The confirmation as shown (utf8_display) into text, and the lines it
 * takes wrapped at the screen's width: never cut, whatever its host.
 */
static int confirm_lines(struct watch *w, char *text, size_t size)
{
	size_t width = w->cols > 0 ? (size_t)w->cols : 1, at = 0, n, len;
	char scratch[LINE_MAX_BYTES];
	int k = 0;

	len = utf8_display(w->confirm.prompt, strlen(w->confirm.prompt), SIZE_MAX, false, text,
			   size, NULL);
	while (at < len) {
		n = utf8_display(text + at, len - at, width, false, scratch, sizeof(scratch), NULL);
		k++;
		if (n == 0)
			break;
		at += n;
	}
	return k > 0 ? k : 1;
}

static size_t shown_count(struct watch *w, size_t from, size_t to, size_t cap)
{
	size_t k = 0;

	for (size_t s = from; s < to && k < cap; s++)
		k += shown(w, s);
	return k;
}

/* The rows on screen: the bottom one's seq, kept so the selection is in view. */
static size_t view_bottom(struct watch *w, size_t sel, size_t height)
{
	size_t bottom = w->bottom, s;

	if (w->newest || bottom >= w->total || bottom < oldest(w) || bottom < sel ||
	    !shown_before(w, bottom, &bottom) || bottom < sel)
		bottom = sel;
	/* the selection went above the top: it becomes the top row */
	if (shown_count(w, sel, bottom + 1, height + 1) > height) {
		bottom = sel;
		for (size_t k = 1; k < height && shown_after(w, bottom, &s); k++)
			bottom = s;
	}
	/* room left at the top: show newer rows instead */
	while (shown_count(w, oldest(w), bottom + 1, height) < height && shown_after(w, bottom, &s))
		bottom = s;
	return bottom;
}

static void draw(struct watch *w)
{
	struct sbuf b = { 0 };
	char line[LINE_MAX_BYTES], title[LINE_MAX_BYTES], prompt[PROMPT_MAX * 2];
	int foot = w->confirm.row != NULL ? 1 + confirm_lines(w, prompt, sizeof(prompt))
					  : FOOT_LINES;
	int height = w->lines - HEAD_LINES - foot, y;
	size_t sel = 0, bottom, s, shown_n;
	bool any = selected(w, &sel);

	w->dirty = false;
	w->drawn = false;
	shown_n = shown_count(w, oldest(w), w->total, SIZE_MAX);
	snprintf(title, sizeof(title), "sluice watch  %s  %zu row%s%s%s%s%s", w->r.path, shown_n,
		 shown_n == 1 ? "" : "s", w->filter[0] != '\0' ? " matching \"" : "", w->filter,
		 w->filter[0] != '\0' ? "\"" : "", w->newest ? "  (following)" : "");
	sb_put(&b, "\x1b[?25l");
	put_line(w, &b, 1, "\x1b[1m", title, false);
	header_line(line);
	if (w->lines > 1)
		put_line(w, &b, 2, "\x1b[1;4m", line, false);
	y = HEAD_LINES + (height > 0 ? height : 0);
	if (any && height > 0) {
		bottom = view_bottom(w, sel, (size_t)height);
		w->bottom = bottom;
		for (s = bottom + 1; y > HEAD_LINES && s > oldest(w);) {
			struct wrow *x;
			char attr[16];

			s--;
			if (!shown(w, s))
				continue;
			x = row_at(w, s);
			snprintf(attr, sizeof(attr), "\x1b[%s%sm", s == sel ? "7;" : "",
				 x->mark == MARK_REFUSE	   ? "31"
				 : x->mark == MARK_OBSERVE ? "33"
							   : "39");
			put_line(w, &b, y--, attr, x->line, s == sel);
			if (s == sel) {
				w->drawn = true;
				w->drawn_sel = s;
			}
		}
	}
	for (; y > HEAD_LINES; y--)
		put_line(w, &b, y, "", "", false);
	if (w->lines > HEAD_LINES)
		put_line(w, &b, w->lines - foot + 1, "", w->status, false);
	if (w->confirm.row != NULL) {
		size_t at = 0, len = strlen(prompt);

		for (y = w->lines - foot + 2; y <= w->lines; y++)
			at += put_line(w, &b, y, "\x1b[1;7m", at < len ? prompt + at : "", false);
	} else if (w->editing) {
		snprintf(line, sizeof(line),
			 "filter: %.*s_  (Enter applies, Esc cancels, empty clears)", (int)w->elen,
			 w->edit);
		put_line(w, &b, w->lines, "", line, false);
	} else {
		put_line(w, &b, w->lines, "\x1b[2m",
			 "q quit  j/k or arrows move  o once (15m)  s session  p permanent  "
			 "P permanent for who asked (each asks y first)  / filter", false);
	}
	if (!b.failed && watch_term_write(b.p, b.len) == -1)
		status_set(w, "write to the terminal failed");
	free(b.p);
}

/* ----------------------------------------------------------------- keys */

static void filter_key(struct watch *w, int key)
{
	w->dirty = true;
	if (key == WATCH_KEY_ESC) {
		w->editing = false;
		status_set(w, "filter unchanged");
	} else if (key == '\r' || key == '\n') {
		w->editing = false;
		memcpy(w->filter, w->edit, w->elen);
		w->filter[w->elen] = '\0';
		w->bottom = SIZE_MAX;
		if (w->filter[0] == '\0')
			status_set(w, "filter cleared");
		else
			status_set(w, "showing rows that contain \"%s\"", w->filter);
	} else if (key == 0x7f || key == 0x08) {
		if (w->elen > 0)
			w->elen--;
	} else if (key == 0x15) { /* Ctrl-U */
		w->elen = 0;
	} else if (key >= 0x20 && key < 0x7f && w->elen < FILTER_MAX - 1) {
		w->edit[w->elen++] = (char)key;
	}
}

/* One key. Returns false to quit. */
static bool key_handle(struct watch *w, int key)
{
	int page = w->lines - HEAD_LINES - FOOT_LINES > 1 ? w->lines - HEAD_LINES - FOOT_LINES - 1
							  : 1;

	if (w->editing) {
		filter_key(w, key);
		return true;
	}
	if (w->confirm.row != NULL) {
		confirm_key(w, key);
		return true;
	}
	switch (key) {
	case 'q':
	case 'Q':
		return false;
	case 'k':
	case WATCH_KEY_UP:
		select_move(w, -1);
		break;
	case 'j':
	case WATCH_KEY_DOWN:
		select_move(w, 1);
		break;
	case WATCH_KEY_PGUP:
		select_move(w, -page);
		break;
	case WATCH_KEY_PGDN:
		select_move(w, page);
		break;
	case WATCH_KEY_HOME:
	case 'g':
		select_move(w, -ROWS_KEEP);
		break;
	case WATCH_KEY_END:
	case 'G':
		select_move(w, ROWS_KEEP);
		break;
	case 'o':
	case 's':
	case 'p':
	case 'P':
		grant_key(w, key);
		break;
	case '/':
		w->editing = true;
		memcpy(w->edit, w->filter, strlen(w->filter));
		w->elen = strlen(w->filter);
		w->dirty = true;
		break;
	case 0x0c: /* Ctrl-L */
		w->dirty = true;
		break;
	default:
		break;
	}
	return true;
}

/* ----------------------------------------------------------------- loop */

static int run(struct watch *w)
{
	char err[STATUS_MAX];

	watch_term_size(&w->lines, &w->cols);
	w->dirty = true;
	while (!watch_term_quit()) {
		int keys[64];
		size_t nkeys;
		int r;

		if (watch_term_resized()) {
			watch_term_size(&w->lines, &w->cols);
			watch_term_write("\x1b[2J", 4);
			w->dirty = true;
		}
		if (log_snaps_refresh(&w->sn, "watch"))
			rows_rerender(w);
		if (w->r.fd != -1 && log_reader_drain(&w->r) == -1)
			status_set(w, "read %s: %s", w->r.path, strerror(errno));
		watch_capture_take(&w->err, err, sizeof(err));
		if (err[0] != '\0')
			status_set(w, "%s", err);
		if (w->dirty)
			draw(w);
		r = watch_term_keys(POLL_MS, keys, sizeof(keys) / sizeof(keys[0]), &nkeys);
		if (r != 0)
			return r == 1 ? EXIT_OK : EXIT_ERROR;
		/* a frame after each key that changed it: a grant key acts on the row the
		 * frame before it showed under the cursor, after any move typed ahead */
		for (size_t i = 0; i < nkeys; i++) {
			if (!key_handle(w, keys[i]))
				return EXIT_OK;
			if (w->dirty && i + 1 < nkeys)
				draw(w);
		}
		if (log_reader_poll(&w->r) == -1)
			status_set(w, "read %s: %s", w->r.path, strerror(errno));
	}
	return EXIT_OK;
}

int cmd_watch(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct watch w;
	struct config *c;
	int opt, sig, ret = EXIT_ERROR;

	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (opt == 'h') {
			cli_usage(stdout, "watch");
			return EXIT_OK;
		}
		cli_usage(stderr, "watch");
		return EXIT_USAGE;
	}
	if (optind != argc) {
		fprintf(stderr, "watch: unexpected argument %s\n", argv[optind]);
		cli_usage(stderr, "watch");
		return EXIT_USAGE;
	}
	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
		fprintf(stderr, "watch: needs a terminal on stdin and stdout; without one, "
				"follow the log with: sluice log -f\n");
		return EXIT_USAGE;
	}
	c = cli_config_load();
	if (c == NULL)
		return EXIT_ERROR;
	memset(&w, 0, sizeof(w));
	w.c = c;
	w.newest = true;
	w.bottom = SIZE_MAX;
	w.err.fd = w.err.saved = -1;
	w.rows = calloc(ROWS_KEEP, sizeof(*w.rows));
	if (w.rows == NULL) {
		fprintf(stderr, "watch: out of memory\n");
		goto out_config;
	}
	if (log_snaps_init(&w.sn, c, "watch") == -1)
		goto out_rows;
	log_reader_init(&w.r, c->log_path, cli_user_uid(c), row_take, &w);
	if (log_reader_open(&w.r) == -1 && errno != ENOENT) {
		fprintf(stderr, "watch: open %s: %s\n", w.r.path,
			w.r.why != NULL ? w.r.why : strerror(errno));
		goto out_snaps;
	}
	if (w.r.fd != -1 && log_reader_drain(&w.r) == -1) {
		fprintf(stderr, "watch: read %s: %s\n", w.r.path, strerror(errno));
		goto out_reader;
	}
	status_set(&w, w.r.fd == -1 ? "no log yet at %s: waiting for the proxy's first row"
				    : "watching %s", w.r.path);
	if (watch_term_open() == -1)
		goto out_reader;
	if (watch_capture_start(&w.err) == -1)
		status_set(&w, "stderr is not captured: a message may spoil the screen (Ctrl-L "
			       "redraws)");
	ret = run(&w);
	confirm_clear(&w);
	watch_capture_end(&w.err);
	sig = watch_term_close();
	if (ret != EXIT_OK)
		fprintf(stderr, "watch: %s\n", w.status);
	if (sig != 0) { /* quit by a signal: die of it, as a shell expects, once all is put back */
		log_reader_release(&w.r);
		snapshots_release(&w.sn.all);
		rows_free(&w);
		config_free(c);
		raise(sig);
		return 128 + sig;
	}
out_reader:
	log_reader_release(&w.r);
out_snaps:
	snapshots_release(&w.sn.all);
out_rows:
	rows_free(&w);
out_config:
	config_free(c);
	return ret;
}
