/*
 * main.c: the sluice command line: global options, the verb table, usage.
 *
 * Reads `sluice [-c FILE] VERB ARGS...`, picks the config file and hands
 * the rest to the verb. It does not load the config itself: a verb that
 * needs one asks for it (check reads any file it is given).
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "file.h"

#define DEFAULT_CONFIG "etc/sluice.conf"

struct verb {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;  /* one line for the verb list */
	const char *synopsis; /* man-page synopsis lines after "sluice [-c FILE] " */
};

/* What `sluice allow -h` says after its synopsis: the budget words' units. */
static const char allow_notes[] =
	"BYTES is a number with an optional k, M or G (powers of 1024: 1k = 1024);\n"
	"DURATION and SECONDS are N, Ns, Nm, Nh or Nd. --max-up and --max-requests\n"
	"budget each principal the grant serves: over the grant's life (the counts\n"
	"start again when sluice-proxy restarts) or, with --per, per window that\n"
	"begins at the principal's first request through the grant. tunnel (only on\n"
	"HOST:PORT) lets a CONNECT to that name and port be relayed raw although the\n"
	"proxy intercepts: any protocol, whoever speaks first; a plain grant never does\n";

static const struct verb verbs[] = {
	{ "check", cmd_check, "validate a config file and print its normalised form",
	  "check [-q] [FILE]\n" },
	{ "allow", cmd_allow, "add, remove or list the grants in STATE/grants; approve a refusal by its id",
	  "allow add GRANT [tunnel] [--level once|session|permanent] [--ttl SECONDS] [--for WHO]...\n"
	  "allow add GRANT [tunnel] [--for WHO]... [--max-up BYTES] [--max-requests N] [--per DURATION]\n"
	  "allow rm GRANT [tunnel] [--for WHO]...\n"
	  "allow approve ID [--level once|session|permanent] [--ttl SECONDS] [--yes]\n"
	  "allow enforce [on|off|learn [--for DURATION]]\n"
	  "allow learn\n"
	  "allow list [--json]\n" },
	{ "build-token", cmd_build_token,
	  "mint a build's proxy URL: its connections are principal build:NAME",
	  "build-token new [--name NAME] [--ttl DURATION] [--proxy ADDR:PORT]\n"
	  "build-token list\n"
	  "build-token rm NAME\n" },
	{ "log", cmd_log,
	  "read the network or DNS log: who used each host, who was refused; verify its chain",
	  "log [--json] [--host HOST] [--decision allow|refuse|observe] [--who WHO] [-n N] [-f]\n"
	  "log [...] [--run ID|sluice-ID] [--name AGENT]\n"
	  "log --by-host|--by-who [--all] [--json] [--host HOST] [--decision D] [--who WHO] [-n N]\n"
	  "log --by-rule [--all] [--json] [--host HOST] [--decision D] [--who WHO] [-n N]\n"
	  "log --refused [--all] [--json] [--host HOST] [--decision refuse|observe] [--who WHO] [-n N]\n"
	  "log --dns [--json] [--host NAME] [--decision allow|refuse|observe|error] [-n N] [-f]\n"
	  "log --dns --refused [--json] [--host NAME] [--decision refuse|observe] [-n N]\n"
	  "log verify [--anchor HASH] [FILE...]\n" },
	{ "watch", cmd_watch,
	  "a live view of the network log on a terminal; grant a refusal from it",
	  "watch\n" },
	{ "key", cmd_key, "create, rotate or list the stamp keys in STATE/stamp.key",
	  "key init\n"
	  "key rotate [--grace SECONDS]\n"
	  "key list\n" },
	{ "ca", cmd_ca, "create or show the TLS interception CA in STATE/ca.crt",
	  "ca init\n"
	  "ca show [--json]\n" },
	{ "ports", cmd_ports, "show, list or release each project's 200-port band",
	  "ports [show] [--project NAME] [--json]\n"
	  "ports list [--json]\n"
	  "ports release [--project NAME]\n" },
	{ "engine", cmd_engine, "record the engine's containers in STATE/engine.jsonl for log",
	  "engine snapshot [--net NAME] [--podman CMD]\n"
	  "engine watch [--net NAME] [--podman CMD]\n" },
	{ "wall", cmd_wall, "render, apply, remove or check the nftables walls (tables sluice owns)",
	  "wall render sandbox --user NAME --gateway ADDR... [--resolver ADDR]... [--bridge IF] "
	  "[--forwarder ADDR:PORT] [--transparent PORT] [--subuid FILE] [COMMON]\n"
	  "wall render guard --gateway ADDR... [--mark N] [COMMON]\n"
	  "wall render host --cgroup PATH [--resolver ADDR]... [COMMON]\n"
	  "wall render egress --user NAME [--resolver ADDR]... [COMMON]\n"
	  "wall apply|remove PROFILE [render options] --netns PATH | --i-mean-this-host\n"
	  "wall status PROFILE [render options] [--netns PATH]\n"
	  "wall denied --group N [--netns PATH] [--count K] [--timeout S] [--json]\n"
	  "wall ... COMMON = [--port-base N | --project NAME] [--log-group N] (band: `sluice ports`)\n" },
	{ "doctor", cmd_doctor, "read back walls, forwarder, daemons, CA, provision, units and inject sources; fail closed",
	  "doctor [--json] [--clean] [--provision FILE] [--netns PATH] [--before-proxy]\n" },
	{ "run", cmd_run, "run CMD or a container in a sandbox whose only way out is sluice",
	  "run [--project NAME] [--name AGENT] [--agent PROFILE] [--allow GRANT]... [--user NAME] "
	  "[--env NAME[=VALUE]]... -- CMD [ARGS...]\n"
	  "run [...] [--podman CMD] --image IMAGE [podman run options] -- CMD [ARGS...]\n" },
	{ "agents", cmd_agents, "list the agent profiles `sluice run --agent` takes, each checked",
	  "agents\n" },
	{ "verify", cmd_verify, "prove the wall from inside the sandbox: proxy works, all else refused",
	  "verify --target ADDR [--proxy ADDR:PORT] [--target6 ADDR] [--proxy-direct ADDR:PORT] "
	  "[--timeout-ms N] [--json] [--probe NONCE]\n" },
	{ "install", cmd_install,
	  "render the systemd units (and a Lima VM's boot script) that keep sluice up",
	  "install [--project NAME] [--sandbox-vm lima|none] [--prefix DIR] [--out DIR]\n"
	  "install --sandbox-vm lima ... [--vm NAME] [--vm-user USER] [--limactl PATH]\n" },
};

#define NVERBS (sizeof(verbs) / sizeof(verbs[0]))

static const char *config_opt; /* -c FILE, or NULL */

const char *cli_config_path(void)
{
	const char *env = getenv("SLUICE_CONFIG");

	if (config_opt != NULL)
		return config_opt;
	if (env != NULL && env[0] != '\0')
		return env;
	if (access(DEFAULT_CONFIG, F_OK) == 0)
		return DEFAULT_CONFIG;
	return NULL;
}

struct config *cli_config_load(void)
{
	const char *path = cli_config_path();
	struct config *c = config_new();

	if (c == NULL) {
		fprintf(stderr, "sluice: out of memory\n");
		return NULL;
	}
	if (path != NULL && config_load(c, path, stderr) != 0) {
		config_free(c);
		return NULL;
	}
	return c;
}

void cli_put_strerror(FILE *f, int e)
{
	const char *s = strerror(e);

	fputc(tolower((unsigned char)s[0]), f);
	fputs(s + 1, f);
}

int cli_open_state(const char *verb, const char *path, int flags, mode_t mode)
{
	const char *why;
	int fd = file_open_owned(path, flags, mode, FILE_NO_UID, &why);

	if (fd == -1 && why != NULL)
		fprintf(stderr, "%s: refusing %s: %s; sluice did not leave it there: remove it and "
				"find who could write the state directory\n",
			verb, path, why);
	else if (fd == -1) {
		fprintf(stderr, "%s: open %s: ", verb, path);
		cli_put_strerror(stderr, errno);
		fputc('\n', stderr);
	}
	return fd;
}

char *cli_time_text(time_t t, char *buf, size_t size)
{
	struct tm tm;

	if (localtime_r(&t, &tm) == NULL)
		snprintf(buf, size, "%lld", (long long)t);
	else
		strftime(buf, size, "%Y-%m-%d %H:%M:%S", &tm);
	return buf;
}

uid_t cli_user_uid(const struct config *c)
{
	struct passwd *pw;

	if (c->user[0] == '\0')
		return FILE_NO_UID;
	pw = getpwnam(c->user);
	return pw != NULL && pw->pw_uid != 0 ? pw->pw_uid : FILE_NO_UID;
}

/* Print each line of a synopsis, the first after lead, the others indented to match. */
static void put_synopsis(FILE *f, const char *lead, const char *syn)
{
	size_t indent = strlen(lead);

	while (*syn != '\0') {
		const char *nl = strchr(syn, '\n');
		size_t n = nl != NULL ? (size_t)(nl - syn) : strlen(syn);

		fprintf(f, "%*s%s%.*s\n", (int)indent, lead, "sluice [-c FILE] ", (int)n, syn);
		lead = "";
		syn += n + (nl != NULL);
	}
}

void cli_usage(FILE *f, const char *verb)
{
	for (size_t i = 0; verb != NULL && i < NVERBS; i++) {
		if (strcmp(verbs[i].name, verb) == 0) {
			put_synopsis(f, "usage: ", verbs[i].synopsis);
			if (strcmp(verb, "allow") == 0)
				fprintf(f, "\n%s", allow_notes);
			return;
		}
	}
	fprintf(f, "usage: sluice [-c FILE] VERB [ARGS...]\n");
	for (size_t i = 0; i < NVERBS; i++)
		put_synopsis(f, "       ", verbs[i].synopsis);
	fprintf(f, "\nverbs:\n");
	for (size_t i = 0; i < NVERBS; i++)
		fprintf(f, "  %-7s %s\n", verbs[i].name, verbs[i].summary);
	fprintf(f, "\noptions:\n"
		   "  -c FILE  the config file; default $SLUICE_CONFIG, else ./etc/sluice.conf\n"
		   "           if it exists, else the built-in defaults (see `sluice check`)\n"
		   "  -h       this help; `sluice VERB -h` for one verb\n"
		   "\nexit status:\n"
		   "  0  success\n"
		   "  1  error: a bad config, a damaged grant store, a file that cannot be\n"
		   "     read or written, a refused grant pattern, a container engine that\n"
		   "     failed or did not answer in time, a CA that exists (init) or is\n"
		   "     missing (show)\n"
		   "  2  usage: an unknown verb or option, a missing or malformed argument\n"
		   "  verify exits 0 when the wall holds, 1 naming each probe that leaked\n"
		   "  (open, answered, timeout), 2 unproven: the proxy did not answer\n"
		   "  log verify exits 0 when the chain holds, 1 naming the first broken row\n"
		   "  (or when no row is chained, or none hashes to --anchor)\n"
		   "  wall denied exits 0 after --count lines or on SIGINT/SIGTERM, 1 when\n"
		   "  --timeout passed first, 3 on a netlink or namespace error\n");
}

int main(int argc, char **argv)
{
	int opt;

	/* '+': stop at the verb, whose own options follow it */
	while ((opt = getopt(argc, argv, "+c:h")) != -1) {
		switch (opt) {
		case 'c':
			config_opt = optarg;
			break;
		case 'h':
			cli_usage(stdout, NULL);
			return EXIT_OK;
		default:
			cli_usage(stderr, NULL);
			return EXIT_USAGE;
		}
	}
	if (optind == argc) {
		cli_usage(stderr, NULL);
		return EXIT_USAGE;
	}
	if (strcmp(argv[optind], "help") == 0) {
		cli_usage(stdout, optind + 1 < argc ? argv[optind + 1] : NULL);
		return EXIT_OK;
	}
	for (size_t i = 0; i < NVERBS; i++) {
		if (strcmp(verbs[i].name, argv[optind]) == 0) {
			char **vargv = argv + optind;
			int vargc = argc - optind;

			optind = 0; /* glibc: 0 restarts getopt for the verb's own options */
			return verbs[i].fn(vargc, vargv);
		}
	}
	fprintf(stderr, "sluice: unknown verb \"%s\"\n", argv[optind]);
	cli_usage(stderr, NULL);
	return EXIT_USAGE;
}
