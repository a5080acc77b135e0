/*
 * tls_hello.c: the server name in a TLS ClientHello, and whether the
 * server's answer is a HelloRetryRequest (tls_hello.h).
 *
 * Two passes, both through bounds-checked cursors: the records at the
 * start of the buffer are walked and their fragments copied into the
 * caller's msg until the first handshake message is whole (every record
 * header and length checked against the caps before it is used), then
 * that message is parsed as a ClientHello, strictly: every vector must
 * fit its parent, the extensions must end where the message does, and
 * the server_name extension must appear once, holding exactly one
 * host_name, as OpenSSL, BoringSSL and Go require, so the name judged is
 * the name the origin's TLS stack reads; and it must end where its
 * record does, so the bytes judged are exactly the bytes sent. The
 * server's first message is reassembled the same way, only to read its
 * random. Nothing after a hello is read (early data, a second flight),
 * and the name is not judged here.
 */
#include "tls_hello.h"

#include <string.h>

#define REC_HEADER 5
#define REC_MAX 16384    /* a TLSPlaintext fragment, at most (RFC 8446 5.1) */
#define HS_HEADER 4
#define REC_HANDSHAKE 22
#define HS_CLIENT_HELLO 1
#define HS_SERVER_HELLO 2
#define EXT_SERVER_NAME 0
#define NAME_HOST 0

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

static int not(struct tls_hello *h, const char *why)
{
	h->why = why;
	return TLS_HELLO_NOT;
}

/*
 * The handshake message's header, as far as msg holds it: of the type
 * wanted, within TLS_HELLO_MAX. Returns 0 (fine so far) or NOT.
 */
static int check_header(struct tls_hello *h, unsigned type)
{
	size_t hlen;

	if (h->msg_len >= 1 && h->msg[0] != type)
		return not(h, "the first handshake message is not a ClientHello");
	if (h->msg_len < HS_HEADER)
		return 0;
	hlen = (size_t)h->msg[1] << 16 | (size_t)h->msg[2] << 8 | h->msg[3];
	if (hlen > TLS_HELLO_MAX - HS_HEADER)
		return not(h, "the ClientHello is over 16384 bytes");
	return 0;
}

/* The bytes msg must hold next: the 4-byte header, then the whole message. */
static size_t msg_target(const struct tls_hello *h)
{
	if (h->msg_len < HS_HEADER)
		return HS_HEADER;
	return HS_HEADER + ((size_t)h->msg[1] << 16 | (size_t)h->msg[2] << 8 | h->msg[3]);
}

/*
 * Pass one: the fragments of the handshake records at the start of
 * buf[0..len) into msg, until the first message (of the type wanted) is
 * whole. With alone, it must end where a record does (a ClientHello is
 * the only message of its flight): h->wire is then that record's end.
 * Returns 0 (whole), MORE or NOT.
 */
static int reassemble(struct tls_hello *h, const unsigned char *buf, size_t len, unsigned type,
		      bool alone)
{
	size_t pos = 0;

	h->msg_len = 0;
	for (;;) {
		struct cur c = { buf + pos, len - pos }, frag;
		size_t rlen;
		bool partial;

		if (pos + REC_HEADER + 1 > TLS_HELLO_WIRE_MAX)
			return not(h, "the ClientHello is cut in too many records");
		/* what a partial header shows already decides */
		if (c.n >= 1 && c.p[0] != REC_HANDSHAKE)
			return not(h, pos == 0 ? "not a TLS handshake record"
					      : "a record inside the ClientHello is not a handshake record");
		if (c.n >= 2 && c.p[1] != 3)
			return not(h, "not a TLS record version");
		if (c.n < REC_HEADER)
			return TLS_HELLO_MORE;
		rlen = (size_t)c.p[3] << 8 | c.p[4];
		if (rlen == 0 || rlen > REC_MAX)
			return not(h, "a TLS record of a length TLS forbids");
		if (pos + REC_HEADER + rlen > TLS_HELLO_WIRE_MAX)
			return not(h, "the ClientHello is cut in too many records");
		take(&c, REC_HEADER, NULL);
		partial = c.n < rlen;
		take(&c, partial ? c.n : rlen, &frag); /* what is here of this record */
		while (frag.n > 0) {
			size_t want = msg_target(h) - h->msg_len;
			size_t k = frag.n < want ? frag.n : want;

			memcpy(h->msg + h->msg_len, frag.p, k);
			h->msg_len += k;
			take(&frag, k, NULL);
			if (check_header(h, type) == TLS_HELLO_NOT)
				return TLS_HELLO_NOT;
			if (h->msg_len < msg_target(h))
				continue;
			/* whole: its record's length already says whether more follows in it */
			if (alone && (frag.n > 0 || partial))
				return not(h, "more in the ClientHello's last record than the ClientHello");
			h->wire = pos + REC_HEADER + rlen;
			return 0;
		}
		if (partial)
			return TLS_HELLO_MORE;
		pos += REC_HEADER + rlen;
	}
}

/* The server_name extension's body: exactly one host_name. Returns FOUND or NOT. */
static int server_name(struct tls_hello *h, struct cur ext)
{
	struct cur list, name;
	size_t type;

	if (vec(&ext, 2, &list) == -1 || ext.n != 0)
		return not(h, "a malformed server_name extension");
	if (u8(&list, &type) == -1 || type != NAME_HOST || vec(&list, 2, &name) == -1)
		return not(h, "a malformed server_name extension");
	if (list.n != 0)
		return not(h, "a server_name extension with more than one name");
	if (!name_ok(name.p, name.n))
		return not(h, "a server name that is not a printable host name");
	memcpy(h->name, name.p, name.n);
	h->name[name.n] = '\0';
	return TLS_HELLO_FOUND;
}

/* Pass two: msg as a ClientHello. Returns FOUND, NONE or NOT. */
static int parse(struct tls_hello *h)
{
	struct cur c = { h->msg + HS_HEADER, h->msg_len - HS_HEADER }, sid, suites, comp, exts;
	size_t v;
	int found = TLS_HELLO_NONE;

	/* legacy_version, random, session id, cipher suites, compression methods */
	if (u16(&c, &v) == -1 || (v >> 8) != 3 || take(&c, 32, NULL) == -1 ||
	    vec(&c, 1, &sid) == -1 || sid.n > 32 || vec(&c, 2, &suites) == -1 || suites.n == 0 ||
	    suites.n % 2 != 0 || vec(&c, 1, &comp) == -1 || comp.n == 0)
		return not(h, "a malformed ClientHello");
	if (c.n == 0)
		return TLS_HELLO_NONE; /* no extensions at all (TLS 1.2 allows it) */
	if (vec(&c, 2, &exts) == -1 || c.n != 0)
		return not(h, "a malformed ClientHello");
	while (exts.n > 0) {
		struct cur ext;
		size_t type;

		if (u16(&exts, &type) == -1 || vec(&exts, 2, &ext) == -1)
			return not(h, "a malformed extension in the ClientHello");
		if (type != EXT_SERVER_NAME)
			continue;
		if (found == TLS_HELLO_FOUND)
			return not(h, "two server_name extensions");
		found = server_name(h, ext);
		if (found == TLS_HELLO_NOT)
			return TLS_HELLO_NOT;
	}
	return found;
}

static int read_hello(struct tls_hello *h, const unsigned char *buf, size_t len)
{
	int r;

	h->msg_len = 0;
	h->wire = 0;
	h->name[0] = '\0';
	h->why = NULL;
	r = reassemble(h, buf, len, HS_CLIENT_HELLO, true);
	if (r != 0)
		return r;
	r = parse(h);
	if (r != TLS_HELLO_FOUND)
		h->name[0] = '\0';
	return r;
}

int tls_hello_read(struct tls_hello *h, const void *buf, size_t len)
{
	return read_hello(h, buf, len);
}

int tls_hello_read_again(struct tls_hello *h, const void *buf, size_t len)
{
	static const unsigned char ccs[] = { 20, 3, 3, 0, 1, 1 };
	const unsigned char *p = buf;
	size_t skip = 0;
	int r;

	/* one change_cipher_spec record, the compatibility mode's, may come first */
	if (len >= 1 && p[0] == ccs[0]) {
		size_t k = len < sizeof(ccs) ? len : sizeof(ccs);

		h->msg_len = h->wire = 0;
		h->name[0] = '\0';
		if (memcmp(p, ccs, k) != 0)
			return not(h, "a change_cipher_spec record that is not the one TLS 1.3 allows");
		if (len < sizeof(ccs))
			return TLS_HELLO_MORE;
		skip = sizeof(ccs);
	}
	r = read_hello(h, p + skip, len - skip);
	h->wire += r == TLS_HELLO_FOUND || r == TLS_HELLO_NONE ? skip : 0;
	return r;
}

/* SHA-256("HelloRetryRequest"): the random of a ServerHello that is one (RFC 8446 4.1.3) */
static const unsigned char hrr_random[32] = {
	0xcf, 0x21, 0xad, 0x74, 0xe5, 0x9a, 0x61, 0x11, 0xbe, 0x1d, 0x8c, 0x02, 0x1e, 0x65, 0xb8, 0x91,
	0xc2, 0xa2, 0x11, 0x16, 0x7a, 0xbb, 0x8c, 0x5e, 0x07, 0x9e, 0x09, 0xe2, 0xc8, 0xa8, 0x33, 0x9c,
};

int tls_hello_server(struct tls_hello *h, const void *buf, size_t len)
{
	int r;

	h->why = NULL;
	r = reassemble(h, buf, len, HS_SERVER_HELLO, false);
	if (r == TLS_HELLO_MORE)
		return TLS_HELLO_MORE;
	/* version (2), then the random */
	if (r == 0 && h->msg_len >= HS_HEADER + 2 + 32 &&
	    memcmp(h->msg + HS_HEADER + 2, hrr_random, 32) == 0)
		return TLS_HELLO_RETRY;
	return TLS_HELLO_NONE;
}
