/*
 * dnstag.c: the asker tag of DNS queries (dnstag.h): added by
 * sluice-forward, verified and stripped by sluice-dns. A query is read
 * with dns_msg.c's rules, its OPT record's options walked through a
 * bounds-checked cursor, and the message written again into the caller's
 * buffer; nothing is allocated. This file does not know principals or
 * budgets: it says who a tag names and whether to believe it.
 */
#include "dnstag.h"

#include <arpa/inet.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <string.h>

#include "dns_msg.h"

#define TAG_CONTEXT "sluice-dns-tag-1"
#define TAG_MAC 32
#define TAG_FIXED 15 /* version, flags, kid, time, family */

/* A query as read: its question's end and, with EDNS, its OPT record's fields. */
struct scan {
	struct dns_query q;
	uint16_t opt_class;
	uint32_t opt_ttl;
	size_t rdata_off, rdlen;
};

/* msg read as a query whose OPT options tile its data. Returns 0 or -1. */
static int scan(const uint8_t *msg, size_t len, struct scan *s)
{
	const char *why;
	struct dns_rr rr;
	size_t off, end;

	if (dns_query_read(msg, len, &s->q, &why) == -1)
		return -1;
	if (!s->q.edns)
		return 0;
	off = s->q.question_end;
	if (dns_rr_read(msg, len, &off, &rr, &why) == -1)
		return -1;
	s->opt_class = rr.class;
	s->opt_ttl = rr.ttl;
	s->rdata_off = rr.rdata_off;
	s->rdlen = rr.rdlen;
	for (off = rr.rdata_off, end = rr.rdata_off + rr.rdlen; off < end;) {
		size_t olen;

		if (end - off < 4)
			return -1;
		olen = (size_t)msg[off + 2] << 8 | msg[off + 3];
		if (olen > end - off - 4)
			return -1;
		off += 4 + olen;
	}
	return 0;
}

/* A writer into a caller's buffer: a write past max marks it bad and writes nothing. */
struct writer {
	uint8_t *p;
	size_t len, max;
	bool bad;
};

static void put(struct writer *w, const void *b, size_t n)
{
	if (w->bad || n > w->max - w->len) {
		w->bad = true;
		return;
	}
	if (n == 0)
		return;
	memcpy(w->p + w->len, b, n);
	w->len += n;
}

static void put16(struct writer *w, uint16_t v)
{
	uint8_t b[2] = { (uint8_t)(v >> 8), (uint8_t)v };

	put(w, b, 2);
}

static void put32(struct writer *w, uint32_t v)
{
	put16(w, (uint16_t)(v >> 16));
	put16(w, (uint16_t)v);
}

static bool net_ok(const char *net, size_t n)
{
	if (n == 0 || n > STAMP_NET_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = net[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-'))
			return false;
	}
	return true;
}

/* t's data up to its MAC into d (DNSTAG_DATA_MAX): its length, or 0 when a field is invalid. */
static size_t tag_encode(const struct dnstag *t, uint8_t *d)
{
	size_t n = 0, netlen = strnlen(t->net, sizeof(t->net));
	uint8_t a[16];

	d[n++] = DNSTAG_VERSION;
	d[n++] = t->flags;
	for (int i = 3; i >= 0; i--)
		d[n++] = (uint8_t)(t->kid >> (8 * i));
	for (int i = 7; i >= 0; i--)
		d[n++] = (uint8_t)(t->time >> (8 * i));
	if (inet_pton(AF_INET, t->src, a) == 1) {
		d[n++] = 4;
		memcpy(d + n, a, 4);
		n += 4;
	} else if (inet_pton(AF_INET6, t->src, a) == 1) {
		d[n++] = 6;
		memcpy(d + n, a, 16);
		n += 16;
	} else {
		return 0;
	}
	if (!net_ok(t->net, netlen))
		return 0;
	d[n++] = (uint8_t)netlen;
	memcpy(d + n, t->net, netlen);
	return n + netlen;
}

/* An option's data d[0..n) into t; *signed_len the bytes before the MAC. Returns 0 or -1. */
static int tag_decode(const uint8_t *d, size_t n, struct dnstag *t, size_t *signed_len)
{
	size_t off = TAG_FIXED, alen, netlen;

	memset(t, 0, sizeof(*t));
	if (n < TAG_FIXED || d[0] != DNSTAG_VERSION)
		return -1;
	t->flags = d[1];
	for (int i = 0; i < 4; i++)
		t->kid = t->kid << 8 | d[2 + i];
	for (int i = 0; i < 8; i++)
		t->time = t->time << 8 | d[6 + i];
	alen = d[14] == 4 ? 4 : d[14] == 6 ? 16 : 0;
	if (alen == 0 || n - off < alen + 1)
		return -1;
	if (inet_ntop(alen == 4 ? AF_INET : AF_INET6, d + off, t->src, sizeof(t->src)) == NULL)
		return -1;
	off += alen;
	netlen = d[off++];
	if (netlen > n - off || n - off - netlen != TAG_MAC || !net_ok((const char *)d + off, netlen))
		return -1;
	memcpy(t->net, d + off, netlen);
	t->net[netlen] = '\0';
	*signed_len = off + netlen;
	return 0;
}

/*
 * The MAC of a tag: data[0..dlen) (before its MAC), then the id and the
 * question of the query in msg (header and question, question_end long).
 */
static bool tag_mac(const struct stamp_key *key, const uint8_t *data, size_t dlen,
		    const uint8_t *msg, size_t question_end, uint8_t mac[TAG_MAC])
{
	uint8_t buf[sizeof(TAG_CONTEXT) + DNSTAG_DATA_MAX + 2 + 260];
	size_t qlen = question_end - DNS_HEADER_LEN, n = sizeof(TAG_CONTEXT) - 1;
	unsigned int mlen = 0;
	bool ok;

	if (dlen > DNSTAG_DATA_MAX - TAG_MAC || qlen > 260)
		return false;
	memcpy(buf, TAG_CONTEXT, n);
	memcpy(buf + n, data, dlen);
	n += dlen;
	memcpy(buf + n, msg, 2); /* the id */
	n += 2;
	memcpy(buf + n, msg + DNS_HEADER_LEN, qlen);
	n += qlen;
	ok = HMAC(EVP_sha256(), key->key, (int)sizeof(key->key), buf, n, mac, &mlen) != NULL &&
	     mlen == TAG_MAC;
	OPENSSL_cleanse(buf, sizeof(buf));
	return ok;
}

/*
 * Write msg's header (arcount set) and question, then its OPT record
 * (class and ttl given) with every option but the tags, and extra[0..elen)
 * after them; opt false writes no OPT record. Counts the tags in *ntags
 * and points *tag at the first one's data. Returns the length, or -1.
 */
static long rewrite(const uint8_t *msg, const struct scan *s, bool opt, uint16_t class,
		    uint32_t ttl, const uint8_t *extra, size_t elen, uint8_t *out, size_t outmax,
		    unsigned *ntags, const uint8_t **tag, size_t *tag_len)
{
	struct writer w = { .p = out, .max = outmax };
	size_t rdlen_at, off, end;

	*ntags = 0;
	put(&w, msg, DNS_HEADER_LEN - 2);
	put16(&w, opt ? 1 : 0);
	put(&w, msg + DNS_HEADER_LEN, s->q.question_end - DNS_HEADER_LEN);
	if (s->q.edns) {
		for (off = s->rdata_off, end = s->rdata_off + s->rdlen; off < end;) {
			uint16_t code = (uint16_t)(msg[off] << 8 | msg[off + 1]);
			size_t olen = (size_t)msg[off + 2] << 8 | msg[off + 3];

			if (code == DNSTAG_OPTION && (*ntags)++ == 0) {
				*tag = msg + off + 4;
				*tag_len = olen;
			}
			off += 4 + olen;
		}
	}
	if (!opt)
		return w.bad ? -1 : (long)w.len;
	put(&w, "", 1); /* the root */
	put16(&w, DNS_T_OPT);
	put16(&w, class);
	put32(&w, ttl);
	rdlen_at = w.len;
	put16(&w, 0);
	if (s->q.edns) {
		for (off = s->rdata_off, end = s->rdata_off + s->rdlen; off < end;) {
			uint16_t code = (uint16_t)(msg[off] << 8 | msg[off + 1]);
			size_t olen = (size_t)msg[off + 2] << 8 | msg[off + 3];

			if (code != DNSTAG_OPTION)
				put(&w, msg + off, 4 + olen);
			off += 4 + olen;
		}
	}
	put(&w, extra, elen);
	if (w.bad || w.len - rdlen_at - 2 > 65535)
		return -1;
	out[rdlen_at] = (uint8_t)((w.len - rdlen_at - 2) >> 8);
	out[rdlen_at + 1] = (uint8_t)(w.len - rdlen_at - 2);
	return (long)w.len;
}

long dnstag_add(const uint8_t *msg, size_t len, struct dnstag *t, const struct stamp_key *key,
		uint8_t *out, size_t outmax)
{
	uint8_t opt[4 + DNSTAG_DATA_MAX];
	const uint8_t *first = NULL;
	size_t dlen, first_len = 0;
	unsigned ntags;
	struct scan s;
	long n;

	if (scan(msg, len, &s) == -1)
		return -1;
	t->flags = s.q.edns ? 0 : DNSTAG_F_ADDED;
	t->kid = key->kid;
	dlen = tag_encode(t, opt + 4);
	if (dlen == 0 || !tag_mac(key, opt + 4, dlen, msg, s.q.question_end, opt + 4 + dlen))
		return -1;
	dlen += TAG_MAC;
	opt[0] = DNSTAG_OPTION >> 8;
	opt[1] = DNSTAG_OPTION & 0xff;
	opt[2] = (uint8_t)(dlen >> 8);
	opt[3] = (uint8_t)dlen;
	n = rewrite(msg, &s, true, s.q.edns ? s.opt_class : 512, s.q.edns ? s.opt_ttl : 0, opt,
		    4 + dlen, out, outmax, &ntags, &first, &first_len);
	OPENSSL_cleanse(opt, sizeof(opt));
	return n;
}

/* Whether t (data d[0..signed_len), MAC after it) verifies for the query in msg. */
static bool tag_believed(const struct dnstag *t, const uint8_t *d, size_t signed_len,
			 const uint8_t *msg, size_t question_end, const struct stamp_key *keys,
			 size_t nkeys, time_t now)
{
	uint8_t mac[TAG_MAC];
	bool ok = false;

	if (now < 0 || (t->time > (uint64_t)now ? t->time - (uint64_t)now
						 : (uint64_t)now - t->time) > DNSTAG_WINDOW)
		return false;
	for (size_t i = 0; i < nkeys && !ok; i++) {
		if (keys[i].kid != t->kid || (keys[i].expires != 0 && keys[i].expires <= now))
			continue;
		if (tag_mac(&keys[i], d, signed_len, msg, question_end, mac) &&
		    CRYPTO_memcmp(mac, d + signed_len, TAG_MAC) == 0)
			ok = true;
	}
	OPENSSL_cleanse(mac, sizeof(mac));
	return ok;
}

long dnstag_take(const uint8_t *msg, size_t len, uint8_t *out, size_t outmax,
		 const struct stamp_key *keys, size_t nkeys, time_t now, struct dnstag *t,
		 bool *believed)
{
	const uint8_t *d = NULL;
	size_t dlen = 0, signed_len;
	unsigned ntags;
	struct scan s;
	long n;

	*believed = false;
	memset(t, 0, sizeof(*t));
	if (scan(msg, len, &s) == -1)
		return -1;
	n = rewrite(msg, &s, s.q.edns, s.opt_class, s.opt_ttl, NULL, 0, out, outmax, &ntags, &d,
		    &dlen);
	if (n == -1 || ntags != 1)
		return n;
	if (tag_decode(d, dlen, t, &signed_len) == -1 ||
	    !tag_believed(t, d, signed_len, msg, s.q.question_end, keys, nkeys, now)) {
		memset(t, 0, sizeof(*t));
		return n;
	}
	*believed = true;
	if (t->flags & DNSTAG_F_ADDED) { /* the client spoke no EDNS: as it sent it */
		out[DNS_HEADER_LEN - 1] = 0;
		out[DNS_HEADER_LEN - 2] = 0;
		n = (long)s.q.question_end;
	}
	return n;
}
