/*
 * who.c: who a connection is, from its first head: sluice-forward's
 * verified stamp (bound to the connection, counted against its principal's
 * connection cap) and a build token (build:NAME while the token lives,
 * checked again each second by session_builds_check). Everything later
 * asks session_who / session_principal (session.h).
 */
#include "request.h"

#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/*
 * Keep a verified stamp for the connection's life, in as many bytes as its
 * texts need (a struct stamp is 288). Returns 0 or -1.
 */
int session_stamp_keep(struct session *s, const struct stamp *st)
{
	size_t ls = strlen(st->src) + 1, ln = strlen(st->net) + 1, la = strlen(st->as) + 1;
	struct sess_stamp *k = malloc(sizeof(*k) + ls + ln + la);

	if (k == NULL)
		return -1;
	k->seq = st->seq;
	k->kid = st->kid;
	memcpy(k->boot, st->boot, sizeof(k->boot));
	memcpy(k->text, st->src, ls);
	memcpy(k->text + ls, st->net, ln);
	memcpy(k->text + ls + ln, st->as, la);
	k->src = k->text;
	k->net = k->text + ls;
	k->as = k->text + ls + ln;
	free(s->stamp);
	s->stamp = k;
	return 0;
}

/*
 * From its stamp on, a connection counts against the principal that asked
 * (containers behind one forwarder share its address), not the address; a
 * `sluice run`'s project (as=project:NAME[/AGENT]) across all its runs, on
 * whichever network each has. At its cap, its oldest idle connection is
 * closed to make room. Returns 0, or -1 when that principal holds its cap,
 * none idle (refused; the row names it).
 */
static int stamp_count(struct exchange *x, const struct stamp *st)
{
	struct session *s = x->conn;
	char key[sizeof(st->src) + sizeof(st->net) + sizeof(st->as) + 8];

	if (strncmp(st->as, "project:", 8) == 0)
		snprintf(key, sizeof(key), "p:%s", st->as);
	else
		snprintf(key, sizeof(key), "p:%s@%s/%s", st->src, st->net, st->as);
	/* at its cap: its oldest idle connection makes room, else this one is refused */
	if (limit_take(s->px, key, s) == NULL &&
	    (!session_evict_idle(s->px, key) || limit_take(s->px, key, s) == NULL)) {
		exchange_refusef(x, 503, "client-limit", "connection_limit_reached",
				 "%s@%s%s%s holds too many connections, none idle "
				 "(max-connections-per-client %u%s); try again later",
				 st->src, st->net, st->as[0] ? " as " : "", st->as,
				 config_per_client(session_config(s)),
				 strncmp(st->as, "project:", 8) == 0 ? ", the project's runs together"
								     : "");
		return -1;
	}
	return 0;
}

/*
 * The first head may carry a build token (lib/buildtok.h): Proxy-Authorization
 * Basic with user sluice-build. A live one makes the connection build:NAME; an
 * unknown, expired or malformed one is refused 407, saying how to mint one.
 * Any other Proxy-Authorization is not ours and is left alone (never sent on).
 * Returns 0, or -1 when refused.
 */
static int build_first_head(struct exchange *x, const struct http_request *req)
{
	struct session *s = x->conn;
	char secret[BUILDTOK_SECRET_LEN + 1];
	const struct buildtok *t;
	bool expired;
	size_t slen;
	int r = 0;

	for (size_t i = 0; i < req->nheaders && r == 0; i++)
		if (http_header_is(&req->headers[i], "Proxy-Authorization"))
			r = buildtok_auth_parse(req->headers[i].value, req->headers[i].value_len,
						secret, sizeof(secret), &slen);
	if (r == 0)
		return 0;
	t = r == 1 ? buildtok_find(s->px->buildtoks, s->px->nbuildtoks, secret, slen, time(NULL),
				   &expired)
		   : NULL;
	explicit_bzero(secret, sizeof(secret));
	if (t == NULL) {
		exchange_refusef(x, 407, "build-token", "http_request_denied",
				 "this build token is %s; mint one on the host with: sluice "
				 "build-token new --name NAME, and pass the URL it prints as the "
				 "build's http_proxy",
				 r == -1 ? "malformed" : expired ? "expired" : "unknown");
		return -1;
	}
	s->build = malloc(sizeof(*s->build) + sizeof("build:") + strlen(t->name));
	if (s->build == NULL) {
		session_close(s, "out of memory");
		return -1;
	}
	memcpy(s->build->hash, t->hash, sizeof(s->build->hash));
	sprintf(s->build->as, "build:%s", t->name);
	return 0;
}

/* Whether the build token s named is still in the file and unexpired at now. */
static bool build_live(const struct session *s, time_t now)
{
	for (size_t i = 0; i < s->px->nbuildtoks; i++) {
		const struct buildtok *t = &s->px->buildtoks[i];

		if (CRYPTO_memcmp(t->hash, s->build->hash, sizeof(t->hash)) == 0 && now < t->expires)
			return true;
	}
	return false;
}

void session_builds_check(struct proxy *px)
{
	time_t now = time(NULL);

	struct list_node *n, *next;

	list_foreach_safe(n, next, &px->sessions) {
		struct session *s = list_entry(n, struct session, link);

		if (s->build == NULL || s->closed || build_live(s, now))
			continue;
		if (s->x != NULL && s->x->active) {
			s->x->decision = "refuse";
			s->x->reason = "build-token";
			snprintf(s->x->detail, sizeof(s->x->detail),
				 "%s's token was removed or expired: the connection was closed",
				 s->build->as);
		}
		session_close(s, "the build token was removed or expired");
	}
}

/*
 * The first head of a connection may carry sluice-forward's stamp: exactly
 * one Sluice-Stamp header with a MAC under a live key. Then the connection
 * is bound to it (every later request inherits it). None, several (client
 * forgeries the forwarder would have stripped), a bad MAC or no keys: the
 * connection is unattributed. A valid stamp seen before is a replay and is
 * refused. Returns 0, or -1 when refused.
 */
int session_stamp_first_head(struct exchange *x, const struct http_request *req)
{
	struct session *s = x->conn;
	const struct http_header *h = NULL;
	const char *err = NULL;
	struct stamp st;
	size_t n = 0;

	for (size_t i = 0; i < req->nheaders; i++) {
		if (http_header_is(&req->headers[i], STAMP_HEADER)) {
			h = &req->headers[i];
			n++;
		}
	}
	if (build_first_head(x, req) == -1)
		return -1;
	if (n != 1 || s->px->nkeys == 0 ||
	    stamp_parse(h->value, h->value_len, &st, &err) == -1 ||
	    !stamp_verify(&st, h->value, s->px->keys, s->px->nkeys, time(NULL)))
		return 0;
	if (!stamp_replay_check(s->px->replay, st.boot, st.seq)) {
		exchange_refusef(x, 403, "stamp-replay", "http_request_denied",
				 "stamp of boot %s sequence %llu was already used; a replayed stamp "
				 "is refused",
				 st.boot, (unsigned long long)st.seq);
		return -1;
	}
	if (session_stamp_keep(s, &st) == -1) {
		session_close(s, "out of memory");
		return -1;
	}
	return stamp_count(x, &st);
}
