/*
 * test_scope.c: principal words (lib/scope.h), the project kind above all:
 * project:NAME and project:NAME/AGENT parse into canonical text, bad ones
 * are refused with a message, and they match a stamp's as= as scope.h
 * says (the project's every run and agent; the agent's runs only).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "scope.h"

static void test_project_parse(void **state)
{
	static const char *const good[] = {
		"project:alpha", "project:a", "project:A.b_c-9", "project:alpha/coder",
		"project:sluice-1f2e3d4c/x.y_z-1",
		"project:0123456789012345678901234567890123456789/0123456789012345678901234567890123456789",
	};
	static const char *const bad[] = {
		"project:", "project:/x", "project:a/", "project:a/b/c", "project:a b",
		"project:a:b", "project:a/b:c", "project:01234567890123456789012345678901234567890",
		"project:a/01234567890123456789012345678901234567890", "project:\xc3\xa9",
	};
	struct scope sc;
	const char *err;

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		err = NULL;
		assert_int_equal(scope_parse(good[i], &sc, &err), 0);
		assert_int_equal(sc.kind, SCOPE_PROJECT);
		assert_string_equal(sc.text, good[i]);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err = NULL;
		assert_int_equal(scope_parse(bad[i], &sc, &err), -1);
		assert_non_null(strstr(err, "project:NAME"));
	}
}

static void test_project_matches(void **state)
{
	struct scope proj, agent;
	const char *err, *who = "127.0.0.1@sluice-0123456789ab";

	(void)state;
	assert_int_equal(scope_parse("project:alpha", &proj, &err), 0);
	assert_int_equal(scope_parse("project:alpha/coder", &agent, &err), 0);
	/* the project's scope: every run of it, its agents' too */
	assert_true(scope_matches(&proj, who, "127.0.0.1", "project:alpha"));
	assert_true(scope_matches(&proj, who, "127.0.0.1", "project:alpha/coder"));
	assert_false(scope_matches(&proj, who, "127.0.0.1", "project:alphabet"));
	assert_false(scope_matches(&proj, who, "127.0.0.1", "project:alphabet/coder"));
	assert_false(scope_matches(&proj, who, "127.0.0.1", "project:beta"));
	assert_false(scope_matches(&proj, who, "127.0.0.1", "container:alpha"));
	assert_false(scope_matches(&proj, who, "127.0.0.1", NULL));
	assert_false(scope_matches(&proj, who, "127.0.0.1", ""));
	/* unattributed: nothing */
	assert_false(scope_matches(&proj, NULL, NULL, "project:alpha"));
	/* the agent's scope: only that agent's runs */
	assert_true(scope_matches(&agent, who, "127.0.0.1", "project:alpha/coder"));
	assert_false(scope_matches(&agent, who, "127.0.0.1", "project:alpha"));
	assert_false(scope_matches(&agent, who, "127.0.0.1", "project:alpha/coder2"));
	assert_false(scope_matches(&agent, who, "127.0.0.1", "project:alpha/other"));
	/* the run's address scope still names only that run */
	assert_int_equal(scope_parse(who, &proj, &err), 0);
	assert_false(scope_matches(&proj, "127.0.0.1@sluice-ba9876543210", "127.0.0.1",
				   "project:alpha"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_project_parse),
		cmocka_unit_test(test_project_matches),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
