/*
 * check.c: `sluice check`: validate a config file.
 *
 * Parses FILE (default: the config in force) exactly as sluice-proxy
 * would, prints every error, and on success prints the normalised form,
 * which parses back to the same config. It does not check that paths
 * exist or that addresses can be bound: that is the proxy's start.
 */
#include <getopt.h>
#include <stdlib.h>

#include "cli.h"

int cmd_check(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path;
	struct config *c;
	bool quiet = false;
	int opt, nerr = 0;

	while ((opt = getopt_long(argc, argv, "qh", longopts, NULL)) != -1) {
		switch (opt) {
		case 'q':
			quiet = true;
			break;
		case 'h':
			cli_usage(stdout, "check");
			return EXIT_OK;
		default:
			cli_usage(stderr, "check");
			return EXIT_USAGE;
		}
	}
	if (argc - optind > 1) {
		fprintf(stderr, "check: one FILE at most\n");
		cli_usage(stderr, "check");
		return EXIT_USAGE;
	}
	path = optind < argc ? argv[optind] : cli_config_path();

	c = config_new();
	if (c == NULL) {
		fprintf(stderr, "check: out of memory\n");
		return EXIT_ERROR;
	}
	if (path != NULL)
		nerr = config_load(c, path, stderr);
	if (nerr == 0 && !quiet) {
		if (path == NULL)
			printf("# no config file: the built-in defaults\n");
		config_print(c, stdout);
	}
	config_free(c);
	if (fflush(stdout) == EOF) {
		fprintf(stderr, "check: write stdout failed\n");
		return EXIT_ERROR;
	}
	return nerr == 0 ? EXIT_OK : EXIT_ERROR;
}
