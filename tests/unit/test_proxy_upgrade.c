/*
 * test_proxy_upgrade.c: the WebSocket codec and state (proxy/upgrade.c),
 * driven without the loop: the connection's client and upstream are each
 * one end of a socket pair, the test the other ends, and upgrade_state's
 * step is called by hand until nothing moves.
 *
 * - The exchange's handshake: upgrade_request on a parsed request head
 *   (an offer kept; not a WebSocket: 0, nothing kept; a bad offer: 400
 *   through the codec), upgrade_response on the 101 (its accept value; an
 *   unasked 101 and a wrong accept: 502; a scrubbed host offers no
 *   extension upstream, so a 101 that picks one is refused), upgrade_begin
 *   (the codec and the state, the row's kind ws).
 * - The relay, plain: client frames up, server frames down after the 101,
 *   counted both ways; the server's end closes with the row.
 * - The relay, scrubbed (x->scrub set, as inject.c sets it for a host an
 *   inject rule names): the server's frames (a message in two fragments
 *   with a ping between them, a secret straddling them, then a close) fed
 *   split at every offset come out whole, the secret masked in both
 *   streams, the messages' bytes unchanged otherwise.
 * - ... the client's frames go up as they are, split anywhere; its end ends it.
 * - A masked frame from the server (which no server may send): a close
 *   frame 1002 to the client, the row saying why, the drain (our end shut).
 * - The codec: refuse closes with the row; rows_due only in upgrade_state.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proxy_fakes.h"
#include "request.h"
#include "scrub.h"
#include "session.h"
#include "ws_frame.h"

#define KEY "dGhlIHNhbXBsZSBub25jZQ=="
#define ACCEPT "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
#define SECRET "s3cret-value"

static const char offer_head[] = "GET /chat HTTP/1.1\r\n"
				 "Host: ws.test\r\n"
				 "Upgrade: websocket\r\n"
				 "Connection: Upgrade\r\n"
				 "Sec-WebSocket-Key: " KEY "\r\n"
				 "Sec-WebSocket-Version: 13\r\n"
				 "Sec-WebSocket-Extensions: permessage-deflate\r\n"
				 "\r\n";

static const char answer_head[] = "HTTP/1.1 101 Switching Protocols\r\n"
				  "Upgrade: websocket\r\n"
				  "Connection: Upgrade\r\n"
				  "Sec-WebSocket-Accept: " ACCEPT "\r\n"
				  "\r\n";

struct ws {
	struct fake_proxy *fp;
	struct session *s;
	struct exchange *x;
	int client; /* the client's end of the pair s->cfd is */
	int server; /* the server's end of the pair s->ufd is */
	struct http_request req;
	struct http_header hdrs[HEADERS_MAX];
	struct http_response resp;
	struct http_header rhdrs[HEADERS_MAX];
};

static void pair(int *ours, int *theirs)
{
	int sp[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sp), 0);
	*ours = sp[0];
	*theirs = sp[1];
}

/* A connection with an exchange begun and allowed, its head not parsed yet. */
static struct ws *ws_new(const char *conf)
{
	struct ws *w = calloc(1, sizeof(*w));

	assert_non_null(w);
	w->fp = fake_proxy_new(conf);
	w->s = fake_session_new(&w->fp->px, NULL);
	close(w->s->cfd);
	pair(&w->s->cfd, &w->client);
	pair(&w->s->ufd, &w->server);
	assert_int_equal(exchange_new(w->s), 0);
	w->x = w->s->x;
	w->x->active = true;
	w->x->decision = "allow";
	w->x->method = HTTP_GET;
	w->x->minor = 1;
	w->x->req = 1;
	w->x->t_start = loop_clock_ms();
	snprintf(w->x->t.host.name, sizeof(w->x->t.host.name), "ws.test");
	w->x->t.port = 80;
	memcpy(w->x->path, "/chat", 5);
	w->x->path_len = 5;
	return w;
}

static void ws_free(struct ws *w)
{
	close(w->client);
	close(w->server);
	fake_session_free(w->s);
	fake_proxy_free(w->fp);
	free(w);
}

static int request(struct ws *w, const char *head)
{
	assert_int_equal(http_parse_request(head, strlen(head), HEAD_MAX, &w->req, w->hdrs,
					    HEADERS_MAX),
			 (ssize_t)strlen(head));
	return upgrade_request(w->x, &w->req);
}

static int response(struct ws *w, const char *head)
{
	assert_int_equal(http_parse_response(head, strlen(head), RESP_HEAD_MAX, HTTP_GET, &w->resp,
					     w->rhdrs, HEADERS_MAX),
			 (ssize_t)strlen(head));
	return upgrade_response(w->x, &w->resp);
}

/* The host's answers are scrubbed, as inject.c sets them up for a rule's host. */
static void scrubbed(struct ws *w)
{
	const char *secrets[] = { SECRET };
	size_t lens[] = { sizeof(SECRET) - 1 };

	w->x->scrub = scrub_new(secrets, lens, 1);
	w->x->scrub_ctl = scrub_new(secrets, lens, 1);
	assert_non_null(w->x->scrub);
	assert_non_null(w->x->scrub_ctl);
	upgrade_scrubbed(w->x);
}

/* The handshake through, its 101 queued for the client, the relay begun. */
static struct ws *ws_open(bool scrub)
{
	struct ws *w = ws_new("");

	assert_int_equal(request(w, offer_head), 1);
	if (scrub)
		scrubbed(w);
	assert_int_equal(response(w, answer_head), 0);
	assert_int_equal(buf_append(&w->s->cout, answer_head, sizeof(answer_head) - 1), 0);
	upgrade_begin(w->x);
	assert_ptr_equal(w->s->codec, &upgrade_codec);
	assert_ptr_equal(w->s->st, &upgrade_state);
	assert_true(w->x->ws_open);
	assert_int_equal(w->x->status, 101);
	return w;
}

/* Run the state's step until the connection closes or leaves it, n times at most. */
static void steps(struct ws *w, int n)
{
	for (int i = 0; i < n && !w->s->closed && w->s->st->step != NULL; i++)
		w->s->st->step(w->s);
}

static void put(int fd, const void *p, size_t n)
{
	assert_int_equal(write(fd, p, n), (ssize_t)n);
}

/* What fd has to read now, appended to out (size bytes at most). Returns the new length. */
static size_t take(int fd, char *out, size_t len, size_t size)
{
	ssize_t n;

	while (len < size && (n = read(fd, out + len, size - len)) > 0)
		len += (size_t)n;
	return len;
}

/* The network log's lines holding needle. */
static size_t rows(const struct ws *w, const char *needle)
{
	char *log = fake_proxy_log(w->fp);
	size_t n = 0;

	for (char *line = strtok(log, "\n"); line != NULL; line = strtok(NULL, "\n"))
		if (strstr(line, needle) != NULL)
			n++;
	free(log);
	return n;
}

/* A server frame (unmasked) into out. Returns its length. */
static size_t frame(char *out, bool fin, enum ws_opcode op, const char *p, size_t n)
{
	size_t hl = ws_frame_write((uint8_t *)out, fin, op, n);

	memcpy(out + hl, p, n);
	return hl + n;
}

/* --- the handshake -------------------------------------------------------- */

static void test_handshake(void **state)
{
	struct ws *w;

	(void)state;
	/* not a WebSocket: the Upgrade is dropped, nothing kept */
	w = ws_new("");
	assert_int_equal(request(w, "GET / HTTP/1.1\r\nHost: ws.test\r\nUpgrade: h2c\r\n"
				    "Connection: Upgrade\r\n\r\n"),
			 0);
	assert_null(w->x->ws);
	/* ... so a 101 to it is one unasked: 502 */
	w->s->codec = &fake_codec;
	fake_refusals_reset();
	assert_int_equal(response(w, answer_head), -1);
	assert_int_equal(fake_refusals(), 1);
	assert_int_equal(fake_refused(0)->status, 502);
	assert_string_equal(fake_refused(0)->reason, "upstream-malformed");
	assert_string_equal(fake_refused(0)->detail, "ws.test switched protocols (101) unasked");
	ws_free(w);

	/* a bad offer (a POST): 400 through the codec, nothing sent */
	w = ws_new("");
	w->s->codec = &fake_codec;
	fake_refusals_reset();
	assert_int_equal(request(w, "POST /chat HTTP/1.1\r\nHost: ws.test\r\nUpgrade: websocket\r\n"
				    "Connection: Upgrade\r\nSec-WebSocket-Key: " KEY "\r\n"
				    "Sec-WebSocket-Version: 13\r\nContent-Length: 0\r\n\r\n"),
			 -1);
	assert_int_equal(fake_refusals(), 1);
	assert_int_equal(fake_refused(0)->status, 400);
	assert_string_equal(fake_refused(0)->detail,
			    "bad WebSocket handshake: it must be a GET over HTTP/1.1; nothing was sent");
	ws_free(w);

	/* a good offer, and a 101 with the wrong accept value: 502 */
	w = ws_new("");
	assert_int_equal(request(w, offer_head), 1);
	assert_non_null(w->x->ws);
	w->s->codec = &fake_codec;
	fake_refusals_reset();
	assert_int_equal(response(w, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
				     "Connection: Upgrade\r\n"
				     "Sec-WebSocket-Accept: AAAAAAAAAAAAAAAAAAAAAAAAAAA=\r\n\r\n"),
			 -1);
	assert_int_equal(fake_refusals(), 1);
	assert_int_equal(fake_refused(0)->status, 502);
	assert_non_null(strstr(fake_refused(0)->detail, "a 101 the client could not trust"));
	/* the extension the client offered may be picked, while nothing is scrubbed */
	assert_int_equal(response(w, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
				     "Connection: Upgrade\r\nSec-WebSocket-Accept: " ACCEPT "\r\n"
				     "Sec-WebSocket-Extensions: permessage-deflate\r\n\r\n"),
			 0);
	/* ... but not once the host is scrubbed: no extension was offered upstream */
	w->x->active = true; /* begun again: the refusal's row frees its scrubbers */
	scrubbed(w);
	assert_true(w->x->ws_scrubbed);
	assert_int_equal(response(w, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
				     "Connection: Upgrade\r\nSec-WebSocket-Accept: " ACCEPT "\r\n"
				     "Sec-WebSocket-Extensions: permessage-deflate\r\n\r\n"),
			 -1);
	assert_int_equal(fake_refusals(), 2);
	assert_int_equal(fake_refused(1)->status, 502);
	assert_null(w->x->scrub); /* its row written, its scrubbers gone (inject_end) */
	ws_free(w);
}

/* --- the relay ----------------------------------------------------------- */

static void test_plain_relay(void **state)
{
	static const char up_frame[] = "\x81\x85\x01\x02\x03\x04" "iffhn"; /* masked "hello" */
	char got[4096];
	char down[64];
	size_t n = 0, dn;
	struct ws *w;

	(void)state;
	w = ws_open(false);
	put(w->client, up_frame, sizeof(up_frame) - 1);
	dn = frame(down, true, WS_OP_TEXT, "world", 5);
	put(w->server, down, dn);
	for (int i = 0; i < 50 && n < sizeof(up_frame) - 1; i++) {
		steps(w, 1);
		n = take(w->server, got, n, sizeof(got));
	}
	/* the client's frame went up as it was */
	assert_int_equal(n, sizeof(up_frame) - 1);
	assert_memory_equal(got, up_frame, n);
	/* the 101 first, then the server's frame */
	n = 0;
	for (int i = 0; i < 50 && n < sizeof(answer_head) - 1 + dn; i++) {
		steps(w, 1);
		n = take(w->client, got, n, sizeof(got));
	}
	assert_int_equal(n, sizeof(answer_head) - 1 + dn);
	assert_memory_equal(got, answer_head, sizeof(answer_head) - 1);
	assert_memory_equal(got + sizeof(answer_head) - 1, down, dn);
	assert_int_equal(w->x->up, sizeof(up_frame) - 1);
	assert_int_equal(w->x->down, dn); /* the 101 head is its codec's (h1.c) to count */
	/* rows only while relaying; none due yet, none before the 101 */
	assert_ptr_equal(upgrade_codec.streams, NULL);
	/* the server ends: so does the WebSocket, with its one row (kind ws, 101) */
	shutdown(w->server, SHUT_WR);
	steps(w, 50);
	assert_true(w->s->closed);
	assert_int_equal(rows(w, "\"kind\":\"ws\""), 1);
	assert_int_equal(rows(w, "\"status\":101"), 1);
	assert_int_equal(rows(w, "websocket closed by the server"), 1);
	ws_free(w);
}

/* The frames of a stream the client got after the 101, parsed whole. */
struct frames {
	size_t n;
	bool fin[16];
	enum ws_opcode op[16];
	char payload[16][256];
	size_t len[16];
};

static void parse_frames(const char *p, size_t n, struct frames *fs)
{
	size_t o = 0;

	memset(fs, 0, sizeof(*fs));
	while (o < n) {
		struct ws_frame f;
		int hl = ws_frame_read((const uint8_t *)p + o, n - o, &f);

		assert_true(hl > 0);
		assert_true(o + (size_t)hl + f.len <= n); /* whole: no frame cut short */
		assert_true(fs->n < 16 && f.len < 256);
		fs->fin[fs->n] = f.fin;
		fs->op[fs->n] = f.opcode;
		memcpy(fs->payload[fs->n], p + o + hl, (size_t)f.len);
		fs->len[fs->n] = (size_t)f.len;
		fs->n++;
		o += (size_t)hl + (size_t)f.len;
	}
}

static void test_scrubbed_split(void **state)
{
	char server[512], got[4096];
	size_t sn = 0;

	(void)state;
	/* a text message in two fragments, the secret across them, a ping (the secret in it) between */
	sn += frame(server + sn, false, WS_OP_TEXT, "one s3cre", 9);
	sn += frame(server + sn, true, WS_OP_PING, "p " SECRET, 2 + sizeof(SECRET) - 1);
	sn += frame(server + sn, true, WS_OP_CONT, "t-value two", 11);
	sn += frame(server + sn, true, WS_OP_BINARY, "plain s3c", 9); /* held back, then flushed */
	for (size_t k = 0; k <= sn; k++) {
		struct ws *w = ws_open(true);
		struct frames fs;
		size_t n = 0;
		char msgs[2][256];
		size_t ml[2] = { 0, 0 }, nm = 0, pings = 0;
		enum ws_opcode mop[2];
		bool in = false;

		put(w->server, server, k);
		steps(w, 20);
		put(w->server, server + k, sn - k);
		shutdown(w->server, SHUT_WR);
		for (int i = 0; i < 50 && !w->s->closed; i++) {
			steps(w, 1);
			n = take(w->client, got, n, sizeof(got));
		}
		n = take(w->client, got, n, sizeof(got));
		assert_true(w->s->closed);
		assert_true(n >= sizeof(answer_head) - 1);
		assert_memory_equal(got, answer_head, sizeof(answer_head) - 1);
		parse_frames(got + sizeof(answer_head) - 1, n - (sizeof(answer_head) - 1), &fs);
		/* the messages, whatever their fragmentation: each begins with its opcode, goes on with
		   continuations and ends with FIN; their bytes the same but the secret's */
		for (size_t i = 0; i < fs.n; i++) {
			if (fs.op[i] == WS_OP_PING) {
				assert_true(fs.fin[i]);
				assert_int_equal(fs.len[i], 2 + sizeof(SECRET) - 1);
				assert_memory_equal(fs.payload[i], "p ************", fs.len[i]);
				pings++;
				continue;
			}
			assert_int_equal(fs.op[i] == WS_OP_CONT, in);
			if (!in) {
				assert_true(nm < 2);
				mop[nm++] = fs.op[i];
			}
			memcpy(msgs[nm - 1] + ml[nm - 1], fs.payload[i], fs.len[i]);
			ml[nm - 1] += fs.len[i];
			in = !fs.fin[i];
		}
		assert_false(in);
		assert_int_equal(pings, 1);
		assert_int_equal(nm, 2);
		assert_int_equal(mop[0], WS_OP_TEXT);
		assert_int_equal(ml[0], 20);
		assert_memory_equal(msgs[0], "one ************ two", 20);
		assert_int_equal(mop[1], WS_OP_BINARY);
		assert_int_equal(ml[1], 9);
		assert_memory_equal(msgs[1], "plain s3c", 9);
		/* the row: ws, the two occurrences scrubbed */
		assert_int_equal(rows(w, "\"kind\":\"ws\""), 1);
		assert_int_equal(rows(w, "\"scrubbed\":2"), 1);
		ws_free(w);
	}
}

/* A scrubbed WebSocket: the client's frames still go up as they are, split anywhere. */
static void test_scrubbed_from_client(void **state)
{
	/* two masked client frames (a text and a close), as a client sends them */
	static const char up[] = "\x81\x85\x01\x02\x03\x04" "iffhn"
				 "\x88\x82\x01\x02\x03\x04" "\x02\xea";
	char got[256];

	(void)state;
	for (size_t k = 0; k <= sizeof(up) - 1; k++) {
		struct ws *w = ws_open(true);
		size_t n = 0;

		put(w->client, up, k);
		steps(w, 5);
		n = take(w->server, got, n, sizeof(got));
		put(w->client, up + k, sizeof(up) - 1 - k);
		for (int i = 0; i < 20 && n < sizeof(up) - 1; i++) {
			steps(w, 1);
			n = take(w->server, got, n, sizeof(got));
		}
		assert_int_equal(n, sizeof(up) - 1);
		assert_memory_equal(got, up, n);
		assert_int_equal(w->x->up, sizeof(up) - 1);
		/* the client ends: so does the WebSocket */
		shutdown(w->client, SHUT_WR);
		steps(w, 20);
		assert_true(w->s->closed);
		assert_int_equal(rows(w, "websocket closed by the client"), 1);
		ws_free(w);
	}
}

static void test_masked_from_server(void **state)
{
	/* a masked text frame: no server may send one */
	static const char bad[] = "\x81\x85\x01\x02\x03\x04" "iffhn";
	static const char close_frame[] = "\x88\x25\x03\xea" "sluice: a bad frame from the server";
	char got[4096];
	size_t n = 0;
	struct ws *w = ws_open(true);
	ssize_t r;

	(void)state;
	put(w->server, bad, sizeof(bad) - 1);
	steps(w, 10);
	assert_ptr_equal(w->s->st, &session_drain_state);
	assert_int_equal(rows(w, "websocket: a bad frame from the server (a masked server frame); "
				 "closed"),
			 1);
	assert_int_equal(rows(w, "\"kind\":\"ws\""), 1);
	/* the drain: the close frame goes out, then our end (the client reads its end of stream) */
	steps(w, 10);
	n = take(w->client, got, n, sizeof(got));
	assert_int_equal(n, sizeof(answer_head) - 1 + sizeof(close_frame) - 1);
	assert_memory_equal(got + sizeof(answer_head) - 1, close_frame, sizeof(close_frame) - 1);
	r = read(w->client, got, sizeof(got));
	assert_int_equal(r, 0);
	/* ... and the client's end closes it */
	shutdown(w->client, SHUT_WR);
	steps(w, 10);
	assert_true(w->s->closed);
	assert_int_equal(rows(w, "\"kind\":\"ws\""), 1); /* one row still */
	ws_free(w);
}

/* --- the codec ------------------------------------------------------------ */

static void test_codec(void **state)
{
	struct refusal r = { .status = 403, .reason = "revoked" };
	struct ws *w;

	(void)state;
	/* a long WebSocket's rows are due only while it relays */
	w = ws_new("log-open-after 10\n");
	assert_int_equal(request(w, offer_head), 1);
	assert_int_equal(response(w, answer_head), 0);
	assert_int_equal(upgrade_codec.rows_due(w->s, w->fp->px.config), UINT64_MAX);
	upgrade_begin(w->x);
	assert_int_equal(upgrade_codec.rows_due(w->s, w->fp->px.config),
			 loop_now(w->fp->px.loop) + 10000);
	w->s->st = &session_drain_state;
	assert_int_equal(upgrade_codec.rows_due(w->s, w->fp->px.config), UINT64_MAX);
	w->s->st = &upgrade_state;
	/* refused past its 101 (a reload): closed, its one row saying so */
	snprintf(r.detail, sizeof(r.detail), "a reload refused ws.test");
	upgrade_codec.refuse(w->x, &r);
	assert_true(w->s->closed);
	assert_int_equal(rows(w, "\"decision\":\"refuse\""), 1);
	assert_int_equal(rows(w, "\"reason\":\"revoked\""), 1);
	assert_int_equal(rows(w, "a reload refused ws.test"), 1);
	assert_int_equal(rows(w, "\"kind\":\"ws\""), 1);
	ws_free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_handshake),
		cmocka_unit_test(test_plain_relay),
		cmocka_unit_test(test_scrubbed_split),
		cmocka_unit_test(test_scrubbed_from_client),
		cmocka_unit_test(test_masked_from_server),
		cmocka_unit_test(test_codec),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
