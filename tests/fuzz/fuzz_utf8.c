/*
 * fuzz_utf8.c: libFuzzer target for lib/utf8.c and the row escaper that
 * uses it (netlog_escape): bytes a client chose, as every writer and every
 * table takes them.
 *
 * Byte 0 is the display width, byte 1 the output size (1 + value); the
 * rest is the text. Whatever the text: each output is NUL-terminated inside
 * its size, valid UTF-8, and holds no code point utf8_hidden names (the
 * JSON unhider leaves tab, LF and CR: whitespace between JSON's tokens);
 * the display takes no more columns than the width, and its
 * columns are what utf8_width says of what it wrote. Any difference aborts.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "netlog.h"
#include "utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* out[0..n) is valid UTF-8, nothing hidden (but tab, LF, CR when ws_ok); returns its columns. */
static size_t check(const char *out, size_t n, size_t size, bool ws_ok)
{
	size_t cols = 0;

	if (n >= size || out[n] != '\0' || strlen(out) != n)
		abort();
	for (size_t i = 0; i < n;) {
		uint32_t cp;
		size_t k = utf8_decode(out + i, n - i, &cp);

		if (k == 0)
			abort();
		if (utf8_hidden(cp) && !(ws_ok && (cp == '\t' || cp == '\n' || cp == '\r')))
			abort();
		cols += (size_t)utf8_width(cp);
		i += k;
	}
	return cols;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char out[8 * 1024 * 6 + 16];
	size_t width, osize, n, cols;
	const char *s;

	if (size < 2 || size > 8 * 1024)
		return 0;
	width = data[0];
	osize = (size_t)data[1] + 1;
	s = (const char *)data + 2;
	size -= 2;

	n = utf8_display(s, size, width, data[0] & 1, out, osize, &cols);
	if (cols > width || check(out, n, osize, false) != cols)
		abort();
	n = utf8_display(s, size, SIZE_MAX, false, out, sizeof(out), &cols);
	if (check(out, n, sizeof(out), false) != cols)
		abort();
	n = utf8_json_unhide(s, size, out, osize);
	check(out, n, osize, true);
	n = netlog_escape(s, size, size, out, sizeof(out));
	check(out, n, sizeof(out), false);
	n = netlog_escape(s, size, size, out, osize);
	check(out, n, osize, false);
	return 0;
}
