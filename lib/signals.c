/*
 * signals.c: block the daemons' signals and read them from a signalfd
 * (signals.h), so they arrive as loop events and never interrupt a
 * system call. It installs no handler: SIGPIPE is ignored, the rest
 * blocked.
 */
#include "signals.h"

#include <signal.h>
#include <sys/signalfd.h>

int signals_open(void)
{
	sigset_t set;

	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	if (sigprocmask(SIG_BLOCK, &set, NULL) == -1)
		return -1;
	return signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
}
