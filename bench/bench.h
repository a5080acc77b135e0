/*
 * bench.h: what the bench programs share (bench/load.c and its load_*.c
 * parts, idle.c, ws.c, h2.c, origin.c): the monotonic clock, the one
 * ADDR:PORT reader, loopback only (they never send anywhere else), and the
 * loose token test they read a header value with.
 */
#ifndef SLUICE_BENCH_H
#define SLUICE_BENCH_H

#include <arpa/inet.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "sockaddr.h"

static inline uint64_t bench_now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000u + (uint64_t)t.tv_nsec / 1000u;
}

static inline uint64_t bench_now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* ADDR:PORT (lib/sockaddr.c's reader) into sin, 127.0.0.0/8 only. Returns 0 or -1. */
static inline int bench_loopback_addr(const char *s, struct sockaddr_in *sin)
{
	struct sockaddr_storage ss;

	if (sockaddr_parse(s, 0, 0, &ss) == -1 || ss.ss_family != AF_INET)
		return -1;
	memcpy(sin, &ss, sizeof(*sin));
	return (ntohl(sin->sin_addr.s_addr) >> 24) == 127 ? 0 : -1;
}

/*
 * True if token occurs anywhere in v[0..vlen), ignoring ASCII case: enough
 * for "close" or "chunked" in a header value, not a list parser.
 */
static inline bool bench_value_has(const char *v, size_t vlen, const char *token)
{
	size_t tlen = strlen(token);

	for (size_t i = 0; i + tlen <= vlen; i++)
		if (strncasecmp(v + i, token, tlen) == 0)
			return true;
	return false;
}

#endif
