/*
 * load.c: the benchmark's load generator. One thread, one epoll loop, C
 * client slots each running operations back to back:
 *
 *   connect     new TCP connection, CONNECT (with --proxy), GET PATH, read the
 *               whole response, close; one operation per connection
 *   keepalive   GETs over a persistent connection, absolute-form through a
 *               proxy and origin-form direct; reconnects only when told to
 *               close (the reconnect then counts in that operation)
 *   throughput  one connection per slot (CONNECT first with --proxy) carrying
 *               GETs of PATH back to back; body bytes per second is the figure
 *
 * and the same over TLS, the target being a TLS server (with --proxy one
 * that intercepts: the handshake meets the proxy's leaf):
 *
 *   tls-connect     new TCP connection, CONNECT (with --proxy), TLS
 *                   handshake, GET PATH, close_notify, close; per operation
 *   tls-keepalive   one CONNECT and handshake per client connection, then
 *                   origin-form GETs inside it (the first operation on a
 *                   connection includes its CONNECT and handshake)
 *   tls-throughput  as throughput, inside TLS
 *
 * TLS verifies the server against --cafile FILE (required) and the name
 * --sni NAME (default: the target's address). A host name is sent as SNI and
 * checked against the certificate's DNS names; an IP address is checked
 * against its IP addresses and, as curl and browsers do (RFC 6066 section 3
 * has no literal addresses in SNI), not sent. ALPN offers http/1.1. Every
 * handshake is a full one: sessions are never resumed.
 *
 *   load MODE --target ADDR:PORT [--proxy ADDR:PORT] [-c CONCURRENCY]
 *        [-n MAX_OPS] [-t MAX_SECONDS] [--path PATH] [--op-timeout-ms MS]
 *        [--cafile FILE] [--sni NAME]
 *
 * Prints one line of key=value figures on stdout (first errors go to stderr):
 *
 *   mode=connect c=32 ops=1234 secs=5.000 ops_per_s=246.8 p50_us=380
 *   p99_us=1020 bytes=123400 bytes_per_s=24680 errors=0 retries=0
 *
 * A run stops at -n operations started or -t seconds, whichever comes first;
 * operations still in flight then are dropped, not counted. An operation
 * that makes no progress for --op-timeout-ms is an error, as is any non-2xx
 * status or framing it cannot follow; a request the server closed an idle
 * keep-alive connection under is resent once on a new connection and counted
 * in retries. It connects only inside 127.0.0.0/8.
 * It parses responses only as far as framing needs (status line,
 * Content-Length, chunked, Connection) and does not look at bodies.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
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
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "bench.h"
#include "digits.h"
#include "tlsio.h"

#define LOAD_HEAD_MAX 8192              /* response head ceiling */
#define LOAD_REQ_MAX 1024               /* a request head we send */
#define LOAD_READ_CHUNK (256 * 1024)    /* bytes per read() */
#define LOAD_MAX_CONCURRENCY 4096
#define LOAD_MAX_OPS 10000000ULL        /* also the latency array's ceiling */
#define LOAD_MAX_SECONDS 3600
#define LOAD_MAX_EVENTS 256
#define LOAD_REPORT_ERRORS 5            /* errors described on stderr */

enum mode {
	MODE_CONNECT,
	MODE_KEEPALIVE,
	MODE_THROUGHPUT,
};

enum slot_state {
	SLOT_IDLE,         /* no connection */
	SLOT_CONNECTING,   /* TCP handshake in flight */
	SLOT_SEND_CONNECT, /* writing the CONNECT head */
	SLOT_READ_CONNECT, /* reading the proxy's reply to CONNECT */
	SLOT_TLS_HANDSHAKE, /* TLS modes: the client handshake in flight */
	SLOT_SEND_REQUEST, /* writing the GET head */
	SLOT_READ_HEAD,    /* reading the response head */
	SLOT_READ_BODY,    /* reading the response body */
};

enum body_kind {
	BODY_NONE,
	BODY_LENGTH,      /* resp.left bytes to go */
	BODY_CHUNKED,     /* resp.chunk tracks the framing */
	BODY_UNTIL_CLOSE, /* no framing: the body ends at EOF */
};

enum chunk_state {
	CHUNK_SIZE,         /* hex digits of a chunk size */
	CHUNK_EXT,          /* chunk extension, skipped up to CR */
	CHUNK_SIZE_LF,      /* LF ending the size line */
	CHUNK_DATA,         /* resp.left data bytes to go */
	CHUNK_DATA_CR,      /* CRLF after the data */
	CHUNK_DATA_LF,
	CHUNK_TRAILER,      /* start of a trailer line or of the final CRLF */
	CHUNK_TRAILER_LINE, /* inside a trailer line, skipped up to LF */
	CHUNK_END_LF,       /* LF of the final CRLF */
	CHUNK_DONE,
};

/* What is known of the response being read; reset per response. */
struct resp {
	char head[LOAD_HEAD_MAX];
	size_t headlen;          /* bytes in head; the exact head once complete */
	int status;              /* 100..999 once the head is parsed */
	bool http10;
	bool close;              /* the connection ends after this response */
	bool has_length;
	bool chunked;
	enum body_kind body;
	uint64_t left;           /* BODY_LENGTH and CHUNK_DATA: bytes to go */
	enum chunk_state chunk;
	bool chunk_digits;       /* CHUNK_SIZE: at least one hex digit seen */
};

struct slot {
	int fd;                  /* -1 when SLOT_IDLE */
	SSL *ssl;                /* TLS modes, once the handshake began; owned */
	enum slot_state state;
	const char *out;         /* head being written: not owned */
	size_t outlen;
	size_t outoff;           /* bytes of out already written */
	uint64_t op_start;       /* ns, monotonic */
	uint64_t deadline;       /* ns; pushed back by every byte received */
	bool reused;             /* the connection already carried a response */
	struct resp resp;
};

struct load {
	enum mode mode;
	bool via_proxy;
	SSL_CTX *tls;                /* TLS modes only; owned */
	const char *sni;             /* TLS: the name verified (and sent if not an IP) */
	bool sni_is_ip;
	struct sockaddr_in dial;     /* the proxy with --proxy, else the target */
	char connect_req[LOAD_REQ_MAX];
	size_t connect_len;
	char get_req[LOAD_REQ_MAX];
	size_t get_len;
	int ep;
	struct slot *slots;          /* nslots of them; owned */
	int nslots;
	uint64_t max_ops;
	uint64_t started;            /* operations begun */
	uint64_t done;               /* operations completed without error */
	uint64_t errors;
	uint64_t retries;            /* requests resent on a fresh connection */
	uint64_t bytes;              /* response body bytes received */
	uint64_t end;                /* ns: no operation starts after this */
	uint64_t op_timeout;         /* ns without progress before an error */
	uint32_t *lat;               /* µs per completed operation; owned */
	size_t nlat;
	size_t latcap;
};

static char scratch[LOAD_READ_CHUNK];

static void slot_open(struct load *l, struct slot *s);

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static bool value_has(const char *v, size_t vlen, const char *token)
{
	size_t tlen = strlen(token);

	for (size_t i = 0; i + tlen <= vlen; i++)
		if (strncasecmp(v + i, token, tlen) == 0)
			return true;
	return false;
}

static void resp_reset(struct resp *r)
{
	r->headlen = 0;
	r->status = 0;
	r->http10 = false;
	r->close = false;
	r->has_length = false;
	r->chunked = false;
	r->body = BODY_NONE;
	r->left = 0;
	r->chunk = CHUNK_SIZE;
	r->chunk_digits = false;
}

/* One header line name[0..nlen): value[0..vlen); -1 if it breaks framing. */
static int resp_header(struct resp *r, const char *name, size_t nlen,
		       const char *v, size_t vlen)
{
	if (nlen == 14 && strncasecmp(name, "content-length", 14) == 0) {
		uint64_t n;

		if (vlen > 18 || dec_parse(v, vlen, UINT64_MAX, &n) == -1)
			return -1;
		if (r->has_length && r->left != n)
			return -1;
		r->has_length = true;
		r->left = n;
	} else if (nlen == 17 &&
		   strncasecmp(name, "transfer-encoding", 17) == 0) {
		if (!value_has(v, vlen, "chunked"))
			return -1;
		r->chunked = true;
	} else if (nlen == 10 && strncasecmp(name, "connection", 10) == 0) {
		if (value_has(v, vlen, "close"))
			r->close = true;
		else if (r->http10 && value_has(v, vlen, "keep-alive"))
			r->close = false;
	}
	return 0;
}

/* Parse the complete head in r->head[0..headlen); 0, or -1 if malformed. */
static int resp_parse_head(struct resp *r)
{
	const char *p = r->head;
	const char *end = r->head + r->headlen;
	const char *eol;

	if (r->headlen < 14 || memcmp(p, "HTTP/1.", 7) != 0 ||
	    (p[7] != '0' && p[7] != '1') || p[8] != ' ' ||
	    p[9] < '1' || p[9] > '9' || p[10] < '0' || p[10] > '9' ||
	    p[11] < '0' || p[11] > '9' || (p[12] != ' ' && p[12] != '\r'))
		return -1;
	r->status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
	r->http10 = p[7] == '0';
	r->close = r->http10;
	eol = memchr(p, '\n', r->headlen);
	while (eol && eol + 1 < end) {
		const char *line = eol + 1;
		const char *colon, *v, *ve;

		eol = memchr(line, '\n', (size_t)(end - line));
		if (!eol || eol - line <= 1)
			break; /* the empty line ending the head */
		colon = memchr(line, ':', (size_t)(eol - line));
		if (!colon || colon == line)
			return -1;
		v = colon + 1;
		ve = eol;
		while (v < ve && (*v == ' ' || *v == '\t'))
			v++;
		while (ve > v && (ve[-1] == '\r' || ve[-1] == ' ' ||
				  ve[-1] == '\t'))
			ve--;
		if (resp_header(r, line, (size_t)(colon - line), v,
				(size_t)(ve - v)) == -1)
			return -1;
	}
	return 0;
}

/*
 * Feed received bytes p[0..n) to the head being read. Returns the bytes that
 * belong to the head once it is complete and parsed, -2 if all were taken and
 * more are needed, -1 if the head is malformed or outgrows LOAD_HEAD_MAX.
 */
static ssize_t resp_head_feed(struct resp *r, const char *p, size_t n)
{
	size_t old = r->headlen;
	size_t room = sizeof(r->head) - old;
	size_t take = n < room ? n : room;
	size_t from = old > 3 ? old - 3 : 0;
	const char *end;

	memcpy(r->head + old, p, take);
	r->headlen += take;
	end = memmem(r->head + from, r->headlen - from, "\r\n\r\n", 4);
	if (!end)
		return r->headlen == sizeof(r->head) ? -1 : -2;
	r->headlen = (size_t)(end + 4 - r->head);
	if (resp_parse_head(r) == -1)
		return -1;
	return (ssize_t)(r->headlen - old);
}

/* Choose how the body of a parsed (non-CONNECT) response is framed. */
static void resp_frame_body(struct resp *r)
{
	if (r->status == 204 || r->status == 304)
		r->body = BODY_NONE;
	else if (r->chunked)
		r->body = BODY_CHUNKED;
	else if (r->has_length)
		r->body = r->left > 0 ? BODY_LENGTH : BODY_NONE;
	else
		r->body = BODY_UNTIL_CLOSE;
	if (r->body == BODY_UNTIL_CLOSE)
		r->close = true;
}

/*
 * Feed p[0..n) to a chunked body. Returns the bytes consumed (all of them
 * unless the body ends inside p), or -1 on malformed framing; adds the chunk
 * data bytes to *data. r->chunk is CHUNK_DONE once the body is complete.
 */
static ssize_t resp_chunk_feed(struct resp *r, const char *p, size_t n,
			       uint64_t *data)
{
	size_t i = 0;

	while (i < n && r->chunk != CHUNK_DONE) {
		char ch = p[i];
		size_t take;
		int d;

		switch (r->chunk) {
		case CHUNK_SIZE:
			d = hex_value((unsigned char)ch);
			if (d >= 0) {
				if (r->left > (UINT64_MAX >> 8))
					return -1;
				r->left = r->left * 16 + (uint64_t)d;
				r->chunk_digits = true;
			} else if (!r->chunk_digits) {
				return -1;
			} else if (ch == ';' || ch == ' ' || ch == '\t') {
				r->chunk = CHUNK_EXT;
			} else if (ch == '\r') {
				r->chunk = CHUNK_SIZE_LF;
			} else {
				return -1;
			}
			i++;
			break;
		case CHUNK_EXT:
			if (ch == '\r')
				r->chunk = CHUNK_SIZE_LF;
			else if (ch == '\n')
				return -1;
			i++;
			break;
		case CHUNK_SIZE_LF:
			if (ch != '\n')
				return -1;
			r->chunk = r->left > 0 ? CHUNK_DATA : CHUNK_TRAILER;
			i++;
			break;
		case CHUNK_DATA:
			take = n - i;
			if (take > r->left)
				take = (size_t)r->left;
			r->left -= take;
			*data += take;
			i += take;
			if (r->left == 0)
				r->chunk = CHUNK_DATA_CR;
			break;
		case CHUNK_DATA_CR:
			if (ch != '\r')
				return -1;
			r->chunk = CHUNK_DATA_LF;
			i++;
			break;
		case CHUNK_DATA_LF:
			if (ch != '\n')
				return -1;
			r->chunk = CHUNK_SIZE;
			r->chunk_digits = false;
			i++;
			break;
		case CHUNK_TRAILER:
			r->chunk = ch == '\r' ? CHUNK_END_LF : CHUNK_TRAILER_LINE;
			i++;
			break;
		case CHUNK_TRAILER_LINE:
			if (ch == '\n')
				r->chunk = CHUNK_TRAILER;
			i++;
			break;
		case CHUNK_END_LF:
			if (ch != '\n')
				return -1;
			r->chunk = CHUNK_DONE;
			i++;
			break;
		case CHUNK_DONE:
			break;
		}
	}
	return (ssize_t)i;
}

static bool load_may_start(const struct load *l, uint64_t now)
{
	return l->started < l->max_ops && now < l->end;
}

static void slot_close(struct slot *s)
{
	if (s->ssl) {
		SSL_free(s->ssl);
		s->ssl = NULL;
	}
	if (s->fd != -1)
		close(s->fd); /* also leaves the epoll set */
	s->fd = -1;
	s->state = SLOT_IDLE;
}

/* End the operation in flight as an error; always returns -1. */
static int slot_fail(struct load *l, struct slot *s, const char *what,
		     int err)
{
	l->errors++;
	if (l->errors <= LOAD_REPORT_ERRORS) {
		unsigned long e = ERR_peek_last_error();
		char tls[256] = "";

		if (e)
			ERR_error_string_n(e, tls, sizeof(tls));
		fprintf(stderr, "load: %s%s%s%s%s\n", what, err ? ": " : "",
			err ? strerror(err) : "", e ? ": " : "", tls);
	}
	ERR_clear_error();
	if (l->errors == LOAD_REPORT_ERRORS)
		fprintf(stderr, "load: further errors only counted\n");
	slot_close(s);
	return -1;
}

static void slot_send(struct slot *s, enum slot_state state, const char *out,
		      size_t len)
{
	s->state = state;
	s->out = out;
	s->outlen = len;
	s->outoff = 0;
}

/* Start the request proper on a connection that is (or just got) ready. */
static void slot_send_request(struct load *l, struct slot *s)
{
	slot_send(s, SLOT_SEND_REQUEST, l->get_req, l->get_len);
}

/* The operation in flight completed; start the next on this connection. */
static void slot_op_done(struct load *l, struct slot *s)
{
	uint64_t now = now_ns();
	uint64_t us = (now - s->op_start) / 1000;

	l->done++;
	if (l->nlat < l->latcap)
		l->lat[l->nlat++] = us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
	if (l->mode == MODE_CONNECT || s->resp.close ||
	    !load_may_start(l, now)) {
		/* a TLS client says goodbye as curl does; nothing waits for it */
		if (s->ssl && l->mode == MODE_CONNECT)
			SSL_shutdown(s->ssl);
		slot_close(s);
		return;
	}
	l->started++;
	s->op_start = now;
	s->deadline = now + l->op_timeout;
	s->reused = true;
	slot_send_request(l, s);
}

/*
 * True if the connection died under a request it had carried others before,
 * with no byte of the answer seen: the server closed an idle persistent
 * connection (tinyproxy does after every response without saying so), and a
 * client resends the request on a new one (RFC 9112 section 9.3.1).
 */
static bool slot_may_retry(const struct slot *s)
{
	return s->reused && (s->state == SLOT_SEND_REQUEST ||
			     (s->state == SLOT_READ_HEAD && s->resp.headlen == 0));
}

/* Resend the operation in flight on a fresh connection; its clock runs on. */
static void slot_retry(struct load *l, struct slot *s)
{
	l->retries++;
	slot_close(s);
	slot_open(l, s);
}

static ssize_t slot_recv(struct slot *s, void *p, size_t n)
{
	if (!s->ssl)
		return read(s->fd, p, n);
	ERR_clear_error();
	return tlsio_result(s->ssl, SSL_read(s->ssl, p, (int)n), NULL);
}

static ssize_t slot_xmit(struct slot *s, const void *p, size_t n)
{
	if (!s->ssl)
		return send(s->fd, p, n, MSG_NOSIGNAL);
	ERR_clear_error();
	return tlsio_result(s->ssl, SSL_write(s->ssl, p, (int)n), NULL);
}

/* Start the client handshake on the slot's connection; 0, or -1 (failed). */
static int slot_tls_begin(struct load *l, struct slot *s)
{
	X509_VERIFY_PARAM *vp;

	s->ssl = SSL_new(l->tls);
	if (!s->ssl || SSL_set_fd(s->ssl, s->fd) != 1)
		return slot_fail(l, s, "tls setup", 0);
	vp = SSL_get0_param(s->ssl);
	if (l->sni_is_ip) {
		if (X509_VERIFY_PARAM_set1_ip_asc(vp, l->sni) != 1)
			return slot_fail(l, s, "tls setup", 0);
	} else if (SSL_set_tlsext_host_name(s->ssl, l->sni) != 1 ||
		   X509_VERIFY_PARAM_set1_host(vp, l->sni, 0) != 1) {
		return slot_fail(l, s, "tls setup", 0);
	}
	SSL_set_connect_state(s->ssl);
	s->state = SLOT_TLS_HANDSHAKE;
	return 0;
}

/*
 * Feed n received bytes to whatever the slot is reading. Returns 0, or -1
 * when the operation failed (the slot is then closed).
 */
static int slot_consume(struct load *l, struct slot *s, const char *p,
			size_t n)
{
	while (n > 0) {
		char what[32];
		ssize_t used;

		switch (s->state) {
		case SLOT_READ_CONNECT:
		case SLOT_READ_HEAD:
			used = resp_head_feed(&s->resp, p, n);
			if (used == -2)
				return 0;
			if (used == -1)
				return slot_fail(l, s, "malformed response head",
						 0);
			p += used;
			n -= (size_t)used;
			if (s->resp.status < 200 || s->resp.status > 299) {
				if (s->resp.status >= 100 && s->resp.status < 200 &&
				    s->state == SLOT_READ_HEAD) {
					resp_reset(&s->resp); /* interim */
					break;
				}
				snprintf(what, sizeof(what), "status %d%s",
					 s->resp.status,
					 s->state == SLOT_READ_CONNECT ?
					 " to CONNECT" : "");
				return slot_fail(l, s, what, 0);
			}
			if (s->state == SLOT_READ_CONNECT) {
				/* 2xx to CONNECT: a tunnel, whatever headers say */
				if (n > 0)
					return slot_fail(l, s,
							 "bytes before the request", 0);
				if (l->tls)
					return slot_tls_begin(l, s);
				slot_send_request(l, s);
				return 0;
			}
			resp_frame_body(&s->resp);
			if (s->resp.body == BODY_NONE) {
				if (n > 0)
					return slot_fail(l, s,
							 "bytes past the response", 0);
				slot_op_done(l, s);
				return 0;
			}
			s->state = SLOT_READ_BODY;
			break;
		case SLOT_READ_BODY:
			if (s->resp.body == BODY_CHUNKED) {
				used = resp_chunk_feed(&s->resp, p, n, &l->bytes);
				if (used == -1)
					return slot_fail(l, s, "malformed chunked body",
							 0);
			} else {
				used = (ssize_t)n;
				if (s->resp.body == BODY_LENGTH &&
				    (uint64_t)used > s->resp.left)
					used = (ssize_t)s->resp.left;
				l->bytes += (uint64_t)used;
				if (s->resp.body == BODY_LENGTH)
					s->resp.left -= (uint64_t)used;
			}
			p += used;
			n -= (size_t)used;
			if ((s->resp.body == BODY_CHUNKED &&
			     s->resp.chunk == CHUNK_DONE) ||
			    (s->resp.body == BODY_LENGTH && s->resp.left == 0)) {
				if (n > 0)
					return slot_fail(l, s,
							 "bytes past the response", 0);
				slot_op_done(l, s);
				return 0;
			}
			break;
		default:
			return slot_fail(l, s, "bytes while not reading", 0);
		}
	}
	return 0;
}

/* Write the slot's pending head: 1 when written, 0 if blocked, -1 error. */
static int slot_write(struct slot *s)
{
	while (s->outoff < s->outlen) {
		ssize_t n = slot_xmit(s, s->out + s->outoff,
				      s->outlen - s->outoff);

		if (n == -1) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? 0 : -1;
		}
		s->outoff += (size_t)n;
	}
	return 1;
}

/*
 * Make all the progress the socket allows. events are the epoll events that
 * woke the slot (0 when not woken by epoll); only CONNECTING looks at them.
 */
static void slot_drive(struct load *l, struct slot *s, uint32_t events)
{
	for (;;) {
		socklen_t elen = sizeof(int);
		int err = 0;
		ssize_t n;
		int rc;

		switch (s->state) {
		case SLOT_IDLE:
			return;
		case SLOT_CONNECTING:
			if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
				return;
			if (getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err,
				       &elen) == -1)
				err = errno;
			if (err) {
				slot_fail(l, s, "connect", err);
				return;
			}
			if (l->via_proxy &&
			    (l->mode != MODE_KEEPALIVE || l->tls))
				slot_send(s, SLOT_SEND_CONNECT, l->connect_req,
					  l->connect_len);
			else if (l->tls) {
				if (slot_tls_begin(l, s) == -1)
					return;
			} else
				slot_send_request(l, s);
			break;
		case SLOT_TLS_HANDSHAKE:
			ERR_clear_error();
			if (tlsio_result(s->ssl, SSL_do_handshake(s->ssl), NULL) == -1 &&
			    errno == EAGAIN)
				return;
			if (SSL_is_init_finished(s->ssl)) {
				s->deadline = now_ns() + l->op_timeout;
				slot_send_request(l, s);
				break;
			}
			if (SSL_get_verify_result(s->ssl) != X509_V_OK) {
				char what[160];

				snprintf(what, sizeof(what), "tls verify: %s",
					 X509_verify_cert_error_string(
						 SSL_get_verify_result(s->ssl)));
				slot_fail(l, s, what, 0);
			} else {
				slot_fail(l, s, "tls handshake", 0);
			}
			return;
		case SLOT_SEND_CONNECT:
		case SLOT_SEND_REQUEST:
			rc = slot_write(s);
			if (rc == -1 && slot_may_retry(s) &&
			    (errno == EPIPE || errno == ECONNRESET)) {
				slot_retry(l, s);
				return;
			}
			if (rc == -1) {
				slot_fail(l, s, "send", errno);
				return;
			}
			if (rc == 0)
				return;
			s->state = s->state == SLOT_SEND_CONNECT ?
				   SLOT_READ_CONNECT : SLOT_READ_HEAD;
			resp_reset(&s->resp);
			break;
		case SLOT_READ_CONNECT:
		case SLOT_READ_HEAD:
		case SLOT_READ_BODY:
			n = slot_recv(s, scratch, sizeof(scratch));
			if (n == -1) {
				if (errno == EINTR)
					continue;
				if (errno == ECONNRESET && slot_may_retry(s))
					slot_retry(l, s);
				else if (errno != EAGAIN)
					slot_fail(l, s, "read", errno);
				return;
			}
			if (n == 0) {
				if (slot_may_retry(s))
					slot_retry(l, s);
				else if (s->state == SLOT_READ_BODY &&
				    s->resp.body == BODY_UNTIL_CLOSE)
					slot_op_done(l, s);
				else
					slot_fail(l, s, "connection closed early",
						  0);
				return;
			}
			s->deadline = now_ns() + l->op_timeout;
			if (slot_consume(l, s, scratch, (size_t)n) == -1)
				return;
			break;
		}
	}
}

/*
 * Open the slot's connection and drive it as far as it goes. A new socket
 * gets fresh epoll events, so the caller must not drive it with old ones.
 */
static void slot_open(struct load *l, struct slot *s)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT | EPOLLET };
	int one = 1;

	s->reused = false;
	s->deadline = now_ns() + l->op_timeout;
	s->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->fd == -1) {
		slot_fail(l, s, "socket", errno);
		return;
	}
	setsockopt(s->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	ev.data.ptr = s;
	if (epoll_ctl(l->ep, EPOLL_CTL_ADD, s->fd, &ev) == -1) {
		slot_fail(l, s, "epoll_ctl", errno);
		return;
	}
	s->state = SLOT_CONNECTING;
	if (connect(s->fd, (struct sockaddr *)&l->dial, sizeof(l->dial)) == 0) {
		slot_drive(l, s, EPOLLOUT);
		return;
	}
	if (errno != EINPROGRESS)
		slot_fail(l, s, "connect", errno);
}

/* Begin an operation on a fresh connection. */
static void slot_start(struct load *l, struct slot *s, uint64_t now)
{
	l->started++;
	s->op_start = now;
	slot_open(l, s);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a;
	uint32_t y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/* Nearest-rank percentile of the sorted latencies; 0 when there are none. */
static uint32_t percentile(const uint32_t *sorted, size_t n, unsigned pct)
{
	size_t rank;

	if (n == 0)
		return 0;
	rank = (n * pct + 99) / 100;
	return sorted[rank > 0 ? rank - 1 : 0];
}

/* Run until the bounds are reached; returns 0, or -1 if epoll failed. */
static int load_run(struct load *l, uint64_t *elapsed)
{
	struct epoll_event evs[LOAD_MAX_EVENTS];
	uint64_t t0 = now_ns();
	uint64_t now = t0;

	for (;;) {
		bool busy = false;
		int wait_ms, n;

		for (int i = 0; i < l->nslots; i++) {
			struct slot *s = &l->slots[i];

			if (s->state != SLOT_IDLE && now >= s->deadline)
				slot_fail(l, s, "operation timed out", 0);
			if (s->state == SLOT_IDLE && load_may_start(l, now))
				slot_start(l, s, now);
			busy |= s->state != SLOT_IDLE;
		}
		if (!busy && !load_may_start(l, now))
			break;
		wait_ms = (int)((l->end - now) / 1000000) + 1;
		if (wait_ms > 50)
			wait_ms = 50;
		n = epoll_wait(l->ep, evs, LOAD_MAX_EVENTS, wait_ms);
		if (n == -1 && errno != EINTR) {
			perror("load: epoll_wait");
			return -1;
		}
		for (int i = 0; i < n; i++)
			slot_drive(l, evs[i].data.ptr, evs[i].events);
		now = now_ns();
		if (now >= l->end)
			break;
	}
	*elapsed = now - t0;
	return 0;
}

/* ADDR:PORT inside 127.0.0.0/8 (bench.h); 0, or -1 with a message. */
static int parse_addr(const char *spec, struct sockaddr_in *sin)
{
	if (bench_loopback_addr(spec, sin) == 0)
		return 0;
	fprintf(stderr, "load: %s: want ADDR:PORT in 127.0.0.0/8\n", spec);
	return -1;
}

/* Parse a decimal in [min, max]; 0, or -1 with a message. */
static int parse_num(const char *what, const char *s, uint64_t min,
		     uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end != '\0' || s[0] == '-' || v < min ||
	    v > max) {
		fprintf(stderr, "load: %s: want %" PRIu64 "..%" PRIu64 "\n",
			what, min, max);
		return -1;
	}
	*out = v;
	return 0;
}

/* Format both request heads; 0, or -1 if they would not fit. */
static int load_format_requests(struct load *l, const char *target,
				const char *path)
{
	int w;

	w = snprintf(l->connect_req, sizeof(l->connect_req),
		     "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target);
	if (w < 0 || (size_t)w >= sizeof(l->connect_req))
		return -1;
	l->connect_len = (size_t)w;
	if (l->via_proxy && l->mode == MODE_KEEPALIVE && !l->tls)
		w = snprintf(l->get_req, sizeof(l->get_req),
			     "GET http://%s%s HTTP/1.1\r\nHost: %s\r\n\r\n",
			     target, path, target);
	else
		w = snprintf(l->get_req, sizeof(l->get_req),
			     "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", path, target);
	if (w < 0 || (size_t)w >= sizeof(l->get_req))
		return -1;
	l->get_len = (size_t)w;
	return 0;
}

/*
 * The client context of the TLS modes: TLS 1.2 or later, the server
 * verified against cafile, ALPN http/1.1, no session cache (every handshake
 * a full one). NULL after a message.
 */
static SSL_CTX *load_tls_context(const char *cafile)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());

	if (!ctx)
		goto fail;
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF |
				 SSL_OP_NO_TICKET);
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	/* fewer read(2)s for bulk bodies: whole socket buffers at a time */
	SSL_CTX_set_read_ahead(ctx, 1);
	SSL_CTX_set_default_read_buffer_len(ctx, 64 * 1024);
	if (SSL_CTX_load_verify_locations(ctx, cafile, NULL) != 1 ||
	    SSL_CTX_set_alpn_protos(ctx, (const unsigned char *)"\x08http/1.1",
				    9) != 0)
		goto fail;
	return ctx;
fail:
	fprintf(stderr, "load: --cafile %s: %s\n", cafile,
		ERR_reason_error_string(ERR_peek_last_error()) ?
		ERR_reason_error_string(ERR_peek_last_error()) : "failed");
	SSL_CTX_free(ctx);
	return NULL;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: load [tls-]connect|[tls-]keepalive|[tls-]throughput\n"
		"            --target ADDR:PORT [--proxy ADDR:PORT] [-c CONCURRENCY]\n"
		"            [-n MAX_OPS] [-t MAX_SECONDS] [--path PATH]\n"
		"            [--op-timeout-ms MS] [--cafile FILE] [--sni NAME]\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "target", required_argument, NULL, 'T' },
		{ "proxy", required_argument, NULL, 'P' },
		{ "path", required_argument, NULL, 'p' },
		{ "op-timeout-ms", required_argument, NULL, 'o' },
		{ "cafile", required_argument, NULL, 'A' },
		{ "sni", required_argument, NULL, 'S' },
		{ NULL, 0, NULL, 0 },
	};
	static const char *const mode_names[] = { "connect", "keepalive",
						  "throughput" };
	static struct load l;
	const char *target = NULL, *proxy = NULL, *path = NULL;
	const char *cafile = NULL, *sni = NULL, *mode_arg;
	char target_host[64];
	struct in_addr ip;
	uint64_t conc = 1, secs = 5, timeout_ms = 5000, elapsed;
	struct sockaddr_in target_sin;
	double dsecs;
	int ret = 1;
	int opt;

	l.max_ops = 100000;
	if (argc < 2) {
		usage();
		return 2;
	}
	mode_arg = argv[1];
	if (strncmp(mode_arg, "tls-", 4) == 0)
		mode_arg += 4;
	if (strcmp(mode_arg, "connect") == 0)
		l.mode = MODE_CONNECT;
	else if (strcmp(mode_arg, "keepalive") == 0)
		l.mode = MODE_KEEPALIVE;
	else if (strcmp(mode_arg, "throughput") == 0)
		l.mode = MODE_THROUGHPUT;
	else {
		usage();
		return 2;
	}
	optind = 2;
	while ((opt = getopt_long(argc, argv, "c:n:t:", opts, NULL)) != -1) {
		switch (opt) {
		case 'T':
			target = optarg;
			break;
		case 'P':
			proxy = optarg;
			break;
		case 'p':
			path = optarg;
			break;
		case 'A':
			cafile = optarg;
			break;
		case 'S':
			sni = optarg;
			break;
		case 'o':
			if (parse_num("--op-timeout-ms", optarg, 1, 600000,
				      &timeout_ms) == -1)
				return 2;
			break;
		case 'c':
			if (parse_num("-c", optarg, 1, LOAD_MAX_CONCURRENCY,
				      &conc) == -1)
				return 2;
			break;
		case 'n':
			if (parse_num("-n", optarg, 1, LOAD_MAX_OPS,
				      &l.max_ops) == -1)
				return 2;
			break;
		case 't':
			if (parse_num("-t", optarg, 1, LOAD_MAX_SECONDS,
				      &secs) == -1)
				return 2;
			break;
		default:
			usage();
			return 2;
		}
	}
	if (optind != argc || !target) {
		usage();
		return 2;
	}
	if (!path)
		path = l.mode == MODE_THROUGHPUT ? "/big?bytes=1073741824" :
		       "/small";
	if (path[0] != '/' || strpbrk(path, " \r\n")) {
		fprintf(stderr, "load: --path: want /PATH without blanks\n");
		return 2;
	}
	if (parse_addr(target, &target_sin) == -1 ||
	    (proxy && parse_addr(proxy, &l.dial) == -1))
		return 2;
	if (!proxy)
		l.dial = target_sin;
	l.via_proxy = proxy != NULL;
	if (mode_arg != argv[1]) {
		if (!cafile) {
			fprintf(stderr, "load: %s: --cafile is required\n",
				argv[1]);
			return 2;
		}
		if (!sni) {
			/* parse_addr accepted it: ADDR:PORT, ADDR short */
			size_t hl = (size_t)(strrchr(target, ':') - target);

			memcpy(target_host, target, hl);
			target_host[hl] = '\0';
			sni = target_host;
		}
		l.sni = sni;
		l.sni_is_ip = inet_pton(AF_INET, sni, &ip) == 1;
		l.tls = load_tls_context(cafile);
		if (!l.tls)
			return 1;
	}
	if (load_format_requests(&l, target, path) == -1) {
		fprintf(stderr, "load: --path: too long\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);

	l.nslots = (int)conc;
	l.op_timeout = timeout_ms * 1000000ULL;
	l.latcap = (size_t)l.max_ops;
	l.lat = calloc(l.latcap, sizeof(*l.lat));
	if (!l.lat) {
		perror("load: latency array");
		goto out_free_tls;
	}
	l.slots = calloc((size_t)l.nslots, sizeof(*l.slots));
	if (!l.slots) {
		perror("load: slots");
		goto out_free_lat;
	}
	for (int i = 0; i < l.nslots; i++) {
		l.slots[i].fd = -1;
		l.slots[i].state = SLOT_IDLE;
	}
	l.ep = epoll_create1(EPOLL_CLOEXEC);
	if (l.ep == -1) {
		perror("load: epoll_create1");
		goto out_free_slots;
	}
	l.end = now_ns() + secs * 1000000000ULL;
	if (load_run(&l, &elapsed) == -1)
		goto out_close_ep;

	qsort(l.lat, l.nlat, sizeof(*l.lat), cmp_u32);
	dsecs = (double)elapsed / 1e9;
	printf("mode=%s%s c=%d ops=%" PRIu64 " secs=%.3f ops_per_s=%.1f "
	       "p50_us=%" PRIu32 " p99_us=%" PRIu32 " bytes=%" PRIu64
	       " bytes_per_s=%.0f errors=%" PRIu64 " retries=%" PRIu64 "\n",
	       l.tls ? "tls-" : "", mode_names[l.mode], l.nslots, l.done, dsecs,
	       dsecs > 0 ? (double)l.done / dsecs : 0.0,
	       percentile(l.lat, l.nlat, 50), percentile(l.lat, l.nlat, 99),
	       l.bytes, dsecs > 0 ? (double)l.bytes / dsecs : 0.0, l.errors,
	       l.retries);
	ret = 0;

	for (int i = 0; i < l.nslots; i++)
		slot_close(&l.slots[i]);
out_close_ep:
	close(l.ep);
out_free_slots:
	free(l.slots);
	l.slots = NULL;
out_free_lat:
	free(l.lat);
	l.lat = NULL;
out_free_tls:
	SSL_CTX_free(l.tls);
	l.tls = NULL;
	return ret;
}
