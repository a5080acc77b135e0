/*
 * test_proxy_hello.c: a passthrough tunnel's hellos (proxy/hello.c,
 * tls_hello_step), the client's bytes fed through a pipe split at every
 * offset and the server played on the other end of a socket pair: the
 * ClientHello read until whole, nothing of it going up before; then only
 * its own bytes go up, what the client sent after it held in cin; the
 * server's first message read whole (split at every offset too) and held
 * until it is known not to be a HelloRetryRequest, then passed to the
 * client, the tunnel free to relay; after a HelloRetryRequest the second
 * ClientHello (its change_cipher_spec first) read and judged the same
 * way; the row's detail naming the server name. (A refused hello, which the tunnel codec says,
 * is test_proxy_tunnel.c's.)
 *
 * tls_hello_step takes the session; ctx_new below is the one place that
 * knows which of its fields the hellos read.
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

#include "host.h"
#include "proxy_fakes.h"
#include "request.h"

struct ctx {
	struct fake_proxy *fp;
	struct session s;
	struct exchange x;
	struct tunnel tun;
	int client; /* the client's end of the pipe s->cfd reads */
	int server; /* the server's end of the socket pair s->ufd is */
};

static struct ctx *ctx_new(const char *host)
{
	struct ctx *c = calloc(1, sizeof(*c));
	const char *err = NULL;
	int p[2], sp[2];

	assert_non_null(c);
	c->fp = fake_proxy_new("");
	assert_int_equal(pipe2(p, O_NONBLOCK | O_CLOEXEC), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sp), 0);
	c->s.px = &c->fp->px;
	c->s.cfd = p[0];
	c->client = p[1];
	c->s.ufd = sp[0];
	c->server = sp[1];
	c->s.st = &tunnel_state;
	c->s.codec = &tunnel_codec;
	c->s.x = &c->x;
	c->x.conn = &c->s;
	c->s.tun = &c->tun;
	c->tun.hello = HELLO_CLIENT;
	assert_int_equal(host_canon(host, strlen(host), &c->x.t.host, &err), 0);
	c->x.t.port = 443;
	buf_init(&c->s.cin, HEAD_MAX);
	buf_init(&c->s.cout, IOBUF_MAX);
	buf_init(&c->s.uin, IOBUF_MAX);
	return c;
}

static void ctx_free(struct ctx *c)
{
	loop_timer_cancel(c->fp->px.loop, &c->s.timer);
	close(c->s.cfd);
	close(c->client);
	close(c->s.ufd);
	close(c->server);
	buf_release(&c->s.cin);
	buf_release(&c->s.cout);
	buf_release(&c->s.uin);
	fake_proxy_free(c->fp);
	free(c);
}

/* A ServerHello (with retry, a HelloRetryRequest: RFC 8446's random), one record, into m. */
static size_t server_hello_as(uint8_t *m, bool retry)
{
	static const uint8_t hrr[32] = {
		0xcf, 0x21, 0xad, 0x74, 0xe5, 0x9a, 0x61, 0x11, 0xbe, 0x1d, 0x8c,
		0x02, 0x1e, 0x65, 0xb8, 0x91, 0xc2, 0xa2, 0x11, 0x16, 0x7a, 0xbb,
		0x8c, 0x5e, 0x07, 0x9e, 0x09, 0xe2, 0xc8, 0xa8, 0x33, 0x9c,
	};
	size_t o = 0;

	m[o++] = 22, m[o++] = 3, m[o++] = 3;
	o += fake_put16(m + o, 42);
	m[o++] = 2, m[o++] = 0;
	o += fake_put16(m + o, 38);
	m[o++] = 3, m[o++] = 3;
	if (retry)
		memcpy(m + o, hrr, 32);
	else
		memset(m + o, 0x5a, 32);
	o += 32;
	m[o++] = 0;
	m[o++] = 0, m[o++] = 0x2f;
	m[o++] = 0;
	return o;
}

static size_t server_hello(uint8_t *m)
{
	return server_hello_as(m, false);
}

static void put(int fd, const void *p, size_t n)
{
	if (n > 0)
		assert_int_equal(write(fd, p, n), (ssize_t)n);
}

/* What the server end holds now (none: 0). */
static size_t server_got(struct ctx *c, uint8_t *out, size_t size)
{
	ssize_t n = recv(c->server, out, size, MSG_DONTWAIT);

	if (n == -1) {
		assert_int_equal(errno, EAGAIN);
		return 0;
	}
	return (size_t)n;
}

static void test_client_hello_split(void **state)
{
	uint8_t hello[512], got[1024];
	size_t len = fake_client_hello(hello, "example.test");

	/* every split of the ClientHello, then bytes of the client's after it */
	for (size_t k = 0; k <= len; k++) {
		struct ctx *c = ctx_new("example.test");

		put(c->client, hello, k);
		assert_int_equal(tls_hello_step(&c->s), 0);
		if (k < len) {
			/* not whole: nothing up, the client read on */
			assert_int_equal(c->tun.hello, HELLO_CLIENT);
			assert_true(c->tun.to_up.want_read);
			assert_int_equal(server_got(c, got, sizeof(got)), 0);
			assert_int_equal(buf_len(&c->s.cin), k);
			put(c->client, hello + k, len - k);
			put(c->client, "EARLY", 5);
			assert_int_equal(tls_hello_step(&c->s), 0);
		}
		/* whole: the ClientHello alone went up; the server's answer is awaited */
		assert_int_equal(c->tun.hello, HELLO_SERVER);
		assert_false(c->tun.to_up.want_read);
		assert_true(c->tun.to_cli.want_read);
		assert_int_equal(server_got(c, got, sizeof(got)), len);
		assert_memory_equal(got, hello, len);
		assert_int_equal(c->tun.to_up.bytes, len);
		assert_int_equal(buf_len(&c->s.cin), k < len ? 5 : 0);
		assert_string_equal(c->x.detail, "passthrough; TLS server name example.test");
		ctx_free(c);
	}
}

static void test_server_hello_split(void **state)
{
	uint8_t hello[512], sh[128], got[1024];
	size_t len = fake_client_hello(hello, "Example.TEST."), slen = server_hello(sh);

	for (size_t k = 0; k <= slen; k++) {
		struct ctx *c = ctx_new("example.test");

		/* the name compared canonically: Example.TEST. is example.test */
		put(c->client, hello, len);
		put(c->client, "AFTER", 5);
		assert_int_equal(tls_hello_step(&c->s), 0);
		assert_int_equal(c->tun.hello, HELLO_SERVER);
		assert_int_equal(server_got(c, got, sizeof(got)), len);
		put(c->server, sh, k);
		assert_int_equal(tls_hello_step(&c->s), 0);
		if (k < slen) {
			/* the server's first message not whole: held, nothing to the client */
			assert_int_equal(c->tun.hello, HELLO_SERVER);
			assert_true(c->tun.to_cli.want_read);
			assert_int_equal(buf_len(&c->s.cout), 0);
			assert_int_equal(buf_len(&c->s.uin), k);
			put(c->server, sh + k, slen - k);
			assert_int_equal(tls_hello_step(&c->s), 0);
		}
		/* not a retry: to the client, the tunnel relays freely, the client's bytes waiting */
		assert_int_equal(c->tun.hello, HELLO_DONE);
		assert_false(c->tun.to_cli.want_read);
		assert_int_equal(buf_len(&c->s.cout), slen);
		assert_memory_equal(buf_head(&c->s.cout), sh, slen);
		assert_int_equal(buf_len(&c->s.uin), 0);
		assert_int_equal(buf_len(&c->s.cin), 5);
		assert_memory_equal(buf_head(&c->s.cin), "AFTER", 5);
		assert_int_equal(server_got(c, got, sizeof(got)), 0);
		assert_string_equal(c->x.detail, "passthrough; TLS server name Example.TEST.");
		/* done: a step more does nothing */
		assert_int_equal(tls_hello_step(&c->s), 0);
		assert_int_equal(c->tun.hello, HELLO_DONE);
		ctx_free(c);
	}
}

static void test_byte_by_byte(void **state)
{
	uint8_t hello[512], got[1024];
	size_t len = fake_client_hello(hello, "a.example.test");
	struct ctx *c = ctx_new("a.example.test");

	for (size_t i = 0; i < len; i++) {
		assert_int_equal(c->tun.hello, HELLO_CLIENT);
		put(c->client, hello + i, 1);
		assert_int_equal(tls_hello_step(&c->s), 0);
	}
	assert_int_equal(c->tun.hello, HELLO_SERVER);
	assert_int_equal(server_got(c, got, sizeof(got)), len);
	assert_memory_equal(got, hello, len);
	assert_int_equal(c->tun.to_up.taken, len); /* what its budget counts */
	ctx_free(c);
}

static void test_retry(void **state)
{
	uint8_t hello[512], again[512], hrr[128], got[1024];
	size_t len = fake_client_hello(hello, "example.test"), hlen = server_hello_as(hrr, true);
	size_t alen;

	/* the second ClientHello after the compatibility mode's change_cipher_spec */
	memcpy(again, "\x14\x03\x03\x00\x01\x01", 6);
	alen = 6 + fake_client_hello(again + 6, "example.test");
	for (size_t k = 0; k <= alen; k++) {
		struct ctx *c = ctx_new("example.test");

		put(c->client, hello, len);
		assert_int_equal(tls_hello_step(&c->s), 0);
		assert_int_equal(server_got(c, got, sizeof(got)), len);
		/* a HelloRetryRequest: to the client, and the second ClientHello judged too */
		put(c->server, hrr, hlen);
		assert_int_equal(tls_hello_step(&c->s), 0);
		assert_int_equal(c->tun.hello, HELLO_RETRY);
		assert_int_equal(buf_len(&c->s.cout), hlen);
		assert_memory_equal(buf_head(&c->s.cout), hrr, hlen);
		put(c->client, again, k);
		assert_int_equal(tls_hello_step(&c->s), 0);
		if (k < alen) {
			assert_int_equal(c->tun.hello, HELLO_RETRY);
			assert_true(c->tun.to_up.want_read);
			put(c->client, again + k, alen - k);
			assert_int_equal(tls_hello_step(&c->s), 0);
		}
		/* judged: the relay sends it on (nothing went up meanwhile) */
		assert_int_equal(c->tun.hello, HELLO_DONE);
		assert_int_equal(buf_len(&c->s.cin), alen);
		assert_int_equal(server_got(c, got, sizeof(got)), 0);
		assert_string_equal(c->x.detail, "passthrough; TLS server name example.test, again "
						 "after a HelloRetryRequest");
		ctx_free(c);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_client_hello_split),
		cmocka_unit_test(test_server_hello_split),
		cmocka_unit_test(test_byte_by_byte),
		cmocka_unit_test(test_retry),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
