/*
 * test_policy.c: policy_new, policy_judge and policy_judge_addr.
 *
 * The config is built by hand (no config.c): grants, exceptions and mode
 * set directly, so these tests exercise only the decision.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"

#define RUN "0123456789abcdef"
#define NOW 1700000000

static struct host host_of(const char *s)
{
	struct host h;
	const char *err;

	assert_int_equal(host_canon(s, strlen(s), &h, &err), 0);
	return h;
}

static struct grant grant_of(const char *s, enum grant_level level)
{
	struct grant g;
	const char *err;

	assert_int_equal(grant_parse(s, strlen(s), &g, &err), 0);
	g.level = level;
	return g;
}

static struct ipnet net_of(const char *s)
{
	struct ipnet n;
	const char *err;

	assert_int_equal(ipnet_parse(s, strlen(s), &n, &err), 0);
	return n;
}

/* A config with two grants and two exceptions, in the given mode. */
static struct config *config_of(enum policy_mode mode)
{
	struct config *c = calloc(1, sizeof(*c));

	assert_non_null(c);
	c->mode = mode;
	c->ngrants = 2;
	c->grants = calloc(2, sizeof(*c->grants));
	assert_non_null(c->grants);
	c->grants[0] = grant_of("example.com", GRANT_CONFIG);
	c->grants[1] = grant_of("*.example.org:8443", GRANT_CONFIG);
	c->nexceptions = 2;
	c->exceptions = calloc(2, sizeof(*c->exceptions));
	assert_non_null(c->exceptions);
	c->exceptions[0].host = host_of("internal.example.com");
	c->exceptions[0].net = net_of("10.1.0.0/16");
	c->exceptions[1].host = host_of("v6.example.com");
	c->exceptions[1].net = net_of("fd00::/8");
	return c;
}

static void config_release(struct config *c)
{
	free(c->grants);
	free(c->exceptions);
	free(c);
}

static void judge(const struct policy *p, const char *host, uint16_t port, enum grant_via via,
		  const char *host_header, struct verdict *v)
{
	struct host h = host_of(host), hh;
	struct policy_request r = { .via = via, .host = &h, .port = port };

	if (host_header != NULL) {
		hh = host_of(host_header);
		r.host_header = &hh;
	}
	policy_judge(p, &r, NOW, v);
}

static void judge_addr(const struct policy *p, const char *host, const char *addr,
		       struct verdict *v)
{
	struct host h = host_of(host);
	uint8_t a[16];
	int family = strchr(addr, ':') != NULL ? AF_INET6 : AF_INET;

	assert_int_equal(inet_pton(family, addr, a), 1);
	policy_judge_addr(p, &h, family, a, v);
}

static void test_grants_enforce(void **state)
{
	struct config *c = config_of(MODE_ENFORCE);
	struct policy *p = policy_new(c, NULL, 0, false, NULL, 0, RUN, NOW);
	struct verdict v;

	assert_non_null(p);
	config_release(c); /* the policy holds its own copies */
	assert_int_equal(p->ngrants, 2);

	judge(p, "Example.COM.", 443, GRANT_VIA_CONNECT, NULL, &v);
	assert_true(v.allow);
	assert_false(v.observed);
	assert_string_equal(v.reason, "granted");
	assert_non_null(v.grant);
	assert_string_equal(v.grant->host, "example.com");

	judge(p, "example.com", 80, GRANT_VIA_HTTP, NULL, &v);
	assert_true(v.allow);

	judge(p, "example.com", 22, GRANT_VIA_CONNECT, NULL, &v);
	assert_false(v.allow);
	assert_int_equal(v.status, 403);
	assert_string_equal(v.reason, "not-granted");
	assert_string_equal(v.proxy_status, "http_request_denied");
	assert_string_equal(v.detail, "example.com:22 is not granted");
	assert_null(v.grant);

	judge(p, "a.b.example.org", 8443, GRANT_VIA_CONNECT, NULL, &v);
	assert_true(v.allow);
	judge(p, "example.org", 8443, GRANT_VIA_CONNECT, NULL, &v);
	assert_false(v.allow);

	judge(p, "2001:db8::1", 443, GRANT_VIA_CONNECT, NULL, &v);
	assert_false(v.allow);
	assert_string_equal(v.detail, "[2001:db8::1]:443 is not granted");
	policy_free(p);
}

static void test_observe(void **state)
{
	struct config *c = config_of(MODE_OBSERVE);
	struct ipnet own = net_of("192.0.2.10");
	struct policy *p = policy_new(c, NULL, 0, false, &own, 1, RUN, NOW);
	struct verdict v;

	assert_non_null(p);
	judge(p, "other.example", 443, GRANT_VIA_CONNECT, NULL, &v);
	assert_true(v.allow);
	assert_true(v.observed);
	assert_string_equal(v.reason, "not-granted");
	assert_string_equal(v.proxy_status, "http_request_denied");
	assert_string_equal(v.detail, "other.example:443 is not granted");

	judge(p, "example.com", 443, GRANT_VIA_CONNECT, NULL, &v);
	assert_true(v.allow);
	assert_false(v.observed);

	/* host mismatch, denied and own addresses are refused in observe mode too */
	judge(p, "other.example", 443, GRANT_VIA_CONNECT, "example.com", &v);
	assert_false(v.allow);
	assert_false(v.observed);
	assert_string_equal(v.reason, "host-mismatch");
	judge(p, "10.0.0.1", 80, GRANT_VIA_HTTP, NULL, &v);
	assert_false(v.allow);
	assert_string_equal(v.reason, "denied-ip");
	judge_addr(p, "other.example", "127.0.0.1", &v);
	assert_false(v.allow);
	judge(p, "192.0.2.10", 80, GRANT_VIA_HTTP, NULL, &v);
	assert_false(v.allow);
	assert_string_equal(v.reason, "own-address");
	policy_free(p);
	config_release(c);
}

static void test_host_mismatch(void **state)
{
	struct config *c = config_of(MODE_ENFORCE);
	struct policy *p = policy_new(c, NULL, 0, false, NULL, 0, RUN, NOW);
	struct verdict v;

	judge(p, "example.com", 443, GRANT_VIA_CONNECT, "EXAMPLE.com.", &v);
	assert_true(v.allow);
	judge(p, "example.com", 443, GRANT_VIA_CONNECT, "www.example.com", &v);
	assert_false(v.allow);
	assert_int_equal(v.status, 403);
	assert_string_equal(v.reason, "host-mismatch");
	assert_string_equal(v.proxy_status, "http_request_denied");
	/* the same address in another spelling is the same host */
	judge(p, "192.0.2.1", 443, GRANT_VIA_CONNECT, "3221225985", &v);
	assert_string_equal(v.reason, "not-granted");
	judge(p, "192.0.2.1", 443, GRANT_VIA_CONNECT, "192.0.2.2", &v);
	assert_string_equal(v.reason, "host-mismatch");
	policy_free(p);
	config_release(c);
}

static void test_store_grants(void **state)
{
	struct grant store[4];
	struct policy *p;
	struct verdict v;

	store[0] = grant_of("once.example", GRANT_ONCE);
	store[0].added = NOW - 10;
	store[0].expires = NOW + 100;
	store[1] = grant_of("expired.example", GRANT_ONCE);
	store[1].expires = NOW - 1;
	store[2] = grant_of("session.example", GRANT_SESSION);
	memcpy(store[2].run, RUN, sizeof(RUN));
	store[3] = grant_of("oldrun.example", GRANT_SESSION);
	memcpy(store[3].run, "fedcba9876543210", 17);

	/* no config at all: enforce, store grants only, dead ones left out */
	p = policy_new(NULL, store, 4, false, NULL, 0, RUN, NOW);
	assert_non_null(p);
	assert_int_equal(p->mode, MODE_ENFORCE);
	assert_int_equal(p->ngrants, 2);
	judge(p, "once.example", 443, GRANT_VIA_CONNECT, NULL, &v);
	assert_true(v.allow);
	assert_int_equal(v.grant->level, GRANT_ONCE);
	judge(p, "session.example", 443, GRANT_VIA_CONNECT, NULL, &v);
	assert_true(v.allow);
	judge(p, "expired.example", 443, GRANT_VIA_CONNECT, NULL, &v);
	assert_false(v.allow);
	judge(p, "oldrun.example", 443, GRANT_VIA_CONNECT, NULL, &v);
	assert_false(v.allow);

	/* a once grant that expires after the snapshot was built */
	{
		struct host h = host_of("once.example");
		struct policy_request r = { .via = GRANT_VIA_CONNECT, .host = &h, .port = 443 };

		policy_judge(p, &r, NOW + 99, &v);
		assert_true(v.allow);
		policy_judge(p, &r, NOW + 100, &v);
		assert_false(v.allow);
	}
	policy_free(p);

	/* no run id: no session grant is live */
	p = policy_new(NULL, store, 4, false, NULL, 0, NULL, NOW);
	assert_non_null(p);
	assert_int_equal(p->ngrants, 1);
	judge(p, "session.example", 443, GRANT_VIA_CONNECT, NULL, &v);
	assert_false(v.allow);
	policy_free(p);
	policy_free(NULL);
}

static void test_denied_addresses(void **state)
{
	struct config *c = config_of(MODE_ENFORCE);
	struct policy *p = policy_new(c, NULL, 0, false, NULL, 0, RUN, NOW);
	struct verdict v;

	judge_addr(p, "example.com", "10.1.2.3", &v);
	assert_false(v.allow);
	assert_int_equal(v.status, 403);
	assert_string_equal(v.reason, "denied-ip");
	assert_string_equal(v.proxy_status, "destination_ip_prohibited");
	assert_string_equal(v.detail, "10.1.2.3 is in denied range 10.0.0.0/8");

	judge_addr(p, "example.com", "192.0.2.1", &v);
	assert_true(v.allow);
	assert_string_equal(v.detail, "");
	judge_addr(p, "example.com", "2001:db8::1", &v);
	assert_true(v.allow);
	judge_addr(p, "example.com", "::1", &v);
	assert_false(v.allow);
	assert_string_equal(v.detail, "::1 is in denied range ::1/128");
	judge_addr(p, "example.com", "::ffff:8.8.8.8", &v);
	assert_false(v.allow);
	assert_string_equal(v.detail, "::ffff:8.8.8.8 is in denied range ::ffff:0:0/96");
	judge_addr(p, "example.com", "64:ff9b::808:808", &v);
	assert_false(v.allow);

	/* an IP-literal destination is checked before any grant */
	judge(p, "0x7f.1", 443, GRANT_VIA_CONNECT, NULL, &v);
	assert_false(v.allow);
	assert_string_equal(v.reason, "denied-ip");
	assert_string_equal(v.detail, "127.0.0.1 is in denied range 127.0.0.0/8");
	judge(p, "[::ffff:169.254.169.254]", 80, GRANT_VIA_HTTP, NULL, &v);
	assert_false(v.allow);
	assert_string_equal(v.detail, "169.254.169.254 is in denied range 169.254.0.0/16");
	policy_free(p);
	config_release(c);
}

static void test_exceptions(void **state)
{
	struct config *c = config_of(MODE_ENFORCE);
	struct policy *p = policy_new(c, NULL, 0, false, NULL, 0, RUN, NOW);
	struct verdict v;

	judge_addr(p, "internal.example.com", "10.1.2.3", &v);
	assert_true(v.allow);
	judge_addr(p, "Internal.Example.com.", "10.1.255.255", &v);
	assert_true(v.allow);
	/* outside the excepted range, or another host */
	judge_addr(p, "internal.example.com", "10.2.0.1", &v);
	assert_false(v.allow);
	assert_string_equal(v.reason, "denied-ip");
	judge_addr(p, "a.internal.example.com", "10.1.2.3", &v);
	assert_false(v.allow);
	judge_addr(p, "example.com", "10.1.2.3", &v);
	assert_false(v.allow);
	/* an IPv4-mapped answer is judged by its IPv4 address too */
	judge_addr(p, "internal.example.com", "::ffff:10.1.2.3", &v);
	assert_true(v.allow);
	judge_addr(p, "internal.example.com", "::ffff:10.2.2.3", &v);
	assert_false(v.allow);
	judge_addr(p, "internal.example.com", "::ffff:127.0.0.1", &v);
	assert_false(v.allow);
	/* IPv6 exceptions */
	judge_addr(p, "v6.example.com", "fd12::1", &v);
	assert_true(v.allow);
	judge_addr(p, "v6.example.com", "fe80::1", &v);
	assert_false(v.allow);
	assert_string_equal(v.detail, "fe80::1 is in denied range fe80::/10");
	policy_free(p);
	config_release(c);
}

static void test_own_addresses(void **state)
{
	struct config *c = config_of(MODE_ENFORCE);
	struct ipnet own[3] = { net_of("203.0.113.7"), net_of("2001:db8::7"), net_of("10.1.0.1") };
	struct policy *p = policy_new(c, NULL, 0, false, own, 3, RUN, NOW);
	struct verdict v;

	assert_non_null(p);
	assert_int_equal(p->nown, 3);
	judge_addr(p, "example.com", "203.0.113.7", &v);
	assert_false(v.allow);
	assert_string_equal(v.reason, "own-address");
	assert_string_equal(v.proxy_status, "destination_ip_prohibited");
	assert_string_equal(v.detail, "203.0.113.7 is the proxy's own address");
	judge_addr(p, "example.com", "203.0.113.8", &v);
	assert_true(v.allow);
	judge_addr(p, "example.com", "2001:db8::7", &v);
	assert_false(v.allow);
	assert_string_equal(v.reason, "own-address");
	judge_addr(p, "example.com", "::ffff:203.0.113.7", &v);
	assert_false(v.allow);
	assert_string_equal(v.reason, "own-address");
	/* an exception covering an own address lets it through */
	judge_addr(p, "internal.example.com", "10.1.0.1", &v);
	assert_true(v.allow);
	judge_addr(p, "example.com", "10.1.0.1", &v);
	assert_false(v.allow);
	assert_string_equal(v.reason, "own-address");
	/* an own address named as the destination, even when granted */
	judge(p, "203.0.113.7", 443, GRANT_VIA_CONNECT, NULL, &v);
	assert_false(v.allow);
	assert_string_equal(v.reason, "own-address");
	policy_free(p);
	config_release(c);
}

static void test_ip_literal_grant(void **state)
{
	struct grant store[2];
	struct policy *p;
	struct verdict v;

	store[0] = grant_of("192.0.2.1", GRANT_PERMANENT);
	store[1] = grant_of("10.0.0.1", GRANT_PERMANENT);
	p = policy_new(NULL, store, 2, false, NULL, 0, RUN, NOW);
	assert_non_null(p);
	judge(p, "3221225985", 443, GRANT_VIA_CONNECT, NULL, &v);
	assert_true(v.allow);
	assert_string_equal(v.reason, "granted");
	/* a grant never overrides the deny list */
	judge(p, "10.0.0.1", 443, GRANT_VIA_CONNECT, NULL, &v);
	assert_false(v.allow);
	assert_string_equal(v.reason, "denied-ip");
	policy_free(p);
}

/*
 * A wildcard grant stops at a public suffix below it, CONNECT and plain
 * HTTP alike: *.amazonaws.com does not reach a tenant of s3.amazonaws.com.
 */
static void test_wildcard_public_suffix_below(void **state)
{
	struct grant store[1];
	struct policy *p;
	struct verdict v;

	store[0] = grant_of("*.amazonaws.com", GRANT_PERMANENT);
	p = policy_new(NULL, store, 1, false, NULL, 0, RUN, NOW);
	assert_non_null(p);
	judge(p, "attacker-bucket.s3.amazonaws.com", 443, GRANT_VIA_CONNECT, NULL, &v);
	assert_false(v.allow);
	assert_int_equal(v.status, 403);
	assert_string_equal(v.reason, "not-granted");
	judge(p, "attacker-bucket.s3.amazonaws.com", 80, GRANT_VIA_HTTP,
	      "attacker-bucket.s3.amazonaws.com", &v);
	assert_false(v.allow);
	assert_string_equal(v.reason, "not-granted");
	judge(p, "www.amazonaws.com", 443, GRANT_VIA_CONNECT, NULL, &v);
	assert_true(v.allow);
	assert_string_equal(v.reason, "granted");
	judge(p, "ec2.amazonaws.com", 80, GRANT_VIA_HTTP, "ec2.amazonaws.com", &v);
	assert_true(v.allow);
	policy_free(p);
}

/* Scoped store grants: only the principals they name; an unattributed connection none of them. */
static void test_scoped_grants(void **state)
{
	struct grant store[3];
	struct host h = host_of("api.example");
	struct policy_request r = { .via = GRANT_VIA_CONNECT, .host = &h, .port = 443 };
	const char *err;
	struct policy *p;
	struct verdict v;

	store[0] = grant_of("api.example", GRANT_PERMANENT);
	assert_int_equal(grant_scope_add(&store[0], "10.0.0.5@lab", &err), 0);
	assert_int_equal(grant_scope_add(&store[0], "container:0123456789ab", &err), 0);
	store[1] = grant_of("api.example:8443", GRANT_PERMANENT);
	store[2] = grant_of("api.example:8443", GRANT_PERMANENT);
	assert_int_equal(grant_scope_add(&store[2], "user", &err), 0);
	p = policy_new(NULL, store, 3, false, NULL, 0, RUN, NOW);
	assert_non_null(p);

	r.who = "10.0.0.5@lab";
	r.src = "10.0.0.5";
	policy_judge(p, &r, NOW, &v);
	assert_true(v.allow);
	assert_ptr_equal(v.grant, &p->grants[0]);
	assert_non_null(v.by);
	assert_string_equal(v.by->text, "10.0.0.5@lab");

	/* its neighbour on the same network is refused, naming the grant it missed */
	r.who = "10.0.0.6@lab";
	r.src = "10.0.0.6";
	policy_judge(p, &r, NOW, &v);
	assert_false(v.allow);
	assert_int_equal(v.status, 403);
	assert_string_equal(v.reason, "not-granted");
	assert_ptr_equal(v.scoped, &p->grants[0]);
	assert_string_equal(v.detail, "api.example:443 is not granted to this principal");

	r.who = "127.0.0.1@vm";
	r.src = "127.0.0.1";
	r.as = "container:0123456789abcdef0123456789abcdef0123456789abcdef0123456789ab";
	policy_judge(p, &r, NOW, &v);
	assert_true(v.allow);
	assert_string_equal(v.by->text, "container:0123456789ab");

	r.who = r.src = r.as = NULL;
	policy_judge(p, &r, NOW, &v);
	assert_false(v.allow);
	assert_ptr_equal(v.scoped, &p->grants[0]);
	assert_string_equal(v.detail, "api.example:443 is not granted to an unattributed connection");

	/* an unscoped grant serves the unattributed connection; v.by stays NULL */
	r.port = 8443;
	policy_judge(p, &r, NOW, &v);
	assert_true(v.allow);
	assert_ptr_equal(v.grant, &p->grants[1]);
	assert_null(v.by);

	/* observe mode lets a scoped refusal through, marked */
	p->mode = MODE_OBSERVE;
	r.port = 443;
	policy_judge(p, &r, NOW, &v);
	assert_true(v.allow);
	assert_true(v.observed);
	policy_free(p);
}

/*
 * A budget brakes every request its grant serves: an unbudgeted grant that
 * serves the request first does not lift it, unless the budgeted one does
 * not serve this principal.
 */
/* verdict.tunnel: a live tunnel grant serving the CONNECT names its host and port; never a plain one */
static void test_tunnel_grant(void **state)
{
	struct grant store[4];
	struct verdict v;
	struct policy *p;
	const char *err;

	(void)state;
	store[0] = grant_of("db.example:5432", GRANT_PERMANENT);
	store[1] = grant_of("db.example:5432", GRANT_PERMANENT);
	assert_int_equal(grant_tunnel_word(&store[1], "tunnel", 6, &err), 1);
	store[2] = grant_of("db.example:22", GRANT_PERMANENT);
	store[3] = grant_of("db.example:7000", GRANT_PERMANENT);
	assert_int_equal(grant_tunnel_word(&store[3], "tunnel", 6, &err), 1);
	assert_int_equal(grant_scope_add(&store[3], "user", &err), 0);
	p = policy_new(NULL, store, 4, false, NULL, 0, RUN, NOW);
	assert_non_null(p);

	/* the plain grant comes first and allows; the tunnel grant behind it makes it raw */
	judge(p, "db.example", 5432, GRANT_VIA_CONNECT, NULL, &v);
	assert_true(v.allow);
	assert_ptr_equal(v.grant, &p->grants[0]);
	assert_true(v.tunnel);
	judge(p, "db.example", 5432, GRANT_VIA_HTTP, NULL, &v);
	assert_true(v.allow);
	assert_false(v.tunnel);
	judge(p, "db.example", 22, GRANT_VIA_CONNECT, NULL, &v);
	assert_true(v.allow);
	assert_false(v.tunnel);
	/* a tunnel grant scoped to others does not serve an unattributed CONNECT */
	judge(p, "db.example", 7000, GRANT_VIA_CONNECT, NULL, &v);
	assert_false(v.allow);
	assert_false(v.tunnel);
	judge(p, "db.example", 443, GRANT_VIA_CONNECT, NULL, &v);
	assert_false(v.allow);
	assert_false(v.tunnel);
	policy_free(p);
}

static void test_budgeted_grant_wins(void **state)
{
	struct grant store[3];
	struct host h = host_of("api.acme.example");
	struct policy_request r = { .via = GRANT_VIA_HTTP, .host = &h, .port = 80 };
	const char *err;
	struct policy *p;
	struct verdict v;

	(void)state;
	store[0] = grant_of("*.acme.example", GRANT_PERMANENT);
	store[1] = grant_of("api.acme.example", GRANT_PERMANENT);
	store[1].max_requests = 3;
	assert_int_equal(grant_scope_add(&store[1], "10.0.0.5@lab", &err), 0);
	store[2] = grant_of("other.acme.example", GRANT_PERMANENT);
	p = policy_new(NULL, store, 3, false, NULL, 0, RUN, NOW);
	assert_non_null(p);
	assert_int_equal(p->nbudgeted, 1);

	r.who = "10.0.0.5@lab";
	r.src = "10.0.0.5";
	policy_judge(p, &r, NOW, &v);
	assert_true(v.allow);
	assert_ptr_equal(v.grant, &p->grants[1]);
	assert_string_equal(v.by->text, "10.0.0.5@lab");

	/* another principal: the budgeted grant does not serve it, the wildcard does */
	r.who = "10.0.0.6@lab";
	r.src = "10.0.0.6";
	policy_judge(p, &r, NOW, &v);
	assert_true(v.allow);
	assert_ptr_equal(v.grant, &p->grants[0]);
	assert_null(v.by);

	/* a host no budgeted grant names: the first that serves it */
	h = host_of("other.acme.example");
	policy_judge(p, &r, NOW, &v);
	assert_ptr_equal(v.grant, &p->grants[0]);
	policy_free(p);
}

/* The store's mode over the config's; a learn window observes until its end, then enforces. */
static void test_store_mode(void **state)
{
	struct config *c = config_of(MODE_OBSERVE);
	struct policy *p = policy_new(c, NULL, 0, false, NULL, 0, RUN, NOW);
	struct grant_mode m = { 0 };
	struct verdict v;

	config_release(c);
	assert_non_null(p);
	policy_set_mode(p, &m); /* no mode line: the config's */
	assert_int_equal(policy_mode_at(p, NOW), MODE_OBSERVE);
	m.set = true;
	m.kind = GRANT_MODE_ENFORCE;
	policy_set_mode(p, &m);
	assert_int_equal(policy_mode_at(p, NOW), MODE_ENFORCE);
	assert_string_equal(policy_mode_name(p, NOW), "enforce");
	judge(p, "nope.example", 443, GRANT_VIA_CONNECT, NULL, &v);
	assert_false(v.allow);

	m.kind = GRANT_MODE_LEARN;
	m.until = NOW + 60;
	policy_set_mode(p, &m);
	assert_string_equal(policy_mode_name(p, NOW), "learn");
	judge(p, "nope.example", 443, GRANT_VIA_CONNECT, NULL, &v); /* judge() asks at NOW */
	assert_true(v.allow);
	assert_true(v.observed);
	assert_int_equal(policy_mode_at(p, NOW + 59), MODE_OBSERVE);
	assert_int_equal(policy_mode_at(p, NOW + 60), MODE_ENFORCE);
	assert_string_equal(policy_mode_name(p, NOW + 60), "enforce");
	{
		struct host h = host_of("nope.example");
		struct policy_request r = { .via = GRANT_VIA_CONNECT, .host = &h, .port = 443 };

		policy_judge(p, &r, NOW + 60, &v);
		assert_false(v.allow);
		assert_string_equal(v.reason, "not-granted");
	}
	policy_free(p);
}

/*
 * A handed-over quiet host (an agent profile's telemetry): refused with
 * reason quiet to a principal its line names, on any port, in observe mode
 * too; to anyone else an ordinary not-granted refusal; a grant serving the
 * request still wins.
 */
static void test_quiet_hosts(void **state)
{
	struct config *c = config_of(MODE_ENFORCE);
	struct grant q[2], store[1];
	struct host h = host_of("statsig.example"), sub = host_of("o1.sentry.example");
	struct policy_request r = { .via = GRANT_VIA_HTTP, .host = &h, .port = 80,
				    .who = "10.0.0.5@lab", .src = "10.0.0.5" };
	const char *err;
	struct policy *p;
	struct verdict v;

	(void)state;
	q[0] = grant_of("statsig.example", GRANT_CONFIG);
	assert_int_equal(grant_scope_add(&q[0], "10.0.0.5@lab", &err), 0);
	q[1] = grant_of("*.sentry.example", GRANT_CONFIG);
	assert_int_equal(grant_scope_add(&q[1], "10.0.0.5@lab", &err), 0);
	c->agent_quiet = q;
	c->nagent_quiet = 2;
	p = policy_new(c, NULL, 0, false, NULL, 0, RUN, NOW);
	assert_non_null(p);
	c->agent_quiet = NULL; /* the policy holds its own copy */
	memset(q, 0, sizeof(q));

	policy_judge(p, &r, NOW, &v);
	assert_false(v.allow);
	assert_int_equal(v.status, 403);
	assert_string_equal(v.reason, "quiet");
	assert_string_equal(v.proxy_status, "http_request_denied");
	assert_string_equal(v.detail, "statsig.example is a quiet host of the run's agent profile: its "
				      "telemetry, refused on purpose (nothing to grant)");
	r.via = GRANT_VIA_CONNECT;
	r.port = 8443;
	policy_judge(p, &r, NOW, &v);
	assert_string_equal(v.reason, "quiet");
	r.host = &sub;
	policy_judge(p, &r, NOW, &v);
	assert_string_equal(v.reason, "quiet");

	/* another principal, an unattributed connection: not the run's telemetry */
	r.host = &h;
	r.who = "10.0.0.6@lab";
	r.src = "10.0.0.6";
	policy_judge(p, &r, NOW, &v);
	assert_string_equal(v.reason, "not-granted");
	r.who = r.src = NULL;
	policy_judge(p, &r, NOW, &v);
	assert_string_equal(v.reason, "not-granted");

	/* observe mode (a learn window): still refused, never observed */
	r.who = "10.0.0.5@lab";
	r.src = "10.0.0.5";
	p->mode = MODE_OBSERVE;
	policy_judge(p, &r, NOW, &v);
	assert_false(v.allow);
	assert_false(v.observed);
	assert_string_equal(v.reason, "quiet");
	policy_free(p);

	/* an operator's own grant serves it */
	store[0] = grant_of("statsig.example:8443", GRANT_PERMANENT);
	c->agent_quiet = q;
	q[0] = grant_of("statsig.example", GRANT_CONFIG);
	assert_int_equal(grant_scope_add(&q[0], "10.0.0.5@lab", &err), 0);
	c->nagent_quiet = 1;
	p = policy_new(c, store, 1, false, NULL, 0, RUN, NOW);
	assert_non_null(p);
	policy_judge(p, &r, NOW, &v);
	assert_true(v.allow);
	assert_string_equal(v.reason, "granted");
	policy_free(p);
	c->agent_quiet = NULL;
	config_release(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_grants_enforce),
		cmocka_unit_test(test_observe),
		cmocka_unit_test(test_host_mismatch),
		cmocka_unit_test(test_store_grants),
		cmocka_unit_test(test_denied_addresses),
		cmocka_unit_test(test_exceptions),
		cmocka_unit_test(test_own_addresses),
		cmocka_unit_test(test_ip_literal_grant),
		cmocka_unit_test(test_wildcard_public_suffix_below),
		cmocka_unit_test(test_scoped_grants),
		cmocka_unit_test(test_budgeted_grant_wins),
		cmocka_unit_test(test_tunnel_grant),
		cmocka_unit_test(test_store_mode),
		cmocka_unit_test(test_quiet_hosts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
