/*
 * run_socks.c: the machine's pathname unix sockets, out of CMD's reach
 * (run.h's run_socks_*). A read-only view of the machine does not stop
 * connect() on a socket file: systemd-resolved's varlink socket resolves
 * any name, D-Bus, nscd and others answer. Neither seccomp (it cannot
 * read the path connect names) nor Landlock (no right covers it) can
 * refuse that, so the sandbox's init lists every socket bound to a path
 * as the run starts, in every network namespace it finds (a namespace's
 * unix table, /proc/net/unix, lists its own sockets, and a path reaches a
 * socket from any namespace): every process's (/proc/PID/net), every
 * thread's (/proc/PID/task/TID/net: a thread may unshare a namespace of
 * its own), each read once (by the table's inode, one per namespace), and
 * those named in /run/netns. It keeps a name once, and only when it leads
 * to a socket in the machine's view (lstat), with that file's identity:
 * names bound in other mount namespaces, gone or listed again (a flood of
 * them from another run) cost an lstat each and no memory. Past
 * RUN_SOCKS_MAX distinct sockets the run fails closed; reaching it takes
 * that many sockets bound at once to distinct paths the machine sees, each
 * an open file and kernel memory (fs.file-max, sized from memory by
 * default, is 2.4M on a machine of 24 GiB). Then it binds an empty file,
 * mode 0, over each one the name still leads to in the run's mount
 * namespace: opened without following symbolic links (openat2
 * RESOLVE_NO_SYMLINKS), or, when a link is on the way (a name bound
 * through /var/run, or a link another run's CMD planted in a shared
 * working directory), following them only to the very file listed (same
 * device and inode), so a cover never lands on another file.
 *
 * Not covered, each a way to a socket by a path no table names:
 * - what is bound later (run_init.c's fresh /run hides what a machine
 *   keeps there);
 * - a socket whose name in the table is not a path that reaches it here:
 *   bound relative to a directory or through /proc/self/fd, in another
 *   mount namespace, or with a newline in its name;
 * - a socket renamed after bind, or whose directory (or one above it) was
 *   renamed or replaced: the table keeps the name it was bound with;
 * - a second hard link to a socket (link(2) after bind): only the bound
 *   name is in the table; finding the others would take a walk of every
 *   filesystem;
 * - the same directory reached by another mount (a bind mount of it
 *   elsewhere): a cover is on one mount's path, and CMD's mounts are
 *   private, so it does not propagate to the other;
 * - a socket bound in a network namespace no process or thread is in and
 *   /run/netns does not name (held only by its sockets, or by a file
 *   descriptor): /proc shows no table of it.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "run.h"

#define SOCKS_TABLES_MAX 4096 /* network namespaces */

/* The tables read so far, by their /proc file's inode (one per network namespace). */
struct tables {
	ino_t ino[SOCKS_TABLES_MAX];
	size_t n;
};

/* Whether the table is new (then noted). */
static bool table_new(struct tables *t, ino_t ino)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->ino[i] == ino)
			return false;
	if (t->n == SOCKS_TABLES_MAX)
		return true; /* read again rather than skipped */
	t->ino[t->n++] = ino;
	return true;
}

/* The slot of name in s's set: the one holding it, or the empty one it would go in. */
static size_t *name_slot(const struct run_socks *s, const char *name, size_t len)
{
	size_t mask = s->nslots - 1;

	for (size_t i = hmap_siphash(&s->key, name, len) & mask;; i = (i + 1) & mask) {
		const char *there;

		if (s->slots[i] == 0)
			return &s->slots[i];
		there = s->names + s->socks[s->slots[i] - 1].name;
		if (strncmp(there, name, len) == 0 && there[len] == '\0')
			return &s->slots[i];
	}
}

/* Room for one more socket of len bytes of name (the set kept at most half full). Returns 0 or -1. */
static int socks_room(struct run_socks *s, size_t len)
{
	if (s->len + len + 1 > s->cap) {
		size_t cap = s->cap == 0 ? 4096 : s->cap;
		char *p;

		while (cap < s->len + len + 1)
			cap *= 2;
		if ((p = realloc(s->names, cap)) == NULL)
			return -1;
		s->names = p;
		s->cap = cap;
	}
	if (s->n == s->socks_cap) {
		size_t cap = s->socks_cap == 0 ? 64 : s->socks_cap * 2;
		struct run_sock *p = reallocarray(s->socks, cap, sizeof(*p));

		if (p == NULL)
			return -1;
		s->socks = p;
		s->socks_cap = cap;
	}
	if (2 * (s->n + 1) > s->nslots) {
		size_t nslots = s->nslots == 0 ? 128 : s->nslots * 2;
		size_t *old = s->slots, oldn = s->nslots;

		if (s->nslots == 0 && hmap_key_init(&s->key) == -1)
			return -1;

		if ((s->slots = calloc(nslots, sizeof(*s->slots))) == NULL) {
			s->slots = old;
			return -1;
		}
		s->nslots = nslots;
		for (size_t i = 0; i < oldn; i++)
			if (old[i] != 0) {
				const char *name = s->names + s->socks[old[i] - 1].name;

				*name_slot(s, name, strlen(name)) = old[i];
			}
		free(old);
	}
	return 0;
}

int run_socks_add(struct run_socks *s, const char *name, size_t len)
{
	char path[PATH_MAX];
	struct stat st;
	size_t *slot;

	if (len == 0 || len >= sizeof(path) || memchr(name, '\0', len) != NULL)
		return 0;
	if (s->nslots != 0 && *name_slot(s, name, len) != 0)
		return 0; /* listed already */
	memcpy(path, name, len);
	path[len] = '\0';
	if (lstat(path, &st) == -1 || !S_ISSOCK(st.st_mode))
		return 0; /* gone, or no socket here: in another mount namespace, or its file replaced */
	if (s->n == RUN_SOCKS_MAX) {
		fprintf(stderr, "run: the machine's unix sockets: over %u of them; CMD not started\n", RUN_SOCKS_MAX);
		return -1;
	}
	if (socks_room(s, len) == -1) {
		fprintf(stderr, "run: the machine's unix sockets: %s\n", strerror(errno));
		return -1;
	}
	slot = name_slot(s, name, len);
	memcpy(s->names + s->len, path, len + 1);
	s->socks[s->n] = (struct run_sock){ .name = s->len, .dev = st.st_dev, .ino = st.st_ino };
	s->len += len + 1;
	*slot = ++s->n;
	return 0;
}

size_t run_socks_line(const char *line, size_t len, const char **name)
{
	size_t i = 0;

	while (i < len && line[i] != ' ')
		i++;
	if (i == 0 || line[i - 1] != ':')
		return 0; /* the header, or not a line of the table */
	for (int field = 0; field < 6; field++) {
		size_t start;

		if (i == len || line[i] != ' ')
			return 0;
		while (i < len && line[i] == ' ') /* the inode is padded to 5 */
			i++;
		start = i;
		while (i < len && isxdigit((unsigned char)line[i]))
			i++;
		if (i == start)
			return 0;
	}
	if (len - i < 2 || line[i] != ' ' || line[i + 1] != '/' || memchr(line + i, '\0', len - i) != NULL)
		return 0;
	*name = line + i + 1;
	return len - i - 1;
}

/*
 * The absolute paths of one /proc/net/unix (open at fd, which this
 * closes). Returns 0 or -1 after printing.
 */
static int table_read(struct run_socks *s, int fd)
{
	FILE *f = fdopen(fd, "r");
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int ret = 0;

	if (f == NULL) {
		close(fd);
		return 0;
	}
	while (ret == 0 && (n = getline(&line, &cap, f)) > 0) {
		const char *name;
		size_t len;

		if (line[n - 1] == '\n')
			n--;
		len = run_socks_line(line, (size_t)n, &name);
		if (len > 0)
			ret = run_socks_add(s, name, len);
	}
	free(line);
	fclose(f);
	return ret;
}

/* The table of the network namespace at /proc/thread-self, when new. Returns 0 or -1 after printing. */
static int table_here(struct run_socks *s, struct tables *t, const char *proc)
{
	int fd = open(proc, O_RDONLY | O_CLOEXEC);
	struct stat st;

	if (fd == -1)
		return 0; /* the process is gone */
	if (fstat(fd, &st) == -1 || !table_new(t, st.st_ino)) {
		close(fd);
		return 0;
	}
	return table_read(s, fd);
}

/* The tables of the threads of process pid (/proc/PID/task/TID/net). Returns 0 or -1 after printing. */
static int tasks_tables(struct run_socks *s, struct tables *t, const char *pid)
{
	char path[96];
	struct dirent *e;
	DIR *d;
	int ret = 0;

	snprintf(path, sizeof(path), "/proc/%.20s/task", pid);
	if ((d = opendir(path)) == NULL)
		return 0; /* the process is gone */
	while (ret == 0 && (e = readdir(d)) != NULL) {
		if (e->d_name[0] < '1' || e->d_name[0] > '9' || strcmp(e->d_name, pid) == 0)
			continue; /* the leader's is /proc/PID/net, read already */
		snprintf(path, sizeof(path), "/proc/%.20s/task/%.20s/net/unix", pid, e->d_name);
		ret = table_here(s, t, path);
	}
	closedir(d);
	return ret;
}

int run_socks_scan(struct run_socks *s)
{
	static const char *const named[] = { "/run/netns", "/var/run/netns" };
	struct tables *t = calloc(1, sizeof(*t));
	struct dirent *e;
	DIR *d = NULL;
	int ret = -1;

	memset(s, 0, sizeof(*s));
	if (t == NULL || (d = opendir("/proc")) == NULL) {
		fprintf(stderr, "run: the machine's unix sockets: /proc: %s\n", strerror(errno));
		goto out;
	}
	/* every process's namespace, and every thread's: a thread may have unshared one of its own */
	while ((e = readdir(d)) != NULL) {
		char path[96];

		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%.20s/net/unix", e->d_name);
		if (table_here(s, t, path) == -1 || tasks_tables(s, t, e->d_name) == -1)
			goto out;
	}
	/* and the named ones no process is in: entered to read their table */
	for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++) {
		closedir(d);
		d = opendir(named[i]);
		while (d != NULL && (e = readdir(d)) != NULL) {
			int ns = e->d_name[0] == '.' ? -1 : openat(dirfd(d), e->d_name, O_RDONLY | O_CLOEXEC);

			if (ns == -1)
				continue;
			if (setns(ns, CLONE_NEWNET) == 0 && table_here(s, t, "/proc/thread-self/net/unix") == -1) {
				close(ns);
				goto out;
			}
			close(ns);
		}
	}
	ret = 0;
out:
	if (d != NULL)
		closedir(d);
	free(t);
	if (ret == -1)
		run_socks_release(s);
	return ret;
}

/*
 * What covers are cloned from: a small tmpfs of the init's (detached),
 * holding one empty file of mode 0, "empty". Returns the mount's fd, or -1
 * after printing.
 */
static int cover_source(void)
{
	int fs = fsopen("tmpfs", FSOPEN_CLOEXEC), mnt = -1, f = -1;

	if (fs == -1 || fsconfig(fs, FSCONFIG_SET_STRING, "size", "4k", 0) == -1 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "mode", "0700", 0) == -1 ||
	    fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) == -1 ||
	    (mnt = fsmount(fs, FSMOUNT_CLOEXEC, 0)) == -1 ||
	    (f = openat(mnt, "empty", O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0)) == -1) {
		fprintf(stderr, "run: an empty file to cover sockets with: %s\n", strerror(errno));
		if (mnt != -1)
			close(mnt);
		mnt = -1;
	}
	if (f != -1)
		close(f);
	if (fs != -1)
		close(fs);
	return mnt;
}

/*
 * A clone of the empty file in the tmpfs at dir, for one socket: read-only,
 * no suid, devices or exec. Returns the fd or -1 with errno.
 */
static int cover_clone(int dir)
{
	struct mount_attr attr = { .attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
					       MOUNT_ATTR_NOEXEC };
	int t = open_tree(dir, "empty", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);

	if (t != -1 && mount_setattr(t, "", AT_EMPTY_PATH, &attr, sizeof(attr)) == -1) {
		int saved = errno;

		close(t);
		errno = saved;
		return -1;
	}
	return t;
}

/*
 * The file name leads to, for a cover: by a path without symbolic links
 * (whatever socket is there), else, following them (a name bound through
 * /var/run, or a link planted since), only when it is the very file the
 * scan listed. Returns an O_PATH fd, or -1 for none to cover.
 */
static int cover_target(const char *name, const struct run_sock *sock)
{
	struct open_how how = { .flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
				.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS };
	int fd = (int)syscall(SYS_openat2, AT_FDCWD, name, &how, sizeof(how));
	struct stat st;

	if (fd == -1 && (errno == ELOOP || errno == ENOSYS || errno == E2BIG)) {
		fd = open(name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd != -1 && (fstat(fd, &st) == -1 || st.st_dev != sock->dev || st.st_ino != sock->ino)) {
			close(fd);
			return -1;
		}
	}
	/* gone, hidden by a fresh directory, or covered already */
	if (fd != -1 && (fstat(fd, &st) == -1 || !S_ISSOCK(st.st_mode))) {
		close(fd);
		return -1;
	}
	return fd;
}

int run_socks_cover(const struct run_socks *s)
{
	int mnt = cover_source(), ret = -1;

	if (mnt == -1)
		return -1;
	for (size_t i = 0; i < s->n; i++) {
		const char *path = s->names + s->socks[i].name;
		int target = cover_target(path, &s->socks[i]), t;

		if (target == -1)
			continue;
		t = cover_clone(mnt);
		if (t == -1 || move_mount(t, "", target, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) == -1) {
			fprintf(stderr, "run: cover the socket %s: %s; CMD not started\n", path, strerror(errno));
			if (t != -1)
				close(t);
			close(target);
			goto out;
		}
		close(t);
		close(target);
	}
	ret = 0;
out:
	close(mnt);
	return ret;
}

void run_socks_release(struct run_socks *s)
{
	free(s->names);
	free(s->socks);
	free(s->slots);
	memset(s, 0, sizeof(*s));
}
