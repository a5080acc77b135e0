/*
 * test_proxy_tunnel.c: a CONNECT's tunnel, its state and its codec
 * (proxy/tunnel.c; a passthrough's refused hello, proxy/hello.c), on a
 * connection whose client is one end of a socket pair and whose upstream
 * the end of another (real descriptors, no network, nothing in epoll: the
 * test runs session_pump where the loop would).
 *
 * - tunnel_begin: the tunnel's codec and state; our 200 reaches the client
 *   before anything the origin sent; the bytes the client sent behind its
 *   CONNECT head (cin) go up before anything it sends later.
 * - Both directions relay the bytes split at every offset, whole and in
 *   order; the row counts them, our 200 not among the bytes down.
 * - The upstream's end is passed on to the client, its row written before
 *   the client can read the end; the client may still send after it, and
 *   the tunnel's close writes no second row.
 * - tunnel_codec.refuse past the 200: the row with the refusal's reason
 *   and detail and the bytes moved, no status line to the client, the
 *   upstream closed at once, the drain.
 * - tunnel_codec.close counts the bytes of a tunnel closed midway.
 * - rows_due and rows_write: a long tunnel's rows only past its hellos.
 * - A passthrough host's hellos passing (hello.c): the ClientHello alone up, the
 *   server's answer to the client, then both ways; its row names the server name.
 * - A passthrough's ClientHello not whole by head-timeout: sni-unreadable, the drain.
 * - A passthrough host's ClientHello naming another host (hello.c), split
 *   at every offset: nothing goes up, the tunnel codec refuses it (row
 *   sni-mismatch, a TLS alert to the client after our 200, the drain).
 *   This needs interception active: a CA made fresh in the proxy's state
 *   directory.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ca.h"
#include "host.h"
#include "proxy_fakes.h"
#include "request.h"

#define OK_LEN (sizeof(TUNNEL_OK) - 1)

/* A tunnel's connection and the peers' ends of its two socket pairs. */
struct tn {
	struct fake_proxy *fp;
	struct session *s;
	struct exchange *x;
	int client; /* the client's end: s->cfd is the other */
	int server; /* the origin's end: s->ufd is the other */
};

/*
 * A connection of fp whose allowed CONNECT to host:443 (its exchange
 * begun as exchange_start leaves one) has its upstream up: what
 * tunnel_begin is called on.
 */
static struct tn tn_new(struct fake_proxy *fp, const char *host)
{
	struct tn t = { .fp = fp };
	const char *err = NULL;
	int cs[2], us[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, cs), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, us), 0);
	t.s = fake_session_new(&fp->px, NULL);
	close(t.s->cfd);
	t.s->cfd = cs[0];
	t.client = cs[1];
	t.s->ufd = us[0];
	t.server = us[1];
	t.s->up_ready = true;
	assert_int_equal(exchange_new(t.s), 0);
	t.x = t.s->x;
	t.x->active = true;
	t.x->t_start = loop_clock_ms();
	t.x->dns_ms = t.x->connect_ms = -1;
	t.x->req = ++t.s->nreq;
	t.x->method = HTTP_CONNECT;
	t.x->minor = 1;
	t.x->decision = "allow";
	t.x->reason = "granted";
	assert_int_equal(host_canon(host, strlen(host), &t.x->t.host, &err), 0);
	t.x->t.port = 443;
	t.x->t.via = GRANT_VIA_CONNECT;
	return t;
}

/* The connection freed (closed first unless it is), the peers' ends closed. */
static void tn_free(struct tn *t)
{
	fake_session_free(t->s);
	close(t->client);
	close(t->server);
}

static void put(int fd, const void *p, size_t n)
{
	if (n > 0)
		assert_int_equal(write(fd, p, n), (ssize_t)n);
}

/* What fd holds now, appended at out + *len (at most size in all); *eof: it ended. */
static void take(int fd, char *out, size_t size, size_t *len, bool *eof)
{
	for (;;) {
		ssize_t n = recv(fd, out + *len, size - *len, MSG_DONTWAIT);

		if (n > 0) {
			*len += (size_t)n;
			assert_true(*len < size);
			continue;
		}
		if (n == 0) {
			if (eof != NULL)
				*eof = true;
			return;
		}
		assert_int_equal(errno, EAGAIN);
		return;
	}
}

/* The log's last row (caller frees); "" when none. */
static char *last_row(const struct fake_proxy *fp)
{
	char *log = fake_proxy_log(fp), *last;
	size_t len = strlen(log);

	if (len == 0)
		return log;
	assert_true(log[len - 1] == '\n');
	log[len - 1] = '\0';
	last = strrchr(log, '\n');
	last = strdup(last != NULL ? last + 1 : log);
	free(log);
	return last;
}

static size_t nrows(const struct fake_proxy *fp)
{
	char *log = fake_proxy_log(fp);
	size_t n = fake_count(log, "\n");

	free(log);
	return n;
}

/* Assert the log's last row holds each needle (NULL-terminated). */
static void assert_row(const struct fake_proxy *fp, const char *const *needles)
{
	char *row = last_row(fp);

	for (size_t i = 0; needles[i] != NULL; i++) {
		if (strstr(row, needles[i]) == NULL)
			print_error("row %s\nlacks %s\n", row, needles[i]);
		assert_non_null(strstr(row, needles[i]));
	}
	free(row);
}

/* tunnel_begin and the pump that sends our 200 (read by the client here, checked whole). */
static void begin_and_greet(struct tn *t)
{
	char got[256];
	size_t len = 0;

	tunnel_begin(t->x);
	session_pump(t->s);
	take(t->client, got, sizeof(got), &len, NULL);
	assert_int_equal(len, OK_LEN);
	assert_memory_equal(got, TUNNEL_OK, OK_LEN);
}

/* --- its beginning --------------------------------------------------------------- */

static void test_begin(void **state)
{
	struct fake_proxy *fp = fake_proxy_new("");
	struct tn t = tn_new(fp, "example.test");
	char got[256];
	size_t len = 0;

	/* the client sent bytes behind its CONNECT head; the origin speaks first (a banner) */
	assert_int_equal(buf_append(&t.s->cin, "EARLY", 5), 0);
	put(t.server, "BANNER", 6);
	tunnel_begin(t.x);
	assert_ptr_equal(t.s->codec, &tunnel_codec);
	assert_ptr_equal(t.s->st, &tunnel_state);
	assert_int_equal(t.x->status, 200);
	assert_true(t.x->resp_started);
	assert_non_null(t.s->tun);
	assert_int_equal(t.s->tun->hello, HELLO_DONE); /* no interception: no hellos to read */
	assert_int_equal(nrows(fp), 0);

	/* our 200 alone to the client; the early bytes up */
	session_pump(t.s);
	take(t.client, got, sizeof(got), &len, NULL);
	assert_int_equal(len, OK_LEN);
	assert_memory_equal(got, TUNNEL_OK, OK_LEN);
	len = 0;
	take(t.server, got, sizeof(got), &len, NULL);
	assert_int_equal(len, 5);
	assert_memory_equal(got, "EARLY", 5);
	assert_int_equal(buf_len(&t.s->cin), 0);

	/* then the banner, behind the 200 */
	session_pump(t.s);
	len = 0;
	take(t.client, got, sizeof(got), &len, NULL);
	assert_int_equal(len, 6);
	assert_memory_equal(got, "BANNER", 6);
	assert_false(t.s->closed);
	tn_free(&t);
	fake_proxy_free(fp);
}

/* --- relaying, split at every offset ------------------------------------------- */

static void test_relay_split(void **state)
{
	static const char up[] = "GET / HTTP/1.1\r\nHost: example.test\r\n\r\nup-bytes";
	static const char down[] = "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\ndown";
	const size_t ulen = sizeof(up) - 1, dlen = sizeof(down) - 1;
	struct fake_proxy *fp = fake_proxy_new("");

	for (size_t k = 0; k <= ulen || k <= dlen; k++) {
		size_t ku = k <= ulen ? k : ulen, kd = k <= dlen ? k : dlen;
		struct tn t = tn_new(fp, "example.test");
		char got[512], row[64];
		size_t len = 0;
		bool eof = false;

		assert_int_equal(buf_append(&t.s->cin, "EARLY", 5), 0);
		begin_and_greet(&t);
		/* up: the early bytes, then the client's in two pieces */
		put(t.client, up, ku);
		session_pump(t.s);
		take(t.server, got, sizeof(got), &len, NULL);
		assert_int_equal(len, 5 + ku);
		put(t.client, up + ku, ulen - ku);
		session_pump(t.s);
		take(t.server, got, sizeof(got), &len, NULL);
		assert_int_equal(len, 5 + ulen);
		assert_memory_equal(got, "EARLY", 5);
		assert_memory_equal(got + 5, up, ulen);

		/* down: the origin's in two pieces */
		len = 0;
		put(t.server, down, kd);
		session_pump(t.s);
		take(t.client, got, sizeof(got), &len, NULL);
		assert_int_equal(len, kd);
		put(t.server, down + kd, dlen - kd);
		session_pump(t.s);
		take(t.client, got, sizeof(got), &len, NULL);
		assert_int_equal(len, dlen);
		assert_memory_equal(got, down, dlen);

		/* both end: one row, the bytes each way (our 200 not among them) */
		assert_int_equal(shutdown(t.server, SHUT_WR), 0);
		assert_int_equal(shutdown(t.client, SHUT_WR), 0);
		for (int i = 0; i < 4 && !t.s->closed; i++)
			session_pump(t.s);
		assert_true(t.s->closed);
		take(t.client, got, sizeof(got), &len, &eof);
		assert_true(eof);
		snprintf(row, sizeof(row), "\"up\":%zu,", 5 + ulen);
		assert_row(fp, (const char *const[]){ "\"kind\":\"tunnel\"", "\"host\":\"example.test\"",
						      row, NULL });
		snprintf(row, sizeof(row), "\"down\":%zu,", dlen);
		assert_row(fp, (const char *const[]){ row, "\"detail\":\"closed\"", NULL });
		assert_int_equal(nrows(fp), k + 1);
		tn_free(&t);
	}
	fake_proxy_free(fp);
}

/* --- the upstream's end: the row first ----------------------------------------- */

static void test_upstream_end(void **state)
{
	struct fake_proxy *fp = fake_proxy_new("");
	struct tn t = tn_new(fp, "example.test");
	char got[256];
	size_t len = 0;
	bool eof = false;
	int i;

	begin_and_greet(&t);
	put(t.client, "ASK", 3);
	session_pump(t.s);
	take(t.server, got, sizeof(got), &len, NULL);
	assert_int_equal(len, 3);
	put(t.server, "BYE", 3);
	assert_int_equal(shutdown(t.server, SHUT_WR), 0);
	assert_int_equal(nrows(fp), 0);

	/* the client reads the answer, then its end: by then the row is in the log */
	len = 0;
	for (i = 0; i < 4 && !eof; i++) {
		session_pump(t.s);
		take(t.client, got, sizeof(got), &len, &eof);
	}
	assert_true(eof);
	assert_int_equal(len, 3);
	assert_memory_equal(got, "BYE", 3);
	assert_int_equal(nrows(fp), 1);
	assert_row(fp, (const char *const[]){ "\"kind\":\"tunnel\"", "\"up\":3,", "\"down\":3,",
					      "\"decision\":\"allow\"", "\"detail\":\"closed\"", NULL });
	assert_false(t.s->closed);
	assert_ptr_equal(t.s->st, &tunnel_state);

	/* the client may still send: it goes up */
	put(t.client, "LATE", 4);
	session_pump(t.s);
	len = 0;
	take(t.server, got, sizeof(got), &len, NULL);
	assert_int_equal(len, 4);
	assert_memory_equal(got, "LATE", 4);

	/* its end closes the tunnel; the row is not written twice */
	assert_int_equal(shutdown(t.client, SHUT_WR), 0);
	for (i = 0; i < 4 && !t.s->closed; i++)
		session_pump(t.s);
	assert_true(t.s->closed);
	assert_int_equal(nrows(fp), 1);
	tn_free(&t);
	fake_proxy_free(fp);
}

/* --- the codec: its refusal, its close, its rows ----------------------------- */

static void test_codec_refuse(void **state)
{
	struct fake_proxy *fp = fake_proxy_new("");
	struct tn t = tn_new(fp, "example.test");
	struct refusal r = { .status = 403, .reason = "budget", .proxy_status = "http_request_denied" };
	char got[256];
	size_t len = 0;
	bool eof = false;

	begin_and_greet(&t);
	put(t.client, "UP", 2);
	put(t.server, "DOWNDOWN", 8);
	session_pump(t.s);
	session_pump(t.s);
	take(t.client, got, sizeof(got), &len, NULL);
	assert_int_equal(len, 8);
	len = 0;
	take(t.server, got, sizeof(got), &len, NULL);
	assert_int_equal(len, 2);

	/* refused past its 200: the row at once, with what moved */
	snprintf(r.detail, sizeof(r.detail), "max-up spent: the tunnel was closed");
	exchange_refuse(t.x, &r);
	assert_int_equal(nrows(fp), 1);
	assert_row(fp, (const char *const[]){ "\"kind\":\"tunnel\"", "\"decision\":\"refuse\"",
					      "\"reason\":\"budget\"", "\"up\":2,", "\"down\":8,",
					      "\"detail\":\"max-up spent: the tunnel was closed\"",
					      NULL });
	assert_ptr_equal(t.s->st, &session_drain_state);
	assert_int_equal(t.s->ufd, -1); /* the upstream closed at once */
	len = 0;
	take(t.server, got, sizeof(got), &len, &eof);
	assert_true(eof);
	assert_int_equal(len, 0);

	/* the drain: nothing more to the client (no status line), then its end */
	eof = false;
	for (int i = 0; i < 4 && !eof; i++) {
		session_pump(t.s);
		take(t.client, got, sizeof(got), &len, &eof);
	}
	assert_true(eof);
	assert_int_equal(len, 0);
	assert_true(t.s->lingering);
	tn_free(&t);
	assert_int_equal(nrows(fp), 1); /* the close writes no second row */
	fake_proxy_free(fp);
}

static void test_codec_close(void **state)
{
	struct fake_proxy *fp = fake_proxy_new("");
	struct tn t = tn_new(fp, "example.test");
	char got[256];
	size_t len = 0;

	assert_int_equal(buf_append(&t.s->cin, "EARLY", 5), 0);
	begin_and_greet(&t);
	put(t.client, "0123456789", 10);
	put(t.server, "abcdefg", 7);
	session_pump(t.s);
	session_pump(t.s);
	take(t.client, got, sizeof(got), &len, NULL);
	assert_int_equal(len, 7);
	assert_int_equal(nrows(fp), 0);

	/*
	 * closed midway (the client hung up, say): the row counts what moved, not our 200,
	 * and the close counts it again (what a step that closes moved was not counted yet)
	 */
	t.s->tun->to_up.bytes += 100;
	t.s->tun->to_cli.bytes += 20;
	session_close(t.s, "client hung up");
	assert_int_equal(nrows(fp), 1);
	assert_row(fp, (const char *const[]){ "\"up\":115,", "\"down\":27,", "\"decision\":\"allow\"",
					      "\"detail\":\"client hung up\"", NULL });
	tn_free(&t);
	fake_proxy_free(fp);
}

static void test_codec_rows(void **state)
{
	static const enum hello_phase hellos[] = { HELLO_CLIENT, HELLO_SERVER, HELLO_RETRY };
	struct fake_proxy *fp = fake_proxy_new("log-open-after 5\n");
	const struct config *c = fp->px.config;
	struct tn t = tn_new(fp, "example.test");
	uint64_t now;

	begin_and_greet(&t);
	now = session_now(t.s);
	/* relaying for 6 s: its open row is due 1 s ago */
	t.x->t_start = (double)now - 6000;
	assert_int_equal(tunnel_codec.rows_due(t.s, c), now - 1000);
	assert_int_equal(tunnel_codec.rows_due(t.s, c), longrow_due(t.x, c));

	/* during a passthrough's hellos: none due, none written */
	for (size_t i = 0; i < sizeof(hellos) / sizeof(hellos[0]); i++) {
		t.s->tun->hello = hellos[i];
		assert_true(tunnel_codec.rows_due(t.s, c) == UINT64_MAX);
		tunnel_codec.rows_write(t.s, c);
		assert_int_equal(nrows(fp), 0);
	}

	/* past them: the open row */
	t.s->tun->hello = HELLO_DONE;
	tunnel_codec.rows_write(t.s, c);
	assert_int_equal(nrows(fp), 1);
	assert_row(fp, (const char *const[]){ "\"kind\":\"open\"", "\"of\":\"tunnel\"", NULL });
	tn_free(&t);
	fake_proxy_free(fp);
}

/* --- a passthrough's refused ClientHello (hello.c) --------------------------- */

/* A ServerHello, not a HelloRetryRequest, one record, into m (64 bytes). Returns its length. */
static size_t server_hello(uint8_t *m)
{
	size_t o = 0;

	memcpy(m, "\x16\x03\x03", 3), o = 3;
	o += fake_put16(m + o, 42);
	m[o++] = 2, m[o++] = 0;
	o += fake_put16(m + o, 38);
	m[o++] = 3, m[o++] = 3;
	memset(m + o, 0x5a, 32), o += 32;
	m[o++] = 0;                    /* no session id */
	o += fake_put16(m + o, 0x2f);       /* its suite */
	m[o++] = 0;                    /* null compression */
	return o;
}

/* A proxy whose interception is active (a CA made fresh), conf its config. */
static struct fake_proxy *intercepting(const char *conf)
{
	struct fake_proxy *fp = fake_proxy_new(conf);
	const char *err = NULL;

	assert_int_equal(ca_create(fp->dir, &err), 0);
	assert_int_equal(tls_init(&fp->px), 0);
	assert_true(tls_active(&fp->px));
	return fp;
}

static void test_passthrough_refused_hello(void **state)
{
	static const uint8_t alert[] = { 21, 3, 3, 0, 2, 2, 112 }; /* fatal unrecognized_name */
	struct fake_proxy *fp = intercepting("intercept on\npassthrough example.test\n");
	uint8_t hello[512];
	size_t hlen = fake_client_hello(hello, "other.test");

	for (size_t k = 0; k < hlen; k++) {
		struct tn t = tn_new(fp, "example.test");
		char got[256];
		size_t len = 0;
		bool eof = false;

		begin_and_greet(&t);
		assert_int_equal(t.s->tun->hello, HELLO_CLIENT);
		/* not whole yet: read on, nothing up, no row */
		put(t.client, hello, k);
		session_pump(t.s);
		assert_int_equal(t.s->tun->hello, HELLO_CLIENT);
		assert_ptr_equal(t.s->st, &tunnel_state);
		take(t.server, got, sizeof(got), &len, NULL);
		assert_int_equal(len, 0);
		assert_int_equal(nrows(fp), k);

		/* whole, naming another host: refused by the tunnel codec */
		put(t.client, hello + k, hlen - k);
		session_pump(t.s);
		assert_int_equal(nrows(fp), k + 1);
		assert_row(fp, (const char *const[]){ "\"kind\":\"tunnel\"", "\"decision\":\"refuse\"",
						      "\"reason\":\"sni-mismatch\"",
						      "\"detail\":\"passthrough: the TLS ClientHello "
						      "names other.test, not the CONNECT host\"",
						      NULL });
		assert_true(t.s->st == &session_drain_state || t.s->closed);
		/* the alert after our 200, then the end; nothing of the hello went up */
		for (int i = 0; i < 4 && !eof; i++) {
			take(t.client, got, sizeof(got), &len, &eof);
			if (!eof && !t.s->closed)
				session_pump(t.s);
		}
		assert_true(eof);
		assert_int_equal(len, sizeof(alert));
		assert_memory_equal(got, alert, sizeof(alert));
		len = 0;
		eof = false;
		take(t.server, got, sizeof(got), &len, &eof);
		assert_true(eof);
		assert_int_equal(len, 0);
		tn_free(&t);
	}
	tls_release(&fp->px);
	fake_proxy_free(fp);
}

static void test_passthrough_relays(void **state)
{
	struct fake_proxy *fp = intercepting("passthrough example.test\n");
	const struct config *c = fp->px.config;
	struct tn t = tn_new(fp, "example.test");
	uint8_t hello[512], sh[64];
	size_t hlen = fake_client_hello(hello, "example.test"), slen = server_hello(sh);
	char got[1024];
	size_t len = 0;
	bool eof = false;

	begin_and_greet(&t);
	assert_int_equal(t.s->tun->hello, HELLO_CLIENT);
	assert_true(tunnel_codec.rows_due(t.s, c) == UINT64_MAX);
	/* the ClientHello and what the client sends behind it: the hello alone goes up */
	put(t.client, hello, hlen);
	put(t.client, "APP", 3);
	session_pump(t.s);
	take(t.server, got, sizeof(got), &len, NULL);
	assert_int_equal(len, hlen);
	assert_memory_equal(got, hello, hlen);
	assert_int_equal(t.s->tun->hello, HELLO_SERVER);
	assert_true(tunnel_codec.rows_due(t.s, c) == UINT64_MAX);

	/* the server's answer, not a retry: to the client, then everything relays */
	put(t.server, sh, slen);
	put(t.server, "SRV", 3);
	for (int i = 0; i < 4; i++)
		session_pump(t.s);
	assert_int_equal(t.s->tun->hello, HELLO_DONE);
	assert_true(tunnel_codec.rows_due(t.s, c) != UINT64_MAX);
	len = 0;
	take(t.client, got, sizeof(got), &len, NULL);
	assert_int_equal(len, slen + 3);
	assert_memory_equal(got, sh, slen);
	assert_memory_equal(got + slen, "SRV", 3);
	len = 0;
	take(t.server, got, sizeof(got), &len, NULL);
	assert_int_equal(len, 3);
	assert_memory_equal(got, "APP", 3);

	/* both end: the row names the server name the hello gave */
	assert_int_equal(shutdown(t.server, SHUT_WR), 0);
	assert_int_equal(shutdown(t.client, SHUT_WR), 0);
	for (int i = 0; i < 4 && !t.s->closed; i++)
		session_pump(t.s);
	assert_true(t.s->closed);
	take(t.client, got, sizeof(got), &len, &eof);
	assert_true(eof);
	assert_int_equal(nrows(fp), 1);
	snprintf(got, sizeof(got), "\"up\":%zu,", hlen + 3);
	assert_row(fp, (const char *const[]){ "\"decision\":\"allow\"", got,
					      "\"detail\":\"passthrough; TLS server name example.test\"",
					      NULL });
	snprintf(got, sizeof(got), "\"down\":%zu,", slen + 3);
	assert_row(fp, (const char *const[]){ got, NULL });
	tn_free(&t);
	tls_release(&fp->px);
	fake_proxy_free(fp);
}

static void test_passthrough_hello_late(void **state)
{
	struct fake_proxy *fp = intercepting("passthrough example.test\n");
	const struct config *c = fp->px.config;
	struct tn t = tn_new(fp, "example.test");
	uint8_t hello[512];
	size_t len = 0;
	char got[256], detail[160];
	bool eof = false;

	fake_client_hello(hello, "example.test");
	begin_and_greet(&t);
	put(t.client, hello, 20);
	session_pump(t.s);
	assert_int_equal(t.s->tun->hello, HELLO_CLIENT);
	/* its deadline, head-timeout from the 200; passed: the tunnel codec's refusal */
	assert_int_equal(tunnel_state.due(t.s, c), t.s->tun->hello_ms + c->head_timeout_ms);
	tunnel_state.timeout(t.s, c);
	snprintf(detail, sizeof(detail),
		 "\"detail\":\"passthrough: no whole TLS ClientHello within %u s (20 bytes)\"",
		 c->head_timeout_ms / 1000);
	assert_int_equal(nrows(fp), 1);
	assert_row(fp, (const char *const[]){ "\"decision\":\"refuse\"",
					      "\"reason\":\"sni-unreadable\"", detail, NULL });
	assert_ptr_equal(t.s->st, &session_drain_state);
	for (int i = 0; i < 4 && !eof; i++) {
		session_pump(t.s);
		take(t.client, got, sizeof(got), &len, &eof);
	}
	assert_true(eof);
	assert_int_equal(len, 0); /* no alert: no whole record came */
	tn_free(&t);
	tls_release(&fp->px);
	fake_proxy_free(fp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_begin),
		cmocka_unit_test(test_relay_split),
		cmocka_unit_test(test_upstream_end),
		cmocka_unit_test(test_codec_refuse),
		cmocka_unit_test(test_codec_close),
		cmocka_unit_test(test_codec_rows),
		cmocka_unit_test(test_passthrough_refused_hello),
		cmocka_unit_test(test_passthrough_relays),
		cmocka_unit_test(test_passthrough_hello_late),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
