/*
 * test_file.c: file_refusal (which files root may use in a directory another
 * user can write) and file_open_owned against real links, FIFOs and owners.
 * Run as root, the owner cases chown to an unused uid.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file.h"

#define OTHER ((uid_t)54321)

static struct stat reg(uid_t uid, nlink_t links)
{
	struct stat st;

	memset(&st, 0, sizeof(st));
	st.st_mode = S_IFREG | 0600;
	st.st_uid = uid;
	st.st_nlink = links;
	return st;
}

static void test_refusal(void **state)
{
	struct stat st;

	(void)state;
	st = reg(0, 1);
	assert_null(file_refusal(&st, 0, FILE_NO_UID));
	st = reg(1000, 1);
	assert_null(file_refusal(&st, 1000, FILE_NO_UID)); /* ours */
	assert_non_null(file_refusal(&st, 0, FILE_NO_UID));
	assert_null(file_refusal(&st, 0, 1000)); /* the proxy's user */
	assert_non_null(file_refusal(&st, 0, 1001));
	st = reg(0, 2);
	assert_string_equal(file_refusal(&st, 0, FILE_NO_UID), "a hard link (more than one name)");
	st = reg(0, 1);
	st.st_mode = S_IFLNK | 0777;
	assert_string_equal(file_refusal(&st, 0, FILE_NO_UID), "not a regular file");
	st.st_mode = S_IFIFO | 0600;
	assert_non_null(file_refusal(&st, 0, FILE_NO_UID));
	st.st_mode = S_IFDIR | 0700;
	assert_non_null(file_refusal(&st, 0, FILE_NO_UID));
}

static void test_open_owned(void **state)
{
	char dir[64], target[96], sym[96], hard[96], fifo[96], mine[96], buf[16];
	const char *why;
	struct stat st;
	int fd;

	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/sluice-file.XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(target, sizeof(target), "%s/target", dir);
	snprintf(sym, sizeof(sym), "%s/link", dir);
	snprintf(hard, sizeof(hard), "%s/hard", dir);
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	snprintf(mine, sizeof(mine), "%s/mine", dir);

	fd = file_open_owned(target, O_WRONLY | O_CREAT | O_APPEND, 0600, FILE_NO_UID, &why);
	assert_true(fd >= 0);
	assert_null(why);
	assert_int_equal(write(fd, "x\n", 2), 2);
	assert_true((fcntl(fd, F_GETFL) & O_NONBLOCK) == 0);
	assert_true((fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0);
	close(fd);

	/* a symbolic link, to a file or dangling, even with O_CREAT */
	assert_int_equal(symlink(target, sym), 0);
	fd = file_open_owned(sym, O_WRONLY | O_CREAT | O_APPEND, 0600, FILE_NO_UID, &why);
	assert_int_equal(fd, -1);
	assert_int_equal(errno, ELOOP);
	assert_string_equal(why, "a symbolic link");
	fd = file_open_owned(sym, O_RDONLY, 0, FILE_NO_UID, &why);
	assert_int_equal(fd, -1);
	unlink(sym);
	assert_int_equal(symlink("/nonexistent/sluice-x", sym), 0);
	fd = file_open_owned(sym, O_WRONLY | O_CREAT, 0600, FILE_NO_UID, &why);
	assert_int_equal(fd, -1);
	assert_int_equal(errno, ELOOP);

	/* a second name, read or written */
	assert_int_equal(link(target, hard), 0);
	fd = file_open_owned(hard, O_WRONLY | O_APPEND, 0, FILE_NO_UID, &why);
	assert_int_equal(fd, -1);
	assert_int_equal(errno, EPERM);
	assert_string_equal(why, "a hard link (more than one name)");
	assert_int_equal(file_open_owned(target, O_RDONLY, 0, FILE_NO_UID, &why), -1);
	unlink(hard);

	/* a FIFO is refused, not waited on */
	assert_int_equal(mkfifo(fifo, 0600), 0);
	fd = file_open_owned(fifo, O_WRONLY | O_APPEND | O_CREAT, 0600, FILE_NO_UID, &why);
	assert_int_equal(fd, -1);
	assert_true(errno == ENXIO || errno == EPERM); /* no reader: ENXIO before the check */
	fd = file_open_owned(fifo, O_RDONLY, 0, FILE_NO_UID, &why);
	assert_int_equal(fd, -1);
	assert_int_equal(errno, EPERM);
	assert_string_equal(why, "not a regular file");

	/* another uid's file: refused unless it is the one allowed */
	fd = open(mine, O_WRONLY | O_CREAT, 0600);
	assert_true(fd >= 0);
	close(fd);
	if (geteuid() == 0 && chown(mine, OTHER, OTHER) == 0) {
		fd = file_open_owned(mine, O_WRONLY | O_APPEND, 0, FILE_NO_UID, &why);
		assert_int_equal(fd, -1);
		assert_int_equal(errno, EPERM);
		assert_non_null(strstr(why, "not owned"));
		fd = file_open_owned(mine, O_WRONLY | O_APPEND, 0, OTHER, &why);
		assert_true(fd >= 0);
		close(fd);
	}
	assert_int_equal(stat(target, &st), 0);
	assert_int_equal(st.st_size, 2);
	fd = open(target, O_RDONLY);
	assert_int_equal(read(fd, buf, sizeof(buf)), 2);
	close(fd);
	unlink(target);
	unlink(fifo);
	unlink(mine);
	unlink(sym);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refusal),
		cmocka_unit_test(test_open_owned),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
