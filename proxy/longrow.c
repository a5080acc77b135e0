/*
 * longrow.c: a long exchange's rows while it lasts. An exchange still
 * relaying (an HTTP/1.1 request in flight, a tunnel past its hellos, a
 * WebSocket, an HTTP/2 stream sent upstream) log-open-after seconds after
 * it began gets a row of kind "open", then one of kind "progress" every
 * log-progress seconds: the row its end will write, as it stands (bytes
 * and time so far, "ts" now), its own kind in "of". Its final row is
 * written as before. So a `tail -f` of the log, `sluice log -f` and
 * `sluice watch` see a WebSocket or a tunnel that lasts an hour when it
 * opens, not only when it ends.
 *
 * The rows ride on the connection's one timer: session.c arms it for the
 * sooner of the state's deadline and its codec's rows_due (each codec asks
 * longrow_due of the exchanges it relays), so nothing polls. They are not
 * counted in the metrics (stats_row counts each exchange once, at its end)
 * and not budgeted (lograte.c budgets refusals that moved nothing; these
 * are rows of exchanges that were let through). An exchange refused
 * already, or waiting on its judgement, dial or token, gets none.
 */
#include "request.h"

#include <string.h>

/* x is judged, let through, and moving bytes: the kind of exchange a long row is for. */
static bool relaying(const struct exchange *x)
{
	return x != NULL && x->active && x->decision != NULL &&
	       (strcmp(x->decision, "allow") == 0 || strcmp(x->decision, "observe") == 0);
}

/* When x's next row is due, UINT64_MAX: never (log-open-after 0, or progress rows off). */
static uint64_t due_of(const struct exchange *x, const struct config *c)
{
	if (x->long_at == 0)
		return c->log_open_after_ms > 0 ? (uint64_t)x->t_start + c->log_open_after_ms
						: UINT64_MAX;
	return c->log_progress_ms > 0 ? x->long_at + c->log_progress_ms : UINT64_MAX;
}

uint64_t longrow_due(const struct exchange *x, const struct config *c)
{
	return relaying(x) ? due_of(x, c) : UINT64_MAX;
}

void longrow_write(struct exchange *x, const struct config *c, uint64_t now)
{
	struct netlog_row row;
	struct stamp st;
	char who[SESSION_WHO_MAX];

	if (!relaying(x) || due_of(x, c) > now)
		return;
	exchange_row(x, &row, &st, who, sizeof(who));
	row.of = row.kind;
	row.kind = x->long_at == 0 ? "open" : "progress";
	x->long_at = now;
	if (x->conn->px->netlog != NULL)
		netlog_write(x->conn->px->netlog, &row);
}
