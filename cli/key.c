/*
 * key.c: `sluice key init|rotate|list`, the stamp keys in STATE/stamp.key.
 *
 * sluice-forward signs each connection's stamp with the current key and
 * sluice-proxy verifies it (stamp.h). The file is root-only (0600), written
 * whole to a temporary file and renamed, under an flock on the key file's
 * lock; a rewrite keeps the old file's group and its group-read bit (a
 * proxy running as `user NAME` reads it through the group: root:GROUP 0640),
 * never more. Rotation adds a new current key and gives the old one an expiry
 * (its grace period) so stamps already in flight still verify. Key bytes
 * are never printed.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "digits.h"
#include "file.h"
#include "stamp.h"

#define KEY_NAME "stamp.key"
#define KEY_LOCK ".stamp.key.lock"
#define GRACE_DEFAULT 3600

static void put_errno(const char *what, const char *path, int e)
{
	fprintf(stderr, "key: %s %s: ", what, path);
	cli_put_strerror(stderr, e);
	fputc('\n', stderr);
}

/* Read STATE/stamp.key into keys. Returns 0 (missing: *n 0, *missing), or -1 after printing. */
static int keys_load(const char *path, struct stamp_key *keys, size_t *n, bool *missing)
{
	size_t len = 0, line = 0;
	const char *err = NULL;
	char *buf;
	int ret = 0;

	*n = 0;
	*missing = false;
	if (file_read(path, 8192, &buf, &len) == -1) {
		*missing = errno == ENOENT;
		if (*missing)
			return 0;
		put_errno("read", path, errno);
		return -1;
	}
	if (stamp_keys_parse(buf, len, keys, STAMP_KEYS_MAX, n, &line, &err) == -1) {
		fprintf(stderr, "key: %s:%zu: %s; repair or delete it (then: sluice key init)\n",
			path, line, err);
		ret = -1;
	}
	explicit_bzero(buf, len);
	free(buf);
	return ret;
}

/*
 * Replace the key file with keys[0..n): 0600, or the old file's group with
 * 0640 when the old one was group-readable. Returns 0 or -1 after printing.
 */
static int keys_save(const char *dir, const char *path, const struct stamp_key *keys, size_t n)
{
	char tmp[PATH_MAX];
	struct stat old;
	bool group = stat(path, &old) == 0 && (old.st_mode & S_IRGRP) != 0;
	FILE *f;
	int fd;

	if (snprintf(tmp, sizeof(tmp), "%s/.%s.XXXXXX", dir, KEY_NAME) >= (int)sizeof(tmp)) {
		fprintf(stderr, "key: %s: path too long\n", dir);
		return -1;
	}
	fd = mkostemp(tmp, O_CLOEXEC | O_NOFOLLOW); /* created 0600 */
	if (fd == -1) {
		put_errno("create", tmp, errno);
		return -1;
	}
	if (group && (fchown(fd, (uid_t)-1, old.st_gid) == -1 || fchmod(fd, 0640) == -1)) {
		put_errno("keep the group of", path, errno);
		close(fd);
		unlink(tmp);
		return -1;
	}
	f = fdopen(fd, "w");
	if (f == NULL || stamp_keys_write(f, keys, n) == -1 || fflush(f) == EOF ||
	    fsync(fd) == -1) {
		put_errno("write", tmp, errno);
		if (f != NULL)
			fclose(f);
		else
			close(fd);
		unlink(tmp);
		return -1;
	}
	if (fclose(f) == EOF || rename(tmp, path) == -1) {
		put_errno("write", path, errno);
		unlink(tmp);
		return -1;
	}
	return 0;
}

static int new_key(struct stamp_key *k, uint32_t kid)
{
	memset(k, 0, sizeof(*k));
	k->kid = kid;
	if (getrandom(k->key, sizeof(k->key), 0) != (ssize_t)sizeof(k->key)) {
		fprintf(stderr, "key: getrandom failed\n");
		return -1;
	}
	return 0;
}

static int key_list(const struct stamp_key *keys, size_t n, time_t now)
{
	printf("KID  STATE\n");
	for (size_t i = 0; i < n; i++) {
		if (keys[i].expires == 0)
			printf("%-4u current\n", keys[i].kid);
		else if (keys[i].expires > now)
			printf("%-4u previous, verifies for %llds more\n", keys[i].kid,
			       (long long)(keys[i].expires - now));
		else
			printf("%-4u expired\n", keys[i].kid);
	}
	return EXIT_OK;
}

int cmd_key(int argc, char **argv)
{
	struct stamp_key keys[STAMP_KEYS_MAX], out[STAMP_KEYS_MAX];
	char path[PATH_MAX], lock[PATH_MAX];
	long grace = GRACE_DEFAULT;
	const char *sub = argc > 1 ? argv[1] : NULL;
	struct config *c;
	size_t n = 0, m = 0;
	bool missing;
	uint32_t top = 0;
	time_t now = time(NULL);
	int lockfd = -1, ret = EXIT_ERROR;

	if (sub == NULL || strcmp(sub, "-h") == 0) {
		cli_usage(sub == NULL ? stderr : stdout, "key");
		return sub == NULL ? EXIT_USAGE : EXIT_OK;
	}
	if (strcmp(sub, "rotate") == 0 && argc == 4 && strcmp(argv[2], "--grace") == 0) {
		uint64_t v;

		if (digits_text(argv[3], 10, 0, 86400 * 30, &v) == -1) {
			fprintf(stderr, "key: bad grace \"%s\": 0 to 2592000 seconds\n", argv[3]);
			return EXIT_USAGE;
		}
		grace = (long)v;
	} else if (argc != 2 || (strcmp(sub, "init") != 0 && strcmp(sub, "rotate") != 0 &&
				 strcmp(sub, "list") != 0)) {
		cli_usage(stderr, "key");
		return EXIT_USAGE;
	}
	c = cli_config_load();
	if (c == NULL)
		return EXIT_ERROR;
	if (snprintf(path, sizeof(path), "%s/%s", c->state_dir, KEY_NAME) >= (int)sizeof(path) ||
	    snprintf(lock, sizeof(lock), "%s/%s", c->state_dir, KEY_LOCK) >= (int)sizeof(lock)) {
		fprintf(stderr, "key: %s: path too long\n", c->state_dir);
		goto out_config;
	}
	if (mkdir(c->state_dir, 0700) == -1 && errno != EEXIST) {
		put_errno("mkdir", c->state_dir, errno);
		goto out_config;
	}
	lockfd = cli_open_state("key", lock, O_RDWR | O_CREAT, 0600);
	if (lockfd == -1)
		goto out_config;
	if (flock(lockfd, LOCK_EX) == -1) {
		put_errno("lock", lock, errno);
		goto out_lock;
	}
	if (keys_load(path, keys, &n, &missing) == -1)
		goto out_lock;
	if (strcmp(sub, "list") == 0) {
		ret = missing ? (fprintf(stderr, "key: no %s; run: sluice key init\n", path),
				 EXIT_ERROR)
			      : key_list(keys, n, now);
		goto out_lock;
	}
	if (strcmp(sub, "init") == 0 && !missing) {
		fprintf(stderr, "key: %s exists; use sluice key rotate\n", path);
		goto out_lock;
	}
	if (strcmp(sub, "rotate") == 0 && missing) {
		fprintf(stderr, "key: no %s; run: sluice key init\n", path);
		goto out_lock;
	}
	/* keep what still verifies, the current key turning previous */
	for (size_t i = 0; i < n; i++) {
		if (keys[i].kid > top)
			top = keys[i].kid;
		if (keys[i].expires != 0 && keys[i].expires <= now)
			continue;
		out[m] = keys[i];
		if (out[m].expires == 0)
			out[m].expires = now + grace;
		if (grace > 0 || keys[i].expires != 0)
			m++;
	}
	if (m >= STAMP_KEYS_MAX) {
		fprintf(stderr, "key: %zu keys still in their grace period; wait or shorten it\n", m);
		goto out_lock;
	}
	if (new_key(&out[m], top + 1) == -1)
		goto out_lock;
	m++;
	if (keys_save(c->state_dir, path, out, m) == 0) {
		printf("%s key %u is current%s\n", strcmp(sub, "init") == 0 ? "created:" : "rotated:",
		       top + 1, m > 1 ? "; earlier keys verify until their grace ends" : "");
		ret = EXIT_OK;
	}
out_lock:
	explicit_bzero(keys, sizeof(keys));
	explicit_bzero(out, sizeof(out));
	if (lockfd != -1)
		close(lockfd);
out_config:
	config_free(c);
	return ret;
}
