/*
 * allow_log.c: the network log's files as `sluice allow approve` and
 * `sluice allow learn` read them: the log itself or one of its rotations,
 * opened as `sluice log` opens them (its user's, not a link), read whole.
 * It parses nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "file.h"

#define LOG_FILE_MAX (1024UL * 1024 * 1024) /* read no more of one log file */

void allow_log_path(const struct config *c, unsigned k, char *path, size_t size)
{
	if (k == 0)
		snprintf(path, size, "%s", c->log_path);
	else
		snprintf(path, size, "%s.%u", c->log_path, k);
}

int allow_log_read(const struct config *c, unsigned k, char **buf, size_t *len)
{
	char path[PATH_MAX + 16];
	const char *why = NULL;
	size_t cap = 0;
	int fd;

	allow_log_path(c, k, path, sizeof(path));
	fd = file_open_owned(path, O_RDONLY, 0, cli_user_uid(c), &why);
	*buf = NULL;
	*len = 0;
	if (fd == -1 && errno == ENOENT)
		return 0;
	if (fd == -1) {
		fprintf(stderr, "allow: %s: %s\n", path, why != NULL ? why : strerror(errno));
		return -1;
	}
	for (;;) {
		ssize_t n;

		if (*len == cap) {
			char *grown = cap < LOG_FILE_MAX ? realloc(*buf, cap = cap ? cap * 2 : 1 << 20)
							 : NULL;

			if (grown == NULL) {
				fprintf(stderr, "allow: %s: %s\n", path,
					cap >= LOG_FILE_MAX ? "larger than 1 GiB" : "out of memory");
				goto fail;
			}
			*buf = grown;
		}
		n = read(fd, *buf + *len, cap - *len);
		if (n == 0)
			break;
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fprintf(stderr, "allow: read %s: %s\n", path, strerror(errno));
			goto fail;
		}
		*len += (size_t)n;
	}
	close(fd);
	return 1;
fail:
	close(fd);
	free(*buf);
	*buf = NULL;
	return -1;
}
