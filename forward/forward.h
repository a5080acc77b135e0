/*
 * forward.h: sluice-forward's table of contents.
 *
 * main.c  arguments, key, listeners (optionally inside another network
 *         namespace), signals, the loop
 * conn.c  one client connection: read the first head, refuse it unless
 *         canonical, strip every client stamp, add ours, then relay bytes
 *
 * Runs inside the sandbox as root, at the last point where a container
 * still has its own address. Parses nothing after the first head.
 */
#ifndef SLUICE_FORWARD_H
#define SLUICE_FORWARD_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "loop.h"
#include "stamp.h"

#define FWD_LISTEN_MAX 16
#define FWD_HEAD_MAX (16 * 1024)   /* the first head, all lines */
#define FWD_HEAD_TIMEOUT_MS 10000
#define FWD_DIAL_TIMEOUT_MS 2000   /* an unanswered connect is re-dialled */
#define FWD_DIAL_TRIES 8
#define FWD_RST_WAIT_MS 2000       /* waiting for the client to ack before an RST */

struct fwd_listener {
	struct loop_io io;
	struct sockaddr_storage addr;
	struct sockaddr_storage upstream;
	struct forwarder *fw;
};

struct forwarder {
	struct loop *loop;
	struct fwd_listener listeners[FWD_LISTEN_MAX];
	size_t nlisteners;
	struct stamp_key key; /* the current key, used to sign */
	char net[STAMP_NET_MAX + 1];
	char boot[17];        /* random per start */
	uint64_t seq;         /* per boot, one per connection */
	struct conn *dead;    /* closed, freed before the loop sleeps */
	unsigned nconns;
};

/* conn.c */
void conn_accept(struct forwarder *fw, struct fwd_listener *ln, int fd,
		 const struct sockaddr_storage *peer);
void conn_free_dead(struct forwarder *fw);

#endif
