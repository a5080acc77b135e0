/*
 * metrics.c: the registry of counters and gauges, their Prometheus text,
 * and the GET /metrics listener (metrics.h).
 *
 * Everything counted lives in static arrays: families, and series drawn
 * from one pool. The listener keeps METRICS_CONNS scrape slots, each with
 * its head buffer; an answer is written into a buf released at the close.
 * It does not authenticate: it listens on loopback unless told otherwise.
 */
#include "metrics.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "http.h"
#include "sock.h"
#include "sockaddr.h"

#define HEADERS_MAX 32

struct series {
	char v[METRICS_LABELS][METRICS_VALUE_MAX + 1];
	uint64_t n;
	int next; /* the family's next series, -1 none */
};

struct metrics_family {
	const char *name, *help;
	const char *label[METRICS_LABELS];
	unsigned nlabels;
	enum metrics_type type;
	int first; /* its first series, -1 none */
	int other; /* where counts go once the pool is spent, -1 not made */
};

static struct metrics_family families[METRICS_FAMILIES];
static unsigned nfamilies;
static struct series pool[METRICS_SERIES];
static int npool;

/* --- the registry -------------------------------------------------------- */

/* v as a label value into out: a short word of [A-Za-z0-9_-], else "other"; NULL "none". */
static void label_value(const char *v, char *out)
{
	size_t i;

	if (v == NULL) {
		memcpy(out, "none", 5);
		return;
	}
	for (i = 0; v[i] != '\0' && i < METRICS_VALUE_MAX; i++) {
		char ch = v[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '_' || ch == '-'))
			break;
		out[i] = ch;
	}
	if (i == 0 || v[i] != '\0') {
		memcpy(out, "other", 6);
		return;
	}
	out[i] = '\0';
}

/*
 * A new series of f with values vals; -1 when the pool is spent. The last
 * METRICS_FAMILIES slots are kept for the families' "other" series (reserve).
 */
static int series_new(struct metrics_family *f, char vals[][METRICS_VALUE_MAX + 1],
		      bool reserve)
{
	struct series *s;
	int *link = &f->first;

	if (npool >= (reserve ? METRICS_SERIES : METRICS_SERIES - METRICS_FAMILIES))
		return -1;
	s = &pool[npool];
	memset(s, 0, sizeof(*s));
	for (unsigned i = 0; i < f->nlabels; i++)
		memcpy(s->v[i], vals[i], sizeof(s->v[i]));
	s->next = -1;
	while (*link != -1)
		link = &pool[*link].next;
	*link = npool;
	return npool++;
}

struct metrics_family *metrics_family(const char *name, enum metrics_type type,
				      const char *help, const char *l1, const char *l2,
				      const char *l3)
{
	const char *labels[METRICS_LABELS] = { l1, l2, l3 };
	struct metrics_family *f;
	char none[METRICS_LABELS][METRICS_VALUE_MAX + 1] = { "" };

	for (unsigned i = 0; i < nfamilies; i++)
		if (strcmp(families[i].name, name) == 0)
			return &families[i];
	if (nfamilies == METRICS_FAMILIES)
		return NULL;
	f = &families[nfamilies++];
	memset(f, 0, sizeof(*f));
	f->name = name;
	f->help = help;
	f->type = type;
	f->first = f->other = -1;
	while (f->nlabels < METRICS_LABELS && labels[f->nlabels] != NULL) {
		f->label[f->nlabels] = labels[f->nlabels];
		f->nlabels++;
	}
	if (f->nlabels == 0)
		series_new(f, none, true);
	return f;
}

/* The series of f for these values, made when new; NULL when none can be had. */
static struct series *series_get(struct metrics_family *f, const char *v1, const char *v2,
				 const char *v3)
{
	const char *in[METRICS_LABELS] = { v1, v2, v3 };
	char vals[METRICS_LABELS][METRICS_VALUE_MAX + 1];
	int i;

	if (f == NULL)
		return NULL;
	for (unsigned k = 0; k < f->nlabels; k++)
		label_value(in[k], vals[k]);
	for (i = f->first; i != -1; i = pool[i].next) {
		unsigned k = 0;

		while (k < f->nlabels && strcmp(pool[i].v[k], vals[k]) == 0)
			k++;
		if (k == f->nlabels)
			return &pool[i];
	}
	i = series_new(f, vals, false);
	if (i == -1) {
		if (f->other == -1) {
			for (unsigned k = 0; k < f->nlabels; k++)
				memcpy(vals[k], "other", 6);
			f->other = series_new(f, vals, true);
		}
		i = f->other;
	}
	return i == -1 ? NULL : &pool[i];
}

void metrics_add(struct metrics_family *f, uint64_t n, const char *v1, const char *v2,
		 const char *v3)
{
	struct series *s = series_get(f, v1, v2, v3);

	if (s != NULL)
		s->n += n;
}

void metrics_set(struct metrics_family *f, uint64_t v, const char *v1, const char *v2,
		 const char *v3)
{
	struct series *s = series_get(f, v1, v2, v3);

	if (s != NULL)
		s->n = v;
}

int metrics_write(struct buf *out)
{
	for (unsigned i = 0; i < nfamilies; i++) {
		const struct metrics_family *f = &families[i];

		if (buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", f->name, f->help, f->name,
			       f->type == METRICS_COUNTER ? "counter" : "gauge") == -1)
			return -1;
		for (int s = f->first; s != -1; s = pool[s].next) {
			if (buf_printf(out, "%s", f->name) == -1)
				return -1;
			for (unsigned k = 0; k < f->nlabels; k++)
				if (buf_printf(out, "%s%s=\"%s\"", k == 0 ? "{" : ",", f->label[k],
					       pool[s].v[k]) == -1)
					return -1;
			if (buf_printf(out, "%s %llu\n", f->nlabels > 0 ? "}" : "",
				       (unsigned long long)pool[s].n) == -1)
				return -1;
		}
	}
	return 0;
}

/* --- the listener ---------------------------------------------------------- */

struct scrape {
	struct metrics_server *ms;
	struct loop_io io;
	struct loop_timer timer;
	char in[METRICS_HEAD_MAX];
	size_t inlen;
	struct buf out;
	bool answered; /* out holds the whole answer */
	uint64_t since; /* loop time it was accepted */
};

struct metrics_server {
	struct loop *loop;
	struct loop_io io;
	const char *prog;
	void (*collect)(void *arg);
	void *arg;
	struct scrape conns[METRICS_CONNS];
};

static void scrape_close(struct scrape *c)
{
	struct metrics_server *ms = c->ms;

	loop_timer_cancel(ms->loop, &c->timer);
	if (c->io.fd >= 0)
		loop_io_drop(ms->loop, &c->io);
	buf_release(&c->out);
	c->inlen = 0;
	c->answered = false;
}

static void scrape_timeout(struct loop *l, struct loop_timer *t)
{
	scrape_close(t->arg);
}

/* The answer into c->out: status, its headers, then body (NULL: a one-line reason). */
static void answer(struct scrape *c, int status, const char *reason, const char *extra)
{
	struct metrics_server *ms = c->ms;
	struct buf body;
	bool ok = status == 200;

	buf_init(&body, METRICS_OUT_MAX);
	if (ok) {
		if (ms->collect != NULL)
			ms->collect(ms->arg);
		if (metrics_write(&body) == -1) {
			buf_release(&body);
			buf_init(&body, METRICS_OUT_MAX);
			status = 500;
			reason = "Internal Server Error";
			ok = false;
		}
	}
	if (!ok)
		buf_printf(&body, "%d %s\n", status, reason);
	if (buf_printf(&c->out, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
				"%sConnection: close\r\n\r\n",
		       status, reason,
		       ok ? "text/plain; version=0.0.4; charset=utf-8" : "text/plain; charset=utf-8",
		       buf_len(&body), extra != NULL ? extra : "") == -1 ||
	    buf_append(&c->out, buf_head(&body), buf_len(&body)) == -1) {
		buf_release(&body);
		scrape_close(c);
		return;
	}
	buf_release(&body);
	c->answered = true;
	if (loop_io_set(ms->loop, &c->io, EPOLLOUT) == -1)
		scrape_close(c);
}

/* What a whole head asks for. */
static void route(struct scrape *c, const struct http_request *req)
{
	static const char path[] = "/metrics";

	if (req->method != HTTP_GET)
		answer(c, 405, "Method Not Allowed", "Allow: GET\r\n");
	else if (req->form != HTTP_FORM_ORIGIN || req->target_len != sizeof(path) - 1 ||
		 memcmp(req->target, path, sizeof(path) - 1) != 0)
		answer(c, 404, "Not Found", NULL);
	else
		answer(c, 200, "OK", NULL);
}

static void scrape_read(struct scrape *c)
{
	struct http_request req;
	struct http_header hdrs[HEADERS_MAX];
	ssize_t n = read(c->io.fd, c->in + c->inlen, sizeof(c->in) - c->inlen);

	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		scrape_close(c);
		return;
	}
	c->inlen += (size_t)n;
	n = http_parse_request(c->in, c->inlen, sizeof(c->in), &req, hdrs, HEADERS_MAX);
	if (n > 0) {
		route(c, &req);
	} else if (n == -1) {
		if (req.error == HTTP_E_TOO_MANY || req.error == HTTP_E_TOO_LARGE)
			answer(c, 431, "Request Header Fields Too Large", NULL);
		else
			answer(c, 400, "Bad Request", NULL);
	}
}

static void on_scrape(struct loop *l, struct loop_io *io, uint32_t events)
{
	struct scrape *c = io->arg;

	if (!c->answered) {
		if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
			scrape_read(c);
		return;
	}
	if (buf_len(&c->out) > 0) {
		ssize_t n = send(io->fd, buf_head(&c->out), buf_len(&c->out), MSG_NOSIGNAL);

		if (n > 0)
			buf_consume(&c->out, (size_t)n);
		else if (n == -1 && errno != EAGAIN && errno != EINTR) {
			scrape_close(c);
			return;
		}
	}
	if (buf_len(&c->out) == 0) {
		shutdown(io->fd, SHUT_WR);
		scrape_close(c);
	}
}

/*
 * A slot for a new scrape: a free one, else the oldest still waiting for
 * its head, closed, once it has had METRICS_GRACE_MS to send one. Idle
 * connections cannot keep a scraper out, and a flood cannot close one
 * before its head could come. NULL when no slot can be had.
 */
static struct scrape *slot_take(struct metrics_server *ms)
{
	uint64_t now = loop_now(ms->loop);
	struct scrape *old = NULL;

	for (size_t i = 0; i < METRICS_CONNS; i++) {
		struct scrape *c = &ms->conns[i];

		if (c->io.fd < 0)
			return c;
		if (!c->answered && now - c->since >= METRICS_GRACE_MS &&
		    (old == NULL || c->since < old->since))
			old = c;
	}
	if (old != NULL)
		scrape_close(old);
	return old;
}

static void on_accept(struct loop *l, struct loop_io *io, uint32_t events)
{
	struct metrics_server *ms = io->arg;

	for (int k = 0; k < METRICS_CONNS * 2; k++) {
		struct scrape *c;
		int fd = accept4(io->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd == -1) {
			if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
				fprintf(stderr, "%s: metrics: accept: %s\n", ms->prog,
					strerror(errno));
			return;
		}
		c = slot_take(ms);
		if (c == NULL || loop_io_add(l, &c->io, fd, EPOLLIN, on_scrape, c) == -1) {
			close(fd); /* every slot answering: a scraper tries again */
			continue;
		}
		c->inlen = 0;
		c->answered = false;
		c->since = loop_now(l);
		buf_init(&c->out, METRICS_OUT_MAX + 512);
		loop_timer_set(l, &c->timer, METRICS_TIMEOUT_MS, scrape_timeout, c);
	}
}

struct metrics_server *metrics_server_new(struct loop *l, const struct sockaddr_storage *addr,
					  const char *prog, void (*collect)(void *arg),
					  void *arg)
{
	static struct metrics_server server; /* one per process */
	struct metrics_server *ms = &server;
	char name[128];
	int fd, e;

	sockaddr_format(addr, name, sizeof(name));
	if (ms->loop != NULL) {
		errno = EBUSY;
		goto fail;
	}
	memset(ms, 0, sizeof(*ms));
	ms->io.fd = -1;
	for (size_t i = 0; i < METRICS_CONNS; i++) {
		ms->conns[i].ms = ms;
		ms->conns[i].io.fd = -1;
		buf_init(&ms->conns[i].out, METRICS_OUT_MAX + 512);
	}
	fd = sock_listen(addr, SOCK_LISTEN_V6ONLY);
	if (fd == -1)
		goto fail;
	if (loop_io_add(l, &ms->io, fd, EPOLLIN, on_accept, ms) == -1) {
		e = errno;
		close(fd);
		errno = e;
		goto fail;
	}
	ms->loop = l;
	ms->prog = prog;
	ms->collect = collect;
	ms->arg = arg;
	fprintf(stderr, "%s: metrics on http://%s/metrics\n", prog, name);
	return ms;
fail:
	e = errno;
	fprintf(stderr, "%s: metrics-listen %s: %s\n", prog, name, strerror(errno));
	errno = e;
	return NULL;
}

void metrics_server_free(struct metrics_server *ms)
{
	if (ms == NULL || ms->loop == NULL)
		return;
	for (size_t i = 0; i < METRICS_CONNS; i++)
		if (ms->conns[i].io.fd >= 0)
			scrape_close(&ms->conns[i]);
	loop_io_close(ms->loop, &ms->io);
	ms->loop = NULL;
}
