/*
 * fuzz_h2_head.c: client bytes into an nghttp2 server session configured as
 * proxy/h2.c configures it, each request head it completes read by
 * h2_head_request.
 *
 * The input is what a client sends after the connection preface (which is
 * prepended). Beyond not crashing: a head that is read has a known method
 * other than CONNECT, an origin-form path, its Host as the last header and
 * naming what :authority (or host) named, and no pseudo-header among its
 * headers.
 */
#include <nghttp2/nghttp2.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "h2_head.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FIELDS_MAX 100
#define STORE_MAX (32 * 1024)

struct head {
	struct http_header f[FIELDS_MAX];
	size_t n;
	char store[STORE_MAX];
	size_t used;
	int32_t stream;
};

static int on_begin(nghttp2_session *s, const nghttp2_frame *fr, void *arg)
{
	struct head *h = arg;

	h->n = h->used = 0;
	h->stream = fr->hd.stream_id;
	return 0;
}

static int on_header(nghttp2_session *s, const nghttp2_frame *fr, const uint8_t *name,
		     size_t nlen, const uint8_t *value, size_t vlen, uint8_t flags, void *arg)
{
	struct head *h = arg;

	if (h->n == FIELDS_MAX || h->used + nlen + vlen > STORE_MAX)
		return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
	memcpy(h->store + h->used, name, nlen);
	memcpy(h->store + h->used + nlen, value, vlen);
	h->f[h->n++] = (struct http_header){ h->store + h->used, nlen, h->store + h->used + nlen,
					     vlen };
	h->used += nlen + vlen;
	return 0;
}

static int on_frame(nghttp2_session *s, const nghttp2_frame *fr, void *arg)
{
	struct head *h = arg;
	struct http_request req;
	struct http_header hd[FIELDS_MAX + 1];
	const char *why;

	if (fr->hd.type != NGHTTP2_HEADERS || fr->headers.cat != NGHTTP2_HCAT_REQUEST ||
	    fr->hd.stream_id != h->stream)
		return 0;
	why = h2_head_request(h->f, h->n, (fr->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0, &req, hd);
	if (why != NULL)
		return 0;
	if (req.method == HTTP_UNKNOWN || req.method == HTTP_CONNECT || req.path_len == 0 ||
	    req.path[0] != '/' || req.host_header != (int)req.nheaders - 1 ||
	    req.headers[req.host_header].value_len == 0)
		abort();
	for (size_t i = 0; i < req.nheaders; i++)
		if (req.headers[i].name_len > 0 && req.headers[i].name[0] == ':')
			abort();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct head h;
	nghttp2_session_callbacks *cb;
	nghttp2_option *o;
	nghttp2_session *s;

	if (nghttp2_session_callbacks_new(&cb) != 0)
		return 0;
	nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_begin);
	nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
	nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame);
	nghttp2_option_new(&o);
	nghttp2_option_set_no_auto_window_update(o, 1);
	nghttp2_option_set_max_continuations(o, 8);
	if (nghttp2_session_server_new2(&s, cb, &h, o) == 0) {
		const uint8_t *out;

		nghttp2_session_mem_recv(s, (const uint8_t *)NGHTTP2_CLIENT_MAGIC,
					 NGHTTP2_CLIENT_MAGIC_LEN);
		nghttp2_session_mem_recv(s, data, size);
		while (nghttp2_session_mem_send(s, &out) > 0)
			;
		nghttp2_session_del(s);
	}
	nghttp2_option_del(o);
	nghttp2_session_callbacks_del(cb);
	return 0;
}
