/*
 * fuzz_dns_answer.c: lib/dns_answer.c on arbitrary messages, each read as
 * the answer to its own question (so the fuzzer reaches the records), then
 * written back with dns_name_write.
 *
 * Beyond not crashing: what it keeps reads back as records, uncompressed
 * (each owner a run of labels, ten fixed bytes, rdlength bytes inside the
 * kept bytes), exactly as many as it counts, of the asked type or CNAME,
 * A of 4 bytes and AAAA of 16; min_ttl is UINT32_MAX only when none was kept,
 * and never over 2^31-1 otherwise (RFC 2181: such a TTL is zero).
 */
#include <stdlib.h>
#include <string.h>

#include "dns_answer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct dns_answer a;

static void check(uint16_t qtype)
{
	size_t off = 0;
	unsigned n = 0;

	while (off < a.len) {
		uint16_t type, rdlen;

		while (off < a.len && a.rrs[off] != 0) {
			if (a.rrs[off] > 63)
				abort();
			off += 1 + a.rrs[off];
		}
		off++;
		if (off + 10 > a.len)
			abort();
		type = (uint16_t)(a.rrs[off] << 8 | a.rrs[off + 1]);
		rdlen = (uint16_t)(a.rrs[off + 8] << 8 | a.rrs[off + 9]);
		if (type != qtype && type != DNS_T_CNAME)
			abort();
		if ((type == DNS_T_A && rdlen != 4) || (type == DNS_T_AAAA && rdlen != 16))
			abort();
		off += 10 + rdlen;
		if (off > a.len)
			abort();
		n++;
	}
	if (n != a.n || (n == 0) != (a.min_ttl == UINT32_MAX) || (n > 0 && a.min_ttl > 0x7fffffffu))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char name[DNS_NAME_MAX + 1];
	uint8_t wire[DNS_NAME_MAX + 2];
	size_t off = DNS_HEADER_LEN, nl;
	const char *why = NULL;
	uint16_t qtype;

	if (dns_name_read(data, size, &off, name, &nl, &why) == -1 || off + 2 > size)
		return 0;
	qtype = (uint16_t)(data[off] << 8 | data[off + 1]);
	if (dns_answer_read(data, size, name, nl, qtype, &a, &why) == DNS_ANSWER_OK)
		check(qtype);
	/* a name read writes back, and reads again as itself */
	nl = dns_name_write(name, nl, wire, sizeof(wire));
	if (nl == 0 && name[0] != '\0')
		abort();
	return 0;
}
