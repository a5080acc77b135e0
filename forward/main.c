/*
 * main.c: sluice-forward, the stamping forwarder.
 *
 * Reads like a script: arguments, key, listeners (inside --netns when
 * given, so a sandbox's containers reach it at their own gateway while its
 * upstream connections leave from this namespace; --own ones here, each
 * connection attributed by its client's cgroup, where the engine makes
 * them: --engine-cgroup, --engine-uid, --engine-state; --dns relays, UDP
 * and TCP, beside the LISTEN=UPSTREAM ones), signals, the loop. --key and
 * --net are needed only with a stamping listener; with --dns, given both,
 * every relayed query is tagged (lib/dnstag.h), and `--dns` alone takes
 * neither and relays as it came (given, the key is still read, and on SIGHUP).
 * SIGHUP re-reads the key file (after `sluice key rotate`); SIGINT and
 * SIGTERM stop it. Once listening it keeps only the capabilities its
 * options still use (drop_caps) and sets no_new_privs; it stays uid 0,
 * which reads the root-only key file on SIGHUP. `--wait` is a separate mode
 * (wait.c): no key, no loop.
 */
#include <arpa/inet.h>
#include <cap-ng.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "cgpath.h"
#include "digits.h"
#include "file.h"
#include "forward.h"
#include "hex.h"
#include "signals.h"
#include "sockaddr.h"
#include "sockdiag.h"

static const char *key_path;
static struct loop_io sig_io = { .fd = -1 };

static void usage(void)
{
	fprintf(stderr,
		"usage: sluice-forward --key FILE --net NAME [--netns PATH] [--own LISTEN=UPSTREAM]...\n"
		"                      [--engine-cgroup PATH]... [--engine-uid N] [--engine-state FILE]\n"
		"                      [--dns LISTEN=UPSTREAM]... [--src ADDR] [--as PRINCIPAL]\n"
		"                      [--mark N] [--trace] [--transparent LISTEN=UPSTREAM]\n"
		"                      [LISTEN=UPSTREAM]...\n"
		"       sluice-forward [--netns PATH] --dns LISTEN=UPSTREAM... [--mark N] [--trace]\n"
		"       sluice-forward --wait NETNS_PATH ADDR:PORT [--timeout SECONDS]\n"
		"  LISTEN, UPSTREAM  numeric ADDR:PORT or [V6]:PORT; UPSTREAM also unix:PATH,\n"
		"                    a sluice-proxy `listen unix:PATH` on this host (no TCP hop)\n"
		"  --key FILE        the stamp keys (STATE/stamp.key from `sluice key init`);\n"
		"                    with --net, needed only for LISTEN=UPSTREAM and --own\n"
		"  --net NAME        the network name every stamp (and, with --key, every\n"
		"                    --dns query's tag) carries\n"
		"  --src ADDR        every stamp names ADDR as the client's address, whatever\n"
		"                    address the client bound: everything behind this\n"
		"                    forwarder is one principal (sluice run's sandbox)\n"
		"  --as PRINCIPAL    every stamp of a LISTEN=UPSTREAM listener carries\n"
		"                    as=PRINCIPAL ([A-Za-z0-9._:-], at most %d bytes; one '/'\n"
		"                    in project:NAME/AGENT): sluice run's project:NAME[/AGENT]\n"
		"  --netns PATH      LISTEN=UPSTREAM pairs and --dns listen inside this network\n"
		"                    namespace (e.g. /run/netns/vm), followed when it is re-created\n"
		"  --dns LISTEN=UPSTREAM  a DNS relay: UDP and TCP on LISTEN (a wildcard\n"
		"                    address covers interfaces made later); with --key and --net\n"
		"                    each UDP query and each TCP connection's first carries a\n"
		"                    signed EDNS tag naming --net and the client (sluice-dns\n"
		"                    believes it), else relayed as it came;\n"
		"                    each UDP client on its own socket to UPSTREAM (at most %d at\n"
		"                    once, the least recently used giving way; closed after %d s\n"
		"                    idle), TCP bytes relayed both ways; repeatable, at most %d\n"
		"  --transparent LISTEN=UPSTREAM  a name the --dns relays' answers say\n"
		"                    resolves gets an address of 240.0.0.0/%d instead (the\n"
		"                    namespace routes that range to LISTEN: a nat redirect);\n"
		"                    a connection to one, on any port, goes to UPSTREAM (the\n"
		"                    proxy) as that name: port 80 its HTTP head made\n"
		"                    absolute-form, any other a CONNECT NAME:PORT; at most one\n"
		"  --own LISTEN=UPSTREAM  listen in our own namespace; each client is found by\n"
		"                    its socket's cgroup and stamped as=container:ID, build:SCOPE\n"
		"                    or user (a client not found is reset); repeatable\n"
		"  --engine-cgroup PATH  a cgroup (as in /proc/PID/cgroup: /libpod_parent) the\n"
		"                    engine makes its containers' and builds' cgroups in; only a\n"
		"                    libpod-<id>[.scope] or *buildah-*.scope right below one is\n"
		"                    a container or build, else user; only these subtrees are\n"
		"                    searched for a client's cgroup; repeatable, at most %d\n"
		"                    (default /libpod_parent and /machine.slice: rootful podman)\n"
		"  --engine-uid N    the uid the engine runs as (default 0): it owns PATH and\n"
		"                    those cgroups, and above PATH only it or root owns any\n"
		"  --engine-state FILE  the engine snapshots (`sluice engine`): a container is\n"
		"                    one only while the latest snapshot of --net lists its id\n"
		"                    (default engine.jsonl beside --key; none there: no container)\n"
		"  --mark N          SO_MARK N (decimal or 0x hex) on every upstream socket\n"
		"  --trace           each connection's state transitions and deadlines on stderr\n"
		"  --wait            exit 0 once a TCP socket listens on ADDR:PORT (or the\n"
		"                    wildcard address and PORT) in the namespace at NETNS_PATH,\n"
		"                    which may not exist yet; 1 after --timeout (default 10,\n"
		"                    at most 120). Connects to nothing; usable as an OCI\n"
		"                    prestart hook (the state on stdin is ignored)\n"
		"exit: 0 stopped by a signal (--wait: listening), 1 could not start or failed\n"
		"      (--wait: timed out), 2 usage\n",
		STAMP_AS_MAX, FWD_DNS_FLOWS_MAX, FWD_DNS_IDLE_MS / 1000, FWD_DNS_MAX, FAKE_PREFIX,
		FWD_ENGINE_CGROUPS_MAX);
}

/* Load the current key (the one without expiry). Returns 0 or -1 after printing. */
static int load_key(struct forwarder *fw)
{
	struct stamp_key keys[STAMP_KEYS_MAX];
	size_t len = 0, n = 0, line = 0;
	const char *err = NULL;
	char *buf;
	int ret = -1;

	if (file_read(key_path, 8192, &buf, &len) == -1) {
		fprintf(stderr, "sluice-forward: key %s: %s\n", key_path, strerror(errno));
		return -1;
	}
	if (stamp_keys_parse(buf, len, keys, STAMP_KEYS_MAX, &n, &line, &err) == -1) {
		fprintf(stderr, "sluice-forward: key %s:%zu: %s\n", key_path, line, err);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		if (keys[i].expires == 0) {
			fw->key = keys[i];
			ret = 0;
		}
	}
	if (ret == -1)
		fprintf(stderr, "sluice-forward: key %s: no current key\n", key_path);
out:
	explicit_bzero(buf, len);
	free(buf);
	explicit_bzero(keys, sizeof(keys));
	return ret;
}

/*
 * "LISTEN=UPSTREAM" into a new listener of kind (pair is left as it was).
 * Returns 0, or -1 after printing.
 */
static int add_pair(struct forwarder *fw, char *pair, enum fwd_kind kind, bool own)
{
	struct fwd_listener *ln;
	char *eq = strchr(pair, '=');
	bool ok = false;

	if (fw->nlisteners == FWD_LISTEN_MAX) {
		fprintf(stderr, "sluice-forward: at most %d listeners\n", FWD_LISTEN_MAX);
		return -1;
	}
	ln = &fw->listeners[fw->nlisteners];
	ln->fw = fw;
	ln->io.fd = -1;
	ln->kind = kind;
	ln->own = own;
	if (eq != NULL) {
		*eq = '\0';
		/* a relay's upstream is an address: DNS has no unix:PATH hop */
		ok = sockaddr_parse(pair, 0, 0, &ln->addr) == 0 &&
		     sockaddr_parse(eq + 1,
				    kind == FWD_STAMP || kind == FWD_TRANSPARENT ? SOCKADDR_UNIX : 0, 0,
				    &ln->upstream) == 0;
		*eq = '=';
	}
	if (ok) {
		fw->nlisteners++;
		return 0;
	}
	fprintf(stderr, "sluice-forward: bad %sLISTEN=UPSTREAM \"%s\"\n",
		kind == FWD_STAMP ? "" : kind == FWD_TRANSPARENT ? "--transparent " : "--dns ", pair);
	return -1;
}

/* --dns LISTEN=UPSTREAM: its TCP listener and its UDP socket. Returns 0, or -1 after printing. */
static int add_dns(struct forwarder *fw, char *pair, size_t *ndns)
{
	if (*ndns == FWD_DNS_MAX) {
		fprintf(stderr, "sluice-forward: at most %d --dns\n", FWD_DNS_MAX);
		return -1;
	}
	if (add_pair(fw, pair, FWD_DNS_TCP, false) == -1 ||
	    add_pair(fw, pair, FWD_DNS_UDP, false) == -1)
		return -1;
	(*ndns)++;
	return 0;
}

/* --mark: decimal or 0x hex, at most ten digits after any 0x, nonzero, 32 bits. Returns 0 or -1. */
static int parse_mark(const char *s, uint32_t *mark)
{
	bool hex = s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
	const char *d = hex ? s + 2 : s;
	size_t n = strlen(d);
	uint64_t v;

	if (n > 10 || digits_parse(d, n, hex ? 16 : 10, UINT32_MAX, &v) == -1 || v == 0)
		return -1;
	*mark = (uint32_t)v;
	return 0;
}

/* --src: an address, into its canonical text (as a stamp's src must be). Returns 0 or -1. */
static int parse_src(const char *s, char *out, size_t size)
{
	struct sockaddr_storage ss;
	const void *a;

	if (sockaddr_parse(s, SOCKADDR_NO_PORT, 1, &ss) == -1 ||
	    (ss.ss_family != AF_INET && ss.ss_family != AF_INET6))
		return -1;
	a = ss.ss_family == AF_INET
		    ? (const void *)&((const struct sockaddr_in *)(const void *)&ss)->sin_addr
		    : (const void *)&((const struct sockaddr_in6 *)(const void *)&ss)->sin6_addr;
	return inet_ntop(ss.ss_family, a, out, (socklen_t)size) == NULL ? -1 : 0;
}

/*
 * Our own source address toward a loopback upstream, from the boot id's
 * random bytes: 127.A.B.C with A and C in 1..254, so never 127.0.x.x (the
 * host's own clients) and never a broadcast. The proxy counts connections
 * by it before their stamp is read, one forwarder apart from another.
 */
static void dial_from_init(struct forwarder *fw, const unsigned char raw[8])
{
	struct sockaddr_in *in = (struct sockaddr_in *)(void *)&fw->dial_from;

	memset(&fw->dial_from, 0, sizeof(fw->dial_from));
	in->sin_family = AF_INET;
	in->sin_addr.s_addr = htonl(127u << 24 | (1u + raw[0] % 254u) << 16 | (unsigned)raw[1] << 8 |
				    (1u + raw[2] % 254u));
}

/* --engine-uid: decimal, at most ten digits, below (uid_t)-1. Returns 0 or -1. */
static int parse_uid(const char *s, uid_t *uid)
{
	size_t n = strlen(s);
	uint64_t v;

	if (n > 10 || dec_parse(s, n, UINT32_MAX - 1, &v) == -1)
		return -1;
	*uid = (uid_t)v;
	return 0;
}

/* --engine-state's default: engine.jsonl in --key's directory. Returns 0 or -1. */
static int engine_state_default(char *out, size_t size)
{
	const char *slash = strrchr(key_path, '/');
	int n = slash == NULL ? snprintf(out, size, "engine.jsonl")
			      : snprintf(out, size, "%.*s/engine.jsonl", (int)(slash - key_path),
					 key_path);

	return n < 0 || (size_t)n >= size ? -1 : 0;
}

static void on_signal(struct loop *l, struct loop_io *io, uint32_t events)
{
	struct forwarder *fw = io->arg;
	struct signalfd_siginfo si;

	while (read(io->fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGHUP) {
			if (key_path != NULL && load_key(fw) == 0)
				fprintf(stderr, "sluice-forward: key %u is current\n", fw->key.kid);
		} else {
			loop_stop(l);
		}
	}
}

/*
 * Keep only what the running forwarder still needs, in every set and the
 * bounding set: CAP_SYS_ADMIN to setns into a re-created --netns (and
 * CAP_NET_BIND_SERVICE when a listener there has a port below 1024, a
 * --dns on 53 say), and CAP_NET_ADMIN for --mark's SO_MARK on each upstream
 * socket (--dns ones too). sock_diag lookups of sockets in our own
 * namespace, reading the cgroup2 tree and the --dns relay's sockets in our
 * own namespace need none. Returns 0 or -1 after printing (the forwarder
 * must not run).
 */
static int drop_caps(const struct forwarder *fw)
{
	bool low_port = false;

	for (size_t i = 0; i < fw->nlisteners; i++) {
		const struct sockaddr_storage *a = &fw->listeners[i].addr;
		uint16_t port = a->ss_family == AF_INET
					? ntohs(((const struct sockaddr_in *)(const void *)a)->sin_port)
					: ntohs(((const struct sockaddr_in6 *)(const void *)a)->sin6_port);

		if (!fw->listeners[i].own && port < 1024)
			low_port = true;
	}
	capng_clear(CAPNG_SELECT_BOTH);
	if (fw->netns != NULL)
		capng_update(CAPNG_ADD, CAPNG_EFFECTIVE | CAPNG_PERMITTED | CAPNG_BOUNDING_SET,
			     CAP_SYS_ADMIN);
	if (fw->netns != NULL && low_port)
		capng_update(CAPNG_ADD, CAPNG_EFFECTIVE | CAPNG_PERMITTED | CAPNG_BOUNDING_SET,
			     CAP_NET_BIND_SERVICE);
	if (fw->mark != 0)
		capng_update(CAPNG_ADD, CAPNG_EFFECTIVE | CAPNG_PERMITTED | CAPNG_BOUNDING_SET,
			     CAP_NET_ADMIN);
	/* the bounding set first: dropping from it needs CAP_SETPCAP, which goes next */
	if (capng_apply(CAPNG_SELECT_BOUNDS) != 0 || capng_apply(CAPNG_SELECT_CAPS) != 0 ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1) {
		fprintf(stderr, "sluice-forward: cannot drop capabilities: %s\n", strerror(errno));
		return -1;
	}
	/* what the kernel holds now must be exactly that */
	capng_clear(CAPNG_SELECT_BOTH);
	if (capng_get_caps_process() != 0 ||
	    capng_have_capability(CAPNG_EFFECTIVE, CAP_SYS_ADMIN) != (fw->netns != NULL) ||
	    capng_have_capability(CAPNG_EFFECTIVE, CAP_NET_ADMIN) != (fw->mark != 0) ||
	    capng_have_capability(CAPNG_EFFECTIVE, CAP_SETPCAP) ||
	    capng_have_capability(CAPNG_EFFECTIVE, CAP_DAC_OVERRIDE) ||
	    prctl(PR_CAPBSET_READ, CAP_SETUID, 0, 0, 0) != 0) {
		fprintf(stderr, "sluice-forward: capabilities not dropped as asked; stopping\n");
		return -1;
	}
	return 0;
}

static void before_sleep(struct loop *l, void *arg)
{
	conn_free_dead(arg);
}

/* What the options ask for beyond the forwarder's own fields. */
struct fwd_args {
	const char *net;          /* --net, checked and copied into fw->net */
	const char *engine_state; /* --engine-state, NULL: the default (with --key) */
	size_t nown, ndns, ntransparent;
};

/* One option (getopt_long's opt, its optarg) into fw and a. Returns 0, or 2 after printing. */
static int option_read(struct forwarder *fw, struct fwd_args *a, int opt, char *arg)
{
	switch (opt) {
	case 'k': key_path = arg; return 0;
	case 'T': fw->trace = true; return 0;
	case 'n': a->net = arg; return 0;
	case 'S':
		if (parse_src(arg, fw->src, sizeof(fw->src)) == -1) {
			fprintf(stderr, "sluice-forward: bad --src \"%s\" (an IPv4 or IPv6 "
					"address)\n", arg);
			return 2;
		}
		return 0;
	case 'A':
		if (strlen(arg) > STAMP_AS_MAX || !stamp_as_valid(arg)) {
			fprintf(stderr, "sluice-forward: bad --as \"%s\" (1-%d bytes of "
					"[A-Za-z0-9._:-], one '/' in project:NAME/AGENT)\n",
				arg, STAMP_AS_MAX);
			return 2;
		}
		snprintf(fw->as, sizeof(fw->as), "%s", arg);
		return 0;
	case 's': fw->netns = arg; return 0;
	case 'o':
		if (add_pair(fw, arg, FWD_STAMP, true) == -1)
			return 2;
		a->nown++;
		return 0;
	case 'm':
		if (parse_mark(arg, &fw->mark) == -1) {
			fprintf(stderr, "sluice-forward: bad --mark \"%s\"\n", arg);
			return 2;
		}
		return 0;
	case 'c':
		if (!cgpath_parent_valid(arg) ||
		    fw->cgroups.nparents == FWD_ENGINE_CGROUPS_MAX) {
			fprintf(stderr, "sluice-forward: bad --engine-cgroup \"%s\" (an absolute "
					"cgroup path, at most %d)\n",
				arg, FWD_ENGINE_CGROUPS_MAX);
			return 2;
		}
		fw->cgroups.parents[fw->cgroups.nparents++] = arg;
		return 0;
	case 'u':
		if (parse_uid(arg, &fw->cgroups.engine_uid) == -1) {
			fprintf(stderr, "sluice-forward: bad --engine-uid \"%s\"\n", arg);
			return 2;
		}
		return 0;
	case 'e': a->engine_state = arg; return 0;
	case 'd':
		return add_dns(fw, arg, &a->ndns) == -1 ? 2 : 0;
	case 't':
		if (a->ntransparent++ == 1) {
			fprintf(stderr, "sluice-forward: at most one --transparent\n");
			return 2;
		}
		return add_pair(fw, arg, FWD_TRANSPARENT, false) == -1 ? 2 : 0;
	default: usage(); return 2;
	}
}

/*
 * What the options read mean together: a stamp needs the key and the net
 * (a --dns relay stamps nothing), the default engine cgroups and state,
 * the LISTEN=UPSTREAM arguments. Returns 0, or 2 after printing.
 */
static int args_finish(struct forwarder *fw, const struct fwd_args *a, int argc, char **argv)
{
	static const char *const default_parents[] = { "/libpod_parent", "/machine.slice" };
	bool stamping = optind < argc || a->nown > 0 || a->ntransparent > 0;

	if ((!stamping && a->ndns == 0) || (stamping && (key_path == NULL || a->net == NULL)) ||
	    (a->net != NULL && strlen(a->net) > STAMP_NET_MAX)) {
		usage();
		return 2;
	}
	if (a->net != NULL)
		snprintf(fw->net, sizeof(fw->net), "%s", a->net);
	fw->dns_tag = a->ndns > 0 && key_path != NULL && a->net != NULL;
	if (fw->cgroups.nparents == 0) {
		for (size_t i = 0; i < sizeof(default_parents) / sizeof(default_parents[0]); i++)
			fw->cgroups.parents[fw->cgroups.nparents++] = default_parents[i];
	}
	/* without --key (--dns alone: no --own either) there is no default to make */
	if (a->engine_state != NULL ? snprintf(fw->cgroups.engine.path, sizeof(fw->cgroups.engine.path),
					       "%s", a->engine_state) >= (int)sizeof(fw->cgroups.engine.path)
				    : key_path != NULL &&
					      engine_state_default(fw->cgroups.engine.path,
								   sizeof(fw->cgroups.engine.path)) == -1) {
		fprintf(stderr, "sluice-forward: --engine-state: path too long\n");
		return 2;
	}
	for (int i = optind; i < argc; i++)
		if (add_pair(fw, argv[i], FWD_STAMP, false) == -1)
			return 2;
	return 0;
}

/* The arguments into fw and a. Returns 0, or 2 after printing. */
static int args_parse(int argc, char **argv, struct forwarder *fw, struct fwd_args *a)
{
	static const struct option opts[] = {
		{ "key", required_argument, NULL, 'k' },
		{ "net", required_argument, NULL, 'n' },
		{ "src", required_argument, NULL, 'S' },
		{ "as", required_argument, NULL, 'A' },
		{ "netns", required_argument, NULL, 's' },
		{ "own", required_argument, NULL, 'o' },
		{ "mark", required_argument, NULL, 'm' },
		{ "trace", no_argument, NULL, 'T' },
		{ "engine-cgroup", required_argument, NULL, 'c' },
		{ "engine-uid", required_argument, NULL, 'u' },
		{ "engine-state", required_argument, NULL, 'e' },
		{ "dns", required_argument, NULL, 'd' },
		{ "transparent", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int opt;

	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		if (option_read(fw, a, opt, optarg) != 0)
			return 2;
	}
	return args_finish(fw, a, argc, argv);
}

/* The boot id (16 hex digits, random) and the loopback source it picks. Returns 0 or -1. */
static int boot_init(struct forwarder *fw)
{
	unsigned char raw[8];

	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		return -1;
	hex_encode(raw, sizeof(raw), fw->boot);
	dial_from_init(fw, raw);
	return 0;
}

/* --own: the socket table and cgroup2 of our own namespace, asked inline. Returns 0 or -1 after printing. */
static int own_start(struct forwarder *fw)
{
	const char *err = NULL;

	fw->diag = sockdiag_open();
	if (fw->diag == -1) {
		fprintf(stderr, "sluice-forward: sock_diag: %s\n", strerror(errno));
		return -1;
	}
	if (cgroup_map_init(&fw->cgroups, &err) == -1) {
		fprintf(stderr, "sluice-forward: --own: %s\n", err);
		return -1;
	}
	for (size_t i = 0; i < fw->cgroups.nparents; i++)
		fprintf(stderr, "sluice-forward: --own: engine cgroup %s%s, uid %u\n",
			fw->cgroups.root, strcmp(fw->cgroups.parents[i], "/") == 0 ? "" : fw->cgroups.parents[i],
			(unsigned)fw->cgroups.engine_uid);
	fprintf(stderr, "sluice-forward: --own: engine state %s\n", fw->cgroups.engine.path);
	return 0;
}

/* SIGHUP, SIGINT and SIGTERM through a signalfd on the loop. Returns 0 or -1. */
static int signals_start(struct forwarder *fw)
{
	int sig_fd = signals_open();

	if (sig_fd == -1)
		return -1;
	if (loop_io_add(fw->loop, &sig_io, sig_fd, EPOLLIN, on_signal, fw) == -1) {
		close(sig_fd);
		return -1;
	}
	return 0;
}

/* The line that says the forwarder runs, and with what. */
static void running_say(const struct forwarder *fw, const struct fwd_args *a)
{
	char from[INET_ADDRSTRLEN] = "?";

	if (key_path != NULL)
		fprintf(stderr, "sluice-forward: running: net %s, boot %s, key %u, %zu listeners "
				"(%zu own), %zu dns relays%s, a loopback upstream dialled from %s\n",
			fw->net, fw->boot, fw->key.kid, fw->nlisteners - 2 * a->ndns, a->nown, a->ndns,
			fw->dns_tag ? " (queries tagged)" : "",
			inet_ntop(AF_INET,
				  &((const struct sockaddr_in *)(const void *)&fw->dial_from)->sin_addr,
				  from, sizeof(from)));
	else
		fprintf(stderr, "sluice-forward: running: no stamping listener, %zu dns relays\n",
			a->ndns);
}

int main(int argc, char **argv)
{
	struct forwarder fw;
	struct fwd_args a;
	int ret = 1;

	if (argc >= 2 && strcmp(argv[1], "--wait") == 0)
		return wait_main(argc - 1, argv + 1);
	memset(&fw, 0, sizeof(fw));
	memset(&a, 0, sizeof(a));
	fw.self_ns = fw.diag = -1;
	if (args_parse(argc, argv, &fw, &a) != 0)
		return 2;
	if (key_path != NULL && load_key(&fw) == -1)
		return 1;
	if (boot_init(&fw) == -1)
		return 1;

	fw.loop = loop_new();
	if (fw.loop == NULL)
		return 1;
	if (a.nown > 0 && own_start(&fw) == -1)
		goto out;
	if ((a.ntransparent > 0 && fake_start(&fw) == -1) || dns_start(&fw) == -1 ||
	    listen_start(&fw) == -1)
		goto out;
	if (signals_start(&fw) == -1)
		goto out;
	loop_set_hook(fw.loop, before_sleep, &fw);
	if (drop_caps(&fw) == -1)
		goto out;
	running_say(&fw, &a);
	ret = loop_run(fw.loop) == 0 && !fw.failed ? 0 : 1;
out:
	explicit_bzero(&fw.key, sizeof(fw.key));
	listen_stop(&fw);
	dns_stop(&fw);
	fake_stop(&fw);
	if (sig_io.fd >= 0)
		loop_io_close(fw.loop, &sig_io);
	if (fw.diag != -1)
		close(fw.diag);
	conn_free_dead(&fw);
	cgroup_map_release(&fw.cgroups);
	loop_free(fw.loop);
	return ret;
}
