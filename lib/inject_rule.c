/*
 * inject_rule.c: the `inject` line of the config, word by word.
 *
 * Turns KEY=VALUE words into a struct inject_rule, refusing anything the
 * proxy could apply in more than one way (both header= and query=, two
 * secret sources, a path with dot segments), and writes the normalised
 * line back. It neither reads the secret nor checks that a file or
 * command exists: the proxy reports on those when it uses them.
 */
#include "inject.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

enum key {
	K_HOST,
	K_PATH,
	K_HEADER,
	K_QUERY,
	K_PREFIX,
	K_ENV,
	K_FILE,
	K_COMMAND,
	K_KEYS,
	K_ARGS,
	K_REQUIRE,
	K_PRINCIPAL,
	K_UNATTRIBUTED,
	K_COUNT,
};

static const char *const key_names[K_COUNT] = {
	"host", "path", "header", "query", "prefix", "env", "file", "command",
	"keys", "args", "require", "principal", "unattributed",
};

/* Headers a rule may not write: hop-by-hop, framing, routing, attribution. */
static const char *const forbidden_headers[] = {
	"connection", "keep-alive", "proxy-connection", "proxy-authenticate",
	"proxy-authorization", "te", "trailer", "transfer-encoding", "upgrade",
	"host", "content-length", "sluice-stamp",
};


static int fail(char *err, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t size, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, size, fmt, ap);
	va_end(ap);
	return -1;
}

static bool is_alnum(unsigned char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
}

/* RFC 3986 unreserved: what a query parameter name or placeholder may hold. */
static bool is_unreserved(unsigned char ch)
{
	return is_alnum(ch) || ch == '-' || ch == '.' || ch == '_' || ch == '~';
}

/* RFC 9110 tchar. */
static bool is_tchar(unsigned char ch)
{
	return is_alnum(ch) || (ch != '\0' && strchr("!#$%&'*+-.^_`|~", ch) != NULL);
}

/* A path byte: RFC 3986 pchar without pct-encoded, or '/'. */
static bool is_path_byte(unsigned char ch)
{
	return is_unreserved(ch) || (ch != '\0' && strchr("!$&'()*+,;=:@/", ch) != NULL);
}

static bool all(const char *s, bool (*ok)(unsigned char))
{
	for (; *s != '\0'; s++)
		if (!ok((unsigned char)*s))
			return false;
	return true;
}

static bool is_print(unsigned char ch)
{
	return ch >= 0x20 && ch < 0x7f;
}

bool inject_name_valid(const char *s)
{
	size_t n = strlen(s);

	/* the first not '.' or '-': a name is a directory's (STATE/agent-keys/NAME), never . or .. */
	if (n == 0 || n > INJECT_NAME_MAX || s[0] == '.' || s[0] == '-')
		return false;
	for (; *s != '\0'; s++)
		if (!is_alnum((unsigned char)*s) && *s != '.' && *s != '_' && *s != '-')
			return false;
	return true;
}

/* Copy s into dst[size] or fail naming key. */
static int copy(const char *key, const char *s, char *dst, size_t size, char *err,
		size_t esize)
{
	size_t n = strlen(s);

	if (n >= size)
		return fail(err, esize, "%s= too long (%zu bytes, at most %zu)", key, n, size - 1);
	memcpy(dst, s, n + 1);
	return 0;
}

/* host= "name", "name:port", "[v6]:port" or a bare IPv6 literal; the port is 443 unless named. */
static int parse_host(struct inject_rule *r, const char *v, char *err, size_t esize)
{
	struct host h;
	const char *why = "bad host";
	bool has_port;

	if (strchr(v, '*') != NULL)
		return fail(err, esize, "host= \"%s\": wildcard not allowed here", v);
	if (host_port_parse(v, strlen(v), 443, &h, &r->port, &has_port, &why) == -1)
		return fail(err, esize, "host= \"%s\": %s", v, why);
	memcpy(r->host, h.name, sizeof(r->host));
	return 0;
}

static int parse_path(struct inject_rule *r, const char *v, char *err, size_t esize)
{
	const char *seg;

	if (v[0] != '/')
		return fail(err, esize, "path= \"%s\": must start with '/'", v);
	if (!all(v, is_path_byte))
		return fail(err, esize,
			    "path= \"%s\": only letters, digits, '/' and -._~!$&'()*+,;=:@ (no %%, ?, #)",
			    v);
	for (seg = v + 1;; seg++) {
		size_t n = strcspn(seg, "/");

		if ((n == 1 && seg[0] == '.') || (n == 2 && seg[0] == '.' && seg[1] == '.'))
			return fail(err, esize, "path= \"%s\": \".\" and \"..\" segments not allowed", v);
		seg += n;
		if (*seg == '\0')
			break;
	}
	return copy("path", v, r->path, sizeof(r->path), err, esize);
}

static int parse_header(struct inject_rule *r, const char *v, char *err, size_t esize)
{
	if (!all(v, is_tchar))
		return fail(err, esize, "header= \"%s\": not an HTTP field name", v);
	for (size_t i = 0; i < sizeof(forbidden_headers) / sizeof(forbidden_headers[0]); i++)
		if (strcasecmp(v, forbidden_headers[i]) == 0)
			return fail(err, esize, "header= \"%s\": sluice owns that header", v);
	r->target = INJECT_HEADER;
	return copy("header", v, r->field, sizeof(r->field), err, esize);
}

static int parse_query(struct inject_rule *r, const char *v, char *err, size_t esize)
{
	if (!all(v, is_unreserved))
		return fail(err, esize, "query= \"%s\": only letters, digits and -._~", v);
	r->target = INJECT_QUERY;
	return copy("query", v, r->field, sizeof(r->field), err, esize);
}

static int parse_prefix(struct inject_rule *r, const char *v, char *err, size_t esize)
{
	if (!all(v, is_print))
		return fail(err, esize, "prefix=: only printable ASCII");
	return copy("prefix", v, r->prefix, sizeof(r->prefix), err, esize);
}

static bool is_env_byte(unsigned char ch)
{
	return is_alnum(ch) || ch == '_';
}

static int parse_source(struct inject_rule *r, enum key k, const char *v, char *err,
			size_t esize)
{
	if (k == K_ENV) {
		if (!all(v, is_env_byte) || (v[0] >= '0' && v[0] <= '9'))
			return fail(err, esize, "env= \"%s\": not a variable name", v);
		r->source = INJECT_ENV;
	} else {
		if (v[0] != '/')
			return fail(err, esize, "%s= \"%s\": must be an absolute path", key_names[k], v);
		r->source = k == K_FILE ? INJECT_FILE : k == K_KEYS ? INJECT_KEYS : INJECT_COMMAND;
	}
	return copy(key_names[k], v, r->source_arg, sizeof(r->source_arg), err, esize);
}

/* Count the blank-separated words of s. */
static size_t count_words(const char *s)
{
	size_t n = 0;

	for (size_t i = 0; s[i] != '\0'; i++)
		if (s[i] != ' ' && (i == 0 || s[i - 1] == ' '))
			n++;
	return n;
}

static int parse_args(struct inject_rule *r, const char *v, char *err, size_t esize)
{
	size_t n = count_words(v);

	if (n == 0)
		return fail(err, esize, "args= has no words");
	if (n > INJECT_ARGV_MAX)
		return fail(err, esize, "args= has %zu words, at most %d", n, INJECT_ARGV_MAX);
	return copy("args", v, r->args, sizeof(r->args), err, esize);
}

static int parse_principal(struct inject_rule *r, const char *v, char *err, size_t esize)
{
	struct scope p;
	const char *why = "bad principal";

	if (strcmp(v, "unattributed") == 0)
		return fail(err, esize, "principal=unattributed: write unattributed=yes");
	if (scope_parse(v, &p, &why) == -1)
		return fail(err, esize, "principal= \"%s\": %s", v, why);
	if (scope_in(&p, r->principals, r->nprincipals))
		return fail(err, esize, "principal= \"%s\" given twice", v);
	if (r->nprincipals == INJECT_PRINCIPALS_MAX)
		return fail(err, esize, "more than %d principal=", INJECT_PRINCIPALS_MAX);
	r->principals[r->nprincipals++] = p;
	return 0;
}

/* require= once the target is known. */
static int check_require(const struct inject_rule *r, char *err, size_t esize)
{
	const char *v = r->require;
	size_t n = strlen(v);

	if (n == 0)
		return 0;
	if (r->target == INJECT_QUERY && !all(v, is_unreserved))
		return fail(err, esize, "require=: a query placeholder is letters, digits and -._~");
	if (!all(v, is_print) || v[0] == ' ' || v[n - 1] == ' ')
		return fail(err, esize, "require=: printable ASCII without leading or trailing blanks");
	return 0;
}

static int parse_word(struct inject_rule *r, const char *word, size_t *seen, char *err,
		      size_t esize)
{
	const char *eq = strchr(word, '=');
	const char *v;
	size_t klen;
	int k;

	if (eq == NULL || eq == word)
		return fail(err, esize, "expected KEY=VALUE, got \"%s\"", word);
	klen = (size_t)(eq - word);
	v = eq + 1;
	for (k = 0; k < K_COUNT; k++)
		if (strlen(key_names[k]) == klen && memcmp(key_names[k], word, klen) == 0)
			break;
	if (k == K_COUNT)
		return fail(err, esize, "unknown key \"%.*s\"", (int)klen, word);
	if (k != K_PRINCIPAL && seen[k] != 0)
		return fail(err, esize, "key \"%s\" given twice", key_names[k]);
	seen[k]++;
	if (*v == '\0')
		return fail(err, esize, "%s= is empty", key_names[k]);
	switch ((enum key)k) {
	case K_HOST:
		return parse_host(r, v, err, esize);
	case K_PATH:
		return parse_path(r, v, err, esize);
	case K_HEADER:
		return parse_header(r, v, err, esize);
	case K_QUERY:
		return parse_query(r, v, err, esize);
	case K_PREFIX:
		return parse_prefix(r, v, err, esize);
	case K_ENV:
	case K_FILE:
	case K_COMMAND:
	case K_KEYS:
		return parse_source(r, (enum key)k, v, err, esize);
	case K_ARGS:
		return parse_args(r, v, err, esize);
	case K_REQUIRE:
		return copy("require", v, r->require, sizeof(r->require), err, esize);
	case K_PRINCIPAL:
		return parse_principal(r, v, err, esize);
	case K_UNATTRIBUTED:
		if (strcmp(v, "yes") != 0 && strcmp(v, "no") != 0)
			return fail(err, esize, "unattributed= \"%s\": expected yes or no", v);
		r->unattributed = strcmp(v, "yes") == 0;
		return 0;
	case K_COUNT:
		break;
	}
	return fail(err, esize, "unknown key");
}

int inject_rule_parse(struct inject_rule *r, char *const *w, size_t nw, char *err,
		      size_t size)
{
	size_t seen[K_COUNT] = { 0 };
	size_t nsrc, line = r->line;
	char name[INJECT_NAME_MAX + 1];

	memcpy(name, r->name, sizeof(name));
	memset(r, 0, sizeof(*r));
	memcpy(r->name, name, sizeof(name));
	r->line = line;
	r->path[0] = '/';
	r->path[1] = '\0';
	for (size_t i = 0; i < nw; i++)
		if (parse_word(r, w[i], seen, err, size) == -1)
			return -1;
	if (seen[K_HOST] == 0)
		return fail(err, size, "missing host=");
	if (seen[K_HEADER] + seen[K_QUERY] != 1)
		return fail(err, size, seen[K_HEADER] == 0 ? "missing header= or query="
							   : "header= and query= are exclusive");
	nsrc = seen[K_ENV] + seen[K_FILE] + seen[K_COMMAND] + seen[K_KEYS];
	if (nsrc != 1)
		return fail(err, size, nsrc == 0 ? "missing env=, file= or command="
						 : "only one of env=, file=, command=");
	if (seen[K_KEYS] != 0 && r->nprincipals == 0)
		return fail(err, size, "keys= needs principal= (each principal's key is its own file)");
	if (seen[K_ARGS] != 0 && seen[K_COMMAND] == 0)
		return fail(err, size, "args= needs command=");
	return check_require(r, err, size);
}

/* Append to buf[*off..size); false once it does not fit. */
static bool put(char *buf, size_t size, size_t *off, const char *s, size_t n)
{
	if (*off >= size || size - *off <= n) {
		*off = size;
		return false;
	}
	memcpy(buf + *off, s, n);
	*off += n;
	buf[*off] = '\0';
	return true;
}

/* " key=value", quoted when the tokenizer would split or cut it. */
static void put_kv(char *buf, size_t size, size_t *off, const char *key, const char *v)
{
	bool quote = v[0] == '\0' || strpbrk(v, " \t#\"\\") != NULL;

	put(buf, size, off, " ", 1);
	put(buf, size, off, key, strlen(key));
	put(buf, size, off, quote ? "=\"" : "=", quote ? 2 : 1);
	for (; *v != '\0'; v++) {
		if (quote && (*v == '"' || *v == '\\'))
			put(buf, size, off, "\\", 1);
		put(buf, size, off, v, 1);
	}
	if (quote)
		put(buf, size, off, "\"", 1);
}

/* host=, with the port when it is not 443 (IPv6 then bracketed). */
static void put_host(char *buf, size_t size, size_t *off, const struct inject_rule *r)
{
	char hp[HOST_NAME_MAX_LEN + 16];

	if (r->port == 443)
		snprintf(hp, sizeof(hp), "%s", r->host);
	else
		host_port_format(hp, sizeof(hp), r->host, r->port);
	put_kv(buf, size, off, "host", hp);
}

int inject_rule_format(const struct inject_rule *r, char *buf, size_t size)
{
	static const char *const source_keys[] = { "env", "file", "command", "keys" };
	size_t off = 0;

	if (size == 0)
		return -1;
	buf[0] = '\0';
	put(buf, size, &off, "inject ", 7);
	put(buf, size, &off, r->name, strlen(r->name));
	put_host(buf, size, &off, r);
	if (strcmp(r->path, "/") != 0)
		put_kv(buf, size, &off, "path", r->path);
	put_kv(buf, size, &off, r->target == INJECT_HEADER ? "header" : "query", r->field);
	if (r->prefix[0] != '\0')
		put_kv(buf, size, &off, "prefix", r->prefix);
	put_kv(buf, size, &off, source_keys[r->source], r->source_arg);
	if (r->args[0] != '\0')
		put_kv(buf, size, &off, "args", r->args);
	if (r->require[0] != '\0')
		put_kv(buf, size, &off, "require", r->require);
	for (size_t i = 0; i < r->nprincipals; i++)
		put_kv(buf, size, &off, "principal", r->principals[i].text);
	if (r->unattributed)
		put_kv(buf, size, &off, "unattributed", "yes");
	return off >= size ? -1 : (int)off;
}

const struct inject_rule *inject_rule_overlap(const struct inject_rule *rules, size_t n,
					      const struct inject_rule *r)
{
	size_t rl = strlen(r->path);

	for (size_t i = 0; i < n; i++) {
		size_t ol = strlen(rules[i].path);

		if (rules[i].port != r->port || strcmp(rules[i].host, r->host) != 0)
			continue;
		if (strncmp(rules[i].path, r->path, ol < rl ? ol : rl) == 0)
			return &rules[i];
	}
	return NULL;
}

int inject_command_argv(const struct inject_rule *r, char *buf, size_t size, char **argv,
			size_t max)
{
	size_t argc = 0, off = 0, alen = strlen(r->args);

	if (r->source != INJECT_COMMAND || max < 2 || size <= alen)
		return -1;
	memcpy(buf, r->args, alen + 1);
	argv[argc++] = (char *)r->source_arg;
	while (off < alen) {
		if (buf[off] == ' ') {
			buf[off++] = '\0';
			continue;
		}
		if (argc + 1 >= max)
			return -1;
		argv[argc++] = &buf[off];
		while (off < alen && buf[off] != ' ')
			off++;
	}
	argv[argc] = NULL;
	return (int)argc;
}
