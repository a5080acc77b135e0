/*
 * test_runnote.c: the note `sluice run` leaves the proxy (lib/runnote.c):
 * its format read back, what the parser refuses, the command line quoted
 * and bounded.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "guard.h"
#include "runnote.h"

#define NONCE "0123456789abcdef0123456789abcdef"

/* Parse text placed before a guard page. */
static int parse(const char *text, struct runnote *n)
{
	char *g = guard_copy(text, strlen(text));
	int rc = runnote_parse(g, strlen(text), n);

	guard_free(g, strlen(text));
	return rc;
}

static void test_round_trip(void **state)
{
	struct runnote a = { .id = "0123456789ab", .nonce = NONCE, .name = "agent-a",
			     .project = "demo", .cmd = "sh -c 'exit 5'", .start_ms = 1765000000000 };
	struct runnote b;
	char buf[RUNNOTE_MAX_BYTES];
	int len;

	(void)state;
	len = runnote_format(&a, buf, sizeof(buf));
	assert_true(len > 0);
	assert_string_equal(buf, "sluice-runnote v1\nid 0123456789ab\nnonce " NONCE "\nname agent-a\n"
				 "project demo\nstart 1765000000000\ncmd sh -c 'exit 5'\n");
	assert_int_equal(parse(buf, &b), 0);
	assert_memory_equal(&a, &b, sizeof(a));
	/* ended, no nonce, no name, no project */
	memset(a.nonce, 0, sizeof(a.nonce));
	memset(a.name, 0, sizeof(a.name));
	memset(a.project, 0, sizeof(a.project));
	a.ended = true;
	a.status = 255;
	a.end_ms = 1765000001234;
	len = runnote_format(&a, buf, sizeof(buf));
	assert_string_equal(buf, "sluice-runnote v1\nid 0123456789ab\nstart 1765000000000\n"
				 "cmd sh -c 'exit 5'\nend 255 1765000001234\n");
	assert_int_equal(parse(buf, &b), 0);
	assert_memory_equal(&a, &b, sizeof(a));
	/* what cannot be written */
	a.status = 256;
	assert_int_equal(runnote_format(&a, buf, sizeof(buf)), -1);
	a.status = 0;
	assert_int_equal(runnote_format(&a, buf, 40), -1);
	snprintf(a.name, sizeof(a.name), "two words");
	assert_int_equal(runnote_format(&a, buf, sizeof(buf)), -1);
}

static void test_refused(void **state)
{
	static const char *const bad[] = {
		"",
		"sluice-runnote v2\nid 0123456789ab\nstart 1\ncmd x\n",
		"sluice-runnote v1\nid 0123456789AB\nstart 1\ncmd x\n",   /* upper case */
		"sluice-runnote v1\nid 0123456789a\nstart 1\ncmd x\n",    /* short */
		"sluice-runnote v1\nid 0123456789ab\nstart 1\ncmd x",     /* no last newline */
		"sluice-runnote v1\nid 0123456789ab\nstart 1\ncmd a\tb\n", /* a control byte */
		"sluice-runnote v1\nid 0123456789ab\nstart 1\ncmd \n",    /* empty */
		"sluice-runnote v1\nid 0123456789ab\nstart x\ncmd x\n",
		"sluice-runnote v1\nid 0123456789ab\nnonce 0123\nstart 1\ncmd x\n",
		"sluice-runnote v1\nid 0123456789ab\nname a b\nstart 1\ncmd x\n",
		"sluice-runnote v1\nid 0123456789ab\nproject demo\nname a\nstart 1\ncmd x\n", /* order */
		"sluice-runnote v1\nid 0123456789ab\nstart 1\ncmd x\nend 256 2\n",
		"sluice-runnote v1\nid 0123456789ab\nstart 1\ncmd x\nend 0\n",
		"sluice-runnote v1\nid 0123456789ab\nstart 1\ncmd x\nend 0 2\nend 0 2\n",
		"sluice-runnote v1\nid 0123456789ab\nstart 1\ncmd x\nextra\n",
	};
	struct runnote n;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(parse(bad[i], &n), -1);
	assert_int_equal(parse("sluice-runnote v1\nid 0123456789ab\nstart 1\ncmd x\n", &n), 0);
}

static void test_cmd(void **state)
{
	char *simple[] = { "curl", "-s", "https://example.com/a?b=1", NULL };
	char *quoted[] = { "sh", "-c", "echo 'hi' there", "", "a\nb", NULL };
	char *long_one[] = { "x", NULL, NULL };
	char big[3000], out[RUNNOTE_CMD_MAX + 1], small[16];

	(void)state;
	runnote_cmd(simple, out, sizeof(out));
	assert_string_equal(out, "curl -s 'https://example.com/a?b=1'");
	runnote_cmd(quoted, out, sizeof(out));
	assert_string_equal(out, "sh -c 'echo '\\''hi'\\'' there' '' 'a\\x0ab'");
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	long_one[1] = big;
	runnote_cmd(long_one, out, sizeof(out));
	assert_int_equal(strlen(out), RUNNOTE_CMD_MAX);
	assert_string_equal(out + RUNNOTE_CMD_MAX - 3, "...");
	runnote_cmd(simple, small, sizeof(small));
	assert_string_equal(small, "curl -s 'htt..."); /* 15 bytes and the NUL */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_cmd),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
