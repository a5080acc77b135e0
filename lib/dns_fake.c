/*
 * dns_fake.c: reading an answer to give a fake address, and writing the
 * replacement (dns_fake.h). Reads through dns_msg.c's bounded readers;
 * writes only into the caller's buffer. Does not judge the name: that an
 * answer resolves is sluice-dns's judgement, already made.
 */
#include "dns_fake.h"

#include <stdbool.h>
#include <string.h>

int dns_fake_match(const uint8_t *msg, size_t len, struct dns_fake_q *q)
{
	struct dns_header h;
	const char *why;
	size_t off = DNS_HEADER_LEN, raw = DNS_HEADER_LEN;
	unsigned as = 0;

	if (dns_header_read(msg, len, &h) == -1 || !(h.flags & DNS_F_QR) ||
	    DNS_F_OPCODE(h.flags) != 0 || DNS_F_RCODE(h.flags) != 0 || (h.flags & DNS_F_TC) ||
	    h.qdcount != 1)
		return 0;
	/* the question's name as labels alone: its bytes are copied as they came */
	for (;;) {
		if (raw >= len || (msg[raw] & 0xc0) != 0)
			return 0;
		if (msg[raw] == 0)
			break;
		raw += 1 + (size_t)msg[raw];
	}
	if (dns_name_read(msg, len, &off, q->name, &q->name_len, &why) == -1 || off != raw + 1 ||
	    q->name_len == 0 || len - off < 4)
		return 0;
	q->qtype = (uint16_t)(msg[off] << 8 | msg[off + 1]);
	if ((msg[off + 2] << 8 | msg[off + 3]) != DNS_CLASS_IN ||
	    (q->qtype != DNS_T_A && q->qtype != DNS_T_AAAA))
		return 0;
	q->qend = off + 4;
	off = q->qend;
	for (unsigned i = 0; i < h.ancount; i++) {
		struct dns_rr rr;

		if (dns_rr_read(msg, len, &off, &rr, &why) == -1)
			return 0;
		if (rr.type == DNS_T_A && rr.class == DNS_CLASS_IN && rr.rdlen == 4)
			as++;
	}
	return q->qtype == DNS_T_AAAA || as > 0;
}

long dns_fake_write(const uint8_t *msg, const struct dns_fake_q *q, const uint8_t addr[4],
		    uint32_t ttl, uint8_t *out, size_t max)
{
	static const uint8_t rr_head[] = { 0xc0, 0x0c, 0, DNS_T_A, 0, DNS_CLASS_IN };
	bool a = q->qtype == DNS_T_A;
	size_t n = q->qend + (a ? sizeof(rr_head) + 4 + 2 + 4 : 0);

	if (n > max)
		return -1;
	memcpy(out, msg, q->qend);
	out[3] &= 0xf0; /* rcode NOERROR; id, QR, opcode, AA, RD, RA as they came */
	out[4] = 0, out[5] = 1;          /* qdcount */
	out[6] = 0, out[7] = a ? 1 : 0;  /* ancount */
	memset(out + 8, 0, 4);           /* nscount, arcount */
	if (a) {
		uint8_t *p = out + q->qend;

		memcpy(p, rr_head, sizeof(rr_head));
		p += sizeof(rr_head);
		*p++ = (uint8_t)(ttl >> 24), *p++ = (uint8_t)(ttl >> 16);
		*p++ = (uint8_t)(ttl >> 8), *p++ = (uint8_t)ttl;
		*p++ = 0, *p++ = 4;
		memcpy(p, addr, 4);
	}
	return (long)n;
}
