/*
 * h1.c: HTTP/1.1's codec: a request head read and run through a table of
 * phases, its bodies and its response relayed, its refusal said.
 *
 * exchange_run walks phases[] from x->phase: judge (exchange.c's
 * exchange_start: the row's fields, the stamp, the target, the policy's
 * verdict and budget; and an upgrade's offer); tunnel (a CONNECT dialed or
 * intercepted); credential (the body's cap and the credential, which may
 * wait for its token); send (the head upstream on the kept upstream or a
 * new dial). A phase that waits keeps x->phase and the head, read again,
 * resumes there (a token minted, a re-issue after a 401): judged and
 * charged once. Then the http state streams the request body and the response
 * back under their framing (one pass of named steps at a time), writes the
 * row, and keeps the upstream for the next request to the same target or
 * drops it. A kept-alive upstream that closes under a bodiless idempotent
 * request gets it once more on a new connection (try_replay). The heads
 * it sends are written by head.c. h1_codec answers a refused exchange on
 * such a connection: a response, then the drain (or the refusal's page).
 */
#include "request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

/* --- the phases of a head ------------------------------------------------------ */

/*
 * What a phase tells exchange_run (nginx's phase engine, in small): go on,
 * wait, or stop. A phase that waits leaves x->phase where it is; the head,
 * read again when it may go on, resumes there, so nothing before it (the
 * judgement, the budget's charge) runs twice.
 */
enum phase_rc {
	PHASE_NEXT, /* done here: on to the next phase */
	PHASE_WAIT, /* it waits (its token): resumed at this phase */
	PHASE_DONE, /* the head's part is over: refused, or handed on (sent, dialed, intercepted) */
};

/*
 * x's upstream is up (dial_start's then, and tls_connect_begin's):
 * inside an intercepted CONNECT its TLS first, then back here; a
 * CONNECT's tunnel answers 200; else the head's bytes go. Asked again
 * after any new connect (a replay's), it asks for TLS again.
 */
static void upstream_up(struct exchange *x)
{
	struct session *s = x->conn;

	if (s->ix != NULL && s->ussl == NULL) {
		tls_connect_begin(x, upstream_up);
	} else if (s->ix == NULL && x->method == HTTP_CONNECT) {
		tunnel_begin(x);
	} else {
		x->sent_ms = session_now(s);
		session_enter(s, &h1_http_state);
	}
}

/* XP_JUDGE: its row's fields and the stamp, its target, the policy's verdict and budget, an upgrade's offer. */
static enum phase_rc phase_judge(struct exchange *x, const struct http_request *req, size_t len)
{
	if (exchange_start(x, req) == -1)
		return PHASE_DONE;
	if (req->upgrade && req->method != HTTP_CONNECT && upgrade_request(x, req) == -1)
		return PHASE_DONE;
	return PHASE_NEXT;
}

/* XP_TUNNEL: a CONNECT is dialed, or intercepted (our 200 first, no dial yet); others go on. */
static enum phase_rc phase_tunnel(struct exchange *x, const struct http_request *req, size_t len)
{
	struct session *s = x->conn;

	if (req->method != HTTP_CONNECT)
		return PHASE_NEXT;
	buf_consume(&s->cin, len);
	session_upstream_close(s);
	if (!x->raw_tunnel && tls_intercepts(s->px, &x->t.host, x->t.port))
		tls_intercept_begin(s);
	else
		dial_start(x, upstream_up);
	return PHASE_DONE;
}

/*
 * XP_CREDENTIAL, before anything goes out: the body's cap, then the
 * credential (which may wait for its token command: h1_token_state, its head
 * read again when it is minted), and for a minted token the head kept to
 * be re-issued once after a 401 (reissue resumes here too).
 */
static enum phase_rc phase_credential(struct exchange *x, const struct http_request *req,
				      size_t len)
{
	struct session *s = x->conn;

	/* a body over its cap is refused before any credential is fetched */
	if (exchange_capped(x, req) == -1)
		return PHASE_DONE;
	switch (inject_begin(x, req)) {
	case -1:
		return PHASE_DONE;
	case 1:
		s->phase_ms = session_now(s);
		session_enter(s, &h1_token_state);
		return PHASE_WAIT;
	}
	if (s->reissued) {
		s->reissued = false;
		snprintf(x->detail, sizeof(x->detail), "re-issued once with a new token after a 401");
	} else if (x->minted != NULL && req->body == HTTP_BODY_NONE) {
		/* kept to re-issue once if the token is refused (401) */
		x->rehead = malloc(len);
		if (x->rehead != NULL) {
			memcpy(x->rehead, buf_head(&s->cin), len);
			x->rehead_len = len;
		}
	}
	return PHASE_NEXT;
}

/*
 * XP_SEND: the head goes upstream: built (credential written, the rule's
 * name kept for the row), then on the kept-alive upstream to the same
 * target (replayable once if it was closing) or on a new dial (which waits
 * in dial.c's resolve and connect states).
 */
static enum phase_rc phase_send(struct exchange *x, const struct http_request *req, size_t len)
{
	struct session *s = x->conn;

	if (x->ws != NULL)
		upgrade_scrubbed(x);
	x->req_body = req->body;
	x->req_left = req->content_length;
	x->req_done = req->body == HTTP_BODY_NONE ||
		      (req->body == HTTP_BODY_LENGTH && req->content_length == 0);
	if (!(s->ufd >= 0 && s->up_ready && dial_up_is(s->up, &x->t)))
		session_upstream_close(s);
	if (head_upstream(x, req) == -1) {
		exchange_refusef(x, 431, "head-too-large", "http_request_error",
				 "request head too large to forward");
		return PHASE_DONE;
	}
	inject_sent(x);
	buf_consume(&s->cin, len);
	if (s->ufd >= 0) {
		/*
		 * A kept-alive upstream may be closing just as this request goes
		 * out; a bodiless idempotent request is then re-sent once on a new
		 * connection to the same checked address, as browsers do.
		 */
		dial_reuse(x, upstream_up);
		buf_release(&s->replay);
		x->replayable = x->req_done && req->method != HTTP_POST &&
				req->method != HTTP_PATCH &&
				buf_append(&s->replay, buf_head(&s->uout), buf_len(&s->uout)) == 0;
		x->sent_ms = session_now(s);
		session_enter(s, &h1_http_state);
		return PHASE_DONE;
	}
	dial_start(x, upstream_up);
	return PHASE_DONE;
}

/* The phases of an HTTP/1.1 head, in order (enum x_phase). */
static const struct phase {
	const char *name;
	enum phase_rc (*run)(struct exchange *x, const struct http_request *req, size_t len);
} phases[XP_DONE] = {
	[XP_JUDGE] = { "judge", phase_judge },
	[XP_TUNNEL] = { "tunnel", phase_tunnel },
	[XP_CREDENTIAL] = { "credential", phase_credential },
	[XP_SEND] = { "send", phase_send },
};

/*
 * x's head, cin[0..len), through its phases from x->phase on: a new head
 * from XP_JUDGE, one that waited from where it waited. A phase may have
 * refused x or closed its connection: the engine then stops, touching no
 * more than x's phase.
 */
static void exchange_run(struct exchange *x, const struct http_request *req, size_t len)
{
	while (x->phase < XP_DONE) {
		switch (phases[x->phase].run(x, req, len)) {
		case PHASE_NEXT:
			x->phase++;
			break;
		case PHASE_WAIT:
			return;
		case PHASE_DONE:
			x->phase = XP_DONE;
			return;
		}
	}
}

/*
 * The reused upstream failed before a byte of the response: if the request
 * may be replayed, dial the same address again (it was checked when first
 * dialed, and re-judged at every reload since) and send the head again.
 */
static bool try_replay(struct exchange *x)
{
	struct session *s = x->conn;

	if (!x->replayable || x->resp_started || buf_len(&s->uin) > 0)
		return false;
	x->replayable = false;
	session_upstream_close_fd(s);
	buf_release(&s->uout);
	if (buf_append(&s->uout, buf_head(&s->replay), buf_len(&s->replay)) == -1)
		return false;
	buf_release(&s->replay);
	x->dial_errno = 0;
	dial_next(x);
	return true;
}

/*
 * Refuse the head being read on s (one that timed out or came malformed):
 * the exchange its row needs is begun when none is, then refused as s's
 * codec says it (exchange_refuse).
 */
static __attribute__((format(printf, 5, 6))) void
refuse_head(struct session *s, int status, const char *reason, const char *proxy_status,
	    const char *fmt, ...)
{
	va_list ap;

	if (s->x == NULL && exchange_new(s) == -1) {
		session_close(s, "out of memory");
		return;
	}
	va_start(ap, fmt);
	exchange_refusev(s->x, status, reason, proxy_status, fmt, ap);
	va_end(ap);
}

static void late_head(struct session *s, const struct config *c)
{
	if (buf_len(&s->cin) > 0)
		refuse_head(s, 408, "head-timeout", "http_request_error",
			    "request head not complete within %u s", c->head_timeout_ms / 1000);
	else
		session_close(s, NULL);
}

static void step_head(struct session *s)
{
	struct http_header hdrs[HEADERS_MAX];
	struct http_request req;
	bool drained = false;

	if (session_flush_client(s) == -1) {
		session_close(s, "client gone");
		return;
	}
	if (buf_len(&s->cout) > 0)
		return; /* the previous response first */
	for (;;) {
		if (buf_len(&s->cin) > 0) {
			ssize_t n = http_parse_request(buf_head(&s->cin), buf_len(&s->cin), HEAD_MAX,
						       &req, hdrs, HEADERS_MAX);

			if (n != 0 && s->ix != NULL && s->ix->page != NULL) {
				refuse_page_answer(s, n > 0 ? &req : NULL); /* refused at its CONNECT */
				return;
			}
			if (n > 0) {
				s->head_ms = 0;
				/* one that waited resumes where it waited; a new one begins */
				if (s->x != NULL && s->x->active && s->x->phase == XP_CREDENTIAL)
					exchange_run(s->x, &req, (size_t)n);
				else if (exchange_new(s) == -1)
					session_close(s, "out of memory");
				else
					exchange_run(s->x, &req, (size_t)n);
				s->again = true;
				return;
			}
			if (n == -1) {
				switch (req.error) {
				case HTTP_E_TOO_MANY:
					refuse_head(s, 431, "too-many-headers",
						    "http_request_error",
						    "more than %d header lines", HEADERS_MAX);
					break;
				case HTTP_E_TOO_LARGE:
					refuse_head(s, 431, "head-too-large",
						    "http_request_error",
						    "request head over %d bytes; nothing was sent",
						    HEAD_MAX);
					break;
				default:
					refuse_head(s, 400, "malformed", "http_request_error",
						    "malformed request head (%s); nothing was sent",
						    req.error == HTTP_E_FRAMING  ? "ambiguous body framing"
						    : req.error == HTTP_E_METHOD ? "bad method"
						    : req.error == HTTP_E_VERSION ? "bad version"
						    : req.error == HTTP_E_USERINFO
							    ? "userinfo in target"
						    : req.error == HTTP_E_ZONE_ID ? "IPv6 zone id"
										  : "syntax");
				}
				return;
			}
		}
		if (drained)
			return; /* the rest of the head has not arrived yet */
		ssize_t n = sio_read(s, false, &s->cin, 0, &drained);

		if (n > 0) {
			s->active_ms = session_now(s);
			if (s->head_ms == 0) {
				s->head_ms = session_now(s);
				session_arm_timer(s); /* head-timeout, not idle-timeout, from here */
			}
			continue;
		}
		if (n == -1 && session_would_block()) {
			buf_trim(&s->cin); /* an idle connection holds no buffer */
			return;
		}
		session_close(s, n == 0 ? "client closed" : "client read error");
		return;
	}
}

/*
 * What a try of the exchange set goes, its judgement stays: its
 * connection, its row's fields, its verdict and grant, its budget and
 * what it took of it (reissue).
 */
static void exchange_rewind(struct exchange *x)
{
	struct exchange j = *x;

	memset(x, 0, sizeof(*x));
	x->conn = j.conn;
	x->active = j.active;
	x->req = j.req;
	x->t = j.t;
	x->method = j.method;
	x->minor = j.minor;
	memcpy(x->path, j.path, sizeof(x->path));
	x->path_len = j.path_len;
	memcpy(x->ua, j.ua, sizeof(x->ua));
	x->ua_len = j.ua_len;
	memcpy(x->grant, j.grant, sizeof(x->grant));
	x->decision = j.decision;
	x->reason = j.reason;
	memcpy(x->detail, j.detail, sizeof(x->detail));
	x->budget = j.budget;
	x->budget_up = j.budget_up;
	x->budget_observed = j.budget_observed;
	x->t_start = j.t_start;
	x->dns_ms = x->connect_ms = -1;
	x->client_close = j.client_close;
	x->ws = j.ws;
	x->ws_scrubbed = j.ws_scrubbed; /* its offer was made without extensions */
}

/*
 * The upstream refused the minted token (401) of a bodiless request, and
 * token_refused says another token can be had: drop this upstream and its
 * answer, and put the client's head back in front of what it sent since,
 * to be sent once more from its credential on (XP_CREDENTIAL: judged and
 * charged once; a second 401 goes to the client). Returns true when
 * re-issued.
 */
static bool reissue(struct exchange *x)
{
	struct session *s = x->conn;
	struct buf b;

	buf_init(&b, HEAD_MAX + buf_len(&s->cin));
	if (buf_append(&b, x->rehead, x->rehead_len) == -1 ||
	    buf_append(&b, buf_head(&s->cin), buf_len(&s->cin)) == -1) {
		buf_release(&b);
		return false;
	}
	buf_release(&s->cin);
	s->cin = b;
	session_upstream_close(s);
	inject_end(x);
	exchange_rewind(x); /* one row: the re-issued try's, saying so */
	x->phase = XP_CREDENTIAL;
	s->reissued = true;
	s->head_ms = session_now(s);
	session_enter(s, &h1_head_state);
	return true;
}

/*
 * Parse the response head in uin. Returns 1 progress, 0 need more, -1
 * refused, or a WebSocket's 101 passed (the session is in upgrade_state).
 */
static int response_head(struct exchange *x)
{
	struct session *s = x->conn;
	struct http_header hdrs[HEADERS_MAX];
	struct http_response resp;
	ssize_t n = http_parse_response(buf_head(&s->uin), buf_len(&s->uin), RESP_HEAD_MAX,
					x->method, &resp, hdrs, HEADERS_MAX);

	if (n == -2)
		return 0;
	if (n == -1 && (resp.error == HTTP_E_TOO_LARGE || resp.error == HTTP_E_TOO_MANY)) {
		if (resp.error == HTTP_E_TOO_MANY)
			exchange_refusef(x, 502, "upstream-head-too-large",
					 "http_response_header_section_size",
					 "%s sent a response head of more than %d header lines; nothing "
					 "of it was passed on", x->t.host.name, HEADERS_MAX);
		else
			exchange_refusef(x, 502, "upstream-head-too-large",
					 "http_response_header_section_size",
					 "%s sent a response head over %d bytes; nothing of it was "
					 "passed on", x->t.host.name, RESP_HEAD_MAX);
		return -1;
	}
	if (n < 0) {
		exchange_refusef(x, 502, "upstream-malformed", "http_protocol_error",
				 "%s sent a response sluice-proxy cannot pass on", x->t.host.name);
		return -1;
	}
	if (resp.status == 101 && upgrade_response(x, &resp) == -1)
		return -1;
	if (resp.status == 401 && x->minted != NULL && x->injected) {
		if (!token_refused(x->minted, x->minted_gen, session_config(s))) {
			/* within token-min-interval no new token can be had: the 401 goes to the client */
			if (x->detail[0] == '\0')
				snprintf(x->detail, sizeof(x->detail),
					 "the upstream refused the token (401); token-min-interval "
					 "allows no new one yet");
		} else if (x->rehead != NULL && reissue(x)) {
			return -1; /* the same request again, with a new token */
		}
	}
	if (inject_response_coding(x, &resp) == -1)
		return -1;
	if (resp.status >= 200) {
		x->resp_head = true;
		x->status = resp.status;
		x->resp_body = resp.body;
		x->resp_left = resp.content_length;
		x->resp_close = resp.close;
		if (resp.body == HTTP_BODY_EOF)
			x->client_close = true;
		x->resp_done = resp.body == HTTP_BODY_NONE ||
			       (resp.body == HTTP_BODY_LENGTH && resp.content_length == 0);
	}
	size_t head_at = buf_len(&s->cout);

	if (head_client(x, &resp) == -1) {
		exchange_refusef(x, 502, "upstream-head-too-large", "http_response_header_section_size",
				 "%s sent a response head too large to pass on", x->t.host.name);
		return -1;
	}
	if (inject_scrub_head(x, head_at) == -1) {
		buf_truncate(&s->cout, head_at); /* never the unscrubbed head */
		exchange_refusef(x, 502, "upstream-malformed", "http_response_header_section_size",
				 "%s sent a response head sluice-proxy could not scrub",
				 x->t.host.name);
		return -1;
	}
	x->resp_started = true;
	x->replayable = false;
	buf_release(&s->replay);
	buf_consume(&s->uin, (size_t)n);
	if (resp.status == 101) {
		upgrade_begin(x); /* what followed the 101 in uin is the server's first bytes */
		return -1;
	}
	return 1;
}

static void finish_request(struct exchange *x)
{
	struct session *s = x->conn;
	bool out_of_step = !x->req_done; /* answered before the body was all sent */

	exchange_log(x);
	if (x->client_close || out_of_step) {
		session_enter_drain(s);
		return;
	}
	/* bytes past the response would be read as the next one's: never reuse */
	if (x->resp_close || x->resp_body == HTTP_BODY_EOF || buf_len(&s->uin) > 0)
		session_upstream_close(s);
	buf_trim(&s->uin);
	buf_trim(&s->uout);
	buf_trim(&s->cin);
	/* a pipelined head already (partly) here is on the head clock from now */
	s->head_ms = buf_len(&s->cin) > 0 ? session_now(s) : 0;
	session_enter(s, &h1_head_state);
}

/*
 * One pass of the http state: what moved, and what its steps learnt that
 * the next ones (or the next pass) must know.
 */
struct pass {
	bool moved;
	bool c_drained, u_drained; /* a read said EAGAIN: not again in this wake-up */
	bool req_trailer;          /* a request trailer section is not all here */
	bool resp_trailer;         /* ... a response one */
	bool head_short;           /* the response head is not all here */
};

/* The request body, client -> uout, under its framing and its cap. Returns 0 or -1 (ended). */
static int request_body(struct exchange *x, struct pass *p)
{
	struct session *s = x->conn;
	ssize_t n;

	if (!x->req_done && buf_len(&s->cin) > 0) {
		uint64_t before = x->up;

		if (body_move(x, true, &p->req_trailer) == -1) {
			exchange_refusef(x, 400, "malformed", "http_request_error",
					 "malformed chunked request body");
			return -1;
		}
		p->moved |= x->up != before || x->req_done;
		if (x->body_cap > 0 && x->up > x->body_cap) {
			/* chunked: found out on the way; the origin gets a cut request */
			exchange_body_refuse(x, 0);
			return -1;
		}
		if (budget_over(x, x->up)) {
			budget_refuse(x, "the request was cut off");
			return -1;
		}
		if (x->req_done) {
			x->sent_ms = session_now(s); /* the response clock starts now */
			session_arm_timer(s);
		}
	}
	/* a trailer section is read whole before it goes on */
	if (!x->req_done && (buf_len(&s->cin) == 0 || p->req_trailer) && !p->c_drained) {
		size_t lim = x->req_body == HTTP_BODY_LENGTH && x->req_left < IOBUF_MAX
				     ? (size_t)x->req_left
				     : 0;

		n = sio_read(s, false, &s->cin, budget_read_limit(x, x->up, lim), &p->c_drained);
		if (n > 0) {
			p->moved = true;
		} else if (n == 0 || !session_would_block()) {
			session_close(s, "client closed during the request body");
			return -1;
		}
	}
	return 0;
}

/* What uout holds goes upstream; a failure before any answer may replay. Returns 0 or -1. */
static int request_write(struct exchange *x, struct pass *p)
{
	struct session *s = x->conn;
	ssize_t n;

	if (buf_len(&s->uout) == 0)
		return 0;
	n = sio_write(s, true, &s->uout);
	if (n > 0) {
		p->moved = true;
	} else if (n == -1 && !session_would_block()) {
		if (try_replay(x))
			return -1;
		if (!x->resp_started)
			exchange_refusef(x, 502, "connect-failed", "connection_terminated",
					 "%s closed the connection: %s", x->t.host.name, strerror(errno));
		else
			session_abort(s, "upstream write error");
		return -1;
	}
	return 0;
}

/*
 * The response, uin -> cout: its head (parsed, re-framed, scrubbed), then
 * its body right behind it so both leave in one write: scrubbed, under
 * its framing, or to the end of the stream. Returns 0 or -1.
 */
static int response_move(struct exchange *x, struct pass *p)
{
	struct session *s = x->conn;

	if (!x->resp_done && !x->resp_head && buf_len(&s->uin) > 0) {
		int k = response_head(x);

		if (k < 0)
			return -1;
		p->moved |= k > 0;
		p->head_short = k == 0;
	}
	if (x->resp_done || !x->resp_head ||
	    !(buf_len(&s->uin) > 0 || (x->scrub != NULL && (x->in_done || x->z_more))))
		return 0;
	if (x->scrub != NULL) {
		const char *why;
		int k = inject_move_body(x, &why);

		if (k == -1) {
			session_abort(s, why);
			return -1;
		}
		p->moved |= k > 0;
	} else if (x->resp_body != HTTP_BODY_EOF) {
		uint64_t before = x->down;

		if (body_move(x, false, &p->resp_trailer) == -1) {
			session_abort(s, "malformed chunked response body");
			return -1;
		}
		p->moved |= x->down != before || x->resp_done;
	} else {
		size_t k = buf_len(&s->uin);

		if (k > buf_room(&s->cout))
			k = buf_room(&s->cout);
		if (k > 0) {
			buf_append(&s->cout, buf_head(&s->uin), k);
			buf_consume(&s->uin, k);
			x->down += k;
			p->moved = true;
		}
	}
	return 0;
}

/*
 * Read the upstream, only once what was read is used up (so an end of
 * stream is never early): a body that runs to the end ends here; an end
 * before the response is a replay or a 502. Returns 0 or -1.
 */
static int response_read(struct exchange *x, struct pass *p)
{
	struct session *s = x->conn;
	ssize_t n;

	if (x->resp_done || x->in_done || buf_room(&s->uin) == 0 || buf_room(&s->cout) == 0 ||
	    !(buf_len(&s->uin) == 0 || p->head_short || p->resp_trailer) ||
	    (p->u_drained && !s->u_hup))
		return 0;
	n = sio_read(s, true, &s->uin, 0, &p->u_drained);
	if (n > 0) {
		p->moved = true;
	} else if (n == 0 && x->resp_head && x->resp_body == HTTP_BODY_EOF &&
		   buf_len(&s->uin) == 0) {
		/* a scrubbed body is finished by inject_move_body */
		if (x->scrub != NULL)
			inject_body_eof(x);
		else
			x->resp_done = true;
		x->resp_close = true;
		p->moved = true;
	} else if (n == 0 || (n == -1 && !session_would_block())) {
		if (try_replay(x))
			return -1;
		if (!x->resp_started)
			exchange_refusef(x, 502, "upstream-closed", "connection_terminated",
					 "%s closed the connection without answering", x->t.host.name);
		else
			session_abort(s, "upstream closed mid-response");
		return -1;
	}
	return 0;
}

/*
 * What cout holds goes to the client. The row is written before the
 * answer's last byte goes out, so a kill -9 between the two cannot leave
 * an answered request unlogged. Returns 0 or -1.
 */
static int response_flush(struct exchange *x, struct pass *p)
{
	struct session *s = x->conn;

	if (x->resp_done)
		exchange_log(x);
	if (buf_len(&s->cout) > 0) {
		size_t before = buf_len(&s->cout);

		if (session_flush_client(s) == -1) {
			session_close(s, "client gone");
			return -1;
		}
		p->moved |= buf_len(&s->cout) != before;
	}
	return 0;
}

/*
 * The http state's step: the request body up, the response down, until nothing
 * moves; a finished exchange leaves the connection for its next head or
 * its close.
 */
static void step_http(struct session *s)
{
	struct exchange *x = s->x; /* HTTP/1.1's one in flight */
	struct pass p = { 0 };

	for (;;) {
		p.moved = p.req_trailer = p.resp_trailer = p.head_short = false;
		if (request_body(x, &p) == -1 || request_write(x, &p) == -1 ||
		    response_move(x, &p) == -1 || response_read(x, &p) == -1 ||
		    response_flush(x, &p) == -1)
			return;
		if (x->resp_done && (x->req_done || buf_len(&s->uout) == 0)) {
			finish_request(x);
			return;
		}
		if (!p.moved)
			break;
		s->active_ms = session_now(s);
	}
}

/* --- the states: a head, its exchange's bytes, a token ---------------------------- */

static bool in_head(const struct session *s)
{
	return buf_len(&s->cout) == 0; /* the previous response first */
}

static bool in_http(const struct session *s)
{
	return !s->x->req_done && buf_room(&s->cin) > 0 && buf_room(&s->uout) > 0;
}

/* what is queued for the client goes out; an idle kept upstream is watched for its close */
static void ask_head(const struct session *s, uint32_t *c, uint32_t *u)
{
	if (buf_len(&s->cout) > 0)
		*c |= EPOLLOUT;
	*u |= EPOLLIN;
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

static uint64_t due_http(const struct session *s, const struct config *c)
{
	/* an upload in progress is judged by idleness, the wait after it by response-timeout */
	if (!s->x->resp_head && s->x->req_done)
		return s->x->sent_ms + c->response_timeout_ms;
	return s->active_ms + c->idle_timeout_ms;
}

static void late_http(struct session *s, const struct config *c)
{
	struct exchange *x = s->x;

	if (!x->resp_head && !x->resp_started) {
		exchange_refusef(x, 504, "upstream-timeout", "http_response_timeout",
				 "%s sent no response within %u s", x->t.host.name,
				 c->response_timeout_ms / 1000);
		return;
	}
	session_close(x->conn, "idle timeout");
}

static uint64_t due_token(const struct session *s, const struct config *c)
{
	return s->phase_ms + TOKEN_WAIT_MS;
}

static void late_token(struct session *s, const struct config *c)
{
	struct exchange *x = s->x;

	/* token.c fails the run first; this is the backstop */
	x->conn->token = NULL;
	exchange_refusef(x, 504, "inject-failed", "http_request_error",
			 "no token within %u s; the request was not sent", TOKEN_WAIT_MS / 1000);
}

/*
 * The head state's view of the upstream: an idle kept-alive upstream
 * said something or closed: it is dropped (a TLS session ticket: kept).
 */
static void head_upstream_event(struct session *s, uint32_t events)
{
	if ((events & (EPOLLERR | EPOLLHUP)) || !sio_upstream_quiet(s))
		session_upstream_close(s);
	session_pump(s);
}

/* Idle between requests: the request's storage goes back (its row is written). */
static void head_settle(struct session *s)
{
	if (s->x != NULL && !s->x->active)
		exchange_free(s);
}

const struct state h1_head_state = {
	.name = "head",
	.waits = "a request head from the client",
	.late = "408 if part of a head came, else close (head- or idle-timeout)",
	.step = step_head,
	.client_in = in_head,
	.ask = ask_head,
	.due = due_head,
	.timeout = late_head,
	.upstream = head_upstream_event,
	.settle = head_settle,
	.rest = true,
};

const struct state h1_http_state = {
	.name = "http",
	.waits = "request and response bytes",
	.late = "504 upstream-timeout before a response (response-timeout), else close "
		"(idle-timeout)",
	.step = step_http,
	.client_in = in_http,
	.ask = ask_http,
	.due = due_http,
	.timeout = late_http,
};

const struct state h1_token_state = {
	.name = "token",
	.waits = "the rule's token command (token.c wakes it)",
	.late = "504 inject-failed, nothing sent",
	.client_in = session_reads_nothing,
	.ask = session_asks_nothing,
	.due = due_token,
	.timeout = late_token,
};

/* --- refusing ------------------------------------------------------------------ */

/*
 * HTTP/1.1's refusal of x (the connection's one exchange, begun here if it
 * was not: a head refused before it was read whole): the response goes out
 * (after any unsent tail of an earlier one), the row is written at once,
 * and the connection closes after a short linger.
 */
static void h1_refuse(struct exchange *x, const struct refusal *ref)
{
	struct session *s = x->conn;
	bool page;

	if (!x->active) {
		exchange_reset(x); /* a head refused before it was begun: zeroed for its row */
		x->active = true;
		x->t_start = loop_clock_ms();
		x->dns_ms = x->connect_ms = -1;
		x->req = ++s->nreq;
	}
	x->decision = "refuse";
	x->reason = ref->reason;
	snprintf(x->detail, sizeof(x->detail), "%s", ref->detail);
	memcpy(x->refusal, ref->id, sizeof(x->refusal));
	/*
	 * A refused CONNECT whose name we may intercept: its row now, then the
	 * refusal inside its TLS (page.c), unless the row was not written
	 * (a principal past its refusal-row budget gets the plain 403).
	 */
	page = refuse_page_wanted(x, ref);
	if (page)
		x->status = ref->status;
	/* cout holds at most the unsent tail of an earlier response: keep it, append */
	else if (!x->resp_started && refuse_write(&s->cout, ref) == 0)
		x->status = ref->status;
	if (exchange_log(x) && page && refuse_page_begin(x, ref) == 0)
		return;
	if (page && !s->closed)
		refuse_write(&s->cout, ref);
	if (!s->closed)
		session_enter_drain(s);
}

/* Its exchange relaying a body: its open and progress rows (longrow.c). */
static uint64_t rows_due(const struct session *s, const struct config *c)
{
	return s->st == &h1_http_state ? longrow_due(s->x, c) : UINT64_MAX;
}

static void rows_write(struct session *s, const struct config *c)
{
	if (s->st == &h1_http_state)
		longrow_write(s->x, c, session_now(s));
}

/* An intercepted CONNECT's handshake is done: its heads come through TLS, or HTTP/2 begins. */
static void tls_up(struct session *s, bool h2)
{
	if (h2)
		h2_begin(s);
	else
		session_enter(s, &h1_head_state);
}

/* The token its request waits for is there (or failed): the head is read again from its credential. */
static void token_ready(struct session *s, const struct token *t)
{
	if (s->token != t)
		return;
	s->token = NULL;
	s->token_waited = true;
	session_enter(s, &h1_head_state);
	session_pump(s);
}

const struct codec h1_codec = {
	.name = "http/1.1",
	.refuse = h1_refuse,
	.close = exchange_conn_close,
	.release = exchange_conn_release,
	.rows_due = rows_due,
	.rows_write = rows_write,
	.tls_up = tls_up,
	.token_ready = token_ready,
};
