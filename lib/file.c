/*
 * file.c: reading a small file whole, making directories and opening the
 * files root keeps beside others' (STATE, the log's directory), for the CLI
 * and the daemons alike. It does not lock: callers flock what they share.
 */
#include "file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int file_read(const char *path, size_t max, char **out, size_t *len)
{
	char *buf = NULL;
	size_t cap = 0, n = 0;
	int fd, e;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd == -1)
		return -1;
	for (;;) {
		ssize_t r;

		if (n + 1 >= cap) {
			size_t ncap = cap == 0 ? 4096 : cap * 2;
			char *grown;

			if (ncap > max + 2)
				ncap = max + 2;
			if (n + 1 >= ncap) {
				errno = EFBIG;
				goto out_fail;
			}
			grown = realloc(buf, ncap);
			if (grown == NULL)
				goto out_fail;
			buf = grown;
			cap = ncap;
		}
		r = read(fd, buf + n, cap - n - 1);
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1)
			goto out_fail;
		if (r == 0)
			break;
		n += (size_t)r;
	}
	if (buf == NULL && (buf = malloc(1)) == NULL)
		goto out_fail;
	close(fd);
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
out_fail:
	e = errno;
	free(buf);
	close(fd);
	errno = e;
	return -1;
}

int file_mkdir_p(const char *dir, mode_t mode)
{
	char p[PATH_MAX];
	size_t len = strlen(dir);

	if (len == 0 || len >= sizeof(p)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(p, dir, len + 1);
	for (size_t i = 1; i <= len; i++) {
		if (p[i] != '/' && p[i] != '\0')
			continue;
		p[i] = '\0';
		if (mkdir(p, mode) == -1 && errno != EEXIST)
			return -1;
		p[i] = dir[i];
	}
	return 0;
}

const char *file_refusal(const struct stat *st, uid_t self, uid_t other)
{
	if (!S_ISREG(st->st_mode))
		return "not a regular file";
	if (st->st_uid != 0 && st->st_uid != self && (other == FILE_NO_UID || st->st_uid != other))
		return other == FILE_NO_UID || other == self ? "not owned by root or by us"
							     : "not owned by root, us or the proxy's user";
	if (st->st_nlink != 1)
		return "a hard link (more than one name)";
	return NULL;
}

int file_open_owned(const char *path, int flags, mode_t mode, uid_t other, const char **why)
{
	const char *no = NULL;
	struct stat st;
	int fd, fl, e;

	if (why != NULL)
		*why = NULL;
	fd = open(path, flags | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, mode);
	if (fd == -1) {
		if (errno == ELOOP)
			no = "a symbolic link";
		goto out;
	}
	if (fstat(fd, &st) == -1)
		goto out_close;
	no = file_refusal(&st, geteuid(), other);
	if (no != NULL) {
		errno = EPERM;
		goto out_close;
	}
	/* O_NONBLOCK only kept a FIFO from blocking the open; a regular file drops it */
	if (!(flags & O_NONBLOCK) && ((fl = fcntl(fd, F_GETFL)) == -1 ||
				      fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == -1))
		goto out_close;
	return fd;
out_close:
	e = errno;
	close(fd);
	errno = e;
	fd = -1;
out:
	if (why != NULL)
		*why = no;
	return fd;
}
