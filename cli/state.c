/*
 * state.c: opening the files of STATE that the CLI writes or locks.
 *
 * Every such open goes through file_open_owned, so a link or a file
 * someone else left there is refused with a diagnostic, never followed.
 */
#include <errno.h>

#include "cli.h"
#include "file.h"

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
