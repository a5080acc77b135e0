/*
 * units.c: render the files `sluice install` writes (units.h).
 *
 * Each file is a header comment naming what rendered it and for which
 * project and band, then the text, built from the params alone. The
 * params are checked before anything is written, so no path, name or
 * certificate can add a line, a quote or a systemd specifier ('%') of its
 * own. The hardening each daemon gets is one table (struct hardening), so
 * the units differ only where the daemons do. Nothing here reads a file,
 * the environment or the clock.
 */
#include "units.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "netlog.h"
#include "wall.h"

/* Appending to out; the first failure sticks, so callers check once at the end. */
struct out {
	struct buf *b;
	bool over;
};

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(struct out *o, const char *fmt, ...)
{
	char line[2048];
	va_list ap;
	int n;

	if (o->over)
		return;
	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(line) || buf_append(o->b, line, (size_t)n) == -1)
		o->over = true;
}

/* Text without formatting (a CA, a script), whatever its length. */
static void put_text(struct out *o, const char *s, size_t n)
{
	if (!o->over && buf_append(o->b, s, n) == -1)
		o->over = true;
}

static const char *const file_names[UNITS_NFILES] = {
	[UNITS_PROXY] = "sluice-proxy.service",
	[UNITS_DNS] = "sluice-dns.service",
	[UNITS_WALL] = "sluice-wall@.service",
	[UNITS_WALL_EGRESS] = "sluice-wall@egress.service.d/sluice.conf",
	[UNITS_WALL_HOST] = "sluice-wall@host.service.d/sluice.conf",
	[UNITS_LIMA] = "sluice-lima@.service",
	[UNITS_SCRIPT] = "lima-provision.sh",
	[UNITS_YAML] = "lima-provision.yaml",
};

const char *units_file_name(enum units_file f)
{
	return (unsigned)f < UNITS_NFILES ? file_names[f] : "?";
}

bool units_file_wanted(const struct units_params *p, enum units_file f)
{
	switch (f) {
	case UNITS_PROXY:
	case UNITS_DNS:
	case UNITS_WALL:
	case UNITS_WALL_EGRESS:
		return true;
	case UNITS_WALL_HOST:
	case UNITS_LIMA:
	case UNITS_SCRIPT:
	case UNITS_YAML:
		return p->vm == UNITS_VM_LIMA;
	case UNITS_NFILES:
		break;
	}
	return false;
}

void units_vm_slice(const struct units_params *p, char *buf, size_t size)
{
	snprintf(buf, size, "sluice-vm-%u.slice", p->port_base);
}

/* systemd nests a slice under the one its name less the last dash part names. */
void units_vm_cgroup(const struct units_params *p, char *buf, size_t size)
{
	snprintf(buf, size, "sluice.slice/sluice-vm.slice/sluice-vm-%u.slice", p->port_base);
}

void units_provision_id(const char *text, size_t len, char id[UNITS_ID_HEX + 1])
{
	netlog_chain_hash(text, len, id); /* the log chain's SHA-256 in hex: the same function */
}

/* --- checks --------------------------------------------------------------- */

static bool only(const char *s, const char *set)
{
	return s != NULL && s[0] != '\0' && strspn(s, set) == strlen(s);
}

#define PATH_BYTES "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/._+@:-"
#define NAME_BYTES "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-"

static bool path_ok(const char *s)
{
	return only(s, PATH_BYTES) && s[0] == '/' && strstr(s, "/../") == NULL;
}

static bool name_ok(const char *s)
{
	return only(s, NAME_BYTES) && s[0] != '-' && s[0] != '.';
}

/* One PEM certificate: its BEGIN line, base64 lines, its END line, nothing else. */
static bool pem_ok(const char *s)
{
	static const char begin[] = "-----BEGIN CERTIFICATE-----\n";
	static const char end[] = "-----END CERTIFICATE-----\n";
	size_t n = s != NULL ? strlen(s) : 0, body;

	if (n < sizeof(begin) + sizeof(end) || memcmp(s, begin, sizeof(begin) - 1) != 0 ||
	    memcmp(s + n - (sizeof(end) - 1), end, sizeof(end) - 1) != 0)
		return false;
	body = n - (sizeof(begin) - 1) - (sizeof(end) - 1);
	for (size_t i = 0; i < body; i++) {
		char ch = s[sizeof(begin) - 1 + i];

		if (strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=\n", ch) ==
		    NULL)
			return false;
	}
	return true;
}

static int params_check(const struct units_params *p, const char **err)
{
	const char *const *lists[] = { p->proxy_rw, p->dns_rw, p->resolvers };
	const size_t counts[] = { p->nproxy_rw, p->ndns_rw, p->nresolvers };

	*err = NULL;
	if (p->project == NULL || p->project[0] == '\0')
		*err = "no project";
	else if (p->port_base < 1 || p->port_base > 65536 - WALL_BAND)
		*err = "port base out of range";
	else if (!path_ok(p->bindir) || !path_ok(p->config) || !path_ok(p->workdir) ||
		 !path_ok(p->state_dir))
		*err = "a path is not absolute or holds bytes outside [A-Za-z0-9/._+@:-]";
	else if (!name_ok(p->user))
		*err = "the user is not a plain name";
	for (size_t l = 0; *err == NULL && l < 3; l++) {
		if (counts[l] > UNITS_PATHS_MAX)
			*err = "too many paths or resolvers";
		for (size_t i = 0; *err == NULL && i < counts[l]; i++)
			if (l < 2 ? !path_ok(lists[l][i]) : !only(lists[l][i], "0123456789abcdefABCDEF.:"))
				*err = "a writable path or a resolver holds other bytes";
	}
	if (*err != NULL || p->vm != UNITS_VM_LIMA)
		return *err == NULL ? 0 : -1;
	if (!name_ok(p->vm_name) || !name_ok(p->vm_user) || !path_ok(p->limactl))
		*err = "the VM's name, user or limactl path is not plain";
	else if (strcmp(p->vm_user, "root") == 0)
		*err = "the VM's user is root: Lima runs as the operator";
	else if (!only(p->gateway, "0123456789."))
		*err = "the gateway is not an IPv4 address";
	else if (p->proxy_port < p->port_base || p->proxy_port >= p->port_base + WALL_LISTENERS)
		*err = "the proxy port is not among the band's listeners (base+0..89)";
	else if (!pem_ok(p->ca_pem))
		*err = "the CA is not one PEM certificate";
	return *err == NULL ? 0 : -1;
}

/* --- pieces ---------------------------------------------------------------- */

/* The project in a unit's comment or Description: printable ASCII, no '%' or '\'. */
static void put_project_plain(struct out *o, const char *project)
{
	for (const char *s = project; *s != '\0'; s++)
		put(o, "%c", *s >= ' ' && *s < 0x7f && *s != '%' && *s != '\\' ? *s : '_');
}

static void put_head(struct out *o, const struct units_params *p, enum units_file f,
		     const char *lead)
{
	put(o, "%s%s: rendered by `sluice install` for project \"", lead, units_file_name(f));
	put_project_plain(o, p->project);
	put(o, "\" (ports %u-%u).\n", p->port_base, p->port_base + WALL_BAND - 1);
	put(o, "%sRender it again rather than edit it; `sluice install` prints how it installs.\n",
	    lead);
}

/* What one daemon's unit confines, beyond what every unit here gets. */
struct hardening {
	const char *caps;     /* CapabilityBoundingSet=, "" for none */
	const char *families; /* RestrictAddressFamilies= */
	const char *const *rw;
	size_t nrw;
	bool kernel_modules; /* ProtectKernelModules=: not for nft, whose rules may load modules */
	bool private_devices;
	bool mdwe; /* MemoryDenyWriteExecute=: not when token commands (maybe a JIT) run */
	bool proc_subset; /* ProcSubset=pid: not for token commands, nor nft */
};

static void put_hardening(struct out *o, const struct units_params *p, const struct hardening *h)
{
	put(o, "CapabilityBoundingSet=%s\n", h->caps);
	put(o, "NoNewPrivileges=yes\n"
	       "ProtectSystem=strict\n");
	if (h->nrw > 0) {
		put(o, "ReadWritePaths=");
		for (size_t i = 0; i < h->nrw; i++)
			put(o, "%s%s", i > 0 ? " " : "", h->rw[i]);
		put(o, "\n");
	}
	put(o, "ProtectHome=%s\n", p->home_read_only ? "read-only" : "yes");
	if (p->tmp_paths)
		put(o, "# no PrivateTmp: a path it uses is under /tmp or /var/tmp\n");
	else
		put(o, "PrivateTmp=yes\n");
	if (h->private_devices)
		put(o, "PrivateDevices=yes\n");
	put(o, "ProtectKernelTunables=yes\n");
	if (h->kernel_modules)
		put(o, "ProtectKernelModules=yes\n");
	put(o, "ProtectKernelLogs=yes\n"
	       "ProtectControlGroups=yes\n"
	       "ProtectClock=yes\n"
	       "ProtectHostname=yes\n"
	       "ProtectProc=invisible\n");
	if (h->proc_subset)
		put(o, "ProcSubset=pid\n");
	put(o, "PrivateMounts=yes\n");
	put(o, "RestrictAddressFamilies=%s\n", h->families);
	put(o, "RestrictNamespaces=yes\n"
	       "RestrictRealtime=yes\n"
	       "RestrictSUIDSGID=yes\n"
	       "LockPersonality=yes\n");
	if (h->mdwe)
		put(o, "MemoryDenyWriteExecute=yes\n");
	put(o, "SystemCallArchitectures=native\n"
	       "SystemCallFilter=@system-service\n"
	       "SystemCallErrorNumber=EPERM\n"
	       "UMask=0027\n");
}

/* --- the daemons ------------------------------------------------------------ */

static void put_daemon(struct out *o, const struct units_params *p, bool proxy)
{
	const char *name = proxy ? "sluice-proxy" : "sluice-dns";
	bool low = proxy ? p->proxy_low_port : p->dns_low_port;
	char caps[160];
	struct hardening h = {
		.caps = caps,
		.families = "AF_UNIX AF_INET AF_INET6 AF_NETLINK",
		.rw = proxy ? p->proxy_rw : p->dns_rw,
		.nrw = proxy ? p->nproxy_rw : p->ndns_rw,
		.kernel_modules = true,
		.private_devices = true,
		.mdwe = !(proxy && p->token_commands),
		.proc_subset = !(proxy && p->token_commands),
	};

	snprintf(caps, sizeof(caps), "CAP_SETUID CAP_SETGID CAP_SETPCAP CAP_DAC_OVERRIDE%s",
		 low ? " CAP_NET_BIND_SERVICE" : "");
	put_head(o, p, proxy ? UNITS_PROXY : UNITS_DNS, "# ");
	put(o, "\n[Unit]\nDescription=%s: %s (project ", name,
	    proxy ? "the egress chokepoint" : "the sandbox's resolver");
	put_project_plain(o, p->project);
	put(o, ")\n");
	if (proxy)
		put(o, "# no proxy without the wall that keeps its own uid off the denied ranges\n"
		       "Requires=sluice-wall@egress.service\n"
		       "After=sluice-wall@egress.service network-online.target\n");
	else
		put(o, "After=network-online.target\n");
	put(o, "Wants=network-online.target\n");
	put(o, "\n[Service]\n"
	       "# READY=1 (sd_notify) once its listeners are open and it runs as %s\n"
	       "Type=notify\n"
	       "NotifyAccess=main\n", p->user);
	put(o, "# root only until bound: it reads root's %s, binds, opens its log, then drops\n"
	       "# itself to %s (the config's user) with every capability set and the bounding\n"
	       "# set emptied\n"
	       "User=root\n",
	    proxy ? "CA and stamp keys" : "config and grants", p->user);
	put(o, "ExecStart=%s/%s -c %s\n", p->bindir, name, p->config);
	put(o, "# \"+\": kill runs outside the sandbox, where root may signal a process of %s's\n"
	       "ExecReload=+/bin/kill -HUP $MAINPID\n", p->user);
	put(o, "WorkingDirectory=%s\n", p->workdir);
	put(o, "Restart=on-failure\n"
	       "RestartSec=2\n");
	put(o, "# until the drop: CAP_SETUID and CAP_SETGID to switch, CAP_SETPCAP to empty the\n"
	       "# bounding set, CAP_DAC_OVERRIDE to open the log in %s's own directory%s\n",
	    p->user, low ? ",\n# CAP_NET_BIND_SERVICE for a listener below 1024" : "");
	if (!h.mdwe)
		put(o, "# no MemoryDenyWriteExecute or ProcSubset: an inject rule's token command may\n"
		       "# need a JIT or /proc\n");
	put_hardening(o, p, &h);
	put(o, "\n[Install]\nWantedBy=multi-user.target\n");
}

/* --- the walls -------------------------------------------------------------- */

static void put_wall(struct out *o, const struct units_params *p)
{
	const char *rw[] = { p->state_dir };
	struct hardening h = {
		.caps = "CAP_NET_ADMIN",
		.families = "AF_NETLINK AF_UNIX",
		.rw = rw,
		.nrw = 1,
		.private_devices = true,
		.mdwe = true,
	};

	put_head(o, p, UNITS_WALL, "# ");
	put(o, "#\n"
	       "# One instance per wall profile, its options in its drop-in\n"
	       "# (sluice-wall@PROFILE.service.d/sluice.conf): sluice-wall@egress keeps the\n"
	       "# proxy's uid off the denied ranges; sluice-wall@host, with a VM, holds the VM's\n"
	       "# slice. Loaded before the network is up; the units that require an instance\n"
	       "# stop before it does, and stopping it removes its table.\n");
	put(o, "\n[Unit]\nDescription=sluice wall %%i (project ");
	put_project_plain(o, p->project);
	put(o, ", ports %u-%u)\n", p->port_base, p->port_base + WALL_BAND - 1);
	put(o, "DefaultDependencies=no\n"
	       "Wants=network-pre.target\n"
	       "After=local-fs.target\n"
	       "Before=network-pre.target network-online.target shutdown.target\n"
	       "Conflicts=shutdown.target\n");
	put(o, "\n[Service]\n"
	       "Type=oneshot\n"
	       "RemainAfterExit=yes\n"
	       "Environment=SLUICE_WALL_ARGS=\n");
	put(o, "ExecStart=%s/sluice -c %s wall apply %%i --port-base %u $SLUICE_WALL_ARGS "
	       "--i-mean-this-host\n",
	    p->bindir, p->config, p->port_base);
	put(o, "ExecStop=%s/sluice -c %s wall remove %%i --port-base %u --i-mean-this-host\n",
	    p->bindir, p->config, p->port_base);
	put(o, "WorkingDirectory=%s\n", p->workdir);
	put(o, "# nft needs CAP_NET_ADMIN alone; it acts on this host's own ruleset (no\n"
	       "# PrivateNetwork) and may have the kernel load nf_tables modules\n");
	put_hardening(o, p, &h);
	put(o, "\n[Install]\nWantedBy=sysinit.target\n");
}

static void put_wall_egress(struct out *o, const struct units_params *p)
{
	put_head(o, p, UNITS_WALL_EGRESS, "# ");
	put(o, "# The egress wall: %s, the proxy's uid, may not reach the denied ranges.\n",
	    p->user);
	put(o, "\n[Service]\nEnvironment=\"SLUICE_WALL_ARGS=--user %s", p->user);
	for (size_t i = 0; i < p->nresolvers; i++)
		put(o, " --resolver %s", p->resolvers[i]);
	put(o, "\"\n");
}

static void put_wall_host(struct out *o, const struct units_params *p)
{
	char slice[64], cgroup[128];

	units_vm_slice(p, slice, sizeof(slice));
	units_vm_cgroup(p, cgroup, sizeof(cgroup));
	put_head(o, p, UNITS_WALL_HOST, "# ");
	put(o, "# The host wall: what runs in %s (the VM, sluice-lima@%s)\n"
	       "# reaches only loopback listeners of its own or this project's band, and DNS.\n"
	       "# nft resolves the slice's cgroup when the table loads: the slice first.\n",
	    slice, p->vm_name);
	put(o, "\n[Unit]\nRequires=%s\nAfter=%s\nBefore=sluice-lima@%s.service\n", slice, slice,
	    p->vm_name);
	/*
	 * DNS only to sluice-dns, where the gateway's port 53 lands: with no
	 * pinned resolver the wall opens every local one, and Lima's hostResolver
	 * (192.168.5.3, answered by limactl in this slice) asks the host's own.
	 */
	put(o, "\n[Service]\n"
	       "# DNS only to sluice-dns (%s:53), never the host's own resolver: Lima's\n"
	       "# hostResolver would ask it any name the guest sends there\n"
	       "Environment=\"SLUICE_WALL_ARGS=--cgroup %s --resolver %s\"\n",
	    UNITS_DNS_LIMA_HOST, cgroup, UNITS_DNS_LIMA_HOST);
}

/* --- the VM ----------------------------------------------------------------- */

static void put_lima(struct out *o, const struct units_params *p)
{
	char slice[64];

	units_vm_slice(p, slice, sizeof(slice));
	put_head(o, p, UNITS_LIMA, "# ");
	put(o, "#\n"
	       "# Runs Lima instance %%i (limactl start --foreground) as %s in %s,\n"
	       "# the slice whose cgroup sluice-wall@host holds. It starts only once that wall,\n"
	       "# sluice-dns and sluice-proxy are up, and stops when one of them stops. The\n"
	       "# guest applies its own walls at boot (lima-provision.yaml).\n",
	    p->vm_user, slice);
	put(o, "\n[Unit]\nDescription=Lima VM %%i behind sluice (project ");
	put_project_plain(o, p->project);
	put(o, ")\n");
	put(o, "Requires=sluice-wall@host.service sluice-proxy.service sluice-dns.service\n"
	       "After=sluice-wall@host.service sluice-proxy.service sluice-dns.service "
	       "network-online.target\n"
	       "Wants=network-online.target\n");
	put(o, "\n[Service]\nType=simple\nUser=%s\nWorkingDirectory=~\nSlice=%s\n", p->vm_user,
	    slice);
	put(o, "ExecStart=%s start --foreground %%i\n", p->limactl);
	put(o, "ExecStop=%s stop %%i\n", p->limactl);
	put(o, "TimeoutStopSec=120\n");
	put(o, "\n[Install]\nWantedBy=multi-user.target\n");
}

/* --- the guest's boot script --------------------------------------------- */

/* The variables `sluice ca show` prints (cli/ca.c), and whether each names the bundle. */
static const struct {
	const char *name;
	bool bundle; /* false: the CA file alone (Node adds it to its own roots) */
} ca_vars[] = {
	{ "SSL_CERT_FILE", true },
	{ "REQUESTS_CA_BUNDLE", true },
	{ "NODE_EXTRA_CA_CERTS", false },
	{ "GIT_SSL_CAINFO", true },
	{ "CURL_CA_BUNDLE", true },
	{ "NPM_CONFIG_CAFILE", true },
	{ "PIP_CERT", true },
	{ "CARGO_HTTP_CAINFO", true },
	{ "AWS_CA_BUNDLE", true },
	{ "DENO_CERT", true },
};

#define NCA_VARS (sizeof(ca_vars) / sizeof(ca_vars[0]))

static const char *const proxy_vars[] = { "HTTP_PROXY", "http_proxy", "HTTPS_PROXY",
					  "https_proxy" };

/* s in single quotes for sh. */
static void put_sh_quoted(struct out *o, const char *s)
{
	put(o, "'");
	for (; *s != '\0'; s++) {
		if (*s == '\'')
			put(o, "'\\''");
		else
			put(o, "%c", *s);
	}
	put(o, "'");
}

static const char script_lib[] =
	"say() { echo \"sluice-provision: $*\" >&2; }\n"
	"fail() {\n"
	"\tsay \"$*\"\n"
	"\tsay \"stopped: nothing after this step was applied, and no forwarder runs\"\n"
	"\texit 1\n"
	"}\n"
	"sl() { \"$BIN/sluice\" -c \"$STATE/sluice.conf\" \"$@\"; }\n"
	"# root's, and none of the bits in $2 (octal) set\n"
	"root_only() {\n"
	"\t[ \"$(stat -Lc %u \"$1\")\" = 0 ] && [ $((0$(stat -Lc %a \"$1\") & $2)) = 0 ]\n"
	"}\n"
	"use_systemd() {\n"
	"\t[ \"$LAUNCH\" = systemd ] || { [ \"$LAUNCH\" = auto ] && [ -d /run/systemd/system ]; }\n"
	"}\n"
	"# the forwarder this script started at an earlier boot or run, if it still runs\n"
	"stop_forwarder() {\n"
	"\tif use_systemd; then\n"
	"\t\tsystemctl stop sluice-forward.service 2>/dev/null || :\n"
	"\t\tsystemctl reset-failed sluice-forward.service 2>/dev/null || :\n"
	"\tfi\n"
	"\t[ -f \"$STATE/forward.pid\" ] || return 0\n"
	"\tpid=$(cat \"$STATE/forward.pid\")\n"
	"\trm -f \"$STATE/forward.pid\"\n"
	"\t# that pid may be another program's by now\n"
	"\t[ \"$(readlink \"/proc/$pid/exe\" 2>/dev/null)\" = \"$(readlink -f \"$BIN/sluice-forward\")\" ] ||\n"
	"\t\treturn 0\n"
	"\tkill \"$pid\" 2>/dev/null || return 0\n"
	"\tfor _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do\n"
	"\t\tkill -0 \"$pid\" 2>/dev/null || return 0\n"
	"\t\tsleep 0.1\n"
	"\tdone\n"
	"\tkill -9 \"$pid\" 2>/dev/null || :\n"
	"}\n"
	"forwarder_runs() {\n"
	"\tif use_systemd; then\n"
	"\t\tsystemctl is-active --quiet sluice-forward.service\n"
	"\telse\n"
	"\t\tkill -0 \"$(cat \"$STATE/forward.pid\")\" 2>/dev/null\n"
	"\tfi\n"
	"}\n";

static const char script_checks[] =
	"case $ROOT$BIN in *[!A-Za-z0-9/._-]*) fail \"SLUICE_ROOT or SLUICE_BIN holds a byte "
	"outside [A-Za-z0-9/._-]\" ;; esac\n"
	"[ -n \"$SANDBOX_USER\" ] || fail \"no sandbox user (Lima sets LIMA_CIDATA_USER)\"\n"
	"id -u \"$SANDBOX_USER\" >/dev/null 2>&1 || fail \"sandbox user $SANDBOX_USER: no such user\"\n"
	"for b in sluice sluice-forward; do\n"
	"\t[ -x \"$BIN/$b\" ] || fail \"$BIN/$b is missing: install sluice in the guest\"\n"
	"\troot_only \"$BIN/$b\" 022 || fail \"$BIN/$b: not root's, or others may write it\"\n"
	"done\n"
	"{ [ -f \"$KEY\" ] && root_only \"$KEY\" 077; } ||\n"
	"\tfail \"$KEY: missing, not root's, or others may read it: copy the host's STATE/stamp.key "
	"there (0600)\"\n"
	"ID=$(sha256sum <\"$0\") || fail \"cannot read this script ($0) to hash it\"\n"
	"ID=${ID%% *}\n"
	"\n"
	"umask 022\n"
	"mkdir -p \"$STATE\"\n"
	"chmod 0755 \"$STATE\"\n"
	"# no record of this boot until everything below held\n"
	"rm -f \"$STATE/provision\"\n"
	"stop_forwarder\n"
	"printf '# written by the sluice boot script: where `sluice wall` records\\nstate %s\\n' "
	"\"$STATE\" >\"$STATE/sluice.conf\"\n";

static const char script_walls[] =
	"\n"
	"sl wall apply sandbox --user \"$SANDBOX_USER\" --subuid \"$ETC/subuid\" --gateway \"$GATEWAY\" \\\n"
	"\t--resolver \"$RESOLVER\" --forwarder \"$BRIDGE_LISTEN\" --port-base \"$PORT_BASE\" \\\n"
	"\t--i-mean-this-host || fail \"the sandbox wall did not apply\"\n"
	"sl wall apply guard --gateway \"$GATEWAY\" --mark \"$MARK\" --port-base \"$PORT_BASE\" \\\n"
	"\t--i-mean-this-host || fail \"the guard wall did not apply\"\n";

static const char script_env[] =
	"\n"
	"PROXY=http://$OWN_LISTEN\n"
	"NO=localhost,127.0.0.1,::1,$GATEWAY\n"
	"CA_FILE=$CA_DIR/sluice-ca.crt\n"
	"mkdir -p \"$ETC/environment.d\" \"$ETC/profile.d\"\n"
	"env_lines >\"$ETC/environment.d/90-sluice-proxy.conf\"\n"
	"env_lines | sed 's/^/export /' >\"$ETC/profile.d/90-sluice-proxy.sh\"\n"
	"\n"
	"# one fixed name, so a new CA replaces the old one in the trust store\n"
	"mkdir -p \"$CA_DIR\" \"$ETC/ssl/certs\"\n"
	"cat >\"$CA_FILE\" <<'SLUICE_CA'\n";

static const char script_trust[] =
	"SLUICE_CA\n"
	"update-ca-certificates --localcertsdir \"$CA_DIR\" --etccertsdir \"$ETC/ssl/certs\" \\\n"
	"\t--certsconf \"$ETC/ca-certificates.conf\" --hooksdir \"$ETC/ca-certificates/update.d\" \\\n"
	"\t>/dev/null || fail \"update-ca-certificates failed\"\n"
	"grep -qF \"$(sed -n 2p \"$CA_FILE\")\" \"$CA_BUNDLE\" || fail \"$CA_BUNDLE lacks the sluice CA\"\n"
	"\n"
	"mkdir -p \"$ETC/containers/containers.conf.d\"\n"
	"containers_conf >\"$ETC/containers/containers.conf.d/90-sluice-proxy.conf\"\n";

static const char script_dns[] =
	"\n"
	"# every name the guest looks up goes to sluice-dns: systemd-resolved's only upstream\n"
	"# when it runs (its stub and nss-resolve ask it), else resolv.conf's nameserver\n"
	"mkdir -p \"$ETC/systemd/resolved.conf.d\"\n"
	"printf '# written by the sluice boot script: names only through sluice-dns\\n[Resolve]\\n"
	"DNS=%s\\nDomains=~.\\nLLMNR=no\\nMulticastDNS=no\\n' \"$RESOLVER\" \\\n"
	"\t>\"$ETC/systemd/resolved.conf.d/90-sluice.conf\"\n"
	"if use_systemd && systemctl -q is-active systemd-resolved.service 2>/dev/null; then\n"
	"\tsystemctl restart systemd-resolved.service || fail \"systemd-resolved did not restart\"\n"
	"\tDNS_VIA=systemd-resolved\n"
	"else\n"
	"\t# a link into resolved's files, which nothing updates while it is stopped\n"
	"\trm -f \"$ETC/resolv.conf\"\n"
	"\tprintf '# written by the sluice boot script\\nnameserver %s\\n' \"$RESOLVER\" "
	">\"$ETC/resolv.conf\"\n"
	"\tDNS_VIA=resolv.conf\n"
	"fi\n";

static const char script_forward[] =
	"\n"
	"# --wait below would take another program's listener for the forwarder's\n"
	"\"$BIN/sluice-forward\" --wait /proc/self/ns/net \"$OWN_LISTEN\" --timeout 0.05 2>/dev/null &&\n"
	"\tfail \"another program listens on $OWN_LISTEN, where the forwarder would\"\n"
	"set -- --key \"$KEY\" --net podman --mark \"$MARK\" \\\n"
	"\t--own \"$OWN_LISTEN=$GATEWAY:$PROXY_PORT\" \"$BRIDGE_LISTEN=$GATEWAY:$PROXY_PORT\"\n"
	"if use_systemd; then\n"
	"\tsystemd-run --quiet --unit=sluice-forward --property=Restart=on-failure \\\n"
	"\t\t\"$BIN/sluice-forward\" \"$@\" || fail \"systemd-run sluice-forward failed\"\n"
	"\tFORWARDER=\"unit sluice-forward.service\"\n"
	"else\n"
	"\t\"$BIN/sluice-forward\" \"$@\" </dev/null >>\"$STATE/forward.log\" 2>&1 &\n"
	"\techo $! >\"$STATE/forward.pid\"\n"
	"\tFORWARDER=\"pid $!\"\n"
	"fi\n"
	"{ \"$BIN/sluice-forward\" --wait /proc/self/ns/net \"$OWN_LISTEN\" --timeout 10 && forwarder_runs; } || {\n"
	"\tstop_forwarder\n"
	"\tfail \"sluice-forward is not listening on $OWN_LISTEN\"\n"
	"}\n";

static const char script_record[] =
	"\n"
	"{\n"
	"\techo \"sluice-provision 1\"\n"
	"\techo \"id $ID\"\n"
	"\techo \"port-base $PORT_BASE\"\n"
	"\techo \"gateway $GATEWAY\"\n"
	"\techo \"wall $SANDBOX_TABLE\"\n"
	"\techo \"wall $GUARD_TABLE\"\n"
	"\techo \"forwarder $OWN_LISTEN $BRIDGE_LISTEN\"\n"
	"\techo \"dns $RESOLVER $DNS_VIA\"\n"
	"\techo \"$FORWARDER\"\n"
	"\techo \"sandbox-user $SANDBOX_USER\"\n"
	"\techo \"applied $(date -u +%Y-%m-%dT%H:%M:%SZ)\"\n"
	"\techo \"project $PROJECT\"\n"
	"} >\"$STATE/provision.tmp\"\n"
	"chmod 0644 \"$STATE/provision.tmp\"\n"
	"mv -f \"$STATE/provision.tmp\" \"$STATE/provision\"\n"
	"say \"applied, provision id $ID\"\n";

static void put_script_head(struct out *o, const struct units_params *p)
{
	put(o, "#!/bin/sh\n");
	put_head(o, p, UNITS_SCRIPT, "# ");
	put(o, "#\n"
	       "# The boot script of the project's Lima VM: Lima runs it as root at every boot\n"
	       "# (provision mode: system). Its SHA-256 is the provision id it records; editing it\n"
	       "# changes the id, which `sluice doctor` then reports.\n"
	       "#\n"
	       "# In order, stopping at the first step that fails, so sluice-forward runs only once\n"
	       "# both walls hold: check the binaries and the stamp key; forget the last record and\n"
	       "# stop the forwarder; apply the sandbox and guard walls; write the proxy\n"
	       "# environment, the CA into the trust store and the containers drop-in; point the\n"
	       "# guest's resolver at sluice-dns; start\n"
	       "# sluice-forward and wait until it listens; then record what it applied in\n"
	       "# $STATE/provision (0644), last. A missing record means: not applied.\n"
	       "set -eu\n");
	put(o, "\n"
	       "# Where it writes and what it runs: the guest's real paths, unless a test points\n"
	       "# SLUICE_ROOT at a scratch root, SLUICE_BIN at a build, and SLUICE_LAUNCH at direct\n"
	       "# (auto: systemd-run when systemd runs the guest, else a child of this script).\n"
	       "ROOT=${SLUICE_ROOT-}\n"
	       "BIN=${SLUICE_BIN:-/usr/local/bin}\n"
	       "LAUNCH=${SLUICE_LAUNCH:-auto}\n"
	       "ETC=$ROOT/etc\n"
	       "STATE=$ROOT/run/sluice/state\n"
	       "CA_DIR=$ROOT/usr/local/share/ca-certificates\n"
	       "CA_BUNDLE=$ETC/ssl/certs/ca-certificates.crt\n"
	       "KEY=$ETC/sluice/stamp.key\n"
	       "SANDBOX_USER=${LIMA_CIDATA_USER:-}\n");
}

static void put_script_values(struct out *o, const struct units_params *p)
{
	struct wall_params w = { .port_base = p->port_base };
	char sandbox[80], guard[80];

	w.profile = WALL_SANDBOX;
	wall_table_name(&w, sandbox, sizeof(sandbox));
	w.profile = WALL_GUARD;
	wall_table_name(&w, guard, sizeof(guard));
	put(o, "\n# What it applies: the host's band, proxy and CA when `sluice install` ran.\n");
	put(o, "PROJECT=");
	put_sh_quoted(o, p->project);
	put(o, "\nPORT_BASE=%u\n", p->port_base);
	put(o, "GATEWAY=%s        # the host, as Lima's network shows it\n", p->gateway);
	put(o, "RESOLVER=$GATEWAY          # sluice-dns, on the host's 127.0.0.1:53\n");
	put(o, "PROXY_PORT=%u\n", p->proxy_port);
	put(o, "OWN_LISTEN=127.0.0.1:%u   # the guest's own processes, stamped by cgroup\n",
	    p->proxy_port);
	put(o, "BRIDGE_LISTEN=10.88.0.1:%u # podman's bridge, stamped by address\n", p->proxy_port);
	put(o, "MARK=0x%08x             # SO_MARK of the forwarder's upstream sockets\n",
	    wall_ct_mark(p->port_base));
	put(o, "SANDBOX_TABLE=%s\nGUARD_TABLE=%s\n\n", sandbox, guard);
}

/* env_lines and containers_conf: the proxy environment, for sessions and for containers. */
static void put_script_env_funcs(struct out *o, const struct units_params *p)
{
	put(o, "# NAME=VALUE lines: the proxy in both cases, then the CA variables `sluice ca show`\n"
	       "# prints, naming the guest's own bundle (which update-ca-certificates makes)\n"
	       "env_lines() {\n");
	for (size_t i = 0; i < sizeof(proxy_vars) / sizeof(proxy_vars[0]); i++)
		put(o, "\techo \"%s=$PROXY\"\n", proxy_vars[i]);
	put(o, "\techo \"NO_PROXY=$NO\"\n\techo \"no_proxy=$NO\"\n");
	for (size_t i = 0; i < NCA_VARS; i++)
		put(o, "\techo \"%s=%s\"\n", ca_vars[i].name, ca_vars[i].bundle ? "$CA_BUNDLE" : "$CA_FILE");
	put(o, "}\n");
	put(o, "# every container: the forwarder at the host's name in podman, the bundle mounted\n"
	       "containers_conf() {\n"
	       "\techo \"# written by the sluice boot script: containers reach the proxy through the "
	       "forwarder\"\n"
	       "\techo \"[containers]\"\n"
	       "\techo \"http_proxy = false\"\n"
	       "\techo \"env = [\"\n");
	for (size_t i = 0; i < sizeof(proxy_vars) / sizeof(proxy_vars[0]); i++)
		put(o, "\techo \"  \\\"%s=http://host.containers.internal:$PROXY_PORT\\\",\"\n",
		    proxy_vars[i]);
	put(o, "\techo \"  \\\"NO_PROXY=localhost,127.0.0.1,::1\\\",\"\n"
	       "\techo \"  \\\"no_proxy=localhost,127.0.0.1,::1\\\",\"\n");
	for (size_t i = 0; i < NCA_VARS; i++)
		put(o, "\techo \"  \\\"%s=/etc/sluice/%s\\\",\"\n", ca_vars[i].name,
		    ca_vars[i].bundle ? "ca-bundle.crt" : "ca.crt");
	put(o, "\techo \"]\"\n"
	       "\techo \"volumes = [\"\n"
	       "\techo \"  \\\"$CA_BUNDLE:/etc/sluice/ca-bundle.crt:ro\\\",\"\n"
	       "\techo \"  \\\"$CA_FILE:/etc/sluice/ca.crt:ro\\\",\"\n"
	       "\techo \"]\"\n"
	       "}\n");
	(void)p;
}

static void put_script(struct out *o, const struct units_params *p)
{
	put_script_head(o, p);
	put_script_values(o, p);
	put_text(o, script_lib, sizeof(script_lib) - 1);
	put_script_env_funcs(o, p);
	put(o, "\n");
	put_text(o, script_checks, sizeof(script_checks) - 1);
	put_text(o, script_walls, sizeof(script_walls) - 1);
	put_text(o, script_env, sizeof(script_env) - 1);
	put_text(o, p->ca_pem, strlen(p->ca_pem));
	put_text(o, script_trust, sizeof(script_trust) - 1);
	put_text(o, script_dns, sizeof(script_dns) - 1);
	put_text(o, script_forward, sizeof(script_forward) - 1);
	put_text(o, script_record, sizeof(script_record) - 1);
}

/* The lima.yaml entry: the script as a literal block, its id in a comment above. */
static void put_yaml(struct out *o, const struct units_params *p)
{
	struct buf script;
	struct out so = { .b = &script };
	char id[UNITS_ID_HEX + 1];
	const char *s, *end;

	buf_init(&script, UNITS_TEXT_MAX);
	put_script(&so, p);
	if (so.over) {
		o->over = true;
		buf_release(&script);
		return;
	}
	units_provision_id(buf_head(&script), buf_len(&script), id);
	put(o, "# sluice-provision %s\n", id);
	put_head(o, p, UNITS_YAML, "# ");
	put(o, "# The first line is the id (the SHA-256 of the script below) the guest records in\n"
	       "# /run/sluice/state/provision at each boot. Add the entry below to instance %s's\n"
	       "# `provision:` list (limactl edit %s, the VM stopped), then start it.\n",
	    p->vm_name, p->vm_name);
	put(o, "provision:\n- mode: system\n  script: |\n");
	s = buf_head(&script);
	end = s + buf_len(&script);
	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		size_t n = nl != NULL ? (size_t)(nl - s) : (size_t)(end - s);

		if (n > 0)
			put(o, "    ");
		put_text(o, s, n);
		put(o, "\n");
		s += n + 1;
	}
	buf_release(&script);
}

static void put_proxy(struct out *o, const struct units_params *p)
{
	put_daemon(o, p, true);
}

static void put_dns(struct out *o, const struct units_params *p)
{
	put_daemon(o, p, false);
}

static void (*const renderers[UNITS_NFILES])(struct out *o, const struct units_params *p) = {
	[UNITS_PROXY] = put_proxy,
	[UNITS_DNS] = put_dns,
	[UNITS_WALL] = put_wall,
	[UNITS_WALL_EGRESS] = put_wall_egress,
	[UNITS_WALL_HOST] = put_wall_host,
	[UNITS_LIMA] = put_lima,
	[UNITS_SCRIPT] = put_script,
	[UNITS_YAML] = put_yaml,
};

int units_render(const struct units_params *p, enum units_file f, struct buf *b,
		 const char **err)
{
	struct out o = { .b = b };

	if (params_check(p, err) == -1)
		return -1;
	if (!units_file_wanted(p, f)) {
		*err = "that file is not rendered without a VM";
		return -1;
	}
	renderers[f](&o, p);
	if (o.over) {
		*err = "the file is longer than the buffer";
		return -1;
	}
	return 0;
}
