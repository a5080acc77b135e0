/*
 * test_cgpath.c: which cgroup paths name a container or a build
 * (cgpath_parent_valid, cgpath_classify), and the container ids of an
 * engine snapshot line (snapids_parse, snapids_last, snapids_has).
 *
 * Snapshot inputs are placed right before a PROT_NONE page (guard.h), so
 * an over-read faults. The lines are the shape cli/snapshot.c writes.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgpath.h"
#include "guard.h"
#include "snapids.h"

#define ID_A "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define ID_B "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define ID_C "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"

static void test_parent_valid(void **state)
{
	static const char *good[] = { "/", "/libpod_parent", "/machine.slice", "/a/b.c/d-e",
				      "/user.slice/user-1000.slice/user@1000.service/user.slice" };
	static const char *bad[] = { "", "libpod_parent", "//", "/a/", "/a//b", "/.", "/..",
				     "/a/./b", "/a/../b", "/a b", "/a\tb", "/a\x7f", "/./" };

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		assert_true(cgpath_parent_valid(good[i]));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_false(cgpath_parent_valid(bad[i]));
	assert_false(cgpath_parent_valid(NULL));
	assert_true(cgpath_parent_valid("/..a"));
	assert_true(cgpath_parent_valid("/a.."));
}

static const char *const parents[] = { "/libpod_parent", "/machine.slice" };
#define NP (sizeof(parents) / sizeof(parents[0]))

static void expect(const char *path, const char *const *ps, size_t np, const char *as,
		   size_t parent_len, size_t dir_len, bool lookalike)
{
	struct cgpath_match m;

	assert_int_equal(cgpath_classify(path, ps, np, &m), 0);
	assert_string_equal(m.as, as);
	assert_int_equal(m.parent_len, parent_len);
	assert_int_equal(m.dir_len, dir_len);
	assert_int_equal(m.lookalike, lookalike);
}

static void test_container(void **state)
{
	struct cgpath_match m;

	/* podman with cgroupfs, and with systemd */
	expect("/libpod_parent/libpod-" ID_A, parents, NP, "container:" ID_A, 14, 86, false);
	assert_int_equal(cgpath_classify("/libpod_parent/libpod-" ID_A, parents, NP, &m), 0);
	assert_int_equal(m.kind, CGPATH_CONTAINER);
	assert_string_equal(m.id, ID_A);
	expect("/machine.slice/libpod-" ID_B ".scope", parents, NP, "container:" ID_B, 14, 92,
	       false);
	/* deeper inside the container's own cgroup: still that container */
	expect("/machine.slice/libpod-" ID_B ".scope/container", parents, NP, "container:" ID_B,
	       14, 92, false);
	expect("/libpod_parent/libpod-" ID_A "/sub/libpod-" ID_C, parents, NP, "container:" ID_A,
	       14, 86, false);
	/* the root as the parent */
	{
		const char *root[] = { "/" };

		expect("/libpod-" ID_A, root, 1, "container:" ID_A, 0, 72, false);
		expect("/x/libpod-" ID_A, root, 1, "user", 0, 0, true);
	}
}

static void test_not_container(void **state)
{
	/* the spoof: libpod-<id> in a user's own subtree */
	expect("/sluice-spoof-1/libpod-" ID_A, parents, NP, "user", 0, 0, true);
	expect("/user.slice/user-1000.slice/libpod-" ID_A ".scope", parents, NP, "user", 0, 0,
	       true);
	/* not right below: nested one deeper under the parent */
	expect("/libpod_parent/x/libpod-" ID_A, parents, NP, "user", 0, 0, true);
	/* a parent's name as a prefix of another directory */
	expect("/libpod_parent2/libpod-" ID_A, parents, NP, "user", 0, 0, true);
	expect("/libpod_parentlibpod-" ID_A, parents, NP, "user", 0, 0, false);
	/* the parent itself, and its other children */
	expect("/libpod_parent", parents, NP, "user", 0, 0, false);
	expect("/libpod_parent/conmon", parents, NP, "user", 0, 0, false);
	expect("/libpod_parent/libpod-conmon-" ID_A, parents, NP, "user", 0, 0, false);
	expect("/machine.slice/libpod-conmon-" ID_A ".scope", parents, NP, "user", 0, 0, false);
	/* almost an id */
	expect("/libpod_parent/libpod-" ID_A "0", parents, NP, "user", 0, 0, false);
	expect("/libpod_parent/libpod-0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef",
	       parents, NP, "user", 0, 0, false);
	expect("/libpod_parent/libpod-" ID_A ".scopex", parents, NP, "user", 0, 0, false);
	expect("/libpod_parent/libpod-" ID_A ".slice", parents, NP, "user", 0, 0, false);
	expect("", parents, NP, "user", 0, 0, false);
	expect("/", parents, NP, "user", 0, 0, false);
	/* no parents: nothing is a container */
	expect("/libpod_parent/libpod-" ID_A, parents, 0, "user", 0, 0, true);
}

static void test_build(void **state)
{
	struct cgpath_match m;
	char path[512];

	expect("/machine.slice/crun-buildah-buildah7.scope", parents, NP,
	       "build:crun-buildah-buildah7", 14, 42, false);
	expect("/machine.slice/crun-buildah-buildah7.scope/x", parents, NP,
	       "build:crun-buildah-buildah7", 14, 42, false);
	expect("/home/crun-buildah-buildah7.scope", parents, NP, "user", 0, 0, true);
	expect("/machine.slice/buildah-x.slice", parents, NP, "user", 0, 0, false);
	/* a build's name that a stamp cannot carry: the caller resets */
	assert_int_equal(cgpath_classify("/machine.slice/a+buildah-x.scope", parents, NP, &m), -1);
	snprintf(path, sizeof(path), "/machine.slice/buildah-%0*d.scope", STAMP_AS_MAX - 14, 0);
	assert_int_equal(cgpath_classify(path, parents, NP, &m), 0);
	assert_int_equal(strlen(m.as), STAMP_AS_MAX);
	snprintf(path, sizeof(path), "/machine.slice/buildah-%0*d.scope", STAMP_AS_MAX - 13, 0);
	assert_int_equal(cgpath_classify(path, parents, NP, &m), -1);
}

static void test_nested_parents(void **state)
{
	/* the outermost parent with a container right below it decides */
	const char *ps[] = { "/t/machine.slice", "/t" };

	expect("/t/machine.slice/libpod-" ID_A ".scope/c/libpod-" ID_C, ps, 2, "container:" ID_A,
	       16, 94, false);
	expect("/t/libpod-" ID_B "/machine.slice/libpod-" ID_A, ps, 2, "container:" ID_B, 2, 74,
	       false);
}

/* snapids_parse on a guarded copy of line. */
static int parse(const char *line, char net[SNAPIDS_NET_MAX + 1], char (*ids)[SNAPIDS_ID_LEN + 1],
		 size_t cap, size_t *n, const char **err)
{
	size_t len = strlen(line);
	char *g = guard_copy(line, len);
	int r = snapids_parse(g, len, net, ids, cap, n, err);

	guard_free(g, len);
	return r;
}

#define CTR(id, name)                                                              \
	"{\"id\":\"" id "\",\"name\":\"" name "\",\"project\":null,\"netmode\":\"bridge\"," \
	"\"addrs\":[\"10.88.0.5\"]}"
#define SNAP(net, ctrs) \
	"{\"t\":\"2026-11-30T03:01:02.123Z\",\"net\":\"" net "\",\"containers\":[" ctrs "]}"

static void test_snap_parse(void **state)
{
	static char ids[8][SNAPIDS_ID_LEN + 1];
	char net[SNAPIDS_NET_MAX + 1];
	const char *err = NULL;
	size_t n = 99;

	assert_int_equal(
		parse(SNAP("podman", CTR(ID_C, "c") "," CTR(ID_A, "a")), net, ids, 8, &n, &err), 0);
	assert_string_equal(net, "podman");
	assert_int_equal(n, 2);
	assert_string_equal(ids[0], ID_A); /* sorted */
	assert_string_equal(ids[1], ID_C);
	assert_true(snapids_has((const char(*)[SNAPIDS_ID_LEN + 1])ids, n, ID_A));
	assert_true(snapids_has((const char(*)[SNAPIDS_ID_LEN + 1])ids, n, ID_C));
	assert_false(snapids_has((const char(*)[SNAPIDS_ID_LEN + 1])ids, n, ID_B));
	assert_false(snapids_has((const char(*)[SNAPIDS_ID_LEN + 1])ids, n, "0123"));
	assert_false(snapids_has((const char(*)[SNAPIDS_ID_LEN + 1])ids, 0, ID_A));

	assert_int_equal(parse(SNAP("podman", ""), net, ids, 8, &n, &err), 0);
	assert_int_equal(n, 0);
	/* any key order, blanks, escapes and nested values elsewhere */
	assert_int_equal(parse(" { \"containers\" : [ { \"name\" : \"x\\\"y\\u00e9\", "
			       "\"labels\": {\"a\":[1,2.5e3,-1,true,false,null,{}]}, "
			       "\"id\" : \"" ID_B "\" } ] , \"x\":[], "
			       "\"net\" : \"p\\u006fdman\", \"t\" : \"z\" } ",
			       net, ids, 8, &n, &err),
			 0);
	assert_string_equal(net, "podman");
	assert_int_equal(n, 1);
	assert_string_equal(ids[0], ID_B);
}

static void test_snap_malformed(void **state)
{
	static char ids[2][SNAPIDS_ID_LEN + 1];
	static const char *bad[] = {
		"",
		"[]",
		"{",
		"{}",
		SNAP("podman", CTR(ID_A, "a")) "x",
		SNAP("podman", CTR(ID_A, "a")) "}",
		"{\"net\":\"podman\",\"containers\":[]}",                /* no t */
		"{\"t\":\"x\",\"containers\":[]}",                       /* no net */
		"{\"t\":\"x\",\"net\":\"podman\"}",                       /* no containers */
		"{\"t\":\"x\",\"net\":\"podman\",\"net\":\"other\",\"containers\":[]}",
		"{\"t\":\"x\",\"net\":\"podman\",\"containers\":[],\"containers\":[]}",
		"{\"t\":\"x\",\"net\":\"\",\"containers\":[]}",
		"{\"t\":\"x\",\"net\":7,\"containers\":[]}",
		"{\"t\":\"x\",\"net\":\"podman\",\"containers\":{}}",
		"{\"t\":\"x\",\"net\":\"podman\",\"containers\":[1]}",
		"{\"t\":\"x\",\"net\":\"podman\",\"containers\":[{}]}",
		"{\"t\":\"x\",\"net\":\"podman\",\"containers\":[{\"id\":\"abc\"}]}",
		"{\"t\":\"x\",\"net\":\"podman\",\"containers\":[{\"id\":\"" ID_A "0\"}]}",
		"{\"t\":\"x\",\"net\":\"podman\",\"containers\":[{\"id\":\"" ID_A "\",\"id\":\"" ID_B "\"}]}",
		"{\"t\":\"x\",\"net\":\"podman\",\"containers\":[{\"id\":\"0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef\"}]}",
		"{\"t\":\"x\",\"net\":\"podman\",\"containers\":[" CTR(ID_A, "a") ",]}",
		"{\"t\":\"x\",\"net\":\"podman\",\"containers\":[" CTR(ID_A, "a") "],}",
		"{\"t\":\"x\",\"net\":\"pod\nman\",\"containers\":[]}",
		"{\"t\":\"x\",\"net\":\"pod\\qman\",\"containers\":[]}",
		"{\"t\":\"x\",\"net\":\"pod\\u00\",\"containers\":[]}",
		"{\"t\":\"x\",\"net\":\"podman\",\"containers\":[],\"y\":tru}",
		"{\"t\":\"x\",\"net\":\"podman\",\"containers\":[],\"y\":[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]}",
		"{\"t\":\"x\",\"net\":\"podman\",\"containers\":[],\"y\":\"unterminated}",
		"{\"t\":\"x\",\"net\":\"podman\",\"containers\":[]",
		/* more containers than room */
		SNAP("podman", CTR(ID_A, "a") "," CTR(ID_B, "b") "," CTR(ID_C, "c")),
	};
	char net[SNAPIDS_NET_MAX + 1], longnet[128];
	const char *err;
	size_t n;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err = NULL;
		if (parse(bad[i], net, ids, 2, &n, &err) != -1)
			fail_msg("parsed: %s", bad[i]);
		assert_non_null(err);
	}
	snprintf(longnet, sizeof(longnet), "{\"t\":\"x\",\"net\":\"%0*d\",\"containers\":[]}", 65, 0);
	assert_int_equal(parse(longnet, net, ids, 2, &n, &err), -1);
	snprintf(longnet, sizeof(longnet), "{\"t\":\"x\",\"net\":\"%0*d\",\"containers\":[]}", 64, 0);
	assert_int_equal(parse(longnet, net, ids, 2, &n, &err), 0);
	/* a net escaping a non-ASCII character never equals a plain one */
	assert_int_equal(parse("{\"t\":\"x\",\"net\":\"p\\u0100\",\"containers\":[]}", net, ids, 2, &n, &err), 0);
	assert_string_equal(net, "p\x01");
	assert_int_equal(parse("{\"t\":\"x\",\"net\":\"p\\u0000\",\"containers\":[]}", net, ids, 2, &n, &err), 0);
	assert_string_equal(net, "p\x01");
}

static int last(const char *buf, bool at_start, const char *net, char (*ids)[SNAPIDS_ID_LEN + 1],
		size_t *n)
{
	size_t len = strlen(buf);
	char *g = guard_copy(buf, len);
	int r = snapids_last(g, len, at_start, net, ids, 8, n);

	guard_free(g, len);
	return r;
}

static void test_snap_last(void **state)
{
	static char ids[8][SNAPIDS_ID_LEN + 1];
	size_t n;
	const char *file = SNAP("podman", CTR(ID_A, "a")) "\n"
		SNAP("other", CTR(ID_B, "b")) "\n"
		SNAP("podman", CTR(ID_C, "c")) "\n"
		"not json\n"
		SNAP("other", "") "\n";

	/* the last of net, past other nets' and lines that do not parse */
	assert_int_equal(last(file, true, "podman", ids, &n), 1);
	assert_int_equal(n, 1);
	assert_string_equal(ids[0], ID_C);
	assert_int_equal(last(file, true, "other", ids, &n), 1);
	assert_int_equal(n, 0);
	assert_int_equal(last(file, true, "nope", ids, &n), 0);
	assert_int_equal(n, 0);
	/* a last line without its newline is still being written: not counted */
	assert_int_equal(last(SNAP("podman", CTR(ID_A, "a")) "\n" SNAP("podman", CTR(ID_B, "b")),
			      true, "podman", ids, &n),
			 1);
	assert_string_equal(ids[0], ID_A);
	/* CRLF */
	assert_int_equal(last(SNAP("podman", CTR(ID_B, "b")) "\r\n", true, "podman", ids, &n), 1);
	assert_string_equal(ids[0], ID_B);
	/* a tail that does not start the file: its first line is cut off */
	assert_int_equal(last(SNAP("podman", CTR(ID_A, "a")) "\n", false, "podman", ids, &n), 0);
	assert_int_equal(last("xx\n" SNAP("podman", CTR(ID_A, "a")) "\n", false, "podman", ids, &n), 1);
	assert_int_equal(last("", true, "podman", ids, &n), 0);
	assert_int_equal(last("\n\n", true, "podman", ids, &n), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parent_valid),  cmocka_unit_test(test_container),
		cmocka_unit_test(test_not_container), cmocka_unit_test(test_build),
		cmocka_unit_test(test_nested_parents), cmocka_unit_test(test_snap_parse),
		cmocka_unit_test(test_snap_malformed), cmocka_unit_test(test_snap_last),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
