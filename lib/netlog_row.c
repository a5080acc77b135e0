/*
 * netlog_row.c: building a log row by hand, not with printf: this runs once
 * per request (or DNS query) on the hot path. NETLOG_ROW_MAX holds the
 * worst case (every string at its cap, every byte escaped: six bytes out
 * for one in, the most any escape takes), so a row is never cut. The
 * rows' fields are netlog.c's (network rows) and sluice-dns's; writing
 * them is netlog.c's.
 */
#include "netlog.h"

#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "utf8.h"

size_t netlog_escape(const char *s, size_t len, size_t cap, char *out, size_t size)
{
	size_t o = 0, i = 0;

	if (size == 0)
		return 0;
	if (len > cap)
		len = cap;
	while (i < len) {
		char esc[UTF8_JSON_ESC_MAX];
		const char *put = esc;
		unsigned char c = (unsigned char)s[i];
		uint32_t cp;
		size_t seq = utf8_decode(s + i, len - i, &cp), n;

		if (c == '"' || c == '\\') {
			esc[0] = '\\';
			esc[1] = (char)c;
			n = 2;
		} else if (seq == 0) { /* not UTF-8: the byte, as its Latin-1 code point */
			n = utf8_json_escape(c, esc);
			seq = 1;
		} else if (utf8_hidden(cp)) { /* a control, format character or separator */
			n = utf8_json_escape(cp, esc);
		} else {
			put = s + i;
			n = seq;
		}
		if (o + n >= size)
			break;
		memcpy(out + o, put, n);
		o += n;
		i += seq;
	}
	out[o] = '\0';
	return o;
}

void netlog_put_raw(struct netlog_out *o, const char *s, size_t n)
{
	memcpy(o->buf + o->len, s, n);
	o->len += n;
}

void netlog_put_key(struct netlog_out *o, const char *key)
{
	size_t n = strlen(key);

	o->buf[o->len++] = ',';
	o->buf[o->len++] = '"';
	netlog_put_raw(o, key, n);
	o->buf[o->len++] = '"';
	o->buf[o->len++] = ':';
}

void netlog_put_u64(struct netlog_out *o, uint64_t v)
{
	char d[20];
	size_t n = 0;

	do {
		d[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	while (n > 0)
		o->buf[o->len++] = d[--n];
}

void netlog_put_num(struct netlog_out *o, const char *key, uint64_t v)
{
	netlog_put_key(o, key);
	netlog_put_u64(o, v);
}

/* Two (or four) digits with leading zeros. */
void netlog_put_digits(struct netlog_out *o, unsigned v, int width)
{
	for (int i = width - 1; i >= 0; i--) {
		o->buf[o->len + (size_t)i] = (char)('0' + v % 10);
		v /= 10;
	}
	o->len += (size_t)width;
}

void netlog_put_str(struct netlog_out *o, const char *key, const char *s, size_t len, size_t cap)
{
	netlog_put_key(o, key);
	if (s == NULL) {
		netlog_put_raw(o, "null", 4);
		return;
	}
	o->buf[o->len++] = '"';
	/* room is the worst case for cap bytes; NETLOG_ROW_MAX holds every field's */
	o->len += netlog_escape(s, len, cap, o->buf + o->len, cap * 6 + 8);
	o->buf[o->len++] = '"';
}

void netlog_put_cstr(struct netlog_out *o, const char *key, const char *s)
{
	netlog_put_str(o, key, s, s ? strlen(s) : 0, NETLOG_TEXT_CAP);
}

/* Milliseconds with three decimals, or null when negative. */
void netlog_put_ms(struct netlog_out *o, const char *key, double v)
{
	uint64_t us;

	netlog_put_key(o, key);
	if (v < 0) {
		netlog_put_raw(o, "null", 4);
		return;
	}
	us = (uint64_t)(v * 1000.0 + 0.5);
	netlog_put_u64(o, us / 1000);
	o->buf[o->len++] = '.';
	netlog_put_digits(o, (unsigned)(us % 1000), 3);
}

/* "2026-11-30T03:01:02.123Z", quoted */
static void put_ts(struct netlog_out *o, time_t sec, unsigned ms)
{
	struct tm tm;

	gmtime_r(&sec, &tm);
	o->buf[o->len++] = '"';
	netlog_put_digits(o, (unsigned)tm.tm_year + 1900, 4);
	o->buf[o->len++] = '-';
	netlog_put_digits(o, (unsigned)tm.tm_mon + 1, 2);
	o->buf[o->len++] = '-';
	netlog_put_digits(o, (unsigned)tm.tm_mday, 2);
	o->buf[o->len++] = 'T';
	netlog_put_digits(o, (unsigned)tm.tm_hour, 2);
	o->buf[o->len++] = ':';
	netlog_put_digits(o, (unsigned)tm.tm_min, 2);
	o->buf[o->len++] = ':';
	netlog_put_digits(o, (unsigned)tm.tm_sec, 2);
	o->buf[o->len++] = '.';
	netlog_put_digits(o, ms, 3);
	netlog_put_raw(o, "Z\"", 2);
}

void netlog_put_start(struct netlog_out *o)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	o->len = 0;
	netlog_put_raw(o, "{\"ts\":", 6);
	put_ts(o, tv.tv_sec, (unsigned)(tv.tv_usec / 1000));
}

void netlog_put_time(struct netlog_out *o, const char *key, uint64_t ms)
{
	netlog_put_key(o, key);
	put_ts(o, (time_t)(ms / 1000), (unsigned)(ms % 1000));
}

void netlog_put_bool(struct netlog_out *o, const char *key, bool v)
{
	netlog_put_key(o, key);
	netlog_put_raw(o, v ? "true" : "false", v ? 4 : 5);
}
