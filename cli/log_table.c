/*
 * log_table.c: `sluice log`'s tables: a cell (cut and padded by the
 * columns a terminal gives it, never a control: lib/utf8.c), a time in
 * local time, and the two row kinds' columns, the network log's and the
 * DNS log's. A suppression row (kind "suppressed", docs/network-log.md)
 * shows its count where a host would be and its reasons where a grant
 * would. Also a row's JSON as --json prints it (what a terminal would act
 * on escaped) and a principal as its "principal" object: the views
 * (logview.c) print them too. Reading and filtering rows is log.c's.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "utf8.h"

json_t *log_principal_json(const struct principal *p)
{
	json_t *o = json_object();
	const char *name = p->name;
	char addr[LOG_WHO_MAX];

	if (p->kind == PRINCIPAL_ADDRESS) {
		principal_label(p, addr, sizeof(addr));
		name = addr;
	} else if (p->kind == PRINCIPAL_USER) {
		name = "user";
	}
	if (o == NULL ||
	    json_object_set_new(o, "kind", json_string(principal_kind_name(p->kind))) == -1 ||
	    json_object_set_new(o, "name", name != NULL ? json_string(name) : json_null()) == -1 ||
	    json_object_set_new(o, "id", p->id != NULL ? json_string(p->id) : json_null()) == -1 ||
	    json_object_set_new(o, "project",
				p->project != NULL ? json_string(p->project) : json_null()) == -1 ||
	    json_object_set_new(o, "snapshot",
				p->snap != NULL ? json_string(p->snap->t) : json_null()) == -1) {
		json_decref(o);
		return NULL;
	}
	return o;
}

void log_put_json(const char *s, size_t len)
{
	char *out;
	size_t i;

	for (i = 0; i < len && (unsigned char)s[i] < 0x7f; i++)
		;
	if (i == len) { /* ASCII without DEL: nothing to escape */
		fwrite(s, 1, len, stdout);
		return;
	}
	out = malloc(len * 6 + 1);
	if (out == NULL) {
		fputs("{\"error\":\"out of memory\"}", stdout);
		return;
	}
	fwrite(out, 1, utf8_json_unhide(s, len, out, len * 6 + 1), stdout);
	free(out);
}

/* a row must not drive the terminal: utf8_display shows what would as escapes */
void log_put_cell(const char *s, int width, bool last)
{
	char out[LOG_CELL_MAX];
	size_t cols;

	utf8_display(s, strlen(s), width > 0 ? (size_t)width : 0, true, out, sizeof(out), &cols);
	fputs(out, stdout);
	if (last) {
		putchar('\n');
		return;
	}
	printf("%*s  ", width - (int)cols > 0 ? width - (int)cols : 0, "");
}

static const char *str_or_dash(json_t *row, const char *key)
{
	const char *s = json_string_value(json_object_get(row, key));

	return s != NULL ? s : "-";
}

const char *log_time_cell(const char *ts, char *buf, size_t size)
{
	struct tm tm;
	const char *rest;
	time_t t;

	memset(&tm, 0, sizeof(tm));
	rest = strptime(ts, "%Y-%m-%dT%H:%M:%S", &tm);
	if (rest == NULL)
		return ts;
	t = timegm(&tm);
	if (t == (time_t)-1 || localtime_r(&t, &tm) == NULL)
		return ts;
	strftime(buf, size, "%m-%d %H:%M:%S", &tm);
	return buf;
}

static void number_cell(json_t *v, char *buf, size_t size)
{
	if (json_is_integer(v))
		snprintf(buf, size, "%lld", (long long)json_integer_value(v));
	else if (json_is_number(v))
		snprintf(buf, size, "%g", json_number_value(v));
	else
		snprintf(buf, size, "-");
}

bool log_row_is_exchange(json_t *row)
{
	static const char *const kinds[] = { "http", "https", "ws", "wss", "tunnel" };
	const char *kind = json_string_value(json_object_get(row, "kind"));

	for (size_t i = 0; kind != NULL && i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (strcmp(kind, kinds[i]) == 0)
			return true;
	return false;
}

bool log_row_is_quiet(json_t *row)
{
	const char *reason = json_string_value(json_object_get(row, "reason"));
	const char *kind = json_string_value(json_object_get(row, "kind"));
	json_t *reasons = json_object_get(row, "reasons");

	if (reason != NULL && strcmp(reason, "quiet") == 0)
		return true;
	/* a suppression row of quiet rows alone (they spend a budget of their own: proxy/session.c) */
	return kind != NULL && strcmp(kind, "suppressed") == 0 && json_is_object(reasons) &&
	       json_object_size(reasons) == 1 && json_object_get(reasons, "quiet") != NULL;
}

bool log_row_long(json_t *row, char *what, size_t size)
{
	const char *kind = json_string_value(json_object_get(row, "kind"));
	const char *of = json_string_value(json_object_get(row, "of"));
	json_t *m = json_object_get(row, "ms");
	char up[32], down[32], ms[32];

	if (kind == NULL || (strcmp(kind, "open") != 0 && strcmp(kind, "progress") != 0))
		return false;
	number_cell(json_object_get(row, "up"), up, sizeof(up));
	number_cell(json_object_get(row, "down"), down, sizeof(down));
	if (json_is_number(m))
		snprintf(ms, sizeof(ms), "%.1f s", json_number_value(m) / 1000.0);
	else
		snprintf(ms, sizeof(ms), "-");
	snprintf(what, size, "%s %s for %s: %s bytes up, %s down so far", of != NULL ? of : "-",
		 strcmp(kind, "open") == 0 ? "open" : "still open", ms, up, down);
	return true;
}

bool log_row_suppressed(json_t *row, char *what, size_t wsize, char *why, size_t ysize)
{
	const char *kind = json_string_value(json_object_get(row, "kind"));
	json_t *rows = json_object_get(row, "rows"), *reasons = json_object_get(row, "reasons");
	const char *reason;
	json_t *n;
	size_t at = 0;

	if (kind == NULL || strcmp(kind, "suppressed") != 0)
		return false;
	snprintf(what, wsize, "%lld rows suppressed",
		 json_is_integer(rows) ? (long long)json_integer_value(rows) : 0LL);
	why[0] = '\0';
	json_object_foreach(reasons, reason, n) {
		int w = snprintf(why + at, ysize - at, "%s%s %lld", at > 0 ? ", " : "", reason,
				 json_is_integer(n) ? (long long)json_integer_value(n) : 0LL);

		if (w < 0 || (size_t)w >= ysize - at)
			break;
		at += (size_t)w;
	}
	return true;
}

static void table_header(void)
{
	printf("%-14s  %-20s  %-8s  %-6s  %-7s  %-32s  %-24s  %-16s  %s\n", "TIME", "WHO",
	       "DECISION", "STATUS", "METHOD", "HOST:PORT", "PATH", "REASON", "GRANT");
}

/*
 * A run's start or end row ("kind":"run") as a table line: WHO its name
 * (else its network), DECISION the event, STATUS its exit status, METHOD
 * "run", HOST:PORT its project, PATH its command line, REASON how long it
 * took, GRANT what its requests moved. Returns false for any other row.
 */
static bool run_row(json_t *row)
{
	char tbuf[32], status[32], ms[32], moved[128], req[32], up[32], down[32];
	const char *kind = str_or_dash(row, "kind"), *name = str_or_dash(row, "name");
	bool end = strcmp(str_or_dash(row, "event"), "end") == 0;

	if (strcmp(kind, "run") != 0)
		return false;
	if (strcmp(name, "-") == 0)
		name = str_or_dash(row, "net");
	number_cell(json_object_get(row, "status"), status, sizeof(status));
	number_cell(json_object_get(row, "ms"), ms, sizeof(ms));
	number_cell(json_object_get(row, "requests"), req, sizeof(req));
	number_cell(json_object_get(row, "up"), up, sizeof(up));
	number_cell(json_object_get(row, "down"), down, sizeof(down));
	snprintf(moved, sizeof(moved), "%s requests, %s up, %s down", req, up, down);
	if (end)
		snprintf(ms + strlen(ms), sizeof(ms) - strlen(ms), " ms");
	log_put_cell(log_time_cell(str_or_dash(row, "ts"), tbuf, sizeof(tbuf)), 14, false);
	log_put_cell(name, 20, false);
	log_put_cell(str_or_dash(row, "event"), 8, false);
	log_put_cell(status, 6, false);
	log_put_cell("run", 7, false);
	log_put_cell(str_or_dash(row, "project"), 32, false);
	log_put_cell(str_or_dash(row, "cmd"), 24, false);
	log_put_cell(end ? ms : "-", 16, false);
	log_put_cell(end ? moved : "-", 60, true);
	return true;
}

void log_host_port(char *out, size_t size, const char *host, const char *port)
{
	int n = host_port_format(out, size, host, HOST_PORT_NONE);

	if (n != -1 && port != NULL)
		snprintf(out + n, size - (size_t)n, ":%s", port);
}

static void table_row(json_t *row, const struct principal *p)
{
	char tbuf[32], status[32], port[32], hostport[HOST_NAME_MAX_LEN + 48], who[LOG_WHO_MAX];
	const char *ts = str_or_dash(row, "ts");
	const char *host = str_or_dash(row, "host");
	char why[256];
	bool suppressed = log_row_suppressed(row, hostport, sizeof(hostport), why, sizeof(why));

	number_cell(json_object_get(row, "status"), status, sizeof(status));
	number_cell(json_object_get(row, "port"), port, sizeof(port));
	if (!suppressed)
		log_host_port(hostport, sizeof(hostport), host, port);
	if (run_row(row))
		return;
	principal_label(p, who, sizeof(who));
	/* a run's request: the run's name (sluice log learns it from the run's start row) */
	if (json_string_value(json_object_get(row, "name")) != NULL)
		snprintf(who, sizeof(who), "%s", json_string_value(json_object_get(row, "name")));
	log_put_cell(log_time_cell(ts, tbuf, sizeof(tbuf)), 14, false);
	log_put_cell(who, 20, false);
	log_put_cell(strcmp(str_or_dash(row, "kind"), "probe") == 0 ? "probe"
								  : str_or_dash(row, "decision"),
		     8, false);
	log_put_cell(status, 6, false);
	log_put_cell(str_or_dash(row, "method"), 7, false);
	log_put_cell(hostport, 32, false);
	log_put_cell(str_or_dash(row, "path"), 24, false);
	log_put_cell(str_or_dash(row, "reason"), 16, false);
	/*
	 * a suppression row's last column: why its rows were refused, and how
	 * many each; a long exchange's open or progress row: how long, how much
	 */
	bool note = suppressed || log_row_long(row, why, sizeof(why));

	log_put_cell(note ? why : str_or_dash(row, "grant"), 60, true);
}

static void dns_table_header(void)
{
	printf("%-14s  %-24s  %-9s  %-32s  %-8s  %-18s  %-8s  %-12s  %-5s  %s\n", "TIME", "CLIENT",
	       "TYPE", "NAME", "DECISION", "REASON", "RCODE", "KEPT/REMOVED", "CACHE", "MS");
}

/* One query's row; p is NULL (a query names no principal). */
static void dns_table_row(json_t *row, const struct principal *p)
{
	char tbuf[32], kept[32], removed[32], answers[72], ms[32];
	json_t *cache = json_object_get(row, "cache");

	number_cell(json_object_get(row, "kept"), kept, sizeof(kept));
	number_cell(json_object_get(row, "removed"), removed, sizeof(removed));
	if (strcmp(kept, "-") == 0 && strcmp(removed, "-") == 0)
		snprintf(answers, sizeof(answers), "-");
	else
		snprintf(answers, sizeof(answers), "%s/%s", kept, removed);
	number_cell(json_object_get(row, "ms"), ms, sizeof(ms));
	log_put_cell(log_time_cell(str_or_dash(row, "ts"), tbuf, sizeof(tbuf)), 14, false);
	log_put_cell(str_or_dash(row, "client"), 24, false);
	log_put_cell(str_or_dash(row, "type"), 9, false);
	log_put_cell(str_or_dash(row, "name"), 32, false);
	log_put_cell(str_or_dash(row, "decision"), 8, false);
	log_put_cell(str_or_dash(row, "reason"), 18, false);
	log_put_cell(str_or_dash(row, "rcode"), 8, false);
	log_put_cell(answers, 12, false);
	log_put_cell(json_is_true(cache) ? "hit" : json_is_false(cache) ? "miss" : "-", 5, false);
	log_put_cell(ms, 12, true);
}

const struct log_rows log_network_rows = { "host", NULL, true, table_header, table_row };
const struct log_rows log_dns_rows = { "name", "dns", false, dns_table_header, dns_table_row };
