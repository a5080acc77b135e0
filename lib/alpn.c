/*
 * alpn.c: a client's ALPN offer, h2 and http/1.1 kept (alpn.h).
 */
#include "alpn.h"

#include <string.h>

bool alpn_offer_read(const uint8_t *p, size_t len, uint8_t out[ALPN_OFFER_MAX], size_t *out_len)
{
	bool h2 = false, h1 = false;
	size_t n = 0;

	*out_len = 0;
	if (len < 2 || ((size_t)p[0] << 8 | p[1]) != len - 2)
		return false;
	/* each kept once, whatever the list repeats */
	for (size_t i = 2; i < len;) {
		size_t k = p[i];
		bool is_h2, is_h1;

		if (k == 0 || i + 1 + k > len) {
			*out_len = 0;
			return false;
		}
		is_h2 = k == 2 && memcmp(p + i + 1, "h2", 2) == 0;
		is_h1 = k == 8 && memcmp(p + i + 1, "http/1.1", 8) == 0;
		if ((is_h2 && !h2) || (is_h1 && !h1)) {
			memcpy(out + n, p + i, 1 + k);
			n += 1 + k;
			h2 = h2 || is_h2;
			h1 = h1 || is_h1;
		}
		i += 1 + k;
	}
	*out_len = n;
	return h2;
}
