/*
 * inject.c: which rule a request gets, for whom, and the bytes it writes.
 *
 * Pure functions over a loaded config and caller-sized buffers: no I/O,
 * no allocation, no logging (a secret passes through here and must not be
 * copied anywhere but out). Fetching the secret, running token commands
 * and editing the request head are the proxy's; the rules for all of it
 * are in inject.h.
 */
#include "inject.h"

#include <openssl/sha.h>
#include <string.h>
#include <strings.h>

#include "config.h"
#include "digits.h"
#include "hex.h"
#include "http_bytes.h"

static bool is_dot_segment(size_t n, bool dots)
{
	return dots && (n == 1 || n == 2);
}

/*
 * Whether p[0..len) (a path without its query) can only mean what its raw
 * bytes say: it starts with '/', every %XX is well formed and not %00, and
 * once decoded it holds no backslash and no "." or ".." segment (the part
 * of a segment before ';' counts, for servers that strip matrix params).
 */
static bool path_clear(const char *p, size_t len)
{
	size_t i = 1, n = 0;
	bool dots = true, semi = false;

	if (len == 0 || p[0] != '/')
		return false;
	while (i < len) {
		int ch = (unsigned char)p[i];

		if (ch == '%') {
			uint64_t v;

			if (len - i < 3 || hex_parse(p + i + 1, 2, 0xff, &v) == -1)
				return false;
			ch = (int)v;
			i += 3;
		} else {
			i++;
		}
		if (ch == '\0' || ch == '\\')
			return false;
		if (ch == '/') {
			if (is_dot_segment(n, dots))
				return false;
			n = 0;
			dots = true;
			semi = false;
			continue;
		}
		if (semi)
			continue;
		if (ch == ';') {
			semi = true;
			continue;
		}
		n++;
		if (ch != '.')
			dots = false;
	}
	return !is_dot_segment(n, dots);
}

/* Whether rule path rp covers p[0..len) on a segment boundary. */
static bool path_covers(const char *rp, const char *p, size_t len)
{
	size_t rl = strlen(rp);

	if (len < rl || memcmp(rp, p, rl) != 0)
		return false;
	return len == rl || rp[rl - 1] == '/' || p[rl] == '/';
}

const struct inject_rule *inject_match(const struct config *c, const char *host, uint16_t port,
				       const char *path, size_t path_len)
{
	const char *q = memchr(path, '?', path_len);
	size_t plen = q != NULL ? (size_t)(q - path) : path_len;
	bool clear = path_clear(path, plen);

	for (size_t i = 0; i < c->nrules; i++) {
		const struct inject_rule *r = &c->rules[i];

		if (r->port != port || strcmp(r->host, host) != 0)
			continue;
		if (strcmp(r->path, "/") == 0)
			return r;
		if (clear && path_covers(r->path, path, plen))
			return r;
	}
	return NULL;
}

bool inject_serves(const struct inject_rule *r, const char *who, const char *src,
		   const char *as)
{
	if (who == NULL || strcmp(who, "unattributed") == 0)
		return r->unattributed;
	if (r->nprincipals == 0)
		return true;
	for (size_t i = 0; i < r->nprincipals; i++)
		if (scope_matches(&r->principals[i], who, src, as))
			return true;
	return false;
}

const struct scope *inject_serving_principal(const struct inject_rule *r, const char *who,
					     const char *src, const char *as)
{
	if (who == NULL || strcmp(who, "unattributed") == 0)
		return NULL;
	for (size_t i = 0; i < r->nprincipals; i++)
		if (scope_matches(&r->principals[i], who, src, as))
			return &r->principals[i];
	return NULL;
}

int inject_key_name(const char *text, char *out, size_t size)
{
	unsigned char md[SHA256_DIGEST_LENGTH];

	if (size < 2 * sizeof(md) + 2)
		return -1;
	SHA256((const unsigned char *)text, strlen(text), md);
	out[0] = 'k';
	hex_encode(md, sizeof(md), out + 1);
	return (int)(1 + 2 * sizeof(md));
}

bool inject_is_placeholder(const struct inject_rule *r, const char *value, size_t len)
{
	return r->require[0] != '\0' && strlen(r->require) == len &&
	       memcmp(r->require, value, len) == 0;
}

/* A byte a header value may not carry: a control other than HTAB. */
static bool is_ctl(unsigned char ch)
{
	return (ch < 0x20 && ch != '\t') || ch == 0x7f;
}

int inject_header_value(const struct inject_rule *r, const char *secret, size_t slen,
			char *out, size_t size)
{
	size_t pl = strlen(r->prefix);

	if (r->target != INJECT_HEADER || slen == 0 || slen > INJECT_SECRET_MAX)
		return -1;
	for (size_t i = 0; i < slen; i++)
		if (is_ctl((unsigned char)secret[i]))
			return -1;
	if (size <= pl + slen)
		return -1;
	memcpy(out, r->prefix, pl);
	memcpy(out + pl, secret, slen);
	out[pl + slen] = '\0';
	return (int)(pl + slen);
}

/* An output buffer that remembers overflowing instead of writing past size. */
struct sink {
	char *p;
	size_t size;
	size_t off;
	bool full;
};

static void sink_put(struct sink *k, const char *s, size_t n)
{
	if (k->full || k->size - k->off <= n) {
		k->full = true;
		return;
	}
	memcpy(k->p + k->off, s, n);
	k->off += n;
	k->p[k->off] = '\0';
}

static bool is_unreserved(unsigned char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       ch == '-' || ch == '.' || ch == '_' || ch == '~';
}

static void sink_encoded(struct sink *k, const char *s, size_t n)
{
	static const char hex[] = "0123456789ABCDEF";

	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		char esc[3] = { '%', hex[ch >> 4], hex[ch & 15] };

		if (is_unreserved(ch))
			sink_put(k, s + i, 1);
		else
			sink_put(k, esc, 3);
	}
}

/* name=prefix+secret, encoded. */
static void sink_param(struct sink *k, const struct inject_rule *r, const char *secret,
		       size_t slen)
{
	sink_put(k, r->field, strlen(r->field));
	sink_put(k, "=", 1);
	sink_encoded(k, r->prefix, strlen(r->prefix));
	sink_encoded(k, secret, slen);
}

/* Whether the parameter p[0..n) is named name; sets *value and *vlen to its raw value. */
static bool param_named(const char *p, size_t n, const char *name, const char **value,
			size_t *vlen)
{
	const char *eq = memchr(p, '=', n);
	size_t nl = eq != NULL ? (size_t)(eq - p) : n;

	*value = eq != NULL ? eq + 1 : p + n;
	*vlen = eq != NULL ? n - nl - 1 : 0;
	return nl == strlen(name) && memcmp(p, name, nl) == 0;
}

int inject_query_rewrite(const struct inject_rule *r, const char *path, size_t len,
			 const char *secret, size_t slen, char *out, size_t size,
			 bool *injected)
{
	struct sink k = { out, size, 0, false };
	const char *q = memchr(path, '?', len);
	size_t qs = q != NULL ? (size_t)(q - path) + 1 : len, count = 0, off;
	bool placeholder = false, first = true, written = false;

	*injected = false;
	if (r->target != INJECT_QUERY || slen == 0 || slen > INJECT_SECRET_MAX || size == 0)
		return -1;
	out[0] = '\0';
	/* the parameters: the query split on '&', empty ones included; none if it is empty */
	for (off = qs; q != NULL && qs < len;) {
		const char *amp = memchr(path + off, '&', len - off);
		size_t n = amp != NULL ? (size_t)(amp - path) - off : len - off;
		const char *v;
		size_t vl;

		if (param_named(path + off, n, r->field, &v, &vl)) {
			count++;
			placeholder = inject_is_placeholder(r, v, vl);
		}
		if (amp == NULL)
			break;
		off += n + 1;
	}
	if (r->require[0] != '\0' && (count != 1 || !placeholder)) {
		sink_put(&k, path, len);
		return k.full ? -1 : (int)k.off;
	}
	sink_put(&k, path, qs);
	if (q == NULL)
		sink_put(&k, "?", 1);
	for (off = qs; q != NULL && qs < len;) {
		const char *amp = memchr(path + off, '&', len - off);
		size_t n = amp != NULL ? (size_t)(amp - path) - off : len - off;
		const char *v;
		size_t vl;
		bool named = param_named(path + off, n, r->field, &v, &vl);

		if (!named || !written) {
			if (!first)
				sink_put(&k, "&", 1);
			first = false;
			if (named) {
				sink_param(&k, r, secret, slen);
				written = true;
			} else {
				sink_put(&k, path + off, n);
			}
		}
		if (amp == NULL)
			break;
		off += n + 1;
	}
	if (!written) {
		if (!first)
			sink_put(&k, "&", 1);
		sink_param(&k, r, secret, slen);
	}
	if (k.full)
		return -1;
	*injected = true;
	return (int)k.off;
}

int inject_token_parse(const char *buf, size_t len, char *secret, size_t ssize,
		       unsigned *ttl_s, const char **err)
{
	const char *nl = memchr(buf, '\n', len);
	size_t vlen = nl != NULL ? (size_t)(nl - buf) : len, rest, tlen;
	unsigned ttl = INJECT_TTL_DEFAULT;

	if (vlen == 0) {
		*err = "empty token";
		return -1;
	}
	if (vlen > INJECT_SECRET_MAX) {
		*err = "token longer than 8192 bytes";
		return -1;
	}
	for (size_t i = 0; i < vlen; i++) {
		unsigned char ch = (unsigned char)buf[i];

		if (ch == '\r' || ch == '\0' || is_ctl(ch)) {
			*err = ch == '\r' ? "carriage return in token"
					  : ch == '\0' ? "nul byte in token" : "control byte in token";
			return -1;
		}
	}
	if (vlen >= ssize) {
		*err = "token does not fit";
		return -1;
	}
	rest = nl != NULL ? len - vlen - 1 : 0;
	if (rest > 0) {
		const char *t = nl + 1, *tnl = memchr(t, '\n', rest);
		uint64_t v;

		tlen = tnl != NULL ? (size_t)(tnl - t) : rest;
		if (tlen == 0 || tlen > 5) {
			*err = tlen == 0 ? "empty ttl line" : "bad ttl";
			return -1;
		}
		/* five digits at most (leading zeros count); the range has its own message */
		if (dec_parse(t, tlen, 99999, &v) == -1) {
			*err = "bad ttl";
			return -1;
		}
		ttl = (unsigned)v;
		if (ttl < 1 || ttl > INJECT_TTL_MAX) {
			*err = "ttl out of range 1..86400";
			return -1;
		}
		if (rest - tlen > 1) {
			*err = "junk after the ttl";
			return -1;
		}
	}
	memcpy(secret, buf, vlen);
	secret[vlen] = '\0';
	*ttl_s = ttl;
	return (int)vlen;
}
