/*
 * signals.c: block the daemons' signals and read them from a signalfd
 * (signals.h), so they arrive as loop events and never interrupt a
 * system call. It installs no handler: SIGPIPE is ignored, the rest
 * blocked.
 */
#include "signals.h"

#include <signal.h>
#include <sys/signalfd.h>

static void taken(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGHUP);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGTERM);
}

int signals_block(void)
{
	sigset_t set;

	signal(SIGPIPE, SIG_IGN);
	taken(&set);
	return sigprocmask(SIG_BLOCK, &set, NULL);
}

int signals_open(void)
{
	sigset_t set;

	if (signals_block() == -1)
		return -1;
	taken(&set);
	return signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
}
