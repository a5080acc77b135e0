/*
 * scrub_ref.h: scrub.h's definition written the slow, obvious way, the
 * oracle test_scrub.c and fuzz_scrub.c hold the streaming scrubber to: on
 * the whole buffer, mask every byte inside any occurrence of any distinct
 * secret, and count (secret, start) pairs. Test code only; included by
 * each test program, hence static.
 */
#ifndef SLUICE_SCRUB_REF_H
#define SLUICE_SCRUB_REF_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* in[0..len) masked into out[0..len); returns the count. */
static uint64_t scrub_reference(const char *const *sec, const size_t *lens, size_t n,
				const char *in, size_t len, char *out)
{
	uint64_t count = 0;

	memcpy(out, in, len);
	for (size_t k = 0; k < n; k++) {
		bool dup = false;

		for (size_t j = 0; j < k; j++)
			if (lens[j] == lens[k] && memcmp(sec[j], sec[k], lens[k]) == 0)
				dup = true;
		if (dup)
			continue;
		for (size_t p = 0; p + lens[k] <= len; p++) {
			if (memcmp(in + p, sec[k], lens[k]) != 0)
				continue;
			count++;
			memset(out + p, '*', lens[k]);
		}
	}
	return count;
}

#endif
