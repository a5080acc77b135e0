/*
 * limit.c: connections per client, so one sandbox cannot take the whole
 * max-connections pool.
 *
 * A connection counts against its peer from accept until its first head's
 * stamp names a principal, then against that principal (so the containers
 * behind one forwarder are counted apart). The peer is its address (every
 * sluice-forward on this host dials from a loopback address of its own, so
 * one run's forwarder is never another's client), or for a unix:PATH
 * listener the peer process. Counts live in a chained hash table owned by
 * struct proxy; each entry lists the connections it counts, oldest first,
 * so a client at its cap can give up its oldest idle one
 * (limit_idle_oldest) rather than be refused; an entry leaves the table
 * when its last connection closes, so the table never holds more entries
 * than there are connections. This file only counts and finds; session.c
 * (at accept) and who.c (at the stamp) close and refuse.
 */
#include "session.h"

#include <stdlib.h>
#include <string.h>

#define LIMIT_BUCKETS 1024 /* a power of two */

struct limit_entry {
	struct limit_entry *next;
	unsigned n; /* connections counted here; > 0 while in the table */
	struct session *first, *last; /* those n, by lim_next, in the order they came */
	char key[];
};

struct limits {
	struct limit_entry *bucket[LIMIT_BUCKETS];
};

/* FNV-1a: keys are client addresses and stamp fields, short and few. */
static size_t limit_hash(const char *key)
{
	uint32_t h = 2166136261u;

	for (const unsigned char *p = (const unsigned char *)key; *p != '\0'; p++)
		h = (h ^ *p) * 16777619u;
	return h & (LIMIT_BUCKETS - 1);
}

int limit_init(struct proxy *px)
{
	px->limits = calloc(1, sizeof(*px->limits));
	return px->limits != NULL ? 0 : -1;
}

void limit_release(struct proxy *px)
{
	if (px->limits == NULL)
		return;
	for (size_t i = 0; i < LIMIT_BUCKETS; i++) {
		for (struct limit_entry *e = px->limits->bucket[i], *next; e != NULL; e = next) {
			next = e->next;
			free(e);
		}
	}
	free(px->limits);
	px->limits = NULL;
}

/* key's entry, NULL when none. */
static struct limit_entry *limit_find(struct proxy *px, const char *key)
{
	struct limit_entry *e;

	for (e = px->limits->bucket[limit_hash(key)]; e != NULL; e = e->next) {
		if (strcmp(e->key, key) == 0)
			break;
	}
	return e;
}

struct limit_entry *limit_take(struct proxy *px, const char *key, struct session *s)
{
	struct limit_entry **head = &px->limits->bucket[limit_hash(key)];
	unsigned cap = config_per_client(px->config);
	size_t len = strlen(key);
	struct limit_entry *e = limit_find(px, key);

	if (e == NULL) {
		e = malloc(sizeof(*e) + len + 1);
		if (e == NULL)
			return NULL;
		memcpy(e->key, key, len + 1);
		e->n = 0;
		e->first = e->last = NULL;
		e->next = *head;
		*head = e;
	}
	if (s->limit == e)
		return e;
	if (e->n >= cap)
		return NULL;
	limit_put(px, s);
	e->n++;
	s->limit = e;
	s->lim_next = NULL;
	s->lim_prev = e->last;
	if (e->last != NULL)
		e->last->lim_next = s;
	else
		e->first = s;
	e->last = s;
	return e;
}

struct session *limit_idle_oldest(struct proxy *px, const char *key)
{
	struct limit_entry *e = limit_find(px, key);

	for (struct session *s = e != NULL ? e->first : NULL; s != NULL; s = s->lim_next)
		if (session_idle(s))
			return s;
	return NULL;
}

void limit_put(struct proxy *px, struct session *s)
{
	struct limit_entry *e = s->limit, **p;

	if (e == NULL)
		return;
	if (s->lim_prev != NULL)
		s->lim_prev->lim_next = s->lim_next;
	else
		e->first = s->lim_next;
	if (s->lim_next != NULL)
		s->lim_next->lim_prev = s->lim_prev;
	else
		e->last = s->lim_prev;
	s->limit = NULL;
	s->lim_next = s->lim_prev = NULL;
	if (--e->n > 0)
		return;
	for (p = &px->limits->bucket[limit_hash(e->key)]; *p != NULL; p = &(*p)->next) {
		if (*p == e) {
			*p = e->next;
			free(e);
			return;
		}
	}
}
