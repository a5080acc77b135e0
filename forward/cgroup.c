/*
 * cgroup.c: who is behind a connection on an --own listener, by the
 * client socket's cgroup.
 *
 * The client's socket is found with one exact sock_diag lookup in our own
 * namespace (sockdiag.c) and its cgroup v2 id read from the answer. The id
 * is the inode number of the cgroup's directory in the cgroup2 hierarchy.
 * Only a cgroup inside an --engine-cgroup subtree can name a container or a
 * build, so only those subtrees are searched for it, by a bounded walk that
 * compares readdir's d_ino (cgroupfs gives the id there without a stat): a
 * user's own cgroups elsewhere, however many, cost nothing to look through,
 * and a cgroup not found there is user. A cgroup's name is its maker's
 * choice, so the path names a container or a build only where the engine
 * makes them (lib/cgpath.c: the component right below an --engine-cgroup parent is
 * libpod-<id>[.scope] or *buildah-*.scope), when every directory down to
 * it is owned by root or the engine uid and the parent and that directory
 * by the engine uid, and, for a container, when the engine's latest
 * snapshot of our --net lists the id (STATE/engine.jsonl, lib/snapids.c,
 * re-read when the file changes). Anything else is user. The last few
 * answers are cached for a second (not a container the snapshot does not
 * list yet). An engine subtree too big to search (more than
 * WALK_DIRS_MAX directories) fails closed: the caller resets the client.
 * Does not trust the client's own claims, does not follow
 * symlinks, does not run the engine.
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

#include "cgpath.h"
#include "sockaddr.h"
#include "snapids.h"
#include "sockdiag.h"

#define WALK_DEPTH_MAX 32
#define WALK_DIRS_MAX 20000
#define CACHE_MS 1000
#define ENGINE_TAIL_MIN (64 * 1024)         /* the engine file's tail read first */
#define ENGINE_TAIL_MAX (64 * 1024 * 1024)  /* and at most */

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
	if (ret == -1) {
		*err = "no cgroup2 mount in /proc/self/mountinfo";
		return -1;
	}
	m->engine.ids = calloc(SNAPIDS_MAX, sizeof(*m->engine.ids));
	if (m->engine.ids == NULL) {
		*err = "out of memory";
		return -1;
	}
	return 0;
}

void cgroup_map_release(struct cgroup_map *m)
{
	free(m->engine.ids);
	m->engine.ids = NULL;
	m->engine.nids = 0;
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

/* Whether parent a's subtree holds parent b's: equal, or b below a on a component boundary. */
static bool parent_covers(const char *a, const char *b)
{
	size_t n = strcmp(a, "/") == 0 ? 0 : strlen(a);

	return strncmp(a, b, n) == 0 && (b[n] == '\0' || b[n] == '/');
}

/*
 * Look for w->id in the subtree of each engine parent, the parent itself
 * included (a parent inside another's subtree is searched with that one).
 * A parent that does not exist holds nothing. Returns 1 found (w->path
 * names it), 0 not in any.
 */
static int search_engine(const struct cgroup_map *m, struct walk *w)
{
	char dir[sizeof(m->root) + sizeof(w->path)];
	struct stat st;

	for (size_t i = 0; i < m->nparents; i++) {
		const char *p = m->parents[i];
		size_t len = strcmp(p, "/") == 0 ? 0 : strlen(p);
		bool covered = false;
		int fd;

		for (size_t j = 0; j < m->nparents && !covered; j++)
			covered = j != i && parent_covers(m->parents[j], p) &&
				  (j < i || !parent_covers(p, m->parents[j]));
		if (covered || len >= sizeof(w->path) ||
		    snprintf(dir, sizeof(dir), "%s%s", m->root, len == 0 ? "" : p) >= (int)sizeof(dir))
			continue;
		fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd == -1)
			continue;
		memcpy(w->path, p, len);
		w->path[len] = '\0';
		if (fstat(fd, &st) == 0 && (uint64_t)st.st_ino == w->id) {
			close(fd);
			return 1;
		}
		if (walk_dir(w, fd, len, 0) == 1)
			return 1;
	}
	w->path[0] = '\0';
	return 0;
}

/* One line: the engine state file could not be had, so no container is known. */
static void engine_say(const struct engine_state *e, const char *what, int e_no)
{
	fprintf(stderr, "sluice-forward: engine state %s: %s: %s: no container is known\n", e->path,
		what, strerror(e_no));
}

/*
 * Read the last snapshot of net from the open engine file fd (size bytes):
 * tails of growing size until one holds it. Returns 1 found, 0 none, -1 with errno.
 */
static int engine_read(struct engine_state *e, int fd, off_t size, const char *net)
{
	size_t want = ENGINE_TAIL_MIN;
	char *buf = NULL;
	int ret = -1;

	for (;;) {
		size_t len = (uint64_t)size < want ? (size_t)size : want, got = 0;
		char *grown = realloc(buf, len + 1);

		if (grown == NULL)
			goto out_free;
		buf = grown;
		while (got < len) {
			ssize_t r = pread(fd, buf + got, len - got, size - (off_t)len + (off_t)got);

			if (r == -1 && errno == EINTR)
				continue;
			if (r <= 0) {
				if (r == 0)
					errno = EIO; /* shrank while read */
				goto out_free;
			}
			got += (size_t)r;
		}
		ret = snapids_last(buf, len, len == (size_t)size, net, e->ids, SNAPIDS_MAX, &e->nids);
		if (ret == 1 || len == (size_t)size || want >= ENGINE_TAIL_MAX)
			break;
		want *= 4;
	}
out_free:
	free(buf);
	return ret;
}

/*
 * Bring e->ids up to date with the file at e->path: re-read when its
 * identity, size, mtime or ctime changed. A file that is missing, unreadable,
 * not a regular file, owned by another than root or the engine uid, or
 * writable by group or others leaves no container known.
 */
static void engine_refresh(struct cgroup_map *m, const char *net)
{
	struct engine_state *e = &m->engine;
	struct stat st;
	int fd, found;

	if (stat(e->path, &st) == -1) {
		if (!e->looked || e->present)
			engine_say(e, "stat", errno);
		e->looked = true;
		e->present = false;
		e->nids = 0;
		return;
	}
	if (e->looked && e->present && e->dev == st.st_dev && e->ino == st.st_ino &&
	    e->size == st.st_size && e->mtime.tv_sec == st.st_mtim.tv_sec &&
	    e->mtime.tv_nsec == st.st_mtim.tv_nsec && e->ctime.tv_sec == st.st_ctim.tv_sec &&
	    e->ctime.tv_nsec == st.st_ctim.tv_nsec)
		return;
	/* what was seen, so that a file refused is not looked at again until it changes */
	e->looked = e->present = true;
	e->nids = 0;
	e->dev = st.st_dev;
	e->ino = st.st_ino;
	e->size = st.st_size;
	e->mtime = st.st_mtim;
	e->ctime = st.st_ctim;
	fd = open(e->path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd == -1 || fstat(fd, &st) == -1) {
		engine_say(e, "open", errno);
		if (fd != -1)
			close(fd);
		return;
	}
	if (!S_ISREG(st.st_mode) || (st.st_uid != 0 && st.st_uid != m->engine_uid) ||
	    (st.st_mode & 022) != 0) {
		fprintf(stderr,
			"sluice-forward: engine state %s: not a regular file of root or the engine "
			"uid, writable only by its owner (uid %u, mode %03o): no container is known\n",
			e->path, (unsigned)st.st_uid, (unsigned)(st.st_mode & 0777));
		close(fd);
		return;
	}
	/* what was read: a line appended since the stat is read again next time */
	e->dev = st.st_dev;
	e->ino = st.st_ino;
	e->size = st.st_size;
	e->mtime = st.st_mtim;
	e->ctime = st.st_ctim;
	found = engine_read(e, fd, st.st_size, net);
	close(fd);
	if (found == -1) {
		e->nids = 0;
		e->present = false; /* tried again on the next container */
		engine_say(e, "read", errno);
	} else if (found == 0) {
		e->nids = 0;
		fprintf(stderr,
			"sluice-forward: engine state %s: no snapshot of net %s: no container is "
			"known\n",
			e->path, net);
	}
}

/*
 * Whether path (relative to the mount) still names cgroup id, and the
 * directories m says decide were made by the engine: every directory down
 * to the engine parent owned by root or the engine uid, the parent and the
 * container's or build's own directory by the engine uid. Opens each
 * component without following symlinks. Sets *why when not.
 */
static bool made_by_engine(const struct cgroup_map *m, const char *path, uint64_t id,
			   const struct cgpath_match *cm, const char **why, unsigned *owner)
{
	struct stat st;
	size_t off = 0;
	int fd = open(m->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	bool ok = false;

	*why = "cannot open the cgroup2 mount";
	if (fd == -1)
		return false;
	for (;;) {
		char comp[NAME_MAX + 1];
		size_t n;
		int sub;

		if (fstat(fd, &st) == -1) {
			*why = "cannot stat a directory on its path";
			goto out_close;
		}
		*owner = (unsigned)st.st_uid;
		if ((off == cm->parent_len || off == cm->dir_len) && st.st_uid != m->engine_uid) {
			*why = off == cm->parent_len ? "the engine cgroup is not owned by the engine uid"
						     : "not made by the engine uid";
			goto out_close;
		}
		if (off < cm->parent_len && st.st_uid != 0 && st.st_uid != m->engine_uid) {
			*why = "a directory above the engine cgroup has another owner";
			goto out_close;
		}
		if (path[off] == '\0')
			break;
		n = strcspn(path + off + 1, "/");
		if (n == 0 || n > NAME_MAX) {
			*why = "a bad path";
			goto out_close;
		}
		memcpy(comp, path + off + 1, n);
		comp[n] = '\0';
		sub = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub == -1) {
			*why = "gone while looked at";
			goto out_close;
		}
		close(fd);
		fd = sub;
		off += 1 + n;
	}
	*why = "gone while looked at";
	ok = (uint64_t)st.st_ino == id;
out_close:
	close(fd);
	return ok;
}

/*
 * Whether the cgroup cm names may count: made by the engine where it makes
 * them and, for a container, one the engine's latest snapshot lists. Else
 * one line saying why (the client is then the sandbox user). *cache: the
 * answer may be kept (not while only the snapshot is missing the id, which
 * `sluice engine watch` may be about to write).
 */
static bool engine_vouches(struct forwarder *fw, const char *who, const char *path,
			   uint64_t id, const struct cgpath_match *cm, bool *cache)
{
	struct cgroup_map *m = &fw->cgroups;
	const char *why = NULL;
	unsigned owner = 0;

	*cache = true;
	if (!made_by_engine(m, path, id, cm, &why, &owner)) {
		fprintf(stderr,
			"sluice-forward: attribute client %s: cgroup %s: %s (uid %u, engine uid %u): "
			"as user\n",
			who, path, why, owner, (unsigned)m->engine_uid);
		return false;
	}
	if (cm->kind != CGPATH_CONTAINER)
		return true;
	engine_refresh(m, fw->net);
	if (snapids_has(m->engine.ids, m->engine.nids, cm->id))
		return true;
	*cache = false;
	fprintf(stderr,
		"sluice-forward: attribute client %s: cgroup %s: container %.12s is not in the "
		"engine's latest snapshot of net %s: as user\n",
		who, path, cm->id, fw->net);
	return false;
}

/*
 * The principal of cgroup id: cached, else searched for in the engine
 * subtrees and classified; not there: user. Returns 0 or -1 with *err.
 */
static int principal_of(struct forwarder *fw, const char *who, uint64_t id,
			char out[STAMP_AS_MAX + 1], const char **err)
{
	struct cgroup_map *m = &fw->cgroups;
	uint64_t now = loop_now(fw->loop);
	struct cgpath_match cm;
	bool cache = true;
	struct walk *w;
	int ret = -1;

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
	if (search_engine(m, w) == 0 && w->dirs >= WALK_DIRS_MAX) {
		*err = "cgroup not found in the engine cgroups (walk limit reached)";
		goto out_free;
	}
	/* not found: w->path is "", which names the user */
	if (cgpath_classify(w->path, m->parents, m->nparents, &cm) == -1) {
		*err = "cgroup name cannot be a principal";
		goto out_free;
	}
	if (cm.kind != CGPATH_USER && !engine_vouches(fw, who, w->path, id, &cm, &cache))
		snprintf(cm.as, sizeof(cm.as), "user");
	else if (cm.lookalike)
		fprintf(stderr,
			"sluice-forward: attribute client %s: cgroup %s: named like a container or "
			"build but not right below an engine cgroup: as user\n",
			who, w->path);
	memcpy(out, cm.as, STAMP_AS_MAX + 1);
	if (cache) {
		m->cache[m->next].id = id;
		m->cache[m->next].until_ms = now + CACHE_MS;
		memcpy(m->cache[m->next].principal, out, STAMP_AS_MAX + 1);
		m->next = (m->next + 1) % CGROUP_CACHE;
	}
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
	if (principal_of(fw, who, id, out, &err) == -1) {
		fprintf(stderr, "sluice-forward: attribute client %s: cgroup %llu: %s: reset\n", who,
			(unsigned long long)id, err);
		return -1;
	}
	return 0;
}
