/*
 * relay.c: moving a tunnel's bytes in one direction.
 *
 * A direction starts by copying through the session's buffer; once it has
 * moved RELAY_SPLICE_AFTER bytes it switches to a pipe and splice(2), so a
 * bulk transfer never enters user space while a short tunnel does not pay
 * for a pipe (four descriptors, and their syscalls). When a pipe cannot be
 * had (fd limit) it keeps copying; a later TLS transport will always copy.
 * End of stream on src becomes shutdown(dst, SHUT_WR) once everything read
 * has been written: half-close both ways. It does not know about epoll:
 * the session asks want_read / want_write.
 */
#include "relay.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#define RELAY_PIPE_SIZE (256 * 1024)
#define RELAY_SPLICE_AFTER (64 * 1024)

void relay_dir_init(struct relay_dir *d, int src, int dst, struct buf *b)
{
	d->src = src;
	d->dst = dst;
	d->buf = b;
	d->inpipe = 0;
	d->eof = d->shut = d->want_read = d->want_write = false;
	d->bytes = 0;
	d->taken = buf_len(b);
	d->cap = UINT64_MAX;
	d->pipe[0] = d->pipe[1] = -1;
	d->no_pipe = false;
	d->src_hup = false;
	/*
	 * Both peers have just met (the client waits for our 200, the origin
	 * for the client): a first read would only say EAGAIN, so the first
	 * pump asks epoll instead.
	 */
	d->fresh = true;
}

/* Switch to splicing. A failure is not an error: the direction keeps copying. */
static void relay_dir_open_pipe(struct relay_dir *d)
{
	if (pipe2(d->pipe, O_NONBLOCK | O_CLOEXEC) == -1) {
		d->pipe[0] = d->pipe[1] = -1;
		d->no_pipe = true;
		return;
	}
	/* a bigger pipe means fewer wake-ups per megabyte; the default works too */
	(void)fcntl(d->pipe[1], F_SETPIPE_SZ, RELAY_PIPE_SIZE);
}

void relay_dir_release(struct relay_dir *d)
{
	if (d->pipe[0] >= 0) {
		close(d->pipe[0]);
		close(d->pipe[1]);
		d->pipe[0] = d->pipe[1] = -1;
	}
}

static bool would_block(void)
{
	return errno == EAGAIN || errno == EWOULDBLOCK;
}

/* Bytes src may still give under the cap, at most max. */
static size_t cap_room(const struct relay_dir *d, size_t max)
{
	uint64_t left = d->taken < d->cap ? d->cap - d->taken : 0;

	return left < max ? (size_t)left : max;
}

static int pump_splice(struct relay_dir *d)
{
	for (;;) {
		bool moved = false;
		ssize_t n;

		if (!d->eof && cap_room(d, RELAY_PIPE_SIZE) > 0) {
			n = splice(d->src, NULL, d->pipe[1], NULL, cap_room(d, RELAY_PIPE_SIZE),
				   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
			if (n > 0) {
				d->inpipe += (size_t)n;
				d->taken += (uint64_t)n;
				moved = true;
				d->want_read = false;
			} else if (n == 0) {
				d->eof = true;
			} else if (would_block()) {
				/* either src has nothing or the pipe is full */
				d->want_read = d->inpipe == 0;
			} else {
				return -1;
			}
		}
		if (d->inpipe > 0) {
			n = splice(d->pipe[0], NULL, d->dst, NULL, d->inpipe,
				   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
			if (n > 0) {
				d->inpipe -= (size_t)n;
				d->bytes += (uint64_t)n;
				moved = true;
				d->want_write = false;
			} else if (n == -1 && would_block()) {
				d->want_write = true;
			} else {
				return -1;
			}
		}
		if (!moved)
			break;
	}
	/* a full pipe with a blocked writer: wait for dst, not src */
	if (!d->eof && d->inpipe == 0)
		d->want_read = cap_room(d, 1) > 0;
	return 0;
}

static int pump_copy(struct relay_dir *d, bool read_more)
{
	/* nothing to read yet: let epoll say when (unless src left epoll) */
	bool drained = d->fresh && !d->src_hup;

	for (;;) {
		bool moved = false;
		ssize_t n;

		if (read_more && !d->eof && !drained && buf_room(d->buf) > 0 &&
		    cap_room(d, 1) > 0) {
			n = buf_read_fd(d->buf, d->src, cap_room(d, SIZE_MAX), &drained);
			drained &= !d->src_hup;
			if (n > 0) {
				d->taken += (uint64_t)n;
				moved = true;
			} else if (n == 0) {
				d->eof = true;
			} else if (!would_block()) {
				return -1;
			}
		}
		if (buf_len(d->buf) > 0) {
			n = buf_write_fd(d->buf, d->dst);
			if (n > 0) {
				d->bytes += (uint64_t)n;
				moved = true;
			} else if (n == -1 && !would_block()) {
				return -1;
			}
		}
		if (!moved)
			break;
		if (read_more && !d->no_pipe && d->bytes >= RELAY_SPLICE_AFTER &&
		    buf_len(d->buf) == 0)
			break; /* bulk: relay_dir_pump switches to splice */
	}
	d->fresh = false;
	d->want_read = read_more && !d->eof && buf_room(d->buf) > 0 && cap_room(d, 1) > 0;
	d->want_write = buf_len(d->buf) > 0;
	buf_trim(d->buf);
	return 0;
}

int relay_dir_pump(struct relay_dir *d, bool last)
{
	/* copied bytes (those queued before the tunnel began too) go first */
	if (d->pipe[0] < 0 || buf_len(d->buf) > 0) {
		if (pump_copy(d, d->pipe[0] < 0) == -1)
			return -1;
		if (d->pipe[0] < 0 && !d->no_pipe && !d->eof && buf_len(d->buf) == 0 &&
		    d->bytes >= RELAY_SPLICE_AFTER)
			relay_dir_open_pipe(d);
	}
	if (d->pipe[0] >= 0 && buf_len(d->buf) == 0 && pump_splice(d) == -1)
		return -1;
	if (d->eof && !d->shut && d->inpipe == 0 && buf_len(d->buf) == 0) {
		/* the last direction to finish needs no shutdown: close sends the FIN */
		if (!last && shutdown(d->dst, SHUT_WR) == -1 && errno != ENOTCONN)
			return -1;
		d->shut = true;
		d->want_read = d->want_write = false;
	}
	return 0;
}

int relay_dir_flush(struct relay_dir *d)
{
	return pump_copy(d, false);
}

bool relay_dir_done(const struct relay_dir *d)
{
	return d->shut;
}
