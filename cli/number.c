/*
 * number.c: a number argument read whole (an option's count, port, mark).
 *
 * It takes only what the caller's range allows; it does not read units or
 * durations (allow.c does, for its budget words).
 */
#include <errno.h>
#include <stdlib.h>

#include "cli.h"

int cli_num_parse(const char *s, int base, unsigned long lo, unsigned long hi, unsigned long *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, base);
	if (s[0] == '\0' || s[0] == '-' || *end != '\0' || errno != 0 || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}
