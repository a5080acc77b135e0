/*
 * allow_approve.c: `sluice allow approve ID`: grant what a refusal asked for.
 *
 * sluice-proxy gives each not-granted refusal an id (16 hex digits, 64
 * random bits; rows written before that carry 12, still found), in its
 * row's "refusal", its Proxy-Status details and its body's hint. approve
 * finds that row in the network log (the current file, then the rotated
 * ones, newest first, opened as `sluice log` opens them), and grants
 * exactly its host and port, the way the refusal's hint names them (bare
 * for CONNECT to 443 and plain HTTP to 80), scoped to the principal that
 * asked: the stamp's as= when it has one (a `sluice run`'s project:NAME
 * [/AGENT]: its runs, those to come, whether the one refused has ended or
 * not, which is said), else its ADDR@NET; a refusal
 * without a stamp gets a grant for every connection, and says so. Once
 * for 15 minutes unless --level and --ttl say otherwise. A refusal more
 * than a day old is not approved: the operator grants it by hand. On a
 * terminal it shows the host, port, scope and level and grants only on y;
 * without one it grants only with --yes (a script says so), else refuses,
 * exit 2, granting nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "file.h"

#define APPROVE_TTL_DEFAULT (15 * 60)
#define APPROVE_MAX_AGE_MS (24LL * 3600 * 1000)
#define REFUSAL_ID_LEN 16              /* proxy.h's */
#define REFUSAL_ID_OLD_LEN 12          /* before ids were random: still in old rows */

static int usage(const char *msg, const char *arg)
{
	fprintf(stderr, "allow: %s%s%s\n", msg, arg != NULL ? " " : "", arg != NULL ? arg : "");
	cli_usage(stderr, "allow");
	return EXIT_USAGE;
}

static bool id_valid(const char *s)
{
	if (strlen(s) != REFUSAL_ID_LEN && strlen(s) != REFUSAL_ID_OLD_LEN)
		return false;
	for (; *s != '\0'; s++)
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
			return false;
	return true;
}

/*
 * The row of refusal id, parsed, from the log and its rotated files; NULL
 * after printing why (not found, unreadable).
 */
static json_t *refusal_row(const struct config *c, const char *id)
{
	char needle[64], path[PATH_MAX + 16];
	json_t *row = NULL;

	snprintf(needle, sizeof(needle), "\"refusal\":\"%s\"", id);
	for (unsigned k = 0; k <= c->log_keep && row == NULL; k++) {
		char *buf, *hit;
		size_t len;
		int r;

		r = allow_log_read(c, k, &buf, &len);
		if (r == -1)
			return NULL;
		allow_log_path(c, k, path, sizeof(path));
		if (r == 0)
			continue;
		hit = memmem(buf, len, needle, strlen(needle));
		if (hit != NULL) {
			char *start = hit, *end = memchr(hit, '\n', len - (size_t)(hit - buf));

			while (start > buf && start[-1] != '\n')
				start--;
			row = json_loadb(start, (size_t)((end != NULL ? end : buf + len) - start), 0, NULL);
			if (row == NULL || !json_is_object(row))
				fprintf(stderr, "allow: %s: the row of refusal %s does not parse\n", path, id);
		}
		free(buf);
		if (hit != NULL && (row == NULL || !json_is_object(row))) {
			json_decref(row);
			return NULL;
		}
	}
	if (row == NULL)
		fprintf(stderr,
			"allow: no refusal %s in %s or its %u rotated files (an id is 16 hex digits, "
			"from the refusal's body or `sluice log --json`)\n",
			id, c->log_path, c->log_keep);
	return row;
}

static const char *str_of(json_t *row, const char *key)
{
	return json_string_value(json_object_get(row, key));
}

int allow_row_grant(json_t *row, struct grant *g, char *who, size_t size, const char **why)
{
	const char *host = str_of(row, "host"), *kind = str_of(row, "kind");
	const char *as = log_row_as(row), *src = str_of(row, "src"), *net = str_of(row, "net");
	json_int_t port = json_integer_value(json_object_get(row, "port"));
	char pat[HOST_NAME_MAX_LEN + 16];
	bool connect, bare;

	if (host == NULL || kind == NULL || port < 1 || port > 65535) {
		*why = "it names no host and port to grant";
		return -1;
	}
	connect = strcmp(kind, "tunnel") == 0 || strcmp(kind, "https") == 0 ||
		  strcmp(kind, "wss") == 0;
	bare = (connect && port == 443) || (!connect && port == 80);
	host_port_format(pat, sizeof(pat), host, bare ? HOST_PORT_NONE : (unsigned)port);
	*why = "bad grant";
	if (grant_parse(pat, strlen(pat), g, why) == -1)
		return -1;
	who[0] = '\0';
	if (as != NULL && as[0] != '\0')
		snprintf(who, size, "%s", as);
	else if (src != NULL && net != NULL)
		snprintf(who, size, "%s@%s", src, net);
	return 0;
}

/*
 * The grant the row's refusal asks for into g, scoped to who asked (its
 * scope word into who, "" when the row has no stamp). Returns 0 or -1
 * after printing why.
 */
static int grant_of_row(json_t *row, const char *id, struct grant *g, char *who, size_t size)
{
	const char *err = "bad scope";

	if (allow_row_grant(row, g, who, size, &err) == -1) {
		fprintf(stderr, "allow: refusal %s: %s\n", id, err);
		return -1;
	}
	if (who[0] != '\0' && grant_scope_add(g, who, &err) == -1) {
		fprintf(stderr, "allow: refusal %s: its principal %s: %s\n", id, who, err);
		return -1;
	}
	return 0;
}

/*
 * A `sluice run`'s refusal (its row names the run in "sandbox" and the
 * project as its principal): say whether that run is still going, and
 * that the grant is the project's either way, for this run and the next.
 */
static void run_said(const struct config *c, json_t *row, const char *who)
{
	const char *id = str_of(row, "sandbox");
	char path[PATH_MAX + 64];
	struct stat st;

	if (id == NULL || strncmp(who, "project:", 8) != 0 || strchr(id, '/') != NULL)
		return;
	snprintf(path, sizeof(path), "%s/runs/%s", c->state_dir, id);
	if (stat(path, &st) == 0)
		printf("run %s is still going: the grant is for %s, this run and its next\n", id,
		       who);
	else
		printf("run %s has ended: the grant is for %s, its next runs\n", id, who);
}

/*
 * Show what approving grants (host, port, scope, level) and ask. Returns
 * true when the answer is y or yes; anything else, end of input included,
 * is no.
 */
static bool confirm(json_t *row, const struct grant *g, const char *who,
		    enum grant_level level, long long ttl)
{
	json_int_t port = json_integer_value(json_object_get(row, "port"));
	const char *kind = str_of(row, "kind");
	char pat[HOST_NAME_MAX_LEN + 16], dur[64], line[64];

	printf("  grant  %s\n", grant_format(g, pat, sizeof(pat)));
	printf("  host   %s\n", str_of(row, "host"));
	printf("  port   %lld (%s)\n", (long long)port, kind != NULL ? kind : "?");
	if (who[0] != '\0')
		printf("  scope  %s\n", who);
	else
		printf("  scope  every connection (the refusal had no stamp)\n");
	if (level == GRANT_ONCE)
		printf("  level  once, for %s\n", allow_duration_format(ttl, dur, sizeof(dur)));
	else if (level == GRANT_SESSION)
		printf("  level  session, until sluice-proxy stops\n");
	else
		printf("  level  permanent\n");
	printf("grant it? [y/N] ");
	fflush(stdout);
	if (fgets(line, sizeof(line), stdin) == NULL) {
		putchar('\n');
		return false;
	}
	line[strcspn(line, "\n")] = '\0';
	return strcmp(line, "y") == 0 || strcmp(line, "Y") == 0 || strcmp(line, "yes") == 0;
}

int allow_approve(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "level", required_argument, NULL, 'l' },
		{ "ttl", required_argument, NULL, 't' },
		{ "yes", no_argument, NULL, 'y' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	enum grant_level level = GRANT_ONCE;
	const char *ttl_arg = NULL, *id, *ts, *reason;
	long long ttl = APPROVE_TTL_DEFAULT;
	char who[SCOPE_TEXT_MAX + 1];
	struct config *c;
	struct grant g;
	json_t *row = NULL;
	int64_t t_ms;
	bool yes = false;
	int opt, ret = EXIT_ERROR;

	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'l':
			if (allow_level_parse(optarg, &level) == -1)
				return usage("bad level, expected once, session or permanent:", optarg);
			break;
		case 't':
			ttl_arg = optarg;
			break;
		case 'y':
			yes = true;
			break;
		case 'h':
			cli_usage(stdout, "allow");
			return EXIT_OK;
		default:
			cli_usage(stderr, "allow");
			return EXIT_USAGE;
		}
	}
	if (argc - optind != 1)
		return usage("approve takes one refusal ID", NULL);
	id = argv[optind];
	if (!id_valid(id))
		return usage("a refusal id is 16 lower-case hex digits, not", id);
	if (ttl_arg != NULL && allow_ttl_parse(ttl_arg, level, &ttl) != 0)
		return EXIT_USAGE;
	if (!yes && !(isatty(STDIN_FILENO) && isatty(STDOUT_FILENO))) {
		fprintf(stderr, "allow: approve asks on a terminal before it grants; to grant without "
				"asking pass --yes\n");
		return EXIT_USAGE;
	}

	c = cli_config_load();
	if (c == NULL)
		return EXIT_ERROR;
	row = refusal_row(c, id);
	if (row == NULL)
		goto out;
	ts = str_of(row, "ts");
	reason = str_of(row, "reason");
	if (reason == NULL || strcmp(reason, "not-granted") != 0) {
		fprintf(stderr, "allow: refusal %s was %s, nothing a grant changes\n", id,
			reason != NULL ? reason : "of no reason");
		goto out;
	}
	if (grant_of_row(row, id, &g, who, sizeof(who)) == -1)
		goto out;
	if (ts == NULL || snapshot_ts_parse(ts, &t_ms) == -1) {
		fprintf(stderr, "allow: refusal %s: its row has no time\n", id);
		goto out;
	}
	if ((int64_t)time(NULL) * 1000 - t_ms > APPROVE_MAX_AGE_MS) {
		char pat[HOST_NAME_MAX_LEN + 16];

		fprintf(stderr,
			"allow: refusal %s is from %s, more than a day ago: approve takes only "
			"refusals of the last day; to grant it anyway run: sluice allow add %s%s%s\n",
			id, ts, grant_format(&g, pat, sizeof(pat)), who[0] != '\0' ? " --for " : "", who);
		goto out;
	}
	printf("refusal %s of %s: %s\n", id, ts,
	       who[0] != '\0' ? who : "no stamp, so the grant serves every connection");
	run_said(c, row, who);
	if (!yes && !confirm(row, &g, who, level, ttl)) {
		printf("not granted\n");
		goto out;
	}
	if (allow_grant(stdout, c, &g, level, ttl) == 0)
		ret = EXIT_OK;
out:
	json_decref(row);
	config_free(c);
	return ret;
}
