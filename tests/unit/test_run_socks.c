/*
 * test_run_socks.c: the name in a line of /proc/net/unix
 * (run_socks_line), each line placed right before a PROT_NONE page
 * (guard.h), so an over-read faults. The lines are the shape the kernel
 * writes (net/unix/af_unix.c's unix_seq_show).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "../../cli/run.h"
#include "guard.h"

/* The name run_socks_line finds in line, "" for none. */
static const char *name_of(const char *line)
{
	static char out[256];
	const char *name = NULL;
	char *g = guard_str(line);
	size_t n = run_socks_line(g, strlen(line), &name);

	assert_true(n < sizeof(out));
	if (n > 0) {
		assert_true(name > g && name + n == g + strlen(line));
		memcpy(out, name, n);
	}
	out[n] = '\0';
	return out;
}

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(name_of("00000000400d3e65: 00000002 00000000 00010000 0001 01 24467 /tmp/zzt1.sock"),
			    "/tmp/zzt1.sock");
	assert_string_equal(name_of("0000000000000000: 00000003 00000000 00000000 0001 03    42 /run/dbus/system_bus_socket"),
			    "/run/dbus/system_bus_socket");
	assert_string_equal(name_of("ffff8880049a1c00: 00000002 00000000 00010000 0005 01 1234567 /a b/c d"), "/a b/c d");
	assert_string_equal(name_of("0000000000000000: 00000002 00000000 00000000 0002 01 9 /"), "/");
}

static void test_none(void **state)
{
	static const char *none[] = {
		"Num       RefCount Protocol Flags    Type St Inode Path",
		"0000000000000000: 00000003 00000000 00000000 0001 03    42",
		"0000000000000000: 00000003 00000000 00000000 0001 03    42 ",
		"0000000000000000: 00000002 00000000 00010000 0001 01 24467 @/tmp/.X11-unix/X0",
		"0000000000000000: 00000002 00000000 00010000 0001 01 24467 rel.sock",
		"0000000000000000: 00000002 00000000 00010000 0001 01 24467",
		"0000000000000000: 00000002 00000000 00010000 0001 01",
		"0000000000000000 00000002 00000000 00010000 0001 01 24467 /x",
		"0000000000000000: 00000002 00000000 00010000 0001 01 24467  /x",
		"0000000000000000: 00000002 0000000g 00010000 0001 01 24467 /x",
		"0000000000000000: 00000002 00000000 00010000 0001 01 /x",
		" 00000002 00000000 00010000 0001 01 24467 /x",
		"",
		":",
		": ",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++)
		assert_string_equal(name_of(none[i]), "");
}

static void test_nul(void **state)
{
	static const char line[] = "0000000000000000: 00000002 00000000 00010000 0001 01 24467 /x\0y";
	const char *name = NULL;
	char *g = guard_copy(line, sizeof(line) - 1);

	(void)state;
	assert_int_equal(run_socks_line(g, sizeof(line) - 1, &name), 0);
	assert_int_equal(run_socks_line(g, sizeof(line) - 3, &name), 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_none),
		cmocka_unit_test(test_nul),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
