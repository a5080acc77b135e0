/*
 * runnote.h: what `sluice run` (root) tells the project's proxy about one
 * run, in STATE/runnotes/ID: the proxy writes the run's own rows from it
 * (kind "run": its start and its end) and knows the run's self-check by
 * it (kind "probe"). Only root writes there; the proxy reads, never writes.
 *
 *   sluice-runnote v1\n
 *   id <12 lowercase hex digits: the run's, sluice-ID's ID>\n
 *   nonce <32 lowercase hex digits>\n   (only until the run's verify is done)
 *   name <NAME>\n                      (--name; optional)
 *   project <NAME>\n                   (optional)
 *   start <ms since the epoch>\n
 *   cmd <the command line, shell-quoted, no control bytes>\n
 *   end <exit status 0-255> <ms since the epoch>\n   (once it ended)
 *
 * Lines in that order, each once; nothing else.
 */
#ifndef SLUICE_RUNNOTE_H
#define SLUICE_RUNNOTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RUNNOTE_ID_LEN 12
#define RUNNOTE_NONCE_LEN 32
#define RUNNOTE_NAME_MAX 64   /* bytes of a name or project */
#define RUNNOTE_CMD_MAX 1024  /* bytes of the command line kept (cut, then "...") */
#define RUNNOTE_MAX_BYTES 4096
#define RUNNOTE_DIR "runnotes" /* in STATE */
#define RUNNOTE_PROBE_PATH "/.sluice-probe/" /* verify's control request: this, then the nonce */

struct runnote {
	char id[RUNNOTE_ID_LEN + 1];
	char nonce[RUNNOTE_NONCE_LEN + 1]; /* "" none */
	char name[RUNNOTE_NAME_MAX + 1];    /* "" none */
	char project[RUNNOTE_NAME_MAX + 1]; /* "" none */
	char cmd[RUNNOTE_CMD_MAX + 1];
	uint64_t start_ms;
	bool ended;
	unsigned status;  /* when ended */
	uint64_t end_ms;  /* when ended */
};

/* Whether s (len bytes) is RUNNOTE_ID_LEN lowercase hex digits. */
bool runnote_id_ok(const char *s, size_t len);

/* Whether s is a name or project a note may carry: 1..RUNNOTE_NAME_MAX of [A-Za-z0-9._@:/+-]. */
bool runnote_name_ok(const char *s);

/*
 * argv (NULL-ended) as one shell-quoted line into out (size > 4): a word
 * of only safe characters as it is, else in single quotes; a control byte
 * as \xNN; cut at RUNNOTE_CMD_MAX (or size - 1) bytes, ending in "...".
 */
void runnote_cmd(char *const argv[], char *out, size_t size);

/* n in the file's format into buf. Returns the length, or -1 when it does not fit or n is bad. */
int runnote_format(const struct runnote *n, char *buf, size_t size);

/* Parse a note (len bytes, need not end in NUL). Returns 0, or -1 when malformed. */
int runnote_parse(const char *buf, size_t len, struct runnote *n);

#endif
