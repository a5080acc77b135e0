/*
 * test_proxy_h1.c: HTTP/1.1's codec fed a request head as a byte stream
 * (proxy/h1.c's h1_head_state's step), with no socket: the connection
 * is a fake one whose client is an empty pipe (proxy_fakes.h), a real
 * policy judges, the codec's own refusal answers into cout, and dial_start
 * is the fakes' recording dialer. Each head is cut at every offset: its
 * first N bytes are in cin and the step runs (it must wait, judging
 * nothing, unless what it has is already wrong), then the rest comes,
 * into cin or through the pipe, and the step runs again. At every cut
 * the outcome is the one of the whole head at once: the same judgement,
 * the same dial (or none), the same head upstream, the same refusal on
 * the wire and the same one row. Heads: allowed GET and CONNECT, a
 * refused one (403, a fresh id each time), malformed ones (400, the kind
 * named), too many header lines (431), a head over HEAD_MAX (431, cut at
 * a stride of offsets: it is 32 KiB long). And a head that waits for its
 * credential's token command (a real one, run on the loop) resumes where
 * it waited when the token is minted: judged once, its budget charged
 * once, sent with the credential.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "policy.h"
#include "proxy_fakes.h"
#include "request.h"

#define POLICY "allow allowed.test\n"

struct h1 {
	struct fake_proxy *fp;
	struct session *s; /* the connection of the cut being tried */
	int feed;          /* its client's side of the pipe */
};

/*
 * A proxy and its policy (no row budget: a cut's row is never held back
 * by the cuts before it).
 */
static struct h1 up(const char *conf)
{
	struct h1 h = { .fp = fake_proxy_new(conf), .feed = -1 };
	struct proxy *px = &h.fp->px;

	px->policy = policy_new(px->config, NULL, 0, false, NULL, 0, px->run_id, time(NULL));
	assert_non_null(px->policy);
	assert_int_equal(budget_init(px), 0);
	return h;
}

static void down(struct h1 h)
{
	struct proxy *px = &h.fp->px;

	budget_release(px);
	policy_free(px->policy);
	fake_proxy_free(h.fp);
}

/* A new connection of h's proxy: HTTP/1.1's codec, nothing read yet; the log emptied. */
static void conn_new(struct h1 *h)
{
	assert_int_equal(truncate(h->fp->log_path, 0), 0); /* the netlog appends */
	h->s = fake_session_new(&h->fp->px, &h->feed);
	assert_ptr_equal(h->s->codec, &h1_codec);
	fake_dials_reset();
}

static void conn_free(struct h1 *h)
{
	close(h->feed);
	if (h->s->x != NULL)
		h->s->x->active = false; /* an allowed one's row would come at its end */
	fake_session_free(h->s);
	h->s = NULL;
}

/* text with every occurrence of id (when not "") replaced by "ID" (caller frees). */
static char *redact(const char *text, size_t len, const char *id)
{
	char *out = malloc(len + 1), *o = out;
	size_t idlen = strlen(id);

	assert_non_null(out);
	for (size_t i = 0; i < len;) {
		if (idlen > 0 && i + idlen <= len && memcmp(text + i, id, idlen) == 0) {
			memcpy(o, "ID", 2);
			o += 2;
			i += idlen;
			continue;
		}
		*o++ = text[i++];
	}
	*o = '\0';
	return out;
}

/*
 * What became of h's head, as text to compare: the state, the dials, the
 * exchange's judgement, what is left in cin, what went into uout and cout,
 * and the rows, their fields from "kind" to "dialed" (no times); a
 * refusal's id as ID. Caller frees.
 */
static char *outcome(const struct h1 *h)
{
	const struct session *s = h->s;
	const struct exchange *x = s->x;
	const char *id = x != NULL ? x->refusal : "";
	char *log = fake_proxy_log(h->fp), *rows = NULL, *rrows, *xline, *cout, *uout, *out = NULL;
	char xbuf[1024];
	size_t rlen = 0, olen = 0;
	FILE *r = open_memstream(&rows, &rlen), *o;

	assert_non_null(r);
	for (char *line = strtok(log, "\n"); line != NULL; line = strtok(NULL, "\n")) {
		char *a = strstr(line, "\"kind\""), *b = strstr(line, ",\"dialed\"");

		assert_non_null(a);
		assert_non_null(b);
		fprintf(r, "%.*s\n", (int)(b - a), a);
	}
	fclose(r);
	rrows = redact(rows, rlen, id);
	cout = redact(buf_head(&s->cout), buf_len(&s->cout), id);
	uout = redact(buf_head(&s->uout), buf_len(&s->uout), id);
	o = open_memstream(&out, &olen);
	assert_non_null(o);
	fprintf(o, "state %s closed %d nreq %llu\n", s->st->name, s->closed,
		(unsigned long long)s->nreq);
	for (size_t i = 0; i < fake_dials(); i++)
		fprintf(o, "dial %s:%u%s\n", fake_dialed(i)->host, fake_dialed(i)->port,
			fake_dialed(i)->connect ? " connect" : "");
	if (x != NULL) {
		snprintf(xbuf, sizeof(xbuf), "x active %d phase %d decision %s reason %s status %d "
			 "detail %s\n", x->active, x->phase, x->decision != NULL ? x->decision : "-",
			 x->reason != NULL ? x->reason : "-", x->status, x->detail);
		xline = redact(xbuf, strlen(xbuf), id);
		fputs(xline, o);
		free(xline);
	}
	/* what is left of the client's bytes: not once refused (the drain reads them away) */
	if (s->st != &session_drain_state)
		fprintf(o, "cin [%.*s]\n", (int)buf_len(&s->cin), buf_head(&s->cin));
	fprintf(o, "uout [%s]\ncout [%s]\nrows [%s]\n", uout, cout, rrows);
	fclose(o);
	free(log);
	free(rows);
	free(rrows);
	free(cout);
	free(uout);
	return out;
}

/* How the rest of a head comes after its first N bytes. */
enum rest {
	REST_CIN,  /* appended to cin, as a read would have */
	REST_PIPE, /* written to the client's pipe: the step reads it */
};

/*
 * The outcome of head[0..len) cut after n bytes, the rest as how says, on
 * a fresh connection of h (caller frees). Before the rest comes, the step
 * must have begun nothing unless the first bytes are wrong already
 * (*early: then it must have refused, and the rest is not sent).
 */
static char *cut(struct h1 *h, const char *head, size_t len, size_t n, enum rest how, bool *early)
{
	char *out;

	conn_new(h);
	*early = false;
	assert_int_equal(buf_append(&h->s->cin, head, n), 0);
	h1_head_state.step(h->s);
	if (n < len && h->s->nreq == 0) {
		/* waiting: nothing begun, dialed, said or written */
		assert_ptr_equal(h->s->st, &h1_head_state);
		assert_false(h->s->closed);
		assert_true(h->s->x == NULL || !h->s->x->active);
		assert_int_equal(fake_dials(), 0);
		assert_int_equal(buf_len(&h->s->cout), 0);
		assert_int_equal(buf_len(&h->s->uout), 0);
		assert_int_equal(buf_len(&h->s->cin), n);
		{
			char *log = fake_proxy_log(h->fp);

			assert_string_equal(log, "");
			free(log);
		}
		if (how == REST_CIN)
			assert_int_equal(buf_append(&h->s->cin, head + n, len - n), 0);
		else
			assert_int_equal(write(h->feed, head + n, len - n), (ssize_t)(len - n));
		h1_head_state.step(h->s);
	} else if (n < len) {
		*early = true;
	}
	out = outcome(h);
	conn_free(h);
	return out;
}

/*
 * head cut at every offset (from stride: at offsets 0..63, every stride-th
 * and the last 64), the rest both ways: every outcome the whole head's,
 * returned (caller frees). early_ok: the first bytes alone may be refused.
 */
static char *every_cut(const char *head, size_t len, size_t stride, bool early_ok)
{
	struct h1 h = up(POLICY);
	bool early;
	/* the whole head at once: in cin, or one write when cin cannot hold it */
	char *whole = len <= HEAD_MAX ? cut(&h, head, len, len, REST_CIN, &early)
				      : cut(&h, head, len, 0, REST_PIPE, &early);

	for (size_t n = 0; n < len; n++) {
		if (stride > 1 && n >= 64 && n + 64 < len && n % stride != 0)
			continue;
		if (n > HEAD_MAX)
			break; /* cin holds no more: a client's bytes past it are never read */
		for (int how = REST_CIN; how <= REST_PIPE; how++) {
			char *got;

			if (how == REST_CIN && len > HEAD_MAX)
				continue; /* cin holds no more than HEAD_MAX: the rest is read */
			got = cut(&h, head, len, n, (enum rest)how, &early);
			if (strcmp(got, whole) != 0)
				print_error("cut at %zu (%s): got\n%s\nthe whole head gave\n%s\n", n,
					    how == REST_CIN ? "cin" : "pipe", got, whole);
			assert_string_equal(got, whole);
			assert_false(early && !early_ok);
			free(got);
		}
	}
	down(h);
	return whole;
}

static void assert_has(const char *out, const char *needle)
{
	if (strstr(out, needle) == NULL)
		print_error("outcome\n%s\nlacks\n%s\n", out, needle);
	assert_non_null(strstr(out, needle));
}

static void test_allowed(void **state)
{
	static const char get[] = "GET http://Allowed.TEST/p?q=1 HTTP/1.1\r\n"
				  "Host: allowed.test\r\n"
				  "User-Agent: t/1\r\n"
				  "Proxy-Connection: keep-alive\r\n"
				  "\r\n";
	static const char connect[] = "CONNECT allowed.test:443 HTTP/1.1\r\n"
				      "Host: allowed.test:443\r\n"
				      "\r\n";
	char *out = every_cut(get, sizeof(get) - 1, 1, false);

	/* judged allowed, its head upstream in origin-form, one dial, no answer, no row yet */
	assert_has(out, "state head closed 0 nreq 1\ndial allowed.test:80\n"
			"x active 1 phase 4 decision allow reason ");
	assert_has(out, "cin []\nuout [GET /p?q=1 HTTP/1.1\r\nHost: allowed.test\r\n");
	assert_has(out, "User-Agent: t/1\r\n");
	assert_has(out, "cout []\nrows []\n");
	assert_null(strstr(out, "Proxy-Connection"));
	free(out);

	out = every_cut(connect, sizeof(connect) - 1, 1, false);
	/* a CONNECT: its head consumed, dialed (no interception here) */
	assert_has(out, "dial allowed.test:443 connect\n");
	assert_has(out, "decision allow");
	assert_has(out, "cin []\nuout []\ncout []\nrows []\n");
	free(out);
}

static void test_pipelined(void **state)
{
	static const char two[] = "GET http://allowed.test/a HTTP/1.1\r\nHost: allowed.test\r\n\r\n"
				  "GET http://allowed.test/b HTTP/1.1\r\n";
	struct h1 h = up(POLICY);

	conn_new(&h);
	/* the next request's first bytes stay in cin for its turn */
	assert_int_equal(buf_append(&h.s->cin, two, sizeof(two) - 1), 0);
	h1_head_state.step(h.s);
	assert_int_equal(fake_dials(), 1);
	assert_int_equal(buf_len(&h.s->cin), 36);
	assert_memory_equal(buf_head(&h.s->cin), "GET http://allowed.test/b HTTP/1.1\r\n", 36);
	assert_true(h.s->again); /* the pump runs the step again */
	conn_free(&h);
	down(h);
}

static void test_refused(void **state)
{
	static const char get[] = "GET http://other.test/x HTTP/1.1\r\n"
				  "Host: other.test\r\n"
				  "\r\n";
	char *out = every_cut(get, sizeof(get) - 1, 1, false);

	/* 403 on the wire, its id named; the one row; no dial; draining */
	assert_has(out, "state drain closed 0 nreq 1\nx active 0 phase 4 decision refuse reason "
			"not-granted status 403 detail other.test is not granted; to grant it run: "
			"sluice allow approve ID (or: sluice allow add other.test)\n");
	assert_has(out, "cout [HTTP/1.1 403 Forbidden\r\nProxy-Status: sluice; "
			"error=http_request_denied; details=\"not-granted id=ID: other.test is not "
			"granted; to grant it run: sluice allow approve ID (or: sluice allow add "
			"other.test)\"\r\n");
	assert_has(out, "\r\nConnection: close\r\n\r\nsluice: other.test is not granted");
	assert_has(out, "rows [\"kind\":\"http\",\"proto\":\"http/1.1\",\"method\":\"GET\","
			"\"host\":\"other.test\",\"port\":80,\"path\":\"/x\",\"status\":403,"
			"\"decision\":\"refuse\",\"reason\":\"not-granted\",\"grant\":null,"
			"\"refusal\":\"ID\"");
	assert_int_equal(fake_count(out, "\"kind\""), 1);
	assert_null(strstr(out, "dial "));
	free(out);
}

static void test_malformed(void **state)
{
	static const struct {
		const char *head;
		const char *kind;
	} cases[] = {
		{ "GET http://allowed.test/ HTTP/1.1\r\nHost allowed.test\r\n\r\n", "syntax" },
		{ "get http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n", "bad method" },
		{ "GET http://allowed.test/ HTTP/2.0\r\nHost: allowed.test\r\n\r\n", "bad version" },
		{ "GET http://u:p@allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n",
		  "userinfo in target" },
		{ "POST http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\nContent-Length: 1\r\n"
		  "Transfer-Encoding: chunked\r\n\r\n",
		  "ambiguous body framing" },
		{ "GET http://[fe80::1%25eth0]/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n", "IPv6 zone id" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *out = every_cut(cases[i].head, strlen(cases[i].head), 1, true);
		char want[256];

		snprintf(want, sizeof(want),
			 "x active 0 phase 0 decision refuse reason malformed status 400 detail "
			 "malformed request head (%s); nothing was sent\n",
			 cases[i].kind);
		assert_has(out, "state drain closed 0 nreq 1\n");
		assert_has(out, want);
		assert_has(out, "cout [HTTP/1.1 400 Bad Request\r\nProxy-Status: sluice; "
				"error=http_request_error; details=\"malformed: malformed request head");
		assert_has(out, "rows [\"kind\":\"http\",\"proto\":null,\"method\":null,"
				"\"host\":null,\"port\":null,\"path\":null,\"status\":400,"
				"\"decision\":\"refuse\",\"reason\":\"malformed\"");
		assert_int_equal(fake_count(out, "\"kind\""), 1);
		assert_null(strstr(out, "dial "));
		free(out);
	}
}

static void test_too_many(void **state)
{
	char head[8192];
	size_t len = (size_t)snprintf(head, sizeof(head),
				      "GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n");
	char *out;

	for (int i = 0; i < HEADERS_MAX; i++)
		len += (size_t)snprintf(head + len, sizeof(head) - len, "X-%d: v\r\n", i);
	len += (size_t)snprintf(head + len, sizeof(head) - len, "\r\n");
	assert_true(len < sizeof(head) - 1);
	out = every_cut(head, len, 1, true);
	assert_has(out, "reason too-many-headers status 431 detail more than 100 header lines\n");
	assert_has(out, "cout [HTTP/1.1 431 Request Header Fields Too Large\r\n");
	assert_int_equal(fake_count(out, "\"kind\""), 1);
	assert_null(strstr(out, "dial "));
	free(out);
}

static void test_too_large(void **state)
{
	size_t len = HEAD_MAX + 100;
	char *head = malloc(len);
	static const char start[] = "GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\nX-Big: ";
	char *out;

	assert_non_null(head);
	memcpy(head, start, sizeof(start) - 1);
	memset(head + sizeof(start) - 1, 'a', len - (sizeof(start) - 1) - 4);
	memcpy(head + len - 4, "\r\n\r\n", 4);
	out = every_cut(head, len, 509, true);
	assert_has(out, "reason head-too-large status 431 detail request head over 32768 bytes; "
			"nothing was sent\n");
	assert_has(out, "cout [HTTP/1.1 431 Request Header Fields Too Large\r\n");
	assert_int_equal(fake_count(out, "\"kind\""), 1);
	assert_null(strstr(out, "dial "));
	free(out);
	free(head);
}


/* --- a head that waits for its token resumes at its phase ---------------------- */

struct wait {
	struct h1 h;
	char dir[64];
	unsigned phase;
};

static enum fake_step waiting(void *arg, unsigned n)
{
	struct wait *w = arg;
	struct session *s = w->h.s;

	switch (w->phase) {
	case 0:
		h1_head_state.step(s);
		/* judged, charged, and waiting at its credential for the token command */
		assert_ptr_equal(s->st, &h1_token_state);
		assert_non_null(s->x);
		assert_true(s->x->active);
		assert_int_equal(s->x->phase, XP_CREDENTIAL);
		assert_string_equal(s->x->decision, "allow");
		assert_non_null(s->x->budget);
		assert_int_equal(s->nreq, 1);
		assert_int_equal(fake_dials(), 0);
		assert_int_equal(buf_len(&s->uout), 0);
		assert_int_equal(buf_len(&s->cout), 0);
		w->phase++;
		return FAKE_WAIT;
	case 1:
		/* token.c wakes the connection when the run ends: its pump runs the head step */
		if (s->st == &h1_token_state)
			return FAKE_WAIT;
		w->phase++;
		return FAKE_STOP;
	}
	return FAKE_STOP;
}

static void test_token_resume(void **state)
{
	struct wait *w = calloc(1, sizeof(*w));
	char conf[512], path[128];
	static const char head[] = "GET /a HTTP/1.1\r\nHost: tok.test\r\n\r\n";
	const char *err;
	FILE *f;
	char *out;

	assert_non_null(w);
	snprintf(w->dir, sizeof(w->dir), "/tmp/sluice-h1-XXXXXX");
	assert_non_null(mkdtemp(w->dir));
	snprintf(path, sizeof(path), "%s/mint", w->dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("#!/bin/sh\necho tok-1\necho 60\n", f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(path, 0700), 0);
	/* one request a principal: a second charge would be refused 403 budget */
	snprintf(conf, sizeof(conf),
		 "allow tok.test max-requests=1\n"
		 "inject tok host=tok.test header=X-Api-Key command=%s unattributed=yes\n", path);
	w->h = up(conf);
	conn_new(&w->h);
	/* inside an intercepted CONNECT to tok.test:443 (its handshake done) */
	w->h.s->ix = calloc(1, sizeof(*w->h.s->ix));
	assert_non_null(w->h.s->ix);
	assert_int_equal(host_canon("tok.test", 8, &w->h.s->ix->tunnel.host, &err), 0);
	w->h.s->ix->tunnel.port = 443;
	w->h.s->ix->tunnel.via = GRANT_VIA_CONNECT;
	w->h.s->intercept = true;
	assert_int_equal(buf_append(&w->h.s->cin, head, sizeof(head) - 1), 0);
	fake_loop_steps(&w->h.fp->px, waiting, w);
	assert_int_equal(w->phase, 2);
	/* resumed at its credential: not judged again, not charged again; sent with the token */
	out = outcome(&w->h);
	assert_has(out, "state head closed 0 nreq 1\ndial tok.test:443 connect\n"
			"x active 1 phase 4 decision allow ");
	assert_has(out, "cin []\nuout [GET /a HTTP/1.1\r\nHost: tok.test\r\n");
	assert_has(out, "X-Api-Key: tok-1\r\n");
	assert_has(out, "cout []\nrows []\n");
	free(out);
	assert_int_equal(fake_dials(), 1);
	conn_free(&w->h);
	token_release_all(&w->h.fp->px);
	down(w->h);
	unlink(path);
	rmdir(w->dir);
	free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_allowed),	  cmocka_unit_test(test_pipelined),
		cmocka_unit_test(test_refused),	  cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_too_many),  cmocka_unit_test(test_too_large),
		cmocka_unit_test(test_token_resume),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
