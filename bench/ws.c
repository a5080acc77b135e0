/*
 * ws.c: a WebSocket echo server and a one-connection echo client, for
 * bench/run's "ws" scenario.
 *
 *   ws server ADDR:PORT [CERT KEY]
 *       every connection (one process each; over TLS with CERT and KEY)
 *       gets its handshake answered and each message echoed back,
 *       unmasked, until it closes.
 *   ws client --target ADDR:PORT [--proxy ADDR:PORT] [--tls CAFILE]
 *             [--size BYTES] [--inflight N] [-t SECONDS] [-n MAX]
 *       one connection: the handshake (an absolute-form GET with Upgrade
 *       through --proxy, else origin-form; with --tls, a CONNECT through
 *       --proxy, then TLS verified against CAFILE for the target's
 *       address, then the origin-form GET), then a masked binary message of
 *       --size bytes (default 64) and its echo, again and again, for -t
 *       seconds (default 5) or -n messages (default 1000000), --inflight
 *       of them (default 1, at most 64) on the wire at once: each echo
 *       read lets the next go, so 1 measures a round trip and more the
 *       relay's throughput with the pipe kept full. Prints one
 *       line: mode=ws size=N msgs=N secs=S msgs_per_s=R mib_per_s=R
 *       p50_us=N p99_us=N errors=N (an echo that is not the message sent
 *       is an error and ends the run).
 *
 * Loopback only (127.0.0.0/8); bounded in count and time.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "bench.h"
#include "ws_frame.h"
#include "ws_handshake.h"

#define KEY "dGhlIHNhbXBsZSBub25jZQ=="
#define SIZE_MAX_BYTES (16u << 20)
#define INFLIGHT_MAX 64

static SSL *tls; /* this process's one connection, when it speaks TLS */

static ssize_t io_read(int fd, void *p, size_t n)
{
	return tls != NULL ? SSL_read(tls, p, n > 1 << 30 ? 1 << 30 : (int)n) : read(fd, p, n);
}

static ssize_t io_write(int fd, const void *p, size_t n)
{
	return tls != NULL ? SSL_write(tls, p, n > 1 << 30 ? 1 << 30 : (int)n) : write(fd, p, n);
}

static int read_full(int fd, void *p, size_t n)
{
	for (size_t got = 0; got < n;) {
		ssize_t r = io_read(fd, (char *)p + got, n - got);

		if (r <= 0) {
			if (r == -1 && errno == EINTR)
				continue;
			return -1;
		}
		got += (size_t)r;
	}
	return 0;
}

static int write_full(int fd, const void *p, size_t n)
{
	for (size_t put = 0; put < n;) {
		ssize_t r = io_write(fd, (const char *)p + put, n - put);

		if (r <= 0) {
			if (r == -1 && errno == EINTR)
				continue;
			return -1;
		}
		put += (size_t)r;
	}
	return 0;
}

/* Read a head up to its blank line into buf. Returns its length or -1. */
static ssize_t read_head(int fd, char *buf, size_t size)
{
	size_t n = 0;

	while (n + 1 < size) {
		if (io_read(fd, buf + n, 1) != 1)
			return -1;
		n++;
		if (n >= 4 && memcmp(buf + n - 4, "\r\n\r\n", 4) == 0) {
			buf[n] = '\0';
			return (ssize_t)n;
		}
	}
	return -1;
}

/* One frame's header and payload into *buf (grown), unmasking a client's. Returns 0 or -1. */
static int read_frame(int fd, char **buf, size_t *cap, uint64_t *len, int *op, bool *fin)
{
	uint8_t h[14];
	uint8_t mask[4] = { 0 };
	bool masked;
	if (read_full(fd, h, 2) == -1)
		return -1;
	masked = (h[1] & 0x80) != 0;
	*op = h[0] & 0x0f;
	*fin = (h[0] & 0x80) != 0;
	*len = h[1] & 0x7f;
	if (*len == 126) {
		if (read_full(fd, h + 2, 2) == -1)
			return -1;
		*len = (uint64_t)h[2] << 8 | h[3];
	} else if (*len == 127) {
		if (read_full(fd, h + 2, 8) == -1)
			return -1;
		*len = 0;
		for (int i = 2; i < 10; i++)
			*len = *len << 8 | h[i];
	}
	if (*len > SIZE_MAX_BYTES)
		return -1;
	if (masked && read_full(fd, mask, 4) == -1)
		return -1;
	if (*len > *cap) {
		char *p = realloc(*buf, *len);

		if (p == NULL)
			return -1;
		*buf = p;
		*cap = *len;
	}
	if (read_full(fd, *buf, *len) == -1)
		return -1;
	if (masked)
		for (uint64_t i = 0; i < *len; i++)
			(*buf)[i] ^= (char)mask[i % 4];
	return 0;
}

static void serve(int fd)
{
	char head[8192], accept[WS_ACCEPT_LEN + 1], resp[256], *buf = NULL;
	const char *k;
	size_t cap = 0;
	uint64_t len;
	int op;
	bool fin;

	if (read_head(fd, head, sizeof(head)) == -1 || (k = strcasestr(head, "\r\nSec-WebSocket-Key: ")) == NULL)
		return;
	ws_accept_value(k + 21, accept);
	snprintf(resp, sizeof(resp),
		 "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
		 "Sec-WebSocket-Accept: %s\r\n\r\n", accept);
	if (write_full(fd, resp, strlen(resp)) == -1)
		return;
	while (read_frame(fd, &buf, &cap, &len, &op, &fin) == 0 && op != WS_OP_CLOSE) {
		uint8_t h[WS_FRAME_HEAD_MAX];
		size_t hl = ws_frame_write(h, true, (enum ws_opcode)op, len);

		if (write_full(fd, h, hl) == -1 || write_full(fd, buf, len) == -1)
			break;
	}
	free(buf);
}

static int server(const char *addr, const char *cert, const char *key)
{
	struct sockaddr_in sin;
	int one = 1, l;
	SSL_CTX *ctx = NULL;

	if (cert != NULL) {
		ctx = SSL_CTX_new(TLS_server_method());
		if (ctx == NULL || SSL_CTX_use_certificate_chain_file(ctx, cert) != 1 ||
		    SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1) {
			fprintf(stderr, "ws: %s, %s: cannot be used\n", cert, key);
			return 1;
		}
	}
	if (bench_loopback_addr(addr, &sin) == -1) {
		fprintf(stderr, "ws: bad ADDR:PORT %s (127.0.0.0/8 only)\n", addr);
		return 2;
	}
	signal(SIGCHLD, SIG_IGN);
	l = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(l, (struct sockaddr *)&sin, sizeof(sin)) == -1 || listen(l, 64) == -1) {
		perror("ws: listen");
		return 1;
	}
	for (;;) {
		int fd = accept(l, NULL, NULL);

		if (fd == -1)
			continue;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (fork() == 0) {
			close(l);
			if (ctx != NULL && ((tls = SSL_new(ctx)) == NULL || SSL_set_fd(tls, fd) != 1 ||
					    SSL_accept(tls) != 1))
				_exit(1);
			serve(fd);
			_exit(0);
		}
		close(fd);
	}
}

/* The echo of the zeros sent (masked on the wire, plain after). */
static bool all_zero(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != 0)
			return false;
	return true;
}

/*
 * One message of size zeros (a proxy that reads messages may pass it on in
 * fragments: RFC 6455 5.4). Returns 0 or -1.
 */
static int read_message(int fd, char **buf, size_t *cap, size_t size)
{
	uint64_t got = 0, len;
	int op, first = -1;
	bool fin = false;

	while (!fin) {
		if (read_frame(fd, buf, cap, &len, &op, &fin) == -1 || got + len > size ||
		    (first == -1 ? op != WS_OP_BINARY : op != WS_OP_CONT) || !all_zero(*buf, len))
			return -1;
		first = op;
		got += len;
	}
	return got == size ? 0 : -1;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Through the proxy a CONNECT, then TLS verified for the target's address. Returns 0 or -1. */
static int tls_begin(int fd, const char *target, const char *proxy, const char *cafile)
{
	char req[256], head[1024], ip[INET_ADDRSTRLEN];
	struct sockaddr_in t;
	SSL_CTX *ctx;

	if (proxy != NULL) {
		snprintf(req, sizeof(req), "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target);
		if (write_full(fd, req, strlen(req)) == -1 || read_head(fd, head, sizeof(head)) == -1 ||
		    strncmp(head, "HTTP/1.1 200", 12) != 0)
			return -1;
	}
	bench_loopback_addr(target, &t);
	inet_ntop(AF_INET, &t.sin_addr, ip, sizeof(ip));
	ctx = SSL_CTX_new(TLS_client_method());
	if (ctx == NULL || SSL_CTX_load_verify_locations(ctx, cafile, NULL) != 1)
		return -1;
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	tls = SSL_new(ctx);
	if (tls == NULL || SSL_set_fd(tls, fd) != 1 ||
	    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(tls), ip) != 1 || SSL_connect(tls) != 1)
		return -1;
	return 0;
}

static int client(const char *target, const char *proxy, const char *cafile, size_t size,
		  double secs, uint64_t max, int inflight)
{
	uint64_t sent_at[INFLIGHT_MAX];
	struct sockaddr_in sin;
	char head[8192], req[512], *frame, *echo = NULL;
	uint8_t mask[4] = { 0x12, 0x34, 0x56, 0x78 };
	uint8_t h[WS_FRAME_HEAD_MAX];
	uint32_t *lat;
	size_t cap = 0, hl, nlat = 0;
	uint64_t t0, end, msgs = 0;
	int fd, one = 1, errors = 0;

	if (bench_loopback_addr(proxy != NULL ? proxy : target, &sin) == -1 || size > SIZE_MAX_BYTES) {
		fprintf(stderr, "ws: bad --target/--proxy (127.0.0.0/8 only) or --size\n");
		return 2;
	}
	fd = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1) {
		perror("ws: connect");
		return 1;
	}
	if (cafile != NULL && tls_begin(fd, target, proxy, cafile) == -1) {
		fprintf(stderr, "ws: CONNECT or TLS failed\n");
		return 1;
	}
	snprintf(req, sizeof(req),
		 "GET %s%s/ws HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
		 "Sec-WebSocket-Key: " KEY "\r\nSec-WebSocket-Version: 13\r\n\r\n",
		 proxy != NULL && cafile == NULL ? "http://" : "",
		 proxy != NULL && cafile == NULL ? target : "", target);
	if (write_full(fd, req, strlen(req)) == -1 || read_head(fd, head, sizeof(head)) == -1 ||
	    strncmp(head, "HTTP/1.1 101", 12) != 0) {
		fprintf(stderr, "ws: no 101: %.60s\n", head);
		return 1;
	}
	/* the client's frame: a binary message, masked (the payload is masked zeros: the key) */
	hl = ws_frame_write(h, true, WS_OP_BINARY, size);
	h[1] |= 0x80;
	frame = malloc(hl + 4 + size);
	lat = malloc(sizeof(*lat) * (max < 1000000 ? max : 1000000));
	if (frame == NULL || lat == NULL)
		return 1;
	memcpy(frame, h, hl);
	memcpy(frame + hl, mask, 4);
	for (size_t i = 0; i < size; i++)
		frame[hl + 4 + i] = (char)mask[i % 4];
	t0 = bench_now_us();
	end = t0 + (uint64_t)(secs * 1e6);
	/* inflight messages on the wire at once: each echo read lets the next one go */
	for (int i = 0; i < inflight; i++) {
		sent_at[i] = bench_now_us();
		if (write_full(fd, frame, hl + 4 + size) == -1)
			errors++;
	}
	for (uint64_t sent = (uint64_t)inflight, k = 0; errors == 0 && msgs < sent; k++) {
		if (read_message(fd, &echo, &cap, size) == -1) {
			errors++;
			break;
		}
		if (nlat < 1000000)
			lat[nlat++] = (uint32_t)(bench_now_us() - sent_at[k % inflight]);
		msgs++;
		if (sent < max && bench_now_us() < end) {
			sent_at[k % inflight] = bench_now_us();
			if (write_full(fd, frame, hl + 4 + size) == -1) {
				errors++;
				break;
			}
			sent++;
		}
	}
	double el = (double)(bench_now_us() - t0) / 1e6;

	qsort(lat, nlat, sizeof(*lat), cmp_u32);
	printf("mode=ws size=%zu msgs=%llu secs=%.3f msgs_per_s=%.1f mib_per_s=%.2f p50_us=%u "
	       "p99_us=%u errors=%d\n",
	       size, (unsigned long long)msgs, el, el > 0 ? (double)msgs / el : 0.0,
	       el > 0 ? (double)msgs * (double)size / el / 1048576.0 : 0.0,
	       nlat > 0 ? lat[nlat / 2] : 0, nlat > 0 ? lat[nlat * 99 / 100] : 0, errors);
	free(frame);
	free(echo);
	free(lat);
	close(fd);
	return errors != 0 || msgs == 0;
}

int main(int argc, char **argv)
{
	const char *target = NULL, *proxy = NULL, *cafile = NULL;
	size_t size = 64;
	int inflight = 1;
	double secs = 5;
	uint64_t max = 1000000;

	if ((argc == 3 || argc == 5) && strcmp(argv[1], "server") == 0)
		return server(argv[2], argc == 5 ? argv[3] : NULL, argc == 5 ? argv[4] : NULL);
	if (argc < 2 || strcmp(argv[1], "client") != 0)
		goto usage;
	for (int i = 2; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--target") == 0)
			target = argv[i + 1];
		else if (strcmp(argv[i], "--proxy") == 0)
			proxy = argv[i + 1];
		else if (strcmp(argv[i], "--tls") == 0)
			cafile = argv[i + 1];
		else if (strcmp(argv[i], "--inflight") == 0)
			inflight = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--size") == 0)
			size = (size_t)strtoul(argv[i + 1], NULL, 10);
		else if (strcmp(argv[i], "-t") == 0)
			secs = atof(argv[i + 1]);
		else if (strcmp(argv[i], "-n") == 0)
			max = strtoull(argv[i + 1], NULL, 10);
		else
			goto usage;
	}
	if (target != NULL && max > 0 && secs > 0 && inflight >= 1 && inflight <= INFLIGHT_MAX)
		return client(target, proxy, cafile, size, secs, max, inflight);
usage:
	fprintf(stderr, "usage: ws server ADDR:PORT [CERT KEY]\n"
			"       ws client --target ADDR:PORT [--proxy ADDR:PORT] [--tls CAFILE] "
			"[--size BYTES] [--inflight N] [-t SECONDS] [-n MAX]\n");
	return 2;
}
