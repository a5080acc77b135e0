/*
 * test_runfile.c: a daemon's run file (lib/runfile.c): written, locked,
 * read back; what the parser refuses; an unlocked file is a stopped daemon.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "runfile.h"
#include "sockaddr.h"

#define ID "0123456789abcdef"

static void test_parse(void **state)
{
	static const char ok[] = ID "\npid 42\nlisten 127.0.0.1:3128\nlisten unix:/run/p.sock\n";
	static const char *const bad[] = {
		"",
		ID,                          /* no newline */
		"0123456789ABCDEF\n",        /* upper case */
		"0123456789abcde\n",         /* short */
		ID "\npid 0\n",
		ID "\npid -1\n",
		ID "\npid 12x\n",
		ID "\npid +42\n",           /* strtol took a sign */
		ID "\npid  42\n",           /* and blanks before the digits */
		ID "\npid \t42\n",
		ID "\npid 1073741824\n",    /* past 0x3fffffff */
		ID "\npid 1\npid 2\n",
		ID "\nlisten nowhere\n",
		ID "\nlisten 127.0.0.1:3128",  /* cut short */
		ID "\nwhat 1\n",
	};
	struct runfile rf;
	char buf[128];

	(void)state;
	assert_int_equal(runfile_parse(ok, strlen(ok), &rf), 0);
	assert_string_equal(rf.id, ID);
	assert_int_equal(rf.pid, 42);
	assert_int_equal(rf.nlisten, 2);
	assert_string_equal(sockaddr_format(&rf.listen[0], buf, sizeof(buf)), "127.0.0.1:3128");
	assert_string_equal(sockaddr_format(&rf.listen[1], buf, sizeof(buf)), "unix:/run/p.sock");
	/* the file an older proxy wrote: the id alone */
	assert_int_equal(runfile_parse(ID "\n", 17, &rf), 0);
	assert_int_equal(rf.pid, 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(runfile_parse(bad[i], strlen(bad[i]), &rf), -1);
}

static void test_write_read(void **state)
{
	char dir[] = "/tmp/test_runfile.XXXXXX", path[64];
	struct runfile rf = { .pid = 77 }, back;
	int fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(sockaddr_parse("[::1]:53", 0, 0, &rf.listen[0]), 0);
	rf.nlisten = 1;
	assert_int_equal(runfile_read(dir, "x.run", &back), -1);
	assert_int_equal(errno, ENOENT);
	fd = runfile_write(dir, "x.run", &rf);
	assert_true(fd >= 0);
	assert_int_equal(strlen(rf.id), 16);
	assert_int_equal(runfile_read(dir, "x.run", &back), 0);
	assert_string_equal(back.id, rf.id);
	assert_int_equal(back.pid, 77);
	assert_int_equal(back.nlisten, 1);
	/* the lock let go (the daemon died) and the file left behind: stopped */
	close(fd);
	assert_int_equal(runfile_read(dir, "x.run", &back), -1);
	assert_int_equal(errno, ESRCH);
	runfile_remove(dir, "x.run", -1);
	assert_int_equal(runfile_read(dir, "x.run", &back), -1);
	assert_int_equal(errno, ENOENT);
	snprintf(path, sizeof(path), "%s", dir);
	assert_int_equal(rmdir(path), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_write_read),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
