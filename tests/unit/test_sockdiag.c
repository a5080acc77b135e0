/*
 * test_sockdiag.c: the two questions to the kernel's TCP tables, asked
 * about real sockets this test opens on loopback. A listener is found on
 * its address and through the wildcard, IPv4 and IPv6, and not on a free
 * port, another family or a connected (not listening) port; a dump that
 * spans several datagrams is read to its end (the next question still
 * works); the cgroup id of an accepted connection's client is this
 * process's own cgroup v2 id (checked against the cgroup2 directory's
 * inode when one is mounted), and a connection that does not exist is
 * ENOENT. Needs no root for these (CI runs it as root anyway).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "sockdiag.h"

static struct sockaddr_storage sa(int fam, const char *ip, uint16_t port)
{
	struct sockaddr_storage ss;

	memset(&ss, 0, sizeof(ss));
	if (fam == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)&ss;

		in->sin_family = AF_INET;
		in->sin_port = htons(port);
		assert_int_equal(inet_pton(AF_INET, ip, &in->sin_addr), 1);
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;

		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(port);
		assert_int_equal(inet_pton(AF_INET6, ip, &in6->sin6_addr), 1);
	}
	return ss;
}

static uint16_t port_of(int fd)
{
	struct sockaddr_storage ss;
	socklen_t l = sizeof(ss);

	assert_int_equal(getsockname(fd, (struct sockaddr *)&ss, &l), 0);
	return ss.ss_family == AF_INET ? ntohs(((struct sockaddr_in *)&ss)->sin_port)
				       : ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
}

/* A listener on ip:0 (any free port); returns the fd. */
static int listen_on(int fam, const char *ip)
{
	struct sockaddr_storage ss = sa(fam, ip, 0);
	int fd = socket(fam, SOCK_STREAM, 0), one = 1;

	assert_true(fd >= 0);
	if (fam == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	assert_int_equal(bind(fd, (struct sockaddr *)&ss,
			      fam == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6)),
			 0);
	assert_int_equal(listen(fd, 8), 0);
	return fd;
}

static bool found(int nl, int fam, const char *ip, uint16_t port)
{
	struct sockaddr_storage ss = sa(fam, ip, port);
	bool f = true;

	assert_int_equal(sockdiag_find_listener(nl, &ss, &f), 0);
	return f;
}

static void test_find_listener(void **state)
{
	int nl = sockdiag_open(), l4, lw, l6, freefd;
	uint16_t p4, pw, p6, pfree;

	(void)state;
	assert_true(nl >= 0);
	l4 = listen_on(AF_INET, "127.0.0.1");
	lw = listen_on(AF_INET, "0.0.0.0");
	l6 = listen_on(AF_INET6, "::1");
	p4 = port_of(l4);
	pw = port_of(lw);
	p6 = port_of(l6);
	/* a port that nothing listens on: bound, never listening */
	freefd = socket(AF_INET, SOCK_STREAM, 0);
	{
		struct sockaddr_storage ss = sa(AF_INET, "127.0.0.1", 0);

		assert_int_equal(bind(freefd, (struct sockaddr *)&ss, sizeof(struct sockaddr_in)), 0);
	}
	pfree = port_of(freefd);

	assert_true(found(nl, AF_INET, "127.0.0.1", p4));
	assert_false(found(nl, AF_INET, "127.0.0.2", p4)); /* another address, same port */
	assert_true(found(nl, AF_INET, "127.0.0.2", pw));  /* the wildcard listens there */
	assert_true(found(nl, AF_INET, "203.0.113.9", pw));
	assert_true(found(nl, AF_INET6, "::1", p6));
	assert_false(found(nl, AF_INET, "127.0.0.1", p6)); /* the v6 listener is not a v4 one */
	assert_false(found(nl, AF_INET6, "::1", p4));
	assert_false(found(nl, AF_INET, "127.0.0.1", pfree));

	/* a connected socket's port is no listener */
	int c = socket(AF_INET, SOCK_STREAM, 0), a;
	struct sockaddr_storage to = sa(AF_INET, "127.0.0.1", p4);

	assert_int_equal(connect(c, (struct sockaddr *)&to, sizeof(struct sockaddr_in)), 0);
	a = accept(l4, NULL, NULL);
	assert_true(a >= 0);
	assert_false(found(nl, AF_INET, "127.0.0.1", port_of(c)));

	/* only IPv4 and IPv6 */
	struct sockaddr_storage un;
	bool f;

	memset(&un, 0, sizeof(un));
	un.ss_family = AF_UNIX;
	errno = 0;
	assert_int_equal(sockdiag_find_listener(nl, &un, &f), -1);
	assert_int_equal(errno, EAFNOSUPPORT);

	close(a);
	close(c);
	close(freefd);
	close(l4);
	close(lw);
	close(l6);
	close(nl);
}

/* Enough listeners that the dump spans several datagrams: the last is found,
 * and the next question is answered (the dump was read to its end). */
static void test_long_dump(void **state)
{
	enum { N = 700 }; /* about 88 bytes each: more than two 32 KiB datagrams */
	int nl = sockdiag_open(), fds[N];
	uint16_t last;

	(void)state;
	assert_true(nl >= 0);
	for (int i = 0; i < N; i++)
		fds[i] = listen_on(AF_INET, "127.0.0.1");
	last = port_of(fds[N - 1]);
	for (int k = 0; k < 3; k++) {
		assert_true(found(nl, AF_INET, "127.0.0.1", last));
		assert_true(found(nl, AF_INET, "127.0.0.1", port_of(fds[k * 300])));
	}
	close(fds[N - 1]);
	assert_false(found(nl, AF_INET, "127.0.0.1", last));
	for (int i = 0; i < N - 1; i++)
		close(fds[i]);
	close(nl);
}

/* This process's cgroup v2 id, from the cgroup2 mount's directory inode; 0 if unknown. */
static uint64_t own_cgroup_id(void)
{
	char line[4096], path[4096 + 64], mnt[1024] = "";
	FILE *f = fopen("/proc/self/cgroup", "r");
	char rel[4096] = "";
	struct stat st;

	if (f == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, "0::", 3) == 0) {
			snprintf(rel, sizeof(rel), "%s", line + 3);
			rel[strcspn(rel, "\n")] = '\0';
		}
	fclose(f);
	f = fopen("/proc/self/mountinfo", "r");
	if (f == NULL || rel[0] == '\0') {
		if (f != NULL)
			fclose(f);
		return 0;
	}
	while (fgets(line, sizeof(line), f) != NULL) {
		char *sep = strstr(line, " - cgroup2 ");
		char root[1024], mp[1024];

		if (sep == NULL || sscanf(line, "%*s %*s %*s %1023s %1023s", root, mp) != 2)
			continue;
		if (strcmp(root, "/") == 0) {
			snprintf(mnt, sizeof(mnt), "%s", mp);
			break;
		}
	}
	fclose(f);
	if (mnt[0] == '\0')
		return 0;
	snprintf(path, sizeof(path), "%s%s", mnt, rel);
	if (stat(path, &st) != 0)
		return 0;
	return (uint64_t)st.st_ino;
}

static void test_cgroup_id(void **state)
{
	int nl = sockdiag_open(), l, c, a;
	struct sockaddr_storage to, peer, here;
	socklen_t pl = sizeof(peer), hl = sizeof(here);
	uint64_t id = 0, want = own_cgroup_id();

	(void)state;
	assert_true(nl >= 0);
	l = listen_on(AF_INET, "127.0.0.1");
	to = sa(AF_INET, "127.0.0.1", port_of(l));
	c = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(connect(c, (struct sockaddr *)&to, sizeof(struct sockaddr_in)), 0);
	a = accept(l, (struct sockaddr *)&peer, &pl);
	assert_true(a >= 0);
	assert_int_equal(getsockname(a, (struct sockaddr *)&here, &hl), 0);
	/* as the forwarder asks: src the accepted peer, dst our end */
	if (sockdiag_cgroup_id(nl, &peer, &here, &id) == -1) {
		if (errno == ENODATA)
			skip(); /* a kernel without INET_DIAG_CGROUP_ID */
		fail_msg("sockdiag_cgroup_id: %s", strerror(errno));
	}
	assert_true(id != 0);
	if (want != 0)
		assert_int_equal(id, want);
	else
		print_message("no cgroup2 mount found: the id (%llu) is not compared\n",
			      (unsigned long long)id);
	/* the same question many times on one handle: the same answer */
	for (int i = 0; i < 200; i++) {
		uint64_t again = 0;

		assert_int_equal(sockdiag_cgroup_id(nl, &peer, &here, &again), 0);
		assert_int_equal(again, id);
	}
	/* a connection that does not exist */
	struct sockaddr_storage nobody = sa(AF_INET, "127.0.0.1", 1);

	errno = 0;
	assert_int_equal(sockdiag_cgroup_id(nl, &nobody, &here, &id), -1);
	assert_int_equal(errno, ENOENT);
	/* mixed families */
	struct sockaddr_storage v6 = sa(AF_INET6, "::1", 80);

	errno = 0;
	assert_int_equal(sockdiag_cgroup_id(nl, &v6, &here, &id), -1);
	assert_int_equal(errno, EAFNOSUPPORT);
	/* after the errors, the handle still answers */
	assert_int_equal(sockdiag_cgroup_id(nl, &peer, &here, &id), 0);
	close(a);
	close(c);
	close(l);
	close(nl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_find_listener),
		cmocka_unit_test(test_long_dump),
		cmocka_unit_test(test_cgroup_id),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
