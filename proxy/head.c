/*
 * head.c: the heads sluice-proxy writes.
 *
 * The request head it sends upstream (origin-form, the canonical Host,
 * hop-by-hop, Proxy-* and stamp headers out, a rule's credential in) and
 * the response head it sends the client (re-framed, hop-by-hop out). It
 * reads nothing and decides nothing: exchange.c has judged the request,
 * inject.c chose the rule and holds the secret.
 */
#include "request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int put(struct buf *b, const char *p, size_t n)
{
	return buf_append(b, p, n);
}

int head_put_header(struct buf *b, const struct http_header *h)
{
	if (put(b, h->name, h->name_len) == -1 || put(b, ": ", 2) == -1 ||
	    put(b, h->value, h->value_len) == -1 || put(b, "\r\n", 2) == -1)
		return -1;
	return 0;
}


/* Connection and Upgrade, for a WebSocket handshake's heads (upgrade.c). */
static int ws_head(struct buf *b)
{
	return buf_append(b, "Connection: Upgrade\r\nUpgrade: websocket\r\n", 41);
}

/*
 * The path with a query rule's parameter written (inject.c decided the
 * rule and holds the secret): *out malloc'd, *size its allocation (the
 * caller wipes and frees it), or *out NULL when there is no query rule.
 * Returns the length, or -1.
 */
ssize_t head_query_path(struct exchange *x, const struct http_request *req, char **out,
			size_t *size)
{
	bool injected = false;
	int n;

	*out = NULL;
	if (x->rule == NULL || x->rule->target != INJECT_QUERY)
		return (ssize_t)req->path_len;
	*size = req->path_len + 3 * (INJECT_PREFIX_MAX + x->secret_len) + sizeof(x->rule->field) + 8;
	*out = malloc(*size);
	if (*out == NULL)
		return -1;
	n = inject_query_rewrite(x->rule, req->path, req->path_len, x->secret, x->secret_len, *out,
				 *size, &injected);
	x->injected = injected;
	return n;
}

/* The request line's target. Returns 0, or -1 when it does not fit. */
static int put_target(struct exchange *x, const struct http_request *req)
{
	struct session *s = x->conn;
	char *p;
	size_t size = 0;
	ssize_t n = head_query_path(x, req, &p, &size);

	if (p == NULL)
		return n < 0 ? -1 : put(&s->uout, req->path, req->path_len);
	n = n < 0 ? -1 : put(&s->uout, p, (size_t)n);
	explicit_bzero(p, size);
	free(p);
	return (int)n;
}

/*
 * A header rule's value (prefix+secret), malloc'd: the caller wipes and
 * frees it. Sets x->injected. Returns its length, or -1.
 */
ssize_t head_credential(struct exchange *x, char **value)
{
	size_t size = INJECT_PREFIX_MAX + x->secret_len + 1;
	char *v = malloc(size);
	int n;

	*value = v;
	if (v == NULL)
		return -1;
	n = inject_header_value(x->rule, x->secret, x->secret_len, v, size);
	x->injected = n >= 0;
	return n;
}

/* A header rule's line (name: prefix+secret). Returns 0 or -1. */
static int put_credential(struct exchange *x)
{
	struct session *s = x->conn;
	const char *field = x->rule->field;
	char *v;
	ssize_t n = head_credential(x, &v);

	if (n >= 0)
		n = put(&s->uout, field, strlen(field)) == -1 || put(&s->uout, ": ", 2) == -1 ||
				    put(&s->uout, v, (size_t)n) == -1 || put(&s->uout, "\r\n", 2) == -1
			    ? -1
			    : 0;
	if (v != NULL) {
		explicit_bzero(v, INJECT_PREFIX_MAX + x->secret_len + 1);
		free(v);
	}
	if (n == -1)
		x->injected = false;
	return (int)n;
}

/*
 * Host (HTTP/2's :authority) as the policy judged it: the canonical name
 * (lower-case A-labels, no trailing dot, an IPv4 literal as a dotted quad,
 * IPv6 bracketed), and the port unless it is the scheme's default. The
 * origin reads the name that was judged, never a spelling of it (GOOD.TEST.,
 * full-width letters).
 */
int head_authority(const struct exchange *x, char *out, size_t size)
{
	const struct session *s = x->conn;
	const struct target *t = &x->t;
	uint16_t dflt = s->intercept ? 443 : 80;

	return host_port_format(out, size, t->host.name, t->port == dflt ? HOST_PORT_NONE : t->port);
}

static int put_host(struct exchange *x)
{
	struct session *s = x->conn;
	char a[HOST_NAME_MAX_LEN + 16];

	head_authority(x, a, sizeof(a));
	return buf_printf(&s->uout, "Host: %s\r\n", a);
}

/*
 * Whether request header i goes upstream, HTTP/1.1 or HTTP/2 (plan:
 * inject_header_plan's, or -2 without a header rule).
 */
bool head_forwards(const struct exchange *x, const struct http_request *req, size_t i, int plan)
{
	const struct http_header *h = &req->headers[i];

	/* a stamp never leaves: not the forwarder's, not a client's */
	if (http_is_hop_header(req->headers, req->nheaders, i) || http_header_is(h, STAMP_HEADER) ||
	    (int)i == req->host_header)
		return false;
	/* a credential goes in one place, the rule's; a host's answers come unencoded to be scrubbed */
	if (x->rule != NULL && plan != -2 && http_header_is(h, x->rule->field))
		return false;
	if (x->scrub != NULL && http_header_is(h, "Accept-Encoding"))
		return false;
	/* a scrubbed WebSocket's messages must stay plain frames: no extension offered */
	if (x->ws_scrubbed && http_header_is(h, "Sec-WebSocket-Extensions"))
		return false;
	/* a range of the body could hold part of a secret, the next range the rest: the whole is asked */
	return !(x->scrub != NULL && (http_header_is(h, "Range") || http_header_is(h, "If-Range") ||
				      http_header_is(h, "Request-Range")));
}

/*
 * The origin-form head sent upstream: the canonical Host first, hop-by-hop
 * and Proxy-* removed, a credential added. To a host whose answers are
 * scrubbed, identity is asked for and Range, If-Range and Request-Range
 * (Apache's old spelling) are dropped: the origin answers with the whole
 * body, so a secret is never split between two ranges the scrubber sees
 * apart.
 */
int head_upstream(struct exchange *x, const struct http_request *req)
{
	struct session *s = x->conn;
	struct buf *b = &s->uout;
	const struct inject_rule *rule = x->rule;
	int plan = rule != NULL && rule->target == INJECT_HEADER ? inject_header_plan(x, req) : -2;

	if (put(b, req->method_str, req->method_len) == -1 || put(b, " ", 1) == -1 ||
	    put_target(x, req) == -1 || buf_printf(b, " HTTP/1.%d\r\n", req->minor) == -1 ||
	    put_host(x) == -1)
		return -1;
	for (size_t i = 0; i < req->nheaders; i++)
		if (head_forwards(x, req, i, plan) && head_put_header(b, &req->headers[i]) == -1)
			return -1;
	if (plan != -2 && put_credential(x) == -1)
		return -1;
	/* a WebSocket handshake says upgrade, never close: the connection goes on as the WebSocket */
	if (x->ws != NULL)
		return ws_head(b) == -1 ? -1 : put(b, "\r\n", 2);
	if (x->scrub != NULL && put(b, "Accept-Encoding: identity\r\n", 27) == -1)
		return -1;
	if (x->client_close && put(b, "Connection: close\r\n", 19) == -1)
		return -1;
	return put(b, "\r\n", 2);
}

/*
 * The client's bytes in its head that would go upstream, as an HTTP/1.1
 * head writes them: the request line with its origin-form target (a
 * CONNECT's authority), Host, each header that forwards, the blank line.
 * Hop-by-hop headers and the stamp never leave, so they do not count; a
 * credential sluice writes is not the client's and does not either. What
 * a budget's max-up charges for a head, HTTP/1.1 or HTTP/2 alike.
 */
uint64_t head_up_size(const struct exchange *x, const struct http_request *req)
{
	char a[HOST_NAME_MAX_LEN + 16];
	int alen = head_authority(x, a, sizeof(a));
	uint64_t n = req->method_len + 1 + (req->path != NULL ? req->path_len : req->target_len) +
		     sizeof(" HTTP/1.1\r\n") - 1 + sizeof("Host: \r\n") - 1 + (alen > 0 ? alen : 0) + 2;

	for (size_t i = 0; i < req->nheaders; i++)
		if (head_forwards(x, req, i, -2))
			n += req->headers[i].name_len + 2 + req->headers[i].value_len + 2;
	return n;
}

/* The response head for the client: re-framed, hop-by-hop and scrubbed-away headers out. */
int head_client(struct exchange *x, const struct http_response *resp)
{
	struct session *s = x->conn;
	struct buf *b = &s->cout;

	if (buf_printf(b, "HTTP/1.1 %d ", resp->status) == -1 ||
	    put(b, resp->reason, resp->reason_len) == -1 || put(b, "\r\n", 2) == -1)
		return -1;
	for (size_t i = 0; i < resp->nheaders; i++) {
		if (http_is_hop_header(resp->headers, resp->nheaders, i) ||
		    inject_drops_header(x, &resp->headers[i]))
			continue;
		if (head_put_header(b, &resp->headers[i]) == -1)
			return -1;
	}
	/* a decoded body is framed anew */
	if (x->inflate != NULL && x->out_chunked &&
	    put(b, "Transfer-Encoding: chunked\r\n", 28) == -1)
		return -1;
	if (x->client_close && resp->status >= 200 &&
	    put(b, "Connection: close\r\n", 19) == -1)
		return -1;
	/* a WebSocket's 101 (upgrade.c checked it): the two headers dropped above */
	if (resp->status == 101 && ws_head(b) == -1)
		return -1;
	return put(b, "\r\n", 2);
}
