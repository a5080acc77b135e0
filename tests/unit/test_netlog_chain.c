/*
 * test_netlog_chain.c: log-chain on, the writer's prev (netlog.c) and the
 * chain's helpers and checker (netlog_chain.c).
 *
 * The writer is run against files in a temporary directory and its rows
 * are hashed here again; the known answers come from sha256sum, not from
 * this code. netlog_chain_prev reads rows placed right before a PROT_NONE page
 * (guard.h), so an over-read faults.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file.h"
#include "guard.h"
#include "netlog.h"

/* printf 'abc' | sha256sum; printf '' | sha256sum */
#define SHA_ABC "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
#define SHA_EMPTY "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define MAX_LINES 256

struct lines {
	char *buf; /* the file, its newlines replaced by NULs */
	size_t len;
	char *line[MAX_LINES];
	size_t n;
};

static char dir[64];

static int dir_setup(void **state)
{
	snprintf(dir, sizeof(dir), "/tmp/sluice-chain.XXXXXX");
	assert_non_null(mkdtemp(dir));
	return 0;
}

static int dir_teardown(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
	return 0;
}

static void path_in(char *out, size_t size, const char *name)
{
	snprintf(out, size, "%s/%s", dir, name);
}

static void read_lines(const char *path, struct lines *l)
{
	memset(l, 0, sizeof(*l));
	assert_int_equal(file_read(path, 1 << 20, &l->buf, &l->len), 0);
	for (size_t i = 0, start = 0; i < l->len; i++) {
		if (l->buf[i] == '\n') {
			l->buf[i] = '\0';
			assert_true(l->n < MAX_LINES);
			l->line[l->n++] = l->buf + start;
			start = i + 1;
		}
	}
}

static void write_rows(struct netlog *nl, int n, const char *tag)
{
	char path[32];

	for (int i = 0; i < n; i++) {
		struct netlog_row r = { .conn = (uint64_t)i + 1, .req = 1, .kind = "http", .port = 80,
					.status = 200, .decision = "allow", .host = "good.test" };

		snprintf(path, sizeof(path), "/%s%d", tag, i);
		r.path = path;
		r.path_len = strlen(path);
		assert_int_equal(netlog_write(nl, &r), 0);
	}
}

/* The prev of line s, as the checker reads it: 1 (hex in out), 0 null, -1 none. */
static int prev_of(const char *s, char *out)
{
	return netlog_chain_prev(s, strlen(s), out);
}

static void expect_prev_is_hash_of(const char *row, const char *before)
{
	char prev[NETLOG_PREV_HEX + 1], want[NETLOG_PREV_HEX + 1];

	assert_int_equal(prev_of(row, prev), 1);
	netlog_chain_hash(before, strlen(before), want);
	assert_string_equal(prev, want);
}

static void test_hash_kat(void **state)
{
	char out[NETLOG_PREV_HEX + 1];

	netlog_chain_hash("abc", 3, out);
	assert_string_equal(out, SHA_ABC);
	netlog_chain_hash("", 0, out);
	assert_string_equal(out, SHA_EMPTY);
}

static void test_row_prev(void **state)
{
	static const char *bad[] = {
		"",
		"}",
		"{\"a\":1}",
		"{\"a\":1,\"prev\":\"" SHA_ABC "\"",             /* cut: no closing brace */
		"{\"a\":1,\"prev\":\"" SHA_ABC "\"}x",           /* something after it */
		"{\"a\":1,\"prev\":\"" SHA_ABC "0\"}",           /* 65 digits */
		"{\"a\":1,\"prev\":\"BA7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad\"}",
		"{\"a\":1,\"prev\":\"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015a\"}",
		"{\"a\":1,\"prev\":nul}",
		"{\"a\":1,\"prev\":NULL}",
		"{\"prev\":null,\"a\":1}",
		",\"prev\":null",
		"\"prev\":null}",
	};
	char out[NETLOG_PREV_HEX + 1];
	char *g;

	static const char hexed[] = "{\"a\":1,\"prev\":\"" SHA_ABC "\"}";
	static const char nulled[] = "{\"a\":1,\"prev\":null}";
	static const char bare[] = ",\"prev\":null}";

	g = guard_copy(hexed, sizeof(hexed) - 1);
	assert_int_equal(netlog_chain_prev(g, sizeof(hexed) - 1, out), 1);
	assert_string_equal(out, SHA_ABC);
	g = guard_copy(nulled, sizeof(nulled) - 1);
	assert_int_equal(netlog_chain_prev(g, sizeof(nulled) - 1, out), 0);
	g = guard_copy(bare, sizeof(bare) - 1);
	assert_int_equal(netlog_chain_prev(g, sizeof(bare) - 1, out), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		g = guard_copy(bad[i], strlen(bad[i]));
		if (netlog_chain_prev(g, strlen(bad[i]), out) != -1)
			fail_msg("accepted as a prev: %s", bad[i]);
	}
}

static void test_writer_chains_rows(void **state)
{
	char path[128];
	struct netlog *nl;
	struct lines l;
	char prev[NETLOG_PREV_HEX + 1];

	path_in(path, sizeof(path), "plain.log");
	nl = netlog_open(path, 0, 5, true, FILE_NO_UID, NULL);
	assert_non_null(nl);
	write_rows(nl, 4, "a");
	netlog_close(nl);
	read_lines(path, &l);
	assert_int_equal(l.n, 4);
	assert_int_equal(l.buf[l.len - 1], '\0'); /* every row ends in its newline */
	assert_int_equal(prev_of(l.line[0], prev), 0);
	assert_non_null(strstr(l.line[0], "\"path\":\"/a0\""));
	for (size_t i = 1; i < l.n; i++)
		expect_prev_is_hash_of(l.line[i], l.line[i - 1]);
	free(l.buf);
}

static void test_writer_chain_off(void **state)
{
	char path[128];
	struct netlog *nl;
	struct lines l;

	path_in(path, sizeof(path), "off.log");
	nl = netlog_open(path, 0, 5, false, FILE_NO_UID, NULL);
	assert_non_null(nl);
	write_rows(nl, 2, "o");
	netlog_close(nl);
	read_lines(path, &l);
	assert_int_equal(l.n, 2);
	for (size_t i = 0; i < l.n; i++) {
		assert_null(strstr(l.line[i], "\"prev\""));
		assert_int_equal(l.line[i][strlen(l.line[i]) - 1], '}');
	}
	free(l.buf);
}

/* Rotation: each file's first row hashes the last row of the file it rotated from. */
static void test_writer_rotation(void **state)
{
	char path[128], older[160];
	struct netlog *nl;
	struct lines cur, one, two;

	path_in(path, sizeof(path), "rot.log");
	nl = netlog_open(path, 1500, 5, true, FILE_NO_UID, NULL);
	assert_non_null(nl);
	write_rows(nl, 9, "r");
	netlog_close(nl);
	snprintf(older, sizeof(older), "%s.2", path);
	read_lines(older, &two);
	snprintf(older, sizeof(older), "%s.1", path);
	read_lines(older, &one);
	read_lines(path, &cur);
	assert_true(two.n > 0 && one.n > 0 && cur.n > 0);
	expect_prev_is_hash_of(one.line[0], two.line[two.n - 1]);
	expect_prev_is_hash_of(cur.line[0], one.line[one.n - 1]);
	free(cur.buf);
	free(one.buf);
	free(two.buf);
}

/* A restart resumes from the file's last row; from FILE.1's when the file is empty or gone. */
static void test_writer_restart(void **state)
{
	char path[128], older[160];
	struct netlog *nl;
	struct lines l, o;

	path_in(path, sizeof(path), "restart.log");
	nl = netlog_open(path, 0, 5, true, FILE_NO_UID, NULL);
	assert_non_null(nl);
	write_rows(nl, 2, "s");
	netlog_close(nl);
	nl = netlog_open(path, 0, 5, true, FILE_NO_UID, NULL);
	assert_non_null(nl);
	write_rows(nl, 1, "t");
	netlog_close(nl);
	read_lines(path, &l);
	assert_int_equal(l.n, 3);
	expect_prev_is_hash_of(l.line[2], l.line[1]);
	free(l.buf);

	snprintf(older, sizeof(older), "%s.1", path);
	assert_int_equal(rename(path, older), 0);
	nl = netlog_open(path, 0, 5, true, FILE_NO_UID, NULL);
	assert_non_null(nl);
	write_rows(nl, 1, "u");
	netlog_close(nl);
	read_lines(path, &l);
	read_lines(older, &o);
	assert_int_equal(l.n, 1);
	expect_prev_is_hash_of(l.line[0], o.line[o.n - 1]);
	free(l.buf);
	free(o.buf);
}

/* A last row cut short: hashed as it is, and the next row starts on its own line. */
static void test_writer_after_cut(void **state)
{
	char path[128];
	struct netlog *nl;
	struct lines l;
	FILE *f;

	path_in(path, sizeof(path), "cut.log");
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("{\"ts\":\"x\",\"prev\":null}\n{\"ts\":\"y\",\"pr", f);
	assert_int_equal(fclose(f), 0);
	nl = netlog_open(path, 0, 5, true, FILE_NO_UID, NULL);
	assert_non_null(nl);
	write_rows(nl, 1, "c");
	netlog_close(nl);
	read_lines(path, &l);
	assert_int_equal(l.n, 3);
	assert_string_equal(l.line[1], "{\"ts\":\"y\",\"pr");
	expect_prev_is_hash_of(l.line[2], "{\"ts\":\"y\",\"pr");
	free(l.buf);
}

static void put_file(const char *path, const char *text, size_t len)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

static void test_chain_last(void **state)
{
	char path[128], out[NETLOG_PREV_HEX + 1], want[NETLOG_PREV_HEX + 1];
	bool unterminated;
	size_t big = 10000;
	char *text = malloc(big + 8);

	path_in(path, sizeof(path), "last.log");
	assert_int_equal(netlog_chain_last(path, FILE_NO_UID, out, &unterminated, NULL), 0); /* missing */
	put_file(path, "", 0);
	assert_int_equal(netlog_chain_last(path, FILE_NO_UID, out, &unterminated, NULL), 0); /* empty */
	put_file(path, "one\nabc\n", 8);
	assert_int_equal(netlog_chain_last(path, FILE_NO_UID, out, &unterminated, NULL), 1);
	assert_string_equal(out, SHA_ABC);
	assert_false(unterminated);
	put_file(path, "one\nabc", 7);
	assert_int_equal(netlog_chain_last(path, FILE_NO_UID, out, &unterminated, NULL), 1);
	assert_string_equal(out, SHA_ABC);
	assert_true(unterminated);
	put_file(path, "abc", 3);
	assert_int_equal(netlog_chain_last(path, FILE_NO_UID, out, &unterminated, NULL), 1);
	assert_string_equal(out, SHA_ABC);
	put_file(path, "abc\n\n", 5); /* an empty last line */
	assert_int_equal(netlog_chain_last(path, FILE_NO_UID, out, &unterminated, NULL), 1);
	assert_string_equal(out, SHA_EMPTY);
	/* a last line longer than the reading chunk, after a newline inside a chunk */
	assert_non_null(text);
	memcpy(text, "x\n", 2);
	for (size_t i = 2; i < big; i++)
		text[i] = (char)('a' + i % 26);
	text[big] = '\n';
	put_file(path, text, big + 1);
	assert_int_equal(netlog_chain_last(path, FILE_NO_UID, out, &unterminated, NULL), 1);
	netlog_chain_hash(text + 2, big - 2, want);
	assert_string_equal(out, want);
	free(text);
}

/*
 * A symbolic link planted at the log's path (or at FILE.1) is neither read
 * for the chain's start nor appended to; the file it names is unchanged.
 */
static void test_open_refuses_links(void **state)
{
	char path[128], older[140], target[128], out[NETLOG_PREV_HEX + 1];
	const char *why = NULL;
	struct netlog *nl;
	struct stat st;
	bool unterminated;

	(void)state;
	path_in(path, sizeof(path), "linked.log");
	path_in(target, sizeof(target), "target");
	snprintf(older, sizeof(older), "%s.1", path);
	put_file(target, "secret\n", 7);
	assert_int_equal(symlink(target, path), 0);
	assert_int_equal(netlog_chain_last(path, FILE_NO_UID, out, &unterminated, &why), -1);
	assert_int_equal(errno, ELOOP);
	assert_string_equal(why, "a symbolic link");
	nl = netlog_open(path, 0, 5, true, FILE_NO_UID, &why);
	assert_null(nl);
	assert_int_equal(errno, ELOOP);
	nl = netlog_open(path, 0, 5, false, FILE_NO_UID, &why);
	assert_null(nl);
	assert_string_equal(why, "a symbolic link");
	unlink(path);
	assert_int_equal(symlink(target, older), 0); /* the rotated file, read when the log is empty */
	nl = netlog_open(path, 0, 5, true, FILE_NO_UID, &why);
	assert_null(nl);
	assert_int_equal(errno, ELOOP);
	assert_int_equal(stat(target, &st), 0);
	assert_int_equal(st.st_size, 7);
	unlink(older);
	unlink(path);
	unlink(target);
}

/* Lines for the checker: each a row whose prev is the hash of the one before. */
struct fake {
	char rows[8][160];
	size_t n;
};

static void fake_chain(struct fake *f, size_t n, bool from_null)
{
	char h[NETLOG_PREV_HEX + 1];

	f->n = n;
	for (size_t i = 0; i < n; i++) {
		if (i == 0 && from_null) {
			snprintf(f->rows[i], sizeof(f->rows[i]), "{\"i\":%zu,\"prev\":null}", i);
			continue;
		}
		if (i == 0)
			netlog_chain_hash("rotated away", 12, h);
		else
			netlog_chain_hash(f->rows[i - 1], strlen(f->rows[i - 1]), h);
		snprintf(f->rows[i], sizeof(f->rows[i]), "{\"i\":%zu,\"prev\":\"%s\"}", i, h);
	}
}

/* Step over lines[0..n); returns the index of the first broken one, or n. */
static size_t walk(char lines[][160], size_t n, struct netlog_chain *c)
{
	const char *why;

	netlog_chain_init(c);
	for (size_t i = 0; i < n; i++) {
		if (netlog_chain_step(c, lines[i], strlen(lines[i]), &why) == NETLOG_CHAIN_BROKEN) {
			assert_non_null(why);
			return i;
		}
	}
	return n;
}

static void test_checker(void **state)
{
	struct netlog_chain c;
	struct fake f;

	fake_chain(&f, 6, true);
	assert_int_equal(walk(f.rows, f.n, &c), 6);
	assert_true(c.from_start);
	assert_int_equal(c.chained, 6);

	fake_chain(&f, 6, false);
	assert_int_equal(walk(f.rows, f.n, &c), 6);
	assert_false(c.from_start); /* its first row follows one rotated away */

	fake_chain(&f, 6, true); /* a middle row removed: the one after the gap breaks */
	memmove(f.rows[2], f.rows[3], sizeof(f.rows[0]) * 3);
	assert_int_equal(walk(f.rows, 5, &c), 2);

	fake_chain(&f, 6, true); /* a row edited: the one after it breaks */
	f.rows[3][5] = '9';
	assert_int_equal(walk(f.rows, f.n, &c), 4);

	fake_chain(&f, 6, true); /* a row inserted */
	memmove(f.rows[4], f.rows[3], sizeof(f.rows[0]) * 3);
	snprintf(f.rows[3], sizeof(f.rows[3]), "%s", f.rows[2]);
	assert_int_equal(walk(f.rows, 7, &c), 3);

	fake_chain(&f, 4, true); /* a prev null after the start */
	snprintf(f.rows[2], sizeof(f.rows[2]), "{\"i\":2,\"prev\":null}");
	assert_int_equal(walk(f.rows, f.n, &c), 2);

	fake_chain(&f, 4, true); /* a row without prev once the chain started */
	snprintf(f.rows[3], sizeof(f.rows[3]), "{\"i\":3}");
	assert_int_equal(walk(f.rows, f.n, &c), 3);
}

/* Rows from before log-chain on, then a chain that hashes the last of them. */
static void test_checker_unchained_first(void **state)
{
	char rows[4][160], h[NETLOG_PREV_HEX + 1];
	struct netlog_chain c;

	snprintf(rows[0], sizeof(rows[0]), "{\"i\":0}");
	snprintf(rows[1], sizeof(rows[1]), "{\"i\":1}");
	netlog_chain_hash(rows[1], strlen(rows[1]), h);
	snprintf(rows[2], sizeof(rows[2]), "{\"i\":2,\"prev\":\"%s\"}", h);
	netlog_chain_hash(rows[2], strlen(rows[2]), h);
	snprintf(rows[3], sizeof(rows[3]), "{\"i\":3,\"prev\":\"%s\"}", h);
	assert_int_equal(walk(rows, 4, &c), 4);
	assert_int_equal(c.unchained, 2);
	assert_int_equal(c.chained, 2);
	assert_true(c.started);

	snprintf(rows[2], sizeof(rows[2]), "{\"i\":2,\"prev\":\"%s\"}", SHA_ABC);
	assert_int_equal(walk(rows, 4, &c), 2);

	assert_int_equal(walk(rows, 2, &c), 2);
	assert_false(c.started); /* nothing chained: the caller says so */
}

/* A row cut short by a failed write: the row after it, hashing the cut part, vouches for it. */
static void test_checker_cut(void **state)
{
	char rows[4][160], h[NETLOG_PREV_HEX + 1];
	struct netlog_chain c;
	const char *why;

	netlog_chain_init(&c);
	snprintf(rows[0], sizeof(rows[0]), "{\"i\":0,\"prev\":null}");
	snprintf(rows[1], sizeof(rows[1]), "{\"i\":1,\"pr"); /* what the write managed */
	netlog_chain_hash(rows[1], strlen(rows[1]), h);
	snprintf(rows[2], sizeof(rows[2]), "{\"i\":2,\"prev\":\"%s\"}", h);
	assert_int_equal(netlog_chain_step(&c, rows[0], strlen(rows[0]), &why), NETLOG_CHAIN_OK);
	assert_int_equal(netlog_chain_step_cut(&c, rows[1], strlen(rows[1])), NETLOG_CHAIN_CUT);
	assert_true(c.last_cut);
	assert_int_equal(netlog_chain_step(&c, rows[2], strlen(rows[2]), &why), NETLOG_CHAIN_OK);
	assert_false(c.last_cut);
	assert_int_equal(c.cut, 1);
	assert_int_equal(c.chained, 2);

	/* a cut line the next row does not hash: that row breaks, and says so */
	netlog_chain_init(&c);
	snprintf(rows[2], sizeof(rows[2]), "{\"i\":2,\"prev\":\"%s\"}", SHA_ABC);
	netlog_chain_step(&c, rows[0], strlen(rows[0]), &why);
	netlog_chain_step_cut(&c, rows[1], strlen(rows[1]));
	assert_int_equal(netlog_chain_step(&c, rows[2], strlen(rows[2]), &why), NETLOG_CHAIN_BROKEN);
	assert_non_null(strstr(why, "cut short"));

	/* before the chain started a cut line is one more unchained line */
	netlog_chain_init(&c);
	assert_int_equal(netlog_chain_step_cut(&c, rows[1], strlen(rows[1])),
			 NETLOG_CHAIN_UNCHAINED);
	assert_int_equal(c.unchained, 1);
	assert_int_equal(c.cut, 0);
	assert_false(c.last_cut);
}

/* The writer's rows pass the checker, across rotation and a restart. */
static void test_writer_passes_checker(void **state)
{
	char path[128], older[160];
	const char *why;
	struct netlog_chain c;
	struct netlog *nl;
	struct lines l;

	path_in(path, sizeof(path), "both.log");
	nl = netlog_open(path, 1500, 5, true, FILE_NO_UID, NULL);
	assert_non_null(nl);
	write_rows(nl, 5, "p");
	netlog_close(nl);
	nl = netlog_open(path, 1500, 5, true, FILE_NO_UID, NULL);
	assert_non_null(nl);
	write_rows(nl, 5, "q");
	netlog_close(nl);
	netlog_chain_init(&c);
	for (int g = 5; g >= 0; g--) {
		if (g > 0)
			snprintf(older, sizeof(older), "%s.%d", path, g);
		else
			snprintf(older, sizeof(older), "%s", path);
		if (access(older, F_OK) != 0)
			continue;
		read_lines(older, &l);
		for (size_t i = 0; i < l.n; i++)
			assert_int_equal(netlog_chain_step(&c, l.line[i], strlen(l.line[i]), &why),
					 NETLOG_CHAIN_OK);
		free(l.buf);
	}
	assert_int_equal(c.chained, 10);
	assert_true(c.from_start);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hash_kat),
		cmocka_unit_test(test_row_prev),
		cmocka_unit_test(test_writer_chains_rows),
		cmocka_unit_test(test_writer_chain_off),
		cmocka_unit_test(test_writer_rotation),
		cmocka_unit_test(test_writer_restart),
		cmocka_unit_test(test_writer_after_cut),
		cmocka_unit_test(test_chain_last),
		cmocka_unit_test(test_open_refuses_links),
		cmocka_unit_test(test_checker),
		cmocka_unit_test(test_checker_unchained_first),
		cmocka_unit_test(test_checker_cut),
		cmocka_unit_test(test_writer_passes_checker),
	};

	return cmocka_run_group_tests(tests, dir_setup, dir_teardown);
}
