/*
 * hello.c: a passthrough tunnel's hellos, judged before anything else is
 * relayed (tls_hello_step, run by tunnel.c's step): the whole
 * ClientHello, and after a HelloRetryRequest the second one too, must name
 * the CONNECT host (lib/tls_hello.c reads them). It decrypts nothing;
 * tls.c is the intercepting side.
 */
#include "request.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tls_hello.h"

_Static_assert(HEAD_MAX >= TLS_HELLO_WIRE_MAX, "cin holds a whole ClientHello");

/* TLS alert descriptions (RFC 8446 6.2) */
#define ALERT_HANDSHAKE_FAILURE 40
#define ALERT_DECODE_ERROR 50
#define ALERT_UNRECOGNIZED_NAME 112

/*
 * Refuse the tunnel: a fatal alert in clear for a client that spoke TLS
 * (0: none), then the row and the drain (tunnel_codec's refusal).
 */
static void hello_refuse(struct session *s, const char *reason, int alert, const char *detail)
{
	if (alert != 0) {
		const unsigned char rec[] = { 21, 3, 3, 0, 2, 2, (unsigned char)alert };

		(void)buf_append(&s->cout, rec, sizeof(rec)); /* best effort: the close says it too */
	}
	exchange_refusef(s->x, 0, reason, NULL, "passthrough: %s", detail); /* tunnel_codec */
}

/*
 * A ClientHello at the head of cin, the first or (again) the second after
 * a HelloRetryRequest: the client is read into cin until it is whole, at
 * most TLS_HELLO_WIRE_MAX bytes (and a change_cipher_spec record before a
 * second one). Its server name must be the CONNECT host, compared
 * canonically; one without a name passes only for an IP-literal CONNECT
 * host (a client names no address in SNI). Anything else refuses the
 * tunnel: sni-mismatch, or sni-unreadable (no server name, not a
 * ClientHello, one past the caps, the client closed first). Returns 1
 * (more to read), 0 (it passed: *wire is its length at cin's head) or -1
 * (refused). Past the grant's max-up it is refused too (budget), before
 * any of it goes up.
 */
static int client_hello(struct session *s, bool again, size_t *wire)
{
	struct tls_hello h;
	const struct host *want = &s->x->t.host;
	const char *which = again ? "the second ClientHello (after a HelloRetryRequest)"
				  : "the TLS ClientHello";
	size_t cap = TLS_HELLO_WIRE_MAX + (again ? 6 : 0);
	char why[240];
	struct host got;
	const char *err = NULL;
	int r;

	for (;;) {
		bool drained;
		ssize_t n;

		r = again ? tls_hello_read_again(&h, buf_head(&s->cin), buf_len(&s->cin))
			  : tls_hello_read(&h, buf_head(&s->cin), buf_len(&s->cin));
		if (r != TLS_HELLO_MORE)
			break;
		n = buf_read_fd(&s->cin, s->cfd, cap - buf_len(&s->cin), &drained);
		if (n > 0) {
			s->tun->to_up.taken += (uint64_t)n; /* the relay's: its budget counts it */
			continue;
		}
		if (n == -1 && session_would_block()) {
			s->tun->to_up.want_read = true;
			return 1;
		}
		if (n == 0)
			snprintf(why, sizeof(why), "the client closed before %s was whole (%zu bytes)",
				 which, buf_len(&s->cin));
		else
			snprintf(why, sizeof(why), "reading %s: %s (%zu bytes)", which, strerror(errno),
				 buf_len(&s->cin));
		hello_refuse(s, "sni-unreadable", 0, why);
		return -1;
	}
	s->tun->to_up.want_read = false;
	if (r == TLS_HELLO_NOT) {
		snprintf(why, sizeof(why), "%s is not readable: %s", which, h.why);
		/* an alert only to a client that began a TLS record */
		hello_refuse(s, "sni-unreadable",
			     buf_head(&s->cin)[0] == 22 || again ? ALERT_DECODE_ERROR : 0, why);
		return -1;
	}
	if (r == TLS_HELLO_NONE && want->kind == HOST_NAME) {
		snprintf(why, sizeof(why), "%s has no server name; the tunnel needs the CONNECT host's",
			 which);
		hello_refuse(s, "sni-unreadable", ALERT_HANDSHAKE_FAILURE, why);
		return -1;
	}
	if (r == TLS_HELLO_FOUND &&
	    (host_canon(h.name, strlen(h.name), &got, &err) == -1 || !host_equal(&got, want))) {
		snprintf(why, sizeof(why), "%s names %s, not the CONNECT host", which, h.name);
		hello_refuse(s, "sni-mismatch", ALERT_UNRECOGNIZED_NAME, why);
		return -1;
	}
	if (again)
		snprintf(s->x->detail + strlen(s->x->detail), sizeof(s->x->detail) - strlen(s->x->detail),
			 ", again after a HelloRetryRequest");
	else if (r == TLS_HELLO_FOUND)
		snprintf(s->x->detail, sizeof(s->x->detail), "passthrough; TLS server name %s", h.name);
	else
		snprintf(s->x->detail, sizeof(s->x->detail),
			 "passthrough; no TLS server name (an address)");
	if (budget_tunnel_over(s->x))
		return -1;
	*wire = h.wire;
	return 0;
}

/*
 * The server's first message, read into uin (idle in a tunnel) and held
 * there: a HelloRetryRequest means a second ClientHello in clear, which
 * must be judged as the first was, so nothing more of the client's goes
 * up until the server's answer is known. Returns 1 (more to read), 0
 * (known; its bytes moved to cout, for the client) or -1 (closed).
 */
static int server_hello(struct session *s, bool *retry)
{
	struct tls_hello h;
	int r;

	for (;;) {
		bool drained;
		ssize_t n;

		r = tls_hello_server(&h, buf_head(&s->uin), buf_len(&s->uin));
		if (r != TLS_HELLO_MORE)
			break;
		n = buf_read_fd(&s->uin, s->ufd, TLS_HELLO_WIRE_MAX - buf_len(&s->uin), &drained);
		if (n > 0)
			continue;
		if (n == -1 && session_would_block()) {
			s->tun->to_cli.want_read = true;
			return 1;
		}
		break; /* end of stream or an error: the relay meets it again */
	}
	s->tun->to_cli.want_read = false;
	*retry = r == TLS_HELLO_RETRY;
	/* cout holds at most our 200 (IOBUF_MAX > TLS_HELLO_WIRE_MAX + its length) */
	if (buf_append(&s->cout, buf_head(&s->uin), buf_len(&s->uin)) == -1) {
		session_close(s, "out of memory");
		return -1;
	}
	buf_consume(&s->uin, buf_len(&s->uin));
	buf_trim(&s->uin);
	return 0;
}

static void hello_enter(struct session *s, enum hello_phase phase)
{
	s->tun->hello = phase;
	s->tun->hello_ms = session_now(s);
	s->again = true;
	session_arm_timer(s); /* this phase's deadline may be sooner */
}

/*
 * A passthrough tunnel's hellos (tunnel.c's step runs this until
 * s->tun->hello is HELLO_DONE, relaying nothing else meanwhile but our 200):
 * the ClientHello is read whole and judged; only its own bytes go up; the
 * server's first message is read and held until it is known not to be a
 * HelloRetryRequest; if it is, it goes to the client and the second
 * ClientHello is judged like the first. Then the tunnel relays verbatim
 * everything it read, in order. Returns 0 (go on) or -1 (closed).
 */
int tls_hello_step(struct session *s)
{
	size_t wire = 0;
	bool retry = false;

	switch (s->tun->hello) {
	case HELLO_CLIENT:
		switch (client_hello(s, false, &wire)) {
		case -1:
			return -1;
		case 1:
			return 0;
		}
		s->tun->hello_left = wire;
		hello_enter(s, HELLO_SERVER);
		/* fall through */
	case HELLO_SERVER:
		/* the ClientHello alone; what the client sent after it waits */
		while (s->tun->hello_left > 0) {
			ssize_t n = write(s->ufd, buf_head(&s->cin), s->tun->hello_left);

			if (n > 0) {
				buf_consume(&s->cin, (size_t)n);
				s->tun->hello_left -= (size_t)n;
				s->tun->to_up.bytes += (uint64_t)n;
				s->active_ms = session_now(s);
				continue;
			}
			if (n == -1 && session_would_block()) {
				s->tun->to_up.want_write = true;
				return 0;
			}
			session_close(s, "tunnel error");
			return -1;
		}
		s->tun->to_up.want_write = false;
		switch (server_hello(s, &retry)) {
		case -1:
			return -1;
		case 1:
			return 0;
		}
		if (!retry) {
			hello_enter(s, HELLO_DONE);
			return 0;
		}
		hello_enter(s, HELLO_RETRY);
		return 0; /* the HelloRetryRequest goes out first */
	case HELLO_RETRY:
		switch (client_hello(s, true, &wire)) {
		case -1:
			return -1;
		case 1:
			return 0;
		}
		hello_enter(s, HELLO_DONE);
		return 0;
	case HELLO_DONE:
		break;
	}
	return 0;
}

