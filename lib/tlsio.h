/*
 * tlsio.h: a TLS call's result the way read(2) and write(2) report theirs,
 * for code that drives non-blocking OpenSSL from an event loop (the
 * proxy, the benchmark's load client and origin).
 */
#ifndef SLUICE_TLSIO_H
#define SLUICE_TLSIO_H

#include <openssl/ssl.h>
#include <stdbool.h>
#include <sys/types.h>

/*
 * rc from SSL_read, SSL_write or SSL_do_handshake on ssl: n > 0 as is; 0
 * for the peer's close (close_notify, or an EOF without one); -1 with
 * errno, EAGAIN when TLS waits for readiness (then *want_write, if not
 * NULL, says whether it waits to write rather than to read), EPROTO for a
 * TLS error.
 */
ssize_t tlsio_result(SSL *ssl, int rc, bool *want_write);

#endif
