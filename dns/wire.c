/*
 * wire.c: the DNS messages sluice-dns writes: answers from the cache
 * (filtered through the deny list, TTLs counting down), answers with no
 * records (NXDOMAIN, NODATA, SERVFAIL, each with an Extended DNS Error
 * when the client speaks EDNS), FORMERR, and its own queries upstream.
 *
 * Names are written uncompressed; the question is echoed as the client
 * wrote it. A UDP answer over the client's size (at most DNS_UDP_MAX) is
 * cut to its question with TC set, so the client asks again over TCP.
 * Reading messages is lib/dns_msg.c's.
 */
#include "dns.h"
#include "dns_answer.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#define OPT_LEN 11 /* root name, type, class, ttl, rdlen */
#define EDE_OPTION 15
#define EDE_TEXT_MAX 200

static void put32(struct dns_out *o, uint32_t v)
{
	dns_out_u16(o, (uint16_t)(v >> 16));
	dns_out_u16(o, (uint16_t)v);
}

static void put_header(struct dns_out *o, uint16_t id, uint16_t flags, uint16_t qd, uint16_t an,
		       uint16_t ar)
{
	dns_out_u16(o, id);
	dns_out_u16(o, flags);
	dns_out_u16(o, qd);
	dns_out_u16(o, an);
	dns_out_u16(o, 0);
	dns_out_u16(o, ar);
}

/* Our OPT record (the upper bits of an extended rcode in it), with an EDE option when ede >= 0. */
static void put_opt_rcode(struct dns_out *o, int rcode, int ede, const char *text)
{
	size_t tl = text != NULL ? strnlen(text, EDE_TEXT_MAX) : 0;

	dns_out_put(o, "", 1);
	dns_out_u16(o, DNS_T_OPT);
	dns_out_u16(o, DNS_UDP_MAX);
	put32(o, (uint32_t)(rcode >> 4) << 24);
	if (ede < 0) {
		dns_out_u16(o, 0);
		return;
	}
	dns_out_u16(o, (uint16_t)(4 + 2 + tl));
	dns_out_u16(o, EDE_OPTION);
	dns_out_u16(o, (uint16_t)(2 + tl));
	dns_out_u16(o, (uint16_t)ede);
	dns_out_put(o, text, tl);
}

static void put_opt(struct dns_out *o, int ede, const char *text)
{
	put_opt_rcode(o, 0, ede, text);
}

/* QR, the client's RD, RA, and rcode. */
static uint16_t answer_flags(const struct query *qr, int rcode)
{
	return (uint16_t)(DNS_F_QR | (qr->q.h.flags & 0x0100u) | 0x0080u | ((unsigned)rcode & 0xfu));
}

/* How much an answer to qr may hold: the client's UDP size within ours; TCP's whole. */
static size_t answer_room(const struct query *qr, size_t max)
{
	size_t room = DNS_MSG_MAX;

	if (qr->to.udp_fd >= 0)
		room = qr->q.edns ? (qr->q.udp_size < DNS_UDP_MAX ? qr->q.udp_size : DNS_UDP_MAX)
				  : 512;
	return room < max ? room : max;
}

/* Header and question with TC: the answer did not fit a UDP message. */
static size_t truncated(const struct query *qr, int rcode, uint8_t *buf, size_t max)
{
	struct dns_out o = { buf, 0, max, false };

	put_header(&o, qr->q.h.id, answer_flags(qr, rcode) | DNS_F_TC, 1, 0, qr->q.edns);
	dns_out_put(&o, qr->question, qr->question_len);
	if (qr->q.edns)
		put_opt(&o, -1, NULL);
	return o.full ? 0 : o.len;
}

size_t wire_empty(const struct query *qr, int rcode, int ede, const char *text, uint8_t *buf,
		  size_t max)
{
	struct dns_out o = { buf, 0, answer_room(qr, max), false };

	put_header(&o, qr->q.h.id, answer_flags(qr, rcode), 1, 0, qr->q.edns);
	dns_out_put(&o, qr->question, qr->question_len);
	if (qr->q.edns)
		put_opt_rcode(&o, rcode, ede, text);
	if (o.full)
		return truncated(qr, rcode, buf, max);
	return o.len;
}

size_t wire_formerr(const uint8_t *msg, size_t len, uint8_t *buf, size_t max)
{
	struct dns_out o = { buf, 0, max, false };
	struct dns_header h;

	if (dns_header_read(msg, len, &h) == -1 || (h.flags & DNS_F_QR))
		return 0; /* nothing to answer: no id, or a response */
	put_header(&o, h.id,
		   (uint16_t)(DNS_F_QR | (h.flags & 0x7900u) |
			      (DNS_F_OPCODE(h.flags) != 0 ? RCODE_NOTIMP : RCODE_FORMERR)),
		   0, 0, 0);
	return o.full ? 0 : o.len;
}

size_t wire_query(uint16_t id, const char *name, size_t name_len, uint16_t qtype, uint8_t *buf,
		  size_t max)
{
	struct dns_out o = { buf, 0, max, false };

	put_header(&o, id, 0x0100u /* RD */, 1, 0, 1);
	dns_out_name(&o, name, name_len);
	dns_out_u16(&o, qtype);
	dns_out_u16(&o, DNS_CLASS_IN);
	put_opt(&o, -1, NULL);
	return o.full ? 0 : o.len;
}

/* The wire length of the uncompressed name at p (an entry's own bytes). */
static size_t name_span(const uint8_t *p, size_t n)
{
	size_t i = 0;

	while (i < n && p[i] != 0)
		i += 1 + p[i];
	return i + 1;
}

size_t wire_answer(struct dnsd *d, struct query *qr, const struct cache_entry *e, uint8_t *buf,
		   size_t max, unsigned *kept, unsigned *removed)
{
	struct dns_out o = { buf, 0, answer_room(qr, max), false };
	const uint8_t *rr = e->data + e->name_len + 1, *end = rr + e->rr_len;
	uint64_t now = loop_now(d->loop);
	uint32_t left = e->expires_ms > now ? (uint32_t)((e->expires_ms - now + 999) / 1000) : 0;
	unsigned addrs = 0;
	uint16_t an = 0;

	*kept = *removed = 0;
	put_header(&o, qr->q.h.id, answer_flags(qr, e->rcode), 1, 0, qr->q.edns);
	dns_out_put(&o, qr->question, qr->question_len);
	if (left > e->ttl)
		left = e->ttl;
	while (rr < end) {
		size_t nl = name_span(rr, (size_t)(end - rr));
		const uint8_t *f = rr + nl; /* type, class, ttl, rdlen */
		uint16_t type = (uint16_t)(f[0] << 8 | f[1]);
		uint16_t rdlen = (uint16_t)(f[8] << 8 | f[9]);
		const uint8_t *rdata = f + 10;

		if (qr->filter && (type == DNS_T_A || type == DNS_T_AAAA)) {
			if (!judge_addr(d, &qr->host, type == DNS_T_A ? AF_INET : AF_INET6, rdata)) {
				(*removed)++;
				rr = rdata + rdlen;
				continue;
			}
			addrs++;
		}
		dns_out_put(&o, rr, nl + 4);
		put32(&o, left);
		dns_out_put(&o, f + 8, 2 + (size_t)rdlen);
		an++;
		if (type == DNS_T_A || type == DNS_T_AAAA || type == qr->q.qtype)
			(*kept)++;
		rr = rdata + rdlen;
	}
	if (*removed > 0 && addrs == 0) {
		qr->decision = "refuse";
		qr->reason = "denied-ip";
		snprintf(qr->detail, sizeof(qr->detail),
			 "every address of %.100s is in a denied range", qr->q.name);
		return wire_empty(qr, RCODE_NXDOMAIN, DNS_EDE_BLOCKED,
				  "sluice: the name's addresses are in denied ranges "
				  "(allow-private HOST CIDR in the config allows one)",
				  buf, max);
	}
	if (qr->q.edns)
		put_opt(&o, -1, NULL);
	if (o.full) {
		*kept = 0; /* none of them went */
		return truncated(qr, e->rcode, buf, max);
	}
	buf[6] = (uint8_t)(an >> 8);
	buf[7] = (uint8_t)an;
	return o.len;
}
