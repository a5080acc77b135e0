/*
 * body.c: one request's bodies, client -> upstream and upstream -> client,
 * moved under their framing (Content-Length, chunked, to EOF). A chunked
 * body's trailer section is held until whole and passed on without the
 * fields no trailer may carry (RFC 9110 6.5.1) or the field a credential
 * was injected into; the row's detail names what was dropped. It does not
 * scrub (inject.c moves a scrubbed response body) or read sockets.
 */
#include "request.h"

#include <stdio.h>
#include <string.h>

/*
 * Whether a trailer field stays behind: one no trailer may carry, or in a
 * request, one named like the header its credential was injected into.
 */
static bool trailer_dropped(const struct session *s, bool request, const struct http_header *h)
{
	return http_is_forbidden_trailer(h) ||
	       (request && s->x->inject_field[0] != '\0' && http_header_is(h, s->x->inject_field));
}

/* Add "what trailers dropped: Name, Name" to the row's detail. */
static void note_dropped(struct session *s, bool request, const struct http_header *f, size_t n)
{
	char *d = s->x->detail;
	size_t size = sizeof(s->x->detail), len = strlen(d);
	bool first = true;

	for (size_t i = 0; i < n && len + 1 < size; i++) {
		if (!trailer_dropped(s, request, &f[i]))
			continue;
		int k = first ? snprintf(d + len, size - len, "%s%s trailers dropped: %.*s",
					 len > 0 ? "; " : "", request ? "request" : "response",
					 (int)f[i].name_len, f[i].name)
			      : snprintf(d + len, size - len, ", %.*s", (int)f[i].name_len,
					 f[i].name);

		first = false;
		len = k < 0 || (size_t)k >= size - len ? size - 1 : len + (size_t)k;
	}
}

/*
 * A chunked body's trailer section, held in in until it is whole, goes to
 * out without the fields trailer_dropped names; the row names them.
 * Returns 1 when it went, 0 when it waits (*more: for bytes of it still to
 * come; else for room in out), -1 if malformed or over HTTP_TRAILER_MAX.
 */
static int move_trailer(struct session *s, bool request, struct buf *in, struct buf *out,
			uint64_t *count, bool *more)
{
	struct http_header f[HEADERS_MAX];
	enum http_error err;
	size_t nf, need = 2, before = buf_len(out);
	ssize_t n = http_parse_trailers(buf_head(in), buf_len(in), f, HEADERS_MAX, &nf, &err);

	*more = n == -2;
	if (n == -2)
		return 0;
	if (n < 0)
		return -1;
	for (size_t i = 0; i < nf; i++)
		need += f[i].name_len + f[i].value_len + 4;
	if (buf_room(out) < need)
		return 0;
	for (size_t i = 0; i < nf; i++) {
		if (!trailer_dropped(s, request, &f[i]) && head_put_header(out, &f[i]) == -1)
			return -1;
	}
	if (buf_append(out, "\r\n", 2) == -1)
		return -1;
	note_dropped(s, request, f, nf);
	*count += buf_len(out) - before;
	buf_consume(in, (size_t)n);
	return 1;
}

int body_move(struct exchange *x, bool request, bool *wait_trailer)
{
	struct session *s = x->conn;
	struct buf *in = request ? &s->cin : &s->uin;
	struct buf *out = request ? &s->uout : &s->cout;
	enum http_body kind = request ? x->req_body : x->resp_body;
	uint64_t *left = request ? &x->req_left : &x->resp_left;
	struct http_chunked *ch = request ? &x->req_chunk : &x->resp_chunk;
	bool *done = request ? &x->req_done : &x->resp_done;
	uint64_t *count = request ? &x->up : &x->down;
	size_t n = buf_len(in);

	*wait_trailer = false;
	if (n > buf_room(out))
		n = buf_room(out);
	if (n == 0)
		return 0;
	if (kind == HTTP_BODY_LENGTH) {
		if (n > *left)
			n = (size_t)*left;
		*left -= n;
		*done = *left == 0;
	} else if (kind == HTTP_BODY_CHUNKED) {
		ssize_t k;

		ch->hold_trailer = true;
		if (ch->state != HTTP_CHUNK_TRAILER) {
			k = http_chunked_scan(ch, buf_head(in), n);
			if (k < 0)
				return -1;
			if (buf_append(out, buf_head(in), (size_t)k) == -1)
				return -1;
			buf_consume(in, (size_t)k);
			*count += (size_t)k;
		}
		if (ch->state == HTTP_CHUNK_TRAILER && buf_len(in) > 0) {
			k = move_trailer(s, request, in, out, count, wait_trailer);
			if (k == -1)
				return -1;
			if (k == 1)
				ch->state = HTTP_CHUNK_DONE;
		}
		*done = ch->state == HTTP_CHUNK_DONE;
		return 0;
	}
	if (buf_append(out, buf_head(in), n) == -1)
		return -1;
	buf_consume(in, n);
	*count += n;
	return 0;
}
