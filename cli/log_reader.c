/*
 * log_reader.c: reading a log file line by line, and following it, for
 * `sluice log` (-f) and `sluice watch`; and the engine snapshots they name
 * principals from, read again when their file changes.
 *
 * The file is opened as the proxy's files are read (never through a link
 * planted in the proxy user's directory). Each complete line goes to the
 * reader's callback; a line longer than ROW_MAX is reported and dropped.
 * Following is polling: log_reader_poll after each pause opens a file that
 * was missing, finishes the old file and opens the new one on rotation (a
 * new inode at the path) and starts over on truncation. It never writes.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "file.h"

#define READ_CHUNK 65536
#define ROW_MAX (1024 * 1024) /* a longer line is not a row the proxy wrote */
#define ENGINE_FILE "engine.jsonl"

void log_reader_init(struct log_reader *r, const char *path, uid_t owner, log_line_fn fn,
		     void *arg)
{
	memset(r, 0, sizeof(*r));
	r->path = path;
	r->owner = owner;
	r->fd = -1;
	r->line_fn = fn;
	r->arg = arg;
}

int log_reader_open(struct log_reader *r)
{
	struct stat st;

	/* the log's directory is the proxy user's: no link planted there is followed */
	r->fd = file_open_owned(r->path, O_RDONLY, 0, r->owner, &r->why);
	if (r->fd == -1)
		return -1;
	if (fstat(r->fd, &st) == -1) {
		int e = errno;

		close(r->fd);
		r->fd = -1;
		errno = e;
		return -1;
	}
	r->dev = st.st_dev;
	r->ino = st.st_ino;
	r->off = 0;
	r->len = 0;
	r->line = 0;
	r->skipping = false;
	return 0;
}

/* Split buf into lines and hand each complete one to the callback; keep the rest. */
static void reader_lines(struct log_reader *r)
{
	size_t start = 0;

	for (;;) {
		char *nl = memchr(r->buf + start, '\n', r->len - start);

		if (nl == NULL)
			break;
		r->line++;
		if (r->skipping)
			r->skipping = false;
		else
			r->line_fn(r->arg, r, r->buf + start, (size_t)(nl - (r->buf + start)));
		start = (size_t)(nl - r->buf) + 1;
	}
	memmove(r->buf, r->buf + start, r->len - start);
	r->len -= start;
	if (r->len > ROW_MAX) {
		if (!r->skipping)
			fprintf(stderr, "log: %s:%zu: unreadable row\n", r->path, r->line + 1);
		r->skipping = true;
		r->len = 0;
	}
}

int log_reader_drain(struct log_reader *r)
{
	for (;;) {
		ssize_t n;

		if (r->cap - r->len < READ_CHUNK) {
			size_t ncap = r->len + READ_CHUNK;
			char *grown = realloc(r->buf, ncap);

			if (grown == NULL)
				return -1;
			r->buf = grown;
			r->cap = ncap;
		}
		n = read(r->fd, r->buf + r->len, READ_CHUNK);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			return -1;
		if (n == 0)
			return 0;
		r->len += (size_t)n;
		r->off += n;
		reader_lines(r);
	}
}

void log_reader_finish(struct log_reader *r)
{
	if (r->len > 0 && !r->skipping) {
		r->line++;
		r->line_fn(r->arg, r, r->buf, r->len);
	}
	r->len = 0;
	r->skipping = false;
}

int log_reader_poll(struct log_reader *r)
{
	struct stat st;

	if (r->fd == -1) {
		if (log_reader_open(r) == 0 || errno == ENOENT)
			return 0;
		return -1;
	}
	if (stat(r->path, &st) == -1)
		return 0; /* renamed away, the new file not there yet */
	if (st.st_dev != r->dev || st.st_ino != r->ino) {
		/* rotated: what was appended before the rename is still ours */
		if (log_reader_drain(r) == -1)
			return -1;
		log_reader_finish(r);
		close(r->fd);
		r->fd = -1;
		if (log_reader_open(r) == -1 && errno != ENOENT)
			return -1;
		return 0;
	}
	if (fstat(r->fd, &st) == 0 && st.st_size < r->off) {
		/* truncated in place: start over from its beginning */
		if (lseek(r->fd, 0, SEEK_SET) == -1)
			return -1;
		r->off = 0;
		r->len = 0;
		r->line = 0;
		r->skipping = false;
	}
	return 0;
}

void log_reader_release(struct log_reader *r)
{
	if (r->fd != -1)
		close(r->fd);
	r->fd = -1;
	free(r->buf);
	r->buf = NULL;
	r->len = r->cap = 0;
}

/* (Re)read the snapshots; a damaged line is reported and skipped, a failure leaves none. */
static void snaps_load(struct log_snaps *sn, const char *prefix)
{
	if (stat(sn->path, &sn->st) == -1)
		memset(&sn->st, 0, sizeof(sn->st));
	if (snapshot_load(sn->path, prefix, &sn->all, stderr) == -1)
		snapshots_release(&sn->all);
}

int log_snaps_init(struct log_snaps *sn, const struct config *c, const char *prefix)
{
	int n = snprintf(sn->path, sizeof(sn->path), "%s/%s", c->state_dir, ENGINE_FILE);

	if (n < 0 || (size_t)n >= sizeof(sn->path)) {
		fprintf(stderr, "%s: %s/%s: path too long\n", prefix, c->state_dir, ENGINE_FILE);
		return -1;
	}
	snaps_load(sn, prefix);
	return 0;
}

bool log_snaps_refresh(struct log_snaps *sn, const char *prefix)
{
	struct stat st;

	if (stat(sn->path, &st) == -1)
		memset(&st, 0, sizeof(st));
	if (st.st_ino == sn->st.st_ino && st.st_dev == sn->st.st_dev &&
	    st.st_size == sn->st.st_size && st.st_mtim.tv_sec == sn->st.st_mtim.tv_sec &&
	    st.st_mtim.tv_nsec == sn->st.st_mtim.tv_nsec)
		return false;
	snaps_load(sn, prefix);
	return true;
}
