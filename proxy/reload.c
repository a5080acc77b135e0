/*
 * reload.c: keeping the policy current without a restart.
 *
 * The policy is rebuilt from the config file, the grant store written by
 * `sluice allow` (STATE/grants) and the machine's own addresses, whenever
 * SIGHUP arrives or either file changes (checked every second). A config
 * with errors is refused and the running one kept; a damaged store means
 * enforcing with no stored grants, said loudly with the file's name. A
 * config's `intercept` takes effect at the next CONNECT (tls.c: turning it
 * on in a proxy started without it reads the CA then, and a CA that cannot
 * be read refuses the config, naming the directive); open tunnels stay as
 * they began. After a rebuild every open connection is re-judged (session.c). A once grant
 * reaching its expiry also rebuilds the policy, but does not cut
 * connections it already let through: expiry is not an operator narrowing.
 * The end of a learn window (`sluice allow enforce learn --for D`) is: the
 * policy enforces from then on by the clock (policy_mode_at), and every
 * open connection is re-judged once, so what the window let open and no
 * grant serves is closed.
 */
#include "request.h"
#include "file.h"
#include "runfile.h"
#include "store.h"
#include "buildtok.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#define WATCH_MS 1000

static time_t next_expiry; /* earliest once-grant expiry in the store, 0 none */
static time_t learn_done;  /* the learn window whose end re-judged the connections */

/*
 * The stamp keys (STATE/stamp.key, written by `sluice key`). Missing: no
 * stamp verifies and every connection is unattributed. Damaged: the same,
 * said loudly; attribution never fails open into a wrong name.
 */
static void load_keys(struct proxy *px)
{
	const char *path = px->watch_keys.path;
	size_t len, line = 0;
	const char *err = NULL;
	char *buf;

	px->nkeys = 0;
	if (file_read(path, 64 * 1024, &buf, &len) == -1) {
		if (errno != ENOENT)
			fprintf(stderr, "sluice-proxy: ERROR: stamp keys %s unreadable: %s; every "
					"connection is unattributed\n", path, strerror(errno));
		return;
	}
	if (stamp_keys_parse(buf, len, px->keys, STAMP_KEYS_MAX, &px->nkeys, &line, &err) == -1) {
		fprintf(stderr, "sluice-proxy: ERROR: stamp keys %s:%zu: %s; every connection is "
				"unattributed\n", path, line, err);
		px->nkeys = 0;
	}
	explicit_bzero(buf, len);
	free(buf);
}

/*
 * The build tokens (STATE/build-tokens, written by `sluice build-token`).
 * Missing: no build token is known. Damaged: the same, said loudly; a
 * token that cannot be read never names a build.
 */
static void load_buildtoks(struct proxy *px)
{
	const char *path = px->watch_buildtoks.path;
	size_t len, line = 0, n = 0;
	const char *err = NULL;
	struct buildtok *t;
	char *buf;

	free(px->buildtoks);
	px->buildtoks = NULL;
	px->nbuildtoks = 0;
	if (file_read(path, 1024 * 1024, &buf, &len) == -1) {
		if (errno != ENOENT)
			fprintf(stderr, "sluice-proxy: ERROR: build tokens %s unreadable: %s; no "
					"build token is known\n", path, strerror(errno));
		return;
	}
	t = calloc(BUILDTOK_MAX, sizeof(*t));
	if (t == NULL || buildtok_file_parse(buf, len, t, BUILDTOK_MAX, &n, &line, &err) == -1) {
		fprintf(stderr, "sluice-proxy: ERROR: build tokens %s:%zu: %s; no build token is "
				"known\n", path, line, t == NULL ? "out of memory" : err);
		free(t);
		t = NULL;
		n = 0;
	}
	free(buf);
	px->buildtoks = t;
	px->nbuildtoks = n;
}

static int rebuild(struct proxy *px)
{
	struct policy *p;

	load_keys(px);
	load_buildtoks(px);
	p = store_policy(px->config, px->watch_store.path, px->run_id, "sluice-proxy",
			 &next_expiry);
	if (p == NULL)
		return -1;
	policy_free(px->policy);
	px->policy = p;
	return 0;
}

/*
 * After a reload: a connection whose target, or any address its target
 * resolved to, the new policy refuses is closed with a row saying so; the
 * rest are untouched. Idle keep-alive upstreams are dropped when refused
 * (the next request is judged anyway).
 */
static void rejudge_all(struct proxy *px)
{
	time_t now = time(NULL);

	struct list_node *n, *next;

	list_foreach_safe(n, next, &px->sessions) {
		struct session *s = list_entry(n, struct session, link);
		struct policy_request pr = { 0 };
		struct verdict v;
		char who[SESSION_WHO_MAX];
		/*
		 * A request judged and waiting to be sent again (re-issued after a
		 * 401, back in the head state behind an unflushed 1xx) is in flight too:
		 * it resumes at its credential, never judged again, so judge it here.
		 */
		/* a tunnel whose upstream is done still relays what the client sends: judged too */
		bool busy = s->x != NULL &&
			    ((s->x->active && ((s->st != &h1_head_state && s->st != &session_drain_state) ||
					       s->x->phase == XP_CREDENTIAL)) ||
			     s->st == &tunnel_state);
		struct target kept;
		const struct target *t = &kept;

		session_principal(s, &pr, who, sizeof(who));
		if (s->h2 != NULL) {
			/* every stream goes to the tunnel's host, on the one upstream */
			pr.via = s->ix->tunnel.via;
			pr.host = &s->ix->tunnel.host;
			pr.port = s->ix->tunnel.port;
			policy_judge(px->policy, &pr, now, &v);
			if (v.allow && s->up != NULL)
				dial_up_judge(px->policy, s->up, &s->ix->tunnel.host, &v);
			if (!v.allow)
				h2_revoke(s, &v);
			continue;
		}
		if (!busy && (s->ufd < 0 || s->up == NULL))
			continue;
		if (busy)
			t = &s->x->t;
		else
			dial_up_target(s->up, &kept);
		pr.via = t->via;
		pr.host = &t->host;
		pr.port = t->port;
		policy_judge(px->policy, &pr, now, &v);
		/*
		 * Every address of the answer set, not only the one in use: a
		 * replay or a failed connect dials the later ones, and a new
		 * request would be refused if any of them is now denied. An idle
		 * kept-alive upstream keeps its answer set for this (dial_reuse).
		 */
		if (busy)
			for (size_t i = 0; v.allow && i < s->x->ndial; i++)
				policy_judge_addr(px->policy, &t->host, s->x->dial[i].ss_family,
						  sockaddr_bytes(&s->x->dial[i]), &v);
		else
			dial_up_judge(px->policy, s->up, &t->host, &v);
		/* a raw tunnel stands only while a tunnel grant serves it: a plain one would intercept */
		if (v.allow && !(busy && s->x->raw_tunnel && !v.tunnel))
			continue;
		if (!busy) {
			session_upstream_close(s);
			session_update_interest(s);
			continue;
		}
		s->x->decision = "refuse";
		s->x->reason = "revoked";
		if (v.allow)
			snprintf(s->x->detail, sizeof(s->x->detail),
				 "closed by a policy reload: no tunnel grant serves it raw now");
		else
			snprintf(s->x->detail, sizeof(s->x->detail), "closed by a policy reload: %s",
				 v.detail[0] ? v.detail : v.reason);
		session_close(s, NULL);
	}
}


void reload_now(struct proxy *px, const char *why)
{
	bool cfg_ok = true; /* counted as one reload: failed when either part failed */

	if (px->config_path[0] != '\0') {
		struct config *c = config_new();

		if (c == NULL || config_load(c, px->config_path, stderr) != 0) {
			fprintf(stderr, "sluice-proxy: reload (%s): %s has errors; keeping the "
					"running config\n", why, px->config_path);
			config_free(c);
			cfg_ok = false;
		} else {
			if (strcmp(c->state_dir, px->config->state_dir) != 0 ||
			    strcmp(c->log_path, px->config->log_path) != 0 ||
			    c->log_chain != px->config->log_chain ||
			    strcmp(c->user, px->config->user) != 0 ||
			    c->nlisten != px->config->nlisten ||
			    c->metrics_on != px->config->metrics_on ||
			    (c->metrics_on && !sockaddr_same(&c->metrics_listen,
							     &px->config->metrics_listen)) ||
			    memcmp(c->listen, px->config->listen,
				   c->nlisten * sizeof(c->listen[0])) != 0 ||
			    c->nnameservers != px->config->nnameservers ||
			    memcmp(c->nameservers, px->config->nameservers,
				   c->nnameservers * sizeof(c->nameservers[0])) != 0)
				fprintf(stderr, "sluice-proxy: reload: listen, metrics-listen, state, log, "
						"log-chain, user and nameserver changes take effect at "
						"the next start\n");
			/* keep what is bound to this process: listeners, files */
			memcpy(c->listen, px->config->listen, sizeof(c->listen));
			c->nlisten = px->config->nlisten;
			memcpy(c->state_dir, px->config->state_dir, sizeof(c->state_dir));
			memcpy(c->log_path, px->config->log_path, sizeof(c->log_path));
			c->log_chain = px->config->log_chain;
			memcpy(c->user, px->config->user, sizeof(c->user));
			c->metrics_on = px->config->metrics_on; /* bound too (stats.c) */
			c->metrics_listen = px->config->metrics_listen;
			if (tls_reload(px, c) == -1) {
				fprintf(stderr, "sluice-proxy: reload (%s): intercept on cannot take "
						"effect (above); keeping the running config\n", why);
				config_free(c);
				cfg_ok = false;
			} else {
				if (c->intercept != px->config->intercept)
					fprintf(stderr, "sluice-proxy: reload: intercept %s: new CONNECTs "
							"are %s; open tunnels stay as they began\n",
						c->intercept ? "on" : "off",
						c->intercept ? "decrypted (but passthrough hosts)"
							     : "tunnelled");
				config_free(px->config);
				px->config = c;
			}
		}
	}
	if (rebuild(px) == 0) {
		fprintf(stderr, "sluice-proxy: policy reloaded (%s): mode %s, %zu grants%s\n", why,
			policy_mode_name(px->policy, time(NULL)),
			px->policy->ngrants,
			px->policy->store_damaged ? ", grant store DAMAGED" : "");
		stats_reload(cfg_ok);
		rejudge_all(px);
	} else {
		stats_reload(false);
	}
}

static void on_watch(struct loop *l, struct loop_timer *t)
{
	struct proxy *px = t->arg;
	bool cfg_changed = px->config_path[0] != '\0' && watch_changed(&px->watch_config);
	bool store_changed = watch_changed(&px->watch_store);
	bool keys_changed = watch_changed(&px->watch_keys);
	bool toks_changed = watch_changed(&px->watch_buildtoks);

	if (cfg_changed || store_changed || keys_changed) {
		reload_now(px, cfg_changed ? "config changed"
			       : store_changed ? "grant store changed" : "stamp keys changed");
	} else if (toks_changed) {
		load_buildtoks(px);
	} else if (next_expiry != 0 && time(NULL) >= next_expiry) {
		rebuild(px); /* an expired once grant: no re-judging, see above */
	} else if (px->policy->learn_until != 0 && px->policy->learn_until != learn_done &&
		   time(NULL) >= px->policy->learn_until) {
		learn_done = px->policy->learn_until;
		fprintf(stderr, "sluice-proxy: the learn window ended: enforcing\n");
		rejudge_all(px);
	}
	/* a build token removed or past its expiry no longer names a build: close its connections */
	session_builds_check(px);
	sandbox_scan(px);
	loop_timer_set(l, t, WATCH_MS, on_watch, px);
}

/*
 * STATE/proxy.run (lib/runfile.h): our run id, pid and listeners, share-
 * locked for as long as this process lives (px->run_fd). Written after the
 * listeners are open, so its presence means the proxy answers.
 */
static int write_run_id(struct proxy *px)
{
	struct runfile rf = { .pid = getpid() };

	for (size_t i = 0; i < px->nlisteners && rf.nlisten < RUNFILE_LISTEN_MAX; i++)
		rf.listen[rf.nlisten++] = px->listeners[i].addr;
	px->run_fd = runfile_write(px->config->state_dir, "proxy.run", &rf);
	if (px->run_fd == -1)
		return -1;
	memcpy(px->run_id, rf.id, sizeof(px->run_id));
	return 0;
}

static void remove_run_id(struct proxy *px)
{
	runfile_remove(px->config->state_dir, "proxy.run", px->run_fd);
	px->run_fd = -1;
}

int reload_init(struct proxy *px)
{
	if (write_run_id(px) == -1) {
		fprintf(stderr, "sluice-proxy: %s/proxy.run: %s\n", px->config->state_dir,
			strerror(errno));
		return -1;
	}
	snprintf(px->watch_config.path, sizeof(px->watch_config.path), "%s", px->config_path);
	snprintf(px->watch_store.path, sizeof(px->watch_store.path), "%s/grants",
		 px->config->state_dir);
	snprintf(px->watch_keys.path, sizeof(px->watch_keys.path), "%s/stamp.key",
		 px->config->state_dir);
	snprintf(px->watch_buildtoks.path, sizeof(px->watch_buildtoks.path), "%s/build-tokens",
		 px->config->state_dir);
	watch_changed(&px->watch_keys);
	watch_changed(&px->watch_buildtoks);
	if (px->config_path[0] != '\0')
		watch_changed(&px->watch_config);
	watch_changed(&px->watch_store);
	if (rebuild(px) == -1) {
		remove_run_id(px);
		return -1;
	}
	sandbox_init(px);
	loop_timer_set(px->loop, &px->watch_timer, WATCH_MS, on_watch, px);
	return 0;
}

void reload_release(struct proxy *px)
{
	loop_timer_cancel(px->loop, &px->watch_timer);
	remove_run_id(px);
	policy_free(px->policy);
	px->policy = NULL;
	free(px->buildtoks);
	px->buildtoks = NULL;
	px->nbuildtoks = 0;
}
