/*
 * run_socks.c: the machine's pathname unix sockets, out of CMD's reach
 * (run.h's run_socks_*). A read-only view of the machine does not stop
 * connect() on a socket file: systemd-resolved's varlink socket resolves
 * any name, D-Bus, nscd and others answer. Neither seccomp (it cannot
 * read the path connect names) nor Landlock (no right covers it) can
 * refuse that, so the sandbox's init lists every socket bound to a path
 * as the run starts, in every network namespace it finds (a namespace's
 * unix table, /proc/net/unix, lists its own sockets, and a path reaches a
 * socket from any namespace), and binds an empty file, mode 0, over each
 * one the path still leads to in the run's mount namespace.
 *
 * It does not see what is bound later (run_init.c's fresh /run hides
 * what a machine keeps there), nor a socket whose name in the table is not
 * a path that reaches it here: bound relative to a directory or through
 * /proc/self/fd, in another mount namespace, or with a newline in its name.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "run.h"

#define SOCKS_NAMES_MAX (16u << 20) /* bytes of names, all tables together */
#define SOCKS_TABLES_MAX 4096       /* network namespaces */

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

/* Add one name. Returns 0 or -1 after printing. */
static int names_add(struct run_socks *s, const char *name, size_t len)
{
	if (s->len + len + 1 > s->cap) {
		size_t cap = s->cap == 0 ? 4096 : s->cap * 2;
		char *p;

		while (cap < s->len + len + 1)
			cap *= 2;
		if (cap > SOCKS_NAMES_MAX || (p = realloc(s->names, cap)) == NULL) {
			fprintf(stderr, "run: the machine's unix sockets: over %u bytes of names\n",
				SOCKS_NAMES_MAX);
			return -1;
		}
		s->names = p;
		s->cap = cap;
	}
	memcpy(s->names + s->len, name, len);
	s->names[s->len + len] = '\0';
	s->len += len + 1;
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
			ret = names_add(s, name, len);
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
	/* every process's namespace: /proc/PID/net is its */
	while ((e = readdir(d)) != NULL) {
		char path[64];

		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%.20s/net/unix", e->d_name);
		if (table_here(s, t, path) == -1)
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

int run_socks_cover(const struct run_socks *s)
{
	int mnt = cover_source(), ret = -1;

	if (mnt == -1)
		return -1;
	for (size_t at = 0; at < s->len; at += strlen(s->names + at) + 1) {
		const char *path = s->names + at;
		int target = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC), t;
		struct stat st;

		/* gone, hidden by a fresh directory, or covered already (a name listed twice) */
		if (target == -1 || fstat(target, &st) == -1 || !S_ISSOCK(st.st_mode)) {
			if (target != -1)
				close(target);
			continue;
		}
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
	s->names = NULL;
	s->len = s->cap = 0;
}
