/*
 * h2_stream.c: one HTTP/2 stream of an intercepted CONNECT (h2.c is the
 * connection): its head read and judged as an HTTP/1.1 request is
 * (lib/h2_head.c, exchange_judge), its request opened upstream with the
 * credential, its bodies and trailers moved under flow control by hand,
 * its response scrubbed, its refusal answered, its row. It sends nothing
 * itself: what it submits, h2.c's step writes.
 */
#include "h2_stream.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "digits.h"
#include "h2_head.h"

/*
 * The connection was closed by what a callback did (out of memory, say):
 * nghttp2 is told to stop at once (its sessions are freed later, by
 * h2.c's codec_release, never inside one of its calls).
 */
bool h2_gone(void *arg)
{
	return ((struct h2 *)arg)->s->closed;
}

struct h2_stream *h2_stream_get(nghttp2_session *ng, int32_t id)
{
	return nghttp2_session_get_stream_user_data(ng, id);
}

/* --- header blocks --------------------------------------------------------- */

int h2_fields_add(struct h2_fields *fs, const uint8_t *name, size_t nlen,
		      const uint8_t *value, size_t vlen, size_t max)
{
	size_t need = fs->len + nlen + vlen;

	if (fs->n == HEADERS_MAX || fs->size + nlen + vlen + 32 > max)
		return -1;
	if (need > fs->cap) {
		size_t cap = fs->cap ? fs->cap : 1024;
		char *d;

		while (cap < need)
			cap *= 2;
		d = realloc(fs->data, cap);
		if (d == NULL)
			return -1;
		fs->data = d;
		fs->cap = cap;
	}
	if (nlen > 0)
		memcpy(fs->data + fs->len, name, nlen);
	if (vlen > 0)
		memcpy(fs->data + fs->len + nlen, value, vlen);
	fs->f[fs->n] = (struct h2_field){ (uint32_t)fs->len, (uint32_t)nlen,
					  (uint32_t)(fs->len + nlen), (uint32_t)vlen };
	fs->len = need;
	fs->size += nlen + vlen + 32;
	fs->n++;
	return 0;
}

void h2_fields_clear(struct h2_fields *fs)
{
	fs->len = fs->size = fs->n = 0;
}

static void fields_free(struct h2_fields *fs)
{
	free(fs->data);
	fs->data = NULL;
	fs->cap = 0;
	h2_fields_clear(fs);
}

struct http_header h2_field_at(const struct h2_fields *fs, size_t i)
{
	const struct h2_field *f = &fs->f[i];

	return (struct http_header){ fs->data + f->name, f->name_len, fs->data + f->value,
				     f->value_len };
}

bool h2_named(const struct http_header *h, const char *name)
{
	return h->name_len == strlen(name) && memcmp(h->name, name, h->name_len) == 0;
}

nghttp2_nv h2_nv(const char *name, size_t nlen, const char *value, size_t vlen,
			uint8_t flags)
{
	return (nghttp2_nv){ (uint8_t *)name, (uint8_t *)value, nlen, vlen, flags };
}

static nghttp2_nv nv_str(const char *name, const char *value)
{
	return h2_nv(name, strlen(name), value, strlen(value), NGHTTP2_NV_FLAG_NONE);
}

/* The request in st->req as an HTTP/1.1 head would give it (lib/h2_head.c); NULL or why not. */
static const char *stream_request(const struct h2_stream *st, struct http_request *req,
				  struct http_header *hd, struct http_header *fields)
{
	for (size_t i = 0; i < st->req.n; i++)
		fields[i] = h2_field_at(&st->req, i);
	return h2_head_request(fields, st->req.n, st->bodiless, req,
			       hd);
}

/* --- streams ---------------------------------------------------------------- */

struct h2_stream *h2_stream_new(struct h2 *h, int32_t cid)
{
	struct h2_stream *st = calloc(1, sizeof(*st));

	if (st == NULL || (st->x = calloc(1, sizeof(*st->x))) == NULL) {
		free(st);
		return NULL;
	}
	st->x->conn = h->s;
	st->cid = cid;
	st->uid = -1;
	st->up_closed = true;
	buf_init(&st->to_up, H2_QUEUE_MAX);
	buf_init(&st->to_cli, H2_QUEUE_MAX);
	list_insert_head(&h->streams, &st->link);
	h->nstreams++;
	return st;
}

/* Gone from both hops: what it held goes, and the bytes it never gave back. */
void h2_stream_free(struct h2 *h, struct h2_stream *st)
{
	if (!st->retry && st->cid > h->done_cid)
		h->done_cid = st->cid;
	nghttp2_session_consume_connection(h->srv, st->cli_in - st->cli_done);
	if (h->up != NULL)
		nghttp2_session_consume_connection(h->up, st->up_in - st->up_done);
	inject_end(st->x);
	free(st->x->ws);
	st->x->ws = NULL;
	budget_end(st->x);
	free(st->x);
	fields_free(&st->req);
	fields_free(&st->resp);
	if (st->req_tr != NULL)
		fields_free(st->req_tr);
	free(st->req_tr);
	buf_release(&st->to_up);
	buf_release(&st->to_cli);
	list_remove(&h->streams, &st->link);
	h->nstreams--;
	free(st);
}

/*
 * The fields a row needs, for an exchange refused before its head was read
 * (exchange_judge's request_begin fills them otherwise).
 */
void h2_exchange_open(struct session *s, struct exchange *x)
{
	x->active = x->h2 = true;
	x->t_start = loop_clock_ms();
	x->dns_ms = x->connect_ms = -1;
	x->req = ++s->nreq;
	x->t = s->ix->tunnel;
}

/* The stream's row, with the exchange's fields a stream refused before its head had. */
void h2_stream_log(struct session *s, struct h2_stream *st)
{
	struct exchange *x = st->x;

	if (!x->active && x->req == 0) {
		h2_exchange_open(s, x);
		x->decision = "refuse";
		x->reason = st->bad_reason != NULL ? st->bad_reason : "malformed";
		snprintf(x->detail, sizeof(x->detail), "%s", st->bad != NULL ? st->bad
							 : "reset by the client before its head was whole");
	}
	x->h2 = true;
	exchange_log(x);
}

/* Hand back n bytes of the upstream's DATA for st (its window, and the connection's). */
void h2_give_back_up(struct h2 *h, struct h2_stream *st, size_t n)
{
	st->up_done += n;
	if (h->up != NULL && st->uid > 0)
		nghttp2_session_consume(h->up, st->uid, n); /* a closed stream: the connection's */
}

void h2_give_back_cli(struct h2 *h, struct h2_stream *st, size_t n)
{
	st->cli_done += n;
	nghttp2_session_consume(h->srv, st->cid, n);
}

/* --- the client's side ---------------------------------------------------------- */

/*
 * A DATA provider's one step, either way: up to len bytes of q, their
 * window handed back on the hop they came from (give), then, once the
 * sender ended (end), the end of the stream or its trailers (tr, filtered
 * as over HTTP/1.1: no field a trailer must not carry, nor the
 * credential's, drop). Nothing yet: deferred until bytes come (resume).
 */
static ssize_t provide(const struct h2 *h, nghttp2_session *ng, int32_t id, uint8_t *out,
		       size_t len, uint32_t *flags, struct buf *q, bool end, bool *deferred,
		       const struct h2_fields *tr, const char *drop)
{
	size_t n = buf_len(q) < len ? buf_len(q) : len;

	if (h->s->closed)
		return NGHTTP2_ERR_CALLBACK_FAILURE; /* h2.c's gone(): nghttp2 stops */

	if (n > 0) {
		memcpy(out, buf_head(q), n);
		buf_consume(q, n);
	}
	if (buf_len(q) > 0)
		return (ssize_t)n;
	buf_trim(q);
	if (!end) {
		if (n > 0)
			return (ssize_t)n;
		*deferred = true;
		return NGHTTP2_ERR_DEFERRED;
	}
	*flags |= NGHTTP2_DATA_FLAG_EOF;
	if (tr != NULL) {
		nghttp2_nv nv[HEADERS_MAX];
		size_t k = 0;

		for (size_t i = 0; i < tr->n; i++) {
			struct http_header f = h2_field_at(tr, i);

			if (!http_is_forbidden_trailer(&f) && (drop[0] == '\0' || !http_header_is(&f, drop)))
				nv[k++] = h2_nv(f.name, f.name_len, f.value, f.value_len,
						NGHTTP2_NV_FLAG_NONE);
		}
		*flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
		if (nghttp2_submit_trailer(ng, id, nv, k) != 0)
			*flags &= ~(uint32_t)NGHTTP2_DATA_FLAG_NO_END_STREAM;
	}
	return (ssize_t)n;
}

/* The response body for the client: the upstream's DATA (or our refusal), then trailers. */
static ssize_t cli_read(nghttp2_session *ng, int32_t id, uint8_t *out, size_t len,
			uint32_t *flags, nghttp2_data_source *src, void *arg)
{
	struct h2_stream *st = src->ptr;
	size_t before = buf_len(&st->to_cli);
	ssize_t n = provide(arg, ng, id, out, len, flags, &st->to_cli, st->resp_end,
			    &st->cli_deferred, st->resp_tr ? &st->resp : NULL, st->x->inject_field);
	size_t took = before - buf_len(&st->to_cli);

	st->x->down += took;
	if (!st->local && took > 0)
		h2_give_back_up(arg, st, took);
	return n;
}

void h2_resume_cli(struct h2 *h, struct h2_stream *st)
{
	if (st->cli_deferred && !st->cli_closed) {
		st->cli_deferred = false;
		nghttp2_session_resume_data(h->srv, st->cid);
	}
}

/* Our own answer to the stream: status, Proxy-Status and the one-line body. */
static void answer_local(struct h2 *h, struct h2_stream *st, const struct refusal *r)
{
	char ps[REFUSE_STATUS_MAX], body[REFUSE_BODY_MAX], status[8], clen[24];
	int blen = refuse_texts(r, ps, sizeof(ps), body, sizeof(body));
	nghttp2_data_provider prd = { .source.ptr = st, .read_callback = cli_read };
	nghttp2_nv nv[4];

	buf_release(&st->to_cli);
	buf_init(&st->to_cli, H2_QUEUE_MAX);
	if (buf_append(&st->to_cli, body, (size_t)blen) == -1) {
		nghttp2_submit_rst_stream(h->srv, NGHTTP2_FLAG_NONE, st->cid, NGHTTP2_INTERNAL_ERROR);
		return;
	}
	snprintf(status, sizeof(status), "%d", r->status);
	snprintf(clen, sizeof(clen), "%d", blen);
	nv[0] = nv_str(":status", status);
	nv[1] = nv_str("proxy-status", ps);
	nv[2] = nv_str("content-type", "text/plain; charset=utf-8");
	nv[3] = nv_str("content-length", clen);
	st->answered = st->local = st->resp_end = true;
	st->x->status = r->status;
	if (nghttp2_submit_response(h->srv, st->cid, nv, 4, &prd) != 0)
		nghttp2_submit_rst_stream(h->srv, NGHTTP2_FLAG_NONE, st->cid, NGHTTP2_INTERNAL_ERROR);
}

static struct h2_stream *stream_of(struct h2 *h, const struct exchange *x)
{
	for (struct h2_stream *st = h2_first(h); st != NULL; st = h2_next(st))
		if (st->x == x)
			return st;
	return NULL;
}

/* The upstream's half of st ends now (a refusal, a revocation, the client gone). */
void h2_cancel_up(struct h2 *h, struct h2_stream *st)
{
	if (!st->up_closed && h->up != NULL)
		nghttp2_submit_rst_stream(h->up, NGHTTP2_FLAG_NONE, st->uid, NGHTTP2_CANCEL);
	h2_give_back_cli(h, st, buf_len(&st->to_up));
	buf_release(&st->to_up);
}

/* HTTP/2's refusal: x's stream is answered (or reset, its answer begun), not the connection */
void h2_stream_refuse(struct exchange *x, const struct refusal *r)
{
	struct session *s = x->conn;
	struct h2 *h = s->h2;
	struct h2_stream *st = stream_of(h, x);

	if (st == NULL)
		return; /* not a stream's: nothing is carried outside them */
	if (!x->active)
		h2_exchange_open(s, x);
	x->decision = "refuse";
	x->reason = r->reason;
	snprintf(x->detail, sizeof(x->detail), "%s", r->detail);
	memcpy(x->refusal, r->id, sizeof(x->refusal));
	st->refused = true;
	st->waiting = false;
	h2_cancel_up(h, st);
	if (st->cli_closed)
		return;
	if (!st->answered)
		answer_local(h, st, r);
	else
		nghttp2_submit_rst_stream(h->srv, NGHTTP2_FLAG_NONE, st->cid, NGHTTP2_INTERNAL_ERROR);
}


void h2_refuse_retry(struct h2 *h, struct h2_stream *st, const char *why)
{
	struct exchange *x = st->x;

	if (st->refused || st->cli_closed)
		return;
	if (!x->active)
		h2_exchange_open(h->s, x); /* its head was not whole: not judged */
	x->decision = "refuse";
	x->reason = "upstream-refused";
	snprintf(x->detail, sizeof(x->detail), "%s%s; reset REFUSED_STREAM: the client may send it again",
		 x->t.host.name, why);
	st->refused = st->retry = true;
	st->waiting = false;
	h2_cancel_up(h, st);
	nghttp2_submit_rst_stream(h->srv, NGHTTP2_FLAG_NONE, st->cid, NGHTTP2_REFUSED_STREAM);
}

/* --- the upstream's side ------------------------------------------------------- */

/* The request body for the upstream, then the client's trailers. */
static ssize_t up_read(nghttp2_session *ng, int32_t id, uint8_t *out, size_t len,
		       uint32_t *flags, nghttp2_data_source *src, void *arg)
{
	struct h2_stream *st = src->ptr;
	size_t before = buf_len(&st->to_up);
	ssize_t n = provide(arg, ng, id, out, len, flags, &st->to_up, st->req_end,
			    &st->up_deferred, st->req_tr, "");

	if (before > buf_len(&st->to_up))
		h2_give_back_cli(arg, st, before - buf_len(&st->to_up));
	return n;
}

void h2_resume_up(struct h2 *h, struct h2_stream *st)
{
	if (st->up_deferred && !st->up_closed && h->up != NULL) {
		st->up_deferred = false;
		nghttp2_session_resume_data(h->up, st->uid);
	}
}

/*
 * The judged head goes upstream on a stream of its own: the method, the
 * canonical :authority, the path (a query rule's parameter written), the
 * client's fields as head.c forwards them, the credential never indexed.
 */
static void submit_up(struct session *s, struct h2_stream *st, const struct http_request *req)
{
	struct h2 *h = s->h2;
	struct exchange *x = st->x;
	const struct inject_rule *rule = x->rule;
	int plan = rule != NULL && rule->target == INJECT_HEADER ? inject_header_plan(x, req) : -2;
	nghttp2_nv nv[HEADERS_MAX + 8];
	nghttp2_data_provider prd = { .source.ptr = st, .read_callback = up_read };
	char authority[HOST_NAME_MAX_LEN + 16], field[INJECT_FIELD_MAX + 1];
	char *path = NULL, *cred = NULL;
	size_t n = 0, psize = 0;
	ssize_t plen, clen = 0;
	int32_t id = -1;

	if (h->up_end || h->up_goaway) {
		h2_refuse_retry(h, st, h->up_goaway ? " sent GOAWAY: its connection takes no new stream"
						   : " ended its HTTP/2 connection before this stream was sent");
		return;
	}
	head_authority(x, authority, sizeof(authority));
	plen = head_query_path(x, req, &path, &psize);
	if (plan != -2)
		clen = head_credential(x, &cred);
	if (plen >= 0 && clen >= 0) {
		nv[n++] = h2_nv(":method", 7, req->method_str, req->method_len, NGHTTP2_NV_FLAG_NONE);
		nv[n++] = nv_str(":scheme", "https");
		nv[n++] = nv_str(":authority", authority);
		nv[n++] = h2_nv(":path", 5, path != NULL ? path : req->path, (size_t)plen,
				NGHTTP2_NV_FLAG_NONE);
		for (size_t i = 0; i < req->nheaders; i++) {
			const struct http_header *f = &req->headers[i];

			/* te: trailers is HTTP/2's one hop field (gRPC needs it); nghttp2 let no other in */
			if (h2_named(f, "te") || head_forwards(x, req, i, plan))
				nv[n++] = h2_nv(f->name, f->name_len, f->value, f->value_len,
						NGHTTP2_NV_FLAG_NONE);
		}
		if (plan != -2) {
			size_t i;

			for (i = 0; rule->field[i] != '\0'; i++)
				field[i] = (char)(rule->field[i] >= 'A' && rule->field[i] <= 'Z'
							  ? rule->field[i] + 32
							  : rule->field[i]);
			field[i] = '\0';
			nv[n++] = h2_nv(field, i, cred, (size_t)clen, NGHTTP2_NV_FLAG_NO_INDEX);
		}
		if (x->scrub != NULL)
			nv[n++] = nv_str("accept-encoding", "identity");
		id = nghttp2_submit_request(h->up, NULL, nv, n,
					    st->req_end && buf_len(&st->to_up) == 0 && st->req_tr == NULL
						    ? NULL
						    : &prd,
					    st);
	}
	if (path != NULL) {
		explicit_bzero(path, psize);
		free(path);
	}
	if (cred != NULL) {
		explicit_bzero(cred, (size_t)clen);
		free(cred);
	}
	if (id < 0) {
		x->injected = false;
		if (plen < 0 || clen < 0)
			exchange_refusef(x, 502, "upstream-h2", "http_protocol_error",
					 "the request could not be opened upstream: out of memory");
		else { /* nothing went: its stream ids used up, or nghttp2's memory */
			char why[96];

			snprintf(why, sizeof(why), "'s HTTP/2 connection took no new stream (%s)",
				 nghttp2_strerror(id));
			h2_refuse_retry(h, st, why);
		}
		return;
	}
	h->wipe_up = h->wipe_up || x->injected;
	inject_sent(x);
	st->uid = id;
	st->sent = true;
	st->up_closed = false;
	x->sent_ms = session_now(s); /* the response clock, again when the request ends */
	session_arm_timer(s);
	dial_up_format(s->up, x->dialed, sizeof(x->dialed));
}

/* The client's head is whole: judged like an HTTP/1.1 head, then sent or answered. */
void h2_stream_head(struct session *s, struct h2_stream *st)
{
	struct http_request req;
	struct http_header hd[HEADERS_MAX + 1], fields[HEADERS_MAX];
	const char *why = stream_request(st, &req, hd, fields);
	int rc;

	st->head_done = true;
	if (why != NULL) {
		exchange_refusef(st->x, 400, "malformed", "http_request_error", "%s", why);
		rc = -1;
	} else {
		rc = exchange_judge(st->x, &req);
	}
	st->x->h2 = true;
	if (rc == 1) {
		st->waiting = true;
		st->wait_ms = session_now(s);
		session_arm_timer(s);
	} else if (rc == 0)
		submit_up(s, st, &req);
}

void h2_token_ready(struct session *s, const struct token *t)
{
	struct http_request req;
	struct http_header hd[HEADERS_MAX + 1], fields[HEADERS_MAX];

	bool woke = false;

	for (struct h2_stream *st = h2_first(s->h2); st != NULL; st = h2_next(st)) {
		if (!st->waiting || st->cli_closed)
			continue;
		woke = true;
		st->waiting = false;
		s->token = NULL;
		s->token_waited = true; /* a woken request starts no run (token.c); this stream's */
		if (stream_request(st, &req, hd, fields) == NULL) {
			switch (inject_begin(st->x, &req)) {
			case 0:
				submit_up(s, st, &req);
				break;
			case 1:
				st->waiting = true;
				break;
			}
		}
		s->token_waited = false;
	}
	if (woke)
		session_pump(s);
}

/*
 * Mask the secrets in each name and each value of fs, each on its own
 * (same length, in place: '*' is a valid name byte). Returns 0 or -1.
 */
int h2_scrub_fields(struct scrub *sc, struct h2_fields *fs)
{
	char *tmp = malloc(fs->len + 1);

	if (tmp == NULL)
		return -1;
	for (size_t i = 0; i < 2 * fs->n; i++) {
		const struct h2_field *f = &fs->f[i / 2];
		char *v = fs->data + (i % 2 ? f->value : f->name);
		size_t n = i % 2 ? f->value_len : f->name_len, used = 0;
		size_t w = scrub_feed(sc, v, n, tmp, fs->len + 1, &used);

		while (scrub_pending(sc) > 0)
			w += scrub_flush(sc, tmp + w, fs->len + 1 - w);
		if (n > 0)
			memcpy(v, tmp, n); /* output never outruns input: all of it, w == n */
	}
	free(tmp);
	return 0;
}

/* The upstream's final response head: scrubbed, then to the client. */
void h2_answer_up(struct session *s, struct h2_stream *st, bool end)
{
	struct h2 *h = s->h2;
	struct exchange *x = st->x;
	nghttp2_nv nv[HEADERS_MAX];
	nghttp2_data_provider prd = { .source.ptr = st, .read_callback = cli_read };
	size_t k = 0;
	int status = 0;
	uint64_t v;
	bool encoded = false;

	for (size_t i = 0; i < st->resp.n; i++) {
		struct http_header f = h2_field_at(&st->resp, i);

		if (h2_named(&f, ":status") && f.value_len == 3 && dec_parse(f.value, 3, 999, &v) == 0)
			status = (int)v;
		if (x->scrub != NULL && h2_named(&f, "content-encoding") &&
		    !(f.value_len == 8 && strncasecmp(f.value, "identity", 8) == 0))
			encoded = true;
	}
	/*
	 * A minted token the upstream refused is marked stale: the next
	 * stream gets a new one (this one's 401 goes to the client: HTTP/2
	 * does not re-issue it).
	 */
	if (status == 401 && x->minted != NULL && x->injected &&
	    !token_refused(x->minted, x->minted_gen, session_config(s)) && x->detail[0] == '\0')
		snprintf(x->detail, sizeof(x->detail),
			 "the upstream refused the token (401); token-min-interval allows no new one "
			 "yet");
	/* what HTTP/1.1 refuses from a scrubbed host (inject.c), and a coding, which h2 does not decode */
	if (x->scrub != NULL && (status == 206 || encoded)) {
		if (status == 206)
			inject_refuse_range(x);
		else
			inject_refuse_coding(x, "sluice-proxy does not decode it over HTTP/2; nothing of "
						"it was passed on");
		return;
	}
	if (x->scrub != NULL && h2_scrub_fields(x->scrub, &st->resp) == -1) {
		nghttp2_submit_rst_stream(h->srv, NGHTTP2_FLAG_NONE, st->cid, NGHTTP2_INTERNAL_ERROR);
		return;
	}
	for (size_t i = 0; i < st->resp.n; i++) {
		struct http_header f = h2_field_at(&st->resp, i);

		nv[k++] = h2_nv(f.name, f.name_len, f.value, f.value_len, NGHTTP2_NV_FLAG_NONE);
	}
	x->status = status;
	x->resp_head = true;
	st->answered = true;
	st->resp_end = end;
	if (nghttp2_submit_response(h->srv, st->cid, nv, k, end ? NULL : &prd) != 0)
		nghttp2_submit_rst_stream(h->srv, NGHTTP2_FLAG_NONE, st->cid, NGHTTP2_INTERNAL_ERROR);
	h2_fields_clear(&st->resp); /* nghttp2 copied it; the trailers may come here */
}

/* The upstream's body ended: what the scrubber held goes last. */
void h2_resp_ended(struct h2 *h, struct h2_stream *st)
{
	struct scrub *sc = st->x->scrub;
	char tmp[4096];

	st->resp_end = true;
	while (sc != NULL && scrub_pending(sc) > 0) {
		size_t w = scrub_flush(sc, tmp, sizeof(tmp));

		if (buf_append(&st->to_cli, tmp, w) == -1)
			break;
	}
	h2_resume_cli(h, st);
}
