/*
 * sandbox.c: the runs of `sluice run` that root told us of, and their rows.
 *
 * A run leaves a note in STATE/runnotes/ID (lib/runnote.h): its name,
 * project, command line, start and, once it ended, its exit status. We
 * read the notes on SIGHUP and every second (reload.c) and write a row of
 * kind "run" when a run starts and one when it ends, with what the run's
 * exchanges moved (counted here as their rows are written). Only root
 * writes STATE: a sandbox cannot leave a note, nor change one.
 *
 * The run's self-check (`sluice verify` inside, before CMD starts) asks
 * for RUNNOTE_PROBE_PATH + a nonce the note carries until verify is done.
 * A refused request whose stamp names the run's network and whose path
 * carries that nonce, once, is the probe: its row is of kind "probe" and
 * no refusal count sees it. Anything else, the very same request from
 * CMD included (the nonce is gone from the note before CMD starts, and
 * was used), is an ordinary refusal.
 *
 * It does not write notes, and keeps nothing on disk: a proxy started
 * while a run is live adopts its note without a start row.
 */
#include "proxy.h"
#include "conn.h"
#include "file.h"
#include "runnote.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SANDBOXES_MAX 256

struct sandbox {
	char id[RUNNOTE_ID_LEN + 1]; /* "" a free slot */
	bool ended;       /* its end row is written */
	bool probed;      /* its nonce was used */
	bool seen;        /* its note was there at the last scan */
	uint64_t up, down, requests; /* of its exchanges' rows since its start row */
	uint64_t since;   /* the slot was taken (a counter: the oldest goes first) */
};

static struct sandbox boxes[SANDBOXES_MAX];
static uint64_t taken;

static struct sandbox *box_find(const char *id)
{
	for (size_t i = 0; i < SANDBOXES_MAX; i++)
		if (boxes[i].id[0] != '\0' && strcmp(boxes[i].id, id) == 0)
			return &boxes[i];
	return NULL;
}

/* A slot for id: a free one, else an ended run's, else the oldest. */
static struct sandbox *box_take(const char *id)
{
	struct sandbox *pick = NULL;

	for (size_t i = 0; i < SANDBOXES_MAX; i++) {
		struct sandbox *b = &boxes[i];

		if (b->id[0] == '\0') {
			pick = b;
			break;
		}
		if (pick == NULL || (b->ended && !pick->ended) ||
		    (b->ended == pick->ended && b->since < pick->since))
			pick = b;
	}
	memset(pick, 0, sizeof(*pick));
	snprintf(pick->id, sizeof(pick->id), "%s", id);
	pick->since = ++taken;
	return pick;
}

/* The run's id in a stamp's net ("sluice-ID"), or NULL. */
static const char *net_id(const char *net)
{
	if (net == NULL || strncmp(net, "sluice-", 7) != 0 || !runnote_id_ok(net + 7, strlen(net + 7)))
		return NULL;
	return net + 7;
}

/* STATE/runnotes/ID read and parsed into n. Returns 0, or -1 (missing, unreadable, malformed). */
static int note_read(const struct proxy *px, const char *id, struct runnote *n)
{
	char path[PATH_MAX];
	char *buf;
	size_t len;
	int rc;

	if (snprintf(path, sizeof(path), "%s/%s/%s", px->config->state_dir, RUNNOTE_DIR, id) >=
	    (int)sizeof(path))
		return -1;
	if (file_read(path, RUNNOTE_MAX_BYTES, &buf, &len) == -1) {
		if (errno != ENOENT)
			fprintf(stderr, "sluice-proxy: run note %s: %s\n", path, strerror(errno));
		return -1;
	}
	rc = runnote_parse(buf, len, n);
	free(buf);
	if (rc == -1 || strcmp(n->id, id) != 0) {
		fprintf(stderr, "sluice-proxy: run note %s: malformed; its run has no rows of its own\n",
			path);
		return -1;
	}
	return 0;
}

static void put_opt(struct netlog_out *o, const char *key, const char *s)
{
	netlog_put_cstr(o, key, s[0] != '\0' ? s : NULL);
}

/* The run's start or end row. */
static void row_write(struct proxy *px, const struct sandbox *b, const struct runnote *n, bool end)
{
	struct netlog_out o;
	char net[RUNNOTE_ID_LEN + 8];

	if (px->netlog == NULL)
		return;
	snprintf(net, sizeof(net), "sluice-%s", n->id);
	netlog_put_start(&o);
	/* in this order: `sluice run` finds its end row by these bytes */
	netlog_put_cstr(&o, "kind", "run");
	netlog_put_cstr(&o, "event", end ? "end" : "start");
	netlog_put_cstr(&o, "sandbox", n->id);
	netlog_put_cstr(&o, "run", px->run_id);
	netlog_put_cstr(&o, "net", net);
	put_opt(&o, "name", n->name);
	put_opt(&o, "project", n->project);
	netlog_put_str(&o, "cmd", n->cmd, strlen(n->cmd), RUNNOTE_CMD_MAX);
	netlog_put_time(&o, "started", n->start_ms);
	if (end) {
		netlog_put_num(&o, "status", n->status);
		netlog_put_ms(&o, "ms", n->end_ms >= n->start_ms ? (double)(n->end_ms - n->start_ms) : 0);
		netlog_put_num(&o, "requests", b->requests);
		netlog_put_num(&o, "up", b->up);
		netlog_put_num(&o, "down", b->down);
	}
	netlog_emit(px->netlog, &o);
}

/* One note, as the scan found it: its start row once, its end row once. */
static void note_take(struct proxy *px, const struct runnote *n, bool adopt)
{
	struct sandbox *b = box_find(n->id);

	if (b == NULL) {
		b = box_take(n->id);
		if (!adopt)
			row_write(px, b, n, false);
	}
	b->seen = true;
	if (n->ended && !b->ended) {
		b->ended = true;
		row_write(px, b, n, true);
	}
}

/* Read every note (adopt: those there when we start, without a start row). */
static void scan(struct proxy *px, bool adopt)
{
	char dir[PATH_MAX];
	struct dirent *e;
	DIR *d;

	if (snprintf(dir, sizeof(dir), "%s/%s", px->config->state_dir, RUNNOTE_DIR) >=
	    (int)sizeof(dir))
		return;
	d = opendir(dir);
	if (d == NULL)
		return;
	for (size_t i = 0; i < SANDBOXES_MAX; i++)
		boxes[i].seen = false;
	while ((e = readdir(d)) != NULL) {
		struct runnote n;

		if (runnote_id_ok(e->d_name, strlen(e->d_name)) && note_read(px, e->d_name, &n) == 0)
			note_take(px, &n, adopt);
	}
	closedir(d);
	/* a note gone is a run gone: its slot is free (its end row, if any, is written) */
	for (size_t i = 0; i < SANDBOXES_MAX; i++)
		if (boxes[i].id[0] != '\0' && !boxes[i].seen)
			boxes[i].id[0] = '\0';
}

void sandbox_init(struct proxy *px)
{
	scan(px, true);
}

void sandbox_scan(struct proxy *px)
{
	scan(px, false);
}

/* Whether a and b (n bytes each) are equal, in time that does not depend on where they differ. */
static bool same(const char *a, const char *b, size_t n)
{
	unsigned char d = 0;

	for (size_t i = 0; i < n; i++)
		d |= (unsigned char)(a[i] ^ b[i]);
	return d == 0;
}

bool sandbox_probe(struct proxy *px, const struct exchange *x, const struct stamp *st)
{
	size_t plen = sizeof(RUNNOTE_PROBE_PATH) - 1;
	const char *id = st != NULL ? net_id(st->net) : NULL;
	struct sandbox *b;
	struct runnote n;

	if (id == NULL || x->decision == NULL || strcmp(x->decision, "refuse") != 0 ||
	    x->path_len != plen + RUNNOTE_NONCE_LEN || memcmp(x->path, RUNNOTE_PROBE_PATH, plen) != 0)
		return false;
	b = box_find(id);
	if ((b != NULL && b->probed) || note_read(px, id, &n) == -1 || n.nonce[0] == '\0' ||
	    !same(x->path + plen, n.nonce, RUNNOTE_NONCE_LEN))
		return false;
	if (b == NULL)
		note_take(px, &n, false);
	b = box_find(id);
	if (b != NULL)
		b->probed = true;
	return true;
}

void sandbox_count(const struct netlog_row *r)
{
	struct sandbox *b;
	const char *id = r->stamp != NULL ? net_id(r->stamp->net) : NULL;

	if (id == NULL || (b = box_find(id)) == NULL || b->ended)
		return;
	b->requests++;
	b->up += r->up;
	b->down += r->down;
}
