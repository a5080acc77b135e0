/*
 * leaf.h: the leaf certificates sluice-proxy presents for the hosts it
 * decrypts, minted from sluice's CA (ca.h) and kept in a bounded LRU cache.
 *
 * A leaf: one DNS or IP subjectAltName, CN the host (cut to 64 bytes), at
 * most 30 days and never outside the CA's validity, CA:FALSE,
 * digitalSignature, serverAuth. Every leaf of one cache shares one ECDSA
 * P-256 key made when the cache is made (one per proxy run), so minting a
 * leaf costs one signature.
 *
 * libcrypto only (OpenSSL 3): nothing here speaks TLS, decides which hosts
 * are decrypted, or reads the CA's files. A failed call leaves nothing
 * allocated and clears the OpenSSL error queue, so a later SSL_get_error
 * does not read a stale error.
 */
#ifndef SLUICE_LEAF_H
#define SLUICE_LEAF_H

#include <stdbool.h>
#include <stddef.h>

#include <openssl/types.h>

#define LEAF_HOST_MAX 253
#define LEAF_CACHE_MAX (1u << 20) /* the largest max_entries leaf_cache_new accepts */

struct ca;
struct leaf_cache;

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
