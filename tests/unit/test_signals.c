/*
 * test_signals.c: signals_open. SIGHUP, SIGINT and SIGTERM sent to this
 * process are blocked and read from the fd, in the order sent, and the fd
 * is non-blocking (nothing pending: EAGAIN) and close-on-exec; SIGPIPE is
 * ignored, so a write to a closed pipe is EPIPE and this process lives.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "signals.h"

static void test_signals(void **state)
{
	static const int sent[] = { SIGHUP, SIGINT, SIGTERM };
	struct signalfd_siginfo si;
	sigset_t blocked;
	int fd = signals_open(), p[2];

	assert_true(fd >= 0);
	assert_true(fcntl(fd, F_GETFL) & O_NONBLOCK);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	assert_int_equal(sigprocmask(SIG_BLOCK, NULL, &blocked), 0);
	for (size_t i = 0; i < sizeof(sent) / sizeof(sent[0]); i++)
		assert_int_equal(sigismember(&blocked, sent[i]), 1);

	errno = 0;
	assert_int_equal(read(fd, &si, sizeof(si)), -1);
	assert_int_equal(errno, EAGAIN);
	for (size_t i = 0; i < sizeof(sent) / sizeof(sent[0]); i++) {
		assert_int_equal(raise(sent[i]), 0);
		assert_int_equal(read(fd, &si, sizeof(si)), (ssize_t)sizeof(si));
		assert_int_equal(si.ssi_signo, sent[i]);
	}

	assert_int_equal(pipe(p), 0);
	close(p[0]);
	errno = 0;
	assert_int_equal(write(p[1], "x", 1), -1);
	assert_int_equal(errno, EPIPE);
	close(p[1]);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_signals),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
