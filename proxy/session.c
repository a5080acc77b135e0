/*
 * session.c: one client connection, from accept to close.
 *
 * A session reads a request head, has it judged and forwarded (exchange.c)
 * or tunnelled, over an upstream that dial.c resolved, checked and
 * connected. This file owns the connection's life: readiness, timers, the
 * tunnel relay, refusals, the log row and session_close, the one way a
 * session dies, which writes the row of an unfinished request.
 *
 * All progress happens in session_pump, which runs the state's step until
 * nothing moves and then asks the loop for exactly the readiness it needs.
 * It does not parse bytes (http.c), decide policy (policy.c) or resolve
 * names (resolve.c).
 */
#include "session.h"

#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#define LINGER_MS 2000 /* reading and discarding after a refusal, at most */
#define TOKEN_WAIT_MS 15000 /* a request waiting for its token, at most */

static const char tunnel_ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";

/*
 * An idle connection costs under 1 KiB (issue 10): its struct session, and
 * at most a verified stamp and a kept-alive upstream's identity (their
 * texts, the host name and malloc's headers in the 160 bytes), here with
 * one address in its answer set (each further one is 28 bytes more). The
 * rest comes and goes with the request, the tunnel or the interception
 * that needs it.
 */
_Static_assert(sizeof(struct session) + sizeof(struct sess_stamp) + sizeof(struct upstream) +
			       sizeof(union up_addr) + 160 <= 1024,
	       "an idle connection must cost under 1 KiB");

static void on_timer(struct loop *l, struct loop_timer *t);

/* --- the log row ------------------------------------------------------- */

/*
 * The request's storage: a zeroed struct request, allocated for the first
 * request (or refusal) after the session was idle. Returns 0 or -1.
 */
int session_request_new(struct session *s)
{
	if (s->r == NULL)
		s->r = malloc(sizeof(*s->r));
	if (s->r == NULL)
		return -1;
	memset(s->r, 0, sizeof(*s->r));
	return 0;
}

/*
 * Keep a verified stamp for the connection's life, in as many bytes as its
 * texts need (a struct stamp is 288). Returns 0 or -1.
 */
int session_stamp_keep(struct session *s, const struct stamp *st)
{
	size_t ls = strlen(st->src) + 1, ln = strlen(st->net) + 1, la = strlen(st->as) + 1;
	struct sess_stamp *k = malloc(sizeof(*k) + ls + ln + la);

	if (k == NULL)
		return -1;
	k->seq = st->seq;
	k->kid = st->kid;
	memcpy(k->boot, st->boot, sizeof(k->boot));
	memcpy(k->text, st->src, ls);
	memcpy(k->text + ls, st->net, ln);
	memcpy(k->text + ls + ln, st->as, la);
	k->src = k->text;
	k->net = k->text + ls;
	k->as = k->text + ls + ln;
	free(s->stamp);
	s->stamp = k;
	return 0;
}

/* The kept stamp as the log row takes it. */
static void stamp_expand(const struct sess_stamp *k, struct stamp *st)
{
	memset(st, 0, sizeof(*st));
	st->version = 1;
	st->kid = k->kid;
	st->seq = k->seq;
	snprintf(st->src, sizeof(st->src), "%s", k->src);
	snprintf(st->net, sizeof(st->net), "%s", k->net);
	snprintf(st->as, sizeof(st->as), "%s", k->as);
	memcpy(st->boot, k->boot, sizeof(st->boot));
}

/* Give the request's storage back; its row is written (the session is idle or closing). */
static void request_free(struct session *s)
{
	if (s->r == NULL)
		return;
	inject_end(s);
	free(s->r);
	s->r = NULL;
}

void session_log(struct session *s)
{
	struct request *r = s->r;
	struct netlog_row row;
	struct stamp st;
	char who[SESSION_WHO_MAX];

	if (r == NULL || !r->active)
		return;
	r->active = false;
	memset(&row, 0, sizeof(row));
	row.conn = s->id;
	row.req = s->nreq;
	row.run = s->px->run_id;
	row.who = session_who(s, who, sizeof(who));
	if (s->stamp != NULL) {
		stamp_expand(s->stamp, &st);
		row.stamp = &st;
	}
	row.client = s->client;
	row.kind = r->method == HTTP_CONNECT ? "tunnel" : s->intercept ? "https" : "http";
	row.method = r->method != HTTP_UNKNOWN ? http_method_name(r->method) : NULL;
	row.host = r->t.host.name[0] != '\0' ? r->t.host.name : NULL;
	row.port = r->t.host.name[0] != '\0' ? r->t.port : -1;
	row.path = r->method != HTTP_CONNECT && r->path_len > 0 ? r->path : NULL;
	row.path_len = r->path_len;
	row.status = r->status;
	row.decision = r->decision;
	row.reason = r->reason;
	row.grant = r->grant[0] != '\0' ? r->grant : NULL;
	row.inject = r->inject_name[0] != '\0' ? r->inject_name : NULL;
	row.scrubbed = r->scrub != NULL ? (int64_t)scrub_count(r->scrub) : -1;
	row.dialed = r->dialed[0] != '\0' ? r->dialed : NULL;
	row.up = r->up;
	row.down = r->down;
	row.ms = proxy_now_ms() - r->t_start;
	row.dns_ms = r->dns_ms;
	row.connect_ms = r->connect_ms;
	row.ua = r->ua_len > 0 ? r->ua : NULL;
	row.ua_len = r->ua_len;
	row.detail = r->detail[0] != '\0' ? r->detail : NULL;
	if (s->px->netlog != NULL)
		netlog_write(s->px->netlog, &row);
	inject_end(s);
}

/* --- closing ----------------------------------------------------------- */

/* Payload bytes of a tunnel: our own 200 reply went through to_cli first. */
static void tunnel_count(struct session *s)
{
	uint64_t reply = sizeof(tunnel_ok) - 1;

	s->r->up = s->tun->to_up.bytes;
	s->r->down = s->tun->to_cli.bytes > reply ? s->tun->to_cli.bytes - reply : 0;
}

void session_close(struct session *s, const char *why)
{
	struct proxy *px = s->px;

	if (s->closed)
		return;
	s->closed = true;
	if (s->r != NULL && s->r->active && s->r->detail[0] == '\0' && why != NULL)
		snprintf(s->r->detail, sizeof(s->r->detail), "%s", why);
	if (s->r != NULL && s->r->method == HTTP_CONNECT && s->state == SS_TUNNEL)
		tunnel_count(s);
	session_log(s);
	loop_timer_cancel(px->loop, &s->timer);
	dial_close(s);
	if (s->tun != NULL) {
		relay_dir_release(&s->tun->to_up);
		relay_dir_release(&s->tun->to_cli);
	}
	tls_session_free(s);
	/*
	 * The request's secrets go now; its storage, the tunnel's and the
	 * interception's go with the session (session_free_dead): a caller
	 * may still read them after the close, as it could when they were
	 * part of the session.
	 */
	if (s->r != NULL)
		inject_end(s);
	if (s->cio.fd >= 0)
		loop_io_close(px->loop, &s->cio);
	else
		close(s->cfd);
	s->cfd = -1;
	buf_release(&s->cin);
	buf_release(&s->cout);
	limit_put(px, s->limit);
	s->limit = NULL;

	if (s->prev != NULL)
		s->prev->next = s->next;
	else
		px->sessions = s->next;
	if (s->next != NULL)
		s->next->prev = s->prev;
	px->nsessions--;
	/* freed before the loop sleeps: events for it may still be queued */
	s->next = px->dead;
	px->dead = s;
}

void session_free_dead(struct proxy *px)
{
	while (px->dead != NULL) {
		struct session *s = px->dead;

		px->dead = s->next;
		free(s->r);
		free(s->tun);
		free(s->ix);
		free(s->stamp);
		free(s);
	}
}

/*
 * Close a connection whose response is cut short with an RST, not a FIN, so
 * the client cannot mistake a truncated body (one read to end of stream
 * above all) for a complete one.
 */
void session_abort(struct session *s, const char *why)
{
	sock_reset_on_close(s->cfd);
	session_close(s, why);
}

/* --- refusing and states ----------------------------------------------- */

/* Drop the upstream and finish: flush, shut, linger, close. */
void session_enter_drain(struct session *s)
{
	dial_close(s);
	session_enter(s, SS_DRAIN);
}

/*
 * Refuse the request in flight: the response goes out (after any unsent
 * tail of an earlier one), the row is written at once, and the connection
 * closes after a short linger.
 */
void session_refuse(struct session *s, int status, const char *reason,
			   const char *proxy_status, const char *fmt, ...)
{
	struct refusal ref = { .status = status, .reason = reason, .proxy_status = proxy_status };
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ref.detail, sizeof(ref.detail), fmt, ap);
	va_end(ap);
	if (s->r == NULL || !s->r->active) {
		if (session_request_new(s) == -1) {
			session_close(s, "out of memory");
			return;
		}
		s->r->active = true;
		s->r->t_start = proxy_now_ms();
		s->r->dns_ms = s->r->connect_ms = -1;
		s->nreq++;
	}
	s->r->decision = "refuse";
	s->r->reason = reason;
	snprintf(s->r->detail, sizeof(s->r->detail), "%s", ref.detail);
	/* cout holds at most the unsent tail of an earlier response: keep it, append */
	if (!s->r->resp_started && refuse_write(&s->cout, &ref) == 0)
		s->r->status = status;
	session_log(s);
	session_enter_drain(s);
}

/*
 * Refuse a tunnel whose 200 went out already (a passthrough ClientHello
 * that fails its check): the row at once, counting what moved, then what
 * cout holds (a TLS alert, say) goes out and the connection closes after
 * a short linger; the upstream is closed at once.
 */
void session_tunnel_refuse(struct session *s, const char *reason, const char *fmt, ...)
{
	va_list ap;

	s->tun->hello = HELLO_DONE;
	s->r->decision = "refuse";
	s->r->reason = reason;
	va_start(ap, fmt);
	vsnprintf(s->r->detail, sizeof(s->r->detail), fmt, ap);
	va_end(ap);
	tunnel_count(s);
	session_log(s);
	session_enter_drain(s);
}

/* Every state change goes through here: the new state's deadline applies. */
void session_enter(struct session *s, enum sess_state state)
{
	s->state = state;
	s->again = true;
	session_arm_timer(s);
}

/* Write out what is queued for the client. Returns -1 if the client is gone. */
int session_flush_client(struct session *s)
{
	while (buf_len(&s->cout) > 0) {
		ssize_t n = sio_write(s, false, &s->cout);

		if (n > 0) {
			s->active_ms = session_now(s);
			continue;
		}
		if (n == -1 && session_would_block())
			break;
		return -1;
	}
	buf_trim(&s->cout);
	return 0;
}

/* --- tunnel and drain steps -------------------------------------------- */

static void step_tunnel(struct session *s)
{
	struct tunnel *tun = s->tun;
	uint64_t before = tun->to_up.bytes + tun->to_cli.bytes;

	if (tun->hello != HELLO_DONE) {
		/* our 200 goes out; the rest waits for the hellos (tls.c) */
		if (tun->hello != HELLO_RETRY && relay_dir_flush(&tun->to_cli) == -1) {
			session_close(s, "tunnel error");
			return;
		}
		if (tls_hello_step(s) == -1)
			return;
	}
	/* toward the client the relay never shuts: the end is passed on below */
	if ((tun->hello == HELLO_DONE &&
	     relay_dir_pump(&tun->to_up, relay_dir_done(&tun->to_cli)) == -1) ||
	    ((tun->hello == HELLO_DONE || tun->hello == HELLO_RETRY) &&
	     relay_dir_pump(&tun->to_cli, true) == -1)) {
		session_close(s, "tunnel error");
		return;
	}
	tunnel_count(s);
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
		if (s->r->detail[0] == '\0')
			snprintf(s->r->detail, sizeof(s->r->detail), "closed");
		session_log(s);
		if (shutdown(s->cfd, SHUT_WR) == -1 && errno != ENOTCONN)
			session_close(s, "tunnel error");
	}
}

static void step_drain(struct session *s)
{
	char sink[4096];

	if (session_flush_client(s) == -1) {
		session_close(s, NULL);
		return;
	}
	if (buf_len(&s->cout) > 0)
		return;
	if (!s->lingering) {
		/*
		 * Closing with unread bytes would send an RST that can destroy
		 * the response in the client's buffers: shut our side, then read
		 * and discard what the client still sends, for a bounded time.
		 */
		tls_shutdown_client(s);
		shutdown(s->cfd, SHUT_WR);
		s->lingering = true;
		s->active_ms = session_now(s);
		session_arm_timer(s);
	}
	/* a bounded helping per wake-up; the linger timer bounds the whole */
	for (int i = 0; i < 16; i++) {
		ssize_t n = read(s->cfd, sink, sizeof(sink));

		if (n > 0)
			continue;
		if (n == -1 && session_would_block())
			return;
		session_close(s, NULL); /* end of stream or error: done */
		return;
	}
}

/* --- readiness --------------------------------------------------------- */

/* Whether the current state reads from the client now. */
static bool want_client_in(const struct session *s)
{
	const struct request *r = s->r;

	switch (s->state) {
	case SS_HEAD:
		return buf_len(&s->cout) == 0;
	case SS_HTTP:
		return !r->req_done && buf_room(&s->cin) > 0 && buf_room(&s->uout) > 0;
	case SS_TUNNEL:
		return s->tun->to_up.want_read;
	case SS_DRAIN:
		return buf_len(&s->cout) == 0;
	case SS_TLS_ACCEPT:
		return s->cssl != NULL && !s->c_tls_out;
	case SS_RESOLVE:
	case SS_CONNECT:
	case SS_TLS_CONNECT:
	case SS_TOKEN:
		break;
	}
	return false;
}

static void update_interest(struct session *s)
{
	struct loop *l = s->px->loop;
	const struct request *r = s->r;
	uint32_t c = 0, u = 0;

	if (want_client_in(s)) {
		c = EPOLLIN;
		s->c_woke = false;
	} else if ((s->cio.events & EPOLLIN) && !s->c_woke) {
		/*
		 * Leave EPOLLIN on while the client is quiet, as it is between
		 * a request and its response: switching it off and on again
		 * would cost two epoll_ctl calls per request. If the client
		 * does send (c_woke), it is switched off, so nothing spins.
		 */
		c = EPOLLIN;
	}
	switch (s->state) {
	case SS_HEAD:
		if (buf_len(&s->cout) > 0)
			c |= EPOLLOUT;
		u = EPOLLIN; /* notice an idle upstream closing */
		break;
	case SS_RESOLVE:
		break;
	case SS_CONNECT:
		u = EPOLLOUT;
		break;
	case SS_HTTP:
		if (buf_len(&s->cout) > 0)
			c |= EPOLLOUT;
		if (buf_len(&s->uout) > 0)
			u |= EPOLLOUT;
		/* a scrubbed body moves only with room for a whole piece: wait for the client */
		if (!r->resp_done && !r->in_done && buf_room(&s->uin) > 0 &&
		    buf_room(&s->cout) >= (r->scrub != NULL ? inject_scrub_room(s) : 1))
			u |= EPOLLIN;
		break;
	case SS_TUNNEL:
		c |= s->tun->to_cli.want_write ? EPOLLOUT : 0;
		u = (s->tun->to_cli.want_read ? EPOLLIN : 0) | (s->tun->to_up.want_write ? EPOLLOUT : 0);
		break;
	case SS_DRAIN:
		if (buf_len(&s->cout) > 0)
			c |= EPOLLOUT;
		break;
	case SS_TLS_ACCEPT:
		if (buf_len(&s->cout) > 0)
			c |= EPOLLOUT;
		break;
	case SS_TLS_CONNECT:
		u = s->u_tls_out ? EPOLLOUT : EPOLLIN;
		break;
	case SS_TOKEN:
		break;
	}
	/* TLS that must write before it can read (or the reverse) */
	if (s->cssl != NULL && s->c_tls_out)
		c |= EPOLLOUT;
	if (s->ussl != NULL && s->u_tls_out)
		u |= EPOLLOUT;
	if (loop_io_set(l, &s->cio, c) == -1 ||
	    (s->ufd >= 0 && loop_io_set(l, &s->uio, u) == -1))
		session_close(s, "epoll_ctl failed");
}

void session_pump(struct session *s)
{
	if (s->pumping) {
		s->again = true;
		return;
	}
	s->pumping = true;
	do {
		s->again = false;
		switch (s->state) {
		case SS_HEAD:
			exchange_head(s);
			break;
		case SS_RESOLVE:
		case SS_CONNECT:
			break;
		case SS_HTTP:
			exchange_http(s);
			break;
		case SS_TUNNEL:
			step_tunnel(s);
			break;
		case SS_DRAIN:
			step_drain(s);
			break;
		case SS_TLS_ACCEPT:
			tls_step_accept(s);
			break;
		case SS_TLS_CONNECT:
			tls_step_connect(s);
			break;
		case SS_TOKEN:
			break; /* token.c wakes it */
		}
	} while (s->again && !s->closed);
	s->pumping = false;
	if (s->closed)
		return;
	/* idle between requests: the request's storage goes back (its row is written) */
	if (s->state == SS_HEAD && s->r != NULL && !s->r->active)
		request_free(s);
	update_interest(s);
}

/*
 * A peer shut both ways while we were not asking for its events (the other
 * side was slow to take what it sent). Level-triggered EPOLLHUP would fire
 * for ever, so the fd leaves epoll; its socket still holds data and then
 * end of stream, which the pump reads without waiting for readiness,
 * driven by the other side's events.
 */
static void hung_up(struct session *s, struct loop_io *io, struct relay_dir *d)
{
	loop_io_del(s->px->loop, io);
	if (io == &s->uio)
		s->u_hup = true;
	if (d != NULL)
		d->src_hup = true;
	session_pump(s);
}

static void on_client(struct loop *l, struct loop_io *io, uint32_t events)
{
	struct session *s = io->arg;

	if ((events & EPOLLIN) && !want_client_in(s))
		s->c_woke = true; /* bytes we will not read yet: stop asking */

	if ((events & (EPOLLERR | EPOLLHUP)) && !(io->events & (EPOLLIN | EPOLLOUT))) {
		if (s->state == SS_TUNNEL && !(events & EPOLLERR)) {
			/* gone both ways, but what it sent still goes upstream */
			hung_up(s, io, &s->tun->to_up);
			return;
		}
		session_close(s, "client hung up");
		return;
	}
	session_pump(s);
}

void session_on_upstream(struct loop *l, struct loop_io *io, uint32_t events)
{
	struct session *s = io->arg;

	if (s->state == SS_CONNECT) {
		dial_connected(s, events);
		session_pump(s);
		return;
	}
	if (s->state == SS_TLS_CONNECT) {
		session_pump(s);
		return;
	}
	if (s->state == SS_HEAD) {
		/* an idle kept-alive upstream said something or closed: drop it */
		dial_close(s);
		session_pump(s);
		return;
	}
	if ((events & (EPOLLERR | EPOLLHUP)) && !(io->events & (EPOLLIN | EPOLLOUT))) {
		if (!(events & EPOLLERR)) {
			/* the rest of the response is in its socket: keep reading it */
			hung_up(s, io, s->state == SS_TUNNEL ? &s->tun->to_cli : NULL);
			return;
		}
		session_close(s, "upstream hung up");
		return;
	}
	session_pump(s);
}

/* --- timers ------------------------------------------------------------ */

/* The deadline that applies in the current state, in loop milliseconds. */
static uint64_t deadline(const struct session *s)
{
	const struct config *c = session_config(s);

	switch (s->state) {
	case SS_HEAD:
		if (s->head_ms != 0)
			return s->head_ms + c->head_timeout_ms;
		if (s->nreq == 0)
			return s->accepted_ms + c->head_timeout_ms;
		return s->active_ms + c->idle_timeout_ms;
	case SS_RESOLVE:
	case SS_CONNECT:
	case SS_TLS_CONNECT:
		return s->phase_ms + c->connect_timeout_ms;
	case SS_TLS_ACCEPT:
		return s->active_ms + c->head_timeout_ms;
	case SS_TOKEN:
		return s->phase_ms + TOKEN_WAIT_MS;
	case SS_HTTP:
		/* an upload in progress is judged by idleness, the wait after it by response-timeout */
		if (!s->r->resp_head && s->r->req_done)
			return s->r->sent_ms + c->response_timeout_ms;
		return s->active_ms + c->idle_timeout_ms;
	case SS_TUNNEL:
		if (s->tun->hello == HELLO_SERVER)
			return s->tun->hello_ms + c->response_timeout_ms;
		if (s->tun->hello != HELLO_DONE)
			return s->tun->hello_ms + c->head_timeout_ms;
		return s->active_ms + c->idle_timeout_ms;
	case SS_DRAIN:
		return s->active_ms + LINGER_MS;
	}
	return 0;
}

static void on_timer(struct loop *l, struct loop_timer *t)
{
	struct session *s = t->arg;
	uint64_t due = deadline(s);
	const struct config *c = session_config(s);

	if (due > loop_now(l)) {
		loop_timer_set(l, t, due - loop_now(l), on_timer, s);
		return;
	}
	switch (s->state) {
	case SS_HEAD:
		if (buf_len(&s->cin) > 0)
			session_refuse(s, 408, "head-timeout", "http_request_error",
				       "request head not complete within %u s",
				       c->head_timeout_ms / 1000);
		else
			session_close(s, NULL);
		break;
	case SS_RESOLVE:
		session_refuse(s, 504, "dns-timeout", "dns_timeout", "resolving %s took over %u s",
			       s->r->t.host.name, c->connect_timeout_ms / 1000);
		break;
	case SS_CONNECT:
		s->r->dial_errno = ETIMEDOUT;
		loop_io_close(l, &s->uio);
		s->ufd = -1;
		s->r->idial++;
		if (s->r->idial < s->r->ndial) {
			dial_next(s);
			break;
		}
		s->r->dialed[0] = '\0';
		session_refuse(s, 504, "connect-timeout", "connection_timeout",
			       "%s port %u did not answer within %u s", s->r->t.host.name,
			       s->r->t.port, c->connect_timeout_ms / 1000);
		break;
	case SS_HTTP:
		if (!s->r->resp_head && !s->r->resp_started) {
			session_refuse(s, 504, "upstream-timeout", "http_response_timeout",
				       "%s sent no response within %u s", s->r->t.host.name,
				       c->response_timeout_ms / 1000);
			break;
		}
		session_close(s, "idle timeout");
		break;
	case SS_TUNNEL:
		if (s->tun->hello == HELLO_SERVER) {
			session_tunnel_refuse(s, "upstream-timeout",
					      "passthrough: the server did not answer the ClientHello "
					      "within %u s",
					      c->response_timeout_ms / 1000);
			break;
		}
		if (s->tun->hello != HELLO_DONE) {
			session_tunnel_refuse(s, "sni-unreadable",
					      "passthrough: no whole %sTLS ClientHello within %u s (%zu "
					      "bytes)",
					      s->tun->hello == HELLO_RETRY ? "second " : "",
					      c->head_timeout_ms / 1000, buf_len(&s->cin));
			break;
		}
		session_close(s, "idle timeout");
		break;
	case SS_DRAIN:
		session_close(s, NULL);
		break;
	case SS_TLS_ACCEPT:
		s->r->decision = "refuse";
		s->r->reason = "client-tls-failed";
		snprintf(s->r->detail, sizeof(s->r->detail),
			 "client TLS handshake not complete within %u s", c->head_timeout_ms / 1000);
		session_close(s, NULL);
		break;
	case SS_TOKEN:
		/* token.c fails the run first; this is the backstop */
		s->token = NULL;
		session_refuse(s, 504, "inject-failed", "http_request_error",
			       "no token within %u s; the request was not sent",
			       TOKEN_WAIT_MS / 1000);
		break;
	case SS_TLS_CONNECT:
		session_refuse(s, 504, "connect-timeout", "connection_timeout",
			       "TLS handshake with %s not complete within %u s", s->r->t.host.name,
			       c->connect_timeout_ms / 1000);
		break;
	}
	if (!s->closed)
		session_pump(s);
}

/* Make sure the timer fires no later than the current state's deadline. */
void session_arm_timer(struct session *s)
{
	struct loop *l = s->px->loop;
	uint64_t due = deadline(s);
	uint64_t now = loop_now(l);

	if (loop_timer_armed(&s->timer) && s->timer.fn == on_timer && s->timer.when_ms <= due)
		return;
	loop_timer_set(l, &s->timer, due > now ? due - now : 0, on_timer, s);
}

/* --- accept and re-judge ----------------------------------------------- */

/* A connection refused before it became a session: the 503, its row, close. */
static void refuse_accept(struct proxy *px, int fd, const char *client, const char *reason,
			  const char *detail)
{
	struct refusal ref = { .status = 503, .reason = reason,
			       .proxy_status = "connection_limit_reached" };
	struct netlog_row row;
	struct buf b;

	snprintf(ref.detail, sizeof(ref.detail), "%s", detail);
	buf_init(&b, 4096);
	if (refuse_write(&b, &ref) == 0)
		(void)!write(fd, buf_head(&b), buf_len(&b));
	buf_release(&b);
	memset(&row, 0, sizeof(row));
	row.conn = ++px->next_conn_id;
	row.req = 0;
	row.run = px->run_id;
	row.who = "unattributed";
	row.client = client;
	row.port = -1;
	row.status = 503;
	row.decision = "refuse";
	row.reason = reason;
	row.dns_ms = row.connect_ms = -1;
	row.detail = ref.detail;
	if (px->netlog != NULL)
		netlog_write(px->netlog, &row);
	close(fd);
}

/* fd is a new client connection (TCP_NODELAY inherited from the listener). */
void session_accept(struct proxy *px, int fd, const struct sockaddr_storage *peer)
{
	struct session *s;
	struct limit_entry *lim;
	char client[INET6_ADDRSTRLEN + 8], key[INET6_ADDRSTRLEN + 4], detail[160];

	sockaddr_format(peer, client, sizeof(client)); /* "unix" from a unix:PATH listener */
	if (px->nsessions >= px->config->max_conns) {
		snprintf(detail, sizeof(detail),
			 "too many connections (max-connections %u); try again later",
			 px->config->max_conns);
		refuse_accept(px, fd, client, "busy", detail);
		return;
	}
	/* the address alone: every port of one client counts together */
	snprintf(key, sizeof(key), "a:");
	if (peer->ss_family == AF_UNIX)
		snprintf(key + 2, sizeof(key) - 2, "unix");
	else
		ipaddr_format(peer->ss_family, dial_addr_bytes(peer), key + 2, sizeof(key) - 2);
	lim = limit_take(px, key);
	if (lim == NULL) {
		snprintf(detail, sizeof(detail),
			 "%s holds too many connections (max-connections-per-client %u); try "
			 "again later", key + 2, config_per_client(px->config));
		refuse_accept(px, fd, client, "client-limit", detail);
		return;
	}
	s = calloc(1, sizeof(*s));
	if (s == NULL) {
		limit_put(px, lim);
		close(fd);
		return;
	}
	s->px = px;
	s->limit = lim;
	s->id = ++px->next_conn_id;
	s->cfd = fd;
	s->ufd = -1;
	s->cio.fd = s->uio.fd = -1;
	buf_init(&s->cin, HEAD_MAX);
	buf_init(&s->cout, IOBUF_MAX);
	buf_init(&s->uin, RESP_HEAD_MAX);
	buf_init(&s->uout, IOBUF_MAX);
	buf_init(&s->replay, HEAD_MAX + 1024);
	memcpy(s->client, client, sizeof(s->client));
	s->accepted_ms = s->active_ms = loop_now(px->loop);
	if (loop_io_add(px->loop, &s->cio, fd, EPOLLIN, on_client, s) == -1) {
		limit_put(px, s->limit);
		close(fd);
		free(s);
		return;
	}
	s->next = px->sessions;
	if (px->sessions != NULL)
		px->sessions->prev = s;
	px->sessions = s;
	px->nsessions++;
	session_arm_timer(s);
}

/*
 * After a reload: a connection whose target, or any address its target
 * resolved to, the new policy refuses is closed with a row saying so; the
 * rest are untouched. Idle keep-alive upstreams are dropped when refused
 * (the next request is judged anyway).
 */
void session_rejudge_all(struct proxy *px)
{
	time_t now = time(NULL);

	for (struct session *s = px->sessions, *next; s != NULL; s = next) {
		struct policy_request pr = { 0 };
		struct verdict v;
		bool busy = s->state != SS_HEAD && s->state != SS_DRAIN && s->r != NULL &&
			    s->r->active;
		struct target kept;
		const struct target *t = &kept;

		next = s->next;
		if (!busy && (s->ufd < 0 || s->up == NULL))
			continue;
		if (busy)
			t = &s->r->t;
		else
			dial_up_target(s->up, &kept);
		pr.via = t->via;
		pr.host = &t->host;
		pr.port = t->port;
		policy_judge(px->policy, &pr, now, &v);
		/*
		 * Every address of the answer set, not only the one in use: a
		 * replay or a failed connect dials the later ones, and a new
		 * request would be refused if any of them is now denied. An idle
		 * kept-alive upstream keeps its answer set for this (dial_reuse).
		 */
		if (busy)
			for (size_t i = 0; v.allow && i < s->r->ndial; i++)
				policy_judge_addr(px->policy, &t->host, s->r->dial[i].ss_family,
						  dial_addr_bytes(&s->r->dial[i]), &v);
		else
			dial_up_judge(px->policy, s->up, &t->host, &v);
		if (v.allow)
			continue;
		if (!busy) {
			dial_close(s);
			update_interest(s);
			continue;
		}
		s->r->decision = "refuse";
		s->r->reason = "revoked";
		snprintf(s->r->detail, sizeof(s->r->detail), "closed by a policy reload: %s",
			 v.detail[0] ? v.detail : v.reason);
		session_close(s, NULL);
	}
}

/* An allowed CONNECT to intercept: answer 200 (no dial yet), then TLS (tls.c). */
void session_intercept_begin(struct session *s)
{
	tls_tunnel_begin(s, tunnel_ok, sizeof(tunnel_ok) - 1);
}

/* The upstream of a CONNECT is up: answer 200 and start relaying. */
void session_tunnel_begin(struct session *s)
{
	s->tun = calloc(1, sizeof(*s->tun));
	if (s->tun == NULL) {
		session_close(s, "out of memory");
		return;
	}
	s->r->status = 200;
	s->r->resp_started = true;
	buf_append(&s->cout, tunnel_ok, sizeof(tunnel_ok) - 1);
	/* bytes the client sent after its CONNECT head go first, then splice */
	relay_dir_init(&s->tun->to_up, s->cfd, s->ufd, &s->cin);
	relay_dir_init(&s->tun->to_cli, s->ufd, s->cfd, &s->cout);
	/* a passthrough host: its ClientHello is read and checked before anything goes up */
	s->tun->hello = s->px->tls != NULL ? HELLO_CLIENT : HELLO_DONE;
	s->tun->hello_ms = session_now(s);
	session_enter(s, SS_TUNNEL);
}
