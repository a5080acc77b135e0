/*
 * sockaddr.c: socket addresses as text, both ways (sockaddr.h).
 *
 * The parser takes a "unix:" prefix itself, has host.h's host_port_split
 * split the rest (a leading '[', more than one colon, else a dotted quad)
 * and hands the address to inet_pton, so what counts as an address is
 * libc's strict numeric form.
 * It never guesses: a bare IPv6 address with a port is refused, not split
 * at its last colon.
 */
#include "sockaddr.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/un.h>

#include "host.h"

/* PATH of "unix:PATH": absolute, no newline, fits sun_path. Returns 0 or -1. */
static int unix_parse(const char *path, struct sockaddr_storage *ss)
{
	struct sockaddr_un *un = (void *)ss;
	size_t n = strlen(path);

	if (path[0] != '/' || n >= sizeof(un->sun_path) || strchr(path, '\n') != NULL)
		return -1;
	memset(ss, 0, sizeof(*ss));
	un->sun_family = AF_UNIX;
	memcpy(un->sun_path, path, n + 1);
	return 0;
}

/* inet_pton of s[0..len) as family into bytes. Returns 0 or -1. */
static int ip_parse(int family, const char *s, size_t len, unsigned char *bytes)
{
	char addr[INET6_ADDRSTRLEN + 1];

	if (len == 0 || len >= sizeof(addr))
		return -1;
	memcpy(addr, s, len);
	addr[len] = '\0';
	return inet_pton(family, addr, bytes) == 1 ? 0 : -1;
}

static void sockaddr_set(struct sockaddr_storage *ss, int family, const void *addr,
			 uint16_t port)
{
	memset(ss, 0, sizeof(*ss));
	if (family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		memcpy(&sin->sin_addr, addr, 4);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		memcpy(&sin6->sin6_addr, addr, 16);
	}
}

int sockaddr_parse(const char *s, unsigned flags, uint16_t default_port,
		   struct sockaddr_storage *ss)
{
	bool port_may_lack = (flags & (SOCKADDR_PORT_OPTIONAL | SOCKADDR_NO_PORT)) != 0;
	struct host_port hp;
	unsigned char bytes[16];
	const char *err;
	int family;

	if ((flags & SOCKADDR_UNIX) && strncmp(s, "unix:", 5) == 0)
		return unix_parse(s + 5, ss);
	if (host_port_split(s, strlen(s), HOST_PORT_ANY_ZEROS, &hp, &err) == -1)
		return -1;
	/* more than one colon unbracketed: a bare v6 address, which cannot carry a port */
	if (hp.bracketed || (memchr(hp.host, ':', hp.host_len) != NULL && port_may_lack))
		family = AF_INET6;
	else
		family = AF_INET;
	if (ip_parse(family, hp.host, hp.host_len, bytes) == -1)
		return -1;
	if (hp.has_port ? (flags & SOCKADDR_NO_PORT) != 0 : !port_may_lack)
		return -1;
	sockaddr_set(ss, family, bytes, hp.has_port ? hp.port : default_port);
	return 0;
}

char *sockaddr_format(const struct sockaddr_storage *ss, char *buf, size_t size)
{
	char a[INET6_ADDRSTRLEN];

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)ss;

		inet_ntop(AF_INET, &in->sin_addr, a, sizeof(a));
		host_port_format(buf, size, a, ntohs(in->sin_port));
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)ss;

		inet_ntop(AF_INET6, &in6->sin6_addr, a, sizeof(a));
		host_port_format(buf, size, a, ntohs(in6->sin6_port));
	} else if (ss->ss_family == AF_UNIX) {
		const struct sockaddr_un *un = (const void *)ss;

		if (un->sun_path[0] == '\0')
			snprintf(buf, size, "unix");
		else
			snprintf(buf, size, "unix:%.*s", (int)sizeof(un->sun_path), un->sun_path);
	} else {
		snprintf(buf, size, "?");
	}
	return buf;
}

bool sockaddr_same(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_UNIX)
		return strcmp(((const struct sockaddr_un *)a)->sun_path,
			      ((const struct sockaddr_un *)b)->sun_path) == 0;
	if (a->ss_family == AF_INET) {
		const struct sockaddr_in *x = (const struct sockaddr_in *)a;
		const struct sockaddr_in *y = (const struct sockaddr_in *)b;

		return x->sin_port == y->sin_port &&
		       x->sin_addr.s_addr == y->sin_addr.s_addr;
	}
	const struct sockaddr_in6 *x = (const struct sockaddr_in6 *)a;
	const struct sockaddr_in6 *y = (const struct sockaddr_in6 *)b;

	return x->sin6_port == y->sin6_port &&
	       memcmp(&x->sin6_addr, &y->sin6_addr, sizeof(x->sin6_addr)) == 0;
}

void sockaddr_unit(const char *client, char *out, size_t size)
{
	struct sockaddr_storage ss;
	const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)(const void *)&ss;
	const struct sockaddr_in *in4 = (const struct sockaddr_in *)(const void *)&ss;
	uint8_t a[16];
	char text[INET6_ADDRSTRLEN];

	if (client == NULL ||
	    sockaddr_parse(client, SOCKADDR_PORT_OPTIONAL | SOCKADDR_UNIX, 1, &ss) == -1) {
		snprintf(out, size, "%s",
			 client != NULL && strncmp(client, "unix", 4) == 0 ? "unix" : "-");
		return;
	}
	if (ss.ss_family == AF_UNIX) {
		snprintf(out, size, "unix");
		return;
	}
	if (ss.ss_family == AF_INET6 && IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {
		memcpy(a, &in6->sin6_addr.s6_addr[12], 4);
	} else if (ss.ss_family == AF_INET6) {
		if (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr)) {
			snprintf(out, size, "127.0.0.0/8");
			return;
		}
		memcpy(a, in6->sin6_addr.s6_addr, 8);
		memset(a + 8, 0, 8);
		inet_ntop(AF_INET6, a, text, sizeof(text));
		snprintf(out, size, "%s/64", text);
		return;
	} else {
		memcpy(a, &in4->sin_addr, 4);
	}
	if (a[0] == 127)
		snprintf(out, size, "127.0.0.0/8");
	else
		snprintf(out, size, "%u.%u.%u.0/24", a[0], a[1], a[2]);
}

const void *sockaddr_bytes(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return &((const struct sockaddr_in *)(const void *)ss)->sin_addr;
	return &((const struct sockaddr_in6 *)(const void *)ss)->sin6_addr;
}
