/*
 * netlog.c: writing and rotating the network log.
 *
 * Formatting is by hand into a fixed buffer: every string is capped, so a
 * row has a known maximum size and never allocates. With log-chain on the
 * row ends in prev, the hash of the line before it (netlog_chain.c holds the
 * hashing and the tail reading); the writer keeps it in memory, across
 * rotation, and knows what a failed write left in the file.
 */
#include "netlog.h"

#include "file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define ROW_MAX 26624 /* 14 strings at TEXT_CAP plus as, path and ua, every byte escaped */
#define PREV_MAX (NETLOG_PREV_HEX + 16) /* ,"prev":"HEX" */
#define PATH_CAP 200
#define UA_CAP 120
#define TEXT_CAP 256

struct netlog {
	int fd;
	uint64_t size;
	uint64_t rotate_bytes;
	unsigned keep;
	bool warned;
	bool chain;      /* log-chain on: rows end in prev */
	bool has_prev;   /* prev holds the hash of the last line; false: none yet */
	bool cut;        /* the file ends in a row written only in part: a newline first */
	uid_t owner;     /* who besides root and us may own the files (FILE_NO_UID: nobody) */
	char prev[NETLOG_PREV_HEX + 1];
	char path[PATH_MAX];
};

/*
 * The log's directory may be the proxy's user's: what is at the path is
 * opened only when it is a regular file of root's, ours or that user's,
 * with no other name, never through a symbolic link (root would append
 * client text to whatever it named).
 */
static int open_log(struct netlog *l, const char **why)
{
	struct stat st;

	l->fd = file_open_owned(l->path, O_WRONLY | O_APPEND | O_CREAT, 0640, l->owner, why);
	if (l->fd == -1)
		return -1;
	l->size = fstat(l->fd, &st) == 0 ? (uint64_t)st.st_size : 0;
	return 0;
}

/*
 * The chain's start: the hash of the file's last line, else of FILE.1's (the
 * file it rotated from), else none. A last line cut short is hashed as it
 * is and gets its newline before the next row. Returns 0 or -1 with errno.
 */
static int chain_resume(struct netlog *l, const char **why)
{
	char older[PATH_MAX + 16];
	bool unterminated;
	int r = netlog_chain_last(l->path, l->owner, l->prev, &unterminated, why);

	if (r == 0 && l->keep > 0) {
		snprintf(older, sizeof(older), "%s.1", l->path);
		r = netlog_chain_last(older, l->owner, l->prev, &unterminated, why);
		unterminated = false; /* not the file we append to */
	}
	if (r == -1)
		return -1;
	l->has_prev = r == 1;
	l->cut = unterminated;
	return 0;
}

struct netlog *netlog_open(const char *path, uint64_t rotate_bytes, unsigned keep, bool chain,
			   uid_t owner, const char **why)
{
	struct netlog *l = calloc(1, sizeof(*l));

	if (why != NULL)
		*why = NULL;
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
	l->chain = chain;
	l->owner = owner;
	if ((chain && chain_resume(l, why) == -1) || open_log(l, why) == -1) {
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
	const char *why;

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
	if (open_log(l, &why) == -1 && !l->warned) {
		fprintf(stderr, "sluice-proxy: netlog: reopen %s: %s\n", l->path,
			why != NULL ? why : strerror(errno));
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

/*
 * The row is built by hand, not with printf: this runs once per request on
 * the hot path. ROW_MAX holds the worst case (every string at its cap,
 * every byte escaped), so a row is never cut.
 */
struct row_out {
	char buf[ROW_MAX + PREV_MAX];
	size_t len;
};

static void put_raw(struct row_out *o, const char *s, size_t n)
{
	memcpy(o->buf + o->len, s, n);
	o->len += n;
}

static void put_key(struct row_out *o, const char *key)
{
	size_t n = strlen(key);

	o->buf[o->len++] = ',';
	o->buf[o->len++] = '"';
	put_raw(o, key, n);
	o->buf[o->len++] = '"';
	o->buf[o->len++] = ':';
}

static void put_u64(struct row_out *o, uint64_t v)
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

static void put_num(struct row_out *o, const char *key, uint64_t v)
{
	put_key(o, key);
	put_u64(o, v);
}

/* Two (or four) digits with leading zeros. */
static void put_digits(struct row_out *o, unsigned v, int width)
{
	for (int i = width - 1; i >= 0; i--) {
		o->buf[o->len + (size_t)i] = (char)('0' + v % 10);
		v /= 10;
	}
	o->len += (size_t)width;
}

static void put_str(struct row_out *o, const char *key, const char *s, size_t len, size_t cap)
{
	put_key(o, key);
	if (s == NULL) {
		put_raw(o, "null", 4);
		return;
	}
	o->buf[o->len++] = '"';
	/* room is the worst case for cap bytes; ROW_MAX holds every field's */
	o->len += netlog_escape(s, len, cap, o->buf + o->len, cap * 6 + 8);
	o->buf[o->len++] = '"';
}

static void put_cstr(struct row_out *o, const char *key, const char *s)
{
	put_str(o, key, s, s ? strlen(s) : 0, TEXT_CAP);
}

/* Milliseconds with three decimals, or null when negative. */
static void put_ms(struct row_out *o, const char *key, double v)
{
	uint64_t us;

	put_key(o, key);
	if (v < 0) {
		put_raw(o, "null", 4);
		return;
	}
	us = (uint64_t)(v * 1000.0 + 0.5);
	put_u64(o, us / 1000);
	o->buf[o->len++] = '.';
	put_digits(o, (unsigned)(us % 1000), 3);
}

int netlog_write(struct netlog *l, const struct netlog_row *r)
{
	struct row_out o = { .len = 0 };
	struct timeval tv;
	struct tm tm;
	ssize_t n;

	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	put_raw(&o, "{\"ts\":\"", 7);
	put_digits(&o, (unsigned)tm.tm_year + 1900, 4);
	o.buf[o.len++] = '-';
	put_digits(&o, (unsigned)tm.tm_mon + 1, 2);
	o.buf[o.len++] = '-';
	put_digits(&o, (unsigned)tm.tm_mday, 2);
	o.buf[o.len++] = 'T';
	put_digits(&o, (unsigned)tm.tm_hour, 2);
	o.buf[o.len++] = ':';
	put_digits(&o, (unsigned)tm.tm_min, 2);
	o.buf[o.len++] = ':';
	put_digits(&o, (unsigned)tm.tm_sec, 2);
	o.buf[o.len++] = '.';
	put_digits(&o, (unsigned)(tv.tv_usec / 1000), 3);
	put_raw(&o, "Z\"", 2);
	put_num(&o, "conn", r->conn);
	put_num(&o, "req", r->req);
	put_cstr(&o, "run", r->run);
	put_cstr(&o, "who", r->who);
	if (r->stamp != NULL) {
		put_cstr(&o, "src", r->stamp->src);
		put_cstr(&o, "net", r->stamp->net);
		put_str(&o, "as", r->stamp->as[0] != '\0' ? r->stamp->as : NULL,
			strnlen(r->stamp->as, sizeof(r->stamp->as)), STAMP_AS_MAX);
		put_cstr(&o, "boot", r->stamp->boot);
		put_num(&o, "seq", r->stamp->seq);
		put_num(&o, "kid", r->stamp->kid);
	} else {
		static const char none[] =
			",\"src\":null,\"net\":null,\"as\":null,\"boot\":null,\"seq\":null,"
			"\"kid\":null";

		put_raw(&o, none, sizeof(none) - 1);
	}
	put_cstr(&o, "client", r->client);
	put_cstr(&o, "kind", r->kind);
	put_cstr(&o, "proto", r->proto);
	put_cstr(&o, "method", r->method);
	put_cstr(&o, "host", r->host);
	if (r->port < 0) {
		put_key(&o, "port");
		put_raw(&o, "null", 4);
	} else {
		put_num(&o, "port", (uint64_t)r->port);
	}
	put_str(&o, "path", r->path, r->path_len, PATH_CAP);
	put_num(&o, "status", (uint64_t)(r->status < 0 ? 0 : r->status));
	put_cstr(&o, "decision", r->decision);
	put_cstr(&o, "reason", r->reason);
	put_cstr(&o, "grant", r->grant);
	put_cstr(&o, "inject", r->inject);
	if (r->scrubbed < 0) {
		put_key(&o, "scrubbed");
		put_raw(&o, "null", 4);
	} else {
		put_num(&o, "scrubbed", (uint64_t)r->scrubbed);
	}
	put_cstr(&o, "dialed", r->dialed);
	put_num(&o, "up", r->up);
	put_num(&o, "down", r->down);
	put_ms(&o, "ms", r->ms);
	put_ms(&o, "dns_ms", r->dns_ms);
	put_ms(&o, "connect_ms", r->connect_ms);
	put_str(&o, "ua", r->ua, r->ua_len, UA_CAP);
	put_cstr(&o, "detail", r->detail);
	if (l->chain) {
		put_key(&o, "prev");
		if (l->has_prev) {
			o.buf[o.len++] = '"';
			put_raw(&o, l->prev, NETLOG_PREV_HEX);
			o.buf[o.len++] = '"';
		} else {
			put_raw(&o, "null", 4);
		}
	}
	put_raw(&o, "}\n", 2);

	if (l->fd < 0 && open_log(l, NULL) == -1)
		return -1; /* reported once at the failed reopen; retried each row */
	if (l->rotate_bytes > 0 && l->size + o.len > l->rotate_bytes && l->size > 0) {
		rotate(l);
		l->cut = false; /* the cut row went with the old file */
	}
	n = 1;
	if (l->cut && (n = write(l->fd, "\n", 1)) == 1) {
		l->cut = false;
		l->size++;
	}
	if (n == 1)
		n = write(l->fd, o.buf, o.len);
	else
		n = -1;
	if (n > 0 && l->chain) {
		/* what the file now holds last: this row, or the part of it written */
		netlog_chain_hash(o.buf, (size_t)n < o.len ? (size_t)n : o.len - 1, l->prev);
		l->has_prev = true;
		l->cut = (size_t)n < o.len;
	}
	if (n != (ssize_t)o.len) {
		if (!l->warned)
			fprintf(stderr, "sluice-proxy: netlog: write %s: %s\n", l->path,
				n == -1 ? strerror(errno) : "short write");
		l->warned = true;
		if (n > 0)
			l->size += (uint64_t)n;
		return -1;
	}
	l->size += o.len;
	return 0;
}
