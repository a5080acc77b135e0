/*
 * replay.c: the stamp replay window, kept in STATE/stamp.seen.
 *
 * The window (lib/stamp.h: per forwarder boot, the highest sequence and a
 * bitmap below it) is a struct the proxy maps from a file with MAP_SHARED,
 * so every stamp it accepts is recorded in the page cache at once: a proxy
 * restarted, or killed with -9, still refuses a stamp it saw before. The
 * file starts with a header naming its layout; a file with another layout
 * or size is not ours to trust, so the window starts empty and stderr says
 * so loudly. state_map maps such a file (budget.c keeps its counts so too).
 */
#include "proxy.h"

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define REPLAY_MAGIC "sluice stamp.seen v1"

struct replay_file {
	struct state_head head;
	struct stamp_replay window;
};

int state_open(const struct proxy *px, const char *name, char *path, size_t size)
{
	const char *why = NULL;
	int fd;

	if (snprintf(path, size, "%s/%s", px->config->state_dir, name) >= (int)size) {
		fprintf(stderr, "sluice-proxy: state dir path too long\n");
		return -1;
	}
	/* root's, one name, no link: it is truncated and written through the map */
	fd = file_open_owned(path, O_RDWR | O_CREAT, 0600, FILE_NO_UID, &why);
	if (fd == -1)
		fprintf(stderr, "sluice-proxy: %s: %s\n", path, why != NULL ? why : strerror(errno));
	return fd;
}

void *state_map_fd(int fd, const char *path, const char *magic, size_t size, const char *what)
{
	struct state_head *h;
	struct stat st;
	int e;

	if (fstat(fd, &st) == -1)
		goto fail;
	if (st.st_size != (off_t)size) {
		if (st.st_size != 0)
			fprintf(stderr, "sluice-proxy: %s: not %s of this version (%lld bytes); "
					"starting with an empty one\n",
				path, what, (long long)st.st_size);
		if (ftruncate(fd, 0) == -1)
			goto fail;
	}
	/* every block on the disk now: a full disk is found here, never as SIGBUS on a write */
	e = posix_fallocate(fd, 0, (off_t)size);
	if (e != 0) {
		errno = e;
		goto fail;
	}
	h = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (h == MAP_FAILED)
		goto fail;
	if (strncmp(h->magic, magic, sizeof(h->magic)) != 0 || h->size != size) {
		if (st.st_size == (off_t)size)
			fprintf(stderr, "sluice-proxy: %s: damaged header; starting with an empty "
					"%s\n", path, what);
		memset(h, 0, size);
		snprintf(h->magic, sizeof(h->magic), "%s", magic);
		h->size = size;
	}
	return h;
fail:
	fprintf(stderr, "sluice-proxy: %s: %s\n", path, strerror(errno));
	return NULL;
}

void *state_map(const struct proxy *px, const char *name, const char *magic, size_t size,
		const char *what)
{
	char path[PATH_MAX];
	int fd = state_open(px, name, path, sizeof(path));
	void *h;

	if (fd == -1)
		return NULL;
	h = state_map_fd(fd, path, magic, size, what);
	close(fd);
	return h;
}

int replay_open(struct proxy *px)
{
	struct replay_file *f = state_map(px, "stamp.seen", REPLAY_MAGIC, sizeof(*f),
					  "a replay window");

	if (f == NULL)
		return -1;
	px->replay = &f->window;
	return 0;
}

void replay_close(struct proxy *px)
{
	if (px->replay != NULL)
		munmap((char *)px->replay - offsetof(struct replay_file, window),
		       sizeof(struct replay_file));
	px->replay = NULL;
}
