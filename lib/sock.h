/*
 * sock.h: the sockets sluice-proxy and sluice-forward both make the same
 * way: a listening socket (TCP or unix:PATH), and a connection set to end
 * with an RST.
 *
 * Nothing here accepts, registers with the loop, prints, enters a network
 * namespace, or removes a stale unix socket file: those stay with the
 * daemon that needs them.
 */
#ifndef SLUICE_SOCK_H
#define SLUICE_SOCK_H

#include <sys/socket.h>

#define SOCK_LISTEN_BACKLOG 1024

/* sock_listen flags; each applies only where it means something */
#define SOCK_LISTEN_NODELAY 0x1  /* TCP: TCP_NODELAY, which accepted sockets inherit */
#define SOCK_LISTEN_V6ONLY 0x2   /* AF_INET6: IPV6_V6ONLY, no IPv4-mapped clients */
#define SOCK_LISTEN_FREEBIND 0x4 /* TCP: IP(V6)_FREEBIND, bind an address not (yet) configured */

/*
 * A non-blocking, close-on-exec stream socket bound to addr (AF_INET,
 * AF_INET6 or AF_UNIX) and listening with a backlog of
 * SOCK_LISTEN_BACKLOG. A TCP socket gets SO_REUSEADDR, then what flags
 * ask for; failing to set SOCK_LISTEN_FREEBIND fails the call, the other
 * options are best effort. A unix socket's file is made 0600 (the umask
 * is 0177 around bind), so only its owner may connect; a file already at
 * the path makes bind fail. Returns the fd, or -1 with errno and nothing
 * left open.
 */
int sock_listen(const struct sockaddr_storage *addr, unsigned flags);

/*
 * Set SO_LINGER to zero on fd, so that closing it sends an RST at once
 * and drops what is unsent, instead of a FIN. Best effort: when it fails,
 * the close is an ordinary one.
 */
void sock_reset_on_close(int fd);

#endif
