/*
 * fuzz_denied.c: denied_parse and denied_format on arbitrary bytes.
 *
 * The first byte is the prefix's length (cut to what follows), then the
 * prefix, then the packet; each gets its own exact-sized copy so an
 * over-read of either is caught. Beyond not crashing: a refused packet
 * names why; a read one has names of [a-z0-9_-] and a prefix of printable
 * bytes without '"' or '\\', ports only with a full tcp or udp header, and
 * formats, as text and JSON, within DENIED_LINE_MAX.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "denied.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void names_ok(const struct denied *r)
{
	for (const char *s = r->prefix; *s != '\0'; s++)
		if (*s < 0x20 || *s > 0x7e || *s == '"' || *s == '\\')
			abort();
	if ((r->profile[0] == '\0') != (r->reason[0] == '\0'))
		abort();
	for (const char *s = r->profile; *s != '\0'; s++)
		if (strchr("abcdefghijklmnopqrstuvwxyz0123456789_-", *s) == NULL)
			abort();
	for (const char *s = r->reason; *s != '\0'; s++)
		if (strchr("abcdefghijklmnopqrstuvwxyz0123456789_-", *s) == NULL)
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct denied r;
	const char *err = NULL;
	char line[DENIED_LINE_MAX];
	size_t plen, len;
	char *prefix;
	uint8_t *pkt;
	int rc;

	if (size == 0)
		return 0;
	plen = data[0] < size - 1 ? data[0] : size - 1;
	len = size - 1 - plen;
	prefix = malloc(plen + 1);
	pkt = malloc(len + 1);
	if (prefix == NULL || pkt == NULL)
		abort();
	memcpy(prefix, data + 1, plen);
	memcpy(pkt, data + 1 + plen, len);
	rc = denied_parse(prefix, plen, pkt, len, &r, &err);
	names_ok(&r);
	if (rc == -1) {
		if (err == NULL)
			abort();
		goto out_free;
	}
	if (r.family != AF_INET && r.family != AF_INET6)
		abort();
	if ((r.sport != 0 || r.dport != 0 || r.tcp_flags != 0) && r.l4 != DENIED_L4_FULL)
		abort();
	if (denied_format(&r, 65534, true, false, line, sizeof(line)) == -1 ||
	    strlen(line) >= sizeof(line))
		abort();
	if (denied_format(&r, UINT32_MAX, true, true, line, sizeof(line)) == -1 ||
	    line[0] != '{' || line[1] != '"' || line[strlen(line) - 1] != '}')
		abort();
	if (denied_format(&r, 0, false, true, line, 16) != -1)
		abort(); /* no object fits in 16 bytes */
out_free:
	free(pkt);
	pkt = NULL;
	free(prefix);
	prefix = NULL;
	return 0;
}
