/*
 * test_ca.c: the CA (ca_create, ca_load, ca_fingerprint) and the leaves
 * minted from it (leaf_cache_new, leaf_get).
 *
 * Every leaf is checked the way a TLS client checks it: X509_verify_cert
 * against a store holding only the CA, purpose sslserver, RFC 5280 strict
 * checks, and the host or IP address the client asked for. Hosts given to
 * leaf_get end right before a PROT_NONE page (guard.h). The CA lives in a
 * temporary directory made per run and removed at the end.
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

#include <arpa/inet.h>

#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "ca.h"
#include "guard.h"

#define DAY 86400

static char top[] = "/tmp/sluice-test-ca.XXXXXX";
static char dir[PATH_MAX];   /* the CA every test shares */
static struct ca *the_ca;

/* --- helpers -------------------------------------------------------------- */

static void path_of(char *out, const char *d, const char *name)
{
	assert_true(snprintf(out, PATH_MAX, "%s/%s", d, name) < PATH_MAX);
}

/* A new directory under top named name. */
static void subdir(char *out, const char *name)
{
	path_of(out, top, name);
	assert_int_equal(mkdir(out, 0700), 0);
}

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

static long days_from_now(const ASN1_TIME *t)
{
	int days = 0, secs = 0;

	assert_int_equal(ASN1_TIME_diff(&days, &secs, NULL, t), 1);
	return days;
}

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

/*
 * Verify leaf trusting only trust, with RFC 5280 strict checks and, when
 * server, for purpose sslserver: X509_V_OK or the verification error. host
 * or ip (or neither) is what the client asked for.
 */
static int verify_chain(X509 *trust, X509 *leaf, bool server, const char *host, const char *ip)
{
	X509_STORE *store = X509_STORE_new();
	X509_STORE_CTX *ctx = X509_STORE_CTX_new();
	X509_VERIFY_PARAM *param;
	int ret;

	assert_non_null(store);
	assert_non_null(ctx);
	assert_int_equal(X509_STORE_add_cert(store, trust), 1);
	assert_int_equal(X509_STORE_CTX_init(ctx, store, leaf, NULL), 1);
	param = X509_STORE_CTX_get0_param(ctx);
	if (server)
		assert_int_equal(X509_VERIFY_PARAM_set_purpose(param, X509_PURPOSE_SSL_SERVER), 1);
	assert_int_equal(X509_VERIFY_PARAM_set_flags(param, X509_V_FLAG_X509_STRICT), 1);
	if (host != NULL)
		assert_int_equal(X509_VERIFY_PARAM_set1_host(param, host, 0), 1);
	if (ip != NULL)
		assert_int_equal(X509_VERIFY_PARAM_set1_ip_asc(param, ip), 1);
	ret = X509_verify_cert(ctx) == 1 ? X509_V_OK : X509_STORE_CTX_get_error(ctx);
	X509_STORE_CTX_free(ctx);
	X509_STORE_free(store);
	return ret;
}

/* Verify leaf as a TLS client would (verify_chain, purpose sslserver). */
static int verify_as_client(X509 *trust, X509 *leaf, const char *host, const char *ip)
{
	return verify_chain(trust, leaf, true, host, ip);
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

static bool ext_critical(X509 *x, int nid)
{
	int i = X509_get_ext_by_NID(x, nid, -1);

	assert_true(i >= 0);
	return X509_EXTENSION_get_critical(X509_get_ext(x, i)) == 1;
}

static void cn_of(X509 *x, char *buf, int size)
{
	assert_true(X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName, buf, size) >
		    0);
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
	assert_null(leaf_cache_new(pub, 8, &err));
	assert_non_null(strstr(err, "without its key"));
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

/* --- leaves ----------------------------------------------------------------- */

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

/* --- setup ------------------------------------------------------------------ */

static int group_setup(void **state)
{
	const char *err = NULL;
	mode_t old;
	int r;

	if (mkdtemp(top) == NULL)
		return -1;
	path_of(dir, top, "state");
	if (mkdir(dir, 0700) == -1)
		return -1;
	old = umask(077); /* ca_create sets its modes whatever the umask */
	r = ca_create(dir, &err);
	umask(old);
	if (r == -1) {
		fprintf(stderr, "ca_create: %s\n", err);
		return -1;
	}
	if (err != NULL)
		fprintf(stderr, "# ca_create warning: %s\n", err);
	the_ca = ca_load(dir, &err);
	if (the_ca == NULL) {
		fprintf(stderr, "ca_load: %s\n", err);
		return -1;
	}
	return 0;
}

static int group_teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	ca_free(the_ca);
	the_ca = NULL;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
	return system(cmd) == 0 ? 0 : -1;
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
		cmocka_unit_test(test_leaves_verify),
		cmocka_unit_test(test_leaf_untrusted_elsewhere),
		cmocka_unit_test(test_cache),
		cmocka_unit_test(test_bad_hosts),
		cmocka_unit_test(test_leaf_inside_short_ca),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
