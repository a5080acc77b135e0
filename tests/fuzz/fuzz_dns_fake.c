/*
 * fuzz_dns_fake.c: lib/dns_fake.c on arbitrary messages, read as an
 * upstream's answer and, when it matches, rewritten.
 *
 * Beyond not crashing: a match names A or AAAA, a non-empty name, a
 * question end inside the message; the rewrite reads back as a response
 * with one question, NOERROR, the question's bytes as they came, and for A
 * exactly one A record naming the address given (none for AAAA); a short
 * buffer is refused, never overrun.
 */
#include <stdlib.h>
#include <string.h>

#include "dns_fake.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t addr[4] = { 240, 0, 0, 7 };
	static uint8_t out[DNS_HEADER_LEN + 2 * (DNS_NAME_MAX + 2) + 64];
	struct dns_fake_q q;
	long n;

	if (dns_fake_match(data, size, &q) != 1)
		return 0;
	if ((q.qtype != DNS_T_A && q.qtype != DNS_T_AAAA) || q.name_len == 0 ||
	    q.name_len != strlen(q.name) || q.qend > size || q.qend < DNS_HEADER_LEN + 5)
		abort();
	if (dns_fake_write(data, &q, addr, 10, out, q.qend - 1) != -1)
		abort();
	n = dns_fake_write(data, &q, addr, 10, out, sizeof(out));
	if (n < 0 || (size_t)n != q.qend + (q.qtype == DNS_T_A ? 16 : 0))
		abort();
	if (!(out[2] & 0x80) || (out[3] & 0x0f) != 0 || out[5] != 1 || out[4] != 0 ||
	    out[7] != (q.qtype == DNS_T_A) || out[6] != 0 || memcmp(out + 8, "\0\0\0\0", 4) != 0 ||
	    memcmp(out + DNS_HEADER_LEN, data + DNS_HEADER_LEN, q.qend - DNS_HEADER_LEN) != 0)
		abort();
	if (q.qtype == DNS_T_A && memcmp(out + n - 4, addr, 4) != 0)
		abort();
	return 0;
}
