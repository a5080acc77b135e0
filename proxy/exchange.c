/*
 * exchange.c: one exchange's life, whichever codec carries it (an
 * HTTP/1.1 request or CONNECT, h1.c; an HTTP/2 stream, h2_stream.c).
 *
 * Its storage (exchange_new, exchange_reset, exchange_free); its start:
 * the row's fields and, on the connection's first head, its stamp; its
 * target; the policy's verdict on it and its budget's charge
 * (exchange_start), then the body's cap (exchange_capped); and its row
 * (exchange_log). Its refusal is one call, exchange_refuse (inline in
 * session.h), that the connection's codec says its own way. It reads no
 * bytes and writes none to a socket: the codecs do.
 */
#include "request.h"
#include "runnote.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* --- storage ------------------------------------------------------------------- */

/*
 * The request's storage: a zeroed struct exchange, allocated for the first
 * request (or refusal) after the session was idle. Returns 0 or -1.
 */
int exchange_new(struct session *s)
{
	if (s->x != NULL) {
		exchange_reset(s->x);
		return 0;
	}
	s->x = malloc(sizeof(*s->x));
	if (s->x == NULL)
		return -1;
	memset(s->x, 0, sizeof(*s->x));
	s->x->conn = s;
	return 0;
}

void exchange_reset(struct exchange *x)
{
	struct session *s = x->conn;

	free(x->ws); /* its WebSocket's state (upgrade.c), no pointers in it */
	x->ws = NULL;
	budget_end(x);
	memset(x, 0, sizeof(*x));
	x->conn = s;
}

/* Give the request's storage back; its row is written (the session is idle or closing). */
void exchange_free(struct session *s)
{
	if (s->x == NULL)
		return;
	inject_end(s->x);
	free(s->x->ws);
	budget_end(s->x);
	free(s->x);
	s->x = NULL;
}

/*
 * A codec of one exchange at a time closes (struct codec's close): the
 * exchange still open gets its row, its detail why the connection went,
 * and its budget and secrets go; its storage waits for the release.
 */
void exchange_conn_close(struct session *s, const char *why)
{
	struct exchange *x = s->x;

	if (x == NULL)
		return;
	if (x->active && x->detail[0] == '\0' && why != NULL)
		snprintf(x->detail, sizeof(x->detail), "%s", why);
	exchange_log(x);
	budget_end(x);
	inject_end(x);
}

void exchange_conn_release(struct session *s)
{
	if (s->x != NULL)
		free(s->x->ws);
	free(s->x);
	s->x = NULL;
}

/* --- its start: the row's fields, the target, the judgement ---------------------- */

static void copy_capped(char *dst, size_t size, size_t *len, const char *src, size_t n)
{
	if (n > size - 1)
		n = size - 1;
	memcpy(dst, src, n);
	dst[n] = '\0';
	*len = n;
}

/* Which directive set the request's body cap, for the refusal. */
static const char *cap_name(const struct exchange *x)
{
	const struct session *s = x->conn;

	return x->body_cap == session_config(s)->max_body_bytes ? "max-body-bytes" : "body-limit";
}

/*
 * A new request from its head: the row's fields (method, path, user
 * agent), and on the connection's first head its stamp. Returns 0, or -1
 * when it was refused or the session closed.
 */
static int request_begin(struct exchange *x, const struct http_request *req)
{
	struct session *s = x->conn;
	int ua;

	x->active = true;
	x->t_start = loop_clock_ms();
	x->dns_ms = x->connect_ms = -1;
	x->method = req->method;
	x->minor = req->minor;
	x->decision = "allow";
	x->req = ++s->nreq;
	copy_capped(x->path, sizeof(x->path), &x->path_len, req->target, req->target_len);
	if (req->form == HTTP_FORM_ABSOLUTE)
		copy_capped(x->path, sizeof(x->path), &x->path_len, req->path, req->path_len);
	ua = http_find_header(req->headers, req->nheaders, "User-Agent");
	if (ua >= 0)
		copy_capped(x->ua, sizeof(x->ua), &x->ua_len, req->headers[ua].value,
			    req->headers[ua].value_len);
	if (s->nreq == 1 && session_stamp_first_head(x, req) == -1)
		return -1;
	x->client_close = req->close || req->minor == 0;
	return 0;
}

/*
 * Where the request goes: inside an intercepted CONNECT the tunnel's
 * target (the head must be origin-form with a Host), else the target the
 * request line names, canonical. Returns 0, or -1 refused (400).
 */
static int request_target(struct exchange *x, const struct http_request *req)
{
	struct session *s = x->conn;
	const char *err = NULL;

	if (s->intercept) {
		if (req->form != HTTP_FORM_ORIGIN || req->host_header < 0) {
			exchange_refusef(x, 400, "malformed", "http_request_error",
					 "inside a TLS tunnel send GET /path with a Host header, not "
					 "%.*s",
					 (int)(req->target_len > 64 ? 64 : req->target_len),
					 req->target);
			return -1;
		}
		x->t = s->ix->tunnel;
		return 0;
	}
	if (req->form != HTTP_FORM_ABSOLUTE && req->form != HTTP_FORM_AUTHORITY) {
		exchange_refusef(x, 400, "malformed", "http_request_error",
				 "sluice-proxy is a forward proxy: send http://host/path or "
				 "CONNECT host:port, not %.*s",
				 (int)(req->target_len > 64 ? 64 : req->target_len), req->target);
		return -1;
	}
	if (host_canon(req->host, req->host_len, &x->t.host, &err) == -1) {
		exchange_refusef(x, 400, "malformed", "http_request_error", "bad host %.*s: %s",
				 (int)(req->host_len > 64 ? 64 : req->host_len), req->host, err);
		return -1;
	}
	x->t.port = req->port;
	x->t.via = req->method == HTTP_CONNECT ? GRANT_VIA_CONNECT : GRANT_VIA_HTTP;
	return 0;
}

/*
 * The policy's verdict on the target and the Host header (which must name
 * the same host and port): the row's decision, reason and grant. Returns
 * 0 allowed (or observed), -1 refused.
 */
static int request_judge(struct exchange *x, const struct http_request *req)
{
	struct session *s = x->conn;
	struct policy_request pr;
	struct host hh;
	struct verdict v;
	char who[SESSION_WHO_MAX];
	const char *err = NULL;

	memset(&pr, 0, sizeof(pr));
	pr.via = x->t.via;
	pr.host = &x->t.host;
	pr.port = x->t.port;
	if (req->host_header >= 0) {
		const struct http_header *h = &req->headers[req->host_header];
		uint16_t port;
		bool has_port;

		if (host_port_parse(h->value, h->value_len, x->t.port, &hh, &port, &has_port,
				    &err) == -1) {
			exchange_refusef(x, 400, "malformed", "http_request_error",
					 "bad Host header: %s", err);
			return -1;
		}
		if (has_port && port != x->t.port) {
			exchange_refusef(x, 403, "host-mismatch", "http_request_denied",
					 "the Host header names port %u but the request goes to port "
					 "%u; nothing to grant: send the request to the host it names",
					 port, x->t.port);
			return -1;
		}
		pr.host_header = &hh;
	}
	session_principal(s, &pr, who, sizeof(who));
	policy_judge(s->px->policy, &pr, time(NULL), &v);
	if (!v.allow) {
		refuse_verdict(x, &v);
		return -1;
	}
	if (v.observed) {
		x->decision = "observe";
		snprintf(x->detail, sizeof(x->detail), "would be refused: %s", v.detail);
	}
	x->reason = v.reason;
	x->raw_tunnel = v.tunnel;
	if (v.grant != NULL) {
		char g[HOST_NAME_MAX_LEN + 16];

		grant_format(v.grant, g, sizeof(g));
		snprintf(x->grant, sizeof(x->grant), "%s (%s%s%s)", g,
			 grant_level_name(v.grant->level), v.by != NULL ? ", for " : "",
			 v.by != NULL ? v.by->text : "");
	}
	if (v.grant != NULL && grant_budgeted(v.grant) &&
	    budget_request(x, req, head_up_size(x, req), v.grant) == -1)
		return -1;
	return 0;
}

int exchange_start(struct exchange *x, const struct http_request *req)
{
	if (request_begin(x, req) == -1 || request_target(x, req) == -1 ||
	    request_judge(x, req) == -1)
		return -1;
	return 0;
}

int exchange_capped(struct exchange *x, const struct http_request *req)
{
	struct session *s = x->conn;

	x->body_cap = config_body_limit(session_config(s), x->t.host.name);
	if (x->body_cap > 0 && req->body == HTTP_BODY_LENGTH && req->content_length > x->body_cap) {
		exchange_body_refuse(x, req->content_length);
		return -1;
	}
	return 0;
}

void exchange_body_refuse(struct exchange *x, uint64_t declared)
{
	if (declared > 0)
		exchange_refusef(x, 413, "body-too-large", "http_request_error",
				 "request body of %llu bytes is over %s %llu; nothing was sent",
				 (unsigned long long)declared, cap_name(x),
				 (unsigned long long)x->body_cap);
	else
		exchange_refusef(x, 413, "body-too-large", "http_request_error",
				 "request body over %s %llu; the request was cut off", cap_name(x),
				 (unsigned long long)x->body_cap);
}

int exchange_judge(struct exchange *x, const struct http_request *req)
{
	exchange_reset(x);
	if (exchange_start(x, req) == -1 || exchange_capped(x, req) == -1)
		return -1;
	return inject_begin(x, req);
}

/* --- its row ------------------------------------------------------------------- */

/* Whose row budget a row spends (lograte.c): its spender's, an unattributed one its unit's. */
static const char *row_key(const struct session *s, char *buf, size_t size)
{
	if (s->stamp != NULL || s->build != NULL)
		return session_spender(s, buf, size);
	return lograte_unattributed(s->client, buf, size);
}

/* The row budget key of a quiet row (an agent's telemetry): its principal's, apart. */
static const char *quiet_key(const char *key, char *buf, size_t size)
{
	snprintf(buf, size, "quiet %s", key);
	return buf;
}

void exchange_row(const struct exchange *x, struct netlog_row *row, struct stamp *st, char *who,
		  size_t size)
{
	const struct session *s = x->conn;

	memset(row, 0, sizeof(*row));
	row->conn = s->id;
	row->req = x->req;
	row->run = s->px->run_id;
	row->who = session_who(s, who, size);
	row->build = s->build != NULL ? s->build->as : NULL;
	if (s->stamp != NULL) {
		session_stamp_expand(s->stamp, st);
		row->stamp = st;
	}
	row->client = s->client;
	row->proto = x->h2				      ? "h2"
		    : x->method == HTTP_CONNECT || x->method == HTTP_UNKNOWN ? NULL
		    : x->minor == 0					      ? "http/1.0"
									      : "http/1.1";
	row->kind = x->method == HTTP_CONNECT ? "tunnel"
		   : x->ws_open		     ? (s->intercept ? "wss" : "ws")
		   : s->intercept	     ? "https"
					     : "http";
	row->method = x->method != HTTP_UNKNOWN ? http_method_name(x->method) : NULL;
	row->host = x->t.host.name[0] != '\0' ? x->t.host.name : NULL;
	row->port = x->t.host.name[0] != '\0' ? x->t.port : -1;
	row->path = x->method != HTTP_CONNECT && x->path_len > 0 ? x->path : NULL;
	row->path_len = x->path_len;
	row->status = x->status;
	row->decision = x->decision;
	row->reason = x->reason;
	row->grant = x->grant[0] != '\0' ? x->grant : NULL;
	row->refusal = x->refusal[0] != '\0' ? x->refusal : NULL;
	row->inject = x->inject_name[0] != '\0' ? x->inject_name : NULL;
	row->scrubbed = x->scrub != NULL ? (int64_t)(scrub_count(x->scrub) +
						     (x->scrub_ctl != NULL ? scrub_count(x->scrub_ctl) : 0))
					: -1;
	row->dialed = x->dialed[0] != '\0' ? x->dialed : NULL;
	row->up = x->up;
	row->down = x->down;
	row->ms = loop_clock_ms() - x->t_start;
	row->dns_ms = x->dns_ms;
	row->connect_ms = x->connect_ms;
	row->ua = x->ua_len > 0 ? x->ua : NULL;
	row->ua_len = x->ua_len;
	row->detail = x->detail[0] != '\0' ? x->detail : NULL;
}

bool exchange_log(struct exchange *x)
{
	struct session *s = x->conn;
	struct netlog_row row;
	struct stamp st;
	char who[SESSION_WHO_MAX], key[SESSION_WHO_MAX + STAMP_AS_MAX], qkey[sizeof(key) + 8];
	bool written = false;

	if (!x->active)
		return false;
	x->active = false;
	exchange_row(x, &row, &st, who, sizeof(who));
	if (sandbox_probe(s->px, x, row.stamp)) {
		/* a run's self-check: a kind of its own, counted by nothing that counts refusals */
		row.kind = "probe";
		row.path = RUNNOTE_PROBE_PATH;
		row.path_len = sizeof(RUNNOTE_PROBE_PATH) - 1;
		if (s->px->netlog != NULL) {
			netlog_write(s->px->netlog, &row);
			written = true;
		}
	} else {
		const char *k = row_key(s, key, sizeof(key));

		/* an agent's telemetry spends a budget of its own: a loop of it never holds back a real refusal's row */
		if (row.reason != NULL && strcmp(row.reason, "quiet") == 0)
			k = quiet_key(k, qkey, sizeof(qkey));
		if (s->px->netlog != NULL && lograte_admit(s->px, k, &row)) {
			netlog_write(s->px->netlog, &row);
			written = true;
		}
		stats_row(&row);
		sandbox_count(&row);
	}
	inject_end(x);
	return written;
}
