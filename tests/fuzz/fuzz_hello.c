/*
 * fuzz_hello.c: tls_hello_read (and tls_hello_read_again,
 * tls_hello_server) on arbitrary bytes. Beyond not crashing: a name it
 * finds is printable ASCII; "more" only below TLS_HELLO_WIRE_MAX; a
 * prefix that already decides decides as the whole does (the proxy reads
 * hellos as they arrive); the bytes a hello took are within the input;
 * and the message it reassembled, cut again into records of another size,
 * reads the same.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tls_hello.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct tls_hello whole, part;
static uint8_t wire[TLS_HELLO_WIRE_MAX];

static void same(int r, const struct tls_hello *a, int q, const struct tls_hello *b)
{
	if (r != q || (r == TLS_HELLO_FOUND && strcmp(a->name, b->name) != 0))
		abort();
}

/* The message in records of frag bytes each (type 22, version 3.1). Returns its length or 0. */
static size_t reframe(const struct tls_hello *h, size_t frag)
{
	size_t n = 0;

	for (size_t at = 0; at < h->msg_len; at += frag) {
		size_t k = h->msg_len - at < frag ? h->msg_len - at : frag;

		if (n + 5 + k > sizeof(wire))
			return 0;
		wire[n++] = 22;
		wire[n++] = 3;
		wire[n++] = 1;
		wire[n++] = (uint8_t)(k >> 8);
		wire[n++] = (uint8_t)k;
		memcpy(wire + n, h->msg + at, k);
		n += k;
	}
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int r = tls_hello_read(&whole, data, size), q;

	if (r == TLS_HELLO_FOUND) {
		size_t n = strlen(whole.name);

		if (n == 0 || n > TLS_HELLO_NAME_MAX)
			abort();
		for (size_t i = 0; i < n; i++)
			if (whole.name[i] <= 0x20 || whole.name[i] >= 0x7f)
				abort();
	}
	if (r == TLS_HELLO_MORE && size >= TLS_HELLO_WIRE_MAX)
		abort();
	if (r == TLS_HELLO_NOT && whole.why == NULL)
		abort();
	if (size > 0) {
		size_t cut[2] = { size / 2, (size_t)data[0] % size };

		for (int i = 0; i < 2; i++) {
			q = tls_hello_read(&part, data, cut[i]);
			if (q != TLS_HELLO_MORE)
				same(r, &whole, q, &part);
		}
	}
	if ((r == TLS_HELLO_FOUND || r == TLS_HELLO_NONE) && (whole.wire == 0 || whole.wire > size))
		abort();
	/* the second ClientHello's reader and the server's, with the same prefix rule */
	q = tls_hello_read_again(&part, data, size);
	if ((q == TLS_HELLO_FOUND || q == TLS_HELLO_NONE) && (part.wire == 0 || part.wire > size))
		abort();
	if (size > 0 && tls_hello_read_again(&whole, data, size / 2) != TLS_HELLO_MORE &&
	    tls_hello_read_again(&whole, data, size / 2) != q)
		abort();
	q = tls_hello_server(&part, data, size);
	if (q == TLS_HELLO_MORE && size >= TLS_HELLO_WIRE_MAX)
		abort();
	if (size > 0) {
		int p = tls_hello_server(&part, data, size / 2);

		if (p != TLS_HELLO_MORE && p != q)
			abort();
	}
	r = tls_hello_read(&whole, data, size);
	if (r == TLS_HELLO_FOUND || r == TLS_HELLO_NONE) {
		size_t n = reframe(&whole, 1 + (size_t)data[size - 1] % 700);

		if (n > 0) {
			q = tls_hello_read(&part, wire, n);
			same(r, &whole, q, &part);
		}
	}
	return 0;
}
