/*
 * inject.c: writing a credential onto an allowed request, and masking it
 * in the response.
 *
 * Only inside an intercepted CONNECT (tls.c), where the destination, the
 * SNI and the Host already agree: after the policy allowed the request, the
 * one rule matching its host and path (lib/inject.c; overlapping rules
 * never load) is applied if it serves the connection's stamp. The secret
 * comes from the proxy's environment or a root-only file, read at each
 * request; a secret that cannot be had refuses the request (502 naming the
 * rule and why, never the value): nothing is sent without it. The value is
 * held only while its request lives and wiped after.
 *
 * An injected request asks for an identity encoding, and every byte of its
 * response head and body goes through a scrubber (lib/scrub.h) that masks
 * the secret with as many '*' before the client sees it: a Content-Length
 * body keeps its length; a chunked body is taken apart and chunked again,
 * so a secret split across chunks is found too (trailers are dropped).
 * The row names the rule and counts what was masked.
 *
 * A command rule's token comes from token.c: a request whose token is
 * being minted waits (SS_TOKEN); a bodiless request answered 401 has its
 * token minted again and is re-issued once (exchange.c keeps its head).
 */
#include "session.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file.h"


static void secret_wipe(struct request *r)
{
	if (r->secret != NULL) {
		explicit_bzero(r->secret, r->secret_len);
		free(r->secret);
	}
	r->secret = NULL;
	r->secret_len = 0;
}

void inject_end(struct session *s)
{
	struct request *r = s->r;

	/* the request head that carried the credential went through these */
	if (r->secret != NULL) {
		buf_wipe_consumed(&s->uout);
		/* a copy of that head kept for a re-send: no longer needed */
		buf_consume(&s->replay, buf_len(&s->replay));
		buf_wipe_consumed(&s->replay);
		buf_release(&s->replay);
	}
	secret_wipe(r);
	scrub_free(r->scrub);
	r->scrub = NULL;
	free(r->rehead);
	r->rehead = NULL;
	r->rehead_len = 0;
}

/* The rule's secret into r->secret. Returns 0, 1 (a token is being minted), or -1 with why[]. */
static int secret_fetch(struct session *s, char *why, size_t size)
{
	struct request *r = s->r;
	const struct inject_rule *rule = r->rule;
	int k;
	struct stat st;
	char *buf = NULL;
	size_t len = 0;

	switch (rule->source) {
	case INJECT_ENV: {
		const char *v = getenv(rule->source_arg);

		if (v == NULL || v[0] == '\0') {
			snprintf(why, size, "the environment variable %s is not set", rule->source_arg);
			return -1;
		}
		len = strlen(v);
		buf = malloc(len + 1);
		if (buf == NULL)
			goto oom;
		memcpy(buf, v, len + 1);
		break;
	}
	case INJECT_FILE:
		if (stat(rule->source_arg, &st) == -1 || !S_ISREG(st.st_mode)) {
			snprintf(why, size, "the secret file %s cannot be read", rule->source_arg);
			return -1;
		}
		if ((st.st_mode & 077) != 0) {
			snprintf(why, size, "the secret file %s is readable by others (chmod 600 it)",
				 rule->source_arg);
			return -1;
		}
		if (file_read(rule->source_arg, INJECT_SECRET_MAX + 2, &buf, &len) == -1) {
			snprintf(why, size, "the secret file %s cannot be read", rule->source_arg);
			return -1;
		}
		/* one value; a final newline is not part of it */
		if (len > 0 && buf[len - 1] == '\n')
			len--;
		if (len > 0 && buf[len - 1] == '\r')
			len--;
		buf[len] = '\0';
		break;
	case INJECT_COMMAND:
		k = token_get(s, rule, &buf, &len, why, size);
		if (k <= 0)
			return k == 0 ? 1 : -1;
		break;
	}
	if (len == 0 || len > INJECT_SECRET_MAX) {
		snprintf(why, size, "the secret is empty or over %d bytes", INJECT_SECRET_MAX);
		explicit_bzero(buf, len);
		free(buf);
		return -1;
	}
	r->secret = buf;
	r->secret_len = len;
	return 0;
oom:
	snprintf(why, size, "out of memory");
	return -1;
}

/*
 * The request is allowed; find its rule and fetch the secret. Returns 0
 * (go on, with or without a credential), 1 (wait: its token is being
 * minted; the request is asked again when it is) or -1 (refused: nothing
 * is sent).
 */
int inject_begin(struct session *s, const struct http_request *req)
{
	struct request *r = s->r;
	const char *src = s->stamp != NULL ? s->stamp->src : NULL;
	const char *as = s->stamp != NULL && s->stamp->as[0] != '\0' ? s->stamp->as : NULL;
	char whobuf[SESSION_WHO_MAX];
	const char *who = session_who(s, whobuf, sizeof(whobuf));
	char why[256];
	size_t n = 1;

	if (!s->intercept)
		return 0;
	r->rule = inject_match(session_config(s), r->t.host.name, req->path, req->path_len);
	if (r->rule == NULL)
		return 0;
	if (!inject_serves(r->rule, s->stamp != NULL ? who : NULL, src, as)) {
		snprintf(r->detail, sizeof(r->detail), "rule %s does not serve %s; sent without it",
			 r->rule->name, who);
		r->rule = NULL;
		return 0;
	}
	switch (secret_fetch(s, why, sizeof(why))) {
	case 1:
		return 1;
	case -1:
		session_refuse(s, 502, "inject-failed", "http_request_error",
			       "rule %s: %s; the request was not sent", r->rule->name, why);
		return -1;
	}
	if (r->secret_len >= SCRUB_MIN_LEN) {
		const char *sec = r->secret;

		r->scrub = scrub_new(&sec, &r->secret_len, n);
		if (r->scrub == NULL) {
			session_refuse(s, 502, "inject-failed", "http_request_error",
				       "rule %s: out of memory; the request was not sent",
				       r->rule->name);
			return -1;
		}
	}
	return 0;
}

static bool header_is(const struct http_header *h, const char *name)
{
	return h->name_len == strlen(name) && strncasecmp(h->name, name, h->name_len) == 0;
}

/*
 * For a header rule: -1 drop every such header the client sent and add
 * ours, i >= 0 replace the value of header i (its placeholder), -2 leave
 * the request as it is (require= and no lone placeholder).
 */
int inject_header_plan(const struct session *s, const struct http_request *req)
{
	const struct inject_rule *rule = s->r->rule;
	int found = -1, count = 0;

	if (rule->require[0] == '\0')
		return -1;
	for (size_t i = 0; i < req->nheaders; i++) {
		if (header_is(&req->headers[i], rule->field)) {
			found = (int)i;
			count++;
		}
	}
	if (count == 1 && inject_is_placeholder(rule, req->headers[found].value,
						req->headers[found].value_len))
		return found;
	return -2;
}

/* Mask the secret in cout[from..] (a complete response head) in place. Returns 0 or -1. */
int inject_scrub_head(struct session *s, size_t from)
{
	struct scrub *sc = s->r->scrub;
	char *p = buf_head(&s->cout) + from, *tmp;
	size_t len = buf_len(&s->cout) - from, used = 0, w;

	if (sc == NULL || len == 0)
		return 0;
	tmp = malloc(len);
	if (tmp == NULL)
		return -1;
	/* output never outruns input: len bytes of room take all of it */
	w = scrub_feed(sc, p, len, tmp, len, &used);
	while (scrub_pending(sc) > 0)
		w += scrub_flush(sc, tmp + w, len - w);
	if (used != len || w != len) {
		free(tmp);
		return -1;
	}
	memcpy(p, tmp, len);
	free(tmp);
	return 0;
}

/* Scrub in[0..n) onto cout; with chunk, as one chunk of what came out. Returns 0 or -1. */
static int emit(struct session *s, const char *in, size_t n, bool chunk, bool end)
{
	struct scrub *sc = s->r->scrub;
	char out[INJECT_SCRUB_PIECE + SCRUB_MAX_LEN];
	size_t used = 0, w = 0;

	if (n > 0)
		w = scrub_feed(sc, in, n, out, sizeof(out), &used);
	if (used != n)
		return -1;
	while (end && scrub_pending(sc) > 0 && w < sizeof(out))
		w += scrub_flush(sc, out + w, sizeof(out) - w);
	if (w == 0)
		return 0;
	if (chunk && buf_printf(&s->cout, "%zx\r\n", w) == -1)
		return -1;
	if (buf_append(&s->cout, out, w) == -1 || (chunk && buf_append(&s->cout, "\r\n", 2) == -1))
		return -1;
	return 0;
}

/*
 * The response body of an injected request, uin -> scrubber -> cout.
 * Moves only while cout has room for the worst case of one piece. Returns
 * 1 moved, 0 nothing to do now, -1 malformed or out of room.
 */
int inject_move_body(struct session *s)
{
	struct request *r = s->r;
	bool moved = false;

	while (buf_len(&s->uin) > 0 && !r->resp_done && buf_room(&s->cout) >= INJECT_SCRUB_ROOM) {
		const char *p = buf_head(&s->uin);
		size_t n = buf_len(&s->uin);

		if (r->resp_body == HTTP_BODY_CHUNKED) {
			struct http_chunked *ch = &r->resp_chunk;

			if (ch->state == HTTP_CHUNK_DATA) {
				size_t k = n;

				if (k > ch->remaining)
					k = (size_t)ch->remaining;
				if (k > INJECT_SCRUB_PIECE)
					k = INJECT_SCRUB_PIECE;
				if (http_chunked_scan(ch, p, k) != (ssize_t)k || emit(s, p, k, true, false))
					return -1;
				buf_consume(&s->uin, k);
				r->down += k;
			} else {
				/* framing, a byte at a time: it is short */
				if (http_chunked_scan(ch, p, 1) != 1)
					return -1;
				buf_consume(&s->uin, 1);
				if (ch->state == HTTP_CHUNK_DONE) {
					if (emit(s, NULL, 0, true, true) == -1 ||
					    buf_append(&s->cout, "0\r\n\r\n", 5) == -1)
						return -1;
					r->resp_done = true;
				}
			}
		} else {
			if (r->resp_body == HTTP_BODY_LENGTH && n > r->resp_left)
				n = (size_t)r->resp_left;
			if (n > INJECT_SCRUB_PIECE)
				n = INJECT_SCRUB_PIECE;
			if (r->resp_body == HTTP_BODY_LENGTH) {
				r->resp_left -= n;
				r->resp_done = r->resp_left == 0;
			}
			if (emit(s, p, n, false, r->resp_done) == -1)
				return -1;
			buf_consume(&s->uin, n);
			r->down += n;
		}
		moved = true;
	}
	return moved ? 1 : 0;
}

/* A body read to its end (EOF-delimited): what the scrubber holds goes out. */
int inject_body_eof(struct session *s)
{
	return s->r->scrub != NULL ? emit(s, NULL, 0, false, true) : 0;
}
