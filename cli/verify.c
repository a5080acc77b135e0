/*
 * verify.c: `sluice verify`: prove the wall from inside the sandbox.
 *
 * Run as the sandboxed user, it first asks the proxy for http://TARGET/
 * (the positive control: any HTTP answer, a 403 included, shows the proxy
 * is reachable; with --probe NONCE, `sluice run`'s, the path is
 * /.sluice-probe/NONCE, by which the proxy logs it as the run's probe), then tries every way around it: direct TCP to TARGET:443
 * and :80, DNS to TARGET:53 over UDP (a real query) and TCP, DNS over TLS
 * (:853), UDP 443 (QUIC), IPv6 TCP to --target6, and the proxy's port
 * without the forwarder (--proxy-direct). Each probe must be refused at
 * once (reset, ICMP unreachable or prohibited, a local reject); a probe
 * that hangs until the timeout is "timeout" (blocked silently, not proven
 * refused), one that connects is "open", a DNS query that gets a reply is
 * "answered". All are findings, and so is "error" (an errno that is
 * none of these, named on stderr).
 *
 * Exit 0: the control worked and every probe was refused; 1: a finding
 * (each named on stderr); 2: the control failed ("unproven": a wall that
 * also stops the proxy proves nothing) or a usage error. It changes no
 * rule and sends only to the addresses it is given.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "digits.h"
#include "runnote.h"
#include "sockaddr.h"

#define PROBES_MAX 10
#define TIMEOUT_DEFAULT_MS 1000

enum result { R_REFUSED, R_OPEN, R_TIMEOUT, R_ANSWERED, R_ERROR };

static const char *const result_names[] = {
	[R_REFUSED] = "refused", [R_OPEN] = "open", [R_TIMEOUT] = "timeout",
	[R_ANSWERED] = "answered", [R_ERROR] = "error",
};

struct probe {
	const char *name;
	char target[80]; /* "ADDR:PORT", "[V6]:PORT" */
	enum result result;
	int err;         /* errno behind refused / error; 0 otherwise */
	long ms;         /* time to the result */
};

struct addr {
	struct sockaddr_storage ss;
	socklen_t len;
	bool set;
};

/*
 * With port nonzero the address alone ("ADDR", "[V6]" or a bare V6) at that port; with port 0
 * "ADDR:PORT" or "[V6]:PORT" (sockaddr.h's grammar). Returns 0 or -1.
 */
static int addr_parse(const char *s, unsigned port, struct addr *a)
{
	memset(a, 0, sizeof(*a));
	if (sockaddr_parse(s, port != 0 ? SOCKADDR_NO_PORT : 0, (uint16_t)port, &a->ss) == -1)
		return -1;
	a->len = a->ss.ss_family == AF_INET ? sizeof(struct sockaddr_in)
					     : sizeof(struct sockaddr_in6);
	a->set = true;
	return 0;
}

static void addr_with_port(const struct addr *a, unsigned port, struct addr *out)
{
	*out = *a;
	if (out->ss.ss_family == AF_INET)
		((struct sockaddr_in *)&out->ss)->sin_port = htons((uint16_t)port);
	else
		((struct sockaddr_in6 *)&out->ss)->sin6_port = htons((uint16_t)port);
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* An errno that means the network (or a local rule) said no at once. */
static bool errno_refused(int e)
{
	return e == ECONNREFUSED || e == ECONNRESET || e == EHOSTUNREACH || e == ENETUNREACH ||
	       e == EPERM || e == EACCES || e == EPROTO ||
	       e == EAFNOSUPPORT || e == EADDRNOTAVAIL; /* no such family or source here: no way out */
}

/* Wait up to ms (from start) for events on fd. Returns poll's result: 1, 0 (timeout) or -1. */
static int wait_fd(int fd, short events, long start, int ms)
{
	struct pollfd pfd = { .fd = fd, .events = events };
	int left = ms - (int)(now_ms() - start), n;

	if (left < 0)
		left = 0;
	do
		n = poll(&pfd, 1, left);
	while (n == -1 && errno == EINTR);
	return n;
}

static void classify_errno(struct probe *p, int e)
{
	p->err = e;
	p->result = errno_refused(e) ? R_REFUSED : R_ERROR;
}

/*
 * Start a non-blocking TCP connect to a and wait for it. Returns the
 * connected fd (the caller closes it) with p->result R_OPEN, or -1 with
 * p->result set to refused / timeout / error.
 */
static int tcp_connect(const struct addr *a, int timeout_ms, long start, struct probe *p)
{
	int fd = socket(a->ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), e = 0;
	socklen_t elen = sizeof(e);

	if (fd == -1) {
		classify_errno(p, errno);
		return -1;
	}
	if (connect(fd, (const struct sockaddr *)&a->ss, a->len) == 0) {
		p->result = R_OPEN;
		return fd;
	}
	if (errno != EINPROGRESS) {
		classify_errno(p, errno);
		goto out_close_fd;
	}
	switch (wait_fd(fd, POLLOUT, start, timeout_ms)) {
	case 0:
		p->result = R_TIMEOUT;
		goto out_close_fd;
	case -1:
		classify_errno(p, errno);
		goto out_close_fd;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &elen) == -1)
		e = errno;
	if (e != 0) {
		classify_errno(p, e);
		goto out_close_fd;
	}
	p->result = R_OPEN;
	return fd;
out_close_fd:
	close(fd);
	return -1;
}

static void probe_tcp(const struct addr *a, int timeout_ms, struct probe *p)
{
	long start = now_ms();
	int fd = tcp_connect(a, timeout_ms, start, p);

	if (fd != -1)
		close(fd);
	p->ms = now_ms() - start;
}

/* A DNS query for "example." type A, id 0x5a1c, recursion desired. */
static const unsigned char dns_query[] = {
	0x5a, 0x1c, 0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	7, 'e', 'x', 'a', 'm', 'p', 'l', 'e', 0, 0x00, 0x01, 0x00, 0x01,
};

/*
 * Send payload on a connected UDP socket and wait for a reply or an error.
 * A reply is "answered"; an ICMP error (seen as ECONNREFUSED and the like
 * on send or receive) or a local reject (EPERM) is "refused"; silence is
 * "timeout" (not proven refused).
 */
static void probe_udp(const struct addr *a, const void *payload, size_t len, int timeout_ms,
		      struct probe *p)
{
	long start = now_ms();
	int fd = socket(a->ss.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	unsigned char reply[512];

	if (fd == -1) {
		classify_errno(p, errno);
		goto out;
	}
	if (connect(fd, (const struct sockaddr *)&a->ss, a->len) == -1 ||
	    send(fd, payload, len, 0) == -1) {
		classify_errno(p, errno);
		goto out_close_fd;
	}
	for (;;) {
		int n = wait_fd(fd, POLLIN, start, timeout_ms);

		if (n == 0) {
			p->result = R_TIMEOUT;
			break;
		}
		if (n == -1) {
			classify_errno(p, errno);
			break;
		}
		if (recv(fd, reply, sizeof(reply), 0) >= 0) {
			p->result = R_ANSWERED;
			break;
		}
		if (errno != EAGAIN && errno != EINTR) {
			classify_errno(p, errno);
			break;
		}
	}
out_close_fd:
	close(fd);
out:
	p->ms = now_ms() - start;
}

/*
 * The positive control: GET http://TARGET/PATH through the proxy; any
 * "HTTP/1.x NNN" status line is an answer. Fills p; true when answered.
 */
static bool control(const struct addr *proxy, const char *target, const char *path, int timeout_ms,
		    struct probe *p)
{
	long start = now_ms();
	int fd = tcp_connect(proxy, timeout_ms, start, p);
	char req[256], resp[64];
	size_t got = 0;
	int n;
	bool ok = false;

	if (fd == -1)
		goto out;
	n = snprintf(req, sizeof(req),
		     "GET http://%s%s HTTP/1.1\r\nHost: %s\r\nUser-Agent: sluice-verify\r\n"
		     "Connection: close\r\n\r\n",
		     target, path, target);
	/* the request is small: one send fits the fresh socket's buffer */
	if (send(fd, req, (size_t)n, MSG_NOSIGNAL) != n) {
		classify_errno(p, errno);
		goto out_close_fd;
	}
	while (got < 12) {
		ssize_t r;

		n = wait_fd(fd, POLLIN, start, timeout_ms * 5); /* the proxy may wait on the origin */
		if (n == 0) {
			p->result = R_TIMEOUT;
			goto out_close_fd;
		}
		r = n == 1 ? recv(fd, resp + got, sizeof(resp) - 1 - got, 0) : -1;
		if (r == -1 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (r <= 0) {
			classify_errno(p, r == 0 ? ECONNRESET : errno);
			goto out_close_fd;
		}
		got += (size_t)r;
	}
	resp[got] = '\0';
	ok = strncmp(resp, "HTTP/1.", 7) == 0 && resp[8] == ' ';
	p->result = ok ? R_ANSWERED : R_ERROR;
out_close_fd:
	close(fd);
out:
	p->ms = now_ms() - start;
	return ok;
}

static void usage_error(const char *msg, const char *arg)
{
	fprintf(stderr, "sluice verify: %s%s%s\n", msg, arg != NULL ? ": " : "", arg != NULL ? arg : "");
	cli_usage(stderr, "verify");
}

static const char *verdict_name(int status)
{
	return status == 0 ? "pass" : status == 1 ? "leak" : "unproven";
}

static void print_json(const struct probe *probes, size_t n, int status)
{
	json_t *root = json_object(), *arr = json_array();
	char *s;

	if (root == NULL || arr == NULL)
		goto out;
	json_object_set_new(root, "verdict", json_string(verdict_name(status)));
	for (size_t i = 0; i < n; i++) {
		json_t *o = json_pack("{s:s, s:s, s:s, s:I}", "name", probes[i].name, "target",
				      probes[i].target, "result", result_names[probes[i].result], "ms",
				      (json_int_t)probes[i].ms);

		if (o != NULL)
			json_array_append_new(arr, o);
	}
	json_object_set(root, "probes", arr);
	s = json_dumps(root, JSON_COMPACT);
	if (s != NULL) {
		puts(s);
		free(s);
	}
out:
	json_decref(arr);
	json_decref(root);
}

static void put_finding(const struct probe *p, int timeout_ms)
{
	fprintf(stderr, "sluice verify: leak: %s %s: ", p->name, p->target);
	switch (p->result) {
	case R_OPEN:
		fprintf(stderr, "open (connected)\n");
		break;
	case R_ANSWERED:
		fprintf(stderr, "answered\n");
		break;
	case R_TIMEOUT:
		fprintf(stderr, "blocked silently (no refusal within %d ms)\n", timeout_ms);
		break;
	default:
		cli_put_strerror(stderr, p->err);
		fputc('\n', stderr);
		break;
	}
}

/* What the options of `sluice verify` ask for. */
struct verify_opts {
	struct addr proxy, target, target6, direct; /* target6, direct: .set when given */
	const char *proxy_s, *target_s;
	char path[sizeof(RUNNOTE_PROBE_PATH) + RUNNOTE_NONCE_LEN]; /* the control's path */
	int timeout_ms;
	bool json;
};

/* One option (getopt_long's opt, its optarg) into o. Returns 0, or the exit status. */
static int option_read(struct verify_opts *o, int opt, const char *arg)
{
	switch (opt) {
	case 'p':
		o->proxy_s = arg;
		return 0;
	case 't':
		o->target_s = arg;
		return 0;
	case '6':
		if (addr_parse(arg, 443, &o->target6) == -1 || o->target6.ss.ss_family != AF_INET6) {
			usage_error("--target6 wants an IPv6 address", arg);
			return EXIT_USAGE;
		}
		return 0;
	case 'd':
		if (addr_parse(arg, 0, &o->direct) == -1) {
			usage_error("--proxy-direct wants ADDR:PORT", arg);
			return EXIT_USAGE;
		}
		return 0;
	case 'T': {
		uint64_t v;

		if (digits_text(arg, 10, 1, 60000, &v) == -1) {
			usage_error("--timeout-ms wants 1..60000", arg);
			return EXIT_USAGE;
		}
		o->timeout_ms = (int)v;
		return 0;
	}
	case 'j':
		o->json = true;
		return 0;
	case 'P': /* `sluice run`'s: its proxy knows the control request as the run's probe */
		if (strlen(arg) != RUNNOTE_NONCE_LEN ||
		    !hex_is_lower(arg, RUNNOTE_NONCE_LEN)) {
			usage_error("--probe wants 32 lowercase hex digits", arg);
			return EXIT_USAGE;
		}
		snprintf(o->path, sizeof(o->path), "%s%s", RUNNOTE_PROBE_PATH, arg);
		return 0;
	case 'h':
		cli_usage(stdout, "verify");
		return EXIT_OK;
	default:
		cli_usage(stderr, "verify");
		return EXIT_USAGE;
	}
}

/* The options into o, the proxy and target checked. Returns -1 to go on, or the exit status. */
static int args_parse(int argc, char **argv, struct verify_opts *o)
{
	static const struct option longopts[] = {
		{ "proxy", required_argument, NULL, 'p' },
		{ "target", required_argument, NULL, 't' },
		{ "target6", required_argument, NULL, '6' },
		{ "proxy-direct", required_argument, NULL, 'd' },
		{ "timeout-ms", required_argument, NULL, 'T' },
		{ "json", no_argument, NULL, 'j' },
		{ "probe", required_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int opt, ret;

	memset(o, 0, sizeof(*o));
	o->proxy_s = "127.0.0.1:3128";
	o->path[0] = '/';
	o->timeout_ms = TIMEOUT_DEFAULT_MS;
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		ret = option_read(o, opt, optarg);
		if (ret != 0 || opt == 'h')
			return ret;
	}
	if (optind != argc) {
		usage_error("unexpected argument", argv[optind]);
		return EXIT_USAGE;
	}
	if (addr_parse(o->proxy_s, 0, &o->proxy) == -1) {
		usage_error("--proxy wants ADDR:PORT", o->proxy_s);
		return EXIT_USAGE;
	}
	if (o->target_s == NULL) {
		usage_error("--target ADDR is required (an outside IPv4 address the wall must refuse)",
			    NULL);
		return EXIT_USAGE;
	}
	if (addr_parse(o->target_s, 80, &o->target) == -1 || o->target.ss.ss_family != AF_INET) {
		usage_error("--target wants an IPv4 address", o->target_s);
		return EXIT_USAGE;
	}
	return -1;
}

/*
 * The control (probes[0]), then every way around the proxy, into probes
 * (PROBES_MAX). Returns how many ran; *answered: whether the control did.
 */
static size_t probes_run(const struct verify_opts *o, struct probe *probes, bool *answered)
{
	static const struct {
		const char *name;
		unsigned port;
		bool udp;
	} plan[] = {
		{ "tcp443", 443, false }, { "tcp80", 80, false }, { "dns-udp", 53, true },
		{ "dns-tcp", 53, false }, { "dot", 853, false },  { "quic", 443, true },
	};
	struct addr a;
	size_t n = 0;

	memset(probes, 0, PROBES_MAX * sizeof(*probes));
	probes[n].name = "proxy";
	sockaddr_format(&o->proxy.ss, probes[n].target, sizeof(probes[n].target));
	*answered = control(&o->proxy, o->target_s, o->path, o->timeout_ms, &probes[n]);
	n++;

	for (size_t i = 0; i < sizeof(plan) / sizeof(plan[0]); i++) {
		static const unsigned char quic[] = { 0xc3, 0, 0, 0, 1, 8, 's', 'l', 'u', 'i', 'c', 'e', 0, 0 };
		struct probe *p = &probes[n++];

		p->name = plan[i].name;
		addr_with_port(&o->target, plan[i].port, &a);
		sockaddr_format(&a.ss, p->target, sizeof(p->target));
		if (!plan[i].udp)
			probe_tcp(&a, o->timeout_ms, p);
		else if (plan[i].port == 53)
			probe_udp(&a, dns_query, sizeof(dns_query), o->timeout_ms, p);
		else
			probe_udp(&a, quic, sizeof(quic), o->timeout_ms, p);
	}
	if (o->target6.set) {
		probes[n].name = "tcp6";
		sockaddr_format(&o->target6.ss, probes[n].target, sizeof(probes[n].target));
		probe_tcp(&o->target6, o->timeout_ms, &probes[n++]);
	}
	if (o->direct.set) {
		probes[n].name = "proxy-direct";
		sockaddr_format(&o->direct.ss, probes[n].target, sizeof(probes[n].target));
		probe_tcp(&o->direct, o->timeout_ms, &probes[n++]);
	}
	return n;
}

/*
 * The exit status of n probes (probes[0] the control, answered or not),
 * each finding and an unanswered control said on stderr.
 */
static int verdict(const struct verify_opts *o, const struct probe *probes, size_t n,
		   bool answered)
{
	int status = EXIT_OK;

	if (!answered) {
		status = EXIT_USAGE; /* 2: could not assess */
		fprintf(stderr, "sluice verify: unproven: proxy %s did not answer GET http://%s/: ",
			probes[0].target, o->target_s);
		if (probes[0].result == R_TIMEOUT)
			fprintf(stderr, "no answer within %d ms\n", o->timeout_ms * 5);
		else if (probes[0].result == R_OPEN || probes[0].err == 0)
			fprintf(stderr, "not an HTTP response\n");
		else {
			cli_put_strerror(stderr, probes[0].err);
			fputc('\n', stderr);
		}
	}
	for (size_t i = 1; i < n; i++) {
		if (probes[i].result == R_REFUSED)
			continue;
		put_finding(&probes[i], o->timeout_ms);
		if (status == EXIT_OK)
			status = EXIT_ERROR;
	}
	return status;
}

int cmd_verify(int argc, char **argv)
{
	struct verify_opts o;
	struct probe probes[PROBES_MAX];
	size_t n;
	bool answered;
	int status = args_parse(argc, argv, &o);

	if (status != -1)
		return status;
	n = probes_run(&o, probes, &answered);
	status = verdict(&o, probes, n, answered);
	if (o.json)
		print_json(probes, n, status);
	else if (status == EXIT_OK)
		printf("pass: proxy %s answered; %zu probes refused\n", probes[0].target, n - 1);
	return status;
}
