/*
 * tls_hello.c: the server name in a TLS ClientHello (tls_hello.h).
 *
 * Reads only the first record, through a bounds-checked cursor: every
 * length is checked against what remains before it is used.
 */
#include "tls_hello.h"

#include <string.h>

struct cur {
	const unsigned char *p;
	size_t n;
};

static int take(struct cur *c, size_t k, struct cur *out)
{
	if (k > c->n)
		return -1;
	if (out != NULL) {
		out->p = c->p;
		out->n = k;
	}
	c->p += k;
	c->n -= k;
	return 0;
}

static int u8(struct cur *c, size_t *v)
{
	if (c->n < 1)
		return -1;
	*v = c->p[0];
	return take(c, 1, NULL);
}

static int u16(struct cur *c, size_t *v)
{
	if (c->n < 2)
		return -1;
	*v = (size_t)c->p[0] << 8 | c->p[1];
	return take(c, 2, NULL);
}

static int u24(struct cur *c, size_t *v)
{
	if (c->n < 3)
		return -1;
	*v = (size_t)c->p[0] << 16 | (size_t)c->p[1] << 8 | c->p[2];
	return take(c, 3, NULL);
}

/* A vector with a length prefix of w bytes (1 or 2). */
static int vec(struct cur *c, int w, struct cur *out)
{
	size_t len;

	if ((w == 1 ? u8(c, &len) : u16(c, &len)) == -1)
		return -1;
	return take(c, len, out);
}

static bool name_ok(const unsigned char *p, size_t n)
{
	if (n == 0 || n > TLS_HELLO_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (p[i] <= 0x20 || p[i] >= 0x7f)
			return false;
	return true;
}

int tls_hello_sni(const void *buf, size_t len, char *out, size_t size)
{
	struct cur c = { buf, len }, rec, hs, body, ext;
	size_t type, rlen, hlen, v;

	out[0] = '\0';
	if (len < 5)
		return TLS_HELLO_MORE;
	if (u8(&c, &type) == -1 || type != 22 || u16(&c, &v) == -1 || (v >> 8) != 3 ||
	    u16(&c, &rlen) == -1 || rlen == 0 || rlen > 16384)
		return TLS_HELLO_NOT;
	if (c.n < rlen)
		return TLS_HELLO_MORE;
	take(&c, rlen, &rec);
	if (u8(&rec, &type) == -1 || type != 1)
		return TLS_HELLO_NOT;
	if (u24(&rec, &hlen) == -1)
		return TLS_HELLO_NOT;
	if (rec.n < hlen)
		return TLS_HELLO_NOT; /* a ClientHello over two records: not read here */
	take(&rec, hlen, &hs);
	/* version, random, session id, cipher suites, compression methods */
	if (take(&hs, 2 + 32, NULL) == -1 || vec(&hs, 1, NULL) == -1 || vec(&hs, 2, NULL) == -1 ||
	    vec(&hs, 1, NULL) == -1)
		return TLS_HELLO_NOT;
	if (hs.n == 0)
		return TLS_HELLO_NONE; /* no extensions */
	if (vec(&hs, 2, &body) == -1)
		return TLS_HELLO_NOT;
	while (body.n > 0) {
		size_t etype;

		if (u16(&body, &etype) == -1 || vec(&body, 2, &ext) == -1)
			return TLS_HELLO_NOT;
		if (etype == 0) {
			struct cur list, name;
			size_t ntype;

			if (vec(&ext, 2, &list) == -1 || u8(&list, &ntype) == -1 || ntype != 0 ||
			    vec(&list, 2, &name) == -1 || !name_ok(name.p, name.n) ||
			    name.n >= size)
				return TLS_HELLO_NOT;
			memcpy(out, name.p, name.n);
			out[name.n] = '\0';
			return TLS_HELLO_FOUND;
		}
	}
	return TLS_HELLO_NONE;
}
