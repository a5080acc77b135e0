/*
 * test_allow_grant.c: cli/allow_grant.c alone, over cli/allow_store.c and
 * a real store in a temporary STATE: the words of a grant (--ttl
 * durations both ways, --level, GRANT), a grant stored at its level and
 * what is said of it, and a run's session grants added and taken back
 * without touching an operator's grant of the same pattern.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../cli/cli.h"

#define RUN_A "0123456789abcdef"
#define RUN_B "fedcba9876543210"

static void test_duration_parse(void **state)
{
	static const struct {
		const char *s;
		long long want; /* -1: refused */
	} cases[] = {
		{ "1", 1 },           { "90", 90 },         { "90s", 90 },
		{ "2m", 120 },        { "1h", 3600 },       { "3d", 259200 },
		{ "366d", 31622400 }, { "31622400", 31622400 },
		{ "367d", -1 },       { "31622401", -1 },   { "0", -1 },
		{ "0m", -1 },         { "", -1 },           { "m", -1 },
		{ "5x", -1 },         { "5mm", -1 },        { "-1", -1 },
		{ "+5", -1 },         { " 5", -1 },         { "5 ", -1 },
		{ "99999999999999999999", -1 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		long long got = -7;
		int rc = allow_duration_parse(cases[i].s, &got);

		if (cases[i].want == -1) {
			assert_int_equal(rc, -1);
			assert_int_equal(got, -7); /* nothing written */
		} else {
			assert_int_equal(rc, 0);
			assert_int_equal(got, cases[i].want);
		}
	}
}

static void test_duration_format(void **state)
{
	static const struct {
		long long secs;
		const char *want;
	} cases[] = {
		{ 1, "1s" },       { 59, "59s" },      { 60, "1m0s" },   { 112, "1m52s" },
		{ 3599, "59m59s" }, { 3600, "1h0m" },  { 11040, "3h4m" }, { 86399, "23h59m" },
		{ 86400, "1d0h" }, { 176400, "2d1h" }, { 31622400, "366d0h" },
	};
	char buf[32];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_string_equal(allow_duration_format(cases[i].secs, buf, sizeof(buf)),
				    cases[i].want);
}

static void test_level_ttl(void **state)
{
	enum grant_level level = GRANT_CONFIG;
	long long ttl = 0;

	(void)state;
	assert_int_equal(allow_level_parse("once", &level), 0);
	assert_int_equal(level, GRANT_ONCE);
	assert_int_equal(allow_level_parse("session", &level), 0);
	assert_int_equal(level, GRANT_SESSION);
	assert_int_equal(allow_level_parse("permanent", &level), 0);
	assert_int_equal(level, GRANT_PERMANENT);
	assert_int_equal(allow_level_parse("Once", &level), -1);
	assert_int_equal(allow_level_parse("", &level), -1);
	assert_int_equal(level, GRANT_PERMANENT);

	assert_int_equal(allow_ttl_parse("90m", GRANT_ONCE, &ttl), 0);
	assert_int_equal(ttl, 5400);
	assert_int_equal(allow_ttl_parse("90m", GRANT_PERMANENT, &ttl), EXIT_USAGE);
	assert_int_equal(allow_ttl_parse("400d", GRANT_ONCE, &ttl), EXIT_USAGE);
	assert_int_equal(ttl, 5400);
}

static void test_pattern(void **state)
{
	struct grant g;
	char buf[ALLOW_PATTERN_MAX], who[GRANT_SCOPES_TEXT + 8];
	const char *err;

	(void)state;
	assert_int_equal(allow_pattern("Example.COM", &g), 0);
	assert_string_equal(allow_grant_label(&g, buf, sizeof(buf)), "example.com");
	assert_string_equal(allow_grant_scopes_text(&g, who, sizeof(who)), "");
	assert_string_equal(allow_grant_budget_text(&g, buf, sizeof(buf)), "-");
	assert_int_equal(allow_pattern("*.com", &g), -1);
	assert_int_equal(allow_pattern("", &g), -1);

	assert_int_equal(allow_pattern("x.example.com:8443", &g), 0);
	assert_int_equal(grant_tunnel_word(&g, "tunnel", 6, &err), 1);
	assert_int_equal(grant_scope_add(&g, "project:x", &err), 0);
	assert_string_equal(allow_grant_label(&g, buf, sizeof(buf)), "x.example.com:8443 tunnel");
	assert_string_equal(allow_grant_scopes_text(&g, who, sizeof(who)), " for project:x");
}

/* STATE in a fresh temporary directory, the config's grants none. */
static struct config *state_new(char *dir)
{
	struct config *c = config_new();

	assert_non_null(c);
	assert_non_null(mkdtemp(dir));
	snprintf(c->state_dir, sizeof(c->state_dir), "%s/state", dir);
	return c;
}

static void state_free(struct config *c, const char *dir)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
	config_free(c);
}

/* The store's grants of pattern: how many, and the level and run of the last. */
static size_t stored(const struct config *c, const char *pattern, struct grant *last)
{
	struct allow_store s;
	char buf[ALLOW_PATTERN_MAX];
	size_t n = 0;

	assert_int_equal(allow_store_load(c, &s), 0);
	for (size_t i = 0; i < s.n; i++)
		if (strcmp(grant_format(&s.g[i], buf, sizeof(buf)), pattern) == 0) {
			*last = s.g[i];
			n++;
		}
	free(s.g);
	return n;
}

static void test_session_grants(void **state)
{
	char dir[] = "/tmp/sluice-allow-grant-XXXXXX";
	struct config *c = state_new(dir);
	struct grant g;

	(void)state;
	/* added once for its run, kept for it, and a bad pattern changes nothing */
	assert_int_equal(allow_session_add(c, "example.com", RUN_A), 1);
	assert_int_equal(allow_session_add(c, "example.com", RUN_A), 0);
	assert_int_equal(allow_session_add(c, "*.com", RUN_A), -1);
	assert_int_equal(stored(c, "example.com", &g), 1);
	assert_int_equal(g.level, GRANT_SESSION);
	assert_string_equal(g.run, RUN_A);

	/* another proxy run: the dead one's grant is replaced, not added beside */
	assert_int_equal(allow_session_add(c, "example.com", RUN_B), 1);
	assert_int_equal(stored(c, "example.com", &g), 1);
	assert_string_equal(g.run, RUN_B);

	/* taken back only for the run that added it */
	assert_int_equal(allow_session_drop(c, "example.com", RUN_A), 0);
	assert_int_equal(stored(c, "example.com", &g), 1);
	assert_int_equal(allow_session_drop(c, "example.com", RUN_B), 0);
	assert_int_equal(stored(c, "example.com", &g), 0);
	state_free(c, dir);
}

static void test_grant_store(void **state)
{
	char dir[] = "/tmp/sluice-allow-grant-XXXXXX", *text = NULL;
	struct config *c = state_new(dir);
	struct grant g;
	size_t size = 0;
	FILE *out;

	(void)state;
	out = open_memstream(&text, &size);
	assert_non_null(out);
	assert_int_equal(allow_pattern("example.com", &g), 0);
	assert_int_equal(allow_grant(out, c, &g, GRANT_ONCE, 90), 0);
	assert_int_equal(allow_pattern("example.com", &g), 0);
	g.max_requests = 5;
	assert_int_equal(allow_grant(out, c, &g, GRANT_PERMANENT, 0), 0);
	fclose(out);
	assert_string_equal(text, "added example.com once, expires in 1m30s\n"
				  "replaced example.com permanent\n"
				  "budget for each principal: max-requests=5 over the grant's life "
				  "(until the proxy restarts)\n");
	free(text);
	assert_int_equal(stored(c, "example.com", &g), 1);
	assert_int_equal(g.level, GRANT_PERMANENT);

	/* an operator's grant of the pattern: a run neither adds beside it nor removes it */
	assert_int_equal(allow_session_add(c, "example.com", RUN_A), 0);
	assert_int_equal(allow_session_drop(c, "example.com", RUN_A), 0);
	assert_int_equal(stored(c, "example.com", &g), 1);
	assert_int_equal(g.level, GRANT_PERMANENT);

	/* a session grant with no proxy running: said, nothing stored */
	assert_int_equal(allow_pattern("other.example", &g), 0);
	assert_int_equal(allow_grant(stdout, c, &g, GRANT_SESSION, 0), -1);
	assert_int_equal(stored(c, "other.example", &g), 0);
	state_free(c, dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_duration_parse), cmocka_unit_test(test_duration_format),
		cmocka_unit_test(test_level_ttl),      cmocka_unit_test(test_pattern),
		cmocka_unit_test(test_session_grants), cmocka_unit_test(test_grant_store),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
