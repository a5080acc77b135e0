/*
 * test_principal.c: engine snapshot lines (cli/snapshot.c) and naming a
 * row's principal from them (cli/principal.c).
 *
 * Snapshots are written as the lines `sluice engine` writes, so the cases
 * read like STATE/engine.jsonl. Snapshot lines given to the parser sit
 * right before a PROT_NONE page (guard.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../cli/principal.h"
#include "guard.h"

#define HEX16(c) c c c c c c c c c c c c c c c c
#define ID_A HEX16("a") HEX16("a") HEX16("a") HEX16("a")
#define ID_B HEX16("b") HEX16("b") HEX16("b") HEX16("b")
#define ID_C HEX16("c") HEX16("c") HEX16("c") HEX16("c")
#define ID_D "0123456789ab" HEX16("d") HEX16("d") HEX16("d") "dddd"

/* A snapshot line at 03:00:SS on net with the containers' JSON. */
#define SNAP(ss, net, ctrs) \
	"{\"t\":\"2026-11-30T03:00:" ss ".000Z\",\"net\":\"" net "\",\"containers\":[" ctrs "]}"
#define CTR(id, name, project, addrs)                                                      \
	"{\"id\":\"" id "\",\"name\":\"" name "\",\"project\":" project                     \
	",\"netmode\":\"bridge\",\"addrs\":[" addrs "]}"
#define A_AT(addr) CTR(ID_A, "web", "\"demo\"", "\"" addr "\"")
#define B_AT(addr) CTR(ID_B, "db", "null", "\"" addr "\"")

static size_t line_no;

static int parse_guarded(const char *line, struct snapshot *s, const char **err)
{
	size_t len = strlen(line);
	char *in = guard_copy(line, len);
	int r = snapshot_parse(in, len, s, err);

	guard_free(in, len);
	return r;
}

static void add(struct snapshots *all, const char *line)
{
	struct snapshot s;
	const char *err = NULL;

	if (parse_guarded(line, &s, &err) != 0)
		fail_msg("snapshot line does not parse: %s: %s", err, line);
	s.line = ++line_no;
	assert_int_equal(snapshots_add(all, &s), 0);
}

static void index_all(struct snapshots *all)
{
	assert_int_equal(snapshots_index(all), 0);
}

/* The label of the row at 03:00:SS from src@net with as (or NULL). */
static const char *who_at(const struct snapshots *all, const char *ss, const char *src,
			  const char *net, const char *as)
{
	static char label[300];
	char ts[64];
	struct principal_row r;
	struct principal p;

	snprintf(ts, sizeof(ts), "2026-11-30T03:00:%s.000Z", ss);
	memset(&r, 0, sizeof(r));
	assert_int_equal(snapshot_ts_parse(ts, &r.t_ms), 0);
	r.has_t = true;
	r.src = src;
	r.net = net;
	r.as = as;
	principal_from_row(all, &r, &p);
	principal_label(&p, label, sizeof(label));
	return label;
}

static void test_before_holds(void **state)
{
	struct snapshots all = { 0 };

	add(&all, SNAP("10", "podman", A_AT("10.88.0.5")));
	index_all(&all);
	assert_string_equal(who_at(&all, "20", "10.88.0.5", "podman", NULL), "web (demo)");
	/* a snapshot at the row's own millisecond is before it */
	assert_string_equal(who_at(&all, "10", "10.88.0.5", "podman", NULL), "web (demo)");
	/* nothing after it: the last snapshot holds for rows long after */
	assert_string_equal(who_at(&all, "59", "10.88.0.5", "podman", NULL), "web (demo)");
	/* an address it does not hold */
	assert_string_equal(who_at(&all, "20", "10.88.0.6", "podman", NULL), "10.88.0.6@podman");
	snapshots_release(&all);
}

static void test_before_lacks_after_holds(void **state)
{
	struct snapshots all = { 0 };

	/* the container started between the two snapshots */
	add(&all, SNAP("10", "podman", ""));
	add(&all, SNAP("30", "podman", B_AT("10.88.0.7")));
	index_all(&all);
	assert_string_equal(who_at(&all, "20", "10.88.0.7", "podman", NULL), "db");
	/* before the first snapshot: only the first one after counts, and it lacks it */
	assert_string_equal(who_at(&all, "05", "10.88.0.7", "podman", NULL), "10.88.0.7@podman");
	snapshots_release(&all);

	/* no snapshot before at all: the first after */
	add(&all, SNAP("30", "podman", B_AT("10.88.0.7")));
	index_all(&all);
	assert_string_equal(who_at(&all, "05", "10.88.0.7", "podman", NULL), "db");
	snapshots_release(&all);
}

static void test_after_lacks_unresolved(void **state)
{
	struct snapshots all = { 0 };

	add(&all, SNAP("10", "podman", B_AT("10.88.0.9")));
	add(&all, SNAP("30", "podman", B_AT("10.88.0.9")));
	index_all(&all);
	assert_string_equal(who_at(&all, "20", "10.88.0.5", "podman", NULL), "10.88.0.5@podman");
	snapshots_release(&all);

	/* no snapshots at all */
	assert_string_equal(who_at(&all, "20", "10.88.0.5", "podman", NULL), "10.88.0.5@podman");
}

static void test_never_past_a_drop(void **state)
{
	struct snapshots all = { 0 };

	add(&all, SNAP("10", "podman", A_AT("10.88.0.5")));
	add(&all, SNAP("20", "podman", ""));              /* A stopped */
	add(&all, SNAP("30", "podman", ""));
	add(&all, SNAP("40", "podman", B_AT("10.88.0.5"))); /* B got the address */
	index_all(&all);
	assert_string_equal(who_at(&all, "15", "10.88.0.5", "podman", NULL), "web (demo)");
	/* after the drop: neither the snapshot before (A) nor two ahead (B) */
	assert_string_equal(who_at(&all, "25", "10.88.0.5", "podman", NULL), "10.88.0.5@podman");
	assert_string_equal(who_at(&all, "20", "10.88.0.5", "podman", NULL), "10.88.0.5@podman");
	assert_string_equal(who_at(&all, "35", "10.88.0.5", "podman", NULL), "db");
	assert_string_equal(who_at(&all, "45", "10.88.0.5", "podman", NULL), "db");
	snapshots_release(&all);
}

static void test_address_reuse(void **state)
{
	struct snapshots all = { 0 };

	/* A had .5, was dropped, then B got .5 */
	add(&all, SNAP("10", "podman", A_AT("10.88.0.5")));
	add(&all, SNAP("20", "podman", ""));
	add(&all, SNAP("30", "podman", B_AT("10.88.0.5")));
	index_all(&all);
	assert_string_equal(who_at(&all, "15", "10.88.0.5", "podman", NULL), "web (demo)");
	assert_string_equal(who_at(&all, "25", "10.88.0.5", "podman", NULL), "db");
	assert_string_equal(who_at(&all, "35", "10.88.0.5", "podman", NULL), "db");
	snapshots_release(&all);

	/* a swap no snapshot saw in between: the one before still holds it (the rule's limit) */
	add(&all, SNAP("10", "podman", A_AT("10.88.0.5")));
	add(&all, SNAP("30", "podman", B_AT("10.88.0.5")));
	index_all(&all);
	assert_string_equal(who_at(&all, "20", "10.88.0.5", "podman", NULL), "web (demo)");
	snapshots_release(&all);
}

static void test_net_names(void **state)
{
	struct snapshots all = { 0 };

	/* the same address on two engines, told apart by the forwarder's --net */
	add(&all, SNAP("10", "podman", A_AT("10.88.0.5")));
	add(&all, SNAP("10", "vm2", CTR(ID_C, "other", "null", "\"10.88.0.5\"")));
	add(&all, SNAP("20", "podman", ""));
	index_all(&all);
	assert_string_equal(who_at(&all, "15", "10.88.0.5", "podman", NULL), "web (demo)");
	assert_string_equal(who_at(&all, "15", "10.88.0.5", "vm2", NULL), "other");
	/* podman's drop does not end vm2's claim */
	assert_string_equal(who_at(&all, "25", "10.88.0.5", "vm2", NULL), "other");
	assert_string_equal(who_at(&all, "25", "10.88.0.5", "podman", NULL), "10.88.0.5@podman");
	assert_string_equal(who_at(&all, "15", "10.88.0.5", "nowhere", NULL), "10.88.0.5@nowhere");
	snapshots_release(&all);
}

static void test_container_id(void **state)
{
	struct snapshots all = { 0 };

	/* host-network containers have no address: the cgroup names the id */
	add(&all, SNAP("10", "podman", CTR(ID_D, "hostnet", "null", "")));
	add(&all, SNAP("30", "podman", CTR(ID_D, "renamed", "\"p\"", "")));
	add(&all, SNAP("40", "podman", ""));
	index_all(&all);
	assert_string_equal(who_at(&all, "20", "127.0.0.1", "vm", "container:" ID_D), "hostnet");
	assert_string_equal(who_at(&all, "05", "127.0.0.1", "vm", "container:" ID_D), "hostnet");
	assert_string_equal(who_at(&all, "35", "127.0.0.1", "vm", "container:" ID_D),
			    "renamed (p)");
	/* an id keeps its name after a snapshot without it: ids are not reused */
	assert_string_equal(who_at(&all, "50", "127.0.0.1", "vm", "container:" ID_D),
			    "renamed (p)");
	/* an id no snapshot has: named by its id */
	assert_string_equal(who_at(&all, "20", "127.0.0.1", "vm", "container:" ID_B),
			    "container:bbbbbbbbbbbb");
	/* as= wins over the address */
	add(&all, SNAP("50", "vm", A_AT("127.0.0.1")));
	index_all(&all);
	assert_string_equal(who_at(&all, "55", "127.0.0.1", "vm", "container:" ID_D),
			    "renamed (p)");
	assert_string_equal(who_at(&all, "55", "127.0.0.1", "vm", NULL), "web (demo)");
	snapshots_release(&all);
}

static void test_other_principals(void **state)
{
	struct snapshots all = { 0 };
	struct principal_row r;
	struct principal p;
	char label[300];

	add(&all, SNAP("10", "vm", A_AT("10.0.0.1")));
	index_all(&all);
	assert_string_equal(who_at(&all, "20", "10.0.0.1", "vm", "build:img-1"), "build:img-1");
	assert_string_equal(who_at(&all, "20", "10.0.0.1", "vm", "user"), "user");
	/* a run's project and agent: as written, unless a snapshot names its container (--image) */
	assert_string_equal(who_at(&all, "20", "127.0.0.1", "sluice-0123456789ab", "project:alpha"),
			    "project:alpha");
	assert_string_equal(who_at(&all, "20", "127.0.0.1", "sluice-0123456789ab",
				   "project:alpha/coder"), "project:alpha/coder");
	assert_string_equal(who_at(&all, "20", "10.0.0.1", "vm", "project:alpha"), "web (demo)");
	/* an as= this reader does not know, or a malformed id: the address decides */
	assert_string_equal(who_at(&all, "20", "10.0.0.1", "vm", "robot:x"), "web (demo)");
	assert_string_equal(who_at(&all, "20", "10.0.0.1", "vm", "container:abc"), "web (demo)");
	assert_string_equal(who_at(&all, "20", "10.0.0.1", "vm", "build:"), "web (demo)");

	/* no source: unattributed, whatever else */
	memset(&r, 0, sizeof(r));
	r.has_t = true;
	r.as = "user";
	principal_from_row(&all, &r, &p);
	assert_int_equal(p.kind, PRINCIPAL_UNATTRIBUTED);
	principal_label(&p, label, sizeof(label));
	assert_string_equal(label, "unattributed");
	assert_string_equal(principal_kind_name(p.kind), "unattributed");

	/* no time: an address cannot be placed */
	memset(&r, 0, sizeof(r));
	r.src = "10.0.0.1";
	r.net = "vm";
	principal_from_row(&all, &r, &p);
	assert_int_equal(p.kind, PRINCIPAL_ADDRESS);
	principal_label(&p, label, sizeof(label));
	assert_string_equal(label, "10.0.0.1@vm");
	/* ... an id can: its latest name */
	r.as = "container:" ID_A;
	principal_from_row(&all, &r, &p);
	assert_int_equal(p.kind, PRINCIPAL_CONTAINER);
	assert_string_equal(p.name, "web");
	assert_string_equal(p.project, "demo");
	assert_string_equal(p.id, ID_A);
	assert_string_equal(p.snap->t, "2026-11-30T03:00:10.000Z");
	snapshots_release(&all);
}

static void test_ipv6_and_order(void **state)
{
	struct snapshots all = { 0 };

	/* written out of order (two writers); the index sorts by time */
	add(&all, SNAP("30", "podman", ""));
	add(&all, SNAP("10", "podman", CTR(ID_A, "six", "null", "\"fd00::5\",\"10.88.0.5\"")));
	index_all(&all);
	assert_string_equal(who_at(&all, "20", "fd00:0:0::5", "podman", NULL), "six");
	assert_string_equal(who_at(&all, "20", "10.88.0.5", "podman", NULL), "six");
	assert_string_equal(who_at(&all, "35", "fd00::5", "podman", NULL), "fd00::5@podman");
	/* a source that is not an address names nothing */
	assert_string_equal(who_at(&all, "20", "not-an-address", "podman", NULL),
			    "not-an-address@podman");
	snapshots_release(&all);
}

static void test_who_matches(void **state)
{
	struct snapshots all = { 0 };
	struct principal_row r;
	struct principal ctr, addr, build, user, none;

	add(&all, SNAP("10", "podman", A_AT("10.88.0.5")));
	index_all(&all);
	memset(&r, 0, sizeof(r));
	assert_int_equal(snapshot_ts_parse("2026-11-30T03:00:20.000Z", &r.t_ms), 0);
	r.has_t = true;
	r.net = "podman";
	r.src = "10.88.0.5";
	principal_from_row(&all, &r, &ctr);
	r.src = "10.88.0.6";
	principal_from_row(&all, &r, &addr);
	r.as = "build:b1";
	principal_from_row(&all, &r, &build);
	r.as = "user";
	principal_from_row(&all, &r, &user);
	r.src = NULL;
	principal_from_row(&all, &r, &none);

	assert_true(principal_matches_who("web", &ctr));
	assert_false(principal_matches_who("we", &ctr));
	assert_false(principal_matches_who("demo", &ctr));
	assert_true(principal_matches_who("aaaaaaaaaaaa", &ctr));
	assert_true(principal_matches_who("AAAAAAAAAAAA", &ctr));
	assert_true(principal_matches_who(ID_A, &ctr));
	assert_false(principal_matches_who("aaaaaaaaaaa", &ctr)); /* 11: too short a prefix */
	assert_true(principal_matches_who("container:aaaaaaaaaaaa", &ctr));
	assert_false(principal_matches_who("container:aaaa", &ctr));
	assert_false(principal_matches_who("bbbbbbbbbbbb", &ctr));
	assert_true(principal_matches_who("10.88.0.5", &ctr));
	assert_true(principal_matches_who("10.88.0.5@podman", &ctr));
	assert_false(principal_matches_who("10.88.0.5@vm", &ctr));
	assert_false(principal_matches_who("10.88.0.6", &ctr));
	assert_true(principal_matches_who("10.88.0.6", &addr));
	assert_false(principal_matches_who("web", &addr));
	assert_false(principal_matches_who("unattributed", &addr));
	assert_true(principal_matches_who("build:b1", &build));
	assert_false(principal_matches_who("build:b2", &build));
	assert_false(principal_matches_who("user", &build));
	assert_true(principal_matches_who("user", &user));
	assert_true(principal_matches_who("unattributed", &none));
	assert_false(principal_matches_who("10.88.0.6", &none));
	{
		struct principal proj, agent;

		r.src = "127.0.0.1";
		r.net = "sluice-0123456789ab";
		r.as = "project:alpha";
		principal_from_row(&all, &r, &proj);
		r.as = "project:alpha/coder";
		principal_from_row(&all, &r, &agent);
		assert_int_equal(proj.kind, PRINCIPAL_PROJECT);
		assert_string_equal(principal_kind_name(agent.kind), "project");
		assert_true(principal_matches_who("project:alpha", &proj));
		assert_true(principal_matches_who("project:alpha", &agent));
		assert_true(principal_matches_who("project:alpha/coder", &agent));
		assert_false(principal_matches_who("project:alpha/coder", &proj));
		assert_false(principal_matches_who("project:alph", &proj));
		assert_false(principal_matches_who("project:alpha/code", &agent));
		assert_false(principal_matches_who("project:beta", &agent));
		assert_false(principal_matches_who("user", &proj));
		assert_true(principal_matches_who("127.0.0.1@sluice-0123456789ab", &proj));
		/* an --image run's container is still its project's */
		r.src = "10.88.0.5";
		r.net = "podman";
		r.as = "project:alpha";
		principal_from_row(&all, &r, &proj);
		assert_int_equal(proj.kind, PRINCIPAL_CONTAINER);
		assert_true(principal_matches_who("web", &proj));
		assert_true(principal_matches_who("project:alpha", &proj));
		assert_false(principal_matches_who("project:beta", &proj));
		assert_false(principal_matches_who("project:alpha", &ctr));
	}
	assert_false(principal_matches_who("web", &none));
	snapshots_release(&all);
}

static void test_parse_errors(void **state)
{
	static const struct {
		const char *line, *err;
	} cases[] = {
		{ "", "not a JSON object" },
		{ "[]", "not a JSON object" },
		{ "{\"t\":\"2026-11-30T03:00:10.000Z\",\"net\":\"p\"", "not a JSON object" },
		{ "{\"net\":\"p\",\"containers\":[]}", "bad t" },
		{ "{\"t\":\"2026-11-30 03:00:10\",\"net\":\"p\",\"containers\":[]}", "bad t" },
		{ "{\"t\":\"2026-13-30T03:00:10.000Z\",\"net\":\"p\",\"containers\":[]}", "bad t" },
		{ "{\"t\":\"2026-11-30T03:00:10.000Z\",\"containers\":[]}", "bad net" },
		{ "{\"t\":\"2026-11-30T03:00:10.000Z\",\"net\":\"\",\"containers\":[]}", "bad net" },
		{ "{\"t\":\"2026-11-30T03:00:10.000Z\",\"net\":\"p\"}", "containers is not a list" },
		{ SNAP("10", "p", "{\"id\":\"abc\",\"name\":\"x\"}"), "a container without a 64-hex id" },
		{ SNAP("10", "p", "{\"id\":\"" ID_A "\"}"), "a container without a name" },
		{ SNAP("10", "p", "{\"id\":\"" ID_A "\",\"name\":\"a\\u0001\"}"),
		  "a container without a name" },
		{ SNAP("10", "p", "{\"id\":\"" ID_A "\",\"name\":\"x\",\"project\":7}"),
		  "bad project or netmode" },
		{ SNAP("10", "p", "{\"id\":\"" ID_A "\",\"name\":\"x\",\"addrs\":\"1.2.3.4\"}"),
		  "addrs is not a list" },
		{ SNAP("10", "p", CTR(ID_A, "x", "null", "\"1.2.3\"")), "bad address" },
		{ SNAP("10", "p", CTR(ID_A, "x", "null", "\"10.0.0.1\",7")), "bad address" },
		{ "{\"t\":\"2026-11-30T03:00:10.000Z\",\"t\":\"2026-11-30T03:00:10.000Z\","
		  "\"net\":\"p\",\"containers\":[]}",
		  "not a JSON object" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct snapshot s;
		const char *err = NULL;

		if (parse_guarded(cases[i].line, &s, &err) != -1)
			fail_msg("case %zu parsed: %s", i, cases[i].line);
		assert_non_null(err);
		if (strcmp(err, cases[i].err) != 0)
			fail_msg("case %zu: expected \"%s\", got \"%s\"", i, cases[i].err, err);
	}
}

static void test_format_round_trip(void **state)
{
	struct snapshot a, b;
	const char *err;
	char *line;

	assert_int_equal(parse_guarded(SNAP("10", "podman",
					    CTR(ID_B, "db", "null", "\"fd00:0::5\",\"10.88.0.6\","
								"\"10.88.0.6\"") ","
					    A_AT("10.88.0.5")),
				       &a, &err),
			 0);
	/* sorted by id, addresses sorted (v4 first) and deduplicated, v6 canonical */
	line = snapshot_format(&a);
	assert_non_null(line);
	assert_string_equal(line,
			    "{\"t\":\"2026-11-30T03:00:10.000Z\",\"net\":\"podman\",\"containers\":["
			    "{\"id\":\"" ID_A "\",\"name\":\"web\",\"project\":\"demo\","
			    "\"netmode\":\"bridge\",\"addrs\":[\"10.88.0.5\"]},"
			    "{\"id\":\"" ID_B "\",\"name\":\"db\",\"project\":null,"
			    "\"netmode\":\"bridge\",\"addrs\":[\"10.88.0.6\",\"fd00::5\"]}]}\n");
	assert_int_equal(parse_guarded(line, &b, &err), 0);
	assert_true(snapshot_same(&a, &b));
	snapshot_release(&b);
	/* another time, the same containers: same; another address or name: not */
	assert_int_equal(parse_guarded(SNAP("50", "podman",
					    A_AT("10.88.0.5") ","
					    CTR(ID_B, "db", "null", "\"fd00::5\",\"10.88.0.6\"")),
				       &b, &err),
			 0);
	assert_true(snapshot_same(&a, &b));
	snapshot_release(&b);
	assert_int_equal(parse_guarded(SNAP("50", "podman",
					    A_AT("10.88.0.5") ","
					    CTR(ID_B, "db", "null", "\"10.88.0.6\"")),
				       &b, &err),
			 0);
	assert_false(snapshot_same(&a, &b));
	snapshot_release(&b);
	assert_int_equal(parse_guarded(SNAP("50", "podman", A_AT("10.88.0.5")), &b, &err), 0);
	assert_false(snapshot_same(&a, &b));
	snapshot_release(&b);
	free(line);
	snapshot_release(&a);
}

static void test_ts(void **state)
{
	int64_t ms;
	char buf[SNAP_TS_LEN + 1];

	assert_int_equal(snapshot_ts_parse("1970-01-01T00:00:01.5Z", &ms), 0);
	assert_int_equal(ms, 1500);
	assert_int_equal(snapshot_ts_parse("2026-11-30T03:01:02.123Z", &ms), 0);
	snapshot_ts_format(ms, buf);
	assert_string_equal(buf, "2026-11-30T03:01:02.123Z");
	assert_int_equal(snapshot_ts_parse("2026-11-30T03:01:02Z", &ms), 0);
	assert_int_equal(snapshot_ts_parse("2026-11-30T03:01:02.Z", &ms), -1);
	/* the fraction: 1-9 digits, read to milliseconds, the rest dropped */
	assert_int_equal(snapshot_ts_parse("1970-01-01T00:00:01.05Z", &ms), 0);
	assert_int_equal(ms, 1050);
	assert_int_equal(snapshot_ts_parse("1970-01-01T00:00:01.999999999Z", &ms), 0);
	assert_int_equal(ms, 1999);
	assert_int_equal(snapshot_ts_parse("1970-01-01T00:00:01.0019Z", &ms), 0);
	assert_int_equal(ms, 1001);
	assert_int_equal(snapshot_ts_parse("1970-01-01T00:00:01.1234567890Z", &ms), -1);
	assert_int_equal(snapshot_ts_parse("1970-01-01T00:00:01.+5Z", &ms), -1);
	assert_int_equal(snapshot_ts_parse("1970-01-01T00:00:01.5 Z", &ms), -1);
	assert_int_equal(snapshot_ts_parse("2026-11-30T03:01:02.123", &ms), -1);
	assert_int_equal(snapshot_ts_parse("2026-11-30T03:01:02.123Zx", &ms), -1);
	assert_int_equal(snapshot_ts_parse("2026-11-30", &ms), -1);
}

static void test_load(void **state)
{
	char dir[] = "/tmp/test_principal.XXXXXX", path[64], errtext[512] = "";
	struct snapshots all = { 0 };
	FILE *f, *err;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/engine.jsonl", dir);
	err = fmemopen(errtext, sizeof(errtext) - 1, "w");
	assert_non_null(err);
	/* missing: no snapshots, no complaint */
	assert_int_equal(snapshot_load(path, "log", &all, err), 0);
	assert_int_equal(all.n, 0);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(SNAP("10", "podman", A_AT("10.88.0.5")) "\n", f);
	fputs("garbage\n\n", f);
	fputs(SNAP("20", "podman", "") "\n", f);
	fputs("{\"t\":\"2026-11-30T03:00:3", f); /* a write in progress */
	fclose(f);
	assert_int_equal(snapshot_load(path, "log", &all, err), 0);
	fflush(err);
	assert_int_equal(all.n, 2);
	assert_int_equal(all.nrefs, 1);
	assert_string_equal(who_at(&all, "15", "10.88.0.5", "podman", NULL), "web (demo)");
	assert_string_equal(who_at(&all, "25", "10.88.0.5", "podman", NULL), "10.88.0.5@podman");
	fclose(err);
	{
		char want[300];

		snprintf(want, sizeof(want), "log: %s:2: not a JSON object\n", path);
		assert_string_equal(errtext, want);
	}
	snapshots_release(&all);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_before_holds),
		cmocka_unit_test(test_before_lacks_after_holds),
		cmocka_unit_test(test_after_lacks_unresolved),
		cmocka_unit_test(test_never_past_a_drop),
		cmocka_unit_test(test_address_reuse),
		cmocka_unit_test(test_net_names),
		cmocka_unit_test(test_container_id),
		cmocka_unit_test(test_other_principals),
		cmocka_unit_test(test_ipv6_and_order),
		cmocka_unit_test(test_who_matches),
		cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_format_round_trip),
		cmocka_unit_test(test_ts),
		cmocka_unit_test(test_load),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
