/*
 * netlog.h: the network log, one JSON object per line (docs/network-log.md).
 *
 * A row is formatted into a buffer of the log's and handed to the kernel with one
 * write(2) on an O_APPEND descriptor before netlog_write returns, so a row
 * for an answered request survives the process dying right after. Rotation
 * by size renames FILE to FILE.1 (shifting older ones) and reopens. A write
 * error is reported on stderr once, counted each time
 * (sluice_log_write_errors_total, lib/metrics.h) and never stops the proxy.
 *
 * With chain on (log-chain on) every row ends in "prev": the SHA-256 (hex)
 * of the exact bytes of the row before it, its newline not included, or
 * null for the very first row; the first row of a file hashes the last row
 * of the file it rotated from, the first row after a restart the last line
 * the file (or, when it is empty, FILE.1) holds. netlog_chain.c has the hash,
 * the tail reading and the checker behind `sluice log verify`.
 */
#ifndef SLUICE_NETLOG_H
#define SLUICE_NETLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "stamp.h"

#define NETLOG_PREV_HEX 64 /* SHA-256 in hex */

struct netlog;

/* A row; NULL strings and negative numbers are written as null. */
#define NETLOG_SANDBOX_LEN 12 /* a `sluice run`'s id: the row's "sandbox" */

struct netlog_row {
	uint64_t conn;
	uint64_t req;
	const char *run;
	const char *who;
	const struct stamp *stamp; /* the connection's verified stamp, or NULL */
	const char *build;         /* "build:NAME": the build token the connection named, or NULL */
	const char *client;
	const char *kind; /* "http", "https", "ws", "wss" or "tunnel"; "open" or "progress" (of) */
	const char *of;   /* an open or progress row: its exchange's kind; NULL: not written */
	const char *proto; /* "http/1.1", "http/1.0" or "h2"; NULL: a tunnel, or no request read */
	const char *method;
	const char *host;
	int port; /* -1: unknown */
	const char *path;
	size_t path_len;
	int status;
	const char *decision;
	const char *reason;
	const char *grant;
	const char *refusal; /* a grantable refusal's id (`sluice allow approve`), or NULL */
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

/*
 * Open path for appending (created 0640). With chain, the hash of the last
 * line already there is read first (a last line cut short gets its newline,
 * and stays a broken row). The files must be regular, not symbolic or hard
 * links, and owned by root, by us or by owner (the proxy's user, who
 * creates them on rotation; FILE_NO_UID: nobody else). Returns NULL with
 * errno, and *why (may be NULL) set when a file was refused.
 */
struct netlog *netlog_open(const char *path, uint64_t rotate_bytes, unsigned keep, bool chain,
			   uid_t owner, const char **why);
void netlog_close(struct netlog *l);
/* Format and write one network row. Returns 0 or -1 (already reported). */
int netlog_write(struct netlog *l, const struct netlog_row *r);

#define NETLOG_REASONS_MAX 8 /* reasons a suppression row names; the rest are "other" */

/*
 * A suppression row (kind "suppressed"): rows one principal made that were
 * counted, not written, past its row budget (sluice-proxy's lograte.c).
 * rows is their number, first_ms and last_ms the wall-clock times (ms since
 * the epoch) of the first and last, and reason[i] counted count[i] of them
 * (rows = their sum). NULL strings are written as null.
 */
struct netlog_suppressed {
	const char *run;
	const char *who;
	const struct stamp *stamp; /* its src, net and as; NULL: none */
	const char *build;
	const char *client; /* an unattributed principal's address (no port); else NULL */
	uint64_t rows;
	uint64_t first_ms, last_ms;
	size_t nreasons;
	const char *reason[NETLOG_REASONS_MAX];
	uint64_t count[NETLOG_REASONS_MAX];
	const char *detail;
};
/* Format and write one suppression row. Returns 0 or -1 (already reported). */
int netlog_write_suppressed(struct netlog *l, const struct netlog_suppressed *r);

/* --- netlog_row.c: a row built by hand -------------------------------- */

#define NETLOG_ROW_MAX 32768 /* 18 strings at NETLOG_TEXT_CAP, as, path, ua, of (all escaped), numbers */
#define NETLOG_PREV_MAX (NETLOG_PREV_HEX + 16) /* ,"prev":"HEX" */
#define NETLOG_TEXT_CAP 256                    /* bytes of a string field kept */

struct netlog_out {
	char buf[NETLOG_ROW_MAX + NETLOG_PREV_MAX];
	size_t len;
};

/* Start a row: '{' and its "ts" (now, UTC, milliseconds). */
void netlog_put_start(struct netlog_out *o);
/* ,"key":"2026-11-30T03:01:02.123Z" for ms since the epoch */
void netlog_put_time(struct netlog_out *o, const char *key, uint64_t ms);
/* ,"key": then the value; NULL strings are null, strings capped at cap bytes (then escaped) */
void netlog_put_key(struct netlog_out *o, const char *key);
void netlog_put_raw(struct netlog_out *o, const char *s, size_t n);
void netlog_put_u64(struct netlog_out *o, uint64_t v);
void netlog_put_digits(struct netlog_out *o, unsigned v, int width);
void netlog_put_num(struct netlog_out *o, const char *key, uint64_t v);
void netlog_put_str(struct netlog_out *o, const char *key, const char *s, size_t len, size_t cap);
void netlog_put_cstr(struct netlog_out *o, const char *key, const char *s); /* NETLOG_TEXT_CAP */
void netlog_put_ms(struct netlog_out *o, const char *key, double v); /* < 0: null */
void netlog_put_bool(struct netlog_out *o, const char *key, bool v);

/*
 * Close a row built with netlog_put_* (prev when chained, then "}\n") and
 * write it now, after any held rows. Returns 0 or -1 (already reported).
 */
int netlog_emit(struct netlog *l, struct netlog_out *o);
/*
 * Close it and hold it for netlog_flush, which writes every held row with
 * one write(2): a daemon answering a batch of queries writes their rows
 * once, before the batch's answers go out. A full hold is flushed first.
 */
int netlog_hold(struct netlog *l, struct netlog_out *o);
int netlog_flush(struct netlog *l);
/*
 * JSON-escape s[0..len) into out (size bytes, NUL-terminated), at most cap
 * input bytes. '"' and '\\' are escaped, the code points a terminal acts
 * on or hides (utf8_hidden: C0, DEL, C1, the format characters such as the
 * bidi controls, the line and paragraph separators) are written \uXXXX
 * (a surrogate pair past U+FFFF), and a byte that is not valid UTF-8 is
 * written \u00XX; the rest is kept as it is. Never cuts an escape or a
 * sequence. Returns the output length.
 */
size_t netlog_escape(const char *s, size_t len, size_t cap, char *out, size_t size);

/* --- netlog_chain.c --------------------------------------------------- */

/* The hex SHA-256 of line[0..len) into out (NUL-terminated). */
void netlog_chain_hash(const char *line, size_t len, char out[NETLOG_PREV_HEX + 1]);

/*
 * The prev a row ends with: 1 with its hex in out, 0 for null (the log's
 * first row), -1 when the row does not end in a prev field.
 */
int netlog_chain_prev(const char *row, size_t len, char out[NETLOG_PREV_HEX + 1]);

/*
 * The hash of path's last line into out: 1, or 0 when the file is missing
 * or empty, -1 with errno. *unterminated: the file does not end in '\n'
 * (its last line, hashed as it is, was cut short). path is opened as
 * netlog_open's files are (owner likewise); *why (may be NULL) says why
 * it was refused.
 */
int netlog_chain_last(const char *path, uid_t owner, char out[NETLOG_PREV_HEX + 1],
		      bool *unterminated, const char **why);

/* Walking a chain, line by line, oldest first (files in rotation order). */
struct netlog_chain {
	uint64_t lines;      /* lines stepped so far */
	uint64_t unchained;  /* lines without prev before the chain started */
	uint64_t chained;    /* lines whose prev held */
	uint64_t cut;        /* lines cut short (netlog_chain_step_cut) since it started */
	bool last_cut;       /* the last line stepped was one: only the next row vouches for it */
	bool started;        /* a line with prev was seen */
	bool from_start;     /* the chain's first row has prev null: the log's first row */
	char last[NETLOG_PREV_HEX + 1]; /* hash of the last line stepped */
};

enum netlog_chain_verdict {
	NETLOG_CHAIN_OK,        /* its prev holds, or it is the first line (unchecked) */
	NETLOG_CHAIN_UNCHAINED, /* no prev, before any row that had one */
	NETLOG_CHAIN_BROKEN,    /* *why says how */
	NETLOG_CHAIN_CUT,       /* a line cut short, after the chain started */
};

void netlog_chain_init(struct netlog_chain *c);
/* Step over one line (no newline). A broken line sets *why (static text). */
enum netlog_chain_verdict netlog_chain_step(struct netlog_chain *c, const char *line, size_t len,
					    const char **why);
/*
 * Step over a line the writer left cut short: a write that failed part way
 * (a full disk) leaves a prefix of a row, and the writer's next row starts
 * on a line of its own with prev the hash of that prefix. So the next row
 * vouches for the cut line; nothing can tie the cut line to the row before
 * it. Before the chain started it counts as unchained.
 */
enum netlog_chain_verdict netlog_chain_step_cut(struct netlog_chain *c, const char *line,
						size_t len);

#endif
