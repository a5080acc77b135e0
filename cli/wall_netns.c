/*
 * wall_netns.c: --netns for `wall apply|remove|status` and `wall denied`.
 *
 * Moves the process (its only thread) into the network namespace a path
 * names, so the nftables or netlink socket made next speaks for it. It
 * never comes back: each verb does its work there and exits.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include "cli.h"

int wall_netns_enter(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd == -1 || setns(fd, CLONE_NEWNET) == -1) {
		fprintf(stderr, "wall: --netns %s: ", path);
		cli_put_strerror(stderr, errno);
		fputc('\n', stderr);
		if (fd != -1)
			close(fd);
		return -1;
	}
	close(fd);
	return 0;
}
