/*
 * origin.c: the benchmark's origin server, one HTTP/1.1 responder on a
 * loopback port, fast enough that it is never the thing being measured.
 *
 *   origin 127.0.0.1:PORT [--tls 127.0.0.1:TLSPORT CERT KEY]
 *
 *   GET /small            200, a 100-byte body, keep-alive
 *   GET /big?bytes=N      200, N bytes streamed from a static buffer
 *   anything else         404 (400 and close if the head is unreadable)
 *
 * With --tls the same routes are also served over TLS (OpenSSL, TLS 1.2
 * or later, CERT a PEM chain and KEY its PEM key) on a second port: the
 * same loop, each connection's bytes going through its own SSL object.
 *
 * Single-threaded, edge-triggered epoll. Requests on one connection are
 * served in order. It deliberately does not read request bodies, speak
 * chunked, time anything out, ask for client certificates or listen beyond
 * 127.0.0.0/8: the load generator bounds every run and the run script kills
 * it by pid.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "bench.h"
#include "digits.h"
#include "tlsio.h"

#define ORIGIN_HEAD_MAX 8192              /* request head ceiling */
#define ORIGIN_OUT_MAX 512                /* response head (+ small body) */
#define ORIGIN_BIG_CHUNK (1024 * 1024)    /* bytes per write of a big body */
#define ORIGIN_BIG_MAX (64ULL << 30)      /* largest /big?bytes=N served */
#define ORIGIN_SMALL_BODY 100
#define ORIGIN_MAX_EVENTS 256

/* A listening socket; ctx is NULL for plain HTTP. */
struct listener {
	int fd;
	SSL_CTX *ctx; /* owned */
};

struct conn {
	int fd;
	SSL *ssl;                 /* TLS connections only; owned */
	bool handshaken;          /* the TLS handshake is done */
	char in[ORIGIN_HEAD_MAX]; /* unparsed request bytes */
	size_t inlen;
	char out[ORIGIN_OUT_MAX]; /* response head, and the whole /small body */
	size_t outlen;
	size_t outoff;            /* bytes of out already written */
	uint64_t body_left;       /* big-body bytes still to write */
	bool close_after;         /* close once the response is written */
};

static char big_body[ORIGIN_BIG_CHUNK];
static struct listener listeners[2]; /* plain, then TLS (fd -1 if none) */

static void conn_close(int ep, struct conn *c)
{
	if (c->ssl) {
		/* our own close (Connection: close) gets a close_notify */
		if (c->handshaken && c->close_after)
			SSL_shutdown(c->ssl);
		SSL_free(c->ssl);
		c->ssl = NULL;
	}
	epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	free(c);
}

static ssize_t conn_read(struct conn *c, void *p, size_t n)
{
	if (!c->ssl)
		return read(c->fd, p, n);
	ERR_clear_error();
	return tlsio_result(c->ssl, SSL_read(c->ssl, p, (int)n), NULL);
}

/* Write the first non-empty iov (TLS) or all of them (plain). */
static ssize_t conn_writev(struct conn *c, const struct iovec *iov, int niov)
{
	if (!c->ssl)
		return writev(c->fd, iov, niov);
	ERR_clear_error();
	return tlsio_result(c->ssl, SSL_write(c->ssl, iov[0].iov_base, (int)iov[0].iov_len),
			    NULL);
}

static bool conn_writing(const struct conn *c)
{
	return c->outoff < c->outlen || c->body_left > 0;
}

/* Value of header NAME in head[0..len), or NULL; *vlen its length. */
static const char *head_value(const char *head, size_t len, const char *name,
			      size_t *vlen)
{
	size_t nlen = strlen(name);
	const char *p = memchr(head, '\n', len);
	const char *end = head + len;

	while (p && p + 1 < end) {
		const char *line = p + 1;
		const char *eol = memchr(line, '\n', (size_t)(end - line));

		if (!eol)
			break;
		if ((size_t)(eol - line) > nlen && line[nlen] == ':' &&
		    strncasecmp(line, name, nlen) == 0) {
			const char *v = line + nlen + 1;
			const char *ve = eol;

			while (v < ve && (*v == ' ' || *v == '\t'))
				v++;
			while (ve > v && (ve[-1] == '\r' || ve[-1] == ' ' ||
					  ve[-1] == '\t'))
				ve--;
			*vlen = (size_t)(ve - v);
			return v;
		}
		p = eol;
	}
	return NULL;
}

/* Parse N from "/big?bytes=N"; false if malformed or over the ceiling. */
static bool big_size(const char *path, size_t plen, uint64_t *n)
{
	static const char prefix[] = "/big?bytes=";
	size_t pre = sizeof(prefix) - 1;
	if (plen <= pre || memcmp(path, prefix, pre) != 0)
		return false;
	return dec_parse(path + pre, plen - pre, ORIGIN_BIG_MAX, n) == 0;
}

/*
 * Turn the request head head[0..len) into a queued response. An unreadable
 * head queues a 400 and marks the connection to close.
 */
static void conn_respond(struct conn *c, const char *head, size_t len)
{
	const char *sp1, *sp2, *path, *v;
	size_t plen, vlen;
	bool http10;
	uint64_t n;
	int w;

	sp1 = memchr(head, ' ', len);
	sp2 = sp1 ? memchr(sp1 + 1, ' ', len - (size_t)(sp1 + 1 - head)) : NULL;
	if (!sp1 || !sp2 || (size_t)(head + len - sp2) < 9 ||
	    memcmp(sp2 + 1, "HTTP/1.", 7) != 0) {
		w = snprintf(c->out, sizeof(c->out),
			     "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n"
			     "Connection: close\r\n\r\n");
		c->outlen = (size_t)w;
		c->outoff = 0;
		c->close_after = true;
		return;
	}
	path = sp1 + 1;
	plen = (size_t)(sp2 - path);
	/* absolute-form, should a proxy forward it unchanged */
	if (plen > 7 && strncasecmp(path, "http://", 7) == 0) {
		const char *slash = memchr(path + 7, '/', plen - 7);

		plen = slash ? plen - (size_t)(slash - path) : 1;
		path = slash ? slash : "/";
	}
	http10 = sp2[8] == '0';
	v = head_value(head, len, "connection", &vlen);
	if (http10)
		c->close_after = !(v && bench_value_has(v, vlen, "keep-alive"));
	else
		c->close_after = v && bench_value_has(v, vlen, "close");

	c->outoff = 0;
	c->body_left = 0;
	if ((size_t)(sp1 - head) != 3 || memcmp(head, "GET", 3) != 0) {
		w = snprintf(c->out, sizeof(c->out),
			     "HTTP/1.1 405 Method Not Allowed\r\n"
			     "Content-Length: 0\r\nConnection: close\r\n\r\n");
		c->close_after = true;
	} else if (plen == 6 && memcmp(path, "/small", 6) == 0) {
		w = snprintf(c->out, sizeof(c->out),
			     "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
			     "Content-Length: %d\r\n%s\r\n%.*s",
			     ORIGIN_SMALL_BODY,
			     c->close_after ? "Connection: close\r\n" :
			     http10 ? "Connection: keep-alive\r\n" : "",
			     ORIGIN_SMALL_BODY, big_body);
	} else if (big_size(path, plen, &n)) {
		w = snprintf(c->out, sizeof(c->out),
			     "HTTP/1.1 200 OK\r\n"
			     "Content-Type: application/octet-stream\r\n"
			     "Content-Length: %" PRIu64 "\r\n%s\r\n", n,
			     c->close_after ? "Connection: close\r\n" :
			     http10 ? "Connection: keep-alive\r\n" : "");
		c->body_left = n;
	} else {
		w = snprintf(c->out, sizeof(c->out),
			     "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n%s\r\n",
			     c->close_after ? "Connection: close\r\n" : "");
	}
	c->outlen = (size_t)w;
}

/* Write what is queued; 0 when done or blocked, -1 on a socket error. */
static int conn_flush(struct conn *c)
{
	while (conn_writing(c)) {
		struct iovec iov[2];
		int niov = 0;
		ssize_t n;

		if (c->outoff < c->outlen) {
			iov[niov].iov_base = c->out + c->outoff;
			iov[niov].iov_len = c->outlen - c->outoff;
			niov++;
		}
		if (c->body_left > 0) {
			iov[niov].iov_base = big_body;
			iov[niov].iov_len = c->body_left < sizeof(big_body) ?
					    (size_t)c->body_left : sizeof(big_body);
			niov++;
		}
		n = conn_writev(c, iov, niov);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? 0 : -1;
		}
		if (c->outoff < c->outlen) {
			size_t h = c->outlen - c->outoff;

			if ((size_t)n < h) {
				c->outoff += (size_t)n;
				continue;
			}
			c->outoff = c->outlen;
			n -= (ssize_t)h;
		}
		c->body_left -= (uint64_t)n;
	}
	return 0;
}

/* Make all the progress the socket allows; returns -1 to close. */
static int conn_drive(struct conn *c)
{
	if (c->ssl && !c->handshaken) {
		int rc;

		ERR_clear_error();
		rc = SSL_accept(c->ssl);
		if (rc != 1)
			return tlsio_result(c->ssl, rc, NULL) == -1 && errno == EAGAIN ?
			       0 : -1;
		c->handshaken = true;
	}
	for (;;) {
		char *end;
		ssize_t n;

		if (conn_flush(c) == -1)
			return -1;
		if (conn_writing(c))
			return 0;
		if (c->close_after)
			return -1;
		end = memmem(c->in, c->inlen, "\r\n\r\n", 4);
		if (end) {
			size_t hlen = (size_t)(end + 4 - c->in);

			conn_respond(c, c->in, hlen);
			memmove(c->in, c->in + hlen, c->inlen - hlen);
			c->inlen -= hlen;
			continue;
		}
		if (c->inlen == sizeof(c->in))
			return -1;
		n = conn_read(c, c->in + c->inlen, sizeof(c->in) - c->inlen);
		if (n == 0)
			return -1;
		if (n == -1) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? 0 : -1;
		}
		c->inlen += (size_t)n;
	}
}

static void accept_all(int ep, const struct listener *lis)
{
	for (;;) {
		struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT | EPOLLET };
		struct conn *c;
		int one = 1;
		int fd;

		fd = accept4(lis->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd == -1) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno != EAGAIN)
				perror("origin: accept");
			return;
		}
		c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		c->fd = fd;
		if (lis->ctx) {
			c->ssl = SSL_new(lis->ctx);
			if (!c->ssl || SSL_set_fd(c->ssl, fd) != 1) {
				SSL_free(c->ssl);
				close(fd);
				free(c);
				continue;
			}
			SSL_set_accept_state(c->ssl);
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		ev.data.ptr = c;
		if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) == -1) {
			SSL_free(c->ssl);
			close(fd);
			free(c);
			continue;
		}
		if (conn_drive(c) == -1)
			conn_close(ep, c);
	}
}

/* A listening socket on ADDR:PORT, which must lie in 127.0.0.0/8. */
static int listen_on(const char *spec)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	char host[64];
	const char *colon = strrchr(spec, ':');
	unsigned long port;
	char *end;
	int one = 1;
	int fd;

	if (!colon || (size_t)(colon - spec) >= sizeof(host))
		goto bad;
	memcpy(host, spec, (size_t)(colon - spec));
	host[colon - spec] = '\0';
	port = strtoul(colon + 1, &end, 10);
	if (*end != '\0' || port == 0 || port > 65535 ||
	    inet_pton(AF_INET, host, &sin.sin_addr) != 1 ||
	    (ntohl(sin.sin_addr.s_addr) >> 24) != 127)
		goto bad;
	sin.sin_port = htons((uint16_t)port);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    listen(fd, 4096) == -1) {
		fprintf(stderr, "origin: listen %s: %s\n", spec, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
bad:
	fprintf(stderr, "origin: %s: want 127.x.y.z:PORT\n", spec);
	return -1;
}

/* The TLS listener's context: CERT (PEM chain) and KEY; NULL after a message. */
static SSL_CTX *tls_context(const char *cert, const char *key)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());

	if (!ctx)
		goto fail;
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF |
				 SSL_OP_NO_RENEGOTIATION);
	/* a blocked write is retried from wherever the queue then starts */
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
			      SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1 ||
	    SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1 ||
	    SSL_CTX_check_private_key(ctx) != 1)
		goto fail;
	return ctx;
fail:
	fprintf(stderr, "origin: TLS %s %s: %s\n", cert, key,
		ERR_reason_error_string(ERR_peek_last_error()) ?
		ERR_reason_error_string(ERR_peek_last_error()) : "failed");
	SSL_CTX_free(ctx);
	return NULL;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: origin 127.0.0.1:PORT [--tls 127.0.0.1:PORT CERT KEY]\n");
}

int main(int argc, char **argv)
{
	struct epoll_event evs[ORIGIN_MAX_EVENTS];
	int ep;

	if (argc != 2 && (argc != 6 || strcmp(argv[2], "--tls") != 0)) {
		usage();
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	memset(big_body, 'x', sizeof(big_body));
	listeners[0].fd = listen_on(argv[1]);
	listeners[1].fd = -1;
	if (listeners[0].fd == -1)
		return 1;
	if (argc == 6) {
		listeners[1].ctx = tls_context(argv[4], argv[5]);
		if (!listeners[1].ctx)
			return 1;
		listeners[1].fd = listen_on(argv[3]);
		if (listeners[1].fd == -1)
			return 1;
	}
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep == -1) {
		perror("origin: epoll_create1");
		return 1;
	}
	for (int i = 0; i < 2; i++) {
		struct epoll_event ev = { .events = EPOLLIN | EPOLLET };

		if (listeners[i].fd == -1)
			continue;
		ev.data.ptr = &listeners[i];
		if (epoll_ctl(ep, EPOLL_CTL_ADD, listeners[i].fd, &ev) == -1) {
			perror("origin: epoll_ctl");
			return 1;
		}
	}
	for (;;) {
		int n = epoll_wait(ep, evs, ORIGIN_MAX_EVENTS, -1);

		if (n == -1) {
			if (errno == EINTR)
				continue;
			perror("origin: epoll_wait");
			return 1;
		}
		for (int i = 0; i < n; i++) {
			void *p = evs[i].data.ptr;

			if (p == &listeners[0] || p == &listeners[1])
				accept_all(ep, p);
			else if (conn_drive(p) == -1)
				conn_close(ep, p);
		}
	}
}
