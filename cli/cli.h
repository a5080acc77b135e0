/*
 * cli.h: the sluice command line's table of contents.
 *
 * Each verb lives in its own file and exports one cmd_<verb>() taking the
 * arguments from the verb's name on (argv[0] is the verb) and returning the
 * process exit status. main.c owns the verb table, the global options and
 * finding the config; the verbs share nothing else.
 */
#ifndef SLUICE_CLI_H
#define SLUICE_CLI_H

#include <stdio.h>

#include "config.h"

/* Exit statuses, as usage() documents them. */
#define EXIT_OK 0
#define EXIT_ERROR 1
#define EXIT_USAGE 2

/* main.c */

/*
 * The config file in force: -c FILE, else $SLUICE_CONFIG, else
 * etc/sluice.conf when it exists in the working directory, else NULL
 * (the built-in defaults).
 */
const char *cli_config_path(void);

/*
 * Load the config in force (defaults when cli_config_path() is NULL).
 * Errors go to stderr as "file:line: message". Returns a config the
 * caller frees with config_free, or NULL after printing why.
 */
struct config *cli_config_load(void);

/*
 * Print the synopsis of one verb (argv[0] of a verb) to f, or the whole
 * usage when verb is NULL. Verbs call it for -h (stdout, exit 0) and for a
 * usage error (stderr, exit 2).
 */
void cli_usage(FILE *f, const char *verb);

/* fputs strerror(e) with a lower-case first letter (diagnostics read that way). */
void cli_put_strerror(FILE *f, int e);

/* check.c */
int cmd_check(int argc, char **argv);

/* allow.c */
int cmd_allow(int argc, char **argv);

/* log.c */
int cmd_log(int argc, char **argv);

/* key.c */
int cmd_key(int argc, char **argv);

#endif
