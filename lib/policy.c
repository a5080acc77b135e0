/*
 * policy.c: the one decision every path asks for.
 *
 * A policy is an immutable snapshot built from the config and the grant
 * store; judging never allocates and never looks anything up over the
 * network (a wildcard grant consults the public suffix list, in memory
 * since the wildcard parsed: grant_wildcard_covers). Order of
 * checks: Host header against destination, destination address (for IP
 * literals here, for resolved names through policy_judge_addr), then
 * grants, each for the connection's principal (grant_serves). Only the
 * grant check is relaxed by observe mode (and a learn window, while it is
 * open: policy_mode_at). Resolving, logging and writing the refusal are
 * the caller's.
 */
#include "policy.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *copy_array(const void *src, size_t n, size_t size)
{
	void *p;

	if (n == 0)
		return NULL;
	p = calloc(n, size);
	if (p != NULL)
		memcpy(p, src, n * size);
	return p;
}

struct policy *policy_new(const struct config *c, const struct grant *store, size_t nstore,
			  bool store_damaged, const struct ipnet *own, size_t nown,
			  const char *run_id, time_t now)
{
	struct policy *p = calloc(1, sizeof(*p));
	size_t ncfg = c != NULL ? c->ngrants : 0, i;

	if (p == NULL)
		return NULL;
	p->mode = c != NULL ? c->mode : MODE_ENFORCE;
	p->store_damaged = store_damaged;
	if (run_id != NULL)
		snprintf(p->run_id, sizeof(p->run_id), "%s", run_id);
	if (ncfg + nstore > 0) {
		p->grants = calloc(ncfg + nstore, sizeof(*p->grants));
		if (p->grants == NULL)
			goto out_free;
	}
	for (i = 0; i < ncfg; i++)
		p->grants[p->ngrants++] = c->grants[i];
	for (i = 0; i < nstore; i++)
		if (grant_live(&store[i], now, run_id))
			p->grants[p->ngrants++] = store[i];
	for (i = 0; i < p->ngrants; i++)
		p->nbudgeted += grant_budgeted(&p->grants[i]);
	if (c != NULL && c->nexceptions > 0) {
		p->exceptions = copy_array(c->exceptions, c->nexceptions, sizeof(*p->exceptions));
		if (p->exceptions == NULL)
			goto out_free;
		p->nexceptions = c->nexceptions;
	}
	if (c != NULL && c->nagent_quiet > 0) {
		p->quiet = copy_array(c->agent_quiet, c->nagent_quiet, sizeof(*p->quiet));
		if (p->quiet == NULL)
			goto out_free;
		p->nquiet = c->nagent_quiet;
	}
	if (nown > 0) {
		p->own = copy_array(own, nown, sizeof(*p->own));
		if (p->own == NULL)
			goto out_free;
		p->nown = nown;
	}
	return p;

out_free:
	policy_free(p);
	return NULL;
}

void policy_free(struct policy *p)
{
	if (p == NULL)
		return;
	free(p->grants);
	p->grants = NULL;
	free(p->exceptions);
	p->exceptions = NULL;
	free(p->own);
	p->own = NULL;
	free(p->quiet);
	p->quiet = NULL;
	free(p);
}

void policy_set_mode(struct policy *p, const struct grant_mode *m)
{
	if (!m->set)
		return;
	p->mode = m->kind == GRANT_MODE_ENFORCE ? MODE_ENFORCE : MODE_OBSERVE;
	p->learn_until = m->kind == GRANT_MODE_LEARN ? m->until : 0;
}

enum policy_mode policy_mode_at(const struct policy *p, time_t now)
{
	if (p->learn_until != 0)
		return now < p->learn_until ? MODE_OBSERVE : MODE_ENFORCE;
	return p->mode;
}

const char *policy_mode_name(const struct policy *p, time_t now)
{
	if (p->learn_until > now)
		return "learn";
	return policy_mode_at(p, now) == MODE_ENFORCE ? "enforce" : "observe";
}

static void verdict_refuse(struct verdict *v, const char *reason, const char *proxy_status)
{
	v->allow = false;
	v->status = 403;
	v->reason = reason;
	v->proxy_status = proxy_status;
}

/* Whether an allow-private exception for h holds this address. */
static bool excepted(const struct policy *p, const struct host *h, int family, const void *addr)
{
	size_t i;

	if (h == NULL)
		return false;
	for (i = 0; i < p->nexceptions; i++) {
		const struct config_exception *e = &p->exceptions[i];

		if (host_equal(&e->host, h) && ipnet_contains(&e->net, family, addr))
			return true;
	}
	return false;
}

static bool is_own(const struct policy *p, int family, const void *addr)
{
	size_t i;

	for (i = 0; i < p->nown; i++)
		if (ipnet_contains(&p->own[i], family, addr))
			return true;
	return false;
}

void policy_judge_addr(const struct policy *p, const struct host *h, int family,
		       const void *addr, struct verdict *v)
{
	static const uint8_t mapped_prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	const uint8_t *v4 = NULL; /* the IPv4 address inside an IPv4-mapped one */
	char text[INET6_ADDRSTRLEN];
	const char *range;
	bool exc;

	memset(v, 0, sizeof(*v));
	if (family == AF_INET6 && memcmp(addr, mapped_prefix, sizeof(mapped_prefix)) == 0)
		v4 = (const uint8_t *)addr + 12;
	/* A mapped address reaches its IPv4 address, so exceptions for either form apply. */
	exc = excepted(p, h, family, addr) || (v4 != NULL && excepted(p, h, AF_INET, v4));
	ipaddr_format(family, addr, text, sizeof(text));
	if ((is_own(p, family, addr) || (v4 != NULL && is_own(p, AF_INET, v4))) && !exc) {
		verdict_refuse(v, "own-address", "destination_ip_prohibited");
		snprintf(v->detail, sizeof(v->detail), "%s is the proxy's own address", text);
		return;
	}
	range = iprange_denied(family, addr, NULL);
	if (range == NULL && v4 != NULL)
		range = iprange_denied(AF_INET, v4, NULL);
	if (range != NULL && !exc) {
		verdict_refuse(v, "denied-ip", "destination_ip_prohibited");
		snprintf(v->detail, sizeof(v->detail), "%s is in denied range %s", text, range);
		return;
	}
	v->allow = true;
}

/* The first live grant from i on that carries a budget and serves r; NULL none. */
static const struct grant *budgeted_serving(const struct policy *p,
					    const struct policy_request *r, time_t now, size_t i)
{
	const char *run = p->run_id[0] != '\0' ? p->run_id : NULL;

	for (; i < p->ngrants; i++) {
		const struct grant *g = &p->grants[i];

		if (grant_budgeted(g) && grant_live(g, now, run) &&
		    grant_matches(g, r->host, r->port, r->via) && grant_serves(g, r->who, r->src, r->as))
			return g;
	}
	return NULL;
}

/* Whether a live tunnel grant serving r names its host and port (a CONNECT only). */
static bool tunnel_serving(const struct policy *p, const struct policy_request *r, time_t now)
{
	const char *run = p->run_id[0] != '\0' ? p->run_id : NULL;

	if (r->via != GRANT_VIA_CONNECT)
		return false;
	for (size_t i = 0; i < p->ngrants; i++) {
		const struct grant *g = &p->grants[i];

		if (g->tunnel && grant_live(g, now, run) &&
		    grant_matches(g, r->host, r->port, r->via) && grant_serves(g, r->who, r->src, r->as))
			return true;
	}
	return false;
}

void policy_judge(const struct policy *p, const struct policy_request *r, time_t now,
		  struct verdict *v)
{
	const char *run = p->run_id[0] != '\0' ? p->run_id : NULL;
	char hostport[HOST_PORT_TEXT_MAX + 1];
	size_t i;

	memset(v, 0, sizeof(*v));
	if (r->host_header != NULL && !host_equal(r->host, r->host_header)) {
		verdict_refuse(v, "host-mismatch", "http_request_denied");
		snprintf(v->detail, sizeof(v->detail), "Host header names %.140s, request is sent to %.140s",
			 r->host_header->name, r->host->name);
		return;
	}
	if (r->host->kind == HOST_IPV4 || r->host->kind == HOST_IPV6) {
		int family = r->host->kind == HOST_IPV4 ? AF_INET : AF_INET6;
		const void *addr = r->host->kind == HOST_IPV4 ? (const void *)&r->host->addr.v4
							       : (const void *)&r->host->addr.v6;

		policy_judge_addr(p, r->host, family, addr, v);
		if (!v->allow)
			return;
		memset(v, 0, sizeof(*v));
	}
	for (i = 0; i < p->ngrants; i++) {
		const struct grant *g = &p->grants[i];

		if (!grant_live(g, now, run) || !grant_matches(g, r->host, r->port, r->via))
			continue;
		if (!grant_serves(g, r->who, r->src, r->as)) {
			if (v->scoped == NULL)
				v->scoped = g;
			continue;
		}
		/* a budget brakes every request its grant serves: an unbudgeted one first does not lift it */
		if (!grant_budgeted(g) && p->nbudgeted > 0) {
			const struct grant *b = budgeted_serving(p, r, now, i + 1);

			if (b != NULL)
				g = b;
		}
		v->allow = true;
		v->reason = "granted";
		v->grant = g;
		v->tunnel = tunnel_serving(p, r, now);
		for (size_t k = 0; k < g->nscopes && v->by == NULL; k++)
			if (scope_matches(&g->scopes[k], r->who, r->src, r->as))
				v->by = &g->scopes[k];
		return;
	}
	/* a profile's telemetry, to a run of it: refused on purpose, in every mode, nothing to offer */
	for (i = 0; i < p->nquiet && r->host->kind == HOST_NAME; i++) {
		const struct grant *q = &p->quiet[i];

		if (!(q->wildcard ? grant_wildcard_covers(q->host, r->host->name)
				  : strcmp(q->host, r->host->name) == 0) ||
		    q->nscopes == 0 || !grant_serves(q, r->who, r->src, r->as))
			continue;
		verdict_refuse(v, "quiet", "http_request_denied");
		v->scoped = NULL;
		snprintf(v->detail, sizeof(v->detail), "%s is a quiet host of the run's agent profile: its "
			 "telemetry, refused on purpose (nothing to grant)", r->host->name);
		return;
	}
	v->reason = "not-granted";
	v->proxy_status = "http_request_denied";
	host_port_format(hostport, sizeof(hostport), r->host->name, r->port);
	snprintf(v->detail, sizeof(v->detail), "%s is not granted%s", hostport,
		 v->scoped == NULL ? "" : r->who == NULL ? " to an unattributed connection"
							 : " to this principal");
	if (policy_mode_at(p, now) == MODE_OBSERVE) {
		v->allow = true;
		v->observed = true;
		return;
	}
	v->allow = false;
	v->status = 403;
}
