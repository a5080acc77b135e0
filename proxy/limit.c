/*
 * limit.c: connections per client, so one sandbox cannot take the whole
 * max-connections pool.
 *
 * A connection counts against its peer from accept until its first head's
 * stamp names a principal, then against that principal (so the containers
 * behind one forwarder are counted apart). The peer is its address (every
 * sluice-forward on this host dials from a loopback address of its own, so
 * one run's forwarder is never another's client), or for a unix:PATH
 * listener the peer process. Counts live in a hash table (lib/hmap.h,
 * SipHash under a random key: a client chooses its stamp) owned by
 * struct proxy; each entry lists the connections it counts, oldest first,
 * so a client at its cap can give up its oldest idle one
 * (limit_idle_oldest) rather than be refused; an entry leaves the table
 * when its last connection closes, so the table never holds more entries
 * than there are connections. This file only counts and finds; session.c
 * (at accept) and who.c (at the stamp) close and refuse.
 */
#include "conn.h"

#include <stdlib.h>
#include <string.h>

#include "hmap.h"

#define LIMIT_BUCKETS 64          /* at first; doubling as entries come */
#define LIMIT_BUCKETS_MAX 65536

struct limit_entry {
	struct hmap_node node;
	unsigned n; /* connections counted here; > 0 while in the table */
	struct list sessions; /* those n, by lim, in the order they came */
	char key[];
};

struct limits {
	struct hmap map;
};

int limit_init(struct proxy *px)
{
	px->limits = calloc(1, sizeof(*px->limits));
	if (px->limits == NULL)
		return -1;
	if (hmap_init(&px->limits->map, LIMIT_BUCKETS, LIMIT_BUCKETS_MAX) == -1) {
		free(px->limits);
		px->limits = NULL;
		return -1;
	}
	return 0;
}

void limit_release(struct proxy *px)
{
	struct hmap_node *n;

	if (px->limits == NULL)
		return;
	while ((n = hmap_pop(&px->limits->map)) != NULL)
		free(hmap_entry(n, struct limit_entry, node));
	hmap_release(&px->limits->map);
	free(px->limits);
	px->limits = NULL;
}

/* The entry of key, whose hash is h; NULL when none. */
static struct limit_entry *limit_find(struct proxy *px, const char *key, uint64_t h)
{
	struct hmap_node *n = hmap_find(&px->limits->map, h);

	for (; n != NULL; n = hmap_find_next(n)) {
		struct limit_entry *e = hmap_entry(n, struct limit_entry, node);

		if (strcmp(e->key, key) == 0)
			return e;
	}
	return NULL;
}

struct limit_entry *limit_take(struct proxy *px, const char *key, struct session *s)
{
	unsigned cap = config_per_client(px->config);
	size_t len = strlen(key);
	uint64_t h = hmap_hash(&px->limits->map, key, len);
	struct limit_entry *e = limit_find(px, key, h);

	if (e == NULL) {
		e = malloc(sizeof(*e) + len + 1);
		if (e == NULL)
			return NULL;
		memcpy(e->key, key, len + 1);
		e->n = 0;
		memset(&e->sessions, 0, sizeof(e->sessions));
		hmap_insert(&px->limits->map, &e->node, h);
	}
	if (s->limit == e)
		return e;
	if (e->n >= cap)
		return NULL;
	limit_put(px, s);
	e->n++;
	s->limit = e;
	list_insert_tail(&e->sessions, &s->lim);
	return e;
}

struct session *limit_idle_oldest(struct proxy *px, const char *key,
				  bool (*idle)(const struct session *s))
{
	struct limit_entry *e = limit_find(px, key, hmap_hash(&px->limits->map, key, strlen(key)));

	for (struct list_node *n = e != NULL ? e->sessions.first : NULL; n != NULL; n = n->next)
		if (idle(list_entry(n, struct session, lim)))
			return list_entry(n, struct session, lim);
	return NULL;
}

void limit_put(struct proxy *px, struct session *s)
{
	struct limit_entry *e = s->limit;

	if (e == NULL)
		return;
	list_remove(&e->sessions, &s->lim);
	s->limit = NULL;
	if (--e->n > 0)
		return;
	hmap_remove(&px->limits->map, &e->node);
	free(e);
}
