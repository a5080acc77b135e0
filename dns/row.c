/*
 * row.c: a query's row in the DNS log (docs/network-log.md, kind "dns"),
 * built with lib/netlog_row.c, naming who asked (the forwarder's tag:
 * src@net, or unattributed). Rows of a batch of UDP queries are held
 * and written with one write(2) before the batch's answers go out
 * (client.c); a row for an answer sent later is written before it is.
 * Each row also counts its query in sluice_dns_queries_total, by decision
 * and reason (fixed codes; never the name or the client).
 */
#include "dns.h"

#include <string.h>

#include "metrics.h"
#include "sockaddr.h"

static struct metrics_family *queries;

static const char *rcode_name(int rcode)
{
	static const char *names[] = { "NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN",
				       "NOTIMP",  "REFUSED" };

	if (rcode == WIRE_BADVERS)
		return "BADVERS";
	return rcode >= 0 && rcode < 6 ? names[rcode] : NULL;
}

int row_init(struct dnsd *d)
{
	queries = metrics_family("sluice_dns_queries_total", METRICS_COUNTER,
				 "DNS queries, one per dns-log row, by decision and reason",
				 "decision", "reason", NULL);
	if (!d->config->dns_metrics_on)
		return 0;
	d->metrics = metrics_server_new(d->loop, &d->config->dns_metrics_listen, "sluice-dns",
					NULL, NULL);
	return d->metrics != NULL ? 0 : -1;
}

void row_write(struct dnsd *d, const struct query *qr, int rcode, unsigned kept,
	       unsigned removed, bool hold, bool parsed)
{
	struct netlog_out *o = &d->row;
	char client[64], tb[DNS_TYPE_TEXT_MAX], who[sizeof(qr->asker.src) + sizeof(qr->asker.net)];

	sockaddr_format(&qr->to.peer, client, sizeof(client));
	if (qr->tagged)
		snprintf(who, sizeof(who), "%s@%s", qr->asker.src, qr->asker.net);
	netlog_put_start(o);
	netlog_put_cstr(o, "kind", "dns");
	netlog_put_cstr(o, "client", client);
	netlog_put_cstr(o, "transport", qr->to.udp_fd >= 0 ? "udp" : "tcp");
	netlog_put_cstr(o, "who", qr->tagged ? who : "unattributed");
	netlog_put_cstr(o, "src", qr->tagged ? qr->asker.src : NULL);
	netlog_put_cstr(o, "net", qr->tagged ? qr->asker.net : NULL);
	netlog_put_cstr(o, "name", parsed ? qr->q.name : NULL);
	netlog_put_cstr(o, "type", parsed ? dns_type_name(qr->q.qtype, tb) : NULL);
	netlog_put_cstr(o, "decision", qr->decision);
	netlog_put_cstr(o, "reason", qr->reason);
	netlog_put_cstr(o, "grant", qr->grant[0] != '\0' ? qr->grant : NULL);
	netlog_put_cstr(o, "rcode", rcode_name(rcode));
	netlog_put_num(o, "kept", kept);
	netlog_put_num(o, "removed", removed);
	netlog_put_cstr(o, "upstream", qr->upstream);
	netlog_put_bool(o, "cache", qr->cache_hit);
	netlog_put_ms(o, "ms", loop_clock_ms() - qr->start_ms);
	netlog_put_cstr(o, "detail", qr->detail[0] != '\0' ? qr->detail : NULL);
	metrics_add(queries, 1, qr->decision, qr->reason, NULL);
	if (hold)
		netlog_hold(d->log, o);
	else
		netlog_emit(d->log, o);
}
