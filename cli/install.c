/*
 * install.c: `sluice install`, the files that make the host side permanent.
 *
 * Gathers what the units depend on (the config file made absolute, its
 * user, listeners, state, log and dns-log directories and nameservers; the
 * project's band from `sluice ports`; for a Lima VM the proxy listener it
 * reaches, the CA and the VM's name and user), has lib/units.c render each
 * file, writes them into one directory (default STATE/install, files it
 * does not render there removed) and prints the root commands that install
 * them. It never runs sudo, systemctl or limactl, and installs nothing.
 *
 * It refuses what the units could not hold: a config without `user` (the
 * egress wall refuses uid 0, so a proxy running as root would be outside
 * it), and for Lima a config whose proxy the guest cannot reach through
 * 192.168.5.2 (a listener on 127.0.0.1 or 0.0.0.0 within the band's
 * base+0..89) or whose sluice-dns is not on the host's port 53.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "ca.h"
#include "cli.h"
#include "file.h"
#include "ports.h"
#include "units.h"

#define PREFIX_DEFAULT "/usr/local"
#define LIMACTL_DEFAULT "/usr/local/bin/limactl"
#define VM_NAME_DEFAULT "sluice"
#define CA_PEM_MAX (64 * 1024)

struct install_opts {
	const char *project; /* NULL: the current directory's band */
	enum units_vm vm;
	const char *prefix;
	const char *out;     /* NULL: STATE/install */
	const char *vm_name;
	const char *vm_user; /* NULL: $SUDO_USER, else the caller */
	const char *limactl;
};

/* The params and the strings they point into. */
struct gathered {
	struct units_params p;
	char project[PATH_MAX];
	char config[PATH_MAX], workdir[PATH_MAX], state[PATH_MAX], bindir[PATH_MAX];
	char proxy_rw[UNITS_PATHS_MAX][PATH_MAX];
	const char *proxy_rw_ptr[UNITS_PATHS_MAX];
	char dns_rw[UNITS_PATHS_MAX][PATH_MAX];
	const char *dns_rw_ptr[UNITS_PATHS_MAX];
	char resolvers[CONFIG_MAX_NAMESERVERS][INET6_ADDRSTRLEN];
	const char *resolver_ptr[CONFIG_MAX_NAMESERVERS];
	char user[CONFIG_USER_MAX + 1];
	char vm_user[64];
	char *ca_pem; /* owned */
};

static void put_errno(const char *what, const char *path)
{
	fprintf(stderr, "install: %s %s: ", what, path);
	cli_put_strerror(stderr, errno);
	fputc('\n', stderr);
}

/*
 * in as an absolute path into out: itself when absolute, else joined to
 * the current directory, a leading "./" dropped and a trailing '/' too.
 * Returns 0 or -1 after printing.
 */
static int abs_path(const char *in, char out[PATH_MAX])
{
	char cwd[PATH_MAX];
	size_t n;
	int w;

	if (in[0] == '/') {
		w = snprintf(out, PATH_MAX, "%s", in);
	} else {
		if (getcwd(cwd, sizeof(cwd)) == NULL) {
			put_errno("getcwd", ".");
			return -1;
		}
		while (in[0] == '.' && in[1] == '/')
			in += 2;
		w = snprintf(out, PATH_MAX, "%s%s%s", cwd, strcmp(cwd, "/") == 0 ? "" : "/",
			     strcmp(in, ".") == 0 ? "" : in);
	}
	if (w < 0 || w >= PATH_MAX) {
		fprintf(stderr, "install: %s: path too long\n", in);
		return -1;
	}
	n = strlen(out);
	while (n > 1 && out[n - 1] == '/')
		out[--n] = '\0';
	return 0;
}

/* The directory of path, absolute. Returns 0 or -1 after printing. */
static int abs_dir(const char *path, char out[PATH_MAX])
{
	char tmp[PATH_MAX];

	if (abs_path(path, tmp) == -1)
		return -1;
	snprintf(out, PATH_MAX, "%s", dirname(tmp));
	return 0;
}

/* Append dir to a ReadWritePaths= list unless it is there. Returns 0 or -1 (full, printed). */
static int rw_add(char list[][PATH_MAX], const char **ptr, size_t *n, const char *dir)
{
	for (size_t i = 0; i < *n; i++)
		if (strcmp(list[i], dir) == 0)
			return 0;
	if (*n == UNITS_PATHS_MAX) {
		fprintf(stderr, "install: more than %d directories to write\n", UNITS_PATHS_MAX);
		return -1;
	}
	snprintf(list[*n], PATH_MAX, "%s", dir);
	ptr[*n] = list[*n];
	(*n)++;
	return 0;
}

static const char *const home_roots[] = { "/home", "/root", "/run/user", NULL };
static const char *const tmp_roots[] = { "/tmp", "/var/tmp", NULL };

/* Whether path is one of roots (NULL-ended) or below one. */
static bool under(const char *path, const char *const *roots)
{
	for (; *roots != NULL; roots++) {
		size_t n = strlen(*roots);

		if (strncmp(path, *roots, n) == 0 && (path[n] == '/' || path[n] == '\0'))
			return true;
	}
	return false;
}

/* Whether any path a unit names is under one of roots. */
static bool any_under(const struct gathered *g, const char *const *roots)
{
	const struct units_params *p = &g->p;
	bool hit = under(g->config, roots) || under(g->workdir, roots) ||
		   under(g->bindir, roots) || under(g->state, roots);

	for (size_t i = 0; i < p->nproxy_rw; i++)
		hit = hit || under(p->proxy_rw[i], roots);
	for (size_t i = 0; i < p->ndns_rw; i++)
		hit = hit || under(p->dns_rw[i], roots);
	return hit;
}

static unsigned sockaddr_port(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)ss)->sin_port);
	if (ss->ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
	return 0;
}

/* Whether ss is 127.0.0.1 or 0.0.0.0: what Lima's 192.168.5.2 reaches on the host. */
static bool lima_reaches(const struct sockaddr_storage *ss)
{
	const struct sockaddr_in *in = (const void *)ss;

	return ss->ss_family == AF_INET && (in->sin_addr.s_addr == htonl(INADDR_LOOPBACK) ||
					    in->sin_addr.s_addr == htonl(INADDR_ANY));
}

/* Any of the config's paths written relative (to the working directory)? */
static bool any_relative(const struct config *c)
{
	if (c->state_dir[0] != '/' || c->log_path[0] != '/' || c->dns_log_path[0] != '/')
		return true;
	for (size_t i = 0; i < c->nupstream_cas; i++)
		if (c->upstream_cas[i].file[0] != '/')
			return true;
	for (size_t i = 0; i < c->nlisten; i++)
		if (c->listen[i].ss_family == AF_UNIX &&
		    ((const struct sockaddr_un *)&c->listen[i])->sun_path[0] != '/')
			return true;
	return false;
}

/* The daemons' directories: what each writes, and whether a unit must leave home readable. */
static int gather_paths(const struct config *c, struct gathered *g)
{
	struct units_params *p = &g->p;
	char dir[PATH_MAX];

	if (abs_path(c->state_dir, g->state) == -1)
		return -1;
	p->state_dir = g->state;
	if (rw_add(g->proxy_rw, g->proxy_rw_ptr, &p->nproxy_rw, g->state) == -1 ||
	    abs_dir(c->log_path, dir) == -1 ||
	    rw_add(g->proxy_rw, g->proxy_rw_ptr, &p->nproxy_rw, dir) == -1)
		return -1;
	for (size_t i = 0; i < c->nlisten; i++) {
		if (c->listen[i].ss_family != AF_UNIX)
			continue;
		if (abs_dir(((const struct sockaddr_un *)&c->listen[i])->sun_path, dir) == -1 ||
		    rw_add(g->proxy_rw, g->proxy_rw_ptr, &p->nproxy_rw, dir) == -1)
			return -1;
	}
	/* sluice-dns writes STATE/dns.run (before its drop) and its log */
	if (rw_add(g->dns_rw, g->dns_rw_ptr, &p->ndns_rw, g->state) == -1 ||
	    abs_dir(c->dns_log_path, dir) == -1 ||
	    rw_add(g->dns_rw, g->dns_rw_ptr, &p->ndns_rw, dir) == -1)
		return -1;
	p->proxy_rw = g->proxy_rw_ptr;
	p->dns_rw = g->dns_rw_ptr;
	if (any_relative(c)) {
		if (abs_path(".", g->workdir) == -1)
			return -1;
	} else {
		snprintf(g->workdir, sizeof(g->workdir), "/");
	}
	p->workdir = g->workdir;
	p->home_read_only = any_under(g, home_roots);
	p->tmp_paths = any_under(g, tmp_roots);
	return 0;
}

/* What the daemons bind and run: low ports, token commands, the nameservers. */
static void gather_daemons(const struct config *c, struct gathered *g)
{
	struct units_params *p = &g->p;

	for (size_t i = 0; i < c->nlisten; i++) {
		unsigned port = sockaddr_port(&c->listen[i]);

		p->proxy_low_port = p->proxy_low_port || (port != 0 && port < 1024);
	}
	for (size_t i = 0; i < c->ndns_listen; i++)
		p->dns_low_port = p->dns_low_port || sockaddr_port(&c->dns_listen[i]) < 1024;
	for (size_t i = 0; i < c->nrules; i++)
		p->token_commands = p->token_commands || c->rules[i].source == INJECT_COMMAND;
	for (size_t i = 0; i < c->nnameservers; i++) {
		const struct sockaddr_storage *ss = &c->nameservers[i];
		const void *a = ss->ss_family == AF_INET
					? (const void *)&((const struct sockaddr_in *)ss)->sin_addr
					: (const void *)&((const struct sockaddr_in6 *)ss)->sin6_addr;

		if (inet_ntop(ss->ss_family, a, g->resolvers[p->nresolvers],
			      sizeof(g->resolvers[0])) == NULL)
			continue;
		g->resolver_ptr[p->nresolvers] = g->resolvers[p->nresolvers];
		p->nresolvers++;
	}
	p->resolvers = g->resolver_ptr;
}

/* Lima: the proxy port the guest dials, sluice-dns on port 53, the CA. Returns 0 or -1. */
static int gather_lima(const struct config *c, const struct install_opts *o, struct gathered *g)
{
	struct units_params *p = &g->p;
	const char *err = NULL;
	char path[PATH_MAX];
	bool dns53 = false;
	struct ca *ca;
	size_t len;

	for (size_t i = 0; i < c->nlisten && p->proxy_port == 0; i++) {
		unsigned port = sockaddr_port(&c->listen[i]);

		if (lima_reaches(&c->listen[i]) && port >= p->port_base &&
		    port < p->port_base + PORTS_PROXY_N)
			p->proxy_port = port;
	}
	if (p->proxy_port == 0) {
		fprintf(stderr, "install: the guest reaches the proxy at %s (the host's 127.0.0.1), "
				"on the band's listeners %u-%u, and the config has no listen there: "
				"add `listen 127.0.0.1:%u`\n",
			UNITS_GATEWAY_LIMA, p->port_base, p->port_base + PORTS_PROXY_N - 1,
			p->port_base);
		return -1;
	}
	for (size_t i = 0; i < c->ndns_listen; i++)
		dns53 = dns53 || (lima_reaches(&c->dns_listen[i]) &&
				  sockaddr_port(&c->dns_listen[i]) == 53);
	if (!dns53) {
		fprintf(stderr, "install: the guest resolves through sluice-dns at %s:53 (the host's "
				"127.0.0.1:53), and the config has no dns-listen there: add "
				"`dns-listen 127.0.0.1:53`\n", UNITS_GATEWAY_LIMA);
		return -1;
	}
	ca = ca_load_public(c->state_dir, &err);
	if (ca == NULL) {
		fprintf(stderr, "install: the guest trusts the proxy's CA, and %s has none usable "
				"(%s): run `sluice ca init`\n", g->state, err);
		return -1;
	}
	ca_free(ca);
	snprintf(path, sizeof(path), "%s/%s", c->state_dir, CA_CERT_NAME);
	if (file_read(path, CA_PEM_MAX, &g->ca_pem, &len) == -1) {
		put_errno("read", path);
		return -1;
	}
	p->ca_pem = g->ca_pem;
	p->gateway = UNITS_GATEWAY_LIMA;
	p->vm_name = o->vm_name;
	p->limactl = o->limactl;
	if (o->vm_user != NULL) {
		snprintf(g->vm_user, sizeof(g->vm_user), "%s", o->vm_user);
	} else {
		const char *sudo = getenv("SUDO_USER");
		struct passwd *pw = getpwuid(getuid());

		if (sudo != NULL && sudo[0] != '\0' && strcmp(sudo, "root") != 0)
			snprintf(g->vm_user, sizeof(g->vm_user), "%s", sudo);
		else if (pw != NULL && pw->pw_uid != 0)
			snprintf(g->vm_user, sizeof(g->vm_user), "%s", pw->pw_name);
		else {
			fprintf(stderr, "install: who runs the VM? Lima runs as its operator, not root: "
					"--vm-user NAME\n");
			return -1;
		}
	}
	p->vm_user = g->vm_user;
	return 0;
}

/*
 * Fill g from the config in force and o. Returns 0, or -1 after printing
 * why; the caller releases g with gathered_release either way.
 */
static int gather(const struct install_opts *o, struct gathered *g)
{
	struct units_params *p = &g->p;
	const char *cpath = cli_config_path();
	struct config *c;
	int ret = -1;

	memset(g, 0, sizeof(*g));
	if (cpath == NULL) {
		fprintf(stderr, "install: the units start the daemons on a config file: -c FILE\n");
		return -1;
	}
	if (realpath(cpath, g->config) == NULL) {
		put_errno("config", cpath);
		return -1;
	}
	if (o->project != NULL)
		snprintf(g->project, sizeof(g->project), "%s", o->project);
	else if (abs_path(".", g->project) == -1)
		return -1;
	if (ports_band_of(o->project, false, &p->port_base) == -1)
		return -1;
	if (abs_path(o->prefix, g->bindir) == -1 ||
	    strlen(g->bindir) + 4 >= sizeof(g->bindir))
		return -1;
	strcat(g->bindir, strcmp(g->bindir, "/") == 0 ? "bin" : "/bin");
	c = cli_config_load();
	if (c == NULL)
		return -1;
	if (c->user[0] == '\0') {
		fprintf(stderr, "install: %s has no `user`: the proxy would run as root, which the "
				"egress wall cannot hold (it refuses uid 0); add `user NAME` (see "
				"etc/sluice.conf)\n", g->config);
		goto out_config;
	}
	snprintf(g->user, sizeof(g->user), "%s", c->user);
	p->project = g->project;
	p->config = g->config;
	p->bindir = g->bindir;
	p->user = g->user;
	p->vm = o->vm;
	if (gather_paths(c, g) == -1)
		goto out_config;
	gather_daemons(c, g);
	if (o->vm == UNITS_VM_LIMA && gather_lima(c, o, g) == -1)
		goto out_config;
	ret = 0;
out_config:
	config_free(c);
	return ret;
}

static void gathered_release(struct gathered *g)
{
	free(g->ca_pem);
	g->ca_pem = NULL;
}

/* Render file f of g into b (initialised; the caller releases it). Returns 0 or -1 after printing. */
static int render(const struct gathered *g, enum units_file f, struct buf *b)
{
	const char *err;

	if (units_render(&g->p, f, b, &err) == -1) {
		fprintf(stderr, "install: render %s: %s\n", units_file_name(f), err);
		return -1;
	}
	return 0;
}

int install_lima_script(const char *project, char **script, char id[UNITS_ID_HEX + 1])
{
	struct install_opts o = {
		.project = project,
		.vm = UNITS_VM_LIMA,
		.prefix = PREFIX_DEFAULT,
		.vm_name = VM_NAME_DEFAULT,
		.vm_user = "nobody", /* the script does not depend on who runs the VM */
		.limactl = LIMACTL_DEFAULT,
	};
	struct gathered *g = malloc(sizeof(*g));
	struct buf b;
	int ret = -1;

	*script = NULL;
	if (g == NULL) {
		fprintf(stderr, "install: out of memory\n");
		return -1;
	}
	buf_init(&b, UNITS_TEXT_MAX);
	if (gather(&o, g) == 0 && render(g, UNITS_SCRIPT, &b) == 0) {
		*script = strndup(buf_head(&b), buf_len(&b));
		if (*script != NULL) {
			units_provision_id(*script, strlen(*script), id);
			ret = 0;
		}
	}
	buf_release(&b);
	gathered_release(g);
	free(g);
	return ret;
}

/* --- writing ------------------------------------------------------------------ */

/* Remove dir/name and, for a drop-in, its directory when empty. Absent is fine. */
static int file_forget(const char *dir, const char *name)
{
	char path[PATH_MAX], *slash;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (unlink(path) == -1 && errno != ENOENT) {
		put_errno("remove", path);
		return -1;
	}
	slash = strrchr(path, '/');
	if (strchr(name, '/') != NULL && slash != NULL) {
		*slash = '\0';
		if (rmdir(path) == -1 && errno != ENOENT && errno != ENOTEMPTY)
			put_errno("remove", path);
	}
	return 0;
}

/* Write text as a new dir/name (its drop-in directory made), never through a link. */
static int file_put(const char *dir, const char *name, const struct buf *text, mode_t mode)
{
	char path[PATH_MAX], sub[PATH_MAX], *slash;
	size_t len = buf_len(text), off = 0;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	snprintf(sub, sizeof(sub), "%s", path);
	slash = strrchr(sub, '/');
	if (strchr(name, '/') != NULL && slash != NULL) {
		*slash = '\0';
		if (mkdir(sub, 0755) == -1 && errno != EEXIST) {
			put_errno("mkdir", sub);
			return -1;
		}
	}
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd == -1) {
		put_errno("create", path);
		return -1;
	}
	while (off < len) {
		ssize_t w = write(fd, buf_head(text) + off, len - off);

		if (w == -1 && errno == EINTR)
			continue;
		if (w == -1) {
			put_errno("write", path);
			close(fd);
			return -1;
		}
		off += (size_t)w;
	}
	if (fchmod(fd, mode) == -1 || close(fd) == -1) {
		put_errno("write", path);
		return -1;
	}
	return 0;
}

/* Render and write every file g wants into dir, removing the others. Returns 0 or -1. */
static int write_all(const struct gathered *g, const char *dir, char id[UNITS_ID_HEX + 1])
{
	id[0] = '\0';
	for (int f = 0; f < UNITS_NFILES; f++) {
		const char *name = units_file_name((enum units_file)f);
		struct buf b;
		int rc;

		if (file_forget(dir, name) == -1)
			return -1;
		if (!units_file_wanted(&g->p, (enum units_file)f))
			continue;
		buf_init(&b, UNITS_TEXT_MAX);
		if (render(g, (enum units_file)f, &b) == -1) {
			buf_release(&b);
			return -1;
		}
		if (f == UNITS_SCRIPT)
			units_provision_id(buf_head(&b), buf_len(&b), id);
		rc = file_put(dir, name, &b, f == UNITS_SCRIPT ? 0755 : 0644);
		buf_release(&b);
		if (rc == -1)
			return -1;
	}
	return 0;
}

/* --- what to run -------------------------------------------------------------- */

/* The directory this program runs from (its sibling binaries), or "" when unknown. */
static void own_dir(char out[PATH_MAX])
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	out[0] = '\0';
	if (n <= 0)
		return;
	self[n] = '\0';
	snprintf(out, PATH_MAX, "%s", dirname(self));
}

static void put_binaries_step(const struct gathered *g)
{
	static const char *const bins[] = { "sluice", "sluice-proxy", "sluice-dns" };
	char path[PATH_MAX], from[PATH_MAX];
	bool missing = false;

	for (size_t i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/%s", g->bindir, bins[i]);
		missing = missing || access(path, X_OK) == -1;
	}
	if (!missing)
		return;
	own_dir(from);
	printf("  install -m 0755 %s/sluice %s/sluice-proxy %s/sluice-dns %s/\n",
	       from[0] != '\0' ? from : "build", from[0] != '\0' ? from : "build",
	       from[0] != '\0' ? from : "build", g->bindir);
}

static void put_commands(const struct gathered *g, const char *dir, const char *id)
{
	const struct units_params *p = &g->p;
	const char *sd = "/etc/systemd/system";

	printf("\nas root, install and start them (a unit fails closed: no wall, no proxy):\n");
	put_binaries_step(g);
	printf("  install -m 0644 -t %s %s/sluice-proxy.service %s/sluice-dns.service "
	       "%s/sluice-wall@.service\n", sd, dir, dir, dir);
	printf("  install -D -m 0644 %s/%s %s/%s\n", dir, units_file_name(UNITS_WALL_EGRESS), sd,
	       units_file_name(UNITS_WALL_EGRESS));
	if (p->vm == UNITS_VM_LIMA) {
		printf("  install -m 0644 -t %s %s/sluice-lima@.service\n", sd, dir);
		printf("  install -D -m 0644 %s/%s %s/%s\n", dir, units_file_name(UNITS_WALL_HOST),
		       sd, units_file_name(UNITS_WALL_HOST));
	}
	printf("  systemctl daemon-reload\n");
	printf("  systemctl enable --now sluice-wall@egress.service sluice-dns.service "
	       "sluice-proxy.service\n");
	if (p->vm != UNITS_VM_LIMA)
		return;
	printf("\nthe Lima VM %s (run by %s; sluice-lima@%s.service starts it):\n"
	       "  1. in the guest, once, as root: sluice and sluice-forward built for it in\n"
	       "     /usr/local/bin (root's, 0755), and this host's stamp key:\n"
	       "       cat %s/stamp.key | sudo -u %s limactl shell %s sudo install -D -m 0600 "
	       "/dev/stdin /etc/sluice/stamp.key\n"
	       "  2. the VM stopped (sudo -u %s limactl stop %s), add %s/lima-provision.yaml's\n"
	       "     entry to the `provision:` list of its lima.yaml (sudo -u %s limactl edit %s)\n"
	       "  3. systemctl enable --now sluice-wall@host.service sluice-lima@%s.service\n"
	       "     and from then on start it only so: a VM started by hand runs outside the\n"
	       "     slice the host wall holds\n"
	       "at every boot the guest applies its walls, starts sluice-forward and records\n"
	       "provision id %s in /run/sluice/state/provision\n",
	       p->vm_name, p->vm_user, p->vm_name, g->state, p->vm_user, p->vm_name, p->vm_user,
	       p->vm_name, dir, p->vm_user, p->vm_name, p->vm_name, id);
}

/*
 * What would keep a unit from starting that the config cannot say: a
 * directory it writes that is not there (systemd cannot bind it writable),
 * a user this machine does not have.
 */
static void put_warnings(const struct gathered *g)
{
	const struct units_params *p = &g->p;
	struct stat st;

	for (size_t i = 0; i < p->nproxy_rw + p->ndns_rw; i++) {
		const char *d = i < p->nproxy_rw ? p->proxy_rw[i] : p->dns_rw[i - p->nproxy_rw];

		if (stat(d, &st) == -1 || !S_ISDIR(st.st_mode))
			fprintf(stderr, "install: warning: %s is not a directory yet: a unit that writes "
					"there does not start until it is (see etc/sluice.conf on `user`)\n",
				d);
	}
	if (getpwnam(p->user) == NULL)
		fprintf(stderr, "install: warning: no user %s on this machine: the daemons drop to it\n",
			p->user);
	if (p->vm == UNITS_VM_LIMA && getpwnam(p->vm_user) == NULL)
		fprintf(stderr, "install: warning: no user %s on this machine: it runs the VM\n",
			p->vm_user);
}

/* --- the verb ---------------------------------------------------------------- */

static int args_parse(int argc, char **argv, struct install_opts *o)
{
	static const struct option longopts[] = {
		{ "project", required_argument, NULL, 'p' },
		{ "sandbox-vm", required_argument, NULL, 'v' },
		{ "prefix", required_argument, NULL, 'P' },
		{ "out", required_argument, NULL, 'o' },
		{ "vm", required_argument, NULL, 'n' },
		{ "vm-user", required_argument, NULL, 'u' },
		{ "limactl", required_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int opt;

	*o = (struct install_opts){ .vm = UNITS_VM_NONE, .prefix = PREFIX_DEFAULT,
				    .vm_name = VM_NAME_DEFAULT, .limactl = LIMACTL_DEFAULT };
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'p': o->project = optarg; break;
		case 'v':
			if (strcmp(optarg, "lima") == 0)
				o->vm = UNITS_VM_LIMA;
			else if (strcmp(optarg, "none") == 0)
				o->vm = UNITS_VM_NONE;
			else {
				fprintf(stderr, "install: --sandbox-vm %s: lima or none\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'P': o->prefix = optarg; break;
		case 'o': o->out = optarg; break;
		case 'n': o->vm_name = optarg; break;
		case 'u': o->vm_user = optarg; break;
		case 'l': o->limactl = optarg; break;
		case 'h':
			cli_usage(stdout, "install");
			return EXIT_OK;
		default:
			cli_usage(stderr, "install");
			return EXIT_USAGE;
		}
	}
	if (optind != argc) {
		cli_usage(stderr, "install");
		return EXIT_USAGE;
	}
	return -1;
}

int cmd_install(int argc, char **argv)
{
	struct install_opts o;
	struct gathered *g;
	char dir[PATH_MAX], id[UNITS_ID_HEX + 1];
	int ret = args_parse(argc, argv, &o);

	if (ret != -1)
		return ret;
	g = malloc(sizeof(*g));
	if (g == NULL) {
		fprintf(stderr, "install: out of memory\n");
		return EXIT_ERROR;
	}
	ret = EXIT_ERROR;
	if (gather(&o, g) == -1)
		goto out_free;
	if (o.out != NULL) {
		if (abs_path(o.out, dir) == -1)
			goto out_free;
	} else if (snprintf(dir, sizeof(dir), "%s/install", g->state) >= (int)sizeof(dir)) {
		fprintf(stderr, "install: %s: path too long\n", g->state);
		goto out_free;
	} else if (file_mkdir_p(g->state, 0700) == -1) { /* STATE as the daemons make it */
		put_errno("mkdir", g->state);
		goto out_free;
	}
	if (file_mkdir_p(dir, 0755) == -1) {
		put_errno("mkdir", dir);
		goto out_free;
	}
	if (write_all(g, dir, id) == -1)
		goto out_free;
	printf("rendered into %s:\n", dir);
	for (int f = 0; f < UNITS_NFILES; f++)
		if (units_file_wanted(&g->p, (enum units_file)f))
			printf("  %s\n", units_file_name((enum units_file)f));
	if (id[0] != '\0')
		printf("provision id %s (the SHA-256 of lima-provision.sh)\n", id);
	put_commands(g, dir, id);
	put_warnings(g);
	ret = EXIT_OK;
out_free:
	gathered_release(g);
	free(g);
	return ret;
}
