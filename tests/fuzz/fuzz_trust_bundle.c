/*
 * fuzz_trust_bundle.c: run_trust_make on a root whose bundle is arbitrary
 * bytes (an --image's own /etc/ssl/certs/ca-certificates.crt, which the
 * image's author chooses).
 *
 * Beyond not crashing: it succeeds (a bundle that does not read is
 * skipped, never fatal), the run's bundle starts with the CA, and the
 * keystore is written.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "run.h"
#include "../unit/trust_ca.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64], root[96], bundle_in[160], ca[96], bundle[96], keystore[96];

/* What setup made, gone when the fuzzer exits. */
static void teardown(void)
{
	char path[160];

	unlink(bundle_in), unlink(ca), unlink(bundle), unlink(keystore);
	snprintf(path, sizeof(path), "%s/etc/ssl/certs", root), rmdir(path);
	snprintf(path, sizeof(path), "%s/etc/ssl", root), rmdir(path);
	snprintf(path, sizeof(path), "%s/etc", root), rmdir(path);
	rmdir(root), rmdir(dir);
}

/* A root of our own under /tmp, made once, with the CA beside it. */
static void setup(void)
{
	FILE *f;
	char path[160];

	snprintf(dir, sizeof(dir), "/tmp/fuzz_trust.%d", (int)getpid());
	snprintf(root, sizeof(root), "%s/root", dir);
	snprintf(path, sizeof(path), "%s/etc/ssl/certs", root);
	snprintf(bundle_in, sizeof(bundle_in), "%s/ca-certificates.crt", path);
	snprintf(ca, sizeof(ca), "%s/ca.crt", dir);
	snprintf(bundle, sizeof(bundle), "%s/ca-bundle.crt", dir);
	snprintf(keystore, sizeof(keystore), "%s/cacerts", dir);
	if (mkdir(dir, 0700) == -1 || mkdir(root, 0755) == -1)
		abort();
	atexit(teardown);
	snprintf(path, sizeof(path), "%s/etc", root), mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/etc/ssl", root), mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/etc/ssl/certs", root), mkdir(path, 0755);
	f = fopen(ca, "w");
	if (f == NULL || fputs(ca_pem, f) == EOF || fclose(f) == EOF)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char head[sizeof(ca_pem)];
	struct stat st;
	FILE *f;

	if (dir[0] == '\0')
		setup();
	f = fopen(bundle_in, "w");
	if (f == NULL || fwrite(data, 1, size, f) != size || fclose(f) == EOF)
		abort();
	if (run_trust_make(root, ca, bundle, keystore) != 0)
		abort();
	f = fopen(bundle, "r");
	if (f == NULL || fread(head, 1, sizeof(ca_pem) - 1, f) != sizeof(ca_pem) - 1 ||
	    memcmp(head, ca_pem, sizeof(ca_pem) - 1) != 0)
		abort();
	fclose(f);
	if (stat(keystore, &st) == -1 || st.st_size == 0)
		abort();
	return 0;
}
