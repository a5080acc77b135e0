/*
 * buf.h: a byte buffer with a hard ceiling.
 *
 * Memory is allocated on first use and grows by doubling up to max; it is
 * given back by buf_trim when the buffer is empty, so an idle connection
 * holds none. Appending past max fails; it never grows unbounded.
 */
#ifndef SLUICE_BUF_H
#define SLUICE_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct buf {
	char *data;
	size_t start; /* first unread byte */
	size_t end;   /* one past the last byte */
	size_t cap;   /* allocated bytes */
	size_t max;   /* ceiling for cap */
};

void buf_init(struct buf *b, size_t max);
void buf_release(struct buf *b);

static inline size_t buf_len(const struct buf *b)
{
	return b->end - b->start;
}
static inline char *buf_head(const struct buf *b)
{
	return b->data + b->start;
}
static inline size_t buf_room(const struct buf *b)
{
	return b->max - buf_len(b);
}

/* Drop n bytes from the front (n <= buf_len). */
void buf_consume(struct buf *b, size_t n);
/* Append n bytes. Returns 0, or -1 if that would pass max or memory ran out. */
int buf_append(struct buf *b, const void *p, size_t n);
/* printf-style append. Returns 0 or -1 (too long for the room left). */
int buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/*
 * read(2) into the free space, at most limit bytes (0: no limit). Returns
 * the byte count, 0 at EOF, or -1 with errno (EAGAIN included; ENOBUFS
 * when the buffer is full). *drained becomes true when the read returned
 * less than it asked for or would block: the fd is very likely empty, and
 * with level-triggered readiness the caller may wait instead of reading
 * again only to get EAGAIN.
 */
ssize_t buf_read_fd(struct buf *b, int fd, size_t limit, bool *drained);
/*
 * buf_read_fd with fn in place of read(2) (a TLS read, say): fn(arg, dst, n)
 * returns the bytes it put at dst, 0 at end of stream, or -1 with errno
 * (EAGAIN: nothing now). Same sizing, limit and *drained.
 */
typedef ssize_t (*buf_reader)(void *arg, void *dst, size_t n);
ssize_t buf_read_via(struct buf *b, size_t limit, bool *drained, buf_reader fn, void *arg);
/* write(2) from the front; returns bytes written or -1 with errno. */
ssize_t buf_write_fd(struct buf *b, int fd);
/* Keep only the first len bytes (len <= buf_len). */
static inline void buf_truncate(struct buf *b, size_t len)
{
	b->end = b->start + len;
}

/* Overwrite with zeros every byte already consumed (all of it when empty): a secret passed through. */
void buf_wipe_consumed(struct buf *b);

/* Free the memory if the buffer is empty. */
void buf_trim(struct buf *b);

#endif
