/*
 * h2.c: HTTP/2 on both hops of an intercepted CONNECT.
 *
 * tls.c hands a connection here once its client and its upstream both
 * chose h2 (the same version on both hops: nothing is translated, so the
 * HTTP/2-to-HTTP/1.1 desync shapes cannot arise). Two nghttp2 sessions
 * carry it: srv faces the client (sluice is its server), up faces the
 * upstream (sluice is its client), both driven from the loop with
 * mem_recv and mem_send through the connection's TLS. Each hop's
 * SETTINGS, PING, WINDOW_UPDATE and PRIORITY end at that hop.
 *
 * A client stream is an exchange. Its head becomes a struct http_request
 * (the pseudo-headers as its request line, :authority as its Host) and goes
 * through exchange_judge as an HTTP/1.1 head does: the tunnel's host, the
 * policy, the body cap, the credential. A refusal is that stream's answer
 * (session_refuse comes here: the status, Proxy-Status and the grant hint),
 * and the connection goes on. An allowed head opens a stream upstream,
 * filtered as head.c filters HTTP/1.1 (head_forwards), with the canonical
 * :authority and the credential (never indexed by HPACK). Bodies and
 * trailers move stream by stream with flow control by hand: a DATA byte's
 * window is given back only once the other hop's session took it, so a
 * slow reader slows its own stream, and what sluice holds is bounded by
 * the windows. A scrubbed host's response header values, DATA and trailers
 * are masked. A stream's row is written when its client stream closes; it
 * is freed once both of its streams have.
 *
 * Defences: nghttp2's HTTP messaging checks stay on (pseudo-headers,
 * content-length against DATA, connection-specific fields, CR, LF and NUL
 * in names or values: the stream is reset and its row says so), at most
 * H2_STREAMS_MAX concurrent streams, a header list cap, the rapid-reset
 * limit, a CONTINUATION cap, and nghttp2's bound on the acknowledgements a
 * flood of PING or SETTINGS makes us owe.
 */
#include "session.h"

#include "h2_head.h"

#include <nghttp2/nghttp2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>

#define H2_STREAMS_MAX 100           /* SETTINGS_MAX_CONCURRENT_STREAMS we announce */
#define H2_STREAM_WINDOW (256 << 10) /* each stream's window we give, both hops */
#define H2_CONN_WINDOW (1 << 20)     /* the connection's, both hops */
#define H2_OUT_HIGH (64 << 10)       /* frames queued for a hop before nghttp2 is asked for more */
#define H2_OUT_MAX (H2_OUT_HIGH + (64 << 10)) /* mem_send gives at most a frame at a time */
#define H2_QUEUE_MAX (H2_STREAM_WINDOW + (16 << 10)) /* a stream's bytes held, one way */
#define H2_RESET_BURST 200 /* RST_STREAMs a client may send at once ... */
#define H2_RESET_RATE 33   /* ... and per second after that */
#define H2_CONTINUATIONS 8 /* CONTINUATION frames after one HEADERS */

/* One field of a header block: offsets into its h2_fields' data. */
struct h2_field {
	uint32_t name, name_len, value, value_len;
};

/* A header block as it came, names and values back to back. */
struct h2_fields {
	char *data;
	size_t len, cap;
	size_t size; /* RFC 9113 6.5.2: each field's name, value and 32 */
	size_t n;
	struct h2_field f[HEADERS_MAX];
};

struct h2_stream {
	struct h2_stream *next, *prev;
	int32_t cid, uid;      /* the client's stream; the upstream's (-1: not opened) */
	struct exchange *x;    /* its judgement, credential, scrubber and row */
	struct h2_fields req;  /* the request head, kept until it went (a token wait) */
	struct h2_fields resp; /* the response head, then its trailers */
	struct h2_fields *req_tr; /* the client's trailers; NULL: none */
	struct buf to_up, to_cli; /* request body for the upstream, response body for the client */
	uint64_t cli_in, cli_done; /* DATA bytes from the client, and given back */
	uint64_t up_in, up_done;   /* ... from the upstream */
	const char *bad;     /* a head nghttp2 or we refused: why (its row's detail) ... */
	const char *bad_reason; /* ... and its reason */
	bool head_done;      /* the client's head is whole: judged */
	bool waiting;        /* for its rule's token (token.c wakes the session) ... */
	uint64_t wait_ms;    /* ... since (TOKEN_WAIT_MS) */
	bool sent;           /* its head went upstream */
	bool refused;        /* answered by sluice: the rest of its request is thrown away */
	bool req_end;        /* the client ended its side */
	bool bodiless;       /* ... with its head (END_STREAM on HEADERS) */
	bool up_deferred;    /* the upstream's DATA provider waits for bytes */
	bool answered;       /* a final response went to the client */
	bool local;          /* ... ours, not the upstream's (to_cli is not the upstream's bytes) */
	bool resp_end;       /* the whole response body is in to_cli (the scrubber flushed) */
	bool resp_tr;        /* resp holds trailers, to follow the body */
	bool cli_deferred;   /* the client's DATA provider waits for bytes */
	bool cli_closed;     /* the client stream closed: its row is written */
	bool up_closed;      /* the upstream stream closed (or never opened) */
};

struct h2 {
	struct session *s;
	nghttp2_session *srv, *up;
	struct h2_stream *streams;
	size_t nstreams;
	bool c_end;    /* the client's connection ended */
	bool up_end;   /* the upstream's connection ended */
	bool up_ended; /* ... and its open streams were answered (up_gone) */
};

/* --- header blocks --------------------------------------------------------- */

static int fields_add(struct h2_fields *fs, const uint8_t *name, size_t nlen,
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

static void fields_clear(struct h2_fields *fs)
{
	fs->len = fs->size = fs->n = 0;
}

static void fields_free(struct h2_fields *fs)
{
	free(fs->data);
	fs->data = NULL;
	fs->cap = 0;
	fields_clear(fs);
}

static struct http_header field_at(const struct h2_fields *fs, size_t i)
{
	const struct h2_field *f = &fs->f[i];

	return (struct http_header){ fs->data + f->name, f->name_len, fs->data + f->value,
				     f->value_len };
}

static bool named(const struct http_header *h, const char *name)
{
	return h->name_len == strlen(name) && memcmp(h->name, name, h->name_len) == 0;
}

static nghttp2_nv nv_of(const char *name, size_t nlen, const char *value, size_t vlen,
			uint8_t flags)
{
	return (nghttp2_nv){ (uint8_t *)name, (uint8_t *)value, nlen, vlen, flags };
}

static nghttp2_nv nv_str(const char *name, const char *value)
{
	return nv_of(name, strlen(name), value, strlen(value), NGHTTP2_NV_FLAG_NONE);
}

/* The request in st->req as an HTTP/1.1 head would give it (lib/h2_head.c); NULL or why not. */
static const char *stream_request(const struct h2_stream *st, struct http_request *req,
				  struct http_header *hd, struct http_header *fields)
{
	for (size_t i = 0; i < st->req.n; i++)
		fields[i] = field_at(&st->req, i);
	return h2_head_request(fields, st->req.n, st->bodiless, req,
			       hd);
}

/* --- streams ---------------------------------------------------------------- */

static struct h2_stream *stream_new(struct h2 *h, int32_t cid)
{
	struct h2_stream *st = calloc(1, sizeof(*st));

	if (st == NULL || (st->x = calloc(1, sizeof(*st->x))) == NULL) {
		free(st);
		return NULL;
	}
	st->cid = cid;
	st->uid = -1;
	st->up_closed = true;
	buf_init(&st->to_up, H2_QUEUE_MAX);
	buf_init(&st->to_cli, H2_QUEUE_MAX);
	st->next = h->streams;
	if (h->streams != NULL)
		h->streams->prev = st;
	h->streams = st;
	h->nstreams++;
	return st;
}

/* Gone from both hops: what it held goes, and the bytes it never gave back. */
static void stream_free(struct h2 *h, struct h2_stream *st)
{
	struct session *s = h->s;

	nghttp2_session_consume_connection(h->srv, st->cli_in - st->cli_done);
	if (h->up != NULL)
		nghttp2_session_consume_connection(h->up, st->up_in - st->up_done);
	s->x = st->x;
	inject_end(s);
	s->x = NULL;
	upgrade_free(st->x);
	free(st->x);
	fields_free(&st->req);
	fields_free(&st->resp);
	if (st->req_tr != NULL)
		fields_free(st->req_tr);
	free(st->req_tr);
	buf_release(&st->to_up);
	buf_release(&st->to_cli);
	if (st->prev != NULL)
		st->prev->next = st->next;
	else
		h->streams = st->next;
	if (st->next != NULL)
		st->next->prev = st->prev;
	h->nstreams--;
	free(st);
}

/* The stream's row, with the exchange's fields a stream refused before its head had. */
static void stream_log(struct session *s, struct h2_stream *st)
{
	struct exchange *x = st->x;

	if (!x->active && x->req == 0) {
		x->active = true;
		x->t_start = proxy_now_ms();
		x->dns_ms = x->connect_ms = -1;
		x->req = ++s->nreq;
		x->t = s->ix->tunnel;
		x->decision = "refuse";
		x->reason = st->bad_reason != NULL ? st->bad_reason : "malformed";
		snprintf(x->detail, sizeof(x->detail), "%s", st->bad != NULL ? st->bad
							 : "reset by the client before its head was whole");
	}
	x->h2 = true;
	s->x = x;
	session_log(s);
	s->x = NULL;
}

/* Hand back n bytes of the upstream's DATA for st (its window, and the connection's). */
static void up_give_back(struct h2 *h, struct h2_stream *st, size_t n)
{
	st->up_done += n;
	if (h->up != NULL && st->uid > 0)
		nghttp2_session_consume(h->up, st->uid, n); /* a closed stream: the connection's */
}

static void cli_give_back(struct h2 *h, struct h2_stream *st, size_t n)
{
	st->cli_done += n;
	nghttp2_session_consume(h->srv, st->cid, n);
}

/* --- the client's side ---------------------------------------------------------- */

/* The response body for the client: the upstream's DATA (or our refusal), then trailers. */
static ssize_t cli_read(nghttp2_session *ng, int32_t id, uint8_t *out, size_t len,
			uint32_t *flags, nghttp2_data_source *src, void *arg)
{
	struct h2 *h = arg;
	struct h2_stream *st = src->ptr;
	size_t n = buf_len(&st->to_cli) < len ? buf_len(&st->to_cli) : len;

	if (n > 0) {
		memcpy(out, buf_head(&st->to_cli), n);
		buf_consume(&st->to_cli, n);
	}
	st->x->down += n;
	if (!st->local && n > 0)
		up_give_back(h, st, n);
	if (buf_len(&st->to_cli) > 0)
		return (ssize_t)n;
	buf_trim(&st->to_cli);
	if (!st->resp_end) {
		if (n > 0)
			return (ssize_t)n;
		st->cli_deferred = true;
		return NGHTTP2_ERR_DEFERRED;
	}
	*flags |= NGHTTP2_DATA_FLAG_EOF;
	if (st->resp_tr) {
		nghttp2_nv nv[HEADERS_MAX];
		size_t k = 0;

		for (size_t i = 0; i < st->resp.n; i++) {
			struct http_header f = field_at(&st->resp, i);

			/* as over HTTP/1.1: no field a trailer must not carry, nor the credential's */
			if (http_is_forbidden_trailer(&f) ||
			    (st->x->inject_field[0] != '\0' && http_header_is(&f, st->x->inject_field)))
				continue;
			nv[k++] = nv_of(f.name, f.name_len, f.value, f.value_len, NGHTTP2_NV_FLAG_NONE);
		}
		*flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
		if (nghttp2_submit_trailer(ng, id, nv, k) != 0)
			*flags &= ~(uint32_t)NGHTTP2_DATA_FLAG_NO_END_STREAM;
	}
	return (ssize_t)n;
}

static void cli_resume(struct h2 *h, struct h2_stream *st)
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
	for (struct h2_stream *st = h->streams; st != NULL; st = st->next)
		if (st->x == x)
			return st;
	return NULL;
}

/* The upstream's half of st ends now (a refusal, a revocation, the client gone). */
static void up_cancel(struct h2 *h, struct h2_stream *st)
{
	if (!st->up_closed && h->up != NULL)
		nghttp2_submit_rst_stream(h->up, NGHTTP2_FLAG_NONE, st->uid, NGHTTP2_CANCEL);
	cli_give_back(h, st, buf_len(&st->to_up));
	buf_release(&st->to_up);
}

void h2_refuse(struct session *s, const struct refusal *r)
{
	struct h2 *h = s->h2;
	struct h2_stream *st = stream_of(h, s->x);
	struct exchange *x = s->x;

	if (st == NULL)
		return; /* not a stream's: nothing is carried outside them */
	if (!x->active) {
		x->active = true;
		x->t_start = proxy_now_ms();
		x->dns_ms = x->connect_ms = -1;
		x->req = ++s->nreq;
		x->t = s->ix->tunnel;
	}
	x->decision = "refuse";
	x->reason = r->reason;
	snprintf(x->detail, sizeof(x->detail), "%s", r->detail);
	st->refused = true;
	st->waiting = false;
	up_cancel(h, st);
	if (st->cli_closed)
		return;
	if (!st->answered)
		answer_local(h, st, r);
	else
		nghttp2_submit_rst_stream(h->srv, NGHTTP2_FLAG_NONE, st->cid, NGHTTP2_INTERNAL_ERROR);
}

/* --- the upstream's side ------------------------------------------------------- */

/* The request body for the upstream, then the client's trailers. */
static ssize_t up_read(nghttp2_session *ng, int32_t id, uint8_t *out, size_t len,
		       uint32_t *flags, nghttp2_data_source *src, void *arg)
{
	struct h2 *h = arg;
	struct h2_stream *st = src->ptr;
	size_t n = buf_len(&st->to_up) < len ? buf_len(&st->to_up) : len;

	if (n > 0) {
		memcpy(out, buf_head(&st->to_up), n);
		buf_consume(&st->to_up, n);
	}
	if (n > 0)
		cli_give_back(h, st, n);
	if (buf_len(&st->to_up) > 0)
		return (ssize_t)n;
	if (!st->req_end) {
		if (n > 0)
			return (ssize_t)n;
		st->up_deferred = true;
		return NGHTTP2_ERR_DEFERRED;
	}
	*flags |= NGHTTP2_DATA_FLAG_EOF;
	if (st->req_tr != NULL) {
		nghttp2_nv nv[HEADERS_MAX];
		size_t k = 0;

		for (size_t i = 0; i < st->req_tr->n; i++) {
			struct http_header f = field_at(st->req_tr, i);

			if (!http_is_forbidden_trailer(&f))
				nv[k++] = nv_of(f.name, f.name_len, f.value, f.value_len,
						NGHTTP2_NV_FLAG_NONE);
		}
		*flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
		if (nghttp2_submit_trailer(ng, id, nv, k) != 0)
			*flags &= ~(uint32_t)NGHTTP2_DATA_FLAG_NO_END_STREAM;
	}
	return (ssize_t)n;
}

static void up_resume(struct h2 *h, struct h2_stream *st)
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
	struct exchange *x = s->x;
	const struct inject_rule *rule = x->rule;
	int plan = rule != NULL && rule->target == INJECT_HEADER ? inject_header_plan(s, req) : -2;
	nghttp2_nv nv[HEADERS_MAX + 8];
	nghttp2_data_provider prd = { .source.ptr = st, .read_callback = up_read };
	char authority[HOST_NAME_MAX_LEN + 16], field[INJECT_FIELD_MAX + 1];
	char *path = NULL, *cred = NULL;
	size_t n = 0, psize = 0;
	ssize_t plen, clen = 0;
	int32_t id = -1;

	if (h->up_end) {
		session_refuse(s, 502, "upstream-closed", "destination_unavailable",
			       "the upstream's HTTP/2 connection ended; open a new connection");
		return;
	}
	head_authority(s, authority, sizeof(authority));
	plen = head_query_path(s, req, &path, &psize);
	if (plan != -2)
		clen = head_credential(s, &cred);
	if (plen >= 0 && clen >= 0) {
		nv[n++] = nv_of(":method", 7, req->method_str, req->method_len, NGHTTP2_NV_FLAG_NONE);
		nv[n++] = nv_str(":scheme", "https");
		nv[n++] = nv_str(":authority", authority);
		nv[n++] = nv_of(":path", 5, path != NULL ? path : req->path, (size_t)plen,
				NGHTTP2_NV_FLAG_NONE);
		for (size_t i = 0; i < req->nheaders; i++) {
			const struct http_header *f = &req->headers[i];

			/* te: trailers is HTTP/2's one hop field (gRPC needs it); nghttp2 let no other in */
			if (named(f, "te") || head_forwards(s, req, i, plan))
				nv[n++] = nv_of(f->name, f->name_len, f->value, f->value_len,
						NGHTTP2_NV_FLAG_NONE);
		}
		if (plan != -2) {
			size_t i;

			for (i = 0; rule->field[i] != '\0'; i++)
				field[i] = (char)(rule->field[i] >= 'A' && rule->field[i] <= 'Z'
							  ? rule->field[i] + 32
							  : rule->field[i]);
			field[i] = '\0';
			nv[n++] = nv_of(field, i, cred, (size_t)clen, NGHTTP2_NV_FLAG_NO_INDEX);
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
		session_refuse(s, 502, "upstream-h2", "http_protocol_error",
			       "the request could not be opened upstream: %s",
			       plen < 0 || clen < 0 ? "out of memory" : nghttp2_strerror(id));
		return;
	}
	inject_sent(s);
	st->uid = id;
	st->sent = true;
	st->up_closed = false;
	x->sent_ms = session_now(s); /* the response clock, again when the request ends */
	session_arm_timer(s);
	dial_up_format(s->up, x->dialed, sizeof(x->dialed));
}

/* The client's head is whole: judged like an HTTP/1.1 head, then sent or answered. */
static void stream_head(struct session *s, struct h2_stream *st)
{
	struct http_request req;
	struct http_header hd[HEADERS_MAX + 1], fields[HEADERS_MAX];
	const char *why = stream_request(st, &req, hd, fields);
	int rc;

	st->head_done = true;
	s->x = st->x;
	if (why != NULL) {
		session_refuse(s, 400, "malformed", "http_request_error", "%s", why);
		rc = -1;
	} else {
		rc = exchange_judge(s, &req);
	}
	st->x->h2 = true;
	if (rc == 1) {
		st->waiting = true;
		st->wait_ms = session_now(s);
		session_arm_timer(s);
	} else if (rc == 0)
		submit_up(s, st, &req);
	s->x = NULL;
}

void h2_token_ready(struct session *s)
{
	struct http_request req;
	struct http_header hd[HEADERS_MAX + 1], fields[HEADERS_MAX];

	for (struct h2_stream *st = s->h2->streams; st != NULL; st = st->next) {
		if (!st->waiting || st->cli_closed)
			continue;
		st->waiting = false;
		s->x = st->x;
		if (stream_request(st, &req, hd, fields) == NULL) {
			switch (inject_begin(s, &req)) {
			case 0:
				submit_up(s, st, &req);
				break;
			case 1:
				st->waiting = true;
				break;
			}
		}
		s->x = NULL;
	}
	session_pump(s);
}

/* Mask the secrets in each value of fs, each on its own (same length, in place). Returns 0 or -1. */
static int scrub_fields(struct scrub *sc, struct h2_fields *fs)
{
	char *tmp = malloc(fs->len + 1);

	if (tmp == NULL)
		return -1;
	for (size_t i = 0; i < fs->n; i++) {
		char *v = fs->data + fs->f[i].value;
		size_t n = fs->f[i].value_len, used = 0;
		size_t w = scrub_feed(sc, v, n, tmp, fs->len + 1, &used);

		while (scrub_pending(sc) > 0)
			w += scrub_flush(sc, tmp + w, fs->len + 1 - w);
		memcpy(v, tmp, n); /* output never outruns input: all of it, w == n */
	}
	free(tmp);
	return 0;
}

/* The upstream's final response head: scrubbed, then to the client. */
static void answer_up(struct session *s, struct h2_stream *st, bool end)
{
	struct h2 *h = s->h2;
	struct exchange *x = st->x;
	nghttp2_nv nv[HEADERS_MAX];
	nghttp2_data_provider prd = { .source.ptr = st, .read_callback = cli_read };
	size_t k = 0;
	int status = 0;

	for (size_t i = 0; i < st->resp.n; i++) {
		struct http_header f = field_at(&st->resp, i);

		if (named(&f, ":status") && f.value_len == 3)
			status = (f.value[0] - '0') * 100 + (f.value[1] - '0') * 10 + (f.value[2] - '0');
		if (x->scrub != NULL && named(&f, "content-encoding") &&
		    !(f.value_len == 8 && strncasecmp(f.value, "identity", 8) == 0)) {
			s->x = x;
			session_refuse(s, 502, "inject-failed", "http_response_error",
				       "%s answered with content-encoding %.*s, which sluice cannot "
				       "scrub over HTTP/2; nothing of it was passed on",
				       x->t.host.name, (int)(f.value_len > 32 ? 32 : f.value_len),
				       f.value);
			s->x = NULL;
			return;
		}
	}
	if (x->scrub != NULL && scrub_fields(x->scrub, &st->resp) == -1) {
		nghttp2_submit_rst_stream(h->srv, NGHTTP2_FLAG_NONE, st->cid, NGHTTP2_INTERNAL_ERROR);
		return;
	}
	for (size_t i = 0; i < st->resp.n; i++) {
		struct http_header f = field_at(&st->resp, i);

		nv[k++] = nv_of(f.name, f.name_len, f.value, f.value_len, NGHTTP2_NV_FLAG_NONE);
	}
	x->status = status;
	x->resp_head = true;
	st->answered = true;
	st->resp_end = end;
	if (nghttp2_submit_response(h->srv, st->cid, nv, k, end ? NULL : &prd) != 0)
		nghttp2_submit_rst_stream(h->srv, NGHTTP2_FLAG_NONE, st->cid, NGHTTP2_INTERNAL_ERROR);
	fields_clear(&st->resp); /* nghttp2 copied it; the trailers may come here */
}

/* The upstream's body ended: what the scrubber held goes last. */
static void resp_ended(struct h2 *h, struct h2_stream *st)
{
	struct scrub *sc = st->x->scrub;
	char tmp[4096];

	st->resp_end = true;
	while (sc != NULL && scrub_pending(sc) > 0) {
		size_t w = scrub_flush(sc, tmp, sizeof(tmp));

		if (buf_append(&st->to_cli, tmp, w) == -1)
			break;
	}
	cli_resume(h, st);
}

/* --- nghttp2's callbacks: the client's session ------------------------------------ */

static struct h2_stream *stream_get(nghttp2_session *ng, int32_t id)
{
	return nghttp2_session_get_stream_user_data(ng, id);
}

static int srv_begin_headers(nghttp2_session *ng, const nghttp2_frame *frame, void *arg)
{
	struct h2 *h = arg;
	struct h2_stream *st;

	if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST)
		return 0;
	/* streams whose upstream half is still closing count too */
	if (h->nstreams >= 2 * H2_STREAMS_MAX)
		return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
	st = stream_new(h, frame->hd.stream_id);
	if (st == NULL)
		return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
	nghttp2_session_set_stream_user_data(ng, frame->hd.stream_id, st);
	return 0;
}

static int srv_header(nghttp2_session *ng, const nghttp2_frame *frame, const uint8_t *name,
		      size_t nlen, const uint8_t *value, size_t vlen, uint8_t flags, void *arg)
{
	struct h2_stream *st = stream_get(ng, frame->hd.stream_id);
	struct h2_fields *fs;

	if (st == NULL || st->bad != NULL)
		return 0;
	if (!st->head_done) {
		fs = &st->req;
	} else {
		if (st->req_tr == NULL && (st->req_tr = calloc(1, sizeof(*st->req_tr))) == NULL)
			return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
		fs = st->req_tr;
	}
	if (fields_add(fs, name, nlen, value, vlen, HEAD_MAX) == -1) {
		st->bad = "its header list is over 32 KiB or 100 fields";
		st->bad_reason = "head-too-large";
		return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
	}
	return 0;
}

static int srv_invalid_header(nghttp2_session *ng, const nghttp2_frame *frame,
			      const uint8_t *name, size_t nlen, const uint8_t *value, size_t vlen,
			      uint8_t flags, void *arg)
{
	struct h2_stream *st = stream_get(ng, frame->hd.stream_id);

	if (st != NULL && st->bad == NULL)
		st->bad = "a header field HTTP/2 forbids (CR, LF or NUL, upper case, a "
			  "connection-specific field, or a bad pseudo-header)";
	return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
}

static int srv_invalid_frame(nghttp2_session *ng, const nghttp2_frame *frame, int err, void *arg)
{
	struct h2_stream *st = frame->hd.stream_id > 0 ? stream_get(ng, frame->hd.stream_id) : NULL;

	if (st != NULL && st->bad == NULL && !st->head_done)
		st->bad = "a malformed request head (a pseudo-header missing, repeated or out of "
			  "place)";
	return 0;
}

static int srv_frame(nghttp2_session *ng, const nghttp2_frame *frame, void *arg)
{
	struct h2 *h = arg;
	struct h2_stream *st;
	bool end = (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;

	if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA)
		return 0;
	st = stream_get(ng, frame->hd.stream_id);
	if (st == NULL)
		return 0;
	if (end)
		st->req_end = true;
	if (frame->hd.type == NGHTTP2_HEADERS && !st->head_done && st->bad == NULL) {
		st->bodiless = end;
		stream_head(h->s, st);
		return 0;
	}
	if (frame->hd.type == NGHTTP2_HEADERS && st->head_done && !st->sent && !st->refused) {
		/* trailers before the head went (it waits for a token): not kept apart from it */
		h->s->x = st->x;
		session_refuse(h->s, 400, "malformed", "http_request_error",
			       "trailers came before the request could be sent");
		h->s->x = NULL;
		return 0;
	}
	if (end && st->sent) {
		st->x->sent_ms = session_now(h->s);
		up_resume(h, st);
	}
	return 0;
}

static int srv_data(nghttp2_session *ng, uint8_t flags, int32_t id, const uint8_t *data,
		    size_t len, void *arg)
{
	struct h2 *h = arg;
	struct h2_stream *st = stream_get(ng, id);
	struct session *s = h->s;

	if (st == NULL) {
		nghttp2_session_consume_connection(ng, len);
		return 0;
	}
	st->cli_in += len;
	if (st->refused || st->bad != NULL) {
		cli_give_back(h, st, len);
		return 0;
	}
	st->x->up += len;
	if (st->x->body_cap > 0 && st->x->up > st->x->body_cap) {
		cli_give_back(h, st, len);
		s->x = st->x;
		exchange_body_refuse(s, 0);
		s->x = NULL;
		return 0;
	}
	if (buf_append(&st->to_up, data, len) == -1) {
		/* past the window we gave: a client that ignores flow control */
		cli_give_back(h, st, len);
		up_cancel(h, st);
		nghttp2_submit_rst_stream(ng, NGHTTP2_FLAG_NONE, id, NGHTTP2_FLOW_CONTROL_ERROR);
		return 0;
	}
	up_resume(h, st);
	return 0;
}

static int srv_close(nghttp2_session *ng, int32_t id, uint32_t code, void *arg)
{
	struct h2 *h = arg;
	struct h2_stream *st = stream_get(ng, id);

	if (st == NULL)
		return 0;
	st->cli_closed = true;
	if (code != NGHTTP2_NO_ERROR && st->x->detail[0] == '\0')
		snprintf(st->x->detail, sizeof(st->x->detail), "reset (%s)",
			 nghttp2_http2_strerror(code));
	up_cancel(h, st);
	stream_log(h->s, st);
	if (st->up_closed)
		stream_free(h, st);
	return 0;
}

/* --- nghttp2's callbacks: the upstream's session ------------------------------------ */

static int up_header(nghttp2_session *ng, const nghttp2_frame *frame, const uint8_t *name,
		     size_t nlen, const uint8_t *value, size_t vlen, uint8_t flags, void *arg)
{
	struct h2_stream *st = stream_get(ng, frame->hd.stream_id);

	if (st == NULL || st->cli_closed)
		return 0;
	if (fields_add(&st->resp, name, nlen, value, vlen, RESP_HEAD_MAX) == -1)
		return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE; /* reset: up_close answers 502 */
	return 0;
}

static int up_frame(nghttp2_session *ng, const nghttp2_frame *frame, void *arg)
{
	struct h2 *h = arg;
	struct h2_stream *st;
	bool end = (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;

	if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA)
		return 0;
	st = stream_get(ng, frame->hd.stream_id);
	if (st == NULL || st->cli_closed || st->refused)
		return 0;
	if (frame->hd.type == NGHTTP2_HEADERS && !st->answered) {
		struct http_header f = st->resp.n > 0 ? field_at(&st->resp, 0) : (struct http_header){ 0 };

		if (named(&f, ":status") && f.value_len == 3 && f.value[0] == '1') {
			/* an interim response (100 Continue, 103): passed on as it is */
			nghttp2_nv nv[HEADERS_MAX];

			for (size_t i = 0; i < st->resp.n; i++) {
				struct http_header g = field_at(&st->resp, i);

				nv[i] = nv_of(g.name, g.name_len, g.value, g.value_len,
					      NGHTTP2_NV_FLAG_NONE);
			}
			nghttp2_submit_headers(h->srv, NGHTTP2_FLAG_NONE, st->cid, NULL, nv,
					       st->resp.n, NULL);
			fields_clear(&st->resp);
			return 0;
		}
		answer_up(h->s, st, end);
		return 0;
	}
	if (frame->hd.type == NGHTTP2_HEADERS) {
		/* trailers (gRPC's status): scrubbed like the head, after the body */
		resp_ended(h, st);
		if (st->x->scrub != NULL && scrub_fields(st->x->scrub, &st->resp) == -1) {
			nghttp2_submit_rst_stream(h->srv, NGHTTP2_FLAG_NONE, st->cid,
						  NGHTTP2_INTERNAL_ERROR);
			return 0;
		}
		st->resp_tr = true;
		return 0;
	}
	if (end)
		resp_ended(h, st);
	return 0;
}

static int up_data(nghttp2_session *ng, uint8_t flags, int32_t id, const uint8_t *data,
		   size_t len, void *arg)
{
	struct h2 *h = arg;
	struct h2_stream *st = stream_get(ng, id);
	struct scrub *sc;

	if (st == NULL) {
		nghttp2_session_consume_connection(ng, len);
		return 0;
	}
	st->up_in += len;
	if (st->cli_closed || st->refused) {
		up_give_back(h, st, len);
		return 0;
	}
	sc = st->x->scrub;
	if (sc == NULL) {
		if (buf_append(&st->to_cli, data, len) == -1)
			return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
	} else {
		/* masked on the way: same length, the scrubber holding back at most a secret's */
		size_t size = len + scrub_pending(sc) + 1, used = 0, w;
		char *tmp = malloc(size);

		if (tmp == NULL)
			return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
		w = scrub_feed(sc, (const char *)data, len, tmp, size, &used);
		if (buf_append(&st->to_cli, tmp, w) == -1) {
			free(tmp);
			return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
		}
		free(tmp);
	}
	cli_resume(h, st);
	return 0;
}

static int up_close(nghttp2_session *ng, int32_t id, uint32_t code, void *arg)
{
	struct h2 *h = arg;
	struct h2_stream *st = stream_get(ng, id);

	if (st == NULL)
		return 0;
	st->up_closed = true;
	if (st->cli_closed) {
		stream_free(h, st);
		return 0;
	}
	if (!st->resp_end && !st->refused) {
		struct session *s = h->s;

		s->x = st->x;
		if (!st->answered)
			session_refuse(s, 502, "upstream-h2", "http_protocol_error",
				       "%s reset the stream (%s) before it answered",
				       st->x->t.host.name, nghttp2_http2_strerror(code));
		else {
			snprintf(st->x->detail, sizeof(st->x->detail),
				 "%s reset the stream (%s) during its response", st->x->t.host.name,
				 nghttp2_http2_strerror(code));
			nghttp2_submit_rst_stream(h->srv, NGHTTP2_FLAG_NONE, st->cid,
						  NGHTTP2_INTERNAL_ERROR);
		}
		s->x = NULL;
	}
	return 0;
}

/* --- the connection ------------------------------------------------------------ */

static nghttp2_option *options(void)
{
	nghttp2_option *o;

	if (nghttp2_option_new(&o) != 0)
		return NULL;
	nghttp2_option_set_no_auto_window_update(o, 1);
	nghttp2_option_set_max_continuations(o, H2_CONTINUATIONS);
	nghttp2_option_set_stream_reset_rate_limit(o, H2_RESET_BURST, H2_RESET_RATE);
	return o;
}

static int sessions_new(struct h2 *h)
{
	nghttp2_session_callbacks *cb;
	nghttp2_option *o = options();
	nghttp2_settings_entry srv_set[] = {
		{ NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, H2_STREAMS_MAX },
		{ NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, H2_STREAM_WINDOW },
		{ NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, HEAD_MAX },
	};
	nghttp2_settings_entry up_set[] = {
		{ NGHTTP2_SETTINGS_ENABLE_PUSH, 0 },
		{ NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, H2_STREAM_WINDOW },
		{ NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, RESP_HEAD_MAX },
	};
	int rc = -1;

	if (o == NULL || nghttp2_session_callbacks_new(&cb) != 0) {
		nghttp2_option_del(o);
		return -1;
	}
	nghttp2_session_callbacks_set_on_begin_headers_callback(cb, srv_begin_headers);
	nghttp2_session_callbacks_set_on_header_callback(cb, srv_header);
	nghttp2_session_callbacks_set_on_invalid_header_callback(cb, srv_invalid_header);
	nghttp2_session_callbacks_set_on_invalid_frame_recv_callback(cb, srv_invalid_frame);
	nghttp2_session_callbacks_set_on_frame_recv_callback(cb, srv_frame);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, srv_data);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb, srv_close);
	if (nghttp2_session_server_new2(&h->srv, cb, h, o) != 0)
		goto out;
	nghttp2_session_callbacks_del(cb);
	if (nghttp2_session_callbacks_new(&cb) != 0) {
		cb = NULL;
		goto out;
	}
	nghttp2_session_callbacks_set_on_header_callback(cb, up_header);
	nghttp2_session_callbacks_set_on_frame_recv_callback(cb, up_frame);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, up_data);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb, up_close);
	if (nghttp2_session_client_new2(&h->up, cb, h, o) != 0)
		goto out;
	if (nghttp2_submit_settings(h->srv, NGHTTP2_FLAG_NONE, srv_set, 3) != 0 ||
	    nghttp2_session_set_local_window_size(h->srv, NGHTTP2_FLAG_NONE, 0, H2_CONN_WINDOW) != 0 ||
	    nghttp2_submit_settings(h->up, NGHTTP2_FLAG_NONE, up_set, 3) != 0 ||
	    nghttp2_session_set_local_window_size(h->up, NGHTTP2_FLAG_NONE, 0, H2_CONN_WINDOW) != 0)
		goto out;
	rc = 0;
out:
	nghttp2_session_callbacks_del(cb);
	nghttp2_option_del(o);
	return rc;
}

void h2_begin(struct session *s)
{
	struct h2 *h;

	exchange_free(s); /* the tunnel's row is written; each stream gets its own */
	if (buf_len(&s->cin) > 0 || buf_len(&s->cout) > 0 || buf_len(&s->uin) > 0 ||
	    buf_len(&s->uout) > 0) {
		session_close(s, "bytes left over from before HTTP/2");
		return;
	}
	h = calloc(1, sizeof(*h));
	if (h == NULL) {
		session_close(s, "out of memory");
		return;
	}
	h->s = s;
	s->h2 = h;
	if (sessions_new(h) == -1) {
		session_close(s, "HTTP/2 setup failed");
		return;
	}
	/* a frame from nghttp2 goes whole into the buffer it is asked for */
	buf_release(&s->cout);
	buf_init(&s->cout, H2_OUT_MAX);
	buf_release(&s->uout);
	buf_init(&s->uout, H2_OUT_MAX);
	session_enter(s, SS_H2);
}

/* Read one hop and feed its session. Returns 0, or -1 (the connection is closed). */
static int h2_recv(struct session *s, bool up, bool *moved)
{
	struct h2 *h = s->h2;
	nghttp2_session *ng = up ? h->up : h->srv;
	struct buf *b = up ? &s->uin : &s->cin;
	bool *end = up ? &h->up_end : &h->c_end;

	for (int i = 0; i < 16 && !*end && nghttp2_session_want_read(ng); i++) {
		bool drained = false;
		ssize_t n = sio_read(s, up, b, 0, &drained), rv;

		if (n == 0 || (n < 0 && !session_would_block())) {
			*end = true;
			return 0;
		}
		if (n < 0)
			return 0;
		rv = nghttp2_session_mem_recv(ng, (const uint8_t *)buf_head(b), buf_len(b));
		if (rv < 0) {
			char why[160];

			snprintf(why, sizeof(why), "HTTP/2 from the %s: %s", up ? "upstream" : "client",
				 nghttp2_strerror((int)rv));
			session_close(s, why);
			return -1;
		}
		buf_consume(b, (size_t)rv);
		buf_trim(b);
		*moved = true;
		s->active_ms = session_now(s);
		if (drained)
			break;
	}
	return 0;
}

/* Take frames from one hop's session and write them. Returns 0, or -1 (closed). */
static int h2_send(struct session *s, bool up, bool *moved)
{
	struct h2 *h = s->h2;
	nghttp2_session *ng = up ? h->up : h->srv;
	struct buf *b = up ? &s->uout : &s->cout;
	ssize_t n;

	if (up && h->up_end)
		return 0;
	while (buf_len(b) < H2_OUT_HIGH) {
		const uint8_t *p;

		n = nghttp2_session_mem_send(ng, &p);
		if (n < 0) {
			session_close(s, nghttp2_strerror((int)n));
			return -1;
		}
		if (n == 0)
			break;
		if (buf_append(b, p, (size_t)n) == -1) {
			session_close(s, "out of memory");
			return -1;
		}
	}
	if (buf_len(b) == 0)
		return 0;
	n = sio_write(s, up, b);
	if (n > 0) {
		*moved = true;
		s->active_ms = session_now(s);
		buf_trim(b);
	} else if (n < 0 && !session_would_block()) {
		if (!up) {
			session_close(s, "client gone");
			return -1;
		}
		h->up_end = true;
	}
	return 0;
}

/*
 * The upstream's connection ended: its open streams are answered (502
 * before a response, reset during one), the client told to go elsewhere
 * for new ones (GOAWAY), and the upstream dropped.
 */
static void up_gone(struct session *s)
{
	struct h2 *h = s->h2;

	h->up_ended = true;
	for (struct h2_stream *st = h->streams; st != NULL; st = st->next) {
		if (st->up_closed || st->cli_closed)
			continue;
		st->up_closed = true;
		if (st->resp_end)
			continue;
		s->x = st->x;
		if (!st->answered) {
			session_refuse(s, 502, "upstream-closed", "destination_unavailable",
				       "%s closed its HTTP/2 connection before it answered",
				       st->x->t.host.name);
		} else {
			snprintf(st->x->detail, sizeof(st->x->detail),
				 "%s closed its HTTP/2 connection during the response",
				 st->x->t.host.name);
			nghttp2_submit_rst_stream(h->srv, NGHTTP2_FLAG_NONE, st->cid,
						  NGHTTP2_INTERNAL_ERROR);
		}
		s->x = NULL;
	}
	nghttp2_submit_goaway(h->srv, NGHTTP2_FLAG_NONE,
			      nghttp2_session_get_last_proc_stream_id(h->srv), NGHTTP2_NO_ERROR,
			      NULL, 0);
	nghttp2_session_del(h->up);
	h->up = NULL;
	dial_close(s);
}

void h2_step(struct session *s)
{
	struct h2 *h = s->h2;
	bool moved;

	do {
		moved = false;
		if (h2_recv(s, false, &moved) == -1 || (!h->up_ended && h2_recv(s, true, &moved) == -1))
			return;
		if (h->up_end && !h->up_ended)
			up_gone(s);
		else if (!h->up_ended && !nghttp2_session_want_read(h->up) &&
			 !nghttp2_session_want_write(h->up))
			h->up_end = true; /* a GOAWAY from it, its streams done */
		if (h2_send(s, false, &moved) == -1 || (!h->up_ended && h2_send(s, true, &moved) == -1))
			return;
	} while (moved && !s->closed);
	if (h->c_end) {
		session_close(s, "the client closed the connection");
		return;
	}
	/* done (a GOAWAY either way): the last frames go out, then a linger, so none is lost */
	if (!nghttp2_session_want_read(h->srv) && !nghttp2_session_want_write(h->srv))
		session_enter_drain(s);
}

/* A stream still waiting: for its token, or (its request whole) for its response. */
static bool stream_waits(const struct h2_stream *st, uint64_t *due, uint64_t limit_token,
			 uint64_t limit_resp)
{
	if (st->cli_closed || st->refused)
		return false;
	if (st->waiting) {
		*due = st->wait_ms + limit_token;
		return true;
	}
	if (st->sent && st->req_end && !st->answered) {
		*due = st->x->sent_ms + limit_resp;
		return true;
	}
	return false;
}

uint64_t h2_due(const struct session *s, const struct config *c)
{
	uint64_t due = s->active_ms + c->idle_timeout_ms, at;

	for (const struct h2_stream *st = s->h2->streams; st != NULL; st = st->next)
		if (stream_waits(st, &at, TOKEN_WAIT_MS, c->response_timeout_ms) && at < due)
			due = at;
	return due;
}

/* The streams past their deadline get a 504; with none, the connection was idle. */
void h2_late(struct session *s, const struct config *c)
{
	uint64_t now = session_now(s), at;
	bool any = false;

	for (struct h2_stream *st = s->h2->streams; st != NULL; st = st->next) {
		if (!stream_waits(st, &at, TOKEN_WAIT_MS, c->response_timeout_ms) || at > now)
			continue;
		any = true;
		s->x = st->x;
		if (st->waiting)
			session_refuse(s, 504, "inject-failed", "http_request_error",
				       "no token within %u s; the request was not sent",
				       TOKEN_WAIT_MS / 1000);
		else
			session_refuse(s, 504, "upstream-timeout", "http_response_timeout",
				       "%s sent no response within %u s", st->x->t.host.name,
				       c->response_timeout_ms / 1000);
		s->x = NULL;
	}
	if (!any && now >= s->active_ms + c->idle_timeout_ms)
		session_close(s, "idle timeout");
}

bool h2_wants_client(const struct session *s)
{
	return !s->h2->c_end && nghttp2_session_want_read(s->h2->srv);
}

void h2_interest(const struct session *s, uint32_t *c, uint32_t *u)
{
	const struct h2 *h = s->h2;

	if (buf_len(&s->cout) > 0)
		*c |= EPOLLOUT;
	if (h->up_ended)
		return;
	if (nghttp2_session_want_read(h->up))
		*u |= EPOLLIN;
	if (buf_len(&s->uout) > 0)
		*u |= EPOLLOUT;
}

void h2_revoke(struct session *s, const struct verdict *v)
{
	struct h2 *h = s->h2;

	for (struct h2_stream *st = h->streams; st != NULL; st = st->next) {
		if (st->cli_closed || st->refused)
			continue;
		st->x->decision = "refuse";
		st->x->reason = "revoked";
		snprintf(st->x->detail, sizeof(st->x->detail), "closed by a policy reload: %s",
			 v->detail[0] ? v->detail : v->reason);
		st->refused = true;
		st->waiting = false;
		up_cancel(h, st);
		nghttp2_submit_rst_stream(h->srv, NGHTTP2_FLAG_NONE, st->cid, NGHTTP2_CANCEL);
	}
	/* a refused address: nothing more goes to it (new streams are judged anyway) */
	if (strcmp(v->reason, "denied-ip") == 0 && !h->up_ended)
		h->up_end = true;
	session_pump(s);
}

void h2_free(struct session *s, const char *why)
{
	struct h2 *h = s->h2;

	while (h->streams != NULL) {
		struct h2_stream *st = h->streams;

		if (!st->cli_closed) {
			if (st->x->detail[0] == '\0' && why != NULL && !st->resp_end)
				snprintf(st->x->detail, sizeof(st->x->detail), "%s", why);
			stream_log(s, st);
		}
		stream_free(h, st);
	}
	nghttp2_session_del(h->srv);
	nghttp2_session_del(h->up);
	free(h);
	s->h2 = NULL;
}
