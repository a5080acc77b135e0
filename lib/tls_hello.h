/*
 * tls_hello.h: the server name (SNI) a TLS ClientHello asks for, read
 * from the bytes a client sends first, for passthrough tunnels: the row
 * names the SNI, and one that is not the CONNECT host is refused.
 *
 * Client bytes are hostile: the parser allocates nothing and reads only
 * inside buf[0..len).
 */
#ifndef SLUICE_TLS_HELLO_H
#define SLUICE_TLS_HELLO_H

#include <stdbool.h>
#include <stddef.h>

#define TLS_HELLO_NAME_MAX 255

enum {
	TLS_HELLO_FOUND = 1, /* out holds the name (printable ASCII, NUL-terminated) */
	TLS_HELLO_NONE = 0,  /* a ClientHello without a server name */
	TLS_HELLO_MORE = -1, /* not enough bytes yet for the first record */
	TLS_HELLO_NOT = -2,  /* not a TLS ClientHello in one record, or a malformed one */
};

/* Read the first TLS record of buf[0..len); out has size bytes (TLS_HELLO_NAME_MAX + 1 suffices). */
int tls_hello_sni(const void *buf, size_t len, char *out, size_t size);

#endif
