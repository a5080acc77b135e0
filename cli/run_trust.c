/*
 * run_trust.c: what a run's tools trust (run.h). Each tool reads trust its
 * own way (OpenSSL, GnuTLS and rustls the system bundle, npm a `cafile`,
 * Java its cacerts keystore), so a run's system store itself holds sluice's
 * CA: a combined bundle (a root's own bundle, then sluice's CA) and a Java
 * keystore of the same certificates, made per run in its pub directory and
 * bound over the distribution's paths by the run's init (run_init.c) or by
 * podman (-v). It reads the root's bundle, never writes it, and makes no
 * mount. The keystore is PKCS#12 made with OpenSSL, so the machine needs
 * no Java: certificates in plain (unencrypted) bags, each with Java's
 * trusted-key-usage attribute (without it Java skips the bag), a MAC under
 * "changeit" (the password tools pass by habit; Java itself opens a
 * truststore with none and then skips the MAC).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/pkcs12.h>
#include <openssl/x509.h>

#include "file.h"
#include "run.h"

const char *const run_trust_bundles[] = {
	"/etc/ssl/certs/ca-certificates.crt",		     /* Debian, Ubuntu, Alpine, Arch */
	"/etc/pki/tls/certs/ca-bundle.crt",		     /* Red Hat, Fedora (a link to the next) */
	"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", /* Red Hat's extracted roots */
	"/etc/ssl/ca-bundle.pem",			     /* SUSE */
	"/etc/ssl/cert.pem",				     /* Alpine, Arch: a link to the first */
	NULL,
};

const char *const run_trust_keystores[] = {
	"/etc/ssl/certs/java/cacerts",		    /* Debian's (the JRE's lib/security/cacerts links here) */
	"/etc/pki/ca-trust/extracted/java/cacerts", /* Red Hat's */
	NULL,
};

#define TRUST_BUNDLE_MAX (1 << 22) /* a machine's bundle: ~200 KB on Debian */
#define JAVA_TRUSTED_KEY_USAGE "2.16.840.1.113894.746875.1.1" /* Oracle's trustedKeyUsage */
#define ANY_EXTENDED_KEY_USAGE "2.5.29.37.0"
#define KEYSTORE_PASSWORD "changeit"

/*
 * The first of run_trust_bundles that root holds, read whole into *out
 * (the caller frees), links resolved inside root (an image's absolute link
 * names its own file, not the machine's). Returns 0 (*out NULL when root
 * holds none) or -1 after printing.
 */
static int root_bundle_read(const char *root, char **out, size_t *len)
{
	/* O_PATH: a FIFO or a device there is not opened (it would block, or be a device's bytes) */
	struct open_how how = { .flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_IN_ROOT };
	struct stat st;
	int dir = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC), fd, ret = -1;
	char path[32];

	*out = NULL;
	*len = 0;
	if (dir == -1) {
		fprintf(stderr, "run: open %s: %s\n", root, strerror(errno));
		return -1;
	}
	for (size_t i = 0; run_trust_bundles[i] != NULL; i++) {
		fd = (int)syscall(SYS_openat2, dir, run_trust_bundles[i] + 1, &how, sizeof(how));
		if (fd == -1)
			continue;
		if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
			close(fd);
			continue;
		}
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		ret = file_read(path, TRUST_BUNDLE_MAX, out, len);
		close(fd);
		if (ret == -1)
			fprintf(stderr, "run: read %s%s: %s\n", root, run_trust_bundles[i], strerror(errno));
		goto out;
	}
	ret = 0;
out:
	close(dir);
	return ret;
}

/*
 * Every certificate of a PEM text that reads, in order, onto certs: a
 * block that does not read (a root's bundle cut short, say) is skipped,
 * not the rest. Returns 0, or -1 when out of memory.
 */
static int pem_certs(STACK_OF(X509) *certs, const char *pem, size_t len)
{
	BIO *b = BIO_new_mem_buf(pem, (int)len);
	size_t before;
	X509 *c;
	int ret = 0;

	if (b == NULL)
		return -1;
	while ((before = BIO_pending(b)) > 0) {
		c = PEM_read_bio_X509(b, NULL, NULL, NULL);
		if (c != NULL && sk_X509_push(certs, c) == 0) {
			X509_free(c);
			ret = -1;
			break;
		}
		if (c == NULL && (size_t)BIO_pending(b) == before)
			break; /* nothing consumed: no way on */
	}
	ERR_clear_error(); /* the end of the text reads as an error */
	BIO_free(b);
	return ret;
}

/* len bytes at path, 0644. Returns 0 or -1 (errno set). */
static int bytes_write(const char *path, const void *p, size_t len)
{
	FILE *f = fopen(path, "we");

	if (f == NULL)
		return -1;
	if (fwrite(p, 1, len, f) != len) {
		fclose(f);
		return -1;
	}
	return fclose(f) == EOF || chmod(path, 0644) == -1 ? -1 : 0;
}

/* One trusted-certificate bag for Java, named alias, on bags. Returns 0 or -1. */
static int keystore_bag(STACK_OF(PKCS12_SAFEBAG) **bags, X509 *cert, const char *alias,
			const ASN1_OBJECT *any)
{
	PKCS12_SAFEBAG *bag = PKCS12_add_cert(bags, cert);

	if (bag == NULL || PKCS12_add_friendlyname_asc(bag, alias, -1) != 1 ||
	    PKCS12_add1_attr_by_txt(bag, JAVA_TRUSTED_KEY_USAGE, V_ASN1_OBJECT,
				    (const unsigned char *)any, -1) != 1)
		return -1;
	return 0;
}

/* The PKCS#12 truststore of certs (the first one sluice's CA) at path, 0644. Returns 0 or -1. */
static int keystore_write(STACK_OF(X509) *certs, const char *path)
{
	STACK_OF(PKCS12_SAFEBAG) *bags = NULL;
	STACK_OF(PKCS7) *safes = NULL;
	ASN1_OBJECT *any = OBJ_txt2obj(ANY_EXTENDED_KEY_USAGE, 1);
	PKCS12 *p12 = NULL;
	unsigned char *der = NULL;
	int n = sk_X509_num(certs), len, ret = -1;
	char alias[32];

	if (any == NULL)
		goto out;
	for (int i = 0; i < n; i++) {
		if (i == 0)
			snprintf(alias, sizeof(alias), "sluice-ca");
		else
			snprintf(alias, sizeof(alias), "root-%d", i);
		if (keystore_bag(&bags, sk_X509_value(certs, i), alias, any) == -1)
			goto out;
	}
	/* nid_safe -1: the certificates in plain, which Java reads without a password */
	if (PKCS12_add_safe(&safes, bags, -1, 0, NULL) != 1 || (p12 = PKCS12_add_safes(safes, 0)) == NULL ||
	    PKCS12_set_mac(p12, KEYSTORE_PASSWORD, -1, NULL, 0, PKCS12_DEFAULT_ITER, NULL) != 1 ||
	    (len = i2d_PKCS12(p12, &der)) <= 0)
		goto out;
	ret = bytes_write(path, der, (size_t)len);
out:
	ERR_clear_error();
	OPENSSL_free(der);
	PKCS12_free(p12);
	sk_PKCS7_pop_free(safes, PKCS7_free);
	sk_PKCS12_SAFEBAG_pop_free(bags, PKCS12_SAFEBAG_free);
	ASN1_OBJECT_free(any);
	return ret;
}

/* certs as one PEM text at path, 0644. Returns 0 or -1. */
static int bundle_write(STACK_OF(X509) *certs, const char *path)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *p;
	long len;
	int ret = -1;

	if (b == NULL)
		return -1;
	for (int i = 0; i < sk_X509_num(certs); i++)
		if (PEM_write_bio_X509(b, sk_X509_value(certs, i)) != 1)
			goto out;
	len = BIO_get_mem_data(b, &p);
	if (len > 0)
		ret = bytes_write(path, p, (size_t)len);
out:
	ERR_clear_error();
	BIO_free(b);
	return ret;
}

int run_trust_make(const char *root, const char *ca_path, const char *bundle_path,
		   const char *keystore_path)
{
	char *sys = NULL, *ours = NULL;
	size_t syslen, ourlen;
	STACK_OF(X509) *certs = NULL;
	int ret = -1;

	if (file_read(ca_path, 1 << 16, &ours, &ourlen) == -1) {
		fprintf(stderr, "run: read %s: %s\n", ca_path, strerror(errno));
		return -1;
	}
	if (root_bundle_read(root, &sys, &syslen) == -1)
		goto out;
	/*
	 * Written again from the certificates that read, the CA first: a
	 * root's bundle cut short, which OpenSSL refuses whole, neither
	 * swallows the CA nor makes the run's bundle unreadable.
	 */
	certs = sk_X509_new_null();
	if (certs == NULL || pem_certs(certs, ours, ourlen) == -1 || sk_X509_num(certs) != 1 ||
	    (syslen > 0 && pem_certs(certs, sys, syslen) == -1)) {
		fprintf(stderr, "run: %s: not one certificate\n", ca_path);
		goto out;
	}
	if (bundle_write(certs, bundle_path) == -1) {
		fprintf(stderr, "run: write %s failed\n", bundle_path);
		goto out;
	}
	if (keystore_write(certs, keystore_path) == -1) {
		fprintf(stderr, "run: a Java keystore at %s failed\n", keystore_path);
		goto out;
	}
	ret = 0;
out:
	sk_X509_pop_free(certs, X509_free);
	free(sys);
	free(ours);
	return ret;
}

size_t run_trust_targets(const char *root, const char *const *paths, const char **found, size_t max)
{
	struct open_how how = { .flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_IN_ROOT };
	int dir = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC), fd;
	struct stat st, seen[RUN_TRUST_MAX];
	size_t n = 0;
	bool dup;

	for (size_t i = 0; dir != -1 && paths[i] != NULL && n < max && n < RUN_TRUST_MAX; i++) {
		fd = (int)syscall(SYS_openat2, dir, paths[i] + 1, &how, sizeof(how));
		if (fd == -1)
			continue;
		if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
			dup = false;
			for (size_t j = 0; j < n; j++)
				dup |= seen[j].st_dev == st.st_dev && seen[j].st_ino == st.st_ino;
			if (!dup) {
				seen[n] = st;
				found[n++] = paths[i];
			}
		}
		close(fd);
	}
	if (dir != -1)
		close(dir);
	if (n == 0 && max > 0)
		found[n++] = paths[0];
	return n;
}
