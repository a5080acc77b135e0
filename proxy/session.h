/*
 * session.h: the inside of a client connection, shared by the files that
 * drive it (private to proxy/; proxy.h is the program's table of contents).
 *
 * session.c   lifecycle: accept, tunnels, the log row's connection fields,
 *             close, re-judging after a reload
 * state.c     the states as one table: steps, readiness, deadlines, timeouts
 * exchange.c  one exchange, whichever codec carries it: its storage, its
 *             start (target, judgement, budget), its refusal, its row
 * h1.c        HTTP/1.1's codec: a head through its phases, forwarded, both
 *             bodies streamed, the upstream kept or dropped; its refusals
 * head.c      the heads written: upstream request, client response
 * body.c      a request's bodies under their framing, trailers filtered
 * dial.c      the upstream: resolve, judge every answer, connect exactly a
 *             checked address, close
 * tls.c       an intercepted CONNECT: both handshakes, reads and writes
 *             through TLS
 * hello.c     a passthrough tunnel's hellos, judged
 * inject.c    a request's credential and the scrubbing of its response
 * upgrade.c   WebSocket over HTTP/1.1 Upgrade: both handshakes checked, the relay
 * h2.c        HTTP/2 on both hops of an intercepted CONNECT: the connection, its
 *             two nghttp2 sessions and their callbacks (h2.h: its inside)
 * h2_up.c     ... the upstream session's callbacks
 * h2_stream.c ... one stream: an exchange judged, sent, answered and logged
 * longrow.c   a long exchange's open and progress rows, while it lasts
 */
#ifndef SLUICE_SESSION_H
#define SLUICE_SESSION_H

#include <errno.h>
#include <openssl/ssl.h>
#include <stdarg.h>
#include <stdio.h>

#include "alpn.h"
#include "proxy.h"
#include "inject.h"
#include "list.h"
#include "scrub.h"

enum sess_state {
	SS_HEAD,    /* reading a request head */
	SS_RESOLVE, /* waiting for the resolver */
	SS_CONNECT, /* upstream TCP connect in progress */
	SS_HTTP,    /* forwarding one request and its response */
	SS_TUNNEL,  /* relaying a CONNECT tunnel */
	SS_TLS_ACCEPT,  /* an intercepted CONNECT: our 200, then the client's handshake */
	SS_TLS_CONNECT, /* the upstream's TLS handshake (inside an intercepted CONNECT) */
	SS_TOKEN,       /* a request waits for its rule's token command (token.c) */
	SS_WEBSOCKET,   /* an upgraded WebSocket relaying both ways (upgrade.c) */
	SS_H2,          /* an intercepted CONNECT speaking HTTP/2 on both hops (h2.c) */
	SS_DRAIN,   /* sending a last response, then lingering, then close */
};

/* A passthrough tunnel's hellos (tls.c), while nothing else is relayed. */
enum hello_phase {
	HELLO_DONE,   /* relaying freely (not a passthrough tunnel, or its hellos passed) */
	HELLO_CLIENT, /* reading the ClientHello; nothing goes up */
	HELLO_SERVER, /* it went up, alone; the server's first message is held until known */
	HELLO_RETRY,  /* that was a HelloRetryRequest: reading the second ClientHello */
};

#define TOKEN_WAIT_MS 15000 /* a request waiting for its token, at most */

struct target {
	struct host host;
	uint16_t port;
	enum grant_via via;
};

/*
 * The phases of an HTTP/1.1 exchange's head, in order (exchange.c's
 * table): a phase that waits keeps x->phase, and the head, read again from
 * cin, resumes there (h1_head): a head is judged once, and charged
 * to its budget once.
 */
enum x_phase {
	XP_JUDGE = 0,  /* begun: its row's fields, target, judgement and budget, an upgrade's offer */
	XP_TUNNEL,     /* a CONNECT: dialed, or intercepted (our 200 first) */
	XP_CREDENTIAL, /* the body's cap, the credential: waits for its token; a 401's re-issue */
	XP_SEND,       /* the head upstream, on the kept upstream or a new dial */
	XP_DONE,       /* the head's phases are over: sent, handed on, or refused */
};

/*
 * An exchange: one request (or CONNECT) and its response, from its head to
 * its row. It owns its judgement (target, verdict), its dial list, its
 * injection and scrubbing and its one log row; the connection (struct
 * session) owns the client transport, the stamp, the timers and the
 * upstream socket an exchange uses. HTTP/1.1 has one at a time (s->x).
 */
struct exchange {
	struct session *conn; /* the connection it came on: its transport, stamp and codec */
	bool active; /* begun and its row not written yet */
	bool h2;     /* an HTTP/2 stream (h2.c): its row says so */
	enum x_phase phase; /* where its head resumes when read again */
	uint64_t req; /* its number on the connection, for the row */
	struct target t;
	enum http_method method;
	int minor;
	char path[201];
	size_t path_len;
	char ua[121];
	size_t ua_len;
	char grant[HOST_NAME_MAX_LEN + SCOPE_TEXT_MAX + 40]; /* "PATTERN (LEVEL[, for SCOPE])" */
	char refusal[REFUSAL_ID_LEN + 1]; /* a grantable refusal's id, "" none */
	char dialed[INET6_ADDRSTRLEN + 8]; /* the address this request went to, "" if none */
	const char *decision;
	const char *reason;
	char detail[320];
	int status;
	uint64_t up, down;
	struct budget_entry *budget; /* the budget it counts against (budget.c); NULL: none */
	uint64_t budget_up;          /* ... bytes taken from the client to go up, spent against it */
	bool budget_observed;        /* past it, but the mode refuses nothing: marked once */
	double t_start;
	uint64_t long_at; /* loop ms of its last open or progress row (longrow.c); 0: none yet */
	double dns_ms, connect_ms; /* < 0: did not happen */
	bool client_close;         /* close the client after this request */
	bool raw_tunnel;           /* a CONNECT a tunnel grant serves: relayed raw, never intercepted */

	enum http_body req_body;
	uint64_t req_left;
	struct http_chunked req_chunk;
	bool req_done;

	bool resp_head; /* the final response head has been parsed */
	enum http_body resp_body;
	uint64_t resp_left;
	struct http_chunked resp_chunk;
	bool resp_done;
	bool resp_close;   /* upstream will close after this response */
	bool resp_started; /* bytes of the response were queued for the client */
	bool replayable;   /* may be re-sent once on a fresh connection (see try_replay) */
	uint64_t body_cap; /* request body limit for this host; 0: none */

	/* credential injection (inject.c), inside an intercepted CONNECT only */
	const struct inject_rule *rule; /* the matching rule, only until the head is built (a
					   reload frees the config it lives in) */
	bool injected;                  /* the credential went upstream */
	char inject_name[INJECT_NAME_MAX + 1]; /* the rule's name, for the row */
	char inject_field[INJECT_FIELD_MAX + 1]; /* a header rule's field once its credential
						    went: a trailer of that name is dropped */
	struct token *minted; /* the token command's cache the secret came from */
	unsigned minted_gen;  /* ... and which of its values (token_refused) */
	char *rehead;         /* a bodiless request's head, to re-issue once after a 401 */
	size_t rehead_len;
	char *secret;                   /* its value while the request lives; wiped */
	size_t secret_len;
	struct scrub *scrub;            /* masks the host's secrets in the response; NULL: none */
	struct upgrade *ws; /* a WebSocket handshake and relay (upgrade.c); NULL: not one */
	struct scrub *scrub_ctl; /* ... its control frames' scrubber (the same secrets); NULL: none */
	bool scrub_final;               /* the response body ended: scrubber flushed */
	/* a scrubbed response body (inject.c): its input framing ended; it goes out chunked */
	bool in_done, out_chunked;
	struct z_stream_s *inflate; /* a gzip or deflate body decoded for the scrubber; NULL: none */
	uint64_t inflated;          /* bytes it gave so far, at most INJECT_INFLATE_MAX */
	bool z_more;                /* its last output filled the piece: it may hold more */
	bool z_end;                 /* its stream (a gzip member) ended */
	uint64_t sent_ms;  /* when the request head was queued upstream */

	/* dial.c: the checked addresses, tried in order (a reused upstream: its one) */
	struct sockaddr_storage dial[DIAL_MAX];
	size_t ndial, idial;
	int dial_errno;
};

/* An address of an upstream's answer set, its port set. */
union up_addr {
	struct sockaddr sa;
	struct sockaddr_in in;
	struct sockaddr_in6 in6;
};

/*
 * What ufd is connected (or connecting) to, kept with it across keep-alive
 * requests: the target and every checked address of its answer set (a
 * replay dials from the one in use on, and a reload re-judges them all).
 * Allocated by dial.c for the addresses and the name it holds, freed by
 * dial_close.
 */
struct upstream {
	uint16_t port;
	enum grant_via via;
	enum host_kind kind;
	struct in6_addr ip;   /* HOST_IPV4 / HOST_IPV6: the literal (struct host's addr) */
	uint8_t naddr;        /* the checked addresses, in dial order (at most DIAL_MAX) */
	uint8_t iaddr;        /* the one ufd is dialing or connected to; naddr: none yet */
	union up_addr addr[]; /* naddr of them, then the canonical host name (upstream_name) */
};

static inline const char *upstream_name(const struct upstream *u)
{
	return (const char *)&u->addr[u->naddr];
}

/*
 * A verified stamp, kept for the connection's rows and rules: its fields,
 * the texts allocated to their length (session_stamp_keep).
 */
struct sess_stamp {
	uint64_t seq;
	uint32_t kid;
	char boot[17];
	const char *src, *net, *as; /* into text; as is "" when absent */
	char text[];                /* src, net and as, each NUL-terminated */
};

/* A tunnel's two directions (session_tunnel_begin), and a passthrough one's hellos. */
struct tunnel {
	struct relay_dir to_up, to_cli;
	enum hello_phase hello; /* a passthrough tunnel's ClientHello, judged before relaying */
	uint64_t hello_ms;      /* the phase began (its deadline: head- or response-timeout) */
	size_t hello_left;      /* HELLO_SERVER: bytes of the ClientHello at cin's head to send */
	bool ended;             /* the upstream's end was passed on to the client (step_tunnel) */
};

/* Which version an intercepted CONNECT speaks (tls.c): the same on both hops. */
enum ix_alpn {
	ALPN_UNASKED, /* the ClientHello is not read yet */
	ALPN_DIAL,    /* it offered h2: parked while the upstream is dialed with its offer */
	ALPN_H2,      /* the upstream chose h2: so does the client, if it offered it */
	ALPN_H1,      /* HTTP/1.1 (or no ALPN) */
};

/* An intercepted CONNECT's own state (tls.c), allocated when one begins. */
struct intercept {
	struct target tunnel; /* the CONNECT target every request must name */
	enum ix_alpn alpn;
	uint8_t offer[ALPN_OFFER_MAX]; /* the client's ALPN offer, h2 and http/1.1 only (alpn.c) */
	size_t offer_len;
	char unreached[200]; /* why the upstream was not reached before the handshake, or "" */
	char err[128];
	char resume_key[HOST_NAME_MAX_LEN + 8]; /* "host:port" of the upstream TLS session */
	struct refusal *page; /* a refused CONNECT answered inside its TLS (refuse.c); else NULL */
};

/*
 * A codec: how the protocol a connection speaks to its client says what
 * its exchanges are told, behind one small table (haproxy's mux_ops, in
 * small). A connection speaks one at a time (s->codec): HTTP/1.1 from its
 * accept; a CONNECT's tunnel after its 200; a WebSocket after its 101; an
 * intercepted CONNECT whose handshake is parked for the upstream's ALPN;
 * a refusal's page inside TLS; HTTP/2, whose exchanges are its streams.
 */
struct codec {
	const char *name;
	/*
	 * Answer x, an exchange of this connection, with refusal r as the
	 * protocol says it, and write its row (or leave it to the close).
	 * The connection may be draining or closed after it.
	 */
	void (*refuse)(struct exchange *x, const struct refusal *r);
};
extern const struct codec h1_codec;             /* h1.c: a response, then the drain */
extern const struct codec session_tunnel_codec; /* session.c: the 200 went: the row, the drain */
extern const struct codec upgrade_codec;        /* upgrade.c: the 101 went: the row, the close */
extern const struct codec tls_alpn_codec;       /* tls.c: no request yet: said at the first */
extern const struct codec refuse_page_codec;    /* refuse.c: the page's refusal, then the close */
extern const struct codec h2_codec;             /* h2_stream.c: the stream's answer, or its reset */

/*
 * A client connection. What an idle one needs stays here (under 1 KiB, see
 * session.c); the request in flight (r), the upstream's identity (up), a
 * tunnel's relay (tun), an intercepted CONNECT's state (ix) and a verified
 * stamp are allocated when they begin and freed when they end, and the
 * buffers when bytes come and go: an idle connection holds none but its
 * stamp and its kept upstream's identity.
 */
struct session {
	struct proxy *px;
	struct session *next, *prev;
	uint64_t id;
	uint64_t nreq;
	enum sess_state state;
	bool pumping, again, closed;
	bool c_woke; /* the client sent while we were not reading it */
	bool u_hup;  /* upstream hung up and left epoll: read it without waiting */
	char client[INET6_ADDRSTRLEN + 8];
	/* (the two fds sit here, in client's padding) */
	int cfd;
	int ufd; /* upstream, kept across keep-alive requests */
	struct limit_entry *limit; /* what this connection is counted against (limit.c) */
	struct list_node lim; /* on limit's list of the connections it counts */

	struct loop_io cio;
	struct buf cin, cout;

	struct loop_io uio;
	struct buf uin, uout;
	struct buf replay;   /* a request head sent on a reused upstream, until answered */
	struct upstream *up; /* what ufd is connected (or connecting) to; NULL without one */
	struct resolve_query *q;
	double t_phase;    /* start of resolve or connect, proxy_now_ms */
	uint64_t phase_ms; /* the same in loop time, for the deadline */

	struct loop_timer timer;
	uint64_t accepted_ms;
	uint64_t active_ms; /* last byte moved either way */
	uint64_t head_ms;   /* first byte of the head being read, 0 if none */

	const struct codec *codec; /* what the client speaks now (struct codec) */
	struct exchange *x; /* the exchange in flight; NULL while idle (exchange_new) */
	struct tunnel *tun; /* a CONNECT relaying bytes (SS_TUNNEL), from its 200 to the close */
	struct h2 *h2;      /* an intercepted CONNECT speaking HTTP/2 (SS_H2): its streams */

	/* an intercepted CONNECT (tls.c): requests arrive decrypted */
	SSL *cssl;            /* the client side, our leaf for ix->tunnel.host */
	SSL *ussl;            /* the upstream side, verified; lives with ufd */
	struct intercept *ix; /* from the CONNECT's 200 to the close */
	bool intercept;       /* the handshake is done: heads come through cssl */
	bool c_tls_out, u_tls_out; /* TLS must write before it can go on */
	bool sni_bad;
	bool token_waited;   /* woken from SS_TOKEN: a failed run fails this request */
	bool reissued;       /* the request now being sent was re-issued after a 401 */
	bool up_ready;       /* ufd is connected */
	bool lingering;      /* SS_DRAIN: our side is shut, what the client sends is read away */
	struct token *token; /* the token this session waits for (SS_TOKEN) */

	struct sess_stamp *stamp; /* verified on the first head; every request inherits it.
				     NULL: unattributed */
	struct sess_build *build; /* the live build token the first head named; else NULL */
};

/* A connection's build token: while it lives, the connection is build:NAME. */
struct sess_build {
	uint8_t hash[32]; /* the token's (lib/buildtok.h): checked again as tokens change */
	char as[];        /* "build:NAME" */
};

/* Who a row names: "src@net" of the stamp, else "build:NAME", else "unattributed". */
static inline const char *session_who(const struct session *s, char *buf, size_t size)
{
	if (s->stamp == NULL)
		return s->build != NULL ? s->build->as : "unattributed";
	snprintf(buf, size, "%s@%s", s->stamp->src, s->stamp->net);
	return buf;
}

/*
 * The connection's principal into a policy request (who into buf,
 * SESSION_WHO_MAX bytes): a build token's build:NAME over the stamp's as=.
 */
static inline void session_principal(const struct session *s, struct policy_request *pr,
				     char *buf, size_t size)
{
	pr->who = s->stamp != NULL || s->build != NULL ? session_who(s, buf, size) : NULL;
	pr->src = s->stamp != NULL ? s->stamp->src : NULL;
	pr->as = s->build != NULL ? s->build->as
		 : s->stamp != NULL && s->stamp->as[0] != '\0' ? s->stamp->as : NULL;
}
#define SESSION_WHO_MAX (STAMP_NET_MAX + 48)

/* Whose budget a request spends: the stamp's as= when it has one, else session_who's. */
static inline const char *session_spender(const struct session *s, char *buf, size_t size)
{
	if (s->build != NULL)
		return s->build->as;
	if (s->stamp != NULL && s->stamp->as[0] != '\0')
		return s->stamp->as;
	return session_who(s, buf, size);
}

static inline const struct config *session_config(const struct session *s)
{
	return s->px->config;
}

/* Loop milliseconds: deadlines and activity. */
static inline uint64_t session_now(const struct session *s)
{
	return loop_now(s->px->loop);
}

static inline bool session_would_block(void)
{
	return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
}

/* session.c */
void session_step_tunnel(struct session *s);
void session_step_drain(struct session *s);
int session_stamp_keep(struct session *s, const struct stamp *st);
void session_stamp_expand(const struct sess_stamp *k, struct stamp *st); /* as a row takes it */
int session_stamp_first_head(struct exchange *x, const struct http_request *req);
bool session_log(struct session *s); /* s->x's row (exchange_log); false: none written */
void session_abort(struct session *s, const char *why);
/* refuse.c: refuse a request as the policy's verdict v says, with the hint that grants it. */
void refuse_verdict(struct exchange *x, const struct verdict *v);
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
/* A tunnel past its 200 refused (session_tunnel_codec): no status, the row and the drain. */
void session_tunnel_refuse(struct session *s, const char *reason, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void session_enter_drain(struct session *s);
int session_flush_client(struct session *s);
void session_tunnel_begin(struct session *s);
/*
 * A relay toward the origin (s->tun->to_up) under s->x's max-up, taken
 * what it took (as budget_over has it): read no further than a byte past
 * what the budget has left.
 */
void session_budget_cap(struct session *s, uint64_t taken);
/*
 * What it took is spent (budget_over): returns true when that passed the
 * budget and the mode enforces (the caller closes); else the cap is set again.
 */
bool session_relay_over_budget(struct session *s, uint64_t taken);
/* The same for a CONNECT tunnel, which it closes (refuse, budget): returns true then. */
bool session_tunnel_over_budget(struct session *s);
void session_intercept_begin(struct session *s);

/* state.c */
/*
 * Whether s is idle: between requests or before its first byte, nothing
 * read of a request, nothing left to send, no tunnel or stream open. Such
 * a connection may be closed to make room for its client's next one.
 */
bool session_idle(const struct session *s);
/*
 * Make room under key for a connection its client is opening: close key's
 * oldest idle connection, with a row (client-limit-idle). Returns true
 * when one was closed.
 */
bool session_evict_idle(struct proxy *px, const char *key);
void session_enter(struct session *s, enum sess_state state);
void session_arm_timer(struct session *s);
void session_pump(struct session *s);
void session_update_interest(struct session *s);
void session_on_client(struct loop *l, struct loop_io *io, uint32_t events);
void session_on_upstream(struct loop *l, struct loop_io *io, uint32_t events);

/*
 * Refuse x with r: its connection's codec says it (a response, a stream's
 * answer, the page inside TLS, or only the row where the answer went out
 * already) and its row is written. x's connection may be draining or
 * closed after it: the caller goes no further with either. (Here, not in
 * exchange.c: every codec and phase reaches it, and it needs nothing but
 * the codec table.)
 */
static inline void exchange_refuse(struct exchange *x, const struct refusal *r)
{
	x->conn->codec->refuse(x, r);
}

/* The same with the refusal made of its status, reason, Proxy-Status and detail (fmt, ap). */
static inline __attribute__((format(printf, 5, 0))) void
exchange_refusev(struct exchange *x, int status, const char *reason, const char *proxy_status,
		 const char *fmt, va_list ap)
{
	struct refusal ref = { .status = status, .reason = reason, .proxy_status = proxy_status };

	vsnprintf(ref.detail, sizeof(ref.detail), fmt, ap);
	exchange_refuse(x, &ref);
}

static inline __attribute__((format(printf, 5, 6))) void
exchange_refusef(struct exchange *x, int status, const char *reason, const char *proxy_status,
		 const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	exchange_refusev(x, status, reason, proxy_status, fmt, ap);
	va_end(ap);
}

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

/* h1.c: HTTP/1.1's codec */
void h1_head(struct session *s); /* SS_HEAD's step: a head read, run through its phases */
void h1_http(struct session *s); /* SS_HTTP's step: the bodies and the response relayed */
/*
 * SS_HEAD's timeout: a head partly read is refused 408 (its exchange begun
 * for the row), else the connection closes.
 */
void h1_late_head(struct session *s, const struct config *c);

/* budget.c (the table's side is in proxy.h) */
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
bool budget_over(struct session *s, struct exchange *x, uint64_t taken);
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
void budget_line(struct session *s, const struct exchange *x, char *out, size_t size);
/* x counts against no budget from now on (its row is written, or it is freed); x may be NULL */
void budget_end(struct session *s, struct exchange *x);

/* longrow.c */
/*
 * When s's next open or progress row is due (loop ms), for its exchange or
 * any of its HTTP/2 streams relaying longer than log-open-after;
 * UINT64_MAX when none is (state.c's timer takes the sooner of this and
 * the state's deadline).
 */
uint64_t longrow_due(const struct session *s, const struct config *c);
/* Write every open or progress row of s due by now. */
void longrow_write(struct session *s, const struct config *c);

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
void inject_unsent(struct exchange *x);
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
void tls_tunnel_begin(struct session *s, const char *tunnel_ok, size_t len);
void tls_step_accept(struct session *s);
int tls_connect_begin(struct exchange *x);
void tls_step_connect(struct session *s);
void tls_session_free(struct session *s);
void tls_upstream_free(struct session *s);
void tls_shutdown_client(struct session *s);
void tls_alpn_unreached(struct session *s, const char *why);
bool tls_upstream_quiet(struct session *s);
int tls_hello_step(struct session *s);
ssize_t sio_read(struct session *s, bool up, struct buf *b, size_t limit, bool *drained);
ssize_t sio_write(struct session *s, bool up, struct buf *b);

/* upgrade.c */
struct upgrade;
/* 1 a WebSocket handshake (x->ws kept), 0 not one (Upgrade dropped), -1 refused */
int upgrade_request(struct exchange *x, const struct http_request *req);
void upgrade_scrubbed(struct exchange *x);    /* the host is scrubbed: so are its messages */
bool upgrade_drops_header(const struct exchange *x, const struct http_header *h);
int upgrade_head(struct buf *b);            /* Connection and Upgrade, for a handshake's heads */
int upgrade_response(struct exchange *x, const struct http_response *resp); /* a 101: 0 or -1 */
void upgrade_begin(struct exchange *x);      /* the 101 is queued: relay (SS_WEBSOCKET) */
void upgrade_step(struct session *s);
bool upgrade_wants_client(const struct session *s);
void upgrade_interest(const struct session *s, uint32_t *c, uint32_t *u);
bool upgrade_open(const struct exchange *x);
void upgrade_free(struct exchange *x);

/* h2.c */
void h2_begin(struct session *s); /* the client's handshake chose h2: SS_H2 */
void h2_step(struct session *s);
bool h2_wants_client(const struct session *s);
void h2_interest(const struct session *s, uint32_t *c, uint32_t *u);
uint64_t h2_due(const struct session *s, const struct config *c);
void h2_late(struct session *s, const struct config *c);
void h2_revoke(struct session *s, const struct verdict *v); /* a reload refused the host */
void h2_token_ready(struct session *s);                     /* token.c woke the session */
void h2_end(struct session *s, const char *why); /* the close: every open stream's row */
void h2_release(struct session *s);               /* ... and later, outside nghttp2: the rest */

/* dial.c */
void dial_start(struct exchange *x);
void dial_next(struct exchange *x);
void dial_connected(struct exchange *x, uint32_t events);
void dial_close(struct session *s);
void dial_close_fd(struct session *s);
bool dial_up_is(const struct upstream *u, const struct target *t);
void dial_up_target(const struct upstream *u, struct target *t);
void dial_up_format(const struct upstream *u, char *buf, size_t size);
void dial_up_judge(const struct policy *p, const struct upstream *u, const struct host *h,
		   struct verdict *v);
void dial_reuse(struct exchange *x);
const void *dial_addr_bytes(const struct sockaddr_storage *ss);
void dial_refuse_address(struct exchange *x, int family, const void *addr,
			 const struct verdict *v);

#endif
