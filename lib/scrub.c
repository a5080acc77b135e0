/*
 * scrub.c: the streaming secret mask of scrub.h, on an Aho-Corasick automaton.
 *
 * The trie of the secrets with failure links gives, after each byte, the
 * state q: the longest suffix of the stream that is a prefix of a secret.
 * Every secret that ends at this byte is a suffix of q's string, found
 * through precomputed fields (mlen: the longest, nmatch: how many). A
 * later match can start only inside a suffix that is a proper prefix of a
 * secret, i.e. a node with children on q's failure chain; the deepest one
 * (hold) is how many bytes must wait. Everything before them is final.
 *
 * Masks are kept as disjoint, ordered intervals of stream positions over
 * the held bytes: a new match [a, pos] swallows the intervals starting at
 * or after a and merges with the one before when they touch. Writing a
 * byte then asks the front interval only. No per-byte loops over a match.
 *
 * It does not parse HTTP or know about bodies: the caller decides what a
 * stream is (a response body, a whole connection) and flushes at its end.
 */
#include "scrub.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define ROOT 0
#define NONE UINT32_MAX

struct node {
	uint32_t fail;
	uint32_t child;   /* first child, NONE if a leaf */
	uint32_t sibling; /* next child of the same parent, NONE at the end */
	uint16_t depth;   /* length of the prefix this node spells */
	uint16_t hold;    /* bytes to hold back in this state */
	uint16_t mlen;    /* longest secret ending here, 0 if none */
	uint8_t byte;     /* label of the edge from the parent */
	uint8_t nmatch;   /* distinct secrets ending here */
};

_Static_assert(SCRUB_MAX_SECRETS <= UINT8_MAX, "nmatch counts distinct secrets in 8 bits");
_Static_assert(SCRUB_MAX_LEN <= UINT16_MAX, "depth, hold and mlen are 16 bits");

struct span {
	uint64_t start, end; /* stream positions, inclusive */
};

struct scrub {
	struct node *nodes;
	uint32_t nnodes;
	uint32_t root_next[256]; /* the root's transitions, ROOT where none */
	uint32_t state;
	size_t longest;
	char *ring;        /* held bytes; capacity cap */
	size_t cap;        /* max(longest, 1) */
	size_t head;       /* ring index of the first held byte */
	size_t held;
	uint64_t base;     /* stream position of the first held byte */
	struct span *spans; /* ring of cap + 1; masks over held bytes */
	size_t span_head;
	size_t nspans;
	uint64_t count;
};

static uint32_t child_of(const struct scrub *s, uint32_t q, unsigned char ch)
{
	if (q == ROOT)
		return s->root_next[ch] == ROOT ? NONE : s->root_next[ch];
	for (uint32_t c = s->nodes[q].child; c != NONE; c = s->nodes[c].sibling)
		if (s->nodes[c].byte == ch)
			return c;
	return NONE;
}

/* The state after q reads ch. */
static uint32_t step(const struct scrub *s, uint32_t q, unsigned char ch)
{
	for (;;) {
		uint32_t c;

		if (q == ROOT)
			return s->root_next[ch];
		c = child_of(s, q, ch);
		if (c != NONE)
			return c;
		q = s->nodes[q].fail;
	}
}

static void insert(struct scrub *s, const unsigned char *p, size_t len)
{
	uint32_t q = ROOT;

	for (size_t i = 0; i < len; i++) {
		uint32_t c = child_of(s, q, p[i]);

		if (c == NONE) {
			c = s->nnodes++;
			s->nodes[c] = (struct node){ .fail = ROOT, .child = NONE, .sibling = NONE,
						     .depth = (uint16_t)(i + 1), .byte = p[i] };
			if (q == ROOT) {
				s->root_next[p[i]] = c;
			} else {
				s->nodes[c].sibling = s->nodes[q].child;
				s->nodes[q].child = c;
			}
		}
		q = c;
	}
	s->nodes[q].nmatch = 1; /* a duplicate secret lands here again: counted once */
	s->nodes[q].mlen = (uint16_t)len;
}

/* Failure links and the derived fields, breadth first (a fail is always shallower). */
static int link(struct scrub *s)
{
	uint32_t *queue = malloc(s->nnodes * sizeof(*queue));
	size_t qh = 0, qt = 0;

	if (queue == NULL)
		return -1;
	for (unsigned ch = 0; ch < 256; ch++)
		if (s->root_next[ch] != ROOT)
			queue[qt++] = s->root_next[ch];
	while (qh < qt) {
		uint32_t u = queue[qh++];
		struct node *n = &s->nodes[u];
		const struct node *f;

		for (uint32_t c = n->child; c != NONE; c = s->nodes[c].sibling) {
			s->nodes[c].fail = step(s, n->fail, s->nodes[c].byte);
			queue[qt++] = c;
		}
		f = &s->nodes[n->fail];
		if (n->mlen == 0)
			n->mlen = f->mlen;
		n->nmatch = (uint8_t)(n->nmatch + f->nmatch);
		n->hold = n->child != NONE ? n->depth : f->hold;
	}
	free(queue);
	return 0;
}

struct scrub *scrub_new(const char *const *secrets, const size_t *lens, size_t n)
{
	struct scrub *s;
	size_t total = 1;

	if (n > SCRUB_MAX_SECRETS) {
		errno = EINVAL;
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		if (lens[i] < SCRUB_MIN_LEN || lens[i] > SCRUB_MAX_LEN) {
			errno = EINVAL;
			return NULL;
		}
		total += lens[i];
	}
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (lens[i] > s->longest)
			s->longest = lens[i];
	s->cap = s->longest > 0 ? s->longest : 1;
	s->nodes = calloc(total, sizeof(*s->nodes));
	s->ring = malloc(s->cap);
	s->spans = malloc((s->cap + 1) * sizeof(*s->spans));
	if (s->nodes == NULL || s->ring == NULL || s->spans == NULL)
		goto out_free;
	s->nodes[ROOT] = (struct node){ .fail = ROOT, .child = NONE, .sibling = NONE };
	s->nnodes = 1;
	for (size_t i = 0; i < n; i++)
		insert(s, (const unsigned char *)secrets[i], lens[i]);
	if (link(s) == -1)
		goto out_free;
	return s;
out_free:
	scrub_free(s);
	errno = ENOMEM;
	return NULL;
}

static struct span *span_at(struct scrub *s, size_t i)
{
	return &s->spans[(s->span_head + i) % (s->cap + 1)];
}

/* Mask [a, e]; e is the newest position, so every interval ends at or before it. */
static void span_add(struct scrub *s, uint64_t a, uint64_t e)
{
	while (s->nspans > 0 && span_at(s, s->nspans - 1)->start >= a)
		s->nspans--;
	if (s->nspans > 0 && span_at(s, s->nspans - 1)->end + 1 >= a) {
		span_at(s, s->nspans - 1)->end = e;
		return;
	}
	*span_at(s, s->nspans++) = (struct span){ a, e };
}

/* Write the first k held bytes to out, masked where an interval covers them. */
static void emit(struct scrub *s, size_t k, char *out)
{
	for (size_t i = 0; i < k; i++) {
		bool masked = s->nspans > 0 && s->spans[s->span_head].start <= s->base;

		out[i] = masked ? '*' : s->ring[s->head];
		s->head = (s->head + 1) % s->cap;
		s->held--;
		s->base++;
		while (s->nspans > 0 && s->spans[s->span_head].end < s->base) {
			s->span_head = (s->span_head + 1) % (s->cap + 1);
			s->nspans--;
		}
	}
}

size_t scrub_feed(struct scrub *s, const char *in, size_t len, char *out, size_t size,
		  size_t *used)
{
	size_t w = 0, i, k;

	for (i = 0; i < len && size - w >= s->held + 1; i++) {
		const struct node *n;
		uint64_t pos = s->base + s->held;

		s->state = step(s, s->state, (unsigned char)in[i]);
		n = &s->nodes[s->state];
		s->ring[(s->head + s->held) % s->cap] = in[i];
		s->held++;
		if (n->mlen != 0) {
			s->count += n->nmatch;
			span_add(s, pos + 1 - n->mlen, pos);
		}
		k = s->held - n->hold;
		emit(s, k, out + w);
		w += k;
	}
	*used = i;
	return w;
}

size_t scrub_flush(struct scrub *s, char *out, size_t size)
{
	size_t k = s->held < size ? s->held : size;

	s->state = ROOT;
	emit(s, k, out);
	return k;
}

size_t scrub_pending(const struct scrub *s)
{
	return s->held;
}

size_t scrub_hold_max(const struct scrub *s)
{
	return s->longest > 0 ? s->longest - 1 : 0;
}

uint64_t scrub_count(const struct scrub *s)
{
	return s->count;
}

void scrub_free(struct scrub *s)
{
	if (s == NULL)
		return;
	/* the trie spells the secrets out, the ring may hold a piece of one */
	if (s->nodes != NULL)
		explicit_bzero(s->nodes, s->nnodes * sizeof(*s->nodes));
	if (s->ring != NULL)
		explicit_bzero(s->ring, s->cap);
	free(s->nodes);
	s->nodes = NULL;
	free(s->ring);
	s->ring = NULL;
	free(s->spans);
	s->spans = NULL;
	free(s);
}
