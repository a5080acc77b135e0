/*
 * say.c: how the CLI words what it prints: an errno's text, a time.
 *
 * Diagnostics read lower case; times are local, to the second. It prints
 * only what it is given: no prefixes, no newlines of its own.
 */
#include <ctype.h>
#include <string.h>
#include <time.h>

#include "cli.h"

void cli_put_strerror(FILE *f, int e)
{
	const char *s = strerror(e);

	fputc(tolower((unsigned char)s[0]), f);
	fputs(s + 1, f);
}

char *cli_time_text(time_t t, char *buf, size_t size)
{
	struct tm tm;

	if (localtime_r(&t, &tm) == NULL)
		snprintf(buf, size, "%lld", (long long)t);
	else
		strftime(buf, size, "%Y-%m-%d %H:%M:%S", &tm);
	return buf;
}
