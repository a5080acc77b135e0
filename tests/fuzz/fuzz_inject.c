/*
 * fuzz_inject.c: libFuzzer target for the parsers of lib/inject.c.
 *
 * Byte 0 picks what the rest is fed to:
 *   0: inject_token_parse. An accepted output must give a value of
 *      1..8192 bytes without CR, LF or NUL and a TTL in 1..86400, and the
 *      same value and TTL written back canonically must parse the same.
 *   1: inject_query_rewrite, byte 1 choosing the rule (with or without
 *      require= and prefix=), byte 2 the secret's length; the rest is the
 *      request target. The result must keep the path and every other
 *      parameter in order, hold the parameter exactly once with the
 *      encoded secret when injected, be the input itself when not, and
 *      give -1 (never overflow) when out is one byte short.
 *   2: inject_match: a match with a path must be a prefix of the target.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "inject.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char rules_text[] =
	"inject plain host=a.example query=key env=T\n"
	"inject req host=b.example query=key env=T require=PH\n"
	"inject pre host=c.example query=k prefix=\"tok en\" env=T\n"
	"inject reqpre host=d.example query=api_key prefix=x env=T require=P-H\n"
	"inject v1 host=e.example path=/v1 header=X-K env=T\n"
	"inject v2 host=e.example path=/v2/ header=X-K env=T\n"
	"inject all host=f.example header=X-K env=T\n";

static const struct config *rules(void)
{
	static struct config *c;

	if (c == NULL) {
		c = config_new();
		if (c == NULL || config_parse(c, rules_text, sizeof(rules_text) - 1, "r", stderr) != 0)
			abort();
	}
	return c;
}

static void fuzz_token(const char *buf, size_t len)
{
	char secret[INJECT_SECRET_MAX + 1], again[INJECT_SECRET_MAX + 1];
	char *canon;
	const char *err = NULL;
	unsigned ttl = 0, ttl2 = 0;
	int n = inject_token_parse(buf, len, secret, sizeof(secret), &ttl, &err), m, cl;

	if (n == -1) {
		if (err == NULL)
			abort();
		return;
	}
	if (n < 1 || n > INJECT_SECRET_MAX || ttl < 1 || ttl > INJECT_TTL_MAX ||
	    memchr(secret, '\r', (size_t)n) != NULL || memchr(secret, '\n', (size_t)n) != NULL ||
	    memchr(secret, '\0', (size_t)n) != NULL || memcmp(secret, buf, (size_t)n) != 0)
		abort();
	canon = malloc((size_t)n + 16);
	if (canon == NULL)
		abort();
	memcpy(canon, secret, (size_t)n);
	cl = n + snprintf(canon + n, 16, "\n%u\n", ttl);
	m = inject_token_parse(canon, (size_t)cl, again, sizeof(again), &ttl2, &err);
	if (m != n || ttl2 != ttl || memcmp(again, secret, (size_t)n) != 0)
		abort();
	free(canon);
}

/* The parameters of query q[0..len), split on '&' (none for an empty query). */
static size_t split(const char *q, size_t len, const char **p, size_t *pl, size_t max)
{
	size_t n = 0, off = 0;

	if (len == 0)
		return 0;
	for (;;) {
		const char *amp = memchr(q + off, '&', len - off);
		size_t l = amp != NULL ? (size_t)(amp - q) - off : len - off;

		if (n == max)
			abort();
		p[n] = q + off;
		pl[n++] = l;
		if (amp == NULL)
			return n;
		off += l + 1;
	}
}

static bool named(const char *p, size_t l, const char *name)
{
	const char *eq = memchr(p, '=', l);
	size_t nl = eq != NULL ? (size_t)(eq - p) : l;

	return nl == strlen(name) && memcmp(p, name, nl) == 0;
}

static void encode(const char *s, size_t n, char *out, size_t *o)
{
	static const char hex[] = "0123456789ABCDEF";

	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];

		if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
		    ch == '-' || ch == '.' || ch == '_' || ch == '~') {
			out[(*o)++] = (char)ch;
		} else {
			out[(*o)++] = '%';
			out[(*o)++] = hex[ch >> 4];
			out[(*o)++] = hex[ch & 15];
		}
	}
}

static void fuzz_query(const uint8_t *data, size_t size)
{
	const struct inject_rule *r;
	const char *secret, *path, *q, *oq;
	size_t slen, len, cap, qs, oqs, np, no, nin = 0, el = 0;
	const char **ip, **op;
	size_t *ipl, *opl;
	char *out, *expect;
	bool injected, placeholder_once = false;
	int n;

	if (size < 2)
		return;
	r = &rules()->rules[data[0] % 4];
	slen = data[1] % 24;
	if (size - 2 < slen)
		return;
	secret = (const char *)data + 2;
	path = secret + slen;
	len = size - 2 - slen;
	cap = len + 64 + 3 * (slen + INJECT_PREFIX_MAX);
	out = malloc(cap);
	expect = malloc(3 * (slen + INJECT_PREFIX_MAX) + 1);
	ip = malloc((len + 2) * sizeof(*ip));
	op = malloc((cap + 2) * sizeof(*op));
	ipl = malloc((len + 2) * sizeof(*ipl));
	opl = malloc((cap + 2) * sizeof(*opl));
	if (out == NULL || expect == NULL || ip == NULL || op == NULL || ipl == NULL || opl == NULL)
		abort();
	n = inject_query_rewrite(r, path, len, secret, slen, out, cap, &injected);
	if (slen == 0) {
		if (n != -1)
			abort();
		goto out;
	}
	if (n < 0 || (size_t)n >= cap || out[n] != '\0')
		abort();

	q = memchr(path, '?', len);
	qs = q != NULL ? (size_t)(q - path) + 1 : len;
	np = q != NULL ? split(path + qs, len - qs, ip, ipl, len + 2) : 0;
	for (size_t i = 0; i < np; i++) {
		if (named(ip[i], ipl[i], r->field)) {
			nin++;
			placeholder_once = ipl[i] == strlen(r->field) + 1 + strlen(r->require) &&
					   memcmp(ip[i] + strlen(r->field) + 1, r->require,
						  strlen(r->require)) == 0;
		}
	}
	if (r->require[0] != '\0' && (nin != 1 || !placeholder_once)) {
		if (injected || (size_t)n != len || memcmp(out, path, len) != 0)
			abort();
		goto out;
	}
	if (!injected)
		abort();
	/* the path up to '?' is unchanged, and there is a '?' */
	oq = memchr(out, '?', (size_t)n);
	if (oq == NULL || (size_t)(oq - out) + 1 != (q != NULL ? qs : len + 1) ||
	    memcmp(out, path, (size_t)(oq - out)) != 0)
		abort();
	oqs = (size_t)(oq - out) + 1;
	no = split(out + oqs, (size_t)n - oqs, op, opl, cap + 2);
	/* the expected parameter */
	memcpy(expect, r->field, strlen(r->field));
	el = strlen(r->field);
	expect[el++] = '=';
	encode(r->prefix, strlen(r->prefix), expect, &el);
	encode(secret, slen, expect, &el);
	/* out's parameters: the input's, the first named one replaced, later ones dropped */
	{
		size_t want = 0;
		bool written = false;

		for (size_t i = 0; i <= np; i++) {
			const char *wp;
			size_t wl;

			if (i == np && written)
				break;
			if (i < np && named(ip[i], ipl[i], r->field) && written)
				continue;
			if (i == np || named(ip[i], ipl[i], r->field)) {
				wp = expect;
				wl = el;
				written = true;
			} else {
				wp = ip[i];
				wl = ipl[i];
			}
			if (want >= no || opl[want] != wl || memcmp(op[want], wp, wl) != 0)
				abort();
			want++;
		}
		if (want != no)
			abort();
	}
	/* one byte short of room: refused, nothing written past it */
	if (inject_query_rewrite(r, path, len, secret, slen, out, (size_t)n, &injected) != -1)
		abort();
out:
	free(out);
	free(expect);
	free(ip);
	free(op);
	free(ipl);
	free(opl);
}

static void fuzz_match(const char *buf, size_t len)
{
	static const char *const hosts[] = { "e.example", "f.example", "a.example" };
	const struct inject_rule *r;
	const char *q;
	size_t plen;

	if (len == 0)
		return;
	r = inject_match(rules(), hosts[(unsigned char)buf[0] % 3], (unsigned char)buf[0] < 128 ? 443 : 8443,
			 buf + 1, len - 1);
	if (r == NULL || strcmp(r->path, "/") == 0)
		return;
	q = memchr(buf + 1, '?', len - 1);
	plen = q != NULL ? (size_t)(q - buf - 1) : len - 1;
	if (plen < strlen(r->path) || memcmp(buf + 1, r->path, strlen(r->path)) != 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	switch (data[0] % 3) {
	case 0:
		fuzz_token((const char *)data + 1, size - 1);
		break;
	case 1:
		fuzz_query(data + 1, size - 1);
		break;
	default:
		fuzz_match((const char *)data + 1, size - 1);
		break;
	}
	return 0;
}
