/*
 * netlog.c: writing and rotating the network log.
 *
 * Formatting is by hand into a fixed buffer: every string is capped, so a
 * row has a known maximum size and never allocates. With log-chain on the
 * row ends in prev, the hash of the line before it (netlog_chain.c holds the
 * hashing and the tail reading); the writer keeps it in memory, across
 * rotation, and knows what a failed write left in the file.
 */
#include "netlog.h"

#include "file.h"
#include "metrics.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define PATH_CAP 200
#define UA_CAP 120
#define OF_CAP 16 /* an exchange's kind, ours: "tunnel" at most */
#define HELD_MAX (64 * 1024) /* rows held for one write (netlog_hold) */

struct netlog {
	int fd;
	uint64_t size;
	uint64_t rotate_bytes;
	unsigned keep;
	bool warned;
	bool chain;      /* log-chain on: rows end in prev */
	bool has_prev;   /* prev holds the hash of the last line; false: none yet */
	bool cut;        /* the file ends in a row written only in part: a newline first */
	uid_t owner;     /* who besides root and us may own the files (FILE_NO_UID: nobody) */
	char prev[NETLOG_PREV_HEX + 1];
	char path[PATH_MAX];
	struct netlog_out row; /* netlog_write's */
	char *held;            /* rows netlog_hold took, for netlog_flush; NULL until one */
	size_t nheld;
	bool held_prev;        /* the chain as the file holds it, under the held rows */
	char held_from[NETLOG_PREV_HEX + 1];
};

/*
 * The log's directory may be the proxy's user's: what is at the path is
 * opened only when it is a regular file of root's, ours or that user's,
 * with no other name, never through a symbolic link (root would append
 * client text to whatever it named).
 */
static int open_log(struct netlog *l, const char **why)
{
	struct stat st;

	l->fd = file_open_owned(l->path, O_WRONLY | O_APPEND | O_CREAT, 0640, l->owner, why);
	if (l->fd == -1)
		return -1;
	l->size = fstat(l->fd, &st) == 0 ? (uint64_t)st.st_size : 0;
	return 0;
}

/*
 * The chain's start: the hash of the file's last line, else of FILE.1's (the
 * file it rotated from), else none. A last line cut short is hashed as it
 * is and gets its newline before the next row. Returns 0 or -1 with errno.
 */
static int chain_resume(struct netlog *l, const char **why)
{
	char older[PATH_MAX + 16];
	bool unterminated;
	int r = netlog_chain_last(l->path, l->owner, l->prev, &unterminated, why);

	if (r == 0 && l->keep > 0) {
		snprintf(older, sizeof(older), "%s.1", l->path);
		r = netlog_chain_last(older, l->owner, l->prev, &unterminated, why);
		unterminated = false; /* not the file we append to */
	}
	if (r == -1)
		return -1;
	l->has_prev = r == 1;
	l->cut = unterminated;
	return 0;
}

static struct metrics_family *write_errors; /* one per process, whatever log failed */

struct netlog *netlog_open(const char *path, uint64_t rotate_bytes, unsigned keep, bool chain,
			   uid_t owner, const char **why)
{
	struct netlog *l = calloc(1, sizeof(*l));

	write_errors = metrics_family("sluice_log_write_errors_total", METRICS_COUNTER,
				      "Log writes that failed (rows lost or cut; stderr says why once)",
				      NULL, NULL, NULL);
	if (why != NULL)
		*why = NULL;
	if (l == NULL)
		return NULL;
	if (strlen(path) >= sizeof(l->path) - 8) {
		free(l);
		errno = ENAMETOOLONG;
		return NULL;
	}
	strcpy(l->path, path);
	l->rotate_bytes = rotate_bytes;
	l->keep = keep;
	l->chain = chain;
	l->owner = owner;
	if ((chain && chain_resume(l, why) == -1) || open_log(l, why) == -1) {
		int e = errno;
		free(l);
		errno = e;
		return NULL;
	}
	return l;
}

void netlog_close(struct netlog *l)
{
	if (l == NULL)
		return;
	netlog_flush(l);
	if (l->fd >= 0)
		close(l->fd);
	free(l->held);
	free(l);
}

static void rotate(struct netlog *l)
{
	char from[PATH_MAX + 16], to[PATH_MAX + 16];
	const char *why;

	if (l->keep == 0) {
		unlink(l->path);
	} else {
		for (unsigned i = l->keep; i > 1; i--) {
			snprintf(from, sizeof(from), "%s.%u", l->path, i - 1);
			snprintf(to, sizeof(to), "%s.%u", l->path, i);
			rename(from, to);
		}
		snprintf(to, sizeof(to), "%s.1", l->path);
		rename(l->path, to);
	}
	close(l->fd);
	if (open_log(l, &why) == -1 && !l->warned) {
		fprintf(stderr, "%s: netlog: reopen %s: %s\n", program_invocation_short_name, l->path,
			why != NULL ? why : strerror(errno));
		l->warned = true;
	}
}

/*
 * The id of the `sluice run` a stamp came from, into out (13 bytes), or
 * "": a run's forwarder stamps as=project:NAME[/AGENT] on its own network,
 * sluice-ID (12 lower-case hex). Its principal is the project's; which run
 * it was is this.
 */
static void stamp_sandbox(const struct stamp *st, char *out)
{
	const char *id = st->net + 7;

	out[0] = '\0';
	if (strncmp(st->as, "project:", 8) != 0 || strncmp(st->net, "sluice-", 7) != 0 ||
	    strlen(id) != NETLOG_SANDBOX_LEN)
		return;
	for (size_t i = 0; i < NETLOG_SANDBOX_LEN; i++)
		if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
			return;
	memcpy(out, id, NETLOG_SANDBOX_LEN + 1);
}

int netlog_write(struct netlog *l, const struct netlog_row *r)
{
	char sandbox[NETLOG_SANDBOX_LEN + 1];
	struct netlog_out *o = &l->row;

	netlog_put_start(o);
	netlog_put_num(o, "conn", r->conn);
	netlog_put_num(o, "req", r->req);
	netlog_put_cstr(o, "run", r->run);
	netlog_put_cstr(o, "who", r->who);
	if (r->stamp != NULL) {
		netlog_put_cstr(o, "src", r->stamp->src);
		netlog_put_cstr(o, "net", r->stamp->net);
		netlog_put_str(o, "as", r->stamp->as[0] != '\0' ? r->stamp->as : NULL,
			strnlen(r->stamp->as, sizeof(r->stamp->as)), STAMP_AS_MAX);
		stamp_sandbox(r->stamp, sandbox);
		netlog_put_cstr(o, "sandbox", sandbox[0] != '\0' ? sandbox : NULL);
		netlog_put_cstr(o, "boot", r->stamp->boot);
		netlog_put_num(o, "seq", r->stamp->seq);
		netlog_put_num(o, "kid", r->stamp->kid);
	} else {
		static const char none[] =
			",\"src\":null,\"net\":null,\"as\":null,\"sandbox\":null,\"boot\":null,"
			"\"seq\":null,"
			"\"kid\":null";

		netlog_put_raw(o, none, sizeof(none) - 1);
	}
	netlog_put_cstr(o, "build", r->build);
	netlog_put_cstr(o, "client", r->client);
	netlog_put_cstr(o, "kind", r->kind);
	if (r->of != NULL)
		netlog_put_str(o, "of", r->of, strlen(r->of), OF_CAP);
	netlog_put_cstr(o, "proto", r->proto);
	netlog_put_cstr(o, "method", r->method);
	netlog_put_cstr(o, "host", r->host);
	if (r->port < 0) {
		netlog_put_key(o, "port");
		netlog_put_raw(o, "null", 4);
	} else {
		netlog_put_num(o, "port", (uint64_t)r->port);
	}
	netlog_put_str(o, "path", r->path, r->path_len, PATH_CAP);
	netlog_put_num(o, "status", (uint64_t)(r->status < 0 ? 0 : r->status));
	netlog_put_cstr(o, "decision", r->decision);
	netlog_put_cstr(o, "reason", r->reason);
	netlog_put_cstr(o, "grant", r->grant);
	netlog_put_cstr(o, "refusal", r->refusal);
	netlog_put_cstr(o, "inject", r->inject);
	if (r->scrubbed < 0) {
		netlog_put_key(o, "scrubbed");
		netlog_put_raw(o, "null", 4);
	} else {
		netlog_put_num(o, "scrubbed", (uint64_t)r->scrubbed);
	}
	netlog_put_cstr(o, "dialed", r->dialed);
	netlog_put_num(o, "up", r->up);
	netlog_put_num(o, "down", r->down);
	netlog_put_ms(o, "ms", r->ms);
	netlog_put_ms(o, "dns_ms", r->dns_ms);
	netlog_put_ms(o, "connect_ms", r->connect_ms);
	netlog_put_str(o, "ua", r->ua, r->ua_len, UA_CAP);
	netlog_put_cstr(o, "detail", r->detail);
	return netlog_emit(l, o);
}

#define REASON_CAP 32 /* bytes of a reason code kept in a suppression row */

int netlog_write_suppressed(struct netlog *l, const struct netlog_suppressed *r)
{
	struct netlog_out *o = &l->row;
	const struct stamp *st = r->stamp;

	netlog_put_start(o);
	netlog_put_cstr(o, "kind", "suppressed");
	netlog_put_cstr(o, "run", r->run);
	netlog_put_cstr(o, "who", r->who);
	netlog_put_cstr(o, "src", st != NULL ? st->src : NULL);
	netlog_put_cstr(o, "net", st != NULL ? st->net : NULL);
	netlog_put_cstr(o, "as", st != NULL && st->as[0] != '\0' ? st->as : NULL);
	netlog_put_cstr(o, "build", r->build);
	netlog_put_cstr(o, "client", r->client);
	netlog_put_cstr(o, "decision", "refuse");
	netlog_put_cstr(o, "reason", "suppressed");
	netlog_put_num(o, "rows", r->rows);
	netlog_put_time(o, "first", r->first_ms);
	netlog_put_time(o, "last", r->last_ms);
	netlog_put_key(o, "reasons");
	o->buf[o->len++] = '{';
	for (size_t i = 0; i < r->nreasons && i < NETLOG_REASONS_MAX; i++) {
		const char *why = r->reason[i] != NULL ? r->reason[i] : "other";

		if (i > 0)
			o->buf[o->len++] = ',';
		o->buf[o->len++] = '"';
		o->len += netlog_escape(why, strlen(why), REASON_CAP, o->buf + o->len,
					REASON_CAP * 6 + 8);
		netlog_put_raw(o, "\":", 2);
		netlog_put_u64(o, r->count[i]);
	}
	o->buf[o->len++] = '}';
	netlog_put_cstr(o, "detail", r->detail);
	return netlog_emit(l, o);
}

/*
 * Write rows[0..len) (whole rows) with one write(2), rotating first when
 * they would pass the size. The chain already stepped over them; from is
 * where it stood before them (from_has false: no row yet). After a write
 * that failed part way it goes on from what the file holds: the last whole
 * row, or the cut part (which then gets its newline before the next row);
 * after one that wrote nothing, from where it stood. Returns 0 or -1.
 */
static int put_rows(struct netlog *l, const char *rows, size_t len, bool from_has,
		    const char *from)
{
	ssize_t n;

	if (l->fd < 0 && open_log(l, NULL) == -1) {
		n = -1; /* reported once at the failed reopen; retried each row */
		goto failed;
	}
	if (l->rotate_bytes > 0 && l->size + len > l->rotate_bytes && l->size > 0) {
		rotate(l);
		l->cut = false; /* the cut row went with the old file */
	}
	n = 1;
	if (l->cut && (n = write(l->fd, "\n", 1)) == 1) {
		l->cut = false;
		l->size++;
	}
	if (n == 1)
		n = write(l->fd, rows, len);
	else
		n = -1;
	if (n == (ssize_t)len) {
		l->size += len;
		return 0;
	}
	if (!l->warned)
		fprintf(stderr, "%s: netlog: write %s: %s\n", program_invocation_short_name, l->path,
			n == -1 ? strerror(errno) : "short write");
	l->warned = true;
failed:
	metrics_inc(write_errors); /* once per failed write: the rows it held are lost or cut */
	if (n > 0) {
		size_t w = (size_t)n, end, start;

		l->size += w;
		/* the last line the file now holds, whole or cut */
		end = rows[w - 1] == '\n' ? w - 1 : w;
		start = end;
		while (start > 0 && rows[start - 1] != '\n')
			start--;
		if (l->chain) {
			netlog_chain_hash(rows + start, end - start, l->prev);
			l->has_prev = true;
		}
		l->cut = end == w;
	} else {
		l->has_prev = from_has;
		memcpy(l->prev, from, sizeof(l->prev));
	}
	return -1;
}

/* Close the row: prev when chained (where the chain stands), "}\n"; step the chain over it. */
static void finish(struct netlog *l, struct netlog_out *o)
{
	if (l->chain) {
		netlog_put_key(o, "prev");
		if (l->has_prev) {
			o->buf[o->len++] = '"';
			netlog_put_raw(o, l->prev, NETLOG_PREV_HEX);
			o->buf[o->len++] = '"';
		} else {
			netlog_put_raw(o, "null", 4);
		}
	}
	netlog_put_raw(o, "}\n", 2);
	if (l->chain) {
		netlog_chain_hash(o->buf, o->len - 1, l->prev);
		l->has_prev = true;
	}
}

int netlog_emit(struct netlog *l, struct netlog_out *o)
{
	char from[NETLOG_PREV_HEX + 1];
	bool from_has = l->has_prev;

	if (netlog_flush(l) == -1)
		from_has = l->has_prev; /* the held rows' failure is reported; this row goes on */
	memcpy(from, l->prev, sizeof(from));
	finish(l, o);
	return put_rows(l, o->buf, o->len, from_has, from);
}

int netlog_hold(struct netlog *l, struct netlog_out *o)
{
	if (l->held == NULL && (l->held = malloc(HELD_MAX)) == NULL)
		return netlog_emit(l, o);
	if (l->nheld > 0 && l->nheld + o->len + NETLOG_PREV_MAX > HELD_MAX)
		netlog_flush(l);
	if (o->len + NETLOG_PREV_MAX > HELD_MAX)
		return netlog_emit(l, o);
	if (l->nheld == 0) {
		l->held_prev = l->has_prev;
		memcpy(l->held_from, l->prev, sizeof(l->held_from));
	}
	finish(l, o);
	memcpy(l->held + l->nheld, o->buf, o->len);
	l->nheld += o->len;
	return 0;
}

int netlog_flush(struct netlog *l)
{
	size_t n = l->nheld;

	if (n == 0)
		return 0;
	l->nheld = 0;
	return put_rows(l, l->held, n, l->held_prev, l->held_from);
}
