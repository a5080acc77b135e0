/*
 * allow_store.c: the grant store, as `sluice allow` and `sluice run` edit it
 * (through allow_grant.c, above it: this file calls none of the allow files).
 *
 * The store is STATE/grants in grant.h's format. Every change reads the
 * store, edits it in memory and replaces it whole (a temporary file in the
 * same directory, fsync, rename, fsync of the directory) while holding an
 * exclusive flock on STATE/grants.lock, so two CLIs never lose each
 * other's writes and the proxy never reads half a file. A store that does
 * not parse is never rewritten: the operator repairs or deletes it. It
 * does not signal the proxy: the proxy picks the file up when it changes.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "file.h"

#define STORE_NAME "grants"
#define LOCK_NAME "grants.lock"
#define STORE_MAX_BYTES (16 * 1024 * 1024)

static int state_file(const struct config *c, const char *name, char *buf, size_t size)
{
	int n = snprintf(buf, size, "%s/%s", c->state_dir, name);

	if (n < 0 || (size_t)n >= size) {
		fprintf(stderr, "allow: %s/%s: path too long\n", c->state_dir, name);
		return -1;
	}
	return 0;
}

static void put_errno(const char *what, const char *path, int e)
{
	fprintf(stderr, "allow: %s %s: ", what, path);
	cli_put_strerror(stderr, e);
	fputc('\n', stderr);
}

int allow_store_load(const struct config *c, struct allow_store *s)
{
	char path[PATH_MAX];
	char *buf;
	size_t len, max = 1, line = 0;
	const char *err = "bad line";

	s->g = NULL;
	s->n = 0;
	memset(&s->mode, 0, sizeof(s->mode));
	if (state_file(c, STORE_NAME, path, sizeof(path)) == -1)
		return -1;
	if (file_read(path, STORE_MAX_BYTES, &buf, &len) == -1) {
		if (errno == ENOENT)
			return 0;
		put_errno("read", path, errno);
		return -1;
	}
	for (size_t i = 0; i < len; i++)
		max += buf[i] == '\n';
	s->g = calloc(max, sizeof(*s->g));
	if (s->g == NULL) {
		free(buf);
		fprintf(stderr, "allow: out of memory\n");
		return -1;
	}
	if (grant_store_parse(buf, len, s->g, max, &s->n, &s->mode, &line, &err) == -1) {
		fprintf(stderr,
			"allow: %s:%zu: %s; repair or delete that file (deleting means no grants)\n",
			path, line, err);
		free(buf);
		free(s->g);
		s->g = NULL;
		return -1;
	}
	free(buf);
	return 0;
}

int allow_store_lock(const struct config *c)
{
	char path[PATH_MAX];
	int fd;

	if (file_mkdir_p(c->state_dir, 0700) == -1) {
		put_errno("mkdir", c->state_dir, errno);
		return -1;
	}
	if (state_file(c, LOCK_NAME, path, sizeof(path)) == -1)
		return -1;
	fd = cli_open_state("allow", path, O_RDWR | O_CREAT, 0600);
	if (fd == -1)
		return -1;
	while (flock(fd, LOCK_EX) == -1) {
		if (errno != EINTR) {
			put_errno("lock", path, errno);
			close(fd);
			return -1;
		}
	}
	return fd;
}

int allow_store_save(const struct config *c, const struct allow_store *s)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	FILE *f;
	int fd, dfd, ret = -1;

	if (state_file(c, STORE_NAME, path, sizeof(path)) == -1 ||
	    state_file(c, "." STORE_NAME ".XXXXXX", tmp, sizeof(tmp)) == -1)
		return -1;
	/* O_CREAT | O_EXCL (mkostemp's own): a new file, never a name planted before */
	fd = mkostemp(tmp, O_CLOEXEC | O_NOFOLLOW);
	if (fd == -1) {
		put_errno("create", tmp, errno);
		return -1;
	}
	/* the grants are not secret; the proxy may read them after dropping root */
	if (fchmod(fd, 0644) == -1) {
		put_errno("chmod", tmp, errno);
		close(fd);
		goto out_unlink;
	}
	f = fdopen(fd, "w");
	if (f == NULL) {
		put_errno("open", tmp, errno);
		close(fd);
		goto out_unlink;
	}
	if (grant_store_write(f, s->g, s->n, &s->mode) == -1 || fflush(f) == EOF || fsync(fd) == -1) {
		put_errno("write", tmp, errno);
		fclose(f);
		goto out_unlink;
	}
	if (fclose(f) == EOF) {
		put_errno("write", tmp, errno);
		goto out_unlink;
	}
	if (rename(tmp, path) == -1) {
		put_errno("rename to", path, errno);
		goto out_unlink;
	}
	dfd = open(c->state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd != -1) {
		fsync(dfd);
		close(dfd);
	}
	return 0;
out_unlink:
	unlink(tmp);
	return ret;
}

void allow_store_prune(struct allow_store *s, const struct grant *like, time_t now, size_t *removed)
{
	size_t j = 0, dropped = 0;

	for (size_t i = 0; i < s->n; i++) {
		if (like != NULL && grant_same(&s->g[i], like)) {
			dropped++;
			continue;
		}
		if (s->g[i].level == GRANT_ONCE && s->g[i].expires <= now)
			continue;
		s->g[j++] = s->g[i];
	}
	s->n = j;
	if (removed != NULL)
		*removed = dropped;
}

int allow_store_append(struct allow_store *s, const struct grant *g)
{
	struct grant *grown = realloc(s->g, (s->n + 1) * sizeof(*grown));

	if (grown == NULL) {
		fprintf(stderr, "allow: out of memory\n");
		return -1;
	}
	s->g = grown;
	s->g[s->n++] = *g;
	return 0;
}
