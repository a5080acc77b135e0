/*
 * stamp.c: prints the wall clock (CLOCK_REALTIME, nanoseconds since the
 * epoch) and exits: the first thing a sandboxed CMD does, so bench/sandbox
 * can tell how long `sluice run` took to start it. Nothing else.
 */
#include <stdio.h>
#include <time.h>

int main(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	printf("%lld\n", (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
	return 0;
}
