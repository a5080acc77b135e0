/*
 * client.c: sluice-dns's listeners, UDP and TCP on each dns-listen.
 *
 * UDP queries are read in batches (recvmmsg), each up to 4096 bytes and
 * the most a forwarder's tag adds (longer: a row, no answer); the answers
 * that are ready at once (cache hits, refusals) go out in one sendmmsg
 * after the batch's rows are written with one write(2). A TCP connection
 * carries queries framed by their length (RFC 1035 4.2.2, 7766), answered
 * in the order they are ready; it is closed after DNS_TCP_IDLE_MS
 * without a whole query (bytes of one do not count), and stops being read
 * while DNS_TCP_INFLIGHT of its queries wait (read again, and its buffered queries handled, when
 * one is answered). A connection's first query says who asks on it (its
 * forwarder's tag, query.c): one asker holds at most DNS_TCP_PER_CLIENT
 * connections, and so does one address for its connections that named
 * none (unattributed, or no whole query yet), so one run's forwarder
 * cannot take the others' share though all of them connect from the same
 * address. A connection's bytes are read as it is accepted, so a
 * forwarder's first query (written as it connects) usually names its
 * asker before the next accept is counted. A client
 * that half-closes gets its answers, then a FIN; a reset or an error ends
 * it at once. A connection that closes while queries wait stays allocated
 * (not open) until the last of them is answered into nothing.
 */
#include "dns.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "sock.h"
#include "sockaddr.h"

#define UDP_BATCH 64
/* a query longer than this is no query: 4096, and room for a forwarder's tag */
#define UDP_IN_MAX (4096 + DNSTAG_GROW)
#define UDP_ROUNDS 4      /* batches before giving the loop back */
#define DNS_TCP_MAX 512
#define DNS_TCP_PER_CLIENT 32 /* connections from one address */
#define DNS_TCP_IDLE_MS 10000
#define DNS_TCP_INFLIGHT 64
#define DNS_TCP_OUT_MAX (256 * 1024)

enum tcp_asker {
	TCP_PENDING, /* no query yet: counted by address */
	TCP_ADDR,    /* its first query was unattributed: counted by address */
	TCP_TAGGED,  /* its first query's tag was believed: counted by asker */
};

struct tcp_client {
	struct list_node link; /* on d->tcp_clients */
	struct dnsd *d;
	enum tcp_asker bound;
	struct dnstag asker; /* TCP_TAGGED: who */
	struct loop_io io;
	struct loop_timer idle;
	bool open;
	bool eof;      /* the client half-closed: answer what came, then close */
	unsigned refs; /* the connection while open, and each waiting query */
	struct loop_timer resume; /* handle buffered queries once below DNS_TCP_INFLIGHT */
	unsigned waiting;
	struct sockaddr_storage peer;
	socklen_t peer_len;
	uint8_t in[2 + DNS_MSG_MAX];
	size_t in_len;
	uint8_t *out;
	size_t out_len;
};

static struct {
	struct mmsghdr in[UDP_BATCH], out[UDP_BATCH];
	struct iovec iin[UDP_BATCH], iout[UDP_BATCH];
	struct sockaddr_storage peer[UDP_BATCH];
	uint8_t qbuf[UDP_BATCH][UDP_IN_MAX];
	uint8_t abuf[UDP_BATCH][DNS_UDP_MAX];
} udp;

static void on_udp(struct loop *l, struct loop_io *io, uint32_t events)
{
	struct dnsd *d = io->arg;

	for (int round = 0; round < UDP_ROUNDS; round++) {
		int n, nout = 0;

		for (int i = 0; i < UDP_BATCH; i++) {
			udp.iin[i] = (struct iovec){ udp.qbuf[i], UDP_IN_MAX };
			udp.in[i].msg_hdr = (struct msghdr){ .msg_name = &udp.peer[i],
							     .msg_namelen = sizeof(udp.peer[i]),
							     .msg_iov = &udp.iin[i],
							     .msg_iovlen = 1 };
		}
		n = recvmmsg(io->fd, udp.in, UDP_BATCH, MSG_DONTWAIT, NULL);
		if (n <= 0)
			return;
		for (int i = 0; i < n; i++) {
			struct reply_to to = { .udp_fd = io->fd,
					       .peer_len = udp.in[i].msg_hdr.msg_namelen };
			long a;

			memcpy(&to.peer, &udp.peer[i], sizeof(to.peer));
			if (udp.in[i].msg_hdr.msg_flags & MSG_TRUNC) {
				query_oversize(d, &to); /* longer than any query: a row, no answer */
				continue;
			}
			a = query_handle(d, udp.qbuf[i], udp.in[i].msg_len, &to, udp.abuf[nout],
					 DNS_UDP_MAX);
			if (a <= 0)
				continue;
			udp.iout[nout] = (struct iovec){ udp.abuf[nout], (size_t)a };
			udp.out[nout].msg_hdr = (struct msghdr){ .msg_name = &udp.peer[i],
								 .msg_namelen = to.peer_len,
								 .msg_iov = &udp.iout[nout],
								 .msg_iovlen = 1 };
			nout++;
		}
		netlog_flush(d->log); /* the rows before the answers */
		for (int sent = 0; sent < nout;) {
			int r = sendmmsg(io->fd, udp.out + sent, (unsigned)(nout - sent), 0);

			if (r <= 0)
				break; /* a full socket buffer drops answers, as UDP does */
			sent += r;
		}
		if (n < UDP_BATCH)
			return;
	}
}

/* --- TCP ------------------------------------------------------------------ */

void tcp_client_hold(struct tcp_client *c)
{
	c->refs++;
	c->waiting++;
}

static void tcp_unref(struct dnsd *d, struct tcp_client *c)
{
	if (--c->refs > 0)
		return;
	list_remove(&d->tcp_clients, &c->link);
	free(c->out);
	free(c);
}

/* Close: with an RST (reset), or a FIN once everything was written. */
static void tcp_end(struct dnsd *d, struct tcp_client *c, bool reset)
{
	if (!c->open)
		return;
	c->open = false;
	loop_timer_cancel(d->loop, &c->idle);
	loop_timer_cancel(d->loop, &c->resume);
	if (reset)
		sock_reset_on_close(c->io.fd);
	loop_io_close(d->loop, &c->io);
	d->ntcp--;
	tcp_unref(d, c);
}

static void tcp_close(struct dnsd *d, struct tcp_client *c)
{
	tcp_end(d, c, true);
}

static void on_tcp(struct loop *l, struct loop_io *io, uint32_t events);

static void tcp_want(struct dnsd *d, struct tcp_client *c)
{
	uint32_t ev = c->waiting < DNS_TCP_INFLIGHT && !c->eof ? EPOLLIN : 0;

	if (c->out_len > 0)
		ev |= EPOLLOUT;
	loop_io_set(d->loop, &c->io, ev);
}

/*
 * Write what is queued. Returns 0; -1 when writing failed (the caller
 * closes); 1 when it closed c itself, a half-closed client answered in full
 * (c may be freed).
 */
static int tcp_flush(struct dnsd *d, struct tcp_client *c)
{
	while (c->out_len > 0) {
		ssize_t n = write(c->io.fd, c->out, c->out_len);

		if (n == -1 && (errno == EAGAIN || errno == EINTR))
			break;
		if (n <= 0)
			return -1;
		memmove(c->out, c->out + n, c->out_len - (size_t)n);
		c->out_len -= (size_t)n;
	}
	if (c->eof && c->out_len == 0 && c->waiting == 0) {
		tcp_end(d, c, false); /* all it asked is answered: a FIN */
		return 1;
	}
	tcp_want(d, c);
	return 0;
}

static int tcp_queue(struct tcp_client *c, const uint8_t *msg, size_t len)
{
	uint8_t *grown;

	if (c->out_len + 2 + len > DNS_TCP_OUT_MAX)
		return -1; /* a client that does not read its answers */
	grown = realloc(c->out, c->out_len + 2 + len);
	if (grown == NULL)
		return -1;
	c->out = grown;
	c->out[c->out_len] = (uint8_t)(len >> 8);
	c->out[c->out_len + 1] = (uint8_t)len;
	memcpy(c->out + c->out_len + 2, msg, len);
	c->out_len += 2 + len;
	return 0;
}

static void on_resume(struct loop *l, struct loop_timer *t);

void tcp_client_release(struct dnsd *d, struct tcp_client *c)
{
	c->waiting--;
	if (c->open) {
		/* queries that came past the limit wait in c->in: taken up from the loop, not
		 * from inside the fetch that is answering now */
		if (c->in_len >= 2)
			loop_timer_set(d->loop, &c->resume, 0, on_resume, c);
		if (c->eof && c->waiting == 0 && c->out_len == 0)
			tcp_end(d, c, false);
		else
			tcp_want(d, c);
	}
	tcp_unref(d, c);
}

void client_send(struct dnsd *d, struct reply_to *to, const uint8_t *msg, size_t len)
{
	if (to->udp_fd >= 0) {
		sendto(to->udp_fd, msg, len, MSG_DONTWAIT, (const struct sockaddr *)&to->peer,
		       to->peer_len);
		return;
	}
	if (!to->tcp->open)
		return;
	if (tcp_queue(to->tcp, msg, len) == -1 || tcp_flush(d, to->tcp) == -1)
		tcp_close(d, to->tcp); /* the waiter's hold keeps it allocated */
}

static void on_tcp_idle(struct loop *l, struct loop_timer *t)
{
	struct tcp_client *c = t->arg;

	if (c->waiting > 0) { /* answers still owed: wait for them */
		loop_timer_set(l, t, DNS_TCP_IDLE_MS, on_tcp_idle, c);
		return;
	}
	tcp_close(c->d, c);
}

/* Every whole query in c->in. Returns 0, or -1 when the connection went. */
static int tcp_queries(struct dnsd *d, struct tcp_client *c)
{
	static uint8_t out[DNS_MSG_MAX];
	size_t off = 0;
	int ret = 0;
	bool any = false;

	c->refs++; /* answers sent from inside may close it */
	while (c->open && c->in_len - off >= 2 && c->waiting < DNS_TCP_INFLIGHT) {
		size_t mlen = (size_t)c->in[off] << 8 | c->in[off + 1];
		struct reply_to to = { .udp_fd = -1, .tcp = c, .peer_len = c->peer_len };
		long a;

		if (c->in_len - off < 2 + mlen)
			break;
		memcpy(&to.peer, &c->peer, sizeof(to.peer));
		a = query_handle(d, c->in + off + 2, mlen, &to, out, sizeof(out));
		off += 2 + mlen;
		any = true;
		netlog_flush(d->log);
		if (a > 0 && c->open && tcp_queue(c, out, (size_t)a) == -1)
			tcp_close(d, c);
	}
	if (c->open) {
		memmove(c->in, c->in + off, c->in_len - off);
		c->in_len -= off;
		if (any) /* the deadline moves on whole queries only: no slow drip */
			loop_timer_set(d->loop, &c->idle, DNS_TCP_IDLE_MS, on_tcp_idle, c);
		if (tcp_flush(d, c) == -1)
			tcp_close(d, c);
	}
	if (!c->open)
		ret = -1;
	tcp_unref(d, c);
	return ret;
}

static void on_resume(struct loop *l, struct loop_timer *t)
{
	struct tcp_client *c = t->arg;

	if (c->open)
		tcp_queries(c->d, c);
}

static void on_tcp(struct loop *l, struct loop_io *io, uint32_t events)
{
	struct tcp_client *c = io->arg;
	struct dnsd *d = c->d;

	if (events & (EPOLLHUP | EPOLLERR)) { /* reset, or gone both ways: nobody to answer */
		tcp_close(d, c);
		return;
	}
	if (events & EPOLLOUT) {
		int r = tcp_flush(d, c);

		if (r == -1)
			tcp_close(d, c);
		if (r != 0)
			return;
	}
	if (!(events & EPOLLIN) || c->waiting >= DNS_TCP_INFLIGHT || c->eof)
		return;
	for (;;) {
		ssize_t n = read(io->fd, c->in + c->in_len, sizeof(c->in) - c->in_len);

		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN)
			return;
		if (n == -1) {
			tcp_close(d, c);
			return;
		}
		if (n == 0) { /* half-closed: answer what came, then a FIN (tcp_flush) */
			c->eof = true;
			if (tcp_queries(d, c) == 0) /* else it ended, and c may be gone */
				tcp_want(d, c);
			return;
		}
		c->in_len += (size_t)n;
		if (tcp_queries(d, c) == -1)
			return;
		if (c->waiting >= DNS_TCP_INFLIGHT)
			return;
	}
}

static int reserve_fd = -1; /* given up to accept and refuse when out of fds */

/* How many open connections come from peer's address and name no asker. */
static size_t tcp_from(struct dnsd *d, const struct sockaddr_storage *peer)
{
	size_t n = 0;
	struct list_node *p;

	for (p = d->tcp_clients.first; p != NULL; p = p->next) {
		struct tcp_client *c = list_entry(p, struct tcp_client, link);

		if (!c->open || c->bound == TCP_TAGGED || c->peer.ss_family != peer->ss_family)
			continue;
		if (peer->ss_family == AF_INET
			    ? memcmp(&((struct sockaddr_in *)&c->peer)->sin_addr,
				     &((const struct sockaddr_in *)peer)->sin_addr, 4) == 0
			    : memcmp(&((struct sockaddr_in6 *)&c->peer)->sin6_addr,
				     &((const struct sockaddr_in6 *)peer)->sin6_addr, 16) == 0)
			n++;
	}
	return n;
}

/* How many open connections name net as their asker. */
static size_t tcp_of(struct dnsd *d, const char *net)
{
	size_t n = 0;
	struct list_node *p;

	for (p = d->tcp_clients.first; p != NULL; p = p->next) {
		struct tcp_client *c = list_entry(p, struct tcp_client, link);

		if (c->open && c->bound == TCP_TAGGED && strcmp(c->asker.net, net) == 0)
			n++;
	}
	return n;
}

int tcp_client_asker(struct dnsd *d, struct tcp_client *c, bool believed, struct dnstag *asker,
		     bool *tagged)
{
	if (c->bound == TCP_PENDING && believed) {
		if (tcp_of(d, asker->net) >= DNS_TCP_PER_CLIENT) {
			tcp_close(d, c);
			return -1;
		}
		c->bound = TCP_TAGGED;
		c->asker = *asker;
	} else if (c->bound == TCP_PENDING) {
		c->bound = TCP_ADDR;
	}
	*tagged = c->bound == TCP_TAGGED;
	if (*tagged)
		*asker = c->asker; /* a later query's own tag, believed or not, changes nothing */
	else
		memset(asker, 0, sizeof(*asker));
	return 0;
}

static void on_accept(struct loop *l, struct loop_io *io, uint32_t events)
{
	struct dnsd *d = io->arg;

	if (reserve_fd < 0)
		reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	for (int i = 0; i < 64; i++) {
		struct sockaddr_storage peer;
		socklen_t len = sizeof(peer);
		int fd = accept4(io->fd, (struct sockaddr *)&peer, &len,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct tcp_client *c;

		if (fd == -1 && (errno == EMFILE || errno == ENFILE) && reserve_fd >= 0) {
			/* out of descriptors: take the connection and close it at once, rather
			 * than leave the listener readable and the loop spinning */
			close(reserve_fd);
			fd = accept4(io->fd, NULL, NULL, SOCK_CLOEXEC);
			if (fd >= 0)
				close(fd);
			reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
			return;
		}
		if (fd == -1)
			return;
		if (d->ntcp >= DNS_TCP_MAX || tcp_from(d, &peer) >= DNS_TCP_PER_CLIENT ||
		    (c = calloc(1, sizeof(*c))) == NULL) {
			sock_reset_on_close(fd);
			close(fd);
			continue;
		}
		c->d = d;
		c->peer = peer;
		c->peer_len = len;
		c->open = true;
		c->refs = 1;
		if (loop_io_add(l, &c->io, fd, EPOLLIN, on_tcp, c) == -1) {
			close(fd);
			free(c);
			continue;
		}
		loop_timer_set(l, &c->idle, DNS_TCP_IDLE_MS, on_tcp_idle, c);
		list_insert_head(&d->tcp_clients, &c->link);
		d->ntcp++;
		on_tcp(l, &c->io, EPOLLIN); /* its first query names its asker now (c may go) */
	}
}

static int udp_socket(const struct sockaddr_storage *ss)
{
	socklen_t len = ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
						  : sizeof(struct sockaddr_in);
	int fd = socket(ss->ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1;
	int rcv = 4 * 1024 * 1024;

	if (fd == -1)
		return -1;
	if (ss->ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv)); /* bursts: best effort */
	if (bind(fd, (const struct sockaddr *)ss, len) == -1) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

int client_listen(struct dnsd *d, const struct sockaddr_storage *addr)
{
	char name[64];

	sockaddr_format(addr, name, sizeof(name));
	for (int tcp = 0; tcp < 2; tcp++) {
		struct dns_listener *ln = &d->listeners[d->nlisteners];
		int fd = tcp ? sock_listen(addr, SOCK_LISTEN_NODELAY | SOCK_LISTEN_V6ONLY)
			     : udp_socket(addr);

		if (fd == -1 || loop_io_add(d->loop, &ln->io, fd, EPOLLIN, tcp ? on_accept : on_udp,
					    d) == -1) {
			fprintf(stderr, "sluice-dns: listen %s/%s: %s\n", name, tcp ? "tcp" : "udp",
				strerror(errno));
			if (fd >= 0)
				close(fd);
			return -1;
		}
		ln->tcp = tcp;
		ln->addr = *addr;
		d->nlisteners++;
	}
	fprintf(stderr, "sluice-dns: listening on %s (udp, tcp)\n", name);
	return 0;
}

void client_release(struct dnsd *d)
{
	while (!list_empty(&d->tcp_clients)) {
		struct tcp_client *c = list_entry(d->tcp_clients.first, struct tcp_client, link);

		if (!c->open) { /* held by waiters the cache frees: detach it */
			list_remove(&d->tcp_clients, &c->link);
			c->refs = 0;
			free(c->out);
			free(c);
			continue;
		}
		tcp_close(d, c);
	}
	for (size_t i = 0; i < d->nlisteners; i++)
		loop_io_close(d->loop, &d->listeners[i].io);
	d->nlisteners = 0;
}
