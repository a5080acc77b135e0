/*
 * dns_msg.c: reading DNS messages through a bounds-checked cursor
 * (dns_msg.h). Every read checks the room left first; an offset never
 * passes len.
 */
#include "dns_msg.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "digits.h"

static const struct {
	uint16_t type;
	const char *name;
} type_names[] = {
	{ 1, "A" },	   { 2, "NS" },	     { 5, "CNAME" },   { 6, "SOA" },	{ 10, "NULL" },
	{ 12, "PTR" },	   { 13, "HINFO" },  { 15, "MX" },     { 16, "TXT" },	{ 28, "AAAA" },
	{ 33, "SRV" },	   { 35, "NAPTR" },  { 39, "DNAME" },  { 41, "OPT" },	{ 43, "DS" },
	{ 44, "SSHFP" },   { 46, "RRSIG" },  { 47, "NSEC" },   { 48, "DNSKEY" }, { 50, "NSEC3" },
	{ 52, "TLSA" },	   { 64, "SVCB" },   { 65, "HTTPS" },  { 99, "SPF" },	{ 251, "IXFR" },
	{ 252, "AXFR" },   { 255, "ANY" },   { 256, "URI" },   { 257, "CAA" },
};

const char *dns_type_name(uint16_t type, char *buf)
{
	for (size_t i = 0; i < sizeof(type_names) / sizeof(type_names[0]); i++)
		if (type_names[i].type == type)
			return type_names[i].name;
	snprintf(buf, DNS_TYPE_TEXT_MAX, "TYPE%u", (unsigned)type);
	return buf;
}

int dns_type_parse(const char *s, uint16_t *type)
{
	uint64_t v;

	for (size_t i = 0; i < sizeof(type_names) / sizeof(type_names[0]); i++) {
		if (strcasecmp(type_names[i].name, s) == 0) {
			*type = type_names[i].type;
			return 0;
		}
	}
	if (strncasecmp(s, "TYPE", 4) != 0 || dec_parse(s + 4, strlen(s + 4), 65535, &v) == -1)
		return -1;
	*type = (uint16_t)v;
	return 0;
}

static int u16(const uint8_t *msg, size_t len, size_t *off, uint16_t *v)
{
	if (len < 2 || *off > len - 2)
		return -1;
	*v = (uint16_t)(msg[*off] << 8 | msg[*off + 1]);
	*off += 2;
	return 0;
}

static int u32(const uint8_t *msg, size_t len, size_t *off, uint32_t *v)
{
	uint16_t hi, lo;

	if (u16(msg, len, off, &hi) == -1 || u16(msg, len, off, &lo) == -1)
		return -1;
	*v = (uint32_t)hi << 16 | lo;
	return 0;
}

int dns_header_read(const uint8_t *msg, size_t len, struct dns_header *h)
{
	size_t off = 0;

	return u16(msg, len, &off, &h->id) == -1 || u16(msg, len, &off, &h->flags) == -1 ||
			       u16(msg, len, &off, &h->qdcount) == -1 ||
			       u16(msg, len, &off, &h->ancount) == -1 ||
			       u16(msg, len, &off, &h->nscount) == -1 ||
			       u16(msg, len, &off, &h->arcount) == -1
		       ? -1
		       : 0;
}

static bool label_byte_ok(uint8_t c)
{
	return c > 0x20 && c < 0x7f && c != '.' && c != '\\';
}

int dns_name_read(const uint8_t *msg, size_t len, size_t *off, char *out, size_t *out_len,
		  const char **why)
{
	size_t at = *off, n = 0, wire = 0, jumps = 0;
	bool jumped = false;

	for (;;) {
		uint8_t l;

		if (at >= len) {
			*why = "a name runs past the message";
			return -1;
		}
		l = msg[at];
		if ((l & 0xc0) == 0xc0) {
			size_t to;

			if (at + 1 >= len) {
				*why = "a compression pointer runs past the message";
				return -1;
			}
			to = (size_t)(l & 0x3f) << 8 | msg[at + 1];
			/* only backwards, and only so often: no loop can be made */
			if (to >= at || ++jumps > DNS_PTR_MAX) {
				*why = "a compression pointer that does not point back";
				return -1;
			}
			if (!jumped)
				*off = at + 2;
			jumped = true;
			at = to;
			continue;
		}
		if ((l & 0xc0) != 0) {
			*why = "a label type that is not a length";
			return -1;
		}
		if (l == 0) {
			if (!jumped)
				*off = at + 1;
			break;
		}
		wire += 1 + l;
		if (wire + 1 > 255 || at + 1 + l > len || n + (n > 0) + l > DNS_NAME_MAX) {
			*why = "a name over 255 bytes, or running past the message";
			return -1;
		}
		if (n > 0)
			out[n++] = '.';
		for (size_t i = 0; i < l; i++) {
			uint8_t c = msg[at + 1 + i];

			if (!label_byte_ok(c)) {
				*why = "a label with a byte no host name has";
				return -1;
			}
			out[n++] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
		}
		at += 1 + l;
	}
	out[n] = '\0';
	*out_len = n;
	return 0;
}

int dns_rr_read(const uint8_t *msg, size_t len, size_t *off, struct dns_rr *rr, const char **why)
{
	uint16_t rdlen;

	if (dns_name_read(msg, len, off, rr->name, &rr->name_len, why) == -1)
		return -1;
	if (u16(msg, len, off, &rr->type) == -1 || u16(msg, len, off, &rr->class) == -1 ||
	    u32(msg, len, off, &rr->ttl) == -1 || u16(msg, len, off, &rdlen) == -1 ||
	    rdlen > len - *off) {
		*why = "a record runs past the message";
		return -1;
	}
	rr->rdata_off = *off;
	rr->rdlen = rdlen;
	*off += rdlen;
	return 0;
}

int dns_questions_skip(const uint8_t *msg, size_t len, const struct dns_header *h, size_t *off,
		       const char **why)
{
	char name[DNS_NAME_MAX + 1];
	size_t n;
	uint16_t t, c;

	*off = DNS_HEADER_LEN;
	for (unsigned i = 0; i < h->qdcount; i++) {
		if (dns_name_read(msg, len, off, name, &n, why) == -1)
			return -1;
		if (u16(msg, len, off, &t) == -1 || u16(msg, len, off, &c) == -1) {
			*why = "a question runs past the message";
			return -1;
		}
	}
	return 0;
}

int dns_query_read(const uint8_t *msg, size_t len, struct dns_query *q, const char **why)
{
	size_t off = DNS_HEADER_LEN;

	memset(q, 0, sizeof(*q));
	q->udp_size = 512;
	if (dns_header_read(msg, len, &q->h) == -1) {
		*why = "shorter than a header";
		return -1;
	}
	if (q->h.flags & DNS_F_QR) {
		*why = "a response, not a query";
		return -1;
	}
	if (DNS_F_OPCODE(q->h.flags) != 0) {
		*why = "an opcode other than QUERY";
		return -1;
	}
	if (q->h.qdcount != 1 || q->h.ancount != 0 || q->h.nscount != 0 || q->h.arcount > 1) {
		*why = "not one question alone (an OPT record aside)";
		return -1;
	}
	if (dns_name_read(msg, len, &off, q->name, &q->name_len, why) == -1)
		return -1;
	/* uncompressed: one length byte a label, the root's zero */
	if (off - DNS_HEADER_LEN != (q->name_len == 0 ? 1 : q->name_len + 2)) {
		*why = "a compressed question name";
		return -1;
	}
	if (u16(msg, len, &off, &q->qtype) == -1 || u16(msg, len, &off, &q->qclass) == -1) {
		*why = "the question runs past the message";
		return -1;
	}
	q->question_end = off;
	if (q->h.arcount == 1) {
		struct dns_rr rr;

		if (dns_rr_read(msg, len, &off, &rr, why) == -1)
			return -1;
		if (rr.type != DNS_T_OPT || rr.name_len != 0) {
			*why = "an additional record that is not an OPT for the root";
			return -1;
		}
		q->edns = true;
		q->udp_size = rr.class < 512 ? 512 : rr.class;
		q->edns_version = (uint8_t)(rr.ttl >> 16);
		q->do_bit = (rr.ttl & 0x8000u) != 0;
	}
	if (off != len) {
		*why = "bytes after the last record";
		return -1;
	}
	return 0;
}

int dns_rr_cname(const uint8_t *msg, size_t len, const struct dns_rr *rr, char *out,
		 size_t *out_len, const char **why)
{
	size_t off = rr->rdata_off;

	if (rr->type != DNS_T_CNAME || dns_name_read(msg, len, &off, out, out_len, why) == -1)
		return -1;
	if (off != rr->rdata_off + rr->rdlen) {
		*why = "a CNAME whose data is not one name";
		return -1;
	}
	return 0;
}
