/*
 * test_run_trust.c: a run's trust made from a root whose bundle path is
 * not a regular file (an --image's author chooses its files): a FIFO
 * there must neither hang `sluice run` (as root, the image mounted) nor be
 * named as a place to bind over. The bundle is then the CA alone.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../cli/run.h"
#include "trust_ca.h"

static void test_fifo_bundle(void **state)
{
	char dir[] = "/tmp/sluice-trust-XXXXXX", path[256], ca[256], bundle[256], keystore[256];
	const char *found[4];
	FILE *f;
	char *text;
	long n;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/etc", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/etc/ssl", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/etc/ssl/certs", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/etc/ssl/certs/ca-certificates.crt", dir);
	assert_int_equal(mkfifo(path, 0644), 0);
	snprintf(ca, sizeof(ca), "%s/ca.crt", dir);
	f = fopen(ca, "w");
	assert_non_null(f);
	fputs(ca_pem, f);
	fclose(f);
	snprintf(bundle, sizeof(bundle), "%s/bundle.crt", dir);
	snprintf(keystore, sizeof(keystore), "%s/cacerts", dir);

	alarm(10); /* a read that blocks on the FIFO: the test dies here */
	assert_int_equal(run_trust_make(dir, ca, bundle, keystore), 0);
	assert_int_equal(run_trust_targets(dir, run_trust_bundles, found, 4), 1);
	assert_string_equal(found[0], run_trust_bundles[0]); /* none: where the first tool looks */
	alarm(0);

	/* the bundle is the CA alone */
	f = fopen(bundle, "r");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	text = calloc(1, (size_t)n + 1);
	assert_int_equal(fread(text, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	assert_non_null(strstr(text, "BEGIN CERTIFICATE"));
	assert_null(strstr(strstr(text, "END CERTIFICATE") + 1, "BEGIN CERTIFICATE"));
	free(text);
	unlink(path), unlink(ca), unlink(bundle), unlink(keystore);
	snprintf(path, sizeof(path), "rm -rf %s", dir);
	assert_int_equal(system(path), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fifo_bundle),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
