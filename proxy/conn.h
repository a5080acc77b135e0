/*
 * conn.h: the proxy's vocabulary (private to proxy/): a client connection
 * (struct session), the exchanges it carries (struct exchange), the states
 * it passes through (struct state) and the codec that speaks its protocol
 * (struct codec), with the few inline accessors every layer uses. Types
 * only: what each file does is declared in session.h (the connection and
 * its engine) and request.h (the request path, above it).
 */
#ifndef SLUICE_CONN_H
#define SLUICE_CONN_H

#include <errno.h>
#include <openssl/ssl.h>
#include <stdarg.h>
#include <stdio.h>

#include "alpn.h"
#include "proxy.h"
#include "inject.h"
#include "list.h"
#include "scrub.h"

/* A passthrough tunnel's hellos (hello.c), while nothing else is relayed. */
enum hello_phase {
	HELLO_DONE,   /* relaying freely (not a passthrough tunnel, or its hellos passed) */
	HELLO_CLIENT, /* reading the ClientHello; nothing goes up */
	HELLO_SERVER, /* it went up, alone; the server's first message is held until known */
	HELLO_RETRY,  /* that was a HelloRetryRequest: reading the second ClientHello */
};

#define TOKEN_WAIT_MS 15000 /* a request waiting for its token, at most */

/* A CONNECT's answer once its tunnel is up or to be intercepted (tunnel.c, tls.c) */
#define TUNNEL_OK "HTTP/1.1 200 Connection established\r\n\r\n"

struct target {
	struct host host;
	uint16_t port;
	enum grant_via via;
};

/*
 * The phases of an HTTP/1.1 exchange's head, in order (h1.c's
 * table): a phase that waits keeps x->phase, and the head, read again from
 * cin, resumes there (h1_head_state): a head is judged once, and charged
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
	bool ws_open;       /* ... its 101 passed: relayed as a WebSocket (its row says ws) */
	bool ws_scrubbed;   /* ... its messages are scrubbed (upgrade.c): its heads drop the extensions */
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
	void (*up_then)(struct exchange *x); /* what follows once its upstream is up (dial_start) */
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
 * session_upstream_close.
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

/* A tunnel's two directions (tunnel_begin), and a passthrough one's hellos. */
struct tunnel {
	struct relay_dir to_up, to_cli;
	enum hello_phase hello; /* a passthrough tunnel's ClientHello, judged before relaying */
	uint64_t hello_ms;      /* the phase began (its deadline: head- or response-timeout) */
	size_t hello_left;      /* HELLO_SERVER: bytes of the ClientHello at cin's head to send */
	bool ended;             /* the upstream's end was passed on to the client (tunnel.c's step) */
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
	struct refusal *page; /* a refused CONNECT answered inside its TLS (verdict.c); else NULL */
	const struct codec *resume; /* the codec a parked handshake or a page goes back to */
};

/*
 * A connection's state: what it waits for, what passing its deadline
 * does, and the hooks the engine (session.c) runs for it: its step, whether
 * it reads the client, the readiness it asks of the loop, its deadline and
 * its timeout. Each is a constant owned by the file whose step it is
 * (h1.c's head and http, dial.c's resolve and connect, tls.c's handshakes,
 * tunnel.c, upgrade.c, h2.c, session.c's drain); session_enter is the only
 * way into one. With `sluice-proxy -d` every transition and every deadline
 * passed is printed by name.
 */
struct state {
	const char *name;
	const char *waits;
	const char *late; /* what passing the deadline does */
	void (*step)(struct session *s); /* NULL: another file wakes it (the resolver, a token) */
	bool (*client_in)(const struct session *s);
	void (*ask)(const struct session *s, uint32_t *c, uint32_t *u);
	uint64_t (*due)(const struct session *s, const struct config *c);
	void (*timeout)(struct session *s, const struct config *c);
	/* the upstream's events, where the state reads them itself; NULL: the pump runs */
	void (*upstream)(struct session *s, uint32_t events);
	/* after the pump, before the loop is asked: what an idle moment frees; may be NULL */
	void (*settle)(struct session *s);
	/* a relay's direction reading from the client (up false) or the upstream: a peer that
	   hangs up still has its bytes relayed; NULL: the client's hang-up closes */
	struct relay_dir *(*relay)(struct session *s, bool up);
	bool rest; /* between requests: a connection here with nothing in flight is idle */
};

/*
 * A codec: how the protocol a connection speaks to its client carries its
 * exchanges, behind one small table (haproxy's mux_ops, in small). A
 * connection speaks one at a time (s->codec): HTTP/1.1 from its accept; a
 * CONNECT's tunnel after its 200; a WebSocket after its 101; an
 * intercepted CONNECT whose handshake is parked for the upstream's ALPN; a
 * refusal's page inside TLS; HTTP/2, whose exchanges are its streams. The
 * connection (session.c) reaches its protocol only through these.
 */
struct codec {
	const char *name;
	/*
	 * Answer x, an exchange of this connection, with refusal r as the
	 * protocol says it, and write its row (or leave it to the close).
	 * The connection may be draining or closed after it.
	 */
	void (*refuse)(struct exchange *x, const struct refusal *r);
	/* The connection closes: each exchange still open gets its row (why: its detail). */
	void (*close)(struct session *s, const char *why);
	/* ... and later, outside every callback: the exchanges' storage goes. */
	void (*release)(struct session *s);
	/* When a long exchange's next open or progress row is due (UINT64_MAX: none) ... */
	uint64_t (*rows_due)(const struct session *s, const struct config *c);
	/* ... and every such row due by now, written (longrow.c). */
	void (*rows_write)(struct session *s, const struct config *c);
	/* The client's TLS handshake is done (tls.c); h2: it chose HTTP/2. */
	void (*tls_up)(struct session *s, bool h2);
	/* Token t has a value or failed: what waited on it asks again (token.c); may be NULL. */
	void (*token_ready)(struct session *s, const struct token *t);
	/* Streams open on it (the metrics); NULL: none. */
	size_t (*streams)(const struct session *s);
};


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
	struct list_node link; /* on px->sessions; once closed, on px->dead */
	uint64_t id;
	uint64_t nreq;
	const struct state *st; /* where it is (struct state): session_enter alone sets it */
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
	struct tunnel *tun; /* a CONNECT relaying bytes (tunnel.c), from its 200 to the close */
	struct h2 *h2;      /* an intercepted CONNECT speaking HTTP/2 (h2.c): its streams */

	/* an intercepted CONNECT (tls.c): requests arrive decrypted */
	SSL *cssl;            /* the client side, our leaf for ix->tunnel.host */
	SSL *ussl;            /* the upstream side, verified; lives with ufd */
	struct intercept *ix; /* from the CONNECT's 200 to the close */
	bool intercept;       /* the handshake is done: heads come through cssl */
	bool c_tls_out, u_tls_out; /* TLS must write before it can go on */
	bool sni_bad;
	bool token_waited;   /* woken from h1_token_state: a failed run fails this request */
	bool reissued;       /* the request now being sent was re-issued after a 401 */
	bool up_ready;       /* ufd is connected */
	bool lingering;      /* draining: our side is shut, what the client sends is read away */
	struct token *token; /* the token this session waits for (h1_token_state) */

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


#endif
