/*
 * inject.c: writing a credential onto an allowed request, and masking the
 * secrets of its host in the response.
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
 * Every response from a host a rule names goes through a scrubber
 * (lib/scrub.h), injected or not (its path matched no rule, the rule does
 * not serve the client, require= found no placeholder): an origin may show
 * a credential it was sent before. It masks every form (inject_forms.c) of
 * the secret of each rule naming the host with as many '*': this request's
 * own, else read again for scrubbing only (env, file) or the token
 * command's last minted value; one that cannot be had now is not masked.
 * The request asks for an identity encoding, and a response that comes
 * with another Content-Encoding anyway is refused (502 encoded-response):
 * compressed, the secret would pass the scrubber unseen. Every byte of the
 * head and body is scrubbed before the client sees it: a Content-Length
 * body keeps its length; a chunked body is taken apart and chunked again,
 * so a secret split across chunks is found too (trailers are dropped).
 * The row names the rule that injected and counts what was masked.
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

/* The credential was not sent (require= found no placeholder): drop it, keep scrubbing. */
void inject_unsent(struct session *s)
{
	struct request *r = &s->r;

	secret_wipe(r);
	free(r->rehead);
	r->rehead = NULL;
	r->rehead_len = 0;
}

void inject_end(struct session *s)
{
	struct request *r = &s->r;

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

/*
 * The secret of rule into *val (the caller wipes and frees it). With mint,
 * a command rule's token comes from token_get (which may start a run);
 * without, it is the last one minted. Returns 0, 1 (a token is being
 * minted, or none without mint), or -1 with why[].
 */
static int secret_load(struct session *s, const struct inject_rule *rule, bool mint, char **val,
		       size_t *vlen, char *why, size_t size)
{
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
		k = mint ? token_get(s, rule, &buf, &len, why, size) : token_peek(s->px, rule, &buf, &len);
		if (k == -1 && !mint)
			goto oom;
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
	*val = buf;
	*vlen = len;
	return 0;
oom:
	snprintf(why, size, "out of memory");
	return -1;
}

/*
 * The scrubber for a response from r's host: every form of the secret of
 * each rule naming the host (this request's own when it has one). None
 * names it, or no form is long enough: no scrubber. Returns 0, or -1 with
 * why[] (out of memory, too many forms).
 */
static int scrub_build(struct session *s, char *why, size_t size)
{
	struct request *r = &s->r;
	const struct config *c = session_config(s);
	struct inject_forms f;
	int ret = -1;

	inject_forms_init(&f);
	for (size_t i = 0; i < c->nrules; i++) {
		const struct inject_rule *rule = &c->rules[i];
		char *v = NULL, ignored[8];
		size_t n = 0;
		int k;

		if (strcmp(rule->host, r->t.host.name) != 0)
			continue;
		if (rule == r->rule) {
			k = inject_forms_add(&f, rule->prefix, r->secret, r->secret_len);
		} else {
			/* for scrubbing only: what cannot be had now was not sent by this proxy now */
			if (secret_load(s, rule, false, &v, &n, ignored, sizeof(ignored)) != 0)
				continue;
			k = inject_forms_add(&f, rule->prefix, v, n);
			explicit_bzero(v, n);
			free(v);
		}
		if (k == -1) {
			if (errno == E2BIG)
				snprintf(why, size, "more than %d forms of the secrets of %s to mask",
					 SCRUB_MAX_SECRETS, r->t.host.name);
			else
				snprintf(why, size, "out of memory");
			goto out_release;
		}
	}
	if (f.n > 0) {
		r->scrub = scrub_new((const char *const *)f.pat, f.len, f.n);
		if (r->scrub == NULL) {
			snprintf(why, size, "out of memory");
			goto out_release;
		}
	}
	ret = 0;
out_release:
	inject_forms_release(&f);
	return ret;
}

/*
 * The request is allowed; find its rule, fetch the secret, and make the
 * scrubber for its host. Returns 0 (go on, with or without a credential),
 * 1 (wait: its token is being minted; the request is asked again when it
 * is) or -1 (refused: nothing is sent).
 */
int inject_begin(struct session *s, const struct http_request *req)
{
	struct request *r = &s->r;
	const char *src = s->stamped ? s->stamp.src : NULL;
	const char *as = s->stamped && s->stamp.as[0] != '\0' ? s->stamp.as : NULL;
	char why[256];

	if (s->intercept)
		r->rule = inject_match(session_config(s), r->t.host.name, req->path, req->path_len);
	if (r->rule != NULL && !inject_serves(r->rule, s->stamped ? s->who : NULL, src, as)) {
		snprintf(r->detail, sizeof(r->detail), "rule %s does not serve %s; sent without it",
			 r->rule->name, s->who);
		r->rule = NULL;
	}
	if (r->rule != NULL) {
		switch (secret_load(s, r->rule, true, &r->secret, &r->secret_len, why, sizeof(why))) {
		case 1:
			return 1;
		case -1:
			session_refuse(s, 502, "inject-failed", "http_request_error",
				       "rule %s: %s; the request was not sent", r->rule->name, why);
			return -1;
		}
	}
	if (scrub_build(s, why, sizeof(why)) == -1) {
		session_refuse(s, 502, "inject-failed", "http_request_error",
			       "%s; the request was not sent", why);
		return -1;
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
	const struct inject_rule *rule = s->r.rule;
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

size_t inject_scrub_room(const struct session *s)
{
	/* a piece, what the scrubber held back, chunk framing */
	return INJECT_SCRUB_PIECE + scrub_hold_max(s->r.scrub) + 32;
}

/* Whether the Content-Encoding value v[0..n) lists only "identity" (or nothing). */
static bool coding_identity(const char *v, size_t n)
{
	size_t i = 0;

	while (i < n) {
		size_t a, e;

		while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
			i++;
		a = i;
		while (i < n && v[i] != ',')
			i++;
		e = i;
		while (e > a && (v[e - 1] == ' ' || v[e - 1] == '\t'))
			e--;
		if (e > a && !(e - a == 8 && strncasecmp(v + a, "identity", 8) == 0))
			return false;
	}
	return true;
}

/*
 * A scrubbed response must come unencoded: the request asked for identity,
 * and a compressed body would carry the secret past the scrubber. Any
 * other Content-Encoding on a response with a body refuses it (502
 * encoded-response, nothing of it sent). Returns 0, or -1 when refused.
 */
int inject_check_coding(struct session *s, const struct http_response *resp)
{
	if (s->r.scrub == NULL || resp->status < 200 || resp->body == HTTP_BODY_NONE)
		return 0;
	for (size_t i = 0; i < resp->nheaders; i++) {
		const struct http_header *h = &resp->headers[i];

		if (!header_is(h, "Content-Encoding") || coding_identity(h->value, h->value_len))
			continue;
		session_refuse(s, 502, "encoded-response", "http_response_content_coding",
			       "%s answered with Content-Encoding: %.*s although identity was "
			       "asked for; sluice-proxy cannot scrub a secret from it",
			       s->r.t.host.name, (int)(h->value_len > 32 ? 32 : h->value_len),
			       h->value);
		return -1;
	}
	return 0;
}

/* Mask the secret in cout[from..] (a complete response head) in place. Returns 0 or -1. */
int inject_scrub_head(struct session *s, size_t from)
{
	struct scrub *sc = s->r.scrub;
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
	struct scrub *sc = s->r.scrub;
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
	struct request *r = &s->r;
	bool moved = false;

	while (buf_len(&s->uin) > 0 && !r->resp_done && buf_room(&s->cout) >= inject_scrub_room(s)) {
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
	return s->r.scrub != NULL ? emit(s, NULL, 0, false, true) : 0;
}
