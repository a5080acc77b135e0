/*
 * test_proxy_who.c: who a connection is, from its first head (proxy/who.c),
 * its neighbours faked: connections with no socket, a codec that records
 * refusals, a real policy, stamp keys and build tokens the test makes.
 * Checked: a verified stamp binds the connection (every later request
 * inherits it; a later head's stamp is not even read); no stamp, two, a
 * bad MAC, no keys: unattributed, not refused; a stamp seen before
 * refused (403 stamp-replay); a principal at max-connections-per-client
 * makes room by closing its oldest idle connection, else is refused (503
 * client-limit), a project's runs counted together; a live build token
 * makes the connection build:NAME over its stamp's as=, an unknown,
 * expired or malformed one is refused 407 with the words that mint one,
 * another Proxy-Authorization is left alone; a token removed or expired
 * closes its connections (session_builds_check), its row saying why.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buildtok.h"
#include "policy.h"
#include "proxy_fakes.h"
#include "request.h"

#define SECRET "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define OTHER "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"

struct who {
	struct fake_proxy *fp;
	struct stamp_key key;
};

static struct who up(const char *conf)
{
	struct who w = { .fp = fake_proxy_new(conf) };
	struct proxy *px = &w.fp->px;

	px->policy = policy_new(px->config, NULL, 0, false, NULL, 0, px->run_id, time(NULL));
	assert_non_null(px->policy);
	assert_int_equal(budget_init(px), 0);
	assert_int_equal(lograte_init(px), 0);
	assert_int_equal(limit_init(px), 0);
	assert_int_equal(replay_open(px), 0);
	w.key.kid = 1;
	memset(w.key.key, 0x5a, sizeof(w.key.key));
	px->keys[0] = w.key;
	px->nkeys = 1;
	fake_refusals_reset();
	return w;
}

static void down(struct who w)
{
	struct proxy *px = &w.fp->px;

	assert_true(list_empty(&px->sessions)); /* every connection freed */
	free(px->buildtoks);
	replay_close(px);
	limit_release(px);
	lograte_release(px);
	budget_release(px);
	policy_free(px->policy);
	fake_proxy_free(w.fp);
}

static struct session *conn(struct who *w)
{
	struct session *s = fake_session_new(&w->fp->px, NULL);

	s->codec = &fake_codec;
	return s;
}

/* A stamp's header line, signed with key (NULL: w's), for src@net as as. */
static void stamp_line(const struct who *w, const struct stamp_key *key, const char *src,
		       const char *net, const char *as, uint64_t seq, char *out, size_t size)
{
	struct stamp st = { .version = 1, .seq = seq, .boot = "00000000000000aa" };
	char v[STAMP_VALUE_MAX];

	key = key != NULL ? key : &w->key;
	st.kid = key->kid;
	snprintf(st.src, sizeof(st.src), "%s", src);
	snprintf(st.net, sizeof(st.net), "%s", net);
	snprintf(st.as, sizeof(st.as), "%s", as);
	assert_true(stamp_format(&st, key, v, sizeof(v)) > 0);
	snprintf(out, size, "%s: %s\r\n", STAMP_HEADER, v);
}

/* Proxy-Authorization: Basic of "USER:PASS". */
static void basic_line(const char *userpass, char *out, size_t size)
{
	unsigned char b64[256];

	assert_true(strlen(userpass) < 180);
	EVP_EncodeBlock(b64, (const unsigned char *)userpass, (int)strlen(userpass));
	snprintf(out, size, "Proxy-Authorization: Basic %s\r\n", b64);
}

/*
 * s's next request, a GET of allowed.test with the extra header lines
 * extra, begun as exchange.c begins one: exchange_start's return.
 */
static int request(struct session *s, const char *extra)
{
	char raw[2048];
	struct http_header hdrs[HEADERS_MAX];
	struct http_request req;
	int n = snprintf(raw, sizeof(raw), "GET http://allowed.test/ HTTP/1.1\r\n"
					   "Host: allowed.test\r\n%s\r\n", extra);

	assert_int_equal(http_parse_request(raw, (size_t)n, HEAD_MAX, &req, hdrs, HEADERS_MAX), n);
	assert_int_equal(exchange_new(s), 0);
	return exchange_start(s->x, &req);
}

/* The row of s's exchange is written and the connection goes idle between requests. */
static void idle(struct session *s)
{
	exchange_log(s->x);
	assert_true(session_idle(s));
}

static const char *who_of(const struct session *s)
{
	static char buf[SESSION_WHO_MAX];

	return session_who(s, buf, sizeof(buf));
}

#define POLICY "allow allowed.test\n"

static void test_stamp_bound(void **state)
{
	struct who w = up(POLICY);
	struct session *s = conn(&w), *t;
	char line[600], line2[600];

	assert_string_equal(who_of(s), "unattributed");
	stamp_line(&w, NULL, "10.88.0.5", "podman", "agent", 1, line, sizeof(line));
	assert_int_equal(request(s, line), 0);
	assert_int_equal(fake_refusals(), 0);
	assert_non_null(s->stamp);
	assert_string_equal(s->stamp->src, "10.88.0.5");
	assert_string_equal(s->stamp->net, "podman");
	assert_string_equal(s->stamp->as, "agent");
	assert_string_equal(s->stamp->boot, "00000000000000aa");
	assert_int_equal(s->stamp->seq, 1);
	assert_int_equal(s->stamp->kid, 1);
	assert_non_null(s->limit); /* counted against its principal */
	assert_string_equal(who_of(s), "10.88.0.5@podman");
	idle(s);

	/* its next request inherits it, with no stamp or another: a later one is not read */
	assert_int_equal(request(s, ""), 0);
	assert_string_equal(who_of(s), "10.88.0.5@podman");
	idle(s);
	stamp_line(&w, NULL, "10.88.0.9", "other", "", 2, line2, sizeof(line2));
	assert_int_equal(request(s, line2), 0);
	assert_string_equal(who_of(s), "10.88.0.5@podman");
	assert_int_equal(s->x->req, 3);
	idle(s);
	/* ... not even as a replay: sequence 2 is still unused */
	t = conn(&w);
	assert_int_equal(request(t, line2), 0);
	assert_string_equal(who_of(t), "10.88.0.9@other");
	assert_int_equal(fake_refusals(), 0);
	fake_session_free(t);
	fake_session_free(s);
	down(w);
}

static void test_stamp_unattributed(void **state)
{
	struct who w = up(POLICY);
	struct stamp_key wrong = { .kid = 1 };
	char good[600], other[600], bad[600], two[1200], stale[600];
	const char *heads[4];

	memset(wrong.key, 0x33, sizeof(wrong.key));
	stamp_line(&w, NULL, "10.88.0.5", "podman", "", 10, good, sizeof(good));
	stamp_line(&w, NULL, "10.88.0.6", "podman", "", 11, other, sizeof(other));
	stamp_line(&w, &wrong, "10.88.0.5", "podman", "", 12, bad, sizeof(bad));
	snprintf(two, sizeof(two), "%s%s", good, other); /* a forgery the forwarder would strip */
	snprintf(stale, sizeof(stale), "%s: v=1;garbage\r\n", STAMP_HEADER);
	heads[0] = two;
	heads[1] = bad;
	heads[2] = stale;
	heads[3] = "";
	for (size_t i = 0; i < 4; i++) {
		struct session *s = conn(&w);

		assert_int_equal(request(s, heads[i]), 0);
		assert_null(s->stamp);
		assert_null(s->limit);
		assert_string_equal(who_of(s), "unattributed");
		fake_session_free(s);
	}
	/* no keys: nothing verifies */
	w.fp->px.nkeys = 0;
	{
		struct session *s = conn(&w);

		assert_int_equal(request(s, good), 0);
		assert_null(s->stamp);
		fake_session_free(s);
	}
	/* the good one was never taken: with keys again, it binds */
	w.fp->px.nkeys = 1;
	{
		struct session *s = conn(&w);

		assert_int_equal(request(s, good), 0);
		assert_non_null(s->stamp);
		fake_session_free(s);
	}
	assert_int_equal(fake_refusals(), 0);
	down(w);
}

static void test_stamp_replay(void **state)
{
	struct who w = up(POLICY);
	struct session *a = conn(&w), *b = conn(&w);
	char line[600];

	stamp_line(&w, NULL, "10.88.0.5", "podman", "", 5, line, sizeof(line));
	assert_int_equal(request(a, line), 0);
	assert_int_equal(request(b, line), -1);
	assert_int_equal(fake_refusals(), 1);
	assert_int_equal(fake_refused(0)->status, 403);
	assert_string_equal(fake_refused(0)->reason, "stamp-replay");
	assert_string_equal(fake_refused(0)->proxy_status, "http_request_denied");
	assert_string_equal(fake_refused(0)->detail, "stamp of boot 00000000000000aa sequence 5 was "
						     "already used; a replayed stamp is refused");
	assert_null(b->stamp); /* not bound to what it replayed */
	assert_true(fake_refused(0)->logged);
	fake_session_free(b);
	fake_session_free(a);
	down(w);
}

static void test_stamp_cap(void **state)
{
	struct who w = up(POLICY "max-connections-per-client 1\n");
	struct session *a = conn(&w), *b = conn(&w), *c;
	char line[600];
	char *log;

	stamp_line(&w, NULL, "10.88.0.5", "podman", "", 1, line, sizeof(line));
	assert_int_equal(request(a, line), 0);
	/* a is busy (its request in flight): b of the same principal is refused */
	stamp_line(&w, NULL, "10.88.0.5", "podman", "", 2, line, sizeof(line));
	assert_int_equal(request(b, line), -1);
	assert_int_equal(fake_refusals(), 1);
	assert_int_equal(fake_refused(0)->status, 503);
	assert_string_equal(fake_refused(0)->reason, "client-limit");
	assert_string_equal(fake_refused(0)->proxy_status, "connection_limit_reached");
	assert_string_equal(fake_refused(0)->detail,
			    "10.88.0.5@podman holds too many connections, none idle "
			    "(max-connections-per-client 1); try again later");
	assert_false(a->closed);
	/* a goes idle: the next one closes it to make room, with a row saying so */
	idle(a);
	c = conn(&w);
	stamp_line(&w, NULL, "10.88.0.5", "podman", "", 3, line, sizeof(line));
	assert_int_equal(request(c, line), 0);
	assert_true(a->closed);
	assert_int_equal(fake_refusals(), 1);
	log = fake_proxy_log(w.fp);
	assert_int_equal(fake_count(log, "\"reason\":\"client-limit-idle\""), 1);
	free(log);
	fake_session_free(a); /* closed by the eviction */
	fake_session_free(b);
	fake_session_free(c);
	down(w);
}

static void test_stamp_project(void **state)
{
	struct who w = up(POLICY "max-connections-per-client 1\n");
	struct session *a = conn(&w), *b = conn(&w), *c = conn(&w);
	char line[600];

	/* a project's runs, wherever they are, count together */
	stamp_line(&w, NULL, "10.88.0.5", "podman", "project:demo/agent", 1, line, sizeof(line));
	assert_int_equal(request(a, line), 0);
	stamp_line(&w, NULL, "10.89.0.7", "other", "project:demo/agent", 2, line, sizeof(line));
	assert_int_equal(request(b, line), -1);
	assert_int_equal(fake_refused(0)->status, 503);
	assert_string_equal(fake_refused(0)->detail,
			    "10.89.0.7@other as project:demo/agent holds too many connections, none "
			    "idle (max-connections-per-client 1, the project's runs together); try "
			    "again later");
	/* another principal at the same address is counted apart */
	stamp_line(&w, NULL, "10.88.0.5", "podman", "other", 3, line, sizeof(line));
	assert_int_equal(request(c, line), 0);
	assert_int_equal(fake_refusals(), 1);
	fake_session_free(a);
	fake_session_free(b);
	fake_session_free(c);
	down(w);
}

/* The build tokens: ci (SECRET, live), old (OTHER, expired). */
static void tokens(struct who *w)
{
	struct proxy *px = &w->fp->px;

	px->buildtoks = calloc(2, sizeof(*px->buildtoks));
	assert_non_null(px->buildtoks);
	px->nbuildtoks = 2;
	snprintf(px->buildtoks[0].name, sizeof(px->buildtoks[0].name), "ci");
	buildtok_hash(SECRET, 64, px->buildtoks[0].hash);
	px->buildtoks[0].expires = time(NULL) + 3600;
	snprintf(px->buildtoks[1].name, sizeof(px->buildtoks[1].name), "old");
	buildtok_hash(OTHER, 64, px->buildtoks[1].hash);
	px->buildtoks[1].expires = time(NULL) - 1;
}

static void test_build(void **state)
{
	static const struct {
		const char *userpass;
		const char *word; /* refused: what the token is; NULL: not */
	} cases[] = {
		{ BUILDTOK_USER ":" OTHER, "expired" },
		{ BUILDTOK_USER ":" "0000000000000000000000000000000000000000000000000000000000000000",
		  "unknown" },
		{ BUILDTOK_USER ":short", "malformed" },
	};
	struct who w = up(POLICY);
	struct session *s;
	char line[300], sline[600], both[1000], want[400];
	char buf[SESSION_WHO_MAX];

	tokens(&w);
	/* a live token: build:ci; its stamp still says where the connection is from */
	s = conn(&w);
	basic_line(BUILDTOK_USER ":" SECRET, line, sizeof(line));
	stamp_line(&w, NULL, "10.88.0.5", "podman", "agent", 1, sline, sizeof(sline));
	snprintf(both, sizeof(both), "%s%s", line, sline);
	assert_int_equal(request(s, both), 0);
	assert_int_equal(fake_refusals(), 0);
	assert_non_null(s->build);
	assert_string_equal(s->build->as, "build:ci");
	assert_non_null(s->stamp);
	assert_string_equal(session_spender(s, buf, sizeof(buf)), "build:ci"); /* over as=agent */
	{
		struct policy_request pr = { 0 };

		session_principal(s, &pr, buf, sizeof(buf));
		assert_string_equal(pr.as, "build:ci");
		assert_string_equal(pr.src, "10.88.0.5");
	}
	fake_session_free(s);
	s = conn(&w);
	assert_int_equal(request(s, line), 0);
	assert_string_equal(who_of(s), "build:ci");
	fake_session_free(s);

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		fake_refusals_reset();
		s = conn(&w);
		basic_line(cases[i].userpass, line, sizeof(line));
		assert_int_equal(request(s, line), -1);
		assert_int_equal(fake_refusals(), 1);
		assert_int_equal(fake_refused(0)->status, 407);
		assert_string_equal(fake_refused(0)->reason, "build-token");
		assert_string_equal(fake_refused(0)->proxy_status, "http_request_denied");
		snprintf(want, sizeof(want),
			 "this build token is %s; mint one on the host with: sluice build-token new "
			 "--name NAME, and pass the URL it prints as the build's http_proxy",
			 cases[i].word);
		assert_string_equal(fake_refused(0)->detail, want);
		assert_null(s->build);
		fake_session_free(s);
	}
	/* not ours: left alone */
	fake_refusals_reset();
	s = conn(&w);
	basic_line("user:pass", line, sizeof(line));
	assert_int_equal(request(s, line), 0);
	assert_int_equal(request(s, "Proxy-Authorization: Bearer x\r\n"), 0);
	assert_null(s->build);
	assert_int_equal(fake_refusals(), 0);
	fake_session_free(s);
	/* only the first head's token counts: a later one is not read */
	s = conn(&w);
	assert_int_equal(request(s, ""), 0);
	basic_line(BUILDTOK_USER ":short", line, sizeof(line));
	assert_int_equal(request(s, line), 0);
	assert_null(s->build);
	fake_session_free(s);
	down(w);
}

static void test_builds_check(void **state)
{
	struct who w = up(POLICY);
	struct session *a = conn(&w), *b = conn(&w), *c = conn(&w);
	char line[300];
	char *log;

	tokens(&w);
	basic_line(BUILDTOK_USER ":" SECRET, line, sizeof(line));
	assert_int_equal(request(a, line), 0); /* its request in flight */
	assert_int_equal(request(b, line), 0);
	idle(b);
	assert_int_equal(request(c, ""), 0);
	/* still live: nothing closes */
	session_builds_check(&w.fp->px);
	assert_false(a->closed || b->closed || c->closed);
	/* the token removed: its connections close, the one in flight's row says why */
	w.fp->px.nbuildtoks = 0;
	session_builds_check(&w.fp->px);
	assert_true(a->closed);
	assert_true(b->closed);
	assert_false(c->closed);
	log = fake_proxy_log(w.fp);
	assert_int_equal(fake_count(log, "\"reason\":\"build-token\""), 1);
	assert_int_equal(fake_count(log, "build:ci's token was removed or expired: the connection "
					 "was closed"), 1);
	free(log);
	fake_session_free(a);
	fake_session_free(b);
	fake_session_free(c);
	down(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stamp_bound),   cmocka_unit_test(test_stamp_unattributed),
		cmocka_unit_test(test_stamp_replay),  cmocka_unit_test(test_stamp_cap),
		cmocka_unit_test(test_stamp_project), cmocka_unit_test(test_build),
		cmocka_unit_test(test_builds_check),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
