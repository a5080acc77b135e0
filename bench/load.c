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
 *
 * This file holds the arguments, the run loop and the report; a client
 * slot's connection machine and its TLS step are load_slot.c, the response
 * framing load_resp.c, the shared state load.h.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "bench.h"
#include "load.h"

#define LOAD_MAX_CONCURRENCY 4096
#define LOAD_MAX_OPS 10000000ULL        /* also the latency array's ceiling */
#define LOAD_MAX_SECONDS 3600
#define LOAD_MAX_EVENTS 256

/* True while an operation may begin: fewer than -n started and -t not over. */
bool load_may_start(const struct load *l, uint64_t now)
{
	return l->started < l->max_ops && now < l->end;
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
	uint64_t t0 = bench_now_ns();
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
		now = bench_now_ns();
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
	l.end = bench_now_ns() + secs * 1000000000ULL;
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
