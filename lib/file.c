/*
 * file.c: reading a small file whole and making directories, for the CLI and
 * the daemons alike.
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
