/*
 * config.h: the directive file sluice-proxy and the CLI read.
 *
 * Line-oriented, in the tradition of unbound and dnsmasq: one directive
 * per line, words separated by blanks, '#' to end of line is a comment.
 * Every error is reported as "file:line: message"; a file with any error
 * is not used. Relative paths are taken relative to the working directory.
 *
 *   listen ADDR:PORT          repeatable; default 127.0.0.1:3128
 *   allow GRANT               repeatable; the config's own permanent grants
 *   allow-private HOST CIDR   HOST may resolve into CIDR (an exception to
 *                             the deny list); repeatable
 *   mode enforce|observe      default enforce
 *   state DIR                 default ./state (grants, run id)
 *   log FILE                  default STATE/network.log
 *   log-rotate-bytes N        rotate the log past N bytes; default 16777216
 *   log-keep N                rotated files kept; default 5
 *   max-connections N         client connections; default 4096, past it 503
 *   max-body-bytes N          request body cap, past it 413; default 0 (none)
 *   head-timeout SECONDS      whole request head must arrive; default 10
 *   connect-timeout SECONDS   upstream TCP connect; default 10
 *   response-timeout SECONDS  upstream response head; default 60 (then 504)
 *   idle-timeout SECONDS      idle keep-alive or tunnel; default 300
 *   nameserver ADDR[:PORT]    repeatable; default: /etc/resolv.conf
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
#include "iprange.h"

#define CONFIG_MAX_LISTEN 16
#define CONFIG_MAX_NAMESERVERS 8
#define CONFIG_MAX_FILE (1024 * 1024)

enum policy_mode {
	MODE_ENFORCE,
	MODE_OBSERVE,
};

struct config_exception {
	struct host host; /* canonical, exact (no wildcard) */
	struct ipnet net;
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
	unsigned max_conns;
	uint64_t max_body_bytes; /* 0: no cap */
	unsigned head_timeout_ms;
	unsigned connect_timeout_ms;
	unsigned response_timeout_ms;
	unsigned idle_timeout_ms;
	struct sockaddr_storage nameservers[CONFIG_MAX_NAMESERVERS];
	size_t nnameservers;
};

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

/* Read and parse path (at most CONFIG_MAX_FILE bytes). Returns as config_parse, or 1 if unreadable. */
int config_load(struct config *c, const char *path, FILE *errs);

/* Print the normalised form: every directive, defaults included, one per line. */
void config_print(const struct config *c, FILE *out);

#endif
