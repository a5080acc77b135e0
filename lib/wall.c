/*
 * wall.c: render the nftables walls as text; read /etc/subuid.
 *
 * Each profile is one `table inet` whose base chains have `policy accept`
 * and jump, for the traffic the profile is about, to a regular chain that
 * accepts what is open and sends the rest to `refuse`: a log line, then a
 * TCP reset or ICMP admin-prohibited (IPv4 and IPv6 alike). Nothing is
 * dropped, not even in `egress`: BRIEF.md's "refuse, don't drop" rules over
 * the seed's "kernel drop", and a refused connect fails the proxy's dial at
 * once instead of after its connect timeout. Tables from different port
 * bases have different names, so two projects' walls never meet.
 *
 * This file renders and parses only; it loads nothing and reads no files.
 */
#include "wall.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "digits.h"

struct out {
	char *p;
	size_t size;
	size_t len;
	bool over; /* something did not fit */
};

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->over)
		return;
	va_start(ap, fmt);
	n = vsnprintf(o->p + o->len, o->size - o->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= o->size - o->len) {
		o->over = true;
		return;
	}
	o->len += (size_t)n;
}

static const char *const profile_names[] = {
	[WALL_SANDBOX] = "sandbox",
	[WALL_GUARD] = "guard",
	[WALL_HOST] = "host",
	[WALL_EGRESS] = "egress",
};

const char *wall_profile_name(enum wall_profile p)
{
	if ((unsigned)p >= sizeof(profile_names) / sizeof(profile_names[0]))
		return "?";
	return profile_names[p];
}

void wall_table_name(const struct wall_params *p, char *buf, size_t size)
{
	if (p->table != NULL)
		snprintf(buf, size, "%s", p->table);
	else
		snprintf(buf, size, "sluice_%s_%u", wall_profile_name(p->profile), p->port_base);
}

int wall_profile_parse(const char *s, enum wall_profile *out)
{
	for (unsigned i = 0; i < sizeof(profile_names) / sizeof(profile_names[0]); i++) {
		if (strcmp(s, profile_names[i]) == 0) {
			*out = (enum wall_profile)i;
			return 0;
		}
	}
	return -1;
}

uint32_t wall_ct_mark(unsigned port_base)
{
	return WALL_CT_BYTE << 24 | (port_base & 0xffffffu);
}

/* --- addresses ------------------------------------------------------------ */

static unsigned full_prefix(int family)
{
	return family == AF_INET ? 32 : 128;
}

/* "10.0.0.0/8", or the bare address for a /32 or /128. */
static void put_net(struct out *o, const struct ipnet *n)
{
	char a[64];

	ipaddr_format(n->family, n->addr, a, sizeof(a));
	if (n->prefix == full_prefix(n->family))
		put(o, "%s", a);
	else
		put(o, "%s/%u", a, (unsigned)n->prefix);
}

/* Whether nets[i] lies inside another entry of the same family (an nft set refuses overlaps). */
static bool covered(const struct ipnet *nets, size_t n, size_t i)
{
	for (size_t j = 0; j < n; j++) {
		if (j == i || nets[j].family != nets[i].family || nets[j].prefix > nets[i].prefix)
			continue;
		if (!ipnet_contains(&nets[j], nets[i].family, nets[i].addr))
			continue;
		/* equal entries: keep the first */
		if (nets[j].prefix < nets[i].prefix || j < i)
			return true;
	}
	return false;
}

/*
 * One rule per address family present in nets: "\t\t<lead>ip daddr X <tail>"
 * (or "ip6 daddr", or a set "{ X, Y }" for several).
 */
static void put_daddr_rules(struct out *o, const char *lead, const struct ipnet *nets, size_t n,
			    const char *tail)
{
	static const int families[] = { AF_INET, AF_INET6 };

	for (size_t f = 0; f < 2; f++) {
		size_t count = 0, done = 0;

		for (size_t i = 0; i < n; i++)
			count += nets[i].family == families[f] && !covered(nets, n, i);
		if (count == 0)
			continue;
		put(o, "\t\t%s%s daddr %s", lead, families[f] == AF_INET ? "ip" : "ip6",
		    count > 1 ? "{ " : "");
		for (size_t i = 0; i < n; i++) {
			if (nets[i].family != families[f] || covered(nets, n, i))
				continue;
			put(o, "%s", done++ > 0 ? ", " : "");
			put_net(o, &nets[i]);
		}
		put(o, "%s %s\n", count > 1 ? " }" : "", tail);
	}
}

/* Whether all of n lies in one of the deny list's (private, local, reserved) ranges. */
static bool net_private(const struct ipnet *n)
{
	struct ipnet r;

	return iprange_denied(n->family, n->addr, &r) != NULL && r.prefix <= n->prefix;
}

/* --- checks --------------------------------------------------------------- */

static char errbuf[160];

/* At most max well-formed entries. */
static bool nets_valid(const struct ipnet *nets, size_t n, size_t max)
{
	if (n > max || (n > 0 && nets == NULL))
		return false;
	for (size_t i = 0; i < n; i++)
		if ((nets[i].family != AF_INET && nets[i].family != AF_INET6) ||
		    nets[i].prefix > full_prefix(nets[i].family))
			return false;
	return true;
}

static const char *check_resolvers(const struct wall_params *p)
{
	if (!nets_valid(p->resolvers, p->nresolvers, WALL_RANGES_MAX))
		return "bad resolver list";
	for (size_t i = 0; i < p->nresolvers && p->profile != WALL_EGRESS; i++) {
		if (!net_private(&p->resolvers[i])) {
			struct out o = { errbuf, sizeof(errbuf), 0, false };

			put(&o, "resolver ");
			put_net(&o, &p->resolvers[i]);
			put(&o, " is a public address (dns there is a tunnel, not resolution)");
			return errbuf;
		}
	}
	return NULL;
}

static const char *check_gateways(const struct wall_params *p)
{
	if (p->ngateways == 0)
		return "no gateway: the sandbox could not reach the proxy";
	if (!nets_valid(p->gateways, p->ngateways, WALL_RANGES_MAX))
		return "bad gateway list";
	for (size_t i = 0; i < p->ngateways; i++)
		if (p->gateways[i].prefix != full_prefix(p->gateways[i].family))
			return "a gateway is one address, not a range";
	return NULL;
}

/* An interface name nft reads as written: 1-15 of [A-Za-z0-9_.-], or a prefix of them and '*'. */
static bool ifname_valid(const char *s)
{
	size_t n = s != NULL ? strlen(s) : 0;

	if (n > 0 && s[n - 1] == '*')
		n--;
	if (n == 0 || n > 15)
		return false;
	for (size_t i = 0; i < n; i++)
		if (strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-", s[i]) == NULL)
			return false;
	return true;
}

/* The cgroup path's depth ("a/b" is 2), or 0 when nft could read it differently or it climbs. */
static unsigned cgroup_level(const char *s)
{
	unsigned level = 1;
	const char *comp = s;

	if (s == NULL || s[0] == '\0' || s[0] == '/' || strlen(s) > 4000)
		return 0;
	for (const char *c = s;; c++) {
		if (*c == '/' || *c == '\0') {
			size_t n = (size_t)(c - comp);

			if (n == 0 || (n == 1 && comp[0] == '.') || (n == 2 && comp[0] == '.' && comp[1] == '.'))
				return 0;
			if (*c == '\0')
				return level;
			level++;
			comp = c + 1;
		} else if ((unsigned char)*c < 0x20 || *c == 0x7f || *c == '"' || *c == '\\') {
			return 0;
		}
	}
}

static const char *check(const struct wall_params *p, const char *table)
{
	if (p->port_base == 0 || p->port_base > 65536 - WALL_BAND)
		return "port base out of range";
	for (const char *c = table; *c != '\0'; c++)
		if (strchr("abcdefghijklmnopqrstuvwxyz0123456789_", *c) == NULL)
			return "table name: only a-z, 0-9 and _";
	if (table[0] == '\0' || strlen(table) >= 64)
		return "table name: 1 to 63 characters";
	switch (p->profile) {
	case WALL_SANDBOX:
		if (p->nsubuids > WALL_RANGES_MAX || (p->nsubuids > 0 && p->subuids == NULL))
			return "too many subuid ranges";
		for (size_t i = 0; i < p->nsubuids; i++)
			if (p->subuids[i].count == 0 ||
			    p->subuids[i].count - 1 >= UINT32_MAX - p->subuids[i].start)
				return "bad subuid range";
		if (p->nbridges == 0 || p->nbridges > WALL_RANGES_MAX || p->bridges == NULL)
			return "no bridge interface name";
		for (size_t i = 0; i < p->nbridges; i++)
			if (!ifname_valid(p->bridges[i]))
				return "bad bridge interface name";
		if (p->forwarder.family != 0 &&
		    ((p->forwarder.family != AF_INET && p->forwarder.family != AF_INET6) ||
		     p->forwarder.prefix != full_prefix(p->forwarder.family) || p->forwarder_port == 0 ||
		     p->forwarder_port > 65535))
			return "bad forwarder address or port";
		if (p->transparent_port > 65535)
			return "bad transparent port";
		return check_gateways(p) != NULL ? check_gateways(p) : check_resolvers(p);
	case WALL_GUARD:
		return check_gateways(p);
	case WALL_HOST:
		if (cgroup_level(p->cgroup) == 0)
			return "bad or missing cgroup path (relative to the cgroup2 mount, no . or ..)";
		if (p->ct_mark == 0)
			return "the host profile needs a nonzero conntrack mark";
		return check_resolvers(p);
	case WALL_EGRESS:
		if (p->ndeny == 0 || !nets_valid(p->deny, p->ndeny, 256))
			return "no denied ranges for the egress profile";
		if (!nets_valid(p->allow, p->nallow, WALL_RANGES_MAX))
			return "bad allowed range list";
		return check_resolvers(p);
	}
	return "unknown profile";
}

/* --- profiles ------------------------------------------------------------- */

static const struct ipnet local_resolvers[] = {
	{ AF_INET, { 127 }, 8 },
	{ AF_INET6, { [15] = 1 }, 128 },
};

/* "log [group N ]prefix \"sluice PROFILE REASON: \" goto refuse" into buf: every refusal's tail. */
static const char *refusal(const struct wall_params *p, const char *reason, char *buf, size_t size)
{
	char group[24] = "";

	if (p->nflog)
		snprintf(group, sizeof(group), "group %u ", (unsigned)p->nflog_group);
	snprintf(buf, size, "log %sprefix \"sluice %s %s: \" goto refuse", group,
		 wall_profile_name(p->profile), reason);
	return buf;
}

static void put_dns(struct out *o, const struct wall_params *p)
{
	const struct ipnet *r = p->resolvers;
	size_t n = p->nresolvers;
	char why[96];

	if (n == 0) {
		r = local_resolvers;
		n = sizeof(local_resolvers) / sizeof(local_resolvers[0]);
	}
	put_daddr_rules(o, "", r, n, "meta l4proto { tcp, udp } th dport 53 accept");
	put(o, "\t\tmeta l4proto { tcp, udp } th dport 53 %s\n", refusal(p, "dns", why, sizeof(why)));
}

static void put_hook(struct out *o, const char *name, const char *hook)
{
	put(o, "\tchain %s {\n\t\ttype filter hook %s priority filter; policy accept;\n", name, hook);
}

/*
 * Replies to a flow, and only replies: conntrack does not know which socket
 * sent a packet, so an original-direction packet of an established flow
 * (someone else's, whose 5-tuple a walled process can reuse) is judged
 * again by the rules that admitted its first packet.
 */
#define REPLIES "ct state established,related ct direction reply accept"

/* `"podman0"` or `{ "podman0", "podman1" }`: the bridges as one nft value. */
static void put_bridges(struct out *o, const struct wall_params *p)
{
	if (p->nbridges == 1) {
		put(o, "\"%s\"", p->bridges[0]);
		return;
	}
	put(o, "{ ");
	for (size_t i = 0; i < p->nbridges; i++)
		put(o, "%s\"%s\"", i > 0 ? ", " : "", p->bridges[i]);
	put(o, " }");
}

static void render_sandbox(struct out *o, const struct wall_params *p)
{
	char tail[160], why[96];
	unsigned top = p->port_base + WALL_BAND - 1;

	put_hook(o, "output", "output");
	put(o, "\t\tmeta skuid %s%u", p->nsubuids > 0 ? "{ " : "", (unsigned)p->sandbox_uid);
	for (size_t i = 0; i < p->nsubuids; i++) {
		const struct wall_uidrange *r = &p->subuids[i];

		if (r->count == 1)
			put(o, ", %u", (unsigned)r->start);
		else
			put(o, ", %u-%u", (unsigned)r->start, (unsigned)(r->start + (r->count - 1)));
	}
	put(o, "%s jump sandbox\n\t}\n\n", p->nsubuids > 0 ? " }" : "");

	/* its own bridged containers are fine to reach: they route nowhere (forward chain) */
	put(o, "\tchain sandbox {\n\t\toifname \"lo\" accept\n\t\toifname ");
	put_bridges(o, p);
	put(o, " accept\n\t\t" REPLIES "\n");
	put(o, "\t\tudp dport 443 %s\n", refusal(p, "quic", why, sizeof(why)));
	put_dns(o, p);
	snprintf(tail, sizeof(tail), "tcp dport %u-%u accept", p->port_base, top);
	put_daddr_rules(o, "", p->gateways, p->ngateways, tail);
	put(o, "\t\t%s\n\t}\n\n", refusal(p, "egress", why, sizeof(why)));

	/*
	 * Bridged containers reach the sandbox machine itself (input) only at the
	 * forwarder and at the engine's resolver on the bridge (aardvark-dns:
	 * container names; it resolves the rest through the machine's own pinned
	 * resolver), plus IPv6 neighbour discovery and multicast listener reports.
	 */
	put_hook(o, "input", "input");
	put(o, "\t\tiifname ");
	put_bridges(o, p);
	put(o, " " REPLIES "\n");
	if (p->forwarder.family != 0) {
		char lead[WALL_RANGES_MAX * 20 + 32], rule[64];
		struct out l = { lead, sizeof(lead), 0, false };

		put(&l, "iifname ");
		put_bridges(&l, p);
		put(&l, " ");
		snprintf(rule, sizeof(rule), "tcp dport %u accept", p->forwarder_port);
		put_daddr_rules(o, lead, &p->forwarder, 1, rule);
	}
	put(o, "\t\tiifname ");
	put_bridges(o, p);
	put(o, " meta l4proto { tcp, udp } th dport 53 accept\n\t\tiifname ");
	put_bridges(o, p);
	put(o, " icmpv6 type { nd-router-solicit, nd-neighbor-solicit, nd-neighbor-advert, "
	       "mld-listener-report, mld2-listener-report } accept\n\t\tiifname ");
	put_bridges(o, p);
	put(o, " %s\n\t}\n\n", refusal(p, "bridge", why, sizeof(why)));

	/* the sandbox machine routes nothing new: replies, and published ports (DNAT) inward */
	put_hook(o, "forward", "forward");
	put(o, "\t\t" REPLIES "\n\t\tct status dnat accept\n");
	put(o, "\t\t%s\n\t}\n", refusal(p, "routed", why, sizeof(why)));

	/* a run's fake addresses lead to the forwarder's transparent listener, and nowhere else */
	if (p->transparent_port != 0)
		put(o, "\n\tchain transparent {\n"
		       "\t\ttype nat hook output priority -100; policy accept;\n"
		       "\t\tip daddr " WALL_FAKE_NET " meta l4proto tcp redirect to :%u\n\t}\n",
		    p->transparent_port);
}

/*
 * Mark mode (SO_MARK needs CAP_NET_ADMIN) keeps every other process out;
 * uid mode lets every socket of the forwarder's uid through, so with uid 0
 * a root process or a root `--network host` container passes too.
 */
static void render_guard(struct out *o, const struct wall_params *p)
{
	char tail[192], why[96];
	unsigned top = p->port_base + WALL_LISTENERS - 1;

	put_hook(o, "output", "output");
	if (p->forwarder_mark != 0)
		snprintf(tail, sizeof(tail), "tcp dport %u-%u meta mark != 0x%08x %s", p->port_base,
			 top, (unsigned)p->forwarder_mark, refusal(p, "direct", why, sizeof(why)));
	else
		snprintf(tail, sizeof(tail), "tcp dport %u-%u meta skuid != %u %s", p->port_base, top,
			 (unsigned)p->forwarder_uid, refusal(p, "direct", why, sizeof(why)));
	put_daddr_rules(o, "", p->gateways, p->ngateways, tail);
	put(o, "\t}\n\n");

	/* a forwarded packet is never the forwarder's own */
	put_hook(o, "forward", "forward");
	snprintf(tail, sizeof(tail), "tcp dport %u-%u %s", p->port_base, top,
		 refusal(p, "forwarded", why, sizeof(why)));
	put_daddr_rules(o, "", p->gateways, p->ngateways, tail);
	put(o, "\t}\n");
}

static void render_host(struct out *o, const struct wall_params *p)
{
	unsigned level = cgroup_level(p->cgroup), mark = (unsigned)p->ct_mark;
	char why[96];

	put_hook(o, "output", "output");
	put(o, "\t\tsocket cgroupv2 level %u \"%s\" jump sandbox\n\t}\n\n", level, p->cgroup);
	put(o, "\tchain sandbox {\n\t\t" REPLIES "\n");
	put_dns(o, p);
	/* an untracked loopback flow could carry no mark, and the input check would never see it */
	put(o, "\t\toifname \"lo\" ct state untracked %s\n", refusal(p, "untracked", why, sizeof(why)));
	put(o, "\t\toifname \"lo\" ct mark set 0x%08x accept\n", mark);
	put(o, "\t\t%s\n\t}\n\n", refusal(p, "egress", why, sizeof(why)));

	/* a loopback flow this table marked: to the sandbox's own listeners or this project's ports */
	put_hook(o, "input", "input");
	put(o, "\t\tiifname \"lo\" ct state new ct mark 0x%08x jump loopback\n\t}\n\n", mark);
	put(o, "\tchain loopback {\n"
	       "\t\tsocket cgroupv2 level %u \"%s\" accept\n"
	       "\t\ttcp dport %u-%u accept\n",
	    level, p->cgroup, p->port_base, p->port_base + WALL_BAND - 1);
	put(o, "\t\t%s\n\t}\n", refusal(p, "loopback", why, sizeof(why)));
}

static void render_egress(struct out *o, const struct wall_params *p)
{
	char why[96];

	put_hook(o, "output", "output");
	put(o, "\t\tmeta skuid %u jump proxy\n\t}\n\n", (unsigned)p->proxy_uid);
	/*
	 * Loopback is no exception: the machine's own private addresses travel
	 * over lo too. Open there: local resolvers and this project's token
	 * services (base+100 .. base+189).
	 */
	put(o, "\tchain proxy {\n\t\t" REPLIES "\n"
	       "\t\toifname \"lo\" meta l4proto { tcp, udp } th dport 53 accept\n"
	       "\t\toifname \"lo\" tcp dport %u-%u accept\n",
	    p->port_base + WALL_TOKENS_OFF, p->port_base + WALL_TOKENS_OFF + WALL_TOKENS_N - 1);
	/* resolvers in private space the proxy must still reach */
	put_daddr_rules(o, "", p->resolvers, p->nresolvers, "meta l4proto { tcp, udp } th dport 53 accept");
	/* the config's allow-private ranges: the kernel sees no names, so the range opens for every host */
	put_daddr_rules(o, "", p->allow, p->nallow, "accept");
	put_daddr_rules(o, "", p->deny, p->ndeny, refusal(p, "denied-ip", why, sizeof(why)));
	put(o, "\t}\n");
}

int wall_render(const struct wall_params *p, char *out, size_t size, const char **err)
{
	struct out o = { out, size, 0, false };
	char table[80];
	const char *why;

	if (size == 0) {
		*err = "no room";
		return -1;
	}
	out[0] = '\0';
	wall_table_name(p, table, sizeof(table));
	why = check(p, table);
	if (why != NULL) {
		*err = why;
		return -1;
	}

	put(&o, "# sluice wall %s, ports %u-%u: rendered by `sluice wall render`.\n"
		"# One batch: declare, delete and declare again replaces this table and no other.\n"
		"table inet %s {}\n"
		"delete table inet %s\n"
		"table inet %s {\n",
	    wall_profile_name(p->profile), p->port_base, p->port_base + WALL_BAND - 1, table, table,
	    table);
	switch (p->profile) {
	case WALL_SANDBOX:
		render_sandbox(&o, p);
		break;
	case WALL_GUARD:
		render_guard(&o, p);
		break;
	case WALL_HOST:
		render_host(&o, p);
		break;
	case WALL_EGRESS:
		render_egress(&o, p);
		break;
	}
	put(&o, "\n\tchain refuse {\n"
		"\t\tmeta l4proto tcp reject with tcp reset\n"
		"\t\treject with icmpx admin-prohibited\n"
		"\t}\n}\n");
	if (o.over) {
		out[0] = '\0';
		*err = "the rendered script does not fit";
		return -1;
	}
	return 0;
}

/* --- /etc/subuid ---------------------------------------------------------- */

/* A decimal uint32 filling exactly s[0..n), at most ten digits (leading zeros count). */
static int u32_parse(const char *s, size_t n, uint32_t *out)
{
	uint64_t v;

	if (n > 10 || dec_parse(s, n, UINT32_MAX, &v) == -1)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

static int subuid_fail(const char **err, unsigned line, const char *what)
{
	snprintf(errbuf, sizeof(errbuf), "line %u: %s", line, what);
	*err = errbuf;
	return -1;
}

int wall_subuid_parse(const char *buf, size_t len, const char *user, uint32_t uid,
		      struct wall_uidrange *out, size_t max, const char **err)
{
	size_t pos = 0, found = 0, ulen = strlen(user);
	unsigned line = 0;

	while (pos < len) {
		const char *s = buf + pos, *nl = memchr(s, '\n', len - pos);
		size_t n = nl != NULL ? (size_t)(nl - s) : len - pos;
		const char *c1, *c2;
		uint32_t start, count, id;

		line++;
		pos += n + (nl != NULL);
		if (n > 0 && s[n - 1] == '\r')
			n--;
		if (n == 0 || s[0] == '#')
			continue;
		c1 = memchr(s, ':', n);
		c2 = c1 != NULL ? memchr(c1 + 1, ':', n - (size_t)(c1 + 1 - s)) : NULL;
		if (c2 == NULL)
			return subuid_fail(err, line, "not name:start:count");
		if (c1 == s)
			return subuid_fail(err, line, "empty name");
		if (u32_parse(c1 + 1, (size_t)(c2 - c1 - 1), &start) == -1)
			return subuid_fail(err, line, "start is not a number");
		if (u32_parse(c2 + 1, n - (size_t)(c2 + 1 - s), &count) == -1)
			return subuid_fail(err, line, "count is not a number");
		if (count == 0 || count - 1 >= UINT32_MAX - start)
			return subuid_fail(err, line, "range empty or past the last uid");
		if (!(((size_t)(c1 - s) == ulen && ulen > 0 && memcmp(s, user, ulen) == 0) ||
		      (u32_parse(s, (size_t)(c1 - s), &id) == 0 && id == uid)))
			continue;
		if (found == max) {
			snprintf(errbuf, sizeof(errbuf), "more than %zu ranges for %s", max, user);
			*err = errbuf;
			return -1;
		}
		out[found].start = start;
		out[found].count = count;
		found++;
	}
	return (int)found;
}
