/*
 * alpn.h: reading a client's ALPN offer (RFC 7301), for the proxy's choice
 * of HTTP version (proxy/tls.c).
 *
 * Only h2 and http/1.1 are kept, each once, in the client's order, in wire
 * format (a length byte, then the name): what the proxy offers the
 * upstream for that client. Nothing else is read or allocated.
 */
#ifndef SLUICE_ALPN_H
#define SLUICE_ALPN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ALPN_OFFER_MAX (3 + 9) /* "\x02h2" and "\x08http/1.1" */

/*
 * p[0..len) is the extension's body: a two-byte list length, then
 * entries. The kept entries go to out (ALPN_OFFER_MAX bytes), their length
 * to *out_len (0 when the list is malformed). Returns whether h2 is kept.
 */
bool alpn_offer_read(const uint8_t *p, size_t len, uint8_t out[ALPN_OFFER_MAX], size_t *out_len);

#endif
