/*
 * h2_up.c: the upstream's nghttp2 session's callbacks (h2.c is the
 * connection): response heads, interim responses, DATA, trailers and
 * stream ends, each handed to the stream it belongs to (h2_stream.c); and
 * the upstream going away (its GOAWAY, its end): the streams it did not
 * process reset REFUSED_STREAM, the GOAWAY passed on to the client.
 */
#include "h2_stream.h"

#include <stdio.h>
#include <stdlib.h>

static int up_header(nghttp2_session *ng, const nghttp2_frame *frame, const uint8_t *name,
		     size_t nlen, const uint8_t *value, size_t vlen, uint8_t flags, void *arg)
{
	struct h2_stream *st = h2_stream_get(ng, frame->hd.stream_id);

	if (h2_gone(arg))
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	if (st == NULL || st->cli_closed)
		return 0;
	if (h2_fields_add(&st->resp, name, nlen, value, vlen, RESP_HEAD_MAX) == -1)
		return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE; /* reset: up_close answers 502 */
	return 0;
}

/*
 * An interim response (100 Continue, 103) is passed on, scrubbed like a
 * final head; past H2_INTERIM_MAX on a stream it is an upstream that only
 * wants our memory: the stream ends (502).
 */
static void interim(struct h2 *h, struct h2_stream *st)
{
	nghttp2_nv nv[HEADERS_MAX];

	if (++st->interim > H2_INTERIM_MAX) {
		exchange_refusef(st->x, 502, "upstream-h2", "http_protocol_error",
				 "%s sent more than %d interim (1xx) responses", st->x->t.host.name,
				 H2_INTERIM_MAX);
		return;
	}
	if (st->x->scrub != NULL && h2_scrub_fields(st->x->scrub, &st->resp) == -1) {
		h2_fields_clear(&st->resp);
		return;
	}
	for (size_t i = 0; i < st->resp.n; i++) {
		struct http_header g = h2_field_at(&st->resp, i);

		nv[i] = h2_nv(g.name, g.name_len, g.value, g.value_len, NGHTTP2_NV_FLAG_NONE);
	}
	nghttp2_submit_headers(h->srv, NGHTTP2_FLAG_NONE, st->cid, NULL, nv, st->resp.n, NULL);
	h2_fields_clear(&st->resp);
}

static int up_frame(nghttp2_session *ng, const nghttp2_frame *frame, void *arg)
{
	struct h2 *h = arg;
	struct h2_stream *st;
	bool end = (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;

	if (h2_gone(arg))
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	if (frame->hd.type == NGHTTP2_GOAWAY) {
		char why[96];

		/* nghttp2 closes our streams past its last-stream-id next (REFUSED_STREAM) */
		h->up_goaway = true;
		if (frame->goaway.last_stream_id < h->up_last)
			h->up_last = frame->goaway.last_stream_id;
		snprintf(why, sizeof(why), " sent GOAWAY (last stream %d) before it took this stream",
			 (int)h->up_last);
		h2_goaway(h, why);
		return 0;
	}
	if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA)
		return 0;
	st = h2_stream_get(ng, frame->hd.stream_id);
	if (st == NULL || st->cli_closed || st->refused)
		return 0;
	if (frame->hd.type == NGHTTP2_HEADERS && !st->answered) {
		struct http_header f = st->resp.n > 0 ? h2_field_at(&st->resp, 0) : (struct http_header){ 0 };

		if (h2_named(&f, ":status") && f.value_len == 3 && f.value[0] == '1') {
			interim(h, st);
			return 0;
		}
		h2_answer_up(h->s, st, end);
		return 0;
	}
	if (frame->hd.type == NGHTTP2_HEADERS) {
		/* trailers (gRPC's status): scrubbed like the head, after the body */
		h2_resp_ended(h, st);
		if (st->x->scrub != NULL && h2_scrub_fields(st->x->scrub, &st->resp) == -1) {
			nghttp2_submit_rst_stream(h->srv, NGHTTP2_FLAG_NONE, st->cid,
						  NGHTTP2_INTERNAL_ERROR);
			return 0;
		}
		st->resp_tr = true;
		return 0;
	}
	if (end)
		h2_resp_ended(h, st);
	return 0;
}

static int up_data(nghttp2_session *ng, uint8_t flags, int32_t id, const uint8_t *data,
		   size_t len, void *arg)
{
	struct h2 *h = arg;
	struct h2_stream *st = h2_stream_get(ng, id);
	struct scrub *sc;

	if (h2_gone(arg))
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	if (st == NULL) {
		nghttp2_session_consume_connection(ng, len);
		return 0;
	}
	st->up_in += len;
	if (st->cli_closed || st->refused) {
		h2_give_back_up(h, st, len);
		return 0;
	}
	sc = st->x->scrub;
	if (sc == NULL) {
		if (buf_append(&st->to_cli, data, len) == -1)
			return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
	} else {
		/* masked on the way: same length, the scrubber holding back at most a secret's */
		size_t size = len + scrub_pending(sc) + 1, used = 0, w;
		char *tmp = malloc(size);

		if (tmp == NULL)
			return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
		w = scrub_feed(sc, (const char *)data, len, tmp, size, &used);
		if (buf_append(&st->to_cli, tmp, w) == -1) {
			free(tmp);
			return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
		}
		free(tmp);
	}
	h2_resume_cli(h, st);
	return 0;
}

static int up_close(nghttp2_session *ng, int32_t id, uint32_t code, void *arg)
{
	struct h2 *h = arg;
	struct h2_stream *st = h2_stream_get(ng, id);

	if (h2_gone(arg))
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	if (st == NULL)
		return 0;
	st->up_closed = true;
	if (!st->req_end && !st->cli_closed) {
		/* it answered before the request was whole: the rest goes nowhere */
		st->discard = true;
		h2_cancel_up(h, st);
	}
	if (st->cli_closed) {
		h2_stream_free(h, st);
		return 0;
	}
	if (!st->resp_end && !st->refused) {
		if (!st->answered && code == NGHTTP2_REFUSED_STREAM)
			/* RFC 9113 8.7: it did not process it; the client may send it again */
			h2_refuse_retry(h, st, " refused the stream (REFUSED_STREAM) before it processed it");
		else if (!st->answered)
			exchange_refusef(st->x, 502, "upstream-h2", "http_protocol_error",
					 "%s reset the stream (%s) before it answered",
					 st->x->t.host.name, nghttp2_http2_strerror(code));
		else {
			snprintf(st->x->detail, sizeof(st->x->detail),
				 "%s reset the stream (%s) during its response", st->x->t.host.name,
				 nghttp2_http2_strerror(code));
			nghttp2_submit_rst_stream(h->srv, NGHTTP2_FLAG_NONE, st->cid,
						  NGHTTP2_INTERNAL_ERROR);
		}
	}
	return 0;
}

/* --- the upstream going away ------------------------------------------------- */

/*
 * A stream open on the client's side whose request nothing upstream
 * processed or will: not sent (its head still coming, a token awaited),
 * or sent past the upstream's GOAWAY. A stream answered or reset is not.
 */
static bool unprocessed(const struct h2 *h, const struct h2_stream *st)
{
	if (st->cli_closed || st->answered || st->refused || st->bad != NULL)
		return false;
	return !st->sent || st->uid > h->up_last;
}

/* The unprocessed streams are reset REFUSED_STREAM (h->goaway_why). Returns whether any was. */
static bool refuse_unprocessed(struct h2 *h)
{
	bool any = false;

	for (struct h2_stream *st = h2_first(h); st != NULL; st = h2_next(st))
		if (unprocessed(h, st)) {
			h2_refuse_retry(h, st, h->goaway_why);
			any = true;
		}
	return any;
}

void h2_goaway_send(struct h2 *h)
{
	int32_t last = h->done_cid;

	refuse_unprocessed(h); /* those begun since the upstream went */
	for (struct h2_stream *st = h2_first(h); st != NULL; st = h2_next(st))
		if (!st->retry && st->cid > last)
			last = st->cid;
	if (h->cli_goaway && last >= h->cli_last)
		return;
	if (nghttp2_submit_goaway(h->srv, NGHTTP2_FLAG_NONE, last, NGHTTP2_NO_ERROR, NULL, 0) == 0) {
		h->cli_goaway = true;
		h->cli_last = last;
	}
}

/*
 * A stream reset REFUSED_STREAM now is followed by a PING (sent after the
 * reset, srv_sent), and the GOAWAY
 * goes H2_GOAWAY_GRACE_MS after its ACK (srv_frame, h2.c's late; with no ACK,
 * H2_GOAWAY_WAIT_MS after the PING): the client
 * has read the reset by then, and acted on it (RFC 9113 6.8 allows it at
 * least a round trip). curl 7.88 retries a refused stream, but not when
 * the GOAWAY came before it acted on the reset and left it no stream open
 * (it ends the transfer: "partial file"); it acts on it at its next read,
 * a moment later.
 */
void h2_goaway(struct h2 *h, const char *why)
{
	snprintf(h->goaway_why, sizeof(h->goaway_why), "%s", why);
	if (refuse_unprocessed(h) && !h->goaway_due) {
		h->goaway_due = true; /* srv_sent sends the PING once a reset went */
		h->goaway_pinged = false;
		h->goaway_at = session_now(h->s) + H2_GOAWAY_WAIT_MS; /* no ACK: then anyway */
		session_arm_timer(h->s);
	}
	if (!h->goaway_due)
		h2_goaway_send(h);
}

void h2_up_callbacks(nghttp2_session_callbacks *cb)
{
	nghttp2_session_callbacks_set_on_header_callback(cb, up_header);
	nghttp2_session_callbacks_set_on_frame_recv_callback(cb, up_frame);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, up_data);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb, up_close);
}
