/*
 * usage.c: what `sluice -h`, `sluice VERB -h` and a usage error print.
 *
 * The verbs' synopses and one-line summaries, in the order the usage
 * lists them, and the exit statuses. It runs nothing: main.c's table
 * picks the verb's function.
 */
#include <string.h>

#include "cli.h"

struct verb_text {
	const char *name;
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

static const struct verb_text verbs[] = {
	{ "check", "validate a config file and print its normalised form",
	  "check [-q] [FILE]\n" },
	{ "allow", "add, remove or list the grants in STATE/grants; approve a refusal by its id",
	  "allow add GRANT [tunnel] [--level once|session|permanent] [--ttl SECONDS] [--for WHO]...\n"
	  "allow add GRANT [tunnel] [--for WHO]... [--max-up BYTES] [--max-requests N] [--per DURATION]\n"
	  "allow rm GRANT [tunnel] [--for WHO]...\n"
	  "allow approve ID [--level once|session|permanent] [--ttl SECONDS] [--yes]\n"
	  "allow enforce [on|off|learn [--for DURATION]]\n"
	  "allow learn\n"
	  "allow list [--json]\n" },
	{ "build-token",
	  "mint a build's proxy URL: its connections are principal build:NAME",
	  "build-token new [--name NAME] [--ttl DURATION] [--proxy ADDR:PORT]\n"
	  "build-token list\n"
	  "build-token rm NAME\n" },
	{ "log",
	  "read the network or DNS log: who used each host, who was refused; verify its chain",
	  "log [--json] [--host HOST] [--decision allow|refuse|observe] [--who WHO] [-n N] [-f]\n"
	  "log [...] [--run ID|sluice-ID] [--name AGENT]\n"
	  "log --by-host|--by-who [--all] [--json] [--host HOST] [--decision D] [--who WHO] [-n N]\n"
	  "log --by-rule [--all] [--json] [--host HOST] [--decision D] [--who WHO] [-n N]\n"
	  "log --refused [--all] [--json] [--host HOST] [--decision refuse|observe] [--who WHO] [-n N]\n"
	  "log --dns [--json] [--host NAME] [--decision allow|refuse|observe|error] [-n N] [-f]\n"
	  "log --dns --refused [--json] [--host NAME] [--decision refuse|observe] [-n N]\n"
	  "log verify [--anchor HASH] [FILE...]\n" },
	{ "watch",
	  "a live view of the network log on a terminal; grant a refusal from it",
	  "watch\n" },
	{ "key", "create, rotate or list the stamp keys in STATE/stamp.key",
	  "key init\n"
	  "key rotate [--grace SECONDS]\n"
	  "key list\n" },
	{ "ca", "create or show the TLS interception CA in STATE/ca.crt",
	  "ca init\n"
	  "ca show [--json]\n" },
	{ "ports", "show, list or release each project's 200-port band",
	  "ports [show] [--project NAME] [--json]\n"
	  "ports list [--json]\n"
	  "ports release [--project NAME]\n" },
	{ "engine", "record the engine's containers in STATE/engine.jsonl for log",
	  "engine snapshot [--net NAME] [--podman CMD]\n"
	  "engine watch [--net NAME] [--podman CMD]\n" },
	{ "wall", "render, apply, remove or check the nftables walls (tables sluice owns)",
	  "wall render sandbox --user NAME --gateway ADDR... [--resolver ADDR]... [--bridge IF] "
	  "[--forwarder ADDR:PORT] [--transparent PORT] [--subuid FILE] [COMMON]\n"
	  "wall render guard --gateway ADDR... [--mark N] [COMMON]\n"
	  "wall render host --cgroup PATH [--resolver ADDR]... [COMMON]\n"
	  "wall render egress --user NAME [--resolver ADDR]... [COMMON]\n"
	  "wall apply|remove PROFILE [render options] --netns PATH | --i-mean-this-host\n"
	  "wall status PROFILE [render options] [--netns PATH]\n"
	  "wall denied --group N [--netns PATH] [--count K] [--timeout S] [--json]\n"
	  "wall ... COMMON = [--port-base N | --project NAME] [--log-group N] (band: `sluice ports`)\n" },
	{ "doctor", "read back walls, forwarder, daemons, CA, provision, units and inject sources; fail closed",
	  "doctor [--json] [--clean] [--provision FILE] [--netns PATH] [--before-proxy]\n" },
	{ "run", "run CMD or a container in a sandbox whose only way out is sluice",
	  "run [--project NAME] [--name AGENT] [--agent PROFILE] [--allow GRANT]... [--user NAME] "
	  "[--env NAME[=VALUE]]... -- CMD [ARGS...]\n"
	  "run [...] [--podman CMD] --image IMAGE [podman run options] -- CMD [ARGS...]\n" },
	{ "agents", "list the agent profiles `sluice run --agent` takes, each checked",
	  "agents\n" },
	{ "verify", "prove the wall from inside the sandbox: proxy works, all else refused",
	  "verify --target ADDR [--proxy ADDR:PORT] [--target6 ADDR] [--proxy-direct ADDR:PORT] "
	  "[--timeout-ms N] [--json] [--probe NONCE]\n" },
	{ "install",
	  "render the systemd units (and a Lima VM's boot script) that keep sluice up",
	  "install [--project NAME] [--sandbox-vm lima|none] [--prefix DIR] [--out DIR]\n"
	  "install --sandbox-vm lima ... [--vm NAME] [--vm-user USER] [--limactl PATH]\n" },
};

#define NVERBS (sizeof(verbs) / sizeof(verbs[0]))

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
