/*
 * conn.c: one connection through sluice-forward.
 *
 * Reads the first request head and refuses (400, close) one that the
 * strict parser (http.c) refuses: CRLF line ends, single spaces, an
 * upper-case known method, no obs-fold, bounded size; one too large or of
 * more than HTTP_HEADERS_MAX - 1 header lines gets 431 (its stamp makes the
 * head one line longer, and the proxy's limit must still hold, or the proxy
 * would refuse it before reading the stamp: a row of nobody's). Removes every
 * Sluice-Stamp header the client wrote, adds one signed stamp naming the
 * client's address (and, from an --own listener, its principal: as=),
 * passes everything else (Proxy-Authorization included) untouched, then
 * relays bytes both ways and parses nothing more. Upstream sockets carry
 * --mark's SO_MARK; one that cannot fails its dial. A connection on a
 * --dns listener has no head (DNS over TCP is length-framed binary): with
 * --key and --net it reads the first query (any DNS message: up to
 * FWD_DNS_QUERY_MAX, in 10 s; its buffer grows as bytes come, as a relay
 * buffer does) and tags it (dns.c: lib/dnstag.h), so sluice-dns learns who
 * asks from the connection's first message, as the proxy does from its
 * first head; a first query that does not read, or that the tag would make
 * longer than a message may be, gets FORMERR and a close. The
 * queries after it pass as bytes. Without a key it starts raw, dialled at
 * once. Either way it is then relayed like the others.
 *
 * On the --transparent listener a connection came to a fake address
 * (fake.c) by the run's nat redirect; its original destination names the
 * name and port. Port 80: the client's first head, made absolute-form
 * (http://NAME:80/...) with Connection: close (the next request would come
 * origin-form), is stamped as above. Any other port: a CONNECT NAME:PORT of
 * ours is stamped and sent at once, before a byte from either side; the
 * proxy's 200 is read away (C_REPLY) and the relay begins; any other answer
 * resets the client (the proxy wrote its row).
 *
 * The stamped head is written as soon as the connect is issued: on loopback
 * or a fast link the handshake is already done, the write proves it, and
 * the connection goes straight to relaying (no wait for writability, no
 * dial timer). Otherwise (EAGAIN: still connecting) it waits for the
 * connect (so does a raw one, which has nothing to write yet), and one
 * unanswered in 2 s is re-dialled on a new socket, at most 8 times. When
 * the upstream closes first and has acknowledged every byte, the client
 * side is closed with an RST (user-mode network stacks stall on a FIN'd
 * connection's TIME_WAIT reuse); a client that closes first gets a FIN.
 */
#include "forward.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/sockios.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/un.h>
#include <unistd.h>
#include <linux/netfilter_ipv4.h>

#include "buf.h"
#include "dns_msg.h"
#include "dnstag.h"
#include "host.h"
#include "http.h"
#include "relay.h"
#include "sock.h"

#define CONN_IO_MAX (64 * 1024)

enum conn_state {
	C_HEAD,     /* reading the first head */
	C_RAW,      /* --dns: nothing to read first, the upstream is dialled at once */
	C_QUERY,    /* --dns with a tag: reading the first query */
	C_DIAL,     /* connecting upstream */
	C_REPLY,    /* --transparent: reading the proxy's answer to our CONNECT */
	C_RELAY,    /* relaying both ways */
	C_RST_WAIT, /* upstream closed first: waiting for the client's acks */
};

/*
 * The states, by name: what each waits for and what its deadline does.
 * conn_enter is the only way into one; with --trace every transition and
 * deadline is printed.
 */
static const struct conn_state_def {
	const char *name;
	const char *waits;
	const char *late;
} conn_states[] = {
	[C_HEAD] = { "head", "the client's first request head", "close (10 s)" },
	[C_RAW] = { "raw", "nothing: dialled at once (--dns: no head, no stamp)",
		    "none: it is left at once" },
	[C_QUERY] = { "query", "the client's first DNS query, to tag (--dns)", "close (10 s)" },
	[C_DIAL] = { "dial", "the upstream's connect",
		     "re-dial on a new socket (every 2 s, 8 tries), then reset the client" },
	[C_REPLY] = { "reply", "the proxy's answer to the CONNECT made for a fake address",
		      "reset the client (10 s)" },
	[C_RELAY] = { "relay", "bytes either way", "none: relaying has no deadline" },
	[C_RST_WAIT] = { "rst-wait", "the client's acks of every byte (the upstream closed first)",
			 "RST once acked, polled every 10 ms; a plain close after 2 s" },
};

_Static_assert(sizeof(conn_states) / sizeof(conn_states[0]) == C_RST_WAIT + 1,
	       "a state without its entry");

struct conn {
	struct forwarder *fw;
	struct fwd_listener *ln;
	struct conn *next; /* dead list */
	enum conn_state state;
	bool closed;
	bool c_woke;       /* the client sent while we were not reading it (C_DIAL) */
	uint32_t cev, uev; /* the events that woke this pump, per side (relay hints) */
	int cfd, ufd;
	struct loop_io cio, uio;
	struct loop_timer timer;
	struct buf in;  /* the head, then client -> upstream */
	struct buf out; /* upstream -> client */
	struct relay_dir up, down;
	char src[INET6_ADDRSTRLEN];
	char as[STAMP_AS_MAX + 1]; /* the principal (--own), "" for none */
	unsigned tries;
	uint64_t rst_since;
	/* --transparent: the name and port a fake address stood for */
	char name[DNS_NAME_MAX + 1];
	uint16_t port;
	bool connect; /* a CONNECT of ours: the proxy's 200 is read away (C_REPLY) */
	bool rewrite; /* plain HTTP (port 80): the client's head made absolute-form */
};

static void conn_pump(struct conn *c);

static void conn_enter(struct conn *c, enum conn_state state)
{
	if (c->fw->trace)
		fprintf(stderr, "sluice-forward: trace: %s: %s -> %s: waits for %s\n", c->src,
			conn_states[c->state].name, conn_states[state].name,
			conn_states[state].waits);
	c->state = state;
}
static void on_upstream(struct loop *l, struct loop_io *io, uint32_t events);

static void conn_close(struct conn *c, bool rst)
{
	struct forwarder *fw = c->fw;

	if (c->closed)
		return;
	c->closed = true;
	if (rst)
		sock_reset_on_close(c->cfd);
	loop_timer_cancel(fw->loop, &c->timer);
	relay_dir_release(&c->up);
	relay_dir_release(&c->down);
	if (c->cio.fd >= 0)
		loop_io_close(fw->loop, &c->cio);
	else
		close(c->cfd);
	if (c->ufd >= 0) {
		if (c->uio.fd >= 0)
			loop_io_close(fw->loop, &c->uio);
		else
			close(c->ufd);
	}
	buf_release(&c->in);
	buf_release(&c->out);
	fw->nconns--;
	c->next = fw->dead;
	fw->dead = c;
}

void conn_free_dead(struct forwarder *fw)
{
	while (fw->dead != NULL) {
		struct conn *c = fw->dead;

		fw->dead = c->next;
		free(c);
	}
}

/* Answer status (400 or 431) with why, and close. */
static void refuse(struct conn *c, int status, const char *why)
{
	char msg[320];
	int n = snprintf(msg, sizeof(msg),
			 "HTTP/1.1 %s\r\nContent-Type: text/plain\r\n"
			 "Content-Length: %zu\r\nConnection: close\r\n\r\nsluice-forward: %s\n",
			 status == 431 ? "431 Request Header Fields Too Large" : "400 Bad Request",
			 strlen(why) + 17, why);

	if (n > 0)
		(void)!write(c->cfd, msg, (size_t)n);
	shutdown(c->cfd, SHUT_WR);
	conn_close(c, false);
}

/* Rebuild the head without client stamps and with ours; the bytes after it follow. */
static int stamp_head(struct conn *c, const struct http_request *req, size_t headlen)
{
	struct forwarder *fw = c->fw;
	const char *line_end = memchr(c->in.data + c->in.start, '\n', headlen);
	struct stamp st;
	char value[STAMP_VALUE_MAX];
	struct buf b;

	memset(&st, 0, sizeof(st));
	st.version = 1;
	st.kid = fw->key.kid;
	/* --src: the sandbox's one principal, whatever address the client bound */
	snprintf(st.src, sizeof(st.src), "%s", fw->src[0] != '\0' ? fw->src : c->src);
	memcpy(st.net, fw->net, sizeof(st.net));
	memcpy(st.as, c->as, sizeof(st.as));
	memcpy(st.boot, fw->boot, sizeof(st.boot));
	st.seq = ++fw->seq;
	if (line_end == NULL || stamp_format(&st, &fw->key, value, sizeof(value)) < 0)
		return -1;
	buf_init(&b, CONN_IO_MAX);
	if (c->rewrite) {
		char hostport[HOST_PORT_TEXT_MAX + 1];

		/* the name the fake address stood for: the proxy judges it, and the Host */
		if (req->form != HTTP_FORM_ORIGIN ||
		    host_port_format(hostport, sizeof(hostport), c->name, c->port) == -1 ||
		    buf_printf(&b, "%.*s http://%s%.*s HTTP/1.%d\r\nConnection: close\r\n",
			       (int)req->method_len, req->method_str, hostport, (int)req->target_len,
			       req->target, req->minor) == -1)
			goto fail;
	} else if (buf_append(&b, buf_head(&c->in), (size_t)(line_end + 1 - buf_head(&c->in))) ==
		   -1) {
		goto fail;
	}
	for (size_t i = 0; i < req->nheaders; i++) {
		const struct http_header *h = &req->headers[i];

		if (http_header_is(h, STAMP_HEADER))
			continue;
		/* one request per connection: the next would come origin-form */
		if (c->rewrite && (http_header_is(h, "Connection") || http_header_is(h, "Keep-Alive")))
			continue;
		if (buf_append(&b, h->name, h->name_len) == -1 || buf_append(&b, ": ", 2) == -1 ||
		    buf_append(&b, h->value, h->value_len) == -1 || buf_append(&b, "\r\n", 2) == -1)
			goto fail;
	}
	if (buf_printf(&b, "%s: %s\r\n\r\n", STAMP_HEADER, value) == -1 ||
	    buf_append(&b, buf_head(&c->in) + headlen, buf_len(&c->in) - headlen) == -1)
		goto fail;
	buf_release(&c->in);
	c->in = b;
	return 0;
fail:
	buf_release(&b);
	return -1;
}

static void on_timer(struct loop *l, struct loop_timer *t);

/* The upstream is connected: relay both ways (the rest of the head first). */
static void relay_begin(struct conn *c)
{
	loop_timer_cancel(c->fw->loop, &c->timer);
	relay_dir_init(&c->up, c->cfd, c->ufd, &c->in);
	relay_dir_init(&c->down, c->ufd, c->cfd, &c->out);
	conn_enter(c, C_RELAY);
	c->cev = c->uev = EPOLLIN | EPOLLOUT; /* the first pump looks at both ways */
}

/*
 * The upstream is connected: relay, or for a CONNECT of ours first read the
 * proxy's answer to it.
 */
static void connected(struct conn *c)
{
	if (!c->connect) {
		relay_begin(c);
		return;
	}
	conn_enter(c, C_REPLY);
	loop_timer_set(c->fw->loop, &c->timer, FWD_HEAD_TIMEOUT_MS, on_timer, c);
}

/* Whether ss is an IPv4 address in 127.0.0.0/8. */
static bool loopback4(const struct sockaddr_storage *ss)
{
	const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)ss;

	return ss->ss_family == AF_INET && (ntohl(in->sin_addr.s_addr) >> 24) == 127;
}

/* Bind fd to from's address, its port left for connect to choose. Returns 0 or -1 with errno. */
static int bind_from(int fd, const struct sockaddr_storage *from)
{
	int one = 1;

	/* a source of our own, its port chosen with the destination known: no port runs out */
	setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
	return bind(fd, (const struct sockaddr *)from, sizeof(struct sockaddr_in));
}

static void dial(struct conn *c)
{
	const struct sockaddr_storage *ss = &c->ln->upstream;
	bool inet = ss->ss_family != AF_UNIX;
	socklen_t len = ss->ss_family == AF_INET    ? sizeof(struct sockaddr_in)
			: ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
						    : sizeof(struct sockaddr_un);
	int one = 1;
	int fd;

	if (c->ufd >= 0) {
		loop_io_close(c->fw->loop, &c->uio);
		c->ufd = -1;
	}
	if (c->tries++ == FWD_DIAL_TRIES) {
		conn_close(c, true); /* the client's connection fails, loudly */
		return;
	}
	fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1) {
		conn_close(c, true);
		return;
	}
	/* a unix:PATH upstream (a proxy on this host) has no Nagle, and no route to mark */
	if (inet)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (inet && c->fw->mark != 0 &&
	    setsockopt(fd, SOL_SOCKET, SO_MARK, &c->fw->mark, sizeof(c->fw->mark)) == -1) {
		fprintf(stderr, "sluice-forward: dial for client %s: SO_MARK 0x%x: %s: reset\n",
			c->src, (unsigned)c->fw->mark, strerror(errno));
		close(fd);
		conn_close(c, true);
		return;
	}
	/*
	 * Toward a loopback upstream (the proxy on this host), from our own
	 * loopback address: the proxy tells this forwarder's connections from
	 * every other's (and the host's own clients') as it accepts them.
	 */
	if (c->fw->dial_from.ss_family == AF_INET && loopback4(ss) &&
	    bind_from(fd, &c->fw->dial_from) == -1) {
		char a[INET_ADDRSTRLEN];

		/* a loopback without 127/8 (an unusual namespace): said once, then as before */
		inet_ntop(AF_INET, &((struct sockaddr_in *)(void *)&c->fw->dial_from)->sin_addr, a,
			  sizeof(a));
		fprintf(stderr, "sluice-forward: dial from %s: %s; dialling the proxy from the "
				"kernel's choice of address (counted with the host's clients)\n",
			a, strerror(errno));
		c->fw->dial_from.ss_family = AF_UNSPEC;
	}
	if (connect(fd, (const struct sockaddr *)ss, len) == -1 && errno != EINPROGRESS) {
		close(fd);
		conn_close(c, true); /* refused: answered, so not re-dialled */
		return;
	}
	/* a write that takes bytes proves the handshake is done (raw: nothing to write yet) */
	if (buf_len(&c->in) > 0 && buf_write_fd(&c->in, fd) > 0) {
		if (loop_io_add(c->fw->loop, &c->uio, fd, EPOLLIN, on_upstream, c) == -1) {
			close(fd);
			conn_close(c, true);
			return;
		}
		c->ufd = fd;
		connected(c);
		return;
	}
	if ((buf_len(&c->in) > 0 && errno != EAGAIN) ||
	    loop_io_add(c->fw->loop, &c->uio, fd, EPOLLOUT, on_upstream, c) == -1) {
		close(fd);
		conn_close(c, true); /* refused: answered, so not re-dialled */
		return;
	}
	c->ufd = fd;
	conn_enter(c, C_DIAL);
	loop_timer_set(c->fw->loop, &c->timer, FWD_DIAL_TIMEOUT_MS, on_timer, c);
}

/*
 * Read more of the client's first bytes, cap in all in c->in: true to look
 * at them again; false when the step waits for more, or the client is gone
 * (the connection then closed).
 */
static bool read_more(struct conn *c, size_t cap, bool *drained)
{
	ssize_t n = buf_read_fd(&c->in, c->cfd, cap - buf_len(&c->in), drained);

	if (n > 0)
		return true;
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return false;
	conn_close(c, false);
	return false;
}

static void step_head(struct conn *c)
{
	struct http_header hdrs[HTTP_HEADERS_MAX - 1]; /* our stamp is the proxy's last line */
	struct http_request req;
	bool drained = false;

	for (;;) {
		if (buf_len(&c->in) > 0) {
			ssize_t n = http_parse_request(buf_head(&c->in), buf_len(&c->in),
						       FWD_HEAD_MAX, &req, hdrs,
						       HTTP_HEADERS_MAX - 1);
			if (n == -1 && req.error == HTTP_E_TOO_MANY) {
				char why[128];

				snprintf(why, sizeof(why),
					 "the first request head has more than %d header lines "
					 "(the proxy's %d, less our stamp)",
					 HTTP_HEADERS_MAX - 1, HTTP_HEADERS_MAX);
				refuse(c, 431, why);
				return;
			}
			if (n == -1) {
				refuse(c, req.error == HTTP_E_TOO_LARGE ? 431 : 400,
				       req.error == HTTP_E_TOO_LARGE
					       ? "the first request head is too large"
					       : "the first request head is not canonical HTTP/1.1");
				return;
			}
			if (n > 0) {
				if (stamp_head(c, &req, (size_t)n) == -1) {
					refuse(c, 431, "the first request head is too large");
					return;
				}
				dial(c);
				return;
			}
		}
		if (drained || !read_more(c, FWD_HEAD_MAX, &drained))
			return;
	}
}

/* Put the tagged first query (q[0..len) as it came) in place of the client's. */
static int tag_first(struct conn *c, size_t len)
{
	static uint8_t tagged[2 + FWD_DNS_QUERY_MAX]; /* tagged, it is still one message */
	const uint8_t *q = (const uint8_t *)buf_head(&c->in) + 2;
	long n = dns_tag(c->fw, c->src, q, len, tagged + 2, sizeof(tagged) - 2);
	struct buf b;

	if (n == -1)
		return -1;
	tagged[0] = (uint8_t)(n >> 8);
	tagged[1] = (uint8_t)n;
	buf_init(&b, 2 + FWD_DNS_QUERY_MAX + DNSTAG_GROW);
	if (buf_append(&b, tagged, 2 + (size_t)n) == -1 ||
	    buf_append(&b, buf_head(&c->in) + 2 + len, buf_len(&c->in) - 2 - len) == -1) {
		buf_release(&b);
		return -1;
	}
	buf_release(&c->in);
	c->in = b;
	return 0;
}

/* The first query that does not read: FORMERR (when it has a header), then a FIN. */
static void refuse_query(struct conn *c, size_t len)
{
	uint8_t e[2 + 12];
	size_t n = dns_formerr((const uint8_t *)buf_head(&c->in) + 2, len, e + 2);

	if (n > 0) {
		e[0] = 0;
		e[1] = (uint8_t)n;
		(void)!write(c->cfd, e, 2 + n);
	}
	shutdown(c->cfd, SHUT_WR);
	conn_close(c, false);
}

static void step_query(struct conn *c)
{
	bool drained = false;

	for (;;) {
		if (buf_len(&c->in) >= 2) {
			const uint8_t *h = (const uint8_t *)buf_head(&c->in);
			size_t len = (size_t)h[0] << 8 | h[1];

			if (buf_len(&c->in) >= 2 + len) {
				if (tag_first(c, len) == -1) {
					refuse_query(c, len);
					return;
				}
				dial(c);
				return;
			}
		}
		if (drained || !read_more(c, 2 + FWD_DNS_QUERY_MAX, &drained))
			return;
	}
}

static void dial_done(struct conn *c, uint32_t events)
{
	if (events & (EPOLLERR | EPOLLHUP)) {
		conn_close(c, true); /* refused: answered, so not re-dialled */
		return;
	}
	connected(c);
}

/*
 * The proxy's answer to our CONNECT: a 200 head is read away and the
 * relay begins (what came behind it, a server's banner, goes first); any
 * other answer, or none, resets the client (the proxy wrote its row).
 */
static void step_reply(struct conn *c)
{
	bool drained = false;

	for (;;) {
		const char *h = buf_head(&c->out), *end;
		size_t len = buf_len(&c->out);

		end = len >= 4 ? memmem(h, len, "\r\n\r\n", 4) : NULL;
		if (end != NULL) {
			if (len < 12 || (memcmp(h, "HTTP/1.1 200", 12) != 0 &&
					 memcmp(h, "HTTP/1.0 200", 12) != 0)) {
				conn_close(c, true);
				return;
			}
			buf_consume(&c->out, (size_t)(end + 4 - h));
			relay_begin(c);
			return;
		}
		if (len >= FWD_HEAD_MAX) {
			conn_close(c, true);
			return;
		}
		if (drained)
			return;
		ssize_t n = buf_read_fd(&c->out, c->ufd, FWD_HEAD_MAX - len, &drained);

		if (n == -1 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0) {
			conn_close(c, true);
			return;
		}
	}
}

static int outq(int fd)
{
	int n = 0;

	return ioctl(fd, SIOCOUTQ, &n) == -1 ? -1 : n;
}

/*
 * Whether direction d has something to do after a wake-up with src_ev on
 * its source and dst_ev on its destination: it waits for neither, or what
 * it waits for came. A read that would only say EAGAIN is spared.
 */
static bool dir_woken(const struct relay_dir *d, uint32_t src_ev, uint32_t dst_ev)
{
	if (d->src_hup || ((src_ev | dst_ev) & (EPOLLERR | EPOLLHUP)))
		return true;
	if (d->want_write)
		return (dst_ev & EPOLLOUT) != 0;
	return !d->want_read || (src_ev & (EPOLLIN | EPOLLRDHUP)) != 0;
}

static void step_relay(struct conn *c)
{
	bool up = dir_woken(&c->up, c->cev, c->uev), down = dir_woken(&c->down, c->uev, c->cev);

	c->cev = c->uev = 0;
	/* the client-bound direction never shuts by itself: see below */
	if ((up && relay_dir_pump(&c->up, relay_dir_done(&c->down)) == -1) ||
	    (down && relay_dir_pump(&c->down, true) == -1)) {
		conn_close(c, true);
		return;
	}
	if (!relay_dir_done(&c->down))
		return;
	if (relay_dir_done(&c->up)) {
		conn_close(c, false); /* the client closed first: it gets a FIN */
		return;
	}
	/* the upstream closed first: an RST, once every byte is acknowledged */
	conn_enter(c, C_RST_WAIT);
	c->rst_since = loop_now(c->fw->loop);
	loop_timer_set(c->fw->loop, &c->timer, 0, on_timer, c);
}

static void update_interest(struct conn *c)
{
	uint32_t ci = 0, ui = 0;

	switch (c->state) {
	case C_HEAD:
	case C_QUERY:
		ci = EPOLLIN;
		break;
	case C_RAW:
		break;
	case C_REPLY:
		ui = EPOLLIN;
		break;
	case C_DIAL:
		/*
		 * Leave the client's EPOLLIN on (two epoll_ctl calls per
		 * connection otherwise); only a client that does send now,
		 * before the upstream is up, has it switched off.
		 */
		ci = c->c_woke ? 0 : c->cio.events & EPOLLIN;
		ui = EPOLLOUT;
		break;
	case C_RELAY:
		ci = (c->up.want_read ? EPOLLIN : 0) | (c->down.want_write ? EPOLLOUT : 0);
		ui = (c->down.want_read ? EPOLLIN : 0) | (c->up.want_write ? EPOLLOUT : 0);
		break;
	case C_RST_WAIT:
		break;
	}
	loop_io_set(c->fw->loop, &c->cio, ci);
	if (c->ufd >= 0)
		loop_io_set(c->fw->loop, &c->uio, ui);
}

static void conn_pump(struct conn *c)
{
	if (c->state == C_HEAD)
		step_head(c);
	else if (c->state == C_QUERY)
		step_query(c);
	else if (c->state == C_RAW)
		dial(c);
	else if (c->state == C_REPLY)
		step_reply(c);
	if (!c->closed && c->state == C_RELAY)
		step_relay(c);
	if (!c->closed)
		update_interest(c);
}

static void on_timer(struct loop *l, struct loop_timer *t)
{
	struct conn *c = t->arg;

	/* rst-wait polls: it is traced as it enters, not each 10 ms */
	if (c->fw->trace && c->state != C_RST_WAIT)
		fprintf(stderr, "sluice-forward: trace: %s: %s: deadline passed: %s\n", c->src,
			conn_states[c->state].name, conn_states[c->state].late);
	switch (c->state) {
	case C_HEAD:
	case C_QUERY:
		conn_close(c, false);
		return;
	case C_RAW:
		return;
	case C_REPLY:
		conn_close(c, true);
		return;
	case C_DIAL:
		dial(c); /* unanswered: a new socket */
		break;
	case C_RELAY:
		return;
	case C_RST_WAIT:
		if (outq(c->ufd) == 0 && outq(c->cfd) == 0) {
			conn_close(c, true);
			return;
		}
		if (loop_now(l) - c->rst_since >= FWD_RST_WAIT_MS) {
			conn_close(c, false); /* never acknowledged: a plain close */
			return;
		}
		loop_timer_set(l, t, 10, on_timer, c);
		return;
	}
	if (!c->closed)
		update_interest(c);
}

static void hung_up(struct conn *c, struct loop_io *io, struct relay_dir *d)
{
	loop_io_del(c->fw->loop, io);
	d->src_hup = true;
	conn_pump(c);
}

static void on_client(struct loop *l, struct loop_io *io, uint32_t events)
{
	struct conn *c = io->arg;

	c->cev |= events;
	if (c->state == C_DIAL && (events & EPOLLIN))
		c->c_woke = true;
	if ((events & (EPOLLERR | EPOLLHUP)) && !(io->events & (EPOLLIN | EPOLLOUT))) {
		if (c->state == C_RELAY && !(events & EPOLLERR)) {
			hung_up(c, io, &c->up);
			return;
		}
		conn_close(c, false);
		return;
	}
	conn_pump(c);
}

static void on_upstream(struct loop *l, struct loop_io *io, uint32_t events)
{
	struct conn *c = io->arg;

	c->uev |= events;
	if (c->state == C_DIAL) {
		dial_done(c, events);
		if (!c->closed)
			conn_pump(c);
		return;
	}
	if ((events & (EPOLLERR | EPOLLHUP)) && !(io->events & (EPOLLIN | EPOLLOUT))) {
		if (c->state == C_RELAY && !(events & EPOLLERR)) {
			hung_up(c, io, &c->down);
			return;
		}
		conn_close(c, true);
		return;
	}
	conn_pump(c);
}

void conn_addr_text(const struct sockaddr_storage *ss, char *out, size_t size)
{
	if (ss->ss_family == AF_INET) {
		inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)ss)->sin_addr, out,
			  (socklen_t)size);
		return;
	}
	const struct in6_addr *a = &((const struct sockaddr_in6 *)(const void *)ss)->sin6_addr;

	if (IN6_IS_ADDR_V4MAPPED(a))
		inet_ntop(AF_INET, &a->s6_addr[12], out, (socklen_t)size);
	else
		inet_ntop(AF_INET6, a, out, (socklen_t)size);
}

/*
 * A connection to a fake address (--transparent): the name and port it
 * stood for, from the connection's original destination (the run's nat
 * redirect). Port 80 is plain HTTP, its head made absolute-form; any other
 * port is a CONNECT to NAME:PORT written here, before a byte from either
 * side: the proxy intercepts it (TLS, judged by its SNI and Host) or, where
 * a tunnel grant names that name and port, relays it raw. Returns 0, or -1
 * (not a fake address of ours: the caller resets it).
 */
static int transparent_target(struct conn *c, int fd)
{
	struct sockaddr_storage dst;
	socklen_t len = sizeof(struct sockaddr_in);
	char hostport[HOST_PORT_TEXT_MAX + 1];
	const char *name;

	memset(&dst, 0, sizeof(dst));
	if (getsockopt(fd, SOL_IP, SO_ORIGINAL_DST, &dst, &len) == -1 ||
	    (name = fake_name(c->fw, &dst)) == NULL)
		return -1;
	snprintf(c->name, sizeof(c->name), "%s", name);
	c->port = ntohs(((struct sockaddr_in *)(void *)&dst)->sin_port);
	if (c->port == 80) {
		c->rewrite = true;
		return 0;
	}
	c->connect = true;
	if (host_port_format(hostport, sizeof(hostport), c->name, c->port) == -1)
		return -1;
	return buf_printf(&c->in, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", hostport, hostport);
}

void conn_accept(struct forwarder *fw, struct fwd_listener *ln, int fd,
		 const struct sockaddr_storage *peer, const char *as)
{
	struct conn *c = calloc(1, sizeof(*c));

	if (c == NULL) {
		close(fd);
		return;
	}
	c->fw = fw;
	c->ln = ln;
	c->cfd = fd;
	c->ufd = -1;
	c->cio.fd = c->uio.fd = -1;
	c->up.pipe[0] = c->up.pipe[1] = c->down.pipe[0] = c->down.pipe[1] = -1;
	/* --dns with a tag: the first query (and its length) may be the largest message */
	buf_init(&c->in, ln->kind == FWD_DNS_TCP && fw->dns_tag ? 2 + FWD_DNS_QUERY_MAX
								 : CONN_IO_MAX);
	buf_init(&c->out, CONN_IO_MAX);
	conn_addr_text(peer, c->src, sizeof(c->src));
	if (as != NULL)
		snprintf(c->as, sizeof(c->as), "%s", as);
	if (ln->kind == FWD_TRANSPARENT && transparent_target(c, fd) == -1) {
		sock_reset_on_close(fd);
		close(fd);
		buf_release(&c->in);
		buf_release(&c->out);
		free(c);
		return;
	}
	if (loop_io_add(fw->loop, &c->cio, fd, EPOLLIN, on_client, c) == -1) {
		close(fd);
		free(c);
		return;
	}
	fw->nconns++;
	c->state = ln->kind != FWD_DNS_TCP ? C_HEAD : fw->dns_tag ? C_QUERY : C_RAW;
	if (c->state != C_RAW)
		loop_timer_set(fw->loop, &c->timer, FWD_HEAD_TIMEOUT_MS, on_timer, c);
	conn_pump(c);
}
