/*
 * http_bytes.h: private to lib's HTTP readers (http.c, http_chunked.c, and
 * inject.c's path matcher): the bounds-checked cursor the parsers read
 * through, and the RFC 9110 byte classes (digits and hex digits are
 * digits.h's).
 */
#ifndef SLUICE_HTTP_BYTES_H
#define SLUICE_HTTP_BYTES_H

#include <stdbool.h>
#include <stddef.h>

#include "digits.h" /* is_digit, hex_value */

typedef bool (*byte_pred)(unsigned char ch);

/* A read position in [p, p + len); off never exceeds len. */
struct cursor {
	const unsigned char *p;
	size_t len;
	size_t off;
};

static inline void cur_init(struct cursor *c, const char *p, size_t len)
{
	c->p = (const unsigned char *)p;
	c->len = len;
	c->off = 0;
}

static inline size_t cur_left(const struct cursor *c)
{
	return c->len - c->off;
}

static inline const char *cur_ptr(const struct cursor *c)
{
	return (const char *)c->p + c->off;
}

static inline int cur_peek(const struct cursor *c)
{
	return c->off < c->len ? c->p[c->off] : -1;
}

static inline bool cur_eat(struct cursor *c, unsigned char ch)
{
	if (cur_peek(c) != ch)
		return false;
	c->off++;
	return true;
}

/* Advance over the longest run of bytes ok accepts; returns its length. */
static inline size_t cur_span(struct cursor *c, byte_pred ok)
{
	size_t start = c->off;

	while (c->off < c->len && ok(c->p[c->off]))
		c->off++;
	return c->off - start;
}

/* A slice of the caller's buffer. */
struct span {
	const char *p;
	size_t len;
};

/* --- byte classes --------------------------------------------------------- */

static inline bool is_alpha(unsigned char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
}

/* RFC 9110 tchar */
static inline bool is_tchar(unsigned char ch)
{
	if (is_digit(ch) || is_alpha(ch))
		return true;
	switch (ch) {
	case '!': case '#': case '$': case '%': case '&': case '\'': case '*':
	case '+': case '-': case '.': case '^': case '_': case '`': case '|':
	case '~':
		return true;
	default:
		return false;
	}
}

static inline bool is_vchar(unsigned char ch)
{
	return ch >= 0x21 && ch <= 0x7e;
}

static inline bool is_ows(unsigned char ch)
{
	return ch == ' ' || ch == '\t';
}

/* field-content bytes: SP, HTAB, VCHAR, obs-text */
static inline bool is_field_byte(unsigned char ch)
{
	return is_ows(ch) || is_vchar(ch) || ch >= 0x80;
}

/* quoted-string content without '"' and '\' */
static inline bool is_qdtext(unsigned char ch)
{
	return is_field_byte(ch) && ch != '"' && ch != '\\';
}

/* Deliberately narrower than RFC 3986 reg-name: no pct-encoding, no sub-delims. */
static inline bool is_host_byte(unsigned char ch)
{
	return is_digit(ch) || is_alpha(ch) || ch == '-' || ch == '.' || ch == '_';
}

static inline bool is_v6_byte(unsigned char ch)
{
	return hex_value(ch) != -1 || ch == ':' || ch == '.';
}

static inline bool is_not_comma(unsigned char ch)
{
	return ch != ',';
}

static inline unsigned char ascii_lower(unsigned char ch)
{
	return ch >= 'A' && ch <= 'Z' ? (unsigned char)(ch - 'A' + 'a') : ch;
}

#endif
