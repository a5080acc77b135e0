/*
 * store.h: what both daemons re-read to keep their policy current: the
 * grant store (STATE/grants), the proxy's run id (STATE/proxy.run, which
 * makes session grants live), the machine's own addresses, and whether a
 * watched file changed since it was last looked at.
 *
 * Rebuilding the policy, and what a daemon does with a damaged store, stay
 * with the daemon; errors are reported on stderr under the caller's name.
 */
#ifndef SLUICE_STORE_H
#define SLUICE_STORE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

#include "grant.h"
#include "iprange.h"
#include "policy.h"

#define STORE_MAX_GRANTS 8192

struct watched_file {
	char path[PATH_MAX];
	struct stat st; /* last seen; st_ino 0 when absent */
	bool present;
};

/* Whether w's file appeared, went, or changed (inode, size, times) since the last call. */
bool watch_changed(struct watched_file *w);

/*
 * Load the store at path into *out (allocated; free it), *n and *mode. A
 * missing store is empty (0), with no mode. Returns -1 when it is damaged or unreadable, said
 * on stderr as "WHO: ERROR: ..." (then *n is 0); -2, unsaid, with errno,
 * when this process is out of descriptors or memory (the store may be fine).
 */
int grant_store_load(const char *path, const char *who, struct grant **out, size_t *n,
		     struct grant_mode *mode);

/*
 * The running proxy's run id from STATE/proxy.run (runfile.h) into run
 * (GRANT_RUN_ID_LEN + 1 bytes). Returns 0, or -1 with errno: ENOENT when no
 * proxy has left one, ESRCH when the one there is not locked by a running
 * proxy (it was killed, or ran as `user` and could not remove it from a
 * root-owned state directory), EINVAL when the file is not a run file,
 * ENAMETOOLONG.
 */
int store_run_id(const char *state_dir, char *run);

/* The machine's addresses (each a /32 or /128) into own; returns how many, or -1 with errno. */
long own_addresses(struct ipnet *own, size_t max);

/*
 * A policy from c, the store at store_path and the machine's own addresses
 * now, session grants live for run_id (NULL: none), in the store's mode
 * when it has one. A damaged store means enforcing with none of its grants
 * (said under who's name). *next_expiry (may be NULL): the earliest once
 * grant's expiry still ahead, 0 none (a learn window ends by the clock:
 * policy_mode_at).
 * Returns NULL, said, when out of memory or descriptors: the caller keeps
 * the policy it has.
 */
struct policy *store_policy(const struct config *c, const char *store_path, const char *run_id,
			    const char *who, time_t *next_expiry);

#endif
