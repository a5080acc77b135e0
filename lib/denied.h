/*
 * denied.h: one packet a wall denied and logged to an NFLOG group, read
 * and shown (what `sluice wall denied` prints). Not the proxy's refusal
 * response to a request, which is proxy/refuse.c's.
 *
 * The walls log a refused packet with the prefix "sluice PROFILE REASON: "
 * and NFLOG hands a listener that prefix and the packet from its network
 * header on. denied_parse() reads both into a struct denied;
 * denied_format() prints one as a line of text or a JSON object.
 *
 * Packet bytes are hostile: the parser allocates nothing, does no I/O and
 * reads only inside pkt[0..len) and prefix[0..prefix_len). Talking to
 * netlink, timestamps and uids are the caller's (cli/wall_denied.c).
 */
#ifndef SLUICE_DENIED_H
#define SLUICE_DENIED_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DENIED_NAME_MAX 32   /* profile, reason: at most 31 bytes of [a-z0-9_-], NUL-ended */
#define DENIED_PREFIX_MAX 64 /* the raw prefix, sanitised and NUL-ended (nft allows < 128) */
#define DENIED_EXT_MAX 8     /* IPv6 extension headers walked before giving up */
#define DENIED_LINE_MAX 512  /* enough for any line denied_format writes */

/* How much of the L4 header was read. */
enum denied_l4 {
	DENIED_L4_FULL,     /* read: ports (tcp, udp) and flags (tcp) are filled */
	DENIED_L4_CUT,      /* the copy ends before the L4 header does: ports, flags 0 */
	DENIED_L4_FRAGMENT, /* a non-first fragment carries no L4 header: ports, flags 0 */
};

union denied_addr {
	struct in_addr v4;
	struct in6_addr v6;
};

struct denied {
	int family;                 /* AF_INET or AF_INET6 */
	uint8_t proto;              /* L4 protocol; IPv6: after the extension headers read */
	union denied_addr src, dst;
	uint16_t sport, dport;      /* host order; 0 unless tcp or udp and l4 is FULL */
	uint8_t tcp_flags;          /* tcp with l4 FULL: the flags byte (FIN 0x01 .. CWR 0x80) */
	enum denied_l4 l4;
	char profile[DENIED_NAME_MAX]; /* "" when the prefix is not of sluice's shape */
	char reason[DENIED_NAME_MAX];  /* "" likewise */
	char prefix[DENIED_PREFIX_MAX]; /* the whole prefix, always: bytes outside
					    0x20..0x7e and '"' '\\' shown as '?', cut to fit */
};

/*
 * Read one denied packet: prefix[0..prefix_len) as NFLOG gave it (without
 * a NUL) and pkt[0..len), the packet from its IPv4 or IPv6 header on (the version
 * nibble decides). A prefix of sluice's shape, "sluice PROFILE REASON:"
 * optionally followed by one space, PROFILE and REASON each 1..31 bytes of
 * [a-z0-9_-], fills profile and reason; any other prefix is accepted too,
 * with both left "", and shown through prefix.
 *
 * An IP header cut short is an error; an L4 header cut short is not: the
 * addresses are kept, ports and flags are 0 and l4 says DENIED_L4_CUT. The
 * IPv4 total length and IPv6 payload length bound the packet when shorter
 * than len (0 is unknown: len bounds it). IPv6 hop-by-hop, routing, destination-options, fragment and AH
 * headers are walked, at most DENIED_EXT_MAX of them.
 *
 * Returns 0, or -1 with *err a static string ("truncated ipv4 header",
 * "ip version 7", "too many ipv6 extension headers"); the prefix fields
 * are filled either way, so a caller can still say whose refusal it was.
 */
int denied_parse(const char *prefix, size_t prefix_len, const uint8_t *pkt, size_t len,
		 struct denied *out, const char **err);

/*
 * Write r as one line, without a newline, into out (size bytes, NUL-ended).
 * Text:  "sandbox egress uid=65534 tcp 192.168.5.15:40312 -> 203.0.113.10:443"
 *        IPv6 with ports as "[fd00::1]:40312"; no ports (icmp, cut short,
 *        fragment): bare addresses, then " (cut short)" or " (fragment)"
 *        when that is why; a prefix not of sluice's shape shows as
 *        prefix "TEXT" in place of the profile and reason.
 * JSON:  {"profile":"sandbox","reason":"egress","uid":65534,"proto":"tcp",
 *        "src":"192.168.5.15","sport":40312,"dst":"203.0.113.10","dport":443}
 *        "prefix":"TEXT" in place of profile and reason when not ours;
 *        sport and dport only when known; "l4":"cut"|"fragment" when not.
 * uid appears only when has_uid. proto is tcp, udp, icmp, icmpv6, sctp, or
 * the protocol number (a string in JSON too). The JSON object always
 * starts with '{' followed by a member, so a caller adds a leading member
 * by writing "{\"time\":\"...\"," and then out + 1.
 * Returns 0, or -1 when the line does not fit (DENIED_LINE_MAX always does).
 */
int denied_format(const struct denied *r, uint32_t uid, bool has_uid, bool json, char *out,
		  size_t size);

#endif
