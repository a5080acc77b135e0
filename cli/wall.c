/*
 * wall.c: `sluice wall render|apply|remove|status PROFILE`.
 *
 * render gathers the profile's parameters from the options (and the
 * sandbox user's ranges from /etc/subuid) and prints the nft script
 * lib/wall.c renders; it loads nothing. apply, remove and status are not
 * built yet and say so (exit 2) rather than pretend.
 */
#include <errno.h>
#include <getopt.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "iprange.h"
#include "file.h"
#include "wall.h"

#define PORT_BASE_DEFAULT 41000 /* until `sluice ports` allocates bands */
#define SUBUID_PATH "/etc/subuid"
#define SCRIPT_MAX (64 * 1024)

struct opts {
	struct ipnet resolvers[WALL_RANGES_MAX];
	struct ipnet gateways[WALL_RANGES_MAX];
	struct wall_uidrange subuids[WALL_RANGES_MAX];
	const char *user;
	const char *subuid_path;
};

/* Parse "N" within [lo, hi] into *out. Returns 0 or -1. */
static int num_parse(const char *s, unsigned long lo, unsigned long hi, unsigned long *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 0);
	if (s[0] == '\0' || s[0] == '-' || *end != '\0' || errno != 0 || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

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
	const char *colon = strrchr(s, ':'), *a = s, *err;
	size_t alen;
	unsigned long port;

	if (colon == NULL || num_parse(colon + 1, 1, 65535, &port) == -1)
		goto bad;
	alen = (size_t)(colon - s);
	if (alen >= 2 && s[0] == '[' && s[alen - 1] == ']') {
		a = s + 1;
		alen -= 2;
	}
	if (ipnet_parse(a, alen, &p->forwarder, &err) == -1 ||
	    p->forwarder.prefix != (p->forwarder.family == AF_INET ? 32 : 128))
		goto bad;
	p->forwarder_port = (unsigned)port;
	return 0;
bad:
	fprintf(stderr, "wall: bad --forwarder \"%s\": want ADDR:PORT or [V6]:PORT\n", s);
	return -1;
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
	else if (num_parse(o->user, 0, UINT32_MAX - 1, &uid) == -1) {
		fprintf(stderr, "wall: --user \"%s\": no such user\n", o->user);
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

static int wall_render_cmd(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "user", required_argument, NULL, 'u' },
		{ "resolver", required_argument, NULL, 'r' },
		{ "gateway", required_argument, NULL, 'g' },
		{ "bridge", required_argument, NULL, 'b' },
		{ "forwarder", required_argument, NULL, 'f' },
		{ "mark", required_argument, NULL, 'm' },
		{ "cgroup", required_argument, NULL, 'c' },
		{ "port-base", required_argument, NULL, 'p' },
		{ "subuid", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static struct opts o;
	struct wall_params p = { .port_base = PORT_BASE_DEFAULT, .bridge = "podman0" };
	struct ipnet deny[64];
	size_t ndeny = 0;
	const char *err;
	char *script;
	unsigned long v;
	int opt, ret = EXIT_ERROR;

	memset(&o, 0, sizeof(o));
	o.subuid_path = SUBUID_PATH;
	p.resolvers = o.resolvers;
	p.gateways = o.gateways;
	/* argv[0] is "render"; the profile follows the options or precedes them */
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'u':
			o.user = optarg;
			break;
		case 'r':
			if (net_add("--resolver", optarg, o.resolvers, &p.nresolvers) == -1)
				return EXIT_USAGE;
			break;
		case 'g':
			if (net_add("--gateway", optarg, o.gateways, &p.ngateways) == -1)
				return EXIT_USAGE;
			break;
		case 'b':
			p.bridge = optarg;
			break;
		case 'f':
			if (forwarder_parse(optarg, &p) == -1)
				return EXIT_USAGE;
			break;
		case 'm':
			if (num_parse(optarg, 1, UINT32_MAX, &v) == -1) {
				fprintf(stderr, "wall: bad --mark \"%s\"\n", optarg);
				return EXIT_USAGE;
			}
			p.forwarder_mark = (uint32_t)v;
			break;
		case 'c':
			p.cgroup = optarg;
			break;
		case 'p':
			if (num_parse(optarg, 1, 65536 - WALL_BAND, &v) == -1) {
				fprintf(stderr, "wall: bad --port-base \"%s\": 1 to %d\n", optarg,
					65536 - WALL_BAND);
				return EXIT_USAGE;
			}
			p.port_base = (unsigned)v;
			break;
		case 's':
			o.subuid_path = optarg;
			break;
		case 'h':
			cli_usage(stdout, "wall");
			return EXIT_OK;
		default:
			cli_usage(stderr, "wall");
			return EXIT_USAGE;
		}
	}
	if (optind + 1 != argc || wall_profile_parse(argv[optind], &p.profile) == -1) {
		cli_usage(stderr, "wall");
		return EXIT_USAGE;
	}
	p.ct_mark = wall_ct_mark(p.port_base);
	if (p.profile == WALL_EGRESS) {
		/* the proxy's own deny list, the one its resolve-and-check uses */
		while (iprange_deny_list(ndeny) != NULL && ndeny < sizeof(deny) / sizeof(deny[0])) {
			deny[ndeny] = *iprange_deny_list(ndeny);
			ndeny++;
		}
		p.deny = deny;
		p.ndeny = ndeny;
		if (o.user == NULL) {
			fprintf(stderr, "wall: render egress: --user NAME (the proxy's user) is required\n");
			return EXIT_USAGE;
		}
	}
	if (p.profile == WALL_SANDBOX && o.user == NULL) {
		fprintf(stderr, "wall: render sandbox: --user NAME is required\n");
		return EXIT_USAGE;
	}
	if (o.user != NULL && user_load(&o, &p) == -1)
		return EXIT_ERROR;
	script = malloc(SCRIPT_MAX);
	if (script == NULL) {
		fprintf(stderr, "wall: out of memory\n");
		return EXIT_ERROR;
	}
	if (wall_render(&p, script, SCRIPT_MAX, &err) == -1) {
		fprintf(stderr, "wall: render %s: %s\n", wall_profile_name(p.profile), err);
		goto out_free;
	}
	fputs(script, stdout);
	ret = fflush(stdout) == 0 ? EXIT_OK : EXIT_ERROR;
out_free:
	free(script);
	script = NULL;
	return ret;
}

int cmd_wall(int argc, char **argv)
{
	const char *sub = argc > 1 ? argv[1] : NULL;

	if (sub == NULL || strcmp(sub, "-h") == 0 || strcmp(sub, "--help") == 0) {
		cli_usage(sub == NULL ? stderr : stdout, "wall");
		return sub == NULL ? EXIT_USAGE : EXIT_OK;
	}
	if (strcmp(sub, "render") == 0)
		return wall_render_cmd(argc - 1, argv + 1);
	if (strcmp(sub, "apply") == 0 || strcmp(sub, "remove") == 0 || strcmp(sub, "status") == 0) {
		fprintf(stderr, "wall: %s: not implemented yet (only render is)\n", sub);
		return EXIT_USAGE;
	}
	cli_usage(stderr, "wall");
	return EXIT_USAGE;
}
