/*
 * sio.c: a connection's two transports, the client's and the upstream's:
 * reads and writes on the socket, or through TLS where the connection
 * intercepts (tls.c made the SSL objects and ran their handshakes), and
 * their TLS state freed. Nothing here knows a protocol above the bytes.
 */
#include "sio.h"

#include <limits.h>
#include <openssl/err.h>

#include "tlsio.h"

void sio_client_free(struct session *s)
{
	if (s->cssl != NULL) {
		SSL_free(s->cssl);
		s->cssl = NULL;
	}
}

void sio_upstream_free(struct session *s)
{
	if (s->ussl != NULL) {
		/*
		 * Freed without a close_notify, OpenSSL would mark the session
		 * unresumable; one whose handshake was verified stays usable.
		 */
		if (SSL_is_init_finished(s->ussl))
			SSL_set_shutdown(s->ussl, SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
		SSL_free(s->ussl);
		s->ussl = NULL;
	}
	s->u_tls_out = false;
}

struct tls_read {
	SSL *ssl;
	bool *out;
};

static ssize_t tls_read(void *arg, void *dst, size_t n)
{
	struct tls_read *t = arg;
	int rc;

	ERR_clear_error();
	rc = SSL_read(t->ssl, dst, n > INT_MAX ? INT_MAX : (int)n);
	return tlsio_result(t->ssl, rc, t->out);
}

ssize_t sio_read(struct session *s, bool up, struct buf *b, size_t limit, bool *drained)
{
	struct tls_read t = { up ? s->ussl : s->cssl, up ? &s->u_tls_out : &s->c_tls_out };
	ssize_t n;

	if (t.ssl == NULL)
		return buf_read_fd(b, up ? s->ufd : s->cfd, limit, drained);
	n = buf_read_via(b, limit, drained, tls_read, &t);
	/* records TLS already holds raise no readiness: not drained while any remain */
	if (*drained && SSL_has_pending(t.ssl))
		*drained = false;
	return n;
}

ssize_t sio_write(struct session *s, bool up, struct buf *b)
{
	SSL *ssl = up ? s->ussl : s->cssl;
	size_t len = buf_len(b);
	int rc;

	if (ssl == NULL)
		return buf_write_fd(b, up ? s->ufd : s->cfd);
	if (len == 0)
		return 0;
	if (len > INT_MAX)
		len = INT_MAX;
	ERR_clear_error();
	rc = SSL_write(ssl, buf_head(b), (int)len);
	if (rc > 0) {
		buf_consume(b, (size_t)rc);
		return rc;
	}
	return tlsio_result(ssl, rc, up ? &s->u_tls_out : &s->c_tls_out);
}

/*
 * An idle kept upstream became readable: whether it sent only records
 * that carry no data (a TLS 1.3 session ticket, read now); then it stays.
 */
bool sio_upstream_quiet(struct session *s)
{
	char c;
	int rc;

	if (s->ussl == NULL)
		return false;
	ERR_clear_error();
	rc = SSL_peek(s->ussl, &c, 1);
	return rc <= 0 && SSL_get_error(s->ussl, rc) == SSL_ERROR_WANT_READ;
}

/* Before the client side closes: our close_notify (best effort, non-blocking). */
void sio_client_shutdown(struct session *s)
{
	if (s->cssl != NULL && SSL_is_init_finished(s->cssl)) {
		ERR_clear_error();
		SSL_shutdown(s->cssl);
	}
}
