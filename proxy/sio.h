/*
 * sio.h: a connection's two transports (sio.c), the client's and the
 * upstream's, plain or through TLS; private to proxy/.
 */
#ifndef SLUICE_SIO_H
#define SLUICE_SIO_H

#include "conn.h"

ssize_t sio_read(struct session *s, bool up, struct buf *b, size_t limit, bool *drained);
ssize_t sio_write(struct session *s, bool up, struct buf *b);
void sio_client_free(struct session *s);   /* the client's TLS, gone */
void sio_client_shutdown(struct session *s); /* before the client side closes: our close_notify */
void sio_upstream_free(struct session *s); /* the upstream's TLS, its session kept resumable */
/*
 * An idle kept upstream became readable: whether it sent only records
 * that carry no data (a TLS 1.3 session ticket, read now); then it stays.
 */
bool sio_upstream_quiet(struct session *s);

#endif
