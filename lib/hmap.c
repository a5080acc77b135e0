/*
 * hmap.c: the chained hash table of hmap.h and SipHash-2-4.
 *
 * Buckets are a power of two, so a hash picks one by its low bits; a
 * chain is newest first. Growth rehashes every node into an array twice
 * the size, by the hash each node keeps (no key is read again). The table
 * does not shrink.
 */
#include "hmap.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/random.h>

static size_t pow2_at_least(size_t n)
{
	size_t p = 1;

	while (p < n && p <= SIZE_MAX / 2)
		p <<= 1;
	return p;
}

int hmap_key_init(struct hmap_key *k)
{
	uint64_t key[2];

	if (getrandom(key, sizeof(key), 0) != (ssize_t)sizeof(key)) {
		if (errno == 0)
			errno = EIO;
		return -1;
	}
	k->k0 = key[0];
	k->k1 = key[1];
	return 0;
}

int hmap_init(struct hmap *m, size_t buckets, size_t max_buckets)
{
	m->nbuckets = pow2_at_least(buckets);
	m->max_buckets = pow2_at_least(max_buckets);
	if (m->max_buckets < m->nbuckets)
		m->max_buckets = m->nbuckets;
	m->count = 0;
	m->buckets = calloc(m->nbuckets, sizeof(*m->buckets));
	if (m->buckets == NULL)
		return -1;
	if (hmap_key_init(&m->key) == -1) {
		free(m->buckets);
		m->buckets = NULL;
		return -1;
	}
	return 0;
}

void hmap_release(struct hmap *m)
{
	free(m->buckets);
	m->buckets = NULL;
	m->nbuckets = m->count = 0;
}

/* --- SipHash-2-4 ----------------------------------------------------------- */

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))

static void sip_round(uint64_t v[4])
{
	v[0] += v[1];
	v[1] = ROTL(v[1], 13) ^ v[0];
	v[0] = ROTL(v[0], 32);
	v[2] += v[3];
	v[3] = ROTL(v[3], 16) ^ v[2];
	v[0] += v[3];
	v[3] = ROTL(v[3], 21) ^ v[0];
	v[2] += v[1];
	v[1] = ROTL(v[1], 17) ^ v[2];
	v[2] = ROTL(v[2], 32);
}

static void sip_block(uint64_t v[4], uint64_t m)
{
	v[3] ^= m;
	sip_round(v);
	sip_round(v);
	v[0] ^= m;
}

uint64_t hmap_siphash(const struct hmap_key *k, const void *data, size_t n)
{
	const uint8_t *p = data;
	uint64_t v[4] = { k->k0 ^ 0x736f6d6570736575ull, k->k1 ^ 0x646f72616e646f6dull,
			  k->k0 ^ 0x6c7967656e657261ull, k->k1 ^ 0x7465646279746573ull };
	uint64_t last = (uint64_t)n << 56;
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		uint64_t m = 0;

		for (int b = 7; b >= 0; b--)
			m = m << 8 | p[i + (size_t)b];
		sip_block(v, m);
	}
	for (size_t b = 0; i + b < n; b++)
		last |= (uint64_t)p[i + b] << (8 * b);
	sip_block(v, last);
	v[2] ^= 0xff;
	for (int r = 0; r < 4; r++)
		sip_round(v);
	return v[0] ^ v[1] ^ v[2] ^ v[3];
}

uint64_t hmap_hash(const struct hmap *m, const void *p, size_t n)
{
	return hmap_siphash(&m->key, p, n);
}

/* --- the table ------------------------------------------------------------- */

static struct hmap_node **bucket(const struct hmap *m, uint64_t hash)
{
	return &m->buckets[hash & (m->nbuckets - 1)];
}

/* Twice the buckets, every node rehashed by the hash it keeps; as it was when out of memory. */
static void grow(struct hmap *m)
{
	size_t n = m->nbuckets * 2;
	struct hmap_node **b = calloc(n, sizeof(*b));

	if (b == NULL)
		return;
	for (size_t i = 0; i < m->nbuckets; i++) {
		struct hmap_node *e = m->buckets[i], *next;

		for (; e != NULL; e = next) {
			next = e->next;
			e->next = b[e->hash & (n - 1)];
			b[e->hash & (n - 1)] = e;
		}
	}
	free(m->buckets);
	m->buckets = b;
	m->nbuckets = n;
}

void hmap_insert(struct hmap *m, struct hmap_node *n, uint64_t hash)
{
	struct hmap_node **b;

	if (m->count >= m->nbuckets && m->nbuckets < m->max_buckets)
		grow(m);
	b = bucket(m, hash);
	n->hash = hash;
	n->next = *b;
	*b = n;
	m->count++;
}

void hmap_remove(struct hmap *m, struct hmap_node *n)
{
	struct hmap_node **pp = bucket(m, n->hash);

	while (*pp != n)
		pp = &(*pp)->next;
	*pp = n->next;
	n->next = NULL;
	m->count--;
}

struct hmap_node *hmap_find(const struct hmap *m, uint64_t hash)
{
	struct hmap_node *n = *bucket(m, hash);

	while (n != NULL && n->hash != hash)
		n = n->next;
	return n;
}

struct hmap_node *hmap_find_next(const struct hmap_node *n)
{
	struct hmap_node *e = n->next;

	while (e != NULL && e->hash != n->hash)
		e = e->next;
	return e;
}

/* The first node in a bucket from i on; NULL none. */
static struct hmap_node *from_bucket(const struct hmap *m, size_t i)
{
	for (; i < m->nbuckets; i++)
		if (m->buckets[i] != NULL)
			return m->buckets[i];
	return NULL;
}

struct hmap_node *hmap_first(const struct hmap *m)
{
	return m->count > 0 ? from_bucket(m, 0) : NULL;
}

struct hmap_node *hmap_next(const struct hmap *m, const struct hmap_node *n)
{
	if (n->next != NULL)
		return n->next;
	return from_bucket(m, (n->hash & (m->nbuckets - 1)) + 1);
}

struct hmap_node *hmap_pop(struct hmap *m)
{
	struct hmap_node *n = hmap_first(m);

	if (n != NULL)
		hmap_remove(m, n);
	return n;
}
