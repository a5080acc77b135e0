/*
 * iprange.c: CIDR ranges and the destination deny list.
 *
 * The deny list is a fixed table (BRIEF.md, "Destination IPs"); the most
 * specific range holding an address is the one reported, so ::1 reads as
 * "::1/128" rather than the IPv4-compatible "::/96" around it. Addresses
 * are raw network bytes throughout; nothing here resolves or allocates.
 * Exceptions and the proxy's own addresses are policy.c's business.
 */
#include "iprange.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "digits.h"

struct deny_range {
	struct ipnet net;
	const char *text; /* as reported; mapped ranges in pure hex, not dotted */
};

#define V4(a, b, c, d, len, txt) { { AF_INET, { a, b, c, d }, len }, txt }

static const struct deny_range deny_list[] = {
	V4(0, 0, 0, 0, 8, "0.0.0.0/8"),
	V4(10, 0, 0, 0, 8, "10.0.0.0/8"),
	V4(100, 64, 0, 0, 10, "100.64.0.0/10"),
	V4(127, 0, 0, 0, 8, "127.0.0.0/8"),
	V4(169, 254, 0, 0, 16, "169.254.0.0/16"),
	V4(172, 16, 0, 0, 12, "172.16.0.0/12"),
	V4(192, 0, 0, 0, 24, "192.0.0.0/24"),
	V4(192, 168, 0, 0, 16, "192.168.0.0/16"),
	V4(198, 18, 0, 0, 15, "198.18.0.0/15"),
	V4(224, 0, 0, 0, 4, "224.0.0.0/4"),
	V4(240, 0, 0, 0, 4, "240.0.0.0/4"),
	{ { AF_INET6, { 0 }, 128 }, "::/128" },
	{ { AF_INET6, { [15] = 1 }, 128 }, "::1/128" },
	{ { AF_INET6, { 0xfc }, 7 }, "fc00::/7" },
	{ { AF_INET6, { 0xfe, 0x80 }, 10 }, "fe80::/10" },
	{ { AF_INET6, { 0xfe, 0xc0 }, 10 }, "fec0::/10" },
	{ { AF_INET6, { 0xff }, 8 }, "ff00::/8" },
	{ { AF_INET6, { [10] = 0xff, [11] = 0xff }, 96 }, "::ffff:0:0/96" },
	{ { AF_INET6, { 0 }, 96 }, "::/96" },
	{ { AF_INET6, { 0, 0x64, 0xff, 0x9b }, 96 }, "64:ff9b::/96" },
	{ { AF_INET6, { 0, 0x64, 0xff, 0x9b, 0, 1 }, 48 }, "64:ff9b:1::/48" },
	{ { AF_INET6, { 0x20, 0x02 }, 16 }, "2002::/16" },
	{ { AF_INET6, { 0x20, 0x01, 0, 0 }, 32 }, "2001::/32" },
};

const struct ipnet *iprange_deny_list(size_t i)
{
	return i < sizeof(deny_list) / sizeof(deny_list[0]) ? &deny_list[i].net : NULL;
}

static size_t family_bytes(int family)
{
	return family == AF_INET ? 4 : 16;
}

/* Whether the first prefix bits of a and b agree. */
static bool prefix_equal(const uint8_t *a, const uint8_t *b, unsigned prefix)
{
	unsigned full = prefix / 8, rest = prefix % 8;

	if (memcmp(a, b, full) != 0)
		return false;
	if (rest == 0)
		return true;
	return ((a[full] ^ b[full]) & (uint8_t)(0xff00 >> rest)) == 0;
}

bool ipnet_contains(const struct ipnet *n, int family, const void *addr)
{
	if (n->family != family || (family != AF_INET && family != AF_INET6))
		return false;
	return prefix_equal(n->addr, addr, n->prefix);
}

/* Decimal prefix length, no sign, no leading zeros ("/08" is refused), at most max. */
static int prefix_parse(const char *s, size_t len, unsigned max, uint8_t *out)
{
	uint64_t v;

	if ((len > 1 && s[0] == '0') || dec_parse(s, len, max, &v) == -1)
		return -1;
	*out = (uint8_t)v;
	return 0;
}

int ipnet_parse(const char *s, size_t len, struct ipnet *out, const char **err)
{
	/* Room for a message naming the input; valid until the next call (single-threaded config). */
	static char msg[128];
	char buf[INET6_ADDRSTRLEN];
	const char *slash = memchr(s, '/', len);
	size_t alen = slash != NULL ? (size_t)(slash - s) : len;
	uint8_t mask[16] = { 0 };
	unsigned i, max;

	memset(out, 0, sizeof(*out));
	if (alen == 0 || alen >= sizeof(buf)) {
		*err = "bad address";
		return -1;
	}
	memcpy(buf, s, alen);
	buf[alen] = '\0';
	if (memchr(buf, '%', alen) != NULL) {
		*err = "zone id refused";
		return -1;
	}
	if (inet_pton(AF_INET, buf, out->addr) == 1) {
		out->family = AF_INET;
		max = 32;
	} else if (inet_pton(AF_INET6, buf, out->addr) == 1) {
		out->family = AF_INET6;
		max = 128;
	} else {
		*err = "bad address";
		return -1;
	}
	out->prefix = (uint8_t)max;
	if (slash != NULL && prefix_parse(slash + 1, len - alen - 1, max, &out->prefix) == -1) {
		memset(out, 0, sizeof(*out));
		*err = "bad prefix length";
		return -1;
	}
	for (i = 0; i < out->prefix / 8u; i++)
		mask[i] = 0xff;
	if (out->prefix % 8)
		mask[i] = (uint8_t)(0xff00 >> (out->prefix % 8));
	for (i = 0; i < family_bytes(out->family); i++) {
		if ((out->addr[i] & ~mask[i]) != 0) {
			snprintf(msg, sizeof(msg), "host bits set in %.*s", (int)(len < 100 ? len : 100), s);
			memset(out, 0, sizeof(*out));
			*err = msg;
			return -1;
		}
	}
	return 0;
}

char *ipnet_format(const struct ipnet *n, char *buf, size_t size)
{
	char a[INET6_ADDRSTRLEN];

	ipaddr_format(n->family, n->addr, a, sizeof(a));
	snprintf(buf, size, "%s/%u", a, (unsigned)n->prefix);
	return buf;
}

const char *iprange_denied(int family, const void *addr, struct ipnet *out)
{
	const struct deny_range *best = NULL;
	size_t i;

	for (i = 0; i < sizeof(deny_list) / sizeof(deny_list[0]); i++) {
		const struct deny_range *d = &deny_list[i];

		if (ipnet_contains(&d->net, family, addr) && (best == NULL || d->net.prefix > best->net.prefix))
			best = d;
	}
	if (best == NULL)
		return NULL;
	if (out != NULL)
		*out = best->net;
	return best->text;
}

char *ipaddr_format(int family, const void *addr, char *buf, size_t size)
{
	/* Never NULL, so callers can print the result directly. */
	if (inet_ntop(family, addr, buf, (socklen_t)size) == NULL)
		snprintf(buf, size, "?");
	return buf;
}
