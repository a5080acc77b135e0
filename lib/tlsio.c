/*
 * tlsio.c: a TLS call's result as read(2) would put it (tlsio.h).
 */
#include "tlsio.h"

#include <errno.h>

ssize_t tlsio_result(SSL *ssl, int rc, bool *want_write)
{
	int e;

	if (rc > 0)
		return rc;
	e = SSL_get_error(ssl, rc);
	switch (e) {
	case SSL_ERROR_WANT_READ:
	case SSL_ERROR_WANT_WRITE:
		if (want_write != NULL)
			*want_write = e == SSL_ERROR_WANT_WRITE;
		errno = EAGAIN;
		return -1;
	case SSL_ERROR_ZERO_RETURN:
		return 0;
	case SSL_ERROR_SYSCALL:
		if (errno == 0)
			return 0;
		return -1;
	default:
		errno = EPROTO;
		return -1;
	}
}
