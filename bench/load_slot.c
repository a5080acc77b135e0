/*
 * load_slot.c: one client slot of the load generator, an event-driven
 * connection machine: connect, CONNECT through the proxy when there is one,
 * the TLS client handshake in the TLS modes, then requests written and
 * responses read (framed by load_resp.c) back to back, as the mode says.
 * Each slot counts its operations, errors, retries and bytes into the run.
 *
 * It does not decide when the run starts or ends (load.c's loop does, by
 * load_may_start and the slot deadlines) and does not print the report. A
 * slot owns its socket and SSL; slot_close releases both.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "bench.h"
#include "load.h"
#include "tlsio.h"

#define LOAD_READ_CHUNK (256 * 1024)    /* bytes per read() */
#define LOAD_REPORT_ERRORS 5            /* errors described on stderr */

static char scratch[LOAD_READ_CHUNK];

static void slot_open(struct load *l, struct slot *s);

/* Free the slot's TLS and close its socket; the slot is SLOT_IDLE after. */
void slot_close(struct slot *s)
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

/*
 * End the operation in flight as an error (the first LOAD_REPORT_ERRORS are
 * described on stderr) and close the slot; always returns -1.
 */
int slot_fail(struct load *l, struct slot *s, const char *what, int err)
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
	uint64_t now = bench_now_ns();
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
void slot_drive(struct load *l, struct slot *s, uint32_t events)
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
				s->deadline = bench_now_ns() + l->op_timeout;
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
			s->deadline = bench_now_ns() + l->op_timeout;
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
	s->deadline = bench_now_ns() + l->op_timeout;
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
void slot_start(struct load *l, struct slot *s, uint64_t now)
{
	l->started++;
	s->op_start = now;
	slot_open(l, s);
}
