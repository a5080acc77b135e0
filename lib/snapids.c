/*
 * snapids.c: the container ids in an engine snapshot line.
 *
 * A small JSON reader over a cursor (p, n): strings (escapes decoded, a
 * \u escape beyond ASCII or of NUL read as 0x01, which no id or net
 * holds), numbers, literals, and objects and arrays nested at most
 * DEPTH_MAX deep. It reads only the keys the forwarder needs and checks
 * only what it reads; `sluice log` (cli/snapshot.c) is the full parser.
 */
#include "snapids.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "digits.h"

#define DEPTH_MAX 16
#define KEY_MAX 16

struct jcur {
	const char *p;
	size_t n;
};

static void ws(struct jcur *c)
{
	while (c->n > 0 && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')) {
		c->p++;
		c->n--;
	}
}

/* Skip blanks, then take ch if it is next. */
static bool eat(struct jcur *c, char ch)
{
	ws(c);
	if (c->n == 0 || *c->p != ch)
		return false;
	c->p++;
	c->n--;
	return true;
}

/*
 * A string (after blanks) into out (cap bytes with its NUL; NULL: skip).
 * *fit says whether all of it went in. Returns 0, or -1 malformed.
 */
static int str(struct jcur *c, char *out, size_t cap, bool *fit)
{
	size_t o = 0;

	*fit = true;
	if (!eat(c, '"'))
		return -1;
	for (;;) {
		unsigned char ch;

		if (c->n == 0)
			return -1;
		ch = (unsigned char)*c->p++;
		c->n--;
		if (ch == '"')
			break;
		if (ch < 0x20)
			return -1;
		if (ch == '\\') {
			if (c->n == 0)
				return -1;
			ch = (unsigned char)*c->p++;
			c->n--;
			switch (ch) {
			case '"': case '\\': case '/': break;
			case 'b': ch = '\b'; break;
			case 'f': ch = '\f'; break;
			case 'n': ch = '\n'; break;
			case 'r': ch = '\r'; break;
			case 't': ch = '\t'; break;
			case 'u': {
				uint64_t v;

				if (c->n < 4 || hex_parse(c->p, 4, 0xffff, &v) == -1)
					return -1;
				c->p += 4;
				c->n -= 4;
				ch = v > 0 && v < 0x80 ? (unsigned char)v : 0x01;
				break;
			}
			default: return -1;
			}
		}
		if (out == NULL)
			continue;
		if (o + 1 < cap)
			out[o++] = (char)ch;
		else
			*fit = false;
	}
	if (out != NULL && cap > 0)
		out[o] = '\0';
	return 0;
}

static bool literal(struct jcur *c, const char *word)
{
	size_t n = strlen(word);

	if (c->n < n || memcmp(c->p, word, n) != 0)
		return false;
	c->p += n;
	c->n -= n;
	return true;
}

/* Any value, skipped. Returns 0 or -1 malformed (or nested past DEPTH_MAX). */
static int skip(struct jcur *c, unsigned depth)
{
	bool fit;
	char close;

	ws(c);
	if (c->n == 0 || depth > DEPTH_MAX)
		return -1;
	switch (*c->p) {
	case '"': return str(c, NULL, 0, &fit);
	case 't': return literal(c, "true") ? 0 : -1;
	case 'f': return literal(c, "false") ? 0 : -1;
	case 'n': return literal(c, "null") ? 0 : -1;
	case '{': case '[': break;
	default: {
		size_t k = 0;

		while (k < c->n && ((c->p[k] >= '0' && c->p[k] <= '9') || c->p[k] == '-' ||
				    c->p[k] == '+' || c->p[k] == '.' || c->p[k] == 'e' || c->p[k] == 'E'))
			k++;
		if (k == 0)
			return -1;
		c->p += k;
		c->n -= k;
		return 0;
	}
	}
	close = *c->p == '{' ? '}' : ']';
	c->p++;
	c->n--;
	if (eat(c, close))
		return 0;
	do {
		if (close == '}' && (str(c, NULL, 0, &fit) == -1 || !eat(c, ':')))
			return -1;
		if (skip(c, depth + 1) == -1)
			return -1;
	} while (eat(c, ','));
	return eat(c, close) ? 0 : -1;
}

static bool is_id(const char *s)
{
	return strlen(s) == SNAPIDS_ID_LEN && hex_is_lower(s, SNAPIDS_ID_LEN);
}

/* One container object: its "id" appended to ids. Returns 0 or -1 with *err. */
static int container(struct jcur *c, char (*ids)[SNAPIDS_ID_LEN + 1], size_t cap, size_t *n,
		     const char **err)
{
	char key[KEY_MAX], id[SNAPIDS_ID_LEN + 2];
	bool have_id = false, fit;

	*err = "a container that is not an object";
	if (!eat(c, '{'))
		return -1;
	if (!eat(c, '}')) {
		do {
			if (str(c, key, sizeof(key), &fit) == -1 || !eat(c, ':'))
				return -1;
			if (fit && strcmp(key, "id") == 0) {
				*err = "a container without one 64-hex id";
				if (have_id || str(c, id, sizeof(id), &fit) == -1 || !fit || !is_id(id))
					return -1;
				have_id = true;
			} else if (skip(c, 3) == -1) {
				return -1;
			}
		} while (eat(c, ','));
		*err = "a container that is not an object";
		if (!eat(c, '}'))
			return -1;
	}
	*err = "a container without one 64-hex id";
	if (!have_id)
		return -1;
	*err = "too many containers";
	if (*n == cap)
		return -1;
	memcpy(ids[(*n)++], id, SNAPIDS_ID_LEN + 1);
	return 0;
}

static int id_cmp(const void *a, const void *b)
{
	return memcmp(a, b, SNAPIDS_ID_LEN);
}

int snapids_parse(const char *line, size_t len, char net[SNAPIDS_NET_MAX + 1],
		  char (*ids)[SNAPIDS_ID_LEN + 1], size_t cap, size_t *n, const char **err)
{
	struct jcur c = { line, len };
	bool have_t = false, have_net = false, have_ctrs = false, fit;
	char key[KEY_MAX];

	*n = 0;
	net[0] = '\0';
	*err = "not a JSON object";
	if (!eat(&c, '{'))
		return -1;
	if (!eat(&c, '}')) {
		do {
			*err = "not a JSON object";
			if (str(&c, key, sizeof(key), &fit) == -1 || !eat(&c, ':'))
				return -1;
			if (fit && strcmp(key, "t") == 0) {
				*err = "bad t";
				if (have_t || str(&c, NULL, 0, &fit) == -1)
					return -1;
				have_t = true;
			} else if (fit && strcmp(key, "net") == 0) {
				*err = "bad net";
				if (have_net || str(&c, net, SNAPIDS_NET_MAX + 1, &fit) == -1 || !fit ||
				    net[0] == '\0')
					return -1;
				have_net = true;
			} else if (fit && strcmp(key, "containers") == 0) {
				*err = "containers is not a list";
				if (have_ctrs || !eat(&c, '['))
					return -1;
				have_ctrs = true;
				if (eat(&c, ']'))
					continue;
				do {
					if (container(&c, ids, cap, n, err) == -1)
						return -1;
				} while (eat(&c, ','));
				*err = "containers is not a list";
				if (!eat(&c, ']'))
					return -1;
			} else if (skip(&c, 1) == -1) {
				*err = "not a JSON object";
				return -1;
			}
		} while (eat(&c, ','));
		*err = "not a JSON object";
		if (!eat(&c, '}'))
			return -1;
	}
	ws(&c);
	*err = "bytes after the object";
	if (c.n != 0)
		return -1;
	*err = !have_t ? "bad t" : !have_net ? "bad net" : "containers is not a list";
	if (!have_t || !have_net || !have_ctrs)
		return -1;
	if (*n > 1)
		qsort(ids, *n, sizeof(ids[0]), id_cmp);
	return 0;
}

int snapids_last(const char *buf, size_t len, bool at_start, const char *net,
		 char (*ids)[SNAPIDS_ID_LEN + 1], size_t cap, size_t *n)
{
	size_t end = len;

	*n = 0;
	/* only lines ending in a newline: drop a last line still being written */
	while (end > 0 && buf[end - 1] != '\n')
		end--;
	while (end > 0) {
		size_t stop = end - 1, start = stop; /* buf[start..stop) is the line */
		char lnet[SNAPIDS_NET_MAX + 1];
		const char *err;

		while (start > 0 && buf[start - 1] != '\n')
			start--;
		if (start == 0 && !at_start)
			break;
		if (stop > start && buf[stop - 1] == '\r')
			stop--;
		if (stop > start &&
		    snapids_parse(buf + start, stop - start, lnet, ids, cap, n, &err) == 0 &&
		    strcmp(lnet, net) == 0)
			return 1;
		*n = 0;
		end = start;
	}
	return 0;
}

bool snapids_has(const char (*ids)[SNAPIDS_ID_LEN + 1], size_t n, const char *id)
{
	return strlen(id) == SNAPIDS_ID_LEN && n > 0 &&
	       bsearch(id, ids, n, sizeof(ids[0]), id_cmp) != NULL;
}
