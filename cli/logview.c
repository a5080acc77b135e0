/*
 * logview.c: `sluice log --by-host`, `--by-who`, `--by-rule` and
 * `--refused`: rows grouped.
 *
 * --by-host: for each host (sorted), one line per principal with the rows
 * allowed, refused and observed and the time of the last one. --by-who:
 * the same per principal, one line per host (as a grant names it).
 * --by-rule: for each inject rule, one line per principal it was applied
 * for (who spent which credential), with the count and the first and last
 * time; rows no rule was applied to are not counted. --refused:
 * for each principal, one line per host (as a grant names it: a bare name
 * for http on 80 and CONNECT on 443, else name:port) with the count, the
 * last reason and time, and, when the host was not granted, the command
 * that grants it: `sluice allow approve ID` of the last refusal when the
 * proxy gave it an id, else `sluice allow add`. --dns --refused:
 * the same per queried name, without principals (a DNS row names none).
 * A suppression row counts as the refusals it stands for, under host "-".
 * A quiet row (reason quiet: an agent profile's telemetry, refused on
 * purpose) is counted by no view unless asked (--all): it is nothing the
 * operator must act on.
 * log.c filters and resolves the rows; this file only counts what it is
 * given, in memory (one entry per group, not per row), and prints it at
 * the end.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define LABEL_MAX 300
#define TARGET_MAX (HOST_NAME_MAX_LEN + 16)

struct group {
	char *who;         /* the principal's label (principal_label); "" for DNS rows */
	char *host;        /* the row's host (a DNS row's name), "-" when it had none; --by-rule:
			      the rule's name */
	char *target;      /* --refused, --by-who: the host as a grant names it; else NULL */
	json_t *principal; /* the first row's principal, for --json; NULL for DNS rows */
	unsigned long allowed, refused, observed;
	char *first_ts;    /* the first row's ts, or NULL */
	char *last_ts;     /* the last row's ts, or NULL */
	char *last_reason; /* the last row's reason, or NULL */
	char *last_refusal; /* the last not-granted row's refusal id (`allow approve`), or NULL */
	bool grantable;    /* --refused: some row was not-granted */
};

struct logview {
	enum logview_kind kind;
	bool quiet; /* count quiet rows too (--all) */
	struct group *g; /* sorted: by (host, who) (--by-host, --by-rule), else (who, target) */
	size_t n, cap;
};

struct logview *logview_new(enum logview_kind kind, bool quiet)
{
	struct logview *v = calloc(1, sizeof(*v));

	if (v != NULL)
		v->quiet = quiet;
	if (v != NULL)
		v->kind = kind;
	return v;
}

void logview_free(struct logview *v)
{
	if (v == NULL)
		return;
	for (size_t i = 0; i < v->n; i++) {
		struct group *g = &v->g[i];

		free(g->who);
		free(g->host);
		free(g->target);
		json_decref(g->principal);
		free(g->first_ts);
		free(g->last_ts);
		free(g->last_reason);
		free(g->last_refusal);
	}
	free(v->g);
	free(v);
}

/*
 * The host as `sluice allow add` takes it, the way the proxy's refusal body
 * names it; a DNS row has no port: its bare name.
 */
static void grant_target(json_t *row, const char *host, char *out, size_t size)
{
	const char *kind = json_string_value(json_object_get(row, "kind"));
	json_t *pv = json_object_get(row, "port");
	long long port = json_is_integer(pv) ? (long long)json_integer_value(pv) : -1;
	bool bare = kind != NULL && ((strcmp(kind, "tunnel") == 0 && port == 443) ||
				     (strcmp(kind, "http") == 0 && port == 80));
	char text[24];

	snprintf(text, sizeof(text), "%lld", port);
	log_host_port(out, size, host, bare || port < 0 ? NULL : text);
}

static int group_cmp(const struct logview *v, const struct group *g, const char *who,
		     const char *host, const char *target)
{
	int c;

	if (v->kind == LOGVIEW_BY_HOST || v->kind == LOGVIEW_BY_RULE) {
		c = strcmp(g->host, host);
		return c != 0 ? c : strcmp(g->who, who);
	}
	c = strcmp(g->who, who);
	return c != 0 ? c : strcmp(g->target, target);
}

/* The group for (who, host, target), created in its sorted place if new; NULL: no memory. */
static struct group *group_get(struct logview *v, const char *who, const char *host,
			       const char *target, const struct principal *p)
{
	size_t lo = 0, hi = v->n;
	struct group *g;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = group_cmp(v, &v->g[mid], who, host, target);

		if (c == 0)
			return &v->g[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (v->n == v->cap) {
		size_t ncap = v->cap != 0 ? v->cap * 2 : 64;
		struct group *grown = realloc(v->g, ncap * sizeof(*grown));

		if (grown == NULL)
			return NULL;
		v->g = grown;
		v->cap = ncap;
	}
	g = &v->g[lo];
	memmove(&v->g[lo + 1], &v->g[lo], (v->n - lo) * sizeof(*g));
	memset(g, 0, sizeof(*g));
	v->n++;
	g->who = strdup(who);
	g->host = strdup(host);
	g->target = target != NULL ? strdup(target) : NULL;
	g->principal = p != NULL ? log_principal_json(p) : NULL;
	if (g->who == NULL || g->host == NULL || (target != NULL && g->target == NULL) ||
	    (p != NULL && g->principal == NULL)) {
		free(g->who);
		free(g->host);
		free(g->target);
		json_decref(g->principal);
		v->n--;
		memmove(&v->g[lo], &v->g[lo + 1], (v->n - lo) * sizeof(*g));
		return NULL;
	}
	return g;
}

/* Replace *slot with a copy of s (NULL stays NULL). Returns 0 or -1. */
static int set_copy(char **slot, const char *s)
{
	char *copy = NULL;

	if (s != NULL) {
		copy = strdup(s);
		if (copy == NULL)
			return -1;
	}
	free(*slot);
	*slot = copy;
	return 0;
}

/* Whether the view counts per host as a grant names it (grant_target). */
static bool by_target(const struct logview *v)
{
	return v->kind != LOGVIEW_BY_HOST && v->kind != LOGVIEW_BY_RULE;
}

int logview_add(struct logview *v, json_t *row, const struct principal *p)
{
	bool dns = v->kind == LOGVIEW_DNS_REFUSED;
	const char *host = json_string_value(json_object_get(row, dns ? "name" : "host"));
	const char *decision = json_string_value(json_object_get(row, "decision"));
	const char *reason = json_string_value(json_object_get(row, "reason"));
	const char *ts = json_string_value(json_object_get(row, "ts"));
	char who[LABEL_MAX], target[TARGET_MAX];
	json_t *suppressed = json_object_get(row, "rows");
	const char *kind = json_string_value(json_object_get(row, "kind"));
	/* a suppression row stands for the refusals it counted (their hosts unknown: "-") */
	unsigned long rows = kind != NULL && strcmp(kind, "suppressed") == 0 &&
				     json_is_integer(suppressed) && json_integer_value(suppressed) > 0
			     ? (unsigned long)json_integer_value(suppressed)
			     : 1;
	struct group *g;

	/* each exchange once, its own row (and the refusals a suppression row stands for), nothing else */
	if (!dns && !log_row_is_exchange(row) && (kind == NULL || strcmp(kind, "suppressed") != 0))
		return 0;
	if (!dns && !v->quiet && log_row_is_quiet(row))
		return 0;
	if (host == NULL)
		host = "-";
	if (p != NULL)
		principal_label(p, who, sizeof(who));
	else
		who[0] = '\0';
	if (v->kind == LOGVIEW_BY_RULE) {
		host = json_string_value(json_object_get(row, "inject"));
		if (host == NULL)
			return 0; /* no rule was applied to it */
	}
	if (by_target(v))
		grant_target(row, host, target, sizeof(target));
	g = group_get(v, who, host, by_target(v) ? target : NULL, p);
	if (g == NULL)
		return -1;
	if (decision != NULL && strcmp(decision, "allow") == 0)
		g->allowed++;
	else if (decision != NULL && strcmp(decision, "observe") == 0)
		g->observed++;
	else
		g->refused += rows;
	if (reason != NULL && strcmp(reason, "not-granted") == 0) {
		const char *id = json_string_value(json_object_get(row, "refusal"));

		g->grantable = true;
		if (id != NULL && set_copy(&g->last_refusal, id) == -1)
			return -1;
	}
	/* rows come in the order the proxy wrote them: the last one read is the last */
	if ((g->first_ts == NULL && set_copy(&g->first_ts, ts) == -1) ||
	    set_copy(&g->last_ts, ts) == -1 || set_copy(&g->last_reason, reason) == -1)
		return -1;
	return 0;
}

static json_t *str_or_null(const char *s)
{
	return s != NULL ? json_string(s) : json_null();
}

/*
 * The command that grants what a --refused group asked for: approving its
 * last refusal (exactly that host and port, for that principal) when the
 * proxy gave it an id, else adding its target by hand.
 */
static void grant_command(const struct group *g, char *buf, size_t size)
{
	if (g->last_refusal != NULL)
		snprintf(buf, size, "sluice allow approve %s", g->last_refusal);
	else
		snprintf(buf, size, "sluice allow add %s", g->target);
}

static void print_json(const struct logview *v, const struct group *g)
{
	json_t *o = json_object();
	char *text, grant[TARGET_MAX + 32];

	if (o == NULL)
		return;
	if (v->kind == LOGVIEW_BY_RULE) {
		json_object_set_new(o, "rule", json_string(g->host));
		json_object_set_new(o, "who", json_string(g->who));
		json_object_set(o, "principal", g->principal);
		json_object_set_new(o, "count",
				    json_integer((json_int_t)(g->refused + g->observed + g->allowed)));
		json_object_set_new(o, "first", str_or_null(g->first_ts));
		json_object_set_new(o, "last", str_or_null(g->last_ts));
	} else if (v->kind == LOGVIEW_BY_HOST || v->kind == LOGVIEW_BY_WHO) {
		json_object_set_new(o, "host", json_string(v->kind == LOGVIEW_BY_HOST ? g->host
										     : g->target));
		json_object_set_new(o, "who", json_string(g->who));
		json_object_set(o, "principal", g->principal);
		json_object_set_new(o, "allowed", json_integer((json_int_t)g->allowed));
		json_object_set_new(o, "refused", json_integer((json_int_t)g->refused));
		json_object_set_new(o, "observed", json_integer((json_int_t)g->observed));
		json_object_set_new(o, "last", str_or_null(g->last_ts));
	} else {
		grant_command(g, grant, sizeof(grant));
		if (v->kind == LOGVIEW_DNS_REFUSED) {
			json_object_set_new(o, "name", json_string(g->host));
		} else {
			json_object_set_new(o, "who", json_string(g->who));
			json_object_set(o, "principal", g->principal);
			json_object_set_new(o, "host", json_string(g->host));
			json_object_set_new(o, "target", json_string(g->target));
		}
		json_object_set_new(o, "count",
				    json_integer((json_int_t)(g->refused + g->observed + g->allowed)));
		json_object_set_new(o, "last", str_or_null(g->last_ts));
		json_object_set_new(o, "reason", str_or_null(g->last_reason));
		json_object_set_new(o, "grant", g->grantable ? json_string(grant) : json_null());
	}
	text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	if (text != NULL) {
		log_put_json(text, strlen(text));
		putchar('\n');
	}
	free(text);
	json_decref(o);
}

void logview_print(const struct logview *v, bool json)
{
	char tbuf[32], fbuf[32], count[32], grant[TARGET_MAX + 32];

	if (!json && v->kind == LOGVIEW_BY_HOST)
		printf("%-32s  %-28s  %7s  %7s  %8s  %s\n", "HOST", "WHO", "ALLOWED", "REFUSED",
		       "OBSERVED", "LAST");
	else if (!json && v->kind == LOGVIEW_BY_WHO)
		printf("%-28s  %-32s  %7s  %7s  %8s  %s\n", "WHO", "HOST", "ALLOWED", "REFUSED",
		       "OBSERVED", "LAST");
	else if (!json && v->kind == LOGVIEW_BY_RULE)
		printf("%-24s  %-28s  %5s  %-14s  %s\n", "RULE", "WHO", "COUNT", "FIRST", "LAST");
	else if (!json && v->kind == LOGVIEW_DNS_REFUSED)
		printf("%-32s  %5s  %-14s  %-16s  %s\n", "NAME", "COUNT", "LAST", "REASON",
		       "TO GRANT");
	else if (!json)
		printf("%-28s  %-32s  %5s  %-14s  %-16s  %s\n", "WHO", "HOST", "COUNT", "LAST",
		       "REASON", "TO GRANT");
	for (size_t i = 0; i < v->n; i++) {
		const struct group *g = &v->g[i];
		const char *last = g->last_ts != NULL ? log_time_cell(g->last_ts, tbuf, sizeof(tbuf))
						      : "-";

		if (json) {
			print_json(v, g);
		} else if (v->kind == LOGVIEW_BY_HOST || v->kind == LOGVIEW_BY_WHO) {
			log_put_cell(v->kind == LOGVIEW_BY_HOST ? g->host : g->who,
				     v->kind == LOGVIEW_BY_HOST ? 32 : 28, false);
			log_put_cell(v->kind == LOGVIEW_BY_HOST ? g->who : g->target,
				     v->kind == LOGVIEW_BY_HOST ? 28 : 32, false);
			printf("%7lu  %7lu  %8lu  ", g->allowed, g->refused, g->observed);
			log_put_cell(last, 14, true);
		} else if (v->kind == LOGVIEW_BY_RULE) {
			snprintf(count, sizeof(count), "%lu", g->refused + g->observed + g->allowed);
			log_put_cell(g->host, 24, false);
			log_put_cell(g->who, 28, false);
			printf("%5s  ", count);
			log_put_cell(g->first_ts != NULL ? log_time_cell(g->first_ts, fbuf, sizeof(fbuf))
							 : "-", 14, false);
			log_put_cell(last, 14, true);
		} else {
			snprintf(count, sizeof(count), "%lu", g->refused + g->observed + g->allowed);
			grant_command(g, grant, sizeof(grant));
			if (v->kind == LOGVIEW_REFUSED)
				log_put_cell(g->who, 28, false);
			log_put_cell(g->target, 32, false);
			printf("%5s  ", count);
			log_put_cell(last, 14, false);
			log_put_cell(g->last_reason != NULL ? g->last_reason : "-", 16, false);
			log_put_cell(g->grantable ? grant : "-", 300, true);
		}
	}
}
