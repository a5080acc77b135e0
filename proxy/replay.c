/*
 * replay.c: the stamp replay window, kept in STATE/stamp.seen.
 *
 * The window (lib/stamp.h: per forwarder boot, the highest sequence and a
 * bitmap below it) is a struct the proxy maps from a file with MAP_SHARED,
 * so every stamp it accepts is recorded in the page cache at once: a proxy
 * restarted, or killed with -9, still refuses a stamp it saw before. The
 * file starts with a header naming its layout; a file with another layout
 * or size is not ours to trust, so the window starts empty and stderr says
 * so loudly.
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
	char magic[32];
	uint64_t size; /* sizeof(struct replay_file) when written */
	struct stamp_replay window;
};

int replay_open(struct proxy *px)
{
	char path[PATH_MAX];
	struct replay_file *f;
	const char *why = NULL;
	struct stat st;
	int fd;

	if (snprintf(path, sizeof(path), "%s/stamp.seen", px->config->state_dir) >=
	    (int)sizeof(path)) {
		fprintf(stderr, "sluice-proxy: state dir path too long\n");
		return -1;
	}
	/* root's, one name, no link: it is truncated and written through the map */
	fd = file_open_owned(path, O_RDWR | O_CREAT, 0600, FILE_NO_UID, &why);
	if (fd == -1 || fstat(fd, &st) == -1)
		goto fail;
	if (st.st_size != (off_t)sizeof(*f)) {
		if (st.st_size != 0)
			fprintf(stderr, "sluice-proxy: %s: not a replay window of this version "
					"(%lld bytes); starting with an empty one\n",
				path, (long long)st.st_size);
		if (ftruncate(fd, 0) == -1 || ftruncate(fd, sizeof(*f)) == -1)
			goto fail;
	}
	f = mmap(NULL, sizeof(*f), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (f == MAP_FAILED)
		goto fail;
	close(fd);
	if (memcmp(f->magic, REPLAY_MAGIC, sizeof(REPLAY_MAGIC)) != 0 || f->size != sizeof(*f)) {
		if (st.st_size == (off_t)sizeof(*f))
			fprintf(stderr, "sluice-proxy: %s: damaged header; starting with an empty "
					"replay window\n", path);
		memset(f, 0, sizeof(*f));
		memcpy(f->magic, REPLAY_MAGIC, sizeof(REPLAY_MAGIC));
		f->size = sizeof(*f);
	}
	px->replay = &f->window;
	return 0;
fail:
	fprintf(stderr, "sluice-proxy: %s: %s\n", path, why != NULL ? why : strerror(errno));
	if (fd != -1)
		close(fd);
	return -1;
}

void replay_close(struct proxy *px)
{
	if (px->replay != NULL)
		munmap((char *)px->replay - offsetof(struct replay_file, window),
		       sizeof(struct replay_file));
	px->replay = NULL;
}
