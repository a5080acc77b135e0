/*
 * session.c: one client connection, from accept to close.
 *
 * A session reads a request head, has it judged and forwarded (exchange.c)
 * or tunnelled, over an upstream that dial.c resolved, checked and
 * connected. This file owns the connection's life: accept, the tunnel
 * relay and the drain (two of the states' steps), refusals, the log row and
 * session_close, the one way a session dies, which writes the row of an
 * unfinished request, and the re-judging after a reload.
 *
 * All progress happens in session_pump (state.c, the table of states),
 * which runs the state's step until nothing moves and then asks the loop
 * for exactly the readiness it needs. It does not parse bytes (http.c),
 * decide policy (policy.c) or resolve names (resolve.c).
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

bool session_log(struct session *s)
{
	return s->x != NULL && exchange_log(s->x);
}


/* --- closing ----------------------------------------------------------- */

/* Payload bytes of a tunnel: our own 200 reply went through to_cli first. */
static void tunnel_count(struct session *s)
{
	uint64_t reply = sizeof(tunnel_ok) - 1;

	s->x->up = s->tun->to_up.bytes;
	s->x->down = s->tun->to_cli.bytes > reply ? s->tun->to_cli.bytes - reply : 0;
}

void session_close(struct session *s, const char *why)
{
	struct proxy *px = s->px;

	if (s->closed)
		return;
	s->closed = true;
	if (s->x != NULL && s->x->active && s->x->detail[0] == '\0' && why != NULL)
		snprintf(s->x->detail, sizeof(s->x->detail), "%s", why);
	if (s->x != NULL && s->x->method == HTTP_CONNECT && s->state == SS_TUNNEL)
		tunnel_count(s);
	session_log(s);
	budget_end(s, s->x);
	if (s->h2 != NULL)
		h2_end(s, why);
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
	if (s->x != NULL)
		inject_end(s->x);
	if (s->cio.fd >= 0)
		loop_io_close(px->loop, &s->cio);
	else
		close(s->cfd);
	s->cfd = -1;
	buf_release(&s->cin);
	buf_release(&s->cout);
	limit_put(px, s);

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
		if (s->x != NULL)
			upgrade_free(s->x);
		h2_release(s);
		free(s->x);
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

/* --- refusing and states ----------------------------------------------- */

/* Drop the upstream and finish: flush, shut, linger, close. */
void session_enter_drain(struct session *s)
{
	dial_close(s);
	session_enter(s, SS_DRAIN);
}

/*
 * A tunnel whose 200 went out already is refused (a passthrough
 * ClientHello that fails its check, its budget spent): the row at once,
 * counting what moved, then what cout holds (a TLS alert, say) goes out
 * and the connection closes after a short linger; the upstream is closed
 * at once.
 */
static void tunnel_refuse(struct exchange *x, const struct refusal *r)
{
	struct session *s = x->conn;

	s->tun->hello = HELLO_DONE;
	x->decision = "refuse";
	x->reason = r->reason;
	snprintf(x->detail, sizeof(x->detail), "%s", r->detail);
	tunnel_count(s);
	session_log(s);
	session_enter_drain(s);
}

const struct codec session_tunnel_codec = { .name = "tunnel", .refuse = tunnel_refuse };

void session_tunnel_refuse(struct session *s, const char *reason, const char *fmt, ...)
{
	struct refusal ref = { .reason = reason };
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ref.detail, sizeof(ref.detail), fmt, ap);
	va_end(ap);
	exchange_refuse(s->x, &ref);
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

/*
 * The budget is the principal's, shared with its other tunnels and
 * requests, and what a relay takes from the client is spent as it is taken
 * (bytes waiting in a pipe toward a stalled origin count): the cap is set
 * again before every pump, a byte past what is left. Past it under observe
 * or learn: the row says so, and nothing is held back. A CONNECT tunnel's
 * relay and a spliced WebSocket's alike.
 */
void session_budget_cap(struct session *s, uint64_t taken)
{
	uint64_t left;

	if (s->x == NULL || s->x->budget == NULL)
		return;
	left = budget_left(s->x, taken);
	s->tun->to_up.cap = left == UINT64_MAX ? UINT64_MAX : s->tun->to_up.taken + left + 1;
}

bool session_relay_over_budget(struct session *s, uint64_t taken)
{
	if (budget_over(s, s->x, taken))
		return true;
	session_budget_cap(s, taken); /* observe lifts it now: a relay at its cap waits for nothing */
	return false;
}

bool session_tunnel_over_budget(struct session *s)
{
	char why[sizeof(s->x->detail)];

	if (!session_relay_over_budget(s, s->tun->to_up.taken))
		return false;
	budget_line(s, s->x, why, sizeof(why));
	session_tunnel_refuse(s, "budget", "%s: the tunnel was closed", why);
	return true;
}

void session_step_tunnel(struct session *s)
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
	session_budget_cap(s, tun->to_up.taken);
	/* toward the client the relay never shuts: the end is passed on below */
	if ((tun->hello == HELLO_DONE &&
	     relay_dir_pump(&tun->to_up, relay_dir_done(&tun->to_cli)) == -1) ||
	    ((tun->hello == HELLO_DONE || tun->hello == HELLO_RETRY) &&
	     relay_dir_pump(&tun->to_cli, true) == -1)) {
		session_close(s, "tunnel error");
		return;
	}
	tunnel_count(s);
	if (session_tunnel_over_budget(s))
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
		session_log(s);
		if (shutdown(s->cfd, SHUT_WR) == -1 && errno != ENOTCONN)
			session_close(s, "tunnel error");
	}
}

void session_step_drain(struct session *s)
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

/* --- accept and re-judge ----------------------------------------------- */

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
	return !s->closed && s->state == SS_HEAD && (s->x == NULL || !s->x->active) &&
	       s->head_ms == 0 && s->tun == NULL && s->h2 == NULL && buf_len(&s->cin) == 0 &&
	       buf_len(&s->cout) == 0 && (s->cssl == NULL || SSL_pending(s->cssl) == 0);
}

bool session_evict_idle(struct proxy *px, const char *key)
{
	struct session *s = limit_idle_oldest(px, key);
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
		ipaddr_format(peer->ss_family, dial_addr_bytes(peer), key + 2, size - 2);
	else if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) == 0)
		snprintf(key + 2, size - 2, "unix:%ld", (long)uc.pid);
	else
		snprintf(key + 2, size - 2, "unix");
}

/* fd is a new client connection (TCP_NODELAY inherited from the listener). */
void session_accept(struct proxy *px, int fd, const struct sockaddr_storage *peer)
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
	s->px = px;
	s->codec = &h1_codec;
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
	if (loop_io_add(px->loop, &s->cio, fd, EPOLLIN, session_on_client, s) == -1) {
		limit_put(px, s);
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
		char who[SESSION_WHO_MAX];
		/*
		 * A request judged and waiting to be sent again (re-issued after a
		 * 401, back in SS_HEAD behind an unflushed 1xx) is in flight too:
		 * it resumes at its credential, never judged again, so judge it here.
		 */
		/* a tunnel whose upstream is done still relays what the client sends: judged too */
		bool busy = s->x != NULL && ((s->x->active && ((s->state != SS_HEAD && s->state != SS_DRAIN) ||
							       s->x->phase == XP_CREDENTIAL)) ||
					     s->state == SS_TUNNEL);
		struct target kept;
		const struct target *t = &kept;

		next = s->next;
		session_principal(s, &pr, who, sizeof(who));
		if (s->h2 != NULL) {
			/* every stream goes to the tunnel's host, on the one upstream */
			pr.via = s->ix->tunnel.via;
			pr.host = &s->ix->tunnel.host;
			pr.port = s->ix->tunnel.port;
			policy_judge(px->policy, &pr, now, &v);
			if (v.allow && s->up != NULL)
				dial_up_judge(px->policy, s->up, &s->ix->tunnel.host, &v);
			if (!v.allow)
				h2_revoke(s, &v);
			continue;
		}
		if (!busy && (s->ufd < 0 || s->up == NULL))
			continue;
		if (busy)
			t = &s->x->t;
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
			for (size_t i = 0; v.allow && i < s->x->ndial; i++)
				policy_judge_addr(px->policy, &t->host, s->x->dial[i].ss_family,
						  dial_addr_bytes(&s->x->dial[i]), &v);
		else
			dial_up_judge(px->policy, s->up, &t->host, &v);
		/* a raw tunnel stands only while a tunnel grant serves it: a plain one would intercept */
		if (v.allow && !(busy && s->x->raw_tunnel && !v.tunnel))
			continue;
		if (!busy) {
			dial_close(s);
			session_update_interest(s);
			continue;
		}
		s->x->decision = "refuse";
		s->x->reason = "revoked";
		if (v.allow)
			snprintf(s->x->detail, sizeof(s->x->detail),
				 "closed by a policy reload: no tunnel grant serves it raw now");
		else
			snprintf(s->x->detail, sizeof(s->x->detail), "closed by a policy reload: %s",
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
	/* the bytes the client sent behind its head are taken: past its budget, none goes up */
	if (budget_over(s, s->x, buf_len(&s->cin))) {
		budget_refuse(s->x, "with the bytes sent behind the CONNECT head; none went up");
		return;
	}
	s->tun = calloc(1, sizeof(*s->tun));
	if (s->tun == NULL) {
		session_close(s, "out of memory");
		return;
	}
	s->x->status = 200;
	s->x->resp_started = true;
	buf_append(&s->cout, tunnel_ok, sizeof(tunnel_ok) - 1);
	/* bytes the client sent after its CONNECT head go first, then splice */
	relay_dir_init(&s->tun->to_up, s->cfd, s->ufd, &s->cin);
	relay_dir_init(&s->tun->to_cli, s->ufd, s->cfd, &s->cout);
	session_budget_cap(s, s->tun->to_up.taken);
	/*
	 * a passthrough host: its ClientHello is read and checked before anything
	 * goes up; a tunnel grant's: raw from here, whoever speaks first
	 */
	s->tun->hello = tls_active(s->px) && !s->x->raw_tunnel ? HELLO_CLIENT : HELLO_DONE;
	if (tls_active(s->px) && s->x->raw_tunnel && s->x->detail[0] == '\0')
		snprintf(s->x->detail, sizeof(s->x->detail), "tunnel grant: relayed raw");
	s->tun->hello_ms = session_now(s);
	s->codec = &session_tunnel_codec;
	session_enter(s, SS_TUNNEL);
}
