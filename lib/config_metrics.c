/*
 * config_metrics.c: metrics-listen and dns-metrics-listen (config.h), the
 * addresses where sluice-proxy and sluice-dns serve GET /metrics
 * (lib/metrics.h). Both are off unless given; a bare PORT is 127.0.0.1:PORT,
 * so what is not asked for stays on loopback.
 */
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "config_parser.h"
#include "host.h"
#include "sockaddr.h"

#define LOOPBACK "127.0.0.1"

/* ADDR:PORT, [V6]:PORT or a bare PORT (1..65535) into ss. Returns 0 or -1 after an error. */
static int metrics_addr(struct parser *p, const char *dir, const char *s,
			struct sockaddr_storage *ss)
{
	size_t n = strspn(s, "0123456789");

	if (n > 0 && s[n] == '\0' && n <= 5) {
		uint16_t port;
		char text[32];

		if (host_port_number(s, n, HOST_PORT_NO_ZERO, &port) == 0) {
			snprintf(text, sizeof(text), LOOPBACK ":%u", (unsigned)port);
			if (sockaddr_parse(text, 0, 0, ss) == 0)
				return 0;
		}
	} else if (sockaddr_parse(s, 0, 0, ss) == 0) {
		return 0;
	}
	config_error(p, "%s: bad address \"%s\": expected a numeric ADDR:PORT, [ADDR]:PORT or "
			"a PORT (1..65535) on " LOOPBACK, dir, s);
	return -1;
}

void config_metrics_listen(struct parser *p, char **w, size_t nw)
{
	if (metrics_addr(p, "metrics-listen", w[1], &p->c->metrics_listen) == 0)
		p->c->metrics_on = true;
}

void config_dns_metrics_listen(struct parser *p, char **w, size_t nw)
{
	if (metrics_addr(p, "dns-metrics-listen", w[1], &p->c->dns_metrics_listen) == 0)
		p->c->dns_metrics_on = true;
}

void config_metrics_print(const struct config *c, bool dns, FILE *out)
{
	const char *name = dns ? "dns-metrics-listen" : "metrics-listen";
	char buf[64];

	if (dns ? !c->dns_metrics_on : !c->metrics_on)
		fprintf(out, "# %s: none given, no metrics served\n", name);
	else
		fprintf(out, "%s %s\n", name,
			sockaddr_format(dns ? &c->dns_metrics_listen : &c->metrics_listen, buf,
					sizeof(buf)));
}
