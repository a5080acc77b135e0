/*
 * loop.c: the epoll loop, its timer heap and its before-sleep hook.
 *
 * Events are level-triggered. While one batch of events is dispatched, an
 * io that is deleted has its pending events dropped (the batch is scanned),
 * so an owner may free itself from a callback as long as it frees the
 * memory after loop_io_del (callers defer frees to the before-sleep hook).
 */
#include "loop.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#define LOOP_BATCH 256

struct loop {
	int epfd;
	bool stop;
	uint64_t now;
	struct loop_timer **heap; /* 1-based; heap[0] unused */
	size_t nheap;
	size_t capheap;
	loop_hook_fn hook;
	void *hook_arg;
	struct epoll_event batch[LOOP_BATCH];
	int nbatch; /* events in the batch being dispatched */
};

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

struct loop *loop_new(void)
{
	struct loop *l = calloc(1, sizeof(*l));

	if (l == NULL)
		return NULL;
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (l->epfd == -1) {
		int e = errno;
		free(l);
		errno = e;
		return NULL;
	}
	l->now = mono_ms();
	return l;
}

void loop_free(struct loop *l)
{
	if (l == NULL)
		return;
	close(l->epfd);
	free(l->heap);
	free(l);
}

double loop_clock_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

uint64_t loop_now(const struct loop *l)
{
	return l->now;
}

int loop_io_add(struct loop *l, struct loop_io *io, int fd, uint32_t events, loop_io_fn fn,
		void *arg)
{
	struct epoll_event ev = { .events = events, .data.ptr = io };

	io->fd = fd;
	io->events = events;
	io->fn = fn;
	io->arg = arg;
	if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) == -1) {
		io->fd = -1;
		return -1;
	}
	return 0;
}

int loop_io_set(struct loop *l, struct loop_io *io, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = io };

	if (io->fd < 0 || io->events == events)
		return 0;
	if (epoll_ctl(l->epfd, EPOLL_CTL_MOD, io->fd, &ev) == -1)
		return -1;
	io->events = events;
	return 0;
}

static void drop_pending(struct loop *l, struct loop_io *io)
{
	for (int i = 0; i < l->nbatch; i++)
		if (l->batch[i].data.ptr == io)
			l->batch[i].data.ptr = NULL;
}

void loop_io_del(struct loop *l, struct loop_io *io)
{
	if (io->fd < 0)
		return;
	epoll_ctl(l->epfd, EPOLL_CTL_DEL, io->fd, NULL);
	io->fd = -1;
	drop_pending(l, io);
}

void loop_io_close(struct loop *l, struct loop_io *io)
{
	if (io->fd < 0)
		return;
	close(io->fd);
	io->fd = -1;
	drop_pending(l, io);
}

void loop_io_drop(struct loop *l, struct loop_io *io)
{
	if (io->fd < 0)
		return;
	epoll_ctl(l->epfd, EPOLL_CTL_DEL, io->fd, NULL);
	loop_io_close(l, io);
}

/* --- timer heap, keyed on when_ms ---------------------------------------- */

static void heap_place(struct loop *l, size_t i, struct loop_timer *t)
{
	l->heap[i] = t;
	t->heap_idx = i;
}

static void heap_up(struct loop *l, size_t i)
{
	struct loop_timer *t = l->heap[i];

	while (i > 1 && l->heap[i / 2]->when_ms > t->when_ms) {
		heap_place(l, i, l->heap[i / 2]);
		i /= 2;
	}
	heap_place(l, i, t);
}

static void heap_down(struct loop *l, size_t i)
{
	struct loop_timer *t = l->heap[i];

	for (;;) {
		size_t c = i * 2;

		if (c > l->nheap)
			break;
		if (c + 1 <= l->nheap && l->heap[c + 1]->when_ms < l->heap[c]->when_ms)
			c++;
		if (l->heap[c]->when_ms >= t->when_ms)
			break;
		heap_place(l, i, l->heap[c]);
		i = c;
	}
	heap_place(l, i, t);
}

void loop_timer_cancel(struct loop *l, struct loop_timer *t)
{
	size_t i = t->heap_idx;
	struct loop_timer *last;

	if (i == 0)
		return;
	t->heap_idx = 0;
	last = l->heap[l->nheap--];
	if (last == t)
		return;
	heap_place(l, i, last);
	heap_up(l, i);
	heap_down(l, last->heap_idx);
}

void loop_timer_set(struct loop *l, struct loop_timer *t, uint64_t ms, loop_timer_fn fn,
		    void *arg)
{
	loop_timer_cancel(l, t);
	t->when_ms = l->now + ms;
	t->fn = fn;
	t->arg = arg;
	if (l->nheap + 1 >= l->capheap) {
		size_t cap = l->capheap ? l->capheap * 2 : 64;
		struct loop_timer **h = realloc(l->heap, cap * sizeof(*h));

		if (h == NULL)
			abort(); /* a timer that silently never fires would hang a client */
		l->heap = h;
		l->capheap = cap;
	}
	l->nheap++;
	heap_place(l, l->nheap, t);
	heap_up(l, l->nheap);
}

static void run_timers(struct loop *l)
{
	while (l->nheap > 0 && l->heap[1]->when_ms <= l->now) {
		struct loop_timer *t = l->heap[1];

		loop_timer_cancel(l, t);
		t->fn(l, t);
	}
}

void loop_set_hook(struct loop *l, loop_hook_fn fn, void *arg)
{
	l->hook = fn;
	l->hook_arg = arg;
}

void loop_stop(struct loop *l)
{
	l->stop = true;
}

int loop_run(struct loop *l)
{
	while (!l->stop) {
		int timeout = -1;

		if (l->hook != NULL)
			l->hook(l, l->hook_arg);
		if (l->stop)
			break;
		if (l->nheap > 0) {
			uint64_t when = l->heap[1]->when_ms;

			l->now = mono_ms();
			timeout = when <= l->now ? 0 : (int)(when - l->now);
		}
		l->nbatch = epoll_wait(l->epfd, l->batch, LOOP_BATCH, timeout);
		if (l->nbatch == -1) {
			l->nbatch = 0;
			if (errno == EINTR)
				continue;
			return -1;
		}
		l->now = mono_ms();
		for (int i = 0; i < l->nbatch; i++) {
			struct loop_io *io = l->batch[i].data.ptr;

			if (io != NULL && io->fd >= 0)
				io->fn(l, io, l->batch[i].events);
		}
		l->nbatch = 0;
		run_timers(l);
	}
	return 0;
}
