/*
 * utf8.h: text a client chose, made safe for the log and for a terminal.
 *
 * One classification of code points for everything that writes a row
 * (netlog_escape, lib/netlog_row.c) and everything that shows one (the
 * CLI's tables and `sluice watch`): a "hidden" code point is one a
 * terminal acts on or that hides what a line says: the controls (C0,
 * DEL, C1: U+009B is CSI, U+009D OSC), the format characters (bidi
 * controls and isolates, zero-width space and joiners, word joiner, BOM,
 * soft hyphen, tags) and the line and paragraph separators: Unicode's
 * general categories Cc, Cf, Zl and Zp (Unicode 14). Rows hold them as
 * JSON \uXXXX escapes, tables show them as visible escapes. Everything
 * else valid passes as it is; its width on a terminal (0 for combining
 * marks, 2 for East Asian wide and emoji, else 1) comes from a small table
 * here, not from the locale (wcwidth is -1 for all of it in the C locale).
 */
#ifndef SLUICE_UTF8_H
#define SLUICE_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define UTF8_JSON_ESC_MAX 12 /* \uXXXX\uXXXX: a surrogate pair */

/* The length of the valid UTF-8 sequence (RFC 3629) at s (n > 0 bytes there), its code
 * point in *cp; 0 when s does not start one. */
size_t utf8_decode(const char *s, size_t n, uint32_t *cp);

/* Whether cp must never reach a terminal as itself (Cc, Cf, Zl, Zp). */
bool utf8_hidden(uint32_t cp);

/* The columns a terminal gives cp (not hidden): 0, 1 or 2. */
int utf8_width(uint32_t cp);

/* cp as a JSON escape (\u00XX, or a surrogate pair past U+FFFF) into out; returns its length. */
size_t utf8_json_escape(uint32_t cp, char out[UTF8_JSON_ESC_MAX]);

/*
 * A JSON text (a row, a document) with its hidden code points but tab,
 * LF and CR escaped and bytes that are not UTF-8 written \u00XX, into out (size bytes,
 * NUL-terminated; a text that does not fit is cut between characters). In
 * JSON such characters can only stand inside strings, so the document
 * means what it meant (tab, LF and CR may be whitespace between tokens). Returns the output length.
 */
size_t utf8_json_unhide(const char *s, size_t len, char *out, size_t size);

/*
 * s[0..len) as a terminal may show it, into out (size bytes,
 * NUL-terminated): hidden code points as \uXXXX (\UXXXXXXXX past U+FFFF),
 * a byte that is not UTF-8 as \xNN, the rest as it is. At most width
 * columns: text that would take more is cut between characters to
 * width - 3 columns and ends in "..." (dots false: cut to width, no
 * marker). *cols (may be NULL) gets the columns written. Returns the
 * output length. Text that does not fit in size is cut there.
 */
size_t utf8_display(const char *s, size_t len, size_t width, bool dots, char *out, size_t size,
		    size_t *cols);

#endif
