/*
 * tls_hello.h: the server name (SNI) a TLS ClientHello asks for, read
 * from the bytes a client sends first, for passthrough tunnels: nothing
 * goes upstream until the whole ClientHello is read and names the CONNECT
 * host.
 *
 * Client bytes are hostile: the parser allocates nothing, reads only
 * inside buf[0..len) and writes only into the caller's struct tls_hello.
 * It does not judge the name (tls.c compares it, canonically) and reads
 * nothing past the first handshake message.
 */
#ifndef SLUICE_TLS_HELLO_H
#define SLUICE_TLS_HELLO_H

#include <stdbool.h>
#include <stddef.h>

#define TLS_HELLO_NAME_MAX 255
/*
 * The ClientHello, its 4-byte handshake header included: one record's
 * payload at most (2^14). Hellos in use are far smaller, the largest with
 * a post-quantum key share (X25519MLKEM768, 1216 bytes of it) about 1.8 KB.
 */
#define TLS_HELLO_MAX 16384
/* The records carrying it, their 5-byte headers included: room for ~800 fragments. */
#define TLS_HELLO_WIRE_MAX (TLS_HELLO_MAX + 4096)

enum {
	TLS_HELLO_RETRY = 2, /* tls_hello_server: a HelloRetryRequest */
	TLS_HELLO_FOUND = 1, /* name holds the server name (printable ASCII, NUL-terminated) */
	TLS_HELLO_NONE = 0,  /* a well-formed ClientHello without a server name */
	TLS_HELLO_MORE = -1, /* a ClientHello so far: more bytes needed */
	TLS_HELLO_NOT = -2,  /* not a ClientHello, a malformed one, or one past the caps (why) */
};

struct tls_hello {
	unsigned char msg[TLS_HELLO_MAX]; /* the handshake message, reassembled from its records */
	size_t msg_len;                   /* bytes of msg filled */
	size_t wire; /* FOUND, NONE: the bytes of buf it took, up to its last record's end */
	char name[TLS_HELLO_NAME_MAX + 1];
	const char *why; /* NOT: what was wrong (a static string, lower case) */
};

/*
 * Read the first handshake message from the TLS records at the start of
 * buf[0..len): reassembled across records (and so across reads: call
 * again with the longer buffer), then parsed whole. It must end where a
 * record ends (the ClientHello is alone in its flight), so h->wire bytes
 * are exactly its own. Returns one of the values above; a decision other
 * than MORE never changes with more bytes. MORE is returned only while
 * len < TLS_HELLO_WIRE_MAX.
 */
int tls_hello_read(struct tls_hello *h, const void *buf, size_t len);

/*
 * The same for the second ClientHello, the answer to a HelloRetryRequest:
 * one change_cipher_spec record (20 3 3 0 1 1) may come before it, and
 * counts in h->wire.
 */
int tls_hello_read_again(struct tls_hello *h, const void *buf, size_t len);

/*
 * The server's first bytes: RETRY when they are a HelloRetryRequest (a
 * ServerHello whose random is RFC 8446's constant, so the client will send
 * a second ClientHello in clear), NONE for anything else (a ServerHello,
 * an alert, bytes that are not TLS), MORE while that cannot be told.
 * Server bytes are hostile too: read as strictly bounded as the client's.
 */
int tls_hello_server(struct tls_hello *h, const void *buf, size_t len);

#endif
