/*
 * ports.c: parsing, allocating and formatting port bands (ports.h).
 *
 * One strict spelling: ports_parse takes exactly what ports_format writes
 * (in any line order), so a damaged registry is refused, never guessed
 * at or emptied. Nothing here allocates, reads files or locks.
 */
#include "ports.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <openssl/sha.h>

#include "digits.h"
#include "hex.h"

const char *ports_project_check(const char *s, size_t len)
{
	if (len == 0)
		return "empty project";
	if (len > PORTS_PROJECT_MAX)
		return "project longer than 1024 bytes";
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c < 0x20 || c == 0x7f)
			return "control byte in project";
	}
	if (s[0] == ' ' || s[len - 1] == ' ')
		return "blank at either end of project";
	return NULL;
}

bool ports_override_ok(unsigned long base)
{
	return base >= 1024 && base <= 65535 - (PORTS_BAND - 1);
}

/* Parse one "<base> <project>" line l[0..ll) (no newline) into b. Returns NULL or why. */
static const char *band_line(const char *l, size_t ll, struct ports_band *b)
{
	const char *sp = memchr(l, ' ', ll);
	size_t i = sp != NULL ? (size_t)(sp - l) : ll;
	uint64_t base;

	if (ll == 0)
		return "empty line";
	/* up to the first blank: one to five digits, no leading zero */
	if (l[0] == '0' || dec_parse(l, i, 99999, &base) == -1)
		return "bad base (want a decimal port number)";
	if (i == ll)
		return "missing project";
	if (base < PORTS_FIRST || base > PORTS_LAST_BASE)
		return "base out of range 41000..65200";
	if ((base - PORTS_FIRST) % PORTS_BAND != 0)
		return "base not on a band boundary (41000 + k * 200)";
	i++;
	b->base = (unsigned)base;
	b->project = l + i;
	b->len = ll - i;
	return ports_project_check(b->project, b->len);
}

int ports_parse(const char *buf, size_t len, struct ports *r, size_t *line, const char **err)
{
	size_t hl = sizeof(PORTS_HEADER) - 1, off, lineno = 1;
	const char *e = NULL;

	r->n = 0;
	*line = 0;
	*err = NULL;
	if (len < hl || memcmp(buf, PORTS_HEADER, hl) != 0) {
		*line = 1;
		*err = "not a port band registry (want the header \"# sluice port bands v1\")";
		return -1;
	}
	for (off = hl; off < len;) {
		const char *l = buf + off, *nl = memchr(l, '\n', len - off);
		size_t ll = nl != NULL ? (size_t)(nl - l) : len - off;
		struct ports_band b;

		off += ll + (nl != NULL);
		lineno++;
		e = nl == NULL ? "last line cut short (no newline)" : band_line(l, ll, &b);
		for (size_t i = 0; e == NULL && i < r->n; i++) {
			if (r->band[i].base == b.base)
				e = "base given twice";
			else if (r->band[i].len == b.len && memcmp(r->band[i].project, b.project, b.len) == 0)
				e = "project given twice";
		}
		/* distinct in-range bases cannot outnumber the bands; a guard all the same */
		if (e == NULL && r->n == PORTS_BANDS_MAX)
			e = "too many bands";
		if (e != NULL) {
			r->n = 0;
			*line = lineno;
			*err = e;
			return -1;
		}
		r->band[r->n++] = b;
	}
	return 0;
}

const struct ports_band *ports_find(const struct ports *r, const char *s, size_t len)
{
	for (size_t i = 0; i < r->n; i++)
		if (r->band[i].len == len && memcmp(r->band[i].project, s, len) == 0)
			return &r->band[i];
	return NULL;
}

long ports_alloc(struct ports *r, const char *s, size_t len)
{
	const struct ports_band *have = ports_find(r, s, len);
	bool used[PORTS_BANDS_MAX] = { false };
	size_t k, at;

	if (have != NULL)
		return have->base;
	if (r->n == PORTS_BANDS_MAX)
		return -1;
	for (size_t i = 0; i < r->n; i++)
		used[(r->band[i].base - PORTS_FIRST) / PORTS_BAND] = true;
	for (k = 0; k < PORTS_BANDS_MAX && used[k]; k++)
		;
	if (k == PORTS_BANDS_MAX)
		return -1;
	/* before the first higher base: a sorted registry stays sorted */
	for (at = 0; at < r->n && r->band[at].base < PORTS_FIRST + k * PORTS_BAND; at++)
		;
	memmove(&r->band[at + 1], &r->band[at], (r->n - at) * sizeof(r->band[0]));
	r->band[at].base = (unsigned)(PORTS_FIRST + k * PORTS_BAND);
	r->band[at].project = s;
	r->band[at].len = len;
	r->n++;
	return r->band[at].base;
}

int ports_remove(struct ports *r, const char *s, size_t len)
{
	const struct ports_band *b = ports_find(r, s, len);
	size_t at;

	if (b == NULL)
		return -1;
	at = (size_t)(b - r->band);
	memmove(&r->band[at], &r->band[at + 1], (r->n - at - 1) * sizeof(r->band[0]));
	r->n--;
	return 0;
}

/* Append s[0..n) at *pos of out[0..size), counting what does not fit. */
static void put(char *out, size_t size, size_t *pos, const char *s, size_t n)
{
	if (*pos < size) {
		size_t room = size - *pos;

		memcpy(out + *pos, s, n < room ? n : room);
	}
	*pos += n;
}

size_t ports_format(const struct ports *r, char *out, size_t size)
{
	size_t pos = 0;

	put(out, size, &pos, PORTS_HEADER, sizeof(PORTS_HEADER) - 1);
	for (size_t i = 0; i < r->n; i++) {
		char num[8];
		size_t d = 0;
		unsigned v = r->band[i].base;

		/* five digits: every base is 41000..65200 */
		for (unsigned div = 10000; div > 0; div /= 10)
			num[d++] = (char)('0' + v / div % 10);
		num[d++] = ' ';
		put(out, size, &pos, num, d);
		put(out, size, &pos, r->band[i].project, r->band[i].len);
		put(out, size, &pos, "\n", 1);
	}
	if (size > 0)
		out[pos < size ? pos : size - 1] = '\0';
	return pos;
}

static bool name_byte(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '_' || c == '-';
}

bool ports_name_valid(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > PORTS_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!name_byte((unsigned char)s[i]))
			return false;
	return true;
}

void ports_name_of(const char *s, size_t len, char *out)
{
	unsigned char md[SHA256_DIGEST_LENGTH];
	size_t end = len, start, n = 0;

	if (len > 0 && len <= PORTS_NAME_MAX && memchr(s, '\0', len) == NULL) {
		memcpy(out, s, len);
		out[len] = '\0';
		if (ports_name_valid(out))
			return;
	}
	SHA256((const unsigned char *)s, len, md);
	while (end > 0 && s[end - 1] == '/')
		end--;
	start = end;
	while (start > 0 && s[start - 1] != '/')
		start--;
	for (size_t i = start; i < end && n < PORTS_NAME_BASE_MAX; i++)
		out[n++] = name_byte((unsigned char)s[i]) ? s[i] : '-';
	if (n == 0)
		n = (size_t)sprintf(out, "dir");
	out[n++] = '-';
	hex_encode(md, PORTS_NAME_HASH_HEX / 2, out + n);
}
