/*
 * inject_forms.c: the forms a secret may come back in, for the scrubber.
 *
 * An origin that reflects a credential rarely shows it only as sent: an
 * echoed URL or a Location carries a query rule's value percent-encoded (in
 * upper case as the proxy writes it, in lower case, or encoded once more
 * inside another URL; as Python's urllib.parse.quote writes it, '/' left
 * raw, or quote_plus, a space as '+'), a debugging page shows a header
 * base64'd, a Basic credential is shown decoded, a JSON string escapes it
 * (and '/' too, in PHP's). Each form here is a string the scrubber masks
 * byte for byte, with as many '*'; a prefix (prefix=) is not secret and
 * is not masked, but the value inside "prefix+value" is found in every form: raw and
 * percent-encoding are byte-wise, and base64 is taken at all three
 * alignments, so base64 of the whole header value contains one of them.
 *
 * It does not know what an origin does beyond these forms (HTML escaping,
 * other encodings, a value split in pieces are not found).
 * Allocates the forms; inject_forms_release wipes and frees them.
 */
#include "inject.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>


static const char b64_std[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char b64_url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

void inject_forms_init(struct inject_forms *f)
{
	memset(f, 0, sizeof(*f));
}

void inject_forms_release(struct inject_forms *f)
{
	for (size_t i = 0; i < f->n; i++) {
		explicit_bzero(f->pat[i], f->len[i]);
		free(f->pat[i]);
		f->pat[i] = NULL;
	}
	f->n = 0;
}

/* Take p[0..len) (allocated) as a form: dropped if too short or known. Returns 0 or -1. */
static int take(struct inject_forms *f, char *p, size_t len)
{
	if (len < SCRUB_MIN_LEN)
		goto out_drop;
	for (size_t i = 0; i < f->n; i++)
		if (f->len[i] == len && memcmp(f->pat[i], p, len) == 0)
			goto out_drop;
	if (len > SCRUB_MAX_LEN || f->n == SCRUB_MAX_SECRETS) {
		explicit_bzero(p, len);
		free(p);
		errno = E2BIG;
		return -1;
	}
	f->pat[f->n] = p;
	f->len[f->n] = len;
	f->n++;
	return 0;
out_drop:
	explicit_bzero(p, len);
	free(p);
	return 0;
}

static bool is_unreserved(unsigned char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       ch == '-' || ch == '.' || ch == '_' || ch == '~';
}

/* How add_encoded writes the two bytes encoders disagree on. */
enum pct_style {
	PCT_ALL,   /* every byte but the unreserved: inject_query_rewrite, quote(v, safe="") */
	PCT_SLASH, /* '/' left raw: Python's urllib.parse.quote(v) (safe="/") */
	PCT_PLUS,  /* ' ' as '+': Python's quote_plus(v), urlencode, HTML form posts */
};

/* s[0..n) percent-encoded in style, hex digits from hex. */
static int add_encoded(struct inject_forms *f, const char *s, size_t n, const char *hex,
		       enum pct_style style, char **out, size_t *outlen)
{
	char *p = malloc(3 * n + 1);
	size_t w = 0;

	if (p == NULL)
		return -1;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (is_unreserved(ch) || (style == PCT_SLASH && ch == '/')) {
			p[w++] = (char)ch;
		} else if (style == PCT_PLUS && ch == ' ') {
			p[w++] = '+';
		} else {
			p[w++] = '%';
			p[w++] = hex[ch >> 4];
			p[w++] = hex[ch & 15];
		}
	}
	if (out != NULL) {
		/* the caller encodes it once more before it is taken */
		*out = p;
		*outlen = w;
		return 0;
	}
	return take(f, p, w);
}

/*
 * The base64 characters (alphabet a) that only s[0..n) decides when it
 * starts k bytes into an encoded blob (k = 0, 1, 2): character c covers
 * bits [6c, 6c + 6) of the blob, kept when they all lie in s.
 */
static int add_base64(struct inject_forms *f, const char *s, size_t n, size_t k, const char *a)
{
	size_t bits = 8 * (k + n), c = (8 * k + 5) / 6, w = 0;
	char *p = malloc(4 * (n + 3) / 3 + 4);

	if (p == NULL)
		return -1;
	for (; 6 * c + 6 <= bits; c++) {
		unsigned v = 0;

		/* the 6 bits at 6c, read from the bytes of s (the k leading bytes are not read) */
		for (size_t b = 6 * c; b < 6 * c + 6; b++) {
			unsigned char byte = (unsigned char)s[b / 8 - k];

			v = (v << 1) | ((byte >> (7 - b % 8)) & 1);
		}
		p[w++] = a[v];
	}
	return take(f, p, w);
}

static int b64_value(unsigned char ch)
{
	const char *q = ch != '\0' ? strchr(b64_std, ch) : NULL;

	return q != NULL ? (int)(q - b64_std) : -1;
}

/*
 * A Basic credential's value is base64 of user:pass: the decoded bytes and
 * the password alone are forms too. Not base64 (padding optional): nothing.
 */
static int add_basic(struct inject_forms *f, const char *s, size_t n)
{
	char *p, *colon, *pw;
	size_t w = 0, bits = 0;
	unsigned acc = 0;

	while (n > 0 && s[n - 1] == '=')
		n--;
	if (n % 4 == 1)
		return 0;
	p = malloc(n * 3 / 4 + 1);
	if (p == NULL)
		return -1;
	for (size_t i = 0; i < n; i++) {
		int v = b64_value((unsigned char)s[i]);

		if (v < 0) {
			explicit_bzero(p, w);
			free(p);
			return 0;
		}
		acc = (acc << 6) | (unsigned)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			p[w++] = (char)((acc >> bits) & 0xff);
		}
	}
	colon = memchr(p, ':', w);
	if (colon != NULL && (size_t)(p + w - colon - 1) >= SCRUB_MIN_LEN) {
		size_t pl = (size_t)(p + w - colon - 1);

		pw = malloc(pl);
		if (pw == NULL) {
			explicit_bzero(p, w);
			free(p);
			return -1;
		}
		memcpy(pw, colon + 1, pl);
		if (take(f, pw, pl) == -1) {
			explicit_bzero(p, w);
			free(p);
			return -1;
		}
	}
	return take(f, p, w);
}

/* The JSON escape of a control byte ch < 0x20 that has a short one ('t' for TAB), or 0. */
static char json_short(unsigned char ch)
{
	switch (ch) {
	case '\t':
		return 't';
	case '\n':
		return 'n';
	case '\r':
		return 'r';
	case '\b':
		return 'b';
	case '\f':
		return 'f';
	}
	return 0;
}

/*
 * s[0..n) inside a JSON string: '"', '\\' and, with slash, '/' (PHP's
 * json_encode escapes it, Python's json does not) after a backslash, the
 * controls as \t, \n, \r, \b, \f or \u00XX (lower-case hex, as Python
 * writes them). Other bytes as they are.
 */
static int add_json(struct inject_forms *f, const char *s, size_t n, bool slash)
{
	static const char hex[] = "0123456789abcdef";
	char *p = malloc(6 * n + 1);
	size_t w = 0;

	if (p == NULL)
		return -1;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (ch == '"' || ch == '\\' || (slash && ch == '/')) {
			p[w++] = '\\';
			p[w++] = (char)ch;
		} else if (ch < 0x20 && json_short(ch) != 0) {
			p[w++] = '\\';
			p[w++] = json_short(ch);
		} else if (ch < 0x20) {
			memcpy(p + w, "\\u00", 4);
			p[w + 4] = hex[ch >> 4];
			p[w + 5] = hex[ch & 15];
			w += 6;
		} else {
			p[w++] = (char)ch;
		}
	}
	return take(f, p, w);
}

static bool is_basic(const char *prefix)
{
	size_t n = strlen(prefix);

	while (n > 0 && prefix[n - 1] == ' ')
		n--;
	return n == 5 && strncasecmp(prefix, "basic", 5) == 0;
}

int inject_forms_add(struct inject_forms *f, const char *prefix, const char *secret, size_t slen)
{
	static const char upper[] = "0123456789ABCDEF";
	char *p, *once;
	size_t n;

	/* too short to mask without masking ordinary text: none of its forms either */
	if (slen < SCRUB_MIN_LEN)
		return 0;
	p = malloc(slen);
	if (p == NULL)
		return -1;
	memcpy(p, secret, slen);
	if (take(f, p, slen) == -1 ||
	    add_encoded(f, secret, slen, upper, PCT_ALL, NULL, NULL) == -1 ||
	    add_encoded(f, secret, slen, "0123456789abcdef", PCT_ALL, NULL, NULL) == -1 ||
	    add_encoded(f, secret, slen, upper, PCT_SLASH, NULL, NULL) == -1 ||
	    add_encoded(f, secret, slen, upper, PCT_PLUS, NULL, NULL) == -1 ||
	    add_encoded(f, secret, slen, upper, PCT_ALL, &once, &n) == -1)
		return -1;
	/* encoded twice: a URL carrying it, itself a parameter of another URL */
	if (add_encoded(f, once, n, upper, PCT_ALL, NULL, NULL) == -1) {
		explicit_bzero(once, n);
		free(once);
		return -1;
	}
	explicit_bzero(once, n);
	free(once);
	if (add_json(f, secret, slen, false) == -1 || add_json(f, secret, slen, true) == -1)
		return -1;
	for (size_t k = 0; k < 3; k++)
		if (add_base64(f, secret, slen, k, b64_std) == -1 ||
		    add_base64(f, secret, slen, k, b64_url) == -1)
			return -1;
	if (is_basic(prefix) && add_basic(f, secret, slen) == -1)
		return -1;
	return 0;
}
