/*
 * ports.c: `sluice ports [show|list|release]`, each project's port band.
 *
 * The registry (default /var/lib/sluice/ports, or $SLUICE_PORTS_REGISTRY)
 * is read and rewritten whole under an flock on "<registry>.lock", written
 * to a temporary file in the same directory and renamed, so readers see
 * the old registry or the new one. A registry that does not parse is
 * refused with file:line and left exactly as it is. $SLUICE_PORT_BASE
 * overrides show without touching the registry. The band arithmetic and
 * the file format are lib/ports.c's; this file does the I/O.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "digits.h"
#include "file.h"
#include "ports.h"

#define REGISTRY_DEFAULT "/var/lib/sluice/ports"

enum ports_sub { SUB_SHOW, SUB_LIST, SUB_RELEASE };

/* How a registry is opened: to read it, to change it, or to change it and make its directory. */
enum reg_mode { REG_READ, REG_WRITE, REG_CREATE };

/* A registry read under its lock. */
struct registry {
	char path[PATH_MAX];
	char dir[PATH_MAX];
	int lockfd;     /* -1: not locked */
	char *text;     /* the file's bytes (NULL: no file); r's projects point here */
	struct ports r;
};

static void put_errno(const char *what, const char *path, int e)
{
	fprintf(stderr, "ports: %s %s: ", what, path);
	cli_put_strerror(stderr, e);
	fputc('\n', stderr);
}

/*
 * Lock and read the registry into reg. REG_READ takes a shared lock when it
 * may, and reads unlocked when the lock file is absent or not its to open
 * (the registry is only ever replaced whole, by rename); the others take
 * the exclusive lock, REG_CREATE making the directory first. Returns 0 or
 * -1 after printing.
 */
static int registry_open(struct registry *reg, enum reg_mode mode)
{
	const char *env = getenv("SLUICE_PORTS_REGISTRY");
	const char *path = env != NULL && env[0] != '\0' ? env : REGISTRY_DEFAULT;
	char lock[PATH_MAX], tmp[PATH_MAX];
	size_t len = 0, line;
	const char *err;

	reg->lockfd = -1;
	reg->text = NULL;
	reg->r.n = 0;
	if (snprintf(reg->path, sizeof(reg->path), "%s", path) >= (int)sizeof(reg->path) ||
	    snprintf(lock, sizeof(lock), "%s.lock", path) >= (int)sizeof(lock)) {
		fprintf(stderr, "ports: %s: path too long\n", path);
		return -1;
	}
	snprintf(tmp, sizeof(tmp), "%s", path);
	snprintf(reg->dir, sizeof(reg->dir), "%s", dirname(tmp));
	if (mode == REG_CREATE && file_mkdir_p(reg->dir, 0755) == -1) {
		put_errno("mkdir", reg->dir, errno);
		return -1;
	}
	if (mode == REG_READ) {
		reg->lockfd = open(lock, O_RDONLY | O_CLOEXEC);
		if (reg->lockfd == -1 && errno != ENOENT && errno != EACCES) {
			put_errno("open", lock, errno);
			return -1;
		}
	} else {
		const char *why;

		reg->lockfd = file_open_owned(lock, O_RDWR | O_CREAT, 0644, FILE_NO_UID, &why);
		if (reg->lockfd == -1 && mode == REG_WRITE && errno == ENOENT)
			return 0; /* no directory: no registry, nothing to lock */
		if (reg->lockfd == -1 && why != NULL) {
			fprintf(stderr, "ports: refusing %s: %s\n", lock, why);
			return -1;
		}
		if (reg->lockfd == -1) {
			put_errno("lock", lock, errno);
			return -1;
		}
	}
	if (reg->lockfd != -1 && flock(reg->lockfd, mode == REG_READ ? LOCK_SH : LOCK_EX) == -1) {
		put_errno("lock", lock, errno);
		return -1;
	}
	if (file_read(path, PORTS_TEXT_MAX, &reg->text, &len) == -1) {
		if (errno == ENOENT)
			return 0;
		put_errno("read", path, errno);
		return -1;
	}
	if (ports_parse(reg->text, len, &reg->r, &line, &err) == -1) {
		fprintf(stderr, "ports: %s:%zu: %s; registry left as it is: repair it by hand\n",
			path, line, err);
		return -1;
	}
	return 0;
}

static void registry_close(struct registry *reg)
{
	free(reg->text);
	reg->text = NULL;
	if (reg->lockfd != -1)
		close(reg->lockfd); /* drops the flock */
	reg->lockfd = -1;
}

/* Replace the registry file with reg->r (0644, temp + rename). Returns 0 or -1 after printing. */
static int registry_save(const struct registry *reg)
{
	char tmp[PATH_MAX], *text;
	size_t len = ports_format(&reg->r, NULL, 0);
	int fd, ret = -1;

	if (snprintf(tmp, sizeof(tmp), "%s.XXXXXX", reg->path) >= (int)sizeof(tmp)) {
		fprintf(stderr, "ports: %s: path too long\n", reg->path);
		return -1;
	}
	text = malloc(len + 1);
	if (text == NULL) {
		fprintf(stderr, "ports: out of memory\n");
		return -1;
	}
	ports_format(&reg->r, text, len + 1);
	fd = mkostemp(tmp, O_CLOEXEC | O_NOFOLLOW);
	if (fd == -1) {
		put_errno("create", tmp, errno);
		goto out_free;
	}
	for (size_t off = 0; off < len;) {
		ssize_t w = write(fd, text + off, len - off);

		if (w == -1 && errno == EINTR)
			continue;
		if (w == -1) {
			put_errno("write", tmp, errno);
			goto out_unlink;
		}
		off += (size_t)w;
	}
	if (fchmod(fd, 0644) == -1 || fsync(fd) == -1) {
		put_errno("write", tmp, errno);
		goto out_unlink;
	}
	if (close(fd) == -1 || rename(tmp, reg->path) == -1) {
		fd = -1;
		put_errno("write", reg->path, errno);
		goto out_unlink;
	}
	fd = -1;
	ret = 0;
	goto out_free;
out_unlink:
	if (fd != -1)
		close(fd);
	unlink(tmp);
out_free:
	free(text);
	return ret;
}

static void put_band(const char *project, unsigned long base, bool json, bool from_env)
{
	if (json) {
		json_t *o = json_pack("{s:o?,s:i,s:[i,i],s:[i,i],s:[i,i],s:s}", "project",
				      json_string(project), "base", (json_int_t)base, "proxy",
				      (json_int_t)(base + PORTS_PROXY_OFF),
				      (json_int_t)(base + PORTS_PROXY_OFF + PORTS_PROXY_N - 1),
				      "tokens", (json_int_t)(base + PORTS_TOKENS_OFF),
				      (json_int_t)(base + PORTS_TOKENS_OFF + PORTS_TOKENS_N - 1),
				      "band", (json_int_t)base, (json_int_t)(base + PORTS_BAND - 1),
				      "source", from_env ? "SLUICE_PORT_BASE" : "registry");

		if (o != NULL)
			json_dumpf(o, stdout, JSON_COMPACT);
		fputc('\n', stdout);
		json_decref(o);
		return;
	}
	printf("base %lu%s\n", base, from_env ? " (from SLUICE_PORT_BASE)" : "");
	printf("proxy %lu-%lu\n", base + PORTS_PROXY_OFF,
	       base + PORTS_PROXY_OFF + PORTS_PROXY_N - 1);
	printf("tokens %lu-%lu\n", base + PORTS_TOKENS_OFF,
	       base + PORTS_TOKENS_OFF + PORTS_TOKENS_N - 1);
	printf("band %lu-%lu\n", base, base + PORTS_BAND - 1);
}

/* $SLUICE_PORT_BASE into *base. Returns 1 (set), 0 (unset), -1 (malformed, printed). */
static int env_base(unsigned long *base)
{
	const char *v = getenv("SLUICE_PORT_BASE");
	uint64_t n;

	if (v == NULL || v[0] == '\0')
		return 0;
	if (dec_parse(v, strlen(v), ULONG_MAX, &n) == -1 || !ports_override_ok((unsigned long)n)) {
		fprintf(stderr, "ports: bad SLUICE_PORT_BASE \"%s\": want 1024..65336\n", v);
		return -1;
	}
	*base = (unsigned long)n;
	return 1;
}

static int ports_show(const char *project, bool json)
{
	struct registry reg;
	unsigned long base;
	long got;
	int env = env_base(&base), ret = EXIT_ERROR;

	if (env != 0) {
		if (env == 1)
			put_band(project, base, json, true);
		return env == 1 ? EXIT_OK : EXIT_USAGE;
	}
	if (registry_open(&reg, REG_CREATE) == -1)
		goto out_close;
	if (ports_find(&reg.r, project, strlen(project)) == NULL) {
		got = ports_alloc(&reg.r, project, strlen(project));
		if (got == -1) {
			fprintf(stderr, "ports: %s: all %d bands from %d are taken; release one\n",
				reg.path, PORTS_BANDS_MAX, PORTS_FIRST);
			goto out_close;
		}
		if (registry_save(&reg) == -1)
			goto out_close;
	}
	put_band(project, ports_find(&reg.r, project, strlen(project))->base, json, false);
	ret = EXIT_OK;
out_close:
	registry_close(&reg);
	return ret;
}

static int ports_list(bool json)
{
	struct registry reg;
	int ret = EXIT_ERROR;

	if (registry_open(&reg, REG_READ) == -1)
		goto out_close;
	if (!json)
		printf("BASE   BAND         PROJECT\n");
	for (size_t i = 0; i < reg.r.n; i++) {
		const struct ports_band *b = &reg.r.band[i];

		if (json) {
			json_t *o = json_pack("{s:s%,s:i,s:[i,i]}", "project", b->project, b->len,
					      "base", (json_int_t)b->base, "band",
					      (json_int_t)b->base,
					      (json_int_t)(b->base + PORTS_BAND - 1));

			if (o != NULL)
				json_dumpf(o, stdout, JSON_COMPACT);
			fputc('\n', stdout);
			json_decref(o);
		} else {
			printf("%-6u %u-%u  %.*s\n", b->base, b->base, b->base + PORTS_BAND - 1,
			       (int)b->len, b->project);
		}
	}
	ret = EXIT_OK;
out_close:
	registry_close(&reg);
	return ret;
}

static int ports_release(const char *project)
{
	struct registry reg;
	int ret = EXIT_ERROR;

	if (registry_open(&reg, REG_WRITE) == -1)
		goto out_close;
	if (ports_remove(&reg.r, project, strlen(project)) == -1) {
		fprintf(stderr, "ports: %s has no band\n", project);
		goto out_close;
	}
	if (registry_save(&reg) == -1)
		goto out_close;
	printf("released: %s\n", project);
	ret = EXIT_OK;
out_close:
	registry_close(&reg);
	return ret;
}

/*
 * *project checked, or when NULL the current directory (its real path, in
 * cwd) in its place. Returns 0, or -1 after printing why (prefixed by who).
 */
static int project_name(const char **project, char cwd[PATH_MAX], const char *who)
{
	const char *why;

	if (*project != NULL) {
		why = ports_project_check(*project, strlen(*project));
		if (why != NULL) {
			fprintf(stderr, "%s: bad project name: %s\n", who, why);
			return -1;
		}
		return 0;
	}
	if (realpath(".", cwd) == NULL) {
		fprintf(stderr, "%s: the current directory: ", who);
		cli_put_strerror(stderr, errno);
		fputc('\n', stderr);
		return -1;
	}
	why = ports_project_check(cwd, strlen(cwd));
	if (why != NULL) {
		fprintf(stderr, "%s: the current directory cannot name a project (%s); "
				"use --project NAME\n", who, why);
		return -1;
	}
	*project = cwd;
	return 0;
}

int ports_band_of(const char *project, bool allocate, unsigned *base)
{
	struct registry reg;
	const struct ports_band *b;
	char cwd[PATH_MAX];
	unsigned long env;
	int rc, ret = -1;

	/* a project named on purpose wins over an override the environment carried in */
	if (project == NULL) {
		rc = env_base(&env);
		if (rc != 0) {
			*base = (unsigned)env;
			return rc == 1 ? 0 : -1;
		}
	}
	if (project_name(&project, cwd, "ports") == -1)
		return -1;
	if (registry_open(&reg, allocate ? REG_CREATE : REG_READ) == -1)
		goto out_close;
	b = ports_find(&reg.r, project, strlen(project));
	if (b == NULL && allocate) {
		if (ports_alloc(&reg.r, project, strlen(project)) == -1) {
			fprintf(stderr, "ports: %s: all %d bands from %d are taken; release one\n",
				reg.path, PORTS_BANDS_MAX, PORTS_FIRST);
			goto out_close;
		}
		if (registry_save(&reg) == -1)
			goto out_close;
		b = ports_find(&reg.r, project, strlen(project));
		fprintf(stderr, "ports: %s now has the band %u-%u in %s\n", project, b->base,
			b->base + PORTS_BAND - 1, reg.path);
	}
	if (b == NULL) {
		fprintf(stderr, "ports: %s has no port band in %s: run `sluice ports%s%s` first, "
				"or give the base\n", project, reg.path, project == cwd ? "" : " --project ",
			project == cwd ? "" : project);
		goto out_close;
	}
	*base = b->base;
	ret = 0;
out_close:
	registry_close(&reg);
	return ret;
}

int cmd_ports(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "project", required_argument, NULL, 'p' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	enum ports_sub sub = SUB_SHOW;
	const char *project = NULL;
	char cwd[PATH_MAX];
	bool json = false;
	int opt;

	if (argc > 1 && argv[1][0] != '-') {
		if (strcmp(argv[1], "show") == 0)
			sub = SUB_SHOW;
		else if (strcmp(argv[1], "list") == 0)
			sub = SUB_LIST;
		else if (strcmp(argv[1], "release") == 0)
			sub = SUB_RELEASE;
		else {
			fprintf(stderr, "ports: unknown command \"%s\"\n", argv[1]);
			cli_usage(stderr, "ports");
			return EXIT_USAGE;
		}
		argc--;
		argv++;
	}
	while ((opt = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'p':
			project = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			cli_usage(stdout, "ports");
			return EXIT_OK;
		default:
			cli_usage(stderr, "ports");
			return EXIT_USAGE;
		}
	}
	if (optind != argc || (sub == SUB_LIST && project != NULL) ||
	    (sub == SUB_RELEASE && json)) {
		cli_usage(stderr, "ports");
		return EXIT_USAGE;
	}
	if (sub == SUB_LIST)
		return ports_list(json);
	if (project_name(&project, cwd, "ports") == -1)
		return project != NULL ? EXIT_USAGE : EXIT_ERROR;
	return sub == SUB_SHOW ? ports_show(project, json) : ports_release(project);
}
