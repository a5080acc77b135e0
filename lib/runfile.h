/*
 * runfile.h: a daemon's run file in STATE (proxy.run, dns.run): who is
 * running and where it listens, so the CLI can find it.
 *
 *   <16 lowercase hex digits: the run id>\n
 *   pid <N>\n
 *   listen <ADDR:PORT | [V6]:PORT | unix:PATH>\n    (one per listener)
 *
 * The daemon writes it once its listeners are open (so a run file means
 * "answering"), under a new name renamed into place, and holds a shared
 * flock on it for as long as it lives: the file may outlive a kill -9, or a
 * daemon running as `user` that could not unlink it from a root-owned
 * state directory, and the lock is what says it still runs. Session grants
 * name the proxy's run id.
 */
#ifndef SLUICE_RUNFILE_H
#define SLUICE_RUNFILE_H

#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "grant.h" /* GRANT_RUN_ID_LEN */

#define RUNFILE_LISTEN_MAX 16
#define RUNFILE_MAX_BYTES 4096

struct runfile {
	char id[GRANT_RUN_ID_LEN + 1];
	pid_t pid; /* 0 when the file names none */
	struct sockaddr_storage listen[RUNFILE_LISTEN_MAX];
	size_t nlisten;
};

/*
 * Write STATE/NAME for rf (a fresh id is drawn into rf->id) and return its
 * fd, share-locked: the caller keeps it open while it runs, then calls
 * runfile_remove. Returns -1 with errno.
 */
int runfile_write(const char *state_dir, const char *name, struct runfile *rf);

/* Unlink STATE/NAME (as `user` this may fail: the lock, released by closing fd, says we stopped). */
void runfile_remove(const char *state_dir, const char *name, int fd);

/*
 * Read STATE/NAME into *rf. Returns 0, or -1 with errno: ENOENT when there
 * is none, ESRCH when it is not locked by a running daemon, EINVAL when it
 * is not a run file, ENAMETOOLONG.
 */
int runfile_read(const char *state_dir, const char *name, struct runfile *rf);

/* Parse a run file's text (pure: the lock is not looked at). Returns 0 or -1. */
int runfile_parse(const char *buf, size_t len, struct runfile *rf);

#endif
