/*
 * test_relay.c: one tunnel direction between real loopback TCP sockets.
 * Bytes arrive whole and in order, on the copy path and after the switch
 * to splice (4 MiB), with a reader that stalls (the buffer's ceiling holds)
 * and without a pipe (the fd limit reached: it keeps copying); bytes queued
 * before the tunnel go first; end of stream becomes a half-close (none when
 * last); a peer that is gone is an error, not a hang.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "buf.h"
#include "relay.h"

#define BUFMAX (64 * 1024)

/* A connected loopback TCP pair: fd[0] the connecting end, fd[1] the accepted; both non-blocking. */
static void tcp_pair(int fd[2])
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	int ls = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(ls >= 0);
	assert_int_equal(bind(ls, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(ls, 1), 0);
	assert_int_equal(getsockname(ls, (struct sockaddr *)&a, &al), 0);
	fd[0] = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd[0] >= 0);
	assert_int_equal(connect(fd[0], (struct sockaddr *)&a, sizeof(a)), 0);
	fd[1] = accept(ls, NULL, NULL);
	assert_true(fd[1] >= 0);
	close(ls);
	for (int i = 0; i < 2; i++)
		assert_int_not_equal(fcntl(fd[i], F_SETFL, O_NONBLOCK), -1);
}

struct rig {
	int a[2]; /* a[0]: the writer, a[1]: the relay's src */
	int b[2]; /* b[0]: the relay's dst, b[1]: the reader */
	struct buf buf;
	struct relay_dir d;
};

static void rig_up(struct rig *r)
{
	tcp_pair(r->a);
	tcp_pair(r->b);
	buf_init(&r->buf, BUFMAX);
	relay_dir_init(&r->d, r->a[1], r->b[0], &r->buf);
}

static void rig_down(struct rig *r)
{
	relay_dir_release(&r->d);
	buf_release(&r->buf);
	for (int i = 0; i < 2; i++) {
		if (r->a[i] >= 0)
			close(r->a[i]);
		if (r->b[i] >= 0)
			close(r->b[i]);
	}
}

/* Wait (at most ms) for fd to be ready for events. */
static void wait_fd(int fd, short events, int ms)
{
	struct pollfd p = { .fd = fd, .events = events };

	(void)poll(&p, 1, ms);
}

static void pattern(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = (unsigned char)(seed >> 16);
	}
}

/*
 * Send n bytes of a pattern through the rig, pumping (not last) and
 * reading in turns; reader_stall: rounds in which the reader does not read.
 * Returns what arrived (must be freed); *got its length.
 */
static unsigned char *push(struct rig *r, const unsigned char *data, size_t n, int reader_stall,
			   size_t *got, bool *spliced, size_t *peak)
{
	unsigned char *in = malloc(n + 1);
	size_t sent = 0, recvd = 0;

	assert_non_null(in);
	*spliced = false;
	*peak = 0;
	for (int round = 0; round < 200000 && recvd < n; round++) {
		ssize_t k;

		if (sent < n) {
			k = write(r->a[0], data + sent, n - sent > 65536 ? 65536 : n - sent);
			if (k > 0)
				sent += (size_t)k;
		}
		wait_fd(r->d.src, POLLIN, 1);
		assert_int_equal(relay_dir_pump(&r->d, false), 0);
		*spliced |= r->d.pipe[0] >= 0;
		if (buf_len(&r->buf) > *peak)
			*peak = buf_len(&r->buf);
		assert_true(buf_len(&r->buf) <= BUFMAX);
		if (round < reader_stall)
			continue;
		while ((k = read(r->b[1], in + recvd, n - recvd)) > 0)
			recvd += (size_t)k;
	}
	*got = recvd;
	return in;
}

static void test_small_copy(void **state)
{
	struct rig r;
	char got[16];
	ssize_t k;

	(void)state;
	rig_up(&r);
	assert_int_equal(write(r.a[0], "hello", 5), 5);
	wait_fd(r.a[1], POLLIN, 1000);
	/* a fresh direction's first pump leaves the read to epoll */
	assert_int_equal(relay_dir_pump(&r.d, false), 0);
	assert_int_equal(r.d.bytes, 0);
	assert_true(r.d.want_read);
	assert_int_equal(relay_dir_pump(&r.d, false), 0);
	assert_int_equal(r.d.bytes, 5);
	assert_true(r.d.want_read);
	assert_false(r.d.want_write);
	assert_false(relay_dir_done(&r.d));
	wait_fd(r.b[1], POLLIN, 1000);
	k = read(r.b[1], got, sizeof(got));
	assert_int_equal(k, 5);
	assert_memory_equal(got, "hello", 5);
	assert_true(r.d.pipe[0] < 0); /* a short tunnel never pays for a pipe */
	rig_down(&r);
}

static void test_queued_bytes_go_first(void **state)
{
	struct rig r;
	char got[32];
	size_t n = 0;

	(void)state;
	rig_up(&r);
	assert_int_equal(buf_append(&r.buf, "EARLY:", 6), 0);
	assert_int_equal(write(r.a[0], "late", 4), 4);
	wait_fd(r.a[1], POLLIN, 1000);
	for (int i = 0; i < 100 && n < 10; i++) {
		ssize_t k;

		assert_int_equal(relay_dir_pump(&r.d, false), 0);
		wait_fd(r.b[1], POLLIN, 10);
		k = read(r.b[1], got + n, sizeof(got) - n);
		if (k > 0)
			n += (size_t)k;
	}
	assert_int_equal(n, 10);
	assert_memory_equal(got, "EARLY:late", 10);
	assert_int_equal(r.d.bytes, 10);
	rig_down(&r);
}

static void bulk(bool stall, bool expect_splice)
{
	enum { N = 4 << 20 };
	unsigned char *data = malloc(N), *in;
	struct rig r;
	size_t got, peak;
	bool spliced;

	assert_non_null(data);
	pattern(data, N, 7);
	rig_up(&r);
	in = push(&r, data, N, stall ? 300 : 0, &got, &spliced, &peak);
	assert_int_equal(got, N);
	assert_memory_equal(in, data, N);
	assert_int_equal(r.d.bytes, N);
	assert_true(spliced == expect_splice);
	assert_true(peak <= BUFMAX);
	/* end of stream: a half-close toward the reader */
	shutdown(r.a[0], SHUT_WR);
	for (int i = 0; i < 1000 && !relay_dir_done(&r.d); i++) {
		wait_fd(r.d.src, POLLIN, 5);
		assert_int_equal(relay_dir_pump(&r.d, false), 0);
	}
	assert_true(relay_dir_done(&r.d));
	assert_true(r.d.eof);
	wait_fd(r.b[1], POLLIN, 1000);
	char c;
	assert_int_equal(read(r.b[1], &c, 1), 0); /* the reader sees EOF */
	/* the other way is still open: the half-close is only ours */
	assert_int_equal(write(r.b[1], "back", 4), 4);
	rig_down(&r);
	free(in);
	free(data);
}

static void test_bulk_splices(void **state)
{
	(void)state;
	bulk(false, true);
}

static void test_bulk_with_a_stalled_reader(void **state)
{
	(void)state;
	bulk(true, true);
}

static void test_bulk_without_a_pipe(void **state)
{
	enum { N = 1 << 20 };
	unsigned char *data = malloc(N), *in;
	struct rig r;
	struct rlimit old, lim;
	size_t got, peak;
	bool spliced;
	int top;

	(void)state;
	assert_non_null(data);
	pattern(data, N, 9);
	rig_up(&r);
	/* no descriptor left for a pipe: the lowest free one is the limit */
	top = dup(0);
	assert_true(top >= 0);
	close(top);
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	lim = old;
	lim.rlim_cur = (rlim_t)top;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &lim), 0);
	in = push(&r, data, N, 0, &got, &spliced, &peak);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	assert_false(spliced);
	assert_true(r.d.no_pipe);
	assert_int_equal(got, N);
	assert_memory_equal(in, data, N);
	rig_down(&r);
	free(in);
	free(data);
}

static void test_last_direction_does_not_shut(void **state)
{
	struct rig r;
	char got[8];

	(void)state;
	rig_up(&r);
	assert_int_equal(write(r.a[0], "bye", 3), 3);
	shutdown(r.a[0], SHUT_WR);
	for (int i = 0; i < 100 && !relay_dir_done(&r.d); i++) {
		wait_fd(r.d.src, POLLIN, 5);
		assert_int_equal(relay_dir_pump(&r.d, true), 0);
	}
	assert_true(relay_dir_done(&r.d));
	wait_fd(r.b[1], POLLIN, 1000);
	assert_int_equal(read(r.b[1], got, sizeof(got)), 3);
	/* no FIN: the caller closes both sockets instead */
	errno = 0;
	assert_int_equal(read(r.b[1], got, sizeof(got)), -1);
	assert_int_equal(errno, EAGAIN);
	rig_down(&r);
}

static void test_gone_peer_is_an_error(void **state)
{
	struct rig r;
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	char junk[65536];
	int rc = 0;

	(void)state;
	signal(SIGPIPE, SIG_IGN);
	rig_up(&r);
	memset(junk, 'j', sizeof(junk));
	/* the reader resets its end */
	setsockopt(r.b[1], SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(r.b[1]);
	r.b[1] = -1;
	for (int i = 0; i < 200 && rc == 0; i++) {
		(void)write(r.a[0], junk, sizeof(junk));
		wait_fd(r.d.src, POLLIN, 5);
		rc = relay_dir_pump(&r.d, false);
	}
	assert_int_equal(rc, -1);
	assert_true(errno == EPIPE || errno == ECONNRESET);
	rig_down(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_small_copy),
		cmocka_unit_test(test_queued_bytes_go_first),
		cmocka_unit_test(test_bulk_splices),
		cmocka_unit_test(test_bulk_with_a_stalled_reader),
		cmocka_unit_test(test_bulk_without_a_pipe),
		cmocka_unit_test(test_last_direction_does_not_shut),
		cmocka_unit_test(test_gone_peer_is_an_error),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
