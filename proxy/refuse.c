/*
 * refuse.c: what a refused client receives.
 *
 * Every refusal is a complete response with Connection: close, a
 * Proxy-Status header (RFC 9209) naming the error type and our reason code,
 * and a one-line plain-text body that says what happened and, for policy
 * refusals, the exact command that would grant the request. The caller
 * writes the detail; this file frames it and gives a grantable refusal its
 * id (Proxy-Status details "REASON id=ID: DETAIL"). It knows no
 * connection: verdict.c words a policy verdict's refusal and answers a
 * refused CONNECT inside its TLS.
 */
#include "proxy.h"

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

int refuse_response(struct buf *out, const struct refusal *r, const char *ps, const char *body,
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

	return refuse_response(out, r, ps, body, blen, false);
}
