/*
 * fuzz_dnstag.c: lib/dnstag.c on arbitrary messages, as sluice-forward
 * (dnstag_add) and sluice-dns (dnstag_take) read them.
 *
 * Beyond not crashing: the two read the same messages (one fails where the
 * other does); what dnstag_take writes is no longer than the message and
 * holds no tag; a tag the client wrote is never believed (no key it could
 * know), and what dnstag_add wrote is believed, names what it was given,
 * and strips back to the message less the client's tags (or, when the
 * forwarder added the OPT record, to the message itself).
 */
#include <stdlib.h>
#include <string.h>

#include "dnstag.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NOW 1700000000

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t added[65536 + DNSTAG_GROW], plain[65536], back[65536 + DNSTAG_GROW];
	struct stamp_key key = { .kid = 9 };
	struct dnstag t, seen;
	long n, p, b;
	bool believed;

	if (size > 65535)
		return 0;
	memset(key.key, 0x5a, sizeof(key.key));
	memset(&t, 0, sizeof(t));
	memcpy(t.src, "10.88.0.5", 10);
	memcpy(t.net, "fuzz.net", 9);
	t.time = NOW;
	/* the fuzzer cannot sign with the key: nothing it writes is believed */
	p = dnstag_take(data, size, plain, sizeof(plain), &key, 1, NOW, &seen, &believed);
	if (believed || (p != -1 && (size_t)p > size))
		abort();
	n = dnstag_add(data, size, &t, &key, added, sizeof(added));
	if ((n == -1) != (p == -1) || (n != -1 && (size_t)n > size + DNSTAG_GROW))
		abort();
	if (n == -1)
		return 0;
	b = dnstag_take(added, (size_t)n, back, sizeof(back), &key, 1, NOW, &seen, &believed);
	if (b == -1 || !believed || strcmp(seen.net, "fuzz.net") != 0 ||
	    strcmp(seen.src, "10.88.0.5") != 0 || seen.flags != t.flags)
		abort();
	if (t.flags & DNSTAG_F_ADDED) {
		if ((size_t)b != size || memcmp(back, data, size) != 0)
			abort();
	} else if (b != p || memcmp(back, plain, (size_t)p) != 0) {
		abort();
	}
	/* taken again, nothing is left to find */
	if (dnstag_take(back, (size_t)b, plain, sizeof(plain), &key, 1, NOW, &seen, &believed) !=
		    b ||
	    believed)
		abort();
	return 0;
}
