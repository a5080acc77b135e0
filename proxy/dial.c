/*
 * dial.c: a session's upstream connection.
 *
 * Resolves the target (resolve.c), judges every answer with the policy
 * (one denied answer refuses the request, so a name cannot slip an
 * internal address in among public ones), refuses our own listeners, and
 * connects to exactly the checked addresses in order, recording the one
 * used, in its two states (resolve, connect); once connected, what the
 * dial was for follows (dial_start's then). session.c closes the
 * upstream. It does not move request bytes.
 */
#include "request.h"

#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

_Static_assert(DIAL_MAX <= 255, "struct upstream counts its addresses in a uint8_t");

/* A destination address the policy refused, with the exception that would allow it. */
void dial_refuse_address(struct exchange *x, int family, const void *addr,
			 const struct verdict *v)
{
	const char *name = x->t.host.name;
	char a[INET6_ADDRSTRLEN], range[64];
	struct ipnet net;

	if (strcmp(v->reason, "denied-ip") != 0 || iprange_denied(family, addr, &net) == NULL) {
		exchange_refusef(x, v->status, v->reason, v->proxy_status, "%s: %s", name,
				 v->detail);
		return;
	}
	ipaddr_format(family, addr, a, sizeof(a));
	ipnet_format(&net, range, sizeof(range));
	if (x->t.host.kind == HOST_NAME)
		exchange_refusef(x, v->status, v->reason, v->proxy_status,
				 "%s resolves to %s, in denied range %s; if that is intended, add "
				 "to the config: allow-private %s %s",
				 name, a, range, name, range);
	else
		exchange_refusef(x, v->status, v->reason, v->proxy_status,
				 "%s is in denied range %s; if that is intended, add to the "
				 "config: allow-private %s %s",
				 a, range, name, range);
}

/* Whether u is the upstream of target t (same port and host). */
bool dial_up_is(const struct upstream *u, const struct target *t)
{
	if (u == NULL || u->port != t->port || u->kind != t->host.kind)
		return false;
	if (u->kind == HOST_NAME)
		return strcmp(upstream_name(u), t->host.name) == 0;
	return memcmp(&u->ip, &t->host.addr,
		      u->kind == HOST_IPV4 ? sizeof(struct in_addr) : sizeof(struct in6_addr)) == 0;
}

/* The target u was dialed for, whole again (to be judged after a reload). */
void dial_up_target(const struct upstream *u, struct target *t)
{
	memset(t, 0, sizeof(*t));
	t->port = u->port;
	t->via = u->via;
	t->host.kind = u->kind;
	snprintf(t->host.name, sizeof(t->host.name), "%s", upstream_name(u));
	memcpy(&t->host.addr, &u->ip, sizeof(t->host.addr));
}

/* Address i of u as a struct sockaddr_storage. */
static void up_addr_get(const struct upstream *u, size_t i, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	memcpy(ss, &u->addr[i], sizeof(u->addr[i]));
}

/* The address u is connected to, as a row names it ("" before one is dialed). */
void dial_up_format(const struct upstream *u, char *buf, size_t size)
{
	struct sockaddr_storage ss;

	buf[0] = '\0';
	if (u == NULL || u->iaddr >= u->naddr)
		return;
	up_addr_get(u, u->iaddr, &ss);
	sockaddr_format(&ss, buf, size);
}

/* Judge every address of u's answer set as host h's (after a reload); v says. */
void dial_up_judge(const struct policy *p, const struct upstream *u, const struct host *h,
		   struct verdict *v)
{
	for (size_t i = 0; v->allow && i < u->naddr; i++) {
		struct sockaddr_storage ss;

		up_addr_get(u, i, &ss);
		policy_judge_addr(p, h, ss.ss_family, sockaddr_bytes(&ss), v);
	}
}

/*
 * A request sent on the kept upstream: its dial list is the upstream's
 * answer set, from the address in use on, as when it was first dialed
 * (try_replay goes on from there, and then(x) follows its connect).
 */
void dial_reuse(struct exchange *x, void (*then)(struct exchange *x))
{
	const struct upstream *u = x->conn->up;

	x->up_then = then;

	for (size_t i = 0; i < u->naddr; i++)
		up_addr_get(u, i, &x->dial[i]);
	x->ndial = u->naddr;
	x->idial = u->iaddr;
	dial_up_format(u, x->dialed, sizeof(x->dialed));
}

/*
 * Keep the request's target and its checked answer set (at most DIAL_MAX)
 * as the upstream's, in as many bytes as they need. Returns 0 or -1.
 */
static int up_keep(struct exchange *x, const struct sockaddr_storage *addrs, size_t n)
{
	struct session *s = x->conn;
	const struct target *t = &x->t;
	size_t nlen = strlen(t->host.name) + 1;
	struct upstream *u = malloc(sizeof(*u) + n * sizeof(u->addr[0]) + nlen);

	if (u == NULL)
		return -1;
	memset(u, 0, sizeof(*u));
	u->port = t->port;
	u->via = t->via;
	u->kind = t->host.kind;
	memcpy(&u->ip, &t->host.addr, sizeof(t->host.addr));
	u->naddr = u->iaddr = (uint8_t)n;
	for (size_t i = 0; i < n; i++) {
		memset(&u->addr[i], 0, sizeof(u->addr[i]));
		memcpy(&u->addr[i], &addrs[i],
		       addrs[i].ss_family == AF_INET ? sizeof(struct sockaddr_in)
						     : sizeof(struct sockaddr_in6));
	}
	memcpy((char *)&u->addr[n], t->host.name, nlen);
	free(s->up);
	s->up = u;
	return 0;
}

void dial_next(struct exchange *x)
{
	struct session *s = x->conn;
	struct proxy *px = s->px;

	while (x->idial < x->ndial) {
		const struct sockaddr_storage *ss = &x->dial[x->idial];
		socklen_t len = ss->ss_family == AF_INET ? sizeof(struct sockaddr_in)
							 : sizeof(struct sockaddr_in6);
		int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

		if (fd == -1) {
			x->dial_errno = errno;
			break;
		}
		if (connect(fd, (const struct sockaddr *)ss, len) == -1 && errno != EINPROGRESS) {
			x->dial_errno = errno;
			close(fd);
			x->idial++;
			continue;
		}
		if (loop_io_add(px->loop, &s->uio, fd, EPOLLOUT, session_on_upstream, s) == -1) {
			x->dial_errno = errno;
			close(fd);
			break;
		}
		s->ufd = fd;
		if (s->up != NULL)
			s->up->iaddr = (uint8_t)x->idial;
		sockaddr_format(ss, x->dialed, sizeof(x->dialed));
		s->t_phase = loop_clock_ms();
		s->phase_ms = loop_now(px->loop);
		session_enter(s, &dial_connect_state);
		return;
	}
	x->dialed[0] = '\0';
	exchange_refusef(x, 502, "connect-failed", "connection_refused",
			 "could not connect to %s port %u: %s", x->t.host.name, x->t.port,
			 strerror(x->dial_errno ? x->dial_errno : ECONNREFUSED));
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


/*
 * Every answer is judged; one denied answer refuses the request, so a name
 * cannot smuggle an internal address in among public ones.
 */
static void dial_checked(struct exchange *x, const struct sockaddr_storage *addrs, size_t n)
{
	struct session *s = x->conn;
	struct verdict v;

	for (size_t i = 0; i < n; i++) {
		const struct sockaddr_storage *ss = &addrs[i];

		policy_judge_addr(s->px->policy, &x->t.host, ss->ss_family, sockaddr_bytes(ss), &v);
		if (!v.allow) {
			dial_refuse_address(x, ss->ss_family, sockaddr_bytes(ss), &v);
			return;
		}
		if (is_own_listener(s->px, ss)) {
			exchange_refusef(x, 403, "own-address", "destination_ip_prohibited",
					 "%s port %u is sluice-proxy itself", x->t.host.name,
					 x->t.port);
			return;
		}
	}
	/* all judged above; the first DIAL_MAX are tried */
	if (n > DIAL_MAX)
		n = DIAL_MAX;
	if (up_keep(x, addrs, n) == -1) {
		session_close(s, "out of memory");
		return;
	}
	memcpy(x->dial, addrs, n * sizeof(*addrs));
	x->ndial = n;
	x->idial = 0;
	x->dial_errno = 0;
	dial_next(x);
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
	struct exchange *x = s->x; /* the one whose target was asked (dial_start) */
	struct sockaddr_storage dial[RESOLVE_MAX];

	s->q = NULL;
	x->dns_ms = loop_clock_ms() - s->t_phase;
	if (status != 0) {
		exchange_refusef(x, 502, "dns-failed", "dns_error", "could not resolve %s: %s",
				 x->t.host.name, error ? error : "no answer");
		session_pump(s);
		return;
	}
	memcpy(dial, addrs, n * sizeof(*addrs));
	for (size_t i = 0; i < n; i++)
		set_port(&dial[i], x->t.port);
	dial_checked(x, dial, n);
	session_pump(s);
}

void dial_start(struct exchange *x, void (*then)(struct exchange *x))
{
	struct session *s = x->conn;
	const struct host *h = &x->t.host;

	x->up_then = then;

	free(s->up); /* the caller closed it already */
	s->up = NULL;
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
		set_port(&ss, x->t.port);
		dial_checked(x, &ss, 1);
		return;
	}
	s->t_phase = loop_clock_ms();
	s->phase_ms = loop_now(s->px->loop);
	session_enter(s, &dial_resolve_state);
	s->q = resolve_start(s->px, h->name, on_resolved, s);
}

/* The upstream's TCP connect is done (dial_connect_state's events): the next address, or up. */
static void connected(struct session *s, uint32_t events)
{
	struct exchange *x = s->x;
	int err = 0;
	socklen_t len = sizeof(err);
	int one = 1;

	/* writable without an error condition means connected: no getsockopt */
	if ((events & (EPOLLERR | EPOLLHUP)) &&
	    getsockopt(s->ufd, SOL_SOCKET, SO_ERROR, &err, &len) == -1)
		err = errno;
	if ((events & (EPOLLERR | EPOLLHUP)) && err == 0)
		err = ECONNREFUSED;
	if (err == EINPROGRESS || err == EALREADY) {
		session_pump(s);
		return;
	}
	if (err != 0) {
		x->dial_errno = err;
		loop_io_drop(s->px->loop, &s->uio);
		s->ufd = -1;
		x->idial++;
		dial_next(x);
		session_pump(s);
		return;
	}
	setsockopt(s->ufd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	x->connect_ms = loop_clock_ms() - s->t_phase;
	s->up_ready = true;
	s->active_ms = session_now(s);
	x->up_then(x); /* its TLS, its tunnel's 200, or its head's bytes (dial_start's then) */
	session_pump(s);
}

/* --- the states a dial waits in ------------------------------------------ */

static void ask_connect(const struct session *s, uint32_t *c, uint32_t *u)
{
	*u |= EPOLLOUT;
}

static uint64_t due_dial(const struct session *s, const struct config *c)
{
	return s->phase_ms + c->connect_timeout_ms;
}

static void late_resolve(struct session *s, const struct config *c)
{
	struct exchange *x = s->x;

	exchange_refusef(x, 504, "dns-timeout", "dns_timeout", "resolving %s took over %u s",
			 x->t.host.name, c->connect_timeout_ms / 1000);
}

static void late_connect(struct session *s, const struct config *c)
{
	struct exchange *x = s->x;

	x->dial_errno = ETIMEDOUT;
	loop_io_drop(s->px->loop, &s->uio);
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

const struct state dial_resolve_state = {
	.name = "resolve",
	.waits = "the resolver's answer",
	.late = "504 dns-timeout (connect-timeout)",
	.client_in = session_reads_nothing,
	.ask = session_asks_nothing,
	.due = due_dial,
	.timeout = late_resolve,
};

const struct state dial_connect_state = {
	.name = "connect",
	.waits = "the upstream's TCP connect",
	.late = "the next checked address, else 504 connect-timeout",
	.client_in = session_reads_nothing,
	.ask = ask_connect,
	.due = due_dial,
	.timeout = late_connect,
	.upstream = connected,
};
