/*
 * config_fixture.h: for test_config.c, test_config_hosts.c and
 * test_config_inject.c, config text parsed the way they all parse it: each
 * input placed so that its last byte sits right before a page that cannot
 * be read (guard.h), so config_parse must never look past len; errors
 * captured in a memory stream and compared as whole lines; and config_print
 * captured as text.
 *
 * Test-only; include it after cmocka.h. A failed check is a cmocka
 * assertion, not a return value.
 */
#ifndef SLUICE_TESTS_CONFIG_FIXTURE_H
#define SLUICE_TESTS_CONFIG_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "guard.h"

/* Parse text (len bytes) into a fresh config; *errs gets the messages (caller frees). */
static inline struct config *parse_n(const char *text, size_t len, int *nerr, char **errs)
{
	struct config *c = config_new();
	char *g;
	size_t errlen = 0;
	char *out = NULL;
	FILE *f = open_memstream(&out, &errlen);

	assert_non_null(c);
	assert_non_null(f);
	g = guard_copy(text, len);
	*nerr = config_parse(c, g, len, "t.conf", f);
	guard_free(g, len);
	fclose(f);
	if (errs != NULL)
		*errs = out;
	else
		free(out);
	return c;
}

static inline struct config *parse(const char *text, int *nerr, char **errs)
{
	return parse_n(text, strlen(text), nerr, errs);
}

/* Parse text that must be fine. */
static inline struct config *parse_ok(const char *text)
{
	char *errs;
	int nerr;
	struct config *c = parse(text, &nerr, &errs);

	if (nerr != 0)
		print_error("unexpected errors:\n%s", errs);
	assert_int_equal(nerr, 0);
	assert_string_equal(errs, "");
	free(errs);
	return c;
}

/* text must give exactly the error lines want (each ending in '\n'). */
static inline void expect_errors(const char *text, int n, const char *want)
{
	char *errs;
	int nerr;
	struct config *c = parse(text, &nerr, &errs);

	assert_string_equal(errs, want);
	assert_int_equal(nerr, n);
	free(errs);
	config_free(c);
}

static inline char *print_text(const struct config *c)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	assert_non_null(f);
	config_print(c, f);
	fclose(f);
	return out;
}

#endif
