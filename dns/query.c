/*
 * query.c: one client query, from its bytes to its answer and its row.
 *
 * Who asked first: the asker tag a forwarder added (lib/dnstag.c), taken
 * out of every query that reads, whoever wrote it, and believed only when
 * it verifies under a live stamp key (else the query is unattributed);
 * over TCP the connection's first query names the asker of them all. Then
 * parse (lib/dns_msg.c: anything malformed is FORMERR, or dropped when
 * not even its header is a query's), judge (judge.c), then the cache: a
 * hit is answered at once; a miss waits on the fetch for its name and
 * type, made when none is in flight (coalescing), and is answered when it
 * ends (query_fetched). The name goes upstream lower-cased and with our
 * own EDNS record, whatever the client sent: case bits and EDNS options
 * carry nothing out.
 */
#include "dns.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FETCHES_MAX 4096 /* upstream lookups in flight */
#define WAITERS_MAX 1024 /* queries waiting on one */

static int rcode_of(const uint8_t *msg)
{
	return msg[3] & 0x0f;
}

/* Answer qr now from rcode (no records), with the EDE its judgement calls for. */
static size_t refusal(const struct query *qr, int rcode, uint8_t *out, size_t max)
{
	char text[200];

	if (strcmp(qr->decision, "observe") == 0 || rcode == RCODE_NOERROR)
		snprintf(text, sizeof(text), "sluice: %s", qr->detail);
	else
		snprintf(text, sizeof(text), "blocked by sluice: %s", qr->detail);
	return wire_empty(qr, rcode, DNS_EDE_BLOCKED, text, out, max);
}

/* SERVFAIL at once: too much is waiting on upstreams already. */
static long busy(struct dnsd *d, struct query *qr, uint8_t *out, size_t max)
{
	size_t n;

	qr->decision = "error";
	qr->reason = "busy";
	snprintf(qr->detail, sizeof(qr->detail),
		 "too many queries waiting on upstreams (%d lookups, %d a name)", FETCHES_MAX,
		 WAITERS_MAX);
	n = wire_empty(qr, RCODE_SERVFAIL, -1, NULL, out, max);
	row_write(d, qr, RCODE_SERVFAIL, 0, 0, true, true);
	return (long)n;
}

long query_handle(struct dnsd *d, const uint8_t *msg, size_t len, struct reply_to *to,
		  uint8_t *out, size_t outmax)
{
	struct query qr, *w;
	struct cache_entry *e;
	struct fetch *f;
	const char *why;
	uint64_t h;
	unsigned kept = 0, removed = 0;
	size_t n;
	int rc;

	static uint8_t clean[DNS_MSG_MAX];
	bool believed;
	long cl;

	memset(&qr, 0, sizeof(qr));
	qr.to = *to;
	qr.start_ms = loop_clock_ms();
	cl = dnstag_take(msg, len, clean, sizeof(clean), d->keys, d->nkeys, time(NULL), &qr.asker,
			 &believed);
	if (cl >= 0) { /* what follows sees the query without any tag */
		msg = clean;
		len = (size_t)cl;
	}
	qr.tagged = believed;
	if (to->tcp != NULL && tcp_client_asker(d, to->tcp, believed, &qr.asker, &qr.tagged) == -1)
		return -1;
	if (dns_query_read(msg, len, &qr.q, &why) == -1) {
		n = wire_formerr(msg, len, out, outmax); /* NOTIMP for an opcode not QUERY */
		qr.decision = "error";
		qr.reason = "malformed";
		snprintf(qr.detail, sizeof(qr.detail), "%s", why);
		qr.q.name[0] = '\0';
		row_write(d, &qr, n > 0 ? rcode_of(out) : -1, 0, 0, true, false);
		return n > 0 ? (long)n : -1;
	}
	qr.question_len = qr.q.question_end - DNS_HEADER_LEN;
	memcpy(qr.question, msg + DNS_HEADER_LEN, qr.question_len);
	if (qr.q.edns && qr.q.edns_version > 0) { /* RFC 6891 6.1.3 */
		qr.decision = "error";
		qr.reason = "malformed";
		snprintf(qr.detail, sizeof(qr.detail), "EDNS version %u (only 0 is spoken)",
			 (unsigned)qr.q.edns_version);
		n = wire_empty(&qr, WIRE_BADVERS, -1, NULL, out, outmax);
		row_write(d, &qr, WIRE_BADVERS, 0, 0, true, true);
		return (long)n;
	}
	if (qr.q.qclass != DNS_CLASS_IN) {
		qr.decision = "refuse";
		qr.reason = "class";
		snprintf(qr.detail, sizeof(qr.detail), "only class IN is answered");
		n = wire_empty(&qr, 5 /* REFUSED */, -1, NULL, out, outmax);
		row_write(d, &qr, 5, 0, 0, true, true);
		return (long)n;
	}
	h = cache_hash(d, qr.q.name, qr.q.name_len, qr.q.qtype);
	e = cache_get(d, h, qr.q.name, qr.q.name_len, qr.q.qtype); /* judged first, used after */
	rc = judge_query(d, &qr, e);
	if (rc != JUDGE_LOOKUP) {
		n = refusal(&qr, rc, out, outmax);
		row_write(d, &qr, rcode_of(out), 0, 0, true, true);
		return (long)n;
	}
	if (e != NULL) {
		qr.cache_hit = true;
		n = wire_answer(d, &qr, e, out, outmax, &kept, &removed);
		row_write(d, &qr, rcode_of(out), kept, removed, true, true);
		return (long)n;
	}
	f = fetch_find(d, h, qr.q.name, qr.q.name_len, qr.q.qtype);
	if ((f != NULL && f->nwaiters >= WAITERS_MAX) || (f == NULL && fetch_count(d) >= FETCHES_MAX) ||
	    (w = malloc(sizeof(*w))) == NULL)
		return busy(d, &qr, out, outmax);
	*w = qr;
	if (f == NULL && (f = fetch_new(d, h, qr.q.name, qr.q.name_len, qr.q.qtype)) == NULL) {
		free(w);
		return busy(d, &qr, out, outmax);
	}
	if (to->tcp != NULL)
		tcp_client_hold(to->tcp);
	w->next = f->waiters;
	f->waiters = w;
	if (++f->nwaiters == 1)
		upstream_ask(d, f);
	return 0;
}

void query_oversize(struct dnsd *d, const struct reply_to *to)
{
	struct query qr;

	memset(&qr, 0, sizeof(qr));
	qr.to = *to;
	qr.start_ms = loop_clock_ms();
	qr.decision = "error";
	qr.reason = "malformed";
	snprintf(qr.detail, sizeof(qr.detail), "a datagram longer than any query");
	row_write(d, &qr, -1, 0, 0, true, false);
}

void query_fetched(struct dnsd *d, struct fetch *f, const struct cache_entry *e,
		   const char *upstream)
{
	uint8_t out[DNS_MSG_MAX];

	for (struct query *qr = f->waiters; qr != NULL; qr = qr->next) {
		unsigned kept = 0, removed = 0;
		size_t n;
		char text[200];

		qr->upstream = upstream;
		if (e != NULL) {
			n = wire_answer(d, qr, e, out, sizeof(out), &kept, &removed);
		} else {
			qr->decision = "error";
			qr->reason = f->why;
			snprintf(qr->detail, sizeof(qr->detail), "no upstream answered (%u asked)",
				 f->tried);
			snprintf(text, sizeof(text), "sluice: %s", qr->detail);
			n = wire_empty(qr, RCODE_SERVFAIL, DNS_EDE_NETWORK, text, out, sizeof(out));
		}
		row_write(d, qr, n > 0 ? rcode_of(out) : -1, kept, removed, false, true);
		if (n > 0)
			client_send(d, &qr->to, out, n);
	}
	fetch_free(d, f);
	cache_loose_free(e);
	cache_trim(d);
}
