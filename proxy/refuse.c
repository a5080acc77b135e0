/*
 * refuse.c: what a refused client receives.
 *
 * Every refusal is a complete response with Connection: close, a
 * Proxy-Status header (RFC 9209) naming the error type and our reason code,
 * and a one-line plain-text body that says what happened and, for policy
 * refusals, the exact command that would grant the request. The caller
 * writes the detail; this file frames it, gives a grantable refusal its id
 * (Proxy-Status details "REASON id=ID: DETAIL"), and words a policy
 * verdict's refusal (refuse_verdict): the approve and allow add commands
 * that grant it, to the principal that asked.
 */
#include "session.h"

#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "hex.h"

const char *refuse_status_text(int status)
{
	switch (status) {
	case 400: return "Bad Request";
	case 403: return "Forbidden";
	case 407: return "Proxy Authentication Required";
	case 408: return "Request Timeout";
	case 413: return "Content Too Large";
	case 431: return "Request Header Fields Too Large";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	default: return "Error";
	}
}

/* Proxy-Status details is an sf-string: printable ASCII, '"' and '\' escaped. */
static void sf_string(const char *in, char *out, size_t size)
{
	size_t o = 0;

	for (; *in != '\0' && o + 3 < size; in++) {
		unsigned char c = (unsigned char)*in;

		if (c < 0x20 || c > 0x7e)
			c = '?';
		if (c == '"' || c == '\\')
			out[o++] = '\\';
		out[o++] = (char)c;
	}
	out[o] = '\0';
}

int refuse_id(char *out)
{
	unsigned char r[REFUSAL_ID_LEN / 2];

	/* 8 bytes from the kernel's CSPRNG: such a read neither blocks once booted nor comes short */
	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r) && RAND_bytes(r, sizeof(r)) != 1) {
		out[0] = '\0';
		return -1;
	}
	hex_encode(r, sizeof(r), out);
	return 0;
}

int refuse_texts(const struct refusal *r, char *status_line, size_t ssize, char *body,
		 size_t bsize)
{
	char details[sizeof(r->detail) * 2 + 64];
	char sf[sizeof(details) * 2];
	int blen;

	if (r->id[0] != '\0')
		snprintf(details, sizeof(details), "%s id=%s: %s", r->reason, r->id, r->detail);
	else
		snprintf(details, sizeof(details), "%s: %s", r->reason, r->detail);
	sf_string(details, sf, sizeof(sf));
	snprintf(status_line, ssize, "sluice; error=%s; details=\"%s\"", r->proxy_status, sf);
	blen = snprintf(body, bsize, "sluice: %s\n", r->detail);
	if (blen < 0 || (size_t)blen >= bsize)
		blen = (int)strlen(body);
	return blen;
}

/* r's response onto out: its status, Proxy-Status ps and body[0..blen) (none to a HEAD). */
static int response_write(struct buf *out, const struct refusal *r, const char *ps, const char *body,
			  int blen, bool head)
{
	return buf_printf(out,
			  "HTTP/1.1 %d %s\r\n"
			  "%s"
			  "Proxy-Status: %s\r\n"
			  "Content-Type: text/plain; charset=utf-8\r\n"
			  "Content-Length: %d\r\n"
			  "Connection: close\r\n"
			  "\r\n"
			  "%s",
			  r->status, refuse_status_text(r->status),
			  r->status == 407 ? "Proxy-Authenticate: Basic realm=\"sluice-build\"\r\n" : "",
			  ps, blen, head ? "" : body);
}

int refuse_write(struct buf *out, const struct refusal *r)
{
	char ps[REFUSE_STATUS_MAX];
	char body[REFUSE_BODY_MAX];
	int blen = refuse_texts(r, ps, sizeof(ps), body, sizeof(body));

	return response_write(out, r, ps, body, blen, false);
}

/* The one line naming the grant that would allow this target. */
static void grant_hint(const struct target *t, char *out, size_t size)
{
	bool bare = (t->via == GRANT_VIA_CONNECT && t->port == 443) ||
		    (t->via == GRANT_VIA_HTTP && t->port == 80);

	bool v6 = t->host.kind == HOST_IPV6;

	if (bare)
		snprintf(out, size, v6 ? "[%s]" : "%s", t->host.name);
	else
		snprintf(out, size, v6 ? "[%s]:%u" : "%s:%u", t->host.name, t->port);
}

/*
 * A not-granted refusal: its id, and the commands that grant it, by that
 * id or by hand, to the principal that asked when a grant is scoped to
 * others.
 */
static void refuse_ungranted(struct exchange *x, const struct verdict *v)
{
	struct session *s = x->conn;
	struct refusal ref = { .status = v->status, .reason = v->reason,
			       .proxy_status = v->proxy_status };
	char hint[HOST_NAME_MAX_LEN + 16], who[SESSION_WHO_MAX];
	struct policy_request pr = { 0 };

	grant_hint(&x->t, hint, sizeof(hint));
	session_principal(s, &pr, who, sizeof(who));
	if (refuse_id(ref.id) == -1) /* no id to approve by: the grant by hand alone */
		snprintf(ref.detail, sizeof(ref.detail),
			 "%s is not granted%s; to grant it run: sluice allow add %s%s%s", hint,
			 v->scoped != NULL ? " to this connection" : "", hint,
			 v->scoped != NULL && pr.who != NULL ? " --for " : "",
			 v->scoped != NULL && pr.who != NULL ? (pr.as != NULL ? pr.as : pr.who) : "");
	else if (v->scoped != NULL && pr.who == NULL)
		snprintf(ref.detail, sizeof(ref.detail),
			 "%s is granted only to the principals its grants name, and this connection "
			 "has no stamp; to grant it to every connection run: sluice allow approve %s "
			 "(or: sluice allow add %s)", hint, ref.id, hint);
	else if (v->scoped != NULL)
		snprintf(ref.detail, sizeof(ref.detail),
			 "%s is granted only to other principals; to grant it to this one run: sluice "
			 "allow approve %s (or: sluice allow add %s --for %s)", hint, ref.id, hint,
			 pr.as != NULL ? pr.as : pr.who);
	else
		snprintf(ref.detail, sizeof(ref.detail),
			 "%s is not granted; to grant it run: sluice allow approve %s (or: sluice allow "
			 "add %s)", hint, ref.id, hint);
	exchange_refuse(x, &ref);
}

void refuse_verdict(struct exchange *x, const struct verdict *v)
{
	if (strcmp(v->reason, "not-granted") == 0) {
		refuse_ungranted(x, v);
	} else if (strcmp(v->reason, "host-mismatch") == 0) {
		exchange_refusef(x, v->status, v->reason, v->proxy_status,
				 "the Host header names another host than the request target %s; "
				 "nothing to grant: send the request to the host it names",
				 x->t.host.name);
	} else if (strcmp(v->reason, "denied-ip") == 0 && x->t.host.kind != HOST_NAME) {
		const struct host *h = &x->t.host;

		dial_refuse_address(x, h->kind == HOST_IPV4 ? AF_INET : AF_INET6, &h->addr, v);
	} else {
		exchange_refusef(x, v->status, v->reason, v->proxy_status, "%s", v->detail);
	}
}

/*
 * --- a refusal's page ----------------------------------------------------
 *
 * A client refused at CONNECT shows only "CONNECT tunnel failed, response
 * 403" (curl, git) or a proxy error (python, node's agents): the body of
 * a CONNECT's answer is not shown. When the name is one we may intercept
 * (intercept on, the CA loaded, not a passthrough name) and refuse-page is
 * on, the refusal's row is written at the CONNECT as always, then the
 * CONNECT is answered 200, the client's TLS completed with a leaf for the
 * name (HTTP/1.1 only: no upstream is dialed, so h2 is not offered back),
 * and its first request answered with the refusal, its Proxy-Status and a
 * body that names what was refused, why, the refusal's id and the command
 * that grants it; then the close. No row is written for the request
 * inside: the refusal is counted once. Only 403s get a page (a policy
 * refusal, a spent budget; an allowed name that resolves to a denied
 * address is refused inside TLS anyway, its CONNECT answered 200 before
 * any lookup): not a denied IP literal (no name to make a leaf for), a
 * 407 (the client's proxy credentials), errors (400, 5xx), nor a refusal
 * whose row was not written because its principal is past its
 * refusal-row budget (a client that loops is not given a handshake each
 * time), nor a quiet host's (an agent's telemetry: nobody reads it). A
 * client that has not finished its handshake within
 * REFUSE_PAGE_HELLO_MS of the 200 is closed (state.c): one that waits for
 * the server to speak first (SSH, a banner) is not kept for head-timeout.
 */
bool refuse_page_wanted(const struct exchange *x, const struct refusal *r)
{
	const struct session *s = x->conn;

	return session_config(s)->refuse_page && r->status == 403 && x->method == HTTP_CONNECT &&
	       strcmp(r->reason, "quiet") != 0 &&
	       !x->resp_started && !s->intercept && s->h2 == NULL && s->ix == NULL &&
	       x->t.host.kind == HOST_NAME && x->t.host.name[0] != '\0' &&
	       tls_intercepts(s->px, &x->t.host, x->t.port);
}

int refuse_page_begin(struct exchange *x, const struct refusal *r)
{
	struct session *s = x->conn;
	struct http_header hdrs[HEADERS_MAX];
	struct http_request req;
	struct refusal *page;

	/* refused at its judgement, the CONNECT's head is still in cin: nothing may follow it */
	if (buf_len(&s->cin) > 0) {
		ssize_t n = http_parse_request(buf_head(&s->cin), buf_len(&s->cin), HEAD_MAX, &req,
					       hdrs, HEADERS_MAX);

		if (n <= 0 || req.method != HTTP_CONNECT || (size_t)n != buf_len(&s->cin))
			return -1;
	}
	page = malloc(sizeof(*page));
	if (s->ix == NULL)
		s->ix = calloc(1, sizeof(*s->ix));
	if (page == NULL || s->ix == NULL) {
		free(page);
		return -1;
	}
	buf_consume(&s->cin, buf_len(&s->cin));
	*page = *r;
	s->ix->page = page;
	s->codec = &refuse_page_codec;
	dial_close(s);
	s->phase_ms = session_now(s); /* the handshake's deadline: REFUSE_PAGE_HELLO_MS from here */
	session_intercept_begin(s); /* our 200, then the client's handshake (tls.c) */
	return 0;
}

/* Printable ASCII of in[0..len), at most size - 1 bytes; anything else '?'. */
static void printable(const char *in, size_t len, char *out, size_t size)
{
	size_t o = 0;

	for (size_t i = 0; i < len && o + 1 < size; i++)
		out[o++] = in[i] > 0x20 && in[i] < 0x7f ? in[i] : '?';
	out[o] = '\0';
}

void refuse_page_answer(struct session *s, const struct http_request *req)
{
	struct refusal *r = s->ix->page;
	const struct target *t = &s->ix->tunnel;
	char ps[REFUSE_STATUS_MAX], line[REFUSE_BODY_MAX], what[HOST_NAME_MAX_LEN + 300];
	char body[sizeof(what) + REFUSE_BODY_MAX + 64];
	int blen;

	s->ix->page = NULL;
	s->codec = &h1_codec;
	if (!s->intercept) { /* the handshake did not complete: nothing can be said in it */
		free(r);
		session_close(s, NULL);
		return;
	}
	refuse_texts(r, ps, sizeof(ps), line, sizeof(line));
	if (req != NULL) {
		char method[24], path[201];
		char port[8] = "";

		printable(req->method_str, req->method_len, method, sizeof(method));
		printable(req->target, req->target_len, path, sizeof(path));
		if (t->port != 443)
			snprintf(port, sizeof(port), ":%u", t->port);
		snprintf(what, sizeof(what), "%s https://%s%s%s", method, t->host.name, port,
			 req->form == HTTP_FORM_ORIGIN ? path : "/");
	} else {
		snprintf(what, sizeof(what), "CONNECT %s:%u", t->host.name, t->port);
	}
	blen = snprintf(body, sizeof(body), "sluice: refused %s\n%s%s%s%s", what, line,
			r->id[0] != '\0' ? "refusal id: " : "", r->id, r->id[0] != '\0' ? "\n" : "");
	if (blen < 0 || (size_t)blen >= sizeof(body))
		blen = (int)strlen(body);
	if (response_write(&s->cout, r, ps, body, blen, req != NULL && req->method == HTTP_HEAD) == -1) {
		free(r);
		session_close(s, "out of memory");
		return;
	}
	free(r);
	session_enter_drain(s);
}

/* Refused again inside a refusal's page (a timeout): the page's refusal is the answer. */
static void page_refuse(struct exchange *x, const struct refusal *r)
{
	refuse_page_answer(x->conn, NULL);
}

const struct codec refuse_page_codec = { .name = "refusal page", .refuse = page_refuse };
