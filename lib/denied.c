/*
 * denied.c: a packet a wall denied and NFLOG'd, read and shown (denied.h).
 *
 * Reads the packet through a bounds-checked cursor: every header is
 * checked against what remains before a byte of it is used. It does not
 * validate checksums or options: the kernel sent this packet's copy, and
 * all the listener wants is who tried to reach what.
 */
#include "denied.h"

#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "host.h"

#define PREFIX_HEAD "sluice "

/* IPv6 next-header values the walk steps over */
#define NH_HOPOPTS 0
#define NH_ROUTING 43
#define NH_FRAGMENT 44
#define NH_AH 51
#define NH_DSTOPTS 60

struct cur {
	const uint8_t *p;
	size_t n;
};

/* Step over k bytes. Returns 0, or -1 (nothing moved) when fewer remain. */
static int skip(struct cur *c, size_t k)
{
	if (k > c->n)
		return -1;
	c->p += k;
	c->n -= k;
	return 0;
}

static uint16_t be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static bool name_byte(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '-';
}

/* Copy a run of name bytes from s[0..n) ending at stop into out. Returns its length, or 0. */
static size_t name_take(const char *s, size_t n, char stop, char *out)
{
	size_t i = 0;

	while (i < n && name_byte(s[i]))
		i++;
	if (i == 0 || i >= DENIED_NAME_MAX || i == n || s[i] != stop)
		return 0;
	memcpy(out, s, i);
	out[i] = '\0';
	return i;
}

/* The prefix fields of out from prefix[0..len). */
static void prefix_read(const char *prefix, size_t len, struct denied *out)
{
	size_t hl = strlen(PREFIX_HEAD), i, n, a, b;

	n = len < DENIED_PREFIX_MAX - 1 ? len : DENIED_PREFIX_MAX - 1;
	for (i = 0; i < n; i++) {
		char ch = prefix[i];

		out->prefix[i] = ch >= 0x20 && ch <= 0x7e && ch != '"' && ch != '\\' ? ch : '?';
	}
	out->prefix[n] = '\0';
	out->profile[0] = out->reason[0] = '\0';
	if (len < hl || memcmp(prefix, PREFIX_HEAD, hl) != 0)
		return;
	a = name_take(prefix + hl, len - hl, ' ', out->profile);
	if (a == 0)
		return;
	b = name_take(prefix + hl + a + 1, len - hl - a - 1, ':', out->reason);
	i = hl + a + 1 + b + 1; /* just past the ':' */
	if (b == 0 || !(i == len || (i + 1 == len && prefix[i] == ' ')))
		out->profile[0] = out->reason[0] = '\0';
}

/* Ports and flags from the L4 header in c (out->proto set). */
static void l4_read(struct cur *c, struct denied *out)
{
	if (out->proto == IPPROTO_TCP) {
		if (c->n < 20) {
			out->l4 = DENIED_L4_CUT;
			return;
		}
		out->tcp_flags = c->p[13];
	} else if (out->proto == IPPROTO_UDP) {
		if (c->n < 8) {
			out->l4 = DENIED_L4_CUT;
			return;
		}
	} else {
		return;
	}
	out->sport = be16(c->p);
	out->dport = be16(c->p + 2);
}

static int ipv4_read(struct cur *c, struct denied *out, const char **err)
{
	size_t ihl, total;

	if (c->n < 20) {
		*err = "truncated ipv4 header";
		return -1;
	}
	ihl = (size_t)(c->p[0] & 0x0f) * 4;
	total = be16(c->p + 2);
	if (ihl < 20) {
		*err = "bad ipv4 header length";
		return -1;
	}
	if (total != 0 && total < ihl) { /* 0: unknown (a GSO packet past 64 KiB) */
		*err = "bad ipv4 total length";
		return -1;
	}
	if (ihl > c->n) {
		*err = "truncated ipv4 header";
		return -1;
	}
	out->family = AF_INET;
	out->proto = c->p[9];
	memcpy(&out->src.v4, c->p + 12, 4);
	memcpy(&out->dst.v4, c->p + 16, 4);
	if ((be16(c->p + 6) & 0x1fff) != 0)
		out->l4 = DENIED_L4_FRAGMENT;
	if (total != 0 && total < c->n)
		c->n = total; /* link padding after the datagram is not L4 */
	skip(c, ihl);
	if (out->l4 == DENIED_L4_FULL)
		l4_read(c, out);
	return 0;
}

/* Walk the extension headers in c from next header nh; out->proto and l4 follow. */
static int ipv6_ext_walk(struct cur *c, uint8_t nh, struct denied *out, const char **err)
{
	size_t hlen;

	for (int i = 0;; i++) {
		out->proto = nh;
		if (nh != NH_HOPOPTS && nh != NH_ROUTING && nh != NH_FRAGMENT && nh != NH_AH &&
		    nh != NH_DSTOPTS)
			return 0;
		if (i == DENIED_EXT_MAX) {
			*err = "too many ipv6 extension headers";
			return -1;
		}
		if (c->n < 8) {
			out->l4 = DENIED_L4_CUT;
			return 0;
		}
		if (nh == NH_FRAGMENT) {
			hlen = 8;
			if ((be16(c->p + 2) & 0xfff8) != 0)
				out->l4 = DENIED_L4_FRAGMENT;
		} else if (nh == NH_AH) {
			hlen = ((size_t)c->p[1] + 2) * 4;
		} else {
			hlen = ((size_t)c->p[1] + 1) * 8;
		}
		nh = c->p[0];
		if (skip(c, hlen) == -1) {
			out->l4 = DENIED_L4_CUT;
			return 0;
		}
		if (out->l4 == DENIED_L4_FRAGMENT) {
			out->proto = nh; /* what the fragments carry, though not here */
			return 0;
		}
	}
}

static int ipv6_read(struct cur *c, struct denied *out, const char **err)
{
	size_t plen;
	uint8_t nh;

	if (c->n < 40) {
		*err = "truncated ipv6 header";
		return -1;
	}
	out->family = AF_INET6;
	nh = c->p[6];
	plen = be16(c->p + 4);
	memcpy(&out->src.v6, c->p + 8, 16);
	memcpy(&out->dst.v6, c->p + 24, 16);
	skip(c, 40);
	if (plen != 0 && plen < c->n)
		c->n = plen; /* 0: a jumbogram, or nothing; either way len bounds it */
	if (ipv6_ext_walk(c, nh, out, err) == -1)
		return -1;
	if (out->l4 == DENIED_L4_FULL)
		l4_read(c, out);
	return 0;
}

int denied_parse(const char *prefix, size_t prefix_len, const uint8_t *pkt, size_t len,
		 struct denied *out, const char **err)
{
	static const char *const versions[16] = {
		"ip version 0",  "ip version 1",  "ip version 2",  "ip version 3",
		"ip version 4",  "ip version 5",  "ip version 6",  "ip version 7",
		"ip version 8",  "ip version 9",  "ip version 10", "ip version 11",
		"ip version 12", "ip version 13", "ip version 14", "ip version 15",
	};
	struct cur c = { pkt, len };

	memset(out, 0, sizeof(*out));
	prefix_read(prefix, prefix_len, out);
	if (len == 0) {
		*err = "empty packet";
		return -1;
	}
	switch (pkt[0] >> 4) {
	case 4:
		return ipv4_read(&c, out, err);
	case 6:
		return ipv6_read(&c, out, err);
	default:
		*err = versions[pkt[0] >> 4];
		return -1;
	}
}

/* --- formatting -------------------------------------------------------------- */

struct out {
	char *p;
	size_t size, n;
	bool full;
};

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int k;

	if (o->full)
		return;
	va_start(ap, fmt);
	k = vsnprintf(o->p + o->n, o->size - o->n, fmt, ap);
	va_end(ap);
	if (k < 0 || (size_t)k >= o->size - o->n)
		o->full = true;
	else
		o->n += (size_t)k;
}

static const char *proto_name(uint8_t proto, char *buf, size_t size)
{
	switch (proto) {
	case IPPROTO_TCP:
		return "tcp";
	case IPPROTO_UDP:
		return "udp";
	case IPPROTO_ICMP:
		return "icmp";
	case IPPROTO_ICMPV6:
		return "icmpv6";
	case IPPROTO_SCTP:
		return "sctp";
	default:
		snprintf(buf, size, "%u", proto);
		return buf;
	}
}

static bool has_ports(const struct denied *r)
{
	return r->l4 == DENIED_L4_FULL && (r->proto == IPPROTO_TCP || r->proto == IPPROTO_UDP);
}

static void put_endpoint(struct out *o, const struct denied *r, const char *addr, uint16_t port)
{
	char hostport[INET6_ADDRSTRLEN + 8];

	if (!has_ports(r)) {
		put(o, "%s", addr);
		return;
	}
	host_port_format(hostport, sizeof(hostport), addr, port);
	put(o, "%s", hostport);
}

int denied_format(const struct denied *r, uint32_t uid, bool has_uid, bool json, char *out,
		  size_t size)
{
	static const char *const l4_names[] = { "", "cut", "fragment" };
	struct out o = { out, size, 0, false };
	char src[INET6_ADDRSTRLEN], dst[INET6_ADDRSTRLEN], pbuf[8];
	const char *proto = proto_name(r->proto, pbuf, sizeof(pbuf));
	bool ours = r->profile[0] != '\0';

	if (size == 0)
		return -1;
	out[0] = '\0';
	if (inet_ntop(r->family, &r->src, src, sizeof(src)) == NULL ||
	    inet_ntop(r->family, &r->dst, dst, sizeof(dst)) == NULL)
		return -1;
	/* profile, reason and prefix hold no '"' or '\\' (denied_parse saw to it) */
	if (json) {
		if (ours)
			put(&o, "{\"profile\":\"%s\",\"reason\":\"%s\"", r->profile, r->reason);
		else
			put(&o, "{\"prefix\":\"%s\"", r->prefix);
		if (has_uid)
			put(&o, ",\"uid\":%u", uid);
		put(&o, ",\"proto\":\"%s\",\"src\":\"%s\"", proto, src);
		if (has_ports(r))
			put(&o, ",\"sport\":%u", r->sport);
		put(&o, ",\"dst\":\"%s\"", dst);
		if (has_ports(r))
			put(&o, ",\"dport\":%u", r->dport);
		if (r->l4 != DENIED_L4_FULL)
			put(&o, ",\"l4\":\"%s\"", l4_names[r->l4]);
		put(&o, "}");
	} else {
		if (ours)
			put(&o, "%s %s", r->profile, r->reason);
		else
			put(&o, "prefix \"%s\"", r->prefix);
		if (has_uid)
			put(&o, " uid=%u", uid);
		put(&o, " %s ", proto);
		put_endpoint(&o, r, src, r->sport);
		put(&o, " -> ");
		put_endpoint(&o, r, dst, r->dport);
		if (r->l4 == DENIED_L4_CUT)
			put(&o, " (cut short)");
		else if (r->l4 == DENIED_L4_FRAGMENT)
			put(&o, " (fragment)");
	}
	if (o.full) {
		out[0] = '\0';
		return -1;
	}
	return 0;
}
