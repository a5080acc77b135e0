/*
 * conf.c: the config file in force and what the verbs read from it.
 *
 * main.c names -c FILE here; a verb that needs the config asks for it.
 * It does not validate beyond config_load (check does that).
 */
#include <pwd.h>
#include <stdlib.h>
#include <unistd.h>

#include "cli.h"
#include "file.h"

#define DEFAULT_CONFIG "etc/sluice.conf"

static const char *config_opt; /* -c FILE, or NULL */

void cli_config_use(const char *path)
{
	config_opt = path;
}

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

uid_t cli_user_uid(const struct config *c)
{
	struct passwd *pw;

	if (c->user[0] == '\0')
		return FILE_NO_UID;
	pw = getpwnam(c->user);
	return pw != NULL && pw->pw_uid != 0 ? pw->pw_uid : FILE_NO_UID;
}
