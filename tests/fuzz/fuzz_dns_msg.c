/*
 * fuzz_dns_msg.c: lib/dns_msg.c on arbitrary messages, read as a query and
 * as an answer (header, questions skipped, every record, CNAME targets).
 *
 * Beyond not crashing: a name read is lower-case printable text without
 * blanks, of at most DNS_NAME_MAX bytes, its labels 1..63 bytes; an offset
 * never passes the message; a record's data lies inside it.
 */
#include <stdlib.h>
#include <string.h>

#include "dns_msg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_name(const char *n, size_t len)
{
	size_t label = 0;

	if (len > DNS_NAME_MAX || strlen(n) != len)
		abort();
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)n[i];

		if (c == '.') {
			if (label == 0 || label > 63)
				abort();
			label = 0;
			continue;
		}
		if (c <= 0x20 || c >= 0x7f || c == '\\' || (c >= 'A' && c <= 'Z'))
			abort();
		label++;
	}
	if (len > 0 && (label == 0 || label > 63))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dns_query q;
	struct dns_header h;
	const char *why = NULL;
	size_t off;

	if (dns_query_read(data, size, &q, &why) == 0)
		check_name(q.name, q.name_len);
	if (dns_header_read(data, size, &h) == -1 || dns_questions_skip(data, size, &h, &off, &why) == -1)
		return 0;
	for (unsigned i = 0; i < (unsigned)h.ancount + h.nscount + h.arcount; i++) {
		struct dns_rr rr;
		char target[DNS_NAME_MAX + 1];
		size_t tlen;

		if (dns_rr_read(data, size, &off, &rr, &why) == -1)
			break;
		check_name(rr.name, rr.name_len);
		if (off > size || rr.rdata_off + rr.rdlen > size)
			abort();
		if (rr.type == DNS_T_CNAME && dns_rr_cname(data, size, &rr, target, &tlen, &why) == 0)
			check_name(target, tlen);
	}
	return 0;
}
