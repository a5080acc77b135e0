/*
 * snapshot.c: the lines of STATE/engine.jsonl, read and written.
 *
 * One line per snapshot:
 *   {"t":"2026-11-30T03:01:02.123Z","net":"podman","containers":[{"id":"<64 hex>",
 *    "name":"web","project":"demo","netmode":"bridge","addrs":["10.88.0.5"]}]}
 * Parsing is strict (a line is either a whole snapshot or reported) and
 * addresses are kept as bytes, so "fd00::5" and "fd00:0::5" are one address.
 * It does not decide anything: engine.c takes snapshots, principal.c applies
 * them (after snapshots_index sorts them here).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "digits.h"
#include "snapshot.h"

#define NAME_MAX_LEN 255 /* a container name or project: more is not from an engine */

int snapshot_addr_parse(const char *text, struct snap_addr *a)
{
	memset(a, 0, sizeof(*a));
	if (inet_pton(AF_INET, text, a->a) == 1) {
		a->family = AF_INET;
		return 0;
	}
	if (inet_pton(AF_INET6, text, a->a) == 1) {
		a->family = AF_INET6;
		return 0;
	}
	return -1;
}

/* "PREFIX: what PATH: error" with strerror in lower case, as diagnostics read. */
static void put_errno(FILE *f, const char *prefix, const char *what, const char *path, int e)
{
	const char *msg = strerror(e);

	fprintf(f, "%s: %s %s: %c%s\n", prefix, what, path,
		msg[0] >= 'A' && msg[0] <= 'Z' ? msg[0] - 'A' + 'a' : msg[0], msg + 1);
}

static int addr_cmp(const struct snap_addr *a, const struct snap_addr *b)
{
	if (a->family != b->family)
		return a->family < b->family ? -1 : 1;
	return memcmp(a->a, b->a, sizeof(a->a));
}

static int addr_qcmp(const void *a, const void *b)
{
	return addr_cmp(a, b);
}

/* A timestamp field: exactly n digits (n <= 4), leading zeros and all. */
static int digits(const char *s, size_t n, int *out)
{
	uint64_t v;

	if (dec_parse(s, n, 9999, &v) == -1)
		return -1;
	*out = (int)v;
	return 0;
}

int snapshot_ts_parse(const char *ts, int64_t *ms)
{
	struct tm tm;
	int y, mo, d, h, mi, s, frac = 0, nfrac = 0;
	const char *p = ts + 19;
	time_t t;

	if (strlen(ts) < 20 || ts[4] != '-' || ts[7] != '-' || ts[10] != 'T' || ts[13] != ':' ||
	    ts[16] != ':' || digits(ts, 4, &y) == -1 || digits(ts + 5, 2, &mo) == -1 ||
	    digits(ts + 8, 2, &d) == -1 || digits(ts + 11, 2, &h) == -1 ||
	    digits(ts + 14, 2, &mi) == -1 || digits(ts + 17, 2, &s) == -1)
		return -1;
	if (*p == '.') {
		/* a fraction of 1-9 digits, read to milliseconds: past three they are dropped */
		size_t nd = strspn(++p, "0123456789");

		if (nd == 0 || nd > 9 || digits(p, nd < 3 ? nd : 3, &frac) == -1)
			return -1;
		nfrac = (int)nd;
		p += nd;
		for (int i = nfrac; i < 3; i++)
			frac *= 10;
	}
	if (strcmp(p, "Z") != 0 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 ||
	    s > 60)
		return -1;
	memset(&tm, 0, sizeof(tm));
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = s;
	t = timegm(&tm);
	if (t == (time_t)-1)
		return -1;
	*ms = (int64_t)t * 1000 + frac;
	return 0;
}

void snapshot_ts_format(int64_t ms, char *buf)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	gmtime_r(&t, &tm);
	snprintf(buf, SNAP_TS_LEN + 1, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms % 1000));
}

bool snapshot_is_id(const char *s)
{
	return strlen(s) == SNAP_ID_LEN && hex_is_lower(s, SNAP_ID_LEN);
}

bool snapshot_is_name(const char *s)
{
	size_t n = s != NULL ? strlen(s) : 0;

	if (n == 0 || n > NAME_MAX_LEN)
		return false;
	for (size_t i = 0; i < n; i++) {
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return false;
	}
	return true;
}

void snapshot_ctr_release(struct snap_ctr *c)
{
	free(c->name);
	c->name = NULL;
	free(c->project);
	c->project = NULL;
	free(c->netmode);
	c->netmode = NULL;
	free(c->addrs);
	c->addrs = NULL;
	c->naddrs = 0;
}

void snapshot_release(struct snapshot *s)
{
	for (size_t i = 0; i < s->nctrs; i++)
		snapshot_ctr_release(&s->ctrs[i]);
	free(s->ctrs);
	s->ctrs = NULL;
	s->nctrs = 0;
}

/* An optional string key: absent or null is NULL. Returns 0, or -1 if present and not a name. */
static int opt_name(json_t *o, const char *key, char **out)
{
	json_t *v = json_object_get(o, key);

	*out = NULL;
	if (v == NULL || json_is_null(v))
		return 0;
	if (!json_is_string(v) || !snapshot_is_name(json_string_value(v)))
		return -1;
	*out = strdup(json_string_value(v));
	return *out == NULL ? -1 : 0;
}

static int ctr_parse(json_t *o, struct snap_ctr *c, const char **err)
{
	const char *id = json_string_value(json_object_get(o, "id"));
	const char *name = json_string_value(json_object_get(o, "name"));
	json_t *addrs = json_object_get(o, "addrs");
	size_t i;
	json_t *a;

	memset(c, 0, sizeof(*c));
	if (!json_is_object(o) || id == NULL || !snapshot_is_id(id)) {
		*err = "a container without a 64-hex id";
		return -1;
	}
	memcpy(c->id, id, SNAP_ID_LEN + 1);
	if (name == NULL || !snapshot_is_name(name)) {
		*err = "a container without a name";
		return -1;
	}
	c->name = strdup(name);
	if (c->name == NULL || opt_name(o, "project", &c->project) == -1 ||
	    opt_name(o, "netmode", &c->netmode) == -1) {
		*err = "bad project or netmode";
		goto out_release;
	}
	if (addrs != NULL && !json_is_array(addrs)) {
		*err = "addrs is not a list";
		goto out_release;
	}
	if (json_array_size(addrs) > 0) {
		c->addrs = calloc(json_array_size(addrs), sizeof(*c->addrs));
		if (c->addrs == NULL) {
			*err = "out of memory";
			goto out_release;
		}
	}
	json_array_foreach(addrs, i, a) {
		const char *text = json_string_value(a);

		if (text == NULL || snapshot_addr_parse(text, &c->addrs[c->naddrs]) == -1) {
			*err = "bad address";
			goto out_release;
		}
		c->naddrs++;
	}
	return 0;
out_release:
	snapshot_ctr_release(c);
	return -1;
}

int snapshot_parse(const char *line, size_t len, struct snapshot *s, const char **err)
{
	json_error_t jerr;
	json_t *root = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
	const char *t, *net;
	json_t *ctrs, *o;
	size_t i;
	int ret = -1;

	memset(s, 0, sizeof(*s));
	if (root == NULL || !json_is_object(root)) {
		*err = "not a JSON object";
		goto out_root;
	}
	t = json_string_value(json_object_get(root, "t"));
	if (t == NULL || strlen(t) > SNAP_TS_LEN || snapshot_ts_parse(t, &s->t_ms) == -1) {
		*err = "bad t";
		goto out_root;
	}
	snprintf(s->t, sizeof(s->t), "%s", t);
	net = json_string_value(json_object_get(root, "net"));
	if (net == NULL || strlen(net) > SNAP_NET_MAX || !snapshot_is_name(net)) {
		*err = "bad net";
		goto out_root;
	}
	snprintf(s->net, sizeof(s->net), "%s", net);
	ctrs = json_object_get(root, "containers");
	if (!json_is_array(ctrs)) {
		*err = "containers is not a list";
		goto out_root;
	}
	if (json_array_size(ctrs) > 0) {
		s->ctrs = calloc(json_array_size(ctrs), sizeof(*s->ctrs));
		if (s->ctrs == NULL) {
			*err = "out of memory";
			goto out_root;
		}
	}
	json_array_foreach(ctrs, i, o) {
		if (ctr_parse(o, &s->ctrs[s->nctrs], err) == -1) {
			snapshot_release(s);
			goto out_root;
		}
		s->nctrs++;
	}
	snapshot_normalize(s);
	ret = 0;
out_root:
	json_decref(root);
	return ret;
}

static int ctr_qcmp(const void *a, const void *b)
{
	const struct snap_ctr *x = a, *y = b;

	return strcmp(x->id, y->id);
}

void snapshot_normalize(struct snapshot *s)
{
	if (s->nctrs > 1) /* qsort's base may not be NULL, even for nothing */
		qsort(s->ctrs, s->nctrs, sizeof(*s->ctrs), ctr_qcmp);
	for (size_t i = 0; i < s->nctrs; i++) {
		struct snap_ctr *c = &s->ctrs[i];
		size_t n = 0;

		if (c->naddrs > 1)
			qsort(c->addrs, c->naddrs, sizeof(*c->addrs), addr_qcmp);
		for (size_t j = 0; j < c->naddrs; j++) {
			if (n == 0 || addr_cmp(&c->addrs[n - 1], &c->addrs[j]) != 0)
				c->addrs[n++] = c->addrs[j];
		}
		c->naddrs = n;
	}
}

static bool str_same(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	return strcmp(a, b) == 0;
}

bool snapshot_same(const struct snapshot *a, const struct snapshot *b)
{
	if (a->nctrs != b->nctrs)
		return false;
	for (size_t i = 0; i < a->nctrs; i++) {
		const struct snap_ctr *x = &a->ctrs[i], *y = &b->ctrs[i];

		if (strcmp(x->id, y->id) != 0 || !str_same(x->name, y->name) ||
		    !str_same(x->project, y->project) || !str_same(x->netmode, y->netmode) ||
		    x->naddrs != y->naddrs)
			return false;
		for (size_t j = 0; j < x->naddrs; j++) {
			if (addr_cmp(&x->addrs[j], &y->addrs[j]) != 0)
				return false;
		}
	}
	return true;
}

static json_t *ctr_json(const struct snap_ctr *c)
{
	json_t *o = json_object(), *addrs = json_array();
	char text[INET6_ADDRSTRLEN];

	if (o == NULL || addrs == NULL)
		goto out_fail;
	for (size_t i = 0; i < c->naddrs; i++) {
		if (inet_ntop(c->addrs[i].family, c->addrs[i].a, text, sizeof(text)) == NULL ||
		    json_array_append_new(addrs, json_string(text)) == -1)
			goto out_fail;
	}
	if (json_object_set_new(o, "id", json_string(c->id)) == -1 ||
	    json_object_set_new(o, "name", json_string(c->name)) == -1 ||
	    json_object_set_new(o, "project",
				c->project != NULL ? json_string(c->project) : json_null()) == -1 ||
	    json_object_set_new(o, "netmode",
				c->netmode != NULL ? json_string(c->netmode) : json_null()) == -1)
		goto out_fail;
	if (json_object_set_new(o, "addrs", addrs) == -1) {
		addrs = NULL; /* set_new took it even on failure */
		goto out_fail;
	}
	return o;
out_fail:
	json_decref(addrs);
	json_decref(o);
	return NULL;
}

char *snapshot_format(const struct snapshot *s)
{
	json_t *root = json_object(), *ctrs = json_array();
	char *text = NULL, *line = NULL;
	size_t len;

	if (root == NULL || ctrs == NULL) {
		json_decref(ctrs);
		goto out_root;
	}
	if (json_object_set_new(root, "t", json_string(s->t)) == -1 ||
	    json_object_set_new(root, "net", json_string(s->net)) == -1 ||
	    json_object_set_new(root, "containers", ctrs) == -1)
		goto out_root;
	for (size_t i = 0; i < s->nctrs; i++) {
		if (json_array_append_new(ctrs, ctr_json(&s->ctrs[i])) == -1)
			goto out_root;
	}
	text = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
	if (text == NULL)
		goto out_root;
	len = strlen(text);
	line = malloc(len + 2);
	if (line != NULL) {
		memcpy(line, text, len);
		line[len] = '\n';
		line[len + 1] = '\0';
	}
	free(text);
out_root:
	json_decref(root);
	return line;
}

int snapshots_add(struct snapshots *all, struct snapshot *s)
{
	if (all->n == all->cap) {
		size_t ncap = all->cap != 0 ? all->cap * 2 : 16;
		struct snapshot *grown = realloc(all->v, ncap * sizeof(*grown));

		if (grown == NULL)
			return -1;
		all->v = grown;
		all->cap = ncap;
	}
	all->v[all->n++] = *s;
	memset(s, 0, sizeof(*s));
	return 0;
}

void snapshots_release(struct snapshots *all)
{
	for (size_t i = 0; i < all->n; i++)
		snapshot_release(&all->v[i]);
	free(all->v);
	all->v = NULL;
	all->n = 0;
	all->cap = 0;
	free(all->refs);
	all->refs = NULL;
	all->nrefs = 0;
}

static int snap_cmp(const struct snapshot *a, const struct snapshot *b)
{
	int c = strcmp(a->net, b->net);

	if (c != 0)
		return c;
	if (a->t_ms != b->t_ms)
		return a->t_ms < b->t_ms ? -1 : 1;
	return a->line < b->line ? -1 : a->line > b->line;
}

static int snap_qcmp(const void *a, const void *b)
{
	return snap_cmp(a, b);
}

static int ref_qcmp(const void *a, const void *b, void *arg)
{
	const struct snapshots *all = arg;
	const struct snap_ref *x = a, *y = b;
	const struct snapshot *sx = &all->v[x->snap], *sy = &all->v[y->snap];
	int c = strcmp(sx->ctrs[x->ctr].id, sy->ctrs[y->ctr].id);

	if (c != 0)
		return c;
	if (sx->t_ms != sy->t_ms)
		return sx->t_ms < sy->t_ms ? -1 : 1;
	return sx->line < sy->line ? -1 : sx->line > sy->line;
}

int snapshots_index(struct snapshots *all)
{
	size_t n = 0, k = 0;

	if (all->n > 1)
		qsort(all->v, all->n, sizeof(*all->v), snap_qcmp);
	free(all->refs);
	all->refs = NULL;
	all->nrefs = 0;
	for (size_t i = 0; i < all->n; i++)
		n += all->v[i].nctrs;
	if (n == 0)
		return 0;
	if (all->n > UINT32_MAX)
		return -1;
	all->refs = calloc(n, sizeof(*all->refs));
	if (all->refs == NULL)
		return -1;
	for (size_t i = 0; i < all->n; i++) {
		for (size_t j = 0; j < all->v[i].nctrs; j++) {
			all->refs[k].snap = (uint32_t)i;
			all->refs[k].ctr = (uint32_t)j;
			k++;
		}
	}
	all->nrefs = n;
	qsort_r(all->refs, n, sizeof(*all->refs), ref_qcmp, all);
	return 0;
}

int snapshot_load(const char *path, const char *prefix, struct snapshots *all, FILE *err)
{
	FILE *f;
	char *line = NULL;
	size_t cap = 0, lineno = 0;
	ssize_t n;
	int ret = -1;

	snapshots_release(all);
	f = fopen(path, "re");
	if (f == NULL) {
		if (errno == ENOENT)
			return 0;
		put_errno(err, prefix, "read", path, errno);
		return -1;
	}
	while ((n = getline(&line, &cap, f)) != -1) {
		struct snapshot s;
		const char *why = NULL;
		size_t len = (size_t)n;
		bool complete = len > 0 && line[len - 1] == '\n';

		lineno++;
		if (complete)
			len--;
		if (len > 0 && line[len - 1] == '\r')
			len--;
		if (len == 0)
			continue;
		if (len > SNAP_LINE_MAX) {
			fprintf(err, "%s: %s:%zu: line too long\n", prefix, path, lineno);
			continue;
		}
		if (snapshot_parse(line, len, &s, &why) == -1) {
			if (complete)
				fprintf(err, "%s: %s:%zu: %s\n", prefix, path, lineno, why);
			continue;
		}
		s.line = lineno;
		if (snapshots_add(all, &s) == -1) {
			snapshot_release(&s);
			fprintf(err, "%s: out of memory reading %s\n", prefix, path);
			goto out_close;
		}
	}
	if (ferror(f)) {
		put_errno(err, prefix, "read", path, errno);
		goto out_close;
	}
	if (snapshots_index(all) == -1) {
		fprintf(err, "%s: out of memory reading %s\n", prefix, path);
		goto out_close;
	}
	ret = 0;
out_close:
	free(line);
	fclose(f);
	return ret;
}
