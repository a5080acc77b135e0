/*
 * resolve.c: asynchronous name resolution with c-ares, driven by the loop.
 *
 * c-ares tells us which sockets it wants watched (sock_state_cb); we watch
 * them in the loop and arm one timer for its retransmissions. A query
 * handle outlives a session that gave up on it: the session cancels, the
 * handle stays until c-ares calls back, then it is freed. Answers are
 * returned as they came; judging them is the caller's job (policy.h).
 */
#include "proxy.h"

#include <ares.h>
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#define RESOLVE_SOCKS 16

struct resolve_sock {
	struct loop_io io;
	struct resolver *r;
};

struct resolver {
	struct proxy *px;
	ares_channel channel;
	struct resolve_sock socks[RESOLVE_SOCKS];
	struct loop_timer timer;
};

struct resolve_query {
	resolve_fn cb; /* NULL once cancelled */
	void *arg;
	bool starting; /* inside resolve_start: c-ares may answer at once */
	bool answered;
};

static void resolver_arm(struct resolver *r);

static void on_sock(struct loop *l, struct loop_io *io, uint32_t events)
{
	struct resolve_sock *rs = io->arg;
	struct resolver *r = rs->r;
	int fd = io->fd;

	ares_process_fd(r->channel,
			events & (EPOLLIN | EPOLLERR | EPOLLHUP) ? fd : ARES_SOCKET_BAD,
			events & EPOLLOUT ? fd : ARES_SOCKET_BAD);
	resolver_arm(r);
}

static void on_timer(struct loop *l, struct loop_timer *t)
{
	struct resolver *r = t->arg;

	ares_process_fd(r->channel, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
	resolver_arm(r);
}

static void resolver_arm(struct resolver *r)
{
	struct timeval tv, *tvp;

	tvp = ares_timeout(r->channel, NULL, &tv);
	if (tvp == NULL) {
		loop_timer_cancel(r->px->loop, &r->timer);
		return;
	}
	loop_timer_set(r->px->loop, &r->timer,
		       (uint64_t)tvp->tv_sec * 1000 + (uint64_t)tvp->tv_usec / 1000 + 1, on_timer, r);
}

static void sock_state(void *data, ares_socket_t fd, int readable, int writable)
{
	struct resolver *r = data;
	struct resolve_sock *free_slot = NULL;
	uint32_t ev = (readable ? EPOLLIN : 0) | (writable ? EPOLLOUT : 0);

	for (size_t i = 0; i < RESOLVE_SOCKS; i++) {
		struct resolve_sock *rs = &r->socks[i];

		if (rs->io.fd == fd) {
			if (ev == 0)
				loop_io_del(r->px->loop, &rs->io);
			else
				loop_io_set(r->px->loop, &rs->io, ev);
			return;
		}
		if (rs->io.fd < 0 && free_slot == NULL)
			free_slot = rs;
	}
	if (ev == 0)
		return;
	if (free_slot == NULL ||
	    loop_io_add(r->px->loop, &free_slot->io, fd, ev, on_sock, free_slot) == -1)
		fprintf(stderr, "sluice-proxy: resolver: cannot watch socket %d\n", fd);
}

int resolve_init(struct proxy *px)
{
	struct resolver *r = calloc(1, sizeof(*r));
	struct ares_options opts;
	int rc;

	if (r == NULL)
		return -1;
	r->px = px;
	for (size_t i = 0; i < RESOLVE_SOCKS; i++) {
		r->socks[i].io.fd = -1;
		r->socks[i].r = r;
	}
	rc = ares_library_init(ARES_LIB_INIT_ALL);
	if (rc != ARES_SUCCESS)
		goto out_free;
	memset(&opts, 0, sizeof(opts));
	opts.sock_state_cb = sock_state;
	opts.sock_state_cb_data = r;
	opts.timeout = 2000; /* ms per try */
	opts.tries = 2;
	rc = ares_init_options(&r->channel, &opts,
			       ARES_OPT_SOCK_STATE_CB | ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES);
	if (rc != ARES_SUCCESS)
		goto out_free;
	if (px->config->nnameservers > 0) {
		struct ares_addr_port_node nodes[CONFIG_MAX_NAMESERVERS];

		memset(nodes, 0, sizeof(nodes));
		for (size_t i = 0; i < px->config->nnameservers; i++) {
			const struct sockaddr_storage *ss = &px->config->nameservers[i];

			nodes[i].next = i + 1 < px->config->nnameservers ? &nodes[i + 1] : NULL;
			nodes[i].family = ss->ss_family;
			if (ss->ss_family == AF_INET) {
				const struct sockaddr_in *sin = (const void *)ss;
				nodes[i].addr.addr4 = sin->sin_addr;
				nodes[i].udp_port = nodes[i].tcp_port = ntohs(sin->sin_port);
			} else {
				const struct sockaddr_in6 *sin6 = (const void *)ss;
				memcpy(&nodes[i].addr.addr6, &sin6->sin6_addr, 16);
				nodes[i].udp_port = nodes[i].tcp_port = ntohs(sin6->sin6_port);
			}
		}
		rc = ares_set_servers_ports(r->channel, nodes);
		if (rc != ARES_SUCCESS)
			goto out_destroy;
	}
	px->resolver = r;
	return 0;

out_destroy:
	ares_destroy(r->channel);
out_free:
	fprintf(stderr, "sluice-proxy: resolver: %s\n", ares_strerror(rc));
	free(r);
	return -1;
}

void resolve_release(struct proxy *px)
{
	struct resolver *r = px->resolver;

	if (r == NULL)
		return;
	ares_destroy(r->channel); /* calls back every pending query with ARES_EDESTRUCTION */
	loop_timer_cancel(px->loop, &r->timer);
	for (size_t i = 0; i < RESOLVE_SOCKS; i++)
		loop_io_del(px->loop, &r->socks[i].io);
	ares_library_cleanup();
	free(r);
	px->resolver = NULL;
}

static void on_answer(void *arg, int status, int timeouts, struct ares_addrinfo *res)
{
	struct resolve_query *q = arg;
	struct sockaddr_storage addrs[RESOLVE_MAX];
	size_t n = 0;

	if (q->cb != NULL && status == ARES_SUCCESS && res != NULL) {
		for (struct ares_addrinfo_node *a = res->nodes; a != NULL; a = a->ai_next) {
			if (a->ai_family != AF_INET && a->ai_family != AF_INET6)
				continue;
			if (n == RESOLVE_MAX) {
				/* every answer must be judged; one we cannot hold fails closed */
				status = ARES_EBADRESP;
				break;
			}
			memset(&addrs[n], 0, sizeof(addrs[n]));
			memcpy(&addrs[n], a->ai_addr, a->ai_addrlen);
			n++;
		}
	}
	if (res != NULL)
		ares_freeaddrinfo(res);
	if (q->cb != NULL) {
		if (status == ARES_SUCCESS && n == 0)
			status = ARES_ENODATA;
		q->cb(q->arg, status == ARES_SUCCESS ? 0 : -1, addrs, n,
		      status == ARES_SUCCESS ? NULL : ares_strerror(status));
	}
	if (q->starting)
		q->answered = true;
	else
		free(q);
}

struct resolve_query *resolve_start(struct proxy *px, const char *name, resolve_fn cb, void *arg)
{
	struct resolver *r = px->resolver;
	struct ares_addrinfo_hints hints;
	struct resolve_query *q = calloc(1, sizeof(*q));

	if (q == NULL) {
		cb(arg, -1, NULL, 0, "out of memory");
		return NULL;
	}
	q->cb = cb;
	q->arg = arg;
	q->starting = true;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = ARES_AI_NOSORT;
	ares_getaddrinfo(r->channel, name, NULL, &hints, on_answer, q);
	resolver_arm(r);
	q->starting = false;
	if (q->answered) {
		free(q);
		return NULL;
	}
	return q;
}

void resolve_cancel(struct resolve_query *q)
{
	if (q != NULL)
		q->cb = NULL;
}
