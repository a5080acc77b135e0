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

#endif
