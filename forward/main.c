/*
 * main.c: sluice-forward, the stamping forwarder.
 *
 * Reads like a script: arguments, key, listeners (inside --netns when
 * given, so a sandbox's containers reach it at their own gateway while its
 * upstream connections leave from this namespace), signals, the loop.
 * SIGHUP re-reads the key file (after `sluice key rotate`); SIGINT and
 * SIGTERM stop it. Not yet: following a namespace that is re-created, and
 * attribution by cgroup on a second listener (issue 3).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "file.h"
#include "forward.h"

static const char *key_path;
static struct loop_io sig_io = { .fd = -1 };

static void usage(void)
{
	fprintf(stderr,
		"usage: sluice-forward --key FILE --net NAME [--netns PATH] LISTEN=UPSTREAM...\n"
		"  LISTEN, UPSTREAM  numeric ADDR:PORT or [V6]:PORT\n"
		"  --key FILE        the stamp keys (STATE/stamp.key from `sluice key init`)\n"
		"  --net NAME        the network name every stamp carries\n"
		"  --netns PATH      listen inside this network namespace (e.g. /run/netns/vm)\n"
		"exit: 0 stopped by a signal, 1 could not start, 2 usage\n");
}

static int parse_addr(const char *s, struct sockaddr_storage *ss)
{
	char host[64];
	const char *colon = strrchr(s, ':');
	size_t hl;
	long port;
	char *end;

	memset(ss, 0, sizeof(*ss));
	if (colon == NULL)
		return -1;
	port = strtol(colon + 1, &end, 10);
	if (*end != '\0' || port < 1 || port > 65535)
		return -1;
	hl = (size_t)(colon - s);
	if (hl >= 2 && s[0] == '[' && s[hl - 1] == ']') {
		struct sockaddr_in6 *in6 = (void *)ss;

		if (hl - 2 >= sizeof(host))
			return -1;
		memcpy(host, s + 1, hl - 2);
		host[hl - 2] = '\0';
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)port);
		return inet_pton(AF_INET6, host, &in6->sin6_addr) == 1 ? 0 : -1;
	}
	if (hl >= sizeof(host))
		return -1;
	memcpy(host, s, hl);
	host[hl] = '\0';
	struct sockaddr_in *in = (void *)ss;

	in->sin_family = AF_INET;
	in->sin_port = htons((uint16_t)port);
	return inet_pton(AF_INET, host, &in->sin_addr) == 1 ? 0 : -1;
}

/* Load the current key (the one without expiry). Returns 0 or -1 after printing. */
static int load_key(struct forwarder *fw)
{
	struct stamp_key keys[STAMP_KEYS_MAX];
	size_t len = 0, n = 0, line = 0;
	const char *err = NULL;
	char *buf;
	int ret = -1;

	if (file_read(key_path, 8192, &buf, &len) == -1) {
		fprintf(stderr, "sluice-forward: key %s: %s\n", key_path, strerror(errno));
		return -1;
	}
	if (stamp_keys_parse(buf, len, keys, STAMP_KEYS_MAX, &n, &line, &err) == -1) {
		fprintf(stderr, "sluice-forward: key %s:%zu: %s\n", key_path, line, err);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		if (keys[i].expires == 0) {
			fw->key = keys[i];
			ret = 0;
		}
	}
	if (ret == -1)
		fprintf(stderr, "sluice-forward: key %s: no current key\n", key_path);
out:
	explicit_bzero(buf, len);
	free(buf);
	explicit_bzero(keys, sizeof(keys));
	return ret;
}

static void on_accept(struct loop *l, struct loop_io *io, uint32_t events)
{
	struct fwd_listener *ln = io->arg;

	for (int i = 0; i < 64; i++) {
		struct sockaddr_storage peer;
		socklen_t len = sizeof(peer);
		int fd = accept4(io->fd, (struct sockaddr *)&peer, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd == -1)
			return;
		conn_accept(ln->fw, ln, fd, &peer);
	}
}

static int listen_on(struct forwarder *fw, struct fwd_listener *ln)
{
	socklen_t len = ln->addr.ss_family == AF_INET ? sizeof(struct sockaddr_in)
						      : sizeof(struct sockaddr_in6);
	int one = 1;
	int fd = socket(ln->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd == -1)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (const struct sockaddr *)&ln->addr, len) == -1 || listen(fd, 1024) == -1 ||
	    loop_io_add(fw->loop, &ln->io, fd, EPOLLIN, on_accept, ln) == -1) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return 0;
}

static void on_signal(struct loop *l, struct loop_io *io, uint32_t events)
{
	struct forwarder *fw = io->arg;
	struct signalfd_siginfo si;

	while (read(io->fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGHUP) {
			if (load_key(fw) == 0)
				fprintf(stderr, "sluice-forward: key %u is current\n", fw->key.kid);
		} else {
			loop_stop(l);
		}
	}
}

static void before_sleep(struct loop *l, void *arg)
{
	conn_free_dead(arg);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "key", required_argument, NULL, 'k' },
		{ "net", required_argument, NULL, 'n' },
		{ "netns", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct forwarder fw;
	const char *netns = NULL, *net = NULL;
	unsigned char raw[8];
	int opt, self_ns = -1, ret = 1;
	sigset_t set;

	memset(&fw, 0, sizeof(fw));
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case 'k': key_path = optarg; break;
		case 'n': net = optarg; break;
		case 's': netns = optarg; break;
		default: usage(); return 2;
		}
	}
	if (key_path == NULL || net == NULL || optind == argc || argc - optind > FWD_LISTEN_MAX ||
	    strlen(net) > STAMP_NET_MAX) {
		usage();
		return 2;
	}
	snprintf(fw.net, sizeof(fw.net), "%s", net);
	for (int i = optind; i < argc; i++) {
		struct fwd_listener *ln = &fw.listeners[fw.nlisteners++];
		char *eq = strchr(argv[i], '=');

		ln->fw = &fw;
		ln->io.fd = -1;
		if (eq == NULL)
			goto bad_pair;
		*eq = '\0';
		if (parse_addr(argv[i], &ln->addr) == -1 || parse_addr(eq + 1, &ln->upstream) == -1)
			goto bad_pair;
		continue;
bad_pair:
		fprintf(stderr, "sluice-forward: bad LISTEN=UPSTREAM \"%s\"\n", argv[i]);
		return 2;
	}
	if (load_key(&fw) == -1)
		return 1;
	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		return 1;
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(fw.boot + 2 * i, 3, "%02x", raw[i]);

	fw.loop = loop_new();
	if (fw.loop == NULL)
		return 1;
	if (netns != NULL) {
		int fd = open(netns, O_RDONLY | O_CLOEXEC);

		self_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
		if (fd == -1 || self_ns == -1 || setns(fd, CLONE_NEWNET) == -1) {
			fprintf(stderr, "sluice-forward: netns %s: %s\n", netns, strerror(errno));
			goto out;
		}
		close(fd);
	}
	for (size_t i = 0; i < fw.nlisteners; i++) {
		if (listen_on(&fw, &fw.listeners[i]) == -1) {
			fprintf(stderr, "sluice-forward: listen: %s\n", strerror(errno));
			goto out;
		}
	}
	/* upstream connections leave from our own namespace */
	if (self_ns != -1 && setns(self_ns, CLONE_NEWNET) == -1) {
		fprintf(stderr, "sluice-forward: back to own netns: %s\n", strerror(errno));
		goto out;
	}
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigprocmask(SIG_BLOCK, &set, NULL);
	if (loop_io_add(fw.loop, &sig_io, signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC), EPOLLIN,
			on_signal, &fw) == -1)
		goto out;
	loop_set_hook(fw.loop, before_sleep, &fw);
	fprintf(stderr, "sluice-forward: running: net %s, boot %s, key %u, %zu listeners\n",
		fw.net, fw.boot, fw.key.kid, fw.nlisteners);
	ret = loop_run(fw.loop) == 0 ? 0 : 1;
out:
	explicit_bzero(&fw.key, sizeof(fw.key));
	if (self_ns != -1)
		close(self_ns);
	conn_free_dead(&fw);
	loop_free(fw.loop);
	return ret;
}
