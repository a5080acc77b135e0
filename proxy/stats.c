/*
 * stats.c: sluice-proxy's metrics (lib/metrics.h), counted where the
 * proxy already knows them: one request per log row, with its kind,
 * decision, reason and bytes; TLS handshakes and leaf-cache lookups
 * (tls.c); token command runs (token.c); policy reloads (reload.c). A
 * quiet row (an agent's telemetry, refused on purpose) is counted in
 * sluice_proxy_quiet_total alone. The
 * gauges (connections, tunnels, HTTP/2 streams) are read off the live
 * sessions when a scrape asks. Only fixed codes become labels: never a
 * host, a path, a client or a secret.
 */
#include "proxy.h"

#include <stdio.h>
#include <string.h>

#include "conn.h"
#include "metrics.h"

static struct metrics_family *requests, *bytes, *handshakes, *leaves, *tokens, *reloads, *quiet;
static struct metrics_family *conns, *tunnels, *streams;

static void collect(void *arg)
{
	struct proxy *px = arg;
	uint64_t ntun = 0, nstreams = 0;

	for (const struct list_node *n = px->sessions.first; n != NULL; n = n->next) {
		const struct session *s = list_entry(n, const struct session, link);

		if (s->st->relay != NULL) /* a tunnel relaying (tunnel.c) */
			ntun++;
		if (s->codec->streams != NULL)
			nstreams += s->codec->streams(s);
	}
	metrics_set(conns, px->nsessions, NULL, NULL, NULL);
	metrics_set(tunnels, ntun, NULL, NULL, NULL);
	metrics_set(streams, nstreams, NULL, NULL, NULL);
}

int stats_init(struct proxy *px)
{
	requests = metrics_family("sluice_proxy_requests_total", METRICS_COUNTER,
				  "Requests, one per network log row, by kind, decision and reason",
				  "kind", "decision", "reason");
	quiet = metrics_family("sluice_proxy_quiet_total", METRICS_COUNTER,
			       "Requests to an agent profile's quiet hosts (its telemetry), refused on "
			       "purpose: counted here alone, never as requests or refusals",
			       NULL, NULL, NULL);
	metrics_add(quiet, 0, NULL, NULL, NULL);
	bytes = metrics_family("sluice_proxy_bytes_total", METRICS_COUNTER,
			       "Payload bytes of the logged requests: up to the upstream, down "
			       "to the client", "direction", NULL, NULL);
	metrics_add(bytes, 0, "up", NULL, NULL);
	metrics_add(bytes, 0, "down", NULL, NULL);
	handshakes = metrics_family("sluice_proxy_tls_handshakes_total", METRICS_COUNTER,
				    "TLS handshakes of intercepted CONNECTs, by side and result",
				    "side", "result", NULL);
	leaves = metrics_family("sluice_proxy_leaf_cache_total", METRICS_COUNTER,
				"Leaf certificates asked of the cache: hit, or miss (minted)",
				"result", NULL, NULL);
	metrics_add(leaves, 0, "hit", NULL, NULL);
	metrics_add(leaves, 0, "miss", NULL, NULL);
	tokens = metrics_family("sluice_proxy_token_runs_total", METRICS_COUNTER,
				"Token command runs: minted, or failed", "result", NULL, NULL);
	metrics_add(tokens, 0, "minted", NULL, NULL);
	metrics_add(tokens, 0, "failed", NULL, NULL);
	reloads = metrics_family("sluice_proxy_reloads_total", METRICS_COUNTER,
				 "Grant store and config reloads: ok, or failed (the old policy kept)",
				 "result", NULL, NULL);
	metrics_add(reloads, 0, "ok", NULL, NULL);
	metrics_add(reloads, 0, "failed", NULL, NULL);
	conns = metrics_family("sluice_proxy_connections", METRICS_GAUGE,
			       "Client connections open", NULL, NULL, NULL);
	tunnels = metrics_family("sluice_proxy_tunnels", METRICS_GAUGE,
				 "CONNECT tunnels relaying bytes untouched", NULL, NULL, NULL);
	streams = metrics_family("sluice_proxy_h2_streams", METRICS_GAUGE,
				 "HTTP/2 streams open on intercepted connections", NULL, NULL, NULL);
	if (!px->config->metrics_on)
		return 0;
	px->metrics = metrics_server_new(px->loop, &px->config->metrics_listen, "sluice-proxy",
					 collect, px);
	return px->metrics != NULL ? 0 : -1;
}

void stats_release(struct proxy *px)
{
	metrics_server_free(px->metrics);
	px->metrics = NULL;
}

void stats_row(const struct netlog_row *r)
{
	if (r->reason != NULL && strcmp(r->reason, "quiet") == 0) {
		metrics_add(quiet, 1, NULL, NULL, NULL);
		return;
	}
	metrics_add(requests, 1, r->kind, r->decision, r->reason);
	metrics_add(bytes, r->up, "up", NULL, NULL);
	metrics_add(bytes, r->down, "down", NULL, NULL);
}

void stats_handshake(bool upstream, bool ok)
{
	metrics_add(handshakes, 1, upstream ? "upstream" : "client", ok ? "ok" : "failed", NULL);
}

void stats_leaf(bool minted)
{
	metrics_add(leaves, 1, minted ? "miss" : "hit", NULL, NULL);
}

void stats_token(bool ok)
{
	metrics_add(tokens, 1, ok ? "minted" : "failed", NULL, NULL);
}

void stats_reload(bool ok)
{
	metrics_add(reloads, 1, ok ? "ok" : "failed", NULL, NULL);
}
