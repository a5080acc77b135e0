/*
 * test_leaf.c: the leaves minted from the CA (leaf_cache_new, leaf_get,
 * leaf_cache_count): what every leaf holds, which hosts are refused, the
 * LRU cache, and a CA about to expire.
 *
 * Every leaf is checked the way a TLS client checks it: X509_verify_cert
 * against a store holding only the CA, purpose sslserver, RFC 5280 strict
 * checks, and the host or IP address the client asked for (ca_fixture.h).
 * Hosts given to leaf_get end right before a PROT_NONE page (guard.h). The
 * CA lives in a temporary directory made per run and removed at the end.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <arpa/inet.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "ca.h"
#include "ca_fixture.h"
#include "guard.h"
#include "leaf.h"

/* --- helpers -------------------------------------------------------------- */

/* host in a guarded copy (with its NUL), so leaf_get reading past it faults. */
static int get_guarded(struct leaf_cache *lc, const char *host, X509 **cert, EVP_PKEY **key,
		       bool *minted)
{
	size_t len = strlen(host) + 1;
	char *g = guard_copy(host, len);
	int r = leaf_get(lc, g, cert, key, minted);

	guard_free(g, len);
	return r;
}

/* The one subjectAltName of x: its type, and its value in buf (DNS text or raw address). */
static int san_of(X509 *x, unsigned char *buf, size_t size, size_t *len)
{
	GENERAL_NAMES *gens = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
	const GENERAL_NAME *gn;
	const ASN1_STRING *s;
	int type;

	assert_non_null(gens);
	assert_int_equal(sk_GENERAL_NAME_num(gens), 1);
	gn = sk_GENERAL_NAME_value(gens, 0);
	s = GENERAL_NAME_get0_value(gn, &type);
	*len = (size_t)ASN1_STRING_length(s);
	assert_true(*len <= size);
	memcpy(buf, ASN1_STRING_get0_data(s), *len);
	GENERAL_NAMES_free(gens);
	return type;
}

/* Check what every leaf must be; host is a name or an address. */
static void check_leaf(X509 *leaf, EVP_PKEY *key, const char *host, bool ip)
{
	X509 *cax = ca_cert(the_ca);
	unsigned char san[256], addr[16];
	char cn[128];
	size_t len;
	long days;

	assert_int_equal(verify_as_client(cax, leaf, ip ? NULL : host, ip ? host : NULL),
			 X509_V_OK);
	assert_int_equal(X509_check_private_key(leaf, key), 1);
	assert_int_equal(X509_get_version(leaf), X509_VERSION_3);

	/* validity: started before now, inside the CA's, 30 days */
	assert_int_equal(X509_cmp_current_time(X509_get0_notBefore(leaf)), -1);
	assert_true(ASN1_TIME_compare(X509_get0_notBefore(leaf), X509_get0_notBefore(cax)) >= 0);
	assert_true(ASN1_TIME_compare(X509_get0_notAfter(leaf), X509_get0_notAfter(cax)) <= 0);
	days = days_from_now(X509_get0_notAfter(leaf));
	assert_true(days >= 29 && days <= 30);

	/* extensions */
	assert_int_equal(X509_check_ca(leaf), 0);
	assert_true(ext_critical(leaf, NID_basic_constraints));
	assert_int_equal(X509_get_key_usage(leaf), KU_DIGITAL_SIGNATURE);
	assert_true(ext_critical(leaf, NID_key_usage));
	assert_int_equal(X509_get_extended_key_usage(leaf), XKU_SSL_SERVER);
	assert_non_null(X509_get0_subject_key_id(leaf));
	assert_int_equal(ASN1_OCTET_STRING_cmp(X509_get0_authority_key_id(leaf),
					       X509_get0_subject_key_id(cax)),
			 0);
	assert_int_equal(X509_NAME_cmp(X509_get_issuer_name(leaf), X509_get_subject_name(cax)), 0);
	assert_int_equal(X509_get_signature_nid(leaf), NID_ecdsa_with_SHA256);

	/* one SAN of the right type; CN the host */
	if (ip) {
		int af = strchr(host, ':') != NULL ? AF_INET6 : AF_INET;

		assert_int_equal(san_of(leaf, san, sizeof(san), &len), GEN_IPADD);
		assert_int_equal(inet_pton(af, host, addr), 1);
		assert_int_equal(len, af == AF_INET ? 4 : 16);
		assert_memory_equal(san, addr, len);
	} else {
		assert_int_equal(san_of(leaf, san, sizeof(san), &len), GEN_DNS);
		assert_int_equal(len, strlen(host));
		assert_memory_equal(san, host, len);
	}
	cn_of(leaf, cn, sizeof(cn));
	assert_int_equal(strncmp(cn, host, 64), 0);
	assert_int_equal(strlen(cn), strlen(host) < 64 ? strlen(host) : 64);
}

static void test_leaves_verify(void **state)
{
	const char *err = NULL;
	struct leaf_cache *lc = leaf_cache_new(the_ca, 16, &err);
	X509 *x, *cax = ca_cert(the_ca);
	EVP_PKEY *k, *k1;
	bool minted;

	assert_non_null(lc);
	assert_int_equal(get_guarded(lc, "good.test", &x, &k, &minted), 0);
	assert_true(minted);
	check_leaf(x, k, "good.test", false);
	assert_int_equal(verify_as_client(cax, x, "evil.test", NULL), X509_V_ERR_HOSTNAME_MISMATCH);
	assert_int_equal(verify_as_client(cax, x, "sub.good.test", NULL),
			 X509_V_ERR_HOSTNAME_MISMATCH);
	assert_int_equal(verify_as_client(cax, x, NULL, "203.0.113.10"),
			 X509_V_ERR_IP_ADDRESS_MISMATCH);
	k1 = k;

	assert_int_equal(get_guarded(lc, "203.0.113.10", &x, &k, &minted), 0);
	assert_true(minted);
	check_leaf(x, k, "203.0.113.10", true);
	assert_int_equal(verify_as_client(cax, x, NULL, "203.0.113.11"),
			 X509_V_ERR_IP_ADDRESS_MISMATCH);
	assert_int_equal(verify_as_client(cax, x, "good.test", NULL), X509_V_ERR_HOSTNAME_MISMATCH);
	assert_ptr_equal(k, k1); /* one key for every leaf */

	assert_int_equal(get_guarded(lc, "2001:db8::10", &x, &k, &minted), 0);
	assert_true(minted);
	check_leaf(x, k, "2001:db8::10", true);
	assert_int_equal(verify_as_client(cax, x, NULL, "2001:db8::11"),
			 X509_V_ERR_IP_ADDRESS_MISMATCH);
	assert_int_equal(verify_as_client(cax, x, NULL, "203.0.113.10"),
			 X509_V_ERR_IP_ADDRESS_MISMATCH);

	/* underscores and a long name: CN cut at 64, the SAN whole */
	assert_int_equal(get_guarded(lc,
				     "a-very-long-label-that-goes-on-and-on-and-on-and-on-and-on-x."
				     "another_label.example.test",
				     &x, &k, &minted),
			 0);
	check_leaf(x, k,
		   "a-very-long-label-that-goes-on-and-on-and-on-and-on-and-on-x."
		   "another_label.example.test",
		   false);

	leaf_cache_free(lc);
}

static void test_leaf_untrusted_elsewhere(void **state)
{
	char d[PATH_MAX];
	const char *err = NULL;
	struct ca *stranger;
	struct leaf_cache *lc = leaf_cache_new(the_ca, 4, &err);
	X509 *x;
	EVP_PKEY *k;
	bool minted;

	assert_non_null(lc);
	subdir(d, "stranger");
	assert_int_equal(ca_create(d, &err), 0);
	stranger = ca_load(d, &err);
	assert_non_null(stranger);
	assert_int_equal(leaf_get(lc, "good.test", &x, &k, &minted), 0);
	assert_int_equal(verify_as_client(ca_cert(stranger), x, "good.test", NULL),
			 X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY);
	ca_free(stranger);
	leaf_cache_free(lc);
}

static void test_cache(void **state)
{
	const char *err = NULL;
	struct leaf_cache *lc;
	X509 *a, *x, *y;
	EVP_PKEY *k;
	ASN1_INTEGER *sa;
	bool minted;

	assert_null(leaf_cache_new(the_ca, 0, &err));
	assert_null(leaf_cache_new(the_ca, LEAF_CACHE_MAX + 1, &err));
	lc = leaf_cache_new(the_ca, 2, &err);
	assert_non_null(lc);
	assert_int_equal(leaf_cache_count(lc), 0);

	assert_int_equal(leaf_get(lc, "a.test", &a, &k, &minted), 0);
	assert_true(minted);
	sa = ASN1_INTEGER_dup(X509_get0_serialNumber(a));
	assert_int_equal(get_guarded(lc, "a.test", &x, &k, &minted), 0);
	assert_false(minted);
	assert_ptr_equal(x, a);
	assert_int_equal(leaf_cache_count(lc), 1);

	assert_int_equal(leaf_get(lc, "b.test", &x, &k, &minted), 0);
	assert_true(minted);
	assert_int_not_equal(ASN1_INTEGER_cmp(X509_get0_serialNumber(x), sa), 0);
	assert_int_equal(leaf_cache_count(lc), 2);

	/* a is used again, so c evicts b, the least recently used */
	assert_int_equal(leaf_get(lc, "a.test", &x, &k, &minted), 0);
	assert_false(minted);
	assert_int_equal(leaf_get(lc, "c.test", &y, &k, &minted), 0);
	assert_true(minted);
	assert_int_equal(leaf_cache_count(lc), 2);
	assert_int_equal(leaf_get(lc, "a.test", &x, &k, &minted), 0);
	assert_false(minted);
	assert_int_equal(ASN1_INTEGER_cmp(X509_get0_serialNumber(x), sa), 0);
	assert_int_equal(leaf_get(lc, "c.test", &x, &k, &minted), 0);
	assert_false(minted);
	assert_int_equal(leaf_get(lc, "b.test", &x, &k, &minted), 0);
	assert_true(minted);
	assert_int_equal(leaf_cache_count(lc), 2);
	/* and b pushed out a (c was used after it) */
	assert_int_equal(leaf_get(lc, "a.test", &x, &k, &minted), 0);
	assert_true(minted);
	assert_int_not_equal(ASN1_INTEGER_cmp(X509_get0_serialNumber(x), sa), 0);
	ASN1_INTEGER_free(sa);
	leaf_cache_free(lc);

	/* many hosts through a small cache: bounded, every one verifies */
	lc = leaf_cache_new(the_ca, 8, &err);
	assert_non_null(lc);
	for (int i = 0; i < 100; i++) {
		char host[32];

		snprintf(host, sizeof(host), "h%d.test", i);
		assert_int_equal(leaf_get(lc, host, &x, &k, &minted), 0);
		assert_true(minted);
		assert_true(leaf_cache_count(lc) <= 8);
		if (i % 17 == 0)
			assert_int_equal(verify_as_client(ca_cert(the_ca), x, host, NULL), X509_V_OK);
	}
	assert_int_equal(leaf_cache_count(lc), 8);
	assert_int_equal(leaf_get(lc, "h99.test", &x, &k, &minted), 0);
	assert_false(minted);
	assert_int_equal(leaf_get(lc, "h91.test", &x, &k, &minted), 0);
	assert_true(minted);
	leaf_cache_free(lc);
}

static void test_bad_hosts(void **state)
{
	static const char *const bad[] = {
		"", "Good.test", "a..b", ".a", "a.", "a b", "[::1]", "good.test:443",
		"a/b", "fe80::1%eth0", "*.test", "caf\xc3\xa9.test",
	};
	char long_name[LEAF_HOST_MAX + 2], ok_name[LEAF_HOST_MAX + 1];
	const char *err = NULL;
	struct leaf_cache *lc = leaf_cache_new(the_ca, 4, &err);
	X509 *x = NULL;
	EVP_PKEY *k = NULL;
	bool minted = true;

	assert_non_null(lc);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(get_guarded(lc, bad[i], &x, &k, &minted), -1);
		assert_false(minted);
	}
	assert_null(x);
	assert_int_equal(leaf_cache_count(lc), 0);

	/* 253 bytes is the longest name (labels of 63), 254 is refused */
	memset(ok_name, 'a', LEAF_HOST_MAX);
	ok_name[LEAF_HOST_MAX] = '\0';
	for (int i = 63; i < LEAF_HOST_MAX; i += 64)
		ok_name[i] = '.';
	assert_int_equal(get_guarded(lc, ok_name, &x, &k, &minted), 0);
	check_leaf(x, k, ok_name, false);
	memcpy(long_name, ok_name, LEAF_HOST_MAX);
	long_name[LEAF_HOST_MAX] = 'a';
	long_name[LEAF_HOST_MAX + 1] = '\0';
	assert_int_equal(get_guarded(lc, long_name, &x, &k, &minted), -1);
	assert_int_equal(leaf_cache_count(lc), 1);
	leaf_cache_free(lc);
}

/*
 * A CA that expires in an hour (made here, not by ca_create): a leaf's
 * validity is cut to the CA's on both ends, and such a leaf is reused even
 * though it is within a day of its end (a new one could not last longer).
 */
static void test_leaf_inside_short_ca(void **state)
{
	char d[PATH_MAX], p[PATH_MAX];
	const char *err = NULL;
	EVP_PKEY *key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256"), *k;
	X509 *cax = X509_new(), *x, *first;
	X509V3_CTX v3;
	X509_EXTENSION *ext;
	struct leaf_cache *lc;
	struct ca *ca;
	bool minted;
	FILE *f;

	assert_non_null(key);
	assert_non_null(cax);
	assert_int_equal(X509_set_version(cax, X509_VERSION_3), 1);
	assert_int_equal(ASN1_INTEGER_set(X509_get_serialNumber(cax), 7), 1);
	assert_non_null(X509_gmtime_adj(X509_getm_notBefore(cax), -60));
	assert_non_null(X509_gmtime_adj(X509_getm_notAfter(cax), 3600));
	assert_int_equal(X509_NAME_add_entry_by_txt(X509_get_subject_name(cax), "CN", MBSTRING_ASC,
						    (const unsigned char *)"short CA", -1, -1, 0),
			 1);
	assert_int_equal(X509_set_issuer_name(cax, X509_get_subject_name(cax)), 1);
	assert_int_equal(X509_set_pubkey(cax, key), 1);
	X509V3_set_ctx(&v3, cax, cax, NULL, NULL, 0);
	ext = X509V3_EXT_nconf_nid(NULL, &v3, NID_basic_constraints, "critical,CA:TRUE");
	assert_non_null(ext);
	assert_int_equal(X509_add_ext(cax, ext, -1), 1);
	X509_EXTENSION_free(ext);
	ext = X509V3_EXT_nconf_nid(NULL, &v3, NID_key_usage, "critical,keyCertSign");
	assert_non_null(ext);
	assert_int_equal(X509_add_ext(cax, ext, -1), 1);
	X509_EXTENSION_free(ext);
	ext = X509V3_EXT_nconf_nid(NULL, &v3, NID_subject_key_identifier, "hash");
	assert_non_null(ext);
	assert_int_equal(X509_add_ext(cax, ext, -1), 1);
	X509_EXTENSION_free(ext);
	assert_true(X509_sign(cax, key, EVP_sha256()) > 0);

	subdir(d, "short");
	path_of(p, d, CA_CERT_NAME);
	f = fopen(p, "w");
	assert_non_null(f);
	assert_int_equal(PEM_write_X509(f, cax), 1);
	fclose(f);
	path_of(p, d, CA_KEY_NAME);
	f = fopen(p, "w");
	assert_non_null(f);
	assert_int_equal(chmod(p, 0600), 0);
	assert_int_equal(PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL), 1);
	fclose(f);

	ca = ca_load(d, &err);
	assert_non_null(ca);
	lc = leaf_cache_new(ca, 4, &err);
	assert_non_null(lc);
	ca_free(ca); /* the cache holds its own references */
	assert_int_equal(leaf_get(lc, "good.test", &first, &k, &minted), 0);
	assert_true(minted);
	assert_int_equal(ASN1_TIME_compare(X509_get0_notBefore(first), X509_get0_notBefore(cax)),
			 0);
	assert_int_equal(ASN1_TIME_compare(X509_get0_notAfter(first), X509_get0_notAfter(cax)), 0);
	assert_int_equal(verify_as_client(cax, first, "good.test", NULL), X509_V_OK);
	assert_int_equal(leaf_get(lc, "good.test", &x, &k, &minted), 0);
	assert_false(minted);
	assert_ptr_equal(x, first);
	leaf_cache_free(lc);
	X509_free(cax);
	EVP_PKEY_free(key);
}

static void test_public_ca_refused(void **state)
{
	const char *err = NULL;
	struct ca *pub = ca_load_public(dir, &err);

	assert_non_null(pub);
	assert_null(leaf_cache_new(pub, 8, &err));
	assert_non_null(strstr(err, "without its key"));
	ca_free(pub);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_leaves_verify),
		cmocka_unit_test(test_leaf_untrusted_elsewhere),
		cmocka_unit_test(test_cache),
		cmocka_unit_test(test_bad_hosts),
		cmocka_unit_test(test_leaf_inside_short_ca),
		cmocka_unit_test(test_public_ca_refused),
	};

	return cmocka_run_group_tests(tests, ca_fixture_setup, ca_fixture_teardown);
}
