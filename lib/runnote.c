/*
 * runnote.c: the note `sluice run` leaves the proxy (runnote.h): formatted
 * by the CLI, parsed by the proxy. Pure functions: no files here.
 */
#include "runnote.h"

#include <stdio.h>
#include <string.h>

#include "digits.h"
#include "lines.h"

#define MAGIC "sluice-runnote v1"

static bool is_lower_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

bool runnote_id_ok(const char *s, size_t len)
{
	if (len != RUNNOTE_ID_LEN)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!is_lower_hex(s[i]))
			return false;
	return true;
}

static bool nonce_ok(const char *s, size_t len)
{
	if (len != RUNNOTE_NONCE_LEN)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!is_lower_hex(s[i]))
			return false;
	return true;
}

static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       strchr("._@:/+-", c) != NULL;
}

static bool name_ok(const char *s, size_t len)
{
	if (len == 0 || len > RUNNOTE_NAME_MAX)
		return false;
	for (size_t i = 0; i < len; i++)
		if (s[i] == '\0' || !name_char(s[i]))
			return false;
	return true;
}

bool runnote_name_ok(const char *s)
{
	return name_ok(s, strlen(s));
}

/* Whether the command line may be put as it is: no control bytes, not empty, not too long. */
static bool cmd_ok(const char *s, size_t len)
{
	if (len == 0 || len > RUNNOTE_CMD_MAX)
		return false;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return false;
	return true;
}

/* Append c to out at *at when it and room for "..." fit; false once full. */
static bool put(char *out, size_t cap, size_t *at, const char *s, size_t n)
{
	if (*at + n > cap)
		return false;
	memcpy(out + *at, s, n);
	*at += n;
	return true;
}

void runnote_cmd(char *const argv[], char *out, size_t size)
{
	size_t cap = (size - 1 < RUNNOTE_CMD_MAX ? size - 1 : RUNNOTE_CMD_MAX) - 3, at = 0;
	bool full = false;

	for (size_t i = 0; argv[i] != NULL && !full; i++) {
		const char *w = argv[i];
		bool plain = w[0] != '\0';

		for (const char *p = w; *p != '\0'; p++)
			if (!name_char(*p) && *p != ',' && *p != '=' && *p != '%')
				plain = false;
		if (i > 0)
			full = !put(out, cap, &at, " ", 1);
		if (!plain && !full)
			full = !put(out, cap, &at, "'", 1);
		for (const char *p = w; *p != '\0' && !full; p++) {
			char esc[8];
			unsigned char c = (unsigned char)*p;

			if (c < 0x20 || c == 0x7f) {
				snprintf(esc, sizeof(esc), "\\x%02x", c);
				full = !put(out, cap, &at, esc, 4);
			} else if (c == '\'') {
				full = !put(out, cap, &at, "'\\''", 4);
			} else {
				full = !put(out, cap, &at, p, 1);
			}
		}
		if (!plain && !full)
			full = !put(out, cap, &at, "'", 1);
	}
	if (full) {
		memcpy(out + at, "...", 3);
		at += 3;
	}
	out[at] = '\0';
}

int runnote_format(const struct runnote *n, char *buf, size_t size)
{
	int len, more;

	if (!runnote_id_ok(n->id, strlen(n->id)) || !cmd_ok(n->cmd, strlen(n->cmd)) ||
	    (n->nonce[0] != '\0' && !nonce_ok(n->nonce, strlen(n->nonce))) ||
	    (n->name[0] != '\0' && !runnote_name_ok(n->name)) ||
	    (n->project[0] != '\0' && !runnote_name_ok(n->project)) || (n->ended && n->status > 255))
		return -1;
	len = snprintf(buf, size, MAGIC "\nid %s\n%s%s%s%s%s%s%s%s%sstart %llu\ncmd %s\n", n->id,
		       n->nonce[0] != '\0' ? "nonce " : "", n->nonce, n->nonce[0] != '\0' ? "\n" : "",
		       n->name[0] != '\0' ? "name " : "", n->name, n->name[0] != '\0' ? "\n" : "",
		       n->project[0] != '\0' ? "project " : "", n->project,
		       n->project[0] != '\0' ? "\n" : "", (unsigned long long)n->start_ms, n->cmd);
	if (len < 0 || (size_t)len >= size)
		return -1;
	if (!n->ended)
		return len;
	more = snprintf(buf + len, size - (size_t)len, "end %u %llu\n", n->status,
			(unsigned long long)n->end_ms);
	if (more < 0 || (size_t)more >= size - (size_t)len)
		return -1;
	return len + more;
}

/* Whether line (n bytes) is "KEY " then a value, *v and *vn the value. */
static bool keyed(const char *line, size_t n, const char *key, const char **v, size_t *vn)
{
	size_t k = strlen(key);

	if (n <= k || memcmp(line, key, k) != 0 || line[k] != ' ')
		return false;
	*v = line + k + 1;
	*vn = n - k - 1;
	return true;
}

static void copy(char *dst, const char *s, size_t n)
{
	memcpy(dst, s, n);
	dst[n] = '\0';
}

int runnote_parse(const char *buf, size_t len, struct runnote *n)
{
	const char *line, *v;
	size_t at = 0, ln, vn;
	uint64_t num;

	memset(n, 0, sizeof(*n));
	if (len > RUNNOTE_MAX_BYTES || !line_next(buf, len, &at, &line, &ln) ||
	    ln != strlen(MAGIC) || memcmp(line, MAGIC, ln) != 0)
		return -1;
	if (!line_next(buf, len, &at, &line, &ln) || !keyed(line, ln, "id", &v, &vn) ||
	    !runnote_id_ok(v, vn))
		return -1;
	copy(n->id, v, vn);
	if (!line_next(buf, len, &at, &line, &ln))
		return -1;
	if (keyed(line, ln, "nonce", &v, &vn)) {
		if (!nonce_ok(v, vn) || !line_next(buf, len, &at, &line, &ln))
			return -1;
		copy(n->nonce, v, vn);
	}
	if (keyed(line, ln, "name", &v, &vn)) {
		if (!name_ok(v, vn) || !line_next(buf, len, &at, &line, &ln))
			return -1;
		copy(n->name, v, vn);
	}
	if (keyed(line, ln, "project", &v, &vn)) {
		if (!name_ok(v, vn) || !line_next(buf, len, &at, &line, &ln))
			return -1;
		copy(n->project, v, vn);
	}
	if (!keyed(line, ln, "start", &v, &vn) || dec_parse(v, vn, UINT64_MAX / 2, &num) == -1)
		return -1;
	n->start_ms = num;
	if (!line_next(buf, len, &at, &line, &ln) || !keyed(line, ln, "cmd", &v, &vn) ||
	    !cmd_ok(v, vn))
		return -1;
	copy(n->cmd, v, vn);
	if (line_next(buf, len, &at, &line, &ln)) {
		const char *sp;

		if (!keyed(line, ln, "end", &v, &vn) || (sp = memchr(v, ' ', vn)) == NULL ||
		    dec_parse(v, (size_t)(sp - v), 255, &num) == -1)
			return -1;
		n->status = (unsigned)num;
		if (dec_parse(sp + 1, vn - (size_t)(sp - v) - 1, UINT64_MAX / 2, &num) == -1)
			return -1;
		n->end_ms = num;
		n->ended = true;
	}
	return at == len ? 0 : -1;
}
