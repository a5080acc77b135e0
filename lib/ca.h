/*
 * ca.h: sluice's own certificate authority. The leaf certificates
 * sluice-proxy presents for the hosts it decrypts are minted from it by
 * leaf.h.
 *
 * The CA lives in the state directory:
 *
 *   STATE/ca.key         ECDSA P-256 private key, PEM PKCS#8, 0600, never overwritten
 *   STATE/ca.crt         the self-signed CA certificate, PEM, 0644
 *   STATE/ca-bundle.crt  the system roots followed by ca.crt, PEM, 0644: a
 *                        sandbox trusts this file, because passthrough hosts
 *                        still present their real certificates
 *
 * The CA: CN "sluice CA <8 hex>", O "sluice", 10 years, CA:TRUE with
 * pathlen 0, keyCertSign and cRLSign only.
 *
 * libcrypto only (OpenSSL 3): nothing here mints leaves, speaks TLS or
 * decides which hosts are decrypted. Errors are static strings; a failed
 * call leaves nothing allocated and clears the OpenSSL error queue, so a
 * later SSL_get_error does not read a stale error.
 */
#ifndef SLUICE_CA_H
#define SLUICE_CA_H

#include <openssl/types.h>

#define CA_KEY_NAME "ca.key"
#define CA_CERT_NAME "ca.crt"
#define CA_BUNDLE_NAME "ca-bundle.crt"
#define CA_SYSTEM_ROOTS "/etc/ssl/certs/ca-certificates.crt"
#define CA_FINGERPRINT_SIZE 96 /* 32 bytes as "AB:" x 32, less the last ':', and a NUL */

struct ca;

/*
 * Make a new CA in dir (which must exist): ca.key created with
 * O_EXCL|O_NOFOLLOW, then ca.crt (also O_EXCL), then ca-bundle.crt
 * (replaced atomically). Returns 0, or -1 with *err; an existing ca.key is
 * never touched ("a CA exists"), and a failure after ca.key was created
 * removes the files this call made. On success *err is NULL, or a warning
 * to print (no system roots: the bundle holds only the sluice CA).
 */
int ca_create(const char *dir, const char **err);

/*
 * Load dir/ca.crt and dir/ca.key. Refuses a key file that is not a regular
 * file or that group or other may read or write, a key that is not EC
 * P-256 or does not match the certificate, a certificate that is not a CA
 * or has expired. Returns a CA the caller frees with ca_free, or NULL with
 * *err.
 */
struct ca *ca_load(const char *dir, const char **err);

/*
 * Load dir/ca.crt alone, for showing it (no root needed). The result has
 * no key: ca_fingerprint and ca_cert work, leaf_cache_new refuses it.
 */
struct ca *ca_load_public(const char *dir, const char **err);

void ca_free(struct ca *ca);

/* The CA certificate, borrowed: valid until ca_free. */
X509 *ca_cert(const struct ca *ca);

/* SHA-256 of the DER certificate as "AB:CD:...:EF" (95 characters). Returns 0 or -1. */
int ca_fingerprint(const struct ca *ca, char out[CA_FINGERPRINT_SIZE]);

#endif
