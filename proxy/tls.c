/*
 * tls.c: intercepting a CONNECT: TLS to the client with our leaf, TLS to
 * the upstream verified, and the session's reads and writes through them.
 *
 * An allowed CONNECT to a host not on the passthrough list is answered 200
 * without dialing; the client's handshake then meets a leaf for the
 * CONNECT host, minted by lib/leaf.c and cached. A server name the client
 * sends must be that host. ALPN speaks the same version on both hops: a
 * client that offers h2 has its handshake parked (the ClientHello
 * callback) while the CONNECT host is dialed with the client's offer, and
 * is given h2 only when the upstream chose h2 (h2.c then carries the
 * connection), else http/1.1 when offered, else nothing; an upstream that
 * cannot be reached then leaves the client on HTTP/1.1, and its first
 * request dials again and says why. Once the handshake is done the
 * tunnel's row is written and the session reads requests through TLS like
 * any other (exchange.c), each judged, dialed and logged on its own; dial.c hands a
 * connected upstream here for its handshake, verified against the system
 * trust store (or the host's upstream-ca bundle), with SNI and TLS 1.2 at
 * least. An upstream that fails verification is a 502 saying why, never a
 * fallback.
 *
 * A passthrough CONNECT is relayed untouched, but only once its hellos
 * passed (hello.c's tls_hello_step).
 *
 * sio_read and sio_write are buf_read_fd and buf_write_fd for a session
 * side that may be TLS: "would block" is errno EAGAIN, and when TLS must
 * write to read (or read to write) the side's tls_out flag asks the loop
 * for the other readiness.
 */
#include "request.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "alpn.h"
#include "ca.h"
#include "hmap.h"
#include "leaf.h"
#include "tlsio.h"

#define LEAVES_CACHED 1024 /* leaves kept; the rest minted again when asked */

struct tls_extra {
	struct host host;
	SSL_CTX *ctx;
};

/*
 * Upstream sessions to resume, one per host and port (the last one the
 * server gave us, after a verified handshake): a resumed handshake skips
 * the certificate chain and the server's signature.
 */
#define RESUME_SLOTS 256

struct resume {
	char key[HOST_NAME_MAX_LEN + 8];
	SSL_SESSION *sess;
};

struct tls {
	struct resume resume[RESUME_SLOTS];
	struct hmap_key resume_key; /* which slot a host takes: SipHash (hmap.h) under it, since
	                               clients choose the hosts */
	struct ca *ca;
	struct leaf_cache *leaves;
	SSL_CTX *server;
	SSL_CTX *client; /* the system trust store */
	struct tls_extra *extra; /* upstream-ca: per-host contexts */
	size_t nextra;
};

static int sess_idx = -1; /* SSL ex_data slot: the session */

static const char *tls_error_text(void)
{
	unsigned long e = ERR_peek_last_error();
	const char *r = e != 0 ? ERR_reason_error_string(e) : NULL;

	return r != NULL ? r : "connection closed during the handshake";
}

/*
 * ALPN: h2 when the client offers it and the upstream chose it (the
 * ClientHello callback asked first), else http/1.1 when offered, else none
 * (the client then speaks HTTP/1.1).
 */
static int alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
		       const unsigned char *in, unsigned int inlen, void *arg)
{
	const struct session *s = SSL_get_ex_data(ssl, sess_idx);
	bool h2 = s != NULL && s->ix->alpn == ALPN_H2;
	const unsigned char *h1 = NULL;

	for (unsigned i = 0; i < inlen;) {
		unsigned n = in[i];

		if (i + 1 + n > inlen)
			break;
		if (h2 && n == 2 && memcmp(in + i + 1, "h2", 2) == 0) {
			*out = in + i + 1;
			*outlen = 2;
			return SSL_TLSEXT_ERR_OK;
		}
		if (n == 8 && memcmp(in + i + 1, "http/1.1", 8) == 0)
			h1 = in + i + 1;
		i += 1 + n;
	}
	if (h1 == NULL)
		return SSL_TLSEXT_ERR_NOACK;
	*out = h1;
	*outlen = 8;
	return SSL_TLSEXT_ERR_OK;
}

/*
 * A ClientHello that offers h2 is parked (the handshake returns
 * SSL_ERROR_WANT_CLIENT_HELLO_CB) while the upstream is dialed with its
 * offer: the client gets the version the upstream chose. Asked once.
 */
static int client_hello_cb(SSL *ssl, int *alert, void *arg)
{
	struct session *s = SSL_get_ex_data(ssl, sess_idx);
	const unsigned char *p;
	size_t len;

	if (s == NULL || s->ix->alpn != ALPN_UNASKED)
		return SSL_CLIENT_HELLO_SUCCESS;
	s->ix->alpn = ALPN_H1;
	if (s->ix->page != NULL)
		return SSL_CLIENT_HELLO_SUCCESS; /* a refusal's page: nothing to dial, HTTP/1.1 */
	if (SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_application_layer_protocol_negotiation, &p,
				      &len) != 1 ||
	    !alpn_offer_read(p, len, s->ix->offer, &s->ix->offer_len))
		return SSL_CLIENT_HELLO_SUCCESS;
	s->ix->alpn = ALPN_DIAL;
	s->ix->resume = s->codec;
	s->codec = &tls_alpn_codec;
	return SSL_CLIENT_HELLO_RETRY;
}

/* The server name the client asks for must be the CONNECT host. */
static int servername(SSL *ssl, int *alert, void *arg)
{
	struct session *s = SSL_get_ex_data(ssl, sess_idx);
	const char *name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
	const char *err = NULL;
	struct host h;

	if (s == NULL || name == NULL)
		return SSL_TLSEXT_ERR_OK;
	if (host_canon(name, strlen(name), &h, &err) == 0 && host_equal(&h, &s->ix->tunnel.host))
		return SSL_TLSEXT_ERR_OK;
	snprintf(s->ix->err, sizeof(s->ix->err), "%.100s", name);
	s->sni_bad = true;
	*alert = SSL_AD_UNRECOGNIZED_NAME;
	return SSL_TLSEXT_ERR_ALERT_FATAL;
}

static SSL_CTX *ctx_common(const SSL_METHOD *m)
{
	SSL_CTX *ctx = SSL_CTX_new(m);

	if (ctx == NULL)
		return NULL;
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_IGNORE_UNEXPECTED_EOF);
	/* buffers move between retries (buf.c), writes may be partial */
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	return ctx;
}

static int ssl_idx_key = -1; /* SSL ex_data slot: the upstream's resume key */

static struct resume *resume_slot(struct tls *t, const char *key)
{
	return &t->resume[hmap_siphash(&t->resume_key, key, strlen(key)) % RESUME_SLOTS];
}

static struct tls *the_tls; /* for the new-session callback */

/* A server gave us a session (a ticket): keep it for the next connection to that host. */
static int new_session(SSL *ssl, SSL_SESSION *sess)
{
	const char *key = SSL_get_ex_data(ssl, ssl_idx_key);
	struct resume *r;

	if (key == NULL || the_tls == NULL || !SSL_SESSION_is_resumable(sess))
		return 0;
	r = resume_slot(the_tls, key);
	if (r->sess != NULL)
		SSL_SESSION_free(r->sess);
	snprintf(r->key, sizeof(r->key), "%s", key);
	r->sess = sess;
	return 1; /* we keep the reference */
}

static SSL_CTX *client_ctx(const char *extra_bundle)
{
	SSL_CTX *ctx = ctx_common(TLS_client_method());

	if (ctx == NULL)
		return NULL;
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
	SSL_CTX_sess_set_new_cb(ctx, new_session);
	if (SSL_CTX_set_default_verify_paths(ctx) != 1 ||
	    (extra_bundle != NULL && SSL_CTX_load_verify_locations(ctx, extra_bundle, NULL) != 1) ||
	    SSL_CTX_set_alpn_protos(ctx, (const unsigned char *)"\x08http/1.1", 9) != 0) {
		SSL_CTX_free(ctx);
		return NULL;
	}
	return ctx;
}

/* The CA, the leaf cache and the contexts, from config c. Returns 0, or -1 said on stderr. */
static int tls_setup(struct proxy *px, const struct config *c)
{
	struct tls *t;
	const char *err = NULL;

	if (sess_idx == -1) {
		sess_idx = SSL_get_ex_new_index(0, NULL, NULL, NULL, NULL);
		ssl_idx_key = SSL_get_ex_new_index(0, NULL, NULL, NULL, NULL);
	}
	t = calloc(1, sizeof(*t));
	if (t == NULL)
		return -1;
	px->tls = t;
	the_tls = t;
	if (hmap_key_init(&t->resume_key) == -1) {
		fprintf(stderr, "sluice-proxy: TLS setup: no random bytes: %s\n", strerror(errno));
		return -1;
	}
	t->ca = ca_load(c->state_dir, &err);
	if (t->ca == NULL) {
		fprintf(stderr,
			"sluice-proxy: intercept is on but the CA in %s cannot be used: %s; run "
			"`sluice ca init` (or set `intercept off` to tunnel every CONNECT)\n",
			c->state_dir, err);
		return -1;
	}
	t->leaves = leaf_cache_new(t->ca, LEAVES_CACHED, &err);
	t->server = ctx_common(TLS_server_method());
	t->client = client_ctx(NULL);
	if (t->leaves == NULL || t->server == NULL || t->client == NULL) {
		fprintf(stderr, "sluice-proxy: TLS setup: %s\n",
			t->leaves == NULL ? err : tls_error_text());
		return -1;
	}
	SSL_CTX_set_alpn_select_cb(t->server, alpn_select, NULL);
	SSL_CTX_set_client_hello_cb(t->server, client_hello_cb, NULL);
	SSL_CTX_set_session_cache_mode(t->server, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_num_tickets(t->server, 0);
	SSL_CTX_set_tlsext_servername_callback(t->server, servername);
	if (c->nupstream_cas > 0) {
		t->extra = calloc(c->nupstream_cas, sizeof(*t->extra));
		if (t->extra == NULL)
			return -1;
	}
	for (size_t i = 0; i < c->nupstream_cas; i++) {
		const struct config_upstream_ca *u = &c->upstream_cas[i];

		if (host_canon(u->host, strlen(u->host), &t->extra[i].host, &err) == -1)
			return -1; /* config.c canonicalised it already */
		t->extra[i].ctx = client_ctx(u->file);
		t->nextra++;
		if (t->extra[i].ctx == NULL) {
			fprintf(stderr, "sluice-proxy: upstream-ca %s %s: %s\n", u->host, u->file,
				tls_error_text());
			return -1;
		}
	}
	return 0;
}

int tls_init(struct proxy *px)
{
	if (!px->config->intercept)
		return 0;
	return tls_setup(px, px->config);
}

int tls_reload(struct proxy *px, const struct config *c)
{
	if (!c->intercept || px->tls != NULL)
		return 0;
	if (tls_setup(px, c) == 0)
		return 0;
	tls_release(px);
	return -1;
}

bool tls_active(const struct proxy *px)
{
	return px->tls != NULL && px->config->intercept;
}

void tls_release(struct proxy *px)
{
	struct tls *t = px->tls;

	if (t == NULL)
		return;
	for (size_t i = 0; i < t->nextra; i++)
		SSL_CTX_free(t->extra[i].ctx);
	free(t->extra);
	for (size_t i = 0; i < RESUME_SLOTS; i++)
		if (t->resume[i].sess != NULL)
			SSL_SESSION_free(t->resume[i].sess);
	the_tls = NULL;
	SSL_CTX_free(t->server);
	SSL_CTX_free(t->client);
	leaf_cache_free(t->leaves);
	ca_free(t->ca);
	free(t);
	px->tls = NULL;
}

/*
 * With intercept on (the running config's, so a reload's takes effect at
 * the next CONNECT): every CONNECT but passthrough hosts; a host and port
 * a rule injects for always.
 */
bool tls_intercepts(const struct proxy *px, const struct host *h, uint16_t port)
{
	const struct config *c = px->config;

	if (!tls_active(px))
		return false;
	for (size_t i = 0; i < c->nrules; i++)
		if (c->rules[i].port == port && strcmp(c->rules[i].host, h->name) == 0)
			return true;
	return !config_passthrough(c, h->name);
}


/*
 * One handshake step: 1 done, 0 wants readiness (*out: writable), 2 parked
 * by the ClientHello callback, -1 failed.
 */
static int handshake(SSL *ssl, bool *out)
{
	int rc, e;

	ERR_clear_error();
	rc = SSL_do_handshake(ssl);
	if (rc == 1)
		return 1;
	e = SSL_get_error(ssl, rc);
	if (e == SSL_ERROR_WANT_CLIENT_HELLO_CB)
		return 2;
	*out = e == SSL_ERROR_WANT_WRITE;
	return e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE ? 0 : -1;
}

/*
 * An allowed CONNECT to intercept: the 200 goes out in clear, then the
 * client's handshake (tls_accept_state).
 */
void tls_intercept_begin(struct session *s)
{
	if (s->ix == NULL)
		s->ix = calloc(1, sizeof(*s->ix));
	if (s->ix == NULL) {
		session_close(s, "out of memory");
		return;
	}
	s->ix->tunnel = s->x->t;
	s->x->status = 200;
	s->x->resp_started = true;
	buf_append(&s->cout, TUNNEL_OK, sizeof(TUNNEL_OK) - 1);
	session_enter(s, &tls_accept_state);
}

/* The client's handshake did not complete: the tunnel's row says why, then close. */
static void accept_failed(struct session *s, const char *reason, const char *detail)
{
	s->x->decision = "refuse";
	s->x->reason = reason;
	snprintf(s->x->detail, sizeof(s->x->detail), "%s", detail);
	exchange_log(s->x);
	session_close(s, NULL);
}

static void alpn_dialed(struct exchange *x);

static void step_accept(struct session *s)
{
	struct tls *t = s->px->tls;
	bool h2;
	int rc;

	if (s->cssl == NULL) {
		X509 *cert;
		EVP_PKEY *key;
		bool minted;

		if (session_flush_client(s) == -1) {
			session_close(s, "client gone");
			return;
		}
		if (buf_len(&s->cout) > 0)
			return; /* the 200 first, in clear */
		if (buf_len(&s->cin) > 0) {
			accept_failed(s, "malformed", "bytes after CONNECT before our 200");
			return;
		}
		if (leaf_get(t->leaves, s->ix->tunnel.host.name, &cert, &key, &minted) == -1 ||
		    (s->cssl = SSL_new(t->server)) == NULL ||
		    SSL_set_ex_data(s->cssl, sess_idx, s) != 1 ||
		    SSL_use_certificate(s->cssl, cert) != 1 || SSL_use_PrivateKey(s->cssl, key) != 1 ||
		    SSL_set_fd(s->cssl, s->cfd) != 1) {
			snprintf(s->ix->err, sizeof(s->ix->err), "no certificate for the client: %s",
				 tls_error_text());
			accept_failed(s, "tls-setup", s->ix->err);
			return;
		}
		stats_leaf(minted);
		SSL_set_accept_state(s->cssl);
	}
	rc = handshake(s->cssl, &s->c_tls_out);
	if (rc == 0)
		return;
	if (rc == 2) {
		dial_start(s->x, alpn_dialed); /* back here once the upstream's handshake says its ALPN */
		return;
	}
	stats_handshake(false, rc == 1);
	if (rc == -1) {
		char why[256];

		if (s->sni_bad)
			snprintf(why, sizeof(why),
				 "the client's TLS server name %s is not the CONNECT host", s->ix->err);
		else
			snprintf(why, sizeof(why),
				 "client TLS handshake failed: %s (does the client trust the sluice "
				 "CA? `sluice ca show`)",
				 tls_error_text());
		accept_failed(s, s->sni_bad ? "sni-mismatch" : "client-tls-failed", why);
		return;
	}
	if (s->ix->page != NULL) { /* a refusal's page: its row was written at the CONNECT */
		s->intercept = true;
		s->c_tls_out = false;
		s->head_ms = 0;
		s->codec->tls_up(s, false);
		return;
	}
	/* the tunnel's own row; each request inside gets one of its own */
	{
		const unsigned char *alpn = NULL;
		unsigned alen = 0;

		SSL_get0_alpn_selected(s->cssl, &alpn, &alen);
		h2 = alen == 2;
		snprintf(s->x->detail, sizeof(s->x->detail), "intercepted: %s%s%.*s%s%s",
			 SSL_get_version(s->cssl), alen > 0 ? ", ALPN " : "", (int)alen,
			 (const char *)alpn, s->ix->unreached[0] ? "; " : "", s->ix->unreached);
	}
	exchange_log(s->x);
	s->intercept = true;
	s->c_tls_out = false;
	s->head_ms = 0;
	/* a second ClientHello (after a HelloRetryRequest) that dropped h2: the h2 upstream is not its */
	if (!h2 && s->ix->alpn == ALPN_H2)
		session_upstream_close(s);
	s->codec->tls_up(s, h2); /* HTTP/2, or the heads inside: the codec the ALPN chose */
}

/*
 * The upstream could not be reached while the client's handshake was
 * parked (its codec's refusal calls this then): the handshake goes on offering
 * HTTP/1.1 only, and the first request dials again and answers why.
 */
static void tls_alpn_unreached(struct session *s, const char *why)
{
	session_upstream_close(s);
	s->ix->alpn = ALPN_H1;
	s->codec = s->ix->resume;
	snprintf(s->ix->unreached, sizeof(s->ix->unreached),
		 "the upstream was not reached before the handshake (%s)", why);
	session_enter(s, &tls_accept_state);
}

/* Refused while the client's handshake is parked: no request to answer yet (tls_alpn_unreached). */
static void alpn_refuse(struct exchange *x, const struct refusal *r)
{
	tls_alpn_unreached(x->conn, r->detail);
}

const struct codec tls_alpn_codec = {
	.name = "tls parked for alpn",
	.refuse = alpn_refuse,
	.close = exchange_conn_close,
	.release = exchange_conn_release,
};

/* The parked handshake's upstream is verified: the client's goes on, offered what it chose. */
static void alpn_verified(struct exchange *x)
{
	struct session *s = x->conn;
	const unsigned char *alpn = NULL;
	unsigned alen = 0;

	SSL_get0_alpn_selected(s->ussl, &alpn, &alen);
	s->ix->alpn = alen == 2 && memcmp(alpn, "h2", 2) == 0 ? ALPN_H2 : ALPN_H1;
	s->codec = s->ix->resume; /* h2_begin makes it h2's */
	session_enter(s, &tls_accept_state);
}

/* The parked handshake's upstream is up: its TLS, whose ALPN the client's handshake then takes. */
static void alpn_dialed(struct exchange *x)
{
	tls_connect_begin(x, alpn_verified);
}

int tls_connect_begin(struct exchange *x, void (*then)(struct exchange *x))
{
	struct session *s = x->conn;
	struct tls *t = s->px->tls;
	const struct host *h = &x->t.host;
	SSL_CTX *ctx = t->client;
	X509_VERIFY_PARAM *vp;

	for (size_t i = 0; i < t->nextra; i++)
		if (host_equal(&t->extra[i].host, h))
			ctx = t->extra[i].ctx;
	s->ussl = SSL_new(ctx);
	if (s->ussl == NULL || SSL_set_fd(s->ussl, s->ufd) != 1)
		goto fail;
	/* asked before the client's handshake: the client's own offer */
	if (s->ix->alpn == ALPN_DIAL &&
	    SSL_set_alpn_protos(s->ussl, s->ix->offer, (unsigned)s->ix->offer_len) != 0)
		goto fail;
	vp = SSL_get0_param(s->ussl);
	if (h->kind == HOST_NAME) {
		if (SSL_set_tlsext_host_name(s->ussl, h->name) != 1 ||
		    X509_VERIFY_PARAM_set1_host(vp, h->name, 0) != 1)
			goto fail;
		X509_VERIFY_PARAM_set_hostflags(vp, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
	} else if (X509_VERIFY_PARAM_set1_ip_asc(vp, h->name) != 1) {
		goto fail;
	}
	/* resume the last verified session with this host and port, if any */
	snprintf(s->ix->resume_key, sizeof(s->ix->resume_key), "%s:%u", h->name, x->t.port);
	if (SSL_set_ex_data(s->ussl, ssl_idx_key, s->ix->resume_key) != 1)
		goto fail;
	{
		struct resume *r = resume_slot(t, s->ix->resume_key);

		if (r->sess != NULL && strcmp(r->key, s->ix->resume_key) == 0)
			SSL_set_session(s->ussl, r->sess);
	}
	SSL_set_connect_state(s->ussl);
	x->up_then = then;
	s->t_phase = loop_clock_ms();
	s->phase_ms = session_now(s);
	session_enter(s, &tls_connect_state);
	return 0;
fail:
	exchange_refusef(x, 502, "upstream-tls", "tls_protocol_error", "TLS to %s: %s", h->name,
			 tls_error_text());
	return -1;
}

static void step_connect(struct session *s)
{
	struct exchange *x = s->x;
	int rc = handshake(s->ussl, &s->u_tls_out);
	long v;

	if (rc == 0)
		return;
	stats_handshake(true, rc == 1);
	if (rc == 1) {
		s->u_tls_out = false;
		x->connect_ms += loop_clock_ms() - s->t_phase;
		x->up_then(x); /* verified: what its dial was for (tls_connect_begin's then) */
		return;
	}
	v = SSL_get_verify_result(s->ussl);
	if (v != X509_V_OK)
		exchange_refusef(x, 502, "upstream-tls", "tls_certificate_error",
				 "%s presented a certificate that does not verify: %s; nothing was "
				 "sent",
				 x->t.host.name, X509_verify_cert_error_string(v));
	else
		exchange_refusef(x, 502, "upstream-tls", "tls_protocol_error",
				 "TLS handshake with %s failed: %s; nothing was sent", x->t.host.name,
				 tls_error_text());
}

/* --- the states: the client's handshake, the upstream's -------------------------- */

static bool in_tls_accept(const struct session *s)
{
	return s->cssl != NULL && !s->c_tls_out;
}

static void ask_flush(const struct session *s, uint32_t *c, uint32_t *u)
{
	if (buf_len(&s->cout) > 0)
		*c |= EPOLLOUT;
}

static void ask_tls_connect(const struct session *s, uint32_t *c, uint32_t *u)
{
	*u |= s->u_tls_out ? EPOLLOUT : EPOLLIN;
}

static uint64_t due_connect(const struct session *s, const struct config *c)
{
	return s->phase_ms + c->connect_timeout_ms;
}

static uint64_t due_tls_accept(const struct session *s, const struct config *c)
{
	/*
	 * A refusal's page: a client that speaks TLS starts at its 200; one
	 * that waits for the server to speak first (a banner protocol) is
	 * closed soon, not kept the head-timeout for a page it cannot read.
	 */
	if (s->ix != NULL && s->ix->page != NULL)
		return s->phase_ms + REFUSE_PAGE_HELLO_MS;
	return s->active_ms + c->head_timeout_ms;
}

static void late_tls_accept(struct session *s, const struct config *c)
{
	s->x->decision = "refuse";
	s->x->reason = "client-tls-failed";
	snprintf(s->x->detail, sizeof(s->x->detail),
		 "client TLS handshake not complete within %u s", c->head_timeout_ms / 1000);
	session_close(s, NULL);
}

static void late_tls_connect(struct session *s, const struct config *c)
{
	struct exchange *x = s->x;

	exchange_refusef(x, 504, "connect-timeout", "connection_timeout",
			 "TLS handshake with %s not complete within %u s", x->t.host.name,
			 c->connect_timeout_ms / 1000);
}

/* The upstream's events during its handshake: the handshake reads them itself. */
static void connect_upstream(struct session *s, uint32_t events)
{
	session_pump(s);
}

const struct state tls_accept_state = {
	.name = "tls-accept",
	.waits = "the client's TLS handshake with our leaf",
	.late = "close, row client-tls-failed (head-timeout)",
	.step = step_accept,
	.client_in = in_tls_accept,
	.ask = ask_flush,
	.due = due_tls_accept,
	.timeout = late_tls_accept,
};

const struct state tls_connect_state = {
	.name = "tls-connect",
	.waits = "the upstream's TLS handshake",
	.late = "504 connect-timeout",
	.step = step_connect,
	.client_in = session_reads_nothing,
	.ask = ask_tls_connect,
	.due = due_connect,
	.timeout = late_tls_connect,
	.upstream = connect_upstream,
};
