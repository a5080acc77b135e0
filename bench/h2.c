/*
 * h2.c: an HTTP/2 load client for bench/run's "h2" scenario.
 *
 *   h2 --target ADDR:PORT --cafile FILE [--proxy ADDR:PORT] [--path P]
 *      [-c CONNS] [-m STREAMS] [-t SECONDS] [-n MAX]
 *
 * CONNS connections (default 1), each its own thread: through --proxy a
 * CONNECT first, then TLS with ALPN h2 only (the leaf verified against
 * --cafile for the target's address), then GETs of --path (default
 * /small) with STREAMS (default 32) in flight in all, spread over the
 * connections: a stream that ends is replaced at once, for -t seconds
 * (default 5) or -n requests (default 1000000). Prints one line:
 * mode=h2 conns=N streams=N ops=N secs=S ops_per_s=R p50_us=N p99_us=N
 * bytes=N errors=N (a stream that does not end 200 is an error; an error
 * on the connection ends that connection's run).
 *
 * Blocking sockets, one thread per connection: each reads what the server
 * sent (SSL_read), hands it to nghttp2 (mem_recv), and writes what nghttp2
 * has to send (mem_send, SSL_write), so it always writes before it waits.
 * Loopback only (127.0.0.0/8); bounded in count and time.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

#define CONNS_MAX 64

struct opts {
	struct sockaddr_in target, proxy;
	bool via_proxy;
	char target_text[64];
	const char *cafile, *path;
	int conns, streams;
	double secs;
	uint64_t max;
};

struct conn {
	const struct opts *o;
	SSL_CTX *ctx;
	int inflight;     /* this connection's share of the streams */
	int active;       /* streams open now */
	uint64_t *lat;    /* microseconds per request, up to max */
	uint64_t nlat, cap;
	uint64_t bytes, errors;
	uint64_t deadline;
	const char *why;
};

static atomic_uint_fast64_t started; /* requests begun, all connections */

/* A stream's start time rides in its user data. */
struct req {
	uint64_t t0;
	int status;
};

static int submit(nghttp2_session *s, struct conn *c)
{
	const struct opts *o = c->o;
	struct req *r;
	nghttp2_nv nv[] = {
		{ (uint8_t *)":method", (uint8_t *)"GET", 7, 3, 0 },
		{ (uint8_t *)":scheme", (uint8_t *)"https", 7, 5, 0 },
		{ (uint8_t *)":authority", (uint8_t *)o->target_text, 10, strlen(o->target_text), 0 },
		{ (uint8_t *)":path", (uint8_t *)o->path, 5, strlen(o->path), 0 },
	};

	if (bench_now_us() >= c->deadline || atomic_fetch_add(&started, 1) >= o->max)
		return 0;
	r = calloc(1, sizeof(*r));
	if (r == NULL)
		return -1;
	r->t0 = bench_now_us();
	if (nghttp2_submit_request(s, NULL, nv, 4, NULL, r) < 0) {
		free(r);
		return -1;
	}
	c->active++;
	return 1;
}

static int on_header(nghttp2_session *s, const nghttp2_frame *f, const uint8_t *name, size_t nlen,
		     const uint8_t *value, size_t vlen, uint8_t flags, void *arg)
{
	struct req *r = nghttp2_session_get_stream_user_data(s, f->hd.stream_id);

	if (r != NULL && nlen == 7 && memcmp(name, ":status", 7) == 0 && vlen == 3)
		r->status = (value[0] - '0') * 100 + (value[1] - '0') * 10 + (value[2] - '0');
	return 0;
}

static int on_data(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *data, size_t len,
		   void *arg)
{
	((struct conn *)arg)->bytes += len;
	return 0;
}

static int on_close(nghttp2_session *s, int32_t id, uint32_t code, void *arg)
{
	struct conn *c = arg;
	struct req *r = nghttp2_session_get_stream_user_data(s, id);

	if (r == NULL)
		return 0;
	c->active--;
	if (code != NGHTTP2_NO_ERROR || r->status != 200)
		c->errors++;
	else if (c->nlat < c->cap)
		c->lat[c->nlat++] = bench_now_us() - r->t0;
	free(r);
	if (submit(s, c) == -1)
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	return 0;
}

/* TCP, the CONNECT through the proxy, TLS with ALPN h2. Returns the SSL or NULL. */
static SSL *dial(struct conn *c, int *fdp)
{
	const struct opts *o = c->o;
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	SSL *ssl = NULL;
	const unsigned char *alpn = NULL;
	unsigned alen = 0;
	char addr[INET_ADDRSTRLEN];

	*fdp = fd;
	if (fd < 0 || connect(fd, (const struct sockaddr *)(o->via_proxy ? &o->proxy : &o->target),
			      sizeof(o->target)) == -1) {
		c->why = "connect failed";
		return NULL;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (o->via_proxy) {
		char req[160], head[1024];
		size_t n = 0;
		int len = snprintf(req, sizeof(req), "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n",
				   o->target_text, o->target_text);

		if (write(fd, req, (size_t)len) != len) {
			c->why = "CONNECT write failed";
			return NULL;
		}
		while (n < sizeof(head) - 1) {
			ssize_t r = read(fd, head + n, 1);

			if (r <= 0)
				break;
			n++;
			head[n] = '\0';
			if (n >= 4 && memcmp(head + n - 4, "\r\n\r\n", 4) == 0)
				break;
		}
		if (n < 12 || memcmp(head, "HTTP/1.1 200", 12) != 0) {
			c->why = "CONNECT refused";
			return NULL;
		}
	}
	ssl = SSL_new(c->ctx);
	inet_ntop(AF_INET, &o->target.sin_addr, addr, sizeof(addr));
	if (ssl == NULL || SSL_set_fd(ssl, fd) != 1 ||
	    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), addr) != 1 ||
	    SSL_connect(ssl) != 1) {
		c->why = "TLS handshake failed";
		SSL_free(ssl);
		return NULL;
	}
	SSL_get0_alpn_selected(ssl, &alpn, &alen);
	if (alen != 2 || memcmp(alpn, "h2", 2) != 0) {
		c->why = "the server did not choose h2";
		SSL_free(ssl);
		return NULL;
	}
	return ssl;
}

/* Write everything nghttp2 has to send. Returns 0 or -1. */
static int flush(nghttp2_session *s, SSL *ssl)
{
	for (;;) {
		const uint8_t *p;
		ssize_t n = nghttp2_session_mem_send(s, &p);

		if (n < 0)
			return -1;
		if (n == 0)
			return 0;
		if (SSL_write(ssl, p, (int)n) != (int)n)
			return -1;
	}
}

static void *run(void *arg)
{
	struct conn *c = arg;
	nghttp2_session_callbacks *cb;
	nghttp2_session *s = NULL;
	uint8_t buf[65536];
	int fd = -1;
	SSL *ssl = dial(c, &fd);

	if (ssl == NULL) {
		c->errors++;
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	nghttp2_session_callbacks_new(&cb);
	nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_close);
	nghttp2_session_client_new(&s, cb, c);
	nghttp2_session_callbacks_del(cb);
	nghttp2_submit_settings(s, NGHTTP2_FLAG_NONE, NULL, 0);
	for (int i = 0; i < c->inflight; i++)
		if (submit(s, c) != 1)
			break;
	while (flush(s, ssl) == 0 && c->active > 0) {
		int n = SSL_read(ssl, buf, sizeof(buf));

		if (n <= 0 || nghttp2_session_mem_recv(s, buf, (size_t)n) < 0) {
			c->why = "the connection ended early";
			c->errors++;
			break;
		}
	}
	nghttp2_session_del(s);
	SSL_shutdown(ssl);
	SSL_free(ssl);
	close(fd);
	return NULL;
}

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void usage(void)
{
	fprintf(stderr, "usage: h2 --target ADDR:PORT --cafile FILE [--proxy ADDR:PORT] "
			"[--path P] [-c CONNS] [-m STREAMS] [-t SECONDS] [-n MAX]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct opts o = { .path = "/small", .conns = 1, .streams = 32, .secs = 5, .max = 1000000 };
	struct conn c[CONNS_MAX];
	pthread_t th[CONNS_MAX];
	SSL_CTX *ctx;
	uint64_t t0, total = 0, bytes = 0, errors = 0, *all;
	bool have_target = false;
	double secs;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (v == NULL)
			usage();
		if (strcmp(a, "--target") == 0 && bench_loopback_addr(v, &o.target) == 0) {
			snprintf(o.target_text, sizeof(o.target_text), "%s", v);
			have_target = true;
		} else if (strcmp(a, "--proxy") == 0 && bench_loopback_addr(v, &o.proxy) == 0) {
			o.via_proxy = true;
		} else if (strcmp(a, "--cafile") == 0) {
			o.cafile = v;
		} else if (strcmp(a, "--path") == 0 && v[0] == '/') {
			o.path = v;
		} else if (strcmp(a, "-c") == 0) {
			o.conns = atoi(v);
		} else if (strcmp(a, "-m") == 0) {
			o.streams = atoi(v);
		} else if (strcmp(a, "-t") == 0) {
			o.secs = atof(v);
		} else if (strcmp(a, "-n") == 0) {
			o.max = strtoull(v, NULL, 10);
		} else {
			usage();
		}
		i++;
	}
	if (!have_target || o.cafile == NULL || o.conns < 1 || o.conns > CONNS_MAX ||
	    o.streams < o.conns || o.streams > 1000 || o.secs <= 0 || o.secs > 600 || o.max == 0)
		usage();
	ctx = SSL_CTX_new(TLS_client_method());
	if (ctx == NULL || SSL_CTX_load_verify_locations(ctx, o.cafile, NULL) != 1 ||
	    SSL_CTX_set_alpn_protos(ctx, (const unsigned char *)"\x02h2", 3) != 0) {
		fprintf(stderr, "h2: --cafile %s: cannot be used\n", o.cafile);
		return 1;
	}
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	t0 = bench_now_us();
	for (int i = 0; i < o.conns; i++) {
		c[i] = (struct conn){ .o = &o, .ctx = ctx, .deadline = t0 + (uint64_t)(o.secs * 1e6) };
		c[i].inflight = o.streams / o.conns + (i < o.streams % o.conns ? 1 : 0);
		c[i].cap = o.max < 4000000 ? o.max : 4000000;
		c[i].lat = malloc(c[i].cap * sizeof(uint64_t));
		if (c[i].lat == NULL || pthread_create(&th[i], NULL, run, &c[i]) != 0) {
			fprintf(stderr, "h2: out of memory\n");
			return 1;
		}
	}
	for (int i = 0; i < o.conns; i++) {
		pthread_join(th[i], NULL);
		total += c[i].nlat;
		bytes += c[i].bytes;
		errors += c[i].errors;
		if (c[i].why != NULL)
			fprintf(stderr, "h2: connection %d: %s\n", i, c[i].why);
	}
	secs = (double)(bench_now_us() - t0) / 1e6;
	all = malloc((total ? total : 1) * sizeof(uint64_t));
	if (all == NULL)
		return 1;
	for (int i = 0, k = 0; i < o.conns; i++)
		for (uint64_t j = 0; j < c[i].nlat; j++)
			all[k++] = c[i].lat[j];
	qsort(all, total, sizeof(uint64_t), cmp);
	if (total == 0) {
		fprintf(stderr, "h2: no request completed\n");
		return 1;
	}
	printf("mode=h2 conns=%d streams=%d ops=%llu secs=%.3f ops_per_s=%.0f p50_us=%llu "
	       "p99_us=%llu bytes=%llu errors=%llu\n",
	       o.conns, o.streams, (unsigned long long)total, secs, (double)total / secs,
	       (unsigned long long)all[total / 2], (unsigned long long)all[total * 99 / 100],
	       (unsigned long long)bytes, (unsigned long long)errors);
	return errors > 0 ? 1 : 0;
}
