/*
 * fuzz_ws_frame.c: ws_frame_read on arbitrary bytes, as a server's frames
 * arrive.
 *
 * Headers are read one after the other, the payload skipped as the proxy
 * would. Beyond not crashing: a header read is 2, 4 or 10 bytes and no
 * longer than the input; a refusal says why; a header written back from
 * what was read reads the same; a shorter prefix of an accepted header
 * asks for more.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ws_frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t off = 0;

	while (off < size) {
		struct ws_frame f, g;
		uint8_t h[WS_FRAME_HEAD_MAX];
		int n = ws_frame_read(data + off, size - off, &f);
		size_t w;

		if (n == 0)
			break;
		if (n < 0) {
			if (f.why == NULL)
				abort();
			break;
		}
		if ((n != 2 && n != 4 && n != 10) || (size_t)n > size - off)
			abort();
		if (ws_frame_read(data + off, (size_t)n - 1, &g) != 0)
			abort();
		w = ws_frame_write(h, f.fin, f.opcode, f.len);
		if (w != (size_t)n || ws_frame_read(h, w, &g) != n || g.len != f.len ||
		    g.fin != f.fin || g.opcode != f.opcode)
			abort();
		off += (size_t)n;
		if (f.len > size - off)
			break;
		off += (size_t)f.len;
	}
	return 0;
}
