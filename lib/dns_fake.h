/*
 * dns_fake.h: a run's own addresses for granted names (issue 28). The
 * forwarder relays sluice-dns's answers to a run; an answer that says a
 * name resolves (sluice-dns answers only names the policy could allow) is
 * given, in place of the name's real addresses, one address of the run's
 * own fake range, which the run's namespace routes to the forwarder's
 * transparent listener alone. These read such an answer and write its
 * replacement; they allocate nothing and keep no state (the name <->
 * address map is the forwarder's, forward/fake.c).
 */
#ifndef SLUICE_DNS_FAKE_H
#define SLUICE_DNS_FAKE_H

#include <stddef.h>
#include <stdint.h>

#include "dns_msg.h"

/* An answer to rewrite, as dns_fake_match read it. */
struct dns_fake_q {
	char name[DNS_NAME_MAX + 1]; /* the question's name, lower-case dotted */
	size_t name_len;
	uint16_t qtype;    /* DNS_T_A or DNS_T_AAAA */
	size_t qend;       /* where the question's bytes end */
};

/*
 * Whether msg[0..len), an upstream's answer, is one to give a fake address:
 * a response, opcode QUERY, NOERROR, not truncated, one question of class
 * IN and type A or AAAA whose name is not compressed, and for A at least
 * one A record among its answers (a name that resolves). Returns 1 and
 * fills q; 0 when it is not (the answer passes as it came). Never reads
 * past len.
 */
int dns_fake_match(const uint8_t *msg, size_t len, struct dns_fake_q *q);

/*
 * The replacement for the matched answer msg into out[0..max): msg's id
 * and flags (rcode NOERROR), its question as it came, and for A one record
 * naming addr (network order) with ttl; for AAAA no record (the run's
 * walls keep IPv6 shut; a client falls back to A). No authority or
 * additional records. Returns its length, or -1 when max is short.
 */
long dns_fake_write(const uint8_t *msg, const struct dns_fake_q *q, const uint8_t addr[4],
		    uint32_t ttl, uint8_t *out, size_t max);

#endif
