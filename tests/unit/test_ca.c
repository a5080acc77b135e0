/*
 * test_ca.c: the CA (ca_create, ca_load, ca_load_public, ca_fingerprint):
 * the files it makes and their modes, its certificate, the bundle, and the
 * keys and certificates ca_load refuses. The leaves minted from it are
 * test_leaf.c's.
 *
 * The CA lives in a temporary directory made per run and removed at the
 * end (ca_fixture.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "ca.h"
#include "ca_fixture.h"

/* --- helpers -------------------------------------------------------------- */

static mode_t mode_of(const char *d, const char *name)
{
	char p[PATH_MAX];
	struct stat st;

	path_of(p, d, name);
	assert_int_equal(stat(p, &st), 0);
	return st.st_mode & 07777;
}

static void copy_file(const char *from_dir, const char *to_dir, const char *name, mode_t mode)
{
	char from[PATH_MAX], to[PATH_MAX], buf[256 * 1024];
	FILE *in, *out;
	size_t n;

	path_of(from, from_dir, name);
	path_of(to, to_dir, name);
	in = fopen(from, "rb");
	assert_non_null(in);
	n = fread(buf, 1, sizeof(buf), in);
	fclose(in);
	out = fopen(to, "wb");
	assert_non_null(out);
	assert_int_equal(fwrite(buf, 1, n, out), n);
	fclose(out);
	assert_int_equal(chmod(to, mode), 0);
}

static int count_certs(const char *path)
{
	char line[512];
	FILE *f = fopen(path, "r");
	int n = 0;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f) != NULL)
		n += strcmp(line, "-----BEGIN CERTIFICATE-----\n") == 0;
	fclose(f);
	return n;
}

/* --- the CA ---------------------------------------------------------------- */

static void test_create_files(void **state)
{
	char p[PATH_MAX], head[64] = "";
	FILE *f;

	assert_int_equal(mode_of(dir, CA_KEY_NAME), 0600);
	assert_int_equal(mode_of(dir, CA_CERT_NAME), 0644); /* despite the umask 077 at create */
	assert_int_equal(mode_of(dir, CA_BUNDLE_NAME), 0644);
	path_of(p, dir, CA_KEY_NAME);
	f = fopen(p, "r");
	assert_non_null(f);
	assert_non_null(fgets(head, sizeof(head), f));
	fclose(f);
	assert_string_equal(head, "-----BEGIN PRIVATE KEY-----\n"); /* PKCS#8 */
}

static void test_ca_certificate(void **state)
{
	X509 *x = ca_cert(the_ca);
	char cn[128], o[64];
	regex_t re;
	BIGNUM *serial;
	long days;

	assert_int_equal(X509_get_version(x), X509_VERSION_3);
	assert_int_equal(X509_check_ca(x), 1);
	assert_int_equal(X509_get_pathlen(x), 0);
	assert_true(ext_critical(x, NID_basic_constraints));
	assert_int_equal(X509_get_key_usage(x), KU_KEY_CERT_SIGN | KU_CRL_SIGN);
	assert_true(ext_critical(x, NID_key_usage));
	assert_int_equal(X509_get_extended_key_usage(x), UINT32_MAX); /* no EKU */
	assert_non_null(X509_get0_subject_key_id(x));
	assert_int_equal(ASN1_OCTET_STRING_cmp(X509_get0_authority_key_id(x),
					       X509_get0_subject_key_id(x)),
			 0);

	cn_of(x, cn, sizeof(cn));
	assert_int_equal(regcomp(&re, "^sluice CA [0-9a-f]{8}$", REG_EXTENDED | REG_NOSUB), 0);
	assert_int_equal(regexec(&re, cn, 0, NULL, 0), 0);
	regfree(&re);
	assert_true(X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_organizationName, o,
					      sizeof(o)) > 0);
	assert_string_equal(o, "sluice");
	assert_int_equal(X509_NAME_cmp(X509_get_subject_name(x), X509_get_issuer_name(x)), 0);
	assert_int_equal(X509_verify(x, X509_get0_pubkey(x)), 1);
	assert_int_equal(X509_get_signature_nid(x), NID_ecdsa_with_SHA256);
	assert_int_equal(EVP_PKEY_get_bits(X509_get0_pubkey(x)), 256);

	/* an hour backdated, ten years ahead */
	assert_int_equal(X509_cmp_current_time(X509_get0_notBefore(x)), -1);
	assert_true(days_from_now(X509_get0_notBefore(x)) == 0);
	days = days_from_now(X509_get0_notAfter(x));
	assert_true(days >= 3650 && days <= 3653);

	serial = ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), NULL);
	assert_non_null(serial);
	assert_false(BN_is_negative(serial));
	assert_true(BN_num_bits(serial) > 64 && BN_num_bits(serial) <= 128);
	BN_free(serial);

	/* the CA verifies against itself (openssl verify -CAfile ca.crt ca.crt), but it is
	 * no server certificate: keyCertSign and cRLSign only */
	assert_int_equal(verify_chain(x, x, false, NULL, NULL), X509_V_OK);
	assert_int_equal(verify_as_client(x, x, NULL, NULL), X509_V_ERR_INVALID_PURPOSE);
}

static void test_create_refuses_existing(void **state)
{
	char before[CA_FINGERPRINT_SIZE], after[CA_FINGERPRINT_SIZE], d[PATH_MAX], p[PATH_MAX];
	const char *err = NULL;
	struct ca *again;

	assert_int_equal(ca_fingerprint(the_ca, before), 0);
	assert_int_equal(ca_create(dir, &err), -1);
	assert_non_null(strstr(err, "exists"));
	again = ca_load(dir, &err);
	assert_non_null(again);
	assert_int_equal(ca_fingerprint(again, after), 0);
	assert_string_equal(before, after);
	ca_free(again);

	/* a certificate without its key: refused, and no key is left behind */
	subdir(d, "orphan");
	copy_file(dir, d, CA_CERT_NAME, 0644);
	assert_int_equal(ca_create(d, &err), -1);
	assert_non_null(strstr(err, "exists without"));
	path_of(p, d, CA_KEY_NAME);
	assert_int_equal(access(p, F_OK), -1);

	/* a link where the key goes is never followed */
	subdir(d, "link");
	path_of(p, d, CA_KEY_NAME);
	assert_int_equal(symlink("/tmp/sluice-test-ca-target-never-created", p), 0);
	assert_int_equal(ca_create(d, &err), -1);
	assert_int_equal(access("/tmp/sluice-test-ca-target-never-created", F_OK), -1);
}

static void test_bundle(void **state)
{
	char p[PATH_MAX], c[PATH_MAX], tail[4096], cert[4096];
	long clen;
	FILE *f;
	int sys;

	path_of(p, dir, CA_BUNDLE_NAME);
	path_of(c, dir, CA_CERT_NAME);
	sys = access(CA_SYSTEM_ROOTS, R_OK) == 0 ? count_certs(CA_SYSTEM_ROOTS) : 0;
	assert_int_equal(count_certs(p), sys + 1);

	/* ours comes last */
	f = fopen(c, "r");
	assert_non_null(f);
	clen = (long)fread(cert, 1, sizeof(cert), f);
	fclose(f);
	f = fopen(p, "r");
	assert_non_null(f);
	assert_int_equal(fseek(f, -clen, SEEK_END), 0);
	assert_int_equal(fread(tail, 1, (size_t)clen, f), (size_t)clen);
	fclose(f);
	assert_memory_equal(tail, cert, (size_t)clen);
}

static void test_fingerprint(void **state)
{
	unsigned char md[32];
	unsigned int n = 0;
	char fp[CA_FINGERPRINT_SIZE], want[CA_FINGERPRINT_SIZE];
	const char *err = NULL;
	struct ca *pub;
	regex_t re;

	assert_int_equal(ca_fingerprint(the_ca, fp), 0);
	assert_int_equal(strlen(fp), 95);
	assert_int_equal(regcomp(&re, "^([0-9A-F]{2}:){31}[0-9A-F]{2}$", REG_EXTENDED | REG_NOSUB),
			 0);
	assert_int_equal(regexec(&re, fp, 0, NULL, 0), 0);
	regfree(&re);
	assert_int_equal(X509_digest(ca_cert(the_ca), EVP_sha256(), md, &n), 1);
	for (unsigned i = 0; i < 32; i++)
		snprintf(want + 3 * i, 4, i < 31 ? "%02X:" : "%02X", md[i]);
	assert_string_equal(fp, want);

	/* the public half alone gives the same */
	pub = ca_load_public(dir, &err);
	assert_non_null(pub);
	assert_int_equal(ca_fingerprint(pub, fp), 0);
	assert_string_equal(fp, want);
	ca_free(pub);
}

static void test_load_refusals(void **state)
{
	char p[PATH_MAX], d[PATH_MAX], other[PATH_MAX];
	const char *err = NULL;
	struct ca *ca;
	EVP_PKEY *k384;
	FILE *f;

	path_of(p, dir, CA_KEY_NAME);
	assert_int_equal(chmod(p, 0644), 0);
	err = NULL;
	assert_null(ca_load(dir, &err));
	assert_non_null(err);
	assert_non_null(strstr(err, "chmod 600"));
	assert_int_equal(chmod(p, 0640), 0);
	assert_null(ca_load(dir, &err));
	assert_int_equal(chmod(p, 0602), 0);
	assert_null(ca_load(dir, &err));
	assert_int_equal(chmod(p, 0600), 0);
	ca = ca_load(dir, &err);
	assert_non_null(ca);
	ca_free(ca);

	/* nothing there */
	subdir(d, "empty");
	assert_null(ca_load(d, &err));
	assert_string_equal(err, "no " CA_CERT_NAME);

	/* a key through a symbolic link */
	subdir(d, "keylink");
	copy_file(dir, d, CA_CERT_NAME, 0644);
	path_of(p, dir, CA_KEY_NAME);
	path_of(other, d, CA_KEY_NAME);
	assert_int_equal(symlink(p, other), 0);
	assert_null(ca_load(d, &err));
	assert_non_null(strstr(err, "symbolic link"));

	/* another CA's key */
	subdir(other, "other");
	assert_int_equal(ca_create(other, &err), 0);
	subdir(d, "mismatch");
	copy_file(dir, d, CA_CERT_NAME, 0644);
	copy_file(other, d, CA_KEY_NAME, 0600);
	assert_null(ca_load(d, &err));
	assert_non_null(strstr(err, "does not match"));

	/* a key that is not P-256 */
	subdir(d, "p384");
	copy_file(dir, d, CA_CERT_NAME, 0644);
	k384 = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-384");
	assert_non_null(k384);
	path_of(p, d, CA_KEY_NAME);
	f = fopen(p, "w");
	assert_non_null(f);
	assert_int_equal(PEM_write_PrivateKey(f, k384, NULL, NULL, 0, NULL, NULL), 1);
	fclose(f);
	assert_int_equal(chmod(p, 0600), 0);
	EVP_PKEY_free(k384);
	assert_null(ca_load(d, &err));
	assert_non_null(strstr(err, "P-256"));

	/* garbage */
	subdir(d, "garbage");
	path_of(p, d, CA_CERT_NAME);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs("-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n", f);
	fclose(f);
	assert_null(ca_load_public(d, &err));
	assert_non_null(strstr(err, "no PEM certificate"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_files),
		cmocka_unit_test(test_ca_certificate),
		cmocka_unit_test(test_create_refuses_existing),
		cmocka_unit_test(test_bundle),
		cmocka_unit_test(test_fingerprint),
		cmocka_unit_test(test_load_refusals),
	};

	return cmocka_run_group_tests(tests, ca_fixture_setup, ca_fixture_teardown);
}
