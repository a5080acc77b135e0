/*
 * dnsq.c: the DNS benchmark's latency client (bench/dns): one query in
 * flight at a time, A queries for the names of a file in turn, the latency
 * of each answer. dnsperf cannot time an unloaded resolver: with one query
 * outstanding (-q 1) it waits on its own timer between queries.
 *
 *   dnsq --server ADDR:PORT --names FILE [-t SECONDS] [-n MAX]
 *
 * FILE holds a name a line (the first word; dnsperf's "NAME A" lines do).
 * Each query goes over one connected UDP socket with a fresh random id, RD
 * set and no EDNS; an answer counts when its id and question are the
 * query's; one not answered within a second is lost and the next is sent.
 * At -t seconds (default 2) or after -n queries (default 1000000) it prints
 *
 *   queries=N answered=N lost=N not_noerror=N secs=X qps=X p50_us=N p99_us=N
 *
 * It reads nothing of an answer past its header and question, and sends
 * only inside 127.0.0.0/8.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench.h"

#define DNSQ_NAMES_MAX 1000000
#define DNSQ_QNAME_MAX 255       /* a name in wire form */
#define DNSQ_TIMEOUT_US 1000000  /* an answer later than this is lost */
#define DNSQ_HIST_US DNSQ_TIMEOUT_US

struct names {
	uint8_t *wire;   /* the names in wire form, back to back */
	size_t *off;     /* where each starts */
	size_t *len;     /* its length */
	size_t count;
};

static void usage(void)
{
	fprintf(stderr, "usage: dnsq --server ADDR:PORT --names FILE [-t SECONDS] [-n MAX]\n");
	exit(2);
}

/* name (text, no final dot needed) into out in wire form. Returns its length, or 0. */
static size_t name_wire(const char *name, uint8_t *out)
{
	size_t n = 0;

	while (*name != '\0') {
		const char *dot = strchr(name, '.');
		size_t l = dot != NULL ? (size_t)(dot - name) : strlen(name);

		if (l == 0 || l > 63 || n + 1 + l + 1 > DNSQ_QNAME_MAX)
			return 0;
		out[n++] = (uint8_t)l;
		memcpy(out + n, name, l);
		n += l;
		name += l;
		if (*name == '.')
			name++;
	}
	if (n == 0)
		return 0;
	out[n++] = 0;
	return n;
}

/* Every line's first word of path, in wire form, into ns. Returns 0 or -1 after printing. */
static int names_load(const char *path, struct names *ns)
{
	FILE *f = fopen(path, "r");
	char line[512], word[300];
	size_t cap = 0;

	if (f == NULL) {
		fprintf(stderr, "dnsq: %s: %s\n", path, strerror(errno));
		return -1;
	}
	ns->off = calloc(DNSQ_NAMES_MAX, sizeof(*ns->off));
	ns->len = calloc(DNSQ_NAMES_MAX, sizeof(*ns->len));
	if (ns->off == NULL || ns->len == NULL) {
		fclose(f);
		fprintf(stderr, "dnsq: out of memory\n");
		return -1;
	}
	while (fgets(line, sizeof(line), f) != NULL && ns->count < DNSQ_NAMES_MAX) {
		uint8_t w[DNSQ_QNAME_MAX];
		size_t used = ns->count > 0 ? ns->off[ns->count - 1] + ns->len[ns->count - 1] : 0;
		size_t l;

		if (sscanf(line, "%299s", word) != 1)
			continue;
		l = name_wire(word, w);
		if (l == 0) {
			fprintf(stderr, "dnsq: %s: not a name: %s\n", path, word);
			continue;
		}
		if (used + l > cap) {
			uint8_t *more = realloc(ns->wire, cap = 2 * cap + 65536);

			if (more == NULL) {
				fclose(f);
				fprintf(stderr, "dnsq: out of memory\n");
				return -1;
			}
			ns->wire = more;
		}
		memcpy(ns->wire + used, w, l);
		ns->off[ns->count] = used;
		ns->len[ns->count++] = l;
	}
	fclose(f);
	if (ns->count == 0) {
		fprintf(stderr, "dnsq: %s: no names\n", path);
		return -1;
	}
	return 0;
}

/* Whether msg[0..len) answers the query q[0..qlen) (its id, QR, the question, any case). */
static bool answers(const uint8_t *msg, size_t len, const uint8_t *q, size_t qlen)
{
	if (len < qlen || msg[0] != q[0] || msg[1] != q[1] || (msg[2] & 0x80) == 0)
		return false;
	for (size_t i = 12; i < qlen; i++)
		if (tolower(msg[i]) != tolower(q[i]))
			return false;
	return true;
}

/* The latency at or under which a share p of the count answers fall, in µs. */
static uint64_t percentile(const uint32_t *hist, uint64_t count, double p)
{
	uint64_t rank = (uint64_t)(p * (double)count), seen = 0;

	if ((double)rank < p * (double)count)
		rank++;
	for (uint64_t us = 0; us < DNSQ_HIST_US; us++) {
		seen += hist[us];
		if (seen >= rank && seen > 0)
			return us;
	}
	return DNSQ_HIST_US;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "server", required_argument, NULL, 's' },
		{ "names", required_argument, NULL, 'f' },
		{ NULL, 0, NULL, 0 },
	};
	const char *server = NULL, *file = NULL;
	double secs = 2;
	uint64_t max = 1000000, sent = 0, answered = 0, lost = 0, failed = 0;
	struct sockaddr_in sin;
	struct names ns = { 0 };
	uint32_t *hist;
	int c, fd;

	while ((c = getopt_long(argc, argv, "s:f:t:n:", opts, NULL)) != -1) {
		switch (c) {
		case 's': server = optarg; break;
		case 'f': file = optarg; break;
		case 't': secs = atof(optarg); break;
		case 'n': max = strtoull(optarg, NULL, 10); break;
		default: usage();
		}
	}
	if (server == NULL || file == NULL || secs <= 0 || max == 0 || optind != argc)
		usage();
	if (bench_loopback_addr(server, &sin) == -1) {
		fprintf(stderr, "dnsq: --server %s: want ADDR:PORT in 127.0.0.0/8\n", server);
		return 2;
	}
	if (names_load(file, &ns) == -1)
		return 1;
	hist = calloc(DNSQ_HIST_US, sizeof(*hist));
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (hist == NULL || fd == -1 || connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1) {
		fprintf(stderr, "dnsq: %s: %s\n", server, strerror(errno));
		return 1;
	}

	uint64_t start = bench_now_us(), end = start + (uint64_t)(secs * 1e6), now = start;
	while (sent < max && now < end) {
		uint8_t q[12 + DNSQ_QNAME_MAX + 4], msg[4096];
		size_t i = sent % ns.count, qlen = 12 + ns.len[i] + 4;
		uint16_t id;
		uint64_t t0;
		bool got = false;

		if (getrandom(&id, sizeof(id), 0) != (ssize_t)sizeof(id))
			id = (uint16_t)random();
		memset(q, 0, 12);
		q[0] = (uint8_t)(id >> 8);
		q[1] = (uint8_t)id;
		q[2] = 0x01; /* RD */
		q[5] = 1;    /* one question */
		memcpy(q + 12, ns.wire + ns.off[i], ns.len[i]);
		memcpy(q + 12 + ns.len[i], "\0\1\0\1", 4); /* A, IN */
		t0 = bench_now_us();
		if (send(fd, q, qlen, 0) != (ssize_t)qlen) {
			fprintf(stderr, "dnsq: send: %s\n", strerror(errno));
			return 1;
		}
		sent++;
		for (now = t0; !got && now - t0 < DNSQ_TIMEOUT_US; now = bench_now_us()) {
			struct pollfd p = { .fd = fd, .events = POLLIN };
			int wait_ms = (int)((DNSQ_TIMEOUT_US - (now - t0) + 999) / 1000);
			ssize_t n;

			if (poll(&p, 1, wait_ms) <= 0)
				continue;
			n = recv(fd, msg, sizeof(msg), 0);
			if (n > 0 && answers(msg, (size_t)n, q, qlen)) {
				got = true;
				now = bench_now_us();
				hist[now - t0 < DNSQ_HIST_US ? now - t0 : DNSQ_HIST_US - 1]++;
				answered++;
				if ((msg[3] & 0x0f) != 0)
					failed++;
				break;
			}
		}
		if (!got)
			lost++;
	}
	double run = (double)(now - start) / 1e6;
	uint64_t p50 = answered ? percentile(hist, answered, 0.5) : 0;
	uint64_t p99 = answered ? percentile(hist, answered, 0.99) : 0;

	printf("queries=%" PRIu64 " answered=%" PRIu64 " lost=%" PRIu64 " not_noerror=%" PRIu64
	       " secs=%.3f qps=%.1f p50_us=%" PRIu64 " p99_us=%" PRIu64 "\n", sent, answered, lost,
	       failed, run, run > 0 ? (double)answered / run : 0, p50, p99);
	close(fd);
	free(hist);
	free(ns.wire);
	free(ns.off);
	free(ns.len);
	return answered > 0 ? 0 : 1;
}
