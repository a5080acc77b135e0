/*
 * config_agent.c: what only an agent profile (etc/agents/NAME.conf) holds.
 *
 *   about TEXT...            one line for `sluice agents`
 *   sandbox-env NAME=VALUE   set in the run's sandbox (a dummy key the CLI
 *                            sends and sluice replaces, telemetry off)
 *   quiet HOST|*.SUFFIX      telemetry the agent tries: never allowed by the
 *                            profile, listed so nobody grants it by mistake;
 *                            the proxy refuses it to the profile's runs with
 *                            reason quiet (no refusal id, nothing offers it)
 *
 * The handed-over STATE/agents.conf holds `quiet HOST for=PRINCIPAL...` too
 * (cli/run_agent.c writes it): each principal a run of a profile listing
 * HOST. There a quiet line names at least one; in a profile, none.
 *
 * A profile's allow and inject lines are the config's own (config_allow.c,
 * config_tls.c); its inject rules read env=, which is the environment of
 * the `sluice run` that asks for the profile (cli/run_agent.c hands the
 * value over), never the proxy's.
 */
#include "config_parser.h"

#include <stdlib.h>
#include <string.h>

void config_agent_about(struct parser *p, char **w, size_t nw)
{
	struct config *c = p->c;
	size_t off = 0;

	for (size_t i = 1; i < nw; i++) {
		size_t n = strlen(w[i]);

		if (off + n + 2 > sizeof(c->agent_about)) {
			config_error(p, "about: longer than %d bytes", CONFIG_AGENT_ABOUT_MAX);
			return;
		}
		if (off > 0)
			c->agent_about[off++] = ' ';
		memcpy(c->agent_about + off, w[i], n + 1);
		off += n;
	}
}

static bool env_name_ok(const char *s, size_t n)
{
	if (n == 0 || (s[0] >= '0' && s[0] <= '9'))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return false;
	return true;
}

void config_agent_sandbox_env(struct parser *p, char **w, size_t nw)
{
	struct config *c = p->c;
	const char *eq = strchr(w[1], '=');
	char (*grown)[CONFIG_AGENT_ENV_MAX + 1];

	(void)nw;
	if (eq == NULL || !env_name_ok(w[1], (size_t)(eq - w[1]))) {
		config_error(p, "sandbox-env: expected NAME=VALUE, got \"%s\"", w[1]);
		return;
	}
	if (strlen(w[1]) > CONFIG_AGENT_ENV_MAX) {
		config_error(p, "sandbox-env: longer than %d bytes", CONFIG_AGENT_ENV_MAX);
		return;
	}
	if (c->nagent_env == CONFIG_AGENT_ENV_COUNT) {
		config_error(p, "sandbox-env: more than %d", CONFIG_AGENT_ENV_COUNT);
		return;
	}
	grown = realloc(c->agent_env, (c->nagent_env + 1) * sizeof(*grown));
	if (grown == NULL) {
		config_error(p, "sandbox-env: out of memory");
		return;
	}
	c->agent_env = grown;
	snprintf(c->agent_env[c->nagent_env++], sizeof(*grown), "%s", w[1]);
}

void config_agent_quiet(struct parser *p, char **w, size_t nw)
{
	struct config *c = p->c;
	struct grant *grown;
	struct grant g;
	const char *err = "bad host";

	if (grant_parse(w[1], strlen(w[1]), &g, &err) == -1 || g.port != 0) {
		config_error(p, "quiet: bad host \"%s\": %s", w[1], g.port != 0 ? "no port here" : err);
		return;
	}
	for (size_t i = 2; i < nw; i++) {
		if (strncmp(w[i], "for=", 4) != 0) {
			config_error(p, "quiet %s: expected for=PRINCIPAL, got \"%s\"", w[1], w[i]);
			return;
		}
		if (p->kind != CONFIG_HANDOVER) {
			config_error(p, "quiet %s: for= only in the handed-over agents.conf", w[1]);
			return;
		}
		if (grant_scope_add(&g, w[i] + 4, &err) == -1) {
			config_error(p, "quiet %s: bad for=\"%s\": %s", w[1], w[i] + 4, err);
			return;
		}
	}
	if (p->kind == CONFIG_HANDOVER && g.nscopes == 0) {
		config_error(p, "quiet %s: handed over, it names for=PRINCIPAL", w[1]);
		return;
	}
	grown = realloc(c->agent_quiet, (c->nagent_quiet + 1) * sizeof(*grown));
	if (grown == NULL) {
		config_error(p, "quiet: out of memory");
		return;
	}
	c->agent_quiet = grown;
	grown[c->nagent_quiet++] = g;
}

void config_agent_finish(struct parser *p)
{
	const struct config *c = p->c;

	for (size_t i = 0; i < c->nrules; i++) {
		const struct inject_rule *r = &c->rules[i];

		p->line = r->line;
		if (r->source != INJECT_ENV)
			config_error(p, "inject %s: a profile's rule reads env= (the key in the environment of "
				     "`sluice run --agent`)", r->name);
		else if (r->nprincipals != 0 || r->unattributed)
			config_error(p, "inject %s: no principal= or unattributed= in a profile: it serves "
				     "the run that asks for it", r->name);
	}
	for (size_t i = 0; i < c->nagent_quiet; i++)
		for (size_t j = 0; j < c->ngrants; j++)
			if (strcmp(c->grants[j].host, c->agent_quiet[i].host) == 0) {
				p->line = 0;
				config_error(p, "quiet %s: also allowed", c->agent_quiet[i].host);
			}
}
