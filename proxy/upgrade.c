/*
 * upgrade.c: WebSocket over HTTP/1.1 Upgrade (RFC 6455), plain or inside an
 * intercepted CONNECT.
 *
 * The handshake is a request like any other (judged, injected, logged):
 * upgrade_request checks the client's half (a GET over HTTP/1.1 without a
 * body; lib/ws_handshake.c the headers: Connection naming upgrade, a
 * 16-byte key, version 13) and keeps what the 101 must agree with; head.c
 * passes Upgrade and Connection on. upgrade_response has ws_handshake.c
 * check the 101 (Upgrade, Connection, the accept value of the client's
 * key, a subprotocol and extensions the client offered); a 101 to anything
 * else is a 502. Then upgrade_step relays bytes
 * both ways through the connection's transports (TLS or not) until either
 * side ends, under idle-timeout, and the exchange's one row says ws or wss,
 * the bytes each way and the duration. A reload that refuses the host
 * closes it (revoked).
 *
 * To a host an inject rule names (whose answers are scrubbed) no extension
 * is offered upstream, so frames stay plain, and the server's frames are
 * parsed (lib/ws_frame.c): each data message goes through the host's
 * scrubber as one stream and out re-framed (same bytes, the fragmentation
 * may change: RFC 6455 5.4 lets an intermediary), control frames by a
 * second scrubber, so one between fragments breaks no match; a secret split
 * between two messages is not seen. A malformed frame closes it: a close
 * frame (1002) to the client, the row saying why, a drained end. The
 * client's frames are relayed as they are. It does not speak WebSocket
 * over HTTP/2 (RFC 8441) and offers nothing of its own.
 */
#include "request.h"

#include <stdlib.h>
#include <sys/epoll.h>

#include "scrub.h"
#include "ws_frame.h"
#include "ws_handshake.h"

#define WS_MESSAGE_MAX (16ull << 20) /* a server message scrubbed, at most */
#define WS_PIECE 8192                /* server payload bytes scrubbed at a time */

/* An exchange's WebSocket: what the client offered, and the relay's ends. */
struct upgrade {
	struct ws_offer offer;
	bool c_end, u_end; /* that side ended (end of stream or error) */
	bool starved;         /* the server direction waits for bytes from the server */
	bool in_frame;        /* a data frame's payload is being read */
	bool frame_fin;       /* ... the last frame of its message */
	uint64_t frame_left;  /* ... its bytes still to come */
	bool in_msg;          /* a data message began */
	bool msg_sent;        /* a frame of it went to the client: the rest are continuations */
	enum ws_opcode msg_op;
	uint64_t msg_bytes;   /* its payload so far (WS_MESSAGE_MAX) */
	/* plain and unscrubbed, its 101 out: relayed by relay.c (spliced) through s->tun */
	bool spliced;
	uint64_t up0, down0; /* bytes each way before that */
};

int upgrade_request(struct exchange *x, const struct http_request *req)
{
	struct session *s = x->conn;
	const char *why = NULL;

	if (!ws_is_upgrade(req->headers, req->nheaders))
		return 0; /* another protocol: the Upgrade is dropped, the request goes as it is */
	x->ws = calloc(1, sizeof(*x->ws));
	if (x->ws == NULL) {
		session_close(s, "out of memory");
		return -1;
	}
	if (req->method != HTTP_GET || req->minor != 1)
		why = "it must be a GET over HTTP/1.1";
	else if (req->body != HTTP_BODY_NONE)
		why = "the request has a body";
	else
		ws_offer_read(req->headers, req->nheaders, &x->ws->offer, &why);
	if (why == NULL)
		return 1;
	exchange_refusef(x, 400, "malformed", "http_request_error",
			 "bad WebSocket handshake: %s; nothing was sent", why);
	return -1;
}

void upgrade_scrubbed(struct exchange *x)
{
	struct upgrade *o = x->ws;

	if (x->scrub == NULL)
		return;
	/* messages stay plain frames only without extensions: none is offered upstream */
	x->ws_scrubbed = true;
	o->offer.extensions[0] = '\0';
}

int upgrade_response(struct exchange *x, const struct http_response *resp)
{
	struct session *s = x->conn;
	const char *why;

	if (x->ws == NULL) {
		exchange_refusef(x, 502, "upstream-malformed", "http_protocol_error",
				 "%s switched protocols (101) unasked", x->t.host.name);
		return -1;
	}
	if (buf_len(&s->uout) > 0) {
		/* the rest of the handshake's head would go up after the client's bytes */
		exchange_refusef(x, 502, "upstream-malformed", "http_protocol_error",
				 "%s answered 101 before the whole handshake was sent", x->t.host.name);
		return -1;
	}
	why = ws_answer_check(&x->ws->offer, resp->headers, resp->nheaders);
	if (why != NULL) {
		exchange_refusef(x, 502, "upstream-malformed", "http_protocol_error",
				 "%s answered the WebSocket handshake with a 101 the client could not "
				 "trust: %s",
				 x->t.host.name, why);
		return -1;
	}
	return 0;
}

/* What a relayed WebSocket took from its client: gone up, or still in cin. */
static uint64_t client_taken(const struct session *s)
{
	return s->x->up + buf_len(&s->cin);
}

/* A WebSocket refused past its 101: nothing more can be said; the close writes its row. */
static void ws_refuse(struct exchange *x, const struct refusal *r)
{
	x->decision = "refuse";
	x->reason = r->reason;
	snprintf(x->detail, sizeof(x->detail), "%s", r->detail);
	session_close(x->conn, NULL);
}

/* Past its grant's max-up: the WebSocket closes with its row (refuse, budget). */
static void budget_close(struct session *s)
{
	char why[sizeof(s->x->detail) - 32];

	budget_line(s->x, why, sizeof(why));
	exchange_refusef(s->x, 403, "budget", "http_request_denied", "%s: closed", why);
}

void upgrade_begin(struct exchange *x)
{
	struct session *s = x->conn;

	x->ws_open = true;
	x->status = 101; /* the row comes when the WebSocket ends */
	x->replayable = false;
	s->codec = &upgrade_codec;
	session_enter(s, &upgrade_state);
	/* frames the client sent with the handshake are taken: past the budget, none goes up */
	if (budget_over(x, client_taken(s)))
		budget_close(s);
}

/*
 * One direction: what src holds goes to the other side, then more is read
 * when it is empty. *moved says something went; *end that the source ended.
 * Returns 0, or -1 when writing failed (the caller closes).
 */
static int relay_dir(struct session *s, bool from_up, bool *drained, bool *moved)
{
	struct exchange *x = s->x;
	struct buf *src = from_up ? &s->uin : &s->cin;
	bool *end = from_up ? &x->ws->u_end : &x->ws->c_end;
	uint64_t *count = from_up ? &x->down : &x->up;
	ssize_t n;

	while (buf_len(src) > 0) {
		/* toward the client, what cout holds (the 101 head) goes first */
		if (from_up && buf_len(&s->cout) > 0)
			return 0;
		n = sio_write(s, !from_up, src);
		if (n > 0) {
			*count += (uint64_t)n;
			*moved = true;
			continue;
		}
		if (n == -1 && session_would_block())
			return 0;
		return -1;
	}
	buf_trim(src);
	/* an upstream that hung up left epoll: its rest is read without waiting for readiness */
	if (*end || (*drained && !(from_up && s->u_hup)))
		return 0;
	/* toward the origin no further than a byte past what the budget has left */
	n = sio_read(s, from_up, src, from_up ? 0 : budget_read_limit(x, client_taken(s), 0),
		     drained);
	if (n > 0)
		*moved = true;
	else if (n == 0 || !session_would_block())
		*end = true; /* an error ends it like an end of stream: what came was passed on */
	return 0;
}

/* A frame for the client, if cout has the room (the caller made sure). */
static void emit(struct exchange *x, bool fin, enum ws_opcode op, const char *p, size_t n)
{
	struct session *s = x->conn;
	uint8_t h[WS_FRAME_HEAD_MAX];
	size_t hl = ws_frame_write(h, fin, op, n);

	buf_append(&s->cout, h, hl);
	buf_append(&s->cout, p, n);
	x->down += hl + n;
}

/* All the scrubber holds, into out (room for scrub_hold_max). Returns how many. */
static size_t flush_all(struct scrub *sc, char *out, size_t size)
{
	size_t n = 0;

	while (scrub_pending(sc) > 0 && n < size)
		n += scrub_flush(sc, out + n, size - n);
	return n;
}

/*
 * A control frame (its whole payload in uin), which may come between a
 * message's fragments: its payload is scrubbed as a stream of its own by
 * the second scrubber, so the message's stream (and what it holds back)
 * goes on unbroken after it.
 */
static void control_frame(struct session *s, const struct ws_frame *f, size_t hl, char *out,
			  size_t size)
{
	struct scrub *sc = s->x->scrub_ctl;
	size_t used = 0, n;

	buf_consume(&s->uin, hl);
	n = scrub_feed(sc, buf_head(&s->uin), (size_t)f->len, out, size, &used);
	n += flush_all(sc, out + n, size - n);
	buf_consume(&s->uin, used);
	emit(s->x, true, f->opcode, out, n);
}

/*
 * The server's frames, parsed: data payloads go through the scrubber as
 * one stream per message and out as frames of what became final (the
 * fragmentation may change, the bytes' count does not), the last with FIN
 * once the message's last frame is through. Returns 0, or -1 with *why:
 * a malformed frame or order, a message over WS_MESSAGE_MAX.
 */
static int scrubbed_from_server(struct session *s, bool *drained, bool *moved, const char **why)
{
	static char out[WS_PIECE + SCRUB_MAX_LEN + 256];
	struct exchange *x = s->x;
	struct upgrade *o = x->ws;
	/* room for a whole piece and what the scrubber may release with it, plus headers */
	size_t need = WS_PIECE + scrub_hold_max(x->scrub) + 2 * WS_FRAME_HEAD_MAX + 125;

	o->starved = false;
	while (buf_room(&s->cout) >= need) {
		struct ws_frame f;
		size_t used = 0, n, k;
		ssize_t r;
		int hl;

		if (!o->in_frame) {
			hl = ws_frame_read((const uint8_t *)buf_head(&s->uin), buf_len(&s->uin), &f);
			if (hl < 0) {
				*why = f.why;
				return -1;
			}
			if (hl == 0 || (ws_op_is_control(f.opcode) && buf_len(&s->uin) < hl + f.len))
				goto more;
			if (ws_op_is_control(f.opcode)) {
				control_frame(s, &f, (size_t)hl, out, sizeof(out));
				*moved = true;
				continue;
			}
			if ((f.opcode == WS_OP_CONT) != o->in_msg) {
				*why = o->in_msg ? "a new message inside another"
						 : "a continuation outside a message";
				return -1;
			}
			if (!o->in_msg) {
				o->in_msg = true;
				o->msg_sent = false;
				o->msg_op = f.opcode;
				o->msg_bytes = 0;
			}
			o->msg_bytes += f.len;
			if (o->msg_bytes > WS_MESSAGE_MAX) {
				*why = "a message over 16 MiB, the most scrubbed";
				return -1;
			}
			o->in_frame = true;
			o->frame_left = f.len;
			o->frame_fin = f.fin;
			buf_consume(&s->uin, (size_t)hl);
		}
		k = buf_len(&s->uin) < o->frame_left ? buf_len(&s->uin) : (size_t)o->frame_left;
		if (k > WS_PIECE)
			k = WS_PIECE;
		if (k == 0 && o->frame_left > 0)
			goto more;
		n = scrub_feed(x->scrub, buf_head(&s->uin), k, out, sizeof(out), &used);
		buf_consume(&s->uin, used);
		o->frame_left -= used;
		if (o->frame_left == 0) {
			o->in_frame = false;
			if (o->frame_fin) {
				n += flush_all(x->scrub, out + n, sizeof(out) - n);
				emit(x, true, o->msg_sent ? WS_OP_CONT : o->msg_op, out, n);
				o->in_msg = false;
				*moved = true;
				continue;
			}
		}
		if (n > 0) {
			emit(x, false, o->msg_sent ? WS_OP_CONT : o->msg_op, out, n);
			o->msg_sent = true;
			*moved = true;
		}
		continue;
more:
		o->starved = true;
		if (o->u_end || (*drained && !s->u_hup))
			return 0;
		buf_trim(&s->uin);
		r = sio_read(s, true, &s->uin, 0, drained);
		if (r > 0) {
			*moved = true;
			o->starved = false;
			continue;
		}
		if (r == 0 || !session_would_block())
			o->u_end = true;
		return 0;
	}
	return 0;
}

/*
 * A WebSocket with no TLS on either hop and nothing to scrub is a byte
 * stream like a tunnel's: once the 101 is out, relay.c moves it (spliced
 * once it carries bulk), what cin and uin hold going first.
 */
static int splice_begin(struct session *s)
{
	struct upgrade *o = s->x->ws;

	s->tun = calloc(1, sizeof(*s->tun));
	if (s->tun == NULL)
		return -1;
	relay_dir_init(&s->tun->to_up, s->cfd, s->ufd, &s->cin);
	relay_dir_init(&s->tun->to_cli, s->ufd, s->cfd, &s->uin);
	s->tun->hello = HELLO_DONE;
	o->spliced = true;
	o->up0 = s->x->up;
	o->down0 = s->x->down;
	return 0;
}

/* What a spliced WebSocket took: what went up before the splice, and what its relay took since. */
static uint64_t splice_taken(const struct session *s)
{
	return s->x->ws->up0 + s->tun->to_up.taken;
}

static void splice_step(struct session *s)
{
	struct tunnel *t = s->tun;
	struct exchange *x = s->x;
	uint64_t before = t->to_up.bytes + t->to_cli.bytes;

	budget_relay_cap(s->x, splice_taken(s));
	/* the WebSocket ends with either side: no half-close to pass on */
	if (relay_dir_pump(&t->to_up, true) == -1 || relay_dir_pump(&t->to_cli, true) == -1) {
		session_close(s, "websocket: relay error");
		return;
	}
	x->up = x->ws->up0 + t->to_up.bytes;
	x->down = x->ws->down0 + t->to_cli.bytes;
	if (budget_relay_over(s->x, splice_taken(s))) {
		budget_close(s);
		return;
	}
	if (t->to_up.bytes + t->to_cli.bytes != before)
		s->active_ms = session_now(s);
	if (relay_dir_done(&t->to_up))
		session_close(s, "websocket closed by the client");
	else if (relay_dir_done(&t->to_cli))
		session_close(s, "websocket closed by the server");
}

/*
 * The server sent what no server may: the client gets a close frame (1002,
 * a protocol error), the row goes down, and the connection drains (our end
 * shut, what the client still sends read and dropped) so no reset can
 * destroy the close in the client's buffers. cout ends on a whole frame
 * here and has the room (scrubbed_from_server reads a frame only then).
 */
static void bad_frame_close(struct session *s)
{
	static const char close[] = "\x03\xea" "sluice: a bad frame from the server";

	emit(s->x, true, WS_OP_CLOSE, close, sizeof(close) - 1);
	exchange_log(s->x);
	session_enter_drain(s);
}

static void step(struct session *s)
{
	struct upgrade *o = s->x->ws;
	bool c_drained = false, u_drained = false, moved;

	if (!o->spliced && !s->x->ws_scrubbed && s->cssl == NULL && s->ussl == NULL &&
	    buf_len(&s->cout) == 0 && splice_begin(s) == -1) {
		session_close(s, "out of memory");
		return;
	}
	if (o->spliced) {
		splice_step(s);
		return;
	}
	do {
		moved = false;
		if (session_flush_client(s) == -1) {
			session_close(s, "websocket: client gone");
			return;
		}
		if (relay_dir(s, false, &c_drained, &moved) == -1) {
			session_close(s, "websocket: upstream write error");
			return;
		}
		if (budget_over(s->x, client_taken(s))) {
			budget_close(s);
			return;
		}
		if (s->x->ws_scrubbed) {
			const char *why = NULL;

			if (scrubbed_from_server(s, &u_drained, &moved, &why) == -1) {
				snprintf(s->x->detail, sizeof(s->x->detail),
					 "websocket: a bad frame from the server (%s); closed", why);
				bad_frame_close(s);
				return;
			}
		} else if (relay_dir(s, true, &u_drained, &moved) == -1) {
			session_close(s, "websocket: client write error");
			return;
		}
		if (moved)
			s->active_ms = session_now(s);
	} while (moved);
	/* one side ended and what it sent is through: the WebSocket is over */
	if (o->c_end && buf_len(&s->cin) == 0)
		session_close(s, "websocket closed by the client");
	else if (o->u_end && buf_len(&s->cout) == 0 && (s->x->ws_scrubbed ? o->starved : buf_len(&s->uin) == 0))
		session_close(s, "websocket closed by the server");
}

/* A side is read only when what it sent before has gone on (level-triggered: no spin). */
static bool wants_client(const struct session *s)
{
	if (s->x->ws->spliced)
		return s->tun->to_up.want_read;
	return !s->x->ws->c_end && buf_len(&s->cin) == 0;
}

static void interest(const struct session *s, uint32_t *c, uint32_t *u)
{
	const struct upgrade *o = s->x->ws;

	if (o->spliced) {
		const struct tunnel *t = s->tun;

		*c |= t->to_cli.want_write ? EPOLLOUT : 0;
		*u |= (t->to_cli.want_read ? EPOLLIN : 0) | (t->to_up.want_write ? EPOLLOUT : 0);
		return;
	}
	if (buf_len(&s->cout) > 0 || (!s->x->ws_scrubbed && buf_len(&s->uin) > 0))
		*c |= EPOLLOUT;
	if (buf_len(&s->cin) > 0)
		*u |= EPOLLOUT;
	if (!o->u_end && (s->x->ws_scrubbed ? o->starved && buf_room(&s->uin) > 0 : buf_len(&s->uin) == 0))
		*u |= EPOLLIN;
}

static uint64_t due_idle(const struct session *s, const struct config *c)
{
	return s->active_ms + c->idle_timeout_ms;
}

static void late_idle(struct session *s, const struct config *c)
{
	session_close(s, "idle timeout");
}

const struct state upgrade_state = {
	.name = "websocket",
	.waits = "WebSocket bytes either way",
	.late = "close (idle-timeout)",
	.step = step,
	.client_in = wants_client,
	.ask = interest,
	.due = due_idle,
	.timeout = late_idle,
};

/* The WebSocket relaying: its open and progress rows (longrow.c). */
static uint64_t rows_due(const struct session *s, const struct config *c)
{
	return s->st == &upgrade_state ? longrow_due(s->x, c) : UINT64_MAX;
}

static void rows_write(struct session *s, const struct config *c)
{
	if (s->st == &upgrade_state)
		longrow_write(s->x, c, session_now(s));
}

const struct codec upgrade_codec = {
	.name = "websocket",
	.refuse = ws_refuse,
	.close = exchange_conn_close,
	.release = exchange_conn_release,
	.rows_due = rows_due,
	.rows_write = rows_write,
};
