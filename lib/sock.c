/*
 * sock.c: a listening socket and a reset-on-close, made one way for
 * sluice-proxy and sluice-forward (sock.h).
 *
 * It only sets up the socket: accepting, the loop, messages and a stale
 * unix socket file are the callers'.
 */
#include "sock.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static socklen_t addr_len(sa_family_t family)
{
	return family == AF_INET    ? sizeof(struct sockaddr_in)
	       : family == AF_INET6 ? sizeof(struct sockaddr_in6)
				    : sizeof(struct sockaddr_un);
}

/* The options flags ask for, on a TCP socket. Returns 0, or -1 when FREEBIND failed. */
static int tcp_options(int fd, sa_family_t family, unsigned flags)
{
	int one = 1;

	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (flags & SOCK_LISTEN_NODELAY)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if ((flags & SOCK_LISTEN_V6ONLY) && family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (flags & SOCK_LISTEN_FREEBIND)
		return family == AF_INET
			       ? setsockopt(fd, IPPROTO_IP, IP_FREEBIND, &one, sizeof(one))
			       : setsockopt(fd, IPPROTO_IPV6, IPV6_FREEBIND, &one, sizeof(one));
	return 0;
}

int sock_listen(const struct sockaddr_storage *addr, unsigned flags)
{
	sa_family_t family = addr->ss_family;
	mode_t mask = 0;
	int fd, r, e;

	fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1)
		return -1;
	if (family != AF_UNIX && tcp_options(fd, family, flags) == -1)
		goto out_close;
	if (family == AF_UNIX)
		mask = umask(0177);
	r = bind(fd, (const struct sockaddr *)addr, addr_len(family));
	if (family == AF_UNIX)
		umask(mask);
	if (r == -1 || listen(fd, SOCK_LISTEN_BACKLOG) == -1)
		goto out_close;
	return fd;
out_close:
	e = errno;
	close(fd);
	errno = e;
	return -1;
}

void sock_reset_on_close(int fd)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };

	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
}
