/*
 * h2_stream.h: an HTTP/2 connection's inside, its streams and their
 * header blocks (h2_stream.c), the connection (h2.c) and the upstream
 * session's callbacks (h2_up.c); private to proxy/. request.h declares
 * what the rest of the proxy calls.
 */
#ifndef SLUICE_H2_STREAM_H
#define SLUICE_H2_STREAM_H

#include <nghttp2/nghttp2.h>

#include "request.h"

#define H2_STREAMS_MAX 100           /* SETTINGS_MAX_CONCURRENT_STREAMS we announce */
#define H2_STREAM_WINDOW (256 << 10) /* each stream's window we give, both hops */
#define H2_CONN_WINDOW (1 << 20)     /* the connection's, both hops */
#define H2_OUT_HIGH (64 << 10)       /* frames queued for a hop before nghttp2 is asked for more */
#define H2_OUT_MAX (H2_OUT_HIGH + (64 << 10)) /* mem_send gives at most a frame at a time */
#define H2_QUEUE_MAX (H2_STREAM_WINDOW + (16 << 10)) /* a stream's bytes held, one way */
#define H2_RESET_BURST 200 /* RST_STREAMs a client may send at once ... */
#define H2_RESET_RATE 33   /* ... and per second after that */
#define H2_CONTINUATIONS 8 /* CONTINUATION frames after one HEADERS */
#define H2_INTERIM_MAX 4 /* interim (1xx) responses a stream may pass on */
#define H2_QUEUED_MAX 512 /* frames queued for a hop past which the other is not read */
#define H2_READS 4  /* reads of one hop per round ... */
#define H2_ROUNDS 4 /* ... and rounds per step, before a busy connection yields */
#define H2_GOAWAY_PING ((const uint8_t *)"sluice:g") /* our PING's data before a GOAWAY ... */
#define H2_GOAWAY_GRACE_MS 100 /* ... which goes this long after its ACK ... */
#define H2_GOAWAY_WAIT_MS 2000 /* ... or this long after the PING, with no ACK */

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
	struct list_node link; /* on its connection's streams (h2_first, h2_next) */
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
	bool retry;          /* ... by RST_STREAM(REFUSED_STREAM): nothing of it was processed */
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
	bool discard;        /* the request's rest is thrown away (the upstream answered and left) */
	uint8_t interim;     /* 1xx responses passed on */
};

struct h2 {
	struct session *s;
	nghttp2_session *srv, *up;
	struct list streams; /* the newest first */
	size_t nstreams; /* all, those whose upstream half is still closing too */
	size_t nopen;    /* ... and those open on the client's side */
	bool c_end;    /* the client's connection ended */
	bool up_end;   /* the upstream's connection ended */
	bool up_ended; /* ... and its open streams were answered (up_gone) */
	bool wipe_up;  /* a credential went into uout: what it sent is wiped */
	bool up_goaway; /* the upstream sent GOAWAY: no new stream goes to it ... */
	int32_t up_last; /* ... and its streams past this were not processed (INT32_MAX: none) */
	bool goaway_due; /* a GOAWAY for the client waits (h2_goaway) ... */
	bool goaway_pinged; /* ... for the ACK of the PING that followed the reset ... */
	uint64_t goaway_at; /* ... until this time (h2.c's late sends it) */
	bool cli_goaway; /* we sent the client GOAWAY ... */
	int32_t cli_last; /* ... with this last-stream-id */
	char goaway_why[96]; /* how the upstream went: its refused streams' rows */
	int32_t done_cid; /* the highest client stream freed that was not refused for a retry */
};

/* h's first stream, and the one after st (NULL: none): a loop may free st once it has its next. */
static inline struct h2_stream *h2_first(const struct h2 *h)
{
	return list_entry(h->streams.first, struct h2_stream, link);
}

static inline struct h2_stream *h2_next(const struct h2_stream *st)
{
	return list_entry(st->link.next, struct h2_stream, link);
}

/* h2_stream.c: a callback's connection was closed: nghttp2 must stop */
bool h2_gone(void *arg);
struct h2_stream *h2_stream_get(nghttp2_session *ng, int32_t id);

/*
 * The client is told to open no new stream here (GOAWAY, NO_ERROR), the
 * upstream's GOAWAY passed on, or its connection gone: the open streams
 * nothing upstream processed or will (not sent, or past the upstream's
 * last-stream-id) are reset with REFUSED_STREAM, and the last-stream-id
 * sent is the highest of the others. why: how the upstream went (the
 * refused streams' rows). Again later: a lower last-stream-id, if any.
 */
void h2_goaway(struct h2 *h, const char *why);
/* ... the GOAWAY itself, H2_GOAWAY_GRACE_MS after the client acknowledged our PING */
void h2_goaway_send(struct h2 *h);

/* h2_up.c: the upstream session's callbacks */
void h2_up_callbacks(nghttp2_session_callbacks *cb);

/* h2_stream.c: a header block */
int h2_fields_add(struct h2_fields *fs, const uint8_t *name, size_t nlen, const uint8_t *value,
		  size_t vlen, size_t max); /* 0, or -1: over max (RFC 9113 sizes) or HEADERS_MAX */
void h2_fields_clear(struct h2_fields *fs);
struct http_header h2_field_at(const struct h2_fields *fs, size_t i);
bool h2_named(const struct http_header *h, const char *name); /* exactly, as HTTP/2 sends names */
nghttp2_nv h2_nv(const char *name, size_t nlen, const char *value, size_t vlen, uint8_t flags);
int h2_scrub_fields(struct scrub *sc, struct h2_fields *fs); /* each name and value masked */

/* h2_stream.c: a stream */
/* h2_codec's refusal: the stream's answer (its status, Proxy-Status, grant hint), or its reset */
void h2_stream_refuse(struct exchange *x, const struct refusal *r);
/* h2_codec's token_ready: every stream waiting for a token asks again */
void h2_token_ready(struct session *s, const struct token *t);
struct h2_stream *h2_stream_new(struct h2 *h, int32_t cid);
void h2_exchange_open(struct session *s, struct exchange *x); /* a row's fields, no head read */
void h2_stream_free(struct h2 *h, struct h2_stream *st);    /* gone from both hops */
void h2_stream_log(struct session *s, struct h2_stream *st); /* its row */
void h2_stream_head(struct session *s, struct h2_stream *st); /* its head is whole: judge, send */
void h2_answer_up(struct session *s, struct h2_stream *st, bool end); /* the upstream's head */
void h2_resp_ended(struct h2 *h, struct h2_stream *st);  /* the upstream's body ended */
void h2_cancel_up(struct h2 *h, struct h2_stream *st);   /* its upstream half ends now */
/*
 * Nothing of st's request was processed upstream (the origin refused it,
 * left it out of its GOAWAY, or its connection takes no new stream): the
 * client's stream is reset with REFUSED_STREAM, which tells the client it
 * may send it again (RFC 9113 8.7). The row: refuse, upstream-refused,
 * "HOST why".
 */
void h2_refuse_retry(struct h2 *h, struct h2_stream *st, const char *why);
/* flow control by hand: n DATA bytes taken by the other hop, their window given back */
void h2_give_back_up(struct h2 *h, struct h2_stream *st, size_t n);
void h2_give_back_cli(struct h2 *h, struct h2_stream *st, size_t n);
/* bytes came for a DATA provider that had none: it is asked again */
void h2_resume_cli(struct h2 *h, struct h2_stream *st);
void h2_resume_up(struct h2 *h, struct h2_stream *st);

#endif
