/*
 * budget.c: a grant's budgets, counted per principal: an exfiltration brake.
 *
 * A grant with max-requests or max-up (grant.h) lets each principal it
 * serves make that many requests through it and send that many bytes up
 * (request heads as they go upstream, bodies, a tunnel's client-to-origin
 * bytes), over the grant's life or per window of `per` seconds. Bytes are
 * spent as sluice takes them from the client, gone up or still on their
 * way (in a pipe toward a stalled origin, say), so the principal's other
 * requests and tunnels see at once what is left. A window
 * is fixed and begins at the principal's first request through the grant
 * (not aligned to the clock); the next request after it ends opens the
 * next one.
 *
 * Counts live in STATE/budgets, a file of BUDGET_MAX slots mapped shared
 * (state_map_fd, as the stamp replay window is), so a proxy restarted, or
 * killed with -9, keeps them: a budget lasts the grant's life, not the
 * process's. The file is opened at start and sized at the first count (a
 * proxy with no budget keeps it empty); with no room on the disk the
 * counts stay in memory, and stderr says so. A slot is named by SHA-256
 * of its key: the grant's identity (level, pattern, scopes, added time,
 * budget: what a policy reload keeps) and the principal. A reload
 * rebuilding the policy does not reset them; re-adding the grant (a new
 * added time) does. In memory a table (lib/hmap.h: SipHash under a
 * random key, the principal being the client's to name) owned by struct proxy
 * finds each key's entry and its slot; a slot from an earlier run is
 * taken up by the first request for its key. When every slot is taken,
 * the ones no exchange holds whose window ended or whose grant is gone
 * from the policy are freed, and when none can be, the request is refused
 * (fail closed: forgetting a count would reopen the brake). So that no one
 * forwarder can fill the table (and refuse every other principal for the
 * grant's life), a slot carries its principal's network (the stamp's net)
 * and one network holds at most BUDGET_NET_MAX of them: past that its new
 * principals are refused, the same way. An unstamped principal
 * (unattributed, a build token's) belongs to no network. Windows run on
 * the wall clock, so they go on across a restart. This file counts and
 * words refusals; exchange.c, session.c, h2.c and upgrade.c refuse and
 * close.
 */
#include "conn.h"

#include <inttypes.h>
#include <limits.h>
#include <openssl/sha.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hmap.h"

#define BUDGET_BUCKETS 64    /* at first; doubling as entries come, to BUDGET_MAX */
#define BUDGET_MAX 8192     /* counts kept, at most */
#define BUDGET_NET_MAX (BUDGET_MAX / 16) /* of them, one network's principals' */
#define BUDGET_NET_DIGEST 16 /* bytes of SHA-256 of a network name a slot keeps */
/* "LEVEL PATTERN SCOPES ADDED BUDGET": each part's most, and the spaces */
#define BUDGET_GKEY_MAX (16 + HOST_NAME_MAX_LEN + 16 + GRANT_SCOPES_TEXT + 24 + 96 + 8)
#define BUDGET_MAGIC "sluice budgets v2"
#define BUDGET_MAGIC_V1 "sluice budgets v1"

/* What one principal spent of one grant's budget, in STATE/budgets. */
struct budget_slot {
	unsigned char key[SHA256_DIGEST_LENGTH];   /* of its key: the grant's identity, '\n', who */
	unsigned char grant[SHA256_DIGEST_LENGTH]; /* of the grant's identity alone */
	uint64_t requests;                         /* counted in this window */
	uint64_t up;                               /* bytes up in this window */
	int64_t window_ms;                         /* wall-clock ms this window began */
	uint32_t per;                              /* seconds; 0: the grant's life */
	uint32_t used;                             /* 0: free */
	unsigned char net[BUDGET_NET_DIGEST];      /* of the principal's network; zeros: none */
};

struct budget_file {
	struct state_head head;
	struct budget_slot slot[BUDGET_MAX];
};

/* The slot and file before networks were kept (v1): read once, to carry its counts over. */
struct budget_slot_v1 {
	unsigned char key[SHA256_DIGEST_LENGTH];
	unsigned char grant[SHA256_DIGEST_LENGTH];
	uint64_t requests;
	uint64_t up;
	int64_t window_ms;
	uint32_t per;
	uint32_t used;
};

struct budget_file_v1 {
	struct state_head head;
	struct budget_slot_v1 slot[BUDGET_MAX];
};

struct budget_entry {
	struct hmap_node node;
	struct budget_slot *slot; /* its counts */
	unsigned refs;            /* exchanges counting against it; > 0: it stays */
	uint64_t max_up;          /* the grant's budget at the last take (0: none) */
	uint64_t max_requests;
	size_t glen;              /* key[0..glen) is the grant's identity, then '\n' and who */
	const char *who;          /* into key: the principal */
	const char *args;         /* after key: "PATTERN --for A...", as allow add takes it */
	char key[];
};

struct budgets {
	struct hmap map;          /* of the entries, by key */
	struct budget_file *file; /* NULL until the first count, or one from before */
	int fd;                   /* STATE/budgets until then; -1 once mapped */
	char path[PATH_MAX];
	int64_t pruned_ms;        /* the last budget_prune */
	struct budget_entry *owner[BUDGET_MAX]; /* the entry counting in each slot; NULL: none yet */
};

static int64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Whether the slot's window has ended at now (ms): its counts are then over. */
static bool window_over(const struct budget_slot *sl, int64_t now)
{
	return sl->per > 0 && now - sl->window_ms >= (int64_t)sl->per * 1000;
}

/*
 * A budget file of v1 (before slots kept their network) at fd: its counts,
 * read whole, and the file emptied for v2 (its slots then belong to no
 * network). NULL: no such file (or out of memory: state_map_fd then says
 * it is not of this version and starts an empty one).
 */
static struct budget_file_v1 *budget_read_v1(int fd)
{
	struct budget_file_v1 *v1;
	struct stat st;

	if (fstat(fd, &st) == -1 || st.st_size != (off_t)sizeof(*v1))
		return NULL;
	v1 = malloc(sizeof(*v1));
	if (v1 == NULL)
		return NULL;
	if (pread(fd, v1, sizeof(*v1), 0) != (ssize_t)sizeof(*v1) ||
	    strncmp(v1->head.magic, BUDGET_MAGIC_V1, sizeof(v1->head.magic)) != 0 ||
	    v1->head.size != sizeof(*v1) || ftruncate(fd, 0) == -1) {
		free(v1);
		return NULL;
	}
	return v1;
}

/*
 * STATE/budgets mapped: the counts from before, the ones whose window
 * ended dropped. A disk with no room for it (or another failure) leaves
 * the counts in memory only, loudly: a restart would start them again.
 * Returns 0, or -1 out of memory.
 */
static int budget_map(struct proxy *px)
{
	struct budgets *b = px->budgets;
	struct budget_file *f;
	size_t kept = 0;
	int64_t now = wall_ms();

	struct budget_file_v1 *v1 = budget_read_v1(b->fd);

	f = state_map_fd(b->fd, b->path, BUDGET_MAGIC, sizeof(*f), "a budget file");
	close(b->fd);
	b->fd = -1;
	if (f == NULL) {
		f = mmap(NULL, sizeof(*f), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (f == MAP_FAILED)
			return -1;
		fprintf(stderr, "sluice-proxy: budgets: counted in memory only: a restart starts "
				"them again\n");
	}
	b->file = f;
	if (v1 != NULL) {
		for (size_t i = 0; i < BUDGET_MAX; i++) {
			if (!v1->slot[i].used)
				continue;
			memcpy(f->slot[i].key, v1->slot[i].key, sizeof(f->slot[i].key));
			memcpy(f->slot[i].grant, v1->slot[i].grant, sizeof(f->slot[i].grant));
			f->slot[i].requests = v1->slot[i].requests;
			f->slot[i].up = v1->slot[i].up;
			f->slot[i].window_ms = v1->slot[i].window_ms;
			f->slot[i].per = v1->slot[i].per;
			f->slot[i].used = 1;
		}
		free(v1);
		fprintf(stderr, "sluice-proxy: budgets: %s carried over from the file before "
				"networks were kept\n", b->path);
	}
	for (size_t i = 0; i < BUDGET_MAX; i++) {
		if (f->slot[i].used && window_over(&f->slot[i], now))
			memset(&f->slot[i], 0, sizeof(f->slot[i]));
		kept += f->slot[i].used != 0;
	}
	if (kept > 0)
		fprintf(stderr, "sluice-proxy: budgets: %zu counts kept from before\n", kept);
	return 0;
}

int budget_init(struct proxy *px)
{
	struct budgets *b = calloc(1, sizeof(*b));
	struct stat st;

	px->budgets = b;
	if (b == NULL)
		return -1;
	b->fd = -1;
	if (hmap_init(&b->map, BUDGET_BUCKETS, BUDGET_MAX) == -1)
		return -1;
	/* opened now, as root; mapped when there are counts: from before, or at the first */
	b->fd = state_open(px, "budgets", b->path, sizeof(b->path));
	if (b->fd == -1)
		return -1;
	if (fstat(b->fd, &st) == 0 && st.st_size > 0)
		return budget_map(px);
	return 0;
}

void budget_release(struct proxy *px)
{
	struct budgets *b = px->budgets;
	struct hmap_node *n;

	if (b == NULL)
		return;
	while ((n = hmap_pop(&b->map)) != NULL)
		free(hmap_entry(n, struct budget_entry, node));
	hmap_release(&b->map);
	if (b->file != NULL)
		munmap(b->file, sizeof(*b->file));
	if (b->fd >= 0)
		close(b->fd);
	free(b);
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

static void digest(const char *s, size_t len, unsigned char out[SHA256_DIGEST_LENGTH])
{
	SHA256((const unsigned char *)s, len, out);
}

/* A new window at now when the last one ended. */
static void window_roll(struct budget_slot *sl, int64_t now)
{
	if (sl->window_ms > now)
		sl->window_ms = now; /* the clock stepped back: the window is never longer than per */
	if (window_over(sl, now)) {
		sl->requests = sl->up = 0;
		sl->window_ms = now;
	}
}

/* Whether grant is one of the n digests in d. */
static bool grant_present(const unsigned char (*d)[SHA256_DIGEST_LENGTH], size_t n,
			  const unsigned char *grant)
{
	for (size_t i = 0; i < n; i++)
		if (memcmp(d[i], grant, SHA256_DIGEST_LENGTH) == 0)
			return true;
	return false;
}

/*
 * Free the slots no exchange holds whose counts no longer matter (their
 * window ended, or their grant is gone from the policy), and their
 * entries. Once a second at most: a table that stays full refuses at once
 * rather than walking it again for each new principal.
 */
static void budget_prune(struct proxy *px, int64_t now)
{
	struct budgets *b = px->budgets;
	const struct policy *pol = px->policy;
	unsigned char (*d)[SHA256_DIGEST_LENGTH];
	char k[BUDGET_GKEY_MAX];
	size_t n = 0;

	if (now - b->pruned_ms < 1000 && now >= b->pruned_ms)
		return;
	b->pruned_ms = now;
	d = calloc(pol != NULL && pol->nbudgeted > 0 ? pol->nbudgeted : 1, sizeof(*d));
	if (d == NULL)
		return;
	for (size_t i = 0; pol != NULL && i < pol->ngrants && n < pol->nbudgeted; i++) {
		if (!grant_budgeted(&pol->grants[i]))
			continue;
		grant_key(&pol->grants[i], k, sizeof(k));
		digest(k, strlen(k), d[n++]);
	}
	for (size_t i = 0; i < BUDGET_MAX; i++) {
		struct budget_slot *sl = &b->file->slot[i];
		struct budget_entry *e = b->owner[i];

		if (!sl->used || (e != NULL && e->refs > 0) ||
		    (!window_over(sl, now) && grant_present(d, n, sl->grant)))
			continue;
		if (e != NULL) {
			hmap_remove(&b->map, &e->node);
			free(e);
			b->owner[i] = NULL;
		}
		memset(sl, 0, sizeof(*sl));
	}
	free(d);
}

/*
 * The slot counting for the key whose digest is key: one from before
 * (whatever its network holds), else a free one while net (a digest;
 * NULL: no network) holds fewer than BUDGET_NET_MAX. Returns its index;
 * -1 none free, -2 net holds its share.
 */
static ssize_t slot_for(struct budgets *b, const unsigned char *key, const unsigned char *net)
{
	ssize_t free_at = -1;
	size_t held = 0;

	for (size_t i = 0; i < BUDGET_MAX; i++) {
		const struct budget_slot *sl = &b->file->slot[i];

		if (sl->used && b->owner[i] == NULL && memcmp(sl->key, key, sizeof(sl->key)) == 0)
			return (ssize_t)i;
		if (!sl->used && free_at == -1)
			free_at = (ssize_t)i;
		if (sl->used && net != NULL && memcmp(sl->net, net, sizeof(sl->net)) == 0)
			held++;
	}
	return held >= BUDGET_NET_MAX ? -2 : free_at;
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

/*
 * The entry for g and who (of network net, NULL none), made when there is
 * none; NULL: every slot taken, net's share taken (*full set), or out of
 * memory.
 */
static struct budget_entry *entry_get(struct proxy *px, const struct grant *g, const char *who,
				      const char *net, int64_t now, bool *full)
{
	unsigned char nd[SHA256_DIGEST_LENGTH];
	char gkey[BUDGET_GKEY_MAX], key[BUDGET_GKEY_MAX + SESSION_WHO_MAX + 2];
	char args[HOST_NAME_MAX_LEN + GRANT_SCOPES_MAX * (SCOPE_TEXT_MAX + 8) + 16];
	unsigned char kd[SHA256_DIGEST_LENGTH];
	struct budgets *b = px->budgets;
	struct budget_entry *e;
	struct hmap_node *n;
	struct budget_slot *sl;
	size_t len, alen;
	ssize_t i;
	uint64_t h;

	grant_key(g, gkey, sizeof(gkey));
	snprintf(key, sizeof(key), "%s\n%s", gkey, who);
	len = strlen(key);
	h = hmap_hash(&b->map, key, len);
	for (n = hmap_find(&b->map, h); n != NULL; n = hmap_find_next(n))
		if (strcmp(hmap_entry(n, struct budget_entry, node)->key, key) == 0)
			return hmap_entry(n, struct budget_entry, node);
	if (b->file == NULL && budget_map(px) == -1)
		return NULL;
	digest(key, len, kd);
	if (net != NULL)
		digest(net, strlen(net), nd);
	i = slot_for(b, kd, net != NULL ? nd : NULL);
	if (i < 0) {
		budget_prune(px, now);
		i = slot_for(b, kd, net != NULL ? nd : NULL);
	}
	*full = i == -2;
	if (i < 0)
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
	sl = &b->file->slot[i];
	if (!sl->used) {
		memcpy(sl->key, kd, sizeof(kd));
		digest(gkey, e->glen, sl->grant);
		sl->requests = sl->up = 0;
		sl->window_ms = now;
		sl->per = g->per;
		sl->used = 1;
		memset(sl->net, 0, sizeof(sl->net));
		if (net != NULL)
			memcpy(sl->net, nd, sizeof(sl->net));
	}
	e->slot = sl;
	b->owner[i] = e;
	hmap_insert(&b->map, &e->node, h);
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

void budget_words(const struct budget_entry *e, bool up, char *out, size_t size)
{
	const struct budget_slot *sl = e->slot;
	char when[64] = "", per[24], other[48] = "";
	int64_t left = (int64_t)sl->per * 1000 - (wall_ms() - sl->window_ms);

	per_flag(sl->per, per, sizeof(per));
	if (sl->per > 0)
		snprintf(when, sizeof(when), " in this window (it ends in %" PRId64 "s)",
			 left > 0 ? (left + 999) / 1000 : 0);
	if (up && e->max_requests > 0)
		snprintf(other, sizeof(other), " --max-requests %" PRIu64, e->max_requests);
	else if (!up && e->max_up > 0)
		snprintf(other, sizeof(other), " --max-up %" PRIu64, e->max_up);
	if (up)
		snprintf(out, size,
			 "budget max-up %" PRIu64 " bytes for %s is spent (%" PRIu64 " sent)%s; to "
			 "raise it run: sluice allow add %s --max-up BYTES%s%s",
			 e->max_up, e->who, sl->up, when, e->args, other, per);
	else
		snprintf(out, size,
			 "budget max-requests %" PRIu64 " for %s is spent%s; to raise it run: "
			 "sluice allow add %s --max-requests N%s%s",
			 e->max_requests, e->who, when, e->args, other, per);
}

int budget_take(struct proxy *px, const struct grant *g, const char *who, const char *net,
		uint64_t head, uint64_t body, struct budget_entry **out, char *why, size_t size)
{
	int64_t now = wall_ms();
	struct budget_entry *e;
	struct budget_slot *sl;
	bool full = false;

	*out = NULL;
	e = entry_get(px, g, who, net, now, &full);
	if (e == NULL && full) {
		snprintf(why, size, "budget counts cannot be kept for %s: network %s holds its "
			 "share (%d of %d principals and grants counted); nothing was sent",
			 who, net, BUDGET_NET_MAX, BUDGET_MAX);
		return 1;
	}
	if (e == NULL) {
		snprintf(why, size, "budget counts cannot be kept (%d principals and grants "
			 "counted, or out of memory); nothing was sent", BUDGET_MAX);
		return 1;
	}
	sl = e->slot;
	e->max_up = g->max_up;
	e->max_requests = g->max_requests;
	window_roll(sl, now);
	if (e->max_requests > 0 && sl->requests >= e->max_requests) {
		budget_words(e, false, why, size);
		return 1;
	}
	if (e->max_up > 0 &&
	    (sl->up >= e->max_up || head > e->max_up - sl->up || body > e->max_up - sl->up - head)) {
		budget_words(e, true, why, size);
		return 1;
	}
	sl->up += head;
	sl->requests++;
	e->refs++;
	*out = e;
	return 0;
}

bool budget_spend(struct budget_entry *e, uint64_t n)
{
	struct budget_slot *sl = e->slot;

	window_roll(sl, wall_ms());
	sl->up = n > UINT64_MAX - sl->up ? UINT64_MAX : sl->up + n;
	return e->max_up == 0 || sl->up <= e->max_up;
}

uint64_t budget_room(const struct budget_entry *e)
{
	if (e->max_up == 0)
		return UINT64_MAX;
	return e->slot->up < e->max_up ? e->max_up - e->slot->up : 0;
}

void budget_put(struct budget_entry *e)
{
	if (e != NULL && e->refs > 0)
		e->refs--;
}
