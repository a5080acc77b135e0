/*
 * fake.c: the run's own addresses for granted names (--transparent).
 *
 * Each name sluice-dns resolves for the run is given one address of
 * FAKE_NET (240.0.0.0/20: reserved, so no network the run or the machine
 * uses holds it; never 198.18.0.0/15, `sluice verify`'s refused target,
 * nor a container bridge), and the map keeps name <-> address so the
 * transparent listener (conn.c) can say which name a connection is for.
 * Bounded: FAKE_SLOTS names; a name keeps its address while asked, and an
 * address is given to another name only after FAKE_HOLD_MS without an
 * answer naming it (many times the FAKE_TTL the answers carry, so a client
 * that cached it has let it go). With every slot held a name gets no fake
 * address (its answer passes as it came: real addresses, which the run's
 * walls refuse). Does not judge names: sluice-dns did.
 */
#include "forward.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dns_fake.h"

struct fake_map {
	struct {
		char name[DNS_NAME_MAX + 1]; /* "" free */
		uint64_t used_ms;            /* loop time of the last answer naming it */
	} slot[FAKE_SLOTS];
	size_t next; /* where a free slot is looked for first */
};

int fake_start(struct forwarder *fw)
{
	fw->fake = calloc(1, sizeof(*fw->fake));
	if (fw->fake == NULL) {
		fprintf(stderr, "sluice-forward: --transparent: out of memory\n");
		return -1;
	}
	return 0;
}

void fake_stop(struct forwarder *fw)
{
	free(fw->fake);
	fw->fake = NULL;
}

/* The slot of name, found or taken; -1 when every slot is held. */
static long slot_of(struct fake_map *m, const char *name, uint64_t now)
{
	for (size_t i = 0; i < FAKE_SLOTS; i++)
		if (strcmp(m->slot[i].name, name) == 0)
			return (long)i;
	for (size_t k = 0; k < FAKE_SLOTS; k++) {
		size_t i = (m->next + k) % FAKE_SLOTS;

		if (m->slot[i].name[0] == '\0' || now - m->slot[i].used_ms > FAKE_HOLD_MS) {
			snprintf(m->slot[i].name, sizeof(m->slot[i].name), "%s", name);
			m->next = (i + 1) % FAKE_SLOTS;
			return (long)i;
		}
	}
	return -1;
}

size_t fake_answer(struct forwarder *fw, uint8_t *msg, size_t len, size_t max)
{
	static uint8_t out[DNS_HEADER_LEN + 2 * (DNS_NAME_MAX + 2) + 64];
	struct dns_fake_q q;
	uint8_t addr[4];
	uint32_t a;
	long slot, n;

	if (fw->fake == NULL || dns_fake_match(msg, len, &q) != 1)
		return len;
	slot = slot_of(fw->fake, q.name, loop_now(fw->loop));
	if (slot == -1)
		return len;
	fw->fake->slot[slot].used_ms = loop_now(fw->loop);
	a = htonl(FAKE_NET + 1 + (uint32_t)slot);
	memcpy(addr, &a, 4);
	n = dns_fake_write(msg, &q, addr, FAKE_TTL, out, sizeof(out));
	if (n == -1 || (size_t)n > max)
		return len;
	memcpy(msg, out, (size_t)n);
	return (size_t)n;
}

const char *fake_name(const struct forwarder *fw, const struct sockaddr_storage *dst)
{
	const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)dst;
	uint32_t a;

	if (fw->fake == NULL || dst->ss_family != AF_INET)
		return NULL;
	a = ntohl(in->sin_addr.s_addr);
	if (a <= FAKE_NET || a > FAKE_NET + FAKE_SLOTS)
		return NULL;
	a -= FAKE_NET + 1;
	return fw->fake->slot[a].name[0] != '\0' ? fw->fake->slot[a].name : NULL;
}
