/*
 * fuzz_sockaddr.c: sockaddr_parse on arbitrary text, under every flag.
 *
 * Beyond not crashing: the flags only widen, never change, what a text
 * means (what parses with the port required parses the same with it
 * optional; what parses with no port allowed, too), a failed parse leaves
 * its output alone, and what parses formats (sockaddr_format) to text that
 * parses back to the same address with the port required.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "sockaddr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define TEXT_MAX 256

static void round_trip(const struct sockaddr_storage *ss)
{
	struct sockaddr_storage again;
	char out[160];

	sockaddr_format(ss, out, sizeof(out));
	if (sockaddr_parse(out, SOCKADDR_UNIX, 0, &again) == -1 || !sockaddr_same(ss, &again))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sockaddr_storage ss[8], untouched;
	char s[TEXT_MAX + 1];
	int rc[8];

	if (size > TEXT_MAX)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	memset(&untouched, 0x5a, sizeof(untouched));
	for (unsigned f = 0; f < 8; f++) {
		ss[f] = untouched;
		rc[f] = sockaddr_parse(s, f, 53, &ss[f]);
		if (rc[f] != 0 && rc[f] != -1)
			abort();
		if (rc[f] == -1 && memcmp(&ss[f], &untouched, sizeof(untouched)) != 0)
			abort();
		if (rc[f] == 0)
			round_trip(&ss[f]);
	}
	for (unsigned f = 0; f < 8; f++) {
		unsigned optional = (f | SOCKADDR_PORT_OPTIONAL) & ~(unsigned)SOCKADDR_NO_PORT;
		unsigned required = f & ~(unsigned)(SOCKADDR_PORT_OPTIONAL | SOCKADDR_NO_PORT);

		if (rc[f] != 0)
			continue;
		if (rc[optional] != 0 || !sockaddr_same(&ss[f], &ss[optional]))
			abort();
		if (rc[f | SOCKADDR_UNIX] != 0 || !sockaddr_same(&ss[f], &ss[f | SOCKADDR_UNIX]))
			abort();
		/* an IP address's text either has a port or has none */
		if ((f & SOCKADDR_NO_PORT) && ss[f].ss_family != AF_UNIX && rc[required] == 0)
			abort();
	}
	return 0;
}
