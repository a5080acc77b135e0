/*
 * netns.c: into a network namespace and back (netns.h).
 */
#include "netns.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

int netns_enter_saved(const char *path)
{
	int self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC), ns, e;

	if (self == -1)
		return -1;
	ns = open(path, O_RDONLY | O_CLOEXEC);
	if (ns == -1 || setns(ns, CLONE_NEWNET) == -1) {
		e = errno;
		if (ns != -1)
			close(ns);
		close(self);
		errno = e;
		return -1;
	}
	close(ns);
	return self;
}

int netns_leave(int saved)
{
	int rc = setns(saved, CLONE_NEWNET), e = errno;

	close(saved);
	errno = e;
	return rc;
}
