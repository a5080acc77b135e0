/*
 * upstream.c: asking the pinned upstreams (dns-upstream), in order.
 *
 * A plain upstream is asked over UDP from a socket of the fetch's own
 * (a fresh port, connected: only that server's datagrams reach it, and
 * their id must match), then over TCP when it answers truncated. A TLS
 * upstream (RFC 7858) is asked only over TLS, its certificate verified for
 * its tls= name by OpenSSL against ca= or the system's store; a failed
 * handshake is that upstream failing, never a fall back to plain. TCP and
 * TLS connections are kept (one per upstream) and queries pipelined on
 * them, answers matched by id. Each ask has dns-timeout; an upstream that
 * times out, refuses or drops the connection is marked down for a while
 * (1 s, doubling to 30 s) and the next one is asked; when every one is
 * down the fetch fails at once (SERVFAIL to its waiters).
 */
#include "dns.h"

#include <errno.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <unistd.h>

#include "sockaddr.h"

#define DOWN_MIN_MS 1000
#define DOWN_MAX_MS 8000
#define CONN_IDLE_MS 20000
#define CONN_OUT_MAX (1024 * 1024) /* queued query bytes on one connection */

enum conn_state { UC_CLOSED, UC_CONNECTING, UC_HANDSHAKE, UC_READY };

struct upconn {
	int fd;
	SSL *ssl;
	enum conn_state state;
	struct loop_io io;
	struct loop_timer idle;
	uint8_t *out;
	size_t out_len;
	uint8_t in[2 + DNS_MSG_MAX];
	size_t in_len;
	struct fetch *pending; /* asked (or queued) on this connection */
};

struct upstream {
	const struct config_dns_upstream *cfg;
	char name[64];
	SSL_CTX *ctx; /* TLS upstreams only */
	uint64_t down_until;
	unsigned down_ms;
	uint64_t last_ok; /* when it last answered (loop time), 0 never */
	struct upconn conn;
	struct dnsd *d;
};

static void ask(struct dnsd *d, struct fetch *f);

void upstream_rebind(struct dnsd *d, struct config *c)
{
	for (size_t i = 0; i < d->nupstreams; i++)
		d->upstreams[i].cfg = &c->dns_upstreams[i];
}

static uint16_t random_id(void)
{
	static uint16_t pool[256];
	static size_t left;

	if (left == 0) {
		if (getrandom(pool, sizeof(pool), 0) != (ssize_t)sizeof(pool))
			abort(); /* no randomness: ids an attacker could guess */
		left = sizeof(pool) / sizeof(pool[0]);
	}
	return pool[--left];
}

static SSL_CTX *tls_ctx(const struct config_dns_upstream *u)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());

	if (ctx == NULL)
		return NULL;
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	if ((u->ca_file[0] != '\0' ? SSL_CTX_load_verify_locations(ctx, u->ca_file, NULL)
				   : SSL_CTX_set_default_verify_paths(ctx)) != 1) {
		SSL_CTX_free(ctx);
		return NULL;
	}
	return ctx;
}

/* The upstreams: the config's, else /etc/resolv.conf's nameservers, plain. */
static size_t resolv_conf(struct config *c)
{
	FILE *f = fopen("/etc/resolv.conf", "re");
	char line[512];

	if (f == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL && c->ndns_upstreams < CONFIG_MAX_NAMESERVERS) {
		char addr[128];
		struct config_dns_upstream *u = &c->dns_upstreams[c->ndns_upstreams];

		if (sscanf(line, "nameserver %127s", addr) != 1)
			continue;
		memset(u, 0, sizeof(*u));
		if (sockaddr_parse(addr, SOCKADDR_NO_PORT, 53, &u->addr) == 0)
			c->ndns_upstreams++;
	}
	fclose(f);
	return c->ndns_upstreams;
}

int upstream_init(struct dnsd *d)
{
	struct config *c = d->config;

	if (c->ndns_upstreams == 0 && resolv_conf(c) == 0) {
		fprintf(stderr, "sluice-dns: no dns-upstream in the config and no nameserver in "
				"/etc/resolv.conf: nothing to ask\n");
		return -1;
	}
	d->upstreams = calloc(c->ndns_upstreams, sizeof(*d->upstreams));
	if (d->upstreams == NULL)
		return -1;
	d->nupstreams = c->ndns_upstreams;
	for (size_t i = 0; i < d->nupstreams; i++) {
		struct upstream *u = &d->upstreams[i];

		u->cfg = &c->dns_upstreams[i];
		u->d = d;
		u->conn.fd = -1;
		u->conn.io.fd = -1;
		u->down_ms = DOWN_MIN_MS;
		sockaddr_format(&u->cfg->addr, u->name, sizeof(u->name));
		for (size_t l = 0; l < c->ndns_listen; l++) {
			if (sockaddr_same(&u->cfg->addr, &c->dns_listen[l])) {
				fprintf(stderr, "sluice-dns: dns-upstream %s is one of its own "
						"listeners: it would ask itself\n", u->name);
				return -1;
			}
		}
		if (u->cfg->tls_name[0] != '\0') {
			u->ctx = tls_ctx(u->cfg);
			if (u->ctx == NULL) {
				fprintf(stderr, "sluice-dns: dns-upstream %s: cannot load the trust "
						"store %s: %s\n", u->name,
					u->cfg->ca_file[0] != '\0' ? u->cfg->ca_file : "(system)",
					ERR_reason_error_string(ERR_get_error()));
				return -1;
			}
		}
		fprintf(stderr, "sluice-dns: upstream %s%s%s\n", u->name,
			u->ctx != NULL ? ", DNS over TLS for " : ", plain",
			u->ctx != NULL ? u->cfg->tls_name : "");
	}
	return 0;
}

/* --- marking --------------------------------------------------------------- */

/* Down for a while; a second failure while down does not lengthen it. */
static void mark_down(struct dnsd *d, struct upstream *u)
{
	uint64_t now = loop_now(d->loop);

	if (u->down_until > now)
		return;
	u->down_until = now + u->down_ms;
	if (u->down_ms < DOWN_MAX_MS)
		u->down_ms *= 2;
}

static void mark_up(struct dnsd *d, struct upstream *u)
{
	u->down_until = 0;
	u->down_ms = DOWN_MIN_MS;
	u->last_ok = loop_now(d->loop);
}

/* A timeout says the upstream is down only when nothing else came from it meanwhile: a
 * recursive resolver that is slow on one name (its authority) is not down for the others. */
static bool silent(struct dnsd *d, struct upstream *u)
{
	return loop_now(d->loop) - u->last_ok > d->config->dns_timeout_ms;
}

/* --- the fetch's own UDP socket -------------------------------------------- */

static void fetch_quiet(struct dnsd *d, struct fetch *f)
{
	loop_timer_cancel(d->loop, &f->timer);
	if (f->udp_fd >= 0) {
		loop_io_close(d->loop, &f->io);
		f->udp_fd = -1;
	}
}

static void conn_unpend(struct upconn *c, struct fetch *f)
{
	for (struct fetch **pp = &c->pending; *pp != NULL; pp = &(*pp)->cnext) {
		if (*pp == f) {
			*pp = f->cnext;
			f->cnext = NULL;
			return;
		}
	}
}

void upstream_cancel(struct dnsd *d, struct fetch *f)
{
	fetch_quiet(d, f);
	if (f->tcp && f->upstream < d->nupstreams)
		conn_unpend(&d->upstreams[f->upstream].conn, f);
}

/* This upstream failed f: mark it, then ask the next. */
static void failed(struct dnsd *d, struct fetch *f, const char *why, bool down)
{
	struct upstream *u = &d->upstreams[f->upstream];

	upstream_cancel(d, f);
	f->why = why;
	if (down)
		mark_down(d, u);
	f->upstream++;
	f->tcp = false;
	ask(d, f);
}

/* An answer for f from upstream u: cache it and answer the waiters, or try the next. */
static void answered(struct dnsd *d, struct fetch *f, const uint8_t *msg, size_t len)
{
	struct upstream *u = &d->upstreams[f->upstream];
	const struct cache_entry *e;
	const char *why = NULL;
	bool refused;

	upstream_cancel(d, f);
	if (!f->tcp && len >= 4 && (msg[2] << 8 & DNS_F_TC)) {
		f->tcp = true; /* truncated: the same upstream, over TCP */
		ask(d, f);
		return;
	}
	e = cache_put(d, f, msg, len, &refused, &why);
	if (e == NULL) {
		f->why = refused ? "upstream-failed" : "upstream-malformed";
		fprintf(stderr, "sluice-dns: upstream %s, %s: %s\n", u->name, f->name, why);
		failed(d, f, f->why, false);
		return;
	}
	mark_up(d, u);
	query_fetched(d, f, e, u->name);
}

static void conn_close(struct dnsd *d, struct upstream *u, const char *why);

static void on_timeout(struct loop *l, struct loop_timer *t)
{
	struct fetch *f = t->arg;
	struct upstream *u = f->io.arg;
	struct dnsd *d = u->d;
	bool stream = f->tcp;

	failed(d, f, "upstream-timeout", silent(d, u));
	/* a kept connection that let an answer time out may be stuck (or never connected):
	 * its other queries go on over a fresh one */
	if (stream && u->conn.fd >= 0)
		conn_close(d, u, "an answer did not come within dns-timeout");
}

static void on_udp(struct loop *l, struct loop_io *io, uint32_t events)
{
	struct upstream *u = io->arg;
	struct fetch *f = (struct fetch *)((char *)io - offsetof(struct fetch, io));
	uint8_t buf[DNS_MSG_MAX];
	ssize_t n;

	for (;;) {
		n = recv(io->fd, buf, sizeof(buf), 0);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n == -1) { /* ECONNREFUSED: nothing listens there */
			failed(u->d, f, "upstream-down", true);
			return;
		}
		/* another id is not ours: a late answer, or a guess; keep waiting */
		if (n >= DNS_HEADER_LEN && (uint16_t)(buf[0] << 8 | buf[1]) == f->id)
			break;
	}
	answered(u->d, f, buf, (size_t)n);
}

static int ask_udp(struct dnsd *d, struct upstream *u, struct fetch *f)
{
	uint8_t q[DNS_QUESTION_MAX + 64];
	size_t len = wire_query(f->id, f->name, f->name_len, f->qtype, q, sizeof(q));
	socklen_t alen = u->cfg->addr.ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
							     : sizeof(struct sockaddr_in);
	int fd = socket(u->cfg->addr.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd == -1)
		return -1;
	if (connect(fd, (const struct sockaddr *)&u->cfg->addr, alen) == -1 ||
	    send(fd, q, len, 0) != (ssize_t)len ||
	    loop_io_add(d->loop, &f->io, fd, EPOLLIN, on_udp, u) == -1) {
		close(fd);
		return -1;
	}
	f->udp_fd = fd;
	return 0;
}

/* --- kept TCP and TLS connections ------------------------------------------ */

static void conn_close(struct dnsd *d, struct upstream *u, const char *why)
{
	struct upconn *c = &u->conn;
	struct fetch *list = c->pending;
	bool was_ready = c->state == UC_READY;

	loop_timer_cancel(d->loop, &c->idle);
	if (c->ssl != NULL) {
		SSL_free(c->ssl);
		c->ssl = NULL;
	}
	if (c->fd >= 0)
		loop_io_close(d->loop, &c->io);
	c->fd = -1;
	c->state = UC_CLOSED;
	free(c->out);
	c->out = NULL;
	c->out_len = 0;
	c->in_len = 0;
	c->pending = NULL;
	if (list != NULL && why != NULL)
		fprintf(stderr, "sluice-dns: upstream %s: %s\n", u->name, why);
	/* each pending fetch goes on (detached first): once more on a fresh connection when
	 * this one had worked (a server closing a kept connection), else to the next upstream */
	if (list != NULL && !was_ready)
		mark_down(d, u);
	while (list != NULL) {
		struct fetch *f = list;

		list = f->cnext;
		f->cnext = NULL;
		f->tcp = false; /* off this connection: upstream_cancel must not look for it */
		fetch_quiet(d, f);
		f->why = "upstream-down";
		if (was_ready && !f->retried) {
			f->retried = true;
			f->tcp = true;
		} else {
			f->upstream++;
		}
		ask(d, f);
	}
}

static void on_idle(struct loop *l, struct loop_timer *t)
{
	struct upstream *u = t->arg;

	if (u->conn.pending == NULL)
		conn_close(u->d, u, NULL);
}

static void conn_want(struct dnsd *d, struct upconn *c, bool write)
{
	loop_io_set(d->loop, &c->io, EPOLLIN | (write ? EPOLLOUT : 0));
}

/* Flush queued queries. Returns 0, or -1 when the connection failed. */
static int conn_flush(struct dnsd *d, struct upstream *u)
{
	struct upconn *c = &u->conn;

	while (c->out_len > 0) {
		ssize_t n;

		if (c->ssl != NULL) {
			int r = SSL_write(c->ssl, c->out, (int)c->out_len);

			if (r <= 0) {
				int e = SSL_get_error(c->ssl, r);

				if (e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ) {
					conn_want(d, c, e == SSL_ERROR_WANT_WRITE);
					return 0;
				}
				return -1;
			}
			n = r;
		} else {
			n = write(c->fd, c->out, c->out_len);
			if (n == -1 && (errno == EAGAIN || errno == EINTR)) {
				conn_want(d, c, true);
				return 0;
			}
			if (n <= 0)
				return -1;
		}
		memmove(c->out, c->out + n, c->out_len - (size_t)n);
		c->out_len -= (size_t)n;
	}
	conn_want(d, c, false);
	return 0;
}

/* Whole answers in c->in: each to its fetch by id. */
static void conn_answers(struct dnsd *d, struct upstream *u)
{
	struct upconn *c = &u->conn;

	while (c->in_len >= 2) {
		size_t mlen = (size_t)c->in[0] << 8 | c->in[1];
		uint16_t id;
		struct fetch *f;

		if (c->in_len < 2 + mlen)
			return;
		id = mlen >= 2 ? (uint16_t)(c->in[2] << 8 | c->in[3]) : 0;
		for (f = c->pending; f != NULL && f->id != id; f = f->cnext)
			;
		if (f != NULL) {
			uint8_t msg[DNS_MSG_MAX];

			memcpy(msg, c->in + 2, mlen); /* answered() may close c */
			memmove(c->in, c->in + 2 + mlen, c->in_len - 2 - mlen);
			c->in_len -= 2 + mlen;
			conn_unpend(c, f);
			answered(d, f, msg, mlen);
			if (c->fd < 0)
				return;
			continue;
		}
		memmove(c->in, c->in + 2 + mlen, c->in_len - 2 - mlen);
		c->in_len -= 2 + mlen;
	}
}

static int conn_read(struct dnsd *d, struct upstream *u)
{
	struct upconn *c = &u->conn;

	for (;;) {
		ssize_t n;

		if (c->ssl != NULL) {
			int r = SSL_read(c->ssl, c->in + c->in_len, (int)(sizeof(c->in) - c->in_len));

			if (r <= 0) {
				int e = SSL_get_error(c->ssl, r);

				if (e == SSL_ERROR_WANT_READ)
					return 0;
				if (e == SSL_ERROR_WANT_WRITE) {
					conn_want(d, c, true);
					return 0;
				}
				return -1;
			}
			n = r;
		} else {
			n = read(c->fd, c->in + c->in_len, sizeof(c->in) - c->in_len);
			if (n == -1 && (errno == EAGAIN || errno == EINTR))
				return 0;
			if (n <= 0)
				return -1;
		}
		c->in_len += (size_t)n;
		conn_answers(d, u);
		if (c->fd < 0)
			return 0;
		if (c->out_len > 0 && conn_flush(d, u) == -1) /* a write that waited on a read */
			return -1;
	}
}

static void conn_ready(struct dnsd *d, struct upstream *u)
{
	u->conn.state = UC_READY;
	if (conn_flush(d, u) == -1)
		conn_close(d, u, "write failed");
}

static void on_conn(struct loop *l, struct loop_io *io, uint32_t events)
{
	struct upstream *u = io->arg;
	struct dnsd *d = u->d;
	struct upconn *c = &u->conn;

	if (c->state == UC_CONNECTING) {
		int err = 0;
		socklen_t el = sizeof(err);

		if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &el) == -1 || err != 0) {
			conn_close(d, u, err == ECONNREFUSED ? "connection refused" : "connect failed");
			return;
		}
		if (c->ssl == NULL) {
			conn_ready(d, u);
			return;
		}
		c->state = UC_HANDSHAKE;
	}
	if (c->state == UC_HANDSHAKE) {
		int r = SSL_connect(c->ssl);

		if (r != 1) {
			int e = SSL_get_error(c->ssl, r);
			char why[200];

			if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
				conn_want(d, c, e == SSL_ERROR_WANT_WRITE);
				return;
			}
			snprintf(why, sizeof(why), "TLS handshake for %s failed: %s",
				 u->cfg->tls_name,
				 SSL_get_verify_result(c->ssl) != X509_V_OK
					 ? X509_verify_cert_error_string(SSL_get_verify_result(c->ssl))
					 : "handshake error");
			ERR_clear_error();
			conn_close(d, u, why);
			return;
		}
		conn_ready(d, u);
		return;
	}
	if ((events & EPOLLOUT) && conn_flush(d, u) == -1) {
		conn_close(d, u, "write failed");
		return;
	}
	if ((events & (EPOLLIN | EPOLLHUP | EPOLLERR)) && conn_read(d, u) == -1)
		conn_close(d, u, c->pending != NULL ? "the connection ended with queries pending"
						    : NULL);
}

static int conn_open(struct dnsd *d, struct upstream *u)
{
	struct upconn *c = &u->conn;
	socklen_t alen = u->cfg->addr.ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
							     : sizeof(struct sockaddr_in);
	int fd = socket(u->cfg->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd == -1)
		return -1;
	if (connect(fd, (const struct sockaddr *)&u->cfg->addr, alen) == -1 &&
	    errno != EINPROGRESS) {
		close(fd);
		return -1;
	}
	if (u->ctx != NULL) {
		c->ssl = SSL_new(u->ctx);
		if (c->ssl == NULL || SSL_set_fd(c->ssl, fd) != 1 ||
		    SSL_set_tlsext_host_name(c->ssl, u->cfg->tls_name) != 1 ||
		    SSL_set1_host(c->ssl, u->cfg->tls_name) != 1) {
			SSL_free(c->ssl);
			c->ssl = NULL;
			close(fd);
			return -1;
		}
	}
	if (loop_io_add(d->loop, &c->io, fd, EPOLLOUT, on_conn, u) == -1) {
		SSL_free(c->ssl);
		c->ssl = NULL;
		close(fd);
		return -1;
	}
	c->fd = fd;
	c->state = UC_CONNECTING;
	return 0;
}

static int ask_stream(struct dnsd *d, struct upstream *u, struct fetch *f)
{
	struct upconn *c = &u->conn;
	uint8_t q[2 + DNS_QUESTION_MAX + 64];
	size_t len = wire_query(f->id, f->name, f->name_len, f->qtype, q + 2, sizeof(q) - 2);
	uint8_t *grown;

	if (c->state == UC_CLOSED && conn_open(d, u) == -1)
		return -1;
	if (c->out_len + 2 + len > CONN_OUT_MAX)
		return -1;
	grown = realloc(c->out, c->out_len + 2 + len);
	if (grown == NULL)
		return -1;
	c->out = grown;
	q[0] = (uint8_t)(len >> 8);
	q[1] = (uint8_t)len;
	memcpy(c->out + c->out_len, q, 2 + len);
	c->out_len += 2 + len;
	f->cnext = c->pending;
	c->pending = f;
	loop_timer_set(d->loop, &c->idle, CONN_IDLE_MS, on_idle, u);
	if (c->state == UC_READY && conn_flush(d, u) == -1) {
		conn_close(d, u, "write failed");
		return 0; /* f went on to the next upstream */
	}
	return 0;
}

static bool conn_has_id(const struct upconn *c, uint16_t id)
{
	for (const struct fetch *f = c->pending; f != NULL; f = f->cnext)
		if (f->id == id)
			return true;
	return false;
}

/* --- asking ---------------------------------------------------------------- */

/* Ask f->upstream (or the next one up); when none is left, fail f's waiters. */
static void ask(struct dnsd *d, struct fetch *f)
{
	uint64_t now = loop_now(d->loop);

	while (f->upstream < d->nupstreams) {
		struct upstream *u = &d->upstreams[f->upstream];
		int r;

		if (u->down_until > now && !f->tcp) {
			f->why = f->why != NULL ? f->why : "upstream-down";
			f->upstream++;
			continue;
		}
		f->tried++;
		f->id = random_id();
		if (u->ctx != NULL || f->tcp) /* one connection carries many: an id in use there is not */
			while (conn_has_id(&u->conn, f->id))
				f->id = random_id();
		f->io.arg = u;
		loop_timer_set(d->loop, &f->timer, d->config->dns_timeout_ms, on_timeout, f);
		if (u->ctx != NULL)
			f->tcp = true;
		r = f->tcp ? ask_stream(d, u, f) : ask_udp(d, u, f);
		if (r == 0)
			return;
		/* a local failure (no fd, a full queue): not the upstream's fault, the next one */
		loop_timer_cancel(d->loop, &f->timer);
		f->why = "local-error";
		f->upstream++;
		f->tcp = false;
	}
	if (f->why == NULL)
		f->why = "upstream-down";
	query_fetched(d, f, NULL, NULL);
}

void upstream_ask(struct dnsd *d, struct fetch *f)
{
	f->upstream = 0;
	f->tried = 0;
	ask(d, f);
}

void upstream_release(struct dnsd *d)
{
	for (size_t i = 0; i < d->nupstreams; i++) {
		struct upstream *u = &d->upstreams[i];

		u->conn.pending = NULL; /* the fetches are the cache's to free */
		conn_close(d, u, NULL);
		SSL_CTX_free(u->ctx);
	}
	free(d->upstreams);
	d->upstreams = NULL;
	d->nupstreams = 0;
}
