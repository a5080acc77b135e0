/*
 * ws_frame.h: the header of a WebSocket frame a server sent (RFC 6455
 * section 5.2), read and written.
 *
 * ws_frame_read reads one header from bytes a server sent and refuses what
 * a client must not accept with no extension negotiated: RSV bits, a mask,
 * an unknown opcode, a control frame fragmented or over 125 bytes, a
 * length with its top bit set or not in its shortest form. ws_frame_write
 * writes a server frame's header. Bytes are hostile: it reads only inside
 * p[0..n), allocates nothing and keeps no state; which frames may follow
 * which (a continuation outside a message) is the caller's.
 */
#ifndef SLUICE_WS_FRAME_H
#define SLUICE_WS_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WS_FRAME_HEAD_MAX 10 /* a server frame's header: 2 bytes, then 2 or 8 of length */

enum ws_opcode {
	WS_OP_CONT = 0x0,
	WS_OP_TEXT = 0x1,
	WS_OP_BINARY = 0x2,
	WS_OP_CLOSE = 0x8,
	WS_OP_PING = 0x9,
	WS_OP_PONG = 0xa,
};

struct ws_frame {
	bool fin;
	enum ws_opcode opcode;
	uint64_t len;    /* payload bytes after the header */
	const char *why; /* ws_frame_read returned -1: what is wrong (static text) */
};

static inline bool ws_op_is_control(enum ws_opcode op)
{
	return (op & 0x8) != 0;
}

/* The header at p[0..n): its length (2..10), 0 when more bytes are needed, -1 refused (f->why). */
int ws_frame_read(const uint8_t *p, size_t n, struct ws_frame *f);

/* A server frame's header for a payload of len bytes into out; returns its length. */
size_t ws_frame_write(uint8_t out[WS_FRAME_HEAD_MAX], bool fin, enum ws_opcode op, uint64_t len);

#endif
