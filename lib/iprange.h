/*
 * iprange.h: CIDR ranges and the destination deny list.
 *
 * The deny list is BRIEF.md's: private, loopback, link-local, CGNAT,
 * multicast, reserved, and every IPv6 form that embeds or translates an
 * IPv4 address (mapped, compatible, NAT64, 6to4, Teredo). The
 * documentation ranges stay reachable. Pure functions, no allocation.
 */
#ifndef SLUICE_IPRANGE_H
#define SLUICE_IPRANGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct ipnet {
	int family;       /* AF_INET or AF_INET6 */
	uint8_t addr[16]; /* network bytes; 4 used for AF_INET; host bits zero */
	uint8_t prefix;   /* 0-32 or 0-128 */
};

/*
 * Parse "a.b.c.d/n", "v6/n", or a bare address (a /32 or /128). Dotted
 * quads only here (no inet_aton shorthands): this reads config, not
 * requests. Returns 0 or -1 with *err. Host bits set in the address are an
 * error ("host bits set in 10.0.0.1/8"; that message lives in a static
 * buffer valid until the next call). IPv6 zone ids are refused.
 */
int ipnet_parse(const char *s, size_t len, struct ipnet *out, const char **err);

/* Format as "10.0.0.0/8" into buf (at least 50 bytes). Returns buf. */
char *ipnet_format(const struct ipnet *n, char *buf, size_t size);

/* Whether addr (family, 4 or 16 network bytes) lies inside n. */
bool ipnet_contains(const struct ipnet *n, int family, const void *addr);

/*
 * The deny-list range that holds addr, as text ("10.0.0.0/8"), or NULL if
 * the address is not denied. For an IPv6 address embedding IPv4 the
 * embedding range itself is reported ("::ffff:0:0/96", "64:ff9b::/96").
 * If out is not NULL the matching range is copied there.
 */
const char *iprange_denied(int family, const void *addr, struct ipnet *out);

/* The i-th range of the deny list (i from 0), or NULL past its end: walls render it too. */
const struct ipnet *iprange_deny_list(size_t i);

/* Format an address (4 or 16 bytes) as text; buf at least 46 bytes. */
char *ipaddr_format(int family, const void *addr, char *buf, size_t size);

#endif
