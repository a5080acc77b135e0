/*
 * host.h: one canonical spelling for every host a request can name.
 *
 * Names become lower-case A-labels (IDNA 2008 through libidn2) without a
 * trailing dot; IPv4 literals in any spelling inet_aton(3) accepts (127.1,
 * 0x7f.1, 2130706433, 0177.0.0.1) become dotted quads; IPv6 literals
 * (bracketed or not) become RFC 5952 text, and IPv4-mapped IPv6 becomes the
 * IPv4 address. IPv6 zone ids are refused. No DNS, no allocation.
 */
#ifndef SLUICE_HOST_H
#define SLUICE_HOST_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HOST_NAME_MAX_LEN 253

enum host_kind {
	HOST_NAME,
	HOST_IPV4,
	HOST_IPV6,
};

struct host {
	enum host_kind kind;
	char name[HOST_NAME_MAX_LEN + 1]; /* canonical text, NUL-terminated; IPv6
					     without brackets ("2001:db8::1") */
	union {
		struct in_addr v4;  /* HOST_IPV4 */
		struct in6_addr v6; /* HOST_IPV6 */
	} addr;
};

/*
 * Canonicalise in[0..len) (not NUL-terminated). Returns 0, or -1 with
 * *err set to a static message ("zone id refused", "bad name", ...).
 * A name whose last label is all digits (or 0x-hex) must parse as an IPv4
 * literal or it is refused. Labels: 1-63 bytes of [a-z0-9-_] after IDNA,
 * not starting or ending with '-'; total at most 253.
 */
int host_canon(const char *in, size_t len, struct host *out, const char **err);

/* host_port_split and host_port_number flags */
#define HOST_PORT_NO_ZERO 0x1   /* no leading zero, as a request target spells a port */
#define HOST_PORT_ANY_ZEROS 0x2 /* leading zeros past five digits too (sockaddr.h's texts) */

/* "host[:port]" or "[v6][:port]", split by host_port_split; the host not yet judged. */
struct host_port {
	const char *host;  /* into the input: between the brackets, or before the colon */
	size_t host_len;
	bool bracketed;    /* the host was written in brackets */
	bool has_port;
	uint16_t port;     /* 1-65535 when has_port, else 0 */
};

/*
 * The one host:port splitter: in[0..len) as "host[:port]" or "[v6][:port]"
 * into *out (pointers into in). Unbracketed text with two or more colons
 * is a bare IPv6 literal, which carries no port. After ']' only ":port" or
 * the end. The port as host_port_number reads it. The host is not judged:
 * host_canon, inet_pton or the caller's own byte class does that. Returns 0,
 * or -1 with *err: "empty host" (len 0), "unclosed '['", "junk after ']'",
 * "bad port".
 */
int host_port_split(const char *in, size_t len, unsigned flags, struct host_port *out,
		    const char **err);

/*
 * The one port reader: s[0..len), decimal digits only, 1-65535; at most
 * five digits, leading zeros counted, unless flags say otherwise
 * (HOST_PORT_NO_ZERO: none leading; HOST_PORT_ANY_ZEROS: any number of them).
 * No sign, no blanks. Returns 0, or -1 with *port untouched.
 */
int host_port_number(const char *s, size_t len, unsigned flags, uint16_t *port);

/*
 * Split and canonicalise "host[:port]" or "[v6][:port]" (host_port_split). When no port is
 * written, *port is default_port and *has_port false. Port must be 1-65535
 * in decimal digits. Returns 0 or -1 with *err.
 */
int host_port_parse(const char *in, size_t len, uint16_t default_port, struct host *out,
		    uint16_t *port, bool *has_port, const char **err);

/* host_port_format's port for "no port": the host alone (still bracketed) */
#define HOST_PORT_NONE 0x10000u

/* The longest host_port_format text of a canonical host, without the NUL: "[" 253 "]:65535". */
#define HOST_PORT_TEXT_MAX (HOST_NAME_MAX_LEN + 8)

/*
 * The one host:port writer: "host:port", or "[host]:port" when host holds a
 * ':' (an IPv6 literal as host_canon and inet_ntop spell it, unbracketed; one
 * already in brackets gets a second pair: callers pass the bare text). port
 * is written in decimal; HOST_PORT_NONE writes the host alone ("[::1]",
 * "a.test"). Like snprintf into out[0..size): returns the length of the text,
 * or -1 when it did not fit (out then holds the text cut short, NUL-terminated
 * when size > 0).
 */
int host_port_format(char *out, size_t size, const char *host, unsigned port);

/* Whether two canonical hosts are the same host. */
bool host_equal(const struct host *a, const struct host *b);

#endif
