/*
 * file.h: reading a small file whole (configs, stores, keys); making the state dir.
 */
#ifndef SLUICE_FILE_H
#define SLUICE_FILE_H

#include <stddef.h>
#include <sys/types.h>

/*
 * Read path into a new NUL-terminated heap buffer of at most max bytes
 * (the caller frees it, after wiping it if it held a secret). Returns 0,
 * or -1 with errno (ENOENT: no such file, EFBIG: over max).
 */
int file_read(const char *path, size_t max, char **out, size_t *len);

/* mkdir -p: create dir and its missing parents with mode. Returns 0 or -1 with errno. */
int file_mkdir_p(const char *dir, mode_t mode);

#endif
