/*
 * guard.h: place a parser's input right before an unmapped page.
 *
 * guard_copy() copies bytes so that the last one sits at the end of a
 * readable page and the next page is PROT_NONE: a parser that reads one
 * byte past its (buf, len) faults at once instead of reading stale memory.
 * Test-only; aborts on mmap failure rather than reporting it.
 */
#ifndef SLUICE_TESTS_GUARD_H
#define SLUICE_TESTS_GUARD_H

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static inline size_t guard_pages(size_t len, size_t page)
{
	return len == 0 ? 1 : (len + page - 1) / page;
}

/* A copy of src[0..len) ending exactly at a PROT_NONE page; free with guard_free. */
static inline char *guard_copy(const void *src, size_t len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), n = guard_pages(len, page);
	char *base = mmap(NULL, (n + 1) * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			  -1, 0);

	if (base == MAP_FAILED || mprotect(base + n * page, page, PROT_NONE) == -1)
		abort();
	memcpy(base + n * page - len, src, len);
	return base + n * page - len;
}

/* The same for a C string, without its NUL. */
static inline char *guard_str(const char *s)
{
	return guard_copy(s, strlen(s));
}

static inline void guard_free(char *p, size_t len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), n = guard_pages(len, page);

	munmap(p + len - n * page, (n + 1) * page);
}

#endif
