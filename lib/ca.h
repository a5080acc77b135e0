/*
 * ca.h: sluice's own certificate authority, and the leaf certificates
 * sluice-proxy presents for the hosts it decrypts.
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
 * pathlen 0, keyCertSign and cRLSign only. A leaf: one DNS or IP
 * subjectAltName, CN the host (cut to 64 bytes), at most 30 days and never
 * outside the CA's validity, CA:FALSE, digitalSignature, serverAuth. Every
 * leaf of one cache shares one ECDSA P-256 key made when the cache is made
 * (one per proxy run), so minting a leaf costs one signature.
 *
 * libcrypto only (OpenSSL 3): nothing here speaks TLS or decides which
 * hosts are decrypted. Errors are static strings; a failed call leaves
 * nothing allocated and clears the OpenSSL error queue, so a later
 * SSL_get_error does not read a stale error.
 */
#ifndef SLUICE_CA_H
#define SLUICE_CA_H

#include <stdbool.h>
#include <stddef.h>

#include <openssl/types.h>

#define CA_KEY_NAME "ca.key"
#define CA_CERT_NAME "ca.crt"
#define CA_BUNDLE_NAME "ca-bundle.crt"
#define CA_SYSTEM_ROOTS "/etc/ssl/certs/ca-certificates.crt"
#define CA_FINGERPRINT_SIZE 96 /* 32 bytes as "AB:" x 32, less the last ':', and a NUL */

#define LEAF_HOST_MAX 253
#define LEAF_CACHE_MAX (1u << 20) /* the largest max_entries leaf_cache_new accepts */

struct ca;
struct leaf_cache;

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

/*
 * A leaf cache holding at most max_entries leaves (1..LEAF_CACHE_MAX),
 * least recently used evicted first. It takes its own references to the
 * CA's certificate and key, so ca may be freed before the cache. Generates
 * the leaf key. Returns a cache freed with leaf_cache_free, or NULL with
 * *err (a CA loaded without its key, a size out of range, out of memory).
 */
struct leaf_cache *leaf_cache_new(const struct ca *ca, size_t max_entries, const char **err);

/*
 * The certificate and key to present for host: a canonical host as
 * lib/host.c writes it, a lower-case DNS name (1-253 bytes of [a-z0-9._-])
 * or an IPv4 / IPv6 literal without brackets. A cached leaf is returned
 * without signing (*minted false) unless it is within a day of expiring;
 * otherwise one is minted (*minted true), evicting the least recently used
 * leaf when the cache is full. *cert and *key are borrowed: valid until the
 * next leaf_get or leaf_cache_free (SSL_use_certificate and
 * SSL_use_PrivateKey take their own references). Returns 0, or -1 (a bad
 * host, the CA expired, out of memory; the cache is unchanged).
 */
int leaf_get(struct leaf_cache *lc, const char *host, X509 **cert, EVP_PKEY **key,
	     bool *minted);

/* Leaves in the cache now. */
size_t leaf_cache_count(const struct leaf_cache *lc);

void leaf_cache_free(struct leaf_cache *lc);

#endif
