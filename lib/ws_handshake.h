/*
 * ws_handshake.h: the two halves of a WebSocket opening handshake (RFC 6455
 * section 4), checked.
 *
 * ws_offer_read reads what a client's Upgrade request offers (its key,
 * subprotocols and extension names) and says what makes it no handshake;
 * ws_answer_check says whether a server's 101 answers that offer (Upgrade
 * and Connection, the accept value of the key, one offered subprotocol at
 * most, offered extensions only). Header bytes are hostile: both read only
 * inside the header values given, allocate nothing and do no I/O. Which
 * request is an Upgrade at all, and what happens after, is the caller's.
 */
#ifndef SLUICE_WS_HANDSHAKE_H
#define SLUICE_WS_HANDSHAKE_H

#include <stdbool.h>
#include <stddef.h>

#include "http.h"

#define WS_KEY_LEN 24    /* base64 of 16 bytes */
#define WS_ACCEPT_LEN 28 /* base64 of a SHA-1 */
#define WS_OFFER_MAX 512 /* the subprotocols, or the extension names, a client offers */

struct ws_offer {
	char key[WS_KEY_LEN + 1];
	char protocols[WS_OFFER_MAX];  /* every Sec-WebSocket-Protocol value, comma-joined */
	char extensions[WS_OFFER_MAX]; /* every extension name offered, comma-joined */
};

/*
 * Whether the request's headers ask for websocket (an Upgrade header whose
 * value is websocket, any case). Other upgrades are not this file's.
 */
bool ws_is_upgrade(const struct http_header *h, size_t n);

/*
 * Read the offer of a websocket Upgrade request (method, version and body
 * are the caller's to check). Returns 0, or -1 with *why (static text):
 * Connection does not name upgrade, no valid key (or two), a version other
 * than 13, more offered than WS_OFFER_MAX holds.
 */
int ws_offer_read(const struct http_header *h, size_t n, struct ws_offer *o, const char **why);

/* The Sec-WebSocket-Accept for key (WS_KEY_LEN characters) into out. */
void ws_accept_value(const char *key, char out[WS_ACCEPT_LEN + 1]);

/* Why a 101 with these headers does not answer o, or NULL when it does. */
const char *ws_answer_check(const struct ws_offer *o, const struct http_header *h, size_t n);

#endif
