/*
 * signals.h: the signals sluice-proxy and sluice-forward both take through
 * their loop, as a signalfd.
 *
 * Only the setup: what a signal does is each daemon's on_signal.
 */
#ifndef SLUICE_SIGNALS_H
#define SLUICE_SIGNALS_H

/*
 * Ignore SIGPIPE (a write to a closed peer is an EPIPE, not a death),
 * block SIGHUP, SIGINT and SIGTERM, and return a non-blocking,
 * close-on-exec signalfd that reads them, for the caller to watch and
 * close. Returns the fd, or -1 with errno.
 */
int signals_open(void);

/*
 * The same blocking, without the signalfd: a daemon's first step, so a
 * SIGHUP (a reload `sluice run` asks of a daemon just started) or a
 * SIGTERM that comes before its loop reads signals waits for it, pending,
 * instead of killing it. Returns 0, or -1 with errno.
 */
int signals_block(void);

#endif
