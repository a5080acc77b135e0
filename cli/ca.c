/*
 * ca.c: `sluice ca init|show`, the certificate authority in STATE (ca.h).
 *
 * init makes the CA once: it never replaces a key, so every sandbox that
 * trusts the CA keeps trusting the proxy. show prints what a sandbox needs
 * to trust it: the fingerprint to compare, the paths, and the variables
 * that point each runtime's trust store at the bundle, as lines a shell
 * can eval. Paths are printed absolute. It does not copy the bundle into a
 * sandbox (STATE is 0700: mount the file) and never prints key bytes.
 */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <openssl/x509.h>

#include "ca.h"
#include "cli.h"
#include "file.h"

/* The variables a sandbox needs, and whether each names the bundle or ca.crt alone. */
static const struct {
	const char *name;
	bool bundle; /* false: ca.crt (Node adds it to its own roots) */
} ca_env[] = {
	{ "SSL_CERT_FILE", true },	 /* OpenSSL's default store: curl, python ssl, most tools */
	{ "REQUESTS_CA_BUNDLE", true },	 /* python requests (certifi otherwise) */
	{ "NODE_EXTRA_CA_CERTS", false }, /* node: added to its built-in roots */
	{ "GIT_SSL_CAINFO", true },
	{ "CURL_CA_BUNDLE", true },
	{ "NPM_CONFIG_CAFILE", true },	 /* npm: wins over a `cafile` in /etc/npmrc */
	{ "PIP_CERT", true },
	{ "CARGO_HTTP_CAINFO", true },
	{ "AWS_CA_BUNDLE", true },
	{ "DENO_CERT", true },
};

#define NENV (sizeof(ca_env) / sizeof(ca_env[0]))

const char *ca_env_var(size_t i, bool *bundle)
{
	if (i >= NENV)
		return NULL;
	*bundle = ca_env[i].bundle;
	return ca_env[i].name;
}

/* The paths of one CA, absolute when the files exist. */
struct ca_paths {
	char dir[PATH_MAX];
	char cert[PATH_MAX];
	char bundle[PATH_MAX];
	char key[PATH_MAX];
};

/* dir/name into out, made absolute when it exists. Returns 0 or -1 after printing. */
static int ca_path(char out[PATH_MAX], const char *dir, const char *name)
{
	char joined[PATH_MAX];

	if (snprintf(joined, sizeof(joined), "%s/%s", dir, name) >= (int)sizeof(joined)) {
		fprintf(stderr, "ca: %s: path too long\n", dir);
		return -1;
	}
	if (realpath(joined, out) == NULL)
		memcpy(out, joined, sizeof(joined));
	return 0;
}

static int paths_fill(struct ca_paths *p, const char *dir)
{
	if (realpath(dir, p->dir) == NULL)
		snprintf(p->dir, sizeof(p->dir), "%s", dir);
	return ca_path(p->cert, dir, CA_CERT_NAME) == -1 ||
			       ca_path(p->bundle, dir, CA_BUNDLE_NAME) == -1 ||
			       ca_path(p->key, dir, CA_KEY_NAME) == -1
		       ? -1
		       : 0;
}

/* The certificate's CN and notAfter ("2036-01-02T03:04:05Z") into the buffers. */
static void ca_describe(const struct ca *ca, char *cn, size_t cnsize, char *until, size_t usize)
{
	const X509 *x = ca_cert(ca);
	struct tm tm;

	if (X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName, cn, (int)cnsize) <
	    0)
		snprintf(cn, cnsize, "?");
	if (ASN1_TIME_to_tm(X509_get0_notAfter(x), &tm) != 1 ||
	    strftime(until, usize, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		snprintf(until, usize, "?");
}

/* s as one shell word: bare when it is plain, else single-quoted. */
static void put_shell_word(const char *s)
{
	if (s[0] != '\0' && strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
				      "0123456789/._-+:,@%") == strlen(s)) {
		fputs(s, stdout);
		return;
	}
	putchar('\'');
	for (; *s != '\0'; s++) {
		if (*s == '\'')
			fputs("'\\''", stdout);
		else
			putchar(*s);
	}
	putchar('\'');
}

static int ca_init(const struct config *c)
{
	char fp[CA_FINGERPRINT_SIZE], cn[128], until[32];
	struct ca_paths p;
	struct stat st;
	const char *err = NULL;
	struct ca *ca;

	if (file_mkdir_p(c->state_dir, 0700) == -1) {
		fprintf(stderr, "ca: mkdir %s: ", c->state_dir);
		cli_put_strerror(stderr, errno);
		fputc('\n', stderr);
		return EXIT_ERROR;
	}
	if (paths_fill(&p, c->state_dir) == -1)
		return EXIT_ERROR;
	if (lstat(p.key, &st) == 0 || lstat(p.cert, &st) == 0) {
		fprintf(stderr,
			"ca: a CA exists in %s; sluice ca show prints it (init never replaces a "
			"CA: sandboxes trust it)\n",
			p.dir);
		return EXIT_ERROR;
	}
	if (ca_create(c->state_dir, &err) == -1) {
		fprintf(stderr, "ca: init %s: %s\n", p.dir, err);
		return EXIT_ERROR;
	}
	if (err != NULL)
		fprintf(stderr, "ca: warning: %s\n", err);
	if (paths_fill(&p, c->state_dir) == -1)
		return EXIT_ERROR;
	ca = ca_load(c->state_dir, &err);
	if (ca == NULL) {
		fprintf(stderr, "ca: created, but loading it back failed: %s\n", err);
		return EXIT_ERROR;
	}
	if (ca_fingerprint(ca, fp) == -1) {
		fprintf(stderr, "ca: fingerprint failed\n");
		ca_free(ca);
		return EXIT_ERROR;
	}
	ca_describe(ca, cn, sizeof(cn), until, sizeof(until));
	ca_free(ca);
	printf("created: %s, valid until %s\n"
	       "  SHA-256      %s\n"
	       "  certificate  %s\n"
	       "  bundle       %s (the system roots and this CA)\n"
	       "  key          %s (0600; it never leaves this host)\n"
	       "next: sluice ca show prints the environment a sandbox needs\n",
	       cn, until, fp, p.cert, p.bundle, p.key);
	return EXIT_OK;
}

static int show_json(const char *cn, const char *until, const char *fp, const struct ca_paths *p)
{
	json_t *env = json_object(), *o;
	char *text;

	if (env == NULL)
		return -1;
	for (size_t i = 0; i < NENV; i++) {
		if (json_object_set_new(env, ca_env[i].name,
					json_string(ca_env[i].bundle ? p->bundle : p->cert)) == -1) {
			json_decref(env);
			return -1;
		}
	}
	o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:o}", "subject", cn, "sha256", fp,
		      "not_after", until, "certificate", p->cert, "bundle", p->bundle, "env", env);
	if (o == NULL)
		return -1;
	text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(o);
	if (text == NULL)
		return -1;
	puts(text);
	free(text);
	return 0;
}

static int ca_show(const struct config *c, bool json)
{
	char fp[CA_FINGERPRINT_SIZE], cn[128], until[32];
	const char *err = NULL;
	struct ca_paths p;
	struct stat st;
	struct ca *ca;
	int ret = EXIT_ERROR;

	if (paths_fill(&p, c->state_dir) == -1)
		return EXIT_ERROR;
	if (stat(p.cert, &st) == -1 && errno == ENOENT) {
		fprintf(stderr, "ca: no CA in %s: run sluice ca init\n", p.dir);
		return EXIT_ERROR;
	}
	ca = ca_load_public(c->state_dir, &err);
	if (ca == NULL) {
		fprintf(stderr, "ca: %s: %s\n", p.dir, err);
		return EXIT_ERROR;
	}
	if (ca_fingerprint(ca, fp) == -1) {
		fprintf(stderr, "ca: fingerprint failed\n");
		goto out_ca;
	}
	ca_describe(ca, cn, sizeof(cn), until, sizeof(until));
	if (stat(p.bundle, &st) == -1)
		fprintf(stderr, "ca: warning: %s is missing: the variables below name it\n",
			p.bundle);
	if (json) {
		if (show_json(cn, until, fp, &p) == -1) {
			fprintf(stderr, "ca: out of memory\n");
			goto out_ca;
		}
		ret = EXIT_OK;
		goto out_ca;
	}
	printf("# %s, valid until %s\n", cn, until);
	printf("# SHA-256 %s\n", fp);
	printf("# certificate %s\n", p.cert);
	printf("# bundle %s\n", p.bundle);
	for (size_t i = 0; i < NENV; i++) {
		printf("export %s=", ca_env[i].name);
		put_shell_word(ca_env[i].bundle ? p.bundle : p.cert);
		putchar('\n');
	}
	ret = EXIT_OK;
out_ca:
	ca_free(ca);
	return ret;
}

int cmd_ca(int argc, char **argv)
{
	const char *sub = argc > 1 ? argv[1] : NULL;
	bool json = false;
	struct config *c;
	int ret;

	if (sub == NULL || strcmp(sub, "-h") == 0) {
		cli_usage(sub == NULL ? stderr : stdout, "ca");
		return sub == NULL ? EXIT_USAGE : EXIT_OK;
	}
	if (strcmp(sub, "show") == 0 && argc == 3 && strcmp(argv[2], "--json") == 0) {
		json = true;
	} else if (argc != 2 || (strcmp(sub, "init") != 0 && strcmp(sub, "show") != 0)) {
		cli_usage(stderr, "ca");
		return EXIT_USAGE;
	}
	c = cli_config_load();
	if (c == NULL)
		return EXIT_ERROR;
	ret = strcmp(sub, "init") == 0 ? ca_init(c) : ca_show(c, json);
	config_free(c);
	return ret;
}
