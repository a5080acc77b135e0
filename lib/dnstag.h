/*
 * dnstag.h: the asker tag, an EDNS(0) option sluice-forward adds to each
 * DNS query it relays and sluice-dns verifies and strips: the DNS
 * counterpart of the Sluice-Stamp header (stamp.h), under the same keys
 * (STATE/stamp.key).
 *
 * Option code DNSTAG_OPTION (RFC 6891's local/experimental range); its
 * data, all integers big-endian:
 *
 *   0      version, 1
 *   1      flags: bit 0 set when the forwarder added the OPT record (the
 *          client sent none: sluice-dns answers it as a query without EDNS)
 *   2..5   kid, the key id
 *   6..13  time, Unix seconds, when the forwarder relayed it
 *   14     the client's address family, 4 or 6, then its 4 or 16 bytes
 *   then   net's length (1-64), then net ([A-Za-z0-9._-], as stamp.h)
 *   last   32 bytes: HMAC-SHA256 under key kid over "sluice-dns-tag-1",
 *          the data before the MAC, the query's id (2 bytes) and its
 *          question as on the wire (name, type, class)
 *
 * A tag is believed only with a live key, a MAC that matches, a time
 * within DNSTAG_WINDOW of the verifier's clock, and alone (a second tag
 * option makes none believed). It binds the tag to one id and question:
 * copied onto another query it does not verify.
 *
 * Reading takes dns_msg.c's rules for a query (one question, uncompressed,
 * at most one additional record and that an OPT) and walks the OPT's
 * options; nothing here allocates. HMAC is libcrypto's.
 */
#ifndef SLUICE_DNSTAG_H
#define SLUICE_DNSTAG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "stamp.h"

#define DNSTAG_OPTION 65312
#define DNSTAG_VERSION 1
#define DNSTAG_F_ADDED 0x01
#define DNSTAG_WINDOW 30 /* seconds either way of the verifier's clock */
#define DNSTAG_DATA_MAX (15 + 16 + 1 + STAMP_NET_MAX + 32)
/* the most dnstag_add makes a query grow: an OPT record and the option */
#define DNSTAG_GROW (11 + 4 + DNSTAG_DATA_MAX)

struct dnstag {
	uint8_t flags;
	uint32_t kid;
	uint64_t time;
	char src[46];                /* canonical address text */
	char net[STAMP_NET_MAX + 1];
};

/*
 * The query msg[0..len) into out (outmax bytes) with every tag option the
 * client wrote removed and ours, for t signed with key, appended (an OPT
 * record added when there was none, t's DNSTAG_F_ADDED then set in what is
 * written). t->time, kid and flags are set here. Returns the length
 * written, or -1 when msg is no query it can read or out is too small.
 */
long dnstag_add(const uint8_t *msg, size_t len, struct dnstag *t, const struct stamp_key *key,
		uint8_t *out, size_t outmax);

/*
 * The query msg[0..len) into out (outmax >= len) with every tag option
 * removed, and the tag believed into *t: *believed is true only when
 * exactly one tag came and it verifies under keys at now (dnstag.h's
 * rules). A believed tag with DNSTAG_F_ADDED takes the OPT record out too.
 * Returns the length written, or -1 when msg is no query it can read
 * (then nothing is believed and out is not written).
 */
long dnstag_take(const uint8_t *msg, size_t len, uint8_t *out, size_t outmax,
		 const struct stamp_key *keys, size_t nkeys, time_t now, struct dnstag *t,
		 bool *believed);

#endif
