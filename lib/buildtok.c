/*
 * buildtok.c: the build token file and the Proxy-Authorization that names
 * a token (buildtok.h). Strict: one bad line damages the file (the proxy
 * then knows no token: no build is served as one), base64 must be
 * canonical, the secret exactly the 64 lower-case hex digits minted.
 */
#include "buildtok.h"

#include <inttypes.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <string.h>
#include <strings.h>

#include "digits.h"
#include "hex.h"

#define FILE_HEADER "# sluice build tokens v1"

bool buildtok_name_valid(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > BUILDTOK_NAME_MAX)
		return false;
	for (; *s != '\0'; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || is_digit((unsigned char)*s) ||
		      *s == '.' || *s == '_' || *s == '-'))
			return false;
	return true;
}

void buildtok_hash(const char *secret, size_t slen, uint8_t hash[32])
{
	SHA256((const unsigned char *)secret, slen, hash);
}

/* Unix seconds: 1-18 decimal digits. */
static int epoch_of(const char *s, size_t len, time_t *out)
{
	uint64_t v;

	if (len == 0 || len > 18 || dec_parse(s, len, UINT64_MAX, &v) == -1)
		return -1;
	*out = (time_t)v;
	return 0;
}

/* One non-comment line s[0..len) into t. */
static int file_line(const char *s, size_t len, struct buildtok *t, const char **err)
{
	const char *f[5];
	size_t fl[5], nf = 0, i = 0;

	while (i < len) {
		while (i < len && (s[i] == ' ' || s[i] == '\t'))
			i++;
		if (i == len)
			break;
		if (nf == 4) {
			*err = "trailing junk after the token";
			return -1;
		}
		f[nf] = s + i;
		while (i < len && s[i] != ' ' && s[i] != '\t')
			i++;
		fl[nf] = (size_t)(s + i - f[nf]);
		nf++;
	}
	if (nf != 4) {
		*err = "expected NAME SHA256 CREATED EXPIRES";
		return -1;
	}
	memset(t, 0, sizeof(*t));
	if (fl[0] > BUILDTOK_NAME_MAX) {
		*err = "bad name (1-64 of [A-Za-z0-9._-])";
		return -1;
	}
	memcpy(t->name, f[0], fl[0]);
	if (!buildtok_name_valid(t->name)) {
		*err = "bad name (1-64 of [A-Za-z0-9._-])";
		return -1;
	}
	if (fl[1] != 64 || hex_decode(f[1], sizeof(t->hash), t->hash) == -1) {
		*err = "bad hash (64 lower-case hex digits)";
		return -1;
	}
	if (epoch_of(f[2], fl[2], &t->created) == -1 || epoch_of(f[3], fl[3], &t->expires) == -1) {
		*err = "bad time (Unix seconds)";
		return -1;
	}
	return 0;
}

int buildtok_file_parse(const char *buf, size_t len, struct buildtok *out, size_t max,
			size_t *n, size_t *line, const char **err)
{
	size_t pos = 0, lineno = 0;

	*n = 0;
	*line = 0;
	while (pos < len) {
		const char *nl = memchr(buf + pos, '\n', len - pos);
		size_t end = nl != NULL ? (size_t)(nl - buf) : len, l = end - pos;
		const char *s = buf + pos;

		lineno++;
		pos = nl != NULL ? end + 1 : len;
		while (l > 0 && (s[l - 1] == ' ' || s[l - 1] == '\t'))
			l--;
		if (l == 0 || s[0] == '#')
			continue;
		if (*n == max) {
			*line = lineno;
			*err = "too many tokens";
			return -1;
		}
		if (file_line(s, l, &out[*n], err) == -1) {
			*line = lineno;
			return -1;
		}
		(*n)++;
	}
	return 0;
}

int buildtok_file_write(FILE *f, const struct buildtok *t, size_t n)
{
	if (fprintf(f, "%s\n", FILE_HEADER) < 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		char hex[65];

		hex_encode(t[i].hash, sizeof(t[i].hash), hex);
		if (fprintf(f, "%s %s %" PRId64 " %" PRId64 "\n", t[i].name, hex,
			    (int64_t)t[i].created, (int64_t)t[i].expires) < 0)
			return -1;
	}
	return ferror(f) ? -1 : 0;
}

static int b64_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (is_digit(c))
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

/*
 * Canonical base64 (RFC 4648 section 4, padded, no blanks, zero pad bits)
 * s[0..len) into out (size bytes). Returns the length, or -1.
 */
static long b64_decode(const char *s, size_t len, char *out, size_t size)
{
	size_t o = 0;

	if (len == 0 || len % 4 != 0)
		return -1;
	for (size_t i = 0; i < len; i += 4) {
		int v[4], pad = 0;
		uint32_t w;

		for (int k = 0; k < 4; k++) {
			unsigned char c = (unsigned char)s[i + k];

			if (c == '=' && i + 4 == len && k >= 2 && (k == 3 || s[i + 3] == '=')) {
				v[k] = 0;
				pad++;
				continue;
			}
			if (pad > 0 || (v[k] = b64_value(c)) < 0)
				return -1;
		}
		w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
		if ((pad == 1 && (w & 0xff) != 0) || (pad == 2 && (w & 0xffff) != 0))
			return -1; /* non-zero pad bits: not the canonical spelling */
		if (o + 3 - (size_t)pad > size)
			return -1;
		out[o++] = (char)(w >> 16);
		if (pad < 2)
			out[o++] = (char)(w >> 8);
		if (pad < 1)
			out[o++] = (char)w;
	}
	return (long)o;
}

int buildtok_auth_parse(const char *v, size_t len, char *secret, size_t size, size_t *slen)
{
	char dec[sizeof(BUILDTOK_USER) + BUILDTOK_SECRET_LEN + 8];
	const size_t ul = sizeof(BUILDTOK_USER) - 1;
	size_t i = 6;
	long dl;

	*slen = 0;
	if (len < 6 || strncasecmp(v, "Basic", 5) != 0 || (v[5] != ' ' && v[5] != '\t'))
		return 0;
	while (i < len && (v[i] == ' ' || v[i] == '\t'))
		i++;
	/* what does not decode (or is longer than our user and a secret) is someone else's */
	dl = b64_decode(v + i, len - i, dec, sizeof(dec));
	if (dl < 0)
		return 0;
	if ((size_t)dl <= ul || memcmp(dec, BUILDTOK_USER, ul) != 0 || dec[ul] != ':')
		return 0;
	if ((size_t)dl - ul - 1 != BUILDTOK_SECRET_LEN ||
	    !hex_is_lower(dec + ul + 1, BUILDTOK_SECRET_LEN) || size < BUILDTOK_SECRET_LEN + 1)
		return -1;
	memcpy(secret, dec + ul + 1, BUILDTOK_SECRET_LEN);
	secret[BUILDTOK_SECRET_LEN] = '\0';
	*slen = BUILDTOK_SECRET_LEN;
	return 1;
}

const struct buildtok *buildtok_find(const struct buildtok *t, size_t n, const char *secret,
				     size_t slen, time_t now, bool *expired)
{
	uint8_t h[32];
	const struct buildtok *found = NULL;

	*expired = false;
	buildtok_hash(secret, slen, h);
	/* every entry compared, in constant time each: no early exit on a match */
	for (size_t i = 0; i < n; i++)
		if (CRYPTO_memcmp(h, t[i].hash, sizeof(h)) == 0 && found == NULL)
			found = &t[i];
	if (found != NULL && now >= found->expires) {
		*expired = true;
		return NULL;
	}
	return found;
}
