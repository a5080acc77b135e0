/*
 * fuzz_alpn.c: alpn_offer_read on arbitrary extension bodies.
 *
 * Beyond not crashing: what it keeps fits ALPN_OFFER_MAX, is a list of
 * entries each "h2" or "http/1.1", neither twice, and h2 is reported
 * exactly when it is kept.
 */
#include <stdlib.h>
#include <string.h>

#include "alpn.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t out[ALPN_OFFER_MAX];
	size_t n = 0;
	bool h2 = alpn_offer_read(data, size, out, &n), seen2 = false, seen1 = false;

	if (n > ALPN_OFFER_MAX)
		abort();
	for (size_t i = 0; i < n;) {
		size_t k = out[i];

		if (i + 1 + k > n)
			abort();
		if (k == 2 && memcmp(out + i + 1, "h2", 2) == 0 && !seen2)
			seen2 = true;
		else if (k == 8 && memcmp(out + i + 1, "http/1.1", 8) == 0 && !seen1)
			seen1 = true;
		else
			abort();
		i += 1 + k;
	}
	if (h2 != seen2)
		abort();
	return 0;
}
