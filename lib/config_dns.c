/*
 * config_dns.c: the directives only sluice-dns reads (config.h lists them),
 * parsed, defaulted and printed.
 *
 * The proxy parses them too, so one file configures both daemons and a
 * mistake in either's lines stops both. Names and patterns are
 * canonicalised here (grant_parse), so sluice-dns compares canonical text.
 * Whether a ca= file exists is sluice-dns's to find out.
 */
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "config_parser.h"
#include "dns_msg.h"
#include "sockaddr.h"

#define DNS_LOG_DEFAULT_NAME "dns.log"
#define DEFAULT_DNS_LISTEN "127.0.0.1:53"
#define DNS_PORT 53
#define DOT_PORT 853
#define MAX_DNS_TYPES 256

void config_dns_defaults(struct config *c)
{
	sockaddr_parse(DEFAULT_DNS_LISTEN, 0, 0, &c->dns_listen[0]);
	c->ndns_listen = 1;
	c->dns_timeout_ms = 2000;
	c->dns_min_ttl = 60;
	c->dns_max_ttl = 86400;
	c->dns_negative_ttl = 300;
	c->dns_cache_entries = 100000;
	c->dns_wildcard_budget = 256;
	c->dns_wildcard_window = 600;
	snprintf(c->dns_log_path, sizeof(c->dns_log_path), "%s/%s", c->state_dir,
		 DNS_LOG_DEFAULT_NAME);
}

void config_dns_listen(struct parser *p, char **w, size_t nw)
{
	struct config *c = p->c;
	struct sockaddr_storage ss;
	char buf[64];

	if (sockaddr_parse(w[1], 0, 0, &ss) == -1) {
		config_error(p, "dns-listen: bad address \"%s\": expected a numeric ADDR:PORT or "
				"[ADDR]:PORT", w[1]);
		return;
	}
	if (!p->dns_listen_given) {
		p->dns_listen_given = true;
		c->ndns_listen = 0;
	}
	for (size_t i = 0; i < c->ndns_listen; i++) {
		if (sockaddr_same(&c->dns_listen[i], &ss)) {
			config_error(p, "dns-listen: %s given twice",
				     sockaddr_format(&ss, buf, sizeof(buf)));
			return;
		}
	}
	if (c->ndns_listen == CONFIG_MAX_LISTEN) {
		config_error(p, "dns-listen: more than %d addresses", CONFIG_MAX_LISTEN);
		return;
	}
	c->dns_listen[c->ndns_listen++] = ss;
}

/* A key=value word of dns-upstream into u; the address is already there. */
static int upstream_option(struct parser *p, const char *word, struct config_dns_upstream *u)
{
	struct host h;
	const char *err;

	if (strncmp(word, "tls=", 4) == 0) {
		if (u->tls_name[0] != '\0') {
			config_error(p, "dns-upstream: tls= given twice");
			return -1;
		}
		/* the name the server's certificate must carry: a host name, not an address */
		if (host_canon(word + 4, strlen(word + 4), &h, &err) == -1 || h.kind != HOST_NAME) {
			config_error(p, "dns-upstream: tls=%s: expected the server's host name",
				     word + 4);
			return -1;
		}
		memcpy(u->tls_name, h.name, sizeof(h.name));
		return 0;
	}
	if (strncmp(word, "ca=", 3) == 0) {
		if (u->ca_file[0] != '\0') {
			config_error(p, "dns-upstream: ca= given twice");
			return -1;
		}
		return config_path_arg(p, "dns-upstream ca=", word + 3, u->ca_file);
	}
	config_error(p, "dns-upstream: unknown option \"%s\": expected tls=NAME or ca=FILE", word);
	return -1;
}

void config_dns_upstream(struct parser *p, char **w, size_t nw)
{
	struct config *c = p->c;
	struct config_dns_upstream u;
	bool tls = false;
	char buf[64];

	memset(&u, 0, sizeof(u));
	if (nw > 4) {
		config_error(p, "dns-upstream: expects ADDR[:PORT] [tls=NAME] [ca=FILE]");
		return;
	}
	for (size_t i = 2; i < nw; i++)
		tls |= strncmp(w[i], "tls=", 4) == 0;
	if (sockaddr_parse(w[1], SOCKADDR_PORT_OPTIONAL, tls ? DOT_PORT : DNS_PORT, &u.addr) == -1) {
		config_error(p, "dns-upstream: bad address \"%s\": expected a numeric ADDR, "
				"ADDR:PORT or [ADDR]:PORT", w[1]);
		return;
	}
	for (size_t i = 2; i < nw; i++)
		if (upstream_option(p, w[i], &u) == -1)
			return;
	if (u.ca_file[0] != '\0' && u.tls_name[0] == '\0') {
		config_error(p, "dns-upstream: ca= without tls=: a plain upstream has no certificate");
		return;
	}
	for (size_t i = 0; i < c->ndns_upstreams; i++) {
		if (sockaddr_same(&c->dns_upstreams[i].addr, &u.addr)) {
			config_error(p, "dns-upstream: %s given twice",
				     sockaddr_format(&u.addr, buf, sizeof(buf)));
			return;
		}
	}
	if (c->ndns_upstreams == CONFIG_MAX_NAMESERVERS) {
		config_error(p, "dns-upstream: more than %d upstreams", CONFIG_MAX_NAMESERVERS);
		return;
	}
	c->dns_upstreams[c->ndns_upstreams++] = u;
}

static void bounded_arg(struct parser *p, const char *dir, const char *s, uint64_t lo,
			uint64_t hi, unsigned *out)
{
	uint64_t v;

	if (config_number_arg(p, dir, s, lo, hi, &v) == 0)
		*out = (unsigned)v;
}

void config_dns_timeout(struct parser *p, char **w, size_t nw)
{
	unsigned s = 0;

	bounded_arg(p, "dns-timeout", w[1], 1, 30, &s);
	if (s != 0)
		p->c->dns_timeout_ms = s * 1000;
}

void config_dns_min_ttl(struct parser *p, char **w, size_t nw)
{
	bounded_arg(p, "dns-min-ttl", w[1], 0, 86400, &p->c->dns_min_ttl);
}

void config_dns_max_ttl(struct parser *p, char **w, size_t nw)
{
	bounded_arg(p, "dns-max-ttl", w[1], 1, 7 * 86400, &p->c->dns_max_ttl);
}

void config_dns_negative_ttl(struct parser *p, char **w, size_t nw)
{
	bounded_arg(p, "dns-negative-ttl", w[1], 0, 86400, &p->c->dns_negative_ttl);
}

void config_dns_cache_entries(struct parser *p, char **w, size_t nw)
{
	bounded_arg(p, "dns-cache-entries", w[1], 0, 10 * 1000 * 1000, &p->c->dns_cache_entries);
}

void config_dns_allow_type(struct parser *p, char **w, size_t nw)
{
	struct config *c = p->c;
	struct config_dns_type t, *grown;
	struct grant g;
	const char *err = "bad pattern";

	if (grant_parse(w[1], strlen(w[1]), &g, &err) == -1 || g.port != 0) {
		config_error(p, "dns-allow-type: bad pattern \"%s\": %s", w[1],
			     g.port != 0 ? "no port here" : err);
		return;
	}
	if (dns_type_parse(w[2], &t.type) == -1) {
		config_error(p, "dns-allow-type: unknown type \"%s\": a mnemonic (TXT, MX, SRV, "
				"PTR...) or TYPEn", w[2]);
		return;
	}
	/* HTTPS and SVCB carry ECH configs and address hints past every check; ANY is no type */
	if (t.type == DNS_T_HTTPS || t.type == DNS_T_SVCB || t.type == DNS_T_ANY ||
	    t.type == DNS_T_OPT || t.type == DNS_T_A || t.type == DNS_T_AAAA ||
	    t.type == DNS_T_CNAME) {
		char tb[DNS_TYPE_TEXT_MAX];

		config_error(p, "dns-allow-type: %s cannot be allowed%s", dns_type_name(t.type, tb),
			     t.type == DNS_T_A || t.type == DNS_T_AAAA || t.type == DNS_T_CNAME
				     ? " this way: A, AAAA and their CNAMEs are answered for "
				       "every name the policy allows"
				     : " (it would carry what the policy cannot check)");
		return;
	}
	if (c->ndns_types == MAX_DNS_TYPES) {
		config_error(p, "dns-allow-type: more than %d lines", MAX_DNS_TYPES);
		return;
	}
	memcpy(t.pattern.host, g.host, sizeof(g.host));
	t.pattern.wildcard = g.wildcard;
	grown = realloc(c->dns_types, (c->ndns_types + 1) * sizeof(*grown));
	if (grown == NULL) {
		config_error(p, "dns-allow-type: out of memory");
		return;
	}
	c->dns_types = grown;
	c->dns_types[c->ndns_types++] = t;
}

void config_dns_wildcard_budget(struct parser *p, char **w, size_t nw)
{
	uint64_t n, s;

	if (config_number_arg(p, "dns-wildcard-budget", w[1], 1, 65536, &n) == -1 ||
	    config_number_arg(p, "dns-wildcard-budget", w[2], 1, 86400, &s) == -1)
		return;
	p->c->dns_wildcard_budget = (unsigned)n;
	p->c->dns_wildcard_window = (unsigned)s;
}

void config_dns_log(struct parser *p, char **w, size_t nw)
{
	config_path_arg(p, "dns-log", w[1], p->c->dns_log_path);
}

void config_dns_finish(struct parser *p, bool log_given, size_t state_line)
{
	struct config *c = p->c;

	if (!log_given) {
		int n = snprintf(c->dns_log_path, sizeof(c->dns_log_path), "%s/%s", c->state_dir,
				 DNS_LOG_DEFAULT_NAME);

		if (n < 0 || (size_t)n >= sizeof(c->dns_log_path)) {
			p->line = state_line;
			config_error(p, "state: path too long for the default dns-log %s/%s",
				     c->state_dir, DNS_LOG_DEFAULT_NAME);
		}
	}
	if (c->dns_min_ttl > c->dns_max_ttl) {
		config_error(p, "dns-min-ttl %u is over dns-max-ttl %u", c->dns_min_ttl,
			     c->dns_max_ttl);
	}
}

bool config_dns_type_allowed(const struct config *c, const char *name, uint16_t type)
{
	for (size_t i = 0; i < c->ndns_types; i++) {
		const struct config_dns_type *t = &c->dns_types[i];

		if (t->type != type)
			continue;
		if (t->pattern.wildcard ? grant_wildcard_covers(t->pattern.host, name)
					: strcmp(t->pattern.host, name) == 0)
			return true;
	}
	return false;
}

void config_dns_print(const struct config *c, FILE *out)
{
	char buf[HOST_NAME_MAX_LEN + 64], tb[DNS_TYPE_TEXT_MAX];

	for (size_t i = 0; i < c->ndns_listen; i++)
		fprintf(out, "dns-listen %s\n", sockaddr_format(&c->dns_listen[i], buf, sizeof(buf)));
	if (c->ndns_upstreams == 0)
		fprintf(out, "# dns-upstream: none given, /etc/resolv.conf's nameservers, plain\n");
	for (size_t i = 0; i < c->ndns_upstreams; i++) {
		const struct config_dns_upstream *u = &c->dns_upstreams[i];

		fprintf(out, "dns-upstream %s", sockaddr_format(&u->addr, buf, sizeof(buf)));
		if (u->tls_name[0] != '\0')
			fprintf(out, " tls=%s", u->tls_name);
		if (u->ca_file[0] != '\0')
			fprintf(out, " ca=%s", u->ca_file);
		fputc('\n', out);
	}
	fprintf(out, "dns-timeout %u\n", c->dns_timeout_ms / 1000);
	fprintf(out, "dns-min-ttl %u\n", c->dns_min_ttl);
	fprintf(out, "dns-max-ttl %u\n", c->dns_max_ttl);
	fprintf(out, "dns-negative-ttl %u\n", c->dns_negative_ttl);
	fprintf(out, "dns-cache-entries %u\n", c->dns_cache_entries);
	for (size_t i = 0; i < c->ndns_types; i++) {
		struct grant g;

		memset(&g, 0, sizeof(g));
		memcpy(g.host, c->dns_types[i].pattern.host, sizeof(g.host));
		g.wildcard = c->dns_types[i].pattern.wildcard;
		fprintf(out, "dns-allow-type %s %s\n", grant_format(&g, buf, sizeof(buf)),
			dns_type_name(c->dns_types[i].type, tb));
	}
	fprintf(out, "dns-wildcard-budget %u %u\n", c->dns_wildcard_budget,
		c->dns_wildcard_window);
	fprintf(out, "dns-log %s\n", c->dns_log_path);
}
