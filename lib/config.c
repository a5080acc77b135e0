/*
 * config.c: read the directive file described in config.h.
 *
 * One pass over the buffer, one line at a time: split the words (up to a
 * '#' outside quotes; a key="..." word unquoted here), look the first word
 * up in a table that fixes its argument count and whether it may repeat,
 * and hand the rest to that directive's parser (the interception and
 * injection directives live in config_tls.c). Every error is reported and
 * counted; a line with an error changes nothing else. It does not touch
 * the network, resolve names, or check that paths exist: the programs that
 * use a path report on it.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "config_parser.h"
#include "digits.h"
#include "sockaddr.h"

#define MAX_WORDS 32
#define LOG_DEFAULT_NAME "network.log"

#define DEFAULT_LISTEN "127.0.0.1:3128"
#define DEFAULT_STATE "./state"
#define DEFAULT_ROTATE_BYTES 16777216
#define DEFAULT_LOG_KEEP 5
#define DEFAULT_LOG_ROW_RATE 100  /* refusal rows a second, per principal (proxy/lograte.c) */
#define DEFAULT_LOG_ROW_BURST 200
#define LOG_ROW_MAX 1000000
#define DEFAULT_MAX_CONNS 4096
#define NAMESERVER_PORT 53

/* Parses the arguments w[1..nw) of one directive; reports its own errors. */
typedef void (*directive_fn)(struct parser *p, char **w, size_t nw);

struct directive {
	const char *name;
	size_t nargs;    /* argument count, the name not included */
	bool variadic;   /* nargs is the least; quoted words allowed */
	bool repeatable; /* false: a second occurrence is an error */
	directive_fn fn;
};

static void vperr(struct parser *p, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

static void vperr(struct parser *p, const char *fmt, va_list ap)
{
	p->nerr++;
	if (p->errs == NULL)
		return;
	fprintf(p->errs, "%s:%zu: ", p->file, p->line);
	vfprintf(p->errs, fmt, ap);
	fputc('\n', p->errs);
}

static void perr(struct parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void perr(struct parser *p, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vperr(p, fmt, ap);
	va_end(ap);
}

void config_error(struct parser *p, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vperr(p, fmt, ap);
	va_end(ap);
}

int config_number_arg(struct parser *p, const char *dir, const char *s, uint64_t lo,
		      uint64_t hi, uint64_t *out)
{
	if (dec_parse(s, strlen(s), UINT64_MAX, out) == -1) {
		perr(p, "%s: bad number \"%s\"", dir, s);
		return -1;
	}
	if (*out < lo || *out > hi) {
		perr(p, "%s: %s out of range %llu..%llu", dir, s, (unsigned long long)lo,
		     (unsigned long long)hi);
		return -1;
	}
	return 0;
}

static void d_listen(struct parser *p, char **w, size_t nw)
{
	struct config *c = p->c;
	struct sockaddr_storage ss;
	char buf[128];

	if (sockaddr_parse(w[1], SOCKADDR_UNIX, 0, &ss) == -1) {
		if (strncmp(w[1], "unix:", 5) == 0)
			perr(p, "listen: bad address \"%s\": unix:PATH needs an absolute path of "
				"at most 107 bytes", w[1]);
		else
			perr(p, "listen: bad address \"%s\": expected a numeric ADDR:PORT, "
				"[ADDR]:PORT or unix:PATH", w[1]);
		return;
	}
	if (!p->listen_given) {
		p->listen_given = true;
		c->nlisten = 0;
	}
	for (size_t i = 0; i < c->nlisten; i++) {
		if (sockaddr_same(&c->listen[i], &ss)) {
			perr(p, "listen: %s given twice", sockaddr_format(&ss, buf, sizeof(buf)));
			return;
		}
	}
	if (c->nlisten == CONFIG_MAX_LISTEN) {
		perr(p, "listen: more than %d addresses", CONFIG_MAX_LISTEN);
		return;
	}
	c->listen[c->nlisten++] = ss;
}

static void d_nameserver(struct parser *p, char **w, size_t nw)
{
	struct config *c = p->c;
	struct sockaddr_storage ss;
	char buf[64];

	if (sockaddr_parse(w[1], SOCKADDR_PORT_OPTIONAL, NAMESERVER_PORT, &ss) == -1) {
		perr(p, "nameserver: bad address \"%s\": expected a numeric ADDR, ADDR:PORT or [ADDR]:PORT",
		     w[1]);
		return;
	}
	for (size_t i = 0; i < c->nnameservers; i++) {
		if (sockaddr_same(&c->nameservers[i], &ss)) {
			perr(p, "nameserver: %s given twice",
			     sockaddr_format(&ss, buf, sizeof(buf)));
			return;
		}
	}
	if (c->nnameservers == CONFIG_MAX_NAMESERVERS) {
		perr(p, "nameserver: more than %d addresses", CONFIG_MAX_NAMESERVERS);
		return;
	}
	c->nameservers[c->nnameservers++] = ss;
}

static void d_mode(struct parser *p, char **w, size_t nw)
{
	if (strcmp(w[1], "enforce") == 0)
		p->c->mode = MODE_ENFORCE;
	else if (strcmp(w[1], "observe") == 0)
		p->c->mode = MODE_OBSERVE;
	else
		perr(p, "mode: unknown mode \"%s\": expected enforce or observe", w[1]);
}

int config_path_arg(struct parser *p, const char *dir, const char *s, char *dst)
{
	size_t len = strlen(s);

	if (len >= PATH_MAX) {
		perr(p, "%s: path too long (%zu bytes, at most %d)", dir, len, PATH_MAX - 1);
		return -1;
	}
	memcpy(dst, s, len + 1);
	return 0;
}

static void d_state(struct parser *p, char **w, size_t nw)
{
	char *s = w[1];
	size_t len = strlen(s);

	/* "state/" and "state" are one directory; keep the log default tidy */
	while (len > 1 && s[len - 1] == '/')
		s[--len] = '\0';
	if (config_path_arg(p, "state", s, p->c->state_dir) == 0)
		p->state_line = p->line;
}

static void d_log(struct parser *p, char **w, size_t nw)
{
	config_path_arg(p, "log", w[1], p->c->log_path);
}

static void d_log_rotate_bytes(struct parser *p, char **w, size_t nw)
{
	uint64_t v;

	if (config_number_arg(p, "log-rotate-bytes", w[1], 4096, (uint64_t)1 << 40, &v) == 0)
		p->c->log_rotate_bytes = v;
}

static void d_log_keep(struct parser *p, char **w, size_t nw)
{
	uint64_t v;

	if (config_number_arg(p, "log-keep", w[1], 0, 100, &v) == 0)
		p->c->log_keep = (unsigned)v;
}

static void d_log_row_rate(struct parser *p, char **w, size_t nw)
{
	uint64_t v;

	if (config_number_arg(p, "log-row-rate", w[1], 0, LOG_ROW_MAX, &v) == 0)
		p->c->log_row_rate = (unsigned)v;
}

static void d_log_row_burst(struct parser *p, char **w, size_t nw)
{
	uint64_t v;

	if (config_number_arg(p, "log-row-burst", w[1], 1, LOG_ROW_MAX, &v) == 0)
		p->c->log_row_burst = (unsigned)v;
}

/* Seconds in 0..86400 (0: none) into *ms_out. */
static void seconds_or_none(struct parser *p, const char *dir, const char *s, unsigned *ms_out)
{
	uint64_t v;

	if (config_number_arg(p, dir, s, 0, 86400, &v) == 0)
		*ms_out = (unsigned)v * 1000;
}

static void d_log_open_after(struct parser *p, char **w, size_t nw)
{
	seconds_or_none(p, "log-open-after", w[1], &p->c->log_open_after_ms);
}

static void d_log_progress(struct parser *p, char **w, size_t nw)
{
	seconds_or_none(p, "log-progress", w[1], &p->c->log_progress_ms);
}

static void d_log_chain(struct parser *p, char **w, size_t nw)
{
	if (strcmp(w[1], "on") == 0)
		p->c->log_chain = true;
	else if (strcmp(w[1], "off") == 0)
		p->c->log_chain = false;
	else
		perr(p, "log-chain: expected on or off, got \"%s\"", w[1]);
}

static void d_doctor_on_start(struct parser *p, char **w, size_t nw)
{
	if (strcmp(w[1], "on") == 0)
		p->c->doctor_on_start = true;
	else if (strcmp(w[1], "off") == 0)
		p->c->doctor_on_start = false;
	else
		perr(p, "doctor-on-start: expected on or off, got \"%s\"", w[1]);
}

/*
 * A user name as useradd takes one: a letter or '_' first, then letters,
 * digits, '_', '-' or '.', at most CONFIG_USER_MAX bytes. Whether the user
 * exists is the proxy's question, at start.
 */
static void d_user(struct parser *p, char **w, size_t nw)
{
	const char *s = w[1];
	size_t len = strlen(s);

	if (len > CONFIG_USER_MAX) {
		perr(p, "user: name longer than %d bytes", CONFIG_USER_MAX);
		return;
	}
	for (size_t i = 0; i < len; i++) {
		char ch = s[i];
		bool alpha = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_';

		if (!alpha && (i == 0 || !((ch >= '0' && ch <= '9') || ch == '-' || ch == '.'))) {
			perr(p, "user: bad name \"%s\": a letter or '_' first, then letters, digits, "
				"'_', '-' or '.'", s);
			return;
		}
	}
	if (strcmp(s, "root") == 0) {
		perr(p, "user: root is what the proxy drops; name an unprivileged user");
		return;
	}
	memcpy(p->c->user, s, len + 1);
}

static void d_max_body_bytes(struct parser *p, char **w, size_t nw)
{
	uint64_t v;

	if (config_number_arg(p, "max-body-bytes", w[1], 0, (uint64_t)1 << 50, &v) == 0)
		p->c->max_body_bytes = v;
}

static void d_max_connections(struct parser *p, char **w, size_t nw)
{
	uint64_t v;

	if (config_number_arg(p, "max-connections", w[1], 1, 1000000, &v) == 0)
		p->c->max_conns = (unsigned)v;
}

static void d_max_connections_per_client(struct parser *p, char **w, size_t nw)
{
	uint64_t v;

	if (config_number_arg(p, "max-connections-per-client", w[1], 1, 1000000, &v) == 0)
		p->c->max_conns_per_client = (unsigned)v;
}

unsigned config_per_client(const struct config *c)
{
	unsigned n = c->max_conns_per_client ? c->max_conns_per_client : c->max_conns / 16;

	return n > 0 ? n : 1;
}

/* Seconds in 1..86400 into *ms_out. */
static void timeout_arg(struct parser *p, const char *dir, const char *s, unsigned *ms_out)
{
	uint64_t v;

	if (config_number_arg(p, dir, s, 1, 86400, &v) == 0)
		*ms_out = (unsigned)v * 1000;
}

static void d_head_timeout(struct parser *p, char **w, size_t nw)
{
	timeout_arg(p, "head-timeout", w[1], &p->c->head_timeout_ms);
}

static void d_connect_timeout(struct parser *p, char **w, size_t nw)
{
	timeout_arg(p, "connect-timeout", w[1], &p->c->connect_timeout_ms);
}

static void d_response_timeout(struct parser *p, char **w, size_t nw)
{
	timeout_arg(p, "response-timeout", w[1], &p->c->response_timeout_ms);
}

static void d_idle_timeout(struct parser *p, char **w, size_t nw)
{
	timeout_arg(p, "idle-timeout", w[1], &p->c->idle_timeout_ms);
}

static void d_token_min_interval(struct parser *p, char **w, size_t nw)
{
	timeout_arg(p, "token-min-interval", w[1], &p->c->token_min_interval_ms);
}

static const struct directive directives[] = {
	{ "listen", 1, false, true, d_listen },
	{ "allow", 1, true, true, config_allow },
	{ "allow-private", 2, false, true, config_allow_private },
	{ "mode", 1, false, false, d_mode },
	{ "state", 1, false, false, d_state },
	{ "log", 1, false, false, d_log },
	{ "log-rotate-bytes", 1, false, false, d_log_rotate_bytes },
	{ "log-keep", 1, false, false, d_log_keep },
	{ "log-chain", 1, false, false, d_log_chain },
	{ "log-row-rate", 1, false, false, d_log_row_rate },
	{ "log-row-burst", 1, false, false, d_log_row_burst },
	{ "log-open-after", 1, false, false, d_log_open_after },
	{ "log-progress", 1, false, false, d_log_progress },
	{ "user", 1, false, false, d_user },
	{ "doctor-on-start", 1, false, false, d_doctor_on_start },
	{ "max-connections", 1, false, false, d_max_connections },
	{ "max-connections-per-client", 1, false, false, d_max_connections_per_client },
	{ "max-body-bytes", 1, false, false, d_max_body_bytes },
	{ "head-timeout", 1, false, false, d_head_timeout },
	{ "connect-timeout", 1, false, false, d_connect_timeout },
	{ "response-timeout", 1, false, false, d_response_timeout },
	{ "idle-timeout", 1, false, false, d_idle_timeout },
	{ "token-min-interval", 1, false, false, d_token_min_interval },
	{ "nameserver", 1, false, true, d_nameserver },
	{ "intercept", 1, false, false, config_tls_intercept },
	{ "refuse-page", 1, false, false, config_tls_refuse_page },
	{ "passthrough", 1, false, true, config_tls_passthrough },
	{ "upstream-ca", 2, false, true, config_tls_upstream_ca },
	{ "body-limit", 2, false, true, config_tls_body_limit },
	{ "inject", 2, true, true, config_tls_inject },
	{ "metrics-listen", 1, false, false, config_metrics_listen },
	{ "dns-listen", 1, false, true, config_dns_listen },
	{ "dns-upstream", 1, true, true, config_dns_upstream },
	{ "dns-timeout", 1, false, false, config_dns_timeout },
	{ "dns-min-ttl", 1, false, false, config_dns_min_ttl },
	{ "dns-max-ttl", 1, false, false, config_dns_max_ttl },
	{ "dns-negative-ttl", 1, false, false, config_dns_negative_ttl },
	{ "dns-cache-entries", 1, false, false, config_dns_cache_entries },
	{ "dns-allow-type", 2, false, true, config_dns_allow_type },
	{ "dns-wildcard-budget", 2, false, false, config_dns_wildcard_budget },
	{ "dns-log", 1, false, false, config_dns_log },
	{ "dns-metrics-listen", 1, false, false, config_dns_metrics_listen },
	{ "about", 1, true, false, config_agent_about },
	{ "sandbox-env", 1, false, true, config_agent_sandbox_env },
	{ "quiet", 1, true, true, config_agent_quiet },
};

/* Whether the directive named may stand in a file of kind k. */
static bool directive_fits(const char *name, enum config_kind k)
{
	bool common = strcmp(name, "allow") == 0 || strcmp(name, "inject") == 0;
	bool own = strcmp(name, "about") == 0 || strcmp(name, "sandbox-env") == 0 ||
		   strcmp(name, "quiet") == 0;

	switch (k) {
	case CONFIG_MAIN:
		return !own;
	case CONFIG_HANDOVER:
		return common || strcmp(name, "quiet") == 0;
	case CONFIG_PROFILE:
		return common || own;
	}
	return false;
}

#define NDIRECTIVES (sizeof(directives) / sizeof(directives[0]))

static bool is_blank(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\v' || ch == '\f';
}

/*
 * The quoted part of a word, s[*i] being the opening quote: copied
 * unescaped to out[*o...]. Returns 0, or -1 after an error.
 */
static int quoted_value(struct parser *p, const char *s, size_t len, size_t *i, char *out,
			size_t *o)
{
	for ((*i)++; *i < len; (*i)++) {
		unsigned char ch = (unsigned char)s[*i];

		if (ch == '"') {
			(*i)++;
			if (*i < len && !is_blank(s[*i]) && s[*i] != '#') {
				perr(p, "text after a closing quote");
				return -1;
			}
			return 0;
		}
		if (ch == '\\') {
			if (*i + 1 < len && (s[*i + 1] == '"' || s[*i + 1] == '\\')) {
				out[(*o)++] = s[++(*i)];
				continue;
			}
			if (*i + 1 < len && !(*i + 2 == len && s[*i + 1] == '\r')) {
				perr(p, "bad escape in quotes: only \\\" and \\\\");
				return -1;
			}
			break;
		}
		if (ch == '\r' && *i + 1 == len)
			break;
		if (ch < 0x20 || ch == 0x7f) {
			perr(p, "control character 0x%02x in quotes", ch);
			return -1;
		}
		out[(*o)++] = (char)ch;
	}
	perr(p, "unterminated quote");
	return -1;
}

/*
 * Split s[0..len) into NUL-terminated words in line (CONFIG_LINE_MAX + 1),
 * up to MAX_WORDS pointers in w; '#' outside quotes ends the line. A word
 * whose first '=' is followed by '"' is quoted from there (*quoted set).
 * Returns the number of words (may exceed MAX_WORDS), or -1 after an error.
 */
static long split_words(struct parser *p, const char *s, size_t len, char *line, char **w,
			bool *quoted)
{
	size_t i = 0, o = 0;
	long nwords = 0;

	*quoted = false;
	while (i < len) {
		size_t eq = SIZE_MAX; /* where the word's first '=' went in line */

		if (is_blank(s[i])) {
			i++;
			continue;
		}
		if (s[i] == '#')
			break;
		if (nwords < MAX_WORDS)
			w[nwords] = &line[o];
		nwords++;
		while (i < len && !is_blank(s[i]) && s[i] != '#') {
			unsigned char ch = (unsigned char)s[i];

			if (ch < 0x20 || ch == 0x7f) {
				perr(p, "control character 0x%02x in line", ch);
				return -1;
			}
			if (ch == '"' && eq != SIZE_MAX && o == eq + 1) {
				*quoted = true;
				if (quoted_value(p, s, len, &i, line, &o) == -1)
					return -1;
				break;
			}
			if (ch == '=' && eq == SIZE_MAX)
				eq = o;
			line[o++] = (char)ch;
			i++;
		}
		line[o++] = '\0';
	}
	return nwords;
}

/* One line, without its '\n'. */
static void parse_line(struct parser *p, const char *s, size_t len)
{
	char line[CONFIG_LINE_MAX + 1];
	char *w[MAX_WORDS];
	size_t nw;
	long nwords;
	bool quoted;

	if (len > CONFIG_LINE_MAX) {
		perr(p, "line too long (over %d bytes)", CONFIG_LINE_MAX);
		return;
	}
	if (memchr(s, '\0', len) != NULL) {
		perr(p, "nul byte in line");
		return;
	}
	nwords = split_words(p, s, len, line, w, &quoted);
	if (nwords <= 0)
		return;
	nw = nwords < MAX_WORDS ? (size_t)nwords : MAX_WORDS;

	for (size_t d = 0; d < NDIRECTIVES; d++) {
		const struct directive *dir = &directives[d];
		size_t nargs = (size_t)nwords - 1;

		if (strcmp(w[0], dir->name) != 0)
			continue;
		if (!directive_fits(dir->name, p->kind)) {
			perr(p, "%s: %s", dir->name, p->kind == CONFIG_MAIN ? "only in an agent profile (etc/agents/NAME.conf)" :
			     p->kind == CONFIG_PROFILE ? "not in an agent profile (allow, inject, about, sandbox-env, quiet)" :
			     "not in the handed-over agents.conf (allow, inject and quiet only)");
			return;
		}
		if (dir->variadic && nargs < dir->nargs) {
			perr(p, "%s: expects at least %zu arguments, got %zu", dir->name, dir->nargs,
			     nargs);
			return;
		}
		if (dir->variadic && (size_t)nwords > MAX_WORDS) {
			perr(p, "%s: more than %d words", dir->name, MAX_WORDS);
			return;
		}
		if (!dir->variadic && nargs != dir->nargs) {
			perr(p, "%s: expects %zu argument%s, got %zu", dir->name, dir->nargs,
			     dir->nargs == 1 ? "" : "s", nargs);
			return;
		}
		if (!dir->variadic && quoted) {
			perr(p, "%s: quoted values are only for inject", dir->name);
			return;
		}
		if (!dir->repeatable && p->first_seen[d] != 0) {
			perr(p, "%s: given twice (first on line %zu)", dir->name, p->first_seen[d]);
			return;
		}
		if (p->first_seen[d] == 0)
			p->first_seen[d] = p->line;
		dir->fn(p, w, nw);
		return;
	}
	perr(p, "unknown directive \"%s\"", w[0]);
}

struct config *config_new(void)
{
	struct config *c = calloc(1, sizeof(*c));

	if (c == NULL)
		return NULL;
	sockaddr_parse(DEFAULT_LISTEN, 0, 0, &c->listen[0]);
	c->nlisten = 1;
	c->mode = MODE_ENFORCE;
	snprintf(c->state_dir, sizeof(c->state_dir), "%s", DEFAULT_STATE);
	snprintf(c->log_path, sizeof(c->log_path), "%s/%s", DEFAULT_STATE, LOG_DEFAULT_NAME);
	c->log_rotate_bytes = DEFAULT_ROTATE_BYTES;
	c->log_keep = DEFAULT_LOG_KEEP;
	c->log_row_rate = DEFAULT_LOG_ROW_RATE;
	c->log_row_burst = DEFAULT_LOG_ROW_BURST;
	c->log_open_after_ms = 5 * 1000;
	c->log_progress_ms = 60 * 1000;
	c->max_conns = DEFAULT_MAX_CONNS;
	c->head_timeout_ms = 10 * 1000;
	c->connect_timeout_ms = 10 * 1000;
	c->response_timeout_ms = 60 * 1000;
	c->idle_timeout_ms = 300 * 1000;
	c->token_min_interval_ms = 10 * 1000;
	c->intercept = true;
	c->refuse_page = true;
	config_dns_defaults(c);
	return c;
}

void config_free(struct config *c)
{
	if (c == NULL)
		return;
	free(c->grants);
	c->grants = NULL;
	free(c->exceptions);
	c->exceptions = NULL;
	free(c->passthrough);
	c->passthrough = NULL;
	free(c->upstream_cas);
	c->upstream_cas = NULL;
	free(c->body_limits);
	c->body_limits = NULL;
	free(c->rules);
	c->rules = NULL;
	free(c->dns_types);
	c->dns_types = NULL;
	free(c->agent_env);
	free(c->agent_quiet);
	free(c);
}

static size_t directive_index(const char *name)
{
	for (size_t d = 0; d < NDIRECTIVES; d++)
		if (strcmp(directives[d].name, name) == 0)
			return d;
	return 0;
}

static int parse_kind(struct config *c, const char *buf, size_t len, const char *file, FILE *errs,
		      enum config_kind kind)
{
	struct parser p;
	size_t off = 0;

	_Static_assert(NDIRECTIVES <= sizeof(p.first_seen) / sizeof(p.first_seen[0]),
		       "first_seen too small");
	memset(&p, 0, sizeof(p));
	p.c = c;
	p.kind = kind;
	p.file = file != NULL ? file : "config";
	p.errs = errs;

	while (off < len) {
		const char *nl = memchr(buf + off, '\n', len - off);
		size_t end = nl != NULL ? (size_t)(nl - buf) : len;

		p.line++;
		parse_line(&p, buf + off, end - off);
		off = end + 1;
	}
	if (kind == CONFIG_PROFILE)
		config_agent_finish(&p);
	if (kind != CONFIG_MAIN)
		return p.nerr;

	if (p.first_seen[directive_index("log")] == 0) {
		int n = snprintf(c->log_path, sizeof(c->log_path), "%s/%s", c->state_dir,
				 LOG_DEFAULT_NAME);

		if (n < 0 || (size_t)n >= sizeof(c->log_path)) {
			p.line = p.state_line;
			perr(&p, "state: path too long for the default log %s/%s", c->state_dir,
			     LOG_DEFAULT_NAME);
		}
	}
	config_dns_finish(&p, p.first_seen[directive_index("dns-log")] != 0, p.state_line);
	return p.nerr;
}

int config_parse(struct config *c, const char *buf, size_t len, const char *file, FILE *errs)
{
	return parse_kind(c, buf, len, file, errs, CONFIG_MAIN);
}

/* strerror(e) with a lower-case first letter, as every diagnostic here reads. */
static void put_strerror(FILE *f, int e)
{
	const char *s = strerror(e);

	fputc(tolower((unsigned char)s[0]), f);
	fputs(s + 1, f);
	fputc('\n', f);
}

/* Read path and parse it as kind. missing_ok: a file that is not there is an empty one. */
static int load_kind(struct config *c, const char *path, FILE *errs, enum config_kind kind,
		     bool missing_ok)
{
	char *buf;
	size_t len = 0;
	int fd, ret = 1;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd == -1 && missing_ok && errno == ENOENT)
		return 0;
	if (fd == -1) {
		if (errs != NULL) {
			int e = errno;

			fprintf(errs, "%s: open: ", path);
			put_strerror(errs, e);
		}
		return 1;
	}
	buf = malloc(CONFIG_MAX_FILE + 1);
	if (buf == NULL) {
		if (errs != NULL)
			fprintf(errs, "%s: out of memory\n", path);
		goto out_close_fd;
	}
	for (;;) {
		ssize_t r = read(fd, buf + len, CONFIG_MAX_FILE + 1 - len);

		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1) {
			if (errs != NULL) {
				int e = errno;

				fprintf(errs, "%s: read: ", path);
				put_strerror(errs, e);
			}
			goto out_free_buf;
		}
		if (r == 0)
			break;
		len += (size_t)r;
		if (len > CONFIG_MAX_FILE) {
			if (errs != NULL)
				fprintf(errs, "%s: too large (over %d bytes)\n", path,
					CONFIG_MAX_FILE);
			goto out_free_buf;
		}
	}
	ret = parse_kind(c, buf, len, path, errs, kind);
out_free_buf:
	free(buf);
out_close_fd:
	close(fd);
	return ret;
}

int config_load(struct config *c, const char *path, FILE *errs)
{
	char handover[PATH_MAX + sizeof(CONFIG_HANDOVER_FILE) + 1];
	int ret = load_kind(c, path, errs, CONFIG_MAIN, false);

	if (ret != 0)
		return ret;
	snprintf(handover, sizeof(handover), "%s/%s", c->state_dir, CONFIG_HANDOVER_FILE);
	return load_kind(c, handover, errs, CONFIG_HANDOVER, true);
}

int config_profile_load(struct config *c, const char *path, FILE *errs)
{
	return load_kind(c, path, errs, CONFIG_PROFILE, false);
}

void config_print(const struct config *c, FILE *out)
{
	char buf[HOST_NAME_MAX_LEN + 64];

	for (size_t i = 0; i < c->nlisten; i++)
		fprintf(out, "listen %s\n", sockaddr_format(&c->listen[i], buf, sizeof(buf)));
	fprintf(out, "mode %s\n", c->mode == MODE_OBSERVE ? "observe" : "enforce");
	fprintf(out, "state %s\n", c->state_dir);
	fprintf(out, "log %s\n", c->log_path);
	fprintf(out, "log-rotate-bytes %llu\n", (unsigned long long)c->log_rotate_bytes);
	fprintf(out, "log-keep %u\n", c->log_keep);
	fprintf(out, "log-chain %s\n", c->log_chain ? "on" : "off");
	if (c->user[0] != '\0')
		fprintf(out, "user %s\n", c->user);
	fprintf(out, "log-row-rate %u\n", c->log_row_rate);
	fprintf(out, "log-row-burst %u\n", c->log_row_burst);
	fprintf(out, "log-open-after %u\n", c->log_open_after_ms / 1000);
	fprintf(out, "log-progress %u\n", c->log_progress_ms / 1000);
	fprintf(out, "doctor-on-start %s\n", c->doctor_on_start ? "on" : "off");
	fprintf(out, "max-connections %u\n", c->max_conns);
	fprintf(out, "max-connections-per-client %u\n", config_per_client(c));
	fprintf(out, "max-body-bytes %llu\n", (unsigned long long)c->max_body_bytes);
	fprintf(out, "head-timeout %u\n", c->head_timeout_ms / 1000);
	fprintf(out, "connect-timeout %u\n", c->connect_timeout_ms / 1000);
	fprintf(out, "response-timeout %u\n", c->response_timeout_ms / 1000);
	fprintf(out, "idle-timeout %u\n", c->idle_timeout_ms / 1000);
	fprintf(out, "token-min-interval %u\n", c->token_min_interval_ms / 1000);
	config_allow_print(c, out);
	if (c->nnameservers == 0)
		fprintf(out, "# nameserver: none given, /etc/resolv.conf is used\n");
	for (size_t i = 0; i < c->nnameservers; i++)
		fprintf(out, "nameserver %s\n",
			sockaddr_format(&c->nameservers[i], buf, sizeof(buf)));
	config_tls_print(c, out);
	config_metrics_print(c, false, out);
	config_dns_print(c, out);
	config_metrics_print(c, true, out);
}

bool config_passthrough(const struct config *c, const char *host)
{
	for (size_t i = 0; i < c->npassthrough; i++) {
		const struct config_pattern *pt = &c->passthrough[i];

		if (!pt->wildcard && strcmp(pt->host, host) == 0)
			return true;
		/* as a wildcard grant (names only: an IP has no dot-suffix) */
		if (pt->wildcard && strchr(host, ':') == NULL && grant_wildcard_covers(pt->host, host))
			return true;
	}
	return false;
}

const char *config_upstream_ca(const struct config *c, const char *host)
{
	for (size_t i = 0; i < c->nupstream_cas; i++)
		if (strcmp(c->upstream_cas[i].host, host) == 0)
			return c->upstream_cas[i].file;
	return NULL;
}

uint64_t config_body_limit(const struct config *c, const char *host)
{
	uint64_t cap = c->max_body_bytes;

	for (size_t i = 0; i < c->nbody_limits; i++)
		if (strcmp(c->body_limits[i].host, host) == 0 &&
		    (cap == 0 || c->body_limits[i].bytes < cap))
			cap = c->body_limits[i].bytes;
	return cap;
}
