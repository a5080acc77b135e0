/*
 * allow_grant.c: a grant, from the words that name it to the store: a
 * GRANT argument, --level, --ttl and durations parsed; a grant stored at
 * its level (allow_grant, as `sluice allow add`, `allow approve`, `allow
 * learn` and `sluice watch` store one) and what was done said; a run's
 * session grants (`sluice run --allow`) added and taken back.
 *
 * It edits the store only through allow_store.c, and calls nothing of the
 * verbs above it (allow.c, allow_approve.c, allow_learn.c).
 */
#include <errno.h>
#include <libpsl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "digits.h"
#include "store.h"

#define RUN_NAME "proxy.run"
#define ONCE_TTL_MAX (366 * 86400)

char *allow_duration_format(long long secs, char *buf, size_t size)
{
	if (secs < 60)
		snprintf(buf, size, "%llds", secs);
	else if (secs < 3600)
		snprintf(buf, size, "%lldm%llds", secs / 60, secs % 60);
	else if (secs < 86400)
		snprintf(buf, size, "%lldh%lldm", secs / 3600, secs % 3600 / 60);
	else
		snprintf(buf, size, "%lldd%lldh", secs / 86400, secs % 86400 / 3600);
	return buf;
}

int allow_duration_parse(const char *s, long long *out)
{
	const char *end = s + strspn(s, "0123456789");
	long long v, mul = 1;
	uint64_t n;

	if (dec_parse(s, (size_t)(end - s), LLONG_MAX, &n) == -1)
		return -1;
	v = (long long)n;
	if (*end != '\0') {
		if (end[1] != '\0')
			return -1;
		switch (*end) {
		case 's': mul = 1; break;
		case 'm': mul = 60; break;
		case 'h': mul = 3600; break;
		case 'd': mul = 86400; break;
		default: return -1;
		}
	}
	if (v < 1 || v > ONCE_TTL_MAX / mul)
		return -1;
	*out = v * mul;
	return 0;
}

int allow_usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "allow: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	cli_usage(stderr, "allow");
	return EXIT_USAGE;
}

/*
 * The text public suffix list beside the one libpsl loads (Debian:
 * public_suffix_list.dat next to the .dafsa) into buf. Returns 0, or -1
 * when there is none to name.
 */
static int suffix_text_path(char *buf, size_t size)
{
	const char *dist = psl_dist_filename();
	const char *slash = dist != NULL ? strrchr(dist, '/') : NULL;
	int n;

	if (slash == NULL)
		return -1;
	n = snprintf(buf, size, "%.*s/public_suffix_list.dat", (int)(slash - dist), dist);
	return n < 0 || (size_t)n >= size ? -1 : 0;
}

/*
 * A wildcard *.S never covers a name under a public suffix below S (grant.h):
 * say so when the list names some (a cloud's tenants), with two of them.
 * Silent when the text list is not at hand; this note is advice, the
 * proxy's rule holds regardless.
 */
static void suffix_note(const struct grant *g)
{
	char path[4096], line[512], first[2][HOST_NAME_MAX_LEN + 1];
	size_t sl = strlen(g->host), n = 0;
	FILE *f;

	if (!g->wildcard || suffix_text_path(path, sizeof(path)) == -1)
		return;
	f = fopen(path, "re");
	if (f == NULL)
		return;
	while (fgets(line, sizeof(line), f) != NULL) {
		char *e = line + strcspn(line, " \t\r\n"), *p = line;
		size_t len;

		*e = '\0';
		/* comments, blank lines, and exceptions ("!x.y": not a suffix) */
		if (p[0] == '/' || p[0] == '\0' || p[0] == '!')
			continue;
		if (p[0] == '*' && p[1] == '.')
			p += 2; /* "*.x.S": every name under x.S is a suffix */
		len = strlen(p);
		if (len > sl + 1 && p[len - sl - 1] == '.' && strcasecmp(p + len - sl, g->host) == 0) {
			if (n < 2 && strlen(line) < sizeof(first[n]))
				memcpy(first[n], line, strlen(line) + 1);
			n++;
		}
	}
	fclose(f);
	if (n > 0)
		fprintf(stderr,
			"allow: note: *.%s does not cover names under the %zu public suffix%s listed "
			"below it (%s%s%s); grant such a host exactly\n",
			g->host, n, n == 1 ? "" : "es", first[0], n > 1 ? ", " : "", n > 1 ? first[1] : "");
}

int allow_pattern(const char *s, struct grant *g)
{
	const char *err = "bad grant";

	if (grant_parse(s, strlen(s), g, &err) == -1) {
		fprintf(stderr, "allow: bad grant \"%s\": %s\n", s, err);
		return -1;
	}
	return 0;
}

char *allow_grant_label(const struct grant *g, char *buf, size_t size)
{
	char pat[ALLOW_PATTERN_MAX];

	snprintf(buf, size, "%s%s", grant_format(g, pat, sizeof(pat)), g->tunnel ? " tunnel" : "");
	return buf;
}

char *allow_grant_scopes_text(const struct grant *g, char *buf, size_t size)
{
	char list[GRANT_SCOPES_TEXT];

	if (g->nscopes == 0)
		snprintf(buf, size, "%s", "");
	else
		snprintf(buf, size, " for %s", grant_scopes_format(g, list, sizeof(list)));
	return buf;
}

char *allow_grant_budget_text(const struct grant *g, char *buf, size_t size)
{
	char words[96], dur[32];
	char *per;

	if (!grant_budgeted(g)) {
		snprintf(buf, size, "-");
		return buf;
	}
	grant_budget_format(g, words, sizeof(words));
	per = strstr(words, " per=");
	if (per != NULL)
		*per = '\0';
	snprintf(buf, size, "%s%s%s", words, per != NULL ? " per=" : "",
		 per != NULL ? allow_duration_format(g->per, dur, sizeof(dur)) : "");
	return buf;
}

int allow_level_parse(const char *s, enum grant_level *level)
{
	if (strcmp(s, "once") == 0)
		*level = GRANT_ONCE;
	else if (strcmp(s, "session") == 0)
		*level = GRANT_SESSION;
	else if (strcmp(s, "permanent") == 0)
		*level = GRANT_PERMANENT;
	else
		return -1;
	return 0;
}

int allow_ttl_parse(const char *s, enum grant_level level, long long *ttl)
{
	if (level != GRANT_ONCE)
		return allow_usage_error("--ttl applies only to --level once");
	if (allow_duration_parse(s, ttl) == -1)
		return allow_usage_error(
			"bad ttl \"%s\": expected 1 to 31622400 seconds (or Nm, Nh, Nd)", s);
	return 0;
}

/* The session grant's run id: the running proxy's. Returns 0 or -1 after printing why not. */
static int session_run(const struct config *c, struct grant *g)
{
	if (store_run_id(c->state_dir, g->run) == 0)
		return 0;
	if (errno == ENOENT)
		fprintf(stderr,
			"allow: no running sluice-proxy (%s/%s missing); a session grant lasts only while it runs\n",
			c->state_dir, RUN_NAME);
	else if (errno == ESRCH)
		fprintf(stderr,
			"allow: no running sluice-proxy (%s/%s is left from one that stopped); a session grant lasts only while it runs\n",
			c->state_dir, RUN_NAME);
	else if (errno == EINVAL)
		fprintf(stderr, "allow: %s/%s: not a run id (16 lowercase hex digits and a newline)\n",
			c->state_dir, RUN_NAME);
	else
		fprintf(stderr, "allow: read %s/%s: %s\n", c->state_dir, RUN_NAME, strerror(errno));
	return -1;
}

int allow_grant(FILE *out, const struct config *c, struct grant *g, enum grant_level level,
		long long ttl)
{
	struct allow_store s;
	char pat[ALLOW_PATTERN_MAX], dur[128], who[GRANT_SCOPES_TEXT + 8];
	size_t replaced;
	time_t now = time(NULL);
	int lockfd, ret = -1;

	g->level = level;
	g->added = now;
	if (level == GRANT_ONCE) {
		struct timespec ts;

		/* expiry is kept in whole seconds: round up, so a grant never lasts less than its ttl */
		clock_gettime(CLOCK_REALTIME, &ts);
		g->expires = ts.tv_sec + (ts.tv_nsec > 0 ? 1 : 0) + (time_t)ttl;
	}
	if (level == GRANT_SESSION && session_run(c, g) == -1)
		return -1;
	lockfd = allow_store_lock(c);
	if (lockfd == -1)
		return -1;
	if (allow_store_load(c, &s) == -1)
		goto out_unlock;
	allow_store_prune(&s, g, now, &replaced);
	if (allow_store_append(&s, g) == -1 || allow_store_save(c, &s) == -1)
		goto out_free;
	allow_grant_label(g, pat, sizeof(pat));
	allow_grant_scopes_text(g, who, sizeof(who));
	if (level == GRANT_ONCE)
		fprintf(out, "%s %s%s once, expires in %s\n", replaced ? "replaced" : "added", pat,
			who, allow_duration_format(ttl, dur, sizeof(dur)));
	else if (level == GRANT_SESSION)
		fprintf(out, "%s %s%s session, until sluice-proxy run %s stops\n",
			replaced ? "replaced" : "added", pat, who, g->run);
	else
		fprintf(out, "%s %s%s permanent\n", replaced ? "replaced" : "added", pat, who);
	if (grant_budgeted(g))
		fprintf(out, "budget for each principal: %s%s\n", allow_grant_budget_text(g, dur, sizeof(dur)),
			g->per > 0 ? "" : " over the grant's life (until the proxy restarts)");
	suffix_note(g);
	ret = 0;
out_free:
	free(s.g);
out_unlock:
	close(lockfd);
	return ret;
}

/*
 * A run's grant (`sluice run --allow`): pattern at level session for the
 * proxy run `run`, added only when no live grant of that pattern is stored
 * or in the config (an operator's grant is never replaced, so taking the
 * run's away later cannot take theirs). Returns 1 added, 0 already granted,
 * -1 after printing why.
 */
int allow_session_add(const struct config *c, const char *pattern, const char *run)
{
	struct allow_store s;
	struct grant g;
	time_t now = time(NULL);
	int lockfd, ret = -1;

	if (allow_pattern(pattern, &g) == -1)
		return -1;
	for (size_t i = 0; i < c->ngrants; i++)
		if (grant_same(&c->grants[i], &g))
			return 0;
	lockfd = allow_store_lock(c);
	if (lockfd == -1)
		return -1;
	if (allow_store_load(c, &s) == -1)
		goto out_unlock;
	allow_store_prune(&s, NULL, now, NULL);
	ret = 0;
	for (size_t i = 0; i < s.n; i++)
		if (grant_same(&s.g[i], &g) && grant_live(&s.g[i], now, run))
			goto out_free;
	ret = -1;
	allow_store_prune(&s, &g, now, NULL); /* a dead grant of that pattern (a stopped run's) */
	g.level = GRANT_SESSION;
	g.added = now;
	snprintf(g.run, sizeof(g.run), "%s", run);
	if (allow_store_append(&s, &g) == -1)
		goto out_free;
	if (allow_store_save(c, &s) == 0)
		ret = 1;
out_free:
	free(s.g);
out_unlock:
	close(lockfd);
	return ret;
}

/* Take back what allow_session_add added: the session grant of pattern for run, if still there. */
int allow_session_drop(const struct config *c, const char *pattern, const char *run)
{
	struct allow_store s;
	struct grant g;
	size_t j = 0;
	int lockfd, ret = -1;

	if (allow_pattern(pattern, &g) == -1)
		return -1;
	lockfd = allow_store_lock(c);
	if (lockfd == -1)
		return -1;
	if (allow_store_load(c, &s) == -1)
		goto out_unlock;
	for (size_t i = 0; i < s.n; i++)
		if (!(grant_same(&s.g[i], &g) && s.g[i].level == GRANT_SESSION &&
		      strcmp(s.g[i].run, run) == 0))
			s.g[j++] = s.g[i];
	if (j == s.n) {
		ret = 0;
	} else {
		s.n = j;
		ret = allow_store_save(c, &s);
	}
	free(s.g);
out_unlock:
	close(lockfd);
	return ret;
}

