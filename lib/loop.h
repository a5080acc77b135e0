/*
 * loop.h: one small epoll event loop with timers and a before-sleep hook.
 *
 * Level-triggered fd readiness through a struct loop_io the owner embeds,
 * millisecond timers in a binary heap, and a hook run before each sleep.
 * Single-threaded; nothing hides behind it. It does not own the fds.
 */
#ifndef SLUICE_LOOP_H
#define SLUICE_LOOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct loop;
struct loop_io;
struct loop_timer;

typedef void (*loop_io_fn)(struct loop *l, struct loop_io *io, uint32_t events);
typedef void (*loop_timer_fn)(struct loop *l, struct loop_timer *t);
typedef void (*loop_hook_fn)(struct loop *l, void *arg);

/* Embedded in its owner; fd < 0 means not registered. */
struct loop_io {
	int fd;
	uint32_t events; /* EPOLLIN / EPOLLOUT currently asked for */
	loop_io_fn fn;
	void *arg;
};

/* Embedded in its owner; heap_idx is 0 when not armed. */
struct loop_timer {
	uint64_t when_ms; /* monotonic deadline */
	size_t heap_idx;  /* 1-based position in the heap, 0 = not armed */
	loop_timer_fn fn;
	void *arg;
};

/* Returns NULL with errno set on failure. */
struct loop *loop_new(void);
void loop_free(struct loop *l);

/* Monotonic milliseconds with their fraction, read now (for durations in rows). */
double loop_clock_ms(void);

/* Monotonic milliseconds, refreshed each time the loop wakes. */
uint64_t loop_now(const struct loop *l);

/*
 * Register io->fd for events (EPOLLIN | EPOLLOUT | 0). Returns 0 or -1.
 * io must stay valid until loop_io_del.
 */
int loop_io_add(struct loop *l, struct loop_io *io, int fd, uint32_t events, loop_io_fn fn,
		void *arg);
/* Change the events asked for; a no-op when unchanged. Returns 0 or -1. */
int loop_io_set(struct loop *l, struct loop_io *io, uint32_t events);
/* Unregister (does not close the fd); io->fd becomes -1. Events already
 * fetched for io in this round are dropped. */
void loop_io_del(struct loop *l, struct loop_io *io);
/*
 * Unregister and close the fd in one step. Closing the last descriptor of
 * a file removes it from epoll, so this spares the epoll_ctl call; only for
 * fds never duplicated. io->fd becomes -1.
 */
void loop_io_close(struct loop *l, struct loop_io *io);
/*
 * The same for an fd a child of ours may hold a copy of for a moment (one
 * between its fork and its exec: sluice-proxy's token commands), which the
 * close alone would leave in epoll, naming io after its owner is freed:
 * unregistered first (one epoll_ctl more).
 */
void loop_io_drop(struct loop *l, struct loop_io *io);

/* Arm (or re-arm) t to fire after ms milliseconds. */
void loop_timer_set(struct loop *l, struct loop_timer *t, uint64_t ms, loop_timer_fn fn,
		    void *arg);
void loop_timer_cancel(struct loop *l, struct loop_timer *t);
static inline bool loop_timer_armed(const struct loop_timer *t)
{
	return t->heap_idx != 0;
}

/* Run hook before every sleep (one hook; NULL removes it). */
void loop_set_hook(struct loop *l, loop_hook_fn fn, void *arg);

/* Run until loop_stop. Returns 0, or -1 if epoll_wait fails. */
int loop_run(struct loop *l);
void loop_stop(struct loop *l);

#endif
