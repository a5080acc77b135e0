/*
 * limit.c: connections per client, so one sandbox cannot take the whole
 * max-connections pool.
 *
 * A connection counts against its peer address from accept until its first
 * head's stamp names a principal, then against that principal (so the
 * containers behind one forwarder are counted apart). Counts live in a
 * chained hash table owned by struct proxy; an entry leaves it when its
 * last connection closes, so the table never holds more entries than there
 * are connections. This file only counts; session.c (at accept) and
 * exchange.c (at the stamp) refuse.
 */
#include "proxy.h"

#include <stdlib.h>
#include <string.h>

#define LIMIT_BUCKETS 1024 /* a power of two */

struct limit_entry {
	struct limit_entry *next;
	unsigned n; /* connections counted here; > 0 while in the table */
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

struct limit_entry *limit_take(struct proxy *px, const char *key)
{
	struct limit_entry **head = &px->limits->bucket[limit_hash(key)];
	unsigned cap = config_per_client(px->config);
	size_t len = strlen(key);
	struct limit_entry *e;

	for (e = *head; e != NULL; e = e->next) {
		if (strcmp(e->key, key) == 0)
			break;
	}
	if (e == NULL) {
		e = malloc(sizeof(*e) + len + 1);
		if (e == NULL)
			return NULL;
		memcpy(e->key, key, len + 1);
		e->n = 0;
		e->next = *head;
		*head = e;
	}
	if (e->n >= cap)
		return NULL;
	e->n++;
	return e;
}

void limit_put(struct proxy *px, struct limit_entry *e)
{
	struct limit_entry **p;

	if (e == NULL || --e->n > 0)
		return;
	for (p = &px->limits->bucket[limit_hash(e->key)]; *p != NULL; p = &(*p)->next) {
		if (*p == e) {
			*p = e->next;
			free(e);
			return;
		}
	}
}
