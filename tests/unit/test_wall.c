/*
 * test_wall.c: wall_render against golden files, its refusals, and the
 * /etc/subuid parser.
 *
 * Each profile is rendered from fixed params and compared byte for byte
 * with tests/unit/golden/wall_<profile>.nft, found next to this source
 * (the unit tests run from the repository root). SLUICE_UPDATE_GOLDEN=1
 * rewrites the golden files instead; review the diff. Parser inputs sit
 * right before a guard page (guard.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "file.h"
#include "guard.h"
#include "wall.h"

static struct ipnet net(const char *s)
{
	struct ipnet n;
	const char *err;

	if (ipnet_parse(s, strlen(s), &n, &err) != 0)
		fail_msg("ipnet_parse %s: %s", s, err);
	return n;
}

static struct ipnet gateways[2], resolvers[2], forwarder, deny[8], allow[1];
static const char *bridges[] = { "podman0", "podman*" };
static const struct wall_uidrange subuids[] = { { 100000, 65536 }, { 300000, 1 } };

/* The fixed params every golden file is rendered from. */
static struct wall_params params(enum wall_profile profile)
{
	struct wall_params p = {
		.profile = profile,
		.port_base = 41000,
		.sandbox_uid = 1000,
		.subuids = subuids,
		.nsubuids = 2,
		.bridges = bridges,
		.nbridges = 1,
		.gateways = gateways,
		.ngateways = 2,
		.forwarder_uid = 0,
		.cgroup = "sluice.slice/sluice-vm-41000.slice",
		.ct_mark = wall_ct_mark(41000),
		.proxy_uid = 998,
		.deny = deny,
		.ndeny = 8,
	};

	gateways[0] = net("192.168.5.2");
	gateways[1] = net("fd00:5::2");
	forwarder = net("10.88.0.1");
	p.forwarder = forwarder;
	p.forwarder_port = 3128;
	resolvers[0] = net("192.168.5.3");
	resolvers[1] = net("fd00:5::3");
	if (profile == WALL_SANDBOX) {
		p.resolvers = resolvers; /* the pinned resolver */
		p.nresolvers = 2;
	}
	if (profile == WALL_EGRESS) {
		/* a fixture, not the proxy's list: until iprange.h exposes it (see cli/wall.c) */
		static const char *const d[] = { "10.0.0.0/8", "127.0.0.0/8", "169.254.0.0/16",
						  "192.168.0.0/16", "::/128", "::/96", "fc00::/7",
						  "::ffff:0:0/96" };

		for (size_t i = 0; i < 8; i++)
			deny[i] = net(d[i]);
		p.resolvers = resolvers;
		p.nresolvers = 1;
		allow[0] = net("10.20.0.0/16"); /* an allow-private range */
		p.allow = allow;
		p.nallow = 1;
	}
	return p;
}

static void golden_path(char *buf, size_t size, const char *profile)
{
	const char *src = __FILE__, *slash = strrchr(src, '/');
	int dir = slash != NULL ? (int)(slash - src) : 1;

	snprintf(buf, size, "%.*s/golden/wall_%s.nft", dir, slash != NULL ? src : ".", profile);
}

static void check_golden(enum wall_profile profile)
{
	struct wall_params p = params(profile);
	static char out[32768];
	char path[512], *want = NULL;
	size_t len;
	const char *err = NULL;

	assert_int_equal(wall_render(&p, out, sizeof(out), &err), 0);
	golden_path(path, sizeof(path), wall_profile_name(profile));
	if (getenv("SLUICE_UPDATE_GOLDEN") != NULL) {
		FILE *f = fopen(path, "w");

		assert_non_null(f);
		assert_int_equal(fputs(out, f) >= 0, 1);
		assert_int_equal(fclose(f), 0);
		return;
	}
	if (file_read(path, 1 << 20, &want, &len) != 0)
		fail_msg("read %s (run from the repository root)", path);
	if (len != strlen(out) || memcmp(want, out, len) != 0) {
		print_error("%s differs; rendered:\n%s", path, out);
		free(want);
		fail();
	}
	free(want);
	/* never touches anything but its own table, never drops */
	assert_null(strstr(out, "flush"));
	assert_null(strstr(out, " drop"));
	assert_null(strstr(out, "policy drop"));
}

static void test_golden_sandbox(void **state)
{
	check_golden(WALL_SANDBOX);
}

static void test_golden_guard(void **state)
{
	check_golden(WALL_GUARD);
}

static void test_golden_host(void **state)
{
	check_golden(WALL_HOST);
}

static void test_golden_egress(void **state)
{
	check_golden(WALL_EGRESS);
	/* the fixture is a subset of what the proxy itself refuses */
	for (size_t i = 0; i < 8; i++)
		assert_non_null(iprange_denied(deny[i].family, deny[i].addr, NULL));
}

/* The script replaces only its own table: declare, delete, declare. */
static void test_table_replaced(void **state)
{
	struct wall_params p = params(WALL_GUARD);
	char out[8192], *t;
	const char *err;

	p.port_base = 52000;
	assert_int_equal(wall_render(&p, out, sizeof(out), &err), 0);
	t = strstr(out, "\ntable inet sluice_guard_52000 {}\ndelete table inet sluice_guard_52000\n"
			"table inet sluice_guard_52000 {\n");
	assert_non_null(t);
	assert_non_null(strstr(out, "tcp dport 52000-52089 "));
	p.table = "sluice_test";
	assert_int_equal(wall_render(&p, out, sizeof(out), &err), 0);
	assert_non_null(strstr(out, "\ndelete table inet sluice_test\n"));
	p.forwarder_mark = 0x2a;
	assert_int_equal(wall_render(&p, out, sizeof(out), &err), 0);
	assert_non_null(strstr(out, "meta mark != 0x0000002a log"));
	assert_null(strstr(out, "skuid"));
}

/* With nflog, every refusal goes to the NFLOG group, with the same prefix; nothing else changes. */
static void test_nflog(void **state)
{
	static const enum wall_profile profiles[] = { WALL_SANDBOX, WALL_GUARD, WALL_HOST, WALL_EGRESS };
	static char plain[32768], grouped[32768];
	const char *err;

	for (size_t i = 0; i < 4; i++) {
		struct wall_params p = params(profiles[i]);
		size_t logs = 0;

		assert_int_equal(wall_render(&p, plain, sizeof(plain), &err), 0);
		p.nflog = true;
		p.nflog_group = 7;
		assert_int_equal(wall_render(&p, grouped, sizeof(grouped), &err), 0);
		assert_null(strstr(grouped, "log prefix"));
		for (const char *c = plain; (c = strstr(c, "log prefix")) != NULL; c++)
			logs++;
		for (const char *c = grouped; (c = strstr(c, "log group 7 prefix \"sluice ")) != NULL; c++)
			logs--;
		assert_int_equal(logs, 0);
		/* and without "group 7 " the two scripts are the same */
		for (char *c; (c = strstr(grouped, "group 7 ")) != NULL;)
			memmove(c, c + 8, strlen(c + 8) + 1);
		assert_string_equal(grouped, plain);
	}
}

/* No resolver given: local resolvers only; a single uid needs no set. */
static void test_sandbox_defaults(void **state)
{
	struct wall_params p = params(WALL_SANDBOX);
	char out[8192];
	const char *err;

	p.nsubuids = 0;
	p.nresolvers = 0;
	p.forwarder.family = 0;
	p.ngateways = 1;
	assert_int_equal(wall_render(&p, out, sizeof(out), &err), 0);
	assert_non_null(strstr(out, "\t\tmeta skuid 1000 jump sandbox\n"));
	assert_non_null(strstr(out, "\t\tip daddr 127.0.0.0/8 meta l4proto { tcp, udp } th dport 53 accept\n"));
	assert_non_null(strstr(out, "\t\tip6 daddr ::1 meta l4proto { tcp, udp } th dport 53 accept\n"));
	assert_null(strstr(out, "tcp dport 3128"));
	assert_null(strstr(out, "ip6 daddr fd00"));
}

/* --transparent: the run's fake range redirected to the forwarder, and only then */
static void test_sandbox_transparent(void **state)
{
	struct wall_params p = params(WALL_SANDBOX);
	char out[8192];
	const char *err;

	(void)state;
	assert_int_equal(wall_render(&p, out, sizeof(out), &err), 0);
	assert_null(strstr(out, "redirect"));
	p.transparent_port = 41091;
	assert_int_equal(wall_render(&p, out, sizeof(out), &err), 0);
	assert_non_null(strstr(out, "\n\tchain transparent {\n"
				    "\t\ttype nat hook output priority -100; policy accept;\n"
				    "\t\tip daddr 240.0.0.0/20 meta l4proto tcp redirect to :41091\n\t}\n"));
	p.transparent_port = 65536;
	assert_int_equal(wall_render(&p, out, sizeof(out), &err), -1);
	assert_string_equal(err, "bad transparent port");
}

static void expect_refused(struct wall_params *p, const char *want)
{
	char out[8192];
	const char *err = NULL;

	assert_int_equal(wall_render(p, out, sizeof(out), &err), -1);
	assert_non_null(err);
	if (strstr(err, want) == NULL)
		fail_msg("error \"%s\" lacks \"%s\"", err, want);
	assert_string_equal(out, "");
}

/* Bridge names nft would read differently are refused; several make a set, '*' a prefix. */
static void test_bridges(void **state)
{
	static const char *bad[] = { "pod\"man0", "*", "podman*0", "averyveryverylongname" };
	struct wall_params p = params(WALL_SANDBOX);
	static char out[32768];
	const char *err;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		p.bridges = &bad[i];
		expect_refused(&p, "bridge");
	}
	p.bridges = bridges;
	p.nbridges = 0;
	expect_refused(&p, "bridge");
	p.nbridges = 2;
	assert_int_equal(wall_render(&p, out, sizeof(out), &err), 0);
	assert_non_null(strstr(out, "\t\tiifname { \"podman0\", \"podman*\" } ip daddr 10.88.0.1 tcp dport 3128 accept\n"));
	assert_non_null(strstr(out, "\t\toifname { \"podman0\", \"podman*\" } accept\n"));
}

static void test_refusals(void **state)
{
	struct wall_params p;
	struct ipnet pub[2] = { net("192.168.5.3"), net("1.1.1.1") }, wide = net("10.0.0.0/7");
	char small[100];
	const char *err;

	p = params(WALL_SANDBOX);
	p.resolvers = pub;
	p.nresolvers = 2;
	expect_refused(&p, "1.1.1.1 is a public address");
	p.resolvers = &wide; /* reaches past 10/8 into public space */
	p.nresolvers = 1;
	expect_refused(&p, "public address");
	p = params(WALL_SANDBOX);
	p.ngateways = 0;
	expect_refused(&p, "no gateway");
	p = params(WALL_SANDBOX);
	p = params(WALL_SANDBOX);
	p.forwarder_port = 0;
	expect_refused(&p, "forwarder");
	p = params(WALL_GUARD);
	p.port_base = 65400;
	expect_refused(&p, "port base");
	p.port_base = 0;
	expect_refused(&p, "port base");
	p = params(WALL_GUARD);
	p.table = "Sluice-x";
	expect_refused(&p, "table name");
	p = params(WALL_HOST);
	p.resolvers = pub + 1;
	p.nresolvers = 1;
	expect_refused(&p, "public address");
	p = params(WALL_HOST);
	p.ct_mark = 0;
	expect_refused(&p, "conntrack mark");
	static const char *const bad_cgroups[] = { "", "/sluice.slice", "a//b", "a/../b", "a/.",
						   "a/", "a\"b", "a\\b", "a\nb" };
	for (size_t i = 0; i < sizeof(bad_cgroups) / sizeof(bad_cgroups[0]); i++) {
		p.ct_mark = 1;
		p.cgroup = bad_cgroups[i];
		expect_refused(&p, "cgroup");
	}
	p.cgroup = NULL;
	expect_refused(&p, "cgroup");
	p = params(WALL_EGRESS);
	p.ndeny = 0;
	expect_refused(&p, "denied ranges");
	p = params(WALL_SANDBOX);
	assert_int_equal(wall_render(&p, small, sizeof(small), &err), -1);
	assert_string_equal(err, "the rendered script does not fit");
	assert_string_equal(small, "");
}

static void test_cgroup_level(void **state)
{
	struct wall_params p = params(WALL_HOST);
	char out[8192];
	const char *err;

	p.cgroup = "vm.scope";
	assert_int_equal(wall_render(&p, out, sizeof(out), &err), 0);
	assert_non_null(strstr(out, "socket cgroupv2 level 1 \"vm.scope\" jump sandbox\n"));
	p.cgroup = "user.slice/user-1000.slice/user@1000.service/app.slice/vm.scope";
	assert_int_equal(wall_render(&p, out, sizeof(out), &err), 0);
	assert_non_null(strstr(out, "socket cgroupv2 level 5 \"user.slice/"));
	assert_non_null(strstr(out, "ct mark set 0x5300a028 accept"));
}

static void test_profile_names(void **state)
{
	enum wall_profile p;

	assert_int_equal(wall_profile_parse("sandbox", &p), 0);
	assert_int_equal(p, WALL_SANDBOX);
	assert_int_equal(wall_profile_parse("egress", &p), 0);
	assert_int_equal(p, WALL_EGRESS);
	assert_int_equal(wall_profile_parse("Sandbox", &p), -1);
	assert_int_equal(wall_profile_parse("", &p), -1);
	assert_string_equal(wall_profile_name(WALL_HOST), "host");
}

/* --- /etc/subuid ---------------------------------------------------------- */

static int subuid(const char *text, const char *user, uint32_t uid, struct wall_uidrange *out,
		  size_t max, const char **err)
{
	char *g = guard_str(text);
	int n = wall_subuid_parse(g, strlen(text), user, uid, out, max, err);

	guard_free(g, strlen(text));
	return n;
}

static void test_subuid_match(void **state)
{
	struct wall_uidrange r[4];
	const char *err = NULL;

	assert_int_equal(subuid("agent:100000:65536\nother:165536:65536\n1000:231072:10\nagent:300000:1",
				"agent", 1000, r, 4, &err),
			 3);
	assert_int_equal(r[0].start, 100000);
	assert_int_equal(r[0].count, 65536);
	assert_int_equal(r[1].start, 231072); /* by uid */
	assert_int_equal(r[1].count, 10);
	assert_int_equal(r[2].start, 300000);
	assert_int_equal(r[2].count, 1);
	assert_int_equal(subuid("agent:100000:65536\n", "nobody", 65534, r, 4, &err), 0);
	assert_int_equal(subuid("", "agent", 1000, r, 4, &err), 0);
	assert_int_equal(subuid("\n\n# comment\r\n\nagent:1:2\r\n", "agent", 1000, r, 4, &err), 1);
	assert_int_equal(r[0].start, 1);
	assert_int_equal(r[0].count, 2);
	/* a prefix of a name is not the name */
	assert_int_equal(subuid("agent2:100000:65536\nagen:5:5\n", "agent", 1000, r, 4, &err), 0);
	/* the last uid before 4294967295 */
	assert_int_equal(subuid("agent:4294967294:1", "agent", 1000, r, 4, &err), 1);
}

static void test_subuid_malformed(void **state)
{
	static const struct {
		const char *text, *err;
	} cases[] = {
		{ "agent:100000", "line 1: not name:start:count" },
		{ "agent", "line 1: not name:start:count" },
		{ "ok:1:1\n:100000:65536", "line 2: empty name" },
		{ "agent::65536", "line 1: start is not a number" },
		{ "agent:1e5:65536", "line 1: start is not a number" },
		{ "agent:-1:65536", "line 1: start is not a number" },
		{ "agent: 1:65536", "line 1: start is not a number" },
		{ "agent:1:", "line 1: count is not a number" },
		{ "agent:1:2:3", "line 1: count is not a number" },
		{ "agent:1:65536 ", "line 1: count is not a number" },
		{ "agent:4294967296:1", "line 1: start is not a number" },
		{ "agent:1:0", "line 1: range empty or past the last uid" },
		{ "agent:4294967295:1", "line 1: range empty or past the last uid" },
		{ "agent:4294967000:1000", "line 1: range empty or past the last uid" },
		{ "x:1:1\nx:2:2\nother:1:99999999999", "line 3: count is not a number" },
	};
	struct wall_uidrange r[4];
	const char *err;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		err = NULL;
		assert_int_equal(subuid(cases[i].text, "agent", 1000, r, 4, &err), -1);
		assert_non_null(err);
		if (strcmp(err, cases[i].err) != 0)
			fail_msg("case %zu \"%s\": got \"%s\", want \"%s\"", i, cases[i].text, err,
				 cases[i].err);
	}
	err = NULL;
	assert_int_equal(subuid("agent:1:1\nagent:2:1\nagent:3:1\n", "agent", 1000, r, 2, &err), -1);
	assert_string_equal(err, "more than 2 ranges for agent");
}

/* Every prefix of a valid file parses without reading past its end. */
static void test_subuid_prefixes(void **state)
{
	const char *text = "agent:100000:65536\nother:165536:65536\n";
	struct wall_uidrange r[4];
	const char *err;

	for (size_t len = 0; len <= strlen(text); len++) {
		char *g = guard_copy(text, len);

		(void)wall_subuid_parse(g, len, "agent", 1000, r, 4, &err);
		guard_free(g, len);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden_sandbox),
		cmocka_unit_test(test_golden_guard),
		cmocka_unit_test(test_golden_host),
		cmocka_unit_test(test_golden_egress),
		cmocka_unit_test(test_table_replaced),
		cmocka_unit_test(test_sandbox_defaults),
		cmocka_unit_test(test_sandbox_transparent),
		cmocka_unit_test(test_nflog),
		cmocka_unit_test(test_bridges),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_cgroup_level),
		cmocka_unit_test(test_profile_names),
		cmocka_unit_test(test_subuid_match),
		cmocka_unit_test(test_subuid_malformed),
		cmocka_unit_test(test_subuid_prefixes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
