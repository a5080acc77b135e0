/*
 * cache.c: answers by name and type, and the fetches in flight.
 *
 * An entry holds what the upstream answered for the name and type, as
 * records sluice-dns writes back (names uncompressed, the CNAME chain
 * first, only records of the chain), unfiltered: the deny list is applied
 * when an answer is written (wire.c), so a policy reload needs no flush.
 * TTLs are kept within dns-min-ttl and dns-max-ttl; NXDOMAIN and NODATA
 * for their SOA's time, at most dns-negative-ttl. At dns-cache-entries
 * (or CACHE_BYTES_MAX of records) the least recently used entry goes; an
 * answer over ENTRY_BYTES_MAX is given but not kept. The table's hash is SipHash-2-4
 * under a key drawn at start, so names a client picks cannot pile into
 * one bucket. Fetches (one per name and type being asked upstream) are
 * kept in a table of their own, which is what coalesces identical
 * queries. Reading the upstream's bytes is lib/dns_answer.c's.
 */
#include "dns.h"
#include "dns_answer.h"

#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#define FETCH_BUCKETS 4096
#define CACHE_BYTES_MAX (32u << 20) /* records kept in all, whatever dns-cache-entries says */
#define ENTRY_BYTES_MAX 8192        /* an answer larger is given, not kept */

struct cache {
	struct cache_entry **buckets;
	size_t nbuckets; /* a power of two */
	size_t count;
	size_t bytes; /* of the entries' records */
	struct cache_entry *lru_head, *lru_tail;
	struct fetch *fetches[FETCH_BUCKETS];
	size_t nfetches;
	uint64_t k0, k1;
};

static struct cache *C(struct dnsd *d)
{
	return d->cache;
}

int cache_init(struct dnsd *d)
{
	struct cache *c = calloc(1, sizeof(*c));
	uint64_t key[2];
	size_t want = d->config->dns_cache_entries;

	if (c == NULL || getrandom(key, sizeof(key), 0) != (ssize_t)sizeof(key)) {
		free(c);
		return -1;
	}
	c->k0 = key[0];
	c->k1 = key[1];
	c->nbuckets = 1024;
	while (c->nbuckets < want && c->nbuckets < ((size_t)1 << 24))
		c->nbuckets <<= 1;
	c->buckets = calloc(c->nbuckets, sizeof(*c->buckets));
	if (c->buckets == NULL) {
		free(c);
		return -1;
	}
	d->cache = c;
	return 0;
}

static void entry_unlink(struct cache *c, struct cache_entry *e)
{
	struct cache_entry **pp = &c->buckets[e->hash & (c->nbuckets - 1)];

	while (*pp != e)
		pp = &(*pp)->hnext;
	*pp = e->hnext;
	if (e->lprev != NULL)
		e->lprev->lnext = e->lnext;
	else
		c->lru_head = e->lnext;
	if (e->lnext != NULL)
		e->lnext->lprev = e->lprev;
	else
		c->lru_tail = e->lprev;
	c->count--;
	c->bytes -= e->rr_len;
	free(e);
}

void cache_release(struct dnsd *d)
{
	struct cache *c = C(d);

	if (c == NULL)
		return;
	while (c->lru_head != NULL)
		entry_unlink(c, c->lru_head);
	for (size_t i = 0; i < FETCH_BUCKETS; i++)
		while (c->fetches[i] != NULL)
			fetch_free(d, c->fetches[i]);
	free(c->buckets);
	free(c);
	d->cache = NULL;
}

/* --- SipHash-2-4 (Aumasson and Bernstein), over name and type ---------- */

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

static uint64_t siphash(uint64_t k0, uint64_t k1, const uint8_t *p, size_t n)
{
	uint64_t v[4] = { k0 ^ 0x736f6d6570736575ull, k1 ^ 0x646f72616e646f6dull,
			  k0 ^ 0x6c7967656e657261ull, k1 ^ 0x7465646279746573ull };
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

uint64_t cache_hash(struct dnsd *d, const char *name, size_t len, uint16_t qtype)
{
	uint8_t buf[DNS_NAME_MAX + 3];

	memcpy(buf, name, len);
	buf[len] = (uint8_t)(qtype >> 8);
	buf[len + 1] = (uint8_t)qtype;
	return siphash(C(d)->k0, C(d)->k1, buf, len + 2);
}

/* --- entries ------------------------------------------------------------ */

static bool entry_is(const struct cache_entry *e, uint64_t hash, const char *name, size_t len,
		     uint16_t qtype)
{
	return e->hash == hash && e->qtype == qtype && e->name_len == len &&
	       memcmp(e->data, name, len) == 0;
}

struct cache_entry *cache_get(struct dnsd *d, uint64_t hash, const char *name, size_t len,
			      uint16_t qtype)
{
	struct cache *c = C(d);
	struct cache_entry *e = c->buckets[hash & (c->nbuckets - 1)];

	for (; e != NULL; e = e->hnext) {
		if (!entry_is(e, hash, name, len, qtype))
			continue;
		if (e->expires_ms <= loop_now(d->loop)) {
			entry_unlink(c, e);
			return NULL;
		}
		if (e != c->lru_head) { /* to the front */
			e->lprev->lnext = e->lnext;
			if (e->lnext != NULL)
				e->lnext->lprev = e->lprev;
			else
				c->lru_tail = e->lprev;
			e->lprev = NULL;
			e->lnext = c->lru_head;
			c->lru_head->lprev = e;
			c->lru_head = e;
		}
		return e;
	}
	return NULL;
}

void cache_trim(struct dnsd *d)
{
	struct cache *c = C(d);

	while ((c->count > d->config->dns_cache_entries || c->bytes > CACHE_BYTES_MAX) &&
	       c->lru_tail != NULL)
		entry_unlink(c, c->lru_tail);
}

const struct cache_entry *cache_put(struct dnsd *d, const struct fetch *f, const uint8_t *msg,
				    size_t len, bool *failed, const char **why)
{
	static struct dns_answer a;
	const struct config *cf = d->config;
	struct cache *c = C(d);
	struct cache_entry *e, **bucket;
	int r = dns_answer_read(msg, len, f->name, f->name_len, f->qtype, &a, why);
	uint32_t ttl;

	*failed = r == DNS_ANSWER_FAILED;
	if (r != DNS_ANSWER_OK)
		return NULL;
	if (a.n == 0) /* NXDOMAIN, or NODATA: the SOA's time, at most dns-negative-ttl */
		ttl = a.soa_ttl < cf->dns_negative_ttl ? a.soa_ttl : cf->dns_negative_ttl;
	else
		ttl = a.min_ttl < cf->dns_min_ttl ? cf->dns_min_ttl
		      : a.min_ttl > cf->dns_max_ttl ? cf->dns_max_ttl : a.min_ttl;
	e = malloc(sizeof(*e) + f->name_len + 1 + a.len);
	if (e == NULL) {
		*why = "out of memory";
		return NULL;
	}
	e->hash = f->hash;
	e->qtype = f->qtype;
	e->rcode = (uint8_t)a.rcode;
	e->ttl = ttl;
	e->expires_ms = loop_now(d->loop) + (uint64_t)ttl * 1000;
	e->ancount = a.n;
	e->name_len = (uint16_t)f->name_len;
	e->rr_len = a.len;
	e->loose = a.len > ENTRY_BYTES_MAX || cf->dns_cache_entries == 0;
	e->memo_gen = 0;
	e->memo_wild = -1;
	memcpy(e->data, f->name, f->name_len + 1);
	memcpy(e->data + f->name_len + 1, a.rrs, a.len);
	if (e->loose)
		return e; /* answered from, then freed (cache_loose_free) */
	/* an older entry for the same question goes */
	for (struct cache_entry *o = c->buckets[f->hash & (c->nbuckets - 1)]; o != NULL; o = o->hnext) {
		if (entry_is(o, f->hash, f->name, f->name_len, f->qtype)) {
			entry_unlink(c, o);
			break;
		}
	}
	bucket = &c->buckets[f->hash & (c->nbuckets - 1)];
	e->hnext = *bucket;
	*bucket = e;
	e->lprev = NULL;
	e->lnext = c->lru_head;
	if (c->lru_head != NULL)
		c->lru_head->lprev = e;
	c->lru_head = e;
	if (c->lru_tail == NULL)
		c->lru_tail = e;
	c->count++;
	c->bytes += e->rr_len;
	return e;
}

void cache_loose_free(const struct cache_entry *e)
{
	if (e != NULL && e->loose)
		free((void *)e);
}

size_t fetch_count(struct dnsd *d)
{
	return C(d)->nfetches;
}

/* --- fetches ------------------------------------------------------------ */

struct fetch *fetch_find(struct dnsd *d, uint64_t hash, const char *name, size_t len,
			 uint16_t qtype)
{
	struct fetch *f = C(d)->fetches[hash % FETCH_BUCKETS];

	for (; f != NULL; f = f->hnext)
		if (f->hash == hash && f->qtype == qtype && f->name_len == len &&
		    memcmp(f->name, name, len) == 0)
			return f;
	return NULL;
}

struct fetch *fetch_new(struct dnsd *d, uint64_t hash, const char *name, size_t len,
			uint16_t qtype)
{
	struct fetch *f = calloc(1, sizeof(*f)), **b;

	if (f == NULL)
		return NULL;
	f->hash = hash;
	memcpy(f->name, name, len);
	f->name[len] = '\0';
	f->name_len = len;
	f->qtype = qtype;
	f->udp_fd = -1;
	f->io.fd = -1;
	b = &C(d)->fetches[hash % FETCH_BUCKETS];
	f->hnext = *b;
	*b = f;
	C(d)->nfetches++;
	return f;
}

void fetch_free(struct dnsd *d, struct fetch *f)
{
	struct fetch **pp = &C(d)->fetches[f->hash % FETCH_BUCKETS];

	while (*pp != NULL && *pp != f)
		pp = &(*pp)->hnext;
	if (*pp == f) {
		*pp = f->hnext;
		C(d)->nfetches--;
	}
	upstream_cancel(d, f);
	while (f->waiters != NULL) {
		struct query *q = f->waiters;

		f->waiters = q->next;
		if (q->to.tcp != NULL)
			tcp_client_release(d, q->to.tcp);
		free(q);
	}
	free(f);
}
