/*
 * principal.c: name a log row's principal from engine snapshots.
 *
 * Pure functions over an indexed struct snapshots (principal.h): no I/O,
 * no clock, no allocation after snapshots_index. The rule is the design
 * brief's: for src@net, the latest snapshot of that net at or before the
 * row if it holds the address, else the first one after it if that holds
 * it, else the bare address. It never looks further in either direction,
 * so a snapshot that dropped a container ends its claim to the address. It
 * does not guess: two containers holding one address in one snapshot (pod
 * members sharing a namespace) resolve to the first by id.
 */
#include <string.h>
#include <strings.h>
#include <stdlib.h>

#include "digits.h"
#include "principal.h"

#define ID_PREFIX_MIN 12

/* The container of s holding a, or NULL. */
static const struct snap_ctr *snap_holder(const struct snapshot *s, const struct snap_addr *a)
{
	for (size_t i = 0; i < s->nctrs; i++) {
		const struct snap_ctr *c = &s->ctrs[i];
		size_t lo = 0, hi = c->naddrs;

		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			const struct snap_addr *m = &c->addrs[mid];
			int cmp = m->family != a->family ? (m->family < a->family ? -1 : 1)
							 : memcmp(m->a, a->a, sizeof(a->a));

			if (cmp == 0)
				return c;
			if (cmp < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
	}
	return NULL;
}

/* First index in [lo, hi) of all->v whose net is >= net (want_gt: > net). */
static size_t net_bound(const struct snapshots *all, const char *net, bool want_gt)
{
	size_t lo = 0, hi = all->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(all->v[mid].net, net);

		if (c < 0 || (want_gt && c == 0))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* First index in [lo, hi) whose t is > t (all->v is sorted by t within a net). */
static size_t time_bound(const struct snapshot *v, size_t lo, size_t hi, int64_t t)
{
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].t_ms <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void set_container(struct principal *p, const struct snapshot *s, const struct snap_ctr *c)
{
	p->kind = PRINCIPAL_CONTAINER;
	p->name = c->name;
	p->id = c->id;
	p->project = c->project;
	p->snap = s;
}

static bool is_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (hex_value((unsigned char)s[i]) == -1)
			return false;
	return true;
}

/* as=container:<id>: the latest appearance at or before the row, else the first after. */
static void container_by_id(const struct snapshots *all, const struct principal_row *row,
			    const char *id, struct principal *p)
{
	size_t lo = 0, hi = all->nrefs, first, end, at;

	p->kind = PRINCIPAL_CONTAINER;
	p->id = id;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct snap_ref *r = &all->refs[mid];

		if (strcmp(all->v[r->snap].ctrs[r->ctr].id, id) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	first = lo;
	for (end = first; end < all->nrefs; end++) {
		const struct snap_ref *r = &all->refs[end];

		if (strcmp(all->v[r->snap].ctrs[r->ctr].id, id) != 0)
			break;
	}
	if (first == end)
		return; /* in no snapshot: the id alone */
	at = end;
	if (row->has_t) {
		for (at = first; at < end && all->v[all->refs[at].snap].t_ms <= row->t_ms; at++)
			;
	}
	/* at: the first appearance after the row; the one before it, if any, is at or before */
	if (at > first)
		at--;
	set_container(p, &all->v[all->refs[at].snap],
		      &all->v[all->refs[at].snap].ctrs[all->refs[at].ctr]);
}

static void from_row(const struct snapshots *all, const struct principal_row *row,
		     struct principal *p)
{
	struct snap_addr a;
	size_t lo, hi, after;
	const struct snap_ctr *c;

	memset(p, 0, sizeof(*p));
	p->src = row->src;
	p->net = row->net;
	/* a build token names a build without a stamp (no src); nothing else does */
	if (row->src == NULL && (row->as == NULL || strncmp(row->as, "build:", 6) != 0)) {
		p->kind = PRINCIPAL_UNATTRIBUTED;
		return;
	}
	if (row->as != NULL) {
		const char *as = row->as;

		if (strncmp(as, "container:", 10) == 0 && strlen(as + 10) == SNAP_ID_LEN &&
		    is_hex(as + 10, SNAP_ID_LEN)) {
			container_by_id(all, row, as + 10, p);
			return;
		}
		if (strncmp(as, "build:", 6) == 0 && as[6] != '\0') {
			p->kind = PRINCIPAL_BUILD;
			p->name = as + 6;
			return;
		}
		if (strcmp(as, "user") == 0) {
			p->kind = PRINCIPAL_USER;
			return;
		}
		/* a run's project: still its container when a snapshot has it (--image) */
		if (strncmp(as, "project:", 8) == 0 && as[8] != '\0')
			p->run_project = as + 8;
		/* a principal this reader does not know: the stamped address still is one */
	}
	p->kind = PRINCIPAL_ADDRESS;
	if (row->net == NULL || !row->has_t || snapshot_addr_parse(row->src, &a) == -1)
		return;
	lo = net_bound(all, row->net, false);
	hi = net_bound(all, row->net, true);
	after = time_bound(all->v, lo, hi, row->t_ms);
	if (after > lo) {
		c = snap_holder(&all->v[after - 1], &a);
		if (c != NULL) {
			set_container(p, &all->v[after - 1], c);
			return;
		}
	}
	if (after < hi) {
		c = snap_holder(&all->v[after], &a);
		if (c != NULL)
			set_container(p, &all->v[after], c);
	}
}

void principal_from_row(const struct snapshots *all, const struct principal_row *row,
			struct principal *p)
{
	from_row(all, row, p);
	if (p->run_project != NULL && p->kind == PRINCIPAL_ADDRESS) {
		p->kind = PRINCIPAL_PROJECT;
		p->name = p->run_project;
	}
}

void principal_label(const struct principal *p, char *buf, size_t size)
{
	switch (p->kind) {
	case PRINCIPAL_CONTAINER:
		if (p->name == NULL)
			snprintf(buf, size, "container:%.12s", p->id);
		else if (p->project != NULL)
			snprintf(buf, size, "%s (%s)", p->name, p->project);
		else
			snprintf(buf, size, "%s", p->name);
		return;
	case PRINCIPAL_BUILD:
		snprintf(buf, size, "build:%s", p->name);
		return;
	case PRINCIPAL_USER:
		snprintf(buf, size, "user");
		return;
	case PRINCIPAL_PROJECT:
		snprintf(buf, size, "project:%s", p->name);
		return;
	case PRINCIPAL_ADDRESS:
		snprintf(buf, size, "%s@%s", p->src, p->net != NULL ? p->net : "-");
		return;
	case PRINCIPAL_UNATTRIBUTED:
		break;
	}
	snprintf(buf, size, "unattributed");
}

const char *principal_kind_name(enum principal_kind kind)
{
	switch (kind) {
	case PRINCIPAL_CONTAINER: return "container";
	case PRINCIPAL_BUILD: return "build";
	case PRINCIPAL_USER: return "user";
	case PRINCIPAL_PROJECT: return "project";
	case PRINCIPAL_ADDRESS: return "address";
	case PRINCIPAL_UNATTRIBUTED: break;
	}
	return "unattributed";
}

/* who is ADDR or ADDR@NET and names p's source. *is_addr: who has that form at all. */
static bool addr_matches(const char *who, const struct principal *p, bool *is_addr)
{
	char text[64];
	const char *at = strchr(who, '@');
	size_t n = at != NULL ? (size_t)(at - who) : strlen(who);
	struct snap_addr want, have;

	*is_addr = false;
	if (n >= sizeof(text))
		return false;
	memcpy(text, who, n);
	text[n] = '\0';
	if (snapshot_addr_parse(text, &want) == -1)
		return false;
	*is_addr = true;
	if (p->src == NULL || snapshot_addr_parse(p->src, &have) == -1)
		return false;
	if (want.family != have.family || memcmp(want.a, have.a, sizeof(want.a)) != 0)
		return false;
	return at == NULL || (p->net != NULL && strcmp(at + 1, p->net) == 0);
}

bool principal_matches_who(const char *who, const struct principal *p)
{
	size_t n = strlen(who);
	bool is_addr, m;

	if (strcmp(who, "unattributed") == 0)
		return p->kind == PRINCIPAL_UNATTRIBUTED;
	if (strcmp(who, "user") == 0)
		return p->kind == PRINCIPAL_USER;
	if (strncmp(who, "build:", 6) == 0)
		return p->kind == PRINCIPAL_BUILD && strcmp(p->name, who + 6) == 0;
	if (strncmp(who, "project:", 8) == 0) {
		/* the project is each of its agents too; an agent only itself */
		const char *rp = p->run_project;

		n -= 8;
		return rp != NULL && strncmp(rp, who + 8, n) == 0 &&
		       (rp[n] == '\0' || (rp[n] == '/' && memchr(who + 8, '/', n) == NULL));
	}
	if (strncmp(who, "container:", 10) == 0) {
		who += 10;
		n -= 10;
		return p->kind == PRINCIPAL_CONTAINER && n >= ID_PREFIX_MIN && n <= SNAP_ID_LEN &&
		       is_hex(who, n) && strncasecmp(p->id, who, n) == 0;
	}
	m = addr_matches(who, p, &is_addr);
	if (is_addr)
		return m;
	if (p->kind != PRINCIPAL_CONTAINER)
		return false;
	if (n >= ID_PREFIX_MIN && n <= SNAP_ID_LEN && is_hex(who, n) &&
	    strncasecmp(p->id, who, n) == 0)
		return true;
	return p->name != NULL && strcmp(p->name, who) == 0;
}
