/*
 * ca.c: sluice's certificate authority, made once by `sluice ca init` and
 * loaded by sluice-proxy: creating its files, loading and checking them,
 * its fingerprint, and the X509 helpers leaf.c shares (ca_issue.h).
 *
 * It does not mint leaves (leaf.c), speak TLS, decide which hosts are
 * decrypted, revoke, or rotate the CA. Key bytes are read from a file whose
 * mode is checked on the open descriptor, kept in a wiped stack buffer and
 * written through OpenSSL's secure-heap BIO.
 */
#include "ca.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "ca_issue.h"
#include "file.h"

#define CA_DAYS 3652                    /* ten years */
#define CA_BACKDATE 3600                /* notBefore an hour ago: clocks disagree */
#define CERT_FILE_MAX (64 * 1024)       /* ca.crt */
#define KEY_FILE_MAX (16 * 1024)        /* ca.key */
#define SYSTEM_ROOTS_MAX (16 * 1024 * 1024)

/* --- small helpers ----------------------------------------------------------- */

/* dir/name into out (PATH_MAX). Returns 0, or -1 when too long. */
static int path_join(char *out, const char *dir, const char *name)
{
	int n = snprintf(out, PATH_MAX, "%s/%s", dir, name);

	return n < 0 || n >= PATH_MAX ? -1 : 0;
}

/* Refuse to prompt for a passphrase: sluice's keys are never encrypted. */
static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
	return -1;
}

static int write_all(int fd, const char *p, size_t len)
{
	while (len > 0) {
		ssize_t w = write(fd, p, len);

		if (w == -1 && errno == EINTR)
			continue;
		if (w == -1)
			return -1;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

/* --- shared with leaf.c (ca_issue.h) ----------------------------------------- */

time_t ca_asn1_time(const ASN1_TIME *t)
{
	struct tm tm;

	if (t == NULL || ASN1_TIME_to_tm(t, &tm) != 1)
		return -1;
	return timegm(&tm);
}

int ca_set_serial(X509 *x)
{
	unsigned char rnd[16];
	ASN1_INTEGER *ai = NULL;
	BIGNUM *bn;
	int ret = -1;

	if (RAND_bytes(rnd, sizeof(rnd)) != 1)
		return -1;
	rnd[sizeof(rnd) - 1] |= 1; /* never zero */
	bn = BN_bin2bn(rnd, sizeof(rnd), NULL);
	if (bn == NULL)
		return -1;
	ai = BN_to_ASN1_INTEGER(bn, NULL);
	if (ai != NULL && X509_set_serialNumber(x, ai) == 1)
		ret = 0;
	ASN1_INTEGER_free(ai);
	BN_free(bn);
	return ret;
}

int ca_add_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX ctx;
	X509_EXTENSION *ext;
	int ok;

	X509V3_set_ctx(&ctx, issuer, x, NULL, NULL, 0);
	ext = X509V3_EXT_nconf_nid(NULL, &ctx, nid, value);
	if (ext == NULL)
		return -1;
	ok = X509_add_ext(x, ext, -1);
	X509_EXTENSION_free(ext);
	return ok == 1 ? 0 : -1;
}

/* --- making the CA ------------------------------------------------------------ */

/* The self-signed CA certificate for key, or NULL. */
static X509 *ca_make_cert(EVP_PKEY *key)
{
	unsigned char rnd[4];
	char cn[32];
	X509_NAME *name;
	X509 *x = X509_new();

	if (x == NULL || RAND_bytes(rnd, sizeof(rnd)) != 1)
		goto out_fail;
	snprintf(cn, sizeof(cn), "sluice CA %02x%02x%02x%02x", rnd[0], rnd[1], rnd[2], rnd[3]);
	name = X509_get_subject_name(x);
	if (X509_set_version(x, X509_VERSION_3) != 1 || ca_set_serial(x) == -1 ||
	    X509_gmtime_adj(X509_getm_notBefore(x), -CA_BACKDATE) == NULL ||
	    X509_time_adj_ex(X509_getm_notAfter(x), CA_DAYS, 0, NULL) == NULL ||
	    X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, (const unsigned char *)"sluice",
				       -1, -1, 0) != 1 ||
	    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1,
				       -1, 0) != 1 ||
	    X509_set_issuer_name(x, name) != 1 || X509_set_pubkey(x, key) != 1)
		goto out_fail;
	/* SKI before AKI: the AKI of a self-signed certificate copies it */
	if (ca_add_ext(x, x, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") == -1 ||
	    ca_add_ext(x, x, NID_key_usage, "critical,keyCertSign,cRLSign") == -1 ||
	    ca_add_ext(x, x, NID_subject_key_identifier, "hash") == -1 ||
	    ca_add_ext(x, x, NID_authority_key_identifier, "keyid:always") == -1)
		goto out_fail;
	if (X509_sign(x, key, EVP_sha256()) <= 0)
		goto out_fail;
	return x;
out_fail:
	X509_free(x);
	return NULL;
}

/*
 * Create path, which must not exist (O_EXCL, no link followed), with
 * exactly mode whatever the umask, holding mem's bytes. Returns 0, or -1
 * with *err (exists when the path exists); a failed write removes the file.
 */
static int write_new(const char *path, mode_t mode, BIO *mem, const char *exists,
		     const char *failed, const char **err)
{
	char *p = NULL;
	long n = BIO_get_mem_data(mem, &p);
	int fd;

	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd == -1) {
		*err = errno == EEXIST ? exists : failed;
		return -1;
	}
	if (n <= 0 || fchmod(fd, mode) == -1 || write_all(fd, p, (size_t)n) == -1 ||
	    fsync(fd) == -1) {
		close(fd);
		unlink(path);
		*err = failed;
		return -1;
	}
	if (close(fd) == -1) {
		unlink(path);
		*err = failed;
		return -1;
	}
	return 0;
}

/*
 * Replace dir/ca-bundle.crt (0644) with the system roots and then ours,
 * through a temporary file and rename. Returns 0 (*warn set when there are
 * no system roots), or -1 with *err.
 */
static int bundle_write(const char *dir, BIO *ours, const char **warn, const char **err)
{
	char tmp[PATH_MAX], path[PATH_MAX];
	char *sys = NULL, *p = NULL;
	size_t syslen = 0;
	long n = BIO_get_mem_data(ours, &p);
	int fd, ret = -1;

	*err = "cannot write " CA_BUNDLE_NAME;
	if (path_join(path, dir, CA_BUNDLE_NAME) == -1 ||
	    snprintf(tmp, sizeof(tmp), "%s/.%s.XXXXXX", dir, CA_BUNDLE_NAME) >= (int)sizeof(tmp))
		return -1;
	if (file_read(CA_SYSTEM_ROOTS, SYSTEM_ROOTS_MAX, &sys, &syslen) == -1) {
		if (errno != ENOENT) {
			*err = "cannot read the system roots " CA_SYSTEM_ROOTS;
			return -1;
		}
		*warn = "no system roots (" CA_SYSTEM_ROOTS "): " CA_BUNDLE_NAME
			" holds only the sluice CA";
		sys = NULL;
		syslen = 0;
	}
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd == -1)
		goto out_free;
	if (n <= 0 || fchmod(fd, 0644) == -1 || write_all(fd, sys, syslen) == -1 ||
	    (syslen > 0 && sys[syslen - 1] != '\n' && write_all(fd, "\n", 1) == -1) ||
	    write_all(fd, p, (size_t)n) == -1 || fsync(fd) == -1) {
		close(fd);
		goto out_unlink;
	}
	if (close(fd) == -1 || rename(tmp, path) == -1)
		goto out_unlink;
	*err = NULL;
	ret = 0;
	goto out_free;
out_unlink:
	unlink(tmp);
out_free:
	free(sys);
	return ret;
}

/* Make the new names in dir durable. Best effort: the files are complete either way. */
static void dir_sync(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd != -1) {
		fsync(fd);
		close(fd);
	}
}

int ca_create(const char *dir, const char **err)
{
	char kpath[PATH_MAX], cpath[PATH_MAX];
	const char *warn = NULL;
	EVP_PKEY *key;
	X509 *cert;
	BIO *kmem = NULL, *cmem = NULL;
	int ret = -1;

	*err = NULL;
	if (path_join(kpath, dir, CA_KEY_NAME) == -1 || path_join(cpath, dir, CA_CERT_NAME) == -1) {
		*err = "state directory path too long";
		return -1;
	}
	key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	if (key == NULL) {
		*err = "generating the CA key failed";
		goto out;
	}
	cert = ca_make_cert(key);
	if (cert == NULL) {
		*err = "making the CA certificate failed";
		goto out_key;
	}
	kmem = BIO_new(BIO_s_secmem());
	cmem = BIO_new(BIO_s_mem());
	/* PEM_write_bio_PrivateKey writes PKCS#8 ("BEGIN PRIVATE KEY") */
	if (kmem == NULL || cmem == NULL ||
	    PEM_write_bio_PrivateKey(kmem, key, NULL, NULL, 0, NULL, NULL) != 1 ||
	    PEM_write_bio_X509(cmem, cert) != 1) {
		*err = "encoding the CA failed";
		goto out_bio;
	}
	if (write_new(kpath, 0600, kmem, "a CA exists (" CA_KEY_NAME ")",
		      "cannot write " CA_KEY_NAME, err) == -1)
		goto out_bio;
	if (write_new(cpath, 0644, cmem,
		      CA_CERT_NAME " exists without " CA_KEY_NAME ": restore the key or remove it",
		      "cannot write " CA_CERT_NAME, err) == -1)
		goto out_unlink_key;
	if (bundle_write(dir, cmem, &warn, err) == -1)
		goto out_unlink_cert;
	dir_sync(dir);
	*err = warn;
	ret = 0;
	goto out_bio;
out_unlink_cert:
	unlink(cpath);
out_unlink_key:
	unlink(kpath);
out_bio:
	BIO_free(cmem);
	BIO_free(kmem);
	X509_free(cert);
out_key:
	EVP_PKEY_free(key);
out:
	ERR_clear_error();
	return ret;
}

/* --- loading the CA ------------------------------------------------------------ */

/* The certificate in path, or NULL with *err. */
static X509 *read_cert(const char *path, const char **err)
{
	char *buf;
	size_t len;
	BIO *mem;
	X509 *x = NULL;

	if (file_read(path, CERT_FILE_MAX, &buf, &len) == -1) {
		*err = errno == ENOENT ? "no " CA_CERT_NAME
		     : errno == EFBIG  ? CA_CERT_NAME " is too large"
				       : "cannot read " CA_CERT_NAME;
		return NULL;
	}
	mem = BIO_new_mem_buf(buf, (int)len);
	if (mem != NULL)
		x = PEM_read_bio_X509(mem, NULL, no_passphrase, NULL);
	if (x == NULL)
		*err = CA_CERT_NAME " holds no PEM certificate";
	BIO_free(mem);
	free(buf);
	return x;
}

/* The private key in path, which only its owner may read, or NULL with *err. */
static EVP_PKEY *read_key(const char *path, const char **err)
{
	char buf[KEY_FILE_MAX];
	EVP_PKEY *key = NULL;
	struct stat st;
	size_t n = 0;
	BIO *mem;
	int fd;

	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	if (fd == -1) {
		*err = errno == ENOENT ? "no " CA_KEY_NAME
		     : errno == ELOOP  ? CA_KEY_NAME " is a symbolic link"
		     : errno == EACCES ? CA_KEY_NAME ": permission denied (it is root's)"
				       : "cannot open " CA_KEY_NAME;
		return NULL;
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		*err = CA_KEY_NAME " is not a regular file";
		goto out_close;
	}
	/* another user's key, even 0600, is one that user could have swapped in */
	if (st.st_uid != 0 && st.st_uid != geteuid()) {
		*err = geteuid() == 0 ? CA_KEY_NAME " is not owned by root (someone else could "
					"have put it there): make a new CA"
				      : CA_KEY_NAME " is owned by neither root nor us";
		goto out_close;
	}
	if ((st.st_mode & 077) != 0) {
		*err = CA_KEY_NAME " is open to group or other: chmod 600 it";
		goto out_close;
	}
	for (;;) {
		ssize_t r = read(fd, buf + n, sizeof(buf) - n);

		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1) {
			*err = "cannot read " CA_KEY_NAME;
			goto out_wipe;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n == sizeof(buf)) {
			*err = CA_KEY_NAME " is too large";
			goto out_wipe;
		}
	}
	mem = BIO_new_mem_buf(buf, (int)n);
	if (mem != NULL)
		key = PEM_read_bio_PrivateKey(mem, NULL, no_passphrase, NULL);
	if (key == NULL)
		*err = CA_KEY_NAME " holds no unencrypted PEM private key";
	BIO_free(mem);
out_wipe:
	OPENSSL_cleanse(buf, n);
out_close:
	close(fd);
	return key;
}

/* Whether key is an EC key on P-256. */
static bool key_is_p256(EVP_PKEY *key)
{
	char group[64];
	size_t glen = 0;

	return EVP_PKEY_is_a(key, "EC") &&
	       EVP_PKEY_get_group_name(key, group, sizeof(group), &glen) == 1 &&
	       OBJ_sn2nid(group) == NID_X9_62_prime256v1;
}

static struct ca *ca_read(const char *dir, bool with_key, const char **err)
{
	char path[PATH_MAX];
	struct ca *ca = calloc(1, sizeof(*ca));

	if (ca == NULL) {
		*err = "out of memory";
		return NULL;
	}
	if (path_join(path, dir, CA_CERT_NAME) == -1) {
		*err = "state directory path too long";
		goto out_fail;
	}
	ca->cert = read_cert(path, err);
	if (ca->cert == NULL)
		goto out_fail;
	ca->not_before = ca_asn1_time(X509_get0_notBefore(ca->cert));
	ca->not_after = ca_asn1_time(X509_get0_notAfter(ca->cert));
	if (ca->not_before == -1 || ca->not_after == -1 || ca->not_after <= ca->not_before) {
		*err = CA_CERT_NAME " has a bad validity period";
		goto out_fail;
	}
	if (X509_check_ca(ca->cert) != 1) {
		*err = CA_CERT_NAME " is not a CA certificate (basicConstraints CA:TRUE)";
		goto out_fail;
	}
	if (ca->not_after <= time(NULL)) {
		*err = CA_CERT_NAME " has expired";
		goto out_fail;
	}
	if (!with_key)
		return ca;
	if (path_join(path, dir, CA_KEY_NAME) == -1) {
		*err = "state directory path too long";
		goto out_fail;
	}
	ca->key = read_key(path, err);
	if (ca->key == NULL)
		goto out_fail;
	if (!key_is_p256(ca->key)) {
		*err = CA_KEY_NAME " is not an ECDSA P-256 key";
		goto out_fail;
	}
	if (X509_check_private_key(ca->cert, ca->key) != 1) {
		*err = CA_KEY_NAME " does not match " CA_CERT_NAME;
		goto out_fail;
	}
	return ca;
out_fail:
	ca_free(ca);
	ERR_clear_error();
	return NULL;
}

struct ca *ca_load(const char *dir, const char **err)
{
	return ca_read(dir, true, err);
}

struct ca *ca_load_public(const char *dir, const char **err)
{
	return ca_read(dir, false, err);
}

void ca_free(struct ca *ca)
{
	if (ca == NULL)
		return;
	X509_free(ca->cert);
	EVP_PKEY_free(ca->key);
	free(ca);
}

X509 *ca_cert(const struct ca *ca)
{
	return ca->cert;
}

int ca_fingerprint(const struct ca *ca, char out[CA_FINGERPRINT_SIZE])
{
	static const char hex[] = "0123456789ABCDEF";
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;

	if (X509_digest(ca->cert, EVP_sha256(), md, &n) != 1 || n != 32) {
		ERR_clear_error();
		return -1;
	}
	for (unsigned int i = 0; i < n; i++) {
		out[3 * i] = hex[md[i] >> 4];
		out[3 * i + 1] = hex[md[i] & 15];
		out[3 * i + 2] = i + 1 < n ? ':' : '\0';
	}
	return 0;
}
