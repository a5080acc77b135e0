/*
 * leaf.c: the leaf certificates sluice-proxy presents, one per decrypted
 * host, minted from the CA (ca.c) with one key per cache and kept in a
 * bounded LRU cache: a table (hmap.h, SipHash under a random key: the
 * hosts are the client's to choose) for finding a host, an LRU (lru.h)
 * for eviction.
 *
 * It does not load or check the CA (ca.c does, before a cache can be
 * made), speak TLS, or decide which hosts are decrypted. A host it is given
 * is checked again here, since a certificate is signed for it.
 */
#include "leaf.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "ca_issue.h"
#include "hmap.h"
#include "lru.h"

#define LEAF_DAYS 30
#define LEAF_BACKDATE 86400             /* a day, but never before the CA's notBefore */
#define LEAF_RENEW 86400                /* re-mint a cached leaf this close to its notAfter */
#define LEAF_CN_MAX 64                  /* ub-common-name */

struct leaf {
	struct hmap_node node;    /* in the cache's table, by host */
	struct list_node lru;     /* the cache's LRU order */
	X509 *cert;
	time_t not_after;
	char host[LEAF_HOST_MAX + 1];
};

struct leaf_cache {
	X509 *ca_cert;       /* own references */
	EVP_PKEY *ca_key;
	time_t ca_not_before;
	time_t ca_not_after;
	EVP_PKEY *key;       /* the one key of every leaf */
	struct hmap byhost;  /* of the leaves: buckets at least twice max, never grown */
	struct lru lru;      /* of the leaves, most recently used first */
	size_t max;
};

/* --- minting ------------------------------------------------------------------ */

/*
 * What host is: AF_INET or AF_INET6 (the address in addr), 0 for a DNS
 * name, -1 for neither. Names are what lib/host.c writes: lower case,
 * [a-z0-9._-], no empty label, no trailing dot.
 */
static int host_family(const char *host, size_t len, unsigned char addr[16])
{
	if (inet_pton(AF_INET, host, addr) == 1)
		return AF_INET;
	if (inet_pton(AF_INET6, host, addr) == 1)
		return AF_INET6;
	if (host[0] == '.' || host[len - 1] == '.')
		return -1;
	for (size_t i = 0; i < len; i++) {
		char c = host[i];

		if (c == '.' && host[i + 1] == '.')
			return -1;
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
		      c == '.'))
			return -1;
	}
	return 0;
}

/* The subjectAltName: one IP address (af != 0) or one DNS name. */
static int add_san(X509 *x, const char *host, size_t len, int af, const unsigned char *addr)
{
	GENERAL_NAMES *gens = sk_GENERAL_NAME_new_null();
	GENERAL_NAME *gn = GENERAL_NAME_new();
	ASN1_STRING *s = af != 0 ? ASN1_OCTET_STRING_new() : ASN1_IA5STRING_new();
	int ret = -1;

	if (gens == NULL || gn == NULL || s == NULL)
		goto out;
	if (af != 0 ? ASN1_OCTET_STRING_set(s, addr, af == AF_INET ? 4 : 16) != 1
		    : ASN1_STRING_set(s, host, (int)len) != 1)
		goto out;
	GENERAL_NAME_set0_value(gn, af != 0 ? GEN_IPADD : GEN_DNS, s);
	s = NULL;
	if (sk_GENERAL_NAME_push(gens, gn) == 0)
		goto out;
	gn = NULL;
	if (X509_add1_ext_i2d(x, NID_subject_alt_name, gens, 0, X509V3_ADD_DEFAULT) == 1)
		ret = 0;
out:
	ASN1_STRING_free(s);
	GENERAL_NAME_free(gn);
	GENERAL_NAMES_free(gens);
	return ret;
}

/* A new leaf for host, valid from now within the CA's validity, or NULL. */
static X509 *leaf_mint(struct leaf_cache *lc, const char *host, size_t len, int af,
		       const unsigned char *addr, time_t now)
{
	time_t nb = now - LEAF_BACKDATE, na = now + (time_t)LEAF_DAYS * 86400;
	X509_NAME *name;
	X509 *x;

	if (nb < lc->ca_not_before)
		nb = lc->ca_not_before;
	if (na > lc->ca_not_after)
		na = lc->ca_not_after;
	if (na <= now || nb >= na)
		return NULL;
	x = X509_new();
	if (x == NULL)
		return NULL;
	name = X509_get_subject_name(x);
	if (X509_set_version(x, X509_VERSION_3) != 1 || ca_set_serial(x) == -1 ||
	    ASN1_TIME_set(X509_getm_notBefore(x), nb) == NULL ||
	    ASN1_TIME_set(X509_getm_notAfter(x), na) == NULL ||
	    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)host,
				       len < LEAF_CN_MAX ? (int)len : LEAF_CN_MAX, -1, 0) != 1 ||
	    X509_set_issuer_name(x, X509_get_subject_name(lc->ca_cert)) != 1 ||
	    X509_set_pubkey(x, lc->key) != 1)
		goto out_fail;
	if (ca_add_ext(x, lc->ca_cert, NID_basic_constraints, "critical,CA:FALSE") == -1 ||
	    ca_add_ext(x, lc->ca_cert, NID_key_usage, "critical,digitalSignature") == -1 ||
	    ca_add_ext(x, lc->ca_cert, NID_ext_key_usage, "serverAuth") == -1 ||
	    ca_add_ext(x, lc->ca_cert, NID_subject_key_identifier, "hash") == -1 ||
	    ca_add_ext(x, lc->ca_cert, NID_authority_key_identifier, "keyid:always") == -1 ||
	    add_san(x, host, len, af, addr) == -1)
		goto out_fail;
	if (X509_sign(x, lc->ca_key, EVP_sha256()) <= 0)
		goto out_fail;
	return x;
out_fail:
	X509_free(x);
	return NULL;
}

/* --- the cache --------------------------------------------------------------- */

static struct leaf *leaf_of_lru(struct list_node *n)
{
	return list_entry(n, struct leaf, lru);
}

struct leaf_cache *leaf_cache_new(const struct ca *ca, size_t max_entries, const char **err)
{
	struct leaf_cache *lc;

	if (ca->key == NULL) {
		*err = "the CA was loaded without its key";
		return NULL;
	}
	if (max_entries == 0 || max_entries > LEAF_CACHE_MAX) {
		*err = "leaf cache size out of range";
		return NULL;
	}
	lc = calloc(1, sizeof(*lc));
	if (lc == NULL) {
		*err = "out of memory";
		return NULL;
	}
	lc->max = max_entries;
	/* SipHash under a random key: the hosts are the client's to choose */
	if (hmap_init(&lc->byhost, 2 * max_entries, 2 * max_entries) == -1) {
		*err = errno == ENOMEM ? "out of memory" : "no random bytes";
		free(lc);
		return NULL;
	}
	lc->key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	if (lc->key == NULL) {
		*err = "generating the leaf key failed";
		goto out_fail;
	}
	if (X509_up_ref(ca->cert) != 1) {
		*err = "out of memory";
		goto out_fail;
	}
	lc->ca_cert = ca->cert;
	if (EVP_PKEY_up_ref(ca->key) != 1) {
		*err = "out of memory";
		goto out_fail;
	}
	lc->ca_key = ca->key;
	lc->ca_not_before = ca->not_before;
	lc->ca_not_after = ca->not_after;
	return lc;
out_fail:
	leaf_cache_free(lc);
	ERR_clear_error();
	return NULL;
}

int leaf_get(struct leaf_cache *lc, const char *host, X509 **cert, EVP_PKEY **key,
	     bool *minted)
{
	size_t len = strnlen(host, LEAF_HOST_MAX + 1);
	unsigned char addr[16];
	time_t now = time(NULL);
	struct leaf *l = NULL;
	struct hmap_node *n;
	uint64_t h;
	X509 *x;
	int af;

	*minted = false;
	if (len == 0 || len > LEAF_HOST_MAX)
		return -1;
	af = host_family(host, len, addr);
	if (af == -1)
		return -1;
	h = hmap_hash(&lc->byhost, host, len);
	for (n = hmap_find(&lc->byhost, h); n != NULL && l == NULL; n = hmap_find_next(n)) {
		if (strcmp(hmap_entry(n, struct leaf, node)->host, host) == 0)
			l = hmap_entry(n, struct leaf, node);
	}
	/* a leaf cut short by the CA's own notAfter cannot be renewed into a longer one */
	if (l != NULL && l->not_after > now &&
	    (l->not_after - now > LEAF_RENEW || l->not_after >= lc->ca_not_after)) {
		lru_touch(&lc->lru, &l->lru);
		*cert = l->cert;
		*key = lc->key;
		return 0;
	}
	x = leaf_mint(lc, host, len, af, addr, now);
	if (x == NULL) {
		ERR_clear_error();
		return -1;
	}
	if (l != NULL) {
		/* renewing: the entry stays in the table, its certificate changes */
		lru_touch(&lc->lru, &l->lru);
		X509_free(l->cert);
	} else {
		if (lc->lru.count == lc->max) {
			/* reuse the least recently used entry: nothing can fail after evicting */
			l = leaf_of_lru(lru_oldest(&lc->lru));
			lru_remove(&lc->lru, &l->lru);
			hmap_remove(&lc->byhost, &l->node);
			X509_free(l->cert);
			memset(l, 0, sizeof(*l));
		} else {
			l = calloc(1, sizeof(*l));
			if (l == NULL) {
				X509_free(x);
				return -1;
			}
		}
		memcpy(l->host, host, len + 1);
		hmap_insert(&lc->byhost, &l->node, h);
		lru_add(&lc->lru, &l->lru);
	}
	l->cert = x;
	l->not_after = ca_asn1_time(X509_get0_notAfter(x));
	*cert = x;
	*key = lc->key;
	*minted = true;
	return 0;
}

size_t leaf_cache_count(const struct leaf_cache *lc)
{
	return lc->lru.count;
}

void leaf_cache_free(struct leaf_cache *lc)
{
	struct list_node *n, *next;

	if (lc == NULL)
		return;
	list_foreach_safe(n, next, &lc->lru.list) {
		X509_free(leaf_of_lru(n)->cert);
		free(leaf_of_lru(n));
	}
	hmap_release(&lc->byhost);
	EVP_PKEY_free(lc->key);
	EVP_PKEY_free(lc->ca_key);
	X509_free(lc->ca_cert);
	free(lc);
}
