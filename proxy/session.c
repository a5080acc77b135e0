/*
 * session.c: one client connection, from accept to close.
 *
 * A session reads a request head, asks the policy about it (name first,
 * then every resolved address), dials exactly an address that passed, and
 * then either relays a CONNECT tunnel or forwards one HTTP request and its
 * response, streaming bodies in both directions, and goes back to reading
 * the next head. It owns everything it allocates and dies through
 * session_close, which writes the row of an unfinished request.
 *
 * All progress happens in session_pump, which runs the state's step until
 * nothing moves and then asks the loop for exactly the readiness it needs.
 * It does not parse bytes itself (http.c), decide policy (policy.c) or
 * resolve names (resolve.c).
 */
#include "proxy.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#define LINGER_MS 2000 /* reading and discarding after a refusal, at most */

enum sess_state {
	SS_HEAD,    /* reading a request head */
	SS_RESOLVE, /* waiting for the resolver */
	SS_CONNECT, /* upstream TCP connect in progress */
	SS_HTTP,    /* forwarding one request and its response */
	SS_TUNNEL,  /* relaying a CONNECT tunnel */
	SS_DRAIN,   /* sending a last response, then lingering, then close */
};

struct target {
	struct host host;
	uint16_t port;
	enum grant_via via;
};

/* The request in flight, and what its log row will say. */
struct request {
	bool active; /* begun and its row not written yet */
	struct target t;
	enum http_method method;
	int minor;
	char path[201];
	size_t path_len;
	char ua[121];
	size_t ua_len;
	char grant[HOST_NAME_MAX_LEN + 32];
	char dialed[INET6_ADDRSTRLEN + 8]; /* the address this request went to, "" if none */
	const char *decision;
	const char *reason;
	char detail[256];
	int status;
	uint64_t up, down;
	double t_start;
	double dns_ms, connect_ms; /* < 0: did not happen */
	bool client_close;         /* close the client after this request */

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
	uint64_t sent_ms;  /* when the request head was queued upstream */
};

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

	int cfd;
	struct loop_io cio;
	struct buf cin, cout;

	int ufd; /* upstream, kept across keep-alive requests */
	struct loop_io uio;
	struct buf uin, uout;
	struct buf replay; /* a request head sent on a reused upstream, until answered */
	struct target up;  /* what ufd is connected (or connecting) to */
	bool up_ready;
	struct sockaddr_storage dial[DIAL_MAX];
	size_t ndial, idial;
	char up_addr[INET6_ADDRSTRLEN + 8]; /* the address ufd is connected to */
	int dial_errno;
	struct resolve_query *q;
	double t_phase;    /* start of resolve or connect, proxy_now_ms */
	uint64_t phase_ms; /* the same in loop time, for the deadline */

	struct loop_timer timer;
	uint64_t accepted_ms;
	uint64_t active_ms; /* last byte moved either way */
	uint64_t head_ms;   /* first byte of the head being read, 0 if none */
	bool lingering;

	struct request r;
	struct relay_dir to_up, to_cli;
};

static void session_pump(struct session *s);
static void enter_state(struct session *s, enum sess_state state);

static const struct config *cfg(const struct session *s)
{
	return s->px->config;
}

static uint64_t now_ms(const struct session *s)
{
	return loop_now(s->px->loop);
}

static void format_sockaddr(const struct sockaddr_storage *ss, char *out, size_t size)
{
	char a[INET6_ADDRSTRLEN];

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)ss;

		inet_ntop(AF_INET, &in->sin_addr, a, sizeof(a));
		snprintf(out, size, "%s:%u", a, ntohs(in->sin_port));
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)ss;

		inet_ntop(AF_INET6, &in6->sin6_addr, a, sizeof(a));
		snprintf(out, size, "[%s]:%u", a, ntohs(in6->sin6_port));
	} else {
		snprintf(out, size, "?");
	}
}

/* --- the log row --------------------------------------------------------- */

static void session_log(struct session *s)
{
	struct request *r = &s->r;
	struct netlog_row row;

	if (!r->active)
		return;
	r->active = false;
	memset(&row, 0, sizeof(row));
	row.conn = s->id;
	row.req = s->nreq;
	row.run = s->px->run_id;
	row.who = "unattributed";
	row.client = s->client;
	row.kind = r->method == HTTP_CONNECT ? "tunnel" : "http";
	row.method = r->method != HTTP_UNKNOWN ? http_method_name(r->method) : NULL;
	row.host = r->t.host.name[0] != '\0' ? r->t.host.name : NULL;
	row.port = r->t.host.name[0] != '\0' ? r->t.port : -1;
	row.path = r->method != HTTP_CONNECT && r->path_len > 0 ? r->path : NULL;
	row.path_len = r->path_len;
	row.status = r->status;
	row.decision = r->decision;
	row.reason = r->reason;
	row.grant = r->grant[0] != '\0' ? r->grant : NULL;
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
}

/* --- closing ------------------------------------------------------------- */

static void upstream_close_fd(struct session *s)
{
	if (s->ufd >= 0) {
		if (s->uio.fd >= 0)
			loop_io_close(s->px->loop, &s->uio);
		else
			close(s->ufd); /* already out of epoll (hung_up) */
		s->ufd = -1;
	}
	s->up_ready = false;
	s->u_hup = false;
}

static void upstream_close(struct session *s)
{
	resolve_cancel(s->q);
	s->q = NULL;
	upstream_close_fd(s);
	s->up_addr[0] = '\0';
	buf_release(&s->uin);
	buf_release(&s->uout);
	buf_release(&s->replay);
}

static const char tunnel_ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";

/* Payload bytes of a tunnel: our own 200 reply went through to_cli first. */
static void tunnel_count(struct session *s)
{
	uint64_t reply = sizeof(tunnel_ok) - 1;

	s->r.up = s->to_up.bytes;
	s->r.down = s->to_cli.bytes > reply ? s->to_cli.bytes - reply : 0;
}

void session_close(struct session *s, const char *why)
{
	struct proxy *px = s->px;

	if (s->closed)
		return;
	s->closed = true;
	if (s->r.active && s->r.detail[0] == '\0' && why != NULL)
		snprintf(s->r.detail, sizeof(s->r.detail), "%s", why);
	if (s->r.method == HTTP_CONNECT && s->state == SS_TUNNEL)
		tunnel_count(s);
	session_log(s);
	loop_timer_cancel(px->loop, &s->timer);
	upstream_close(s);
	relay_dir_release(&s->to_up);
	relay_dir_release(&s->to_cli);
	if (s->cio.fd >= 0)
		loop_io_close(px->loop, &s->cio);
	else
		close(s->cfd);
	s->cfd = -1;
	buf_release(&s->cin);
	buf_release(&s->cout);

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
		free(s);
	}
}

/*
 * Close a connection whose response is cut short with an RST, not a FIN, so
 * the client cannot mistake a truncated body (one read to end of stream
 * above all) for a complete one.
 */
static void session_abort(struct session *s, const char *why)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };

	setsockopt(s->cfd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	session_close(s, why);
}

/* --- refusing ------------------------------------------------------------ */

static void enter_drain(struct session *s)
{
	upstream_close(s);
	enter_state(s, SS_DRAIN);
}

/*
 * Refuse the request in flight: the response goes out, the row is written
 * at once, and the connection closes after a short linger.
 */
static void session_refuse(struct session *s, int status, const char *reason,
			   const char *proxy_status, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static void session_refuse(struct session *s, int status, const char *reason,
			   const char *proxy_status, const char *fmt, ...)
{
	struct refusal ref = { .status = status, .reason = reason, .proxy_status = proxy_status };
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ref.detail, sizeof(ref.detail), fmt, ap);
	va_end(ap);
	if (!s->r.active) {
		memset(&s->r, 0, sizeof(s->r));
		s->r.active = true;
		s->r.t_start = proxy_now_ms();
		s->r.dns_ms = s->r.connect_ms = -1;
		s->nreq++;
	}
	s->r.decision = "refuse";
	s->r.reason = reason;
	snprintf(s->r.detail, sizeof(s->r.detail), "%s", ref.detail);
	/* cout holds at most the unsent tail of an earlier response: keep it, append */
	if (!s->r.resp_started && refuse_write(&s->cout, &ref) == 0)
		s->r.status = status;
	session_log(s);
	enter_drain(s);
}

/* The one line naming the grant that would allow this target. */
static void grant_hint(const struct target *t, char *out, size_t size)
{
	bool bare = (t->via == GRANT_VIA_CONNECT && t->port == 443) ||
		    (t->via == GRANT_VIA_HTTP && t->port == 80);

	bool v6 = t->host.kind == HOST_IPV6;

	if (bare)
		snprintf(out, size, v6 ? "[%s]" : "%s", t->host.name);
	else
		snprintf(out, size, v6 ? "[%s]:%u" : "%s:%u", t->host.name, t->port);
}

/* A destination address the policy refused, with the exception that would allow it. */
static void refuse_address(struct session *s, int family, const void *addr,
			   const struct verdict *v)
{
	const char *name = s->r.t.host.name;
	char a[INET6_ADDRSTRLEN], range[64];
	struct ipnet net;

	if (strcmp(v->reason, "denied-ip") != 0 || iprange_denied(family, addr, &net) == NULL) {
		session_refuse(s, v->status, v->reason, v->proxy_status, "%s: %s", name,
			       v->detail);
		return;
	}
	ipaddr_format(family, addr, a, sizeof(a));
	ipnet_format(&net, range, sizeof(range));
	if (s->r.t.host.kind == HOST_NAME)
		session_refuse(s, v->status, v->reason, v->proxy_status,
			       "%s resolves to %s, in denied range %s; if that is intended, add "
			       "to the config: allow-private %s %s",
			       name, a, range, name, range);
	else
		session_refuse(s, v->status, v->reason, v->proxy_status,
			       "%s is in denied range %s; if that is intended, add to the "
			       "config: allow-private %s %s",
			       a, range, name, range);
}

static void refuse_verdict(struct session *s, const struct verdict *v)
{
	char hint[HOST_NAME_MAX_LEN + 16];

	if (strcmp(v->reason, "not-granted") == 0) {
		grant_hint(&s->r.t, hint, sizeof(hint));
		session_refuse(s, v->status, v->reason, v->proxy_status,
			       "%s is not granted; to grant it run: sluice allow add %s", hint, hint);
	} else if (strcmp(v->reason, "host-mismatch") == 0) {
		session_refuse(s, v->status, v->reason, v->proxy_status,
			       "the Host header names another host than the request target %s; "
			       "nothing to grant: send the request to the host it names",
			       s->r.t.host.name);
	} else if (strcmp(v->reason, "denied-ip") == 0 && s->r.t.host.kind != HOST_NAME) {
		const struct host *h = &s->r.t.host;

		refuse_address(s, h->kind == HOST_IPV4 ? AF_INET : AF_INET6, &h->addr, v);
	} else {
		session_refuse(s, v->status, v->reason, v->proxy_status, "%s", v->detail);
	}
}

/* --- starting a request -------------------------------------------------- */

static void copy_capped(char *dst, size_t size, size_t *len, const char *src, size_t n)
{
	if (n > size - 1)
		n = size - 1;
	memcpy(dst, src, n);
	dst[n] = '\0';
	*len = n;
}

static bool same_target(const struct target *a, const struct target *b)
{
	return a->port == b->port && host_equal(&a->host, &b->host);
}

static int put(struct buf *b, const char *p, size_t n)
{
	return buf_append(b, p, n);
}

static int put_header(struct buf *b, const struct http_header *h)
{
	if (put(b, h->name, h->name_len) == -1 || put(b, ": ", 2) == -1 ||
	    put(b, h->value, h->value_len) == -1 || put(b, "\r\n", 2) == -1)
		return -1;
	return 0;
}

/* The origin-form head sent upstream: hop-by-hop and Proxy-* removed. */
static int build_upstream_head(struct session *s, const struct http_request *req)
{
	struct buf *b = &s->uout;
	const struct target *t = &s->r.t;

	if (put(b, req->method_str, req->method_len) == -1 || put(b, " ", 1) == -1 ||
	    put(b, req->path, req->path_len) == -1 ||
	    buf_printf(b, " HTTP/1.%d\r\n", req->minor) == -1)
		return -1;
	for (size_t i = 0; i < req->nheaders; i++) {
		if (http_is_hop_header(req->headers, req->nheaders, i))
			continue;
		if (put_header(b, &req->headers[i]) == -1)
			return -1;
	}
	if (req->host_header < 0) {
		const char *l = t->host.kind == HOST_IPV6 ? "[" : "";
		const char *r = t->host.kind == HOST_IPV6 ? "]" : "";

		if (t->port == 80 ? buf_printf(b, "Host: %s%s%s\r\n", l, t->host.name, r)
				  : buf_printf(b, "Host: %s%s%s:%u\r\n", l, t->host.name, r, t->port))
			return -1;
	}
	if (s->r.client_close && put(b, "Connection: close\r\n", 19) == -1)
		return -1;
	return put(b, "\r\n", 2);
}

static void on_upstream(struct loop *l, struct loop_io *io, uint32_t events);

static void arm_timer(struct session *s);

/* Every state change goes through here: the new state's deadline applies. */
static void enter_state(struct session *s, enum sess_state state)
{
	s->state = state;
	s->again = true;
	arm_timer(s);
}

static void dial_next(struct session *s)
{
	struct proxy *px = s->px;

	while (s->idial < s->ndial) {
		const struct sockaddr_storage *ss = &s->dial[s->idial];
		socklen_t len = ss->ss_family == AF_INET ? sizeof(struct sockaddr_in)
							 : sizeof(struct sockaddr_in6);
		int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

		if (fd == -1) {
			s->dial_errno = errno;
			break;
		}
		if (connect(fd, (const struct sockaddr *)ss, len) == -1 && errno != EINPROGRESS) {
			s->dial_errno = errno;
			close(fd);
			s->idial++;
			continue;
		}
		if (loop_io_add(px->loop, &s->uio, fd, EPOLLOUT, on_upstream, s) == -1) {
			s->dial_errno = errno;
			close(fd);
			break;
		}
		s->ufd = fd;
		format_sockaddr(ss, s->up_addr, sizeof(s->up_addr));
		memcpy(s->r.dialed, s->up_addr, sizeof(s->r.dialed));
		s->t_phase = proxy_now_ms();
		s->phase_ms = loop_now(px->loop);
		enter_state(s, SS_CONNECT);
		return;
	}
	s->up_addr[0] = s->r.dialed[0] = '\0';
	session_refuse(s, 502, "connect-failed", "connection_refused",
		       "could not connect to %s port %u: %s", s->r.t.host.name, s->r.t.port,
		       strerror(s->dial_errno ? s->dial_errno : ECONNREFUSED));
}

/* Whether ss is one of our own listening sockets (a request to ourselves). */
static bool is_own_listener(const struct proxy *px, const struct sockaddr_storage *ss)
{
	for (size_t i = 0; i < px->nlisteners; i++) {
		const struct sockaddr_storage *l = &px->listeners[i].addr;

		if (l->ss_family != ss->ss_family)
			continue;
		if (ss->ss_family == AF_INET) {
			const struct sockaddr_in *a = (const void *)l, *b = (const void *)ss;

			if (a->sin_port == b->sin_port &&
			    (a->sin_addr.s_addr == b->sin_addr.s_addr ||
			     a->sin_addr.s_addr == htonl(INADDR_ANY)))
				return true;
		} else {
			const struct sockaddr_in6 *a = (const void *)l, *b = (const void *)ss;

			if (a->sin6_port == b->sin6_port &&
			    (memcmp(&a->sin6_addr, &b->sin6_addr, 16) == 0 ||
			     IN6_IS_ADDR_UNSPECIFIED(&a->sin6_addr)))
				return true;
		}
	}
	return false;
}

static const void *sockaddr_bytes(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return &((const struct sockaddr_in *)(const void *)ss)->sin_addr;
	return &((const struct sockaddr_in6 *)(const void *)ss)->sin6_addr;
}

/*
 * Every answer is judged; one denied answer refuses the request, so a name
 * cannot smuggle an internal address in among public ones.
 */
static void dial_checked(struct session *s, const struct sockaddr_storage *addrs, size_t n)
{
	struct verdict v;

	for (size_t i = 0; i < n; i++) {
		const struct sockaddr_storage *ss = &addrs[i];

		policy_judge_addr(s->px->policy, &s->r.t.host, ss->ss_family, sockaddr_bytes(ss), &v);
		if (!v.allow) {
			refuse_address(s, ss->ss_family, sockaddr_bytes(ss), &v);
			return;
		}
		if (is_own_listener(s->px, ss)) {
			session_refuse(s, 403, "own-address", "destination_ip_prohibited",
				       "%s port %u is sluice-proxy itself", s->r.t.host.name,
				       s->r.t.port);
			return;
		}
	}
	/* all judged above; the first DIAL_MAX are tried */
	if (n > DIAL_MAX)
		n = DIAL_MAX;
	memcpy(s->dial, addrs, n * sizeof(*addrs));
	s->ndial = n;
	s->idial = 0;
	s->dial_errno = 0;
	dial_next(s);
}

static void set_port(struct sockaddr_storage *ss, uint16_t port)
{
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)(void *)ss)->sin_port = htons(port);
	else
		((struct sockaddr_in6 *)(void *)ss)->sin6_port = htons(port);
}

static void on_resolved(void *arg, int status, const struct sockaddr_storage *addrs, size_t n,
			const char *error)
{
	struct session *s = arg;
	struct sockaddr_storage dial[RESOLVE_MAX];

	s->q = NULL;
	s->r.dns_ms = proxy_now_ms() - s->t_phase;
	if (status != 0) {
		session_refuse(s, 502, "dns-failed", "dns_error", "could not resolve %s: %s",
			       s->r.t.host.name, error ? error : "no answer");
		session_pump(s);
		return;
	}
	memcpy(dial, addrs, n * sizeof(*addrs));
	for (size_t i = 0; i < n; i++)
		set_port(&dial[i], s->r.t.port);
	dial_checked(s, dial, n);
	session_pump(s);
}

/* Dial the request's target; the caller has closed any other upstream. */
static void start_upstream(struct session *s)
{
	const struct host *h = &s->r.t.host;

	s->up = s->r.t;
	if (h->kind != HOST_NAME) {
		struct sockaddr_storage ss;

		memset(&ss, 0, sizeof(ss));
		if (h->kind == HOST_IPV4) {
			struct sockaddr_in *in = (void *)&ss;

			in->sin_family = AF_INET;
			in->sin_addr = h->addr.v4;
		} else {
			struct sockaddr_in6 *in6 = (void *)&ss;

			in6->sin6_family = AF_INET6;
			in6->sin6_addr = h->addr.v6;
		}
		set_port(&ss, s->r.t.port);
		dial_checked(s, &ss, 1);
		return;
	}
	s->t_phase = proxy_now_ms();
	s->phase_ms = loop_now(s->px->loop);
	enter_state(s, SS_RESOLVE);
	s->q = resolve_start(s->px, h->name, on_resolved, s);
}

/* Begin the request whose head is buf[0..len): judge it, then forward it. */
static void start_request(struct session *s, const struct http_request *req, size_t len)
{
	struct request *r = &s->r;
	struct policy_request pr;
	struct host hh;
	struct verdict v;
	const char *err = NULL;
	int ua;

	memset(r, 0, sizeof(*r));
	r->active = true;
	r->t_start = proxy_now_ms();
	r->dns_ms = r->connect_ms = -1;
	r->method = req->method;
	r->minor = req->minor;
	r->decision = "allow";
	s->nreq++;
	copy_capped(r->path, sizeof(r->path), &r->path_len, req->target, req->target_len);
	if (req->form == HTTP_FORM_ABSOLUTE)
		copy_capped(r->path, sizeof(r->path), &r->path_len, req->path, req->path_len);
	ua = http_find_header(req->headers, req->nheaders, "User-Agent");
	if (ua >= 0)
		copy_capped(r->ua, sizeof(r->ua), &r->ua_len, req->headers[ua].value,
			    req->headers[ua].value_len);

	if (req->form != HTTP_FORM_ABSOLUTE && req->form != HTTP_FORM_AUTHORITY) {
		session_refuse(s, 400, "malformed", "http_request_error",
			       "sluice-proxy is a forward proxy: send http://host/path or CONNECT "
			       "host:port, not %.*s",
			       (int)(req->target_len > 64 ? 64 : req->target_len), req->target);
		return;
	}
	if (host_canon(req->host, req->host_len, &r->t.host, &err) == -1) {
		session_refuse(s, 400, "malformed", "http_request_error", "bad host %.*s: %s",
			       (int)(req->host_len > 64 ? 64 : req->host_len), req->host, err);
		return;
	}
	r->t.port = req->port;
	r->t.via = req->method == HTTP_CONNECT ? GRANT_VIA_CONNECT : GRANT_VIA_HTTP;
	r->client_close = req->close || req->minor == 0;

	memset(&pr, 0, sizeof(pr));
	pr.via = r->t.via;
	pr.host = &r->t.host;
	pr.port = r->t.port;
	if (req->host_header >= 0) {
		const struct http_header *h = &req->headers[req->host_header];
		uint16_t port;
		bool has_port;

		if (host_port_parse(h->value, h->value_len, r->t.port, &hh, &port, &has_port,
				    &err) == -1) {
			session_refuse(s, 400, "malformed", "http_request_error",
				       "bad Host header: %s", err);
			return;
		}
		if (has_port && port != r->t.port) {
			session_refuse(s, 403, "host-mismatch", "http_request_denied",
				       "the Host header names port %u but the request goes to port "
				       "%u; nothing to grant: send the request to the host it names",
				       port, r->t.port);
			return;
		}
		pr.host_header = &hh;
	}
	policy_judge(s->px->policy, &pr, time(NULL), &v);
	if (!v.allow) {
		refuse_verdict(s, &v);
		return;
	}
	if (v.observed) {
		r->decision = "observe";
		snprintf(r->detail, sizeof(r->detail), "would be refused: %s", v.detail);
	}
	r->reason = v.reason;
	if (v.grant != NULL) {
		char g[HOST_NAME_MAX_LEN + 16];

		grant_format(v.grant, g, sizeof(g));
		snprintf(r->grant, sizeof(r->grant), "%s (%s)", g, grant_level_name(v.grant->level));
	}

	if (req->method == HTTP_CONNECT) {
		buf_consume(&s->cin, len);
		upstream_close(s);
		start_upstream(s);
		return;
	}
	r->req_body = req->body;
	r->req_left = req->content_length;
	r->req_done = req->body == HTTP_BODY_NONE ||
		      (req->body == HTTP_BODY_LENGTH && req->content_length == 0);
	if (!(s->ufd >= 0 && s->up_ready && same_target(&s->up, &r->t)))
		upstream_close(s);
	if (build_upstream_head(s, req) == -1) {
		session_refuse(s, 431, "head-too-large", "http_request_error",
			       "request head too large to forward");
		return;
	}
	buf_consume(&s->cin, len);
	if (s->ufd >= 0) {
		/*
		 * A kept-alive upstream may be closing just as this request goes
		 * out; a bodiless idempotent request is then re-sent once on a new
		 * connection to the same checked address, as browsers do.
		 */
		memcpy(r->dialed, s->up_addr, sizeof(r->dialed));
		buf_release(&s->replay);
		r->replayable = r->req_done && req->method != HTTP_POST &&
				req->method != HTTP_PATCH &&
				buf_append(&s->replay, buf_head(&s->uout), buf_len(&s->uout)) == 0;
		r->sent_ms = now_ms(s);
		enter_state(s, SS_HTTP);
		return;
	}
	start_upstream(s);
}

/*
 * The reused upstream failed before a byte of the response: if the request
 * may be replayed, dial the same address again (it was checked when first
 * dialed, and re-judged at every reload since) and send the head again.
 */
static bool try_replay(struct session *s)
{
	struct request *r = &s->r;

	if (!r->replayable || r->resp_started || buf_len(&s->uin) > 0)
		return false;
	r->replayable = false;
	upstream_close_fd(s);
	buf_release(&s->uout);
	if (buf_append(&s->uout, buf_head(&s->replay), buf_len(&s->replay)) == -1)
		return false;
	buf_release(&s->replay);
	s->dial_errno = 0;
	dial_next(s);
	return true;
}

/* --- states -------------------------------------------------------------- */

static bool would_block(void)
{
	return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
}

/* Write out what is queued for the client. Returns -1 if the client is gone. */
static int flush_client(struct session *s)
{
	while (buf_len(&s->cout) > 0) {
		ssize_t n = buf_write_fd(&s->cout, s->cfd);

		if (n > 0) {
			s->active_ms = now_ms(s);
			continue;
		}
		if (n == -1 && would_block())
			break;
		return -1;
	}
	buf_trim(&s->cout);
	return 0;
}

static void step_head(struct session *s)
{
	struct http_header hdrs[HEADERS_MAX];
	struct http_request req;
	bool drained = false;

	if (flush_client(s) == -1) {
		session_close(s, "client gone");
		return;
	}
	if (buf_len(&s->cout) > 0)
		return; /* the previous response first */
	for (;;) {
		if (buf_len(&s->cin) > 0) {
			ssize_t n = http_parse_request(buf_head(&s->cin), buf_len(&s->cin), &req, hdrs,
						       HEADERS_MAX);

			if (n > 0) {
				s->head_ms = 0;
				start_request(s, &req, (size_t)n);
				s->again = true;
				return;
			}
			if (n == -1) {
				switch (req.error) {
				case HTTP_E_TOO_MANY:
					session_refuse(s, 431, "too-many-headers",
						       "http_request_error",
						       "more than %d header lines", HEADERS_MAX);
					break;
				case HTTP_E_TOO_LARGE:
					session_refuse(s, 431, "head-too-large",
						       "http_request_error",
						       "a request line or header over %d bytes",
						       HTTP_MAX_LINE);
					break;
				default:
					session_refuse(s, 400, "malformed", "http_request_error",
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
			if (buf_len(&s->cin) >= HEAD_MAX) {
				session_refuse(s, 431, "head-too-large", "http_request_error",
					       "request head over %d bytes", HEAD_MAX);
				return;
			}
		}
		if (drained)
			return; /* the rest of the head has not arrived yet */
		ssize_t n = buf_read_fd(&s->cin, s->cfd, 0, &drained);

		if (n > 0) {
			s->active_ms = now_ms(s);
			if (s->head_ms == 0) {
				s->head_ms = now_ms(s);
				arm_timer(s); /* head-timeout, not idle-timeout, from here */
			}
			continue;
		}
		if (n == -1 && would_block()) {
			buf_trim(&s->cin); /* an idle connection holds no buffer */
			return;
		}
		session_close(s, n == 0 ? "client closed" : "client read error");
		return;
	}
}

/* Move body bytes from in to out under the framing; -1 if malformed. */
static int move_body(struct buf *in, struct buf *out, enum http_body kind, uint64_t *left,
		     struct http_chunked *ch, bool *done, uint64_t *count)
{
	size_t n = buf_len(in);

	if (n > buf_room(out))
		n = buf_room(out);
	if (n == 0)
		return 0;
	if (kind == HTTP_BODY_LENGTH) {
		if (n > *left)
			n = (size_t)*left;
		*left -= n;
		*done = *left == 0;
	} else if (kind == HTTP_BODY_CHUNKED) {
		ssize_t k = http_chunked_scan(ch, buf_head(in), n);

		if (k < 0)
			return -1;
		n = (size_t)k;
		*done = ch->state == HTTP_CHUNK_DONE;
	}
	if (buf_append(out, buf_head(in), n) == -1)
		return -1;
	buf_consume(in, n);
	*count += n;
	return 0;
}

static int build_client_head(struct session *s, const struct http_response *resp)
{
	struct buf *b = &s->cout;

	if (buf_printf(b, "HTTP/1.1 %d ", resp->status) == -1 ||
	    put(b, resp->reason, resp->reason_len) == -1 || put(b, "\r\n", 2) == -1)
		return -1;
	for (size_t i = 0; i < resp->nheaders; i++) {
		if (http_is_hop_header(resp->headers, resp->nheaders, i))
			continue;
		if (put_header(b, &resp->headers[i]) == -1)
			return -1;
	}
	if (s->r.client_close && resp->status >= 200 &&
	    put(b, "Connection: close\r\n", 19) == -1)
		return -1;
	return put(b, "\r\n", 2);
}

/* Parse the response head in uin. Returns 1 progress, 0 need more, -1 refused. */
static int response_head(struct session *s)
{
	struct http_header hdrs[HEADERS_MAX];
	struct http_response resp;
	struct request *r = &s->r;
	ssize_t n = http_parse_response(buf_head(&s->uin), buf_len(&s->uin), r->method, &resp, hdrs,
					HEADERS_MAX);

	if (n == -2 && buf_len(&s->uin) < RESP_HEAD_MAX)
		return 0;
	if (n < 0 || resp.status == 101) {
		session_refuse(s, 502, "upstream-malformed", "http_protocol_error",
			       "%s sent a response sluice-proxy cannot pass on", r->t.host.name);
		return -1;
	}
	if (resp.status >= 200) {
		r->resp_head = true;
		r->status = resp.status;
		r->resp_body = resp.body;
		r->resp_left = resp.content_length;
		r->resp_close = resp.close;
		if (resp.body == HTTP_BODY_EOF)
			r->client_close = true;
		r->resp_done = resp.body == HTTP_BODY_NONE ||
			       (resp.body == HTTP_BODY_LENGTH && resp.content_length == 0);
	}
	if (build_client_head(s, &resp) == -1) {
		session_refuse(s, 502, "upstream-malformed", "http_response_header_section_size",
			       "%s sent a response head too large", r->t.host.name);
		return -1;
	}
	r->resp_started = true;
	r->replayable = false;
	buf_release(&s->replay);
	buf_consume(&s->uin, (size_t)n);
	return 1;
}

static void finish_request(struct session *s)
{
	struct request *r = &s->r;
	bool out_of_step = !r->req_done; /* answered before the body was all sent */

	session_log(s);
	if (r->client_close || out_of_step) {
		enter_drain(s);
		return;
	}
	/* bytes past the response would be read as the next one's: never reuse */
	if (r->resp_close || r->resp_body == HTTP_BODY_EOF || buf_len(&s->uin) > 0)
		upstream_close(s);
	buf_trim(&s->uin);
	buf_trim(&s->uout);
	buf_trim(&s->cin);
	/* a pipelined head already (partly) here is on the head clock from now */
	s->head_ms = buf_len(&s->cin) > 0 ? now_ms(s) : 0;
	enter_state(s, SS_HEAD);
}

static void step_http(struct session *s)
{
	struct request *r = &s->r;
	bool c_drained = false, u_drained = false;

	for (;;) {
		bool moved = false;
		ssize_t n;

		/* request body: client -> uout -> upstream */
		if (!r->req_done && buf_len(&s->cin) > 0) {
			uint64_t before = r->up;

			if (move_body(&s->cin, &s->uout, r->req_body, &r->req_left, &r->req_chunk,
				      &r->req_done, &r->up) == -1) {
				session_refuse(s, 400, "malformed", "http_request_error",
					       "malformed chunked request body");
				return;
			}
			moved |= r->up != before || r->req_done;
			if (r->req_done) {
				r->sent_ms = now_ms(s); /* the response clock starts now */
				arm_timer(s);
			}
		}
		if (!r->req_done && buf_len(&s->cin) == 0 && !c_drained) {
			n = buf_read_fd(&s->cin, s->cfd,
					r->req_body == HTTP_BODY_LENGTH && r->req_left < IOBUF_MAX
						? (size_t)r->req_left
						: 0,
					&c_drained);
			if (n > 0) {
				moved = true;
			} else if (n == 0 || !would_block()) {
				session_close(s, "client closed during the request body");
				return;
			}
		}
		if (buf_len(&s->uout) > 0) {
			n = buf_write_fd(&s->uout, s->ufd);
			if (n > 0) {
				moved = true;
			} else if (n == -1 && !would_block()) {
				if (try_replay(s))
					return;
				if (!r->resp_started)
					session_refuse(s, 502, "connect-failed", "connection_terminated",
						       "%s closed the connection: %s", r->t.host.name,
						       strerror(errno));
				else
					session_abort(s, "upstream write error");
				return;
			}
		}

		/* response: upstream -> cout -> client */
		bool head_short = false;

		if (!r->resp_done && !r->resp_head && buf_len(&s->uin) > 0) {
			int k = response_head(s);

			if (k < 0)
				return;
			moved |= k > 0;
			head_short = k == 0;
		}
		/* the body right behind its head, so both leave in one write */
		if (!r->resp_done && r->resp_head && buf_len(&s->uin) > 0) {
			if (r->resp_body != HTTP_BODY_EOF) {
				uint64_t before = r->down;

				if (move_body(&s->uin, &s->cout, r->resp_body, &r->resp_left,
					      &r->resp_chunk, &r->resp_done, &r->down) == -1) {
					session_abort(s, "malformed chunked response body");
					return;
				}
				moved |= r->down != before || r->resp_done;
			} else {
				size_t k = buf_len(&s->uin);

				if (k > buf_room(&s->cout))
					k = buf_room(&s->cout);
				if (k > 0) {
					buf_append(&s->cout, buf_head(&s->uin), k);
					buf_consume(&s->uin, k);
					r->down += k;
					moved = true;
				}
			}
		}
		/* read only once what was read is used up, so an EOF is never early */
		if (!r->resp_done && buf_room(&s->uin) > 0 && buf_room(&s->cout) > 0 &&
		    (buf_len(&s->uin) == 0 || head_short) && (!u_drained || s->u_hup)) {
			n = buf_read_fd(&s->uin, s->ufd, 0, &u_drained);
			if (n > 0) {
				moved = true;
			} else if (n == 0 && r->resp_head && r->resp_body == HTTP_BODY_EOF &&
				   buf_len(&s->uin) == 0) {
				r->resp_done = true;
				r->resp_close = true;
				moved = true;
			} else if (n == 0 || (n == -1 && !would_block())) {
				if (try_replay(s))
					return;
				if (!r->resp_started)
					session_refuse(s, 502, "upstream-closed",
						       "connection_terminated",
						       "%s closed the connection without answering",
						       r->t.host.name);
				else
					session_abort(s, "upstream closed mid-response");
				return;
			}
		}
		if (buf_len(&s->cout) > 0) {
			size_t before = buf_len(&s->cout);

			if (flush_client(s) == -1) {
				session_close(s, "client gone");
				return;
			}
			moved |= buf_len(&s->cout) != before;
		}
		if (r->resp_done && (r->req_done || buf_len(&s->uout) == 0)) {
			finish_request(s);
			return;
		}
		if (moved)
			s->active_ms = now_ms(s);
		else
			break;
	}
}

static void step_tunnel(struct session *s)
{
	uint64_t before = s->to_up.bytes + s->to_cli.bytes;

	if (relay_dir_pump(&s->to_up, relay_dir_done(&s->to_cli)) == -1 ||
	    relay_dir_pump(&s->to_cli, relay_dir_done(&s->to_up)) == -1) {
		session_close(s, "tunnel error");
		return;
	}
	tunnel_count(s);
	if (s->to_up.bytes + s->to_cli.bytes != before)
		s->active_ms = now_ms(s);
	if (relay_dir_done(&s->to_up) && relay_dir_done(&s->to_cli))
		session_close(s, "closed");
}

static void step_drain(struct session *s)
{
	char sink[4096];

	if (flush_client(s) == -1) {
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
		shutdown(s->cfd, SHUT_WR);
		s->lingering = true;
		s->active_ms = now_ms(s);
		arm_timer(s);
	}
	/* a bounded helping per wake-up; the linger timer bounds the whole */
	for (int i = 0; i < 16; i++) {
		ssize_t n = read(s->cfd, sink, sizeof(sink));

		if (n > 0)
			continue;
		if (n == -1 && would_block())
			return;
		session_close(s, NULL); /* end of stream or error: done */
		return;
	}
}

static void connect_done(struct session *s, uint32_t events)
{
	struct request *r = &s->r;
	int err = 0;
	socklen_t len = sizeof(err);
	int one = 1;

	/* writable without an error condition means connected: no getsockopt */
	if ((events & (EPOLLERR | EPOLLHUP)) &&
	    getsockopt(s->ufd, SOL_SOCKET, SO_ERROR, &err, &len) == -1)
		err = errno;
	if ((events & (EPOLLERR | EPOLLHUP)) && err == 0)
		err = ECONNREFUSED;
	if (err == EINPROGRESS || err == EALREADY)
		return;
	if (err != 0) {
		s->dial_errno = err;
		loop_io_close(s->px->loop, &s->uio);
		s->ufd = -1;
		s->idial++;
		dial_next(s);
		return;
	}
	setsockopt(s->ufd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	r->connect_ms = proxy_now_ms() - s->t_phase;
	s->up_ready = true;
	s->active_ms = now_ms(s);
	if (r->method == HTTP_CONNECT) {
		r->status = 200;
		r->resp_started = true;
		buf_append(&s->cout, tunnel_ok, sizeof(tunnel_ok) - 1);
		/* bytes the client sent after its CONNECT head go first, then splice */
		relay_dir_init(&s->to_up, s->cfd, s->ufd, &s->cin);
		relay_dir_init(&s->to_cli, s->ufd, s->cfd, &s->cout);
		enter_state(s, SS_TUNNEL);
	} else {
		r->sent_ms = now_ms(s);
		enter_state(s, SS_HTTP);
	}
}

/* --- readiness ----------------------------------------------------------- */

/* Whether the current state reads from the client now. */
static bool want_client_in(const struct session *s)
{
	const struct request *r = &s->r;

	switch (s->state) {
	case SS_HEAD:
		return buf_len(&s->cout) == 0;
	case SS_HTTP:
		return !r->req_done && buf_room(&s->cin) > 0 && buf_room(&s->uout) > 0;
	case SS_TUNNEL:
		return s->to_up.want_read;
	case SS_DRAIN:
		return buf_len(&s->cout) == 0;
	case SS_RESOLVE:
	case SS_CONNECT:
		break;
	}
	return false;
}

static void update_interest(struct session *s)
{
	struct loop *l = s->px->loop;
	const struct request *r = &s->r;
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
		if (!r->resp_done && buf_room(&s->uin) > 0 && buf_room(&s->cout) > 0)
			u |= EPOLLIN;
		break;
	case SS_TUNNEL:
		c |= s->to_cli.want_write ? EPOLLOUT : 0;
		u = (s->to_cli.want_read ? EPOLLIN : 0) | (s->to_up.want_write ? EPOLLOUT : 0);
		break;
	case SS_DRAIN:
		if (buf_len(&s->cout) > 0)
			c |= EPOLLOUT;
		break;
	}
	if (loop_io_set(l, &s->cio, c) == -1 ||
	    (s->ufd >= 0 && loop_io_set(l, &s->uio, u) == -1))
		session_close(s, "epoll_ctl failed");
}

static void session_pump(struct session *s)
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
			step_head(s);
			break;
		case SS_RESOLVE:
		case SS_CONNECT:
			break;
		case SS_HTTP:
			step_http(s);
			break;
		case SS_TUNNEL:
			step_tunnel(s);
			break;
		case SS_DRAIN:
			step_drain(s);
			break;
		}
	} while (s->again && !s->closed);
	s->pumping = false;
	if (!s->closed)
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
			hung_up(s, io, &s->to_up);
			return;
		}
		session_close(s, "client hung up");
		return;
	}
	session_pump(s);
}

static void on_upstream(struct loop *l, struct loop_io *io, uint32_t events)
{
	struct session *s = io->arg;

	if (s->state == SS_CONNECT) {
		connect_done(s, events);
		session_pump(s);
		return;
	}
	if (s->state == SS_HEAD) {
		/* an idle kept-alive upstream said something or closed: drop it */
		upstream_close(s);
		session_pump(s);
		return;
	}
	if ((events & (EPOLLERR | EPOLLHUP)) && !(io->events & (EPOLLIN | EPOLLOUT))) {
		if (!(events & EPOLLERR)) {
			/* the rest of the response is in its socket: keep reading it */
			hung_up(s, io, s->state == SS_TUNNEL ? &s->to_cli : NULL);
			return;
		}
		session_close(s, "upstream hung up");
		return;
	}
	session_pump(s);
}

/* --- timers -------------------------------------------------------------- */

/* The deadline that applies in the current state, in loop milliseconds. */
static uint64_t deadline(const struct session *s)
{
	const struct config *c = cfg(s);

	switch (s->state) {
	case SS_HEAD:
		if (s->head_ms != 0)
			return s->head_ms + c->head_timeout_ms;
		if (s->nreq == 0)
			return s->accepted_ms + c->head_timeout_ms;
		return s->active_ms + c->idle_timeout_ms;
	case SS_RESOLVE:
	case SS_CONNECT:
		return s->phase_ms + c->connect_timeout_ms;
	case SS_HTTP:
		/* an upload in progress is judged by idleness, the wait after it by response-timeout */
		if (!s->r.resp_head && s->r.req_done)
			return s->r.sent_ms + c->response_timeout_ms;
		return s->active_ms + c->idle_timeout_ms;
	case SS_TUNNEL:
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
	const struct config *c = cfg(s);

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
			       s->r.t.host.name, c->connect_timeout_ms / 1000);
		break;
	case SS_CONNECT:
		s->dial_errno = ETIMEDOUT;
		loop_io_close(l, &s->uio);
		s->ufd = -1;
		s->idial++;
		if (s->idial < s->ndial) {
			dial_next(s);
			break;
		}
		s->up_addr[0] = s->r.dialed[0] = '\0';
		session_refuse(s, 504, "connect-timeout", "connection_timeout",
			       "%s port %u did not answer within %u s", s->r.t.host.name,
			       s->r.t.port, c->connect_timeout_ms / 1000);
		break;
	case SS_HTTP:
		if (!s->r.resp_head && !s->r.resp_started) {
			session_refuse(s, 504, "upstream-timeout", "http_response_timeout",
				       "%s sent no response within %u s", s->r.t.host.name,
				       c->response_timeout_ms / 1000);
			break;
		}
		session_close(s, "idle timeout");
		break;
	case SS_TUNNEL:
		session_close(s, "idle timeout");
		break;
	case SS_DRAIN:
		session_close(s, NULL);
		break;
	}
	if (!s->closed)
		session_pump(s);
}

/* Make sure the timer fires no later than the current state's deadline. */
static void arm_timer(struct session *s)
{
	struct loop *l = s->px->loop;
	uint64_t due = deadline(s);
	uint64_t now = loop_now(l);

	if (loop_timer_armed(&s->timer) && s->timer.fn == on_timer && s->timer.when_ms <= due)
		return;
	loop_timer_set(l, &s->timer, due > now ? due - now : 0, on_timer, s);
}

/* --- accept and re-judge ------------------------------------------------- */

static void refuse_busy(struct proxy *px, int fd, const struct sockaddr_storage *peer)
{
	struct refusal ref = { .status = 503, .reason = "busy",
			       .proxy_status = "connection_limit_reached" };
	struct netlog_row row;
	struct buf b;
	char client[INET6_ADDRSTRLEN + 8];

	snprintf(ref.detail, sizeof(ref.detail),
		 "too many connections (max-connections %u); try again later",
		 px->config->max_conns);
	buf_init(&b, 4096);
	if (refuse_write(&b, &ref) == 0)
		(void)!write(fd, buf_head(&b), buf_len(&b));
	buf_release(&b);
	format_sockaddr(peer, client, sizeof(client));
	memset(&row, 0, sizeof(row));
	row.conn = ++px->next_conn_id;
	row.req = 0;
	row.run = px->run_id;
	row.who = "unattributed";
	row.client = client;
	row.port = -1;
	row.status = 503;
	row.decision = "refuse";
	row.reason = "busy";
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

	if (px->nsessions >= px->config->max_conns) {
		refuse_busy(px, fd, peer);
		return;
	}
	s = calloc(1, sizeof(*s));
	if (s == NULL) {
		close(fd);
		return;
	}
	s->px = px;
	s->id = ++px->next_conn_id;
	s->cfd = fd;
	s->ufd = -1;
	s->cio.fd = s->uio.fd = -1;
	s->to_up.pipe[0] = s->to_up.pipe[1] = -1;
	s->to_cli.pipe[0] = s->to_cli.pipe[1] = -1;
	buf_init(&s->cin, HEAD_MAX);
	buf_init(&s->cout, IOBUF_MAX);
	buf_init(&s->uin, RESP_HEAD_MAX);
	buf_init(&s->uout, IOBUF_MAX);
	buf_init(&s->replay, HEAD_MAX + 1024);
	format_sockaddr(peer, s->client, sizeof(s->client));
	s->accepted_ms = s->active_ms = loop_now(px->loop);
	if (loop_io_add(px->loop, &s->cio, fd, EPOLLIN, on_client, s) == -1) {
		close(fd);
		free(s);
		return;
	}
	s->next = px->sessions;
	if (px->sessions != NULL)
		px->sessions->prev = s;
	px->sessions = s;
	px->nsessions++;
	arm_timer(s);
}

/*
 * After a reload: a connection whose target the new policy refuses is
 * closed with a row saying so; the rest are untouched. Idle keep-alive
 * upstreams are dropped when refused (the next request is judged anyway).
 */
void session_rejudge_all(struct proxy *px)
{
	time_t now = time(NULL);

	for (struct session *s = px->sessions, *next; s != NULL; s = next) {
		struct policy_request pr = { 0 };
		struct verdict v;
		bool busy = s->state != SS_HEAD && s->state != SS_DRAIN && s->r.active;
		const struct target *t = busy ? &s->r.t : &s->up;

		next = s->next;
		if (!busy && s->ufd < 0)
			continue;
		pr.via = t->via;
		pr.host = &t->host;
		pr.port = t->port;
		policy_judge(px->policy, &pr, now, &v);
		/* the address in use, and while connecting every fallback still to try */
		for (size_t i = s->idial; v.allow && i < s->ndial; i++) {
			policy_judge_addr(px->policy, &t->host, s->dial[i].ss_family,
					  sockaddr_bytes(&s->dial[i]), &v);
			if (s->up_ready)
				break;
		}
		if (v.allow)
			continue;
		if (!busy) {
			upstream_close(s);
			update_interest(s);
			continue;
		}
		s->r.decision = "refuse";
		s->r.reason = "revoked";
		snprintf(s->r.detail, sizeof(s->r.detail), "closed by a policy reload: %s",
			 v.detail[0] ? v.detail : v.reason);
		session_close(s, NULL);
	}
}
