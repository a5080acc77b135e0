/*
 * file.h: reading a small file whole (configs, stores, keys).
 */
#ifndef SLUICE_FILE_H
#define SLUICE_FILE_H

#include <stddef.h>

/*
 * Read path into a new NUL-terminated heap buffer of at most max bytes
 * (the caller frees it, after wiping it if it held a secret). Returns 0,
 * or -1 with errno (ENOENT: no such file, EFBIG: over max).
 */
int file_read(const char *path, size_t max, char **out, size_t *len);

#endif
