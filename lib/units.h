/*
 * units.h: the files `sluice install` renders, as text.
 *
 * units_render() turns a struct units_params into one file: the systemd
 * units that keep the host side up across a reboot (sluice-proxy,
 * sluice-dns, the sluice-wall@ template and its per-profile drop-ins, the
 * Lima VM's unit), and for a Lima sandbox the guest's boot script (a
 * provision `mode: system` script) and the lima.yaml entry that embeds it.
 * Pure: no files, no environment, no clock; the same params give the same
 * bytes (golden files: tests/unit/golden/units-none, units-lima). Gathering
 * the params (the config, the band, the CA) and writing the files is the
 * CLI's (cli/install.c); nothing here installs or runs anything.
 *
 * The boot script's provision id is the SHA-256 (hex) of its bytes: the
 * script computes it of itself when it runs and records it in
 * /run/sluice/state/provision, so `sluice doctor` compares what a guest
 * applied with what renders now.
 */
#ifndef SLUICE_UNITS_H
#define SLUICE_UNITS_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"

enum units_file {
	UNITS_PROXY,       /* sluice-proxy.service */
	UNITS_DNS,         /* sluice-dns.service */
	UNITS_WALL,        /* sluice-wall@.service: instance = profile */
	UNITS_WALL_EGRESS, /* sluice-wall@egress.service.d/sluice.conf: its options */
	UNITS_WALL_HOST,   /* sluice-wall@host.service.d/sluice.conf (lima) */
	UNITS_LIMA,        /* sluice-lima@.service: the VM, instance = Lima instance (lima) */
	UNITS_SCRIPT,      /* lima-provision.sh: the guest's boot script (lima) */
	UNITS_YAML,        /* lima-provision.yaml: the lima.yaml `provision:` entry (lima) */
	UNITS_NFILES,
};

enum units_vm {
	UNITS_VM_NONE,
	UNITS_VM_LIMA,
};

#define UNITS_ID_HEX 64     /* a provision id: SHA-256 in lower-case hex */
#define UNITS_PATHS_MAX 8   /* ReadWritePaths= entries per daemon, resolvers */
#define UNITS_TEXT_MAX (128 * 1024) /* the longest file rendered */
#define UNITS_GATEWAY_LIMA "192.168.5.2" /* Lima's user-mode network: the host's loopback */
#define UNITS_DNS_LIMA_HOST "127.0.0.1" /* where the gateway's port 53 lands: sluice-dns, the VM's only resolver */

/*
 * Everything the files depend on. Paths are absolute and of the bytes
 * [A-Za-z0-9/._+@:-] only, so no unit or shell line needs quoting; names
 * (user, vm_user, vm_name) of [A-Za-z0-9._-]. project may be any printable
 * bytes: it appears in comments and descriptions (sanitised) and quoted in
 * the script.
 */
struct units_params {
	const char *project;  /* the band's project */
	unsigned port_base;   /* the band: port_base .. port_base+199 */
	const char *bindir;   /* where sluice, sluice-proxy, sluice-dns live: PREFIX/bin */
	const char *config;   /* the config file */
	const char *workdir;  /* the daemons' working directory (the config's relative paths) */
	const char *user;     /* the config's `user`: the daemons drop to it; the egress wall's */
	bool proxy_low_port;  /* a proxy listener below 1024: CAP_NET_BIND_SERVICE */
	bool dns_low_port;    /* likewise for sluice-dns (53) */
	bool token_commands;  /* an inject rule runs a command: no MemoryDenyWriteExecute */
	bool home_read_only;  /* a path above is under /home, /root or /run/user */
	bool tmp_paths;       /* a path above is under /tmp or /var/tmp: no PrivateTmp */
	const char *const *proxy_rw; /* ReadWritePaths= of sluice-proxy: STATE, the log's dir */
	size_t nproxy_rw;
	const char *const *dns_rw; /* of sluice-dns: the dns-log's dir */
	size_t ndns_rw;
	const char *state_dir; /* the wall units record into it */
	const char *const *resolvers; /* the egress wall's --resolver (the config's nameservers) */
	size_t nresolvers;

	enum units_vm vm;
	/* lima */
	const char *vm_name;  /* the Lima instance */
	const char *vm_user;  /* who runs limactl (not root) */
	const char *limactl;  /* its path */
	const char *gateway;  /* the host as the guest sees it: UNITS_GATEWAY_LIMA */
	unsigned proxy_port;  /* the proxy listener the guest's forwarder dials, in the band */
	const char *ca_pem;   /* STATE/ca.crt's text: one PEM certificate */
};

/* The file's path in the output directory: "sluice-proxy.service", "lima-provision.sh", ... */
const char *units_file_name(enum units_file f);

/* Whether p renders f (the Lima files only with UNITS_VM_LIMA). */
bool units_file_wanted(const struct units_params *p, enum units_file f);

/* The slice the VM runs in, "sluice-vm-<port_base>.slice", into buf. */
void units_vm_slice(const struct units_params *p, char *buf, size_t size);

/* That slice's cgroup, relative to the cgroup2 mount: "sluice.slice/sluice-vm.slice/...". */
void units_vm_cgroup(const struct units_params *p, char *buf, size_t size);

/*
 * Append file f for p to out (whose max bounds it; UNITS_TEXT_MAX is
 * enough). Returns 0, or -1 with *err (a static string) for params that
 * cannot be rendered safely (a path or name with other bytes, a relative
 * path, a CA that is not one PEM certificate, a proxy port outside the
 * band) or output past out's max.
 */
int units_render(const struct units_params *p, enum units_file f, struct buf *out,
		 const char **err);

/* The provision id of a rendered script: the SHA-256 of text[0..len) in hex, NUL-ended. */
void units_provision_id(const char *text, size_t len, char id[UNITS_ID_HEX + 1]);

#endif
