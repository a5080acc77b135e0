/*
 * sockaddr.h: socket addresses as text, both ways.
 *
 * One grammar for every ADDR:PORT the programs read (config's listen and
 * nameserver, sluice-forward's LISTEN=UPSTREAM and --wait, sluice verify,
 * sluice wall --forwarder); the flags say which of its forms a caller takes.
 * Numeric addresses only: no names, no inet_aton shorthands, no IPv6 zone
 * ids. Nothing here resolves, allocates or touches a socket.
 */
#ifndef SLUICE_SOCKADDR_H
#define SLUICE_SOCKADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* sockaddr_parse flags; 0 means "ADDR:PORT or [V6]:PORT, the port written" */
#define SOCKADDR_UNIX 0x1          /* "unix:PATH" too */
#define SOCKADDR_PORT_OPTIONAL 0x2 /* ":PORT" may be left off: then the default port */
#define SOCKADDR_NO_PORT 0x4       /* the address alone, no ":PORT": the default port */

/*
 * Parse s into ss. The forms:
 *   a.b.c.d:PORT    dotted quad (inet_pton's: no shorthands, no leading zeros)
 *   [V6]:PORT       an IPv6 address in brackets
 *   a.b.c.d, [V6], V6
 *                   with SOCKADDR_PORT_OPTIONAL or SOCKADDR_NO_PORT, at
 *                   default_port; an unbracketed V6 only then, since with a
 *                   port its last colon could be read two ways
 *   unix:PATH       with SOCKADDR_UNIX: an absolute PATH, no newline, that
 *                   fits sun_path (at most 107 bytes)
 * PORT is decimal digits only (leading zeros allowed), 1..65535.
 * Returns 0, or -1 when s is none of the forms allowed; ss is written only
 * on success. A caller that words a bad unix:PATH on its own tests the
 * "unix:" prefix itself.
 */
int sockaddr_parse(const char *s, unsigned flags, uint16_t default_port,
		   struct sockaddr_storage *ss);

/*
 * "127.0.0.1:3128", "[::1]:3128", "unix:/run/x.sock" ("unix" for an unnamed
 * peer; "?" for another family); buf at least 56 bytes, or 6 + 108 for a
 * unix path in full. Returns buf.
 */
char *sockaddr_format(const struct sockaddr_storage *ss, char *buf, size_t size);

/* Whether a and b name the same endpoint: family, address and port, or the unix path. */
/* The address bytes of an AF_INET or AF_INET6 ss (a struct in_addr or in6_addr). */
const void *sockaddr_bytes(const struct sockaddr_storage *ss);

bool sockaddr_same(const struct sockaddr_storage *a, const struct sockaddr_storage *b);

/*
 * The unit of addresses client (a sockaddr_format text, or a bare address)
 * belongs to, as text: all of loopback (127.0.0.0/8, ::1, their IPv4-mapped
 * forms) is "127.0.0.0/8"; another IPv4 address its /24 ("192.0.2.0/24");
 * an IPv6 address its /64 ("2001:db8:1:2::/64"); a unix socket's peer
 * "unix"; anything else (NULL too) "-". One client can send from many
 * addresses of its unit, rarely from many units.
 */
void sockaddr_unit(const char *client, char *out, size_t size);

#endif
