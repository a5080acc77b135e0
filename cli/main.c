/*
 * main.c: the sluice command line: global options and the verb table.
 *
 * Reads `sluice [-c FILE] VERB ARGS...`, names the config file (conf.c)
 * and hands the rest to the verb. It does not load the config itself: a
 * verb that needs one asks for it (check reads any file it is given).
 * What the usage says is usage.c's.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

struct verb {
	const char *name;
	int (*fn)(int argc, char **argv);
};

static const struct verb verbs[] = {
	{ "check", cmd_check },
	{ "allow", cmd_allow },
	{ "build-token", cmd_build_token },
	{ "log", cmd_log },
	{ "watch", cmd_watch },
	{ "key", cmd_key },
	{ "ca", cmd_ca },
	{ "ports", cmd_ports },
	{ "engine", cmd_engine },
	{ "wall", cmd_wall },
	{ "doctor", cmd_doctor },
	{ "run", cmd_run },
	{ "agents", cmd_agents },
	{ "verify", cmd_verify },
	{ "install", cmd_install },
};

#define NVERBS (sizeof(verbs) / sizeof(verbs[0]))

int main(int argc, char **argv)
{
	int opt;

	/* '+': stop at the verb, whose own options follow it */
	while ((opt = getopt(argc, argv, "+c:h")) != -1) {
		switch (opt) {
		case 'c':
			cli_config_use(optarg);
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
