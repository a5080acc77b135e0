/*
 * cgroup.c: who is behind a connection on an --own listener, by the
 * client socket's cgroup.
 *
 * The client's socket is found with one exact sock_diag lookup in our own
 * namespace (sockdiag.c) and its cgroup v2 id read from the answer. The id
 * is the inode number of the cgroup's directory in the cgroup2 hierarchy,
 * found by a bounded walk that compares readdir's d_ino (cgroupfs gives
 * the id there without a stat). The path is classified from the root
 * down: the outermost libpod-<64 hex>[.scope] component (not
 * libpod-conmon-*) is container:<id>, else the outermost *buildah-*.scope
 * is build:<scope>, else user. The last few answers are cached for a
 * second. Anything not found fails closed: the caller resets the client.
 * Does not trust the client's own claims and does not follow symlinks.
 */
#include "forward.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "iprange.h"
#include "sockdiag.h"

#define WALK_DEPTH_MAX 32
#define WALK_DIRS_MAX 20000
#define CACHE_MS 1000
#define LIBPOD "libpod-"
#define ID_HEX 64

/* Undo mountinfo's octal escapes (\040 and friends) in place. */
static void unescape(char *s)
{
	char *o = s;

	for (; *s != '\0'; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*o++ = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 | (s[3] - '0'));
			s += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
}

int cgroup_map_init(struct cgroup_map *m, const char **err)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096];
	int ret = -1;

	memset(m, 0, sizeof(*m));
	if (f == NULL) {
		*err = "cannot read /proc/self/mountinfo";
		return -1;
	}
	/* "id parent maj:min root mountpoint options [optional...] - fstype source super" */
	while (fgets(line, sizeof(line), f) != NULL) {
		char *sep = strstr(line, " - "), *save = NULL, *mnt;

		if (sep == NULL || strncmp(sep + 3, "cgroup2 ", 8) != 0)
			continue;
		*sep = '\0';
		mnt = strtok_r(line, " ", &save);
		for (int i = 0; i < 4 && mnt != NULL; i++)
			mnt = strtok_r(NULL, " ", &save);
		if (mnt == NULL)
			continue;
		unescape(mnt);
		if (strlen(mnt) >= sizeof(m->root))
			continue;
		strcpy(m->root, mnt);
		ret = 0;
		break;
	}
	fclose(f);
	if (ret == -1)
		*err = "no cgroup2 mount in /proc/self/mountinfo";
	return ret;
}

struct walk {
	uint64_t id;
	char path[4096]; /* relative to the mount; "" is its root */
	size_t dirs;     /* directories opened, at most WALK_DIRS_MAX */
};

/*
 * Look for id among the directories below dfd (whose path is w->path,
 * len bytes). Takes dfd. Returns 1 found (w->path names it), 0 not here.
 */
static int walk_dir(struct walk *w, int dfd, size_t len, unsigned depth)
{
	DIR *d = fdopendir(dfd);
	struct dirent *de;
	int found = 0;

	if (d == NULL) {
		close(dfd);
		return 0;
	}
	while (found == 0 && (de = readdir(d)) != NULL) {
		size_t nl = strlen(de->d_name);
		int sub;

		if (de->d_type != DT_DIR || strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0 || len + 1 + nl >= sizeof(w->path))
			continue;
		w->path[len] = '/';
		memcpy(w->path + len + 1, de->d_name, nl + 1);
		if ((uint64_t)de->d_ino == w->id) {
			found = 1;
			break;
		}
		if (depth + 1 >= WALK_DEPTH_MAX || w->dirs >= WALK_DIRS_MAX)
			continue;
		sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub == -1)
			continue;
		w->dirs++;
		found = walk_dir(w, sub, len + 1 + nl, depth + 1);
	}
	if (found == 0)
		w->path[len] = '\0';
	closedir(d);
	return found;
}

static bool is_hex_lower(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

static bool ends_with(const char *s, size_t n, const char *suffix)
{
	size_t sl = strlen(suffix);

	return n >= sl && memcmp(s + n - sl, suffix, sl) == 0;
}

/* libpod-<64 hex> or libpod-<64 hex>.scope (libpod-conmon-* has no hex there). */
static bool is_container(const char *c, size_t n)
{
	size_t pl = sizeof(LIBPOD) - 1;

	return (n == pl + ID_HEX || (n == pl + ID_HEX + 6 && ends_with(c, n, ".scope"))) &&
	       memcmp(c, LIBPOD, pl) == 0 && is_hex_lower(c + pl, ID_HEX);
}

/* *buildah-*.scope: crun-buildah-buildah123.scope, runc-buildah-... */
static bool is_build(const char *c, size_t n)
{
	return ends_with(c, n, ".scope") && memmem(c, n - 6, "buildah-", 8) != NULL;
}

static bool principal_valid(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > STAMP_AS_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-' || c == ':'))
			return false;
	}
	return true;
}

/*
 * The principal for a cgroup path ("/a/b/c", "" for the root) into out
 * (STAMP_AS_MAX + 1 bytes). Returns 0, or -1 when the component that
 * decides cannot be spelled in a stamp.
 */
static int classify(const char *path, char out[STAMP_AS_MAX + 1])
{
	for (int pass = 0; pass < 2; pass++) {
		const char *c = path;

		while (*c != '\0') {
			size_t n;

			while (*c == '/')
				c++;
			n = strcspn(c, "/");
			if (pass == 0 && n > 0 && is_container(c, n)) {
				snprintf(out, STAMP_AS_MAX + 1, "container:%.*s", ID_HEX,
					 c + sizeof(LIBPOD) - 1);
				return 0;
			}
			if (pass == 1 && n > 0 && is_build(c, n)) {
				if (n - 6 > STAMP_AS_MAX - 6)
					return -1;
				snprintf(out, STAMP_AS_MAX + 1, "build:%.*s", (int)(n - 6), c);
				return principal_valid(out) ? 0 : -1;
			}
			c += n;
		}
	}
	snprintf(out, STAMP_AS_MAX + 1, "user");
	return 0;
}

/* The principal of cgroup id: cached, else walked and classified. Returns 0 or -1 with *err. */
static int principal_of(struct forwarder *fw, uint64_t id, char out[STAMP_AS_MAX + 1],
			const char **err)
{
	struct cgroup_map *m = &fw->cgroups;
	uint64_t now = loop_now(fw->loop);
	struct walk *w;
	struct stat st;
	int fd, ret = -1;

	for (size_t i = 0; i < CGROUP_CACHE; i++) {
		if (m->cache[i].until_ms > now && m->cache[i].id == id) {
			memcpy(out, m->cache[i].principal, STAMP_AS_MAX + 1);
			return 0;
		}
	}
	w = calloc(1, sizeof(*w));
	if (w == NULL) {
		*err = "out of memory";
		return -1;
	}
	w->id = id;
	fd = open(m->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd == -1) {
		*err = "cannot open the cgroup2 mount";
		goto out_free;
	}
	if (fstat(fd, &st) == 0 && (uint64_t)st.st_ino == id) {
		close(fd); /* the root cgroup */
	} else if (walk_dir(w, fd, 0, 0) == 0) {
		*err = w->dirs >= WALK_DIRS_MAX ? "cgroup not found (walk limit reached)"
						: "cgroup not found";
		goto out_free;
	}
	if (classify(w->path, out) == -1) {
		*err = "cgroup name cannot be a principal";
		goto out_free;
	}
	m->cache[m->next].id = id;
	m->cache[m->next].until_ms = now + CACHE_MS;
	memcpy(m->cache[m->next].principal, out, STAMP_AS_MAX + 1);
	m->next = (m->next + 1) % CGROUP_CACHE;
	ret = 0;
out_free:
	free(w);
	return ret;
}

int cgroup_attribute(struct forwarder *fw, int fd, const struct sockaddr_storage *peer,
		     char out[STAMP_AS_MAX + 1])
{
	struct sockaddr_storage local;
	socklen_t len = sizeof(local);
	char who[64];
	const char *err = NULL;
	uint64_t id = 0;

	sockaddr_format(peer, who, sizeof(who));
	if (getsockname(fd, (struct sockaddr *)&local, &len) == -1 ||
	    sockdiag_cgroup_id(fw->diag, peer, &local, &id) == -1) {
		int e = errno;

		fprintf(stderr, "sluice-forward: attribute client %s: socket lookup: %s: reset\n",
			who,
			e == ENOENT    ? "client socket not found"
			: e == ENODATA ? "the kernel sent no cgroup id (INET_DIAG_CGROUP_ID)"
				       : strerror(e));
		return -1;
	}
	if (principal_of(fw, id, out, &err) == -1) {
		fprintf(stderr, "sluice-forward: attribute client %s: cgroup %llu: %s: reset\n", who,
			(unsigned long long)id, err);
		return -1;
	}
	return 0;
}
