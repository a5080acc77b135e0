/*
 * fuzz_host.c: host_port_split, host_port_number, host_port_parse and
 * grant_parse on arbitrary bytes.
 *
 * Beyond not crashing: whatever parses must be canonical already, so
 * canonicalising the canonical text again gives the same host, and a
 * parsed grant written back with grant_format parses to the same grant;
 * a split's host lies inside the input and its port is 1-65535 and reads
 * back from the text after the last colon.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "grant.h"
#include "host.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_host(const struct host *h)
{
	struct host again;
	const char *err;

	if (host_canon(h->name, strlen(h->name), &again, &err) == -1)
		abort();
	if (again.kind != h->kind || strcmp(again.name, h->name) != 0 || !host_equal(&again, h))
		abort();
}

static void check_split(const char *s, size_t size, unsigned flags)
{
	struct host_port hp;
	const char *err;
	uint16_t again;

	if (host_port_split(s, size, flags, &hp, &err) == -1) {
		if (err == NULL || hp.has_port)
			abort();
		return;
	}
	if (hp.host < s || hp.host + hp.host_len > s + size || hp.bracketed != (s[0] == '['))
		abort();
	if (hp.has_port) {
		const char *colon = memrchr(s, ':', size);
		size_t plen = size - (size_t)(colon - s) - 1;

		if (hp.port == 0 || host_port_number(colon + 1, plen, flags, &again) == -1 ||
		    again != hp.port)
			abort();
	} else if (hp.port != 0) {
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	struct host h;
	struct grant g, g2;
	uint16_t port;
	bool has_port;
	const char *err;
	char buf[HOST_NAME_MAX_LEN + 16];

	check_split(s, size, 0);
	check_split(s, size, HOST_PORT_NO_ZERO);
	check_split(s, size, HOST_PORT_ANY_ZEROS);
	if (host_port_parse(s, size, 443, &h, &port, &has_port, &err) == 0) {
		if (port == 0 || (!has_port && port != 443))
			abort();
		check_host(&h);
	}
	if (host_canon(s, size, &h, &err) == 0)
		check_host(&h);
	if (grant_parse(s, size, &g, &err) == 0) {
		grant_format(&g, buf, sizeof(buf));
		if (grant_parse(buf, strlen(buf), &g2, &err) == -1)
			abort();
		if (strcmp(g.host, g2.host) != 0 || g.wildcard != g2.wildcard || g.port != g2.port)
			abort();
	}
	return 0;
}
