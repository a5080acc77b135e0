/*
 * test_ports.c: the port band registry: parsing (every kind of damage),
 * lookup, allocation order, reuse of a released band, a full registry and
 * format -> parse round trips.
 *
 * Every parser input is placed right before a PROT_NONE page (guard.h), so
 * an over-read faults.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guard.h"
#include "ports.h"

#define H PORTS_HEADER

static struct ports reg; /* big: keep it off the stack */

/* Parse s from a guarded copy; returns ports_parse's result, line and err out. */
static int parse_str(const char *s, size_t len, size_t *line, const char **err)
{
	char *g = guard_copy(s, len);
	int rc = ports_parse(g, len, &reg, line, err);

	guard_free(g, len);
	return rc;
}

static void test_parse_good(void **state)
{
	const char *text = H "41000 /home/a/proj\n41400 b with spaces\n41200 caf\xc3\xa9\n";
	char *g = guard_str(text);
	size_t line;
	const char *err;

	assert_int_equal(ports_parse(g, strlen(text), &reg, &line, &err), 0);
	assert_int_equal(reg.n, 3);
	assert_int_equal(reg.band[0].base, 41000);
	assert_int_equal(reg.band[0].len, strlen("/home/a/proj"));
	assert_memory_equal(reg.band[0].project, "/home/a/proj", reg.band[0].len);
	assert_int_equal(reg.band[1].base, 41400);
	assert_non_null(ports_find(&reg, "b with spaces", 13));
	assert_null(ports_find(&reg, "b with space", 12));
	assert_int_equal(ports_find(&reg, "caf\xc3\xa9", 5)->base, 41200);
	guard_free(g, strlen(text));

	/* header only: an empty registry; the last band fits below 65535 */
	assert_int_equal(parse_str(H, strlen(H), &line, &err), 0);
	assert_int_equal(reg.n, 0);
	assert_int_equal(parse_str(H "65200 last\n", strlen(H "65200 last\n"), &line, &err), 0);
	assert_int_equal(PORTS_BANDS_MAX, 122);
	assert_int_equal(PORTS_LAST_BASE + PORTS_BAND - 1, 65399);
}

static void test_parse_bad(void **state)
{
	static const struct {
		const char *text;
		size_t line;
		const char *why;
	} cases[] = {
		{ "", 1, "not a port band registry" },
		{ "# sluice port bands v2\n", 1, "not a port band registry" },
		{ "41000 a\n", 1, "not a port band registry" },
		{ "# sluice port bands v1", 1, "not a port band registry" },
		{ H "41000 a", 2, "cut short" },
		{ H "\n", 2, "empty line" },
		{ H "41000 a\n\n", 3, "empty line" },
		{ H "x1000 a\n", 2, "bad base" },
		{ H "041000 a\n", 2, "bad base" },
		{ H "410000 a\n", 2, "bad base" },
		{ H "-41000 a\n", 2, "bad base" },
		{ H "41000\ta\n", 2, "bad base" },
		{ H "41000\n", 2, "missing project" },
		{ H "40800 a\n", 2, "out of range" },
		{ H "65400 a\n", 2, "out of range" },
		{ H "99999 a\n", 2, "out of range" },
		{ H "41100 a\n", 2, "band boundary" },
		{ H "41000 \n", 2, "empty project" },
		{ H "41000  a\n", 2, "blank at either end" },
		{ H "41000 a \n", 2, "blank at either end" },
		{ H "41000 a\rb\n", 2, "control byte" },
		{ H "41000 a\x7f\n", 2, "control byte" },
		{ H "41000 a\n41200 b\n41000 c\n", 4, "base given twice" },
		{ H "41000 a\n41200 a\n", 3, "project given twice" },
	};
	size_t line;
	const char *err;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		line = 0;
		err = NULL;
		assert_int_equal(parse_str(cases[i].text, strlen(cases[i].text), &line, &err), -1);
		assert_int_equal(line, cases[i].line);
		assert_non_null(err);
		if (strstr(err, cases[i].why) == NULL)
			fail_msg("case %zu: \"%s\" lacks \"%s\"", i, err, cases[i].why);
		assert_int_equal(reg.n, 0);
	}
	/* a NUL inside a project is a control byte */
	assert_int_equal(parse_str(H "41000 a\0b\n", sizeof(H "41000 a\0b\n") - 1, &line, &err), -1);
	assert_int_equal(line, 2);
	assert_non_null(strstr(err, "control byte"));
}

static void test_project_length(void **state)
{
	char text[sizeof(H) + 6 + PORTS_PROJECT_MAX + 2];
	size_t hl = strlen(H), line;
	const char *err;

	memcpy(text, H "41000 ", hl + 6);
	memset(text + hl + 6, 'p', PORTS_PROJECT_MAX);
	text[hl + 6 + PORTS_PROJECT_MAX] = '\n';
	assert_int_equal(parse_str(text, hl + 7 + PORTS_PROJECT_MAX, &line, &err), 0);
	assert_int_equal(reg.band[0].len, PORTS_PROJECT_MAX);
	text[hl + 6 + PORTS_PROJECT_MAX] = 'p';
	text[hl + 7 + PORTS_PROJECT_MAX] = '\n';
	assert_int_equal(parse_str(text, hl + 8 + PORTS_PROJECT_MAX, &line, &err), -1);
	assert_int_equal(line, 2);
	assert_non_null(strstr(err, "longer than 1024"));
	assert_null(ports_project_check("p", 1));
	assert_non_null(ports_project_check("", 0));
}

static void test_override(void **state)
{
	assert_false(ports_override_ok(1023));
	assert_true(ports_override_ok(1024));
	assert_true(ports_override_ok(65336));
	assert_false(ports_override_ok(65337));
	assert_false(ports_override_ok(70000));
}

static void test_alloc_order(void **state)
{
	char names[PORTS_BANDS_MAX][8];

	reg.n = 0;
	assert_int_equal(ports_alloc(&reg, "a", 1), 41000);
	assert_int_equal(ports_alloc(&reg, "b", 1), 41200);
	assert_int_equal(ports_alloc(&reg, "c", 1), 41400);
	/* the same project keeps its band */
	assert_int_equal(ports_alloc(&reg, "b", 1), 41200);
	assert_int_equal(reg.n, 3);
	/* a released band is reused first, and the order stays sorted */
	assert_int_equal(ports_remove(&reg, "b", 1), 0);
	assert_int_equal(ports_remove(&reg, "b", 1), -1);
	assert_int_equal(reg.n, 2);
	assert_int_equal(ports_alloc(&reg, "d", 1), 41200);
	assert_int_equal(reg.band[1].base, 41200);
	assert_memory_equal(reg.band[1].project, "d", 1);
	assert_int_equal(ports_alloc(&reg, "e", 1), 41600);
	assert_int_equal(ports_remove(&reg, "a", 1), 0);
	assert_int_equal(ports_alloc(&reg, "f", 1), 41000);
	for (size_t i = 1; i < reg.n; i++)
		assert_true(reg.band[i - 1].base < reg.band[i].base);

	/* fill every band: the next one is refused, the registry unchanged */
	reg.n = 0;
	for (size_t i = 0; i < PORTS_BANDS_MAX; i++) {
		snprintf(names[i], sizeof(names[i]), "p%zu", i);
		assert_int_equal(ports_alloc(&reg, names[i], strlen(names[i])),
				 PORTS_FIRST + (long)i * PORTS_BAND);
	}
	assert_int_equal(reg.band[PORTS_BANDS_MAX - 1].base, 65200);
	assert_int_equal(ports_alloc(&reg, "late", 4), -1);
	assert_int_equal(reg.n, PORTS_BANDS_MAX);
	/* but a project that has a band still gets it */
	assert_int_equal(ports_alloc(&reg, "p7", 2), 41000 + 7 * 200);
	assert_int_equal(ports_remove(&reg, "p60", 3), 0);
	assert_int_equal(ports_alloc(&reg, "late", 4), 41000 + 60 * 200);
}

static void test_round_trip(void **state)
{
	static struct ports again;
	const char *text = H "41400 x\n41000 /a b/c\n65200 z\n";
	static char out[PORTS_TEXT_MAX];
	size_t line, n;
	const char *err;
	char small[10];

	/* from the literal itself: reg points into what it parsed */
	assert_int_equal(ports_parse(text, strlen(text), &reg, &line, &err), 0);
	n = ports_format(&reg, out, sizeof(out));
	assert_int_equal(n, strlen(text));
	assert_string_equal(out, text);
	assert_int_equal(ports_parse(out, n, &again, &line, &err), 0);
	assert_int_equal(again.n, reg.n);
	for (size_t i = 0; i < reg.n; i++) {
		assert_int_equal(again.band[i].base, reg.band[i].base);
		assert_int_equal(again.band[i].len, reg.band[i].len);
		assert_memory_equal(again.band[i].project, reg.band[i].project, reg.band[i].len);
	}
	/* too small: the length still counts, the output is cut and terminated */
	assert_int_equal(ports_format(&reg, small, sizeof(small)), strlen(text));
	assert_int_equal(strlen(small), sizeof(small) - 1);
	assert_int_equal(ports_format(&reg, NULL, 0), strlen(text));
	/* an empty registry is its header */
	reg.n = 0;
	assert_int_equal(ports_format(&reg, out, sizeof(out)), strlen(H));
	assert_string_equal(out, H);
}

/* A project's NAME: a NAME given is itself; a directory gets BASENAME-HASH, stable. */
static void test_name_of(void **state)
{
	char out[PORTS_NAME_MAX + 1], again[PORTS_NAME_MAX + 1];
	const char *long_dir = "/srv/an extremely long directory name, with spaces: and more";

	(void)state;
	assert_true(ports_name_valid("alpha"));
	assert_true(ports_name_valid("A.b_c-9"));
	assert_true(ports_name_valid("0123456789012345678901234567890123456789"));
	assert_false(ports_name_valid("01234567890123456789012345678901234567890"));
	assert_false(ports_name_valid(""));
	assert_false(ports_name_valid("a b"));
	assert_false(ports_name_valid("a/b"));
	assert_false(ports_name_valid("a:b"));
	ports_name_of("alpha", 5, out);
	assert_string_equal(out, "alpha");
	/* a path: its basename, sanitized, and 16 hex of SHA-256 of the whole path */
	ports_name_of("/home/a/proj", 12, out);
	assert_string_equal(out, "proj-4bd27bda97cc490a");
	ports_name_of("/home/a/proj", 12, again);
	assert_string_equal(out, again);
	ports_name_of("/home/b/proj", 12, again);
	assert_string_not_equal(out, again);
	assert_memory_equal(again, "proj-", 5);
	/*
	 * A directory an agent can make must not take another project's NAME
	 * (its grants): these two collide under a 32-bit FNV-1a (a review found
	 * them in seconds); 64 bits of SHA-256 do not.
	 */
	ports_name_of("/home/op/work/secretproj", 24, out);
	ports_name_of("/tmp/agent/6qxbcit/secretproj", 29, again);
	assert_string_not_equal(out, again);
	ports_name_of("/home/a/my proj:x", 17, out);
	assert_memory_equal(out, "my-proj-x-", 10);
	assert_int_equal(strlen(out), 10 + 16);
	ports_name_of("/", 1, out);
	assert_memory_equal(out, "dir-", 4);
	ports_name_of("/home/a/proj/", 13, out);
	assert_memory_equal(out, "proj-", 5);
	ports_name_of(long_dir, strlen(long_dir), out);
	assert_int_equal(strlen(out), 40);
	assert_memory_equal(out, "an-extremely-long-direc-", 24);
	assert_true(ports_name_valid(out));
	/* a project of the registry that is no NAME and no path is hashed too */
	ports_name_of("my project", 10, out);
	assert_memory_equal(out, "my-project-", 11);
	assert_true(ports_name_valid(out));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_good),   cmocka_unit_test(test_parse_bad),
		cmocka_unit_test(test_project_length), cmocka_unit_test(test_override),
		cmocka_unit_test(test_alloc_order),  cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_name_of),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
