/*
 * hex.c: bytes as lower-case hex text and back (hex.h).
 */
#include "hex.h"

#include <stdint.h>

#include "digits.h"

char *hex_encode(const void *in, size_t n, char *out)
{
	static const char digit[] = "0123456789abcdef";
	const uint8_t *b = in;

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digit[b[i] >> 4];
		out[2 * i + 1] = digit[b[i] & 15];
	}
	out[2 * n] = '\0';
	return out;
}

int hex_decode(const char *s, size_t n, void *out)
{
	uint8_t *b = out;

	if (!hex_is_lower(s, 2 * n))
		return -1;
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(hex_value((unsigned char)s[2 * i]) << 4 |
				 hex_value((unsigned char)s[2 * i + 1]));
	return 0;
}
