/*
 * fuzz_snapshot.c: snapshot_parse (a line of STATE/engine.jsonl) and the
 * resolution that applies snapshots to a row, on arbitrary bytes.
 *
 * Beyond not crashing: a line that parses is written back by
 * snapshot_format, which parses again to the same snapshot; and a row
 * resolved against it names a container of that snapshot or none.
 */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "principal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct snapshot s, again;
	struct snapshots all = { 0 };
	struct principal p;
	const char *err;
	char *line, *out;

	line = malloc(size + 1);
	if (line == NULL)
		return 0;
	memcpy(line, data, size);
	line[size] = '\0';
	if (snapshot_parse(line, size, &s, &err) == -1) {
		free(line);
		return 0;
	}
	out = snapshot_format(&s);
	if (out == NULL)
		abort();
	if (snapshot_parse(out, strlen(out) - 1, &again, &err) == -1 || !snapshot_same(&s, &again) ||
	    again.t_ms != s.t_ms || strcmp(again.net, s.net) != 0)
		abort();
	snapshot_release(&again);
	/* resolve a row from each of its containers' first address, just after it */
	all.v = &s;
	all.n = all.cap = 1;
	if (snapshots_index(&all) == 0) {
		for (size_t i = 0; i < s.nctrs; i++) {
			char addr[64];
			struct principal_row r = { .t_ms = s.t_ms, .has_t = true, .net = s.net };

			const struct snap_addr *a = &s.ctrs[i].addrs[0];

			if (s.ctrs[i].naddrs == 0 || inet_ntop(a->family, a->a, addr, sizeof(addr)) == NULL)
				continue;
			r.src = addr;
			principal_from_row(&all, &r, &p);
			if (p.kind != PRINCIPAL_CONTAINER || p.snap != &s)
				abort();
		}
		free(all.refs);
	}
	snapshot_release(&s);
	free(out);
	free(line);
	return 0;
}
