/*
 * host.c: canonical hosts (names, IPv4 in every inet_aton spelling, IPv6).
 *
 * A request can name one destination in many spellings; everything that
 * compares hosts (grants, exceptions, the Host header check) compares the
 * one spelling made here. ASCII names are validated and lower-cased
 * without libidn2; only input holding a byte >= 0x80 goes through IDNA
 * (which allocates inside libidn2; this file allocates nothing itself).
 * No DNS: a name stays a name.
 */
#include "host.h"

#include <arpa/inet.h>
#include <idn2.h>
#include <stdio.h>
#include <string.h>

#include "digits.h"

/* Longest UTF-8 input handed to libidn2; far above any name that fits 253 A-label bytes. */
#define HOST_UTF8_MAX 1024

static unsigned char lower(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') ? (unsigned char)(c - 'A' + 'a') : c;
}

/*
 * Whether label s[0..len) reads as a number the way inet_aton would take
 * it: all decimal digits, or "0x" followed by hex digits (none at all
 * counts too, so "0x" is refused as a malformed number, not taken as a name).
 */
static bool label_numeric(const char *s, size_t len)
{
	size_t i = 0;

	if (len == 0)
		return false;
	if (len >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		for (i = 2; i < len; i++)
			if (hex_value((unsigned char)s[i]) < 0)
				return false;
		return true;
	}
	for (i = 0; i < len; i++)
		if (!is_digit((unsigned char)s[i]))
			return false;
	return true;
}

/* One inet_aton part: decimal, 0x hex ("0x" alone refused) or 0-leading octal, at most max. */
static int ipv4_part(const char *s, size_t len, uint32_t max, uint32_t *out)
{
	unsigned base = 10;
	size_t i = 0;
	uint64_t v;

	if (len >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		i = 2;
	} else if (len >= 2 && s[0] == '0') {
		base = 8;
		i = 1;
	}
	if (digits_parse(s + i, len - i, base, max, &v) == -1)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

/* Parse s[0..len) with inet_aton's grammar (1-4 parts), strictly range-checked. */
static int ipv4_parse(const char *s, size_t len, struct in_addr *out)
{
	uint32_t parts[4];
	size_t nparts = 0, start = 0, i;
	uint32_t v = 0;

	for (i = 0; i <= len; i++) {
		if (i < len && s[i] != '.')
			continue;
		if (nparts == 4)
			return -1;
		/* Range-checked below once the count is known; 32 bits is the outer bound. */
		if (ipv4_part(s + start, i - start, UINT32_MAX, &parts[nparts]) == -1)
			return -1;
		nparts++;
		start = i + 1;
	}
	for (i = 0; i + 1 < nparts; i++) {
		if (parts[i] > 0xff)
			return -1;
		v |= parts[i] << (24 - 8 * i);
	}
	/* The last part fills every byte the earlier parts left. */
	if (nparts < 4 && parts[nparts - 1] > (UINT32_MAX >> (8 * (nparts - 1))))
		return -1;
	if (nparts == 4 && parts[3] > 0xff)
		return -1;
	v |= parts[nparts - 1];
	out->s_addr = htonl(v);
	return 0;
}

static int set_ipv4(struct host *out, const struct in_addr *a)
{
	out->kind = HOST_IPV4;
	out->addr.v4 = *a;
	if (inet_ntop(AF_INET, a, out->name, sizeof(out->name)) == NULL)
		return -1;
	return 0;
}

static int canon_ipv6(const char *s, size_t len, struct host *out, const char **err)
{
	char buf[INET6_ADDRSTRLEN];
	struct in6_addr a;
	static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	if (memchr(s, '%', len) != NULL) {
		*err = "zone id refused";
		return -1;
	}
	if (len == 0 || len >= sizeof(buf)) {
		*err = "bad ipv6 literal";
		return -1;
	}
	memcpy(buf, s, len);
	buf[len] = '\0';
	if (inet_pton(AF_INET6, buf, &a) != 1) {
		*err = "bad ipv6 literal";
		return -1;
	}
	if (memcmp(a.s6_addr, mapped, sizeof(mapped)) == 0) {
		struct in_addr v4;

		memcpy(&v4.s_addr, a.s6_addr + 12, 4);
		if (set_ipv4(out, &v4) == -1) {
			*err = "bad ipv6 literal";
			return -1;
		}
		return 0;
	}
	out->kind = HOST_IPV6;
	out->addr.v6 = a;
	if (inet_ntop(AF_INET6, &a, out->name, sizeof(out->name)) == NULL) {
		*err = "bad ipv6 literal";
		return -1;
	}
	return 0;
}

/* An ASCII name or IPv4 literal, possibly with one trailing dot. */
static int canon_ascii(const char *s, size_t len, struct host *out, const char **err)
{
	size_t i, label_start = 0;

	if (len > 0 && s[len - 1] == '.')
		len--;
	if (len == 0) {
		*err = "empty name";
		return -1;
	}
	if (len > HOST_NAME_MAX_LEN) {
		*err = "name too long";
		return -1;
	}
	for (i = len; i > 0 && s[i - 1] != '.'; i--)
		;
	if (label_numeric(s + i, len - i)) {
		struct in_addr a;

		if (ipv4_parse(s, len, &a) == -1) {
			*err = "bad ipv4 literal";
			return -1;
		}
		if (set_ipv4(out, &a) == -1) {
			*err = "bad ipv4 literal";
			return -1;
		}
		return 0;
	}
	for (i = 0; i <= len; i++) {
		unsigned char c = i < len ? lower((unsigned char)s[i]) : '.';

		if (c == '.') {
			size_t l = i - label_start;

			if (l == 0) {
				*err = "empty label";
				return -1;
			}
			if (l > 63) {
				*err = "label too long";
				return -1;
			}
			if (s[label_start] == '-' || s[i - 1] == '-') {
				*err = "label starts or ends with '-'";
				return -1;
			}
			label_start = i + 1;
		} else if (!((c >= 'a' && c <= 'z') || is_digit(c) || c == '-' || c == '_')) {
			*err = "bad character in name";
			return -1;
		}
		if (i < len)
			out->name[i] = (char)c;
	}
	out->name[len] = '\0';
	out->kind = HOST_NAME;
	memset(&out->addr, 0, sizeof(out->addr));
	return 0;
}

static int canon_idna(const char *s, size_t len, struct host *out, const char **err)
{
	char buf[HOST_UTF8_MAX + 1];
	char *ascii = NULL;
	int rc, ret;

	if (len > HOST_UTF8_MAX) {
		*err = "name too long";
		return -1;
	}
	memcpy(buf, s, len);
	buf[len] = '\0';
	rc = idn2_to_ascii_8z(buf, &ascii, IDN2_NONTRANSITIONAL | IDN2_NFC_INPUT);
	if (rc == IDN2_DISALLOWED)
		rc = idn2_to_ascii_8z(buf, &ascii, IDN2_TRANSITIONAL | IDN2_NFC_INPUT);
	if (rc != IDN2_OK) {
		*err = "bad international name";
		return -1;
	}
	/*
	 * The A-label form is checked like any ASCII input: IDNA maps
	 * full-width digits and dots, so the result may be an IPv4 literal.
	 */
	if (strlen(ascii) > HOST_NAME_MAX_LEN + 1) {
		*err = "name too long";
		ret = -1;
	} else {
		ret = canon_ascii(ascii, strlen(ascii), out, err);
	}
	idn2_free(ascii);
	return ret;
}

static int canon(const char *in, size_t len, struct host *out, const char **err)
{
	size_t i;
	bool wide = false;

	if (len == 0) {
		*err = "empty host";
		return -1;
	}
	if (in[0] == '[') {
		if (len < 2 || in[len - 1] != ']' || memchr(in + 1, ':', len - 2) == NULL) {
			*err = "bad bracketed ipv6 literal";
			return -1;
		}
		return canon_ipv6(in + 1, len - 2, out, err);
	}
	if (memchr(in, ':', len) != NULL)
		return canon_ipv6(in, len, out, err);
	for (i = 0; i < len; i++) {
		if (in[i] == '\0') {
			*err = "bad character in name";
			return -1;
		}
		if ((unsigned char)in[i] >= 0x80)
			wide = true;
	}
	if (wide)
		return canon_idna(in, len, out, err);
	return canon_ascii(in, len, out, err);
}

int host_canon(const char *in, size_t len, struct host *out, const char **err)
{
	memset(out, 0, sizeof(*out));
	if (canon(in, len, out, err) == -1) {
		/* No half-written name survives a refusal. */
		memset(out, 0, sizeof(*out));
		return -1;
	}
	return 0;
}

int host_port_number(const char *s, size_t len, unsigned flags, uint16_t *port)
{
	uint64_t v;

	if ((len > 5 && !(flags & HOST_PORT_ANY_ZEROS)) ||
	    ((flags & HOST_PORT_NO_ZERO) && len > 0 && s[0] == '0') ||
	    dec_parse(s, len, 65535, &v) == -1 || v == 0)
		return -1;
	*port = (uint16_t)v;
	return 0;
}

int host_port_split(const char *in, size_t len, unsigned flags, struct host_port *out,
		    const char **err)
{
	const char *colon;

	memset(out, 0, sizeof(*out));
	if (len == 0) {
		*err = "empty host";
		return -1;
	}
	if (in[0] == '[') {
		const char *close = memchr(in, ']', len);

		if (close == NULL) {
			*err = "unclosed '['";
			return -1;
		}
		out->bracketed = true;
		out->host = in + 1;
		out->host_len = (size_t)(close - in) - 1;
		colon = close + 1 < in + len ? close + 1 : NULL;
		if (colon != NULL && *colon != ':') {
			*err = "junk after ']'";
			return -1;
		}
	} else {
		colon = memchr(in, ':', len);
		/* Two or more colons: a bare IPv6 literal, which cannot carry a port. */
		if (colon != NULL && memchr(colon + 1, ':', len - (size_t)(colon - in) - 1) != NULL)
			colon = NULL;
		out->host = in;
		out->host_len = colon != NULL ? (size_t)(colon - in) : len;
	}
	if (colon != NULL) {
		if (host_port_number(colon + 1, len - (size_t)(colon - in) - 1, flags, &out->port) ==
		    -1) {
			*err = "bad port";
			return -1;
		}
		out->has_port = true;
	}
	return 0;
}

int host_port_parse(const char *in, size_t len, uint16_t default_port, struct host *out,
		    uint16_t *port, bool *has_port, const char **err)
{
	struct host_port hp;

	*port = default_port;
	*has_port = false;
	if (host_port_split(in, len, 0, &hp, err) == -1) {
		memset(out, 0, sizeof(*out));
		return -1;
	}
	/* host_canon takes the brackets with the address */
	if (host_canon(hp.host - hp.bracketed, hp.host_len + 2 * hp.bracketed, out, err) == -1)
		return -1;
	if (hp.has_port) {
		*port = hp.port;
		*has_port = true;
	}
	return 0;
}

int host_port_format(char *out, size_t size, const char *host, unsigned port)
{
	bool v6 = strchr(host, ':') != NULL;
	int n;

	if (port == HOST_PORT_NONE)
		n = snprintf(out, size, v6 ? "[%s]" : "%s", host);
	else
		n = snprintf(out, size, v6 ? "[%s]:%u" : "%s:%u", host, port);
	return n < 0 || (size_t)n >= size ? -1 : n;
}

bool host_equal(const struct host *a, const struct host *b)
{
	if (a->kind != b->kind)
		return false;
	switch (a->kind) {
	case HOST_IPV4:
		return a->addr.v4.s_addr == b->addr.v4.s_addr;
	case HOST_IPV6:
		return memcmp(&a->addr.v6, &b->addr.v6, sizeof(a->addr.v6)) == 0;
	case HOST_NAME:
		return strcmp(a->name, b->name) == 0;
	}
	return false;
}
