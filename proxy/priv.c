/*
 * priv.c: dropping root, the `user NAME` directive.
 *
 * main.c calls priv_drop once everything that needs root is done: the
 * listeners bound, the log and the replay window opened, the CA key and the
 * stamp keys read, the run id written. It then takes NAME's uid, gid and
 * groups (initgroups), empties every capability set and the bounding set,
 * sets no_new_privs (token commands run as NAME and can gain nothing), and
 * proves that root cannot be had back. From then on the config, the grant
 * store and the stamp keys are re-read as NAME, and rotation renames and
 * creates files in the log's directory as NAME; priv_drop checks, as NAME,
 * that it can, and refuses to start naming what it cannot. It also refuses
 * when NAME can write STATE, or the log is in STATE: root writes there (the
 * CLI, the proxy's next start), and what runs as NAME could plant links for
 * it. It does not chown or chmod anything: the operator lays out the files.
 */
#include "proxy.h"
#include "priv.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Whether the user can open path for reading (missing: fine when optional). */
static bool can_read(const char *user, const char *what, const char *path, bool optional)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		close(fd);
		return true;
	}
	if (optional && errno == ENOENT)
		return true;
	fprintf(stderr, "sluice-proxy: user %s cannot read the %s %s: %s\n", user, what, path,
		strerror(errno));
	return false;
}

/*
 * As the user: that it cannot write STATE, and that the log is not there.
 * Root (the CLI, the proxy at its next start) writes STATE; whatever runs as
 * the user (the proxy, its token commands) could plant a link there for
 * root to follow. Prints the failure. Returns whether STATE is closed.
 */
static bool state_closed(const struct config *c)
{
	char logdir[PATH_MAX];
	struct stat sd, ld;
	bool good = true;

	snprintf(logdir, sizeof(logdir), "%s", c->log_path);
	if (stat(c->state_dir, &sd) == 0 && stat(dirname(logdir), &ld) == 0 &&
	    sd.st_dev == ld.st_dev && sd.st_ino == ld.st_ino) {
		fprintf(stderr, "sluice-proxy: user %s: the log %s is in the state directory %s, "
				"which the user would have to write; put the log in its own directory "
				"owned by %s (log /var/log/sluice/network.log)\n",
			c->user, c->log_path, c->state_dir, c->user);
		good = false;
	}
	if (access(c->state_dir, W_OK) == 0) {
		fprintf(stderr, "sluice-proxy: user %s can write the state directory %s: what runs "
				"as %s could plant links there that root follows; keep it root:GROUP "
				"0750 and put the log in its own directory owned by %s "
				"(log /var/log/sluice/network.log)\n",
			c->user, c->state_dir, c->user, c->user);
		good = false;
	}
	return good;
}

/*
 * As the user: everything the proxy will read or write from now on. Every
 * failure is printed. Returns 0 or -1.
 */
static int check_access(struct proxy *px)
{
	const struct config *c = px->config;
	char logdir[PATH_MAX];
	bool good = true;

	if (px->config_path[0] != '\0')
		good = can_read(c->user, "config", px->config_path, false) && good;
	good = can_read(c->user, "grant store", px->watch_store.path, true) && good;
	good = can_read(c->user, "stamp keys", px->watch_keys.path, true) && good;
	good = can_read(c->user, "build tokens", px->watch_buildtoks.path, true) && good;
	snprintf(logdir, sizeof(logdir), "%s", c->log_path);
	if (access(dirname(logdir), W_OK | X_OK) == -1) {
		snprintf(logdir, sizeof(logdir), "%s", c->log_path);
		fprintf(stderr, "sluice-proxy: user %s cannot write the log's directory %s (rotation "
				"renames and creates files there): %s\n",
			c->user, dirname(logdir), strerror(errno));
		good = false;
	}
	if (!good)
		fprintf(stderr, "sluice-proxy: the proxy reads those as %s from now on; make them "
				"readable (or writable) by it or its group, then start again\n",
			c->user);
	/* the opposite direction: what it must not be able to write */
	return state_closed(c) && good ? 0 : -1;
}

int priv_owner(const struct config *c, uid_t *uid)
{
	gid_t gid;

	*uid = FILE_NO_UID;
	if (c->user[0] == '\0')
		return 0;
	return priv_lookup("sluice-proxy", c->user, uid, &gid);
}

int priv_drop(struct proxy *px)
{
	const char *user = px->config->user;
	uid_t uid;
	gid_t gid;

	if (user[0] == '\0') {
		if (geteuid() == 0)
			fprintf(stderr, "sluice-proxy: note: running as root with every capability; "
					"add `user NAME` to the config to drop to NAME once bound\n");
		return 0;
	}
	if (priv_lookup("sluice-proxy", user, &uid, &gid) == -1)
		return -1;
	if (geteuid() != 0) {
		if (getuid() == uid && geteuid() == uid)
			return check_access(px); /* started as the user already */
		fprintf(stderr, "sluice-proxy: user %s: started as uid %u, which cannot switch to "
				"it; start as root or as %s\n", user, (unsigned)geteuid(), user);
		return -1;
	}
	if (priv_switch("sluice-proxy", user, uid, gid) == -1)
		return -1;
	if (check_access(px) == -1)
		return -1;
	fprintf(stderr, "sluice-proxy: running as %s (uid %u gid %u), no capabilities\n", user,
		(unsigned)uid, (unsigned)gid);
	return 0;
}
