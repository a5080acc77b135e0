/*
 * ca_fixture.h: for test_ca.c and test_leaf.c, a CA made with ca_create in
 * a temporary directory (the cmocka group setup and teardown), and the
 * checks a TLS client makes of a certificate (X509_verify_cert against a
 * store holding only the CA, RFC 5280 strict, the host or IP address it
 * asked for).
 *
 * Test-only, and included by one test file each: it holds that file's CA.
 * A failed check is a cmocka assertion, not a return value.
 */
#ifndef SLUICE_TESTS_CA_FIXTURE_H
#define SLUICE_TESTS_CA_FIXTURE_H

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "ca.h"

static char top[] = "/tmp/sluice-test-ca.XXXXXX";
static char dir[PATH_MAX]; /* top/state: the CA every test shares */
static struct ca *the_ca;

static inline void path_of(char *out, const char *d, const char *name)
{
	assert_true(snprintf(out, PATH_MAX, "%s/%s", d, name) < PATH_MAX);
}

/* A new directory under top named name. */
static inline void subdir(char *out, const char *name)
{
	path_of(out, top, name);
	assert_int_equal(mkdir(out, 0700), 0);
}

/*
 * The group setup: make top, a CA in dir with the umask 077 (ca_create
 * sets its modes whatever the umask), and load it into the_ca. Returns 0,
 * or -1 with a line on stderr.
 */
static inline int ca_fixture_setup(void **state)
{
	const char *err = NULL;
	mode_t old;
	int r;

	if (mkdtemp(top) == NULL)
		return -1;
	if (snprintf(dir, PATH_MAX, "%s/state", top) >= PATH_MAX || mkdir(dir, 0700) == -1)
		return -1;
	old = umask(077);
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

/* The group teardown: free the_ca and remove top with everything under it. */
static inline int ca_fixture_teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	ca_free(the_ca);
	the_ca = NULL;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
	return system(cmd) == 0 ? 0 : -1;
}

static inline long days_from_now(const ASN1_TIME *t)
{
	int days = 0, secs = 0;

	assert_int_equal(ASN1_TIME_diff(&days, &secs, NULL, t), 1);
	return days;
}

/*
 * Verify leaf trusting only trust, with RFC 5280 strict checks and, when
 * server, for purpose sslserver: X509_V_OK or the verification error. host
 * or ip (or neither) is what the client asked for.
 */
static inline int verify_chain(X509 *trust, X509 *leaf, bool server, const char *host,
			       const char *ip)
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
static inline int verify_as_client(X509 *trust, X509 *leaf, const char *host, const char *ip)
{
	return verify_chain(trust, leaf, true, host, ip);
}

static inline bool ext_critical(X509 *x, int nid)
{
	int i = X509_get_ext_by_NID(x, nid, -1);

	assert_true(i >= 0);
	return X509_EXTENSION_get_critical(X509_get_ext(x, i)) == 1;
}

static inline void cn_of(X509 *x, char *buf, int size)
{
	assert_true(X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName, buf, size) >
		    0);
}

#endif
