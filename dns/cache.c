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

#define FETCH_BUCKETS 4096
#define CACHE_BYTES_MAX (32u << 20) /* records kept in all, whatever dns-cache-entries says */
#define ENTRY_BYTES_MAX 8192        /* an answer larger is given, not kept */

struct cache {
	struct hmap entries; /* by cache_hash; its key is the one cache_hash uses */
	struct lru lru;      /* of the entries, least recently used last */
	size_t bytes;        /* of the entries' records */
	struct hmap fetches; /* by cache_hash too */
};

static struct cache *C(struct dnsd *d)
{
	return d->cache;
}

int cache_init(struct dnsd *d)
{
	struct cache *c = calloc(1, sizeof(*c));
	size_t want = d->config->dns_cache_entries, n = 1024;

	if (c == NULL)
		return -1;
	while (n < want && n < ((size_t)1 << 24))
		n <<= 1;
	if (hmap_init(&c->entries, n, n) == -1) {
		free(c);
		return -1;
	}
	if (hmap_init(&c->fetches, FETCH_BUCKETS, FETCH_BUCKETS) == -1) {
		hmap_release(&c->entries);
		free(c);
		return -1;
	}
	d->cache = c;
	return 0;
}

static void entry_unlink(struct cache *c, struct cache_entry *e)
{
	hmap_remove(&c->entries, &e->node);
	lru_remove(&c->lru, &e->lru);
	c->bytes -= e->rr_len;
	free(e);
}

static struct cache_entry *lru_entry(struct list_node *n)
{
	return list_entry(n, struct cache_entry, lru);
}

static struct fetch *fetch_of(struct hmap_node *n)
{
	return hmap_entry(n, struct fetch, node);
}

void cache_release(struct dnsd *d)
{
	struct cache *c = C(d);
	struct hmap_node *n;

	if (c == NULL)
		return;
	while (lru_newest(&c->lru) != NULL)
		entry_unlink(c, lru_entry(lru_newest(&c->lru)));
	while ((n = hmap_first(&c->fetches)) != NULL)
		fetch_free(d, fetch_of(n));
	hmap_release(&c->entries);
	hmap_release(&c->fetches);
	free(c);
	d->cache = NULL;
}

/* SipHash-2-4 (lib/hmap.c) under the cache's key, over name and type. */
uint64_t cache_hash(struct dnsd *d, const char *name, size_t len, uint16_t qtype)
{
	uint8_t buf[DNS_NAME_MAX + 3];

	memcpy(buf, name, len);
	buf[len] = (uint8_t)(qtype >> 8);
	buf[len + 1] = (uint8_t)qtype;
	return hmap_hash(&C(d)->entries, buf, len + 2);
}

/* --- entries ------------------------------------------------------------ */

static bool entry_is(const struct cache_entry *e, const char *name, size_t len, uint16_t qtype)
{
	return e->qtype == qtype && e->name_len == len && memcmp(e->data, name, len) == 0;
}

/* The entry for name and type under hash; NULL none. */
static struct cache_entry *entry_find(struct cache *c, uint64_t hash, const char *name,
				      size_t len, uint16_t qtype)
{
	for (struct hmap_node *n = hmap_find(&c->entries, hash); n != NULL; n = hmap_find_next(n)) {
		struct cache_entry *e = hmap_entry(n, struct cache_entry, node);

		if (entry_is(e, name, len, qtype))
			return e;
	}
	return NULL;
}

struct cache_entry *cache_get(struct dnsd *d, uint64_t hash, const char *name, size_t len,
			      uint16_t qtype)
{
	struct cache *c = C(d);
	struct cache_entry *e = entry_find(c, hash, name, len, qtype);

	if (e == NULL)
		return NULL;
	if (e->expires_ms <= loop_now(d->loop)) {
		entry_unlink(c, e);
		return NULL;
	}
	lru_touch(&c->lru, &e->lru);
	return e;
}

void cache_trim(struct dnsd *d)
{
	struct cache *c = C(d);

	while ((c->lru.count > d->config->dns_cache_entries || c->bytes > CACHE_BYTES_MAX) &&
	       lru_oldest(&c->lru) != NULL)
		entry_unlink(c, lru_entry(lru_oldest(&c->lru)));
}

const struct cache_entry *cache_put(struct dnsd *d, const struct fetch *f, const uint8_t *msg,
				    size_t len, bool *failed, const char **why)
{
	static struct dns_answer a;
	const struct config *cf = d->config;
	struct cache *c = C(d);
	struct cache_entry *e, *o;
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
	o = entry_find(c, f->node.hash, f->name, f->name_len, f->qtype);
	if (o != NULL)
		entry_unlink(c, o);
	hmap_insert(&c->entries, &e->node, f->node.hash);
	lru_add(&c->lru, &e->lru);
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
	return C(d)->fetches.count;
}

/* --- fetches ------------------------------------------------------------ */

struct fetch *fetch_find(struct dnsd *d, uint64_t hash, const char *name, size_t len,
			 uint16_t qtype)
{
	for (struct hmap_node *n = hmap_find(&C(d)->fetches, hash); n != NULL;
	     n = hmap_find_next(n)) {
		struct fetch *f = fetch_of(n);

		if (f->qtype == qtype && f->name_len == len && memcmp(f->name, name, len) == 0)
			return f;
	}
	return NULL;
}

struct fetch *fetch_new(struct dnsd *d, uint64_t hash, const char *name, size_t len,
			uint16_t qtype)
{
	struct fetch *f = calloc(1, sizeof(*f));

	if (f == NULL)
		return NULL;
	memcpy(f->name, name, len);
	f->name[len] = '\0';
	f->name_len = len;
	f->qtype = qtype;
	f->udp_fd = -1;
	f->io.fd = -1;
	hmap_insert(&C(d)->fetches, &f->node, hash);
	return f;
}

void fetch_free(struct dnsd *d, struct fetch *f)
{
	struct hmap_node *n = hmap_find(&C(d)->fetches, f->node.hash);

	while (n != NULL && n != &f->node)
		n = hmap_find_next(n);
	if (n != NULL)
		hmap_remove(&C(d)->fetches, n);
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
