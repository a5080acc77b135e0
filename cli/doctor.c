/*
 * doctor.c: `sluice doctor`: read everything back and fail closed.
 *
 * Each check is one line, "ok", "FAIL" (a difference, named) or "?" (could
 * not check, and why):
 *   proxy      STATE/proxy.run names a running sluice-proxy, and a request
 *              to its listener gets sluice's answer (a 403 for
 *              sluice-doctor.invalid, which is never granted or resolved)
 *   dns        STATE/dns.run names a running sluice-dns, and a query to its
 *              listener is answered
 *   ca         STATE/ca.crt (with intercept on) is more than 30 days from
 *              its expiry
 *   wall       each wall `sluice wall apply` recorded (STATE/wall-*.live)
 *              still lists in its namespace as it did when applied; a host
 *              wall (a VM's) lets it ask only sluice-dns (a dns-listen) for names
 *   run        each run in STATE/runs is live (its supervisor holds the
 *              lock); a dead one is a difference, which --clean removes
 *   provision  with a sandbox's provision record (--provision FILE, default
 *              /run/sluice/state/provision when there is one): its walls
 *              exist and its forwarder listens in --netns, and its id is the
 *              id of the boot script rendered now (install.c)
 *   units      each sluice unit installed in /etc/systemd/system is enabled
 *   inject     each inject rule's secret source is there for sluice-proxy:
 *              a file= regular, not empty, readable by no one but its owner
 *              (as the proxy requires) and that owner the proxy's `user` (or
 *              root without one); an env= set in the running proxy's
 *              environment (/proc/PID/environ); a command= executable. A rule
 *              whose source is missing refuses its requests (403
 *              inject-secret-missing) but the proxy serves the rest: so
 *              --before-proxy (doctor-on-start) does not check them, and the
 *              proxy warns of each at start
 * Exit: 0 every check holds; 1 a difference (each named); 2 one could not be
 * checked (a daemon not running, a namespace that cannot be entered).
 * It changes nothing but what --clean removes.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <pwd.h>

#include <nftables/libnftables.h>
#include <openssl/x509.h>

#include "ca.h"
#include "cli.h"
#include "file.h"
#include "netns.h"
#include "run.h"
#include "runfile.h"
#include "sockaddr.h"
#include "sockdiag.h"
#include "units.h"

#define PROBE_MS 2000
#define CA_MIN_DAYS 30
#define PROVISION_DEFAULT "/run/sluice/state/provision"
#define UNIT_DIR "/etc/systemd/system"

enum verdict { V_OK, V_FAIL, V_UNKNOWN };

struct doctor {
	const struct config *c;
	bool json, before_proxy;
	const char *provision, *netns;
	json_t *checks; /* --json */
	int worst;      /* exit status so far */
};

static void say(struct doctor *d, enum verdict v, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void say(struct doctor *d, enum verdict v, const char *name, const char *fmt, ...)
{
	static const char *const marks[] = { "ok", "FAIL", "?" };
	static const char *const words[] = { "ok", "fail", "unknown" };
	char detail[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	if (v == V_UNKNOWN)
		d->worst = 2;
	else if (v == V_FAIL && d->worst == 0)
		d->worst = 1;
	if (d->json) {
		json_array_append_new(d->checks, json_pack("{s:s, s:s, s:s}", "check", name,
							   "status", words[v], "detail", detail));
		return;
	}
	printf("%-4s  %-9s  %s\n", marks[v], name, detail);
}

/* Connect fd to ss, waiting at most PROBE_MS. Returns 0 or -1 with errno. */
static int connect_within(int fd, const struct sockaddr_storage *ss)
{
	struct pollfd p = { .fd = fd, .events = POLLOUT };
	socklen_t len = ss->ss_family == AF_INET    ? sizeof(struct sockaddr_in)
			: ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
						    : sizeof(struct sockaddr_un);
	int err = 0;

	fcntl(fd, F_SETFL, O_NONBLOCK);
	if (connect(fd, (const struct sockaddr *)ss, len) == 0)
		return 0;
	if (errno != EINPROGRESS)
		return -1;
	if (poll(&p, 1, PROBE_MS) != 1) {
		errno = ETIMEDOUT;
		return -1;
	}
	len = sizeof(err);
	getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
	errno = err;
	return err == 0 ? 0 : -1;
}

/* Read into buf until it holds needle or PROBE_MS pass. Returns the bytes read. */
static size_t read_within(int fd, char *buf, size_t size, const char *needle)
{
	size_t got = 0;
	ssize_t n;

	buf[0] = '\0';
	while (got + 1 < size && strstr(buf, needle) == NULL) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		if (poll(&p, 1, PROBE_MS) != 1)
			break;
		n = read(fd, buf + got, size - 1 - got);
		if (n <= 0)
			break;
		got += (size_t)n;
		buf[got] = '\0';
	}
	return got;
}

/* The daemon's run file; not running is "could not check". Returns 0 with rf, else -1 (said). */
static int daemon_of(struct doctor *d, const char *name, const char *file, struct runfile *rf)
{
	if (runfile_read(d->c->state_dir, file, rf) == 0 && rf->nlisten > 0)
		return 0;
	if (errno == ENOENT || errno == ESRCH)
		say(d, V_UNKNOWN, name, "not running (%s/%s %s)", d->c->state_dir, file,
		    errno == ENOENT ? "missing" : "left by one that stopped");
	else
		say(d, V_UNKNOWN, name, "%s/%s: %s", d->c->state_dir, file, strerror(errno));
	return -1;
}

static void check_proxy(struct doctor *d)
{
	static const char req[] = "GET http://sluice-doctor.invalid/ HTTP/1.1\r\n"
				  "Host: sluice-doctor.invalid\r\nUser-Agent: sluice-doctor\r\n"
				  "Connection: close\r\n\r\n";
	struct runfile rf;
	char addr[128], resp[2048];
	int fd;

	if (daemon_of(d, "proxy", "proxy.run", &rf) == -1)
		return;
	sockaddr_format(&rf.listen[0], addr, sizeof(addr));
	fd = socket(rf.listen[0].ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd == -1 || connect_within(fd, &rf.listen[0]) == -1) {
		say(d, V_FAIL, "proxy", "pid %d does not accept on %s: %s", (int)rf.pid, addr,
		    strerror(errno));
		if (fd != -1)
			close(fd);
		return;
	}
	if (write(fd, req, sizeof(req) - 1) != (ssize_t)(sizeof(req) - 1))
		resp[0] = '\0';
	else
		read_within(fd, resp, sizeof(resp), "\r\n\r\n");
	close(fd);
	if (strncmp(resp, "HTTP/1.1 ", 9) == 0 && strstr(resp, "\r\nProxy-Status: sluice") != NULL)
		say(d, V_OK, "proxy", "answering on %s (pid %d)", addr, (int)rf.pid);
	else
		say(d, V_FAIL, "proxy", "pid %d accepts on %s but did not answer as sluice within %d ms",
		    (int)rf.pid, addr, PROBE_MS);
}

static void check_dns(struct doctor *d)
{
	/* one A question for sluice-doctor.invalid, recursion desired; the id is ours */
	unsigned char q[] = { 0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0,
			      13, 's', 'l', 'u', 'i', 'c', 'e', '-', 'd', 'o', 'c', 't', 'o', 'r',
			      7, 'i', 'n', 'v', 'a', 'l', 'i', 'd', 0, 0, 1, 0, 1 };
	unsigned char a[512];
	struct runfile rf;
	struct pollfd p;
	char addr[128];
	ssize_t n = -1;
	int fd;

	if (daemon_of(d, "dns", "dns.run", &rf) == -1)
		return;
	sockaddr_format(&rf.listen[0], addr, sizeof(addr));
	if (getrandom(q, 2, 0) != 2)
		return;
	fd = socket(rf.listen[0].ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd != -1 && connect_within(fd, &rf.listen[0]) == 0 && write(fd, q, sizeof(q)) > 0) {
		p = (struct pollfd){ .fd = fd, .events = POLLIN };
		if (poll(&p, 1, PROBE_MS) == 1)
			n = read(fd, a, sizeof(a));
	}
	if (fd != -1)
		close(fd);
	if (n >= 12 && a[0] == q[0] && a[1] == q[1] && (a[2] & 0x80) != 0)
		say(d, V_OK, "dns", "answering on %s (pid %d)", addr, (int)rf.pid);
	else
		say(d, V_FAIL, "dns", "pid %d did not answer a query on %s within %d ms", (int)rf.pid,
		    addr, PROBE_MS);
}

static void check_ca(struct doctor *d)
{
	const char *err = NULL;
	struct ca *ca;
	int days, secs;

	if (!d->c->intercept) {
		say(d, V_OK, "ca", "interception off: no CA needed");
		return;
	}
	ca = ca_load_public(d->c->state_dir, &err);
	if (ca == NULL) {
		say(d, V_FAIL, "ca", "%s: %s (sluice ca init makes one)", d->c->state_dir, err);
		return;
	}
	if (ASN1_TIME_diff(&days, &secs, NULL, X509_get0_notAfter(ca_cert(ca))) != 1)
		say(d, V_UNKNOWN, "ca", "its expiry does not read");
	else if (days < CA_MIN_DAYS)
		say(d, V_FAIL, "ca", "%s in %d days", days < 0 || secs < 0 ? "expired" : "expires",
		    days);
	else
		say(d, V_OK, "ca", "valid for %d more days", days);
	ca_free(ca);
}

/* netns_leave, or stop: a doctor left in another namespace would read the wrong things. */
static void back(int saved)
{
	if (netns_leave(saved) == -1) {
		fprintf(stderr, "doctor: back to our namespace: %s\n", strerror(errno));
		exit(2);
	}
}

/* "wall-TABLE@NS.live" into table and the namespace's path (NULL: ours). Returns 0 or -1. */
static int wall_file_parse(const char *file, char *table, size_t tsize, char *netns,
			   size_t nsize, bool *own)
{
	const char *at = strchr(file, '@'), *dot = strrchr(file, '.');

	if (strncmp(file, "wall-", 5) != 0 || at == NULL || dot == NULL || dot < at ||
	    strcmp(dot, ".live") != 0 || (size_t)(at - file - 5) >= tsize)
		return -1;
	snprintf(table, tsize, "%.*s", (int)(at - file - 5), file + 5);
	*own = (size_t)(dot - at - 1) == 4 && strncmp(at + 1, "host", 4) == 0;
	/* cli/wall.c wrote /run/netns/NAME as _run_netns_NAME */
	if (!*own && (strncmp(at + 1, "_run_netns_", 11) != 0 ||
		      snprintf(netns, nsize, "/run/netns/%.*s", (int)(dot - at - 12), at + 12) < 0))
		return -1;
	return 0;
}

/* Whether text[0..len) (an address nft listed, maybe "/32" or "/128") is where sluice-dns listens. */
static bool dns_listens_at(const struct config *c, const char *text, size_t len)
{
	char addr[INET6_ADDRSTRLEN + 8], *slash;
	struct sockaddr_storage ss;

	if (len >= sizeof(addr))
		return false;
	memcpy(addr, text, len);
	addr[len] = '\0';
	slash = strchr(addr, '/');
	if (slash != NULL) {
		if (strcmp(slash, "/32") != 0 && strcmp(slash, "/128") != 0)
			return false; /* a range: more than one resolver */
		*slash = '\0';
	}
	if (sockaddr_parse(addr, SOCKADDR_NO_PORT, 53, &ss) == -1)
		return false;
	for (size_t i = 0; i < c->ndns_listen; i++) {
		struct sockaddr_storage l = c->dns_listen[i];
		struct sockaddr_in *in = (struct sockaddr_in *)&l;

		/* a wildcard listener answers on loopback too */
		if (l.ss_family == AF_INET && in->sin_addr.s_addr == htonl(INADDR_ANY))
			in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		if (sockaddr_same(&l, &ss))
			return true;
	}
	return false;
}

/*
 * A host wall (the VM's, `sluice install --sandbox-vm`) may let its cgroup
 * ask only sluice-dns for names: a DNS accept naming any other address (the
 * host's own resolver, which Lima's hostResolver asks for the guest) is a
 * side door. live is nft's listing of the table. Returns 0 when every DNS
 * accept names a dns-listen address, -1 with the first other one in bad
 * ("any" for an accept that names none).
 */
static int check_host_dns(const struct config *c, const char *live, char *bad, size_t size)
{
	char line[512];

	for (const char *l = live; *l != '\0';) {
		size_t n = strcspn(l, "\n");
		char *a, *save = NULL;

		snprintf(line, sizeof(line), "%.*s", (int)n, l);
		l += n + (l[n] == '\n');
		if (strstr(line, "dport 53 accept") == NULL)
			continue;
		a = strstr(line, "daddr ");
		if (a == NULL) {
			snprintf(bad, size, "any resolver");
			return -1;
		}
		/* "daddr 127.0.0.1 meta ..." or "daddr { a, b } meta ..." */
		for (a = strtok_r(a + strlen("daddr "), " {},", &save);
		     a != NULL && strcmp(a, "meta") != 0 && strcmp(a, "th") != 0;
		     a = strtok_r(NULL, " {},", &save)) {
			if (!dns_listens_at(c, a, strlen(a))) {
				snprintf(bad, size, "%s", a);
				return -1;
			}
		}
	}
	return 0;
}

/*
 * One recorded wall against its namespace's listing (libnftables' socket is
 * made in the namespace the context is opened in: one context per wall).
 */
static void check_wall(struct doctor *d, const char *file)
{
	struct nft_ctx *nft;
	char table[80], netns[PATH_MAX], path[PATH_MAX + NAME_MAX + 2], *want = NULL, *live = NULL;
	char bad[INET6_ADDRSTRLEN + 8];
	size_t len;
	bool own;
	int saved = -1, rc, host_dns = 1;

	if (wall_file_parse(file, table, sizeof(table), netns, sizeof(netns), &own) == -1)
		return;
	snprintf(path, sizeof(path), "%s/%s", d->c->state_dir, file);
	if (file_read(path, 1 << 20, &want, &len) == -1) {
		say(d, V_UNKNOWN, "wall", "%s: %s", path, strerror(errno));
		return;
	}
	if (!own && (saved = netns_enter_saved(netns)) == -1) {
		say(d, errno == ENOENT ? V_FAIL : V_UNKNOWN, "wall", "%s in %s: the namespace %s",
		    table, netns, errno == ENOENT ? "is gone" : "cannot be entered");
		goto out;
	}
	nft = wall_nft_open();
	rc = nft == NULL ? -1 : wall_nft_table_list(nft, table, &live);
	if (nft != NULL)
		nft_ctx_free(nft);
	/* wall_nft_same cuts the listing into lines in place: read its DNS rules first */
	if (rc == 0 && strncmp(table, "sluice_host_", 12) == 0)
		host_dns = check_host_dns(d->c, live, bad, sizeof(bad));
	if (rc == 1)
		say(d, V_FAIL, "wall", "%s in %s: the table is gone", table, own ? "host" : netns);
	else if (rc == 0 && wall_nft_same(table, want, live))
		say(d, V_OK, "wall", "%s in %s holds as applied", table, own ? "host" : netns);
	else if (rc == 0)
		say(d, V_FAIL, "wall", "%s in %s differs from what apply loaded (said above)", table,
		    own ? "host" : netns);
	else
		say(d, V_UNKNOWN, "wall", "%s in %s: nft could not list it", table,
		    own ? "host" : netns);
	if (host_dns == 0)
		say(d, V_OK, "wall", "%s in %s lets the VM ask only sluice-dns for names", table,
		    own ? "host" : netns);
	else if (host_dns == -1)
		say(d, V_FAIL, "wall", "%s in %s lets the VM ask %s for names, and no dns-listen is "
				       "there: apply it with --resolver naming sluice-dns", table,
		    own ? "host" : netns, bad);
	if (!own)
		back(saved);
out:
	free(want);
	free(live);
}

static void check_walls(struct doctor *d)
{
	struct dirent *e;
	DIR *dir = opendir(d->c->state_dir);
	int n = 0;

	while (dir != NULL && (e = readdir(dir)) != NULL) {
		if (strncmp(e->d_name, "wall-", 5) != 0 || strstr(e->d_name, ".live") == NULL)
			continue;
		check_wall(d, e->d_name);
		n++;
	}
	if (dir != NULL)
		closedir(dir);
	if (n == 0)
		say(d, V_OK, "wall", "none applied from %s", d->c->state_dir);
}

/* Runs in STATE/runs: live ones hold their lock; a dead one is left for --clean. */
static void check_runs(struct doctor *d, bool clean)
{
	char dir[PATH_MAX + 8], lock[PATH_MAX + NAME_MAX + 16];
	struct dirent *e;
	DIR *dh;
	int live = 0, fd;

	if (clean) {
		int n = run_clean_stale(d->c);

		if (n < 0)
			say(d, V_FAIL, "run", "a dead run could not be taken down (said above)");
		else if (n > 0)
			say(d, V_OK, "run", "took down %d dead run%s", n, n == 1 ? "" : "s");
	}
	snprintf(dir, sizeof(dir), "%s/runs", d->c->state_dir);
	dh = opendir(dir);
	while (dh != NULL && (e = readdir(dh)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(lock, sizeof(lock), "%s/%s/lock", dir, e->d_name);
		fd = open(lock, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd != -1 && flock(fd, LOCK_SH | LOCK_NB) == -1) {
			live++;
		} else {
			say(d, V_FAIL, "run", "sluice-%s is dead but not taken down (sluice doctor "
					      "--clean, or the next sluice run, removes it)", e->d_name);
		}
		if (fd != -1)
			close(fd);
	}
	if (dh != NULL)
		closedir(dh);
	if (live > 0)
		say(d, V_OK, "run", "%d run%s live", live, live == 1 ? "" : "s");
}

/* Whether something listens on the TCP address s in the namespace at netns (NULL: ours). */
static int listens(const char *netns, const char *s, bool *found)
{
	struct sockaddr_storage ss;
	int nl, rc;

	*found = false;
	if (sockaddr_parse(s, 0, 0, &ss) == -1)
		return -1;
	if (netns == NULL) {
		nl = sockdiag_open();
	} else {
		int saved = netns_enter_saved(netns);

		if (saved == -1)
			return -1;
		nl = sockdiag_open();
		back(saved);
	}
	if (nl == -1)
		return -1;
	rc = sockdiag_find_listener(nl, &ss, found);
	close(nl);
	return rc;
}

/*
 * The recorded provision id against the id of the boot script `sluice
 * install --sandbox-vm lima --project PROJECT` renders now (install.c).
 */
static void doctor_provision_id(struct doctor *d, const char *project, const char *id)
{
	char now[UNITS_ID_HEX + 1], *script = NULL;

	if (install_lima_script(project[0] != '\0' ? project : NULL, &script, now) == -1) {
		say(d, V_UNKNOWN, "provision", "the boot script does not render now (said above)");
		return;
	}
	free(script);
	if (strcmp(now, id) == 0)
		say(d, V_OK, "provision", "id %.12s... is the boot script rendered now", id);
	else
		say(d, V_FAIL, "provision", "the sandbox applied %.12s..., the boot script rendered now "
					    "is %.12s... (re-provision it: restart the VM)",
		    id[0] != '\0' ? id : "(no id)", now);
}

/*
 * A sandbox's provision record (written by the boot script `sluice
 * install --sandbox-vm` renders): what it applied is still there, and it
 * is what renders now.
 */
static void check_provision(struct doctor *d)
{
	const char *path = d->provision != NULL ? d->provision : PROVISION_DEFAULT;
	char *buf, *line, *save = NULL, id[80] = "", project[PATH_MAX] = "";
	size_t len;

	if (file_read(path, 1 << 16, &buf, &len) == -1) {
		if (d->provision == NULL && errno == ENOENT)
			return; /* no sandbox provisioned here: nothing to read back */
		say(d, d->provision != NULL && errno == ENOENT ? V_FAIL : V_UNKNOWN, "provision",
		    "%s: %s", path, errno == ENOENT ? "missing: the boot script did not apply" :
						       strerror(errno));
		return;
	}
	line = strtok_r(buf, "\n", &save);
	if (line == NULL || strcmp(line, "sluice-provision 1") != 0) {
		say(d, V_FAIL, "provision", "%s: not a provision record", path);
		free(buf);
		return;
	}
	while ((line = strtok_r(NULL, "\n", &save)) != NULL) {
		char *val = strchr(line, ' ');

		if (val == NULL)
			continue;
		*val++ = '\0';
		if (strcmp(line, "id") == 0) {
			snprintf(id, sizeof(id), "%s", val);
		} else if (strcmp(line, "project") == 0) {
			snprintf(project, sizeof(project), "%s", val);
		} else if (strcmp(line, "wall") == 0) {
			char *live = NULL;
			int rc = -1, saved = d->netns != NULL ? netns_enter_saved(d->netns) : -2;

			if (saved != -1) {
				struct nft_ctx *nft = wall_nft_open();

				rc = nft == NULL ? -1 : wall_nft_table_list(nft, val, &live);
				if (nft != NULL)
					nft_ctx_free(nft);
				if (saved >= 0)
					back(saved);
			}
			if (rc == 0)
				say(d, V_OK, "provision", "wall %s is loaded", val);
			else
				say(d, rc == 1 ? V_FAIL : V_UNKNOWN, "provision", "wall %s %s", val,
				    rc == 1 ? "is gone" : "could not be listed");
			free(live);
		} else if (strcmp(line, "forwarder") == 0) {
			char *addr, *wsave = NULL;

			for (addr = strtok_r(val, " ", &wsave); addr != NULL;
			     addr = strtok_r(NULL, " ", &wsave)) {
				bool found;

				if (listens(d->netns, addr, &found) == -1)
					say(d, V_UNKNOWN, "provision", "forwarder %s: cannot look", addr);
				else
					say(d, found ? V_OK : V_FAIL, "provision", "forwarder %s %s", addr,
					    found ? "listens" : "is not listening");
			}
		}
	}
	free(buf);
	doctor_provision_id(d, project, id);
}

/* Whether unit is linked from a *.wants directory of UNIT_DIR (a template: one of its instances). */
static bool unit_enabled(const char *unit)
{
	bool template = strstr(unit, "@.service") != NULL, enabled = false;
	size_t stem = strlen(unit) - strlen(".service");
	char wants[PATH_MAX];
	struct dirent *w, *l;
	DIR *dh = opendir(UNIT_DIR), *in;

	while (!enabled && dh != NULL && (w = readdir(dh)) != NULL) {
		if (strstr(w->d_name, ".wants") == NULL)
			continue;
		snprintf(wants, sizeof(wants), "%s/%s", UNIT_DIR, w->d_name);
		in = opendir(wants);
		while (!enabled && in != NULL && (l = readdir(in)) != NULL)
			enabled = template ? strncmp(l->d_name, unit, stem) == 0
					   : strcmp(l->d_name, unit) == 0;
		if (in != NULL)
			closedir(in);
	}
	if (dh != NULL)
		closedir(dh);
	return enabled;
}

/* Each sluice unit file in /etc/systemd/system enabled. */
static void check_units(struct doctor *d)
{
	struct dirent *e;
	DIR *dh = opendir(UNIT_DIR);
	int n = 0;

	while (dh != NULL && (e = readdir(dh)) != NULL) {
		bool enabled;

		if (strncmp(e->d_name, "sluice-", 7) != 0 || strstr(e->d_name, ".service") == NULL ||
		    strstr(e->d_name, ".d") == e->d_name + strlen(e->d_name) - 2)
			continue;
		n++;
		enabled = unit_enabled(e->d_name);
		say(d, enabled ? V_OK : V_FAIL, "units", "%s %s", e->d_name,
		    enabled ? "is enabled" : "is installed but not enabled (systemctl enable)");
	}
	if (dh != NULL)
		closedir(dh);
	if (n == 0)
		say(d, V_OK, "units", "none installed in %s (sluice install renders them)", UNIT_DIR);
}

/* Whether NAME=... with a value is in the NUL-separated environment env[0..len). */
static bool environ_has(const char *env, size_t len, const char *name)
{
	size_t n = strlen(name);

	for (size_t i = 0; i < len;) {
		const char *e = env + i;
		size_t l = strnlen(e, len - i);

		if (l > n + 1 && strncmp(e, name, n) == 0 && e[n] == '=')
			return true;
		i += l + 1;
	}
	return false;
}

/* An env= rule's variable, in the running proxy's environment. */
static void check_inject_env(struct doctor *d, const struct inject_rule *r)
{
	const char *v = r->source_arg;
	struct runfile rf;
	char path[64], *env = NULL;
	size_t len = 0;

	if (runfile_read(d->c->state_dir, "proxy.run", &rf) == -1 || rf.pid <= 0) {
		say(d, V_UNKNOWN, "inject",
		    "rule %s: the environment variable %s: sluice-proxy is not running to read its "
		    "environment", r->name, v);
		return;
	}
	snprintf(path, sizeof(path), "/proc/%d/environ", (int)rf.pid);
	if (file_read(path, 1 << 20, &env, &len) == -1) {
		say(d, V_UNKNOWN, "inject", "rule %s: %s: %s", r->name, path, strerror(errno));
		return;
	}
	if (environ_has(env, len, v))
		say(d, V_OK, "inject",
		    "rule %s: the environment variable %s is set in sluice-proxy's environment "
		    "(pid %d)", r->name, v, (int)rf.pid);
	else
		say(d, V_FAIL, "inject",
		    "rule %s: the environment variable %s is not set in sluice-proxy's environment "
		    "(pid %d)", r->name, v, (int)rf.pid);
	free(env);
}

/* A file= rule's secret file, as sluice-proxy reads it (proxy/inject.c). */
static void check_inject_file(struct doctor *d, const struct inject_rule *r)
{
	const char *f = r->source_arg, *user = d->c->user[0] != '\0' ? d->c->user : NULL;
	struct passwd *pw = NULL;
	struct stat st;

	if (stat(f, &st) == -1) {
		say(d, V_FAIL, "inject", "rule %s: the secret file %s cannot be read (%s)", r->name,
		    f, strerror(errno));
		return;
	}
	if (!S_ISREG(st.st_mode) || st.st_size == 0) {
		say(d, V_FAIL, "inject", "rule %s: the secret file %s is %s", r->name, f,
		    S_ISREG(st.st_mode) ? "empty" : "not a regular file");
		return;
	}
	if ((st.st_mode & 077) != 0) {
		say(d, V_FAIL, "inject", "rule %s: the secret file %s is readable by others (chmod "
		    "600 it): sluice-proxy refuses to use it", r->name, f);
		return;
	}
	/* only its owner (or root) can read it now: is that who the proxy runs as? */
	if (user != NULL && (pw = getpwnam(user)) == NULL) {
		say(d, V_UNKNOWN, "inject", "rule %s: user %s is not known", r->name, user);
		return;
	}
	if (pw != NULL ? pw->pw_uid != 0 && (pw->pw_uid != st.st_uid || !(st.st_mode & S_IRUSR))
		       : access(f, R_OK) == -1)
		say(d, V_FAIL, "inject", "rule %s: the secret file %s is not readable by %s (owner "
		    "uid %u, mode %03o)", r->name, f, user != NULL ? user : "this user",
		    (unsigned)st.st_uid, (unsigned)(st.st_mode & 0777));
	else
		say(d, V_OK, "inject", "rule %s: the secret file %s is readable by sluice-proxy%s%s",
		    r->name, f, user != NULL ? " as " : "", user != NULL ? user : "");
}

static void check_inject(struct doctor *d)
{
	const struct config *c = d->c;

	for (size_t i = 0; i < c->nrules; i++) {
		const struct inject_rule *r = &c->rules[i];

		if (r->source == INJECT_ENV)
			check_inject_env(d, r);
		else if (r->source == INJECT_FILE)
			check_inject_file(d, r);
		else if (access(r->source_arg, X_OK) == 0)
			say(d, V_OK, "inject", "rule %s: the token command %s is executable", r->name,
			    r->source_arg);
		else
			say(d, V_FAIL, "inject", "rule %s: the token command %s cannot be run (%s)",
			    r->name, r->source_arg, strerror(errno));
	}
}

int cmd_doctor(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "clean", no_argument, NULL, 'C' },
		{ "provision", required_argument, NULL, 'P' },
		{ "netns", required_argument, NULL, 'n' },
		{ "before-proxy", no_argument, NULL, 'B' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct doctor d = { .worst = 0 };
	struct config *c;
	bool clean = false;
	int opt;

	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'j':
			d.json = true;
			break;
		case 'C':
			clean = true;
			break;
		case 'P':
			d.provision = optarg;
			break;
		case 'n':
			d.netns = optarg;
			break;
		case 'B':
			d.before_proxy = true;
			break;
		case 'h':
			cli_usage(stdout, "doctor");
			return EXIT_OK;
		default:
			cli_usage(stderr, "doctor");
			return EXIT_USAGE;
		}
	}
	if (optind != argc) {
		cli_usage(stderr, "doctor");
		return EXIT_USAGE;
	}
	c = cli_config_load();
	if (c == NULL)
		return 2;
	d.c = c;
	d.checks = d.json ? json_array() : NULL;
	if (!d.before_proxy) {
		check_proxy(&d);
		check_dns(&d);
	}
	check_ca(&d);
	check_walls(&d);
	check_runs(&d, clean);
	check_provision(&d);
	check_units(&d);
	if (!d.before_proxy)
		check_inject(&d);
	if (d.json) {
		json_t *top = json_pack("{s:o, s:i}", "checks", d.checks, "exit", d.worst);

		json_dumpf(top, stdout, JSON_COMPACT);
		putchar('\n');
		json_decref(top);
	}
	config_free(c);
	return d.worst;
}
