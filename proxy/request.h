/*
 * request.h: the request path (private to proxy/), above the connection
 * (session.h): an exchange's start, judgement and row (exchange.c), the
 * codecs that carry exchanges (h1.c, tunnel.c, upgrade.c, h2*.c, the
 * parked handshake in tls.c and the refusal's page in page.c) and what
 * they use: the dial, the heads and bodies, the credential and its token,
 * the budget's charge, TLS interception, the stamp, long rows.
 *
 * session.h  the connection and its engine (below this)
 * exchange.c one exchange, whichever codec carries it: its storage, its
 *            start (target, judgement, budget), its row
 * h1.c       HTTP/1.1's codec: a head through its phases, forwarded, both
 *            bodies streamed, the upstream kept or dropped; its refusals
 * tunnel.c   a CONNECT's tunnel after its 200: the relay, a passthrough's
 *            hellos (hello.c), its budget
 * head.c     the heads written: upstream request, client response
 * body.c     a request's bodies under their framing, trailers filtered
 * dial.c     the upstream: resolve, judge every answer, connect exactly a
 *            checked address (the resolve and connect states)
 * tls.c      an intercepted CONNECT: both handshakes (sio.c: reads and
 *            writes through TLS)
 * hello.c    a passthrough tunnel's hellos, judged
 * inject.c   a request's credential and the scrubbing of its response
 * charge.c   an exchange's charge against its grant's budget (budget.c)
 * verdict.c  a policy verdict's refusal, worded with the grant that allows it
 * page.c     a refused CONNECT answered inside its TLS (refuse-page)
 * upgrade.c  WebSocket over HTTP/1.1 Upgrade: both handshakes checked, the relay
 * h2.c       HTTP/2 on both hops of an intercepted CONNECT: the connection, its
 *            two nghttp2 sessions and their callbacks (h2_stream.h: its inside)
 * h2_up.c    ... the upstream session's callbacks
 * h2_stream.c ... one stream: an exchange judged, sent, answered and logged
 * longrow.c  a long exchange's open and progress rows, while it lasts
 * who.c      the stamp and build token a connection's first head names
 */
#ifndef SLUICE_REQUEST_H
#define SLUICE_REQUEST_H

#include "session.h"


/* The codecs (struct codec), each in the file that speaks it. */
extern const struct codec h1_codec;       /* h1.c: a response, then the drain */
extern const struct codec tunnel_codec;   /* tunnel.c: the 200 went: the row, the drain */
extern const struct codec upgrade_codec;  /* upgrade.c: the 101 went: the row, the close */
extern const struct codec tls_alpn_codec; /* tls.c: no request yet: said at the first */
extern const struct codec refuse_page_codec; /* page.c: the page's refusal, then the drain */
extern const struct codec h2_codec;       /* h2.c: the stream's answer, or its reset */

/* The states (struct state), each in the file whose step it is. */
extern const struct state h1_head_state;     /* h1.c: a request head from the client */
extern const struct state h1_http_state;     /* h1.c: request and response bytes */
extern const struct state h1_token_state;    /* h1.c: the rule's token command */
extern const struct state dial_resolve_state; /* dial.c: the resolver's answer */
extern const struct state dial_connect_state; /* dial.c: the upstream's TCP connect */
extern const struct state tls_accept_state;  /* tls.c: the client's handshake with our leaf */
extern const struct state tls_connect_state; /* tls.c: the upstream's handshake */
extern const struct state tunnel_state;      /* tunnel.c: tunnel bytes either way */
extern const struct state upgrade_state;     /* upgrade.c: WebSocket bytes either way */
extern const struct state h2_state;          /* h2.c: HTTP/2 frames from either hop */

/* who.c: the stamp and the build token a connection's first head names */
int session_stamp_keep(struct session *s, const struct stamp *st);
int session_stamp_first_head(struct exchange *x, const struct http_request *req);

/* verdict.c: refuse a request as the policy's verdict v says, with the hint that grants it. */
void refuse_verdict(struct exchange *x, const struct verdict *v);

/* page.c: a refused CONNECT's refusal said inside its TLS */
/* a refused client given the page must finish its TLS handshake this soon after the 200 */
#define REFUSE_PAGE_HELLO_MS 2000
/*
 * Whether refusal r of x, a CONNECT, is to be answered inside the
 * client's TLS (refuse-page on): a 403 of a CONNECT to a name sluice may
 * intercept, nothing of it answered yet.
 */
bool refuse_page_wanted(const struct exchange *x, const struct refusal *r);
/*
 * x's row written: answer 200 and complete the client's TLS with a leaf
 * for the name (tls.c, HTTP/1.1 only); its first request is answered with
 * r (refuse_page_answer). Returns 0, or -1 when it cannot be (bytes after
 * the CONNECT head, no memory): the caller sends the plain refusal.
 */
int refuse_page_begin(struct exchange *x, const struct refusal *r);
/*
 * The request inside (req; NULL when none came whole: a timeout, a
 * malformed head) is answered with the page's refusal, then the close.
 */
void refuse_page_answer(struct session *s, const struct http_request *req);

/* tunnel.c */
/* The upstream of x, a CONNECT, is up: answer 200 and relay (a passthrough's hellos first). */
void tunnel_begin(struct exchange *x);

/* exchange.c */
int exchange_new(struct session *s); /* s->x, allocated or zeroed for a new request: 0 or -1 */
void exchange_reset(struct exchange *x); /* zeroed for a new request, still its connection's */
void exchange_free(struct session *s); /* s->x, its row written, goes (an idle connection) */
/*
 * x begun from its head: the row's fields (and on the connection's first
 * head its stamp), its target, the policy's verdict and its budget's
 * charge. Returns 0, or -1 refused (or the connection closed).
 */
int exchange_start(struct exchange *x, const struct http_request *req);
/*
 * x's row as it stands now (its bytes and time so far, its connection's
 * stamp and principal) into *row; st and who (SESSION_WHO_MAX bytes) hold
 * its stamp and principal.
 */
void exchange_row(const struct exchange *x, struct netlog_row *row, struct stamp *st, char *who,
		  size_t size);
/* The host's body cap; a declared length over it is refused (413). Returns 0 or -1. */
int exchange_capped(struct exchange *x, const struct http_request *req);
/*
 * x's row, once: written unless lograte's budget for its principal is
 * spent (returns false then, and when it was written already); its
 * secrets go (inject_end).
 */
bool exchange_log(struct exchange *x);
/*
 * An HTTP/2 stream's request x (h2.c), begun, targeted, judged, capped and
 * given its credential as an HTTP/1.1 request is. Returns 0 go on, 1
 * waiting for its rule's token (its connection's s->token), -1 refused
 * (answered through exchange_refuse).
 */
int exchange_judge(struct exchange *x, const struct http_request *req);
/* 413: the declared body length (0: found out on the way) is over the host's cap */
void exchange_body_refuse(struct exchange *x, uint64_t declared);
/*
 * The close and the release of a codec that carries one exchange at a
 * time (s->x: HTTP/1.1, a tunnel, a WebSocket, a parked handshake, a
 * page): its row, if still open, says why, its budget and secrets go; and
 * later its storage.
 */
void exchange_conn_close(struct session *s, const char *why);
void exchange_conn_release(struct session *s);

/* charge.c (the budgets' table is budget.c's, in proxy.h) */
/*
 * The grant g that allowed x has a budget: the request counts against
 * its principal's (session_spender), its head (head_up bytes as it goes
 * upstream) against max-up, unless that is spent or its declared body
 * would pass it: 403 budget, or in a mode that refuses nothing the row
 * says it would have been. Returns 0 go on, -1 refused.
 */
int budget_request(struct exchange *x, const struct http_request *req, uint64_t head_up,
		   const struct grant *g);
/*
 * x has taken `taken` bytes from its client to go up (since it began; up,
 * where bytes go up as they are read): those not spent yet are spent
 * against its grant's budget now, gone up or not, so the principal's other
 * requests and tunnels see at once what is left. Returns true when they
 * passed it and the mode enforces: the caller ends the request
 * (budget_refuse) or the tunnel.
 */
bool budget_over(struct exchange *x, uint64_t taken);
/* 403 budget: what x sent passed its max-up; what says what became of it */
void budget_refuse(struct exchange *x, const char *what);
/*
 * What x may still take under its max-up, taken (as budget_over has it)
 * counted as spent: UINT64_MAX when nothing holds it back (no max-up, or
 * past it under a mode that refuses nothing).
 */
uint64_t budget_left(const struct exchange *x, uint64_t taken);
/* A read limit for x's body (0: none) lowered to a byte past what budget_left leaves. */
size_t budget_read_limit(const struct exchange *x, uint64_t taken, size_t limit);
/* The line saying x's max-up is spent, into out. */
void budget_line(const struct exchange *x, char *out, size_t size);
/* x counts against no budget from now on (its row is written, or it is freed); x may be NULL */
void budget_end(struct exchange *x);
/*
 * A relay toward the origin (its connection's tun->to_up) under x's max-up, taken
 * what it took (as budget_over has it): read no further than a byte past
 * what the budget has left.
 */
void budget_relay_cap(struct exchange *x, uint64_t taken);
/*
 * What it took is spent (budget_over): returns true when that passed the
 * budget and the mode enforces (the caller closes); else the cap is set again.
 */
bool budget_relay_over(struct exchange *x, uint64_t taken);
/* The same for a CONNECT's tunnel, refused (budget) past it (tunnel_codec): returns true then. */
bool budget_tunnel_over(struct exchange *x);

/* longrow.c */
/*
 * When x's next open or progress row is due (loop ms), x relaying longer
 * than log-open-after; UINT64_MAX when none is (x not let through, not
 * relaying). Each codec asks it of the exchanges it relays (its rows_due).
 */
uint64_t longrow_due(const struct exchange *x, const struct config *c);
/* x's open or progress row, if due by now. */
void longrow_write(struct exchange *x, const struct config *c, uint64_t now);

/* head.c */
int head_upstream(struct exchange *x, const struct http_request *req); /* into uout; 0 or -1 */
int head_client(struct exchange *x, const struct http_response *resp);  /* into cout; 0 or -1 */
int head_put_header(struct buf *b, const struct http_header *h); /* "Name: value\r\n" */
bool head_forwards(const struct exchange *x, const struct http_request *req, size_t i, int plan);
ssize_t head_credential(struct exchange *x, char **value);
ssize_t head_query_path(struct exchange *x, const struct http_request *req, char **out,
			size_t *size);
int head_authority(const struct exchange *x, char *out, size_t size);
uint64_t head_up_size(const struct exchange *x, const struct http_request *req);

/* body.c */
/*
 * Move body bytes client -> upstream (request) or upstream -> client under
 * the framing. Returns 0, or -1 if malformed. *wait_trailer says a chunked
 * body's trailer section is not all here yet: in must be read although it
 * holds bytes.
 */
int body_move(struct exchange *x, bool request, bool *wait_trailer);

/* token.c */
int token_get(struct exchange *x, const struct inject_rule *r, char **val, size_t *len,
	      char *why, size_t size);
/*
 * An upstream answered 401 to value gen of t: marks it stale (the next
 * run, within token-min-interval, replaces it). Returns whether asking
 * token_get again now would give another value: a run is in flight or
 * may start, or a newer value is there.
 */
bool token_refused(struct token *t, unsigned gen, const struct config *c);
int token_peek(struct proxy *px, const struct inject_rule *r, char **val, size_t *len);

/* inject.c */
#define INJECT_SCRUB_PIECE 8192 /* response body bytes scrubbed at a time */
#define INJECT_INFLATE_MAX (64ull << 20) /* a decoded body's cap: a "zip bomb" stops there */
size_t inject_scrub_room(const struct exchange *x);
int inject_begin(struct exchange *x, const struct http_request *req);
void inject_sent(struct exchange *x);
void inject_end(struct exchange *x);
int inject_response_coding(struct exchange *x, const struct http_response *resp);
void inject_refuse_range(struct exchange *x);
void inject_refuse_coding(struct exchange *x, const char *why);
bool inject_drops_header(const struct exchange *x, const struct http_header *h);
int inject_header_plan(const struct exchange *x, const struct http_request *req);
int inject_scrub_head(struct exchange *x, size_t from);
int inject_move_body(struct exchange *x, const char **why);
void inject_body_eof(struct exchange *x);

/* tls.c */
/* An allowed CONNECT to intercept: our 200 (no dial yet), then the client's handshake. */
void tls_intercept_begin(struct session *s);
/*
 * x's upstream TCP connection is up: its TLS handshake (tls_connect_state),
 * verified, then then(x) (x->up_then). Returns 0, or -1 refused.
 */
int tls_connect_begin(struct exchange *x, void (*then)(struct exchange *x));

/* hello.c: a passthrough tunnel's hellos; -1: refused or closed */
int tls_hello_step(struct session *s);

/* upgrade.c */
struct upgrade;
/* 1 a WebSocket handshake (x->ws kept), 0 not one (Upgrade dropped), -1 refused */
int upgrade_request(struct exchange *x, const struct http_request *req);
void upgrade_scrubbed(struct exchange *x);    /* the host is scrubbed: so are its messages */
int upgrade_response(struct exchange *x, const struct http_response *resp); /* a 101: 0 or -1 */
void upgrade_begin(struct exchange *x);      /* the 101 is queued: relay (upgrade_state) */

/* h2.c */
void h2_begin(struct session *s); /* the client's handshake chose h2: h2_state, h2_codec */
void h2_revoke(struct session *s, const struct verdict *v); /* a reload refused the host */

/* dial.c */
/*
 * Dial x's target (the caller closed any other upstream): resolved,
 * every answer judged, connected (dial_resolve_state, dial_connect_state);
 * then, once connected, then(x) (x->up_then) says what follows.
 */
void dial_start(struct exchange *x, void (*then)(struct exchange *x));
/* The next of x's checked addresses (x->idial on), else 502 connect-failed. */
void dial_next(struct exchange *x);
bool dial_up_is(const struct upstream *u, const struct target *t);
void dial_up_target(const struct upstream *u, struct target *t);
void dial_up_format(const struct upstream *u, char *buf, size_t size);
void dial_up_judge(const struct policy *p, const struct upstream *u, const struct host *h,
		   struct verdict *v);
/* x goes on the kept upstream: its dial list is the upstream's (a replay dials from it, then then(x)). */
void dial_reuse(struct exchange *x, void (*then)(struct exchange *x));
void dial_refuse_address(struct exchange *x, int family, const void *addr,
			 const struct verdict *v);


#endif
