/*
 * priv.c: becoming the `user NAME` both daemons drop to once bound
 * (priv.h). What each must still be able to read and write as NAME is the
 * daemon's to check afterwards.
 */
#include "priv.h"

#include <cap-ng.h>
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#define PW_BUF 16384

/* The user's ids. Returns 0 or -1 after printing. */
int priv_lookup(const char *who, const char *name, uid_t *uid, gid_t *gid)
{
	struct passwd pw, *found = NULL;
	char *buf = malloc(PW_BUF);
	int e;

	if (buf == NULL)
		return -1;
	e = getpwnam_r(name, &pw, buf, PW_BUF, &found);
	if (found == NULL) {
		fprintf(stderr, "%s: user %s: %s\n", who, name,
			e != 0 ? strerror(e) : "no such user");
		free(buf);
		return -1;
	}
	*uid = pw.pw_uid;
	*gid = pw.pw_gid;
	free(buf);
	if (*uid == 0) {
		fprintf(stderr, "%s: user %s: has uid 0; name an unprivileged user\n", who, name);
		return -1;
	}
	return 0;
}

/* After the switch: no capability anywhere, and no way back to root. */
static int verify_dropped(uid_t uid, gid_t gid)
{
	uid_t r, e, s;
	gid_t rg, eg, sg;

	if (getresuid(&r, &e, &s) == -1 || r != uid || e != uid || s != uid ||
	    getresgid(&rg, &eg, &sg) == -1 || rg != gid || eg != gid || sg != gid)
		return -1;
	if (setuid(0) != -1 || setgid(0) != -1 || seteuid(0) != -1)
		return -1;
	capng_clear(CAPNG_SELECT_BOTH);
	if (capng_get_caps_process() != 0 || capng_have_capabilities(CAPNG_SELECT_CAPS) != CAPNG_NONE ||
	    capng_have_capabilities(CAPNG_SELECT_BOUNDS) != CAPNG_NONE)
		return -1;
	/* and as the kernel says it, without the library */
	for (int cap = 0; cap <= CAP_LAST_CAP; cap++)
		if (prctl(PR_CAPBSET_READ, cap, 0, 0, 0) == 1)
			return -1;
	return 0;
}

int priv_switch(const char *who, const char *user, uid_t uid, gid_t gid)
{
	/* the bounding set first, while CAP_SETPCAP is still ours */
	capng_clear(CAPNG_SELECT_BOTH | CAPNG_SELECT_BOUNDS);
	if (capng_apply(CAPNG_SELECT_BOUNDS) != 0) {
		fprintf(stderr, "%s: user %s: cannot empty the bounding set\n", who, user);
		return -1;
	}
	if (initgroups(user, gid) == -1 || setresgid(gid, gid, gid) == -1 ||
	    setresuid(uid, uid, uid) == -1) {
		fprintf(stderr, "%s: user %s: cannot switch to uid %u gid %u: %s\n", who, user,
			(unsigned)uid, (unsigned)gid, strerror(errno));
		return -1;
	}
	capng_clear(CAPNG_SELECT_BOTH);
	if (capng_apply(CAPNG_SELECT_CAPS) != 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1 ||
	    verify_dropped(uid, gid) == -1) {
		fprintf(stderr, "%s: user %s: privileges not dropped as asked; stopping\n", who,
			user);
		return -1;
	}
	return 0;
}
