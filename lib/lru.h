/*
 * lru.h: a least-recently-used order over a list (list.h).
 *
 * The most recently used node is first, the least recently used last:
 * lru_add and lru_touch put a node first, lru_oldest names the one to
 * evict. Finding a node by key is the caller's (a struct hmap beside it);
 * when to evict (a count, bytes, an age) is the caller's too. O(1),
 * allocates nothing; a zeroed struct lru is empty.
 */
#ifndef SLUICE_LRU_H
#define SLUICE_LRU_H

#include "list.h"

struct lru {
	struct list list; /* most recently used first */
	size_t count;     /* nodes on it */
};

/* n, on no LRU, as the most recently used. */
static inline void lru_add(struct lru *u, struct list_node *n)
{
	list_insert_head(&u->list, n);
	u->count++;
}

/* n, on u, now the most recently used. */
static inline void lru_touch(struct lru *u, struct list_node *n)
{
	if (u->list.first == n)
		return;
	list_remove(&u->list, n);
	list_insert_head(&u->list, n);
}

/* n, on u, off it. */
static inline void lru_remove(struct lru *u, struct list_node *n)
{
	list_remove(&u->list, n);
	u->count--;
}

/* The least recently used node; NULL when u is empty. */
static inline struct list_node *lru_oldest(const struct lru *u)
{
	return u->list.last;
}

/* The most recently used node; NULL when u is empty. */
static inline struct list_node *lru_newest(const struct lru *u)
{
	return u->list.first;
}

#endif
