/*
 * digits.h: the one reader of decimal digits and the one of hex digits.
 *
 * Every parser in lib, forward and cli that turns digits into a number
 * comes here; the caller picks the limit, and says at its call site what
 * it wants beyond that (no leading zeros, a length cap, what may follow
 * the digits). Header-only: these run per byte inside the HTTP readers.
 * No signs, no blanks, no "0x" or octal '0' prefix: a caller that takes
 * one strips it and picks the base itself (or has digits_text do it).
 */
#ifndef SLUICE_DIGITS_H
#define SLUICE_DIGITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline bool is_digit(unsigned char ch)
{
	return ch >= '0' && ch <= '9';
}

/* The value of hex digit ch (either case), or -1. */
static inline int hex_value(unsigned char ch)
{
	if (is_digit(ch))
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/*
 * Whether s[0..n) is all lower-case hex digits (n == 0: true): the canonical
 * spelling of ids and digests, where an upper-case digit is another text.
 */
static inline bool hex_is_lower(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!is_digit((unsigned char)s[i]) && !(s[i] >= 'a' && s[i] <= 'f'))
			return false;
	return true;
}

/*
 * s[0..len), every byte a digit of base (2..16; hex digits in either case),
 * leading zeros allowed, at most max. Returns 0, or -1 when empty, on any
 * other byte, or past max.
 */
static inline int digits_parse(const char *s, size_t len, unsigned base, uint64_t max,
			       uint64_t *out)
{
	uint64_t v = 0;

	if (len == 0)
		return -1;
	for (size_t i = 0; i < len; i++) {
		int d = hex_value((unsigned char)s[i]);

		if (d == -1 || (unsigned)d >= base || (uint64_t)d > max ||
		    v > (max - (uint64_t)d) / base)
			return -1;
		v = v * base + (uint64_t)d;
	}
	*out = v;
	return 0;
}

/* Decimal: digits_parse in base 10. */
static inline int dec_parse(const char *s, size_t len, uint64_t max, uint64_t *out)
{
	return digits_parse(s, len, 10, max, out);
}

/* Hex, either case: digits_parse in base 16. */
static inline int hex_parse(const char *s, size_t len, uint64_t max, uint64_t *out)
{
	return digits_parse(s, len, 16, max, out);
}

/*
 * The whole C string s as a number from lo to hi: digits of base (2..16),
 * or with base 0 as C spells one ("0x" or "0X" then hex, a leading '0' then
 * octal, else decimal). Nothing else: no blanks, no sign, nothing after.
 * Returns 0, or -1 with *out untouched. For options and one-value files,
 * where strtoul would take " 5", "+5" and "" and turn " -1" into its maximum.
 */
static inline int digits_text(const char *s, unsigned base, uint64_t lo, uint64_t hi,
			      uint64_t *out)
{
	size_t skip = 0;
	uint64_t v;

	if (base == 0) {
		base = 10;
		if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
			base = 16;
			skip = 2;
		} else if (s[0] == '0' && s[1] != '\0') {
			base = 8;
			skip = 1;
		}
	}
	if (digits_parse(s + skip, strlen(s + skip), base, hi, &v) == -1 || v < lo)
		return -1;
	*out = v;
	return 0;
}

#endif
