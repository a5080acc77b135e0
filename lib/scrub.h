/*
 * scrub.h: mask secrets in a byte stream, fed in pieces of any size.
 *
 * A response may reflect an injected credential back (an echo endpoint,
 * an error page quoting the request); the proxy runs the response bytes
 * through a scrubber before the sandbox sees them.
 *
 * Semantics, exactly: given the distinct secrets S (duplicates in the list
 * count once) and the whole stream X, every byte X[j] that lies inside at
 * least one occurrence of at least one secret (some s in S and start p
 * with X[p..p+|s|) == s and p <= j < p+|s|) is replaced by '*'; every
 * other byte passes unchanged. Occurrences may overlap or nest: their
 * union is masked ("abcab" in "abcabcab" masks all 8 bytes). The output
 * has exactly the input's length, so Content-Length framing holds. The
 * count is the number of (secret, start) occurrence pairs, overlapping
 * ones included. How the stream is cut into scrub_feed calls changes
 * nothing in the output or the count.
 *
 * Streaming: a byte is written once no future byte can extend a match over
 * it; at most scrub_hold_max(s) = longest secret - 1 bytes are held back
 * between calls (fewer when the tail of the stream is no prefix of any
 * secret). Aho-Corasick over the secrets: O(1) amortised per byte; about
 * 20 bytes of automaton per byte of the secrets (a scrubber for 16 secrets
 * of 8192 bytes takes about 3 MB).
 *
 * Allocates in scrub_new only; the secrets are copied into the automaton
 * (wipe the caller's copies as you like; scrub_free wipes its own).
 */
#ifndef SLUICE_SCRUB_H
#define SLUICE_SCRUB_H

#include <stddef.h>
#include <stdint.h>

/* room for every form (inject_forms.c, up to 14 a secret) of the secrets of the rules of a host */
#define SCRUB_MAX_SECRETS 128
#define SCRUB_MIN_LEN 4
/* a secret of 8192 control bytes inside a JSON string ("\u0001") is 6 times as long */
#define SCRUB_MAX_LEN 49152

struct scrub;

/*
 * A scrubber for secrets[i][0..lens[i]), i < n (0..SCRUB_MAX_SECRETS; each
 * SCRUB_MIN_LEN..SCRUB_MAX_LEN bytes, any bytes). n == 0 gives a
 * scrubber that passes everything through. Returns NULL with errno EINVAL
 * (a count or length out of range) or ENOMEM.
 */
struct scrub *scrub_new(const char *const *secrets, const size_t *lens, size_t n);

/*
 * Feed in[0..len), writing the bytes that became final to out[0..size).
 * Returns the number written; *used is how much of in was consumed (the
 * rest must be fed again). Contract: consuming one more byte can release
 * every held byte plus itself, so a byte is consumed only while
 * size - written >= scrub_pending(s) + 1. Hence:
 *   - size >= len + scrub_pending(s) consumes all of in;
 *   - size >= scrub_hold_max(s) + 1 consumes at least one byte (len > 0);
 *   - nothing consumed is ever lost: it is written or pending.
 */
size_t scrub_feed(struct scrub *s, const char *in, size_t len, char *out, size_t size,
		  size_t *used);

/*
 * End of stream: the held bytes become final (a partial match at the end
 * is no match) and up to size of them are written; returns how many.
 * Call again while scrub_pending(s) > 0. Once it is 0 the scrubber starts
 * a new stream (matches never span a flush); the count is kept.
 */
size_t scrub_flush(struct scrub *s, char *out, size_t size);

/* Bytes consumed but not yet written. */
size_t scrub_pending(const struct scrub *s);

/* The most bytes scrub_feed ever holds back: the longest secret - 1 (0 without secrets). */
size_t scrub_hold_max(const struct scrub *s);

/* Occurrences found so far, all streams of s. */
uint64_t scrub_count(const struct scrub *s);

void scrub_free(struct scrub *s);

#endif
