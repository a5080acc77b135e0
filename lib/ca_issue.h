/*
 * ca_issue.h: private to ca.c and leaf.c, what issuing a certificate from
 * the CA takes: the CA's fields, and the X509 helpers both the CA
 * certificate and the leaves are built with.
 *
 * Nothing outside lib/ca.c and lib/leaf.c includes this; everyone else
 * holds a struct ca only through ca.h. A helper that fails leaves
 * OpenSSL's error queue for its caller to clear.
 */
#ifndef SLUICE_CA_ISSUE_H
#define SLUICE_CA_ISSUE_H

#include <time.h>

#include <openssl/types.h>

struct ca {
	X509 *cert;
	EVP_PKEY *key;      /* NULL when loaded by ca_load_public */
	time_t not_before;  /* the certificate's validity, Unix seconds */
	time_t not_after;
};

/* ca.c */

/* An ASN1_TIME as Unix seconds, or -1. */
time_t ca_asn1_time(const ASN1_TIME *t);

/* Give x a positive 128-bit random serial (RFC 5280 allows 20 octets). Returns 0 or -1. */
int ca_set_serial(X509 *x);

/* Add the extension nid = value (openssl.cnf syntax) to x, issued by issuer. Returns 0 or -1. */
int ca_add_ext(X509 *x, X509 *issuer, int nid, const char *value);

#endif
