/*
 * sockdiag.h: two questions to the kernel's TCP socket tables
 * (NETLINK_SOCK_DIAG, inet_diag_req_v2), asked in a network namespace.
 *
 * A handle is one netlink socket; it asks about the namespace it was
 * opened in, whatever namespace its owner enters later. Questions are
 * synchronous: the kernel answers from its tables at once, and a receive
 * timeout bounds one that does not. Nothing here connects to, or touches,
 * the sockets it asks about.
 */
#ifndef SLUICE_SOCKDIAG_H
#define SLUICE_SOCKDIAG_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

/* A NETLINK_SOCK_DIAG socket in the current namespace: the fd, or -1 with errno. */
int sockdiag_open(void);

/*
 * Whether a TCP socket of addr's family listens on addr's address and
 * port, or on that family's wildcard address and the port (a dump of the
 * listening sockets). Returns 0 with *found set, or -1 with errno.
 */
int sockdiag_find_listener(int nl, const struct sockaddr_storage *addr, bool *found);

/*
 * The cgroup v2 id of the TCP socket whose local end is src and remote
 * end dst (one exact lookup, any state). For the client of a connection
 * accepted here: src is the accepted peer, dst getsockname() of the
 * accepted fd. Returns 0 with *id, or -1 with errno: ENOENT no such
 * socket, ENODATA the kernel sent no INET_DIAG_CGROUP_ID.
 */
int sockdiag_cgroup_id(int nl, const struct sockaddr_storage *src,
		       const struct sockaddr_storage *dst, uint64_t *id);

#endif
