/*
 * fuzz_chain.c: the log chain's checker on arbitrary lines.
 *
 * The input is split at newlines and every line is handed to
 * netlog_chain_prev and netlog_chain_step, or, when it starts with '{' and
 * carries no prev, to netlog_chain_step_cut as `sluice log verify` does for
 * a row cut short (a log file is what an attacker who edits the log
 * controls). Beyond not crashing: a prev found is 64 lower-case hex digits,
 * the counters add up, and a well-formed chain of as many rows, walked
 * beside it, always holds.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "netlog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data, *why;
	char hex[NETLOG_PREV_HEX + 1], ghex[NETLOG_PREV_HEX + 1];
	char row[NETLOG_PREV_HEX + 64];
	struct netlog_chain c, good;
	size_t start = 0, lines = 0, broken = 0;
	bool have = false;

	netlog_chain_init(&c);
	netlog_chain_init(&good);
	for (size_t i = 0; i <= size; i++) {
		int r;

		if (i < size && s[i] != '\n')
			continue;
		r = netlog_chain_prev(s + start, i - start, hex);
		if (r == 1 && (strlen(hex) != NETLOG_PREV_HEX ||
			       strspn(hex, "0123456789abcdef") != NETLOG_PREV_HEX))
			abort();
		if (r == -1 && i > start && s[start] == '{') {
			enum netlog_chain_verdict v = netlog_chain_step_cut(&c, s + start, i - start);

			if (v != NETLOG_CHAIN_CUT && v != NETLOG_CHAIN_UNCHAINED)
				abort();
		} else if (netlog_chain_step(&c, s + start, i - start, &why) == NETLOG_CHAIN_BROKEN) {
			if (why == NULL)
				abort();
			broken++;
		}
		/* beside it, a well-formed chain of as many rows */
		snprintf(row, sizeof(row), "{\"n\":1,\"prev\":%s%s%s}", have ? "\"" : "", have ? ghex : "null",
			 have ? "\"" : "");
		if (have && netlog_chain_step(&good, row, strlen(row), &why) == NETLOG_CHAIN_BROKEN)
			abort();
		if (!have && netlog_chain_step(&good, row, strlen(row), &why) != NETLOG_CHAIN_OK)
			abort();
		netlog_chain_hash(row, strlen(row), ghex);
		have = true;
		lines++;
		start = i + 1;
	}
	if (c.lines != lines || c.chained + c.unchained + c.cut + broken != lines)
		abort();
	return 0;
}
