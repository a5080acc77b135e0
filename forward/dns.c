/*
 * dns.c: sluice-forward's --dns relay, its UDP half.
 *
 * A --dns LISTEN=UPSTREAM pair is two listeners (listen.c makes both where
 * the LISTEN=UPSTREAM pairs live, inside --netns when given): a TCP one,
 * whose connections conn.c relays from its raw state (no head, no stamp),
 * and a UDP socket, here. Each client, by its address (ip:port) and the
 * address it sent to, gets a flow: a UDP socket connected to UPSTREAM, made
 * in our own namespace (with --mark's SO_MARK). A query from the client
 * goes up its flow's socket tagged (with --key and --net, lib/dnstag.h:
 * every tag the client wrote removed, ours naming --net and the client's
 * address appended, signed; one that does not read as a query is answered
 * FORMERR here and goes nowhere), or as it came without them; what comes back there (the connected
 * socket takes datagrams from UPSTREAM only) goes to that client from the
 * listener socket, from the address the client sent to (IP(V6)_PKTINFO: a
 * wildcard LISTEN answers from the address asked, which is where resolvers
 * expect the answer from).
 *
 * Bounds: at most FWD_DNS_FLOWS_MAX flows (fewer when that would take more
 * than half the descriptors we may open, after raising the soft limit to
 * the hard one: the rest stay for TCP), in one pool allocated at start
 * (nothing is allocated per datagram or per flow); a new client past that
 * takes the place of the least recently used flow, and so does one that
 * finds no descriptor left; a flow without a datagram either way for
 * FWD_DNS_IDLE_MS is closed by a sweep every FWD_DNS_SWEEP_MS, one whose
 * upstream refused (ICMP) at once, and a listener's flows with its socket
 * when the namespace is re-created (dns_forget). Nothing is queued: a
 * datagram that cannot be sent now (a full socket buffer) is dropped, as
 * the network would drop it. Each
 * wake-up reads at most DNS_BATCH datagrams from a socket, so a flood on one
 * leaves the loop to the others (TCP accepts included) every round.
 *
 * Not here: no DNS parsing but the tag's (answers pass as bytes, up to
 * 65535 a datagram), no answer of our own but FORMERR (an upstream that is
 * down or refuses leaves the client to its own timeout; over TCP conn.c
 * resets it), no policy (the upstream, sluice-dns, has it).
 */
#include "forward.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "dnstag.h"
#include "hmap.h"
#include "lru.h"
#include "sockaddr.h"

#define DNS_DGRAM_MAX 65535
#define DNS_BUCKETS 2048 /* a power of two, twice the flows */
#define DNS_BATCH 64     /* datagrams read per wake-up of one socket */

/* The address a client sent to (IP(V6)_PKTINFO): its answer's source. */
struct dns_local {
	sa_family_t family; /* AF_INET (pi.v4) or AF_INET6 (pi.v6); AF_UNSPEC: none given */
	union {
		struct in_pktinfo v4;
		struct in6_pktinfo v6;
	} pi;
};

struct dns_flow {
	struct loop_io io;             /* connected to the upstream; fd -1: free */
	struct dns_relay *r;
	struct fwd_listener *ln;       /* the listener the client came to: answers leave there */
	struct sockaddr_storage client;
	socklen_t client_len;
	struct dns_local local;
	uint64_t used_ms;              /* loop time of the last datagram either way */
	struct hmap_node node;         /* in use: in the relay's table, by flow_hash */
	struct list_node lru;          /* in use: the relay's LRU order */
	struct dns_flow *chain;        /* free: the next free one */
};

struct dns_relay {
	struct forwarder *fw;
	struct dns_flow *pool;         /* max of them */
	size_t max;                    /* flows at most: FWD_DNS_FLOWS_MAX, or half the fds */
	struct dns_flow *free;         /* free flows, through chain */
	struct hmap flows;             /* the flows in use; SipHash under a random key: which
	                                  clients share a bucket is not known beforehand */
	struct lru lru;                /* the flows in use, least recently used last */
	struct loop_timer sweep;
	bool said_full;                /* the pool was full once (said once) */
	unsigned char dgram[DNS_DGRAM_MAX];
	unsigned char tagged[DNS_DGRAM_MAX + DNSTAG_GROW];
};

/* The hash of a flow's key: the listener, the client's address and port, the address it sent to. */
static uint64_t flow_hash(const struct dns_relay *r, const struct fwd_listener *ln,
			  const struct sockaddr_storage *client, const struct dns_local *local)
{
	unsigned char k[8 + 2 + 2 * sizeof(struct in6_addr)];
	uint64_t at = (uint64_t)(ln - r->fw->listeners);
	size_t n = 0;

	memcpy(k, &at, 8);
	n = 8;
	if (client->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)(const void *)client;

		memcpy(k + n, &a->sin_port, 2);
		memcpy(k + n + 2, &a->sin_addr, sizeof(a->sin_addr));
		n += 2 + sizeof(a->sin_addr);
	} else {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)(const void *)client;

		memcpy(k + n, &a->sin6_port, 2);
		memcpy(k + n + 2, &a->sin6_addr, sizeof(a->sin6_addr));
		n += 2 + sizeof(a->sin6_addr);
	}
	if (local->family == AF_INET) {
		memcpy(k + n, &local->pi.v4.ipi_addr, sizeof(local->pi.v4.ipi_addr));
		n += sizeof(local->pi.v4.ipi_addr);
	} else if (local->family == AF_INET6) {
		memcpy(k + n, &local->pi.v6.ipi6_addr, sizeof(local->pi.v6.ipi6_addr));
		n += sizeof(local->pi.v6.ipi6_addr);
	}
	return hmap_hash(&r->flows, k, n);
}

static bool local_same(const struct dns_local *a, const struct dns_local *b)
{
	if (a->family != b->family)
		return false;
	if (a->family == AF_INET)
		return a->pi.v4.ipi_addr.s_addr == b->pi.v4.ipi_addr.s_addr;
	if (a->family == AF_INET6)
		return a->pi.v6.ipi6_ifindex == b->pi.v6.ipi6_ifindex &&
		       memcmp(&a->pi.v6.ipi6_addr, &b->pi.v6.ipi6_addr, sizeof(struct in6_addr)) == 0;
	return true;
}

/* --- the flows in use: the table and the LRU ------------------------------ */

static struct dns_flow *oldest(const struct dns_relay *r)
{
	return list_entry(lru_oldest(&r->lru), struct dns_flow, lru);
}

static void flow_touch(struct dns_relay *r, struct dns_flow *f)
{
	f->used_ms = loop_now(r->fw->loop);
	lru_touch(&r->lru, &f->lru);
}

static void flow_close(struct dns_relay *r, struct dns_flow *f)
{
	hmap_remove(&r->flows, &f->node);
	lru_remove(&r->lru, &f->lru);
	loop_io_close(r->fw->loop, &f->io);
	f->ln = NULL;
	f->chain = r->free;
	r->free = f;
}

static struct dns_flow *flow_find(struct dns_relay *r, const struct fwd_listener *ln,
				  const struct sockaddr_storage *client,
				  const struct dns_local *local)
{
	struct hmap_node *n = hmap_find(&r->flows, flow_hash(r, ln, client, local));

	for (; n != NULL; n = hmap_find_next(n)) {
		struct dns_flow *f = hmap_entry(n, struct dns_flow, node);

		if (f->ln == ln && sockaddr_same(&f->client, client) &&
		    local_same(&f->local, local))
			return f;
	}
	return NULL;
}

/* --- answers: upstream -> client ------------------------------------------ */

/*
 * Send n bytes of r->dgram to f's client, from the address it asked.
 * Dropped when it cannot go now.
 */
static void answer(struct dns_relay *r, struct dns_flow *f, size_t n)
{
	union {
		char buf[CMSG_SPACE(sizeof(struct in6_pktinfo))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = r->dgram, .iov_len = n };
	struct msghdr msg = {
		.msg_name = &f->client,
		.msg_namelen = f->client_len,
		.msg_iov = &iov,
		.msg_iovlen = 1,
	};

	memset(&ctl, 0, sizeof(ctl));
	if (f->local.family != AF_UNSPEC) {
		bool v4 = f->local.family == AF_INET;
		struct in_pktinfo pi4 = { .ipi_spec_dst = f->local.pi.v4.ipi_addr };
		size_t len = v4 ? sizeof(pi4) : sizeof(struct in6_pktinfo);
		struct cmsghdr *c;

		msg.msg_control = ctl.buf;
		msg.msg_controllen = CMSG_SPACE(len);
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = v4 ? IPPROTO_IP : IPPROTO_IPV6;
		c->cmsg_type = v4 ? IP_PKTINFO : IPV6_PKTINFO;
		c->cmsg_len = CMSG_LEN(len);
		memcpy(CMSG_DATA(c), v4 ? (const void *)&pi4 : &f->local.pi.v6, len);
	}
	(void)!sendmsg(f->ln->io.fd, &msg, MSG_DONTWAIT);
}

static void on_answer(struct loop *l, struct loop_io *io, uint32_t events)
{
	struct dns_flow *f = io->arg;
	struct dns_relay *r = f->r;

	for (int i = 0; i < DNS_BATCH; i++) {
		ssize_t n = recv(io->fd, r->dgram, DNS_DGRAM_MAX, MSG_DONTWAIT);

		if (n == -1 && (errno == EAGAIN || errno == EINTR))
			return;
		/* the upstream refused (ICMP): nothing to wait for; the client times out */
		if (n == -1) {
			flow_close(r, f);
			return;
		}
		flow_touch(r, f);
		answer(r, f, fake_answer(f->ln->fw, r->dgram, (size_t)n, DNS_DGRAM_MAX));
	}
}

/* --- queries: client -> upstream ------------------------------------------ */

/* Close fd, a socket being set up that failed, keeping errno. Returns -1. */
static int close_failed(int fd)
{
	int e = errno;

	close(fd);
	errno = e;
	return -1;
}

/* A socket connected to the upstream, in our own namespace. Returns the fd, or -1 with errno. */
static int upstream_socket(struct dns_relay *r, const struct sockaddr_storage *up)
{
	socklen_t len = up->ss_family == AF_INET ? sizeof(struct sockaddr_in)
						 : sizeof(struct sockaddr_in6);
	uint32_t mark = r->fw->mark;
	int fd = socket(up->ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd == -1)
		return -1;
	if ((mark == 0 || setsockopt(fd, SOL_SOCKET, SO_MARK, &mark, sizeof(mark)) == 0) &&
	    connect(fd, (const struct sockaddr *)up, len) == 0)
		return fd;
	return close_failed(fd);
}

static void on_sweep(struct loop *l, struct loop_timer *t);

/* A new flow for client, in the least recently used one's place when none is free. */
static struct dns_flow *flow_open(struct dns_relay *r, struct fwd_listener *ln,
				  const struct sockaddr_storage *client, socklen_t client_len,
				  const struct dns_local *local)
{
	struct dns_flow *f;
	int fd;

	if (r->free == NULL) {
		if (!r->said_full)
			fprintf(stderr, "sluice-forward: dns: %zu clients at once: the least recently "
					"used gives way to each new one (said once)\n",
				r->max);
		r->said_full = true;
		flow_close(r, oldest(r));
	}
	fd = upstream_socket(r, &ln->upstream);
	/* out of descriptors: the least recently used flow gives its own */
	if (fd == -1 && (errno == EMFILE || errno == ENFILE) && oldest(r) != NULL) {
		flow_close(r, oldest(r));
		fd = upstream_socket(r, &ln->upstream);
	}
	if (fd == -1)
		return NULL;
	f = r->free;
	if (loop_io_add(r->fw->loop, &f->io, fd, EPOLLIN, on_answer, f) == -1) {
		close(fd);
		return NULL;
	}
	r->free = f->chain;
	f->r = r;
	f->ln = ln;
	memcpy(&f->client, client, sizeof(f->client));
	f->client_len = client_len;
	f->local = *local;
	f->chain = NULL;
	hmap_insert(&r->flows, &f->node, flow_hash(r, ln, client, local));
	lru_add(&r->lru, &f->lru);
	if (!loop_timer_armed(&r->sweep))
		loop_timer_set(r->fw->loop, &r->sweep, FWD_DNS_SWEEP_MS, on_sweep, r);
	return f;
}

long dns_tag(struct forwarder *fw, const char *src, const uint8_t *q, size_t len, uint8_t *out,
	     size_t max)
{
	struct dnstag t;

	memset(&t, 0, sizeof(t));
	/* --src: the run is one principal, for its names as for its connections */
	snprintf(t.src, sizeof(t.src), "%s", fw->src[0] != '\0' ? fw->src : src);
	memcpy(t.net, fw->net, sizeof(t.net));
	t.time = (uint64_t)time(NULL);
	return dnstag_add(q, len, &t, &fw->key, out, max);
}

size_t dns_formerr(const uint8_t *q, size_t len, uint8_t *out)
{
	if (len < 12)
		return 0;
	memcpy(out, q, 2);
	out[2] = (uint8_t)(0x80 | (q[2] & 0x79)); /* QR, the opcode and RD as asked */
	out[3] = 1;                               /* FORMERR */
	memset(out + 4, 0, 8);
	return 12;
}

/* The query in r->dgram up f's socket, tagged. Returns 0, or -1 when it is no query. */
static int tag_and_send(struct dns_relay *r, struct dns_flow *f, size_t n)
{
	char src[INET6_ADDRSTRLEN];
	long t;

	conn_addr_text(&f->client, src, sizeof(src));
	t = dns_tag(r->fw, src, r->dgram, n, r->tagged, sizeof(r->tagged));
	if (t == -1)
		return -1;
	(void)!send(f->io.fd, r->tagged, (size_t)t, MSG_DONTWAIT);
	return 0;
}

/* The PKTINFO a datagram came with, into local. */
static void local_of(struct msghdr *msg, struct dns_local *local)
{
	memset(local, 0, sizeof(*local));
	local->family = AF_UNSPEC;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(msg); c != NULL; c = CMSG_NXTHDR(msg, c)) {
		if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO &&
		    c->cmsg_len >= CMSG_LEN(sizeof(struct in_pktinfo))) {
			local->family = AF_INET;
			memcpy(&local->pi.v4, CMSG_DATA(c), sizeof(struct in_pktinfo));
		} else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_PKTINFO &&
			   c->cmsg_len >= CMSG_LEN(sizeof(struct in6_pktinfo))) {
			local->family = AF_INET6;
			memcpy(&local->pi.v6, CMSG_DATA(c), sizeof(struct in6_pktinfo));
		}
	}
}

void dns_on_query(struct loop *l, struct loop_io *io, uint32_t events)
{
	struct fwd_listener *ln = io->arg;
	struct dns_relay *r = ln->fw->dns;

	for (int i = 0; i < DNS_BATCH; i++) {
		union {
			char buf[CMSG_SPACE(sizeof(struct in6_pktinfo)) +
				 CMSG_SPACE(sizeof(struct in_pktinfo))];
			struct cmsghdr align;
		} ctl;
		struct sockaddr_storage client;
		struct iovec iov = { .iov_base = r->dgram, .iov_len = DNS_DGRAM_MAX };
		struct msghdr msg = {
			.msg_name = &client,
			.msg_namelen = sizeof(client),
			.msg_iov = &iov,
			.msg_iovlen = 1,
			.msg_control = ctl.buf,
			.msg_controllen = sizeof(ctl.buf),
		};
		struct dns_local local;
		struct dns_flow *f;
		ssize_t n;

		memset(&client, 0, sizeof(client));
		n = recvmsg(io->fd, &msg, MSG_DONTWAIT);
		if (n == -1 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n == -1 || (client.ss_family != AF_INET && client.ss_family != AF_INET6))
			continue; /* an error a send of ours left behind, or no address: next */
		local_of(&msg, &local);
		f = flow_find(r, ln, &client, &local);
		if (f == NULL)
			f = flow_open(r, ln, &client, msg.msg_namelen, &local);
		if (f == NULL)
			continue; /* no socket for it now: dropped */
		flow_touch(r, f);
		if (!r->fw->dns_tag) {
			(void)!send(f->io.fd, r->dgram, (size_t)n, MSG_DONTWAIT);
			continue;
		}
		if (tag_and_send(r, f, (size_t)n) == -1) {
			size_t e = dns_formerr(r->dgram, (size_t)n, r->tagged);

			if (e > 0) {
				memcpy(r->dgram, r->tagged, e);
				answer(r, f, e);
			}
		}
	}
}

/* --- lifetime -------------------------------------------------------------- */

static void on_sweep(struct loop *l, struct loop_timer *t)
{
	struct dns_relay *r = t->arg;
	uint64_t now = loop_now(l);

	while (oldest(r) != NULL && now - oldest(r)->used_ms >= FWD_DNS_IDLE_MS)
		flow_close(r, oldest(r));
	if (r->lru.count > 0)
		loop_timer_set(l, t, FWD_DNS_SWEEP_MS, on_sweep, r);
}

int dns_socket(const struct sockaddr_storage *addr)
{
	bool v4 = addr->ss_family == AF_INET;
	socklen_t len = v4 ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
	int one = 1;
	int fd = socket(addr->ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd == -1)
		return -1;
	if ((v4 ? setsockopt(fd, IPPROTO_IP, IP_FREEBIND, &one, sizeof(one))
		: setsockopt(fd, IPPROTO_IPV6, IPV6_FREEBIND, &one, sizeof(one))) == 0 &&
	    (v4 ? setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one))
		: setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &one, sizeof(one))) == 0 &&
	    bind(fd, (const struct sockaddr *)addr, len) == 0)
		return fd;
	return close_failed(fd);
}

void dns_forget(struct forwarder *fw, const struct fwd_listener *ln)
{
	struct dns_relay *r = fw->dns;

	if (r == NULL)
		return;
	for (size_t i = 0; i < r->max; i++)
		if (r->pool[i].ln == ln)
			flow_close(r, &r->pool[i]);
}

/*
 * How many flows: FWD_DNS_FLOWS_MAX, or half the descriptors we may have
 * when that is fewer (the soft limit raised to the hard one first), so
 * that a UDP flood leaves descriptors for TCP clients and their upstreams.
 */
static size_t flows_max(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == -1)
		return FWD_DNS_FLOWS_MAX / 4;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) == -1 && getrlimit(RLIMIT_NOFILE, &rl) == -1)
			return FWD_DNS_FLOWS_MAX / 4;
	}
	if (rl.rlim_cur / 2 >= FWD_DNS_FLOWS_MAX)
		return FWD_DNS_FLOWS_MAX;
	return rl.rlim_cur < 2 ? 1 : (size_t)rl.rlim_cur / 2;
}

int dns_start(struct forwarder *fw)
{
	struct dns_relay *r;
	bool any = false;

	for (size_t i = 0; i < fw->nlisteners; i++)
		any = any || fw->listeners[i].kind == FWD_DNS_UDP;
	if (!any)
		return 0;
	r = calloc(1, sizeof(*r));
	if (r != NULL)
		r->max = flows_max();
	if (r == NULL || (r->pool = calloc(r->max, sizeof(*r->pool))) == NULL ||
	    hmap_init(&r->flows, DNS_BUCKETS, DNS_BUCKETS) == -1) {
		fprintf(stderr, "sluice-forward: dns: %s\n", strerror(errno));
		if (r != NULL)
			free(r->pool);
		free(r);
		return -1;
	}
	r->fw = fw;
	if (r->max < FWD_DNS_FLOWS_MAX)
		fprintf(stderr, "sluice-forward: dns: at most %zu UDP clients at once (half the "
				"descriptors allowed)\n",
			r->max);
	for (size_t i = r->max; i-- > 0;) {
		r->pool[i].io.fd = -1;
		r->pool[i].chain = r->free;
		r->free = &r->pool[i];
	}
	fw->dns = r;
	return 0;
}

void dns_stop(struct forwarder *fw)
{
	struct dns_relay *r = fw->dns;

	if (r == NULL)
		return;
	loop_timer_cancel(fw->loop, &r->sweep);
	while (oldest(r) != NULL)
		flow_close(r, oldest(r));
	hmap_release(&r->flows);
	free(r->pool);
	r->pool = NULL;
	free(r);
	fw->dns = NULL;
}
