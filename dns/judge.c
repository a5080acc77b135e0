/*
 * judge.c: which names and types sluice-dns answers, from the same policy
 * the proxy enforces (lib/policy.c), rebuilt when the config, the grant
 * store or the proxy's run id (session grants) change, or a once grant
 * expires, checked each second.
 *
 * Also re-read here: the stamp keys (STATE/stamp.key), which verify the
 * asker tags of relayed queries (query.c).
 *
 * A name is answerable when a live grant names it, at any level and any
 * port, or a *.suffix grant covers it, or an allow-private or inject line
 * names it. A and AAAA are answered (their CNAMEs inside), their
 * addresses through policy_judge_addr (the deny list, allow-private, the
 * machine's own addresses); HTTPS and SVCB get NODATA; other types NODATA
 * unless dns-allow-type allows them for the name. A name answerable only
 * through a wildcard spends the suffix's budget of the asker (the run whose
 * forwarder tagged the query, by its net; every unattributed query
 * together is one more): at most dns-wildcard-budget distinct names in its
 * window, past which names not yet seen get NXDOMAIN, for that asker only.
 * Runs come and go while sluice-dns stays, so budgets do not: one whose
 * asker asked nothing for a window is freed (every name in it has expired)
 * by the sweep each second, and a new asker finding all BUDGETS_MAX in use
 * takes the place of the least recently used. That one is live, and its
 * asker starts afresh when it asks again: only after BUDGETS_MAX other
 * (asker, suffix) pairs asked since its last query, which no run can make
 * alone (a tag names its run's one principal, unattributed queries are one
 * asker, and the suffixes are the granted wildcards), and a run that keeps
 * asking is never the least recently used.
 * In observe mode an unanswerable name is looked
 * up anyway and marked observe; types and addresses are checked in both
 * modes.
 */
#include "dns.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "file.h"

#define WATCH_MS 1000
#define BUDGETS_MAX 1024

/*
 * Names seen under one wildcard suffix in the window: an open-addressed
 * set of their hashes, twice the budget in slots, so a lookup is a probe
 * or two whatever the budget.
 */
struct budget {
	struct hmap_node node; /* in the budgets' table, by asker and suffix */
	struct list_node lru;  /* the budgets' LRU order */
	char asker[STAMP_NET_MAX + 1]; /* the tag's net; "" for the unattributed */
	char suffix[HOST_NAME_MAX_LEN + 1];
	size_t live;  /* names in the window (as of the last sweep) */
	size_t nslots; /* a power of two, at least twice the budget */
	uint64_t swept_ms;
	uint64_t used_ms; /* when its asker last asked under it */
	struct {
		uint64_t hash; /* 0: empty */
		uint64_t seen_ms;
	} slots[];
};

struct budgets {
	struct hmap map; /* by asker and suffix (SipHash under a random key: the asker's net is
	                    the forwarder's to name) */
	struct lru lru;  /* most recently used first */
};

static struct budget *budget_oldest(const struct budgets *bs)
{
	return list_entry(lru_oldest(&bs->lru), struct budget, lru);
}

static void budget_free(struct budgets *bs, struct budget *b)
{
	hmap_remove(&bs->map, &b->node);
	lru_remove(&bs->lru, &b->lru);
	free(b);
}

/*
 * The stamp keys. Missing: no tag is believed, every query unattributed.
 * Damaged or unreadable: the same, said loudly; attribution never fails
 * open into a wrong name.
 */
static void load_keys(struct dnsd *d)
{
	const char *path = d->watch_keys.path, *err = NULL;
	size_t len, line = 0;
	char *buf;

	explicit_bzero(d->keys, sizeof(d->keys));
	d->nkeys = 0;
	if (file_read(path, 64 * 1024, &buf, &len) == -1) {
		if (errno != ENOENT)
			fprintf(stderr, "sluice-dns: ERROR: stamp keys %s unreadable: %s; every "
					"query is unattributed\n", path, strerror(errno));
		return;
	}
	if (stamp_keys_parse(buf, len, d->keys, STAMP_KEYS_MAX, &d->nkeys, &line, &err) == -1) {
		fprintf(stderr, "sluice-dns: ERROR: stamp keys %s:%zu: %s; every query is "
				"unattributed\n", path, line, err);
		d->nkeys = 0;
	}
	explicit_bzero(buf, len);
	free(buf);
}

static int rebuild(struct dnsd *d)
{
	struct policy *p;

	if (store_run_id(d->config->state_dir, d->run_id) == -1)
		d->run_id[0] = '\0'; /* no proxy running: no session grant is live */
	p = store_policy(d->config, d->watch_store.path, d->run_id[0] != '\0' ? d->run_id : NULL,
			 "sluice-dns", &d->next_expiry);
	if (p == NULL)
		return -1;
	policy_free(d->policy);
	d->policy = p;
	d->policy_gen++; /* what cache entries remember of the last one is stale */
	return 0;
}

void judge_reload(struct dnsd *d, const char *why)
{
	struct config *c = config_new();

	if (c == NULL || config_load(c, d->config_path, stderr) != 0) {
		fprintf(stderr, "sluice-dns: reload (%s): %s has errors; keeping the running "
				"config\n", why, d->config_path);
		config_free(c);
	} else {
		struct config *old = d->config;

		/* what is bound to this process stays: listeners, upstreams, files, the cache */
		memcpy(c->dns_listen, old->dns_listen, sizeof(c->dns_listen));
		c->ndns_listen = old->ndns_listen;
		memcpy(c->dns_upstreams, old->dns_upstreams, sizeof(c->dns_upstreams));
		c->ndns_upstreams = old->ndns_upstreams;
		memcpy(c->state_dir, old->state_dir, sizeof(c->state_dir));
		memcpy(c->dns_log_path, old->dns_log_path, sizeof(c->dns_log_path));
		memcpy(c->user, old->user, sizeof(c->user));
		c->log_chain = old->log_chain;
		c->dns_cache_entries = old->dns_cache_entries;
		c->dns_wildcard_budget = old->dns_wildcard_budget;
		c->dns_wildcard_window = old->dns_wildcard_window;
		upstream_rebind(d, c);
		config_free(old);
		d->config = c;
	}
	if (rebuild(d) == 0)
		fprintf(stderr, "sluice-dns: policy reloaded (%s): mode %s, %zu grants%s\n", why,
			policy_mode_name(d->policy, time(NULL)), d->policy->ngrants,
			d->policy->store_damaged ? ", grant store DAMAGED" : "");
}

/* Free the budgets whose asker asked nothing for a window: the least recently used ones. */
static void budgets_expire(struct dnsd *d)
{
	struct budgets *bs = d->budget;
	uint64_t now = loop_now(d->loop), window = (uint64_t)d->config->dns_wildcard_window * 1000;

	while (budget_oldest(bs) != NULL && now - budget_oldest(bs)->used_ms >= window)
		budget_free(bs, budget_oldest(bs));
}

static void on_watch(struct loop *l, struct loop_timer *t)
{
	struct dnsd *d = t->arg;
	bool cfg = watch_changed(&d->watch_config);
	bool store = watch_changed(&d->watch_store);
	bool run = watch_changed(&d->watch_run);
	char now_run[GRANT_RUN_ID_LEN + 1];

	if (watch_changed(&d->watch_keys))
		load_keys(d);
	if (cfg || store || run) {
		judge_reload(d, cfg ? "config changed" : store ? "grant store changed"
							: "the proxy's run changed");
	} else {
		/* the proxy killed leaves its run file as it was, only unlocked; and once
		 * grants expire by the clock */
		if (store_run_id(d->config->state_dir, now_run) == -1)
			now_run[0] = '\0';
		if (strcmp(now_run, d->run_id) != 0 ||
		    (d->next_expiry != 0 && time(NULL) >= d->next_expiry))
			rebuild(d);
	}
	budgets_expire(d);
	loop_timer_set(l, t, WATCH_MS, on_watch, d);
}

int judge_init(struct dnsd *d)
{
	struct budgets *bs = calloc(1, sizeof(*bs));

	if (bs == NULL)
		return -1;
	if (hmap_init(&bs->map, 64, 2 * BUDGETS_MAX) == -1) {
		free(bs);
		return -1;
	}
	d->budget = bs;
	snprintf(d->watch_config.path, sizeof(d->watch_config.path), "%s", d->config_path);
	snprintf(d->watch_store.path, sizeof(d->watch_store.path), "%s/grants",
		 d->config->state_dir);
	snprintf(d->watch_run.path, sizeof(d->watch_run.path), "%s/proxy.run",
		 d->config->state_dir);
	snprintf(d->watch_keys.path, sizeof(d->watch_keys.path), "%s/stamp.key",
		 d->config->state_dir);
	watch_changed(&d->watch_keys);
	load_keys(d);
	watch_changed(&d->watch_config);
	watch_changed(&d->watch_store);
	watch_changed(&d->watch_run);
	if (rebuild(d) == -1)
		return -1;
	loop_timer_set(d->loop, &d->watch_timer, WATCH_MS, on_watch, d);
	return 0;
}

void judge_release(struct dnsd *d)
{
	struct budgets *b = d->budget;

	loop_timer_cancel(d->loop, &d->watch_timer);
	explicit_bzero(d->keys, sizeof(d->keys));
	d->nkeys = 0;
	policy_free(d->policy);
	d->policy = NULL;
	if (b != NULL) {
		while (budget_oldest(b) != NULL)
			budget_free(b, budget_oldest(b));
		hmap_release(&b->map);
		free(b);
	}
	d->budget = NULL;
}

/* --- names ----------------------------------------------------------------- */

/*
 * The first live wildcard grant covering the name, by index, or -1. The
 * public suffix list makes this the dearest part of judging, so the answer
 * is kept with the name's cache entry for as long as the policy snapshot
 * lives (memo, may be NULL).
 */
static long wildcard_of(struct dnsd *d, const struct host *h, time_t now, const char *run,
			struct cache_entry *memo)
{
	const struct policy *p = d->policy;

	if (memo != NULL && memo->memo_gen == d->policy_gen &&
	    (memo->memo_wild < 0 || grant_live(&p->grants[memo->memo_wild], now, run)))
		return memo->memo_wild;
	for (size_t i = 0; i < p->ngrants; i++) {
		const struct grant *g = &p->grants[i];

		if (g->wildcard && grant_live(g, now, run) && grant_wildcard_covers(g->host, h->name)) {
			if (memo != NULL) {
				memo->memo_gen = d->policy_gen;
				memo->memo_wild = (int32_t)i;
			}
			return (long)i;
		}
	}
	if (memo != NULL) {
		memo->memo_gen = d->policy_gen;
		memo->memo_wild = -1;
	}
	return -1;
}

/*
 * The grant (or line) that makes name answerable: its text into qr->grant,
 * and *suffix the wildcard's suffix when only a wildcard does. Returns
 * whether one does.
 */
static bool answerable(struct dnsd *d, const struct host *h, struct query *qr,
		       const char **suffix, struct cache_entry *memo)
{
	const struct policy *p = d->policy;
	const struct config *c = d->config;
	const char *run = d->run_id[0] != '\0' ? d->run_id : NULL;
	const struct grant *wild = NULL;
	time_t now = time(NULL);
	long w;

	*suffix = NULL;
	for (size_t i = 0; i < p->ngrants; i++) {
		const struct grant *g = &p->grants[i];

		if (!g->wildcard && strcmp(g->host, h->name) == 0 && grant_live(g, now, run)) {
			grant_format(g, qr->grant, sizeof(qr->grant));
			return true;
		}
	}
	w = wildcard_of(d, h, now, run, memo);
	if (w >= 0)
		wild = &p->grants[w];
	for (size_t i = 0; i < p->nexceptions; i++) {
		if (host_equal(&p->exceptions[i].host, h)) {
			snprintf(qr->grant, sizeof(qr->grant), "allow-private %s", h->name);
			return true;
		}
	}
	for (size_t i = 0; i < c->nrules; i++) {
		if (strcmp(c->rules[i].host, h->name) == 0) {
			snprintf(qr->grant, sizeof(qr->grant), "inject %s", c->rules[i].name);
			return true;
		}
	}
	if (wild != NULL) {
		grant_format(wild, qr->grant, sizeof(qr->grant));
		*suffix = wild->host;
		return true;
	}
	return false;
}

/* Drop the names whose window passed: the set rebuilt from those still in it. */
static void budget_sweep(struct budget *b, uint64_t now, uint64_t window)
{
	size_t mask = b->nslots - 1, n = 0;
	uint64_t(*keep)[2] = malloc(b->nslots * sizeof(*keep));

	b->swept_ms = now;
	if (keep == NULL)
		return; /* swept again within the second */
	for (size_t i = 0; i < b->nslots; i++) {
		if (b->slots[i].hash != 0 && now - b->slots[i].seen_ms < window) {
			keep[n][0] = b->slots[i].hash;
			keep[n][1] = b->slots[i].seen_ms;
			n++;
		}
		b->slots[i].hash = 0;
	}
	for (size_t k = 0; k < n; k++) {
		size_t j;

		for (j = keep[k][0] & mask; b->slots[j].hash != 0; j = (j + 1) & mask)
			;
		b->slots[j].hash = keep[k][0];
		b->slots[j].seen_ms = keep[k][1];
	}
	b->live = n;
	free(keep);
}

/* The hash of asker and suffix, under the table's key. */
static uint64_t budget_hash(const struct budgets *bs, const char *asker, const char *suffix)
{
	char k[STAMP_NET_MAX + 1 + HOST_NAME_MAX_LEN];
	size_t a = strnlen(asker, STAMP_NET_MAX), x = strnlen(suffix, HOST_NAME_MAX_LEN);

	memcpy(k, asker, a);
	k[a] = '\0';
	memcpy(k + a + 1, suffix, x);
	return hmap_hash(&bs->map, k, a + 1 + x);
}

/*
 * The asker's budget for suffix (hash h), now the most recently used, or
 * NULL when there is none.
 */
static struct budget *budget_find(struct budgets *bs, uint64_t h, const char *asker,
				  const char *suffix)
{
	for (struct hmap_node *n = hmap_find(&bs->map, h); n != NULL; n = hmap_find_next(n)) {
		struct budget *b = hmap_entry(n, struct budget, node);

		if (strcmp(b->suffix, suffix) == 0 && strcmp(b->asker, asker) == 0) {
			lru_touch(&bs->lru, &b->lru);
			return b;
		}
	}
	return NULL;
}

/*
 * Whether name may be answered under the asker's budget for suffix (a name
 * it asked in the window always may). asker: the tag's net, "" unattributed.
 */
static bool budget_spend(struct dnsd *d, const char *asker, const char *suffix, const char *name)
{
	struct budgets *bs = d->budget;
	const struct config *c = d->config;
	uint64_t now = loop_now(d->loop), window = (uint64_t)c->dns_wildcard_window * 1000;
	uint64_t h = cache_hash(d, name, strlen(name), 0) | 1; /* never 0, the empty slot */
	uint64_t bh = budget_hash(bs, asker, suffix);
	struct budget *b;
	size_t mask, i;

	b = budget_find(bs, bh, asker, suffix);
	if (b == NULL) {
		size_t n = 2;

		if (bs->lru.count >= BUDGETS_MAX) /* room: the least recently used goes */
			budget_free(bs, budget_oldest(bs));
		while (n < 2 * (size_t)c->dns_wildcard_budget)
			n <<= 1;
		b = calloc(1, sizeof(*b) + n * sizeof(b->slots[0]));
		if (b == NULL)
			return false;
		snprintf(b->suffix, sizeof(b->suffix), "%s", suffix);
		snprintf(b->asker, sizeof(b->asker), "%s", asker);
		b->nslots = n;
		b->swept_ms = now;
		hmap_insert(&bs->map, &b->node, bh);
		lru_add(&bs->lru, &b->lru);
	}
	b->used_ms = now;
	mask = b->nslots - 1;
	for (i = h & mask; b->slots[i].hash != 0; i = (i + 1) & mask) {
		if (b->slots[i].hash == h) {
			/* seen: within the window it costs nothing; past it, its slot is its own
			 * (counted in live until a sweep), so it starts a new window there */
			if (now - b->slots[i].seen_ms >= window)
				b->slots[i].seen_ms = now;
			return true;
		}
	}
	if (b->live >= c->dns_wildcard_budget) {
		if (now - b->swept_ms < 1000)
			return false; /* full, and swept within the second */
		budget_sweep(b, now, window);
		if (b->live >= c->dns_wildcard_budget)
			return false;
		for (i = h & mask; b->slots[i].hash != 0; i = (i + 1) & mask)
			;
	}
	b->slots[i].hash = h;
	b->slots[i].seen_ms = now;
	b->live++;
	return true;
}

static bool type_answerable(struct dnsd *d, const char *name, uint16_t t)
{
	if (t == DNS_T_A || t == DNS_T_AAAA || t == DNS_T_CNAME)
		return true;
	if (t == DNS_T_HTTPS || t == DNS_T_SVCB || t == DNS_T_ANY)
		return false;
	return config_dns_type_allowed(d->config, name, t);
}

int judge_query(struct dnsd *d, struct query *qr, struct cache_entry *memo)
{
	struct host *h = &qr->host;
	const char *err, *suffix;
	char tb[DNS_TYPE_TEXT_MAX];
	bool canon, ok;

	qr->grant[0] = '\0';
	canon = host_canon(qr->q.name, qr->q.name_len, h, &err) == 0 && h->kind == HOST_NAME;
	ok = canon && answerable(d, h, qr, &suffix, memo);
	if (!ok) {
		qr->reason = "not-granted";
		snprintf(qr->detail, sizeof(qr->detail),
			 "%.120s is not granted; to grant it run: sluice allow add %.120s",
			 qr->q.name, qr->q.name);
		if (policy_mode_at(d->policy, time(NULL)) == MODE_OBSERVE && canon) {
			qr->decision = "observe";
			qr->filter = true;
			return type_answerable(d, qr->q.name, qr->q.qtype) ? JUDGE_LOOKUP : RCODE_NOERROR;
		}
		qr->decision = "refuse";
		return RCODE_NXDOMAIN;
	}
	qr->decision = "allow";
	qr->reason = "granted";
	if (!type_answerable(d, h->name, qr->q.qtype)) {
		qr->decision = "refuse";
		qr->reason = "type";
		snprintf(qr->detail, sizeof(qr->detail), "%s is not answered for %.120s%s",
			 dns_type_name(qr->q.qtype, tb), qr->q.name,
			 qr->q.qtype == DNS_T_HTTPS || qr->q.qtype == DNS_T_SVCB
				 ? " (it carries ECH keys and address hints past the checks)"
				 : "; dns-allow-type NAME TYPE in the config answers it");
		return RCODE_NOERROR; /* NODATA */
	}
	if (suffix != NULL && !budget_spend(d, qr->tagged ? qr->asker.net : "", suffix, h->name)) {
		qr->decision = "refuse";
		qr->reason = "wildcard-budget";
		snprintf(qr->detail, sizeof(qr->detail),
			 "over %u names under *.%.80s in %u s for %s (dns-wildcard-budget)",
			 d->config->dns_wildcard_budget, suffix, d->config->dns_wildcard_window,
			 qr->tagged ? qr->asker.net : "the unattributed");
		return RCODE_NXDOMAIN;
	}
	qr->filter = qr->q.qtype == DNS_T_A || qr->q.qtype == DNS_T_AAAA ||
		     qr->q.qtype == DNS_T_CNAME;
	return JUDGE_LOOKUP;
}

bool judge_addr(struct dnsd *d, const struct host *h, int family, const void *addr)
{
	struct verdict v;

	policy_judge_addr(d->policy, h, family, addr, &v);
	return v.allow;
}
