/*
 * file.h: reading a small file whole (configs, stores, keys); making the state dir;
 * opening a file root holds in a directory someone else might write.
 */
#ifndef SLUICE_FILE_H
#define SLUICE_FILE_H

#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#define FILE_NO_UID ((uid_t)-1) /* no other owner allowed */

/*
 * Read path into a new NUL-terminated heap buffer of at most max bytes
 * (the caller frees it, after wiping it if it held a secret). Returns 0,
 * or -1 with errno (ENOENT: no such file, EFBIG: over max).
 */
int file_read(const char *path, size_t max, char **out, size_t *len);

/* mkdir -p: create dir and its missing parents with mode. Returns 0 or -1 with errno. */
int file_mkdir_p(const char *dir, mode_t mode);

/*
 * Why a file with status st may not be used by a process of effective uid
 * self, or NULL when it may: it must be a regular file owned by root, by
 * self or by other (FILE_NO_UID: nobody else), and not a hard link
 * (st_nlink 1: a second name could be someone else's file). A pure function.
 */
const char *file_refusal(const struct stat *st, uid_t self, uid_t other);

/*
 * open(2) for a file in STATE or the log's directory: with O_NOFOLLOW,
 * O_CLOEXEC and O_NOCTTY added (a symbolic link is refused, ELOOP), then
 * checked with file_refusal. A FIFO or device is not waited on. Returns the fd, or -1 with errno (EPERM for a
 * refusal) and *why (may be NULL) saying what is wrong in a few words.
 */
int file_open_owned(const char *path, int flags, mode_t mode, uid_t other, const char **why);

#endif
