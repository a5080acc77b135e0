/*
 * ws_frame.c: a server WebSocket frame's header, read strictly and written
 * (ws_frame.h).
 */
#include "ws_frame.h"

int ws_frame_read(const uint8_t *p, size_t n, struct ws_frame *f)
{
	uint64_t len;
	size_t head = 2;

	f->why = NULL;
	if (n < 2)
		return 0;
	f->fin = (p[0] & 0x80) != 0;
	f->opcode = (enum ws_opcode)(p[0] & 0x0f);
	if (p[0] & 0x70) {
		f->why = "RSV bits set, though no extension was agreed";
		return -1;
	}
	if (p[1] & 0x80) {
		f->why = "a masked server frame";
		return -1;
	}
	switch (f->opcode) {
	case WS_OP_CONT:
	case WS_OP_TEXT:
	case WS_OP_BINARY:
	case WS_OP_CLOSE:
	case WS_OP_PING:
	case WS_OP_PONG:
		break;
	default:
		f->why = "an unknown opcode";
		return -1;
	}
	len = p[1] & 0x7f;
	if (len == 126) {
		if (n < 4)
			return 0;
		len = (uint64_t)p[2] << 8 | p[3];
		head = 4;
		if (len < 126) {
			f->why = "a length not in its shortest form";
			return -1;
		}
	} else if (len == 127) {
		if (n < 10)
			return 0;
		len = 0;
		for (size_t i = 2; i < 10; i++)
			len = len << 8 | p[i];
		head = 10;
		if (len >> 63) {
			f->why = "a length with its top bit set";
			return -1;
		}
		if (len <= 0xffff) {
			f->why = "a length not in its shortest form";
			return -1;
		}
	}
	if (ws_op_is_control(f->opcode) && (!f->fin || len > 125)) {
		f->why = "a control frame fragmented or over 125 bytes";
		return -1;
	}
	f->len = len;
	return (int)head;
}

size_t ws_frame_write(uint8_t out[WS_FRAME_HEAD_MAX], bool fin, enum ws_opcode op, uint64_t len)
{
	out[0] = (uint8_t)((fin ? 0x80 : 0) | op);
	if (len < 126) {
		out[1] = (uint8_t)len;
		return 2;
	}
	if (len <= 0xffff) {
		out[1] = 126;
		out[2] = (uint8_t)(len >> 8);
		out[3] = (uint8_t)len;
		return 4;
	}
	out[1] = 127;
	for (int i = 0; i < 8; i++)
		out[2 + i] = (uint8_t)(len >> (56 - 8 * i));
	return 10;
}
