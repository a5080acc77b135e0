/*
 * test_units.c: units_render against golden files, and what it refuses.
 *
 * Two fixed sets of params (no VM: a proxy on a low port with a token
 * command and nameservers; Lima: the VM's files too) are rendered and
 * compared byte for byte with tests/unit/golden/units-none/ and
 * units-lima/, found next to this source (the unit tests run from the
 * repository root). SLUICE_UPDATE_GOLDEN=1 rewrites the golden files
 * instead; review the diff. The script's id, the lima.yaml block and the
 * quoting of hostile names are checked apart from the golden bytes.
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

#include "file.h"
#include "units.h"

static const char ca_pem[] =
	"-----BEGIN CERTIFICATE-----\n"
	"MIIBwTCCAWegAwIBAgIRALOdlXd8B+9AJ7x7n0804iMwCgYIKoZIzj0EAwIwLjEP\n"
	"MA0GA1UECgwGc2x1aWNlMRswGQYDVQQDDBJzbHVpY2UgQ0EgODY4MTg0MjgwHhcN\n"
	"MjYxMjAxMTkxNDQwWhcNMzYxMTMwMjAxNDQwWjAuMQ8wDQYDVQQKDAZzbHVpY2Ux\n"
	"GzAZBgNVBAMMEnNsdWljZSBDQSA4NjgxODQyODBZMBMGByqGSM49AgEGCCqGSM49\n"
	"AwEHA0IABJYzDQZWPvQB4nSr2sBnYQz3umEom6WtbSAiatQr5MJ+tKq5G0kbh34S\n"
	"qSbPatDyO3zeLDlV0cT5sWtGGOt3+T+jZjBkMBIGA1UdEwEB/wQIMAYBAf8CAQAw\n"
	"DgYDVR0PAQH/BAQDAgEGMB0GA1UdDgQWBBRmdlZvuwU8jBxe6iCrO+lGA7kovzAf\n"
	"BgNVHSMEGDAWgBRmdlZvuwU8jBxe6iCrO+lGA7kovzAKBggqhkjOPQQDAgNIADBF\n"
	"AiBQCxOu8aiAKpUy2C7ofyP65fO3layHqcpu/VMC+yyhvgIhAK3+mxPuq8cFP1Zk\n"
	"2/a+QJAmzKCKZKXWgntwosrBwT99\n"
	"-----END CERTIFICATE-----\n";

static const char *const proxy_rw[] = { "/var/lib/sluice", "/var/log/sluice" };
static const char *const dns_rw[] = { "/var/lib/sluice", "/var/log/sluice" };
static const char *const resolvers[] = { "10.0.0.53", "fd00::53" };

/* The fixed params the golden files are rendered from. */
static struct units_params params(enum units_vm vm)
{
	struct units_params p = {
		.project = "demo",
		.port_base = 41000,
		.bindir = "/usr/local/bin",
		.config = "/etc/sluice/sluice.conf",
		.workdir = "/",
		.user = "sluice",
		.dns_low_port = true,
		.proxy_rw = proxy_rw,
		.nproxy_rw = 2,
		.dns_rw = dns_rw,
		.ndns_rw = 2,
		.state_dir = "/var/lib/sluice",
		.vm = vm,
	};

	if (vm == UNITS_VM_NONE) {
		/* the other branches: a low proxy port, a token command, nameservers */
		p.proxy_low_port = true;
		p.token_commands = true;
		p.resolvers = resolvers;
		p.nresolvers = 2;
		return p;
	}
	p.vm_name = "agent";
	p.vm_user = "alice";
	p.limactl = "/usr/local/bin/limactl";
	p.gateway = UNITS_GATEWAY_LIMA;
	p.proxy_port = 41000;
	p.ca_pem = ca_pem;
	return p;
}

/* p's file f, NUL-ended, in a new string (the caller frees it); fails the test if it cannot. */
static char *render(const struct units_params *p, enum units_file f)
{
	struct buf b;
	const char *err = NULL;
	char *s;

	buf_init(&b, UNITS_TEXT_MAX);
	if (units_render(p, f, &b, &err) != 0)
		fail_msg("render %s: %s", units_file_name(f), err);
	s = strndup(buf_head(&b), buf_len(&b));
	buf_release(&b);
	assert_non_null(s);
	return s;
}

/* The error rendering f refuses p with, or NULL when it renders. */
static const char *refusal(const struct units_params *p, enum units_file f)
{
	struct buf b;
	const char *err = NULL;
	int rc;

	buf_init(&b, UNITS_TEXT_MAX);
	rc = units_render(p, f, &b, &err);
	buf_release(&b);
	return rc == 0 ? NULL : err;
}

static void golden_path(char *buf, size_t size, const char *set, const char *name)
{
	const char *src = __FILE__, *slash = strrchr(src, '/');
	int dir = slash != NULL ? (int)(slash - src) : 1;

	snprintf(buf, size, "%.*s/golden/units-%s/%s", dir, slash != NULL ? src : ".", set, name);
}

static void check_golden(enum units_vm vm)
{
	const char *set = vm == UNITS_VM_LIMA ? "lima" : "none";
	struct units_params p = params(vm);

	for (int f = 0; f < UNITS_NFILES; f++) {
		char path[512], *out, *want = NULL;
		size_t len;

		if (!units_file_wanted(&p, (enum units_file)f))
			continue;
		out = render(&p, (enum units_file)f);
		golden_path(path, sizeof(path), set, units_file_name((enum units_file)f));
		if (getenv("SLUICE_UPDATE_GOLDEN") != NULL) {
			char dir[512];
			FILE *fh;

			snprintf(dir, sizeof(dir), "%s", path);
			*strrchr(dir, '/') = '\0';
			assert_int_equal(file_mkdir_p(dir, 0755), 0);
			fh = fopen(path, "w");
			assert_non_null(fh);
			assert_int_equal(fputs(out, fh) >= 0, 1);
			assert_int_equal(fclose(fh), 0);
			free(out);
			continue;
		}
		if (file_read(path, 1 << 20, &want, &len) != 0)
			fail_msg("read %s (run from the repository root)", path);
		if (len != strlen(out) || memcmp(want, out, len) != 0) {
			print_error("%s differs; rendered:\n%s", path, out);
			free(want);
			free(out);
			fail();
		}
		free(want);
		free(out);
	}
}

static void test_golden_none(void **state)
{
	check_golden(UNITS_VM_NONE);
}

static void test_golden_lima(void **state)
{
	check_golden(UNITS_VM_LIMA);
}

/* The same params give the same bytes (no clock, no environment). */
static void test_pure(void **state)
{
	struct units_params p = params(UNITS_VM_LIMA);

	for (int f = 0; f < UNITS_NFILES; f++) {
		char *a = render(&p, (enum units_file)f), *b = render(&p, (enum units_file)f);

		assert_string_equal(a, b);
		free(a);
		free(b);
	}
}

static void test_files_wanted(void **state)
{
	struct units_params none = params(UNITS_VM_NONE), lima = params(UNITS_VM_LIMA);

	assert_true(units_file_wanted(&none, UNITS_PROXY));
	assert_true(units_file_wanted(&none, UNITS_WALL_EGRESS));
	assert_false(units_file_wanted(&none, UNITS_WALL_HOST));
	assert_false(units_file_wanted(&none, UNITS_SCRIPT));
	assert_non_null(refusal(&none, UNITS_SCRIPT));
	for (int f = 0; f < UNITS_NFILES; f++)
		assert_true(units_file_wanted(&lima, (enum units_file)f));
	assert_string_equal(units_file_name(UNITS_WALL), "sluice-wall@.service");
}

/* The script's id is its SHA-256, and the yaml carries it and the script, line for line. */
static void test_provision_id(void **state)
{
	struct units_params p = params(UNITS_VM_LIMA);
	char id[UNITS_ID_HEX + 1], line[128], *script, *yaml, *body, *s;

	units_provision_id("abc", 3, id);
	assert_string_equal(id, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	script = render(&p, UNITS_SCRIPT);
	yaml = render(&p, UNITS_YAML);
	units_provision_id(script, strlen(script), id);
	snprintf(line, sizeof(line), "# sluice-provision %s\n", id);
	assert_memory_equal(yaml, line, strlen(line));
	body = strstr(yaml, "  script: |\n");
	assert_non_null(body);
	body += strlen("  script: |\n");
	/* undo the block's indentation: four spaces on every line but empty ones */
	for (s = script; *s != '\0';) {
		size_t n = strcspn(s, "\n");

		if (n > 0) {
			assert_memory_equal(body, "    ", 4);
			body += 4;
		}
		assert_memory_equal(body, s, n + 1);
		body += n + 1;
		s += n + 1;
	}
	assert_int_equal(*body, '\0');
	assert_memory_equal(script, "#!/bin/sh\n", 10);
	assert_non_null(strstr(script, "\nset -eu\n"));
	free(script);
	free(yaml);
}

/* Hostile bytes in a name never reach a unit line or the script unquoted. */
static void test_quoting(void **state)
{
	struct units_params p = params(UNITS_VM_LIMA);
	char *unit, *script;

	p.project = "it's 100%\\ mine";
	unit = render(&p, UNITS_PROXY);
	assert_non_null(strstr(unit, "Description=sluice-proxy: the egress chokepoint (project "
				     "it's 100__ mine)\n"));
	script = render(&p, UNITS_SCRIPT);
	assert_non_null(strstr(script, "\nPROJECT='it'\\''s 100%\\ mine'\n"));
	free(unit);
	free(script);
}

/* A string param set to a value the renderer must refuse, and the file it is asked for. */
static const struct {
	enum units_vm vm;
	enum units_file file;
	size_t field; /* offsetof a const char * in struct units_params */
	const char *value;
} bad_strings[] = {
	{ UNITS_VM_NONE, UNITS_PROXY, offsetof(struct units_params, config), "etc/sluice.conf" },
	/* a blank would split ExecStart; '%' is a systemd specifier */
	{ UNITS_VM_NONE, UNITS_PROXY, offsetof(struct units_params, config), "/etc/my sluice.conf" },
	{ UNITS_VM_NONE, UNITS_PROXY, offsetof(struct units_params, bindir), "/opt/%n/bin" },
	{ UNITS_VM_NONE, UNITS_WALL, offsetof(struct units_params, state_dir), "/var/lib/../../etc" },
	{ UNITS_VM_NONE, UNITS_PROXY, offsetof(struct units_params, user),
	  "sluice\nExecStartPre=/bin/sh" },
	{ UNITS_VM_LIMA, UNITS_LIMA, offsetof(struct units_params, vm_user), "root" },
	{ UNITS_VM_LIMA, UNITS_SCRIPT, offsetof(struct units_params, gateway), "192.168.5.2; rm -rf /" },
	/* a line that would end the script's here-document; text after the certificate */
	{ UNITS_VM_LIMA, UNITS_SCRIPT, offsetof(struct units_params, ca_pem),
	  "-----BEGIN CERTIFICATE-----\nSLUICE_CA\nreboot\n-----END CERTIFICATE-----\n" },
	{ UNITS_VM_LIMA, UNITS_SCRIPT, offsetof(struct units_params, ca_pem),
	  "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\nextra\n" },
	{ UNITS_VM_LIMA, UNITS_YAML, offsetof(struct units_params, ca_pem), NULL },
};

static void test_refusals(void **state)
{
	struct units_params p;

	for (size_t i = 0; i < sizeof(bad_strings) / sizeof(bad_strings[0]); i++) {
		p = params(bad_strings[i].vm);
		assert_null(refusal(&p, bad_strings[i].file)); /* the control: it renders as it is */
		*(const char **)((char *)&p + bad_strings[i].field) = bad_strings[i].value;
		if (refusal(&p, bad_strings[i].file) == NULL)
			fail_msg("bad_strings[%zu] rendered", i);
	}
	p = params(UNITS_VM_NONE);
	p.resolvers = (const char *const[]){ "10.0.0.53 --i-mean-this-host" };
	p.nresolvers = 1;
	assert_non_null(refusal(&p, UNITS_WALL_EGRESS));
	p = params(UNITS_VM_NONE);
	p.port_base = 65500;
	assert_non_null(refusal(&p, UNITS_WALL));
	p = params(UNITS_VM_LIMA);
	p.proxy_port = 41090; /* base+90: past the listeners the guard wall keeps */
	assert_non_null(refusal(&p, UNITS_SCRIPT));
	p.proxy_port = 40999;
	assert_non_null(refusal(&p, UNITS_SCRIPT));
}

/* A buffer too small is an error, not a cut file. */
static void test_too_long(void **state)
{
	struct units_params p = params(UNITS_VM_LIMA);
	const char *err = NULL;
	struct buf b;

	buf_init(&b, 512);
	assert_int_equal(units_render(&p, UNITS_SCRIPT, &b, &err), -1);
	assert_non_null(err);
	buf_release(&b);
	buf_init(&b, 512);
	assert_int_equal(units_render(&p, UNITS_YAML, &b, &err), -1);
	buf_release(&b);
}

static void test_slice(void **state)
{
	struct units_params p = params(UNITS_VM_LIMA);
	char buf[128];

	units_vm_slice(&p, buf, sizeof(buf));
	assert_string_equal(buf, "sluice-vm-41000.slice");
	units_vm_cgroup(&p, buf, sizeof(buf));
	assert_string_equal(buf, "sluice.slice/sluice-vm.slice/sluice-vm-41000.slice");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden_none),
		cmocka_unit_test(test_golden_lima),
		cmocka_unit_test(test_pure),
		cmocka_unit_test(test_files_wanted),
		cmocka_unit_test(test_provision_id),
		cmocka_unit_test(test_quoting),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_too_long),
		cmocka_unit_test(test_slice),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
