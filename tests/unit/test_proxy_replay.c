/*
 * test_proxy_replay.c: the stamp replay window kept in STATE/stamp.seen
 * and the state files under it (proxy/replay.c: state_open, state_map,
 * state_map_fd): made fresh 0600 with its header; a stamp seen before a
 * restart refused after it; a file of another size, or of the right size
 * with a damaged header, started empty, saying so on stderr in its exact
 * words; a symbolic link, a hard link or a directory in its place
 * refused; a state directory whose path is too long refused.
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
#include <sys/stat.h>
#include <unistd.h>

#include "proxy_fakes.h"
#include "stamp.h"

/* replay.c's file: the header, then the window */
struct layout {
	struct state_head head;
	struct stamp_replay window;
};

static void path_of(const struct fake_proxy *fp, char *out, size_t size)
{
	snprintf(out, size, "%s/stamp.seen", fp->dir);
}

/* replay_open with stderr kept: its return, and what it said into *said (caller frees). */
static int open_said(struct fake_proxy *fp, char **said)
{
	int r;

	fake_stderr_begin();
	r = replay_open(&fp->px);
	*said = fake_stderr_end();
	return r;
}

static void test_fresh_and_kept(void **state)
{
	struct fake_proxy *fp = fake_proxy_new("");
	char path[256], *said;
	struct layout l;
	struct stat st;
	FILE *f;

	assert_int_equal(open_said(fp, &said), 0);
	assert_string_equal(said, ""); /* a new file is no news */
	free(said);
	path_of(fp, path, sizeof(path));
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(st.st_size, sizeof(struct layout));
	assert_true(stamp_replay_check(fp->px.replay, "00000000000000aa", 7));
	assert_false(stamp_replay_check(fp->px.replay, "00000000000000aa", 7));
	/* written through the map, at once: the file says it before any close */
	f = fopen(path, "r");
	assert_non_null(f);
	assert_int_equal(fread(&l, sizeof(l), 1, f), 1);
	fclose(f);
	assert_string_equal(l.head.magic, "sluice stamp.seen v1");
	assert_int_equal(l.head.size, sizeof(l));
	assert_string_equal(l.window.boots[0].boot, "00000000000000aa");
	replay_close(&fp->px);
	assert_null(fp->px.replay);
	replay_close(&fp->px); /* twice: nothing */

	/* a restart: what was seen is still refused, what was not passes */
	assert_int_equal(open_said(fp, &said), 0);
	assert_string_equal(said, "");
	free(said);
	assert_false(stamp_replay_check(fp->px.replay, "00000000000000aa", 7));
	assert_true(stamp_replay_check(fp->px.replay, "00000000000000aa", 8));
	replay_close(&fp->px);
	fake_proxy_free(fp);
}

/* Write n bytes of b into path. */
static void put_file(const char *path, const void *b, size_t n)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fwrite(b, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
}

static void test_foreign(void **state)
{
	struct fake_proxy *fp = fake_proxy_new("");
	char path[256], want[512], *said;
	struct layout l;

	path_of(fp, path, sizeof(path));
	/* another size: started empty, said */
	put_file(path, "garbage", 7);
	assert_int_equal(open_said(fp, &said), 0);
	snprintf(want, sizeof(want), "sluice-proxy: %s: not a replay window of this version (7 "
		 "bytes); starting with an empty one\n", path);
	assert_string_equal(said, want);
	free(said);
	assert_true(stamp_replay_check(fp->px.replay, "00000000000000bb", 1));
	replay_close(&fp->px);

	/* the right size, a damaged header: started empty, said; what it held is gone */
	memset(&l, 0, sizeof(l));
	snprintf(l.head.magic, sizeof(l.head.magic), "sluice stamp.seen v0");
	l.head.size = sizeof(l);
	snprintf(l.window.boots[0].boot, sizeof(l.window.boots[0].boot), "00000000000000bb");
	l.window.boots[0].top = 2;
	put_file(path, &l, sizeof(l));
	assert_int_equal(open_said(fp, &said), 0);
	snprintf(want, sizeof(want), "sluice-proxy: %s: damaged header; starting with an empty a "
		 "replay window\n", path);
	assert_string_equal(said, want);
	free(said);
	assert_true(stamp_replay_check(fp->px.replay, "00000000000000bb", 1));
	replay_close(&fp->px);

	/* the right magic and a wrong size in the header: the same */
	l.head.size = sizeof(l) + 1;
	snprintf(l.head.magic, sizeof(l.head.magic), "sluice stamp.seen v1");
	put_file(path, &l, sizeof(l));
	assert_int_equal(open_said(fp, &said), 0);
	assert_string_equal(said, want);
	free(said);
	replay_close(&fp->px);
	fake_proxy_free(fp);
}

static void test_refused(void **state)
{
	struct fake_proxy *fp = fake_proxy_new("");
	char path[256], other[256], want[512], *said;

	path_of(fp, path, sizeof(path));
	snprintf(other, sizeof(other), "%s/elsewhere", fp->dir);
	put_file(other, "x", 1);
	/* a symbolic link in its place: refused, the file it names untouched */
	assert_int_equal(symlink(other, path), 0);
	assert_int_equal(open_said(fp, &said), -1);
	assert_null(fp->px.replay);
	assert_true(strncmp(said, "sluice-proxy: ", 14) == 0);
	assert_non_null(strstr(said, path));
	free(said);
	{
		struct stat st;

		assert_int_equal(stat(other, &st), 0);
		assert_int_equal(st.st_size, 1);
	}
	unlink(path);
	/* a hard link: a second name could be someone else's */
	assert_int_equal(link(other, path), 0);
	assert_int_equal(open_said(fp, &said), -1);
	assert_non_null(strstr(said, path));
	free(said);
	unlink(path);
	/* a directory */
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(open_said(fp, &said), -1);
	free(said);
	rmdir(path);
	/* a state directory whose path is too long */
	memset(fp->px.config->state_dir, 'd', sizeof(fp->px.config->state_dir) - 1);
	fp->px.config->state_dir[sizeof(fp->px.config->state_dir) - 1] = '\0';
	assert_int_equal(open_said(fp, &said), -1);
	snprintf(want, sizeof(want), "sluice-proxy: state dir path too long\n");
	assert_string_equal(said, want);
	free(said);
	assert_null(fp->px.replay);
	fake_proxy_free(fp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fresh_and_kept),
		cmocka_unit_test(test_foreign),
		cmocka_unit_test(test_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
