/*
 * dns_msg.h: reading DNS messages (RFC 1035, EDNS0 of RFC 6891) through a
 * bounds-checked cursor, for sluice-dns (issue 12): a client's query and an
 * upstream's answer are both untrusted bytes.
 *
 * Names come out as lower-case dotted text without the root's dot
 * ("api.example.com"; "" is the root), compression pointers followed only
 * backwards and at most DNS_PTR_MAX times, a label at most 63 bytes, a
 * name at most 255 on the wire. A label holding a byte outside printable
 * ASCII, a '.', a '\\' or a blank is refused: such a name is no host name
 * the policy could grant, and refusing it keeps the text one-to-one with
 * the wire. Nothing here allocates or writes a message.
 */
#ifndef SLUICE_DNS_MSG_H
#define SLUICE_DNS_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DNS_HEADER_LEN 12
#define DNS_NAME_MAX 253 /* text, without the root's dot */
#define DNS_PTR_MAX 32   /* compression pointers followed in one name */

enum dns_type {
	DNS_T_A = 1,
	DNS_T_CNAME = 5,
	DNS_T_SOA = 6,
	DNS_T_AAAA = 28,
	DNS_T_OPT = 41,
	DNS_T_SVCB = 64,
	DNS_T_HTTPS = 65,
	DNS_T_ANY = 255,
};

#define DNS_CLASS_IN 1
#define DNS_TYPE_TEXT_MAX 10 /* "TYPE65535" and its NUL */

/* A type's mnemonic ("A", "TXT", "HTTPS"), or "TYPEn" (RFC 3597); buf DNS_TYPE_TEXT_MAX. */
const char *dns_type_name(uint16_t type, char *buf);
/* The type a mnemonic or "TYPEn" names, case-insensitive. Returns 0, or -1. */
int dns_type_parse(const char *s, uint16_t *type);

struct dns_header {
	uint16_t id, flags;
	uint16_t qdcount, ancount, nscount, arcount;
};

#define DNS_F_QR 0x8000u
#define DNS_F_TC 0x0200u
#define DNS_F_OPCODE(f) (((f) >> 11) & 0xfu)
#define DNS_F_RCODE(f) ((f) & 0xfu)

/* A query as sluice-dns reads it: one question, and an OPT record if any. */
struct dns_query {
	struct dns_header h;
	char name[DNS_NAME_MAX + 1];
	size_t name_len;
	uint16_t qtype, qclass;
	size_t question_end; /* where the question's bytes end (they start at the header's end) */
	bool edns;         /* an OPT record came */
	uint16_t udp_size; /* its requestor's UDP payload size (512 without one) */
	bool do_bit;       /* DNSSEC OK */
	uint8_t edns_version;
};

/* A resource record of a message's answer, authority or additional section. */
struct dns_rr {
	char name[DNS_NAME_MAX + 1];
	size_t name_len;
	uint16_t type, class;
	uint32_t ttl;
	size_t rdata_off, rdlen; /* where its data lies in the message */
};

int dns_header_read(const uint8_t *msg, size_t len, struct dns_header *h);

/*
 * The name at *off in msg[0..len) into out (DNS_NAME_MAX + 1), *off moved
 * past it (past its first pointer, if compressed). Returns 0, or -1 with
 * *why.
 */
int dns_name_read(const uint8_t *msg, size_t len, size_t *off, char *out, size_t *out_len,
		  const char **why);

/*
 * A query: not a response, opcode QUERY, exactly one question whose name
 * is not compressed (so its bytes can be echoed as they came), no answer
 * or authority records, at most one additional record and that an OPT
 * (root name, version and options read; the options are not kept).
 * Returns 0, or -1 with *why.
 */
int dns_query_read(const uint8_t *msg, size_t len, struct dns_query *q, const char **why);

/*
 * The question section at msg[DNS_HEADER_LEN..] skipped (qdcount
 * questions): *off is where the answer section starts. Returns 0 or -1.
 */
int dns_questions_skip(const uint8_t *msg, size_t len, const struct dns_header *h, size_t *off,
		       const char **why);

/* One record at *off, *off moved past it. Returns 0, or -1 with *why. */
int dns_rr_read(const uint8_t *msg, size_t len, size_t *off, struct dns_rr *rr, const char **why);

/*
 * A CNAME record's target (rr read from msg), into out as dns_name_read
 * gives it. Returns 0, or -1 with *why (rdata that is not one name).
 */
int dns_rr_cname(const uint8_t *msg, size_t len, const struct dns_rr *rr, char *out,
		 size_t *out_len, const char **why);

#endif
