/*
 * lines.h: the next whole line of a buffer, for the small line formats
 * sluice keeps in STATE (run files, run notes). Pure: no allocation, no I/O.
 */
#ifndef SLUICE_LINES_H
#define SLUICE_LINES_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/*
 * The line of buf[*at..len) into *line, *n (without its newline), *at past
 * it. Returns false at the end, and for a last line without its newline
 * (not a whole file).
 */
static inline bool line_next(const char *buf, size_t len, size_t *at, const char **line, size_t *n)
{
	const char *nl;

	if (*at >= len)
		return false;
	nl = memchr(buf + *at, '\n', len - *at);
	if (nl == NULL)
		return false;
	*line = buf + *at;
	*n = (size_t)(nl - *line);
	*at += *n + 1;
	return true;
}

#endif
