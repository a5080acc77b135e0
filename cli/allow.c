/*
 * allow.c: `sluice allow add|rm|list`: what the operator grants, and to whom.
 *
 * Each command edits the store through allow_grant.c (a GRANT parsed, a
 * grant stored at its level) and allow_store.c. A grant is one
 * pattern and the set of principals it serves (--for, repeatable; none:
 * every connection): adding the same pattern and set again replaces it,
 * another set is another grant, and rm takes the one with exactly the
 * set it is given. A container name given to --for is looked up when the
 * grant is added, in the engine's latest snapshots (STATE/engine.jsonl,
 * as `sluice log` names rows), and stored as container:<id>.
 */
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "digits.h"
#include "file.h"
#include "store.h"

#define STORE_NAME "grants"
#define ENGINE_FILE "engine.jsonl"
#define ONCE_TTL_DEFAULT 120

/*
 * A verb's positional words GRANT [tunnel], words[0..n), into g. Returns
 * EXIT_OK, or the exit code after saying why.
 */
static int grant_words(char **words, int n, const char *verb, struct grant *g)
{
	const char *err = "bad word";

	if (n != 1 && n != 2)
		return allow_usage_error("%s takes one GRANT, optionally followed by tunnel", verb);
	if (allow_pattern(words[0], g) == -1)
		return EXIT_ERROR;
	if (n == 2 && grant_tunnel_word(g, words[1], strlen(words[1]), &err) != 1)
		return allow_usage_error("%s %s: \"%s\": %s", verb, words[0], words[1],
				   strcmp(words[1], "tunnel") == 0 ? err : "expected tunnel");
	return EXIT_OK;
}

/*
 * The id of the container named name in the latest snapshot of each net
 * (STATE/engine.jsonl) into id; *ref its entry there (for the note on its
 * addresses). Returns 0, or -1 after printing why (none, or two ids).
 */
static int container_lookup(const struct config *c, const char *name, struct snapshots *all,
			    const struct snap_ctr **ref, const struct snapshot **snap)
{
	char path[PATH_MAX];
	int n = snprintf(path, sizeof(path), "%s/%s", c->state_dir, ENGINE_FILE);

	*ref = NULL;
	if (n < 0 || (size_t)n >= sizeof(path)) {
		fprintf(stderr, "allow: %s/%s: path too long\n", c->state_dir, ENGINE_FILE);
		return -1;
	}
	if (snapshot_load(path, "allow", all, stderr) == -1)
		return -1;
	/* sorted by (net, t, line): the last of each net is that net's latest */
	for (size_t i = 0; i < all->n; i++) {
		const struct snapshot *sn = &all->v[i];

		if (i + 1 < all->n && strcmp(all->v[i + 1].net, sn->net) == 0)
			continue;
		for (size_t k = 0; k < sn->nctrs; k++) {
			if (strcmp(sn->ctrs[k].name, name) != 0)
				continue;
			if (*ref != NULL && strcmp((*ref)->id, sn->ctrs[k].id) != 0) {
				fprintf(stderr,
					"allow: two containers are named %s (%.12s on %s, %.12s on %s); "
					"name one by container:<id>\n",
					name, (*ref)->id, (*snap)->net, sn->ctrs[k].id, sn->net);
				return -1;
			}
			*ref = &sn->ctrs[k];
			*snap = sn;
		}
	}
	if (*ref == NULL) {
		fprintf(stderr,
			"allow: no container named %s in the engine's latest snapshots (%s; `sluice "
			"engine snapshot` records them); name it container:<id> or ADDR@NET\n",
			name, path);
		return -1;
	}
	return 0;
}

/*
 * Add the --for word to g: a container name becomes container:<id> from
 * the engine's snapshots. Returns 0 or -1 after printing why.
 */
static int scope_arg(const struct config *c, const char *word, struct grant *g)
{
	struct snapshots all = { 0 };
	const struct snap_ctr *ctr;
	const struct snapshot *snap = NULL;
	char id[16 + SCOPE_ID_LEN];
	struct scope sc;
	const char *err = "bad scope";
	int ret = -1;

	if (scope_parse(word, &sc, &err) == 0 && sc.kind == SCOPE_NAME) {
		if (container_lookup(c, word, &all, &ctr, &snap) == -1)
			goto out;
		snprintf(id, sizeof(id), "container:%s", ctr->id);
		if (grant_scope_add(g, id, &err) == -1)
			goto bad;
		printf("--for %s: %s\n", word, id);
		if (ctr->naddrs > 0)
			fprintf(stderr,
				"allow: note: %s has addresses on network %s: connections it makes "
				"there are stamped with its address, not its id, and container:<id> "
				"matches only what a forwarder attributes by cgroup (--own); for those, "
				"name it by ADDR@NET\n",
				word, snap->net);
		ret = 0;
		goto out;
	}
	if (grant_scope_add(g, word, &err) == 0) {
		ret = 0;
		goto out;
	}
bad:
	fprintf(stderr, "allow: bad --for \"%s\": %s\n", word, err);
out:
	snapshots_release(&all);
	return ret;
}

/*
 * --max-up, --max-requests and --per (arg[0..2], NULL: not given) into g.
 * Returns 0, or EXIT_USAGE after saying why.
 */
static int budget_args(const char *const arg[3], struct grant *g)
{
	uint64_t v;

	if (arg[0] != NULL &&
	    grant_bytes_parse(arg[0], strlen(arg[0]), GRANT_BUDGET_BYTES_MAX, &v) == -1)
		return allow_usage_error("bad --max-up \"%s\": expected 1 to 2^50 bytes, with an "
				   "optional k, M or G (powers of 1024)", arg[0]);
	if (arg[0] != NULL)
		g->max_up = v;
	if (arg[1] != NULL &&
	    (dec_parse(arg[1], strlen(arg[1]), GRANT_BUDGET_REQUESTS_MAX, &v) == -1 || v == 0))
		return allow_usage_error("bad --max-requests \"%s\": expected 1 to 10^12", arg[1]);
	if (arg[1] != NULL)
		g->max_requests = v;
	if (arg[2] != NULL && grant_budgeted(g) == false)
		return allow_usage_error("--per needs --max-up or --max-requests");
	if (arg[2] != NULL &&
	    grant_seconds_parse(arg[2], strlen(arg[2]), GRANT_BUDGET_PER_MAX, &v) == -1)
		return allow_usage_error("bad --per \"%s\": expected 1 to 31622400 seconds (or Ns, Nm, "
				   "Nh, Nd)", arg[2]);
	if (arg[2] != NULL)
		g->per = (uint32_t)v;
	return 0;
}

static int allow_add(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "level", required_argument, NULL, 'l' },
		{ "ttl", required_argument, NULL, 't' },
		{ "for", required_argument, NULL, 'f' },
		{ "max-up", required_argument, NULL, 'u' },
		{ "max-requests", required_argument, NULL, 'r' },
		{ "per", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *budget[3] = { NULL, NULL, NULL }; /* max-up, max-requests, per */
	enum grant_level level = GRANT_PERMANENT;
	const char *ttl_arg = NULL, *fors[GRANT_SCOPES_MAX];
	long long ttl = ONCE_TTL_DEFAULT;
	struct config *c;
	struct grant g;
	size_t nfor = 0;
	int opt, ret = EXIT_ERROR;

	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'l':
			if (allow_level_parse(optarg, &level) == -1)
				return allow_usage_error("bad level \"%s\": expected once, session or permanent",
						   optarg);
			break;
		case 't':
			ttl_arg = optarg;
			break;
		case 'f':
			if (nfor == GRANT_SCOPES_MAX)
				return allow_usage_error("at most %d --for", GRANT_SCOPES_MAX);
			fors[nfor++] = optarg;
			break;
		case 'u':
		case 'r':
		case 'p':
			budget[opt == 'u' ? 0 : opt == 'r' ? 1 : 2] = optarg;
			break;
		case 'h':
			cli_usage(stdout, "allow");
			return EXIT_OK;
		default:
			cli_usage(stderr, "allow");
			return EXIT_USAGE;
		}
	}
	if (ttl_arg != NULL && allow_ttl_parse(ttl_arg, level, &ttl) != 0)
		return EXIT_USAGE;
	ret = grant_words(argv + optind, argc - optind, "add", &g);
	if (ret != EXIT_OK)
		return ret;
	ret = EXIT_ERROR;
	if (budget_args(budget, &g) != 0)
		return EXIT_USAGE;

	c = cli_config_load();
	if (c == NULL)
		return EXIT_ERROR;
	for (size_t i = 0; i < nfor; i++)
		if (scope_arg(c, fors[i], &g) == -1)
			goto out_config;
	if (allow_grant(stdout, c, &g, level, ttl) == 0)
		ret = EXIT_OK;
out_config:
	config_free(c);
	return ret;
}

/* The scope sets the grants of g's pattern in all[0..n) have, as "A,B; everyone", to stderr. */
static void others_note(const char *pat, const struct grant *all, size_t n)
{
	char p[ALLOW_PATTERN_MAX], list[GRANT_SCOPES_TEXT];
	bool any = false;

	for (size_t i = 0; i < n; i++) {
		if (strcmp(grant_format(&all[i], p, sizeof(p)), pat) != 0)
			continue;
		fprintf(stderr, "%s%s", any ? "; " : "allow: the store grants it for: ",
			all[i].nscopes == 0 ? "every connection (no --for)"
					    : grant_scopes_format(&all[i], list, sizeof(list)));
		any = true;
	}
	if (any)
		fputc('\n', stderr);
}

static int allow_rm(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "for", required_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct config *c;
	struct allow_store s;
	struct grant g;
	const char *fors[GRANT_SCOPES_MAX];
	char pat[ALLOW_PATTERN_MAX], who[GRANT_SCOPES_TEXT + 8];
	size_t removed, nfor = 0;
	int opt, lockfd, ret = EXIT_ERROR;

	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'f':
			if (nfor == GRANT_SCOPES_MAX)
				return allow_usage_error("at most %d --for", GRANT_SCOPES_MAX);
			fors[nfor++] = optarg;
			break;
		case 'h':
			cli_usage(stdout, "allow");
			return EXIT_OK;
		default:
			cli_usage(stderr, "allow");
			return EXIT_USAGE;
		}
	}
	ret = grant_words(argv + optind, argc - optind, "rm", &g);
	if (ret != EXIT_OK)
		return ret;
	ret = EXIT_ERROR;
	allow_grant_label(&g, pat, sizeof(pat));

	c = cli_config_load();
	if (c == NULL)
		return EXIT_ERROR;
	for (size_t i = 0; i < nfor; i++)
		if (scope_arg(c, fors[i], &g) == -1)
			goto out_config;
	allow_grant_scopes_text(&g, who, sizeof(who));
	lockfd = allow_store_lock(c);
	if (lockfd == -1)
		goto out_config;
	if (allow_store_load(c, &s) == -1)
		goto out_unlock;
	allow_store_prune(&s, &g, time(NULL), &removed);
	if (removed == 0) {
		bool in_config = false;

		for (size_t i = 0; i < c->ngrants; i++)
			in_config |= grant_same(&c->grants[i], &g);
		if (in_config)
			fprintf(stderr, "allow: %s%s is granted by the config file %s; remove it there\n",
				pat, who, cli_config_path());
		else
			fprintf(stderr, "allow: no grant %s%s in %s/%s\n", pat, who, c->state_dir,
				STORE_NAME);
		others_note(pat, s.g, s.n);
		goto out_free;
	}
	if (allow_store_save(c, &s) == -1)
		goto out_free;
	printf("removed %s%s\n", pat, who);
	ret = EXIT_OK;
out_free:
	free(s.g);
out_unlock:
	close(lockfd);
out_config:
	config_free(c);
	return ret;
}

/* The EXPIRES column, and whether the grant is live now. */
static bool expires_text(const struct grant *g, time_t now, const char *run, char *buf,
			 size_t size)
{
	char dur[32];

	switch (g->level) {
	case GRANT_ONCE:
		if (g->expires <= now) {
			snprintf(buf, size, "expired");
			return false;
		}
		snprintf(buf, size, "in %s",
			 allow_duration_format((long long)(g->expires - now), dur, sizeof(dur)));
		return true;
	case GRANT_SESSION:
		if (run != NULL && strcmp(run, g->run) == 0) {
			snprintf(buf, size, "when proxy stops");
			return true;
		}
		snprintf(buf, size, "ended (run %s)", g->run);
		return false;
	default:
		snprintf(buf, size, "never");
		return true;
	}
}

static char *added_text(const struct grant *g, char *buf, size_t size)
{
	struct tm tm;

	if (g->level == GRANT_CONFIG || localtime_r(&g->added, &tm) == NULL)
		snprintf(buf, size, "-");
	else
		strftime(buf, size, "%Y-%m-%d %H:%M", &tm);
	return buf;
}

static int list_json(const struct grant *all, size_t n, time_t now, const char *run)
{
	json_t *arr = json_array();
	char pat[ALLOW_PATTERN_MAX], exp[64];
	int ret = EXIT_ERROR;

	if (arr == NULL)
		goto out_oom;
	for (size_t i = 0; i < n; i++) {
		const struct grant *g = &all[i];
		bool live = expires_text(g, now, run, exp, sizeof(exp));
		json_t *scopes = json_array();
		json_t *o;

		for (size_t k = 0; scopes != NULL && k < g->nscopes; k++)
			if (json_array_append_new(scopes, json_string(g->scopes[k].text)) == -1) {
				json_decref(scopes);
				scopes = NULL;
			}
		if (scopes == NULL)
			goto out_oom;
		json_t *max_up = g->max_up > 0 ? json_integer((json_int_t)g->max_up) : json_null();
		json_t *max_req = g->max_requests > 0 ? json_integer((json_int_t)g->max_requests)
						      : json_null();

		o = json_pack("{s:s, s:b, s:o, s:s, s:o, s:o, s:o, s:b, s:o, s:o, s:o}", "grant",
				      grant_format(g, pat, sizeof(pat)), "tunnel", g->tunnel, "for",
				      scopes, "level",
				      grant_level_name(g->level), "added",
				      g->level == GRANT_CONFIG ? json_null()
							       : json_integer(g->added),
				      "expires",
				      g->level == GRANT_ONCE ? json_integer(g->expires) : json_null(),
				      "run", g->level == GRANT_SESSION ? json_string(g->run) : json_null(),
				      "live", live, "max_up", max_up, "max_requests", max_req,
				      "per", g->per > 0 ? json_integer(g->per) : json_null());

		if (o == NULL || json_array_append_new(arr, o) == -1)
			goto out_oom;
	}
	if (json_dumpf(arr, stdout, JSON_INDENT(2)) == -1)
		goto out_free;
	putchar('\n');
	ret = EXIT_OK;
	goto out_free;
out_oom:
	fprintf(stderr, "allow: out of memory\n");
out_free:
	json_decref(arr);
	return ret;
}

static void list_table(const struct grant *all, size_t n, time_t now, const char *run)
{
	char pat[ALLOW_PATTERN_MAX], exp[64], added[32], list[GRANT_SCOPES_TEXT], budget[128];
	int w = (int)strlen("GRANT"), wb = (int)strlen("BUDGET");

	for (size_t i = 0; i < n; i++) {
		int l = (int)strlen(allow_grant_label(&all[i], pat, sizeof(pat)));
		int lb = (int)strlen(allow_grant_budget_text(&all[i], budget, sizeof(budget)));

		if (l > w)
			w = l;
		if (lb > wb)
			wb = lb;
	}
	printf("%-*s  %-9s  %-22s  %-16s  %-*s  %s\n", w, "GRANT", "LEVEL", "EXPIRES", "ADDED", wb,
	       "BUDGET", "FOR");
	for (size_t i = 0; i < n; i++) {
		expires_text(&all[i], now, run, exp, sizeof(exp));
		printf("%-*s  %-9s  %-22s  %-16s  %-*s  %s\n", w,
		       allow_grant_label(&all[i], pat, sizeof(pat)), grant_level_name(all[i].level), exp,
		       added_text(&all[i], added, sizeof(added)), wb,
		       allow_grant_budget_text(&all[i], budget, sizeof(budget)),
		       all[i].nscopes == 0 ? "-" : grant_scopes_format(&all[i], list, sizeof(list)));
	}
}

static int allow_list(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char run[GRANT_RUN_ID_LEN + 1];
	const char *runp = NULL;
	struct grant *all;
	struct config *c;
	struct allow_store s;
	bool json = false;
	int opt, ret = EXIT_ERROR;

	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'j':
			json = true;
			break;
		case 'h':
			cli_usage(stdout, "allow");
			return EXIT_OK;
		default:
			cli_usage(stderr, "allow");
			return EXIT_USAGE;
		}
	}
	if (optind != argc)
		return allow_usage_error("list takes no arguments");

	c = cli_config_load();
	if (c == NULL)
		return EXIT_ERROR;
	/* no lock: the store is only ever replaced whole, by rename */
	if (allow_store_load(c, &s) == -1)
		goto out_config;
	if (store_run_id(c->state_dir, run) == 0)
		runp = run;
	all = calloc(c->ngrants + s.n + 1, sizeof(*all));
	if (all == NULL) {
		fprintf(stderr, "allow: out of memory\n");
		goto out_store;
	}
	if (c->ngrants > 0)
		memcpy(all, c->grants, c->ngrants * sizeof(*all));
	if (s.n > 0)
		memcpy(all + c->ngrants, s.g, s.n * sizeof(*all));
	if (json) {
		ret = list_json(all, c->ngrants + s.n, time(NULL), runp);
	} else {
		list_table(all, c->ngrants + s.n, time(NULL), runp);
		ret = EXIT_OK;
	}
	if (fflush(stdout) == EOF) {
		fprintf(stderr, "allow: write stdout failed\n");
		ret = EXIT_ERROR;
	}
	free(all);
out_store:
	free(s.g);
out_config:
	config_free(c);
	return ret;
}

int cmd_allow(int argc, char **argv)
{
	if (argc < 2) {
		cli_usage(stderr, "allow");
		return EXIT_USAGE;
	}
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
		cli_usage(stdout, "allow");
		return EXIT_OK;
	}
	if (strcmp(argv[1], "add") == 0)
		return allow_add(argc - 1, argv + 1);
	if (strcmp(argv[1], "rm") == 0)
		return allow_rm(argc - 1, argv + 1);
	if (strcmp(argv[1], "list") == 0)
		return allow_list(argc - 1, argv + 1);
	if (strcmp(argv[1], "approve") == 0)
		return allow_approve(argc - 1, argv + 1);
	if (strcmp(argv[1], "enforce") == 0)
		return allow_enforce(argc - 1, argv + 1);
	if (strcmp(argv[1], "learn") == 0)
		return allow_learn(argc - 1, argv + 1);
	return allow_usage_error("unknown subcommand \"%s\"", argv[1]);
}
