/*
 * wall_denied.c: `sluice wall denied`: show the refusals a wall logs to an
 * NFLOG group, one line each, as they happen.
 *
 * A wall that logs with `log group N prefix "sluice PROFILE REASON: "`
 * hands each refused packet to whoever listens on group N in that network
 * namespace (the kernel's own syslog logger is off outside the initial
 * one). This listens: it enters --netns first (NFLOG groups are per
 * namespace), binds the group, asks for the packet's first bytes and
 * prints each denied packet lib/denied.c reads, with the uid the kernel
 * adds for a packet that has a socket, stamped with the time it arrived
 * (UTC, milliseconds). It does not load or change any rule; a packet it cannot
 * read is printed as such, never skipped.
 *
 * Exit status: 0 after --count lines or on SIGINT/SIGTERM, 1 when --timeout
 * passed first, 2 usage, 3 any other error (netlink, namespace, output).
 */
#include <errno.h>
#include <getopt.h>
#include <libnetfilter_log/libnetfilter_log.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "denied.h"
#include "digits.h"

#define WALL_DENIED_EXIT_TIMEOUT 1
#define WALL_DENIED_EXIT_FAIL 3
#define COPY_BYTES 256          /* of each packet: IP and L4 headers with room to spare */
#define TIMEOUT_MAX (24 * 3600) /* --timeout: seconds, at most a day */

/* What the listener prints, how many lines, and how it went. */
struct listener {
	bool json;
	unsigned long count; /* lines to print before exiting 0; 0: no limit */
	unsigned long lines; /* printed so far */
	bool failed;         /* stdout could not be written */
};

static volatile sig_atomic_t stop_signal;

static void on_stop(int sig)
{
	stop_signal = sig;
}

/* "2026-11-30T08:01:02.123Z", now, into buf. */
static void time_now(char *buf, size_t size)
{
	struct timespec ts;
	struct tm tm;
	char sec[32];

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(sec, sizeof(sec), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, size, "%s.%03ldZ", sec, ts.tv_nsec / 1000000);
}

/* One denied packet from the kernel: read it and print its line. */
static int on_packet(struct nflog_g_handle *gh, struct nfgenmsg *nfmsg, struct nflog_data *nfd,
		     void *data)
{
	struct listener *d = data;
	struct denied r;
	char when[40], line[DENIED_LINE_MAX];
	const char *prefix = nflog_get_prefix(nfd), *err;
	char *payload = NULL;
	int plen = nflog_get_payload(nfd, &payload);
	uint32_t uid = 0;
	/* no flag asks for it: the kernel adds the uid whenever the packet has a socket */
	bool has_uid = nflog_get_uid(nfd, &uid) == 0;

	if (d->count != 0 && d->lines >= d->count)
		return 0; /* the rest of this batch arrived after we were done */
	if (prefix == NULL)
		prefix = "";
	if (plen < 0 || payload == NULL)
		plen = 0;
	time_now(when, sizeof(when));
	if (denied_parse(prefix, strlen(prefix), (const uint8_t *)payload, (size_t)plen, &r,
			 &err) == -1) {
		if (d->json)
			printf("{\"time\":\"%s\",\"prefix\":\"%s\",\"error\":\"%s\"}\n", when,
			       r.prefix, err);
		else
			printf("%s could not read a refusal (prefix \"%s\"): %s\n", when, r.prefix,
			       err);
	} else if (denied_format(&r, uid, has_uid, d->json, line, sizeof(line)) == -1) {
		printf(d->json ? "{\"time\":\"%s\",\"error\":\"line too long\"}\n"
			       : "%s could not show a refusal: line too long\n", when);
	} else {
		if (d->json)
			printf("{\"time\":\"%s\",%s\n", when, line + 1);
		else
			printf("%s %s\n", when, line);
	}
	if (fflush(stdout) == EOF)
		d->failed = true;
	d->lines++;
	return 0;
}

/*
 * Receive and print until --count lines, a signal or the deadline
 * (deadline_ms 0: none, else CLOCK_MONOTONIC in ms). Signals are blocked
 * but during ppoll, so none slips in between a check and the wait.
 */
static int listen_loop(struct nflog_handle *h, struct listener *d, long long deadline_ms,
		       const sigset_t *waitmask)
{
	static char buf[64 * 1024];
	struct pollfd pfd = { .fd = nflog_fd(h), .events = POLLIN };
	struct timespec now, left;
	ssize_t n;

	for (;;) {
		if (d->failed) {
			fprintf(stderr, "wall denied: write to stdout failed\n");
			return WALL_DENIED_EXIT_FAIL;
		}
		if (stop_signal != 0 || (d->count != 0 && d->lines >= d->count))
			return EXIT_OK;
		if (deadline_ms != 0) {
			long long ms;

			clock_gettime(CLOCK_MONOTONIC, &now);
			ms = deadline_ms - ((long long)now.tv_sec * 1000 + now.tv_nsec / 1000000);
			if (ms <= 0) {
				fprintf(stderr, "wall denied: timeout after %lu refusals", d->lines);
				if (d->count != 0)
					fprintf(stderr, " of the %lu asked for", d->count);
				fputc('\n', stderr);
				return WALL_DENIED_EXIT_TIMEOUT;
			}
			left.tv_sec = ms / 1000;
			left.tv_nsec = ms % 1000 * 1000000;
		}
		if (ppoll(&pfd, 1, deadline_ms != 0 ? &left : NULL, waitmask) == -1) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "wall denied: poll: ");
			goto out_errno;
		}
		if ((pfd.revents & (POLLIN | POLLERR)) == 0)
			continue;
		n = recv(pfd.fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n == -1) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			if (errno == ENOBUFS) {
				fprintf(stderr, "wall denied: the kernel dropped some refusals "
						"(socket buffer full)\n");
				continue;
			}
			fprintf(stderr, "wall denied: recv: ");
			goto out_errno;
		}
		nflog_handle_packet(h, buf, (int)n);
	}
out_errno:
	cli_put_strerror(stderr, errno);
	fputc('\n', stderr);
	return WALL_DENIED_EXIT_FAIL;
}

/* Bind group on a new NFLOG socket, then listen. Returns the exit status. */
static int listen_run(uint16_t group, struct listener *d, long long deadline_ms,
		      const sigset_t *waitmask)
{
	struct nflog_handle *h;
	struct nflog_g_handle *gh;
	int ret = WALL_DENIED_EXIT_FAIL;

	h = nflog_open();
	if (h == NULL) {
		fprintf(stderr, "wall denied: nflog open: ");
		cli_put_strerror(stderr, errno);
		fputc('\n', stderr);
		return WALL_DENIED_EXIT_FAIL;
	}
	gh = nflog_bind_group(h, group);
	if (gh == NULL) {
		fprintf(stderr, "wall denied: bind nflog group %u: ", group);
		cli_put_strerror(stderr, errno);
		fputs(" (another listener on it?)\n", stderr);
		goto out_close;
	}
	if (nflog_set_mode(gh, NFULNL_COPY_PACKET, COPY_BYTES) == -1) {
		fprintf(stderr, "wall denied: nflog group %u: cannot ask for packet bytes\n", group);
		goto out_unbind;
	}
	/* one message per packet: the kernel's default batches up to a second of them */
	if (nflog_set_qthresh(gh, 1) == -1) {
		fprintf(stderr, "wall denied: nflog group %u: cannot set the queue threshold\n", group);
		goto out_unbind;
	}
	nflog_callback_register(gh, on_packet, d);
	fprintf(stderr, "listening on nflog group %u\n", group);
	fflush(stderr);
	ret = listen_loop(h, d, deadline_ms, waitmask);
out_unbind:
	nflog_unbind_group(gh);
	gh = NULL;
out_close:
	nflog_close(h);
	h = NULL;
	return ret;
}

int wall_denied_cmd(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "group", required_argument, NULL, 'g' },
		{ "netns", required_argument, NULL, 'n' },
		{ "count", required_argument, NULL, 'c' },
		{ "timeout", required_argument, NULL, 't' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct listener d = { 0 };
	struct sigaction sa;
	sigset_t stopset, waitmask;
	struct timespec now;
	const char *netns = NULL;
	unsigned long group = 0, timeout = 0;
	long long deadline_ms = 0;
	bool has_group = false;
	int opt;

	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'g':
			if (digits_text(optarg, 10, 0, 65535, &group) == -1) {
				fprintf(stderr, "wall denied: bad --group \"%s\": 0 to 65535\n", optarg);
				return EXIT_USAGE;
			}
			has_group = true;
			break;
		case 'n':
			netns = optarg;
			break;
		case 'c':
			if (digits_text(optarg, 10, 1, ULONG_MAX, &d.count) == -1) {
				fprintf(stderr, "wall denied: bad --count \"%s\"\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case 't':
			if (digits_text(optarg, 10, 1, TIMEOUT_MAX, &timeout) == -1) {
				fprintf(stderr, "wall denied: bad --timeout \"%s\": 1 to %d seconds\n",
					optarg, TIMEOUT_MAX);
				return EXIT_USAGE;
			}
			break;
		case 'j':
			d.json = true;
			break;
		case 'h':
			cli_usage(stdout, "wall");
			return EXIT_OK;
		default:
			cli_usage(stderr, "wall");
			return EXIT_USAGE;
		}
	}
	if (optind != argc || !has_group) {
		if (!has_group)
			fprintf(stderr, "wall denied: --group N is required\n");
		cli_usage(stderr, "wall");
		return EXIT_USAGE;
	}
	if (netns != NULL && wall_netns_enter(netns) == -1)
		return WALL_DENIED_EXIT_FAIL;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN); /* a reader gone is a failed write (exit 3), not a kill */
	sigemptyset(&stopset);
	sigaddset(&stopset, SIGINT);
	sigaddset(&stopset, SIGTERM);
	sigprocmask(SIG_BLOCK, &stopset, &waitmask);
	sigdelset(&waitmask, SIGINT);
	sigdelset(&waitmask, SIGTERM);

	if (timeout != 0) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		deadline_ms = (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000 +
			      (long long)timeout * 1000;
	}
	return listen_run((uint16_t)group, &d, deadline_ms, &waitmask);
}
