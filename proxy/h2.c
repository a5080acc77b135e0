/*
 * h2.c: HTTP/2 on both hops of an intercepted CONNECT: the connection.
 *
 * tls.c hands a connection here once its client and its upstream both
 * chose h2 (the same version on both hops: nothing is translated, so the
 * HTTP/2-to-HTTP/1.1 desync shapes cannot arise). Two nghttp2 sessions
 * carry it: srv faces the client (sluice is its server), up faces the
 * upstream (sluice is its client), both driven from the loop with
 * mem_recv and mem_send through the connection's TLS. Each hop's
 * SETTINGS, PING, WINDOW_UPDATE and PRIORITY end at that hop.
 *
 * A client stream is an exchange. Its head becomes a struct http_request
 * (the pseudo-headers as its request line, :authority as its Host) and goes
 * through exchange_judge as an HTTP/1.1 head does: the tunnel's host, the
 * policy, the body cap, the credential. A refusal is that stream's answer
 * (h2_codec's refuse: the status, Proxy-Status and the grant hint),
 * and the connection goes on. An allowed head opens a stream upstream,
 * filtered as head.c filters HTTP/1.1 (head_forwards), with the canonical
 * :authority and the credential (never indexed by HPACK). Bodies and
 * trailers move stream by stream with flow control by hand: a DATA byte's
 * window is given back only once the other hop's session took it, so a
 * slow reader slows its own stream, and what sluice holds is bounded by
 * the windows. A scrubbed host's response header values, DATA and trailers
 * are masked. A stream's row is written when its client stream closes; it
 * is freed once both of its streams have.
 *
 * This file is the connection: its two sessions, the client session's
 * callbacks (h2_up.c has the upstream's: what arrives, handed to the
 * stream it belongs to), the loop's step, the
 * deadlines, a reload's revocation and the end. h2_stream.c is a stream:
 * its head judged, its upstream request, its bodies, answers and row.
 *
 * Defences: nghttp2's HTTP messaging checks stay on (pseudo-headers,
 * content-length against DATA, connection-specific fields, CR, LF and NUL
 * in names or values: the stream is reset and its row says so), at most
 * H2_STREAMS_MAX concurrent streams, a header list cap, the rapid-reset
 * limit, a CONTINUATION cap, and nghttp2's bound on the acknowledgements a
 * flood of PING or SETTINGS makes us owe.
 */
#include "h2_stream.h"

#include <stdio.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

/* --- nghttp2's callbacks: the client's session ------------------------------------ */

/* A stream reset before it had one of its own: its row still says so. */
static void refused_row(struct session *s, const char *reason, const char *detail)
{
	struct exchange x;

	memset(&x, 0, sizeof(x));
	x.conn = s;
	h2_exchange_open(s, &x);
	x.decision = "refuse";
	x.reason = reason;
	snprintf(x.detail, sizeof(x.detail), "%s", detail);
	exchange_log(&x);
}

/* The client's stream id is not taken: the upstream takes none, or past our GOAWAY. */
static bool no_new_stream(const struct h2 *h, int32_t id)
{
	return h->up_goaway || h->up_end || h->up_ended || (h->cli_goaway && id > h->cli_last);
}

static int srv_begin_headers(nghttp2_session *ng, const nghttp2_frame *frame, void *arg)
{
	struct h2 *h = arg;
	struct h2_stream *st;

	if (h2_gone(arg))
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST)
		return 0;
	/*
	 * The upstream takes no new stream (its GOAWAY, or its connection
	 * ended), or past the last-stream-id of our GOAWAY (queued, not yet
	 * sent): not processed, nor judged (no budget, no token).
	 */
	if (no_new_stream(h, frame->hd.stream_id)) {
		nghttp2_submit_rst_stream(ng, NGHTTP2_FLAG_NONE, frame->hd.stream_id,
					  NGHTTP2_REFUSED_STREAM);
		return 0;
	}
	/*
	 * SETTINGS_MAX_CONCURRENT_STREAMS, held here too (nghttp2 applies ours
	 * only once the client acknowledged them); streams whose upstream half
	 * is still closing count, up to twice that. Refused: the client may
	 * retry (REFUSED_STREAM), the row says so, the stream's frames are
	 * ignored.
	 */
	if (h->nopen >= H2_STREAMS_MAX || h->nstreams >= 2 * H2_STREAMS_MAX) {
		/* its row is written when the reset goes (srv_sent), as for nghttp2's own refusals */
		nghttp2_submit_rst_stream(ng, NGHTTP2_FLAG_NONE, frame->hd.stream_id,
					  NGHTTP2_REFUSED_STREAM);
		return 0;
	}
	st = h2_stream_new(h, frame->hd.stream_id);
	if (st == NULL) {
		refused_row(h->s, "malformed", "out of memory");
		return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
	}
	nghttp2_session_set_stream_user_data(ng, frame->hd.stream_id, st);
	h->nopen++;
	return 0;
}

static int srv_header(nghttp2_session *ng, const nghttp2_frame *frame, const uint8_t *name,
		      size_t nlen, const uint8_t *value, size_t vlen, uint8_t flags, void *arg)
{
	struct h2_stream *st = h2_stream_get(ng, frame->hd.stream_id);
	struct h2_fields *fs;

	if (h2_gone(arg))
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	if (st == NULL || st->bad != NULL)
		return 0;
	if (!st->head_done) {
		fs = &st->req;
	} else {
		if (st->req_tr == NULL && (st->req_tr = calloc(1, sizeof(*st->req_tr))) == NULL)
			return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
		fs = st->req_tr;
	}
	if (h2_fields_add(fs, name, nlen, value, vlen, HEAD_MAX) == -1) {
		st->bad = "its header list is over 32 KiB or 100 fields";
		st->bad_reason = "head-too-large";
		return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
	}
	return 0;
}

static int srv_invalid_header(nghttp2_session *ng, const nghttp2_frame *frame,
			      const uint8_t *name, size_t nlen, const uint8_t *value, size_t vlen,
			      uint8_t flags, void *arg)
{
	struct h2_stream *st = h2_stream_get(ng, frame->hd.stream_id);

	if (h2_gone(arg))
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	if (st != NULL && st->bad == NULL)
		st->bad = "a header field HTTP/2 forbids (CR, LF or NUL, upper case, a "
			  "connection-specific field, or a bad pseudo-header)";
	return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
}

static int srv_invalid_frame(nghttp2_session *ng, const nghttp2_frame *frame, int err, void *arg)
{
	struct h2_stream *st = frame->hd.stream_id > 0 ? h2_stream_get(ng, frame->hd.stream_id) : NULL;

	if (h2_gone(arg))
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	if (st != NULL && st->bad == NULL && !st->head_done)
		st->bad = "a malformed request head (a pseudo-header missing, repeated or out of "
			  "place)";
	return 0;
}

/*
 * The client's trailer section came whole: its fields go up (as an
 * HTTP/1.1 trailer writes them), so they count as the body does. Past the
 * grant's max-up the trailers go nowhere and the stream is refused.
 * Returns true then.
 */
static bool trailers_over_budget(struct session *s, struct h2_stream *st)
{
	for (size_t i = 0; i < st->req_tr->n; i++) {
		struct http_header f = h2_field_at(st->req_tr, i);

		st->x->up += f.name_len + 2 + f.value_len + 2;
	}
	if (!budget_over(st->x, st->x->up))
		return false;
	st->req_tr->n = 0;
	budget_refuse(st->x, "the request was cut off");
	return true;
}

static int srv_frame(nghttp2_session *ng, const nghttp2_frame *frame, void *arg)
{
	struct h2 *h = arg;
	struct h2_stream *st;
	bool end = (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;

	if (h2_gone(arg))
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	if (frame->hd.type == NGHTTP2_PING && (frame->hd.flags & NGHTTP2_FLAG_ACK) &&
	    h->goaway_due && memcmp(frame->ping.opaque_data, H2_GOAWAY_PING, 8) == 0) {
		uint64_t at = session_now(h->s) + H2_GOAWAY_GRACE_MS;

		if (at < h->goaway_at) {
			h->goaway_at = at; /* h2.c's late sends it */
			session_arm_timer(h->s);
		}
		return 0;
	}
	if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA)
		return 0;
	st = h2_stream_get(ng, frame->hd.stream_id);
	if (st == NULL)
		return 0;
	if (end)
		st->req_end = true;
	if (frame->hd.type == NGHTTP2_HEADERS && !st->head_done && st->bad == NULL && !st->refused) {
		st->bodiless = end;
		h2_stream_head(h->s, st);
		return 0;
	}
	if (frame->hd.type == NGHTTP2_HEADERS && st->head_done && !st->sent && !st->refused) {
		/* trailers before the head went (it waits for a token): not kept apart from it */
		exchange_refusef(st->x, 400, "malformed", "http_request_error",
				 "trailers came before the request could be sent");
		return 0;
	}
	if (frame->hd.type == NGHTTP2_HEADERS && st->head_done && st->req_tr != NULL &&
	    !st->refused && trailers_over_budget(h->s, st))
		return 0;
	if (end && st->sent) {
		st->x->sent_ms = session_now(h->s);
		h2_resume_up(h, st);
	}
	return 0;
}

static int srv_data(nghttp2_session *ng, uint8_t flags, int32_t id, const uint8_t *data,
		    size_t len, void *arg)
{
	struct h2 *h = arg;
	struct h2_stream *st = h2_stream_get(ng, id);

	if (h2_gone(arg))
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	if (st == NULL) {
		nghttp2_session_consume_connection(ng, len);
		return 0;
	}
	st->cli_in += len;
	if (st->refused || st->discard || st->bad != NULL) {
		h2_give_back_cli(h, st, len);
		return 0;
	}
	st->x->up += len;
	if (st->x->body_cap > 0 && st->x->up > st->x->body_cap) {
		h2_give_back_cli(h, st, len);
		exchange_body_refuse(st->x, 0);
		return 0;
	}
	if (budget_over(st->x, st->x->up)) {
		h2_give_back_cli(h, st, len);
		budget_refuse(st->x, "the request was cut off");
		return 0;
	}
	if (buf_append(&st->to_up, data, len) == -1) {
		/* past the window we gave: a client that ignores flow control */
		h2_give_back_cli(h, st, len);
		h2_cancel_up(h, st);
		nghttp2_submit_rst_stream(ng, NGHTTP2_FLAG_NONE, id, NGHTTP2_FLOW_CONTROL_ERROR);
		return 0;
	}
	h2_resume_up(h, st);
	return 0;
}

/*
 * A complete response went while the client still sends its request (the
 * upstream answered early, or ours did): the client is asked to stop,
 * without error (RFC 9113 8.1). A stream refused before it had an
 * exchange gets its row here.
 */
static int srv_sent(nghttp2_session *ng, const nghttp2_frame *frame, void *arg)
{
	struct h2 *h = arg;
	struct h2_stream *st;

	if (h2_gone(arg))
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	/* a reset before a GOAWAY went: the PING after it (h2_goaway) */
	if (frame->hd.type == NGHTTP2_RST_STREAM &&
	    frame->rst_stream.error_code == NGHTTP2_REFUSED_STREAM && h->goaway_due &&
	    !h->goaway_pinged &&
	    nghttp2_submit_ping(ng, NGHTTP2_FLAG_NONE, H2_GOAWAY_PING) == 0)
		h->goaway_pinged = true;
	/* a stream refused before it was ours (nghttp2's limit, or ours above): its row */
	if (frame->hd.type == NGHTTP2_RST_STREAM &&
	    frame->rst_stream.error_code == NGHTTP2_REFUSED_STREAM &&
	    h2_stream_get(ng, frame->hd.stream_id) == NULL) {
		if (no_new_stream(h, frame->hd.stream_id))
			refused_row(h->s, "upstream-refused",
				    "refused: opened after the upstream's HTTP/2 connection went away "
				    "(its GOAWAY, or its end); the client may send it again");
		else
			refused_row(h->s, "too-many-streams",
				    "refused: the connection had its 100 streams open "
				    "(SETTINGS_MAX_CONCURRENT_STREAMS), or 200 not yet closed upstream");
		return 0;
	}
	if ((frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA) ||
	    !(frame->hd.flags & NGHTTP2_FLAG_END_STREAM))
		return 0;
	st = h2_stream_get(ng, frame->hd.stream_id);
	if (st != NULL && !st->req_end && !st->cli_closed)
		nghttp2_submit_rst_stream(ng, NGHTTP2_FLAG_NONE, st->cid, NGHTTP2_NO_ERROR);
	return 0;
}

static int srv_close(nghttp2_session *ng, int32_t id, uint32_t code, void *arg)
{
	struct h2 *h = arg;
	struct h2_stream *st = h2_stream_get(ng, id);

	if (h2_gone(arg))
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	if (st == NULL)
		return 0;
	st->cli_closed = true;
	h->nopen--;
	if (code != NGHTTP2_NO_ERROR && st->x->detail[0] == '\0')
		snprintf(st->x->detail, sizeof(st->x->detail), "reset (%s)",
			 nghttp2_http2_strerror(code));
	h2_cancel_up(h, st);
	h2_stream_log(h->s, st);
	if (st->up_closed)
		h2_stream_free(h, st);
	return 0;
}

/* --- the connection ------------------------------------------------------------ */

/*
 * The upstream session's memory is wiped when freed: it held the
 * credential (the request's header copy, the HPACK encoder's output) and
 * what the upstream reflected (its decoder's table).
 */
static void wipe_free(void *p, void *arg)
{
	if (p != NULL) {
		explicit_bzero(p, malloc_usable_size(p));
		free(p);
	}
}

static void *wipe_malloc(size_t n, void *arg)
{
	return malloc(n);
}

static void *wipe_calloc(size_t n, size_t size, void *arg)
{
	return calloc(n, size);
}

static void *wipe_realloc(void *p, size_t n, void *arg)
{
	void *q;
	size_t old;

	if (p == NULL)
		return malloc(n);
	old = malloc_usable_size(p);
	q = malloc(n);
	if (q == NULL)
		return NULL;
	memcpy(q, p, old < n ? old : n);
	wipe_free(p, arg);
	return q;
}

static nghttp2_mem wiping = { NULL, wipe_malloc, wipe_free, wipe_calloc, wipe_realloc };

static nghttp2_option *options(void)
{
	nghttp2_option *o;

	if (nghttp2_option_new(&o) != 0)
		return NULL;
	nghttp2_option_set_no_auto_window_update(o, 1);
	nghttp2_option_set_max_continuations(o, H2_CONTINUATIONS);
	nghttp2_option_set_stream_reset_rate_limit(o, H2_RESET_BURST, H2_RESET_RATE);
	return o;
}

static int sessions_new(struct h2 *h)
{
	nghttp2_session_callbacks *cb;
	nghttp2_option *o = options();
	nghttp2_settings_entry srv_set[] = {
		{ NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, H2_STREAMS_MAX },
		{ NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, H2_STREAM_WINDOW },
		{ NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, HEAD_MAX },
	};
	nghttp2_settings_entry up_set[] = {
		{ NGHTTP2_SETTINGS_ENABLE_PUSH, 0 },
		{ NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, H2_STREAM_WINDOW },
		{ NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, RESP_HEAD_MAX },
	};
	int rc = -1;

	if (o == NULL || nghttp2_session_callbacks_new(&cb) != 0) {
		nghttp2_option_del(o);
		return -1;
	}
	nghttp2_session_callbacks_set_on_begin_headers_callback(cb, srv_begin_headers);
	nghttp2_session_callbacks_set_on_header_callback(cb, srv_header);
	nghttp2_session_callbacks_set_on_invalid_header_callback(cb, srv_invalid_header);
	nghttp2_session_callbacks_set_on_invalid_frame_recv_callback(cb, srv_invalid_frame);
	nghttp2_session_callbacks_set_on_frame_recv_callback(cb, srv_frame);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, srv_data);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb, srv_close);
	nghttp2_session_callbacks_set_on_frame_send_callback(cb, srv_sent);
	if (nghttp2_session_server_new2(&h->srv, cb, h, o) != 0)
		goto out;
	nghttp2_session_callbacks_del(cb);
	if (nghttp2_session_callbacks_new(&cb) != 0) {
		cb = NULL;
		goto out;
	}
	h2_up_callbacks(cb);
	if (nghttp2_session_client_new3(&h->up, cb, h, o, &wiping) != 0)
		goto out;
	if (nghttp2_submit_settings(h->srv, NGHTTP2_FLAG_NONE, srv_set, 3) != 0 ||
	    nghttp2_session_set_local_window_size(h->srv, NGHTTP2_FLAG_NONE, 0, H2_CONN_WINDOW) != 0 ||
	    nghttp2_submit_settings(h->up, NGHTTP2_FLAG_NONE, up_set, 3) != 0 ||
	    nghttp2_session_set_local_window_size(h->up, NGHTTP2_FLAG_NONE, 0, H2_CONN_WINDOW) != 0)
		goto out;
	rc = 0;
out:
	nghttp2_session_callbacks_del(cb);
	nghttp2_option_del(o);
	return rc;
}

void h2_begin(struct session *s)
{
	struct h2 *h;

	exchange_free(s); /* the tunnel's row is written; each stream gets its own */
	if (buf_len(&s->cin) > 0 || buf_len(&s->cout) > 0 || buf_len(&s->uin) > 0 ||
	    buf_len(&s->uout) > 0) {
		session_close(s, "bytes left over from before HTTP/2");
		return;
	}
	h = calloc(1, sizeof(*h));
	if (h == NULL) {
		session_close(s, "out of memory");
		return;
	}
	h->s = s;
	h->up_last = INT32_MAX;
	s->h2 = h;
	s->codec = &h2_codec;
	if (sessions_new(h) == -1) {
		session_close(s, "HTTP/2 setup failed");
		return;
	}
	/* a frame from nghttp2 goes whole into the buffer it is asked for */
	buf_release(&s->cout);
	buf_init(&s->cout, H2_OUT_MAX);
	buf_release(&s->uout);
	buf_init(&s->uout, H2_OUT_MAX);
	session_enter(s, &h2_state);
}

/* Read one hop and feed its session. Returns 0, or -1 (the connection is closed). */
/*
 * Whether a hop is read now: its session wants it, and what it makes us
 * send the other hop (frames nghttp2 queued, bytes in that hop's buffer)
 * is under its bound; a peer that does not read slows the other, never
 * grows the proxy.
 */
static bool may_read(const struct session *s, bool up)
{
	const struct h2 *h = s->h2;
	nghttp2_session *ng = up ? h->up : h->srv, *other = up ? h->srv : h->up;

	if (up ? h->up_end || h->up_ended : h->c_end)
		return false;
	if (other != NULL && (nghttp2_session_get_outbound_queue_size(other) > H2_QUEUED_MAX ||
			      buf_len(up ? &s->cout : &s->uout) >= H2_OUT_HIGH))
		return false;
	return nghttp2_session_want_read(ng);
}

static int h2_recv(struct session *s, bool up, bool *moved)
{
	struct h2 *h = s->h2;
	nghttp2_session *ng = up ? h->up : h->srv;
	struct buf *b = up ? &s->uin : &s->cin;
	bool *end = up ? &h->up_end : &h->c_end;

	for (int i = 0; i < H2_READS && may_read(s, up); i++) {
		bool drained = false;
		ssize_t n = sio_read(s, up, b, 0, &drained), rv;

		if (n == 0 || (n < 0 && !session_would_block())) {
			*end = true;
			return 0;
		}
		if (n < 0)
			return 0;
		rv = nghttp2_session_mem_recv(ng, (const uint8_t *)buf_head(b), buf_len(b));
		if (s->closed)
			return -1;
		if (rv < 0) {
			char why[160];

			snprintf(why, sizeof(why), "HTTP/2 from the %s: %s", up ? "upstream" : "client",
				 nghttp2_strerror((int)rv));
			session_close(s, why);
			return -1;
		}
		buf_consume(b, (size_t)rv);
		buf_trim(b);
		*moved = true;
		s->active_ms = session_now(s);
		if (drained)
			break;
	}
	return 0;
}

/* Take frames from one hop's session and write them. Returns 0, or -1 (closed). */
static int h2_send(struct session *s, bool up, bool *moved)
{
	struct h2 *h = s->h2;
	nghttp2_session *ng = up ? h->up : h->srv;
	struct buf *b = up ? &s->uout : &s->cout;
	ssize_t n;

	if (up && h->up_end)
		return 0;
	while (buf_len(b) < H2_OUT_HIGH) {
		const uint8_t *p;

		n = nghttp2_session_mem_send(ng, &p);
		if (s->closed)
			return -1;
		if (n < 0) {
			session_close(s, nghttp2_strerror((int)n));
			return -1;
		}
		if (n == 0)
			break;
		if (buf_append(b, p, (size_t)n) == -1) {
			session_close(s, "out of memory");
			return -1;
		}
	}
	if (buf_len(b) == 0)
		return 0;
	n = sio_write(s, up, b);
	if (n > 0) {
		*moved = true;
		s->active_ms = session_now(s);
		/* the frames that carried a credential are wiped once written */
		if (up && h->wipe_up) {
			buf_wipe_consumed(b);
			h->wipe_up = buf_len(b) > 0;
		}
		buf_trim(b);
	} else if (n < 0 && !session_would_block()) {
		if (!up) {
			session_close(s, "client gone");
			return -1;
		}
		h->up_end = true;
	}
	return 0;
}

/*
 * The upstream's connection ended: its open streams are answered (502
 * before a response, reset during one; REFUSED_STREAM those it never
 * had), the client told to go elsewhere for new ones (GOAWAY), and the
 * upstream dropped.
 */
static void up_gone(struct session *s)
{
	struct h2 *h = s->h2;

	h->up_ended = true;
	for (struct h2_stream *st = h2_first(h), *next; st != NULL; st = next) {
		bool open = !st->up_closed;

		next = h2_next(st);
		st->up_closed = true; /* its session goes now */
		if (st->cli_closed) {
			h2_stream_free(h, st);
			continue;
		}
		if (!open || st->resp_end || st->refused || !st->sent)
			continue; /* the unsent: h2_goaway below */
		if (!st->answered) {
			exchange_refusef(st->x, 502, "upstream-closed", "destination_unavailable",
					 "%s closed its HTTP/2 connection before it answered",
					 st->x->t.host.name);
		} else {
			snprintf(st->x->detail, sizeof(st->x->detail),
				 "%s closed its HTTP/2 connection during the response",
				 st->x->t.host.name);
			nghttp2_submit_rst_stream(h->srv, NGHTTP2_FLAG_NONE, st->cid,
						  NGHTTP2_INTERNAL_ERROR);
		}
	}
	h2_goaway(h, " ended its HTTP/2 connection before this stream was sent");
	nghttp2_session_del(h->up);
	h->up = NULL;
	session_upstream_close(s);
}

static bool tls_pending(const struct session *s)
{
	return (s->cssl != NULL && SSL_has_pending(s->cssl)) ||
	       (s->ussl != NULL && !s->h2->up_ended && SSL_has_pending(s->ussl));
}

static void step(struct session *s)
{
	struct h2 *h = s->h2;
	bool moved;

	for (int round = 0;; round++) {
		moved = false;
		if (h2_recv(s, false, &moved) == -1 || (!h->up_ended && h2_recv(s, true, &moved) == -1))
			return;
		if (h->up_end && !h->up_ended)
			up_gone(s);
		else if (!h->up_ended && !nghttp2_session_want_read(h->up) &&
			 !nghttp2_session_want_write(h->up))
			h->up_end = true; /* a GOAWAY from it, its streams done */
		if (h2_send(s, false, &moved) == -1 || (!h->up_ended && h2_send(s, true, &moved) == -1))
			return;
		/*
		 * A busy connection yields after a few rounds so the others are
		 * served (epoll is level-triggered: it is called again), unless
		 * TLS holds bytes already read, which no readiness would announce.
		 */
		if (!moved || (round + 1 >= H2_ROUNDS && !tls_pending(s)))
			break;
	}
	if (h->c_end) {
		session_close(s, "the client closed the connection");
		return;
	}
	/* done (a GOAWAY either way): the last frames go out, then a linger, so none is lost */
	if (!nghttp2_session_want_read(h->srv) && !nghttp2_session_want_write(h->srv))
		session_enter_drain(s);
}

/* A stream still waiting: for its token, or (its request whole) for its response. */
static bool stream_waits(const struct h2_stream *st, uint64_t *due, uint64_t limit_token,
			 uint64_t limit_resp)
{
	if (st->cli_closed || st->refused)
		return false;
	if (st->waiting) {
		*due = st->wait_ms + limit_token;
		return true;
	}
	if (st->sent && st->req_end && !st->answered) {
		*due = st->x->sent_ms + limit_resp;
		return true;
	}
	return false;
}

static uint64_t due(const struct session *s, const struct config *c)
{
	uint64_t due = s->active_ms + c->idle_timeout_ms, at;

	for (const struct h2_stream *st = h2_first(s->h2); st != NULL; st = h2_next(st))
		if (stream_waits(st, &at, TOKEN_WAIT_MS, c->response_timeout_ms) && at < due)
			due = at;
	if (s->h2->goaway_due && s->h2->goaway_at < due)
		due = s->h2->goaway_at;
	return due;
}

/*
 * A GOAWAY whose time came goes; the streams past their deadline get a
 * 504; with neither, the connection was idle.
 */
static void late(struct session *s, const struct config *c)
{
	uint64_t now = session_now(s), at;
	bool any = false;

	if (s->h2->goaway_due && now >= s->h2->goaway_at) {
		s->h2->goaway_due = false;
		h2_goaway_send(s->h2);
		any = true;
	}

	for (struct h2_stream *st = h2_first(s->h2); st != NULL; st = h2_next(st)) {
		if (!stream_waits(st, &at, TOKEN_WAIT_MS, c->response_timeout_ms) || at > now)
			continue;
		any = true;
		if (st->waiting)
			exchange_refusef(st->x, 504, "inject-failed", "http_request_error",
					 "no token within %u s; the request was not sent",
					 TOKEN_WAIT_MS / 1000);
		else
			exchange_refusef(st->x, 504, "upstream-timeout", "http_response_timeout",
					 "%s sent no response within %u s", st->x->t.host.name,
					 c->response_timeout_ms / 1000);
	}
	if (!any && now >= s->active_ms + c->idle_timeout_ms)
		session_close(s, "idle timeout");
}

static bool wants_client(const struct session *s)
{
	return may_read(s, false);
}

static void interest(const struct session *s, uint32_t *c, uint32_t *u)
{
	const struct h2 *h = s->h2;

	if (buf_len(&s->cout) > 0)
		*c |= EPOLLOUT;
	if (h->up_ended)
		return;
	if (may_read(s, true))
		*u |= EPOLLIN;
	if (buf_len(&s->uout) > 0)
		*u |= EPOLLOUT;
}

void h2_revoke(struct session *s, const struct verdict *v)
{
	struct h2 *h = s->h2;

	for (struct h2_stream *st = h2_first(h); st != NULL; st = h2_next(st)) {
		if (st->cli_closed || st->refused)
			continue;
		st->x->decision = "refuse";
		st->x->reason = "revoked";
		snprintf(st->x->detail, sizeof(st->x->detail), "closed by a policy reload: %s",
			 v->detail[0] ? v->detail : v->reason);
		st->refused = true;
		st->waiting = false;
		h2_cancel_up(h, st);
		nghttp2_submit_rst_stream(h->srv, NGHTTP2_FLAG_NONE, st->cid, NGHTTP2_CANCEL);
	}
	/* a refused address: nothing more goes to it (new streams are judged anyway) */
	if (strcmp(v->reason, "denied-ip") == 0 && !h->up_ended)
		h->up_end = true;
	session_pump(s);
}

/*
 * The connection closes (session_close): every open stream's row is
 * written and its secrets wiped now; the streams and the nghttp2 sessions
 * are freed by codec_release once nothing of theirs is on the stack.
 */
static void codec_close(struct session *s, const char *why)
{
	exchange_conn_close(s, why); /* the CONNECT's own, if its row is not written yet */
	if (s->h2 == NULL)
		return;
	for (struct h2_stream *st = h2_first(s->h2); st != NULL; st = h2_next(st)) {
		if (!st->cli_closed) {
			if (st->x->detail[0] == '\0' && why != NULL && !st->resp_end)
				snprintf(st->x->detail, sizeof(st->x->detail), "%s", why);
			h2_stream_log(s, st);
			st->cli_closed = true;
		}
		inject_end(st->x);
	}
}

static void codec_release(struct session *s)
{
	struct h2 *h = s->h2;

	exchange_conn_release(s);
	if (h == NULL)
		return;
	while (h2_first(h) != NULL)
		h2_stream_free(h, h2_first(h));
	nghttp2_session_del(h->srv);
	nghttp2_session_del(h->up);
	free(h);
	s->h2 = NULL;
}

const struct state h2_state = {
	.name = "h2",
	.waits = "HTTP/2 frames from either hop (every stream's)",
	.late = "504 the streams past their token wait or response-timeout, else close, each open "
		"stream's row says so (idle-timeout)",
	.step = step,
	.client_in = wants_client,
	.ask = interest,
	.due = due,
	.timeout = late,
};

/* A stream sent upstream and relaying, not answered by us nor closed: long rows are for it. */
static bool stream_relaying(const struct h2_stream *st)
{
	return st->sent && !st->refused && !st->cli_closed;
}

/* Each stream relaying: its open and progress rows (longrow.c). */
static uint64_t rows_due(const struct session *s, const struct config *c)
{
	uint64_t due = UINT64_MAX;

	if (s->st != &h2_state || s->h2 == NULL)
		return due;
	for (const struct h2_stream *st = h2_first(s->h2); st != NULL; st = h2_next(st))
		if (stream_relaying(st) && longrow_due(st->x, c) < due)
			due = longrow_due(st->x, c);
	return due;
}

static void rows_write(struct session *s, const struct config *c)
{
	if (s->st != &h2_state || s->h2 == NULL)
		return;
	for (struct h2_stream *st = h2_first(s->h2); st != NULL; st = h2_next(st))
		if (stream_relaying(st))
			longrow_write(st->x, c, session_now(s));
}

static size_t streams(const struct session *s)
{
	return s->h2 != NULL ? s->h2->nopen : 0;
}

const struct codec h2_codec = {
	.name = "h2",
	.refuse = h2_stream_refuse,
	.close = codec_close,
	.release = codec_release,
	.rows_due = rows_due,
	.rows_write = rows_write,
	.token_ready = h2_token_ready,
	.streams = streams,
};
