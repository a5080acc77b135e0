/*
 * wall.c: `sluice wall render|apply|remove|status PROFILE`.
 *
 * render gathers the profile's parameters from the options (and the
 * sandbox user's ranges from /etc/subuid, the egress profile's exceptions
 * from the config's allow-private lines) and prints the nft script
 * lib/wall.c renders; it loads nothing. The port band is --port-base, else
 * --project's band in `sluice ports`' registry, else $SLUICE_PORT_BASE,
 * else the current directory's band; never a default, because a wall on
 * someone else's band is worse than none.
 *
 * apply loads that script as one libnftables batch (the script replaces its
 * own table and touches no other), then lists the table and records both in
 * STATE/wall-TABLE@NS.nft (the script) and STATE/wall-TABLE@NS.live (nft's
 * listing), NS naming the namespace (state_path). remove deletes the
 * profile's table and nothing else; an absent table is "not present", not
 * an error. status lists the table again and compares it with the recorded
 * listing (nft normalises what it is given, so its own listing is the only
 * fair reference): exit 0 when they match, 1 naming the first difference
 * (missing table, a rule missing, changed or added, a cgroup recreated
 * under the rule), and 1 too when the options now render a different script.
 *
 * --netns PATH (e.g. /run/netns/NAME) enters that network namespace before
 * talking to nftables. Without it apply and remove act on this host's own
 * ruleset, and refuse (exit 2) unless --i-mean-this-host says that is meant.
 * --log-group N logs refusals to NFLOG group N (read by `sluice wall
 * denied`) instead of the kernel log, which is silent outside the initial
 * network namespace.
 * Nothing here ever flushes the ruleset.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <nftables/libnftables.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "cli.h"
#include "digits.h"
#include "iprange.h"
#include "file.h"
#include "sockaddr.h"
#include "wall.h"

#define SUBUID_PATH "/etc/subuid"
#define CGROUP2_PATH "/sys/fs/cgroup"
#define SCRIPT_MAX (64 * 1024)

struct opts {
	struct ipnet resolvers[WALL_RANGES_MAX];
	struct ipnet gateways[WALL_RANGES_MAX];
	struct wall_uidrange subuids[WALL_RANGES_MAX];
	struct ipnet allow[WALL_RANGES_MAX]; /* egress: the config's allow-private ranges */
	const char *bridges[WALL_RANGES_MAX];
	const char *user;
	const char *project; /* --project; NULL: the current directory */
	bool port_base_set;  /* --port-base given */
	const char *subuid_path;
	const char *netns;   /* --netns PATH; NULL: this process's namespace */
	bool this_host;      /* --i-mean-this-host */
};

enum wall_verb { VERB_RENDER, VERB_APPLY, VERB_REMOVE, VERB_STATUS };

static const char *const verb_names[] = { "render", "apply", "remove", "status" };

/* One address or range into list[*n]. Returns 0, or -1 after printing why. */
static int net_add(const char *opt, const char *s, struct ipnet *list, size_t *n)
{
	const char *err;

	if (*n == WALL_RANGES_MAX) {
		fprintf(stderr, "wall: more than %d %s\n", WALL_RANGES_MAX, opt);
		return -1;
	}
	if (ipnet_parse(s, strlen(s), &list[*n], &err) == -1) {
		fprintf(stderr, "wall: %s \"%s\": %s\n", opt, s, err);
		return -1;
	}
	(*n)++;
	return 0;
}

/* "10.88.0.1:3128" or "[fd00::1]:3128". Returns 0, or -1 after printing why. */
static int forwarder_parse(const char *s, struct wall_params *p)
{
	struct sockaddr_storage ss;
	struct ipnet *n = &p->forwarder;

	if (sockaddr_parse(s, 0, 0, &ss) == -1) {
		fprintf(stderr, "wall: bad --forwarder \"%s\": want ADDR:PORT or [V6]:PORT\n", s);
		return -1;
	}
	memset(n, 0, sizeof(*n));
	n->family = ss.ss_family;
	if (ss.ss_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)&ss;

		memcpy(n->addr, &in->sin_addr, 4);
		n->prefix = 32;
		p->forwarder_port = ntohs(in->sin_port);
	} else {
		const struct sockaddr_in6 *in6 = (const void *)&ss;

		memcpy(n->addr, &in6->sin6_addr, 16);
		n->prefix = 128;
		p->forwarder_port = ntohs(in6->sin6_port);
	}
	return 0;
}

/* The user's uid and, for the sandbox, its subuid ranges. Returns 0, or -1 after printing why. */
static int user_load(struct opts *o, struct wall_params *p)
{
	struct passwd *pw = getpwnam(o->user);
	unsigned long uid;
	char *text = NULL;
	size_t len;
	const char *err;
	int n;

	if (pw != NULL)
		uid = pw->pw_uid;
	else if (digits_text(o->user, 10, 0, UINT32_MAX - 1, &uid) == -1) {
		fprintf(stderr, "wall: --user \"%s\": no such user\n", o->user);
		return -1;
	}
	if (uid == 0) {
		fprintf(stderr, "wall: --user %s is root: a wall on uid 0 would hold every root process "
				"of this machine (and root can remove it); run the %s as a user of its own\n",
			o->user, p->profile == WALL_EGRESS ? "proxy" : "sandbox");
		return -1;
	}
	if (p->profile == WALL_EGRESS) {
		p->proxy_uid = (uint32_t)uid;
		return 0;
	}
	p->sandbox_uid = (uint32_t)uid;
	if (file_read(o->subuid_path, 1 << 20, &text, &len) == -1) {
		if (errno == ENOENT)
			return 0; /* no subuids: no rootless containers to catch */
		fprintf(stderr, "wall: read %s: ", o->subuid_path);
		cli_put_strerror(stderr, errno);
		fputc('\n', stderr);
		return -1;
	}
	n = wall_subuid_parse(text, len, o->user, (uint32_t)uid, o->subuids, WALL_RANGES_MAX, &err);
	free(text);
	text = NULL;
	if (n == -1) {
		fprintf(stderr, "wall: %s: %s\n", o->subuid_path, err);
		return -1;
	}
	p->subuids = o->subuids;
	p->nsubuids = (size_t)n;
	return 0;
}

/* The egress profile's exceptions: c's allow-private ranges. Returns 0 or -1 after printing. */
static int allow_load(const struct config *c, struct opts *o, struct wall_params *p)
{
	if (c->nexceptions > WALL_RANGES_MAX) {
		fprintf(stderr, "wall: more than %d allow-private ranges\n", WALL_RANGES_MAX);
		return -1;
	}
	for (size_t i = 0; i < c->nexceptions; i++)
		o->allow[i] = c->exceptions[i].net;
	p->allow = o->allow;
	p->nallow = c->nexceptions;
	return 0;
}

/* A number option (opt X, m, p or l; its optarg) into p. Returns 0 or EXIT_USAGE after printing. */
static int number_option(struct opts *o, struct wall_params *p, int opt, const char *arg)
{
	uint64_t v;

	switch (opt) {
	case 'X':
		if (digits_text(arg, 10, 1, 65535, &v) == -1) {
			fprintf(stderr, "wall: bad --transparent \"%s\": a port, 1 to 65535\n",
				arg);
			return EXIT_USAGE;
		}
		p->transparent_port = (unsigned)v;
		return 0;
	case 'm':
		if (digits_text(arg, 0, 1, UINT32_MAX, &v) == -1) {
			fprintf(stderr, "wall: bad --mark \"%s\"\n", arg);
			return EXIT_USAGE;
		}
		p->forwarder_mark = (uint32_t)v;
		return 0;
	case 'p':
		if (digits_text(arg, 10, 1, 65536 - WALL_BAND, &v) == -1) {
			fprintf(stderr, "wall: bad --port-base \"%s\": 1 to %d\n", arg,
				65536 - WALL_BAND);
			return EXIT_USAGE;
		}
		p->port_base = (unsigned)v;
		o->port_base_set = true;
		return 0;
	default: /* 'l' */
		if (digits_text(arg, 10, 0, 65535, &v) == -1) {
			fprintf(stderr, "wall: bad --log-group \"%s\": 0 to 65535\n", arg);
			return EXIT_USAGE;
		}
		p->nflog = true;
		p->nflog_group = (uint16_t)v;
		return 0;
	}
}

/* One option (getopt_long's opt, its optarg) into *o and *p. Returns 0, or the exit status. */
static int option_read(struct opts *o, struct wall_params *p, int opt, const char *arg)
{
	switch (opt) {
	case 'u':
		o->user = arg;
		return 0;
	case 'r':
		return net_add("--resolver", arg, o->resolvers, &p->nresolvers) == -1 ? EXIT_USAGE : 0;
	case 'g':
		return net_add("--gateway", arg, o->gateways, &p->ngateways) == -1 ? EXIT_USAGE : 0;
	case 'b':
		if (p->nbridges == WALL_RANGES_MAX) {
			fprintf(stderr, "wall: more than %d --bridge\n", WALL_RANGES_MAX);
			return EXIT_USAGE;
		}
		o->bridges[p->nbridges++] = arg;
		return 0;
	case 'f':
		return forwarder_parse(arg, p) == -1 ? EXIT_USAGE : 0;
	case 'X':
	case 'm':
	case 'p':
	case 'l':
		return number_option(o, p, opt, arg);
	case 'c':
		p->cgroup = arg;
		return 0;
	case 'P':
		o->project = arg;
		return 0;
	case 's':
		o->subuid_path = arg;
		return 0;
	case 'n':
		o->netns = arg;
		return 0;
	case 'H':
		o->this_host = true;
		return 0;
	case 'h':
		cli_usage(stdout, "wall");
		return EXIT_OK;
	default:
		cli_usage(stderr, "wall");
		return EXIT_USAGE;
	}
}

/* The egress profile's deny list: the proxy's own, the one its resolve-and-check uses. */
static int deny_load(struct wall_params *p, struct ipnet *deny, size_t deny_max)
{
	size_t ndeny = 0;

	while (iprange_deny_list(ndeny) != NULL) {
		if (ndeny == deny_max) {
			fprintf(stderr, "wall: the deny list has more than %zu ranges\n", deny_max);
			return EXIT_ERROR;
		}
		deny[ndeny] = *iprange_deny_list(ndeny);
		ndeny++;
	}
	p->deny = deny;
	p->ndeny = ndeny;
	return 0;
}

/*
 * What the options read into *o and *p mean for verb, once all are read:
 * the profile (the one argument left), where it may apply, the band, the
 * deny list and the user. Returns -1 to go on, else the exit status.
 */
static int args_check(enum wall_verb verb, int argc, char **argv, struct opts *o,
		      struct wall_params *p, struct ipnet *deny, size_t deny_max)
{
	const char *name = verb_names[verb];

	if (optind + 1 != argc || wall_profile_parse(argv[optind], &p->profile) == -1) {
		cli_usage(stderr, "wall");
		return EXIT_USAGE;
	}
	if (verb == VERB_RENDER && (o->netns != NULL || o->this_host)) {
		fprintf(stderr, "wall: render loads nothing: --netns and --i-mean-this-host do not apply\n");
		return EXIT_USAGE;
	}
	if ((verb == VERB_APPLY || verb == VERB_REMOVE) && o->netns == NULL && !o->this_host) {
		fprintf(stderr, "wall: %s without --netns would change this host's ruleset: "
				"refused (add --i-mean-this-host if that is meant)\n", name);
		return EXIT_USAGE;
	}
	if (!o->port_base_set && ports_band_of(o->project, false, &p->port_base) == -1)
		return EXIT_ERROR;
	p->ct_mark = wall_ct_mark(p->port_base);
	if (verb == VERB_REMOVE)
		return -1; /* only the table's name matters */
	if (p->profile == WALL_EGRESS && deny_load(p, deny, deny_max) != 0)
		return EXIT_ERROR;
	if ((p->profile == WALL_EGRESS || p->profile == WALL_SANDBOX) && o->user == NULL) {
		fprintf(stderr, "wall: %s %s: --user NAME%s is required\n", name,
			wall_profile_name(p->profile),
			p->profile == WALL_EGRESS ? " (the proxy's user)" : "");
		return EXIT_USAGE;
	}
	if (o->user != NULL && user_load(o, p) == -1)
		return EXIT_ERROR;
	return -1;
}

/*
 * Parse argv (argv[0] is the sub-verb) into *o and *p, deny[] backing the
 * egress profile's deny list. Returns -1 when parsed, else the exit status
 * to return at once (usage printed).
 */
static int args_parse(enum wall_verb verb, int argc, char **argv, struct opts *o,
		      struct wall_params *p, struct ipnet *deny, size_t deny_max)
{
	static const struct option longopts[] = {
		{ "user", required_argument, NULL, 'u' },
		{ "resolver", required_argument, NULL, 'r' },
		{ "gateway", required_argument, NULL, 'g' },
		{ "bridge", required_argument, NULL, 'b' },
		{ "forwarder", required_argument, NULL, 'f' },
		{ "transparent", required_argument, NULL, 'X' },
		{ "mark", required_argument, NULL, 'm' },
		{ "cgroup", required_argument, NULL, 'c' },
		{ "port-base", required_argument, NULL, 'p' },
		{ "project", required_argument, NULL, 'P' },
		{ "log-group", required_argument, NULL, 'l' },
		{ "subuid", required_argument, NULL, 's' },
		{ "netns", required_argument, NULL, 'n' },
		{ "i-mean-this-host", no_argument, NULL, 'H' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int opt, ret;

	memset(o, 0, sizeof(*o));
	memset(p, 0, sizeof(*p));
	o->subuid_path = SUBUID_PATH;
	p->resolvers = o->resolvers;
	p->gateways = o->gateways;
	/* the profile follows the options or precedes them */
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		ret = option_read(o, p, opt, optarg);
		if (ret != 0 || opt == 'h')
			return ret;
	}
	p->bridges = o->bridges;
	if (p->nbridges == 0) {
		o->bridges[0] = "podman*"; /* every podman network's bridge */
		p->nbridges = 1;
	}
	return args_check(verb, argc, argv, o, p, deny, deny_max);
}

/* The rendered script in a new buffer (the caller frees it), or NULL after printing why. */
static char *script_new(const struct wall_params *p)
{
	char *script = malloc(SCRIPT_MAX);
	const char *err;

	if (script == NULL) {
		fprintf(stderr, "wall: out of memory\n");
		return NULL;
	}
	if (wall_render(p, script, SCRIPT_MAX, &err) == -1) {
		fprintf(stderr, "wall: render %s: %s\n", wall_profile_name(p->profile), err);
		free(script);
		script = NULL;
	}
	return script;
}

/*
 * STATE/wall-TABLE@NS.EXT: what apply loaded into one namespace. NS is the
 * --netns path with bytes other than [A-Za-z0-9.-] as '_' (/run/netns/vm
 * gives _run_netns_vm), or "host" without --netns.
 */
static int state_path(const struct config *c, const struct opts *o, const struct wall_params *p,
		      const char *ext, char *buf, size_t size)
{
	char table[80], ns[NAME_MAX - 96] = "host";
	int n;

	wall_table_name(p, table, sizeof(table));
	if (o->netns != NULL) {
		if (strlen(o->netns) >= sizeof(ns)) {
			fprintf(stderr, "wall: --netns %s: path too long\n", o->netns);
			return -1;
		}
		snprintf(ns, sizeof(ns), "%s", o->netns);
		for (char *ch = ns; *ch != '\0'; ch++)
			if (strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-", *ch) == NULL)
				*ch = '_';
	}
	n = snprintf(buf, size, "%s/wall-%s@%s.%s", c->state_dir, table, ns, ext);

	if (n < 0 || (size_t)n >= size) {
		fprintf(stderr, "wall: %s: state path too long\n", c->state_dir);
		return -1;
	}
	return 0;
}

/* Replace state_path's file with text, mode 0600. Returns 0 or -1 after printing. */
static int state_write(const struct config *c, const struct opts *o, const struct wall_params *p,
		       const char *ext, const char *text)
{
	char path[PATH_MAX], tmp[PATH_MAX + 8];
	size_t len = strlen(text);
	int fd;

	if (file_mkdir_p(c->state_dir, 0700) == -1) {
		fprintf(stderr, "wall: mkdir %s: ", c->state_dir);
		goto out_errno;
	}
	if (state_path(c, o, p, ext, path, sizeof(path)) == -1)
		return -1;
	snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path);
	fd = mkostemp(tmp, O_CLOEXEC | O_NOFOLLOW); /* 0600 */
	if (fd == -1) {
		fprintf(stderr, "wall: create %s: ", tmp);
		goto out_errno;
	}
	if (write(fd, text, len) != (ssize_t)len || fsync(fd) == -1) {
		fprintf(stderr, "wall: write %s: ", tmp);
		close(fd);
		unlink(tmp);
		goto out_errno;
	}
	close(fd);
	if (rename(tmp, path) == -1) {
		fprintf(stderr, "wall: rename to %s: ", path);
		unlink(tmp);
		goto out_errno;
	}
	return 0;
out_errno:
	cli_put_strerror(stderr, errno);
	fputc('\n', stderr);
	return -1;
}

static int wall_apply(const struct config *c, const struct opts *o, const struct wall_params *p,
		      struct nft_ctx *nft)
{
	char table[80], *script, *errtext = NULL, *listing = NULL;
	int rc, ret = EXIT_ERROR;

	wall_table_name(p, table, sizeof(table));
	script = script_new(p);
	if (script == NULL)
		return EXIT_ERROR;
	if (wall_nft_run(nft, script, NULL, &errtext) == -1) {
		fprintf(stderr, "wall: apply %s: nft refused the batch (nothing changed):\n",
			wall_profile_name(p->profile));
		wall_nft_put_error(errtext);
		goto out_free;
	}
	rc = wall_nft_table_list(nft, table, &listing);
	if (rc == 1)
		fprintf(stderr, "wall: apply: table inet %s is not there after loading\n", table);
	if (rc != 0)
		goto out_free;
	if (state_write(c, o, p, "nft", script) == -1 || state_write(c, o, p, "live", listing) == -1) {
		fprintf(stderr, "wall: table inet %s is applied but not recorded: status cannot check "
				"it until an apply is\n", table);
		goto out_free;
	}
	printf("applied table inet %s\n", table);
	ret = EXIT_OK;
out_free:
	free(listing);
	listing = NULL;
	free(errtext);
	errtext = NULL;
	free(script);
	script = NULL;
	return ret;
}

/* Delete apply's records of this table in this namespace (absent ones are fine). */
static void state_forget(const struct config *c, const struct opts *o, const struct wall_params *p)
{
	static const char *const exts[] = { "nft", "live" };
	char path[PATH_MAX];

	for (size_t i = 0; i < 2; i++)
		if (state_path(c, o, p, exts[i], path, sizeof(path)) == 0 && unlink(path) == -1 &&
		    errno != ENOENT) {
			fprintf(stderr, "wall: remove %s: ", path);
			cli_put_strerror(stderr, errno);
			fputc('\n', stderr);
		}
}

static int wall_remove(const struct config *c, const struct opts *o, const struct wall_params *p,
		       struct nft_ctx *nft)
{
	char table[80], cmd[128], *listing = NULL, *errtext = NULL;
	int rc;

	wall_table_name(p, table, sizeof(table));
	rc = wall_nft_table_list(nft, table, &listing);
	free(listing);
	listing = NULL;
	if (rc == -1)
		return EXIT_ERROR;
	if (rc == 1) {
		state_forget(c, o, p);
		printf("table inet %s: not present\n", table);
		return EXIT_OK;
	}
	snprintf(cmd, sizeof(cmd), "delete table inet %s", table);
	if (wall_nft_run(nft, cmd, NULL, &errtext) == -1) {
		fprintf(stderr, "wall: %s failed:\n", cmd);
		wall_nft_put_error(errtext);
		free(errtext);
		return EXIT_ERROR;
	}
	state_forget(c, o, p);
	printf("removed table inet %s\n", table);
	return EXIT_OK;
}

static int wall_status(const struct config *c, const struct opts *o, const struct wall_params *p,
		       struct nft_ctx *nft)
{
	char table[80], path[PATH_MAX], *script, *live = NULL, *want = NULL, *applied = NULL;
	size_t len;
	int rc, ret = EXIT_ERROR;

	wall_table_name(p, table, sizeof(table));
	script = script_new(p);
	if (script == NULL)
		return EXIT_ERROR;
	rc = wall_nft_table_list(nft, table, &live);
	if (rc == 1)
		fprintf(stderr, "wall: status: missing table inet %s\n", table);
	if (rc != 0)
		goto out_free;
	if (state_path(c, o, p, "live", path, sizeof(path)) == -1)
		goto out_free;
	if (file_read(path, 4 << 20, &want, &len) == -1) {
		fprintf(stderr, "wall: status: table inet %s is present but no apply was recorded: %s: ",
			table, path);
		cli_put_strerror(stderr, errno);
		fputc('\n', stderr);
		goto out_free;
	}
	if (state_path(c, o, p, "nft", path, sizeof(path)) == -1)
		goto out_free;
	if (file_read(path, SCRIPT_MAX, &applied, &len) == 0 && strcmp(applied, script) != 0) {
		fprintf(stderr, "wall: status: these options render a different script from the one "
				"applied (%s): apply again\n", path);
		goto out_free;
	}
	if (!wall_nft_same(table, want, live))
		goto out_free;
	printf("table inet %s: as applied\n", table);
	ret = EXIT_OK;
out_free:
	free(applied);
	applied = NULL;
	free(want);
	want = NULL;
	free(live);
	live = NULL;
	free(script);
	script = NULL;
	return ret;
}

/*
 * Whether cgroup2 is mounted at /sys/fs/cgroup, where nft resolves `socket
 * cgroupv2` paths (and lists them back); if not, prints why not.
 */
static bool cgroup2_at_sys(void)
{
	struct statfs sf;

	if (statfs(CGROUP2_PATH, &sf) == 0 && sf.f_type == CGROUP2_SUPER_MAGIC)
		return true;
	fprintf(stderr, "wall: the host profile needs cgroup2 mounted at %s (nft resolves the "
			"cgroup path there); it is not\n", CGROUP2_PATH);
	return false;
}

/* apply, remove, status: options parsed; enter the namespace, then talk to nftables. */
static int wall_load_cmd(enum wall_verb verb, const struct config *c, const struct opts *o,
			 const struct wall_params *p)
{
	struct nft_ctx *nft;
	int ret = EXIT_ERROR;

	if (o->netns != NULL && wall_netns_enter(o->netns) == -1)
		return EXIT_ERROR;
	if (verb != VERB_REMOVE && p->profile == WALL_HOST && !cgroup2_at_sys())
		return EXIT_ERROR;
	nft = wall_nft_open();
	if (nft == NULL)
		return EXIT_ERROR;
	if (verb == VERB_APPLY)
		ret = wall_apply(c, o, p, nft);
	else if (verb == VERB_REMOVE)
		ret = wall_remove(c, o, p, nft);
	else
		ret = wall_status(c, o, p, nft);
	nft_ctx_free(nft);
	nft = NULL;
	return ret;
}

/* render: print the script. */
static int wall_print(const struct wall_params *p)
{
	char *script = script_new(p);
	int ret;

	if (script == NULL)
		return EXIT_ERROR;
	fputs(script, stdout);
	ret = fflush(stdout) == 0 ? EXIT_OK : EXIT_ERROR;
	free(script);
	script = NULL;
	return ret;
}

static int wall_verb_cmd(enum wall_verb verb, int argc, char **argv)
{
	static struct opts o;
	static struct ipnet deny[256];
	struct wall_params p;
	struct config *c = NULL;
	int ret;

	ret = args_parse(verb, argc, argv, &o, &p, deny, sizeof(deny) / sizeof(deny[0]));
	if (ret != -1)
		return ret;
	/* the config, read once: the state dir to record in, the egress profile's exceptions */
	if (verb != VERB_RENDER || p.profile == WALL_EGRESS) {
		c = cli_config_load();
		if (c == NULL)
			return EXIT_ERROR;
	}
	ret = EXIT_ERROR;
	if (verb != VERB_REMOVE && p.profile == WALL_EGRESS && allow_load(c, &o, &p) == -1)
		goto out_config;
	ret = verb == VERB_RENDER ? wall_print(&p) : wall_load_cmd(verb, c, &o, &p);
out_config:
	config_free(c);
	c = NULL;
	return ret;
}

int cmd_wall(int argc, char **argv)
{
	const char *sub = argc > 1 ? argv[1] : NULL;

	if (sub == NULL || strcmp(sub, "-h") == 0 || strcmp(sub, "--help") == 0) {
		cli_usage(sub == NULL ? stderr : stdout, "wall");
		return sub == NULL ? EXIT_USAGE : EXIT_OK;
	}
	if (strcmp(sub, "denied") == 0)
		return wall_denied_cmd(argc - 1, argv + 1);
	for (size_t i = 0; i < sizeof(verb_names) / sizeof(verb_names[0]); i++)
		if (strcmp(sub, verb_names[i]) == 0)
			return wall_verb_cmd((enum wall_verb)i, argc - 1, argv + 1);
	cli_usage(stderr, "wall");
	return EXIT_USAGE;
}
