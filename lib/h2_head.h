/*
 * h2_head.h: an HTTP/2 request head read as an HTTP/1.1 one.
 *
 * The proxy judges an HTTP/2 stream through the same steps as an HTTP/1.1
 * request (proxy/exchange.c), so its header block (as nghttp2 gave it,
 * pseudo-headers first, already checked against RFC 9113's rules) becomes a
 * struct http_request: :method and :path its request line (origin-form),
 * :authority its Host (a host field is the Host only without :authority,
 * and refused when it names anything else), the other fields its headers,
 * a declared content-length its body length. Allocates nothing: the
 * request points into the caller's fields and array.
 */
#ifndef SLUICE_H2_HEAD_H
#define SLUICE_H2_HEAD_H

#include <stdbool.h>
#include <stddef.h>

#include "http.h"

/*
 * Read fields[0..n) (names lower-case, as HTTP/2 sends them) into req,
 * its headers in hd[0..n + 1) (the Host last). end_stream: the HEADERS
 * frame ended the stream (no body). Returns NULL, or why the head cannot
 * be carried ("its :method is not one sluice knows", ...).
 */
const char *h2_head_request(const struct http_header *fields, size_t n, bool end_stream,
			    struct http_request *req, struct http_header *hd);

#endif
