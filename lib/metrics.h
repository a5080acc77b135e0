/*
 * metrics.h: a daemon's counters and gauges in memory, written out in the
 * Prometheus text exposition format 0.0.4, and the small HTTP listener on
 * the daemon's own loop that serves them at GET /metrics.
 *
 * A family is a metric name with up to METRICS_LABELS label names; its
 * series are made the first time a set of label values is counted, from a
 * fixed pool: counting allocates nothing and costs a few short compares. A
 * label value is kept only when it is a short word of [A-Za-z0-9_-] (the
 * static codes the daemons log: kinds, decisions, reasons); anything else
 * is counted as "other", NULL as "none", so no host, path, address or
 * secret can become a label. A family's series past the pool go to its
 * "other" series. One process, one thread: the registry is process-wide.
 *
 * The listener answers one request per connection and closes: GET
 * /metrics is 200, another path 404, another method 405, a head that does
 * not parse (lib/http.c) 400 or 431; a head must arrive within
 * METRICS_TIMEOUT_MS and fit in METRICS_HEAD_MAX bytes. With every slot
 * taken, a new connection closes the oldest that has not sent its whole
 * head in METRICS_GRACE_MS, so idle connections cannot keep a scraper out
 * (and a flood cannot close one before it could send). It never blocks.
 */
#ifndef SLUICE_METRICS_H
#define SLUICE_METRICS_H

#include <stdint.h>
#include <sys/socket.h>

#include "buf.h"
#include "loop.h"

#define METRICS_LABELS 3
#define METRICS_VALUE_MAX 40   /* bytes of a label value kept */
#define METRICS_FAMILIES 32
#define METRICS_SERIES 768     /* across all families */
#define METRICS_HEAD_MAX 4096  /* a scrape's request head */
#define METRICS_TIMEOUT_MS 5000 /* a scrape's whole life: head in, answer out */
#define METRICS_CONNS 8        /* scrapes at once; past it the oldest without a head goes */
#define METRICS_GRACE_MS 100   /* ... once it has had this long to send its head */
#define METRICS_OUT_MAX (1024 * 1024)

enum metrics_type {
	METRICS_COUNTER,
	METRICS_GAUGE,
};

struct metrics_family;
struct metrics_server;

/*
 * The family name (a counter's ends in _total), made on first call and
 * returned again for the same name. name, help and the label names must be
 * static strings; unused label names are NULL. A family without labels
 * has its one series at once (so it is written as 0 before any count).
 * Returns NULL when METRICS_FAMILIES are taken; counting on NULL does nothing.
 */
struct metrics_family *metrics_family(const char *name, enum metrics_type type,
				      const char *help, const char *l1, const char *l2,
				      const char *l3);

/* Add n to the series with these label values (NULL past the family's labels). */
void metrics_add(struct metrics_family *f, uint64_t n, const char *v1, const char *v2,
		 const char *v3);
/* Set a gauge's series to v. */
void metrics_set(struct metrics_family *f, uint64_t v, const char *v1, const char *v2,
		 const char *v3);
/* Shorthands for a family without labels. */
static inline void metrics_inc(struct metrics_family *f)
{
	metrics_add(f, 1, NULL, NULL, NULL);
}

/* Every family, # HELP and # TYPE first, appended to out. Returns 0 or -1 (out full). */
int metrics_write(struct buf *out);

/*
 * Serve GET /metrics on addr from loop l. collect (may be NULL) runs with
 * arg before each answer is written, to set gauges from the daemon's state.
 * prog names the daemon in messages. Opens the listening socket now (call
 * it before dropping privileges). Returns the server, or NULL with errno
 * after printing why.
 */
struct metrics_server *metrics_server_new(struct loop *l, const struct sockaddr_storage *addr,
					  const char *prog, void (*collect)(void *arg),
					  void *arg);
/* Close the listener and any scrape in progress. NULL is fine. */
void metrics_server_free(struct metrics_server *ms);

#endif
