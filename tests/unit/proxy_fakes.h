/*
 * proxy_fakes.h: what the proxy's unit tests (test_proxy_*.c) put around
 * the module they test, in place of the process main.c would build.
 *
 * - A clock the test sets: clock_gettime(2) for CLOCK_REALTIME and
 *   CLOCK_MONOTONIC answers a time frozen at the first call, moved only by
 *   fake_clock_advance (or back: fake_clock_back), so a window or a refill is checked to the
 *   millisecond and no test sleeps. It counts what it was asked. Other
 *   clocks go to the kernel. (gettimeofday is not faked: lograte.c reads
 *   it only for the times a suppression row prints.)
 * - A proxy of the test's own: a config parsed from text (a failed parse
 *   fails the test), a state directory made fresh under /tmp, a loop, a
 *   network log in that directory, a run id; no listener, no socket.
 * - stderr kept while a test looks at what a module says there.
 * - A DNS server on 127.0.0.1 that records the questions and answers
 *   what the test says (resolve.c's upstream).
 * - A connection with no socket (fake_session_new): a session as
 *   session_accept leaves one, its client the read end of an empty pipe
 *   (a read says EAGAIN; the test may write more into the other end).
 * - A codec that records what its exchanges are refused (fake_codec) and
 *   writes their rows as a codec does, saying nothing on any wire.
 * - A dialer that records each exchange it is asked to dial and dials
 *   nothing: in the tests linked with -Wl,--wrap=dial_start (the
 *   Makefile's PROXY_FAKE_DIAL), dial_start is __wrap_dial_start.
 * - The loop driven by the test: fake_loop_steps runs it, calling the
 *   test's step before each turn and the timers that fell due (at the
 *   fake clock) after it, until the step says stop. A loop's time
 *   (loop_now) is the clock's at loop_new or at its last turn: a step's
 *   fake_clock_advance is seen from the next step on. A loop runs once
 *   (loop_stop is for good).
 *
 * Test-only; include it after cmocka.h.
 */
#ifndef SLUICE_TESTS_PROXY_FAKES_H
#define SLUICE_TESTS_PROXY_FAKES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "proxy.h"

/* --- the clock --------------------------------------------------------- */

/* Move the fake CLOCK_REALTIME and CLOCK_MONOTONIC on by ms. */
void fake_clock_advance(uint64_t ms);
/* Step them back by ms (a wall clock set back; the test's own monotonic one goes along). */
void fake_clock_back(uint64_t ms);
/* The fake clock's milliseconds (CLOCK_MONOTONIC, as loop.c reads it). */
uint64_t fake_clock_mono_ms(void);
/* The fake CLOCK_REALTIME in ms since the epoch. */
int64_t fake_clock_wall_ms(void);
/* How many times clock_gettime was asked for clock id (REALTIME or MONOTONIC) since the start. */
unsigned long fake_clock_asked(clockid_t id);

/* --- a proxy ----------------------------------------------------------- */

struct fake_proxy {
	struct proxy px;
	char dir[64];       /* its state directory, made fresh */
	char log_path[128]; /* its network log, in dir */
};

/*
 * A proxy with config text conf (plus "state-dir" set to a fresh
 * directory), a loop, a network log and a run id. Asserts on failure.
 */
struct fake_proxy *fake_proxy_new(const char *conf);
/* Free what fake_proxy_new made (not what the test set up in px) and remove dir. */
void fake_proxy_free(struct fake_proxy *fp);
/* The network log's contents so far, NUL-terminated (caller frees); "" when empty. */
char *fake_proxy_log(const struct fake_proxy *fp);
/* How many times needle occurs in hay. */
size_t fake_count(const char *hay, const char *needle);

/* --- stderr ------------------------------------------------------------ */

/* From now on what is written to stderr (fd 2) is kept, not shown. */
void fake_stderr_begin(void);
/* What was written since fake_stderr_begin, NUL-terminated (caller frees); stderr back. */
char *fake_stderr_end(void);

/* --- a DNS server ------------------------------------------------------ */

/*
 * A DNS server on 127.0.0.1 (UDP, a port the kernel picks), served by the
 * proxy's loop: it records each question ("NAME TYPE\n", lower-case, TYPE
 * A or AAAA or a number) and answers what the test set for the name: its
 * A and AAAA addresses (text, up to 8 each), or an rcode, or nothing at
 * all (silent). A name it was told nothing of: NXDOMAIN. Held: questions
 * are kept unanswered until fake_dns_release.
 */
struct fake_dns;
struct fake_dns *fake_dns_new(struct proxy *px);
void fake_dns_free(struct fake_dns *d);
uint16_t fake_dns_port(const struct fake_dns *d);
/* name's answer: addresses (IPv4 and IPv6 text, NULL-terminated list), rcode, silent. */
void fake_dns_set(struct fake_dns *d, const char *name, const char *const *addrs, int rcode,
		  bool silent);
void fake_dns_hold(struct fake_dns *d);
void fake_dns_release(struct fake_dns *d); /* answers every question held */
/* The questions asked so far, one a line (the server's; do not free). */
const char *fake_dns_asked(const struct fake_dns *d);

/* --- a connection ----------------------------------------------------- */

struct session;
struct exchange;

/*
 * A client connection of px as session_accept leaves one (HTTP/1.1's
 * codec, its buffers and their ceilings, an id, listed in px->sessions,
 * client "127.0.0.7:40000"), but no socket: its cfd is the read end of a
 * non-blocking pipe, *feed (when feed is not NULL) the write end, for the
 * test to send the client's next bytes (the caller closes it); no
 * upstream; nothing in epoll.
 */
struct session *fake_session_new(struct proxy *px, int *feed);
/*
 * Close s unless it is (session_close: a row if its exchange is active)
 * and free it, and it alone (one the code under test closed is freed by
 * its own call, in any order).
 */
void fake_session_free(struct session *s);

/* --- a codec ----------------------------------------------------------- */

struct codec;
/*
 * A codec whose refuse records the refusal (fake_refused) and, as every
 * codec does, marks its exchange refused (decision, reason, detail, id,
 * status) and writes its row (exchange_log). Nothing is written to any
 * buffer or socket; the connection stays as it was.
 */
extern const struct codec fake_codec;

struct fake_refusal {
	const struct exchange *x;
	int status;
	char reason[64];
	char proxy_status[64];
	char detail[320];
	char id[17];
	bool logged; /* exchange_log wrote its row */
};

/* How many refusals fake_codec was handed since the last fake_refusals_reset. */
size_t fake_refusals(void);
/* The i-th of them (asserts i is one). */
const struct fake_refusal *fake_refused(size_t i);
void fake_refusals_reset(void);

/* --- the dialer -------------------------------------------------------- */

struct fake_dial {
	const struct exchange *x;
	char host[256]; /* its target as dial_start would take it */
	uint16_t port;
	bool connect;   /* a CONNECT's (GRANT_VIA_CONNECT) */
};

/* dial_start in a test linked with -Wl,--wrap=dial_start: recorded, nothing dialed. */
void __wrap_dial_start(struct exchange *x, void (*then)(struct exchange *x));
/* How many dials were asked for since the last fake_dials_reset. */
size_t fake_dials(void);
/* The i-th (asserts i is one). */
const struct fake_dial *fake_dialed(size_t i);
void fake_dials_reset(void);

/* --- the loop ---------------------------------------------------------- */

/* What a step asks of the turn after it. */
enum fake_step {
	FAKE_STOP, /* return from fake_loop_steps (no timer runs) */
	FAKE_TURN, /* run the timers due at the fake clock, then the next step at once */
	FAKE_WAIT, /* wait for an event (a child's pipe, its pidfd) or the next timer, then step */
};

/*
 * Run px's loop: before each turn step(arg, n) with n = 0, 1, ...; the
 * turn then runs each timer due at the fake clock's now and what the
 * kernel says is ready. FAKE_WAIT waits for the kernel (the next timer at
 * most, in real ms from the fake now); FAKE_TURN never waits. At most
 * 10000 steps and 20 s: the test fails past them; a loop that does not
 * come back to a step within 30 s ends the program (exit 1, said).
 */
void fake_loop_steps(struct proxy *px, enum fake_step (*step)(void *arg, unsigned n), void *arg);

/* --- a TLS ClientHello ------------------------------------------------- */

/* p[0..2) = v, big-endian; returns 2. */
size_t fake_put16(uint8_t *p, size_t v);
/* A TLS 1.2 ClientHello naming name (SNI), one record, into m (512 bytes); its length. */
size_t fake_client_hello(uint8_t *m, const char *name);

#endif
