/*
 * stamp.h: the Sluice-Stamp header, written by sluice-forward on the first
 * request head of a connection and verified by sluice-proxy.
 *
 *   Sluice-Stamp: v=1; kid=3; src=10.88.0.5; net=podman; boot=9f2c...; seq=42; mac=<64 hex>
 *   Sluice-Stamp: v=1; kid=3; src=127.0.0.1; net=vm; as=container:<64 hex>; boot=...; seq=...; mac=...
 *
 * Fields in exactly that order, separated by "; ". The MAC is
 * HMAC-SHA256 under key kid over the header value up to (not including)
 * "; mac=", so both sides MAC the same bytes. src is a canonical IPv4 or
 * IPv6 address (RFC 5952), net a name of 1-64 bytes of [A-Za-z0-9._-],
 * boot 16 lowercase hex digits (a per-boot random id), seq a decimal
 * sequence number below 2^63, kid a decimal key id 1-4294967295.
 *
 * as is optional and, when present, comes right after net: the principal
 * the forwarder found by the client socket's cgroup (container:<id>,
 * build:<scope>, user), 1-100 bytes of [A-Za-z0-9._:-] (and one '/' in
 * project:NAME/AGENT). Stamps from a forwarder's namespace listeners carry
 * none, unless it was given one for all of them (--as: `sluice run`'s
 * project:NAME[/AGENT]).
 *
 * The key file (STATE/stamp.key, 0600, root) holds one key per line:
 *
 *   # sluice stamp keys v1
 *   <kid> <64 lowercase hex: 32 key bytes> [<expires, Unix seconds>]
 *
 * A key without expiry is current; a rotated-out key keeps an expiry
 * (its grace period) after which it no longer verifies.
 *
 * Parsing allocates nothing; HMAC is OpenSSL's (libcrypto).
 */
#ifndef SLUICE_STAMP_H
#define SLUICE_STAMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#define STAMP_HEADER "Sluice-Stamp"
#define STAMP_NET_MAX 64
#define STAMP_AS_MAX 100
#define STAMP_VALUE_MAX 400 /* longest header value stamp_format writes (363) */
#define STAMP_KEY_BYTES 32
#define STAMP_KEYS_MAX 16

struct stamp {
	unsigned version; /* 1 */
	uint32_t kid;
	char src[46];                  /* canonical address text */
	char net[STAMP_NET_MAX + 1];
	char as[STAMP_AS_MAX + 1];     /* the principal; "" when absent */
	char boot[17];                 /* 16 hex + NUL */
	uint64_t seq;
	uint8_t mac[32];
	size_t signed_len;             /* bytes of the value the MAC covers */
};

struct stamp_key {
	uint32_t kid;
	uint8_t key[STAMP_KEY_BYTES];
	time_t expires; /* 0: current, no expiry */
};

/*
 * Parse a header value v[0..len) (leading/trailing blanks already trimmed).
 * Strict: exact field order, names and separators; src must be canonical;
 * as, when present, only right after net.
 * Returns 0, or -1 with *err a static message. Does not check the MAC.
 */
int stamp_parse(const char *v, size_t len, struct stamp *st, const char **err);

/* Whether s can be a stamp's as= (the rules above). */
bool stamp_as_valid(const char *s);

/*
 * Write the header value for st (its mac ignored) signed with key into
 * out (size at least STAMP_VALUE_MAX). st->as empty writes no as= field.
 * Returns the length, or -1 if a field is invalid (the same rules
 * stamp_parse enforces).
 */
int stamp_format(const struct stamp *st, const struct stamp_key *key, char *out, size_t size);

/*
 * Whether st's MAC, over v[0..st->signed_len) (the value it was parsed
 * from), is right under the key with st->kid that is live at now.
 * Constant-time comparison.
 */
bool stamp_verify(const struct stamp *st, const char *v, const struct stamp_key *keys,
		  size_t nkeys, time_t now);

/*
 * Parse a key file buf[0..len): at most max keys into out, *n set.
 * Returns 0, or -1 with *line and *err for the first bad line (duplicate
 * kids and more than one current key are errors).
 */
int stamp_keys_parse(const char *buf, size_t len, struct stamp_key *out, size_t max,
		     size_t *n, size_t *line, const char **err);

/* Write keys in key-file format to f. Returns 0 or -1. */
int stamp_keys_write(FILE *f, const struct stamp_key *keys, size_t n);

/*
 * Replay window: per boot id, the highest sequence seen and a bitmap of
 * the STAMP_WINDOW before it. A sequence seen before, or older than the
 * window, is a replay. Boots beyond STAMP_BOOTS evict the least recent.
 */
#define STAMP_WINDOW 1024
#define STAMP_BOOTS 64

struct stamp_replay_boot {
	char boot[17];
	uint64_t top;   /* highest seq seen + 1; 0: none */
	uint64_t bits[STAMP_WINDOW / 64];
	uint64_t used;  /* recency, for eviction */
};

struct stamp_replay {
	struct stamp_replay_boot boots[STAMP_BOOTS];
	uint64_t clock;
};

/* Record (boot, seq); returns false if it is a replay (and records nothing). */
bool stamp_replay_check(struct stamp_replay *r, const char *boot, uint64_t seq);

#endif
