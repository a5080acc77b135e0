/*
 * hmap.h: the one hash table, chained and intrusive, and its keyed hash.
 *
 * A struct kept in a table embeds a struct hmap_node; the table is an array
 * of buckets (a power of two), each a singly-linked chain, newest first.
 * The caller hashes its key and compares keys: hmap_find walks the nodes
 * whose 64-bit hash matches, and the caller checks the key of each. So a
 * table never copies, allocates or frees a node, and a key may be anything
 * (a string, an address and a port, a name and a type).
 *
 * The hash to use is hmap_hash: SipHash-2-4 (Aumasson and Bernstein) under
 * a key hmap_init draws from getrandom, so which keys share a bucket
 * cannot be known from outside, and a client that chooses keys (a DNS
 * name, a host, an address and port) cannot pile them into one chain or
 * make two of them look alike to a brake that counts hashes. There is no
 * unkeyed hash here on purpose.
 *
 * Growth: a table made with max_buckets above its buckets doubles when it
 * holds more nodes than buckets, up to max_buckets; when that allocation
 * fails it keeps its size (chains grow longer, nothing is lost), so
 * hmap_insert never fails. A table with max_buckets == buckets allocates
 * nothing after hmap_init.
 */
#ifndef SLUICE_HMAP_H
#define SLUICE_HMAP_H

#include <stddef.h>
#include <stdint.h>

struct hmap_key {
	uint64_t k0, k1;
};

struct hmap_node {
	struct hmap_node *next; /* in its bucket */
	uint64_t hash;          /* as given to hmap_insert */
};

struct hmap {
	struct hmap_node **buckets;
	size_t nbuckets;    /* a power of two */
	size_t max_buckets; /* what growth stops at; == nbuckets: no growth */
	size_t count;       /* nodes in the table */
	struct hmap_key key; /* of hmap_hash, drawn at hmap_init */
};

/*
 * m with buckets buckets (rounded up to a power of two, at least 1) that
 * may grow to max_buckets (likewise; below buckets: no growth), and a key
 * drawn. Returns 0, -1 with errno when out of memory or no random bytes.
 */
int hmap_init(struct hmap *m, size_t buckets, size_t max_buckets);

/* The buckets freed; the nodes are the caller's (hmap_pop them first). */
void hmap_release(struct hmap *m);

/* SipHash-2-4 of p[0..n) under m's key. */
uint64_t hmap_hash(const struct hmap *m, const void *p, size_t n);

/* SipHash-2-4 of p[0..n) under k (the tests' way to a fixed key). */
uint64_t hmap_siphash(const struct hmap_key *k, const void *p, size_t n);

/* A key from getrandom: 0, or -1 with errno. */
int hmap_key_init(struct hmap_key *k);

/* n, in no table, into m under hash (n->hash is set). Never fails. */
void hmap_insert(struct hmap *m, struct hmap_node *n, uint64_t hash);

/* n, which is in m, out of it. */
void hmap_remove(struct hmap *m, struct hmap_node *n);

/* The first node of m under hash, NULL none; then hmap_find_next for the others. */
struct hmap_node *hmap_find(const struct hmap *m, uint64_t hash);
struct hmap_node *hmap_find_next(const struct hmap_node *n);

/*
 * Every node of m, in no order: hmap_first, then hmap_next (NULL at the
 * end). Read the next node before removing the current one; nothing may be
 * inserted meanwhile (an insert may grow the table).
 */
struct hmap_node *hmap_first(const struct hmap *m);
struct hmap_node *hmap_next(const struct hmap *m, const struct hmap_node *n);

/* Some node of m, taken out of it; NULL when m is empty (to free them all). */
struct hmap_node *hmap_pop(struct hmap *m);

/* The struct of type holding the node p (a struct hmap_node *) as member; NULL for NULL. */
#define hmap_entry(p, type, member) \
	((p) != NULL ? (type *)(void *)((char *)(p) - offsetof(type, member)) : (type *)NULL)

#endif
