/*
 * h2_head.c: an HTTP/2 request head read as an HTTP/1.1 one (h2_head.h).
 */
#include "h2_head.h"

#include <string.h>
#include <strings.h>

#include "digits.h"

static bool named(const struct http_header *h, const char *name)
{
	return h->name_len == strlen(name) && memcmp(h->name, name, h->name_len) == 0;
}

const char *h2_head_request(const struct http_header *fields, size_t n, bool end_stream,
			    struct http_request *req, struct http_header *hd)
{
	struct http_header method = { 0 }, authority = { 0 }, path = { 0 }, host = { 0 };
	size_t k = 0;

	memset(req, 0, sizeof(*req));
	for (size_t i = 0; i < n; i++) {
		const struct http_header *h = &fields[i];

		if (named(h, ":method"))
			method = *h;
		else if (named(h, ":authority"))
			authority = *h;
		else if (named(h, ":path"))
			path = *h;
		else if (named(h, "host"))
			host = *h;
		else if (h->name_len > 0 && h->name[0] != ':')
			hd[k++] = *h;
	}
	if (authority.value == NULL)
		authority = host;
	else if (host.value != NULL &&
		 (host.value_len != authority.value_len ||
		  strncasecmp(host.value, authority.value, host.value_len) != 0))
		return "its host header names another host than its :authority";
	if (authority.value == NULL || authority.value_len == 0)
		return "it has neither :authority nor host";
	if (path.value == NULL || path.value_len == 0 || path.value[0] != '/')
		return "its :path is not an origin-form path";
	for (int m = HTTP_GET; m <= HTTP_PATCH; m++) {
		const char *name = http_method_name((enum http_method)m);

		if (method.value_len == strlen(name) && memcmp(method.value, name, method.value_len) == 0)
			req->method = (enum http_method)m;
	}
	if (req->method == HTTP_UNKNOWN)
		return "its :method is not one sluice knows";
	if (req->method == HTTP_CONNECT)
		return "CONNECT inside an intercepted tunnel is not carried";
	hd[k] = (struct http_header){ "host", 4, authority.value, authority.value_len };
	req->host_header = (int)k++;
	req->method_str = method.value;
	req->method_len = method.value_len;
	req->target = req->path = path.value;
	req->target_len = req->path_len = path.value_len;
	req->form = HTTP_FORM_ORIGIN;
	req->minor = 1;
	req->headers = hd;
	req->nheaders = k;
	req->body = end_stream ? HTTP_BODY_NONE : HTTP_BODY_CHUNKED; /* a length not declared */
	for (size_t i = 0; i + 1 < k && !end_stream; i++) {
		uint64_t v;

		if (named(&hd[i], "content-length") &&
		    dec_parse(hd[i].value, hd[i].value_len, UINT64_MAX, &v) == 0) {
			req->body = HTTP_BODY_LENGTH;
			req->content_length = v;
		}
	}
	return NULL;
}
