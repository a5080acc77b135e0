/*
 * session.h: a client connection and the engine that drives it
 * (session.c), private to proxy/; the types are conn.h's, the request path
 * above it request.h's.
 *
 * The engine knows no protocol: it runs the connection's state (struct
 * state) until nothing moves, asks the loop for exactly the readiness the
 * state names, arms the one timer for the state's deadline or a long
 * exchange's row, and reaches the protocol only through the connection's
 * codec (struct codec): its close, its release, its rows.
 */
#ifndef SLUICE_SESSION_H
#define SLUICE_SESSION_H

#include "conn.h"
#include "sio.h"

/* The drain: the last response goes out, our side shuts, what the client sends is read away. */
extern const struct state session_drain_state;

/* A state's client_in and ask while it waits on something else (the resolver, a connect, a token). */
bool session_reads_nothing(const struct session *s);
void session_asks_nothing(const struct session *s, uint32_t *c, uint32_t *u);

/*
 * A zeroed s made a connection of px's on client fd (peer text client)
 * speaking codec from state st on: its buffers, its clocks; not yet in the
 * loop nor in px's list (session_link). session_accept does both.
 */
void session_init(struct session *s, struct proxy *px, int fd, const char *client,
		  const struct codec *codec, const struct state *st);
void session_link(struct session *s); /* s in px's list of connections */

/* Every state change goes through here: the new state's deadline applies, its step runs. */
void session_enter(struct session *s, const struct state *st);
/* Run the state's step until nothing moves, then ask the loop for what it waits for. */
void session_pump(struct session *s);
/* Make sure the timer fires no later than the state's deadline (or a long row's). */
void session_arm_timer(struct session *s);
void session_update_interest(struct session *s);
void session_on_client(struct loop *l, struct loop_io *io, uint32_t events);
void session_on_upstream(struct loop *l, struct loop_io *io, uint32_t events);

/* Forget the upstream: pending lookup, socket, its TLS, its buffers and address. */
void session_upstream_close(struct session *s);
/* Close the upstream socket (and its TLS) only; buffers and the dial list stay (a replay). */
void session_upstream_close_fd(struct session *s);
/* Drop the upstream and finish: flush, shut, linger, close (session_drain_state). */
void session_enter_drain(struct session *s);
/* Write out what is queued for the client. Returns -1 if the client is gone. */
int session_flush_client(struct session *s);
/*
 * Close with an RST, not a FIN, so the client cannot mistake a response
 * cut short for a complete one.
 */
void session_abort(struct session *s, const char *why);
void session_stamp_expand(const struct sess_stamp *k, struct stamp *st); /* as a row takes it */
/*
 * Whether s is idle: between requests or before its first byte, nothing
 * read of a request, nothing left to send, no tunnel or stream open. Such
 * a connection may be closed to make room for its client's next one.
 */
bool session_idle(const struct session *s);
/*
 * Make room under key for a connection its client is opening: close key's
 * oldest idle connection, with a row (client-limit-idle). Returns true
 * when one was closed.
 */
bool session_evict_idle(struct proxy *px, const char *key);

#endif
