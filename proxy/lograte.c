/*
 * lograte.c: a row budget per principal, so that no one client can rotate
 * the log's history away (issue 27).
 *
 * A refusal costs a client nothing: an HTTP/2 connection opening streams
 * past the cap made a too-many-streams row per stream, thousands a second,
 * and rotation by size then deleted every row written before them. So each
 * principal's refusal rows that moved no byte (decision refuse, up and down
 * 0) pass through a token bucket: log-row-rate a second, log-row-burst at
 * once. Past it they are counted, not written, and one suppression row
 * (netlog_write_suppressed: how many, why, from when to when) is written
 * once a second after the first of them, by a timer, so it comes out when
 * the flood stops too; at the latest when the proxy stops, or when the
 * principal's slot is taken by another. Rows of allowed or observed
 * requests, and refusals after bytes moved, are never held back: they are
 * the record of what left, and a budget must not hide any of it.
 *
 * A principal's quiet rows (an agent's telemetry: reason quiet) are keyed
 * apart (session.c), so a loop of them spends its own budget, never the
 * one its real refusals' rows need.
 *
 * The principal is whose budget a request spends (session_spender: a build,
 * the stamp's as=, else its src@net); an unattributed connection's is the
 * unit of addresses it comes from (sockaddr_unit: all of loopback one, else
 * an IPv4 /24 or an IPv6 /64), and its suppression row's client names that
 * unit. Keyed by address, one host client sending from 40 loopback
 * addresses had 40 bursts, every row written, and rotated the log's history
 * away; by unit, it has one, and an unstamped client elsewhere still cannot
 * silence those of another network. At most
 * SLOTS principals are tracked; a full table gives up the slot used least
 * recently (its suppression row written first), so nothing is ever counted
 * and forgotten. Counting is in the proxy's metrics as any row is (stats_row
 * sees every row, written or not).
 *
 * The table is a file in STATE (STATE/lograte), mapped MAP_SHARED with
 * state_map as the stamp replay window and the budgets are, so a count is
 * in the page cache the moment a row is counted: a proxy killed with -9
 * (or crashed) before the timer told its counts leaves them there, and the
 * next start writes them as suppression rows (of the run that counted
 * them) before it serves anything, so every answered refusal is written or
 * counted across a kill -9 too. A suppression row is written before its
 * count is cleared: a kill between the two (one write(2) apart) tells it
 * twice, never not at all. What survives a power loss is what the page
 * cache wrote back, as for the log itself. The file is opened at the start
 * (as root) and mapped then if it has counts from before, else at the first
 * refusal that spends a budget (a proxy that refuses nothing makes none of
 * its 590 KiB); a disk with no room for it leaves the counts in memory, said
 * on stderr, as before: then a kill -9 loses those not yet told.
 */
#include "conn.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "hmap.h"

#define SLOTS 512
#define WINDOW_MS 1000 /* a principal's suppressed rows are told at most once this often */
#define KEY_MAX (STAMP_AS_MAX + STAMP_NET_MAX + 64)
#define REASON_MAX 32
#define LOGRATE_MAGIC "sluice lograte v1"

struct lograte_slot {
	char key[KEY_MAX]; /* "" : free */
	uint64_t hash;     /* of key */
	double tokens;     /* rows it may write now, at most burst */
	uint64_t at_ms;    /* loop time tokens were counted at */
	uint64_t rows;     /* counted, not written, since first_ms; 0: none */
	uint64_t first_ms, last_ms; /* wall clock of the first and last of them */
	uint64_t due_ms;   /* loop time the suppression row is due */
	/* who they were, from the first of them */
	struct stamp stamp;
	uint8_t has_stamp; /* 0 or 1 (a byte of the mapped file: no bool) */
	char who[SESSION_WHO_MAX];
	char build[STAMP_AS_MAX + 1];
	char client[INET6_ADDRSTRLEN + 8];
	size_t nreasons;
	char reason[NETLOG_REASONS_MAX][REASON_MAX]; /* the last: "other" once full */
	uint64_t count[NETLOG_REASONS_MAX];
};

/* STATE/lograte, mapped: the counts outlive the process that made them */
struct lograte_file {
	struct state_head head;
	char run[GRANT_RUN_ID_LEN + 1]; /* the run that counted them (set at its first count) */
	struct lograte_slot slot[SLOTS];
};

struct lograte {
	struct lograte_file *f;    /* NULL until the first count, or one from before */
	struct lograte_slot *slot; /* f->slot */
	int fd;                    /* STATE/lograte until it is mapped; then -1 */
	char path[PATH_MAX];
	struct loop_timer timer;   /* armed while a suppression row is due */
	struct proxy *px;
	struct hmap_key key;       /* of the slots' hashes (lib/hmap.h's SipHash): keys name
	                              principals, which clients choose */
};

static uint64_t wall_ms(void)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	return (uint64_t)tv.tv_sec * 1000 + (uint64_t)tv.tv_usec / 1000;
}

/*
 * Write sl's suppression row and start its count again; late: the row of a
 * proxy that stopped before it told it (lograte_init).
 */
static void flush_row(struct lograte *lr, struct lograte_slot *sl, bool late)
{
	const struct config *c = lr->px->config;
	struct netlog_suppressed r;
	char detail[320];

	if (sl->rows == 0)
		return;
	memset(&r, 0, sizeof(r));
	r.run = late ? lr->f->run : lr->px->run_id;
	r.who = sl->who;
	r.stamp = sl->has_stamp ? &sl->stamp : NULL;
	r.build = sl->build[0] != '\0' ? sl->build : NULL;
	r.client = sl->client[0] != '\0' ? sl->client : NULL;
	r.rows = sl->rows;
	r.first_ms = sl->first_ms;
	r.last_ms = sl->last_ms;
	r.nreasons = sl->nreasons;
	for (size_t i = 0; i < sl->nreasons; i++) {
		r.reason[i] = sl->reason[i];
		r.count[i] = sl->count[i];
	}
	snprintf(detail, sizeof(detail),
		 "%llu refusal rows of this principal were counted, not written: past its budget "
		 "of %u rows a second (log-row-rate, burst log-row-burst %u)",
		 (unsigned long long)sl->rows, c->log_row_rate, c->log_row_burst);
	if (late)
		snprintf(detail + strlen(detail), sizeof(detail) - strlen(detail),
			 "; told at the proxy's next start: it stopped (killed or crashed) before "
			 "it wrote this row");
	r.detail = detail;
	if (lr->px->netlog != NULL)
		netlog_write_suppressed(lr->px->netlog, &r);
	sl->rows = 0; /* after the row: a kill between tells it twice, never not at all */
	sl->nreasons = 0;
}

static void flush(struct lograte *lr, struct lograte_slot *sl)
{
	flush_row(lr, sl, false);
}

/* Write every suppression row due by now; arm the timer for the next one. */
static void on_timer(struct loop *l, struct loop_timer *t)
{
	struct lograte *lr = t->arg;
	uint64_t now = loop_now(l), next = 0;

	for (size_t i = 0; i < SLOTS; i++) {
		struct lograte_slot *sl = &lr->slot[i];

		if (sl->rows > 0 && sl->due_ms <= now)
			flush(lr, sl);
		if (sl->rows > 0 && (next == 0 || sl->due_ms < next))
			next = sl->due_ms;
	}
	if (next != 0)
		loop_timer_set(l, t, next > now ? next - now : 0, on_timer, lr);
}

/* The bucket refilled to now. */
static void refill(const struct config *c, struct lograte_slot *sl, uint64_t now)
{
	if (now > sl->at_ms)
		sl->tokens += (double)(now - sl->at_ms) * c->log_row_rate / 1000.0;
	if (sl->tokens > c->log_row_burst)
		sl->tokens = c->log_row_burst;
	sl->at_ms = now;
}

/* key's slot, a free one, or the one used least recently given up; never NULL. */
static struct lograte_slot *slot_for(struct lograte *lr, const char *key, uint64_t now)
{
	const struct config *c = lr->px->config;
	uint64_t h = hmap_siphash(&lr->key, key, strlen(key));
	struct lograte_slot *free_sl = NULL, *old = NULL;

	for (size_t i = 0; i < SLOTS; i++) {
		struct lograte_slot *sl = &lr->slot[i];

		if (sl->key[0] != '\0' && sl->hash == h && strcmp(sl->key, key) == 0)
			return sl;
		if (free_sl != NULL)
			continue;
		if (sl->key[0] != '\0' && sl->rows == 0) {
			refill(c, sl, now); /* a full bucket and nothing counted: as good as free */
			if (sl->tokens >= c->log_row_burst)
				sl->key[0] = '\0';
		}
		if (sl->key[0] == '\0')
			free_sl = sl;
		else if (old == NULL || sl->at_ms < old->at_ms)
			old = sl;
	}
	if (free_sl == NULL) {
		flush(lr, old); /* what it counted is told before the slot changes hands */
		free_sl = old;
	}
	memset(free_sl, 0, sizeof(*free_sl));
	snprintf(free_sl->key, sizeof(free_sl->key), "%s", key);
	free_sl->hash = h;
	free_sl->tokens = c->log_row_burst;
	free_sl->at_ms = now;
	return free_sl;
}

/* Count r in sl instead of writing it. */
static void count(struct lograte *lr, struct lograte_slot *sl, const struct netlog_row *r,
		  uint64_t now)
{
	const char *why = r->reason != NULL ? r->reason : "other";
	size_t i;

	if (sl->rows == 0) {
		if (strcmp(lr->f->run, lr->px->run_id) != 0) /* known once the listeners are */
			snprintf(lr->f->run, sizeof(lr->f->run), "%s", lr->px->run_id);
		sl->first_ms = wall_ms();
		sl->due_ms = now + WINDOW_MS;
		sl->has_stamp = r->stamp != NULL;
		if (r->stamp != NULL)
			sl->stamp = *r->stamp;
		snprintf(sl->who, sizeof(sl->who), "%s", r->who != NULL ? r->who : "unattributed");
		snprintf(sl->build, sizeof(sl->build), "%s", r->build != NULL ? r->build : "");
		if (r->stamp == NULL && r->build == NULL) /* the unit its key names */
			sockaddr_unit(r->client, sl->client, sizeof(sl->client));
		else
			sl->client[0] = '\0';
		if (!loop_timer_armed(&lr->timer) || lr->timer.when_ms > sl->due_ms)
			loop_timer_set(lr->px->loop, &lr->timer, WINDOW_MS, on_timer, lr);
	}
	sl->last_ms = wall_ms();
	for (i = 0; i < sl->nreasons; i++)
		if (strcmp(sl->reason[i], why) == 0)
			break;
	if (i == sl->nreasons && i == NETLOG_REASONS_MAX) {
		i = NETLOG_REASONS_MAX - 1; /* the last one becomes "other" */
		snprintf(sl->reason[i], sizeof(sl->reason[i]), "other");
	} else if (i == sl->nreasons) {
		snprintf(sl->reason[i], sizeof(sl->reason[i]), "%s", why);
		sl->count[i] = 0;
		sl->nreasons++;
	}
	sl->count[i]++;
	sl->rows++; /* last: a start after a kill counts the reasons (lograte_init) */
}

const char *lograte_unattributed(const char *client, char *out, size_t size)
{
	char unit[INET6_ADDRSTRLEN + 8];

	sockaddr_unit(client, unit, sizeof(unit));
	snprintf(out, size, "unattributed %s", unit);
	return out;
}

/* Terminate the strings of sl as the file holds them; rows as its reasons add up. */
static void sanitize(struct lograte_slot *sl)
{
	sl->key[sizeof(sl->key) - 1] = '\0';
	sl->who[sizeof(sl->who) - 1] = '\0';
	sl->build[sizeof(sl->build) - 1] = '\0';
	sl->client[sizeof(sl->client) - 1] = '\0';
	sl->stamp.src[sizeof(sl->stamp.src) - 1] = '\0';
	sl->stamp.net[sizeof(sl->stamp.net) - 1] = '\0';
	sl->stamp.as[sizeof(sl->stamp.as) - 1] = '\0';
	sl->stamp.boot[sizeof(sl->stamp.boot) - 1] = '\0';
	sl->has_stamp = sl->has_stamp != 0;
	if (sl->nreasons > NETLOG_REASONS_MAX)
		sl->nreasons = NETLOG_REASONS_MAX;
	sl->rows = 0;
	for (size_t i = 0; i < sl->nreasons; i++) {
		sl->reason[i][REASON_MAX - 1] = '\0';
		sl->rows += sl->count[i];
	}
}

/*
 * STATE/lograte mapped (lr->fd: opened at the start, as root), and the
 * counts a proxy stopped before telling told now: at the start, before
 * anything is served, when the file was there; else at the first refusal
 * that spends a budget, when it is new and empty. A disk with no room for
 * it leaves the counts in memory only, loudly. Returns 0, or -1 out of
 * memory.
 */
static int lograte_map(struct lograte *lr)
{
	struct lograte_file *f;
	size_t late = 0;

	f = state_map_fd(lr->fd, lr->path, LOGRATE_MAGIC, sizeof(*f), "a row-budget table");
	close(lr->fd);
	lr->fd = -1;
	if (f == NULL) {
		f = mmap(NULL, sizeof(*f), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (f == MAP_FAILED)
			return -1;
		fprintf(stderr, "sluice-proxy: row budgets: counted in memory only: a kill -9 "
				"loses the counts not yet written as suppression rows\n");
	}
	lr->f = f;
	lr->slot = f->slot;
	f->run[sizeof(f->run) - 1] = '\0';
	for (size_t i = 0; i < SLOTS; i++) {
		sanitize(&lr->slot[i]);
		if (lr->slot[i].rows > 0) {
			flush_row(lr, &lr->slot[i], true);
			late++;
		}
	}
	if (late > 0)
		fprintf(stderr, "sluice-proxy: %zu suppression rows of run %s written late: it "
				"stopped before it wrote them\n", late, f->run);
	memset(lr->slot, 0, sizeof(f->slot));
	return 0;
}

bool lograte_admit(struct proxy *px, const char *key, const struct netlog_row *r)
{
	struct lograte *lr = px->lograte;
	struct lograte_slot *sl;
	uint64_t now;

	if (lr == NULL || px->config->log_row_rate == 0 || r->decision == NULL ||
	    strcmp(r->decision, "refuse") != 0 || r->up != 0 || r->down != 0)
		return true;
	if (lr->f == NULL && lograte_map(lr) == -1)
		return true; /* out of memory: the row is written, not counted */
	now = loop_now(px->loop);
	sl = slot_for(lr, key, now);
	refill(px->config, sl, now);
	if (sl->rows > 0 && sl->due_ms <= now)
		flush(lr, sl); /* the window is over: told before this row */
	if (sl->rows == 0 && sl->tokens >= 1.0) {
		sl->tokens -= 1.0;
		return true;
	}
	/* once counting, a window's rows are all counted: its row says when they were */
	count(lr, sl, r, now);
	return false;
}

int lograte_init(struct proxy *px)
{
	struct lograte *lr = calloc(1, sizeof(*lr));
	struct stat st;

	px->lograte = lr;
	if (lr == NULL)
		return -1;
	lr->px = px;
	lr->fd = -1;
	if (hmap_key_init(&lr->key) == -1)
		return -1;
	/* opened now, as root; mapped now when there are counts from before, else at the first */
	lr->fd = state_open(px, "lograte", lr->path, sizeof(lr->path));
	if (lr->fd == -1)
		return -1;
	if (fstat(lr->fd, &st) == 0 && st.st_size > 0)
		return lograte_map(lr);
	return 0;
}

void lograte_release(struct proxy *px)
{
	struct lograte *lr = px->lograte;

	if (lr == NULL)
		return;
	for (size_t i = 0; lr->slot != NULL && i < SLOTS; i++)
		flush(lr, &lr->slot[i]);
	if (px->loop != NULL)
		loop_timer_cancel(px->loop, &lr->timer);
	if (lr->f != NULL)
		munmap(lr->f, sizeof(*lr->f));
	if (lr->fd >= 0)
		close(lr->fd);
	free(lr);
	px->lograte = NULL;
}
