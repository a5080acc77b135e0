/*
 * list.h: an intrusive doubly-linked list.
 *
 * A struct that goes on a list embeds a struct list_node; the list holds
 * its first and last node, NULL-terminated both ways, so a list and a node
 * zeroed (calloc, a static, a pool) are ready: an empty list and a node on
 * none. Every operation is O(1) and allocates nothing. A node is on one
 * list at a time through one list_node (a struct on two lists embeds two).
 * Not here: no count (keep one beside it if needed), no locking.
 */
#ifndef SLUICE_LIST_H
#define SLUICE_LIST_H

#include <stdbool.h>
#include <stddef.h>

struct list_node {
	struct list_node *prev, *next; /* NULL at the ends, and off any list */
};

struct list {
	struct list_node *first, *last; /* NULL: empty */
};

/* The struct of type holding the node p (a struct list_node *) as member; NULL for NULL. */
#define list_entry(p, type, member) \
	((p) != NULL ? (type *)(void *)((char *)(p) - offsetof(type, member)) : (type *)NULL)

/*
 * Every node of l from first to last, n the node; tmp is read before the
 * body runs, so the body may remove n (not n's successor).
 */
#define list_foreach_safe(n, tmp, l) \
	for ((n) = (l)->first; (n) != NULL && ((tmp) = (n)->next, 1); (n) = (tmp))

static inline bool list_empty(const struct list *l)
{
	return l->first == NULL;
}

/* n, on no list, onto l between prev and next (NULL: l's end on that side). */
static inline void list_link(struct list *l, struct list_node *n, struct list_node *prev,
			     struct list_node *next)
{
	n->prev = prev;
	n->next = next;
	*(prev != NULL ? &prev->next : &l->first) = n;
	*(next != NULL ? &next->prev : &l->last) = n;
}

/* n, on no list, first on l. */
static inline void list_insert_head(struct list *l, struct list_node *n)
{
	list_link(l, n, NULL, l->first);
}

/* n, on no list, last on l. */
static inline void list_insert_tail(struct list *l, struct list_node *n)
{
	list_link(l, n, l->last, NULL);
}

/* n, which is on l, off it (its links cleared). */
static inline void list_remove(struct list *l, struct list_node *n)
{
	*(n->prev != NULL ? &n->prev->next : &l->first) = n->next;
	*(n->next != NULL ? &n->next->prev : &l->last) = n->prev;
	n->prev = n->next = NULL;
}

#endif
