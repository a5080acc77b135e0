/*
 * tunnel.c: a CONNECT's tunnel, from its 200 to its close: its codec and
 * its state.
 *
 * The upstream of an allowed CONNECT that is not intercepted is up: our
 * 200 goes out, then what the client sent behind its head, then both
 * directions are spliced (lib/relay.c). A passthrough host's hellos are
 * read and judged first (hello.c), nothing going up before the
 * ClientHello passed. What the relay takes from the client is spent
 * against the principal's budget as it is taken (charge.c). Refused past
 * its 200 (a hello that fails, a budget spent) there is no status to say
 * it in: the row says it, and the connection drains.
 */
#include "request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

/* Payload bytes of a tunnel: our own 200 reply went through to_cli first. */
static void tunnel_count(struct session *s)
{
	uint64_t reply = sizeof(TUNNEL_OK) - 1;

	s->x->up = s->tun->to_up.bytes;
	s->x->down = s->tun->to_cli.bytes > reply ? s->tun->to_cli.bytes - reply : 0;
}

/* --- the relay ----------------------------------------------------------- */

static void step(struct session *s)
{
	struct tunnel *tun = s->tun;
	uint64_t before = tun->to_up.bytes + tun->to_cli.bytes;

	if (tun->hello != HELLO_DONE) {
		/* our 200 goes out; the rest waits for the hellos (hello.c) */
		if (tun->hello != HELLO_RETRY && relay_dir_flush(&tun->to_cli) == -1) {
			session_close(s, "tunnel error");
			return;
		}
		if (tls_hello_step(s) == -1)
			return;
	}
	budget_relay_cap(s->x, tun->to_up.taken);
	/* toward the client the relay never shuts: the end is passed on below */
	if ((tun->hello == HELLO_DONE &&
	     relay_dir_pump(&tun->to_up, relay_dir_done(&tun->to_cli)) == -1) ||
	    ((tun->hello == HELLO_DONE || tun->hello == HELLO_RETRY) &&
	     relay_dir_pump(&tun->to_cli, true) == -1)) {
		session_close(s, "tunnel error");
		return;
	}
	tunnel_count(s);
	if (budget_tunnel_over(s->x))
		return;
	if (tun->to_up.bytes + tun->to_cli.bytes != before)
		s->active_ms = session_now(s);
	if (relay_dir_done(&tun->to_up) && relay_dir_done(&tun->to_cli)) {
		session_close(s, "closed");
		return;
	}
	/*
	 * The upstream is done while the client still sends: the row goes down
	 * before the client can see the end, so a kill -9 after it learns the
	 * answer is complete cannot lose the row. It counts what the client
	 * sent until now.
	 */
	if (relay_dir_done(&tun->to_cli) && !tun->ended) {
		tun->ended = true;
		if (s->x->detail[0] == '\0')
			snprintf(s->x->detail, sizeof(s->x->detail), "closed");
		exchange_log(s->x);
		if (shutdown(s->cfd, SHUT_WR) == -1 && errno != ENOTCONN)
			session_close(s, "tunnel error");
	}
}

/* --- the state: relaying, a passthrough's hellos first ------------------ */

/* A tunnel past its 200 refused (tunnel_codec): no status, the row and the drain. */
static __attribute__((format(printf, 3, 4))) void
tunnel_refuse(struct session *s, const char *reason, const char *fmt, ...)
{
	struct refusal ref = { .reason = reason };
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ref.detail, sizeof(ref.detail), fmt, ap);
	va_end(ap);
	exchange_refuse(s->x, &ref);
}

static bool in_tunnel(const struct session *s)
{
	return s->tun->to_up.want_read;
}

static void ask_tunnel(const struct session *s, uint32_t *c, uint32_t *u)
{
	*c |= s->tun->to_cli.want_write ? EPOLLOUT : 0;
	*u |= (s->tun->to_cli.want_read ? EPOLLIN : 0) | (s->tun->to_up.want_write ? EPOLLOUT : 0);
}

static uint64_t due_tunnel(const struct session *s, const struct config *c)
{
	if (s->tun->hello == HELLO_SERVER)
		return s->tun->hello_ms + c->response_timeout_ms;
	if (s->tun->hello != HELLO_DONE)
		return s->tun->hello_ms + c->head_timeout_ms;
	return s->active_ms + c->idle_timeout_ms;
}

static void late_tunnel(struct session *s, const struct config *c)
{
	if (s->tun->hello == HELLO_SERVER) {
		tunnel_refuse(s, "upstream-timeout",
				      "passthrough: the server did not answer the ClientHello "
				      "within %u s",
				      c->response_timeout_ms / 1000);
		return;
	}
	if (s->tun->hello != HELLO_DONE) {
		tunnel_refuse(s, "sni-unreadable",
				      "passthrough: no whole %sTLS ClientHello within %u s (%zu "
				      "bytes)",
				      s->tun->hello == HELLO_RETRY ? "second " : "",
				      c->head_timeout_ms / 1000, buf_len(&s->cin));
		return;
	}
	session_close(s, "idle timeout");
}

static struct relay_dir *relay(struct session *s, bool up)
{
	return up ? &s->tun->to_cli : &s->tun->to_up;
}

const struct state tunnel_state = {
	.name = "tunnel",
	.waits = "tunnel bytes either way (a passthrough's hellos first)",
	.late = "sni-unreadable or upstream-timeout during the hellos, else close (idle-timeout)",
	.step = step,
	.client_in = in_tunnel,
	.ask = ask_tunnel,
	.due = due_tunnel,
	.timeout = late_tunnel,
	.relay = relay,
};

/* --- the codec ---------------------------------------------------------- */

/*
 * A tunnel whose 200 went out already is refused (a passthrough
 * ClientHello that fails its check, its budget spent): the row at once,
 * counting what moved, then what cout holds (a TLS alert, say) goes out
 * and the connection closes after a short linger; the upstream is closed
 * at once.
 */
static void codec_refuse(struct exchange *x, const struct refusal *r)
{
	struct session *s = x->conn;

	s->tun->hello = HELLO_DONE;
	x->decision = "refuse";
	x->reason = r->reason;
	snprintf(x->detail, sizeof(x->detail), "%s", r->detail);
	tunnel_count(s);
	exchange_log(x);
	session_enter_drain(s);
}

static void codec_close(struct session *s, const char *why)
{
	if (s->x != NULL && s->x->method == HTTP_CONNECT && s->st == &tunnel_state)
		tunnel_count(s);
	exchange_conn_close(s, why);
}

/* Its exchange relaying past its hellos: its open and progress rows (longrow.c). */
static uint64_t rows_due(const struct session *s, const struct config *c)
{
	return s->st == &tunnel_state && s->tun->hello == HELLO_DONE ? longrow_due(s->x, c)
									: UINT64_MAX;
}

static void rows_write(struct session *s, const struct config *c)
{
	if (s->st == &tunnel_state && s->tun->hello == HELLO_DONE)
		longrow_write(s->x, c, session_now(s));
}

const struct codec tunnel_codec = {
	.name = "tunnel",
	.refuse = codec_refuse,
	.close = codec_close,
	.release = exchange_conn_release,
	.rows_due = rows_due,
	.rows_write = rows_write,
};



/* --- its beginning -------------------------------------------------------- */

void tunnel_begin(struct exchange *x)
{
	struct session *s = x->conn;

	/* the bytes the client sent behind its head are taken: past its budget, none goes up */
	if (budget_over(x, buf_len(&s->cin))) {
		budget_refuse(x, "with the bytes sent behind the CONNECT head; none went up");
		return;
	}
	s->tun = calloc(1, sizeof(*s->tun));
	if (s->tun == NULL) {
		session_close(s, "out of memory");
		return;
	}
	x->status = 200;
	x->resp_started = true;
	buf_append(&s->cout, TUNNEL_OK, sizeof(TUNNEL_OK) - 1);
	/* bytes the client sent after its CONNECT head go first, then splice */
	relay_dir_init(&s->tun->to_up, s->cfd, s->ufd, &s->cin);
	relay_dir_init(&s->tun->to_cli, s->ufd, s->cfd, &s->cout);
	budget_relay_cap(s->x, s->tun->to_up.taken);
	/*
	 * a passthrough host: its ClientHello is read and checked before anything
	 * goes up; a tunnel grant's: raw from here, whoever speaks first
	 */
	s->tun->hello = tls_active(s->px) && !x->raw_tunnel ? HELLO_CLIENT : HELLO_DONE;
	if (tls_active(s->px) && x->raw_tunnel && x->detail[0] == '\0')
		snprintf(x->detail, sizeof(x->detail), "tunnel grant: relayed raw");
	s->tun->hello_ms = session_now(s);
	s->codec = &tunnel_codec;
	session_enter(s, &tunnel_state);
}
