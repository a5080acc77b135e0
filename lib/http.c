/*
 * http.c: strict HTTP/1.1 request and response head parsing for a forward
 * proxy (chunked framing is http_chunked.c).
 *
 * Every byte is read through a bounds-checked cursor over the caller's
 * buffer; nothing is allocated or copied. A shape two implementations could
 * read differently (bare LF or CR, obs-fold, whitespace before a colon,
 * repeated or odd Content-Length, any Transfer-Encoding but a lone
 * "chunked") is refused, never repaired. It does not canonicalise hosts
 * (host.c does), decode bodies or rewrite heads.
 */
#include "http.h"
#include "http_bytes.h"

#include <string.h>

#include "host.h"

#define CONTENT_LENGTH_MAX (UINT64_C(1) << 62)

/* ASCII case-insensitive equality of a[0..alen) and the string b. */
static bool eq_nocase(const char *a, size_t alen, const char *b)
{
	size_t i;

	for (i = 0; i < alen; i++) {
		if (b[i] == '\0' || ascii_lower((unsigned char)a[i]) != ascii_lower((unsigned char)b[i]))
			return false;
	}
	return b[i] == '\0';
}

bool http_header_is(const struct http_header *h, const char *name)
{
	return eq_nocase(h->name, h->name_len, name);
}

bool http_value_is(const struct http_header *h, const char *value)
{
	return eq_nocase(h->value, h->value_len, value);
}

/*
 * Whether h is name spelt with '_' for some '-' ("Content_Length"): some
 * servers and CGI gateways fold one into the other, so it is a second name
 * for a header that decides framing or routing.
 */
static bool header_lookalike(const struct http_header *h, const char *name)
{
	bool underscore = false;
	unsigned char ch;
	size_t i;

	for (i = 0; i < h->name_len; i++) {
		if (name[i] == '\0')
			return false;
		ch = (unsigned char)h->name[i];
		if (ch == '_' && name[i] == '-') {
			underscore = true;
			continue;
		}
		if (ascii_lower(ch) != ascii_lower((unsigned char)name[i]))
			return false;
	}
	return underscore && name[i] == '\0';
}

/* Whether the comma list v[0..vlen) has an element equal to tok (ignoring case). */
static bool list_has(const char *v, size_t vlen, const char *tok, size_t tok_len)
{
	struct cursor c;
	const char *elem;
	size_t elem_len, i;
	bool same;

	if (tok_len == 0)
		return false;
	cur_init(&c, v, vlen);
	while (cur_left(&c) > 0) {
		cur_span(&c, is_ows);
		elem = cur_ptr(&c);
		elem_len = cur_span(&c, is_not_comma);
		while (elem_len > 0 && is_ows((unsigned char)elem[elem_len - 1]))
			elem_len--;
		if (elem_len == tok_len) {
			same = true;
			for (i = 0; i < tok_len && same; i++)
				same = ascii_lower((unsigned char)elem[i]) == ascii_lower((unsigned char)tok[i]);
			if (same)
				return true;
		}
		cur_eat(&c, ',');
	}
	return false;
}

bool http_list_has(const char *v, size_t vlen, const char *tok, size_t tok_len)
{
	return list_has(v, vlen, tok, tok_len);
}

/* --- lines and headers ---------------------------------------------------- */

/*
 * The next CRLF-terminated line at c, CRLF excluded. Returns 1 with *line
 * set and c past the CRLF, 0 when the line is not complete in c, -1 with
 * *err on a bare LF. A line is bounded only by c, which its caller bounds
 * by the whole head's (or trailer section's) ceiling. A bare CR stays in the
 * line for the caller's byte classes to refuse.
 */
static int cur_line(struct cursor *c, struct span *line, enum http_error *err)
{
	const unsigned char *start = c->p + c->off;
	const unsigned char *lf = memchr(start, '\n', cur_left(c));
	size_t n;

	if (lf == NULL)
		return 0;
	n = (size_t)(lf - start);
	if (n == 0 || start[n - 1] != '\r') {
		*err = HTTP_E_MALFORMED;
		return -1;
	}
	n--;
	line->p = (const char *)start;
	line->len = n;
	c->off += n + 2;
	return 1;
}

/* "name: value" with no obs-fold, no space before the colon, value trimmed. */
static int parse_header_line(const struct span *line, struct http_header *h)
{
	struct cursor c;
	const char *name, *value;
	size_t name_len, value_len;

	cur_init(&c, line->p, line->len);
	name = cur_ptr(&c);
	name_len = cur_span(&c, is_tchar);
	if (name_len == 0 || !cur_eat(&c, ':'))
		return -1;
	cur_span(&c, is_ows);
	value = cur_ptr(&c);
	value_len = cur_span(&c, is_field_byte);
	if (cur_left(&c) != 0)
		return -1;
	while (value_len > 0 && is_ows((unsigned char)value[value_len - 1]))
		value_len--;
	h->name = name;
	h->name_len = name_len;
	h->value = value;
	h->value_len = value_len;
	return 0;
}

/*
 * Header lines from c up to and including the empty line. Returns the
 * offset just past the head, -2 when it is not complete, or -1 with *err.
 */
static ssize_t parse_headers(struct cursor *c, struct http_header *headers, size_t max,
			     size_t *nheaders, enum http_error *err)
{
	struct http_header h;
	struct span line;
	int r;

	*nheaders = 0;
	for (;;) {
		r = cur_line(c, &line, err);
		if (r == 0)
			return -2;
		if (r == -1)
			return -1;
		if (line.len == 0)
			return (ssize_t)c->off;
		if (parse_header_line(&line, &h) == -1) {
			*err = HTTP_E_MALFORMED;
			return -1;
		}
		if (*nheaders >= max) {
			*err = HTTP_E_TOO_MANY;
			return -1;
		}
		headers[(*nheaders)++] = h;
	}
}

/* What both requests and responses take from their headers. */
struct framing {
	bool has_length;
	bool chunked;
	uint64_t length;
	bool conn_close;
	bool conn_keep_alive;
	bool upgrade;
};

/* 1*DIGIT (leading zeros too), at most CONTENT_LENGTH_MAX; no sign, no list, no space inside. */
static int parse_content_length(const char *v, size_t len, uint64_t *out)
{
	return dec_parse(v, len, CONTENT_LENGTH_MAX, out);
}

static int scan_framing(const struct http_header *h, size_t n, int minor, struct framing *f,
			enum http_error *err)
{
	size_t i;

	memset(f, 0, sizeof(*f));
	for (i = 0; i < n; i++) {
		if (http_header_is(&h[i], "Content-Length")) {
			if (f->has_length || parse_content_length(h[i].value, h[i].value_len, &f->length) == -1)
				goto framing;
			f->has_length = true;
		} else if (http_header_is(&h[i], "Transfer-Encoding")) {
			/* only a lone "chunked"; a list or a second header is refused */
			if (f->chunked || !eq_nocase(h[i].value, h[i].value_len, "chunked"))
				goto framing;
			f->chunked = true;
		} else if (header_lookalike(&h[i], "Content-Length") ||
			   header_lookalike(&h[i], "Transfer-Encoding")) {
			goto framing;
		} else if (http_header_is(&h[i], "Connection")) {
			/* a proxy honouring this would drop the framing it forwards */
			if (list_has(h[i].value, h[i].value_len, "content-length", 14) ||
			    list_has(h[i].value, h[i].value_len, "transfer-encoding", 17))
				goto framing;
			if (list_has(h[i].value, h[i].value_len, "close", 5))
				f->conn_close = true;
			if (list_has(h[i].value, h[i].value_len, "keep-alive", 10))
				f->conn_keep_alive = true;
		} else if (http_header_is(&h[i], "Upgrade")) {
			f->upgrade = true;
		}
	}
	if (f->has_length && f->chunked)
		goto framing;
	/* RFC 9112 6.1: Transfer-Encoding in HTTP/1.0 cannot be trusted */
	if (f->chunked && minor == 0)
		goto framing;
	return 0;
framing:
	*err = HTTP_E_FRAMING;
	return -1;
}

/* "HTTP/1.0" or "HTTP/1.1"; returns the minor version or -1. */
static int parse_version(const char *v, size_t len)
{
	if (len != 8 || memcmp(v, "HTTP/1.", 7) != 0)
		return -1;
	if (v[7] == '0')
		return 0;
	if (v[7] == '1')
		return 1;
	return -1;
}

/* --- requests ------------------------------------------------------------- */

static const char *const method_names[] = {
	[HTTP_UNKNOWN] = "UNKNOWN",
	[HTTP_GET] = "GET",
	[HTTP_HEAD] = "HEAD",
	[HTTP_POST] = "POST",
	[HTTP_PUT] = "PUT",
	[HTTP_DELETE] = "DELETE",
	[HTTP_CONNECT] = "CONNECT",
	[HTTP_OPTIONS] = "OPTIONS",
	[HTTP_TRACE] = "TRACE",
	[HTTP_PATCH] = "PATCH",
};

#define NMETHODS (sizeof(method_names) / sizeof(method_names[0]))

const char *http_method_name(enum http_method m)
{
	if ((size_t)m >= NMETHODS)
		return method_names[HTTP_UNKNOWN];
	return method_names[m];
}

/* Exact, case-sensitive match against the known methods. */
static enum http_method lookup_method(const char *m, size_t len)
{
	size_t i;

	for (i = HTTP_GET; i < NMETHODS; i++) {
		if (strlen(method_names[i]) == len && memcmp(method_names[i], m, len) == 0)
			return (enum http_method)i;
	}
	return HTTP_UNKNOWN;
}

/* Whether every byte of s[0..n) is in class is (n == 0: true). */
static bool all_of(const char *s, size_t n, bool (*is)(unsigned char))
{
	for (size_t i = 0; i < n; i++)
		if (!is((unsigned char)s[i]))
			return false;
	return true;
}

/*
 * host[:port] or [v6][:port] from an absolute-form or authority-form target
 * (host.h's host_port_split; the port without leading zeros). Fills
 * req->host, port and has_port; without a port, port is 80.
 */
static int parse_authority(struct http_request *req, const char *a, size_t len, bool need_port)
{
	struct host_port hp;
	const char *close_bracket, *err;

	if (memchr(a, '@', len) != NULL) {
		req->error = HTTP_E_USERINFO;
		return -1;
	}
	req->error = HTTP_E_MALFORMED;
	if (len > 0 && a[0] == '[') {
		close_bracket = memchr(a, ']', len);
		if (close_bracket != NULL && memchr(a, '%', (size_t)(close_bracket - a)) != NULL) {
			req->error = HTTP_E_ZONE_ID;
			return -1;
		}
	}
	if (host_port_split(a, len, HOST_PORT_NO_ZERO, &hp, &err) == -1)
		return -1;
	if (hp.bracketed ? !all_of(hp.host, hp.host_len, is_v6_byte) ||
				   memchr(hp.host, ':', hp.host_len) == NULL
			 : hp.host_len == 0 || !all_of(hp.host, hp.host_len, is_host_byte))
		return -1;
	if (!hp.has_port && need_port)
		return -1;
	req->host = hp.host;
	req->host_len = hp.host_len;
	if (hp.has_port) {
		req->port = hp.port;
		req->has_port = true;
	} else {
		req->port = 80;
	}
	req->error = HTTP_OK;
	return 0;
}

static int parse_target(struct http_request *req)
{
	const char *t = req->target;
	size_t n = req->target_len, auth_len;

	req->error = HTTP_E_MALFORMED;
	if (memchr(t, '#', n) != NULL)
		return -1;
	if (req->method == HTTP_CONNECT) {
		req->form = HTTP_FORM_AUTHORITY;
		return parse_authority(req, t, n, true);
	}
	if (n == 1 && t[0] == '*') {
		if (req->method != HTTP_OPTIONS)
			return -1;
		req->form = HTTP_FORM_ASTERISK;
		req->error = HTTP_OK;
		return 0;
	}
	if (t[0] == '/') {
		req->form = HTTP_FORM_ORIGIN;
		req->path = t;
		req->path_len = n;
		req->error = HTTP_OK;
		return 0;
	}
	if (n < 7 || !eq_nocase(t, 7, "http://"))
		return -1;
	req->form = HTTP_FORM_ABSOLUTE;
	t += 7;
	n -= 7;
	for (auth_len = 0; auth_len < n && t[auth_len] != '/' && t[auth_len] != '?'; auth_len++)
		;
	/* "http://h?q" would need a path the buffer does not hold; refuse it */
	if (auth_len < n && t[auth_len] == '?')
		return -1;
	if (parse_authority(req, t, auth_len, false) == -1)
		return -1;
	if (auth_len < n) {
		req->path = t + auth_len;
		req->path_len = n - auth_len;
	} else {
		req->path = "/";
		req->path_len = 1;
	}
	return 0;
}

/* METHOD SP request-target SP HTTP/1.x, single spaces. */
static int parse_request_line(struct http_request *req, const struct span *line)
{
	struct cursor c;
	const char *version;
	size_t version_len;
	int minor;

	cur_init(&c, line->p, line->len);
	req->error = HTTP_E_MALFORMED;
	req->method_str = cur_ptr(&c);
	req->method_len = cur_span(&c, is_tchar);
	if (req->method_len == 0)
		return -1;
	req->method = lookup_method(req->method_str, req->method_len);
	if (req->method == HTTP_UNKNOWN) {
		req->error = HTTP_E_METHOD;
		return -1;
	}
	if (!cur_eat(&c, ' '))
		return -1;
	req->target = cur_ptr(&c);
	req->target_len = cur_span(&c, is_vchar);
	if (req->target_len == 0)
		return -1;
	if (cur_left(&c) == 0) {
		req->error = HTTP_E_VERSION; /* HTTP/0.9 */
		return -1;
	}
	if (!cur_eat(&c, ' '))
		return -1;
	version = cur_ptr(&c);
	version_len = cur_span(&c, is_vchar);
	if (cur_left(&c) != 0)
		return -1;
	minor = parse_version(version, version_len);
	if (minor == -1) {
		req->error = HTTP_E_VERSION;
		return -1;
	}
	req->minor = minor;
	return parse_target(req);
}

static int check_request_headers(struct http_request *req)
{
	struct framing f;
	const struct http_header *h;
	size_t i;

	if (scan_framing(req->headers, req->nheaders, req->minor, &f, &req->error) == -1)
		return -1;
	req->error = HTTP_E_MALFORMED;
	for (i = 0; i < req->nheaders; i++) {
		h = &req->headers[i];
		if (http_header_is(h, "Host")) {
			if (req->host_header != -1 || h->value_len == 0)
				return -1;
			req->host_header = (int)i;
		} else if (http_header_is(h, "Expect")) {
			/* we cannot honour any other expectation */
			if (!eq_nocase(h->value, h->value_len, "100-continue"))
				return -1;
			/* RFC 9110 10.1.1: ignored in HTTP/1.0 */
			req->expect_continue = req->minor == 1;
		} else if (http_header_is(h, "Connection") && list_has(h->value, h->value_len, "host", 4)) {
			return -1; /* dropping Host on the way would change where it goes */
		}
	}
	if (req->minor == 1 && req->method != HTTP_CONNECT && req->host_header == -1)
		return -1;
	if (req->method == HTTP_CONNECT && (f.chunked || (f.has_length && f.length > 0))) {
		/* a CONNECT body would be read as tunnel bytes by some and not others */
		req->error = HTTP_E_FRAMING;
		return -1;
	}
	if (f.chunked) {
		req->body = HTTP_BODY_CHUNKED;
	} else if (f.has_length) {
		req->body = HTTP_BODY_LENGTH;
		req->content_length = f.length;
	} else {
		req->body = HTTP_BODY_NONE;
	}
	req->close = f.conn_close || (req->minor == 0 && !f.conn_keep_alive);
	req->upgrade = f.upgrade;
	req->error = HTTP_OK;
	return 0;
}

/* A head that is not complete: need more (-2), or past its ceiling (-1, HTTP_E_TOO_LARGE). */
static ssize_t short_head(size_t len, size_t cap, enum http_error *err)
{
	if (len < cap)
		return -2;
	*err = HTTP_E_TOO_LARGE;
	return -1;
}

ssize_t http_parse_request(const char *buf, size_t len, size_t cap, struct http_request *req,
			   struct http_header *headers, size_t max)
{
	struct cursor c;
	struct span line;
	ssize_t n;
	int r;

	memset(req, 0, sizeof(*req));
	req->headers = headers;
	req->host_header = -1;
	/* the head never reads past its ceiling, complete or not */
	cur_init(&c, buf, len < cap ? len : cap);
	r = cur_line(&c, &line, &req->error);
	if (r == 0)
		return short_head(len, cap, &req->error);
	if (r == -1)
		return -1;
	if (line.len == 0) {
		req->error = HTTP_E_MALFORMED; /* no leading empty lines */
		return -1;
	}
	if (parse_request_line(req, &line) == -1)
		return -1;
	n = parse_headers(&c, headers, max, &req->nheaders, &req->error);
	if (n == -2)
		return short_head(len, cap, &req->error);
	if (n < 0)
		return n;
	if (check_request_headers(req) == -1)
		return -1;
	return n;
}

/* --- responses ------------------------------------------------------------ */

/* HTTP/1.x SP 3DIGIT [SP reason]; the status must be 100-599. */
static int parse_status_line(struct http_response *resp, const struct span *line)
{
	struct cursor c;
	const char *p;
	uint64_t v;
	size_t n;
	int minor;

	cur_init(&c, line->p, line->len);
	p = cur_ptr(&c);
	n = cur_span(&c, is_vchar);
	minor = parse_version(p, n);
	if (minor == -1) {
		resp->error = HTTP_E_VERSION;
		return -1;
	}
	resp->minor = minor;
	resp->error = HTTP_E_MALFORMED;
	if (!cur_eat(&c, ' '))
		return -1;
	p = cur_ptr(&c);
	/* exactly three digits, 1xx to 5xx */
	if (cur_span(&c, is_digit) != 3 || dec_parse(p, 3, 599, &v) == -1 || v < 100)
		return -1;
	resp->status = (int)v;
	resp->reason = cur_ptr(&c);
	if (cur_left(&c) > 0) {
		if (!cur_eat(&c, ' '))
			return -1;
		resp->reason = cur_ptr(&c);
		resp->reason_len = cur_span(&c, is_field_byte);
		if (cur_left(&c) != 0)
			return -1;
	}
	resp->error = HTTP_OK;
	return 0;
}

static int check_response_headers(struct http_response *resp, enum http_method method)
{
	struct framing f;
	int s = resp->status;

	if (scan_framing(resp->headers, resp->nheaders, resp->minor, &f, &resp->error) == -1)
		return -1;
	resp->close = f.conn_close || (resp->minor == 0 && !f.conn_keep_alive);
	if (method == HTTP_HEAD || s < 200 || s == 204 || s == 304) {
		resp->body = HTTP_BODY_NONE;
	} else if (method == HTTP_CONNECT && s < 300) {
		resp->body = HTTP_BODY_NONE;
	} else if (f.chunked) {
		resp->body = HTTP_BODY_CHUNKED;
	} else if (f.has_length) {
		resp->body = HTTP_BODY_LENGTH;
		resp->content_length = f.length;
	} else {
		resp->body = HTTP_BODY_EOF;
		resp->close = true;
	}
	return 0;
}

ssize_t http_parse_response(const char *buf, size_t len, size_t cap, enum http_method method,
			    struct http_response *resp, struct http_header *headers,
			    size_t max)
{
	struct cursor c;
	struct span line;
	ssize_t n;
	int r;

	memset(resp, 0, sizeof(*resp));
	resp->headers = headers;
	cur_init(&c, buf, len < cap ? len : cap);
	r = cur_line(&c, &line, &resp->error);
	if (r == 0)
		return short_head(len, cap, &resp->error);
	if (r == -1)
		return -1;
	if (parse_status_line(resp, &line) == -1)
		return -1;
	n = parse_headers(&c, headers, max, &resp->nheaders, &resp->error);
	if (n == -2)
		return short_head(len, cap, &resp->error);
	if (n < 0)
		return n;
	if (check_response_headers(resp, method) == -1)
		return -1;
	return n;
}

/* --- header helpers ------------------------------------------------------- */

int http_find_header(const struct http_header *h, size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (http_header_is(&h[i], name))
			return (int)i;
	}
	return -1;
}

static const char *const hop_names[] = {
	"Connection", "Keep-Alive", "Proxy-Connection", "TE", "Trailer", "Upgrade",
};

bool http_is_hop_header(const struct http_header *h, size_t n, size_t i)
{
	size_t j;

	if (i >= n)
		return false;
	for (j = 0; j < sizeof(hop_names) / sizeof(hop_names[0]); j++) {
		if (http_header_is(&h[i], hop_names[j]))
			return true;
	}
	if (h[i].name_len >= 6 && eq_nocase(h[i].name, 6, "proxy-"))
		return true;
	/* never drop framing or routing, whatever Connection says (parsers refuse it) */
	if (http_header_is(&h[i], "Host") || http_header_is(&h[i], "Content-Length") ||
	    http_header_is(&h[i], "Transfer-Encoding"))
		return false;
	for (j = 0; j < n; j++) {
		if (http_header_is(&h[j], "Connection") &&
		    list_has(h[j].value, h[j].value_len, h[i].name, h[i].name_len))
			return true;
	}
	return false;
}

/* --- trailers ------------------------------------------------------------- */

ssize_t http_parse_trailers(const char *buf, size_t len, struct http_header *fields, size_t max,
			    size_t *nfields, enum http_error *err)
{
	struct cursor c;
	ssize_t n;

	*err = HTTP_OK;
	/* the section never reads past its ceiling, complete or not */
	cur_init(&c, buf, len < HTTP_TRAILER_MAX ? len : HTTP_TRAILER_MAX);
	n = parse_headers(&c, fields, max, nfields, err);
	if (n == -2 && len >= HTTP_TRAILER_MAX) {
		*err = HTTP_E_TOO_LARGE;
		return -1;
	}
	return n;
}

/*
 * RFC 9110 6.5.1: fields a sender must not put in a trailer and a recipient
 * must not merge into the head. Framing, routing, request modifiers,
 * authentication, response control data, how to process the content.
 */
static const char *const trailer_never[] = {
	/* framing and the connection */
	"Content-Length", "Transfer-Encoding", "Trailer", "TE", "Connection", "Keep-Alive",
	"Upgrade",
	/* routing */
	"Host", "Max-Forwards", "Forwarded", "Via",
	/* request modifiers: controls and conditionals */
	"Expect", "Cache-Control", "Pragma", "Range", "If-Match", "If-None-Match",
	"If-Modified-Since", "If-Unmodified-Since", "If-Range",
	/* authentication and state */
	"Authorization", "WWW-Authenticate", "Authentication-Info", "Cookie", "Set-Cookie",
	/* response control data */
	"Age", "Date", "Expires", "Location", "Retry-After", "Vary", "Warning",
	/* how to process the content */
	"Content-Encoding", "Content-Type", "Content-Range", "Content-Location",
};

/* Prefixes of whole families: every Proxy-* field, sluice's own (the stamp), forwarding claims. */
static const char *const trailer_never_prefix[] = { "Proxy-", "Sluice-", "X-Forwarded-" };

/* a[0..alen) equals b (or, with prefix, starts with it), ignoring case and reading '_' as '-'. */
static bool name_folds_to(const char *a, size_t alen, const char *b, bool prefix)
{
	size_t i;
	unsigned char ch;

	for (i = 0; i < alen && b[i] != '\0'; i++) {
		ch = (unsigned char)a[i];
		if (ch == '_')
			ch = '-';
		if (ascii_lower(ch) != ascii_lower((unsigned char)b[i]))
			return false;
	}
	return b[i] == '\0' && (prefix || i == alen);
}

bool http_is_forbidden_trailer(const struct http_header *h)
{
	size_t j;

	for (j = 0; j < sizeof(trailer_never) / sizeof(trailer_never[0]); j++) {
		if (name_folds_to(h->name, h->name_len, trailer_never[j], false))
			return true;
	}
	for (j = 0; j < sizeof(trailer_never_prefix) / sizeof(trailer_never_prefix[0]); j++) {
		if (name_folds_to(h->name, h->name_len, trailer_never_prefix[j], true))
			return true;
	}
	return false;
}
