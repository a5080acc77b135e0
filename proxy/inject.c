/*
 * inject.c: writing a credential onto an allowed request, and masking the
 * secrets of its host in the response.
 *
 * Only inside an intercepted CONNECT (tls.c), where the destination, the
 * SNI and the Host already agree: after the policy allowed the request, the
 * one rule matching its host and path (lib/inject.c; overlapping rules
 * never load) is applied if it serves the connection's stamp. The secret
 * comes from the proxy's environment or a root-only file, read at each
 * request; a secret that cannot be had refuses the request (naming the
 * rule and why, never the value): nothing is sent without it. A source
 * that is missing or unusable (the variable not set, the file absent,
 * unreadable, readable by others, empty) is the operator's to fix: 403
 * inject-secret-missing (Proxy-Status proxy_configuration_error), which
 * clients and SDKs do not retry (they retry 408, 429 and 5xx: the agent
 * would hang retrying), so the agent fails at once and shows why; the
 * proxy still serves everything else, and `sluice doctor` names every such
 * rule. A token command that fails is 502 inject-failed. The value is
 * held only while its request lives and wiped after.
 *
 * Every response from a host a rule names goes through a scrubber
 * (lib/scrub.h), injected or not (its path matched no rule, the rule does
 * not serve the client, require= found no placeholder): an origin may show
 * a credential it was sent before. It masks every form (inject_forms.c) of
 * the secret of each rule naming the host with as many '*': this request's
 * own, else read again for scrubbing only (env, file) or the token
 * command's last minted value; one that cannot be had now is not masked.
 * The request asks for an identity encoding; compressed, the secret would
 * pass the scrubber unseen, so a response that comes gzip or deflate
 * anyway is decoded (zlib, at most INJECT_INFLATE_MAX bytes: a "zip bomb"
 * is cut there) and sent unencoded, chunked, and any other coding is
 * refused (502 encoded-response). Range, If-Range and Request-Range are
 * not sent to such a host, so the origin answers the whole body, and a 206
 * that comes anyway is refused (502 range-response): a secret split across
 * two ranges would pass the scrubber in pieces. Every byte of the head
 * and body is scrubbed before the client sees it: a Content-Length body
 * keeps its length; a chunked body is taken apart and chunked again, so a
 * secret split across chunks is found too (trailers are dropped). The row
 * names the rule that injected and counts what was masked.
 *
 * A command rule's token comes from token.c: a request whose token is
 * being minted waits (h1_token_state); a bodiless request answered 401 has its
 * token minted again and is re-issued once (exchange.c keeps its head)
 * when token-min-interval allows a new token; otherwise the 401 goes to
 * the client.
 */
#include "request.h"

#define ZLIB_CONST
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "file.h"


static void secret_wipe(struct exchange *x)
{
	if (x->secret != NULL) {
		explicit_bzero(x->secret, x->secret_len);
		free(x->secret);
	}
	x->secret = NULL;
	x->secret_len = 0;
}

/* The credential was not sent (require= found no placeholder): drop it, keep scrubbing. */
static void inject_unsent(struct exchange *x)
{
	secret_wipe(x);
	free(x->rehead);
	x->rehead = NULL;
	x->rehead_len = 0;
}

/*
 * The head went: the rule's name (and a header rule's field, whose
 * trailers are dropped) kept for the row, or a credential that was not
 * written dropped (require= found no placeholder: sent as it was,
 * scrubbed). The rule itself is forgotten: a reload frees it.
 */
void inject_sent(struct exchange *x)
{
	if (x->rule != NULL && x->injected) {
		snprintf(x->inject_name, sizeof(x->inject_name), "%s", x->rule->name);
		if (x->rule->target == INJECT_HEADER)
			snprintf(x->inject_field, sizeof(x->inject_field), "%s", x->rule->field);
	} else {
		inject_unsent(x);
	}
	x->rule = NULL;
}

void inject_end(struct exchange *x)
{
	struct session *s = x->conn;

	/* the request head that carried the credential went through these */
	if (x->secret != NULL) {
		buf_wipe_consumed(&s->uout);
		/* a copy of that head kept for a re-send: no longer needed */
		buf_consume(&s->replay, buf_len(&s->replay));
		buf_wipe_consumed(&s->replay);
		buf_release(&s->replay);
	}
	secret_wipe(x);
	scrub_free(x->scrub);
	x->scrub = NULL;
	scrub_free(x->scrub_ctl);
	x->scrub_ctl = NULL;
	if (x->inflate != NULL) {
		inflateEnd(x->inflate);
		free(x->inflate);
		x->inflate = NULL;
	}
	free(x->rehead);
	x->rehead = NULL;
	x->rehead_len = 0;
}

/*
 * A secret file's one value (a final newline is not part of it) into *buf.
 * Returns 0, or -1 with why[] (missing or unusable: the operator's to fix).
 */
static int secret_file(const char *path, char **buf, size_t *len, char *why, size_t size)
{
	struct stat st;

	if (stat(path, &st) == -1) {
		snprintf(why, size, "the secret file %s cannot be read (%s)", path, strerror(errno));
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(why, size, "the secret file %s is not a regular file", path);
		return -1;
	}
	if ((st.st_mode & 077) != 0) {
		snprintf(why, size, "the secret file %s is readable by others (chmod 600 it)", path);
		return -1;
	}
	if (file_read(path, INJECT_SECRET_MAX + 2, buf, len) == -1) {
		snprintf(why, size, "the secret file %s cannot be read (%s)", path, strerror(errno));
		return -1;
	}
	if (*len > 0 && (*buf)[*len - 1] == '\n')
		(*len)--;
	if (*len > 0 && (*buf)[*len - 1] == '\r')
		(*len)--;
	(*buf)[*len] = '\0';
	return 0;
}

/*
 * The secret of rule into *val (the caller wipes and frees it). With mint,
 * a command rule's token comes from token_get (which may start a run);
 * without, it is the last one minted. Returns 0, 1 (a token is being
 * minted, or none without mint), -2 with why[] (an env, file or handed-over key
 * missing or unusable: the operator's to fix), or -1 with why[].
 */
static int secret_load(struct exchange *x, const struct inject_rule *rule, bool mint, char **val,
		       size_t *vlen, char *why, size_t size)
{
	struct session *s = x->conn;
	int k;
	char *buf = NULL;
	size_t len = 0;

	switch (rule->source) {
	case INJECT_ENV: {
		const char *v = getenv(rule->source_arg);

		if (v == NULL || v[0] == '\0') {
			snprintf(why, size,
				 "the environment variable %s is not set in sluice-proxy's environment",
				 rule->source_arg);
			return -2;
		}
		len = strlen(v);
		buf = malloc(len + 1);
		if (buf == NULL)
			goto oom;
		memcpy(buf, v, len + 1);
		break;
	}
	case INJECT_FILE:
		if (secret_file(rule->source_arg, &buf, &len, why, size) == -1)
			return -2;
		break;
	case INJECT_KEYS: {
		struct policy_request pr = { 0 };
		char whobuf[SESSION_WHO_MAX], name[2 * SCOPE_TEXT_MAX + 2], path[INJECT_SOURCE_MAX + sizeof(name) + 2];
		const struct scope *p;

		session_principal(s, &pr, whobuf, sizeof(whobuf));
		p = inject_serving_principal(rule, pr.who, pr.src, pr.as);
		if (p == NULL || inject_key_name(p->text, name, sizeof(name)) == -1) {
			snprintf(why, size, "it hands no key to %s", pr.who != NULL ? pr.who : "unattributed");
			return -2;
		}
		snprintf(path, sizeof(path), "%s/%s", rule->source_arg, name);
		if (access(path, F_OK) == -1) {
			snprintf(why, size, "no key was handed over for %s (the environment of its `sluice run` "
				 "lacked it, or the run ended)", p->text);
			return -2;
		}
		if (secret_file(path, &buf, &len, why, size) == -1)
			return -2;
		break;
	}
	case INJECT_COMMAND:
		k = mint ? token_get(x, rule, &buf, &len, why, size) : token_peek(s->px, rule, &buf, &len);
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
		return rule->source == INJECT_COMMAND ? -1 : -2;
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
static int scrub_build(struct exchange *x, char *why, size_t size)
{
	struct session *s = x->conn;
	const struct config *c = session_config(s);
	struct inject_forms f;
	int ret = -1;

	inject_forms_init(&f);
	for (size_t i = 0; i < c->nrules; i++) {
		const struct inject_rule *rule = &c->rules[i];
		char *v = NULL, ignored[8];
		size_t n = 0;
		int k;

		if (strcmp(rule->host, x->t.host.name) != 0)
			continue;
		if (rule == x->rule) {
			k = inject_forms_add(&f, rule->prefix, x->secret, x->secret_len);
		} else {
			/* for scrubbing only: what cannot be had now was not sent by this proxy now */
			if (secret_load(x, rule, false, &v, &n, ignored, sizeof(ignored)) != 0)
				continue;
			k = inject_forms_add(&f, rule->prefix, v, n);
			explicit_bzero(v, n);
			free(v);
		}
		if (k == -1) {
			if (errno == E2BIG)
				snprintf(why, size, "more than %d forms of the secrets of %s to mask",
					 SCRUB_MAX_SECRETS, x->t.host.name);
			else
				snprintf(why, size, "out of memory");
			goto out_release;
		}
	}
	if (f.n > 0) {
		x->scrub = scrub_new((const char *const *)f.pat, f.len, f.n);
		/* a WebSocket's control frames, between a message's fragments, get their own stream */
		if (x->scrub != NULL && x->ws != NULL)
			x->scrub_ctl = scrub_new((const char *const *)f.pat, f.len, f.n);
		if (x->scrub == NULL || (x->ws != NULL && x->scrub_ctl == NULL)) {
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
int inject_begin(struct exchange *x, const struct http_request *req)
{
	struct session *s = x->conn;
	struct policy_request pr = { 0 };
	char whobuf[SESSION_WHO_MAX];
	char why[256];

	session_principal(s, &pr, whobuf, sizeof(whobuf));
	if (s->intercept)
		x->rule = inject_match(session_config(s), x->t.host.name, x->t.port, req->path,
				       req->path_len);
	if (x->rule != NULL && !inject_serves(x->rule, pr.who, pr.src, pr.as)) {
		snprintf(x->detail, sizeof(x->detail), "rule %s does not serve %s; sent without it",
			 x->rule->name, pr.who != NULL ? pr.who : "unattributed");
		x->rule = NULL;
	}
	if (x->rule != NULL) {
		switch (secret_load(x, x->rule, true, &x->secret, &x->secret_len, why, sizeof(why))) {
		case 1:
			return 1;
		case -2: /* the operator's to fix: a status no client retries */
			exchange_refusef(x, 403, "inject-secret-missing", "proxy_configuration_error",
					 "rule %s: %s; the request was not sent (sluice doctor checks "
					 "every inject rule)", x->rule->name, why);
			return -1;
		case -1:
			exchange_refusef(x, 502, "inject-failed", "http_request_error",
					 "rule %s: %s; the request was not sent", x->rule->name, why);
			return -1;
		}
	}
	if (scrub_build(x, why, sizeof(why)) == -1) {
		exchange_refusef(x, 502, "inject-failed", "http_request_error",
				 "%s; the request was not sent", why);
		return -1;
	}
	return 0;
}

/*
 * For a header rule: -1 drop every such header the client sent and add
 * ours, i >= 0 replace the value of header i (its placeholder), -2 leave
 * the request as it is (require= and no lone placeholder).
 */
int inject_header_plan(const struct exchange *x, const struct http_request *req)
{
	const struct inject_rule *rule = x->rule;
	int found = -1, count = 0;

	if (rule->require[0] == '\0')
		return -1;
	for (size_t i = 0; i < req->nheaders; i++) {
		if (http_header_is(&req->headers[i], rule->field)) {
			found = (int)i;
			count++;
		}
	}
	if (count == 1 && inject_is_placeholder(rule, req->headers[found].value,
						req->headers[found].value_len))
		return found;
	return -2;
}

size_t inject_scrub_room(const struct exchange *x)
{
	/* a piece, what the scrubber held back, chunk framing */
	return INJECT_SCRUB_PIECE + scrub_hold_max(x->scrub) + 32;
}

/* The Content-Encoding value v[0..n), trimmed, is exactly name (case-insensitive). */
static bool coding_is(const char *v, size_t n, const char *name)
{
	size_t a = 0, l = strlen(name);

	while (a < n && (v[a] == ' ' || v[a] == '\t'))
		a++;
	while (n > a && (v[n - 1] == ' ' || v[n - 1] == '\t'))
		n--;
	return n - a == l && strncasecmp(v + a, name, l) == 0;
}

/* Whether the Content-Encoding value v[0..n) lists only "identity" (or nothing). */
static bool coding_identity(const char *v, size_t n)
{
	size_t i = 0;

	while (i < n) {
		size_t a;

		while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
			i++;
		a = i;
		while (i < n && v[i] != ',')
			i++;
		if (i > a && !coding_is(v + a, i - a, "identity"))
			return false;
	}
	return true;
}

/*
 * A scrubbed response must reach the scrubber whole and unencoded: the
 * request asked for identity and no range. A 206 is refused (502
 * range-response, nothing of it sent): pieces the client joins could hold
 * a secret no piece holds whole. A compressed body would carry the secret
 * past the scrubber: a final response with a body under one
 * Content-Encoding of gzip, x-gzip or deflate is decoded here
 * (r->inflate), scrubbed and sent without that header, chunked (close
 * delimited to an HTTP/1.0 client); any other coding, a list or a second
 * header refuses it (502 encoded-response, nothing of it sent). Sets how
 * the scrubbed body is framed. Returns 0, or -1 when refused.
 */
/* A 206 from a scrubbed host: no Range went up, and a range joined to another could show a secret. */
void inject_refuse_range(struct exchange *x)
{
	exchange_refusef(x, 502, "range-response", "http_response_incomplete",
			 "%s answered with a range (206) although none was asked for; "
			 "sluice-proxy cannot scrub a secret split across ranges",
			 x->t.host.name);
}

/* A coding sluice cannot decode from a scrubbed host; its value is not echoed (it could be a secret). */
void inject_refuse_coding(struct exchange *x, const char *why)
{
	exchange_refusef(x, 502, "encoded-response", "http_response_content_coding",
			 "%s answered with a Content-Encoding other than identity, which was asked "
			 "for; %s",
			 x->t.host.name, why);
}

int inject_response_coding(struct exchange *x, const struct http_response *resp)
{
	const struct http_header *enc = NULL;
	size_t nenc = 0;

	if (x->scrub == NULL || resp->status < 200)
		return 0;
	if (resp->status == 206) {
		inject_refuse_range(x);
		return -1;
	}
	x->out_chunked = resp->body == HTTP_BODY_CHUNKED;
	if (resp->body == HTTP_BODY_NONE ||
	    (resp->body == HTTP_BODY_LENGTH && resp->content_length == 0))
		return 0;
	for (size_t i = 0; i < resp->nheaders; i++) {
		const struct http_header *h = &resp->headers[i];

		if (http_header_is(h, "Content-Encoding") && !coding_identity(h->value, h->value_len)) {
			enc = h;
			nenc++;
		}
	}
	if (enc == NULL)
		return 0;
	if (nenc > 1 || !(coding_is(enc->value, enc->value_len, "gzip") ||
			  coding_is(enc->value, enc->value_len, "x-gzip") ||
			  coding_is(enc->value, enc->value_len, "deflate"))) {
		inject_refuse_coding(x, "sluice-proxy cannot scrub a secret from it");
		return -1;
	}
	x->inflate = calloc(1, sizeof(*x->inflate));
	/* 32 + 15: a gzip or a zlib stream, told apart by its header */
	if (x->inflate == NULL || inflateInit2(x->inflate, 32 + 15) != Z_OK) {
		free(x->inflate);
		x->inflate = NULL;
		exchange_refusef(x, 502, "encoded-response", "http_response_content_coding",
				 "out of memory for decoding a compressed response of %s",
				 x->t.host.name);
		return -1;
	}
	x->out_chunked = x->minor >= 1;
	if (!x->out_chunked)
		x->client_close = true; /* no length to give: the body ends with the connection */
	return 0;
}

/* A response header the client must not get: it described the body as it came, encoded. */
bool inject_drops_header(const struct exchange *x, const struct http_header *h)
{
	return x->inflate != NULL &&
	       (http_header_is(h, "Content-Encoding") || http_header_is(h, "Content-Length") ||
		http_header_is(h, "Transfer-Encoding"));
}

/* Mask the secret in cout[from..] (a complete response head) in place. Returns 0 or -1. */
int inject_scrub_head(struct exchange *x, size_t from)
{
	struct session *s = x->conn;
	struct scrub *sc = x->scrub;
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

/* Scrub in[0..n) onto cout (with end, all it holds too), as one chunk if out_chunked. */
static int scrub_out(struct exchange *x, const char *in, size_t n, bool end)
{
	struct session *s = x->conn;
	struct scrub *sc = x->scrub;
	bool chunk = x->out_chunked;
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
 * Body bytes in[0..n) of the response, decoded first when it is
 * compressed, onto cout; *used is how much of in was taken (all of it
 * unless decoding filled a piece: then z_more, and the rest comes next).
 * Returns 0, or -1 with why set.
 */
static int emit(struct exchange *x, const char *in, size_t n, size_t *used, const char **why)
{
	z_stream *z = x->inflate;
	char dec[INJECT_SCRUB_PIECE];
	size_t m;
	int zr;

	*used = n;
	*why = "response too large to scrub";
	if (z == NULL)
		return scrub_out(x, in, n, false);
	/* a gzip body may hold several members, one after the other */
	if (x->z_end && n > 0) {
		if (inflateReset(z) != Z_OK)
			return -1;
		x->z_end = false;
	}
	z->next_in = (const Bytef *)in;
	z->avail_in = (uInt)n;
	z->next_out = (Bytef *)dec;
	z->avail_out = sizeof(dec);
	zr = inflate(z, Z_NO_FLUSH);
	*used = n - z->avail_in;
	m = sizeof(dec) - z->avail_out;
	x->z_more = z->avail_out == 0;
	x->z_end = zr == Z_STREAM_END;
	x->inflated += m;
	if ((zr != Z_OK && zr != Z_STREAM_END && zr != Z_BUF_ERROR) ||
	    (n > 0 && *used == 0 && m == 0)) {
		*why = "malformed compressed response body";
		return -1;
	}
	if (x->inflated > INJECT_INFLATE_MAX) {
		*why = "compressed response body over 67108864 bytes once decoded";
		return -1;
	}
	return scrub_out(x, dec, m, false);
}

/* The body ended: what the scrubber holds goes out, then the last chunk. */
static int finish(struct exchange *x, const char **why)
{
	struct session *s = x->conn;

	if (x->inflate != NULL && !x->z_end) {
		*why = "compressed response body cut short";
		return -1;
	}
	*why = "response too large to scrub";
	if (scrub_out(x, NULL, 0, true) == -1 ||
	    (x->out_chunked && buf_append(&s->cout, "0\r\n\r\n", 5) == -1))
		return -1;
	x->resp_done = true;
	return 0;
}

/*
 * The response body of a scrubbed request, uin -> decoder -> scrubber ->
 * cout. Moves only while cout has room for the worst case of one piece.
 * Returns 1 moved, 0 nothing to do now, -1 malformed or out of room (why
 * says which).
 */
int inject_move_body(struct exchange *x, const char **why)
{
	struct session *s = x->conn;
	bool moved = false;

	*why = "malformed chunked response body";
	while (!x->resp_done && buf_room(&s->cout) >= inject_scrub_room(x)) {
		const char *p = buf_head(&s->uin);
		size_t n = buf_len(&s->uin), k, used;

		if (x->z_more) {
			/* what the decoder still holds, before more input */
			if (emit(x, NULL, 0, &used, why) == -1)
				return -1;
		} else if (x->in_done) {
			if (finish(x, why) == -1)
				return -1;
		} else if (n == 0) {
			break;
		} else if (x->resp_body == HTTP_BODY_CHUNKED) {
			struct http_chunked *ch = &x->resp_chunk;

			if (ch->state == HTTP_CHUNK_DATA) {
				k = n;
				if (k > ch->remaining)
					k = (size_t)ch->remaining;
				if (k > INJECT_SCRUB_PIECE)
					k = INJECT_SCRUB_PIECE;
				if (emit(x, p, k, &used, why) == -1)
					return -1;
				*why = "malformed chunked response body";
				if (http_chunked_scan(ch, p, used) != (ssize_t)used)
					return -1;
				buf_consume(&s->uin, used);
				x->down += used;
			} else {
				/* framing, a byte at a time: it is short */
				if (http_chunked_scan(ch, p, 1) != 1)
					return -1;
				buf_consume(&s->uin, 1);
				x->in_done = ch->state == HTTP_CHUNK_DONE;
			}
		} else {
			k = n;
			if (x->resp_body == HTTP_BODY_LENGTH && k > x->resp_left)
				k = (size_t)x->resp_left;
			if (k > INJECT_SCRUB_PIECE)
				k = INJECT_SCRUB_PIECE;
			if (emit(x, p, k, &used, why) == -1)
				return -1;
			buf_consume(&s->uin, used);
			x->down += used;
			if (x->resp_body == HTTP_BODY_LENGTH) {
				x->resp_left -= used;
				x->in_done = x->resp_left == 0;
			}
		}
		moved = true;
	}
	return moved ? 1 : 0;
}

/* A body read to its end (EOF-delimited): inject_move_body finishes it. */
void inject_body_eof(struct exchange *x)
{
	x->in_done = true;
}

/*
 * At start, after the drop to `user`: each env or file rule whose source
 * cannot be had now is named on stderr (the proxy serves the rest, and
 * refuses that rule's requests 403 until it is fixed; the file is read
 * again at each request, so fixing it needs no restart).
 */
void inject_warn_sources(const struct proxy *px)
{
	const struct config *c = px->config;

	for (size_t i = 0; i < c->nrules; i++) {
		const struct inject_rule *r = &c->rules[i];
		const char *v;
		struct stat st;
		char why[INJECT_SOURCE_MAX + 128];

		why[0] = '\0';
		if (r->source == INJECT_ENV) {
			v = getenv(r->source_arg);
			if (v == NULL || v[0] == '\0')
				snprintf(why, sizeof(why), "the environment variable %s is not set",
					 r->source_arg);
		} else if (r->source == INJECT_FILE) {
			if (stat(r->source_arg, &st) == -1 || access(r->source_arg, R_OK) == -1)
				snprintf(why, sizeof(why), "the secret file %s cannot be read (%s)",
					 r->source_arg, strerror(errno));
			else if (!S_ISREG(st.st_mode) || st.st_size == 0)
				snprintf(why, sizeof(why), "the secret file %s is empty or not a file",
					 r->source_arg);
			else if ((st.st_mode & 077) != 0)
				snprintf(why, sizeof(why), "the secret file %s is readable by others",
					 r->source_arg);
		}
		if (why[0] != '\0')
			fprintf(stderr,
				"sluice-proxy: warning: inject rule %s: %s; its requests are refused "
				"(403 inject-secret-missing) until that is fixed\n", r->name, why);
	}
}
