/*
 * netlog.h: the network log, one JSON object per line (docs/network-log.md).
 *
 * A row is formatted into a stack buffer and handed to the kernel with one
 * write(2) on an O_APPEND descriptor before netlog_write returns, so a row
 * for an answered request survives the process dying right after. Rotation
 * by size renames FILE to FILE.1 (shifting older ones) and reopens. A write
 * error is reported on stderr once and never stops the proxy.
 */
#ifndef SLUICE_NETLOG_H
#define SLUICE_NETLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stamp.h"

struct netlog;

/* A row; NULL strings and negative numbers are written as null. */
struct netlog_row {
	uint64_t conn;
	uint64_t req;
	const char *run;
	const char *who;
	const struct stamp *stamp; /* the connection's verified stamp, or NULL */
	const char *client;
	const char *kind; /* "http" or "tunnel" */
	const char *method;
	const char *host;
	int port; /* -1: unknown */
	const char *path;
	size_t path_len;
	int status;
	const char *decision;
	const char *reason;
	const char *grant;
	const char *inject; /* the injection rule applied, or NULL */
	int64_t scrubbed;   /* reflected secrets masked in the response; < 0: null */
	const char *dialed;
	uint64_t up;
	uint64_t down;
	double ms;
	double dns_ms;     /* < 0: null */
	double connect_ms; /* < 0: null */
	const char *ua;
	size_t ua_len;
	const char *detail;
};

/* Open path for appending (created 0640). Returns NULL with errno. */
struct netlog *netlog_open(const char *path, uint64_t rotate_bytes, unsigned keep);
void netlog_close(struct netlog *l);
/* Format and write one row. Returns 0 or -1 (already reported). */
int netlog_write(struct netlog *l, const struct netlog_row *r);
/*
 * JSON-escape s[0..len) into out (size bytes, NUL-terminated), at most cap
 * input bytes. Control bytes, '"', '\\' and bytes >= 0x80 that are not
 * valid UTF-8 are escaped. Returns the output length.
 */
size_t netlog_escape(const char *s, size_t len, size_t cap, char *out, size_t size);

#endif
