/*
 * stamp.c: the Sluice-Stamp header value, its key file and its replay window.
 *
 * One strict spelling only: stamp_parse takes exactly what stamp_format
 * writes, so the bytes the MAC covers on the forward side are the bytes
 * the proxy recomputes it over. Parsers read through a bounds-checked
 * cursor and allocate nothing; the HMAC is libcrypto's. This file does not
 * read files, pick the signing key or keep time: callers hand in buffers,
 * keys and "now".
 */
#include "stamp.h"

#include <arpa/inet.h>
#include <limits.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <string.h>

#include "digits.h"
#include "hex.h"

#define SEQ_LIMIT ((uint64_t)1 << 63) /* seq must stay below */
#define SRC_MAX 45                    /* longest inet_ntop text, without NUL */
#define BOOT_LEN 16
#define MAC_HEX (2 * 32)
#define KEY_HEX (2 * STAMP_KEY_BYTES)

/* A read position in buf[0..len); nothing reads at or past len. */
struct cursor {
	const char *p;
	size_t len;
	size_t off;
};

static bool cur_lit(struct cursor *c, const char *lit)
{
	size_t n = strlen(lit);

	if (c->len - c->off < n || memcmp(c->p + c->off, lit, n) != 0)
		return false;
	c->off += n;
	return true;
}

/* The bytes up to the next ';' (or the end): *f and the length. */
static size_t cur_field(struct cursor *c, const char **f)
{
	size_t start = c->off;

	while (c->off < c->len && c->p[c->off] != ';')
		c->off++;
	*f = c->p + start;
	return c->off - start;
}

/*
 * Decimal s[0..n) without sign or leading zeros ("0" itself is fine), <= max:
 * canonical like the hex, so "kid=03" is not a second spelling of kid=3.
 */
static bool parse_dec(const char *s, size_t n, uint64_t max, uint64_t *out)
{
	return !(n > 1 && s[0] == '0') && dec_parse(s, n, max, out) == 0;
}

/* Whether s[0..n) is an IPv4 or IPv6 address spelled exactly as inet_ntop spells it. */
static bool src_canonical(const char *s, size_t n)
{
	char text[SRC_MAX + 1], back[INET6_ADDRSTRLEN];
	unsigned char addr[sizeof(struct in6_addr)];
	int af;

	if (n == 0 || n > SRC_MAX || memchr(s, '\0', n) != NULL)
		return false;
	memcpy(text, s, n);
	text[n] = '\0';
	af = memchr(s, ':', n) != NULL ? AF_INET6 : AF_INET;
	if (inet_pton(af, text, addr) != 1 || inet_ntop(af, addr, back, sizeof(back)) == NULL)
		return false;
	return strcmp(text, back) == 0;
}

static bool net_valid(const char *s, size_t n)
{
	size_t i;

	if (n == 0 || n > STAMP_NET_MAX)
		return false;
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-'))
			return false;
	}
	return true;
}

/*
 * The principal: 1-100 bytes of [A-Za-z0-9._:-], and one '/' inside a
 * project:NAME/AGENT (between two bytes that are not '/').
 */
static bool as_valid(const char *s, size_t n)
{
	size_t i, slashes = 0;

	if (n == 0 || n > STAMP_AS_MAX)
		return false;
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '/' && n > 9 && memcmp(s, "project:", 8) == 0 && i > 8 && i + 1 < n &&
		    slashes++ == 0)
			continue;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-' || c == ':'))
			return false;
	}
	return true;
}

bool stamp_as_valid(const char *s)
{
	return as_valid(s, strlen(s));
}

static bool boot_valid(const char *s, size_t n)
{
	return n == BOOT_LEN && hex_is_lower(s, n);
}

int stamp_parse(const char *v, size_t len, struct stamp *st, const char **err)
{
	struct cursor c = { v, len, 0 };
	const char *f;
	size_t n, signed_len;
	uint64_t num;

	memset(st, 0, sizeof(*st));
	if (!cur_lit(&c, "v=")) {
		*err = "expected v=";
		return -1;
	}
	n = cur_field(&c, &f);
	if (n != 1 || f[0] != '1') {
		*err = "unsupported stamp version";
		return -1;
	}
	st->version = 1;

	if (!cur_lit(&c, "; kid=")) {
		*err = "expected kid=";
		return -1;
	}
	n = cur_field(&c, &f);
	if (!parse_dec(f, n, UINT32_MAX, &num) || num == 0) {
		*err = "bad kid";
		return -1;
	}
	st->kid = (uint32_t)num;

	if (!cur_lit(&c, "; src=")) {
		*err = "expected src=";
		return -1;
	}
	n = cur_field(&c, &f);
	if (!src_canonical(f, n)) {
		*err = "bad src";
		return -1;
	}
	memcpy(st->src, f, n);
	st->src[n] = '\0';

	if (!cur_lit(&c, "; net=")) {
		*err = "expected net=";
		return -1;
	}
	n = cur_field(&c, &f);
	if (!net_valid(f, n)) {
		*err = "bad net";
		return -1;
	}
	memcpy(st->net, f, n);
	st->net[n] = '\0';

	if (cur_lit(&c, "; as=")) {
		n = cur_field(&c, &f);
		if (!as_valid(f, n)) {
			*err = "bad as";
			return -1;
		}
		memcpy(st->as, f, n);
		st->as[n] = '\0';
	}

	if (!cur_lit(&c, "; boot=")) {
		*err = "expected boot=";
		return -1;
	}
	n = cur_field(&c, &f);
	if (!boot_valid(f, n)) {
		*err = "bad boot";
		return -1;
	}
	memcpy(st->boot, f, n);
	st->boot[n] = '\0';

	if (!cur_lit(&c, "; seq=")) {
		*err = "expected seq=";
		return -1;
	}
	n = cur_field(&c, &f);
	if (!parse_dec(f, n, SEQ_LIMIT - 1, &num)) {
		*err = "bad seq";
		return -1;
	}
	st->seq = num;

	signed_len = c.off;
	if (!cur_lit(&c, "; mac=")) {
		*err = "expected mac=";
		return -1;
	}
	n = cur_field(&c, &f);
	if (n != MAC_HEX || hex_decode(f, sizeof(st->mac), st->mac) == -1) {
		*err = "bad mac";
		return -1;
	}
	if (c.off != c.len) {
		*err = "trailing bytes after mac";
		return -1;
	}
	st->signed_len = signed_len;
	return 0;
}

/* HMAC-SHA256 of data[0..len) under key into mac[32]; false if libcrypto fails. */
static bool stamp_hmac(const struct stamp_key *key, const char *data, size_t len, uint8_t mac[32])
{
	unsigned int mlen = 0;

	if (HMAC(EVP_sha256(), key->key, (int)sizeof(key->key), (const unsigned char *)data, len,
		 mac, &mlen) == NULL)
		return false;
	return mlen == 32;
}

/*
 * Also refuses a key whose kid is not st->kid: the value would name one
 * key and be signed with another, which nothing could verify.
 */
int stamp_format(const struct stamp *st, const struct stamp_key *key, char *out, size_t size)
{
	size_t srclen = strnlen(st->src, sizeof(st->src));
	size_t netlen = strnlen(st->net, sizeof(st->net));
	size_t aslen = strnlen(st->as, sizeof(st->as));
	size_t bootlen = strnlen(st->boot, sizeof(st->boot));
	uint8_t mac[32];
	char hex[MAC_HEX + 1];
	int n, m;

	if (st->version != 1 || st->kid == 0 || key->kid != st->kid || st->seq >= SEQ_LIMIT ||
	    !src_canonical(st->src, srclen) || !net_valid(st->net, netlen) ||
	    (aslen != 0 && !as_valid(st->as, aslen)) || !boot_valid(st->boot, bootlen))
		return -1;
	n = snprintf(out, size, "v=1; kid=%lu; src=%s; net=%s%s%s; boot=%s; seq=%llu",
		     (unsigned long)st->kid, st->src, st->net, aslen != 0 ? "; as=" : "",
		     aslen != 0 ? st->as : "", st->boot, (unsigned long long)st->seq);
	if (n < 0 || (size_t)n >= size)
		return -1;
	if (!stamp_hmac(key, out, (size_t)n, mac))
		return -1;
	hex_encode(mac, sizeof(mac), hex);
	m = snprintf(out + n, size - (size_t)n, "; mac=%s", hex);
	OPENSSL_cleanse(mac, sizeof(mac));
	if (m < 0 || (size_t)m >= size - (size_t)n)
		return -1;
	return n + m;
}

bool stamp_verify(const struct stamp *st, const char *v, const struct stamp_key *keys,
		  size_t nkeys, time_t now)
{
	uint8_t mac[32];
	bool ok = false;
	size_t i;

	for (i = 0; i < nkeys && !ok; i++) {
		if (keys[i].kid != st->kid || (keys[i].expires != 0 && keys[i].expires <= now))
			continue;
		if (stamp_hmac(&keys[i], v, st->signed_len, mac) &&
		    CRYPTO_memcmp(mac, st->mac, sizeof(mac)) == 0)
			ok = true;
	}
	OPENSSL_cleanse(mac, sizeof(mac));
	return ok;
}

/* Advance c over one blank (a space or a tab); false if there is none. */
static bool key_sep(struct cursor *c)
{
	if (c->off < c->len && (c->p[c->off] == ' ' || c->p[c->off] == '\t')) {
		c->off++;
		return true;
	}
	return false;
}

/* The bytes up to the next blank or the end of the line c holds. */
static size_t key_word(struct cursor *c, const char **f)
{
	size_t start = c->off;

	while (c->off < c->len && c->p[c->off] != ' ' && c->p[c->off] != '\t')
		c->off++;
	*f = c->p + start;
	return c->off - start;
}

/* One key line l[0..n) (without its newline) into k; NULL or the error. */
static const char *key_line(const char *l, size_t n, struct stamp_key *k)
{
	struct cursor c = { l, n, 0 };
	uint64_t num, tmax = sizeof(time_t) < sizeof(int64_t) ? (uint64_t)INT32_MAX
							       : (uint64_t)INT64_MAX;
	const char *f;
	size_t fl;

	memset(k, 0, sizeof(*k));
	fl = key_word(&c, &f);
	if (!parse_dec(f, fl, UINT32_MAX, &num) || num == 0)
		return "bad kid";
	k->kid = (uint32_t)num;
	if (!key_sep(&c))
		return "expected key after kid";
	fl = key_word(&c, &f);
	if (fl != KEY_HEX || hex_decode(f, STAMP_KEY_BYTES, k->key) == -1)
		return "bad key: want 64 lowercase hex digits";
	if (c.off == c.len)
		return NULL;
	if (!key_sep(&c))
		return "bad key: want 64 lowercase hex digits";
	fl = key_word(&c, &f);
	if (!parse_dec(f, fl, tmax, &num) || num == 0)
		return "bad expiry";
	k->expires = (time_t)num;
	if (c.off != c.len)
		return "trailing bytes after expiry";
	return NULL;
}

int stamp_keys_parse(const char *buf, size_t len, struct stamp_key *out, size_t max,
		     size_t *n, size_t *line, const char **err)
{
	size_t off = 0, lineno = 0, count = 0, i;
	bool have_current = false;
	struct stamp_key k;

	*n = 0;
	*line = 0;
	while (off < len) {
		const char *l = buf + off, *nl = memchr(l, '\n', len - off);
		size_t ll = nl != NULL ? (size_t)(nl - l) : len - off;
		const char *e;

		off += ll + (nl != NULL);
		lineno++;
		if (ll == 0 || l[0] == '#')
			continue;
		e = key_line(l, ll, &k);
		if (e == NULL) {
			for (i = 0; i < count && e == NULL; i++)
				if (out[i].kid == k.kid)
					e = "duplicate kid";
		}
		if (e == NULL && k.expires == 0 && have_current)
			e = "two current keys (only one may lack an expiry)";
		if (e == NULL && count == max)
			e = "too many keys";
		if (e != NULL) {
			OPENSSL_cleanse(&k, sizeof(k));
			OPENSSL_cleanse(out, count * sizeof(*out));
			*line = lineno;
			*err = e;
			return -1;
		}
		have_current = have_current || k.expires == 0;
		out[count++] = k;
	}
	OPENSSL_cleanse(&k, sizeof(k));
	*n = count;
	return 0;
}

int stamp_keys_write(FILE *f, const struct stamp_key *keys, size_t n)
{
	char hex[KEY_HEX + 1];
	size_t i;
	int ret = -1;

	if (fputs("# sluice stamp keys v1\n", f) == EOF)
		return -1;
	for (i = 0; i < n; i++) {
		if (keys[i].kid == 0 || keys[i].expires < 0)
			goto out_cleanse;
		hex_encode(keys[i].key, sizeof(keys[i].key), hex);
		if (keys[i].expires == 0 ? fprintf(f, "%lu %s\n", (unsigned long)keys[i].kid, hex) < 0
					 : fprintf(f, "%lu %s %lld\n", (unsigned long)keys[i].kid, hex,
						   (long long)keys[i].expires) < 0)
			goto out_cleanse;
	}
	ret = 0;
out_cleanse:
	OPENSSL_cleanse(hex, sizeof(hex));
	return ret;
}

/* The slot for boot: its own, else a free one, else the least recently used (reset). */
static struct stamp_replay_boot *replay_slot(struct stamp_replay *r, const char *boot)
{
	struct stamp_replay_boot *b, *victim = &r->boots[0];
	size_t i;

	for (i = 0; i < STAMP_BOOTS; i++) {
		b = &r->boots[i];
		if (b->used != 0 && strncmp(b->boot, boot, sizeof(b->boot)) == 0)
			return b;
		/* used == 0 marks a free slot and sorts below every used one */
		if (b->used < victim->used)
			victim = b;
	}
	memset(victim, 0, sizeof(*victim));
	return victim;
}

static bool bit_get(const struct stamp_replay_boot *b, uint64_t seq)
{
	uint64_t i = seq % STAMP_WINDOW;

	return (b->bits[i / 64] >> (i % 64)) & 1;
}

static void bit_put(struct stamp_replay_boot *b, uint64_t seq, bool on)
{
	uint64_t i = seq % STAMP_WINDOW, m = (uint64_t)1 << (i % 64);

	b->bits[i / 64] = on ? b->bits[i / 64] | m : b->bits[i / 64] & ~m;
}

/*
 * The bitmap is a ring indexed by seq % STAMP_WINDOW covering
 * [top - STAMP_WINDOW, top). A seq of 2^63 or more (which no valid stamp
 * carries) counts as a replay. A zeroed struct stamp_replay is empty.
 */
bool stamp_replay_check(struct stamp_replay *r, const char *boot, uint64_t seq)
{
	struct stamp_replay_boot *b;
	uint64_t s;

	if (seq >= SEQ_LIMIT)
		return false;
	b = replay_slot(r, boot);
	if (seq >= b->top) {
		if (seq - b->top >= STAMP_WINDOW)
			memset(b->bits, 0, sizeof(b->bits));
		else
			for (s = b->top; s < seq; s++)
				bit_put(b, s, false);
	} else if (b->top - seq > STAMP_WINDOW || bit_get(b, seq)) {
		return false;
	}
	if (seq >= b->top)
		b->top = seq + 1;
	bit_put(b, seq, true);
	if (b->used == 0) {
		memcpy(b->boot, boot, strnlen(boot, sizeof(b->boot) - 1));
		b->boot[sizeof(b->boot) - 1] = '\0';
	}
	b->used = ++r->clock;
	return true;
}
