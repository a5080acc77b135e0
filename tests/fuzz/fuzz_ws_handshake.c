/*
 * fuzz_ws_handshake.c: ws_offer_read and ws_answer_check on arbitrary
 * header sections.
 *
 * The input is two header sections (split at the first NUL): the client's
 * request headers and the server's 101 headers, each parsed by http.c as
 * the proxy would. Beyond not crashing: an offer read holds a key of
 * WS_KEY_LEN characters and NUL-ended lists that fit; an answer built from
 * that offer's own accept value (and no choices) is accepted.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ws_handshake.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* "X / HTTP/1.1\r\n" + section, parsed; returns the header count or -1. */
static long headers_of(const char *prefix, const uint8_t *p, size_t n, char *buf, size_t cap,
		       struct http_header *h, size_t max, bool request)
{
	size_t pl = strlen(prefix);
	struct http_request req;
	struct http_response resp;

	if (pl + n + 4 > cap)
		return -1;
	memcpy(buf, prefix, pl);
	memcpy(buf + pl, p, n);
	memcpy(buf + pl + n, "\r\n\r\n", 4);
	if (request) {
		if (http_parse_request(buf, pl + n + 4, cap, &req, h, max) <= 0)
			return -1;
		return (long)req.nheaders;
	}
	if (http_parse_response(buf, pl + n + 4, cap, HTTP_GET, &resp, h, max) <= 0)
		return -1;
	return (long)resp.nheaders;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char rbuf[16384], abuf[16384];
	struct http_header rh[64], ah[64];
	const uint8_t *nul = memchr(data, 0, size);
	size_t rn = nul != NULL ? (size_t)(nul - data) : size;
	struct ws_offer o;
	const char *why = NULL;
	long nr, na;

	nr = headers_of("GET http://h/ HTTP/1.1\r\n", data, rn, rbuf, sizeof(rbuf), rh, 64, true);
	if (nr < 0)
		return 0;
	(void)ws_is_upgrade(rh, (size_t)nr);
	if (ws_offer_read(rh, (size_t)nr, &o, &why) == 0) {
		char accept[WS_ACCEPT_LEN + 1], good[128];
		struct http_header g[3] = {
			{ .name = "Upgrade", .name_len = 7, .value = "websocket", .value_len = 9 },
			{ .name = "Connection", .name_len = 10, .value = "Upgrade", .value_len = 7 },
			{ .name = "Sec-WebSocket-Accept", .name_len = 20 },
		};

		if (strlen(o.key) != WS_KEY_LEN || strlen(o.protocols) >= WS_OFFER_MAX ||
		    strlen(o.extensions) >= WS_OFFER_MAX || why != NULL)
			abort();
		ws_accept_value(o.key, accept);
		memcpy(good, accept, WS_ACCEPT_LEN);
		g[2].value = good;
		g[2].value_len = WS_ACCEPT_LEN;
		if (ws_answer_check(&o, g, 3) != NULL)
			abort();
		if (nul != NULL) {
			na = headers_of("HTTP/1.1 101 Switching Protocols\r\n", nul + 1,
					size - rn - 1, abuf, sizeof(abuf), ah, 64, false);
			if (na >= 0)
				(void)ws_answer_check(&o, ah, (size_t)na);
		}
	} else if (why == NULL) {
		abort();
	}
	return 0;
}
