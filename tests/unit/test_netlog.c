/*
 * test_netlog.c: the network log's escaping and rows. The escaper writes
 * bytes a client chose into JSON, so every byte value, every pair of bytes
 * and the invalid UTF-8 forms (overlong, surrogate, past U+10FFFF, cut
 * short, stray continuation) are fed through it, from guard pages; the
 * output must be a valid JSON string body (valid UTF-8, no raw control
 * byte, no raw code point a terminal acts on or hides) that decodes back
 * to the input, \u00XX standing for byte XX (or for U+00XX: a C1 control,
 * the soft hyphen), \uXXXX and surrogate pairs for the other code points
 * it escapes. Every such code point of the classes (C0, C1, the
 * bidi controls, the invisible format characters and separators) comes
 * out as exactly its escape. Rows written to a file are whole lines of
 * valid JSON, rotation included.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file.h"
#include "guard.h"
#include "netlog.h"

/* ------------------------------------------------------------- a JSON checker */

struct cur {
	const unsigned char *p, *end;
};

/* A valid UTF-8 sequence at c (RFC 3629): its length, or 0. */
static size_t u8len(const unsigned char *p, const unsigned char *end)
{
	uint32_t cp;
	size_t n;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		n = 2;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		n = 3;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		n = 4;
	else
		return 0;
	if ((size_t)(end - p) < n)
		return 0;
	cp = p[0] & (0x7f >> n);
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

static int hexval(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* cp in UTF-8 into out; returns its length. */
static size_t u8put(uint32_t cp, unsigned char *out)
{
	if (cp < 0x80) {
		out[0] = (unsigned char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (unsigned char)(0xc0 | cp >> 6);
		out[1] = (unsigned char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (unsigned char)(0xe0 | cp >> 12);
		out[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
		out[2] = (unsigned char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (unsigned char)(0xf0 | cp >> 18);
	out[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3f));
	out[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
	out[3] = (unsigned char)(0x80 | (cp & 0x3f));
	return 4;
}

/* Four hex digits at p (6 bytes of \uXXXX there), or -1. */
static long hex4at(const unsigned char *p)
{
	long v = 0;

	for (int i = 2; i < 6; i++) {
		int h = hexval(p[i]);

		if (h < 0)
			return -1;
		v = v << 4 | h;
	}
	return v;
}

/*
 * Decode a JSON string body [p, end) (no quotes) into out (bytes; \u00XX
 * gives byte XX, the escaper's convention for a byte that is not UTF-8;
 * a higher \uXXXX, or a surrogate pair, the code point in UTF-8). Returns
 * the decoded length, or -1 if it is not a valid JSON string body.
 */
static long decode_body(const unsigned char *p, const unsigned char *end, unsigned char *out)
{
	long o = 0;

	while (p < end) {
		if (*p == '"' || *p < 0x20)
			return -1;
		if (*p == '\\') {
			if (end - p < 2)
				return -1;
			switch (p[1]) {
			case '"': case '\\': case '/':
				out[o++] = p[1];
				p += 2;
				continue;
			case 'b': out[o++] = '\b'; p += 2; continue;
			case 'f': out[o++] = '\f'; p += 2; continue;
			case 'n': out[o++] = '\n'; p += 2; continue;
			case 'r': out[o++] = '\r'; p += 2; continue;
			case 't': out[o++] = '\t'; p += 2; continue;
			case 'u': {
				long v, lo;

				if (end - p < 6 || (v = hex4at(p)) < 0)
					return -1;
				p += 6;
				if (v <= 0xff) {
					out[o++] = (unsigned char)v;
					continue;
				}
				if (v >= 0xdc00 && v <= 0xdfff)
					return -1; /* a lone low surrogate */
				if (v >= 0xd800 && v <= 0xdbff) {
					if (end - p < 6 || p[0] != '\\' || p[1] != 'u' ||
					    (lo = hex4at(p)) < 0xdc00 || lo > 0xdfff)
						return -1; /* a high surrogate without its low one */
					v = 0x10000 + ((v - 0xd800) << 10) + (lo - 0xdc00);
					p += 6;
				}
				o += (long)u8put((uint32_t)v, out + o);
				continue;
			}
			default:
				return -1;
			}
		}
		size_t n = u8len(p, end);

		if (n == 0)
			return -1;
		memcpy(out + o, p, n);
		o += (long)n;
		p += n;
	}
	return o;
}

static bool ws(struct cur *c)
{
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t'))
		c->p++;
	return true;
}

static bool value(struct cur *c, int depth);

static bool string(struct cur *c)
{
	const unsigned char *s;
	unsigned char *tmp;
	long n;

	if (c->p >= c->end || *c->p != '"')
		return false;
	s = ++c->p;
	while (c->p < c->end && *c->p != '"') {
		if (*c->p == '\\')
			c->p++;
		c->p++;
	}
	if (c->p >= c->end)
		return false;
	tmp = malloc((size_t)(c->p - s) + 1);
	assert_non_null(tmp);
	n = decode_body(s, c->p, tmp);
	free(tmp);
	c->p++;
	return n >= 0;
}

static bool number(struct cur *c)
{
	const unsigned char *s = c->p;

	if (c->p < c->end && *c->p == '-')
		c->p++;
	while (c->p < c->end && ((*c->p >= '0' && *c->p <= '9') || *c->p == '.' || *c->p == 'e' ||
				 *c->p == 'E' || *c->p == '+' || *c->p == '-'))
		c->p++;
	return c->p > s;
}

static bool lit(struct cur *c, const char *w)
{
	size_t n = strlen(w);

	if ((size_t)(c->end - c->p) < n || memcmp(c->p, w, n) != 0)
		return false;
	c->p += n;
	return true;
}

static bool value(struct cur *c, int depth)
{
	if (depth > 8 || !ws(c) || c->p >= c->end)
		return false;
	switch (*c->p) {
	case '"':
		return string(c);
	case 'n':
		return lit(c, "null");
	case 't':
		return lit(c, "true");
	case 'f':
		return lit(c, "false");
	case '{':
	case '[': {
		unsigned char close = *c->p == '{' ? '}' : ']';
		bool obj = close == '}';

		c->p++;
		ws(c);
		if (c->p < c->end && *c->p == close) {
			c->p++;
			return true;
		}
		for (;;) {
			if (obj && (!string(c) || !ws(c) || c->p >= c->end || *c->p++ != ':'))
				return false;
			if (!value(c, depth + 1) || !ws(c) || c->p >= c->end)
				return false;
			if (*c->p == close) {
				c->p++;
				return true;
			}
			if (*c->p++ != ',')
				return false;
			ws(c);
		}
	}
	default:
		return number(c);
	}
}

/* Whether [p, p+n) is exactly one JSON object. */
static bool json_object(const char *p, size_t n)
{
	struct cur c = { (const unsigned char *)p, (const unsigned char *)p + n };

	if (n == 0 || *p != '{' || !value(&c, 0))
		return false;
	ws(&c);
	return c.p == c.end;
}

/*
 * The value of string key k in a row (decoded), or -1 if it is not there
 * as a string. A crude find: keys are plain ASCII, written once each.
 */
static long row_str(const char *row, const char *k, unsigned char *out)
{
	char pat[64];
	const char *s, *e;

	snprintf(pat, sizeof(pat), "\"%s\":\"", k);
	s = strstr(row, pat);
	if (s == NULL)
		return -1;
	s += strlen(pat);
	for (e = s; *e != '\0' && *e != '"'; e++)
		if (*e == '\\')
			e++;
	if (*e != '"')
		return -1;
	return decode_body((const unsigned char *)s, (const unsigned char *)e, out);
}

/* ------------------------------------------------------------- escaping */

/*
 * The classes, written out here apart from lib/utf8.c's table:
 * C0, DEL, C1, the soft hyphen, the bidi controls and isolates, the
 * zero-width characters, the line and paragraph separators, the word
 * joiner and invisible operators, the BOM, the tags.
 */
static bool must_escape(uint32_t cp)
{
	return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp == 0xad || cp == 0x61c ||
	       (cp >= 0x200b && cp <= 0x200f) || (cp >= 0x2028 && cp <= 0x202e) ||
	       (cp >= 0x2060 && cp <= 0x2064) || (cp >= 0x2066 && cp <= 0x2069) || cp == 0xfeff ||
	       cp == 0xe0001 || (cp >= 0xe0020 && cp <= 0xe007f);
}

/* The code point of the valid sequence at p (n = u8len). */
static uint32_t u8cp(const unsigned char *p, size_t n)
{
	uint32_t cp = n == 1 ? p[0] : p[0] & (0x7f >> n);

	for (size_t i = 1; i < n; i++)
		cp = cp << 6 | (p[i] & 0x3f);
	return cp;
}

/*
 * What in[0..n) decodes back to: itself, except that an escaped code
 * point below U+0100 (C1, the soft hyphen) decodes as \u00XX does, to
 * byte XX. Returns the length in out.
 */
static size_t canon(const unsigned char *in, size_t n, unsigned char *out)
{
	size_t o = 0;

	for (size_t i = 0; i < n;) {
		size_t k = u8len(in + i, in + n);

		if (k == 2 && (u8cp(in + i, 2) <= 0x9f || u8cp(in + i, 2) == 0xad)) {
			out[o++] = (unsigned char)u8cp(in + i, 2);
			i += 2;
		} else {
			k = k == 0 ? 1 : k;
			memcpy(out + o, in + i, k);
			o += k;
			i += k;
		}
	}
	return o;
}

/* No raw code point of the classes in out[0..o). */
static void no_raw_hidden(const char *out, size_t o)
{
	const unsigned char *p = (const unsigned char *)out, *end = p + o;

	while (p < end) {
		size_t k = u8len(p, end);

		assert_true(k > 0);
		if (must_escape(u8cp(p, k)))
			fail_msg("U+%04X written raw: %s", u8cp(p, k), out);
		p += k;
	}
}

/* Escape in[0..n) (from a guard page when guard); check the output and that it decodes back to in. */
static void roundtrip_g(const unsigned char *in, size_t n, bool guard)
{
	char *g = guard ? guard_copy(in, n) : (char *)in, out[4096];
	unsigned char back[4096], want[4096];
	size_t o, w;
	long b;

	assert_true(n * 6 + 8 <= sizeof(out));
	o = netlog_escape(g, n, n, out, sizeof(out));
	assert_int_equal(strlen(out), o);
	b = decode_body((const unsigned char *)out, (const unsigned char *)out + o, back);
	if (b < 0)
		fail_msg("escape of %zu bytes (first 0x%02x) is not a valid JSON string body: %s", n,
			 n ? in[0] : 0, out);
	no_raw_hidden(out, o);
	w = canon(in, n, want);
	assert_int_equal((size_t)b, w);
	assert_memory_equal(back, want, w);
	if (guard)
		guard_free(g, n);
}

static void roundtrip(const unsigned char *in, size_t n)
{
	roundtrip_g(in, n, true);
}

static void test_every_byte_alone(void **state)
{
	(void)state;
	for (unsigned c = 0; c < 256; c++) {
		unsigned char b = (unsigned char)c;
		char out[16];
		size_t o = netlog_escape((const char *)&b, 1, 1, out, sizeof(out));
		bool plain = c >= 0x20 && c < 0x7f && c != '"' && c != '\\';

		roundtrip(&b, 1);
		if (plain) {
			assert_int_equal(o, 1);
			assert_int_equal((unsigned char)out[0], c);
		} else if (c == '"' || c == '\\') {
			assert_int_equal(o, 2);
			assert_int_equal(out[0], '\\');
		} else {
			/* a control byte, DEL, or a lone byte >= 0x80: never written raw */
			char want[8];

			snprintf(want, sizeof(want), "\\u%04x", c);
			assert_string_equal(out, want);
		}
	}
}

static void test_every_byte_in_context(void **state)
{
	unsigned char all[256];

	(void)state;
	for (unsigned c = 0; c < 256; c++) {
		unsigned char s[3] = { 'a', (unsigned char)c, 'b' };

		roundtrip(s, 3);
		all[c] = (unsigned char)c;
	}
	roundtrip(all, sizeof(all));
	for (unsigned c = 0; c < 256; c++)
		all[c] = (unsigned char)(255 - c);
	roundtrip(all, sizeof(all));
}

static void test_every_pair(void **state)
{
	(void)state;
	for (unsigned a = 0; a < 256; a++)
		for (unsigned b = 0; b < 256; b++) {
			unsigned char s[2] = { (unsigned char)a, (unsigned char)b };

			roundtrip(s, 2);
		}
}

/* Every three-byte string whose lead byte starts a 3 or 4 byte sequence. */
static void test_multibyte_leads(void **state)
{
	(void)state;
	for (unsigned a = 0xe0; a <= 0xf7; a++)
		for (unsigned b = 0x70; b < 0xd0; b++)
			for (unsigned c = 0; c < 256; c += 3) {
				unsigned char s[4] = { (unsigned char)a, (unsigned char)b, (unsigned char)c,
						       0x80 };

				roundtrip_g(s, 3, false);
				roundtrip_g(s, 4, false);
			}
}

static void test_valid_utf8_passes_raw(void **state)
{
	static const char *const ok[] = {
		"\xc2\xa0", "\xc3\xa9", "\xdf\xbf", "\xe0\xa0\x80", "\xe2\x82\xac", "\xed\x9f\xbf",
		"\xee\x80\x80", "\xef\xbf\xbf", "\xf0\x90\x80\x80", "\xf0\x9d\x84\x9e",
		"\xf4\x8f\xbf\xbf", "b\xc3\xbc" "cher",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		char out[64];
		size_t n = strlen(ok[i]), o = netlog_escape(ok[i], n, n, out, sizeof(out));

		assert_int_equal(o, n);
		assert_memory_equal(out, ok[i], n);
		roundtrip((const unsigned char *)ok[i], n);
	}
}

/*
 * Every code point of the classes, alone and between letters:
 * exactly its escape (a surrogate pair past U+FFFF), never raw; and the
 * wide and other visible ones around them pass as they are.
 */
static void test_hidden_escaped(void **state)
{
	static const char *const visible[] = {
		"\xe6\xbc\xa2\xe5\xad\x97", "\xf0\x9f\x98\x80", "\xe2\x80\xaf", /* narrow nbsp */
		"\xee\x80\x80", "\xd8\xb9", /* Arabic letter */ "\xcc\x81", /* combining acute */
	};

	(void)state;
	for (uint32_t cp = 0; cp < 0x110000; cp++) {
		unsigned char in[8];
		char out[64], want[16];
		size_t n, o;

		if (!must_escape(cp))
			continue;
		n = u8put(cp, in);
		o = netlog_escape((const char *)in, n, n, out, sizeof(out));
		if (cp < 0x10000)
			snprintf(want, sizeof(want), "\\u%04x", cp);
		else
			snprintf(want, sizeof(want), "\\u%04x\\u%04x",
				 0xd800 + ((cp - 0x10000) >> 10), 0xdc00 + ((cp - 0x10000) & 0x3ff));
		assert_string_equal(out, want);
		assert_int_equal(o, strlen(want));
		in[n] = 'z';
		memmove(in + 1, in, n + 1);
		in[0] = 'a';
		roundtrip(in, n + 2);
	}
	for (size_t i = 0; i < sizeof(visible) / sizeof(visible[0]); i++) {
		char out[64];
		size_t n = strlen(visible[i]), o = netlog_escape(visible[i], n, n, out, sizeof(out));

		assert_int_equal(o, n);
		assert_memory_equal(out, visible[i], n);
	}
}

static void test_invalid_utf8_escaped(void **state)
{
	static const struct {
		const char *s;
		size_t n;
	} bad[] = {
		{ "\xc0\x80", 2 },	   /* overlong NUL */
		{ "\xc1\xbf", 2 },	   /* overlong */
		{ "\xe0\x80\x80", 3 },     /* overlong */
		{ "\xe0\x9f\xbf", 3 },     /* overlong */
		{ "\xf0\x80\x80\x80", 4 }, /* overlong */
		{ "\xf0\x8f\xbf\xbf", 4 }, /* overlong */
		{ "\xed\xa0\x80", 3 },     /* surrogate D800 */
		{ "\xed\xbf\xbf", 3 },     /* surrogate DFFF */
		{ "\xf4\x90\x80\x80", 4 }, /* past U+10FFFF */
		{ "\xf5\x80\x80\x80", 4 }, { "\xf8\x88\x80\x80\x80", 5 }, { "\xfe\xff", 2 },
		{ "\x80", 1 },		   /* stray continuation */
		{ "\xbf\xbf", 2 },
		{ "\xe2\x82", 2 },	   /* cut short at the end */
		{ "\xe2\x82" "A", 3 },     /* cut short before ASCII */
		{ "\xf0\x9d\x84", 3 },     /* a 4-byte one cut short */
		{ "\xc3", 1 },
		{ "\xc3\xc3\xa9", 3 },     /* a lead, then a valid pair */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char out[64];
		size_t o = netlog_escape(bad[i].s, bad[i].n, bad[i].n, out, sizeof(out));

		/* whatever is escaped, the output is valid and decodes back */
		roundtrip((const unsigned char *)bad[i].s, bad[i].n);
		/* the first byte of each is never written raw (except the last case's valid pair) */
		assert_true(o >= 6);
		assert_memory_equal(out, "\\u00", 4);
	}
}

/* The output never passes size, is NUL-terminated, never cuts an escape
 * or a sequence, and decodes to a prefix of the input; cap cuts the input. */
static void test_bounds(void **state)
{
	static const unsigned char in[] = "a\"b\\c\x01\xc3\xa9\xe2\x82\xac\xf0\x9d\x84\x9e\xff\x7f"
					  "end";
	size_t n = sizeof(in) - 1;

	(void)state;
	for (size_t size = 1; size < 80; size++) {
		char *out = malloc(size);
		unsigned char back[128];
		size_t o;
		long b;

		assert_non_null(out);
		o = netlog_escape((const char *)in, n, n, out, size);
		assert_true(o < size);
		assert_int_equal(out[o], '\0');
		b = decode_body((const unsigned char *)out, (const unsigned char *)out + o, back);
		assert_true(b >= 0);
		assert_true((size_t)b <= n);
		assert_memory_equal(back, in, (size_t)b);
		free(out);
	}
	for (size_t cap = 0; cap <= n; cap++) {
		char out[256];
		unsigned char back[128];
		size_t o = netlog_escape((const char *)in, n, cap, out, sizeof(out));
		long b = decode_body((const unsigned char *)out, (const unsigned char *)out + o, back);

		assert_true(b >= 0 && (size_t)b <= cap);
		assert_memory_equal(back, in, (size_t)b);
	}
	/* size 0 writes nothing at all */
	char none = 'x';
	assert_int_equal(netlog_escape("abc", 3, 3, &none, 0), 0);
	assert_int_equal(none, 'x');
}

/* ------------------------------------------------------------- rows */

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *b;
	long n;

	if (f == NULL)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	b = malloc((size_t)n + 1);
	assert_non_null(b);
	assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
	b[n] = '\0';
	fclose(f);
	*len = (size_t)n;
	return b;
}

/* Every line of the file is one whole JSON object ending in \n; the count of lines. */
static size_t check_lines(const char *path)
{
	size_t len, rows = 0;
	char *b = slurp(path, &len), *p;

	assert_non_null(b);
	if (len > 0)
		assert_int_equal(b[len - 1], '\n');
	for (p = b; p < b + len;) {
		char *nl = memchr(p, '\n', (size_t)(b + len - p));

		assert_non_null(nl);
		if (!json_object(p, (size_t)(nl - p)))
			fail_msg("%s: line %zu is not one JSON object: %.*s", path, rows + 1,
				 (int)(nl - p), p);
		rows++;
		p = nl + 1;
	}
	free(b);
	return rows;
}

static void tmpdir(char *dir, size_t n)
{
	snprintf(dir, n, "/tmp/sluice-test-netlog.XXXXXX");
	assert_non_null(mkdtemp(dir));
}

static void rmtree(const char *dir)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

static struct netlog_row base_row(void)
{
	struct netlog_row r = {
		.conn = 1, .req = 1, .run = "r1", .who = "unattributed", .client = "127.0.0.1:5",
		.kind = "http", .method = "GET", .host = "good.test", .port = 80, .path = "/",
		.path_len = 1, .status = 200, .decision = "allow", .reason = "granted",
		.scrubbed = -1, .dns_ms = -1, .connect_ms = -1, .ms = 1.5,
	};
	return r;
}

static void test_row_with_hostile_strings(void **state)
{
	char dir[64], path[128];
	unsigned char all[256], back[2048];
	char detail[300];
	struct netlog *l;
	struct netlog_row r = base_row();
	size_t len;
	char *row;
	long n;

	(void)state;
	tmpdir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/network.log", dir);
	l = netlog_open(path, 0, 0, false, FILE_NO_UID, NULL);
	assert_non_null(l);
	for (unsigned c = 0; c < 256; c++)
		all[c] = (unsigned char)(c ^ 0xa5);
	for (unsigned c = 0; c < sizeof(detail) - 1; c++)
		detail[c] = (char)(c % 255 + 1); /* every byte but NUL (a C string) */
	detail[sizeof(detail) - 1] = '\0';
	r.path = (const char *)all;
	r.path_len = sizeof(all);
	r.ua = "\xc0\x80\xed\xa0\x80\"\\\n";
	r.ua_len = 8;
	r.detail = detail;
	r.host = "h\"}\n{\"x\":1";
	assert_int_equal(netlog_write(l, &r), 0);
	/* NULL strings and negative numbers: null */
	r = base_row();
	r.path = NULL;
	r.path_len = 0;
	r.method = NULL;
	r.port = -1;
	assert_int_equal(netlog_write(l, &r), 0);
	netlog_close(l);

	assert_int_equal(check_lines(path), 2);
	row = slurp(path, &len);
	assert_non_null(row);
	*strchr(row, '\n') = '\0';
	/* the path decodes to its first 200 bytes (its cap), exactly */
	n = row_str(row, "path", back);
	assert_true(n > 0 && n <= 256);
	assert_memory_equal(back, all, (size_t)n);
	n = row_str(row, "ua", back);
	assert_int_equal(n, 8);
	assert_memory_equal(back, "\xc0\x80\xed\xa0\x80\"\\\n", 8);
	n = row_str(row, "host", back);
	assert_int_equal(n, 10);
	assert_memory_equal(back, "h\"}\n{\"x\":1", 10);
	n = row_str(row, "detail", back);
	assert_true(n > 0);
	assert_memory_equal(back, detail, (size_t)n);
	/* the second row */
	char *second = row + strlen(row) + 1;
	assert_non_null(strstr(second, "\"path\":null"));
	assert_non_null(strstr(second, "\"method\":null"));
	assert_non_null(strstr(second, "\"port\":null"));
	assert_non_null(strstr(second, "\"dns_ms\":null"));
	free(row);
	rmtree(dir);
}

/* A long exchange's open row names its kind in "of", right after kind; other rows have no "of". */
static void test_open_row_of(void **state)
{
	char dir[64], path[128];
	struct netlog *l;
	struct netlog_row r = base_row();
	size_t len;
	char *rows, *second;

	(void)state;
	tmpdir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/network.log", dir);
	l = netlog_open(path, 0, 0, false, FILE_NO_UID, NULL);
	assert_non_null(l);
	r.kind = "open";
	r.of = "ws";
	assert_int_equal(netlog_write(l, &r), 0);
	r = base_row();
	assert_int_equal(netlog_write(l, &r), 0);
	netlog_close(l);
	assert_int_equal(check_lines(path), 2);
	rows = slurp(path, &len);
	assert_non_null(rows);
	*strchr(rows, '\n') = '\0';
	second = rows + strlen(rows) + 1;
	assert_non_null(strstr(rows, "\"kind\":\"open\",\"of\":\"ws\",\"proto\":"));
	assert_null(strstr(second, "\"of\""));
	assert_non_null(strstr(second, "\"kind\":\"http\",\"proto\":"));
	free(rows);
	rmtree(dir);
}

static void test_rotation_keeps_whole_rows(void **state)
{
	char dir[64], path[128], p[160];
	struct netlog *l;
	struct netlog_row r = base_row();
	char pathbuf[32];
	size_t total = 0;
	struct stat st;

	(void)state;
	tmpdir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/network.log", dir);
	l = netlog_open(path, 2048, 2, false, FILE_NO_UID, NULL);
	assert_non_null(l);
	for (int i = 0; i < 100; i++) {
		r.req = (uint64_t)i;
		r.path_len = (size_t)snprintf(pathbuf, sizeof(pathbuf), "/rot-%d", i);
		r.path = pathbuf;
		assert_int_equal(netlog_write(l, &r), 0);
	}
	netlog_close(l);
	snprintf(p, sizeof(p), "%s.3", path);
	assert_int_not_equal(stat(p, &st), 0);
	for (int k = 2; k >= 0; k--) {
		if (k == 0)
			snprintf(p, sizeof(p), "%s", path);
		else
			snprintf(p, sizeof(p), "%s.%d", path, k);
		assert_int_equal(stat(p, &st), 0);
		assert_true(st.st_size <= 2048);
		total += check_lines(p);
	}
	assert_true(total > 0 && total < 100);
	rmtree(dir);
}

/* A suppression row: one JSON object, its fields in order, a hostile reason escaped. */
static void test_suppressed_row(void **state)
{
	char dir[64], path[128];
	struct netlog *l;
	struct stamp st;
	struct netlog_suppressed r;
	size_t len;
	char *row;

	(void)state;
	tmpdir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/network.log", dir);
	l = netlog_open(path, 0, 0, true, FILE_NO_UID, NULL);
	assert_non_null(l);
	memset(&st, 0, sizeof(st));
	strcpy(st.src, "10.88.0.5");
	strcpy(st.net, "podman");
	memset(&r, 0, sizeof(r));
	r.run = "r1";
	r.who = "10.88.0.5@podman";
	r.stamp = &st;
	r.rows = 7;
	r.first_ms = 1796650418123ULL;
	r.last_ms = 1796650419004ULL;
	r.nreasons = 2;
	r.reason[0] = "too-many-streams";
	r.count[0] = 5;
	r.reason[1] = "x\"}\n";
	r.count[1] = 2;
	r.detail = "d";
	assert_int_equal(netlog_write_suppressed(l, &r), 0);
	netlog_close(l);
	assert_int_equal(check_lines(path), 1);
	row = slurp(path, &len);
	assert_non_null(row);
	assert_non_null(strstr(row, ",\"kind\":\"suppressed\",\"run\":\"r1\",\"who\":\"10.88.0.5@podman\","
				    "\"src\":\"10.88.0.5\",\"net\":\"podman\",\"as\":null,\"build\":null,"
				    "\"client\":null,\"decision\":\"refuse\",\"reason\":\"suppressed\","
				    "\"rows\":7,\"first\":\"2026-12-07T"));
	assert_non_null(strstr(row, ":38.123Z\",\"last\":\"2026-12-07T"));
	assert_non_null(strstr(row, ":39.004Z\",\"reasons\":{\"too-many-streams\":5,"
				    "\"x\\\"}\\u000a\":2},\"detail\":\"d\",\"prev\":null}\n"));
	free(row);
	rmtree(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_suppressed_row),
		cmocka_unit_test(test_every_byte_alone),
		cmocka_unit_test(test_every_byte_in_context),
		cmocka_unit_test(test_every_pair),
		cmocka_unit_test(test_multibyte_leads),
		cmocka_unit_test(test_valid_utf8_passes_raw),
		cmocka_unit_test(test_hidden_escaped),
		cmocka_unit_test(test_invalid_utf8_escaped),
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_row_with_hostile_strings),
		cmocka_unit_test(test_open_row_of),
		cmocka_unit_test(test_rotation_keeps_whole_rows),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
