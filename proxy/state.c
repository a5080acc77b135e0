/*
 * state.c: a session's states, as one table.
 *
 * Each state (enum sess_state, session.h) names what it waits for and what
 * passing its deadline does, and holds its step, whether it reads the
 * client, the readiness it asks of the loop, its deadline and its timeout.
 * session_enter is the only way into a state, session_pump runs the step
 * until nothing moves and then asks the loop for exactly that readiness,
 * and the timer runs the timeout. With `sluice-proxy -d` every transition
 * and every deadline passed is printed by name. What the steps do lives
 * with them (exchange.c, tls.c, session.c's tunnel and drain); this file
 * moves nothing itself.
 */
#include "session.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>

#define LINGER_MS 2000 /* reading and discarding after a refusal, at most */

static void on_timer(struct loop *l, struct loop_timer *t);

/*
 * What each state reads from the client, asks of the loop, and when its
 * deadline is. The table below puts them together with its step and its
 * timeout.
 */
static bool in_head(const struct session *s)
{
	return buf_len(&s->cout) == 0; /* the previous response first */
}

static bool in_none(const struct session *s)
{
	return false;
}

static bool in_http(const struct session *s)
{
	return !s->x->req_done && buf_room(&s->cin) > 0 && buf_room(&s->uout) > 0;
}

static bool in_tunnel(const struct session *s)
{
	return s->tun->to_up.want_read;
}

static bool in_tls_accept(const struct session *s)
{
	return s->cssl != NULL && !s->c_tls_out;
}

/* what is queued for the client goes out; an idle kept upstream is watched for its close */
static void ask_head(const struct session *s, uint32_t *c, uint32_t *u)
{
	if (buf_len(&s->cout) > 0)
		*c |= EPOLLOUT;
	*u |= EPOLLIN;
}

static void ask_flush(const struct session *s, uint32_t *c, uint32_t *u)
{
	if (buf_len(&s->cout) > 0)
		*c |= EPOLLOUT;
}

static void ask_connect(const struct session *s, uint32_t *c, uint32_t *u)
{
	*u |= EPOLLOUT;
}

static void ask_http(const struct session *s, uint32_t *c, uint32_t *u)
{
	const struct exchange *x = s->x;

	if (buf_len(&s->cout) > 0)
		*c |= EPOLLOUT;
	if (buf_len(&s->uout) > 0)
		*u |= EPOLLOUT;
	/* a scrubbed body moves only with room for a whole piece: wait for the client */
	if (!x->resp_done && !x->in_done && buf_room(&s->uin) > 0 &&
	    buf_room(&s->cout) >= (x->scrub != NULL ? inject_scrub_room(x) : 1))
		*u |= EPOLLIN;
}

static void ask_tunnel(const struct session *s, uint32_t *c, uint32_t *u)
{
	*c |= s->tun->to_cli.want_write ? EPOLLOUT : 0;
	*u |= (s->tun->to_cli.want_read ? EPOLLIN : 0) | (s->tun->to_up.want_write ? EPOLLOUT : 0);
}

static void ask_tls_connect(const struct session *s, uint32_t *c, uint32_t *u)
{
	*u |= s->u_tls_out ? EPOLLOUT : EPOLLIN;
}

static void ask_none(const struct session *s, uint32_t *c, uint32_t *u)
{
}

static uint64_t due_head(const struct session *s, const struct config *c)
{
	if (s->head_ms != 0)
		return s->head_ms + c->head_timeout_ms;
	if (s->nreq == 0)
		return s->accepted_ms + c->head_timeout_ms;
	if (s->ix != NULL && s->ix->page != NULL) /* a refusal's page waits for one request */
		return s->active_ms + c->head_timeout_ms;
	return s->active_ms + c->idle_timeout_ms;
}

static uint64_t due_connect(const struct session *s, const struct config *c)
{
	return s->phase_ms + c->connect_timeout_ms;
}

static uint64_t due_http(const struct session *s, const struct config *c)
{
	/* an upload in progress is judged by idleness, the wait after it by response-timeout */
	if (!s->x->resp_head && s->x->req_done)
		return s->x->sent_ms + c->response_timeout_ms;
	return s->active_ms + c->idle_timeout_ms;
}

static uint64_t due_tunnel(const struct session *s, const struct config *c)
{
	if (s->tun->hello == HELLO_SERVER)
		return s->tun->hello_ms + c->response_timeout_ms;
	if (s->tun->hello != HELLO_DONE)
		return s->tun->hello_ms + c->head_timeout_ms;
	return s->active_ms + c->idle_timeout_ms;
}

static uint64_t due_tls_accept(const struct session *s, const struct config *c)
{
	/*
	 * A refusal's page: a client that speaks TLS starts at its 200; one
	 * that waits for the server to speak first (a banner protocol) is
	 * closed soon, not kept the head-timeout for a page it cannot read.
	 */
	if (s->ix != NULL && s->ix->page != NULL)
		return s->phase_ms + REFUSE_PAGE_HELLO_MS;
	return s->active_ms + c->head_timeout_ms;
}

static uint64_t due_token(const struct session *s, const struct config *c)
{
	return s->phase_ms + TOKEN_WAIT_MS;
}

static uint64_t due_drain(const struct session *s, const struct config *c)
{
	return s->active_ms + LINGER_MS;
}

/* The request's own timeouts (a state's request_late): x waited too long. */
static void late_resolve(struct exchange *x, const struct config *c)
{
	exchange_refusef(x, 504, "dns-timeout", "dns_timeout", "resolving %s took over %u s",
			 x->t.host.name, c->connect_timeout_ms / 1000);
}

static void late_connect(struct exchange *x, const struct config *c)
{
	struct session *s = x->conn;

	x->dial_errno = ETIMEDOUT;
	loop_io_close(s->px->loop, &s->uio);
	s->ufd = -1;
	x->idial++;
	if (x->idial < x->ndial) {
		dial_next(x);
		return;
	}
	x->dialed[0] = '\0';
	exchange_refusef(x, 504, "connect-timeout", "connection_timeout",
			 "%s port %u did not answer within %u s", x->t.host.name, x->t.port,
			 c->connect_timeout_ms / 1000);
}

static void late_http(struct exchange *x, const struct config *c)
{
	if (!x->resp_head && !x->resp_started) {
		exchange_refusef(x, 504, "upstream-timeout", "http_response_timeout",
				 "%s sent no response within %u s", x->t.host.name,
				 c->response_timeout_ms / 1000);
		return;
	}
	session_close(x->conn, "idle timeout");
}

static void late_tunnel(struct session *s, const struct config *c)
{
	if (s->tun->hello == HELLO_SERVER) {
		session_tunnel_refuse(s, "upstream-timeout",
				      "passthrough: the server did not answer the ClientHello "
				      "within %u s",
				      c->response_timeout_ms / 1000);
		return;
	}
	if (s->tun->hello != HELLO_DONE) {
		session_tunnel_refuse(s, "sni-unreadable",
				      "passthrough: no whole %sTLS ClientHello within %u s (%zu "
				      "bytes)",
				      s->tun->hello == HELLO_RETRY ? "second " : "",
				      c->head_timeout_ms / 1000, buf_len(&s->cin));
		return;
	}
	session_close(s, "idle timeout");
}

static void late_tls_accept(struct session *s, const struct config *c)
{
	s->x->decision = "refuse";
	s->x->reason = "client-tls-failed";
	snprintf(s->x->detail, sizeof(s->x->detail),
		 "client TLS handshake not complete within %u s", c->head_timeout_ms / 1000);
	session_close(s, NULL);
}

static void late_tls_connect(struct exchange *x, const struct config *c)
{
	exchange_refusef(x, 504, "connect-timeout", "connection_timeout",
			 "TLS handshake with %s not complete within %u s", x->t.host.name,
			 c->connect_timeout_ms / 1000);
}

static void late_token(struct exchange *x, const struct config *c)
{
	/* token.c fails the run first; this is the backstop */
	x->conn->token = NULL;
	exchange_refusef(x, 504, "inject-failed", "http_request_error",
			 "no token within %u s; the request was not sent", TOKEN_WAIT_MS / 1000);
}

static uint64_t due_idle(const struct session *s, const struct config *c)
{
	return s->active_ms + c->idle_timeout_ms;
}

static void late_idle(struct session *s, const struct config *c)
{
	session_close(s, "idle timeout");
}

static void late_drain(struct session *s, const struct config *c)
{
	session_close(s, NULL);
}

/*
 * The session's states: each names what it waits for and what passing
 * its deadline means, and holds the step session_pump runs (NULL: another
 * file wakes it: the resolver, dial.c's connect, token.c), whether it
 * reads the client, the readiness it asks of the loop, its deadline and
 * its timeout: the connection's, or (request_late) the request's, run on
 * the exchange in flight. session_enter is the only way into a state; with
 * `sluice-proxy -d` every transition and every deadline passed is printed
 * by name.
 */
static const struct state_def {
	const char *name;
	const char *waits;
	const char *late; /* what passing the deadline does */
	void (*step)(struct session *s);
	bool (*client_in)(const struct session *s);
	void (*ask)(const struct session *s, uint32_t *c, uint32_t *u);
	uint64_t (*due)(const struct session *s, const struct config *c);
	void (*timeout)(struct session *s, const struct config *c);
	void (*request_late)(struct exchange *x, const struct config *c); /* else timeout */
} states[] = {
	[SS_HEAD] = { "head", "a request head from the client",
		      "408 if part of a head came, else close (head- or idle-timeout)",
		      h1_head, in_head, ask_head, due_head, h1_late_head },
	[SS_RESOLVE] = { "resolve", "the resolver's answer", "504 dns-timeout (connect-timeout)",
			 NULL, in_none, ask_none, due_connect, NULL, late_resolve },
	[SS_CONNECT] = { "connect", "the upstream's TCP connect",
			 "the next checked address, else 504 connect-timeout", NULL, in_none,
			 ask_connect, due_connect, NULL, late_connect },
	[SS_HTTP] = { "http", "request and response bytes",
		      "504 upstream-timeout before a response (response-timeout), else close "
		      "(idle-timeout)",
		      h1_http, in_http, ask_http, due_http, NULL, late_http },
	[SS_TUNNEL] = { "tunnel", "tunnel bytes either way (a passthrough's hellos first)",
			"sni-unreadable or upstream-timeout during the hellos, else close "
			"(idle-timeout)",
			session_step_tunnel, in_tunnel, ask_tunnel, due_tunnel, late_tunnel },
	[SS_TLS_ACCEPT] = { "tls-accept", "the client's TLS handshake with our leaf",
			    "close, row client-tls-failed (head-timeout)", tls_step_accept,
			    in_tls_accept, ask_flush, due_tls_accept, late_tls_accept },
	[SS_TLS_CONNECT] = { "tls-connect", "the upstream's TLS handshake",
			     "504 connect-timeout", tls_step_connect, in_none, ask_tls_connect,
			     due_connect, NULL, late_tls_connect },
	[SS_TOKEN] = { "token", "the rule's token command (token.c wakes it)",
		       "504 inject-failed, nothing sent", NULL, in_none, ask_none, due_token,
		       NULL, late_token },
	[SS_WEBSOCKET] = { "websocket", "WebSocket bytes either way",
			   "close (idle-timeout)", upgrade_step, upgrade_wants_client,
			   upgrade_interest, due_idle, late_idle },
	[SS_H2] = { "h2", "HTTP/2 frames from either hop (every stream's)",
		    "504 the streams past their token wait or response-timeout, else close, each "
		    "open stream's row says so (idle-timeout)",
		    h2_step, h2_wants_client, h2_interest, h2_due, h2_late },
	[SS_DRAIN] = { "drain", "the last response to go out, then the client's end",
		       "close (a linger of 2 s)", session_step_drain, in_head, ask_flush, due_drain,
		       late_drain },
};

_Static_assert(sizeof(states) / sizeof(states[0]) == SS_DRAIN + 1, "a state without its entry");

int session_states_check(void)
{
	for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++) {
		const struct state_def *d = &states[i];

		/* a state added to the enum but not to the table leaves a hole of NULLs */
		if (d->name == NULL || d->waits == NULL || d->late == NULL || d->client_in == NULL ||
		    d->ask == NULL || d->due == NULL ||
		    (d->timeout == NULL) == (d->request_late == NULL)) {
			fprintf(stderr, "sluice-proxy: state %zu has no entry in state.c's table\n", i);
			return -1;
		}
	}
	return 0;
}

/* sluice-proxy -d: one line per transition or deadline, by state name */
static void trace(const struct session *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void trace(const struct session *s, const char *fmt, ...)
{
	va_list ap;

	if (!s->px->trace)
		return;
	fprintf(stderr, "sluice-proxy: trace: conn %llu: ", (unsigned long long)s->id);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void session_update_interest(struct session *s)
{
	struct loop *l = s->px->loop;
	const struct state_def *d = &states[s->state];
	uint32_t c = 0, u = 0;

	if (d->client_in(s)) {
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
	d->ask(s, &c, &u);
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
		if (states[s->state].step != NULL)
			states[s->state].step(s);
	} while (s->again && !s->closed);
	s->pumping = false;
	if (s->closed)
		return;
	/* idle between requests: the request's storage goes back (its row is written) */
	if (s->state == SS_HEAD && s->x != NULL && !s->x->active)
		exchange_free(s);
	session_update_interest(s);
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

void session_on_client(struct loop *l, struct loop_io *io, uint32_t events)
{
	struct session *s = io->arg;

	if ((events & EPOLLIN) && !states[s->state].client_in(s))
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
		dial_connected(s->x, events);
		session_pump(s);
		return;
	}
	if (s->state == SS_TLS_CONNECT) {
		session_pump(s);
		return;
	}
	if (s->state == SS_HEAD) {
		/* an idle kept-alive upstream said something or closed: drop it (a ticket: keep it) */
		if (!(events & (EPOLLERR | EPOLLHUP)) && tls_upstream_quiet(s)) {
			session_pump(s);
			return;
		}
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

/* The sooner of the state's deadline and a long exchange's next row (longrow.c). */
static uint64_t wake_at(const struct session *s, uint64_t due)
{
	uint64_t row = longrow_due(s, session_config(s));

	return row < due ? row : due;
}

static void on_timer(struct loop *l, struct loop_timer *t)
{
	struct session *s = t->arg;
	const struct state_def *d = &states[s->state];
	uint64_t due;

	if (longrow_due(s, session_config(s)) <= loop_now(l))
		longrow_write(s, session_config(s));
	due = d->due(s, session_config(s));
	if (due > loop_now(l)) {
		loop_timer_set(l, t, wake_at(s, due) - loop_now(l), on_timer, s);
		return;
	}
	trace(s, "%s: deadline passed: %s", d->name, d->late);
	if (d->request_late != NULL)
		d->request_late(s->x, session_config(s));
	else
		d->timeout(s, session_config(s));
	if (!s->closed)
		session_pump(s);
}

/* Make sure the timer fires no later than the current state's deadline (or a row's). */
void session_arm_timer(struct session *s)
{
	struct loop *l = s->px->loop;
	uint64_t due = wake_at(s, states[s->state].due(s, session_config(s)));
	uint64_t now = loop_now(l);

	if (loop_timer_armed(&s->timer) && s->timer.fn == on_timer && s->timer.when_ms <= due)
		return;
	loop_timer_set(l, &s->timer, due > now ? due - now : 0, on_timer, s);
}

/* Every state change goes through here: the new state's deadline applies. */
void session_enter(struct session *s, enum sess_state state)
{
	trace(s, "%s -> %s: waits for %s", states[s->state].name, states[state].name,
	      states[state].waits);
	s->state = state;
	s->again = true;
	session_arm_timer(s);
}
