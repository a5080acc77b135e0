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

void *state_map(const struct proxy *px, const char *name, const char *magic, size_t size,
		const char *what)
{
	char path[PATH_MAX];
	struct state_head *h;
	const char *why = NULL;
	struct stat st;
	int fd;

	if (snprintf(path, sizeof(path), "%s/%s", px->config->state_dir, name) >=
	    (int)sizeof(path)) {
		fprintf(stderr, "sluice-proxy: state dir path too long\n");
		return NULL;
	}
	/* root's, one name, no link: it is truncated and written through the map */
	fd = file_open_owned(path, O_RDWR | O_CREAT, 0600, FILE_NO_UID, &why);
	if (fd == -1 || fstat(fd, &st) == -1)
		goto fail;
	if (st.st_size != (off_t)size) {
		if (st.st_size != 0)
			fprintf(stderr, "sluice-proxy: %s: not %s of this version (%lld bytes); "
					"starting with an empty one\n",
				path, what, (long long)st.st_size);
		if (ftruncate(fd, 0) == -1 || ftruncate(fd, (off_t)size) == -1)
			goto fail;
	}
	h = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (h == MAP_FAILED)
		goto fail;
	close(fd);
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
	fprintf(stderr, "sluice-proxy: %s: %s\n", path, why != NULL ? why : strerror(errno));
	if (fd != -1)
		close(fd);
	return NULL;
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
