/*
 * http.h: strict HTTP/1.1 head parsing for a forward proxy.
 *
 * Parses request heads, response heads and chunked framing without
 * allocating: every result points into the caller's buffer and headers go
 * into a caller-sized array. Anything two peers could read differently is
 * refused. It does not decode bodies, rewrite heads or touch sockets.
 */
#ifndef SLUICE_HTTP_H
#define SLUICE_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum http_method {
	HTTP_UNKNOWN = 0,
	HTTP_GET,
	HTTP_HEAD,
	HTTP_POST,
	HTTP_PUT,
	HTTP_DELETE,
	HTTP_CONNECT,
	HTTP_OPTIONS,
	HTTP_TRACE,
	HTTP_PATCH,
};

enum http_target_form {
	HTTP_FORM_ORIGIN,    /* "/path?q" */
	HTTP_FORM_ABSOLUTE,  /* "http://host[:port]/path?q" */
	HTTP_FORM_AUTHORITY, /* "host:port", CONNECT only */
	HTTP_FORM_ASTERISK,  /* "*", OPTIONS only */
};

enum http_body {
	HTTP_BODY_NONE,
	HTTP_BODY_LENGTH,  /* content_length bytes follow */
	HTTP_BODY_CHUNKED, /* chunked framing follows; see http_chunked_scan */
	HTTP_BODY_EOF,     /* responses only: body runs until the server closes */
};

/*
 * Header lines in one request head: the proxy's limit (proxy.h HEADERS_MAX).
 * sluice-forward adds one line (its stamp), so it takes one fewer from a
 * client: a head it passed on is never one the proxy refuses for its size.
 */
#define HTTP_HEADERS_MAX 100

/* Why a head was refused; the status is what the proxy answers. */
enum http_error {
	HTTP_OK = 0,
	HTTP_E_MALFORMED,     /* 400: syntax, smuggling shapes, bad target */
	HTTP_E_METHOD,        /* 400: lower-case or unknown method token */
	HTTP_E_VERSION,       /* 400 (505 would also do): HTTP/0.9, 2.x, junk */
	HTTP_E_USERINFO,      /* 400: user@ in the target */
	HTTP_E_ZONE_ID,       /* 400: IPv6 zone id in the target */
	HTTP_E_FRAMING,       /* 400: CL+TE, repeated/bad CL, TE not final chunked */
	HTTP_E_TOO_MANY,      /* 431: more headers than the array holds */
	HTTP_E_TOO_LARGE,     /* 431: the head does not end within its ceiling (cap) */
};

#define HTTP_TRAILER_MAX 8192 /* bytes in a chunked body's trailer section, final CRLF included */

struct http_header {
	const char *name; /* as sent; compare case-insensitively */
	size_t name_len;
	const char *value; /* leading and trailing SP/HTAB removed */
	size_t value_len;
};

struct http_request {
	enum http_method method;
	const char *method_str;
	size_t method_len;
	const char *target; /* request-target as sent */
	size_t target_len;
	enum http_target_form form;
	int minor; /* HTTP/1.<minor>: 0 or 1 */

	/*
	 * From an absolute-form or authority-form target. host is what was
	 * written, brackets of an IPv6 literal removed; it is not canonical
	 * (see host.h). port is the explicit port, or 80 for http:// when
	 * none was written; has_port says which.
	 */
	const char *host;
	size_t host_len;
	uint16_t port;
	bool has_port;
	/*
	 * origin-form path and query to send upstream; for an absolute-form
	 * target without a path, a static "/" (not in buf). NULL for CONNECT and "*".
	 */
	const char *path;
	size_t path_len;

	struct http_header *headers; /* the caller's array */
	size_t nheaders;

	enum http_body body;
	uint64_t content_length; /* HTTP_BODY_LENGTH only */
	int host_header;         /* index into headers of Host, or -1 */
	bool expect_continue;    /* Expect: 100-continue */
	bool close;              /* Connection: close, or HTTP/1.0 without keep-alive */
	bool upgrade;            /* an Upgrade header is present */
	enum http_error error;   /* set when the parser returns -1 */
};

struct http_response {
	int status;
	int minor;
	const char *reason;
	size_t reason_len;
	struct http_header *headers;
	size_t nheaders;
	enum http_body body; /* already accounts for HEAD, 1xx, 204 and 304 */
	uint64_t content_length;
	bool close; /* the server will close after this response */
	enum http_error error;
};

/*
 * Parse a request head from buf[0..len). Returns the length of the head
 * including the final CRLF CRLF, -2 when more bytes are needed, or -1 when
 * the head is refused (req->error says why). cap is the head's ceiling in
 * bytes, its final CRLF CRLF included: any one line may be as long as the
 * head allows, and a head that does not end within cap bytes is
 * HTTP_E_TOO_LARGE (len >= cap: no more bytes can help). Reads at most cap
 * bytes of buf. headers/max give the array the parser fills. Allocates
 * nothing; all pointers point into buf.
 * Absolute-form targets must be "http://"; a request whose target is
 * "https://" or any other scheme is HTTP_E_MALFORMED. CONNECT requires
 * authority-form with a port; authority-form is valid only for CONNECT.
 */
ssize_t http_parse_request(const char *buf, size_t len, size_t cap, struct http_request *req,
			   struct http_header *headers, size_t max);

/*
 * Parse a response head, its ceiling cap as http_parse_request's. method
 * is the request's, so HEAD responses carry no body. Returns as
 * http_parse_request. 1xx responses other than 101 are returned like any
 * other; the caller forwards them and parses again.
 */
ssize_t http_parse_response(const char *buf, size_t len, size_t cap, enum http_method method,
			    struct http_response *resp, struct http_header *headers,
			    size_t max);

/* Streaming validator for a chunked body: tells where the body ends. */
enum http_chunked_state {
	HTTP_CHUNK_SIZE = 0, /* reading hex size */
	HTTP_CHUNK_EXT,      /* reading ";ext" up to CR */
	HTTP_CHUNK_SIZE_LF,  /* expecting LF after the size line's CR */
	HTTP_CHUNK_DATA,     /* remaining bytes of data */
	HTTP_CHUNK_DATA_CR,
	HTTP_CHUNK_DATA_LF,
	HTTP_CHUNK_TRAILER,  /* in a trailer line or the final CRLF */
	HTTP_CHUNK_DONE,
};

struct http_chunked {
	enum http_chunked_state state;
	uint64_t remaining; /* data bytes left in this chunk */
	unsigned digits;    /* hex digits read in this size */
	unsigned linelen;   /* bytes in the current ext, or in the whole trailer */
	bool last;          /* the zero-size chunk was seen */
	bool hold_trailer;  /* set by the caller: stop where the trailer section starts */
	unsigned char ext_state;
};

/*
 * Feed len bytes of a chunked body (framing included). Returns how many of
 * them belong to the body (== len unless the body ends inside buf), or -1
 * if the framing is malformed: a size that is not 1-16 hex digits or
 * overflows, a bad extension, a bare LF, a missing CRLF after data, an
 * over-long line. c->state is HTTP_CHUNK_DONE once the last CRLF is read.
 * Start with a zeroed struct. With c->hold_trailer set, the scan stops
 * where the trailer section starts (state HTTP_CHUNK_TRAILER, the last
 * chunk's size line counted as body) and takes nothing more: the caller
 * reads the section whole with http_parse_trailers and sets the state to
 * HTTP_CHUNK_DONE itself.
 */
ssize_t http_chunked_scan(struct http_chunked *c, const char *buf, size_t len);

/*
 * Parse a chunked body's trailer section from buf[0..len): the field lines
 * after the last chunk and the empty line that ends them. The fields go
 * into fields[0..max), pointing into buf, *nfields their count. Returns the
 * bytes of the section (its final CRLF included), -2 when it is not
 * complete, or -1 with *err: a line a head would be refused for (obs-fold,
 * bare LF or CR, whitespace before the colon, no colon), more than max
 * fields (HTTP_E_TOO_MANY), or no end within HTTP_TRAILER_MAX bytes
 * (HTTP_E_TOO_LARGE). Reads at most HTTP_TRAILER_MAX bytes of buf.
 */
ssize_t http_parse_trailers(const char *buf, size_t len, struct http_header *fields, size_t max,
			    size_t *nfields, enum http_error *err);

/*
 * Whether a trailer field must not be passed on (RFC 9110 6.5.1): framing
 * and connection fields, routing (Host, Forwarded, Via, Max-Forwards),
 * request modifiers (Expect, Cache-Control, Range, the conditionals),
 * authentication and state (Authorization, WWW-Authenticate, Cookie,
 * Set-Cookie...), response control data (Date, Location, Vary...), how to
 * read the content (Content-Type, Content-Encoding...), and every name
 * starting Proxy-, Sluice- (the stamp) or X-Forwarded-. Names compare
 * ignoring case and reading '_' as '-' (Content_Length is Content-Length).
 */
bool http_is_forbidden_trailer(const struct http_header *h);

/* Whether h is named name, or its value is value (ASCII, any case). */
bool http_header_is(const struct http_header *h, const char *name);
bool http_value_is(const struct http_header *h, const char *value);

/* Case-insensitive header lookup; returns an index or -1. */
int http_find_header(const struct http_header *h, size_t n, const char *name);
/* Whether the comma-separated list v[0..vlen) holds tok (any case, blanks around elements). */
bool http_list_has(const char *v, size_t vlen, const char *tok, size_t tok_len);

/*
 * Whether a request header must not be forwarded by a proxy: hop-by-hop
 * (Connection, Keep-Alive, TE, Trailer, Transfer-Encoding is NOT included:
 * the caller forwards chunked framing as is, Upgrade), any Proxy-*, and
 * any name listed in a Connection header of the same head.
 */
bool http_is_hop_header(const struct http_header *h, size_t n, size_t i);

const char *http_method_name(enum http_method m);

#endif
