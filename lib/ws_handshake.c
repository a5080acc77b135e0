/*
 * ws_handshake.c: a WebSocket opening handshake's two halves, checked
 * (ws_handshake.h). The key's accept value is SHA-1 and base64 from
 * libcrypto; list matching is http.c's.
 */
#include "ws_handshake.h"

#include <openssl/evp.h>
#include <openssl/sha.h>
#include <string.h>

static const char ws_guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/* Append v[0..n) to a comma-joined list. Returns 0, or -1 when it does not fit. */
static int list_add(char *list, const char *v, size_t n)
{
	size_t len = strlen(list);

	if (len + (len > 0) + n + 1 > WS_OFFER_MAX)
		return -1;
	if (len > 0)
		list[len++] = ',';
	memcpy(list + len, v, n);
	list[len + n] = '\0';
	return 0;
}

/* The extension names of a Sec-WebSocket-Extensions value (parameters dropped) onto list. */
static int extension_names(char *list, const char *v, size_t n)
{
	size_t i = 0;

	while (i < n) {
		size_t start;

		while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
			i++;
		start = i;
		while (i < n && v[i] != ';' && v[i] != ',' && v[i] != ' ' && v[i] != '\t')
			i++;
		if (i > start && list_add(list, v + start, i - start) == -1)
			return -1;
		while (i < n && v[i] != ',')
			i++; /* its parameters */
	}
	return 0;
}

static bool key_valid(const struct http_header *h)
{
	unsigned char raw[18];

	if (h->value_len != WS_KEY_LEN || h->value[WS_KEY_LEN - 2] != '=' ||
	    h->value[WS_KEY_LEN - 1] != '=')
		return false;
	/* 24 base64 characters decode to 18 bytes, the last two padding: 16 */
	return EVP_DecodeBlock(raw, (const unsigned char *)h->value, WS_KEY_LEN) == 18;
}

bool ws_is_upgrade(const struct http_header *h, size_t n)
{
	bool websocket = false;

	for (size_t i = 0; i < n; i++)
		if (http_header_is(&h[i], "Upgrade"))
			websocket = http_value_is(&h[i], "websocket");
	return websocket;
}

int ws_offer_read(const struct http_header *h, size_t n, struct ws_offer *o, const char **why)
{
	const struct http_header *key = NULL, *version = NULL;
	bool conn_upgrade = false;

	memset(o, 0, sizeof(*o));
	for (size_t i = 0; i < n; i++) {
		if (http_header_is(&h[i], "Connection")) {
			conn_upgrade |= http_list_has(h[i].value, h[i].value_len, "upgrade", 7);
		} else if (http_header_is(&h[i], "Sec-WebSocket-Key")) {
			if (key != NULL) {
				*why = "two Sec-WebSocket-Key headers";
				return -1;
			}
			key = &h[i];
		} else if (http_header_is(&h[i], "Sec-WebSocket-Version")) {
			if (version != NULL) {
				*why = "two Sec-WebSocket-Version headers";
				return -1;
			}
			version = &h[i];
		} else if (http_header_is(&h[i], "Sec-WebSocket-Protocol")) {
			if (list_add(o->protocols, h[i].value, h[i].value_len) == -1) {
				*why = "too many subprotocols offered";
				return -1;
			}
		} else if (http_header_is(&h[i], "Sec-WebSocket-Extensions")) {
			if (extension_names(o->extensions, h[i].value, h[i].value_len) == -1) {
				*why = "too many extensions offered";
				return -1;
			}
		}
	}
	if (!conn_upgrade)
		*why = "Connection does not name upgrade";
	else if (key == NULL || !key_valid(key))
		*why = "no valid Sec-WebSocket-Key";
	else if (version == NULL || !http_value_is(version, "13"))
		*why = "Sec-WebSocket-Version must be 13";
	else
		*why = NULL;
	if (*why != NULL)
		return -1;
	memcpy(o->key, key->value, WS_KEY_LEN);
	return 0;
}

void ws_accept_value(const char *key, char out[WS_ACCEPT_LEN + 1])
{
	unsigned char md[SHA_DIGEST_LENGTH];
	char in[WS_KEY_LEN + sizeof(ws_guid)];

	memcpy(in, key, WS_KEY_LEN);
	memcpy(in + WS_KEY_LEN, ws_guid, sizeof(ws_guid) - 1);
	SHA1((const unsigned char *)in, WS_KEY_LEN + sizeof(ws_guid) - 1, md);
	EVP_EncodeBlock((unsigned char *)out, md, SHA_DIGEST_LENGTH);
}

/*
 * Whether every extension the server named (into chosen, across its
 * Sec-WebSocket-Extensions headers) is one the client offered, and none
 * twice.
 */
static bool extensions_offered(const struct ws_offer *o, const struct http_header *h,
			       char chosen[WS_OFFER_MAX])
{
	char names[WS_OFFER_MAX] = "";
	size_t at = 0, len;

	if (extension_names(names, h->value, h->value_len) == -1)
		return false;
	for (len = strlen(names); at < len;) {
		size_t n = strcspn(names + at, ",");

		if (!http_list_has(o->extensions, strlen(o->extensions), names + at, n) ||
		    http_list_has(chosen, strlen(chosen), names + at, n) ||
		    list_add(chosen, names + at, n) == -1)
			return false;
		at += n + 1;
	}
	return true;
}

const char *ws_answer_check(const struct ws_offer *o, const struct http_header *h, size_t n)
{
	char want[WS_ACCEPT_LEN + 1];
	bool websocket = false, conn_upgrade = false, accepted = false, protocol = false;
	char chosen[WS_OFFER_MAX] = "";

	ws_accept_value(o->key, want);
	for (size_t i = 0; i < n; i++) {
		if (http_header_is(&h[i], "Upgrade")) {
			websocket = http_value_is(&h[i], "websocket");
		} else if (http_header_is(&h[i], "Connection")) {
			conn_upgrade |= http_list_has(h[i].value, h[i].value_len, "upgrade", 7);
		} else if (http_header_is(&h[i], "Sec-WebSocket-Accept")) {
			if (accepted || h[i].value_len != WS_ACCEPT_LEN ||
			    memcmp(h[i].value, want, WS_ACCEPT_LEN) != 0)
				return "its Sec-WebSocket-Accept is not the one for the client's key";
			accepted = true;
		} else if (http_header_is(&h[i], "Sec-WebSocket-Protocol")) {
			if (protocol)
				return "it chose two subprotocols";
			protocol = true;
			if (memchr(h[i].value, ',', h[i].value_len) != NULL ||
			    !http_list_has(o->protocols, strlen(o->protocols), h[i].value,
					   h[i].value_len))
				return "it chose a subprotocol the client did not offer";
		} else if (http_header_is(&h[i], "Sec-WebSocket-Extensions")) {
			if (!extensions_offered(o, &h[i], chosen))
				return "it chose an extension the client did not offer, or one twice";
		}
	}
	if (!websocket || !conn_upgrade)
		return "it does not say Upgrade: websocket and Connection: upgrade";
	if (!accepted)
		return "it has no Sec-WebSocket-Accept";
	return NULL;
}
