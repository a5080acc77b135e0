/*
 * priv.h: dropping root for `user NAME` (sluice-proxy and sluice-dns).
 *
 * priv_switch takes NAME's uid, gid and groups (initgroups), empties every
 * capability set and the bounding set, sets no_new_privs, and proves that
 * root cannot be had back. Messages go to stderr under who's name.
 */
#ifndef SLUICE_PRIV_H
#define SLUICE_PRIV_H

#include <sys/types.h>

/* NAME's uid and gid; uid 0 is refused. Returns 0 or -1 after printing. */
int priv_lookup(const char *who, const char *name, uid_t *uid, gid_t *gid);

/* As root: become uid/gid for good. Returns 0 or -1 after printing (then stop). */
int priv_switch(const char *who, const char *user, uid_t uid, gid_t gid);

#endif
