/*
 * config_parser.h: private to config.c and the config_*.c it calls, the state of one
 * config_parse run and the helpers the directive parsers share.
 *
 * A directive parser gets the words of its line (the directive's name in
 * w[0]), reports every problem through config_error and leaves the config
 * untouched when it reports one.
 */
#ifndef SLUICE_CONFIG_PARSER_H
#define SLUICE_CONFIG_PARSER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"

#define CONFIG_LINE_MAX 4096 /* bytes of one line, its '\n' not counted */

enum config_kind {
	CONFIG_MAIN,     /* sluice.conf */
	CONFIG_HANDOVER, /* STATE/agents.conf: allow, inject and quiet (for=) only */
	CONFIG_PROFILE,  /* etc/agents/NAME.conf: allow, inject, about, sandbox-env, quiet */
};

struct parser {
	struct config *c;
	enum config_kind kind;
	const char *file;
	FILE *errs;
	size_t line; /* 1-based line being read */
	int nerr;
	bool listen_given; /* the first listen replaces the default */
	size_t state_line; /* 0: state not given */
	bool dns_listen_given; /* the first dns-listen replaces the default */
	size_t first_seen[48]; /* per directive index: line first seen, 0 if not */
};

/* config.c */

/* Count an error and write "file:line: message\n" to the error stream. */
void config_error(struct parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A number within lo..hi, or an error naming the directive. Returns 0 or -1. */
int config_number_arg(struct parser *p, const char *dir, const char *s, uint64_t lo,
		      uint64_t hi, uint64_t *out);

/* Copy a path argument into dst (PATH_MAX). Returns 0 or -1 after an error. */
int config_path_arg(struct parser *p, const char *dir, const char *s, char *dst);

/* config_allow.c: allow, allow-private, and their lines of the normalised form */

void config_allow(struct parser *p, char **w, size_t nw);
void config_allow_private(struct parser *p, char **w, size_t nw);
void config_allow_print(const struct config *c, FILE *out);

/* config_tls.c: intercept, passthrough, upstream-ca, body-limit, inject */

void config_tls_intercept(struct parser *p, char **w, size_t nw);
void config_tls_refuse_page(struct parser *p, char **w, size_t nw);
void config_tls_passthrough(struct parser *p, char **w, size_t nw);
void config_tls_upstream_ca(struct parser *p, char **w, size_t nw);
void config_tls_body_limit(struct parser *p, char **w, size_t nw);
void config_tls_inject(struct parser *p, char **w, size_t nw);

/* Their lines of the normalised form, in that order. */
void config_tls_print(const struct config *c, FILE *out);

/* config_agent.c: an agent profile's own directives (CONFIG_PROFILE only) */

void config_agent_about(struct parser *p, char **w, size_t nw);
void config_agent_sandbox_env(struct parser *p, char **w, size_t nw);
void config_agent_quiet(struct parser *p, char **w, size_t nw);
/* After a profile parsed: each inject reads env= (the run's environment). */
void config_agent_finish(struct parser *p);

/* config_dns.c: sluice-dns's directives */

void config_dns_listen(struct parser *p, char **w, size_t nw);
void config_dns_upstream(struct parser *p, char **w, size_t nw);
void config_dns_timeout(struct parser *p, char **w, size_t nw);
void config_dns_min_ttl(struct parser *p, char **w, size_t nw);
void config_dns_max_ttl(struct parser *p, char **w, size_t nw);
void config_dns_negative_ttl(struct parser *p, char **w, size_t nw);
void config_dns_cache_entries(struct parser *p, char **w, size_t nw);
void config_dns_allow_type(struct parser *p, char **w, size_t nw);
void config_dns_wildcard_budget(struct parser *p, char **w, size_t nw);
void config_dns_log(struct parser *p, char **w, size_t nw);

/* config_metrics.c: metrics-listen, dns-metrics-listen, and their lines (dns: the second) */

void config_metrics_listen(struct parser *p, char **w, size_t nw);
void config_dns_metrics_listen(struct parser *p, char **w, size_t nw);
void config_metrics_print(const struct config *c, bool dns, FILE *out);

/* Defaults into a new config; the checks and defaults that need the whole file. */
void config_dns_defaults(struct config *c);
void config_dns_finish(struct parser *p, bool log_given, size_t state_line);
void config_dns_print(const struct config *c, FILE *out);

#endif
