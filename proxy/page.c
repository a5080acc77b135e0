/*
 * page.c: a refusal's page, the codec of a refused CONNECT answered
 * inside its TLS.
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
 * REFUSE_PAGE_HELLO_MS of the 200 is closed (tls_accept_state): one that waits for
 * the server to speak first (SSH, a banner) is not kept for head-timeout.
 */
#include "request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	s->ix->resume = s->codec;
	s->codec = &refuse_page_codec;
	session_upstream_close(s);
	s->phase_ms = session_now(s); /* the handshake's deadline: REFUSE_PAGE_HELLO_MS from here */
	tls_intercept_begin(s); /* our 200, then the client's handshake (tls.c) */
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
	s->codec = s->ix->resume;
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
	if (refuse_response(&s->cout, r, ps, body, blen, req != NULL && req->method == HTTP_HEAD) == -1) {
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

/* The handshake is done: the request inside is read as the codec before the page reads one. */
static void page_tls_up(struct session *s, bool h2)
{
	s->ix->resume->tls_up(s, h2);
}

const struct codec refuse_page_codec = {
	.name = "refusal page",
	.refuse = page_refuse,
	.close = exchange_conn_close,
	.release = exchange_conn_release,
	.tls_up = page_tls_up,
};
