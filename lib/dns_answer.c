/*
 * dns_answer.c: an upstream's answer read into the records kept
 * (dns_answer.h), and the writer sluice-dns's messages share. Every write
 * checks the room first; a record that would not fit fails the whole answer.
 */
#include "dns_answer.h"

#include <string.h>

struct out {
	struct dns_out w; /* over a->rrs */
	struct dns_answer *a;
};

void dns_out_put(struct dns_out *o, const void *p, size_t n)
{
	if (o->full || n > o->max - o->len) {
		o->full = true;
		return;
	}
	memcpy(o->buf + o->len, p, n);
	o->len += n;
}

void dns_out_u16(struct dns_out *o, uint16_t v)
{
	uint8_t b[2] = { (uint8_t)(v >> 8), (uint8_t)v };

	dns_out_put(o, b, 2);
}

size_t dns_name_write(const char *name, size_t len, uint8_t *out, size_t room)
{
	size_t i = 0, o = 0;

	while (i < len) {
		const char *dot = memchr(name + i, '.', len - i);
		size_t l = dot != NULL ? (size_t)(dot - (name + i)) : len - i;

		if (l == 0 || l > 63 || o + 1 + l > room)
			return 0;
		out[o++] = (uint8_t)l;
		memcpy(out + o, name + i, l);
		o += l;
		i += l + 1;
	}
	if (o + 1 > room)
		return 0;
	out[o++] = 0;
	return o;
}

void dns_out_name(struct dns_out *o, const char *name, size_t len)
{
	size_t n = o->full ? 0 : dns_name_write(name, len, o->buf + o->len, o->max - o->len);

	if (n == 0)
		o->full = true;
	o->len += n;
}

/* One record's data as it will be written (dns_answer.h). Returns 0, or -1 with *why. */
static int put_rdata(struct out *o, const uint8_t *msg, size_t len, const struct dns_rr *rr,
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
		break;
	case 15: /* MX: preference, name */
		fixed = 2;
		goto named;
	case 33: /* SRV: priority, weight, port, name */
		fixed = 6;
		goto named;
	case DNS_T_CNAME:
	case 2:	 /* NS */
	case 12: /* PTR */
	case 39: /* DNAME */
		goto named;
	default:
		break;
	}
	dns_out_u16(&o->w, (uint16_t)rr->rdlen);
	dns_out_put(&o->w, msg + off, rr->rdlen);
	return 0;
named:
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
	at = o->w.len;
	dns_out_u16(&o->w, 0);
	dns_out_put(&o->w, msg + rr->rdata_off, fixed);
	dns_out_name(&o->w, name, nl);
	if (!o->w.full) { /* its length, now known */
		size_t dl = o->w.len - at - 2;

		o->w.buf[at] = (uint8_t)(dl >> 8);
		o->w.buf[at + 1] = (uint8_t)dl;
	}
	return 0;
}

/* The authority SOA's negative TTL, or UINT32_MAX. */
static uint32_t negative_ttl(const uint8_t *msg, size_t len, size_t off, unsigned nscount)
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

			return rr.ttl < min ? rr.ttl : min;
		}
	}
	return UINT32_MAX;
}

/* The records of the chain from name, CNAMEs first (dns_answer.h). Returns 0 or -1. */
static int chain(const char *qname, size_t qlen, uint16_t qtype, const uint8_t *msg,
		 size_t len, size_t *off, unsigned ancount, struct out *o, const char **why)
{
	struct dns_rr rrs[DNS_ANSWER_RRS];
	bool used[DNS_ANSWER_RRS] = { false };
	char names[DNS_CHAIN_MAX + 1][DNS_NAME_MAX + 1];
	size_t nnames = 1, n;
	bool more = true;

	if (ancount > DNS_ANSWER_RRS) {
		*why = "more answer records than are read";
		return -1;
	}
	for (n = 0; n < ancount; n++)
		if (dns_rr_read(msg, len, off, &rrs[n], why) == -1)
			return -1;
	memcpy(names[0], qname, qlen);
	names[0][qlen] = '\0';
	while (more) {
		more = false;
		for (size_t i = 0; i < n; i++) {
			const struct dns_rr *rr = &rrs[i];
			bool ours = false;

			for (size_t k = 0; k < nnames && !ours; k++)
				ours = strcmp(rr->name, names[k]) == 0;
			if (used[i] || !ours || rr->class != DNS_CLASS_IN)
				continue;
			if (rr->type == DNS_T_CNAME && qtype != DNS_T_CNAME) {
				size_t tl;

				if (nnames == DNS_CHAIN_MAX + 1) {
					*why = "a CNAME chain longer than is followed";
					return -1;
				}
				if (dns_rr_cname(msg, len, rr, names[nnames], &tl, why) == -1)
					return -1;
				nnames++;
				more = true;
			} else if (rr->type != qtype) {
				continue;
			}
			used[i] = true;
			dns_out_name(&o->w, rr->name, rr->name_len);
			dns_out_u16(&o->w, rr->type);
			dns_out_u16(&o->w, DNS_CLASS_IN);
			dns_out_u16(&o->w, 0); /* the TTL: the writer's, as it counts down */
			dns_out_u16(&o->w, 0);
			if (put_rdata(o, msg, len, rr, why) == -1)
				return -1;
			o->a->n++;
			/* RFC 2181 8: a TTL with its top bit set is read as zero */
			if ((rr->ttl > 0x7fffffffu ? 0 : rr->ttl) < o->a->min_ttl)
				o->a->min_ttl = rr->ttl > 0x7fffffffu ? 0 : rr->ttl;
		}
	}
	if (o->w.full) {
		*why = "an answer too large to keep";
		return -1;
	}
	return 0;
}

int dns_answer_read(const uint8_t *msg, size_t len, const char *name, size_t name_len,
		    uint16_t qtype, struct dns_answer *a, const char **why)
{
	struct out o = { { a->rrs, 0, sizeof(a->rrs), false }, a };
	struct dns_header h;
	char qname[DNS_NAME_MAX + 1];
	size_t off = DNS_HEADER_LEN, nl;
	uint16_t t, c;

	a->rcode = 0;
	a->n = 0;
	a->len = 0;
	a->min_ttl = UINT32_MAX;
	a->soa_ttl = UINT32_MAX;
	if (dns_header_read(msg, len, &h) == -1 || !(h.flags & DNS_F_QR) ||
	    DNS_F_OPCODE(h.flags) != 0 || h.qdcount != 1) {
		*why = "not an answer to one question";
		return DNS_ANSWER_MALFORMED;
	}
	if (dns_name_read(msg, len, &off, qname, &nl, why) == -1)
		return DNS_ANSWER_MALFORMED;
	if (off > len - 4 || len < 4) {
		*why = "the question runs past the message";
		return DNS_ANSWER_MALFORMED;
	}
	t = (uint16_t)(msg[off] << 8 | msg[off + 1]);
	c = (uint16_t)(msg[off + 2] << 8 | msg[off + 3]);
	off += 4;
	if (nl != name_len || memcmp(qname, name, nl) != 0 || t != qtype || c != DNS_CLASS_IN) {
		*why = "an answer to another question";
		return DNS_ANSWER_MALFORMED;
	}
	a->rcode = (int)DNS_F_RCODE(h.flags);
	if (a->rcode != 0 && a->rcode != 3) {
		*why = a->rcode == 2 ? "the upstream answered SERVFAIL"
				     : "the upstream refused or failed the query";
		return DNS_ANSWER_FAILED;
	}
	if (chain(name, name_len, qtype, msg, len, &off, h.ancount, &o, why) == -1)
		return DNS_ANSWER_MALFORMED;
	a->len = o.w.len;
	a->soa_ttl = negative_ttl(msg, len, off, h.nscount);
	return DNS_ANSWER_OK;
}
