/*
 * test_buf.c: the bounded byte buffer. A random walk of appends, consumes
 * and trims against a plain array model (the ceiling is never passed, the
 * bytes always match), the edges of max, printf's limits, reads and writes
 * through pipes (limit, EOF, EAGAIN, a full buffer, *drained), and the wipe
 * of consumed secrets.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"

static void test_init_holds_nothing(void **state)
{
	struct buf b;

	(void)state;
	buf_init(&b, 100);
	assert_null(b.data);
	assert_int_equal(buf_len(&b), 0);
	assert_int_equal(buf_room(&b), 100);
	buf_trim(&b);
	buf_release(&b);
	assert_null(b.data);
}

static void test_max_is_a_ceiling(void **state)
{
	static const size_t maxes[] = { 1, 7, 4095, 4096, 4097, 10000, 65536 };
	char *src = malloc(70000);

	(void)state;
	assert_non_null(src);
	for (size_t i = 0; i < 70000; i++)
		src[i] = (char)(i * 7 + 3);
	for (size_t m = 0; m < sizeof(maxes) / sizeof(maxes[0]); m++) {
		struct buf b;
		size_t max = maxes[m];

		buf_init(&b, max);
		/* fill it exactly, in pieces of 1000 at most */
		for (size_t at = 0; at < max;) {
			size_t n = max - at < 1000 ? max - at : 1000;

			assert_int_equal(buf_append(&b, src + at, n), 0);
			at += n;
			assert_true(b.cap <= max);
		}
		assert_int_equal(buf_len(&b), max);
		assert_int_equal(buf_room(&b), 0);
		/* one byte more fails and changes nothing */
		assert_int_equal(buf_append(&b, "x", 1), -1);
		assert_int_equal(buf_len(&b), max);
		assert_memory_equal(buf_head(&b), src, max);
		/* consuming makes room again; the rest is still there */
		buf_consume(&b, 1);
		assert_int_equal(buf_append(&b, "x", 1), 0);
		assert_memory_equal(buf_head(&b), src + 1, max - 1);
		assert_int_equal(buf_head(&b)[max - 1], 'x');
		assert_true(b.cap <= max);
		buf_release(&b);
	}
	free(src);
}

/* A random walk against a model array. */
static void test_random_walk(void **state)
{
	enum { MAX = 20000 };
	static char model[MAX];
	size_t mlen = 0;
	struct buf b;
	unsigned seed = 12345;
	char piece[3000];

	(void)state;
	buf_init(&b, MAX);
	for (int step = 0; step < 20000; step++) {
		unsigned r;

		seed = seed * 1103515245u + 12345u;
		r = seed >> 8;
		switch (r % 5) {
		case 0:
		case 1: { /* append */
			size_t n = (r >> 3) % sizeof(piece);

			for (size_t i = 0; i < n; i++)
				piece[i] = (char)(step + i);
			if (mlen + n <= MAX) {
				assert_int_equal(buf_append(&b, piece, n), 0);
				memcpy(model + mlen, piece, n);
				mlen += n;
			} else {
				assert_int_equal(buf_append(&b, piece, n), -1);
			}
			break;
		}
		case 2:
		case 3: { /* consume */
			size_t n = mlen ? (r >> 3) % (mlen + 1) : 0;

			buf_consume(&b, n);
			memmove(model, model + n, mlen - n);
			mlen -= n;
			break;
		}
		default: /* trim: frees only an empty buffer */
			buf_trim(&b);
			if (mlen > 0)
				assert_non_null(b.data);
			else
				assert_null(b.data);
			break;
		}
		assert_int_equal(buf_len(&b), mlen);
		assert_true(b.cap <= MAX);
		assert_true(b.start <= b.end && b.end <= b.cap);
		if (mlen > 0)
			assert_memory_equal(buf_head(&b), model, mlen);
	}
	buf_release(&b);
}

static void test_truncate(void **state)
{
	struct buf b;

	(void)state;
	buf_init(&b, 64);
	assert_int_equal(buf_append(&b, "abcdef", 6), 0);
	buf_consume(&b, 2);
	buf_truncate(&b, 2);
	assert_int_equal(buf_len(&b), 2);
	assert_memory_equal(buf_head(&b), "cd", 2);
	buf_release(&b);
}

static void test_printf(void **state)
{
	struct buf b;
	char big[3000];

	(void)state;
	buf_init(&b, 32);
	assert_int_equal(buf_printf(&b, "%s=%d;", "a", 42), 0);
	assert_int_equal(buf_len(&b), 5);
	assert_memory_equal(buf_head(&b), "a=42;", 5);
	/* more than the room left: refused whole, nothing appended */
	assert_int_equal(buf_printf(&b, "%030d", 1), -1);
	assert_int_equal(buf_len(&b), 5);
	assert_int_equal(buf_printf(&b, "%027d", 7), 0);
	assert_int_equal(buf_len(&b), 32);
	buf_release(&b);

	/* longer than printf's own 2048-byte limit: refused, even with room */
	buf_init(&b, 1 << 20);
	memset(big, 'z', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(buf_printf(&b, "%s", big), -1);
	assert_int_equal(buf_len(&b), 0);
	big[2047] = '\0';
	assert_int_equal(buf_printf(&b, "%s", big), 0);
	assert_int_equal(buf_len(&b), 2047);
	buf_release(&b);
}

static void nonblock(int fd)
{
	assert_int_not_equal(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK), -1);
}

static void test_read_fd(void **state)
{
	int p[2];
	struct buf b;
	bool drained;
	char data[10000];

	(void)state;
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (char)(i % 251);
	assert_int_equal(pipe(p), 0);
	nonblock(p[0]);
	buf_init(&b, 6000);

	/* nothing there yet: -1 EAGAIN, drained */
	drained = false;
	errno = 0;
	assert_int_equal(buf_read_fd(&b, p[0], 0, &drained), -1);
	assert_int_equal(errno, EAGAIN);
	assert_true(drained);

	/* a limit caps one read; a read that fills what it asked for is not drained */
	assert_int_equal(write(p[1], data, 100), 100);
	assert_int_equal(buf_read_fd(&b, p[0], 30, &drained), 30);
	assert_false(drained);
	/* less than asked: drained */
	assert_int_equal(buf_read_fd(&b, p[0], 0, &drained), 70);
	assert_true(drained);
	assert_memory_equal(buf_head(&b), data, 100);

	/* more than max is waiting: the buffer takes max, then says ENOBUFS */
	assert_int_equal(write(p[1], data + 100, 8000), 8000);
	for (int i = 0; i < 10 && buf_room(&b) > 0; i++)
		assert_true(buf_read_fd(&b, p[0], 0, &drained) > 0);
	assert_int_equal(buf_len(&b), 6000);
	assert_true(b.cap <= 6000);
	errno = 0;
	assert_int_equal(buf_read_fd(&b, p[0], 0, &drained), -1);
	assert_int_equal(errno, ENOBUFS);
	assert_memory_equal(buf_head(&b), data, 6000);

	/* drain the rest, then EOF: 0 */
	buf_consume(&b, buf_len(&b));
	size_t got = 0;
	ssize_t n;
	close(p[1]);
	while ((n = buf_read_fd(&b, p[0], 0, &drained)) > 0) {
		assert_memory_equal(buf_head(&b), data + 6000 + got, (size_t)n);
		got += (size_t)n;
		buf_consume(&b, (size_t)n);
	}
	assert_int_equal(n, 0);
	assert_int_equal(got, 2100);
	close(p[0]);
	buf_release(&b);
}

struct fake {
	int calls;
	size_t asked[8];
};

/* A reader that gives half of what it is asked for, then EAGAIN, then EOF. */
static ssize_t fake_read(void *arg, void *dst, size_t n)
{
	struct fake *f = arg;

	f->asked[f->calls] = n;
	switch (f->calls++) {
	case 0:
		memset(dst, 'h', n / 2);
		return (ssize_t)(n / 2);
	case 1:
		errno = EAGAIN;
		return -1;
	default:
		return 0;
	}
}

static void test_read_via(void **state)
{
	struct buf b;
	struct fake f = { 0 };
	bool drained = false;

	(void)state;
	buf_init(&b, 1 << 20);
	/* the first read is a small one (4096), not all of max */
	assert_int_equal(buf_read_via(&b, 0, &drained, fake_read, &f), 2048);
	assert_int_equal(f.asked[0], 4096);
	assert_true(drained);
	assert_int_equal(buf_read_via(&b, 0, &drained, fake_read, &f), -1);
	assert_true(drained);
	assert_int_equal(buf_read_via(&b, 0, &drained, fake_read, &f), 0);
	assert_int_equal(buf_len(&b), 2048);
	buf_release(&b);
}

static void test_write_fd(void **state)
{
	int p[2];
	struct buf b;
	char *data = malloc(200000), *back = malloc(200000);
	size_t wrote = 0, read_back = 0;
	ssize_t n;

	(void)state;
	assert_non_null(data);
	assert_non_null(back);
	for (size_t i = 0; i < 200000; i++)
		data[i] = (char)(i * 13);
	assert_int_equal(pipe(p), 0);
	nonblock(p[1]);
	nonblock(p[0]);
	buf_init(&b, 200000);
	assert_int_equal(buf_write_fd(&b, p[1]), 0); /* nothing to write */
	assert_int_equal(buf_append(&b, data, 200000), 0);
	/* the pipe fills: a partial write, then EAGAIN, the rest kept */
	while ((n = buf_write_fd(&b, p[1])) > 0)
		wrote += (size_t)n;
	assert_int_equal(n, -1);
	assert_int_equal(errno, EAGAIN);
	assert_true(wrote > 0 && wrote < 200000);
	assert_int_equal(buf_len(&b), 200000 - wrote);
	assert_memory_equal(buf_head(&b), data + wrote, 200000 - wrote);
	/* read and write in turns until all is through, in order */
	for (int i = 0; i < 100000 && read_back < 200000; i++) {
		n = read(p[0], back + read_back, 200000 - read_back);
		if (n > 0)
			read_back += (size_t)n;
		if (buf_len(&b) > 0)
			buf_write_fd(&b, p[1]);
	}
	assert_int_equal(read_back, 200000);
	assert_memory_equal(back, data, 200000);
	assert_int_equal(buf_len(&b), 0);
	close(p[0]);
	close(p[1]);
	buf_release(&b);
	free(data);
	free(back);
}

static void test_wipe_consumed(void **state)
{
	struct buf b;

	(void)state;
	buf_init(&b, 4096);
	buf_wipe_consumed(&b); /* nothing allocated: a no-op */
	assert_int_equal(buf_append(&b, "SECRETtail", 10), 0);
	buf_consume(&b, 6);
	buf_wipe_consumed(&b);
	for (size_t i = 0; i < 6; i++)
		assert_int_equal(b.data[i], 0);
	assert_memory_equal(buf_head(&b), "tail", 4);
	/* all consumed: the whole allocation is wiped */
	buf_consume(&b, 4);
	buf_wipe_consumed(&b);
	for (size_t i = 0; i < b.cap; i++)
		assert_int_equal(b.data[i], 0);
	buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init_holds_nothing),
		cmocka_unit_test(test_max_is_a_ceiling),
		cmocka_unit_test(test_random_walk),
		cmocka_unit_test(test_truncate),
		cmocka_unit_test(test_printf),
		cmocka_unit_test(test_read_fd),
		cmocka_unit_test(test_read_via),
		cmocka_unit_test(test_write_fd),
		cmocka_unit_test(test_wipe_consumed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
