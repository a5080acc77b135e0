/*
 * relay.h: moving a byte stream one way between two sockets, for tunnels
 * (sluice-proxy's CONNECT) and for sluice-forward after the first head.
 */
#ifndef SLUICE_RELAY_H
#define SLUICE_RELAY_H

#include <stdbool.h>
#include <stdint.h>

#include "buf.h"

struct relay_dir {
	int src, dst;
	struct buf *buf;      /* copy path: bytes read from src not yet written */
	int pipe[2];          /* splice path: -1 while copying */
	bool no_pipe;         /* a pipe could not be had: copy to the end */
	bool fresh;           /* not read from yet: the first pump waits for epoll */
	bool src_hup;         /* src hung up and left epoll: read it to the end */
	size_t inpipe;        /* bytes sitting in the pipe */
	bool eof;             /* src reached end of stream */
	bool shut;            /* dst has been shut for writing */
	bool want_read;       /* src read would block */
	bool want_write;      /* dst write would block */
	uint64_t bytes;       /* moved src -> dst */
	uint64_t taken;       /* read from src (and queued in buf at init) */
	uint64_t cap;         /* taken stops here: src is not read past it (UINT64_MAX: none) */
};
/*
 * Set up a direction: copying through b first, splicing once it carries
 * bulk. What b holds already counts as taken; cap starts at none (the
 * caller may lower it: a direction at its cap reads no more, as one whose
 * buffer is full).
 */
void relay_dir_init(struct relay_dir *d, int src, int dst, struct buf *b);
void relay_dir_release(struct relay_dir *d);
/*
 * Move what can move now. last: the other direction is done, so the caller
 * closes both sockets as soon as this one is (no shutdown needed). Returns
 * 0, or -1 on a fatal error (errno).
 */
int relay_dir_pump(struct relay_dir *d, bool last);
/* Write what the copy buffer holds, reading nothing. Returns 0 or -1 (errno). */
int relay_dir_flush(struct relay_dir *d);
/* Whether the direction has finished: eof seen, drained, dst shut. */
bool relay_dir_done(const struct relay_dir *d);

#endif
