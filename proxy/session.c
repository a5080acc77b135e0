/*
 * session.c: one client connection, from accept to close, and the engine
 * that drives it.
 *
 * A connection owns its client transport (the socket, its TLS: sio.c),
 * the upstream socket its exchanges use, its stamp, its limits, one timer
 * and a codec (struct codec) that speaks its protocol. It knows no
 * request: everything about one lives in an exchange, reached through the
 * codec (its close, its release, its long rows).
 *
 * All progress happens in session_pump, which runs the connection's state
 * (struct state: h1.c's head, dial.c's connect, tunnel.c, ...) until
 * nothing moves and then asks the loop for exactly the readiness the state
 * names; the timer runs the state's timeout at its deadline, or writes a
 * long exchange's row. session_enter is the only way into a state; with
 * `sluice-proxy -d` every transition and every deadline passed is printed
 * by name. session_close is the one way a connection dies. It does not
 * parse bytes (http.c), decide policy (policy.c) or resolve names
 * (resolve.c).
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

static void on_timer(struct loop *l, struct loop_timer *t);

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


/* --- the log row ------------------------------------------------------- */

/* The kept stamp as the log row takes it. */
void session_stamp_expand(const struct sess_stamp *k, struct stamp *st)
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

/* --- closing ----------------------------------------------------------- */

/* Close the upstream socket only; buffers and the dial list stay (try_replay). */
void session_upstream_close_fd(struct session *s)
{
	if (s->ufd >= 0) {
		if (s->uio.fd >= 0)
			loop_io_drop(s->px->loop, &s->uio);
		else
			close(s->ufd); /* already out of epoll (hung_up) */
		s->ufd = -1;
	}
	sio_upstream_free(s);
	s->up_ready = false;
	s->u_hup = false;
}

/* Forget the upstream: pending lookup, socket, its buffers and address. */
void session_upstream_close(struct session *s)
{
	resolve_cancel(s->q);
	s->q = NULL;
	session_upstream_close_fd(s);
	free(s->up);
	s->up = NULL;
	buf_release(&s->uin);
	buf_release(&s->uout);
	buf_release(&s->replay);
}

void session_close(struct session *s, const char *why)
{
	struct proxy *px = s->px;

	if (s->closed)
		return;
	s->closed = true;
	s->codec->close(s, why); /* every exchange still open: its row, its secrets gone */
	loop_timer_cancel(px->loop, &s->timer);
	session_upstream_close(s);
	if (s->tun != NULL) {
		relay_dir_release(&s->tun->to_up);
		relay_dir_release(&s->tun->to_cli);
	}
	sio_client_free(s);
	if (s->cio.fd >= 0)
		loop_io_drop(px->loop, &s->cio);
	else
		close(s->cfd);
	s->cfd = -1;
	buf_release(&s->cin);
	buf_release(&s->cout);
	limit_put(px, s);

	list_remove(&px->sessions, &s->link);
	px->nsessions--;
	/* freed before the loop sleeps: events for it may still be queued */
	list_insert_head(&px->dead, &s->link);
}

/*
 * The exchanges' storage (the codec's), the tunnel's and the
 * interception's go with the session, not at its close: a caller may
 * still read them after the close.
 */
void session_free_dead(struct proxy *px)
{
	while (!list_empty(&px->dead)) {
		struct session *s = list_entry(px->dead.first, struct session, link);

		list_remove(&px->dead, &s->link);
		s->codec->release(s);
		free(s->tun);
		if (s->ix != NULL)
			free(s->ix->page);
		free(s->ix);
		free(s->stamp);
		free(s->build);
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

/* --- what a state that waits on something else reads and asks -------------- */

bool session_reads_nothing(const struct session *s)
{
	return false;
}

void session_asks_nothing(const struct session *s, uint32_t *c, uint32_t *u)
{
}

/* --- the drain ------------------------------------------------------------ */

/* Drop the upstream and finish: flush, shut, linger, close. */
void session_enter_drain(struct session *s)
{
	session_upstream_close(s);
	session_enter(s, &session_drain_state);
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
		sio_client_shutdown(s);
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

static bool drain_in(const struct session *s)
{
	return buf_len(&s->cout) == 0; /* the response first */
}

static void drain_ask(const struct session *s, uint32_t *c, uint32_t *u)
{
	if (buf_len(&s->cout) > 0)
		*c |= EPOLLOUT;
}

static uint64_t drain_due(const struct session *s, const struct config *c)
{
	return s->active_ms + LINGER_MS;
}

static void drain_late(struct session *s, const struct config *c)
{
	session_close(s, NULL);
}

const struct state session_drain_state = {
	.name = "drain",
	.waits = "the last response to go out, then the client's end",
	.late = "close (a linger of 2 s)",
	.step = step_drain,
	.client_in = drain_in,
	.ask = drain_ask,
	.due = drain_due,
	.timeout = drain_late,
};

/* --- the engine ----------------------------------------------------------- */

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
	const struct state *d = s->st;
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
		if (s->st->step != NULL)
			s->st->step(s);
	} while (s->again && !s->closed);
	s->pumping = false;
	if (s->closed)
		return;
	if (s->st->settle != NULL)
		s->st->settle(s);
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

	if ((events & EPOLLIN) && !s->st->client_in(s))
		s->c_woke = true; /* bytes we will not read yet: stop asking */

	if ((events & (EPOLLERR | EPOLLHUP)) && !(io->events & (EPOLLIN | EPOLLOUT))) {
		if (s->st->relay != NULL && !(events & EPOLLERR)) {
			/* gone both ways, but what it sent still goes upstream */
			hung_up(s, io, s->st->relay(s, false));
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

	if (s->st->upstream != NULL) {
		s->st->upstream(s, events);
		return;
	}
	if ((events & (EPOLLERR | EPOLLHUP)) && !(io->events & (EPOLLIN | EPOLLOUT))) {
		if (!(events & EPOLLERR)) {
			/* the rest of the response is in its socket: keep reading it */
			hung_up(s, io, s->st->relay != NULL ? s->st->relay(s, true) : NULL);
			return;
		}
		session_close(s, "upstream hung up");
		return;
	}
	session_pump(s);
}

/* When the codec's next long row is due (longrow.c), UINT64_MAX: none. */
static uint64_t rows_due(const struct session *s)
{
	return s->codec->rows_due != NULL ? s->codec->rows_due(s, session_config(s)) : UINT64_MAX;
}

/* The sooner of the state's deadline and a long exchange's next row. */
static uint64_t wake_at(const struct session *s, uint64_t due)
{
	uint64_t row = rows_due(s);

	return row < due ? row : due;
}

static void on_timer(struct loop *l, struct loop_timer *t)
{
	struct session *s = t->arg;
	const struct state *d = s->st;
	uint64_t due;

	if (rows_due(s) <= loop_now(l))
		s->codec->rows_write(s, session_config(s));
	due = d->due(s, session_config(s));
	if (due > loop_now(l)) {
		loop_timer_set(l, t, wake_at(s, due) - loop_now(l), on_timer, s);
		return;
	}
	trace(s, "%s: deadline passed: %s", d->name, d->late);
	d->timeout(s, session_config(s));
	if (!s->closed)
		session_pump(s);
}

/* Make sure the timer fires no later than the current state's deadline (or a row's). */
void session_arm_timer(struct session *s)
{
	struct loop *l = s->px->loop;
	uint64_t due = wake_at(s, s->st->due(s, session_config(s)));
	uint64_t now = loop_now(l);

	if (loop_timer_armed(&s->timer) && s->timer.fn == on_timer && s->timer.when_ms <= due)
		return;
	loop_timer_set(l, &s->timer, due > now ? due - now : 0, on_timer, s);
}

/* Every state change goes through here: the new state's deadline applies. */
void session_enter(struct session *s, const struct state *st)
{
	trace(s, "%s -> %s: waits for %s", s->st->name, st->name, st->waits);
	s->st = st;
	s->again = true;
	session_arm_timer(s);
}

/* --- accept ------------------------------------------------------------- */

/* A connection refused before it became a session: the 503, its row, close. */
static void refuse_accept(struct proxy *px, int fd, const char *client, const char *reason,
			  const char *detail)
{
	struct refusal ref = { .status = 503, .reason = reason,
			       .proxy_status = "connection_limit_reached" };
	struct netlog_row row;
	struct buf b;
	char key[INET6_ADDRSTRLEN + 24];

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
	if (px->netlog != NULL && lograte_admit(px, lograte_unattributed(client, key, sizeof(key)), &row))
		netlog_write(px->netlog, &row);
	stats_row(&row);
	close(fd);
}

bool session_idle(const struct session *s)
{
	return !s->closed && s->st->rest && (s->x == NULL || !s->x->active) &&
	       s->head_ms == 0 && s->tun == NULL && s->h2 == NULL && buf_len(&s->cin) == 0 &&
	       buf_len(&s->cout) == 0 && (s->cssl == NULL || SSL_pending(s->cssl) == 0);
}

bool session_evict_idle(struct proxy *px, const char *key)
{
	struct session *s = limit_idle_oldest(px, key, session_idle);
	struct netlog_row row;
	struct stamp st;
	char who[SESSION_WHO_MAX], detail[200];

	if (s == NULL)
		return false;
	snprintf(detail, sizeof(detail),
		 "closed while idle: its client held max-connections-per-client %u and opened "
		 "another; the oldest idle connection makes room",
		 config_per_client(px->config));
	memset(&row, 0, sizeof(row));
	row.conn = s->id;
	row.req = s->nreq;
	row.run = px->run_id;
	row.who = session_who(s, who, sizeof(who));
	row.build = s->build != NULL ? s->build->as : NULL;
	if (s->stamp != NULL) {
		session_stamp_expand(s->stamp, &st);
		row.stamp = &st;
	}
	row.client = s->client;
	row.port = -1;
	row.decision = "refuse";
	row.reason = "client-limit-idle";
	row.dns_ms = row.connect_ms = -1;
	row.ms = (double)(loop_now(px->loop) - s->accepted_ms);
	row.detail = detail;
	if (px->netlog != NULL)
		netlog_write(px->netlog, &row);
	stats_row(&row);
	session_close(s, "client-limit-idle");
	return true;
}

/*
 * The key a new connection counts under until its stamp (limit.c): its
 * peer's address, every port of it together, or for a unix:PATH listener
 * the peer process (SO_PEERCRED), so no two local clients share a count.
 */
static void accept_key(int fd, const struct sockaddr_storage *peer, char *key, size_t size)
{
	struct ucred uc;
	socklen_t len = sizeof(uc);

	snprintf(key, size, "a:");
	if (peer->ss_family != AF_UNIX)
		ipaddr_format(peer->ss_family, sockaddr_bytes(peer), key + 2, size - 2);
	else if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) == 0)
		snprintf(key + 2, size - 2, "unix:%ld", (long)uc.pid);
	else
		snprintf(key + 2, size - 2, "unix");
}

void session_init(struct session *s, struct proxy *px, int fd, const char *client,
		  const struct codec *codec, const struct state *st)
{
	s->px = px;
	s->codec = codec;
	s->st = st;
	s->id = ++px->next_conn_id;
	s->cfd = fd;
	s->ufd = -1;
	s->cio.fd = s->uio.fd = -1;
	buf_init(&s->cin, HEAD_MAX);
	buf_init(&s->cout, IOBUF_MAX);
	buf_init(&s->uin, RESP_HEAD_MAX);
	buf_init(&s->uout, IOBUF_MAX);
	buf_init(&s->replay, HEAD_MAX + 1024);
	snprintf(s->client, sizeof(s->client), "%s", client);
	s->accepted_ms = s->active_ms = loop_now(px->loop);
}

void session_link(struct session *s)
{
	struct proxy *px = s->px;

	list_insert_head(&px->sessions, &s->link);
	px->nsessions++;
}

void session_accept(struct proxy *px, int fd, const struct sockaddr_storage *peer,
		    const struct codec *codec, const struct state *st)
{
	struct session *s;
	char client[INET6_ADDRSTRLEN + 8], key[INET6_ADDRSTRLEN + 4], detail[160];

	sockaddr_format(peer, client, sizeof(client)); /* "unix" from a unix:PATH listener */
	if (px->nsessions >= px->config->max_conns) {
		snprintf(detail, sizeof(detail),
			 "too many connections (max-connections %u); try again later",
			 px->config->max_conns);
		refuse_accept(px, fd, client, "busy", detail);
		return;
	}
	s = calloc(1, sizeof(*s));
	if (s == NULL) {
		close(fd);
		return;
	}
	accept_key(fd, peer, key, sizeof(key));
	/* at its cap: its oldest idle connection makes room, else it is refused */
	if (limit_take(px, key, s) == NULL &&
	    (!session_evict_idle(px, key) || limit_take(px, key, s) == NULL)) {
		snprintf(detail, sizeof(detail),
			 "%s holds too many connections, none idle (max-connections-per-client "
			 "%u); try again later", key + 2, config_per_client(px->config));
		free(s);
		refuse_accept(px, fd, client, "client-limit", detail);
		return;
	}
	session_init(s, px, fd, client, codec, st);
	if (loop_io_add(px->loop, &s->cio, fd, EPOLLIN, session_on_client, s) == -1) {
		limit_put(px, s);
		close(fd);
		free(s);
		return;
	}
	session_link(s);
	session_arm_timer(s);
}

