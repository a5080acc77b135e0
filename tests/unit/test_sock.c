/*
 * test_sock.c: sock_listen and sock_reset_on_close on real sockets of
 * loopback and a temporary directory. A TCP listener takes a connection,
 * IPv4 and IPv6, and carries the options its flags ask for (TCP_NODELAY,
 * IPV6_V6ONLY, SO_REUSEADDR always); FREEBIND binds an address no
 * interface has, without it that bind fails; a unix listener's file is
 * 0600 whatever the umask, and a file already at its path is not replaced.
 * A connection reset on close reaches its peer as ECONNRESET, an ordinary
 * close as end of stream. Needs no root.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "sock.h"

static struct sockaddr_storage inet_addr_of(int family, const char *text)
{
	struct sockaddr_storage ss = { 0 };

	ss.ss_family = (sa_family_t)family;
	if (family == AF_INET)
		assert_int_equal(inet_pton(AF_INET, text, &((struct sockaddr_in *)&ss)->sin_addr), 1);
	else
		assert_int_equal(inet_pton(AF_INET6, text, &((struct sockaddr_in6 *)&ss)->sin6_addr),
				 1);
	return ss; /* port 0: the kernel picks one */
}

static int opt_of(int fd, int level, int name)
{
	int v = -1;
	socklen_t len = sizeof(v);

	assert_int_equal(getsockopt(fd, level, name, &v, &len), 0);
	return v;
}

/* A blocking client connected to the listener lfd; *afd the accepted end. */
static int connect_to(int lfd, int *afd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	struct pollfd p = { .fd = lfd, .events = POLLIN };
	int c;

	assert_int_equal(getsockname(lfd, (struct sockaddr *)&ss, &len), 0);
	c = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(c >= 0);
	assert_int_equal(connect(c, (struct sockaddr *)&ss, len), 0);
	assert_int_equal(poll(&p, 1, 5000), 1);
	*afd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	assert_true(*afd >= 0);
	return c;
}

static void test_tcp(void **state)
{
	static const struct {
		int family;
		const char *addr;
	} cases[] = { { AF_INET, "127.0.0.1" }, { AF_INET6, "::1" } };

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sockaddr_storage ss = inet_addr_of(cases[i].family, cases[i].addr);
		int fd = sock_listen(&ss, SOCK_LISTEN_NODELAY | SOCK_LISTEN_V6ONLY), c, a;

		assert_true(fd >= 0);
		assert_true(fcntl(fd, F_GETFL) & O_NONBLOCK);
		assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
		assert_int_equal(opt_of(fd, SOL_SOCKET, SO_ACCEPTCONN), 1);
		assert_int_equal(opt_of(fd, SOL_SOCKET, SO_REUSEADDR), 1);
		assert_int_equal(opt_of(fd, IPPROTO_TCP, TCP_NODELAY), 1);
		if (cases[i].family == AF_INET6)
			assert_int_equal(opt_of(fd, IPPROTO_IPV6, IPV6_V6ONLY), 1);
		c = connect_to(fd, &a);
		assert_int_equal(opt_of(a, IPPROTO_TCP, TCP_NODELAY), 1); /* inherited */
		close(a);
		close(c);
		close(fd);
	}
}

static void test_no_flags(void **state)
{
	struct sockaddr_storage ss = inet_addr_of(AF_INET6, "::1");
	int fd = sock_listen(&ss, 0);

	assert_true(fd >= 0);
	assert_int_equal(opt_of(fd, SOL_SOCKET, SO_REUSEADDR), 1);
	assert_int_equal(opt_of(fd, IPPROTO_TCP, TCP_NODELAY), 0);
	close(fd);
}

static void test_freebind(void **state)
{
	/* TEST-NET-2 and the documentation prefix: no interface here has them */
	struct sockaddr_storage v4 = inet_addr_of(AF_INET, "198.51.100.77");
	struct sockaddr_storage v6 = inet_addr_of(AF_INET6, "2001:db8::77");
	int fd;

	errno = 0;
	assert_int_equal(sock_listen(&v4, 0), -1);
	assert_int_equal(errno, EADDRNOTAVAIL);
	fd = sock_listen(&v4, SOCK_LISTEN_FREEBIND);
	assert_true(fd >= 0);
	close(fd);
	fd = sock_listen(&v6, SOCK_LISTEN_FREEBIND);
	assert_true(fd >= 0);
	close(fd);
}

static void test_unix(void **state)
{
	char dir[] = "/tmp/sluice-test-sock.XXXXXX";
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_un *un = (struct sockaddr_un *)&ss;
	struct stat st;
	mode_t old;
	int fd, c, a;

	assert_non_null(mkdtemp(dir));
	un->sun_family = AF_UNIX;
	assert_true(snprintf(un->sun_path, sizeof(un->sun_path), "%s/l.sock", dir) <
		    (int)sizeof(un->sun_path));
	old = umask(0);
	fd = sock_listen(&ss, SOCK_LISTEN_NODELAY | SOCK_LISTEN_V6ONLY); /* TCP flags: ignored */
	assert_int_equal(umask(old), 0); /* put back as it was */
	assert_true(fd >= 0);
	assert_int_equal(lstat(un->sun_path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0600);
	c = connect_to(fd, &a);
	close(a);
	close(c);

	/* the file stays: a second listener on the path is refused, not swapped in */
	errno = 0;
	assert_int_equal(sock_listen(&ss, 0), -1);
	assert_int_equal(errno, EADDRINUSE);
	close(fd);
	assert_int_equal(unlink(un->sun_path), 0);
	assert_int_equal(rmdir(dir), 0);
}

/* What the peer reads after the other end of a connection closed: 0 or -errno. */
static ssize_t peer_reads(bool reset)
{
	struct sockaddr_storage ss = inet_addr_of(AF_INET, "127.0.0.1");
	int fd = sock_listen(&ss, 0), c, a;
	struct pollfd p;
	char b;
	ssize_t n;

	assert_true(fd >= 0);
	c = connect_to(fd, &a);
	if (reset)
		sock_reset_on_close(a);
	close(a);
	p = (struct pollfd){ .fd = c, .events = POLLIN };
	assert_int_equal(poll(&p, 1, 5000), 1);
	n = read(c, &b, 1);
	if (n == -1)
		n = -errno;
	close(c);
	close(fd);
	return n;
}

static void test_reset_on_close(void **state)
{
	assert_int_equal(peer_reads(true), -ECONNRESET);
	assert_int_equal(peer_reads(false), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tcp),
		cmocka_unit_test(test_no_flags),
		cmocka_unit_test(test_freebind),
		cmocka_unit_test(test_unix),
		cmocka_unit_test(test_reset_on_close),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
