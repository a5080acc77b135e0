/*
 * idle.c: the benchmark's idle-connection holder. Opens COUNT client
 * connections to a proxy and keeps them open and quiet, so the run script
 * can read what they cost the proxy (VmRSS) and time a normal request
 * while they are held:
 *
 *   idle --proxy ADDR:PORT --target ADDR:PORT -c COUNT [--request]
 *        [--path PATH] [-t HOLD_SECONDS]
 *
 * Without --request a connection sends nothing (connected, idle). With
 * --request it first carries one keep-alive absolute-form GET of PATH
 * (default /small) to the target and reads the whole response, at most
 * IDLE_INFLIGHT at a time, and then stays open: the connection "went idle"
 * after a request. Connects are paced too (IDLE_INFLIGHT in flight).
 *
 * When every connection is up (and answered) it prints one line and keeps
 * holding:
 *
 *   mode=idle c=10000 open=10000 answered=10000 errors=0 secs=1.234
 *
 * then, at -t seconds (default 30) or SIGTERM, a second line
 *
 *   held c=10000 open=9998 closed_by_peer=2
 *
 * and exits, closing everything. It raises its own RLIMIT_NOFILE as far as
 * the hard limit allows; it connects only inside 127.0.0.0/8. It parses
 * responses only as far as a Content-Length body needs.
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
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

#define IDLE_MAX_COUNT 100000
#define IDLE_INFLIGHT 64       /* connects, or requests, in flight at once */
#define IDLE_HEAD_MAX 4096     /* response head ceiling */
#define IDLE_SETUP_SECONDS 120 /* connecting and answering, at most */
#define IDLE_MAX_EVENTS 256

enum idle_state {
	I_WAIT,       /* not started yet */
	I_CONNECTING, /* TCP handshake in flight */
	I_SENDING,    /* writing the GET */
	I_READING,    /* reading the response */
	I_HELD,       /* up (and answered): idle */
	I_CLOSED,     /* failed, or closed by the proxy */
};

struct conn {
	int fd;
	enum idle_state state;
	size_t off;     /* request bytes written, or head bytes read */
	uint64_t left;  /* body bytes still to read once the head is in */
	bool in_body;
	char *head;     /* I_READING only: the response head so far; owned */
};

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int parse_addr(const char *spec, struct sockaddr_in *sin)
{
	if (bench_loopback_addr(spec, sin) == 0)
		return 0;
	fprintf(stderr, "idle: %s: want 127.x.y.z:PORT\n", spec);
	return -1;
}

static void conn_fail(struct conn *c, uint64_t *errors, const char *what, int err)
{
	if (*errors < 5)
		fprintf(stderr, "idle: %s: %s\n", what, err ? strerror(err) : "closed");
	(*errors)++;
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	free(c->head);
	c->head = NULL;
	c->state = I_CLOSED;
}

/* The Content-Length of a complete head (0 if none); -1 if not 2xx. */
static int64_t head_body_len(const char *h, size_t n)
{
	const char *p = h, *end = h + n;
	int64_t len = 0;

	if (n < 12 || strncmp(h, "HTTP/1.", 7) != 0 || h[9] != '2')
		return -1;
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));

		if (!eol)
			break;
		if ((size_t)(eol - p) > 15 && strncasecmp(p, "Content-Length:", 15) == 0)
			len = strtoll(p + 15, NULL, 10);
		p = eol + 1;
	}
	return len;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "target", required_argument, NULL, 'T' },
		{ "proxy", required_argument, NULL, 'P' },
		{ "path", required_argument, NULL, 'p' },
		{ "request", no_argument, NULL, 'r' },
		{ NULL, 0, NULL, 0 },
	};
	const char *target = NULL, *proxy = NULL, *path = "/small";
	struct sockaddr_in dial;
	struct epoll_event evs[IDLE_MAX_EVENTS];
	struct rlimit rl;
	struct conn *cs;
	char req[512];
	size_t reqlen;
	long count = 0, hold = 30, next = 0, inflight = 0, open = 0, answered = 0;
	uint64_t errors = 0;
	bool request = false;
	double t0, setup_end, hold_end;
	int ep, opt, w;

	while ((opt = getopt_long(argc, argv, "c:t:", opts, NULL)) != -1) {
		switch (opt) {
		case 'T': target = optarg; break;
		case 'P': proxy = optarg; break;
		case 'p': path = optarg; break;
		case 'r': request = true; break;
		case 'c': count = strtol(optarg, NULL, 10); break;
		case 't': hold = strtol(optarg, NULL, 10); break;
		default: goto usage;
		}
	}
	if (optind != argc || !target || !proxy || count < 1 || count > IDLE_MAX_COUNT ||
	    hold < 1 || hold > 600 || path[0] != '/' || strpbrk(path, " \r\n"))
		goto usage;
	if (parse_addr(proxy, &dial) == -1 || parse_addr(target, &(struct sockaddr_in){ 0 }) == -1)
		return 2;
	w = snprintf(req, sizeof(req), "GET http://%s%s HTTP/1.1\r\nHost: %s\r\n\r\n", target,
		     path, target);
	if (w < 0 || (size_t)w >= sizeof(req))
		goto usage;
	reqlen = (size_t)w;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)count + 64) {
		rl.rlim_cur = rl.rlim_max < (rlim_t)count + 64 ? rl.rlim_max : (rlim_t)count + 64;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	signal(SIGPIPE, SIG_IGN);
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	cs = calloc((size_t)count, sizeof(*cs));
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (!cs || ep == -1) {
		perror("idle: setup");
		return 1;
	}
	for (long i = 0; i < count; i++)
		cs[i].fd = -1;

	t0 = now_s();
	setup_end = t0 + IDLE_SETUP_SECONDS;
	/* setup: connect (and ask) with at most IDLE_INFLIGHT in flight */
	while (!stop && (next < count || inflight > 0) && now_s() < setup_end) {
		int n;

		while (next < count && inflight < IDLE_INFLIGHT) {
			struct conn *c = &cs[next++];
			struct epoll_event ev = { .events = EPOLLOUT, .data.ptr = c };
			int one = 1;

			c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
			if (c->fd == -1) {
				conn_fail(c, &errors, "socket", errno);
				continue;
			}
			setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
			if ((connect(c->fd, (struct sockaddr *)&dial, sizeof(dial)) == -1 &&
			     errno != EINPROGRESS) ||
			    epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev) == -1) {
				conn_fail(c, &errors, "connect", errno);
				continue;
			}
			c->state = I_CONNECTING;
			inflight++;
		}
		n = epoll_wait(ep, evs, IDLE_MAX_EVENTS, 100);
		for (int i = 0; i < n; i++) {
			struct conn *c = evs[i].data.ptr;
			int err = 0;
			socklen_t elen = sizeof(err);
			ssize_t r;

			if (c->state == I_CONNECTING) {
				if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &elen) == -1)
					err = errno;
				if (err || (evs[i].events & (EPOLLERR | EPOLLHUP))) {
					conn_fail(c, &errors, "connect", err);
					inflight--;
					continue;
				}
				open++;
				if (!request) {
					struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP,
								  .data.ptr = c };

					epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
					c->state = I_HELD;
					inflight--;
					continue;
				}
				c->state = I_SENDING;
			}
			if (c->state == I_SENDING) {
				r = write(c->fd, req + c->off, reqlen - c->off);
				if (r > 0)
					c->off += (size_t)r;
				else if (r == -1 && errno != EAGAIN) {
					conn_fail(c, &errors, "write", errno);
					inflight--;
					continue;
				}
				if (c->off == reqlen) {
					struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };

					c->head = malloc(IDLE_HEAD_MAX);
					if (!c->head) {
						conn_fail(c, &errors, "malloc", ENOMEM);
						inflight--;
						continue;
					}
					epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
					c->state = I_READING;
					c->off = 0;
				}
				continue;
			}
			if (c->state == I_READING) {
				char *end;

				r = c->in_body ? read(c->fd, c->head, IDLE_HEAD_MAX)
					       : read(c->fd, c->head + c->off, IDLE_HEAD_MAX - c->off);
				if (r <= 0) {
					if (r == -1 && errno == EAGAIN)
						continue;
					conn_fail(c, &errors, "read", r == 0 ? 0 : errno);
					inflight--;
					continue;
				}
				if (c->in_body) {
					c->left = (uint64_t)r >= c->left ? 0 : c->left - (uint64_t)r;
				} else {
					int64_t len;

					c->off += (size_t)r;
					end = memmem(c->head, c->off, "\r\n\r\n", 4);
					if (!end) {
						if (c->off == IDLE_HEAD_MAX) {
							conn_fail(c, &errors, "response head", 0);
							inflight--;
						}
						continue;
					}
					len = head_body_len(c->head, c->off);
					if (len < 0) {
						conn_fail(c, &errors, "response status", 0);
						inflight--;
						continue;
					}
					c->in_body = true;
					c->left = (uint64_t)len - (c->off - (size_t)(end + 4 - c->head));
				}
				if (c->left == 0) {
					struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP,
								  .data.ptr = c };

					epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
					c->state = I_HELD;
					free(c->head);
					c->head = NULL;
					answered++;
					inflight--;
				}
				continue;
			}
			if (c->state == I_HELD) {
				conn_fail(c, &errors, "held connection", 0);
				open--;
			}
		}
	}
	printf("mode=idle c=%ld open=%ld answered=%ld errors=%" PRIu64 " secs=%.3f\n", count,
	       open, answered, errors, now_s() - t0);
	fflush(stdout);

	/* hold: only a peer closing (or a stray byte) wakes us */
	hold_end = now_s() + (double)hold;
	long closed = 0;

	while (!stop && now_s() < hold_end) {
		int n = epoll_wait(ep, evs, IDLE_MAX_EVENTS, 200);

		for (int i = 0; i < n; i++) {
			struct conn *c = evs[i].data.ptr;

			if (c->state != I_HELD)
				continue;
			epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
			close(c->fd);
			c->fd = -1;
			c->state = I_CLOSED;
			closed++;
		}
	}
	printf("held c=%ld open=%ld closed_by_peer=%ld\n", count, open - closed, closed);
	fflush(stdout);
	for (long i = 0; i < count; i++)
		if (cs[i].fd >= 0)
			close(cs[i].fd);
	free(cs);
	close(ep);
	return 0;
usage:
	fprintf(stderr, "usage: idle --proxy ADDR:PORT --target ADDR:PORT -c COUNT [--request]\n"
			"            [--path PATH] [-t HOLD_SECONDS]\n");
	return 2;
}
