/*
 * http_chunked.c: the streaming validator for chunked bodies.
 *
 * Fed a body in pieces of any size, it says where the body ends and
 * refuses any framing a peer could read differently (sizes that are not
 * 1-16 hex digits, malformed extensions, bare LF, missing CRLF after data,
 * over-long lines). It validates; the proxy forwards the bytes as they are,
 * but for the trailer section, which a caller may have it stop before
 * (hold_trailer) to read whole with http_parse_trailers (http.c).
 */
#include "http.h"
#include "http_bytes.h"

#define CHUNK_LINE_MAX 256 /* bytes of ";ext" after a chunk size */
#define TRAILER_MAX HTTP_TRAILER_MAX /* bytes in the whole trailer section */
#define CHUNK_SIZE_MAX (UINT64_C(1) << 62)

/* ext_state values in HTTP_CHUNK_EXT: where in ";name[=value]" we are */
enum {
	EXT_NAME_START,  /* after ';' */
	EXT_NAME,
	EXT_VALUE_START, /* after '=' */
	EXT_VALUE_TOKEN,
	EXT_VALUE_QUOTED,
	EXT_VALUE_ESCAPE, /* after '\' in a quoted-string */
	EXT_VALUE_END,    /* after the closing '"' */
};

/* ext_state values in HTTP_CHUNK_TRAILER */
enum {
	TRAILER_LINE_START,
	TRAILER_NAME,
	TRAILER_VALUE,
	TRAILER_LF,     /* CR of a trailer line seen */
	TRAILER_END_LF, /* CR of the final empty line seen */
};

/* ';' or the CR that ends the size line, after a complete extension */
static int chunk_ext_next(struct http_chunked *c, unsigned char ch)
{
	if (ch == ';') {
		c->ext_state = EXT_NAME_START;
		return 0;
	}
	if (ch == '\r') {
		c->state = HTTP_CHUNK_SIZE_LF;
		return 0;
	}
	return -1;
}

/* ";name[=token|quoted-string]", no whitespace anywhere. */
static int chunk_ext_byte(struct http_chunked *c, unsigned char ch)
{
	if (++c->linelen > CHUNK_LINE_MAX)
		return -1;
	switch (c->ext_state) {
	case EXT_NAME_START:
		if (!is_tchar(ch))
			return -1;
		c->ext_state = EXT_NAME;
		return 0;
	case EXT_NAME:
		if (is_tchar(ch))
			return 0;
		if (ch == '=') {
			c->ext_state = EXT_VALUE_START;
			return 0;
		}
		return chunk_ext_next(c, ch);
	case EXT_VALUE_START:
		if (ch == '"')
			c->ext_state = EXT_VALUE_QUOTED;
		else if (is_tchar(ch))
			c->ext_state = EXT_VALUE_TOKEN;
		else
			return -1;
		return 0;
	case EXT_VALUE_TOKEN:
		if (is_tchar(ch))
			return 0;
		return chunk_ext_next(c, ch);
	case EXT_VALUE_QUOTED:
		if (ch == '"')
			c->ext_state = EXT_VALUE_END;
		else if (ch == '\\')
			c->ext_state = EXT_VALUE_ESCAPE;
		else if (!is_qdtext(ch))
			return -1;
		return 0;
	case EXT_VALUE_ESCAPE:
		if (!is_field_byte(ch))
			return -1;
		c->ext_state = EXT_VALUE_QUOTED;
		return 0;
	case EXT_VALUE_END:
		return chunk_ext_next(c, ch);
	default:
		return -1;
	}
}

static int chunk_trailer_byte(struct http_chunked *c, unsigned char ch)
{
	if (++c->linelen > TRAILER_MAX)
		return -1;
	switch (c->ext_state) {
	case TRAILER_LINE_START:
		if (ch == '\r')
			c->ext_state = TRAILER_END_LF;
		else if (is_tchar(ch))
			c->ext_state = TRAILER_NAME;
		else
			return -1;
		return 0;
	case TRAILER_NAME:
		if (ch == ':')
			c->ext_state = TRAILER_VALUE;
		else if (!is_tchar(ch))
			return -1;
		return 0;
	case TRAILER_VALUE:
		if (ch == '\r')
			c->ext_state = TRAILER_LF;
		else if (!is_field_byte(ch))
			return -1;
		return 0;
	case TRAILER_LF:
		if (ch != '\n')
			return -1;
		c->ext_state = TRAILER_LINE_START;
		return 0;
	case TRAILER_END_LF:
		if (ch != '\n')
			return -1;
		c->state = HTTP_CHUNK_DONE;
		return 0;
	default:
		return -1;
	}
}

/* One framing byte (any state but DATA and DONE). */
static int chunk_byte(struct http_chunked *c, unsigned char ch)
{
	int v;

	switch (c->state) {
	case HTTP_CHUNK_SIZE:
		v = hex_value(ch);
		if (v != -1) {
			/* at most 16 digits and CHUNK_SIZE_MAX (as Content-Length); shifting stays in range */
			if (c->digits == 16 || c->remaining > CHUNK_SIZE_MAX >> 4)
				return -1;
			c->remaining = c->remaining << 4 | (uint64_t)v;
			c->digits++;
			return c->remaining > CHUNK_SIZE_MAX ? -1 : 0;
		}
		if (c->digits == 0)
			return -1;
		if (ch == ';') {
			c->state = HTTP_CHUNK_EXT;
			c->ext_state = EXT_NAME_START;
			c->linelen = 1;
			return 0;
		}
		if (ch != '\r')
			return -1;
		c->state = HTTP_CHUNK_SIZE_LF;
		return 0;
	case HTTP_CHUNK_EXT:
		return chunk_ext_byte(c, ch);
	case HTTP_CHUNK_SIZE_LF:
		if (ch != '\n')
			return -1;
		if (c->remaining == 0) {
			c->last = true;
			c->state = HTTP_CHUNK_TRAILER;
			c->ext_state = TRAILER_LINE_START;
			c->linelen = 0;
		} else {
			c->state = HTTP_CHUNK_DATA;
		}
		return 0;
	case HTTP_CHUNK_DATA_CR:
		if (ch != '\r')
			return -1;
		c->state = HTTP_CHUNK_DATA_LF;
		return 0;
	case HTTP_CHUNK_DATA_LF:
		if (ch != '\n')
			return -1;
		c->state = HTTP_CHUNK_SIZE;
		c->remaining = 0;
		c->digits = 0;
		c->linelen = 0;
		return 0;
	case HTTP_CHUNK_TRAILER:
		return chunk_trailer_byte(c, ch);
	default:
		return -1;
	}
}

ssize_t http_chunked_scan(struct http_chunked *c, const char *buf, size_t len)
{
	struct cursor cur;
	uint64_t take;

	cur_init(&cur, buf, len);
	while (cur_left(&cur) > 0 && c->state != HTTP_CHUNK_DONE &&
	       !(c->hold_trailer && c->state == HTTP_CHUNK_TRAILER)) {
		if (c->state == HTTP_CHUNK_DATA) {
			take = cur_left(&cur);
			if (take > c->remaining)
				take = c->remaining;
			cur.off += (size_t)take;
			c->remaining -= take;
			if (c->remaining == 0)
				c->state = HTTP_CHUNK_DATA_CR;
			continue;
		}
		if (chunk_byte(c, (unsigned char)cur_peek(&cur)) == -1)
			return -1;
		cur.off++;
	}
	return (ssize_t)cur.off;
}
