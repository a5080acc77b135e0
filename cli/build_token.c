/*
 * build_token.c: `sluice build-token new|list|rm`: the build gate's tokens.
 *
 * new mints a secret (32 random bytes as 64 hex digits), stores only its
 * SHA-256 in STATE/build-tokens (lib/buildtok.h's format; replaced whole
 * under STATE/build-tokens.lock, expired tokens dropped), and prints the
 * proxy URL a build passes as its http_proxy/https_proxy:
 * http://sluice-build:SECRET@ADDR:PORT (the config's first TCP listener,
 * or --proxy). The proxy reads the file within a second. The secret is
 * printed once and kept nowhere.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "buildtok.h"
#include "cli.h"
#include "file.h"
#include "hex.h"
#include "sockaddr.h"

#define TOKENS_NAME "build-tokens"
#define TTL_DEFAULT (15 * 60)
#define TTL_MAX (24 * 3600)

static int usage(const char *msg, const char *arg)
{
	fprintf(stderr, "build-token: %s%s%s\n", msg, arg != NULL ? " " : "", arg != NULL ? arg : "");
	cli_usage(stderr, "build-token");
	return EXIT_USAGE;
}

struct tokens {
	struct buildtok v[BUILDTOK_MAX];
	size_t n;
};

/* Read STATE/build-tokens into t (missing: none). Returns 0, or -1 after printing why. */
static int tokens_load(const char *path, struct tokens *t)
{
	const char *err = NULL;
	size_t len, line = 0;
	char *buf;

	t->n = 0;
	if (file_read(path, 1024 * 1024, &buf, &len) == -1) {
		if (errno == ENOENT)
			return 0;
		fprintf(stderr, "build-token: read %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (buildtok_file_parse(buf, len, t->v, BUILDTOK_MAX, &t->n, &line, &err) == -1) {
		fprintf(stderr, "build-token: %s:%zu: %s; repair or delete that file\n", path, line,
			err);
		free(buf);
		return -1;
	}
	free(buf);
	return 0;
}

/* Replace the file with t (a temporary file, fsync, rename). Returns 0 or -1 after printing. */
static int tokens_save(const char *path, const struct tokens *t)
{
	char tmp[PATH_MAX + 16];
	FILE *f;
	int fd;

	snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd == -1) {
		fprintf(stderr, "build-token: create %s: %s\n", tmp, strerror(errno));
		return -1;
	}
	/* hashes only: the proxy reads it after dropping root */
	f = fchmod(fd, 0644) == 0 ? fdopen(fd, "w") : NULL;
	if (f == NULL || buildtok_file_write(f, t->v, t->n) == -1 || fflush(f) == EOF ||
	    fsync(fd) == -1 || fclose(f) == EOF || rename(tmp, path) == -1) {
		fprintf(stderr, "build-token: write %s: %s\n", path, strerror(errno));
		if (f == NULL)
			close(fd);
		unlink(tmp);
		return -1;
	}
	return 0;
}

/*
 * The lock, and the file read into a new *tp (free it), expired tokens
 * dropped. Returns the lock fd, or -1 after printing why (*tp NULL).
 */
static int tokens_open(const struct config *c, char *path, size_t size, struct tokens **tp)
{
	char lock[PATH_MAX + 16];
	time_t now = time(NULL);
	struct tokens *t;
	size_t j = 0;
	int fd;

	*tp = NULL;
	snprintf(path, size, "%s/%s", c->state_dir, TOKENS_NAME);
	snprintf(lock, sizeof(lock), "%s.lock", path);
	if (file_mkdir_p(c->state_dir, 0700) == -1) {
		fprintf(stderr, "build-token: mkdir %s: %s\n", c->state_dir, strerror(errno));
		return -1;
	}
	fd = cli_open_state("build-token", lock, O_RDWR | O_CREAT, 0600);
	if (fd == -1)
		return -1;
	while (flock(fd, LOCK_EX) == -1 && errno == EINTR)
		;
	t = malloc(sizeof(*t));
	if (t == NULL)
		fprintf(stderr, "build-token: out of memory\n");
	if (t == NULL || tokens_load(path, t) == -1) {
		free(t);
		close(fd);
		return -1;
	}
	*tp = t;
	for (size_t i = 0; i < t->n; i++)
		if (t->v[i].expires > now)
			t->v[j++] = t->v[i];
	t->n = j;
	return fd;
}

/* The address a build reaches the proxy at: the config's first TCP listener. */
static int proxy_addr(const struct config *c, char *buf, size_t size)
{
	for (size_t i = 0; i < c->nlisten; i++)
		if (c->listen[i].ss_family == AF_INET || c->listen[i].ss_family == AF_INET6) {
			char a[64];

			snprintf(buf, size, "%s", sockaddr_format(&c->listen[i], a, sizeof(a)));
			return 0;
		}
	fprintf(stderr, "build-token: the config has no TCP listener; name the proxy with --proxy\n");
	return -1;
}

static int token_new(struct config *c, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "name", required_argument, NULL, 'n' },
		{ "ttl", required_argument, NULL, 't' },
		{ "proxy", required_argument, NULL, 'p' },
		{ NULL, 0, NULL, 0 },
	};
	const char *name = "build", *proxy = NULL;
	char path[PATH_MAX], addr[300], secret[BUILDTOK_SECRET_LEN + 1], stamp[32];
	uint8_t raw[BUILDTOK_SECRET_LEN / 2];
	long long ttl = TTL_DEFAULT;
	struct tokens *t;
	struct buildtok *tok;
	time_t now = time(NULL);
	int opt, fd, ret = EXIT_ERROR;

	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (opt) {
		case 'n':
			name = optarg;
			break;
		case 't':
			if (allow_duration_parse(optarg, &ttl) == -1 || ttl > TTL_MAX)
				return usage("--ttl takes 1s to 24h, not", optarg);
			break;
		case 'p':
			proxy = optarg;
			break;
		default:
			cli_usage(stderr, "build-token");
			return EXIT_USAGE;
		}
	}
	if (optind != argc)
		return usage("new takes no arguments", NULL);
	if (!buildtok_name_valid(name))
		return usage("a name is 1-64 of [A-Za-z0-9._-], not", name);
	if (proxy != NULL)
		snprintf(addr, sizeof(addr), "%s", proxy);
	else if (proxy_addr(c, addr, sizeof(addr)) == -1)
		return EXIT_ERROR;
	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw)) {
		fprintf(stderr, "build-token: getrandom: %s\n", strerror(errno));
		return EXIT_ERROR;
	}
	hex_encode(raw, sizeof(raw), secret);
	explicit_bzero(raw, sizeof(raw));
	fd = tokens_open(c, path, sizeof(path), &t);
	if (fd == -1)
		goto out;
	if (t->n == BUILDTOK_MAX) {
		fprintf(stderr, "build-token: %s holds %d live tokens already\n", path, BUILDTOK_MAX);
		goto out_unlock;
	}
	tok = &t->v[t->n++];
	memset(tok, 0, sizeof(*tok));
	snprintf(tok->name, sizeof(tok->name), "%s", name);
	buildtok_hash(secret, BUILDTOK_SECRET_LEN, tok->hash);
	tok->created = now;
	tok->expires = now + (time_t)ttl;
	if (tokens_save(path, t) == -1)
		goto out_unlock;
	printf("http://%s:%s@%s\n", BUILDTOK_USER, secret, addr);
	cli_time_text(tok->expires, stamp, sizeof(stamp));
	fprintf(stderr,
		"build-token: build:%s until %s; pass the URL as the build's http_proxy and "
		"https_proxy, and grant what it needs with: sluice allow add HOST --for build:%s\n",
		name, stamp, name);
	ret = EXIT_OK;
out_unlock:
	close(fd);
out:
	explicit_bzero(secret, sizeof(secret));
	free(t);
	return ret;
}

/* list: live tokens (name, created, expires); rm NAME: every token of that name. */
static int token_list_rm(struct config *c, const char *rm)
{
	char path[PATH_MAX], a[32], b[32];
	struct tokens *t;
	size_t j = 0;
	int fd, ret = EXIT_ERROR;

	fd = tokens_open(c, path, sizeof(path), &t);
	if (fd == -1)
		goto out;
	for (size_t i = 0; i < t->n; i++) {
		if (rm != NULL) {
			if (strcmp(t->v[i].name, rm) != 0)
				t->v[j++] = t->v[i];
			continue;
		}
		printf("build:%-24s  created %s  expires %s\n", t->v[i].name,
		       cli_time_text(t->v[i].created, a, sizeof(a)), cli_time_text(t->v[i].expires, b, sizeof(b)));
	}
	if (rm != NULL && j == t->n) {
		fprintf(stderr, "build-token: no live token named %s\n", rm);
		goto out_unlock;
	}
	if (rm != NULL) {
		size_t gone = t->n - j;

		t->n = j;
		if (tokens_save(path, t) == -1)
			goto out_unlock;
		printf("removed %zu token%s of build:%s\n", gone, gone == 1 ? "" : "s", rm);
	}
	ret = EXIT_OK;
out_unlock:
	close(fd);
out:
	free(t);
	return ret;
}

int cmd_build_token(int argc, char **argv)
{
	struct config *c;
	int ret;

	if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
		cli_usage(argc < 2 ? stderr : stdout, "build-token");
		return argc < 2 ? EXIT_USAGE : EXIT_OK;
	}
	if (strcmp(argv[1], "new") != 0 && strcmp(argv[1], "list") != 0 &&
	    strcmp(argv[1], "rm") != 0)
		return usage("unknown subcommand", argv[1]);
	if (strcmp(argv[1], "list") == 0 && argc != 2)
		return usage("list takes no arguments", NULL);
	if (strcmp(argv[1], "rm") == 0 && argc != 3)
		return usage("rm takes one NAME", NULL);
	c = cli_config_load();
	if (c == NULL)
		return EXIT_ERROR;
	if (strcmp(argv[1], "new") == 0)
		ret = token_new(c, argc - 1, argv + 1);
	else
		ret = token_list_rm(c, strcmp(argv[1], "rm") == 0 ? argv[2] : NULL);
	config_free(c);
	return ret;
}
