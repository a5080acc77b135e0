/*
 * dns_answer.h: an upstream's answer to one question, read into the
 * records sluice-dns keeps and writes back (issue 12).
 *
 * The message must answer exactly the question asked (name, type, class
 * IN). Of its answer section only the chain from the name is kept: the
 * CNAMEs that lead on from it (at most DNS_CHAIN_MAX), then the records of
 * the asked type owned by a name of the chain, in class IN; everything
 * else (other owners, other types, the authority and additional sections)
 * is dropped, but the SOA's negative TTL is read. Kept records are written
 * uncompressed (owner name, type, class, a zero TTL, rdlength, rdata), the
 * names inside CNAME, NS, PTR, DNAME, MX and SRV data decompressed, other
 * rdata copied as it came (RFC 3597: no compression there); A and AAAA
 * must be 4 and 16 bytes. Reading goes through lib/dns_msg.c's cursor.
 */
#ifndef SLUICE_DNS_ANSWER_H
#define SLUICE_DNS_ANSWER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dns_msg.h"

#define DNS_ANSWER_MAX 65535 /* bytes of kept records */
#define DNS_ANSWER_RRS 128   /* answer records read from one message */
#define DNS_CHAIN_MAX 8      /* CNAMEs followed */

struct dns_answer {
	int rcode;         /* NOERROR (0) or NXDOMAIN (3) */
	uint16_t n;        /* records kept */
	uint32_t min_ttl;  /* the smallest TTL of those (over 2^31-1 read as 0); UINT32_MAX when none */
	uint32_t soa_ttl;  /* the authority SOA's min(TTL, MINIMUM); UINT32_MAX when none */
	size_t len;
	uint8_t rrs[DNS_ANSWER_MAX];
};

enum {
	DNS_ANSWER_OK,
	DNS_ANSWER_MALFORMED, /* not an answer to the question, or bytes that do not read */
	DNS_ANSWER_FAILED,    /* a well-formed SERVFAIL, REFUSED or other failure */
};

/* Read msg[0..len) as the answer to name (dotted, lower-case) and qtype. *why on failure. */
int dns_answer_read(const uint8_t *msg, size_t len, const char *name, size_t name_len,
		    uint16_t qtype, struct dns_answer *a, const char **why);

/*
 * Write dotted text (no root dot; "" the root) as uncompressed wire labels
 * into out[0..room). Returns the bytes written, or 0 when it does not fit.
 * The name must be one dns_name_read gave (labels of 1..63 bytes).
 */
size_t dns_name_write(const char *name, size_t len, uint8_t *out, size_t room);

/*
 * A writer into buf[0..max): each call appends, or sets full (and writes
 * nothing more) when it would not fit. Names as dns_name_write.
 */
struct dns_out {
	uint8_t *buf;
	size_t len, max;
	bool full;
};

void dns_out_put(struct dns_out *o, const void *p, size_t n);
void dns_out_u16(struct dns_out *o, uint16_t v);
void dns_out_name(struct dns_out *o, const char *name, size_t len);

#endif
