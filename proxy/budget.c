/*
 * budget.c: a grant's budgets, counted per principal: an exfiltration brake.
 *
 * A grant with max-requests or max-up (grant.h) lets each principal it
 * serves make that many requests through it and send that many bytes up
 * (request heads as they go upstream, bodies, a tunnel's client-to-origin
 * bytes), over the grant's life or per window of `per` seconds. A window is fixed and begins at the
 * principal's first request through the grant (not aligned to the clock);
 * the next request after it ends opens the next one.
 *
 * Counts live in a chained FNV table owned by struct proxy, keyed by the
 * grant's identity (level, pattern, scopes, added time, budget: what a
 * policy reload keeps) and the principal, so a reload rebuilding the policy does
 * not reset them, while re-adding the grant (a new added time) does. They
 * are kept in memory only: a proxy restart starts every count again. The
 * table holds at most BUDGET_MAX entries; when full, entries no exchange
 * holds whose window ended or whose grant is gone from the policy leave,
 * and when none can, the request is refused (fail closed: forgetting a
 * count would reopen the brake). This file counts and words refusals;
 * exchange.c, session.c, h2.c and upgrade.c refuse and close.
 */
#include "session.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BUDGET_BUCKETS 1024 /* a power of two */
#define BUDGET_MAX 8192     /* entries, at most */
#define BUDGET_GKEY_MAX (HOST_NAME_MAX_LEN + GRANT_SCOPES_TEXT + 64)

struct budget_entry {
	struct budget_entry *next;
	unsigned refs;         /* exchanges counting against it; > 0: it stays */
	uint64_t max_up;       /* the grant's budget at the last take (0: none) */
	uint64_t max_requests;
	uint32_t per;          /* seconds; 0: the grant's life */
	uint64_t requests;     /* counted in this window */
	uint64_t up;           /* bytes up in this window */
	uint64_t window_ms;    /* loop time this window began */
	size_t glen;           /* key[0..glen) is the grant's identity, then '\n' and who */
	const char *who;       /* into key: the principal */
	const char *args;      /* after key: "PATTERN --for A...", as allow add takes it */
	char key[];
};

struct budgets {
	struct budget_entry *bucket[BUDGET_BUCKETS];
	size_t n;
};

static size_t budget_hash(const char *key)
{
	uint32_t h = 2166136261u;

	for (const unsigned char *p = (const unsigned char *)key; *p != '\0'; p++)
		h = (h ^ *p) * 16777619u;
	return h & (BUDGET_BUCKETS - 1);
}

int budget_init(struct proxy *px)
{
	px->budgets = calloc(1, sizeof(*px->budgets));
	return px->budgets != NULL ? 0 : -1;
}

void budget_release(struct proxy *px)
{
	if (px->budgets == NULL)
		return;
	for (size_t i = 0; i < BUDGET_BUCKETS; i++) {
		for (struct budget_entry *e = px->budgets->bucket[i], *next; e != NULL; e = next) {
			next = e->next;
			free(e);
		}
	}
	free(px->budgets);
	px->budgets = NULL;
}

/*
 * The grant's identity, "LEVEL PATTERN SCOPES ADDED BUDGET", into buf
 * (BUDGET_GKEY_MAX): a reload keeps it; re-adding the grant (a new added
 * time, or in the same second a new budget) makes another.
 */
static void grant_key(const struct grant *g, char *buf, size_t size)
{
	char pat[HOST_NAME_MAX_LEN + 16], scopes[GRANT_SCOPES_TEXT], budget[96];

	snprintf(buf, size, "%s %s %s %" PRId64 " %s", grant_level_name(g->level),
		 grant_format(g, pat, sizeof(pat)), grant_scopes_format(g, scopes, sizeof(scopes)),
		 (int64_t)g->added, grant_budget_format(g, budget, sizeof(budget)));
}

/* Whether e's window has ended at now (ms): its counts are then over. */
static bool window_over(const struct budget_entry *e, uint64_t now)
{
	return e->per > 0 && now - e->window_ms >= (uint64_t)e->per * 1000;
}

/* A new window at now when the last one ended. */
static void window_roll(struct budget_entry *e, uint64_t now)
{
	if (window_over(e, now)) {
		e->requests = e->up = 0;
		e->window_ms = now;
	}
}

/* Whether the policy p still has the grant whose identity is gkey[0..len). */
static bool grant_present(const struct policy *p, const char *gkey, size_t len)
{
	char k[BUDGET_GKEY_MAX];

	for (size_t i = 0; p != NULL && i < p->ngrants; i++) {
		if (!grant_budgeted(&p->grants[i]))
			continue;
		grant_key(&p->grants[i], k, sizeof(k));
		if (strlen(k) == len && memcmp(k, gkey, len) == 0)
			return true;
	}
	return false;
}

/* Free the entries no exchange holds whose counts no longer matter. */
static void budget_prune(struct proxy *px, uint64_t now)
{
	struct budgets *b = px->budgets;

	for (size_t i = 0; i < BUDGET_BUCKETS; i++) {
		for (struct budget_entry **p = &b->bucket[i]; *p != NULL;) {
			struct budget_entry *e = *p;

			if (e->refs == 0 &&
			    (window_over(e, now) || !grant_present(px->policy, e->key, e->glen))) {
				*p = e->next;
				free(e);
				b->n--;
				continue;
			}
			p = &e->next;
		}
	}
}

/* "PATTERN --for A --for B": g as `sluice allow add` takes it, into buf. */
static void grant_args(const struct grant *g, char *buf, size_t size)
{
	size_t off;

	grant_format(g, buf, size);
	off = strlen(buf);
	for (size_t i = 0; i < g->nscopes && off < size; i++) {
		int n = snprintf(buf + off, size - off, " --for %s", g->scopes[i].text);

		if (n < 0)
			break;
		off += (size_t)n;
	}
}

/* The entry for g and who, made when there is none; NULL: table full or out of memory. */
static struct budget_entry *entry_get(struct proxy *px, const struct grant *g, const char *who,
				      uint64_t now)
{
	char gkey[BUDGET_GKEY_MAX], key[BUDGET_GKEY_MAX + SESSION_WHO_MAX + 2];
	char args[HOST_NAME_MAX_LEN + GRANT_SCOPES_MAX * (SCOPE_TEXT_MAX + 8) + 16];
	struct budget_entry **head, *e;
	size_t len, alen;

	grant_key(g, gkey, sizeof(gkey));
	snprintf(key, sizeof(key), "%s\n%s", gkey, who);
	len = strlen(key);
	head = &px->budgets->bucket[budget_hash(key)];
	for (e = *head; e != NULL; e = e->next)
		if (strcmp(e->key, key) == 0)
			return e;
	if (px->budgets->n >= BUDGET_MAX)
		budget_prune(px, now);
	if (px->budgets->n >= BUDGET_MAX)
		return NULL;
	grant_args(g, args, sizeof(args));
	alen = strlen(args);
	e = calloc(1, sizeof(*e) + len + 1 + alen + 1);
	if (e == NULL)
		return NULL;
	memcpy(e->key, key, len + 1);
	memcpy(e->key + len + 1, args, alen + 1);
	e->glen = strlen(gkey);
	e->args = e->key + len + 1;
	e->who = e->key + e->glen + 1;
	e->window_ms = now;
	e->next = *head;
	*head = e;
	px->budgets->n++;
	return e;
}

/* " --per 2s" (the window as --per takes it) into buf; "" without one. */
static void per_flag(uint32_t per, char *buf, size_t size)
{
	if (per == 0)
		buf[0] = '\0';
	else if (per % 86400 == 0)
		snprintf(buf, size, " --per %ud", per / 86400);
	else if (per % 3600 == 0)
		snprintf(buf, size, " --per %uh", per / 3600);
	else if (per % 60 == 0)
		snprintf(buf, size, " --per %um", per / 60);
	else
		snprintf(buf, size, " --per %us", per);
}

void budget_words(const struct budget_entry *e, bool up, uint64_t now, char *out, size_t size)
{
	char when[64] = "", per[24], other[48] = "";

	per_flag(e->per, per, sizeof(per));
	if (e->per > 0)
		snprintf(when, sizeof(when), " in this window (it ends in %" PRIu64 "s)",
			 ((uint64_t)e->per * 1000 - (now - e->window_ms) + 999) / 1000);
	if (up && e->max_requests > 0)
		snprintf(other, sizeof(other), " --max-requests %" PRIu64, e->max_requests);
	else if (!up && e->max_up > 0)
		snprintf(other, sizeof(other), " --max-up %" PRIu64, e->max_up);
	if (up)
		snprintf(out, size,
			 "budget max-up %" PRIu64 " bytes for %s is spent (%" PRIu64 " sent)%s; to "
			 "raise it run: sluice allow add %s --max-up BYTES%s%s",
			 e->max_up, e->who, e->up, when, e->args, other, per);
	else
		snprintf(out, size,
			 "budget max-requests %" PRIu64 " for %s is spent%s; to raise it run: "
			 "sluice allow add %s --max-requests N%s%s",
			 e->max_requests, e->who, when, e->args, other, per);
}

int budget_take(struct proxy *px, const struct grant *g, const char *who, uint64_t head,
		uint64_t body, struct budget_entry **out, char *why, size_t size)
{
	uint64_t now = loop_now(px->loop);
	struct budget_entry *e;

	*out = NULL;
	e = entry_get(px, g, who, now);
	if (e == NULL) {
		snprintf(why, size, "budget table full (%d principals and grants counted); "
			 "nothing was sent", BUDGET_MAX);
		return 1;
	}
	e->max_up = g->max_up;
	e->max_requests = g->max_requests;
	e->per = g->per;
	window_roll(e, now);
	if (e->max_requests > 0 && e->requests >= e->max_requests) {
		budget_words(e, false, now, why, size);
		return 1;
	}
	if (e->max_up > 0 &&
	    (e->up >= e->max_up || head > e->max_up - e->up || body > e->max_up - e->up - head)) {
		budget_words(e, true, now, why, size);
		return 1;
	}
	e->up += head;
	e->requests++;
	e->refs++;
	*out = e;
	return 0;
}

bool budget_spend(struct proxy *px, struct budget_entry *e, uint64_t n)
{
	uint64_t now = loop_now(px->loop);

	window_roll(e, now);
	e->up = n > UINT64_MAX - e->up ? UINT64_MAX : e->up + n;
	return e->max_up == 0 || e->up <= e->max_up;
}

uint64_t budget_room(const struct budget_entry *e)
{
	if (e->max_up == 0)
		return UINT64_MAX;
	return e->up < e->max_up ? e->max_up - e->up : 0;
}

void budget_put(struct proxy *px, struct budget_entry *e)
{
	(void)px;
	if (e != NULL && e->refs > 0)
		e->refs--;
}

/* --- the session's side: requests, bodies and tunnels against their budget --- */

/*
 * The grant g that allowed the request has a budget: the request counts
 * against the principal's, its head's bytes (head_up_size) against max-up,
 * unless it is spent (or the head and its declared body would pass it): 403
 * budget, or in a mode that refuses nothing the row says it would have
 * been. Returns 0 go on, -1 refused.
 */
int budget_request(struct session *s, const struct http_request *req, const struct grant *g)
{
	struct exchange *x = s->x;
	char who[SESSION_WHO_MAX], why[sizeof(((struct refusal *)0)->detail)];
	uint64_t body = req->body == HTTP_BODY_LENGTH ? req->content_length : 0;

	if (budget_take(s->px, g, session_spender(s, who, sizeof(who)), head_up_size(s, req), body,
			&x->budget, why, sizeof(why)) == 0)
		return 0;
	if (policy_mode_at(s->px->policy, time(NULL)) != MODE_ENFORCE) {
		x->decision = "observe";
		x->reason = "budget";
		x->budget_observed = true;
		snprintf(x->detail, sizeof(x->detail), "would be refused: %s", why);
		return 0;
	}
	session_refuse(s, 403, "budget", "http_request_denied", "%s", why);
	return -1;
}

bool budget_over(struct session *s, struct exchange *x)
{
	char why[sizeof(x->detail) - 32];
	uint64_t n;

	if (x->budget == NULL || x->up <= x->budget_up)
		return false;
	n = x->up - x->budget_up;
	x->budget_up = x->up;
	if (budget_spend(s->px, x->budget, n))
		return false;
	if (policy_mode_at(s->px->policy, time(NULL)) == MODE_ENFORCE)
		return true;
	if (!x->budget_observed) {
		x->budget_observed = true;
		x->decision = "observe";
		x->reason = "budget";
		budget_line(s, x, why, sizeof(why));
		snprintf(x->detail, sizeof(x->detail), "would be refused: %s", why);
	}
	return false;
}

void budget_line(struct session *s, const struct exchange *x, char *out, size_t size)
{
	budget_words(x->budget, true, session_now(s), out, size);
}

void budget_refuse(struct session *s)
{
	char why[sizeof(((struct refusal *)0)->detail)];

	budget_line(s, s->x, why, sizeof(why));
	session_refuse(s, 403, "budget", "http_request_denied", "%s: the request was cut off",
		       why);
}

void budget_end(struct session *s, struct exchange *x)
{
	if (x == NULL)
		return;
	budget_put(s->px, x->budget);
	x->budget = NULL;
}

size_t budget_read_limit(const struct exchange *x, size_t limit)
{
	uint64_t room;

	if (x->budget == NULL || x->budget_observed)
		return limit;
	room = budget_room(x->budget);
	if (room >= IOBUF_MAX)
		return limit;
	return limit == 0 || limit > room + 1 ? (size_t)room + 1 : limit;
}
