/*
 * buf.c: the bounded byte buffer.
 */
#include "buf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BUF_FIRST 4096

void buf_init(struct buf *b, size_t max)
{
	memset(b, 0, sizeof(*b));
	b->max = max;
}

void buf_release(struct buf *b)
{
	free(b->data);
	b->data = NULL;
	b->start = b->end = b->cap = 0;
}

void buf_consume(struct buf *b, size_t n)
{
	b->start += n;
	if (b->start == b->end)
		b->start = b->end = 0;
}

void buf_trim(struct buf *b)
{
	if (b->start == b->end) {
		free(b->data);
		b->data = NULL;
		b->start = b->end = b->cap = 0;
	}
}

/* Make room for at least want more bytes at the end (want <= buf_room). */
static int buf_make_room(struct buf *b, size_t want)
{
	size_t len = buf_len(b);
	size_t cap;
	char *p;

	if (b->cap - b->end >= want)
		return 0;
	if (b->start > 0 && b->cap - len >= want) {
		memmove(b->data, b->data + b->start, len);
		b->start = 0;
		b->end = len;
		return 0;
	}
	cap = b->cap ? b->cap : BUF_FIRST;
	while (cap - len < want)
		cap *= 2;
	if (cap > b->max)
		cap = b->max;
	if (cap - len < want)
		return -1;
	if (b->start > 0) {
		memmove(b->data, b->data + b->start, len);
		b->start = 0;
		b->end = len;
	}
	p = realloc(b->data, cap);
	if (p == NULL)
		return -1;
	b->data = p;
	b->cap = cap;
	return 0;
}

int buf_append(struct buf *b, const void *p, size_t n)
{
	if (n == 0)
		return 0;
	if (n > buf_room(b) || buf_make_room(b, n) == -1)
		return -1;
	memcpy(b->data + b->end, p, n);
	b->end += n;
	return 0;
}

int buf_printf(struct buf *b, const char *fmt, ...)
{
	char tmp[2048];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(tmp))
		return -1;
	return buf_append(b, tmp, (size_t)n);
}

ssize_t buf_read_via(struct buf *b, size_t limit, bool *drained, buf_reader fn, void *arg)
{
	size_t want = buf_room(b);
	ssize_t n;

	if (want == 0) {
		errno = ENOBUFS;
		return -1;
	}
	/* grow in steps; a full-size read is only needed once data is flowing */
	if (b->cap - b->end == 0 && buf_make_room(b, want < BUF_FIRST ? want : BUF_FIRST) == -1) {
		errno = ENOMEM;
		return -1;
	}
	want = b->cap - b->end;
	if (limit > 0 && want > limit)
		want = limit;
	n = fn(arg, b->data + b->end, want);
	if (n > 0)
		b->end += (size_t)n;
	*drained = (n > 0 && (size_t)n < want) || (n == -1 && errno == EAGAIN);
	return n;
}

static ssize_t read_fd(void *arg, void *p, size_t n)
{
	return read(*(int *)arg, p, n);
}

ssize_t buf_read_fd(struct buf *b, int fd, size_t limit, bool *drained)
{
	return buf_read_via(b, limit, drained, read_fd, &fd);
}

ssize_t buf_write_fd(struct buf *b, int fd)
{
	ssize_t n;

	if (buf_len(b) == 0)
		return 0;
	n = write(fd, buf_head(b), buf_len(b));
	if (n > 0)
		buf_consume(b, (size_t)n);
	return n;
}

void buf_wipe_consumed(struct buf *b)
{
	if (b->data == NULL)
		return;
	explicit_bzero(b->data, buf_len(b) == 0 ? b->cap : b->start);
}
