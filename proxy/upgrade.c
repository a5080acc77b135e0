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
 * Messages are not parsed: to a host an inject rule names (whose answers
 * are scrubbed) a WebSocket is refused, since a secret reflected in a
 * message could not be masked. It does not speak WebSocket over HTTP/2
 * (RFC 8441) and offers nothing of its own.
 */
#include "session.h"

#include <stdlib.h>
#include <sys/epoll.h>

#include "ws_handshake.h"

/* An exchange's WebSocket: what the client offered, and the relay's ends. */
struct upgrade {
	struct ws_offer offer;
	bool open;         /* the 101 passed: bytes are relayed */
	bool c_end, u_end; /* that side ended (end of stream or error) */
};

int upgrade_request(struct session *s, const struct http_request *req)
{
	struct exchange *x = s->x;
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
	session_refuse(s, 400, "malformed", "http_request_error",
		       "bad WebSocket handshake: %s; nothing was sent", why);
	return -1;
}

int upgrade_scrub_check(struct session *s)
{
	if (s->x->scrub == NULL)
		return 0;
	session_refuse(s, 403, "websocket-scrubbed", "http_request_denied",
		       "an inject rule names %s: its answers are scrubbed, and sluice-proxy does not "
		       "parse WebSocket messages yet, so a WebSocket to it is refused",
		       s->x->t.host.name);
	return -1;
}

int upgrade_head(struct buf *b)
{
	return buf_append(b, "Connection: Upgrade\r\nUpgrade: websocket\r\n", 41);
}

int upgrade_response(struct session *s, const struct http_response *resp)
{
	struct exchange *x = s->x;
	const char *why;

	if (x->ws == NULL) {
		session_refuse(s, 502, "upstream-malformed", "http_protocol_error",
			       "%s switched protocols (101) unasked", x->t.host.name);
		return -1;
	}
	why = ws_answer_check(&x->ws->offer, resp->headers, resp->nheaders);
	if (why != NULL) {
		session_refuse(s, 502, "upstream-malformed", "http_protocol_error",
			       "%s answered the WebSocket handshake with a 101 the client could not "
			       "trust: %s",
			       x->t.host.name, why);
		return -1;
	}
	return 0;
}

void upgrade_begin(struct session *s)
{
	struct exchange *x = s->x;

	x->ws->open = true;
	x->status = 101; /* the row comes when the WebSocket ends */
	x->replayable = false;
	session_enter(s, SS_WEBSOCKET);
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
	if (*end || *drained)
		return 0;
	n = sio_read(s, from_up, src, 0, drained);
	if (n > 0)
		*moved = true;
	else if (n == 0 || !session_would_block())
		*end = true; /* an error ends it like an end of stream: what came was passed on */
	return 0;
}

void upgrade_step(struct session *s)
{
	struct upgrade *o = s->x->ws;
	bool c_drained = false, u_drained = false, moved;

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
		if (relay_dir(s, true, &u_drained, &moved) == -1) {
			session_close(s, "websocket: client write error");
			return;
		}
		if (moved)
			s->active_ms = session_now(s);
	} while (moved);
	/* one side ended and what it sent is through: the WebSocket is over */
	if (o->c_end && buf_len(&s->cin) == 0)
		session_close(s, "websocket closed by the client");
	else if (o->u_end && buf_len(&s->uin) == 0 && buf_len(&s->cout) == 0)
		session_close(s, "websocket closed by the server");
}

bool upgrade_wants_client(const struct session *s)
{
	return !s->x->ws->c_end && buf_room(&s->cin) > 0;
}

void upgrade_interest(const struct session *s, uint32_t *c, uint32_t *u)
{
	const struct upgrade *o = s->x->ws;

	if (buf_len(&s->cout) > 0 || buf_len(&s->uin) > 0)
		*c |= EPOLLOUT;
	if (buf_len(&s->cin) > 0)
		*u |= EPOLLOUT;
	if (!o->u_end && buf_room(&s->uin) > 0)
		*u |= EPOLLIN;
}

bool upgrade_open(const struct exchange *x)
{
	return x->ws != NULL && x->ws->open;
}

void upgrade_free(struct exchange *x)
{
	free(x->ws);
	x->ws = NULL;
}
