/*
 * netns.h: doing one thing inside another network namespace, then coming
 * back: sockets made there stay there (a sock_diag or libnftables netlink
 * socket then speaks for that namespace). Needs CAP_SYS_ADMIN. The thread
 * must be the process's only one (setns moves the calling thread).
 */
#ifndef SLUICE_NETNS_H
#define SLUICE_NETNS_H

/*
 * Enter the network namespace at path. Returns an fd of the one we were in,
 * for netns_leave, or -1 with errno (then we are where we were).
 */
int netns_enter_saved(const char *path);

/* Back to the namespace netns_enter_saved left (and close saved). Returns 0 or -1 with errno. */
int netns_leave(int saved);

#endif
