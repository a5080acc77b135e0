/*
 * load_resp.c: the load generator's reading of a response, as far as framing
 * needs: the status line, Content-Length, Transfer-Encoding: chunked and
 * Connection, fed in whatever pieces the socket gives.
 *
 * No I/O and no allocation: the caller (load_slot.c) reads the bytes and
 * owns the struct resp. Bodies are counted, never looked at; a head is
 * kept only up to LOAD_HEAD_MAX.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>
#include <sys/types.h>

#include "bench.h"
#include "digits.h"
#include "load.h"

/* Forget the response read before: ready for the next head. */
void resp_reset(struct resp *r)
{
	r->headlen = 0;
	r->status = 0;
	r->http10 = false;
	r->close = false;
	r->has_length = false;
	r->chunked = false;
	r->body = BODY_NONE;
	r->left = 0;
	r->chunk = CHUNK_SIZE;
	r->chunk_digits = false;
}

/* One header line name[0..nlen): value[0..vlen); -1 if it breaks framing. */
static int resp_header(struct resp *r, const char *name, size_t nlen,
		       const char *v, size_t vlen)
{
	if (nlen == 14 && strncasecmp(name, "content-length", 14) == 0) {
		uint64_t n;

		if (vlen > 18 || dec_parse(v, vlen, UINT64_MAX, &n) == -1)
			return -1;
		if (r->has_length && r->left != n)
			return -1;
		r->has_length = true;
		r->left = n;
	} else if (nlen == 17 &&
		   strncasecmp(name, "transfer-encoding", 17) == 0) {
		if (!bench_value_has(v, vlen, "chunked"))
			return -1;
		r->chunked = true;
	} else if (nlen == 10 && strncasecmp(name, "connection", 10) == 0) {
		if (bench_value_has(v, vlen, "close"))
			r->close = true;
		else if (r->http10 && bench_value_has(v, vlen, "keep-alive"))
			r->close = false;
	}
	return 0;
}

/* Parse the complete head in r->head[0..headlen); 0, or -1 if malformed. */
static int resp_parse_head(struct resp *r)
{
	const char *p = r->head;
	const char *end = r->head + r->headlen;
	const char *eol;

	if (r->headlen < 14 || memcmp(p, "HTTP/1.", 7) != 0 ||
	    (p[7] != '0' && p[7] != '1') || p[8] != ' ' ||
	    p[9] < '1' || p[9] > '9' || p[10] < '0' || p[10] > '9' ||
	    p[11] < '0' || p[11] > '9' || (p[12] != ' ' && p[12] != '\r'))
		return -1;
	r->status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
	r->http10 = p[7] == '0';
	r->close = r->http10;
	eol = memchr(p, '\n', r->headlen);
	while (eol && eol + 1 < end) {
		const char *line = eol + 1;
		const char *colon, *v, *ve;

		eol = memchr(line, '\n', (size_t)(end - line));
		if (!eol || eol - line <= 1)
			break; /* the empty line ending the head */
		colon = memchr(line, ':', (size_t)(eol - line));
		if (!colon || colon == line)
			return -1;
		v = colon + 1;
		ve = eol;
		while (v < ve && (*v == ' ' || *v == '\t'))
			v++;
		while (ve > v && (ve[-1] == '\r' || ve[-1] == ' ' ||
				  ve[-1] == '\t'))
			ve--;
		if (resp_header(r, line, (size_t)(colon - line), v,
				(size_t)(ve - v)) == -1)
			return -1;
	}
	return 0;
}

/*
 * Feed received bytes p[0..n) to the head being read. Returns the bytes that
 * belong to the head once it is complete and parsed, -2 if all were taken and
 * more are needed, -1 if the head is malformed or outgrows LOAD_HEAD_MAX.
 */
ssize_t resp_head_feed(struct resp *r, const char *p, size_t n)
{
	size_t old = r->headlen;
	size_t room = sizeof(r->head) - old;
	size_t take = n < room ? n : room;
	size_t from = old > 3 ? old - 3 : 0;
	const char *end;

	memcpy(r->head + old, p, take);
	r->headlen += take;
	end = memmem(r->head + from, r->headlen - from, "\r\n\r\n", 4);
	if (!end)
		return r->headlen == sizeof(r->head) ? -1 : -2;
	r->headlen = (size_t)(end + 4 - r->head);
	if (resp_parse_head(r) == -1)
		return -1;
	return (ssize_t)(r->headlen - old);
}

/* Choose how the body of a parsed (non-CONNECT) response is framed. */
void resp_frame_body(struct resp *r)
{
	if (r->status == 204 || r->status == 304)
		r->body = BODY_NONE;
	else if (r->chunked)
		r->body = BODY_CHUNKED;
	else if (r->has_length)
		r->body = r->left > 0 ? BODY_LENGTH : BODY_NONE;
	else
		r->body = BODY_UNTIL_CLOSE;
	if (r->body == BODY_UNTIL_CLOSE)
		r->close = true;
}

/*
 * Feed p[0..n) to a chunked body. Returns the bytes consumed (all of them
 * unless the body ends inside p), or -1 on malformed framing; adds the chunk
 * data bytes to *data. r->chunk is CHUNK_DONE once the body is complete.
 */
ssize_t resp_chunk_feed(struct resp *r, const char *p, size_t n,
			uint64_t *data)
{
	size_t i = 0;

	while (i < n && r->chunk != CHUNK_DONE) {
		char ch = p[i];
		size_t take;
		int d;

		switch (r->chunk) {
		case CHUNK_SIZE:
			d = hex_value((unsigned char)ch);
			if (d >= 0) {
				if (r->left > (UINT64_MAX >> 8))
					return -1;
				r->left = r->left * 16 + (uint64_t)d;
				r->chunk_digits = true;
			} else if (!r->chunk_digits) {
				return -1;
			} else if (ch == ';' || ch == ' ' || ch == '\t') {
				r->chunk = CHUNK_EXT;
			} else if (ch == '\r') {
				r->chunk = CHUNK_SIZE_LF;
			} else {
				return -1;
			}
			i++;
			break;
		case CHUNK_EXT:
			if (ch == '\r')
				r->chunk = CHUNK_SIZE_LF;
			else if (ch == '\n')
				return -1;
			i++;
			break;
		case CHUNK_SIZE_LF:
			if (ch != '\n')
				return -1;
			r->chunk = r->left > 0 ? CHUNK_DATA : CHUNK_TRAILER;
			i++;
			break;
		case CHUNK_DATA:
			take = n - i;
			if (take > r->left)
				take = (size_t)r->left;
			r->left -= take;
			*data += take;
			i += take;
			if (r->left == 0)
				r->chunk = CHUNK_DATA_CR;
			break;
		case CHUNK_DATA_CR:
			if (ch != '\r')
				return -1;
			r->chunk = CHUNK_DATA_LF;
			i++;
			break;
		case CHUNK_DATA_LF:
			if (ch != '\n')
				return -1;
			r->chunk = CHUNK_SIZE;
			r->chunk_digits = false;
			i++;
			break;
		case CHUNK_TRAILER:
			r->chunk = ch == '\r' ? CHUNK_END_LF : CHUNK_TRAILER_LINE;
			i++;
			break;
		case CHUNK_TRAILER_LINE:
			if (ch == '\n')
				r->chunk = CHUNK_TRAILER;
			i++;
			break;
		case CHUNK_END_LF:
			if (ch != '\n')
				return -1;
			r->chunk = CHUNK_DONE;
			i++;
			break;
		case CHUNK_DONE:
			break;
		}
	}
	return (ssize_t)i;
}
