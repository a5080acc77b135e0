/*
 * cache.c: answers by name and type, and the fetches in flight.
 *
 * An entry holds what the upstream answered for the name and type, as
 * records sluice-dns writes back (names uncompressed, the CNAME chain
 * first, only records of the chain), unfiltered: the deny list is applied
 * when an answer is written (wire.c), so a policy reload needs no flush.
 * TTLs are kept within dns-min-ttl and dns-max-ttl; NXDOMAIN and NODATA
 * for their SOA's time, at most dns-negative-ttl. At dns-cache-entries
 * the least recently used entry goes. The table's hash is SipHash-2-4
 * under a key drawn at start, so names a client picks cannot pile into
 * one bucket. Fetches (one per name and type being asked upstream) are
 * kept in a table of their own, which is what coalesces identical
 * queries. Reading the upstream's bytes goes through lib/dns_msg.c.
 */
#include "dns.h"

#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#define FETCH_BUCKETS 4096
#define CHAIN_MAX 8     /* CNAMEs followed in one answer */
#define ANSWER_RRS 128  /* answer records read from one message */

struct cache {
	struct cache_entry **buckets;
	size_t nbuckets; /* a power of two */
	size_t count;
	struct cache_entry *lru_head, *lru_tail;
	struct fetch *fetches[FETCH_BUCKETS];
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

size_t cache_count(struct dnsd *d)
{
	return C(d)->count;
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

static struct cache *hash_cache; /* the key for cache_hash: one cache a process */

uint64_t cache_hash(const char *name, size_t len, uint16_t qtype)
{
	uint8_t buf[DNS_NAME_MAX + 3];

	memcpy(buf, name, len);
	buf[len] = (uint8_t)(qtype >> 8);
	buf[len + 1] = (uint8_t)qtype;
	return siphash(hash_cache->k0, hash_cache->k1, buf, len + 2);
}

/* --- entries ------------------------------------------------------------ */

static bool entry_is(const struct cache_entry *e, uint64_t hash, const char *name, size_t len,
		     uint16_t qtype)
{
	return e->hash == hash && e->qtype == qtype && e->name_len == len &&
	       memcmp(e->data, name, len) == 0;
}

const struct cache_entry *cache_get(struct dnsd *d, uint64_t hash, const char *name,
				    size_t len, uint16_t qtype)
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

	while (c->count > d->config->dns_cache_entries && c->lru_tail != NULL)
		entry_unlink(c, c->lru_tail);
}

/* The records an entry keeps, as they will be written, into a scratch buffer. */
struct rrs {
	uint8_t buf[DNS_MSG_MAX];
	size_t len;
	uint16_t n;
	uint32_t min_ttl;
	bool full;
};

static void rr_put(struct rrs *r, const void *p, size_t n)
{
	if (r->full || n > sizeof(r->buf) - r->len) {
		r->full = true;
		return;
	}
	memcpy(r->buf + r->len, p, n);
	r->len += n;
}

static void rr_put16(struct rrs *r, uint16_t v)
{
	uint8_t b[2] = { (uint8_t)(v >> 8), (uint8_t)v };

	rr_put(r, b, 2);
}

static void rr_name(struct rrs *r, const char *name, size_t len)
{
	size_t i = 0;

	while (i < len) {
		const char *dot = memchr(name + i, '.', len - i);
		size_t l = dot != NULL ? (size_t)(dot - (name + i)) : len - i;
		uint8_t lb = (uint8_t)l;

		rr_put(r, &lb, 1);
		rr_put(r, name + i, l);
		i += l + 1;
	}
	rr_put(r, "", 1);
}

/*
 * One record's data as it will be written: names inside it (CNAME, PTR,
 * NS, DNAME, MX, SRV) decompressed, other types' bytes as they came (RFC
 * 3597: no compression in them). Returns 0, or -1 with *why.
 */
static int rr_data(struct rrs *r, const uint8_t *msg, size_t len, const struct dns_rr *rr,
		   const char **why)
{
	char name[DNS_NAME_MAX + 1];
	size_t off = rr->rdata_off, fixed = 0, nl, at;

	switch (rr->type) {
	case DNS_T_A:
	case DNS_T_AAAA:
		if (rr->rdlen != (rr->type == DNS_T_A ? 4u : 16u)) {
			*why = "an address record of the wrong length";
			return -1;
		}
		rr_put16(r, (uint16_t)rr->rdlen);
		rr_put(r, msg + off, rr->rdlen);
		return 0;
	case 15: /* MX: preference, name */
		fixed = 2;
		break;
	case 33: /* SRV: priority, weight, port, name */
		fixed = 6;
		break;
	case DNS_T_CNAME:
	case 2:	 /* NS */
	case 12: /* PTR */
	case 39: /* DNAME */
		break;
	default:
		rr_put16(r, (uint16_t)rr->rdlen);
		rr_put(r, msg + off, rr->rdlen);
		return 0;
	}
	if (rr->rdlen < fixed) {
		*why = "a record's data too short";
		return -1;
	}
	off += fixed;
	if (dns_name_read(msg, len, &off, name, &nl, why) == -1)
		return -1;
	if (off != rr->rdata_off + rr->rdlen) {
		*why = "a record's data that is not what its type holds";
		return -1;
	}
	at = r->len;
	rr_put16(r, 0);
	rr_put(r, msg + rr->rdata_off, fixed);
	rr_name(r, name, nl);
	if (!r->full) { /* its length, now known */
		size_t dl = r->len - at - 2;

		r->buf[at] = (uint8_t)(dl >> 8);
		r->buf[at + 1] = (uint8_t)dl;
	}
	return 0;
}

/* The TTL a negative answer is kept: its SOA's (the smaller of TTL and MINIMUM). */
static uint32_t negative_ttl(const uint8_t *msg, size_t len, size_t off, unsigned nscount,
			     uint32_t cap)
{
	for (unsigned i = 0; i < nscount; i++) {
		struct dns_rr rr;
		const char *why;

		if (dns_rr_read(msg, len, &off, &rr, &why) == -1)
			break;
		if (rr.type == DNS_T_SOA && rr.rdlen >= 20) {
			const uint8_t *m = msg + rr.rdata_off + rr.rdlen - 4;
			uint32_t min = (uint32_t)m[0] << 24 | (uint32_t)m[1] << 16 |
				       (uint32_t)m[2] << 8 | m[3];
			uint32_t t = rr.ttl < min ? rr.ttl : min;

			return t < cap ? t : cap;
		}
	}
	return cap;
}

/* The records of the chain from f's name, CNAMEs first, into r. Returns 0 or -1 with *why. */
static int chain_records(const struct fetch *f, const uint8_t *msg, size_t len, size_t *off,
			 unsigned ancount, struct rrs *r, const char **why)
{
	static struct dns_rr rrs[ANSWER_RRS];
	bool used[ANSWER_RRS] = { false };
	char names[CHAIN_MAX + 1][DNS_NAME_MAX + 1];
	size_t nnames = 1, n = 0;
	bool more = true;

	if (ancount > ANSWER_RRS) {
		*why = "more answer records than sluice-dns reads";
		return -1;
	}
	for (; n < ancount; n++)
		if (dns_rr_read(msg, len, off, &rrs[n], why) == -1)
			return -1;
	memcpy(names[0], f->name, f->name_len + 1);
	r->min_ttl = UINT32_MAX;
	while (more) {
		more = false;
		for (size_t i = 0; i < n; i++) {
			const struct dns_rr *rr = &rrs[i];
			bool ours = false;

			for (size_t k = 0; k < nnames && !ours; k++)
				ours = strcmp(rr->name, names[k]) == 0;
			if (used[i] || !ours || rr->class != DNS_CLASS_IN)
				continue;
			if (rr->type == DNS_T_CNAME && f->qtype != DNS_T_CNAME) {
				size_t tl;

				if (nnames == CHAIN_MAX + 1) {
					*why = "a CNAME chain longer than sluice-dns follows";
					return -1;
				}
				if (dns_rr_cname(msg, len, rr, names[nnames], &tl, why) == -1)
					return -1;
				nnames++;
				more = true;
			} else if (rr->type != f->qtype) {
				continue;
			}
			used[i] = true;
			rr_name(r, rr->name, rr->name_len);
			rr_put16(r, rr->type);
			rr_put16(r, DNS_CLASS_IN);
			rr_put16(r, 0); /* the TTL: written as it counts down */
			rr_put16(r, 0);
			if (rr_data(r, msg, len, rr, why) == -1)
				return -1;
			r->n++;
			if (rr->ttl < r->min_ttl)
				r->min_ttl = rr->ttl;
		}
	}
	if (r->full) {
		*why = "an answer too large to keep";
		return -1;
	}
	return 0;
}

const struct cache_entry *cache_put(struct dnsd *d, const struct fetch *f, const uint8_t *msg,
				    size_t len, const char **why)
{
	static struct rrs r;
	const struct config *cf = d->config;
	struct cache *c = C(d);
	struct dns_header h;
	struct cache_entry *e, **bucket;
	char qname[DNS_NAME_MAX + 1];
	size_t off = DNS_HEADER_LEN, nl;
	uint16_t qtype, qclass;
	uint32_t ttl;
	int rcode;

	if (dns_header_read(msg, len, &h) == -1 || !(h.flags & DNS_F_QR) ||
	    DNS_F_OPCODE(h.flags) != 0 || h.qdcount != 1) {
		*why = "not an answer to one question";
		return NULL;
	}
	rcode = (int)DNS_F_RCODE(h.flags);
	if (rcode != RCODE_NOERROR && rcode != RCODE_NXDOMAIN) {
		*why = rcode == RCODE_SERVFAIL ? "the upstream answered SERVFAIL"
					       : "the upstream refused or failed the query";
		return NULL;
	}
	if (dns_name_read(msg, len, &off, qname, &nl, why) == -1)
		return NULL;
	if (off + 4 > len) {
		*why = "the question runs past the message";
		return NULL;
	}
	qtype = (uint16_t)(msg[off] << 8 | msg[off + 1]);
	qclass = (uint16_t)(msg[off + 2] << 8 | msg[off + 3]);
	off += 4;
	if (nl != f->name_len || memcmp(qname, f->name, nl) != 0 || qtype != f->qtype ||
	    qclass != DNS_CLASS_IN) {
		*why = "an answer to another question";
		return NULL;
	}
	memset(&r, 0, offsetof(struct rrs, buf));
	r.len = 0;
	r.n = 0;
	r.full = false;
	if (chain_records(f, msg, len, &off, h.ancount, &r, why) == -1)
		return NULL;
	if (r.n == 0) /* NXDOMAIN, or NODATA */
		ttl = negative_ttl(msg, len, off, h.nscount, cf->dns_negative_ttl);
	else
		ttl = r.min_ttl < cf->dns_min_ttl ? cf->dns_min_ttl
		      : r.min_ttl > cf->dns_max_ttl ? cf->dns_max_ttl : r.min_ttl;
	e = malloc(sizeof(*e) + f->name_len + 1 + r.len);
	if (e == NULL) {
		*why = "out of memory";
		return NULL;
	}
	e->hash = f->hash;
	e->qtype = f->qtype;
	e->rcode = (uint8_t)rcode;
	e->ttl = ttl;
	e->expires_ms = loop_now(d->loop) + (uint64_t)ttl * 1000;
	e->ancount = r.n;
	e->name_len = (uint16_t)f->name_len;
	e->rr_len = r.len;
	memcpy(e->data, f->name, f->name_len + 1);
	memcpy(e->data + f->name_len + 1, r.buf, r.len);
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
	return e;
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
	return f;
}

void fetch_free(struct dnsd *d, struct fetch *f)
{
	struct fetch **pp = &C(d)->fetches[f->hash % FETCH_BUCKETS];

	while (*pp != NULL && *pp != f)
		pp = &(*pp)->hnext;
	if (*pp == f)
		*pp = f->hnext;
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

void cache_key_init(struct dnsd *d)
{
	hash_cache = C(d);
}
