/*
 * test_config_agent.c: unit tests for agent profiles (lib/config_agent.c)
 * and the keys= source of the rules `sluice run --agent` hands over
 * (lib/inject_rule.c, inject_key_name): each shipped profile
 * (etc/agents/NAME.conf) loads without an error; what only a profile may hold
 * is refused in a config, and what a profile may not hold is refused in it,
 * file:line; a keys= rule needs principal= and prints back as read; the
 * handed-over agents.conf (STATE/agents.conf, read by config_load after the
 * config) holds `quiet HOST for=PRINCIPAL...`, a profile's quiet line only
 * the host, and a config none.
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

#include "config.h"
#include "config_fixture.h"
#include "inject.h"

/* A profile's text through config_profile_load (a temporary file); its errors into *errs. */
static struct config *profile(const char *text, int *nerr, char **errs)
{
	char path[] = "/tmp/sluice-profile-XXXXXX";
	int fd = mkstemp(path);
	size_t len = 0;
	FILE *f;
	struct config *c = config_new();

	assert_true(fd != -1);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	f = open_memstream(errs, &len);
	*nerr = config_profile_load(c, path, f);
	fclose(f);
	unlink(path);
	/* the temporary name is not the test's business: keep "file:line: ..." from the line on */
	for (char *p = *errs; (p = strstr(p, path)) != NULL;)
		memmove(p, "p", 1), memmove(p + 1, p + strlen(path), strlen(p + strlen(path)) + 1);
	return c;
}

static void test_shipped_profiles(void **state)
{
	static const char *const names[] = { "claude", "codex", "gemini" };

	(void)state;
	for (size_t i = 0; i < 3; i++) {
		char path[64];
		struct config *c = config_new();

		snprintf(path, sizeof(path), "etc/agents/%s.conf", names[i]);
		assert_int_equal(config_profile_load(c, path, stderr), 0);
		assert_true(c->nrules >= 1);
		assert_true(c->ngrants >= 2);
		assert_true(c->agent_about[0] != '\0');
		for (size_t k = 0; k < c->nrules; k++)
			assert_int_equal(c->rules[k].source, INJECT_ENV);
		config_free(c);
	}
}

static void test_profile(void **state)
{
	int nerr;
	char *errs;
	struct config *c = profile("about An agent  of tests\n"
				   "allow api.example\n"
				   "inject k host=api.example header=X-Key env=K_KEY\n"
				   "sandbox-env K_KEY=placeholder\n"
				   "quiet telemetry.example\nquiet *.sentry.example\n",
				   &nerr, &errs);

	(void)state;
	assert_string_equal(errs, "");
	assert_int_equal(nerr, 0);
	assert_string_equal(c->agent_about, "An agent of tests");
	assert_int_equal(c->nagent_env, 1);
	assert_string_equal(c->agent_env[0], "K_KEY=placeholder");
	assert_int_equal(c->nagent_quiet, 2);
	assert_true(c->agent_quiet[1].wildcard);
	free(errs);
	config_free(c);
}

static void test_profile_errors(void **state)
{
	int nerr;
	char *errs;
	struct config *c = profile("listen 127.0.0.1:1\n"
				   "inject a host=a.example header=X file=/k\n"
				   "inject b host=b.example header=X env=B principal=user\n"
				   "sandbox-env 1X=y\n"
				   "allow t.example\nquiet t.example\n",
				   &nerr, &errs);

	(void)state;
	assert_string_equal(errs,
		"p:1: listen: not in an agent profile (allow, inject, about, sandbox-env, quiet)\n"
		"p:4: sandbox-env: expected NAME=VALUE, got \"1X=y\"\n"
		"p:2: inject a: a profile's rule reads env= (the key in the environment of `sluice run --agent`)\n"
		"p:3: inject b: no principal= or unattributed= in a profile: it serves the run that asks for it\n"
		"p:0: quiet t.example: also allowed\n");
	assert_int_equal(nerr, 5);
	free(errs);
	config_free(c);
}

static void test_main_refuses_profile_lines(void **state)
{
	(void)state;
	expect_errors("about x\n", 1, "t.conf:1: about: only in an agent profile (etc/agents/NAME.conf)\n");
	expect_errors("quiet a.example\n", 1,
		      "t.conf:1: quiet: only in an agent profile (etc/agents/NAME.conf)\n");
}

static void test_keys_rule(void **state)
{
	struct config *c = parse_ok("inject k host=api.example header=X-Key keys=/s/agent-keys/k "
				    "principal=127.0.0.1@sluice-0123456789ab principal=user\n");
	char line[1024], name[300];

	(void)state;
	assert_int_equal(c->rules[0].source, INJECT_KEYS);
	assert_string_equal(c->rules[0].source_arg, "/s/agent-keys/k");
	assert_true(inject_rule_format(&c->rules[0], line, sizeof(line)) > 0);
	assert_string_equal(line, "inject k host=api.example header=X-Key keys=/s/agent-keys/k "
				  "principal=127.0.0.1@sluice-0123456789ab principal=user");
	config_free(c);
	expect_errors("inject k host=api.example header=X-Key keys=/s/k\n", 1,
		      "t.conf:1: inject k: keys= needs principal= (each principal's key is its own file)\n");
	expect_errors("inject k host=api.example header=X-Key keys=rel principal=user\n", 1,
		      "t.conf:1: inject k: keys= \"rel\": must be an absolute path\n");
	assert_int_equal(inject_key_name("a/b", name, sizeof(name)), 65);
	assert_string_equal(name, "kc14cddc033f64b9dea80ea675cf280a015e672516090a5626781153dc68fea11"); /* python3: "k" + hashlib.sha256(b"a/b").hexdigest() */
	assert_int_equal(inject_key_name("abc", name, 65), -1);
}

/* A config naming state dir, and dir/agents.conf holding handover, through config_load. */
static struct config *with_handover(const char *handover, int *nerr, char **errs)
{
	char dir[] = "/tmp/sluice-handover-XXXXXX", conf[64], hpath[96];
	struct config *c = config_new();
	size_t len = 0;
	FILE *f;

	assert_non_null(mkdtemp(dir));
	snprintf(conf, sizeof(conf), "%s/c.conf", dir);
	snprintf(hpath, sizeof(hpath), "%s/agents.conf", dir);
	f = fopen(conf, "w");
	assert_non_null(f);
	fprintf(f, "state %s\n", dir);
	fclose(f);
	f = fopen(hpath, "w");
	assert_non_null(f);
	fputs(handover, f);
	fclose(f);
	f = open_memstream(errs, &len);
	*nerr = config_load(c, conf, f);
	fclose(f);
	unlink(conf);
	unlink(hpath);
	rmdir(dir);
	for (char *p = *errs; (p = strstr(p, dir)) != NULL;)
		memmove(p, "S", 1), memmove(p + 1, p + strlen(dir), strlen(p + strlen(dir)) + 1);
	return c;
}

static void test_handover_quiet(void **state)
{
	int nerr;
	char *errs;
	struct config *c = with_handover("quiet statsig.example for=project:a/claude for=project:a/hold\n"
					 "quiet *.sentry.example for=127.0.0.1@sluice-0123456789ab\n",
					 &nerr, &errs);

	(void)state;
	assert_string_equal(errs, "");
	assert_int_equal(nerr, 0);
	assert_int_equal(c->nagent_quiet, 2);
	assert_string_equal(c->agent_quiet[0].host, "statsig.example");
	assert_false(c->agent_quiet[0].wildcard);
	assert_int_equal(c->agent_quiet[0].nscopes, 2);
	assert_string_equal(c->agent_quiet[0].scopes[1].text, "project:a/hold");
	assert_true(c->agent_quiet[1].wildcard);
	assert_string_equal(c->agent_quiet[1].host, "sentry.example");
	assert_int_equal(c->agent_quiet[1].nscopes, 1);
	free(errs);
	config_free(c);

	/* handed over, a quiet line names whom it is for; never a port, never a bad scope */
	c = with_handover("quiet statsig.example\nquiet a.example:443 for=user\n"
			  "quiet b.example for=\nquiet c.example tunnel\n", &nerr, &errs);
	assert_string_equal(errs,
		"S/agents.conf:1: quiet statsig.example: handed over, it names for=PRINCIPAL\n"
		"S/agents.conf:2: quiet: bad host \"a.example:443\": no port here\n"
		"S/agents.conf:3: quiet b.example: bad for=\"\": expected ADDR, ADDR@NET, "
		"container:<id>, build:<scope>, user, project:NAME[/AGENT] or a container name\n"
		"S/agents.conf:4: quiet c.example: expected for=PRINCIPAL, got \"tunnel\"\n");
	assert_int_equal(nerr, 4);
	free(errs);
	config_free(c);

	/* a profile's quiet line is the host alone: the run it serves is named at the hand-over */
	c = profile("quiet t.example for=user\n", &nerr, &errs);
	assert_string_equal(errs, "p:1: quiet t.example: for= only in the handed-over agents.conf\n");
	assert_int_equal(nerr, 1);
	free(errs);
	config_free(c);
	/* and a config may hold none, for= or not */
	expect_errors("quiet a.example for=user\n", 1,
		      "t.conf:1: quiet: only in an agent profile (etc/agents/NAME.conf)\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shipped_profiles),
		cmocka_unit_test(test_profile),
		cmocka_unit_test(test_profile_errors),
		cmocka_unit_test(test_main_refuses_profile_lines),
		cmocka_unit_test(test_keys_rule),
		cmocka_unit_test(test_handover_quiet),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
