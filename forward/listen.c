/*
 * listen.c: sluice-forward's listeners.
 *
 * The LISTEN=UPSTREAM listeners, and both sockets of each --dns pair (a
 * TCP listener and a UDP socket, dns.c), are made inside --netns PATH when
 * given (the sandbox's namespace, where containers reach them at their
 * gateway), else here; --own listeners always here, in our own namespace,
 * where the client's socket can be looked up to find its cgroup. A
 * namespace entered to make listeners is left again at once: every other
 * socket, upstream ones above all, is made in our own namespace.
 *
 * Following: every FWD_FOLLOW_MS PATH is stat'ed. When it names another
 * network namespace than the listeners are in (the sandbox was
 * re-created), fresh listeners are made there and only then are the old
 * ones closed; accepted connections are untouched, a --dns socket's UDP
 * flows are closed with it (their clients were in the old namespace, and
 * the new socket could only answer a stranger at the same address). While
 * PATH is missing
 * the old listeners stay. Listeners bind with IP_FREEBIND, so an address a
 * fresh namespace has not configured yet (lo still down) is no obstacle:
 * connections arrive once it exists.
 */
#include "forward.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/nsfs.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sock.h"

static void on_accept(struct loop *l, struct loop_io *io, uint32_t events)
{
	struct fwd_listener *ln = io->arg;

	for (int i = 0; i < 64; i++) {
		struct sockaddr_storage peer;
		socklen_t len = sizeof(peer);
		char as[STAMP_AS_MAX + 1];
		int fd = accept4(io->fd, (struct sockaddr *)&peer, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd == -1)
			return;
		/* never forwarded unattributed: no principal, no connection */
		if (ln->own && cgroup_attribute(ln->fw, fd, &peer, as) == -1) {
			sock_reset_on_close(fd);
			close(fd);
			continue;
		}
		/* a namespace listener's clients are all --as (a run's project), or nobody */
		conn_accept(ln->fw, ln, fd, &peer,
			    ln->own ? as : ln->fw->as[0] != '\0' ? ln->fw->as : NULL);
	}
}

/* The socket ln listens on, made in the namespace we are in. Returns the fd, or -1 with errno. */
static int listener_socket(const struct fwd_listener *ln)
{
	return ln->kind == FWD_DNS_UDP ? dns_socket(&ln->addr)
				       : sock_listen(&ln->addr, SOCK_LISTEN_FREEBIND);
}

/*
 * Make a socket for every --netns listener inside the namespace nsfd, into
 * fds[] (-1 for --own ones): all or none. Returns 0; -1 with errno when
 * one failed (none made); -2 when we could not come back to our own
 * namespace (fatal: upstream sockets would leave from the wrong one).
 */
static int listen_inside(struct forwarder *fw, int nsfd, int fds[FWD_LISTEN_MAX])
{
	int ret = 0, e = 0;
	size_t i;

	for (i = 0; i < fw->nlisteners; i++)
		fds[i] = -1;
	if (setns(nsfd, CLONE_NEWNET) == -1)
		return -1;
	for (i = 0; i < fw->nlisteners && ret == 0; i++) {
		if (fw->listeners[i].own)
			continue;
		fds[i] = listener_socket(&fw->listeners[i]);
		if (fds[i] == -1) {
			e = errno;
			ret = -1;
		}
	}
	if (setns(fw->self_ns, CLONE_NEWNET) == -1) {
		fprintf(stderr, "sluice-forward: back to own netns: %s\n", strerror(errno));
		e = errno;
		ret = -2;
	}
	if (ret != 0) {
		for (i = 0; i < fw->nlisteners; i++)
			if (fds[i] != -1)
				close(fds[i]);
		errno = e;
	}
	return ret;
}

/* Register fd for ln, closing the socket it replaces. Returns 0, or -1 after printing. */
static int listener_set(struct forwarder *fw, struct fwd_listener *ln, int fd)
{
	bool udp = ln->kind == FWD_DNS_UDP;

	if (ln->io.fd >= 0) {
		if (udp)
			dns_forget(fw, ln);
		loop_io_close(fw->loop, &ln->io);
	}
	if (loop_io_add(fw->loop, &ln->io, fd, EPOLLIN, udp ? dns_on_query : on_accept, ln) == -1) {
		fprintf(stderr, "sluice-forward: listen: epoll: %s\n", strerror(errno));
		close(fd);
		return -1;
	}
	return 0;
}

/* Swap in the sockets listen_inside made. Returns 0, or -1 after printing. */
static int listen_swap(struct forwarder *fw, int fds[FWD_LISTEN_MAX])
{
	int ret = 0;

	for (size_t i = 0; i < fw->nlisteners; i++) {
		if (fds[i] != -1 && listener_set(fw, &fw->listeners[i], fds[i]) == -1)
			ret = -1;
	}
	return ret;
}

/* Whether nsfd is a network namespace other than the one the listeners are in. */
static bool other_netns(const struct forwarder *fw, int nsfd, struct stat *st)
{
	return ioctl(nsfd, NS_GET_NSTYPE) == CLONE_NEWNET && fstat(nsfd, st) == 0 &&
	       (st->st_dev != fw->ns_dev || st->st_ino != fw->ns_ino);
}

static void on_follow(struct loop *l, struct loop_timer *t)
{
	struct forwarder *fw = t->arg;
	int fds[FWD_LISTEN_MAX];
	struct stat st;
	int nsfd, r;

	loop_timer_set(l, t, FWD_FOLLOW_MS, on_follow, fw);
	/* missing: the old listeners stay until a new namespace is there */
	if (stat(fw->netns, &st) == -1 || (st.st_dev == fw->ns_dev && st.st_ino == fw->ns_ino))
		return;
	nsfd = open(fw->netns, O_RDONLY | O_CLOEXEC);
	if (nsfd == -1)
		return;
	/* a file `ip netns add` has made but not yet mounted a namespace on: not yet */
	if (!other_netns(fw, nsfd, &st)) {
		close(nsfd);
		return;
	}
	r = listen_inside(fw, nsfd, fds);
	close(nsfd);
	if (r == -1) {
		/* once per namespace, then quietly on every tick */
		if (st.st_dev != fw->bad_dev || st.st_ino != fw->bad_ino)
			fprintf(stderr,
				"sluice-forward: following %s: listen in new namespace (inode %llu): "
				"%s; retrying\n",
				fw->netns, (unsigned long long)st.st_ino, strerror(errno));
		fw->bad_dev = st.st_dev;
		fw->bad_ino = st.st_ino;
		return;
	}
	if (r == -2 || listen_swap(fw, fds) == -1) {
		fw->failed = true;
		loop_stop(l);
		return;
	}
	fw->ns_dev = st.st_dev;
	fw->ns_ino = st.st_ino;
	fprintf(stderr, "sluice-forward: following %s: listening in new namespace (inode %llu)\n",
		fw->netns, (unsigned long long)st.st_ino);
}

/* The --netns listeners inside fw->netns, then following it. Returns 0 or -1 after printing. */
static int listen_netns(struct forwarder *fw)
{
	int fds[FWD_LISTEN_MAX];
	struct stat st;
	int nsfd, r;

	fw->self_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (fw->self_ns == -1) {
		fprintf(stderr, "sluice-forward: own netns: %s\n", strerror(errno));
		return -1;
	}
	nsfd = open(fw->netns, O_RDONLY | O_CLOEXEC);
	if (nsfd == -1 || !other_netns(fw, nsfd, &st)) {
		fprintf(stderr, "sluice-forward: netns %s: %s\n", fw->netns,
			nsfd == -1 ? strerror(errno) : "not a network namespace");
		if (nsfd != -1)
			close(nsfd);
		return -1;
	}
	r = listen_inside(fw, nsfd, fds);
	close(nsfd);
	if (r == -1)
		fprintf(stderr, "sluice-forward: listen in %s: %s\n", fw->netns, strerror(errno));
	if (r != 0 || listen_swap(fw, fds) == -1)
		return -1;
	fw->ns_dev = st.st_dev;
	fw->ns_ino = st.st_ino;
	loop_timer_set(fw->loop, &fw->follow, FWD_FOLLOW_MS, on_follow, fw);
	return 0;
}

int listen_start(struct forwarder *fw)
{
	bool inside = false;

	for (size_t i = 0; i < fw->nlisteners; i++) {
		struct fwd_listener *ln = &fw->listeners[i];
		int fd;

		if (fw->netns != NULL && !ln->own) {
			inside = true;
			continue;
		}
		fd = listener_socket(ln);
		if (fd == -1) {
			fprintf(stderr, "sluice-forward: listen: %s\n", strerror(errno));
			return -1;
		}
		if (listener_set(fw, ln, fd) == -1)
			return -1;
	}
	return inside ? listen_netns(fw) : 0;
}

void listen_stop(struct forwarder *fw)
{
	loop_timer_cancel(fw->loop, &fw->follow);
	for (size_t i = 0; i < fw->nlisteners; i++)
		if (fw->listeners[i].io.fd >= 0)
			loop_io_close(fw->loop, &fw->listeners[i].io);
	if (fw->self_ns != -1)
		close(fw->self_ns);
	fw->self_ns = -1;
}
