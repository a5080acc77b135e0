/*
 * test_run_socks.c: the name in a line of /proc/net/unix
 * (run_socks_line), each line placed right before a PROT_NONE page
 * (guard.h), so an over-read faults. The lines are the shape the kernel
 * writes (net/unix/af_unix.c's unix_seq_show). And which names the list
 * keeps (run_socks_add): each once, and only one that leads to a socket
 * (a real one, bound in a temporary directory).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

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

/* A stream socket bound at dir/name (its fd), the path into path. */
static int bound(const char *dir, const char *name, char *path, size_t cap)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	snprintf(path, cap, "%s/%s", dir, name);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	assert_true(fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	return fd;
}

static void test_add(void **state)
{
	char dir[] = "/tmp/test_run_socks.XXXXXX", a[128], b[128], file[128], gone[128];
	struct run_socks s = { 0 };
	struct stat st;
	int fa, fb, f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	fa = bound(dir, "a.sock", a, sizeof(a));
	fb = bound(dir, "b.sock", b, sizeof(b));
	snprintf(file, sizeof(file), "%s/file", dir);
	snprintf(gone, sizeof(gone), "%s/gone.sock", dir);
	f = open(file, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	assert_true(f >= 0);
	close(f);

	/* each socket once, however often its name is listed; a file or nothing: not kept */
	for (int round = 0; round < 3; round++) {
		assert_int_equal(run_socks_add(&s, a, strlen(a)), 0);
		assert_int_equal(run_socks_add(&s, file, strlen(file)), 0);
		assert_int_equal(run_socks_add(&s, gone, strlen(gone)), 0);
		assert_int_equal(run_socks_add(&s, b, strlen(b)), 0);
	}
	/* a name given by its length: the prefix of a longer string */
	assert_int_equal(run_socks_add(&s, "/tmp/x", 0), 0);
	assert_int_equal(s.n, 2);
	assert_string_equal(s.names + s.socks[0].name, a);
	assert_string_equal(s.names + s.socks[1].name, b);
	assert_int_equal(stat(a, &st), 0);
	assert_true(s.socks[0].dev == st.st_dev && s.socks[0].ino == st.st_ino);

	/* many: the set grows and still finds each */
	for (int i = 0; i < 300; i++) {
		char name[32], p[128];

		snprintf(name, sizeof(name), "%d.sock", i);
		close(bound(dir, name, p, sizeof(p)));
		assert_int_equal(run_socks_add(&s, p, strlen(p)), 0);
		assert_int_equal(run_socks_add(&s, p, strlen(p)), 0);
		unlink(p);
	}
	assert_int_equal(s.n, 302);
	assert_int_equal(run_socks_add(&s, a, strlen(a)), 0);
	assert_int_equal(s.n, 302);
	run_socks_release(&s);
	assert_null(s.names);
	assert_int_equal(s.n, 0);

	close(fa);
	close(fb);
	unlink(a);
	unlink(b);
	unlink(file);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_none),
		cmocka_unit_test(test_nul),
		cmocka_unit_test(test_add),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
