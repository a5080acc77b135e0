/*
 * utf8.c: decoding, the hidden code points, terminal widths, and the two
 * ways out: JSON escapes for rows, visible escapes for a terminal.
 *
 * The width table is deliberately small: the East Asian wide blocks and
 * the emoji that terminals draw two columns wide, and the common blocks of
 * combining marks. A code point it misjudges (an Indic vowel sign, say)
 * shifts a table's later columns by one; it never lets a control through,
 * which is the hidden table's job alone. Nothing here allocates.
 */
#include "utf8.h"

#include <string.h>

struct range {
	uint32_t lo, hi;
};

/* Unicode 14's Cc, Cf, Zl and Zp */
static const struct range hidden_ranges[] = {
	{ 0x0000, 0x001f },   { 0x007f, 0x009f },   { 0x00ad, 0x00ad },   { 0x0600, 0x0605 },
	{ 0x061c, 0x061c },   { 0x06dd, 0x06dd },   { 0x070f, 0x070f },   { 0x0890, 0x0891 },
	{ 0x08e2, 0x08e2 },   { 0x180e, 0x180e },   { 0x200b, 0x200f },   { 0x2028, 0x202e },
	{ 0x2060, 0x2064 },   { 0x2066, 0x206f },   { 0xfeff, 0xfeff },   { 0xfff9, 0xfffb },
	{ 0x110bd, 0x110bd }, { 0x110cd, 0x110cd }, { 0x13430, 0x13438 }, { 0x1bca0, 0x1bca3 },
	{ 0x1d173, 0x1d17a }, { 0xe0001, 0xe0001 }, { 0xe0020, 0xe007f },
};

/* two columns: East Asian Wide and Fullwidth, emoji presentation */
static const struct range wide_ranges[] = {
	{ 0x1100, 0x115f },   { 0x231a, 0x231b },   { 0x2329, 0x232a },   { 0x23e9, 0x23ec },
	{ 0x23f0, 0x23f0 },   { 0x23f3, 0x23f3 },   { 0x25fd, 0x25fe },   { 0x2614, 0x2615 },
	{ 0x2648, 0x2653 },   { 0x267f, 0x267f },   { 0x2693, 0x2693 },   { 0x26a1, 0x26a1 },
	{ 0x26aa, 0x26ab },   { 0x26bd, 0x26be },   { 0x26c4, 0x26c5 },   { 0x26ce, 0x26ce },
	{ 0x26d4, 0x26d4 },   { 0x26ea, 0x26ea },   { 0x26f2, 0x26f3 },   { 0x26f5, 0x26f5 },
	{ 0x26fa, 0x26fa },   { 0x26fd, 0x26fd },   { 0x2705, 0x2705 },   { 0x270a, 0x270b },
	{ 0x2728, 0x2728 },   { 0x274c, 0x274c },   { 0x274e, 0x274e },   { 0x2753, 0x2755 },
	{ 0x2757, 0x2757 },   { 0x2795, 0x2797 },   { 0x27b0, 0x27b0 },   { 0x27bf, 0x27bf },
	{ 0x2b1b, 0x2b1c },   { 0x2b50, 0x2b50 },   { 0x2b55, 0x2b55 },   { 0x2e80, 0x303e },
	{ 0x3041, 0x33ff },   { 0x3400, 0x4dbf },   { 0x4e00, 0x9fff },   { 0xa000, 0xa4cf },
	{ 0xa960, 0xa97f },   { 0xac00, 0xd7a3 },   { 0xf900, 0xfaff },   { 0xfe10, 0xfe19 },
	{ 0xfe30, 0xfe6f },   { 0xff00, 0xff60 },   { 0xffe0, 0xffe6 },   { 0x16fe0, 0x16fe4 },
	{ 0x16ff0, 0x16ff1 }, { 0x17000, 0x18cff }, { 0x18d00, 0x18d08 }, { 0x1aff0, 0x1b2ff },
	{ 0x1f004, 0x1f004 }, { 0x1f0cf, 0x1f0cf }, { 0x1f18e, 0x1f18e }, { 0x1f191, 0x1f19a },
	{ 0x1f200, 0x1f202 }, { 0x1f210, 0x1f23b }, { 0x1f240, 0x1f248 }, { 0x1f250, 0x1f251 },
	{ 0x1f260, 0x1f265 }, { 0x1f300, 0x1f320 }, { 0x1f32d, 0x1f335 }, { 0x1f337, 0x1f37c },
	{ 0x1f37e, 0x1f393 }, { 0x1f3a0, 0x1f3ca }, { 0x1f3cf, 0x1f3d3 }, { 0x1f3e0, 0x1f3f0 },
	{ 0x1f3f4, 0x1f3f4 }, { 0x1f3f8, 0x1f43e }, { 0x1f440, 0x1f440 }, { 0x1f442, 0x1f4fc },
	{ 0x1f4ff, 0x1f53d }, { 0x1f54b, 0x1f54e }, { 0x1f550, 0x1f567 }, { 0x1f57a, 0x1f57a },
	{ 0x1f595, 0x1f596 }, { 0x1f5a4, 0x1f5a4 }, { 0x1f5fb, 0x1f64f }, { 0x1f680, 0x1f6c5 },
	{ 0x1f6cc, 0x1f6cc }, { 0x1f6d0, 0x1f6d2 }, { 0x1f6d5, 0x1f6d7 }, { 0x1f6dd, 0x1f6df },
	{ 0x1f6eb, 0x1f6ec }, { 0x1f6f4, 0x1f6fc }, { 0x1f7e0, 0x1f7eb }, { 0x1f7f0, 0x1f7f0 },
	{ 0x1f90c, 0x1f93a }, { 0x1f93c, 0x1f945 }, { 0x1f947, 0x1f9ff }, { 0x1fa70, 0x1faff },
	{ 0x20000, 0x2fffd }, { 0x30000, 0x3fffd },
};

/* no column: the common blocks of combining marks */
static const struct range zero_ranges[] = {
	{ 0x0300, 0x036f },   { 0x0483, 0x0489 },   { 0x0591, 0x05bd },   { 0x05bf, 0x05bf },
	{ 0x05c1, 0x05c2 },   { 0x05c4, 0x05c5 },   { 0x05c7, 0x05c7 },   { 0x0610, 0x061a },
	{ 0x064b, 0x065f },   { 0x0670, 0x0670 },   { 0x06d6, 0x06dc },   { 0x06df, 0x06e4 },
	{ 0x06e7, 0x06e8 },   { 0x06ea, 0x06ed },   { 0x1ab0, 0x1aff },   { 0x1dc0, 0x1dff },
	{ 0x20d0, 0x20f0 },   { 0x302a, 0x302d },   { 0x3099, 0x309a },   { 0xfe00, 0xfe0f },
	{ 0xfe20, 0xfe2f },   { 0xe0100, 0xe01ef },
};

static bool in_ranges(uint32_t cp, const struct range *r, size_t n)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cp < r[mid].lo)
			hi = mid;
		else if (cp > r[mid].hi)
			lo = mid + 1;
		else
			return true;
	}
	return false;
}

#define NRANGES(a) (sizeof(a) / sizeof((a)[0]))

size_t utf8_decode(const char *s, size_t n, uint32_t *cp)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t len;
	uint32_t c;

	if (p[0] < 0x80) {
		*cp = p[0];
		return 1;
	}
	if (p[0] < 0xc2 || p[0] > 0xf4)
		return 0;
	len = p[0] < 0xe0 ? 2 : p[0] < 0xf0 ? 3 : 4;
	if (len > n)
		return 0;
	c = p[0] & (0x7f >> len);
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (p[i] & 0x3f);
	}
	if ((len == 3 && c < 0x800) || (len == 4 && (c < 0x10000 || c > 0x10ffff)) ||
	    (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return len;
}

bool utf8_hidden(uint32_t cp)
{
	if (cp >= 0x20 && cp < 0x7f)
		return false;
	return in_ranges(cp, hidden_ranges, NRANGES(hidden_ranges));
}

int utf8_width(uint32_t cp)
{
	if (cp < 0x300)
		return 1;
	if (in_ranges(cp, zero_ranges, NRANGES(zero_ranges)))
		return 0;
	return in_ranges(cp, wide_ranges, NRANGES(wide_ranges)) ? 2 : 1;
}

static const char hexd[] = "0123456789abcdef";

static void hex4(char *out, uint32_t v)
{
	out[0] = hexd[v >> 12 & 15];
	out[1] = hexd[v >> 8 & 15];
	out[2] = hexd[v >> 4 & 15];
	out[3] = hexd[v & 15];
}

size_t utf8_json_escape(uint32_t cp, char out[UTF8_JSON_ESC_MAX])
{
	if (cp < 0x10000) {
		out[0] = '\\';
		out[1] = 'u';
		hex4(out + 2, cp);
		return 6;
	}
	cp -= 0x10000;
	out[0] = '\\';
	out[1] = 'u';
	hex4(out + 2, 0xd800 | cp >> 10);
	out[6] = '\\';
	out[7] = 'u';
	hex4(out + 8, 0xdc00 | (cp & 0x3ff));
	return 12;
}

size_t utf8_json_unhide(const char *s, size_t len, char *out, size_t size)
{
	size_t o = 0, i = 0;

	if (size == 0)
		return 0;
	while (i < len) {
		char esc[UTF8_JSON_ESC_MAX];
		const char *put = s + i;
		uint32_t cp;
		size_t seq = utf8_decode(s + i, len - i, &cp), n;

		if (seq == 0) { /* a byte that is not UTF-8 */
			n = utf8_json_escape((unsigned char)s[i], esc);
			put = esc;
			seq = 1;
		} else if (utf8_hidden(cp) && cp != '\t' && cp != '\n' && cp != '\r') {
			/* tab, LF and CR are whitespace between JSON's tokens */
			n = utf8_json_escape(cp, esc);
			put = esc;
		} else {
			n = seq;
		}
		if (o + n >= size)
			break;
		memcpy(out + o, put, n);
		o += n;
		i += seq;
	}
	out[o] = '\0';
	return o;
}

/* One character as a terminal gets it: its bytes (maybe an escape, in buf) and columns. */
struct shown {
	const char *p;
	size_t n, cols, used; /* used: input bytes */
	char buf[12];
};

static void show_one(const char *s, size_t len, struct shown *c)
{
	uint32_t cp;
	size_t seq = utf8_decode(s, len, &cp);

	c->p = s;
	c->used = c->n = seq;
	if (seq == 0) {
		c->buf[0] = '\\';
		c->buf[1] = 'x';
		c->buf[2] = hexd[(unsigned char)s[0] >> 4];
		c->buf[3] = hexd[(unsigned char)s[0] & 15];
		c->p = c->buf;
		c->n = c->cols = 4;
		c->used = 1;
	} else if (utf8_hidden(cp)) {
		c->buf[0] = '\\';
		c->buf[1] = cp < 0x10000 ? 'u' : 'U';
		if (cp < 0x10000) {
			hex4(c->buf + 2, cp);
			c->n = 6;
		} else {
			hex4(c->buf + 2, cp >> 16);
			hex4(c->buf + 6, cp & 0xffff);
			c->n = 10;
		}
		c->p = c->buf;
		c->cols = c->n;
	} else {
		c->cols = (size_t)utf8_width(cp);
	}
}

size_t utf8_display(const char *s, size_t len, size_t width, bool dots, char *out, size_t size,
		    size_t *cols)
{
	size_t total = 0, keep = width, o = 0, used = 0, dotn = 0;
	struct shown c;

	for (size_t i = 0; i < len && total <= width; i += c.used) {
		show_one(s + i, len - i, &c);
		total += c.cols;
	}
	if (total > width && dots) {
		dotn = width < 3 ? width : 3;
		keep = width - dotn;
	}
	if (size == 0) {
		if (cols != NULL)
			*cols = 0;
		return 0;
	}
	for (size_t i = 0; i < len; i += c.used) {
		show_one(s + i, len - i, &c);
		if (used + c.cols > keep || o + c.n >= size)
			break;
		memcpy(out + o, c.p, c.n);
		o += c.n;
		used += c.cols;
	}
	if (total > width && dots)
		for (size_t k = 0; k < dotn && o + 1 < size; k++, used++)
			out[o++] = '.';
	out[o] = '\0';
	if (cols != NULL)
		*cols = used;
	return o;
}
