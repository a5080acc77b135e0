/*
 * run_sandbox.c: what `sluice run` gives the sandbox (run.h): CMD's whole
 * environment, the files it reads (resolv.conf naming sluice-dns through
 * the forwarder, the CA's certificate and bundle), and for --image the
 * podman command line that puts the container on the run's network with
 * the same. It makes no namespace and starts nothing.
 */
#include <errno.h>
#include <ftw.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file.h"
#include "run.h"

size_t run_podman_argv(const struct run *x, char *words, size_t wsize, char **argv, size_t max)
{
	char *save = NULL;
	size_t n = 0;

	snprintf(words, wsize, "%s", x->o.podman);
	for (char *w = strtok_r(words, " \t", &save); w != NULL && n + 1 < max;
	     w = strtok_r(NULL, " \t", &save))
		argv[n++] = w;
	argv[n] = NULL;
	return n;
}

/* "NAME=VALUE" into env[*n], in store (owned by the caller). */
static int env_put(char **env, size_t *n, const char *name, const char *value)
{
	size_t len = strlen(name) + strlen(value) + 2;
	char *s;

	if (*n + 1 >= RUN_ENV_MAX)
		return -1;
	s = malloc(len);
	if (s == NULL)
		return -1;
	snprintf(s, len, "%s=%s", name, value);
	env[(*n)++] = s;
	env[*n] = NULL;
	return 0;
}

int run_env_build(const struct run *x, const char *ca_dir, bool container, char **env)
{
	static const char *const proxy_vars[] = { "HTTP_PROXY", "HTTPS_PROXY", "http_proxy",
						  "https_proxy" };
	char url[96], hostport[sizeof(x->gateway) + 8], path[PATH_MAX];
	const char *name, *term = getenv("TERM");
	size_t n = 0;
	bool bundle;
	int bad = 0;

	env[0] = NULL;
	host_port_format(hostport, sizeof(hostport), x->gateway, x->fwd_port);
	snprintf(url, sizeof(url), "http://%s", hostport);
	for (size_t i = 0; i < 4; i++)
		bad |= env_put(env, &n, proxy_vars[i], url);
	bad |= env_put(env, &n, "NO_PROXY", "localhost,127.0.0.1,::1");
	bad |= env_put(env, &n, "no_proxy", "localhost,127.0.0.1,::1");
	for (size_t i = 0; (name = ca_env_var(i, &bundle)) != NULL; i++) {
		snprintf(path, sizeof(path), "%s/%s", ca_dir, bundle ? "ca-bundle.crt" : "ca.crt");
		bad |= env_put(env, &n, name, path);
	}
	if (!container) {
		bad |= env_put(env, &n, "PATH", "/usr/local/bin:/usr/bin:/bin");
		bad |= env_put(env, &n, "HOME", x->user.home);
		bad |= env_put(env, &n, "USER", x->user.name);
		bad |= env_put(env, &n, "LOGNAME", x->user.name);
		if (term != NULL)
			bad |= env_put(env, &n, "TERM", term);
	}
	for (size_t i = 0; i < x->o.nenv; i++) {
		const char *eq = strchr(x->o.env[i], '='), *v;
		char key[128];

		if (eq != NULL) {
			snprintf(key, sizeof(key), "%.*s", (int)(eq - x->o.env[i]), x->o.env[i]);
			bad |= env_put(env, &n, key, eq + 1);
		} else if ((v = getenv(x->o.env[i])) != NULL) {
			bad |= env_put(env, &n, x->o.env[i], v);
		}
	}
	return bad ? -1 : 0;
}

void run_env_free(char **env)
{
	for (size_t i = 0; env[i] != NULL; i++)
		free(env[i]);
}

/*
 * --image: the run's trust made from the image's own bundle (its root
 * through `podman image mount`), and the -v that put it over the image's
 * bundle files and Java keystores (Debian's paths where it has none).
 * An image podman cannot mount (not here yet: podman run pulls it; a
 * rootless engine) keeps its own store: the bundle is then the machine's,
 * at /etc/sluice with the variables only. Returns 0 or -1 after printing.
 */
static int image_trust_make(struct run *x, const char *ca, const char *bundle, const char *keystore)
{
	char words[RUN_PODMAN_MAX], *argv[PODMAN_ARGS_MAX + 8], root[PATH_MAX];
	size_t n = run_podman_argv(x, words, sizeof(words), argv, PODMAN_ARGS_MAX), m;
	const char *found[RUN_TRUST_MAX];
	int ret;

	argv[n] = "image", argv[n + 1] = "mount", argv[n + 2] = (char *)x->o.image, argv[n + 3] = NULL;
	if (run_capture(argv, root, sizeof(root), 60000) != 0 || strtok(root, "\n") == NULL ||
	    root[0] != '/') {
		fprintf(stderr, "run: podman image mount %s failed: the container keeps its own trust "
				"store (the CA's bundle is at /etc/sluice)\n", x->o.image);
		return run_trust_make("/", ca, bundle, keystore);
	}
	ret = run_trust_make(root, ca, bundle, keystore);
	m = run_trust_targets(root, run_trust_bundles, found, RUN_TRUST_MAX / 2);
	for (size_t i = 0; i < m; i++)
		snprintf(x->trust_volumes[x->ntrust_volumes++], sizeof(x->trust_volumes[0]), "%s:%s:ro",
			 bundle, found[i]);
	m = run_trust_targets(root, run_trust_keystores, found, RUN_TRUST_MAX / 2);
	for (size_t i = 0; i < m; i++)
		snprintf(x->trust_volumes[x->ntrust_volumes++], sizeof(x->trust_volumes[0]), "%s:%s:ro",
			 keystore, found[i]);
	argv[n + 1] = "unmount";
	if (run_tool(argv, x->log_fd, 60000) != 0)
		fprintf(stderr, "run: podman image unmount %s failed\n", x->o.image);
	return ret;
}

/* dir/name holding text, mode 0644. Returns 0 or -1 after printing. */
static int pub_write(const char *dir, const char *name, const char *text)
{
	char path[PATH_MAX + 32];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "we");
	if (f == NULL || (fputs(text, f) == EOF) + (fclose(f) == EOF) != 0) {
		fprintf(stderr, "run: write %s: %s\n", path, strerror(errno));
		return -1;
	}
	chmod(path, 0644);
	return 0;
}

/*
 * What the sandbox reads: resolv.conf (sluice-dns, through the forwarder),
 * hosts (the localhost lines alone) and the CA's files (run_trust.c).
 */
int run_pub_make(struct run *x)
{
	char dir[PATH_MAX + 8], path[PATH_MAX + 32], src[PATH_MAX + 32], *buf;
	char bundle[PATH_MAX + 32], keystore[PATH_MAX + 32];
	size_t len;
	FILE *f;

	snprintf(dir, sizeof(dir), "%s/pub", x->dir);
	if (mkdir(dir, 0755) == -1 || chmod(dir, 0755) == -1) {
		fprintf(stderr, "run: mkdir %s: %s\n", dir, strerror(errno));
		return -1;
	}
	/* only the localhost lines in hosts: no host entry of the machine's sidesteps sluice-dns */
	if (pub_write(dir, "resolv.conf", "nameserver 127.0.0.1\n") == -1 ||
	    pub_write(dir, "hosts", RUN_HOSTS) == -1)
		return -1;
	snprintf(src, sizeof(src), "%s/ca.crt", x->c->state_dir);
	snprintf(path, sizeof(path), "%s/ca.crt", dir);
	if (file_read(src, 1 << 16, &buf, &len) == -1)
		return 0; /* no CA (intercept off): the variables name files that are not there */
	f = fopen(path, "we");
	if (f == NULL || fwrite(buf, 1, len, f) != len || fclose(f) == EOF) {
		fprintf(stderr, "run: write %s: %s\n", path, strerror(errno));
		free(buf);
		return -1;
	}
	free(buf);
	chmod(path, 0644);
	snprintf(bundle, sizeof(bundle), "%s/ca-bundle.crt", dir);
	snprintf(keystore, sizeof(keystore), "%s/cacerts", dir);
	if (x->o.image != NULL)
		return image_trust_make(x, path, bundle, keystore);
	return run_trust_make("/", path, bundle, keystore);
}

/* nftw's callback for home_chown: what the old owner had, the new one's. */
static uid_t chown_from, chown_to;
static gid_t chown_to_gid;

static int chown_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)type, (void)ftw;
	if (st->st_uid == chown_from && lchown(path, chown_to, chown_to_gid) == -1)
		return -1;
	return 0;
}

/* Everything in dir that from owned, to's (the user made again with another uid). */
static int home_chown(const char *dir, uid_t from, uid_t to, gid_t gid)
{
	chown_from = from, chown_to = to, chown_to_gid = gid;
	return nftw(dir, chown_one, 16, FTW_PHYS | FTW_MOUNT);
}

int run_home_make(const struct run *x, char *buf, size_t size)
{
	struct stat st;
	int fd;

	if (x->user.home[0] != '/' || x->user.home[1] == '\0') {
		fprintf(stderr, "run: the sandbox user's home is '%s': not a directory of its own\n",
			x->user.home);
		return -1;
	}
	/* where it is attached; an operator may have removed it, empty as it is */
	if (file_mkdir_p(x->user.home, 0755) == -1) {
		fprintf(stderr, "run: mkdir %s: %s\n", x->user.home, strerror(errno));
		return -1;
	}
	/* root's 0700 above it: reached only where it is attached, not by its path */
	snprintf(buf, size, "%s/sandbox", x->c->state_dir);
	if ((mkdir(buf, 0700) == -1 && errno != EEXIST) || chmod(buf, 0700) == -1) {
		fprintf(stderr, "run: mkdir %s: %s\n", buf, strerror(errno));
		return -1;
	}
	snprintf(buf, size, "%s/sandbox/home", x->c->state_dir);
	if (mkdir(buf, 0700) == -1 && errno != EEXIST) {
		fprintf(stderr, "run: mkdir %s: %s\n", buf, strerror(errno));
		return -1;
	}
	fd = open(buf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1 || fstat(fd, &st) == -1 ||
	    (st.st_uid != x->user.uid && home_chown(buf, st.st_uid, x->user.uid, x->user.gid) != 0) ||
	    fchown(fd, x->user.uid, x->user.gid) == -1 || fchmod(fd, 0700) == -1) {
		fprintf(stderr, "run: %s: %s\n", buf, strerror(errno));
		if (fd != -1)
			close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/*
 * What `-e` is given for env's entry: for an --env NAME, NAME alone (podman
 * takes the value from its environment, which is ours), so a secret passed
 * that way is on no command line, which every user of the machine may read;
 * else the entry itself.
 */
static const char *env_arg(const struct run *x, const char *entry)
{
	for (size_t i = 0; i < x->o.nenv; i++) {
		const char *name = x->o.env[i];
		size_t len = strlen(name);

		if (strchr(name, '=') == NULL && strncmp(entry, name, len) == 0 && entry[len] == '=')
			return name;
	}
	return entry;
}

/* The podman run command line for --image. Returns the argv (in store), or NULL. */
char **run_image_argv(struct run *x, char **env, char *words, size_t wsize, char **argv,
			 size_t max)
{
	size_t n = run_podman_argv(x, words, wsize, argv, PODMAN_ARGS_MAX);
	const char *fixed[] = { "run", "--rm", "--name", x->r.name, "--network", x->r.name,
				"--ip", x->principal_src, "--dns", x->gateway, "-v", x->ca_volumes[0], "-v", x->ca_volumes[1] };

	snprintf(x->ca_volumes[0], sizeof(x->ca_volumes[0]),
		 "%s/pub/ca-bundle.crt:/etc/sluice/ca-bundle.crt:ro", x->dir);
	snprintf(x->ca_volumes[1], sizeof(x->ca_volumes[1]), "%s/pub/ca.crt:/etc/sluice/ca.crt:ro",
		 x->dir);
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]) && n < max; i++)
		argv[n++] = (char *)fixed[i];
	for (size_t i = 0; i < x->ntrust_volumes && n + 2 < max; i++) {
		argv[n++] = "-v";
		argv[n++] = x->trust_volumes[i];
	}
	for (size_t i = 0; env[i] != NULL && n + 2 < max; i++) {
		argv[n++] = "-e";
		argv[n++] = (char *)env_arg(x, env[i]);
	}
	for (size_t i = 0; i < x->o.npodman_opts && n < max; i++)
		argv[n++] = x->o.podman_opts[i];
	if (n < max)
		argv[n++] = (char *)x->o.image;
	for (size_t i = 0; x->o.cmd[i] != NULL && n < max; i++)
		argv[n++] = x->o.cmd[i];
	if (n >= max) {
		fprintf(stderr, "run: the podman command line is too long\n");
		return NULL;
	}
	argv[n] = NULL;
	return argv;
}

