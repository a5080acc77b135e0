/*
 * run_principal.c: who a `sluice run` is, to the proxy (run.h): the
 * principal its forwarder stamps on every connection, and the source it
 * names. The one place the run's principal is chosen; run_scope_word
 * hands it on (run_agent.c's hand-over names it).
 *
 * It decides nothing else and starts nothing.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ports.h"
#include "run.h"

/*
 * Who the run is, to the proxy. Its principal outlives it: every
 * connection its forwarder stamps says as=project:NAME (sluice-forward
 * --as), or with --name AGENT project:NAME/AGENT, so grants, budgets and
 * connection caps are the project's (the agent's), shared by its runs
 * and kept for the next (`allow approve` of its refusal grants to it).
 * NAME is --project's, else the current directory's (ports_name_of: its
 * basename and a hash of its path; the registry keeps the path). Each
 * stamp also names one source (sluice-forward --src), whatever address
 * CMD binds, on the run's own network sluice-ID (the row's who, and its
 * "sandbox"): without --image 127.0.0.1; with it, the container's own
 * address, which it is given (--ip: the one after the gateway, gw on the
 * bridge), so `sluice log` names the container from the engine's
 * snapshot. The one place the run's principal is chosen. Returns 0, or
 * -1 after printing.
 */
int run_principal(struct run *x, const struct sockaddr_storage *gw)
{
	char name[PORTS_NAME_MAX + 1], cwd[PATH_MAX];
	struct in_addr a;

	if (gw == NULL) {
		if (x->o.project != NULL) {
			snprintf(name, sizeof(name), "%s", x->o.project);
		} else if (realpath(".", cwd) != NULL) {
			ports_name_of(cwd, strlen(cwd), name);
		} else {
			fprintf(stderr, "run: the current directory: %s; use --project NAME\n",
				strerror(errno));
			return -1;
		}
		snprintf(x->principal_as, sizeof(x->principal_as), "project:%s%s%s", name,
			 x->o.name != NULL ? "/" : "", x->o.name != NULL ? x->o.name : "");
		snprintf(x->principal_src, sizeof(x->principal_src), "127.0.0.1");
		return 0;
	}
	a.s_addr = htonl(ntohl(((const struct sockaddr_in *)(const void *)gw)->sin_addr.s_addr) + 1);
	if (inet_ntop(AF_INET, &a, x->principal_src, sizeof(x->principal_src)) == NULL) {
		fprintf(stderr, "run: podman network %s: no address after its gateway\n", x->r.name);
		return -1;
	}
	return 0;
}

const char *run_scope_word(const struct run *x, char *buf, size_t size)
{
	snprintf(buf, size, "%s", x->principal_as);
	return buf;
}
