/*
 * runfile.c: a daemon's run file in STATE (runfile.h): written once its
 * listeners are open, read by the CLI and by sluice-dns (session grants).
 */
#include "runfile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <unistd.h>

#include "digits.h"
#include "file.h"
#include "hex.h"
#include "lines.h"
#include "sockaddr.h"

static int path_of(char *buf, size_t size, const char *dir, const char *prefix, const char *name)
{
	int n = snprintf(buf, size, "%s/%s%s", dir, prefix, name);

	if (n < 0 || (size_t)n >= size) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

static size_t format(const struct runfile *rf, char *out, size_t size)
{
	char addr[128];
	size_t n = 0;

	n += (size_t)snprintf(out + n, size - n, "%s\npid %d\n", rf->id, (int)rf->pid);
	for (size_t i = 0; i < rf->nlisten && n < size; i++)
		n += (size_t)snprintf(out + n, size - n, "listen %s\n",
				      sockaddr_format(&rf->listen[i], addr, sizeof(addr)));
	return n < size ? n : size;
}

int runfile_write(const char *state_dir, const char *name, struct runfile *rf)
{
	unsigned char raw[GRANT_RUN_ID_LEN / 2];
	char path[PATH_MAX], tmp[PATH_MAX], text[RUNFILE_MAX_BYTES], tmpname[64];
	size_t len;
	int fd, e;

	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		return -1;
	hex_encode(raw, sizeof(raw), rf->id);
	len = format(rf, text, sizeof(text));
	snprintf(tmpname, sizeof(tmpname), ".%s.%d", name, (int)getpid());
	if (path_of(path, sizeof(path), state_dir, "", name) == -1 ||
	    path_of(tmp, sizeof(tmp), state_dir, "", tmpname) == -1)
		return -1;
	/* a fresh file: never one planted at the name (a link to root's file to truncate) */
	if (unlink(tmp) == -1 && errno != ENOENT)
		return -1;
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd == -1)
		return -1;
	/* the lock is taken before the rename, so the file is never seen unlocked while we run */
	if (flock(fd, LOCK_SH) == -1 || write(fd, text, len) != (ssize_t)len ||
	    rename(tmp, path) == -1) {
		e = errno;
		close(fd);
		unlink(tmp);
		errno = e;
		return -1;
	}
	return fd;
}

void runfile_remove(const char *state_dir, const char *name, int fd)
{
	char path[PATH_MAX];

	if (path_of(path, sizeof(path), state_dir, "", name) == 0)
		unlink(path);
	if (fd >= 0)
		close(fd);
}

int runfile_parse(const char *buf, size_t len, struct runfile *rf)
{
	const char *line;
	size_t n, at = 0;
	char text[128];

	memset(rf, 0, sizeof(*rf));
	if (!line_next(buf, len, &at, &line, &n) || n != GRANT_RUN_ID_LEN ||
	    !hex_is_lower(line, GRANT_RUN_ID_LEN))
		return -1;
	memcpy(rf->id, line, GRANT_RUN_ID_LEN);
	while (line_next(buf, len, &at, &line, &n)) {
		if (n >= sizeof(text))
			return -1;
		memcpy(text, line, n);
		text[n] = '\0';
		if (strncmp(text, "pid ", 4) == 0 && rf->pid == 0) {
			uint64_t v;

			if (digits_text(text + 4, 10, 1, 0x3fffffff, &v) == -1)
				return -1;
			rf->pid = (pid_t)v;
		} else if (strncmp(text, "listen ", 7) == 0 && rf->nlisten < RUNFILE_LISTEN_MAX) {
			if (sockaddr_parse(text + 7, SOCKADDR_UNIX, 0, &rf->listen[rf->nlisten]) == -1)
				return -1;
			rf->nlisten++;
		} else {
			return -1;
		}
	}
	return at == len ? 0 : -1;
}

int runfile_read(const char *state_dir, const char *name, struct runfile *rf)
{
	char path[PATH_MAX];
	char *buf;
	size_t len;
	int fd, ret;

	if (path_of(path, sizeof(path), state_dir, "", name) == -1)
		return -1;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd == -1)
		return -1;
	/* the running daemon holds a shared lock: an exclusive one is ours only when it stopped */
	if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
		close(fd);
		errno = ESRCH;
		return -1;
	}
	close(fd);
	if (file_read(path, RUNFILE_MAX_BYTES, &buf, &len) == -1)
		return -1;
	ret = runfile_parse(buf, len, rf);
	free(buf);
	if (ret == -1)
		errno = EINVAL;
	return ret;
}
