/*
 * verdict.c: a policy verdict's refusal, worded for its client: it names
 * the grant that would allow the request, the approve and allow add
 * commands, to the principal that asked (refuse_verdict). refuse.c frames
 * the words; the connection's codec says them (exchange_refuse).
 */
#include "request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The one line naming the grant that would allow this target. */
static void grant_hint(const struct target *t, char *out, size_t size)
{
	bool bare = (t->via == GRANT_VIA_CONNECT && t->port == 443) ||
		    (t->via == GRANT_VIA_HTTP && t->port == 80);

	host_port_format(out, size, t->host.name, bare ? HOST_PORT_NONE : t->port);
}

/*
 * A not-granted refusal: its id, and the commands that grant it, by that
 * id or by hand, to the principal that asked when a grant is scoped to
 * others.
 */
static void refuse_ungranted(struct exchange *x, const struct verdict *v)
{
	struct session *s = x->conn;
	struct refusal ref = { .status = v->status, .reason = v->reason,
			       .proxy_status = v->proxy_status };
	char hint[HOST_NAME_MAX_LEN + 16], who[SESSION_WHO_MAX];
	struct policy_request pr = { 0 };

	grant_hint(&x->t, hint, sizeof(hint));
	session_principal(s, &pr, who, sizeof(who));
	if (refuse_id(ref.id) == -1) /* no id to approve by: the grant by hand alone */
		snprintf(ref.detail, sizeof(ref.detail),
			 "%s is not granted%s; to grant it run: sluice allow add %s%s%s", hint,
			 v->scoped != NULL ? " to this connection" : "", hint,
			 v->scoped != NULL && pr.who != NULL ? " --for " : "",
			 v->scoped != NULL && pr.who != NULL ? (pr.as != NULL ? pr.as : pr.who) : "");
	else if (v->scoped != NULL && pr.who == NULL)
		snprintf(ref.detail, sizeof(ref.detail),
			 "%s is granted only to the principals its grants name, and this connection "
			 "has no stamp; to grant it to every connection run: sluice allow approve %s "
			 "(or: sluice allow add %s)", hint, ref.id, hint);
	else if (v->scoped != NULL)
		snprintf(ref.detail, sizeof(ref.detail),
			 "%s is granted only to other principals; to grant it to this one run: sluice "
			 "allow approve %s (or: sluice allow add %s --for %s)", hint, ref.id, hint,
			 pr.as != NULL ? pr.as : pr.who);
	else
		snprintf(ref.detail, sizeof(ref.detail),
			 "%s is not granted; to grant it run: sluice allow approve %s (or: sluice allow "
			 "add %s)", hint, ref.id, hint);
	exchange_refuse(x, &ref);
}

void refuse_verdict(struct exchange *x, const struct verdict *v)
{
	if (strcmp(v->reason, "not-granted") == 0) {
		refuse_ungranted(x, v);
	} else if (strcmp(v->reason, "host-mismatch") == 0) {
		exchange_refusef(x, v->status, v->reason, v->proxy_status,
				 "the Host header names another host than the request target %s; "
				 "nothing to grant: send the request to the host it names",
				 x->t.host.name);
	} else if (strcmp(v->reason, "denied-ip") == 0 && x->t.host.kind != HOST_NAME) {
		const struct host *h = &x->t.host;

		dial_refuse_address(x, h->kind == HOST_IPV4 ? AF_INET : AF_INET6, &h->addr, v);
	} else {
		exchange_refusef(x, v->status, v->reason, v->proxy_status, "%s", v->detail);
	}
}
