/*
 * hex.h: bytes as lower-case hex text and back.
 *
 * The one encoder of digests, ids, nonces and keys into the text sluice
 * writes (lower case, two digits a byte, no separators), and its inverse
 * for the files and stamps that carry such text. Hex digit values and
 * numbers written in hex are digits.h's job; percent-encoding and JSON's
 * \u escapes are their writers' (their digits are part of another format).
 */
#ifndef SLUICE_HEX_H
#define SLUICE_HEX_H

#include <stddef.h>

/*
 * in[0..n) as 2n lower-case hex digits into out, then a NUL: out holds at
 * least 2n + 1 bytes. Returns out.
 */
char *hex_encode(const void *in, size_t n, char *out);

/*
 * s[0..2n) into out[0..n). Only lower-case digits: an upper-case one is
 * another spelling of the same bytes, and the texts read here are canonical.
 * Returns 0, or -1 on any other byte; out is written only on success.
 */
int hex_decode(const char *s, size_t n, void *out);

#endif
