/*
 * test_ws_handshake.c: ws_offer_read, ws_accept_value and ws_answer_check.
 *
 * The accept value is checked against RFC 6455's own example (section
 * 1.3); offers and answers are built header by header, each value placed
 * right before a PROT_NONE page (guard.h) so an over-read faults.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "guard.h"
#include "ws_handshake.h"

#define KEY "dGhlIHNhbXBsZSBub25jZQ==" /* RFC 6455 1.3 */
#define ACCEPT "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="

static struct http_header hdrs[16];
static size_t nh;

static void hdr(const char *name, const char *value)
{
	hdrs[nh].name = guard_str(name);
	hdrs[nh].name_len = strlen(name);
	hdrs[nh].value = guard_str(value);
	hdrs[nh].value_len = strlen(value);
	nh++;
}

static void reset(void)
{
	nh = 0;
}

static void offer(struct ws_offer *o, const char *protocols, const char *extensions)
{
	const char *why = "unset";

	reset();
	hdr("Upgrade", "websocket");
	hdr("Connection", "keep-alive, Upgrade");
	hdr("Sec-WebSocket-Key", KEY);
	hdr("Sec-WebSocket-Version", "13");
	if (protocols != NULL)
		hdr("Sec-WebSocket-Protocol", protocols);
	if (extensions != NULL)
		hdr("Sec-WebSocket-Extensions", extensions);
	assert_true(ws_is_upgrade(hdrs, nh));
	assert_int_equal(ws_offer_read(hdrs, nh, o, &why), 0);
	assert_null(why);
}

static void test_accept_value(void **state)
{
	char out[WS_ACCEPT_LEN + 1];

	ws_accept_value(KEY, out);
	assert_string_equal(out, ACCEPT);
}

static void test_offer(void **state)
{
	struct ws_offer o;
	const char *why;

	offer(&o, "chat, superchat", "permessage-deflate; client_max_window_bits, x-foo");
	assert_string_equal(o.key, KEY);
	assert_string_equal(o.protocols, "chat, superchat");
	assert_string_equal(o.extensions, "permessage-deflate,x-foo");

	reset();
	hdr("Upgrade", "h2c");
	assert_false(ws_is_upgrade(hdrs, nh));

	static const struct {
		const char *name, *value, *why;
	} bad[] = {
		{ "Sec-WebSocket-Key", "short==", "no valid Sec-WebSocket-Key" },
		{ "Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ!=", "no valid Sec-WebSocket-Key" },
		{ "Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQxx", "no valid Sec-WebSocket-Key" },
		{ "Sec-WebSocket-Version", "8", "Sec-WebSocket-Version must be 13" },
		{ "Connection", "keep-alive", "Connection does not name upgrade" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		reset();
		hdr("Upgrade", "websocket");
		if (strcmp(bad[i].name, "Connection") != 0)
			hdr("Connection", "Upgrade");
		if (strcmp(bad[i].name, "Sec-WebSocket-Key") != 0)
			hdr("Sec-WebSocket-Key", KEY);
		if (strcmp(bad[i].name, "Sec-WebSocket-Version") != 0)
			hdr("Sec-WebSocket-Version", "13");
		hdr(bad[i].name, bad[i].value);
		why = NULL;
		assert_int_equal(ws_offer_read(hdrs, nh, &o, &why), -1);
		assert_string_equal(why, bad[i].why);
	}
	/* two versions, the last one 13 */
	reset();
	hdr("Connection", "Upgrade");
	hdr("Sec-WebSocket-Key", KEY);
	hdr("Sec-WebSocket-Version", "8");
	hdr("Sec-WebSocket-Version", "13");
	assert_int_equal(ws_offer_read(hdrs, nh, &o, &why), -1);
	assert_string_equal(why, "two Sec-WebSocket-Version headers");
	/* two keys */
	reset();
	hdr("Connection", "Upgrade");
	hdr("Sec-WebSocket-Key", KEY);
	hdr("Sec-WebSocket-Key", KEY);
	hdr("Sec-WebSocket-Version", "13");
	assert_int_equal(ws_offer_read(hdrs, nh, &o, &why), -1);
	assert_string_equal(why, "two Sec-WebSocket-Key headers");
	/* more offered than is kept */
	{
		char big[WS_OFFER_MAX + 8];

		memset(big, 'p', sizeof(big) - 1);
		big[sizeof(big) - 1] = '\0';
		reset();
		hdr("Connection", "Upgrade");
		hdr("Sec-WebSocket-Key", KEY);
		hdr("Sec-WebSocket-Version", "13");
		hdr("Sec-WebSocket-Protocol", big);
		assert_int_equal(ws_offer_read(hdrs, nh, &o, &why), -1);
		assert_string_equal(why, "too many subprotocols offered");
	}
}

static const char *answer(const struct ws_offer *o, const char *accept, const char *proto,
			  const char *ext)
{
	reset();
	hdr("Upgrade", "WebSocket");
	hdr("Connection", "Upgrade");
	if (accept != NULL)
		hdr("Sec-WebSocket-Accept", accept);
	if (proto != NULL)
		hdr("Sec-WebSocket-Protocol", proto);
	if (ext != NULL)
		hdr("Sec-WebSocket-Extensions", ext);
	return ws_answer_check(o, hdrs, nh);
}

static void test_answer(void **state)
{
	struct ws_offer o;

	offer(&o, "chat, superchat", "permessage-deflate; client_max_window_bits");
	assert_null(answer(&o, ACCEPT, NULL, NULL));
	assert_null(answer(&o, ACCEPT, "superchat", NULL));
	assert_null(answer(&o, ACCEPT, "chat", "permessage-deflate; server_no_context_takeover"));
	assert_string_equal(answer(&o, "s3pPLMBiTxaQ9kYGzzhZRbK+xOX=", NULL, NULL),
			    "its Sec-WebSocket-Accept is not the one for the client's key");
	assert_string_equal(answer(&o, NULL, NULL, NULL), "it has no Sec-WebSocket-Accept");
	assert_string_equal(answer(&o, ACCEPT, "other", NULL),
			    "it chose a subprotocol the client did not offer");
	assert_string_equal(answer(&o, ACCEPT, "chat, superchat", NULL),
			    "it chose a subprotocol the client did not offer");
	assert_string_equal(answer(&o, ACCEPT, NULL, "x-webkit-deflate-frame"),
			    "it chose an extension the client did not offer, or one twice");
	assert_string_equal(answer(&o, ACCEPT, NULL, "permessage-deflate, permessage-deflate"),
			    "it chose an extension the client did not offer, or one twice");
	/* two Sec-WebSocket-Protocol headers, each offered: still two */
	answer(&o, ACCEPT, "chat", NULL);
	hdr("Sec-WebSocket-Protocol", "superchat");
	assert_string_equal(ws_answer_check(&o, hdrs, nh), "it chose two subprotocols");

	/* no subprotocol offered: none may be chosen */
	offer(&o, NULL, NULL);
	assert_string_equal(answer(&o, ACCEPT, "chat", NULL),
			    "it chose a subprotocol the client did not offer");
	/* Upgrade or Connection missing */
	reset();
	hdr("Connection", "Upgrade");
	hdr("Sec-WebSocket-Accept", ACCEPT);
	assert_string_equal(ws_answer_check(&o, hdrs, nh),
			    "it does not say Upgrade: websocket and Connection: upgrade");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_accept_value),
		cmocka_unit_test(test_offer),
		cmocka_unit_test(test_answer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
