/*
 * config.h: the directive file sluice-proxy and the CLI read.
 *
 * Line-oriented, in the tradition of unbound and dnsmasq: one directive
 * per line, words separated by blanks, '#' to end of line is a comment.
 * Every error is reported as "file:line: message"; a file with any error
 * is not used. Relative paths are taken relative to the working directory.
 *
 *   listen ADDR:PORT          repeatable; default 127.0.0.1:3128; or
 *          unix:PATH          a socket file (0600, for a sluice-forward on
 *                             this host: no TCP hop)
 *   allow GRANT [for=SCOPE]...  repeatable; the config's own permanent grants;
 *                             each for= (scope.h, not a container name)
 *                             limits it to connections stamped that way
 *   allow-private HOST CIDR   HOST may resolve into CIDR (an exception to
 *                             the deny list); repeatable
 *   mode enforce|observe      default enforce
 *   state DIR                 default ./state (grants, run id)
 *   log FILE                  default STATE/network.log
 *   log-rotate-bytes N        rotate the log past N bytes; default 16777216
 *   log-keep N                rotated files kept; default 5
 *   log-chain on|off          every row carries prev, the SHA-256 of the row
 *                             before it (netlog.h); default off
 *   log-open-after SECONDS    an exchange still relaying after SECONDS gets a
 *                             row of kind open (0..86400, 0: none); default 5
 *   log-progress SECONDS      ... then one of kind progress every SECONDS
 *                             (0..86400, 0: none); default 60
 *   user NAME                 sluice-proxy, started as root, drops to NAME
 *                             (and its groups) once bound; default none
 *   doctor-on-start on|off    sluice-proxy runs `sluice doctor --before-proxy`
 *                             (the sluice beside it) first and refuses to
 *                             start unless it exits 0; default off
 *   max-connections N         client connections; default 4096, past it 503
 *   max-connections-per-client N  connections one client (address, then stamped
 *                             principal) may hold; default max-connections / 16
 *   max-body-bytes N          request body cap, past it 413; default 0 (none)
 *   head-timeout SECONDS      whole request head must arrive; default 10
 *   connect-timeout SECONDS   upstream TCP connect; default 10
 *   response-timeout SECONDS  upstream response head; default 60 (then 504)
 *   idle-timeout SECONDS      idle keep-alive or tunnel; default 300
 *   token-min-interval SECONDS  a rule's token command runs at most once
 *                             per interval (1..86400); default 10
 *   nameserver ADDR[:PORT]    repeatable; default: /etc/resolv.conf
 *   intercept on|off          decrypt CONNECTs (but passthrough hosts); default on
 *   refuse-page on|off        a CONNECT refused by policy to a name sluice may
 *                             intercept is answered inside the client's TLS
 *                             (the refusal as the request's response); off:
 *                             the plain 403 at CONNECT; default on
 *   passthrough PATTERN       host or *.suffix (as a grant, no port) whose
 *                             CONNECTs are tunnelled untouched; repeatable
 *   upstream-ca HOST FILE     extra PEM trust bundle for TLS to HOST (exact);
 *                             repeatable, one per host
 *   body-limit HOST BYTES     request body cap for HOST (exact), 1..2^50; the
 *                             smaller of it and max-body-bytes applies
 *   metrics-listen ADDR:PORT|PORT  serve Prometheus text at GET /metrics there
 *                             (lib/metrics.h); a bare PORT is 127.0.0.1:PORT;
 *                             default none (off)
 *   inject NAME KEY=VALUE...  a credential injection rule (inject.h); keys:
 *                             host=NAME[:PORT] (exact; 443) path=/prefix header=NAME|query=NAME
 *                             prefix= env=VAR|file=/abs|command=/abs args=
 *                             require=PLACEHOLDER principal=P (repeatable)
 *                             unattributed=yes|no; NAME unique, and two rules
 *                             that could match one request refuse to load
 *
 * sluice-dns reads the same file; the proxy ignores these (config_dns.c):
 *
 *   dns-listen ADDR:PORT      repeatable; UDP and TCP; default 127.0.0.1:53
 *   dns-upstream ADDR[:PORT] [tls=NAME] [ca=FILE]
 *                             repeatable, tried in order; with tls= DNS over
 *                             TLS (port 853 unless given) verifying NAME,
 *                             against FILE or the system's trust store;
 *                             without, plain UDP then TCP (port 53). Default:
 *                             /etc/resolv.conf's nameservers, plain
 *   dns-timeout SECONDS       one upstream's answer, then the next; default 2
 *   dns-min-ttl SECONDS       answers are kept (and given) at least this; 60
 *   dns-max-ttl SECONDS       and at most this; default 86400
 *   dns-negative-ttl SECONDS  NXDOMAIN and NODATA kept at most this; 300
 *   dns-cache-entries N       names (with type) cached at most; default 100000
 *   dns-allow-type PATTERN TYPE  a type besides A and AAAA answered for a
 *                             host or *.suffix (TXT, MX, SRV, PTR, TYPE99...;
 *                             never HTTPS, SVCB or ANY); repeatable
 *   dns-wildcard-budget N SECONDS  distinct names under one *.suffix grant
 *                             answered per SECONDS; default 256 600
 *   dns-log FILE              default STATE/dns.log; rotated as log is
 *   dns-metrics-listen ADDR:PORT|PORT  sluice-dns's own GET /metrics, as
 *                             metrics-listen is the proxy's; default none (off)
 *
 * A word of the form key="..." is quoted: the value may hold blanks and
 * '#', with \" and \\ as the only escapes; the closing quote ends the
 * word. Only inject, allow and dns-upstream take quoted words (a quoted
 * for= scope is refused: no scope holds a blank). The normalised form (config_print)
 * quotes exactly the values that need it.
 */
#ifndef SLUICE_CONFIG_H
#define SLUICE_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

#include "grant.h"
#include "host.h"
#include "inject.h"
#include "iprange.h"

#define CONFIG_MAX_LISTEN 16
#define CONFIG_MAX_NAMESERVERS 8
#define CONFIG_MAX_FILE (1024 * 1024)
#define CONFIG_MAX_RULES 256
#define CONFIG_USER_MAX 32 /* a user name, as useradd allows */
#define CONFIG_AGENT_ABOUT_MAX 200
#define CONFIG_AGENT_ENV_MAX 256
#define CONFIG_AGENT_ENV_COUNT 16
#define CONFIG_HANDOVER_FILE "agents.conf" /* in STATE: what `sluice run --agent` hands over */

enum policy_mode {
	MODE_ENFORCE,
	MODE_OBSERVE,
};

struct config_exception {
	struct host host; /* canonical, exact (no wildcard) */
	struct ipnet net;
};

/* A passthrough pattern: exact host, or with wildcard the names grant_wildcard_covers gives. */
struct config_pattern {
	char host[HOST_NAME_MAX_LEN + 1]; /* canonical; for a wildcard the suffix without "*." */
	bool wildcard;
};

struct config_upstream_ca {
	char host[HOST_NAME_MAX_LEN + 1]; /* canonical, exact */
	char file[PATH_MAX];              /* as written; the proxy opens it */
};

struct config_body_limit {
	char host[HOST_NAME_MAX_LEN + 1]; /* canonical, exact */
	uint64_t bytes;                   /* 1..2^50 */
};

struct config_dns_upstream {
	struct sockaddr_storage addr;
	char tls_name[HOST_NAME_MAX_LEN + 1]; /* "": plain */
	char ca_file[PATH_MAX];               /* "": the system's trust store */
};

/* dns-allow-type: a type answered for the names a pattern covers. */
struct config_dns_type {
	struct config_pattern pattern;
	uint16_t type;
};

struct config {
	struct sockaddr_storage listen[CONFIG_MAX_LISTEN];
	size_t nlisten;
	struct grant *grants; /* level GRANT_CONFIG; owned */
	size_t ngrants;
	struct config_exception *exceptions; /* owned */
	size_t nexceptions;
	enum policy_mode mode;
	char state_dir[PATH_MAX];
	char log_path[PATH_MAX];
	uint64_t log_rotate_bytes;
	unsigned log_keep;
	bool log_chain;                  /* rows carry prev (netlog.h) */
	unsigned log_row_rate;           /* a principal's refusal rows a second; 0: no budget */
	unsigned log_row_burst;          /* ... and at once, past log_row_rate */
	unsigned log_open_after_ms;      /* a long exchange's open row after this; 0: none */
	unsigned log_progress_ms;        /* ... its progress rows this far apart; 0: none */
	bool doctor_on_start;            /* sluice-proxy runs `sluice doctor --before-proxy` first */
	char user[CONFIG_USER_MAX + 1];  /* "" : no user directive */
	unsigned max_conns;
	unsigned max_conns_per_client; /* 0: max_conns / 16 (config_per_client) */
	uint64_t max_body_bytes; /* 0: no cap */
	unsigned head_timeout_ms;
	unsigned connect_timeout_ms;
	unsigned response_timeout_ms;
	unsigned idle_timeout_ms;
	unsigned token_min_interval_ms; /* between two runs of one rule's token command */
	struct sockaddr_storage nameservers[CONFIG_MAX_NAMESERVERS];
	size_t nnameservers;
	bool intercept; /* decrypt CONNECTs to hosts no passthrough covers */
	bool refuse_page; /* a refused CONNECT's refusal, inside its TLS (proxy/refuse.c) */
	struct config_pattern *passthrough; /* owned */
	size_t npassthrough;
	struct config_upstream_ca *upstream_cas; /* owned; one per host */
	size_t nupstream_cas;
	struct config_body_limit *body_limits; /* owned; one per host */
	size_t nbody_limits;
	struct inject_rule *rules; /* owned; no two overlap (inject.h) */
	size_t nrules;
	struct sockaddr_storage metrics_listen; /* metrics-listen, when metrics_on */
	bool metrics_on;
	/* sluice-dns */
	struct sockaddr_storage dns_listen[CONFIG_MAX_LISTEN];
	size_t ndns_listen;
	struct config_dns_upstream dns_upstreams[CONFIG_MAX_NAMESERVERS];
	size_t ndns_upstreams; /* 0: /etc/resolv.conf's, plain */
	unsigned dns_timeout_ms;
	unsigned dns_min_ttl, dns_max_ttl, dns_negative_ttl; /* seconds */
	unsigned dns_cache_entries;
	struct config_dns_type *dns_types; /* owned */
	size_t ndns_types;
	unsigned dns_wildcard_budget; /* distinct names per suffix ... */
	unsigned dns_wildcard_window; /* ... in this many seconds */
	char dns_log_path[PATH_MAX];
	struct sockaddr_storage dns_metrics_listen; /* dns-metrics-listen, when dns_metrics_on */
	bool dns_metrics_on;
	/* an agent profile's own (config_profile_load; config_agent.c) */
	char agent_about[CONFIG_AGENT_ABOUT_MAX + 1];
	char (*agent_env)[CONFIG_AGENT_ENV_MAX + 1]; /* owned; "NAME=VALUE" for the sandbox */
	size_t nagent_env;
	/*
	 * owned; telemetry hosts, never allowed (host, wildcard): a profile's
	 * have no scopes; the handed-over agents.conf's name for= the runs of
	 * the profiles that list them, whose requests there are refused with
	 * reason quiet (policy_judge)
	 */
	struct grant *agent_quiet;
	size_t nagent_quiet;
};

/* Connections one client may hold: max-connections-per-client, else a sixteenth of max-connections (at least 1). */
unsigned config_per_client(const struct config *c);

/* A config holding every default. Returns NULL on allocation failure. */
struct config *config_new(void);
void config_free(struct config *c);

/*
 * Parse buf[0..len) (need not be NUL-terminated) into c, which holds the
 * defaults. file names the source in messages. Every error is written to
 * errs (may be NULL) as "file:line: message\n". Returns the number of
 * errors; c is complete only when it returns 0.
 */
int config_parse(struct config *c, const char *buf, size_t len, const char *file, FILE *errs);

/*
 * Read and parse path (at most CONFIG_MAX_FILE bytes), then, when it parsed
 * and STATE/agents.conf exists, that too: the allow, inject and quiet
 * lines `sluice run --agent` hands over (nothing else may be there; a
 * quiet line there names for= each principal it applies to). Returns as
 * config_parse (errors of either counted), or 1 if unreadable.
 */
int config_load(struct config *c, const char *path, FILE *errs);

/*
 * An agent profile (etc/agents/NAME.conf) into c, a config_new one: its
 * allow and inject lines (each inject reading env=, the environment of
 * the `sluice run` that asks for the profile), and what only a profile
 * has: `about TEXT...`, `sandbox-env NAME=VALUE` (set in the sandbox: a
 * dummy key, telemetry off), `quiet HOST` (telemetry the agent tries:
 * refused with reason quiet to the runs of the profile, no refusal id,
 * counted by nothing that counts refusals; listed so nobody grants it). Returns
 * as config_load.
 */
int config_profile_load(struct config *c, const char *path, FILE *errs);

/* Print the normalised form: every directive, defaults included, one per line. */
void config_print(const struct config *c, FILE *out);

/* Whether a passthrough pattern covers the canonical host name. */
bool config_passthrough(const struct config *c, const char *host);

/* The upstream-ca file for the canonical host, or NULL. */
const char *config_upstream_ca(const struct config *c, const char *host);

/* Whether dns-allow-type lets type be answered for the canonical name. */
bool config_dns_type_allowed(const struct config *c, const char *name, uint16_t type);

/* The request body cap for the canonical host: the smaller of its
 * body-limit and max-body-bytes, 0 when neither caps it. */
uint64_t config_body_limit(const struct config *c, const char *host);

#endif
