/*
 * netlog.c: writing and rotating the network log.
 *
 * Formatting is by hand into a fixed buffer: every string is capped, so a
 * row has a known maximum size and never allocates.
 */
#include "netlog.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define ROW_MAX 4096
#define PATH_CAP 200
#define UA_CAP 120
#define TEXT_CAP 256

struct netlog {
	int fd;
	uint64_t size;
	uint64_t rotate_bytes;
	unsigned keep;
	bool warned;
	char path[PATH_MAX];
};

static int open_log(struct netlog *l)
{
	struct stat st;

	l->fd = open(l->path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
	if (l->fd == -1)
		return -1;
	l->size = fstat(l->fd, &st) == 0 ? (uint64_t)st.st_size : 0;
	return 0;
}

struct netlog *netlog_open(const char *path, uint64_t rotate_bytes, unsigned keep)
{
	struct netlog *l = calloc(1, sizeof(*l));

	if (l == NULL)
		return NULL;
	if (strlen(path) >= sizeof(l->path) - 8) {
		free(l);
		errno = ENAMETOOLONG;
		return NULL;
	}
	strcpy(l->path, path);
	l->rotate_bytes = rotate_bytes;
	l->keep = keep;
	if (open_log(l) == -1) {
		int e = errno;
		free(l);
		errno = e;
		return NULL;
	}
	return l;
}

void netlog_close(struct netlog *l)
{
	if (l == NULL)
		return;
	if (l->fd >= 0)
		close(l->fd);
	free(l);
}

static void rotate(struct netlog *l)
{
	char from[PATH_MAX + 16], to[PATH_MAX + 16];

	if (l->keep == 0) {
		unlink(l->path);
	} else {
		for (unsigned i = l->keep; i > 1; i--) {
			snprintf(from, sizeof(from), "%s.%u", l->path, i - 1);
			snprintf(to, sizeof(to), "%s.%u", l->path, i);
			rename(from, to);
		}
		snprintf(to, sizeof(to), "%s.1", l->path);
		rename(l->path, to);
	}
	close(l->fd);
	if (open_log(l) == -1 && !l->warned) {
		fprintf(stderr, "sluice-proxy: netlog: reopen %s: %s\n", l->path, strerror(errno));
		l->warned = true;
	}
}

/* Length of a valid UTF-8 sequence at s (max n bytes), or 0. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
	size_t len;
	uint32_t cp;

	if (s[0] < 0xc2 || s[0] > 0xf4)
		return 0;
	len = s[0] < 0xe0 ? 2 : s[0] < 0xf0 ? 3 : 4;
	if (len > n)
		return 0;
	cp = s[0] & (0x7f >> len);
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

size_t netlog_escape(const char *s, size_t len, size_t cap, char *out, size_t size)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)s;
	size_t o = 0;

	if (len > cap)
		len = cap;
	for (size_t i = 0; i < len && size > 0; i++) {
		unsigned char c = p[i];
		size_t seq;

		if (o + 7 >= size)
			break;
		if (c == '"' || c == '\\') {
			out[o++] = '\\';
			out[o++] = (char)c;
		} else if (c >= 0x20 && c < 0x7f) {
			out[o++] = (char)c;
		} else if (c >= 0x80 && (seq = utf8_seq(p + i, len - i)) > 0) {
			memcpy(out + o, p + i, seq);
			o += seq;
			i += seq - 1;
		} else {
			out[o++] = '\\';
			out[o++] = 'u';
			out[o++] = '0';
			out[o++] = '0';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	if (size > 0)
		out[o] = '\0';
	return o;
}

struct row_out {
	char buf[ROW_MAX];
	size_t len;
};

static void put(struct row_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct row_out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->len >= sizeof(o->buf))
		return;
	va_start(ap, fmt);
	n = vsnprintf(o->buf + o->len, sizeof(o->buf) - o->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		o->len += (size_t)n < sizeof(o->buf) - o->len ? (size_t)n : sizeof(o->buf) - o->len - 1;
}

static void put_str(struct row_out *o, const char *key, const char *s, size_t len, size_t cap)
{
	char esc[TEXT_CAP * 6 + 8];

	if (s == NULL) {
		put(o, ",\"%s\":null", key);
		return;
	}
	netlog_escape(s, len, cap, esc, sizeof(esc));
	put(o, ",\"%s\":\"%s\"", key, esc);
}

static void put_cstr(struct row_out *o, const char *key, const char *s)
{
	put_str(o, key, s, s ? strlen(s) : 0, TEXT_CAP);
}

static void put_ms(struct row_out *o, const char *key, double v)
{
	if (v < 0)
		put(o, ",\"%s\":null", key);
	else
		put(o, ",\"%s\":%.3f", key, v);
}

int netlog_write(struct netlog *l, const struct netlog_row *r)
{
	struct row_out o = { .len = 0 };
	struct timeval tv;
	struct tm tm;
	ssize_t n;

	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	put(&o, "{\"ts\":\"%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ\"", tm.tm_year + 1900,
	    tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
	    (long)(tv.tv_usec / 1000));
	put(&o, ",\"conn\":%llu,\"req\":%llu", (unsigned long long)r->conn,
	    (unsigned long long)r->req);
	put_cstr(&o, "run", r->run);
	put_cstr(&o, "who", r->who);
	put_cstr(&o, "client", r->client);
	put_cstr(&o, "kind", r->kind);
	put_cstr(&o, "method", r->method);
	put_cstr(&o, "host", r->host);
	if (r->port < 0)
		put(&o, ",\"port\":null");
	else
		put(&o, ",\"port\":%d", r->port);
	put_str(&o, "path", r->path, r->path_len, PATH_CAP);
	put(&o, ",\"status\":%d", r->status);
	put_cstr(&o, "decision", r->decision);
	put_cstr(&o, "reason", r->reason);
	put_cstr(&o, "grant", r->grant);
	put_cstr(&o, "dialed", r->dialed);
	put(&o, ",\"up\":%llu,\"down\":%llu", (unsigned long long)r->up,
	    (unsigned long long)r->down);
	put_ms(&o, "ms", r->ms);
	put_ms(&o, "dns_ms", r->dns_ms);
	put_ms(&o, "connect_ms", r->connect_ms);
	put_str(&o, "ua", r->ua, r->ua_len, UA_CAP);
	put_cstr(&o, "detail", r->detail);
	put(&o, "}\n");
	if (o.buf[o.len - 1] != '\n') /* cannot happen with the caps above; keep rows whole */
		o.buf[o.len - 1] = '\n';

	if (l->fd < 0)
		return -1;
	if (l->rotate_bytes > 0 && l->size + o.len > l->rotate_bytes && l->size > 0)
		rotate(l);
	n = write(l->fd, o.buf, o.len);
	if (n != (ssize_t)o.len) {
		if (!l->warned)
			fprintf(stderr, "sluice-proxy: netlog: write %s: %s\n", l->path,
				n == -1 ? strerror(errno) : "short write");
		l->warned = true;
		return -1;
	}
	l->size += o.len;
	return 0;
}
