/*
 * fuzz_http.c: libFuzzer target for lib/http.c.
 *
 * The first byte picks what the rest is fed to (low two bits):
 *   0  http_parse_request
 *   1  http_parse_response; (byte >> 2) % 10 is the request's method
 *   2  http_chunked_scan (and, held at the trailer, http_parse_trailers)
 *   3  http_parse_request, then the same on what follows a chunked head
 * and its top two bits the head's ceiling (cap): 64 KiB, 32 KiB, 1 KiB, 64 bytes.
 * Besides the sanitizers it checks what the header promises: lengths within
 * the input, pointers into it, nheaders within the array, a head within
 * its ceiling and "too large" only when no more bytes could end it, a
 * head's result unchanged by the bytes after it, every prefix of an
 * accepted head "need more", chunked scanning giving the same answer
 * however it is split, and
 * a scan held at the trailer section plus http_parse_trailers on the rest
 * agreeing with the scan that validates the section byte by byte.
 */
#include <assert.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"

#define NHDR 24
#define NTRAIL (HTTP_TRAILER_MAX / 4 + 1) /* "a:\r\n" is the shortest field line */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool inside(const void *p, size_t len, const char *buf, size_t buflen)
{
	const char *c = p;

	return c >= buf && len <= buflen && (size_t)(c - buf) <= buflen - len;
}

/* An exact-size heap copy, so ASan sees any read past len. */
static char *copy(const char *buf, size_t len)
{
	char *p = malloc(len ? len : 1);

	assert(p != NULL);
	memcpy(p, buf, len);
	return p;
}

static void check_headers(const struct http_header *h, size_t n, const char *buf, size_t len)
{
	size_t i;
	int k;

	assert(n <= NHDR);
	for (i = 0; i < n; i++) {
		assert(h[i].name_len > 0 && inside(h[i].name, h[i].name_len, buf, len));
		assert(inside(h[i].value, h[i].value_len, buf, len));
		k = http_find_header(h, n, "Host");
		assert(k >= -1 && k < (int)n);
		(void)http_is_hop_header(h, n, i);
	}
	assert(!http_is_hop_header(h, n, n));
}

/* What a parse said of the head's ceiling: within it, "too large" only at it. */
static void check_cap(ssize_t n, size_t len, size_t cap, enum http_error err)
{
	if (n > 0)
		assert((size_t)n <= cap);
	if (n == -2)
		assert(len < cap);
	if (n == -1 && err == HTTP_E_TOO_LARGE)
		assert(len >= cap);
}

static ssize_t fuzz_request(const char *buf, size_t len, size_t cap, struct http_request *req)
{
	struct http_header h[NHDR], h2[NHDR];
	struct http_request again;
	ssize_t n, m;
	char *p;

	n = http_parse_request(buf, len, cap, req, h, NHDR);
	assert(n == -2 || n == -1 || (n > 0 && (size_t)n <= len));
	check_cap(n, len, cap, req->error);
	if (n == -2)
		assert(req->error == HTTP_OK);
	if (n == -1)
		assert(req->error != HTTP_OK);
	if (n <= 0)
		return n;
	assert(req->method != HTTP_UNKNOWN);
	assert(req->minor == 0 || req->minor == 1);
	assert(inside(req->method_str, req->method_len, buf, len));
	assert(inside(req->target, req->target_len, buf, (size_t)n));
	if (req->host != NULL)
		assert(req->host_len > 0 && inside(req->host, req->host_len, buf, (size_t)n));
	if (req->form == HTTP_FORM_AUTHORITY)
		assert(req->method == HTTP_CONNECT && req->has_port && req->port > 0);
	if (req->form == HTTP_FORM_ABSOLUTE)
		assert(req->path != NULL && req->path_len > 0 && req->path[0] == '/');
	if (req->path != NULL && !(req->path_len == 1 && !inside(req->path, 1, buf, len)))
		assert(inside(req->path, req->path_len, buf, (size_t)n));
	if (req->host_header != -1)
		assert((size_t)req->host_header < req->nheaders);
	check_headers(h, req->nheaders, buf, (size_t)n);

	/* the head alone parses the same; one byte short needs more */
	p = copy(buf, (size_t)n);
	m = http_parse_request(p, (size_t)n, cap, &again, h2, NHDR);
	assert(m == n && again.body == req->body && again.nheaders == req->nheaders);
	m = http_parse_request(p, (size_t)n - 1, cap, &again, h2, NHDR);
	assert(m == -2);
	free(p);
	return n;
}

static void fuzz_response(const char *buf, size_t len, size_t cap, enum http_method method)
{
	struct http_header h[NHDR], h2[NHDR];
	struct http_response resp, again;
	ssize_t n, m;
	char *p;

	n = http_parse_response(buf, len, cap, method, &resp, h, NHDR);
	assert(n == -2 || n == -1 || (n > 0 && (size_t)n <= len));
	check_cap(n, len, cap, resp.error);
	if (n == -1)
		assert(resp.error != HTTP_OK);
	if (n <= 0)
		return;
	assert(resp.status >= 100 && resp.status <= 599);
	assert(inside(resp.reason, resp.reason_len, buf, (size_t)n));
	if (resp.body == HTTP_BODY_EOF)
		assert(resp.close);
	check_headers(h, resp.nheaders, buf, (size_t)n);

	p = copy(buf, (size_t)n);
	m = http_parse_response(p, (size_t)n, cap, method, &again, h2, NHDR);
	assert(m == n && again.body == resp.body && again.status == resp.status);
	m = http_parse_response(p, (size_t)n - 1, cap, method, &again, h2, NHDR);
	assert(m == -2);
	free(p);
}

/*
 * Feed buf in pieces ending at cuts[] (ascending, then len), each piece from
 * its own exact-size copy. Returns the body bytes or -1.
 */
static ssize_t chunk_split(const char *buf, size_t len, const size_t *cuts, size_t ncuts,
			   struct http_chunked *c)
{
	size_t off = 0, end, piece, i;
	ssize_t r;
	char *p;

	memset(c, 0, sizeof(*c));
	for (i = 0; i <= ncuts && c->state != HTTP_CHUNK_DONE; i++) {
		end = i < ncuts && cuts[i] < len ? cuts[i] : len;
		if (end < off)
			continue;
		piece = end - off;
		p = copy(buf + off, piece);
		r = http_chunked_scan(c, p, piece);
		free(p);
		if (r == -1)
			return -1;
		assert((size_t)r <= piece);
		off += (size_t)r;
		if ((size_t)r < piece) {
			assert(c->state == HTTP_CHUNK_DONE);
			break;
		}
	}
	return (ssize_t)off;
}

static void chunk_compare(const char *buf, size_t len, const size_t *cuts, size_t ncuts,
			  ssize_t r, const struct http_chunked *whole)
{
	struct http_chunked part;
	ssize_t rp;

	rp = chunk_split(buf, len, cuts, ncuts, &part);
	assert(rp == r);
	if (r != -1)
		assert(part.state == whole->state && part.remaining == whole->remaining &&
		       part.digits == whole->digits && part.last == whole->last);
}

/*
 * Scan with hold_trailer, then parse the trailer section from its own
 * exact-size copy. r and whole are the plain scan's answer.
 */
static void fuzz_trailers(const char *buf, size_t len, ssize_t r, const struct http_chunked *whole)
{
	static struct http_header f[NTRAIL];
	struct http_chunked held;
	enum http_error err;
	size_t nf, i, rest;
	ssize_t h, t;
	char *p;

	memset(&held, 0, sizeof(held));
	held.hold_trailer = true;
	h = http_chunked_scan(&held, buf, len);
	if (held.state != HTTP_CHUNK_TRAILER) {
		/* the body ended before a trailer: no difference from the plain scan */
		assert(h == r);
		return;
	}
	assert(h >= 0 && held.last);
	assert(http_chunked_scan(&held, buf + h, len - (size_t)h) == 0);
	rest = len - (size_t)h;
	p = copy(buf + h, rest);
	t = http_parse_trailers(p, rest, f, NTRAIL, &nf, &err);
	if (t > 0) {
		assert(r >= 0 && whole->state == HTTP_CHUNK_DONE && (size_t)(r - h) == (size_t)t);
		assert(err == HTTP_OK && nf < NTRAIL);
		for (i = 0; i < nf; i++) {
			assert(f[i].name_len > 0 && inside(f[i].name, f[i].name_len, p, (size_t)t));
			assert(inside(f[i].value, f[i].value_len, p, (size_t)t));
			(void)http_is_forbidden_trailer(&f[i]);
		}
	} else if (t == -2) {
		/* more to come: the plain scan waits too, or already saw a bad byte in the unfinished line */
		assert(err == HTTP_OK && rest < HTTP_TRAILER_MAX);
		assert(r == -1 || (r == (ssize_t)len && whole->state == HTTP_CHUNK_TRAILER));
	} else {
		assert(t == -1 && err != HTTP_OK);
		/* refused: so is the plain scan, or it would be at the next byte */
		assert(r == -1 || (err == HTTP_E_TOO_LARGE && rest >= HTTP_TRAILER_MAX &&
				   whole->state == HTTP_CHUNK_TRAILER));
	}
	free(p);
}

static void fuzz_chunked(const char *buf, size_t len)
{
	struct http_chunked whole, part;
	size_t cuts[3], one_cut, i;
	ssize_t r, rp, one;

	memset(&whole, 0, sizeof(whole));
	r = http_chunked_scan(&whole, buf, len);
	assert(r == -1 || (r >= 0 && (size_t)r <= len));
	if (r >= 0 && (size_t)r < len)
		assert(whole.state == HTTP_CHUNK_DONE);
	if (r >= 0 && whole.state == HTTP_CHUNK_DONE) {
		part = whole;
		assert(http_chunked_scan(&part, buf, len) == 0);
	}
	fuzz_trailers(buf, len, r, &whole);

	/* two-piece splits at a few places, one three-piece split */
	cuts[0] = 1;
	cuts[1] = len / 2;
	cuts[2] = len > 0 ? len - 1 : 0;
	for (i = 0; i < 3; i++)
		chunk_compare(buf, len, &cuts[i], 1, r, &whole);
	chunk_compare(buf, len, cuts, 3, r, &whole);
	one_cut = len > 0 ? (size_t)(unsigned char)buf[len - 1] * 7 % len : 0;
	chunk_compare(buf, len, &one_cut, 1, r, &whole);

	/* byte by byte */
	if (len > 4096)
		return;
	memset(&part, 0, sizeof(part));
	rp = 0;
	for (i = 0; i < len && part.state != HTTP_CHUNK_DONE; i++) {
		one = http_chunked_scan(&part, buf + i, 1);
		if (one == -1) {
			rp = -1;
			break;
		}
		assert(one == 1);
		rp++;
	}
	assert(rp == r);
	if (r != -1)
		assert(part.state == whole.state && part.remaining == whole.remaining);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t caps[4] = { 64 * 1024, 32 * 1024, 1024, 64 };
	struct http_request req;
	const char *buf;
	ssize_t n;
	size_t len, cap;

	if (size == 0)
		return 0;
	buf = (const char *)data + 1;
	len = size - 1;
	cap = caps[data[0] >> 6];
	switch (data[0] & 3) {
	case 0:
		(void)fuzz_request(buf, len, cap, &req);
		break;
	case 1:
		fuzz_response(buf, len, cap, (enum http_method)((data[0] >> 2) % 10));
		break;
	case 2:
		fuzz_chunked(buf, len);
		break;
	case 3:
		n = fuzz_request(buf, len, cap, &req);
		if (n > 0 && req.body == HTTP_BODY_CHUNKED)
			fuzz_chunked(buf + n, len - (size_t)n);
		break;
	}
	return 0;
}
