/*
 * policy.h: the one function that decides whether a request may leave.
 *
 * Every path (plain HTTP, CONNECT, later every request decrypted inside
 * TLS and every re-dial) asks policy_judge about the name and port, then
 * policy_judge_addr about each address the name resolved to, and dials
 * only an address that passed. A policy is an immutable snapshot: a reload
 * builds a new one and re-judges open connections against it.
 *
 * Observe mode relaxes only the grant check (a would-be refusal is allowed
 * and marked observed). A Host header naming another host, a denied
 * destination address and malformed targets are refused in both modes.
 */
#ifndef SLUICE_POLICY_H
#define SLUICE_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "config.h"
#include "grant.h"
#include "host.h"
#include "iprange.h"

struct policy {
	enum policy_mode mode; /* judge with policy_mode_at: a learn window ends by the clock */
	time_t learn_until;    /* a learn window: observe until then, enforce after; 0 none */
	struct grant *grants; /* config grants then store grants; owned */
	size_t ngrants;
	size_t nbudgeted;     /* of them, those with a budget (grant_budgeted) */
	struct config_exception *exceptions; /* owned copy */
	size_t nexceptions;
	struct ipnet *own; /* the proxy's own addresses (/32, /128); owned */
	size_t nown;
	struct grant *quiet; /* the handed-over quiet hosts (config.h agent_quiet); owned */
	size_t nquiet;
	char run_id[GRANT_RUN_ID_LEN + 1]; /* this proxy run, for session grants */
	bool store_damaged;                /* store unreadable: its grants are absent */
};

struct policy_request {
	enum grant_via via;
	const struct host *host; /* the destination, canonical */
	uint16_t port;
	const struct host *host_header; /* canonical Host header host, or NULL */
	/* the connection's principal (grant_serves): who "src@net" or NULL when unattributed */
	const char *who;
	const char *src;
	const char *as; /* NULL or "": the stamp carries none */
};

struct verdict {
	bool allow;    /* the request may proceed */
	bool observed; /* refused by grants, allowed because of observe mode */
	int status;    /* HTTP status when !allow: 403 */
	const char *reason;       /* short code for logs: "granted", "not-granted", "quiet",
				     "host-mismatch", "denied-ip", "own-address" */
	const char *proxy_status; /* RFC 9209 error type when !allow or observed */
	const struct grant *grant; /* the grant that allowed it, or NULL */
	const struct scope *by;    /* ... and its scope that matched, or NULL (unscoped) */
	const struct grant *scoped; /* refused: a live grant covering it for others, or NULL */
	bool tunnel; /* allowed, a CONNECT, and a live tunnel grant serving it names it: relay raw */
	char detail[320];          /* "10.1.2.3 is in denied range 10.0.0.0/8", "" if none;
				      room for any name with its port */
};

/*
 * Build a snapshot from a config and the store's grants (copied). Grants
 * not live at now are left out. own lists the proxy's own addresses.
 * Returns NULL on allocation failure.
 */
struct policy *policy_new(const struct config *c, const struct grant *store, size_t nstore,
			  bool store_damaged, const struct ipnet *own, size_t nown,
			  const char *run_id, time_t now);
void policy_free(struct policy *p);

/*
 * Take the grant store's mode over the config's, when the store has one
 * (grant.h: enforce, observe, or learn until a time).
 */
void policy_set_mode(struct policy *p, const struct grant_mode *m);

/* The mode at now: a learn window observes until its end and enforces from then on. */
enum policy_mode policy_mode_at(const struct policy *p, time_t now);

/* Its name for a daemon's log line: "enforce", "observe", or "learn" while a window is open. */
const char *policy_mode_name(const struct policy *p, time_t now);

/*
 * Judge a destination name and port for the connection's principal (a
 * scoped grant serves only the principals it names; an unattributed
 * connection only unscoped grants). A Host header naming another host
 * (or the same host on another explicit port is NOT checked here: the
 * caller compares ports) refuses with "host-mismatch". An IP-literal host
 * is also judged as by policy_judge_addr. now decides once-grant expiry.
 * The verdict's grant is the first that serves the request, unless a later
 * one that serves it carries a budget: then that one, so its budget brakes
 * the request whichever grant came first. A request no grant serves to a
 * quiet host (an agent profile's telemetry) of a principal the quiet line
 * names is refused with "quiet", in observe mode too; else "not-granted".
 */
void policy_judge(const struct policy *p, const struct policy_request *r, time_t now,
		  struct verdict *v);

/*
 * Judge one resolved address for host h. Denied when it lies in the deny
 * list (unless an allow-private exception names h and a range holding it)
 * or is one of the proxy's own addresses. Fills v (allow true when fine).
 */
void policy_judge_addr(const struct policy *p, const struct host *h, int family,
		       const void *addr, struct verdict *v);

#endif
