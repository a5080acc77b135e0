/*
 * proxy_fakes.c: the clock, the proxy and the loop of the proxy's unit
 * tests (proxy_fakes.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "config.h"
#include "loop.h"
#include "netlog.h"
#include "proxy_fakes.h"
#include "request.h"

/* --- the clock --------------------------------------------------------- */

static struct timespec base_real, base_mono; /* the kernel's, at the first call */
static bool based;
static int64_t advanced_ms; /* may go below 0: a clock stepped back */
static unsigned long asked_real, asked_mono;

static void clock_base(void)
{
	if (based)
		return;
	syscall(SYS_clock_gettime, CLOCK_REALTIME, &base_real);
	syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &base_mono);
	based = true;
}

static void plus_ms(struct timespec *ts, const struct timespec *base, int64_t ms)
{
	int64_t ns = (int64_t)base->tv_sec * 1000000000 + base->tv_nsec + ms * 1000000;

	ts->tv_sec = (time_t)(ns / 1000000000);
	ts->tv_nsec = (long)(ns % 1000000000);
}

/* Takes the C library's place (the executable's definition comes first). */
int clock_gettime(clockid_t id, struct timespec *ts)
{
	clock_base();
	switch (id) {
	case CLOCK_REALTIME:
		asked_real++;
		plus_ms(ts, &base_real, advanced_ms);
		return 0;
	case CLOCK_MONOTONIC:
		asked_mono++;
		plus_ms(ts, &base_mono, advanced_ms);
		return 0;
	default:
		return (int)syscall(SYS_clock_gettime, id, ts);
	}
}

void fake_clock_advance(uint64_t ms)
{
	clock_base();
	advanced_ms += (int64_t)ms;
}

void fake_clock_back(uint64_t ms)
{
	clock_base();
	advanced_ms -= (int64_t)ms;
}

uint64_t fake_clock_mono_ms(void)
{
	struct timespec ts;

	clock_base();
	plus_ms(&ts, &base_mono, advanced_ms);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int64_t fake_clock_wall_ms(void)
{
	struct timespec ts;

	clock_base();
	plus_ms(&ts, &base_real, advanced_ms);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

unsigned long fake_clock_asked(clockid_t id)
{
	return id == CLOCK_REALTIME ? asked_real : id == CLOCK_MONOTONIC ? asked_mono : 0;
}

/* --- a proxy ----------------------------------------------------------- */

struct fake_proxy *fake_proxy_new(const char *conf)
{
	struct fake_proxy *fp = calloc(1, sizeof(*fp));
	struct config *c = config_new();
	char *errs = NULL;
	size_t errlen = 0;
	FILE *f = open_memstream(&errs, &errlen);
	const char *why = NULL;
	int nerr;

	assert_non_null(fp);
	assert_non_null(c);
	assert_non_null(f);
	snprintf(fp->dir, sizeof(fp->dir), "/tmp/sluice-unit-XXXXXX");
	assert_non_null(mkdtemp(fp->dir));
	nerr = config_parse(c, conf, strlen(conf), "unit.conf", f);
	fclose(f);
	if (nerr != 0)
		print_error("config: %s", errs);
	assert_int_equal(nerr, 0);
	free(errs);
	snprintf(c->state_dir, sizeof(c->state_dir), "%s", fp->dir);
	fp->px.config = c;
	fp->px.run_fd = -1;
	snprintf(fp->px.run_id, sizeof(fp->px.run_id), "0123456789abcdef");
	fp->px.loop = loop_new();
	assert_non_null(fp->px.loop);
	snprintf(fp->log_path, sizeof(fp->log_path), "%s/net.log", fp->dir);
	fp->px.netlog = netlog_open(fp->log_path, 0, 0, false, FILE_NO_UID, &why);
	if (fp->px.netlog == NULL)
		print_error("netlog_open: %s\n", why != NULL ? why : strerror(errno));
	assert_non_null(fp->px.netlog);
	return fp;
}

void fake_proxy_free(struct fake_proxy *fp)
{
	DIR *d;
	struct dirent *e;

	if (fp == NULL)
		return;
	netlog_close(fp->px.netlog);
	loop_free(fp->px.loop);
	config_free(fp->px.config);
	d = opendir(fp->dir);
	while (d != NULL && (e = readdir(d)) != NULL) {
		char p[sizeof(fp->dir) + 256 + 2];

		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(p, sizeof(p), "%s/%s", fp->dir, e->d_name);
		unlink(p);
	}
	if (d != NULL)
		closedir(d);
	rmdir(fp->dir);
	free(fp);
}

char *fake_proxy_log(const struct fake_proxy *fp)
{
	FILE *f = fopen(fp->log_path, "r");
	char *out = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&out, &len);
	char chunk[4096];
	size_t n;

	assert_non_null(m);
	while (f != NULL && (n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		fwrite(chunk, 1, n, m);
	if (f != NULL)
		fclose(f);
	fclose(m);
	return out;
}

size_t fake_count(const char *hay, const char *needle)
{
	size_t n = 0, len = strlen(needle);

	for (const char *p = hay; len > 0 && (p = strstr(p, needle)) != NULL; p += len)
		n++;
	return n;
}

/* --- stderr ------------------------------------------------------------ */

static int saved_err = -1;
static FILE *kept;

void fake_stderr_begin(void)
{
	assert_int_equal(saved_err, -1);
	fflush(stderr);
	kept = tmpfile();
	assert_non_null(kept);
	saved_err = dup(2);
	assert_true(saved_err >= 0);
	assert_int_equal(dup2(fileno(kept), 2), 2);
}

char *fake_stderr_end(void)
{
	char *out = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&out, &len);
	char chunk[4096];
	size_t n;

	assert_true(saved_err >= 0);
	fflush(stderr);
	assert_int_equal(dup2(saved_err, 2), 2);
	close(saved_err);
	saved_err = -1;
	assert_non_null(m);
	rewind(kept);
	while ((n = fread(chunk, 1, sizeof(chunk), kept)) > 0)
		fwrite(chunk, 1, n, m);
	fclose(kept);
	kept = NULL;
	fclose(m);
	return out;
}

/* --- a DNS server ------------------------------------------------------ */

#define DNS_NAMES 8
#define DNS_HELD 16

struct dns_rule {
	char name[256];
	struct in_addr a[8];
	size_t na;
	struct in6_addr aaaa[8];
	size_t naaaa;
	int rcode;
	bool silent;
};

struct dns_held {
	unsigned char q[512];
	size_t len;
	struct sockaddr_storage from;
	socklen_t fromlen;
};

struct fake_dns {
	struct proxy *px;
	struct loop_io io;
	uint16_t port;
	struct dns_rule rule[DNS_NAMES];
	size_t nrules;
	bool hold;
	struct dns_held held[DNS_HELD];
	size_t nheld;
	char asked[4096];
};

/* The question of q[0..len): its name (lower-case, dotted) into name, its type; end of it. */
static size_t dns_question(const unsigned char *q, size_t len, char *name, size_t size,
			   uint16_t *type)
{
	size_t i = 12, o = 0;

	assert_true(len > 12);
	while (i < len && q[i] != 0) {
		size_t l = q[i++];

		assert_true(l < 64 && i + l < len && o + l + 2 < size);
		if (o > 0)
			name[o++] = '.';
		for (size_t k = 0; k < l; k++) {
			char c = (char)q[i + k];

			name[o++] = c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
		}
		i += l;
	}
	name[o] = '\0';
	assert_true(i + 5 <= len);
	*type = (uint16_t)(q[i + 1] << 8 | q[i + 2]);
	return i + 5;
}

static void dns_answer(struct fake_dns *d, const unsigned char *q, size_t len,
		       const struct sockaddr_storage *from, socklen_t fromlen)
{
	unsigned char r[1024];
	char name[256];
	uint16_t type;
	size_t end = dns_question(q, len, name, sizeof(name), &type), o;
	const struct dns_rule *rule = NULL;
	unsigned n = 0;

	for (size_t i = 0; i < d->nrules; i++)
		if (strcmp(d->rule[i].name, name) == 0)
			rule = &d->rule[i];
	if (rule != NULL && rule->silent)
		return;
	memcpy(r, q, end);
	r[2] = 0x80 | (q[2] & 0x01); /* a response; RD as asked */
	r[3] = 0x80 | (uint8_t)(rule == NULL ? 3 : rule->rcode); /* RA; NXDOMAIN for a stranger */
	r[4] = 0, r[5] = 1;
	r[8] = r[9] = r[10] = r[11] = 0;
	o = end;
	if (rule != NULL && rule->rcode == 0) {
		size_t count = type == 1 ? rule->na : type == 28 ? rule->naaaa : 0;

		for (size_t i = 0; i < count && o + 28 + 12 < sizeof(r); i++) {
			size_t alen = type == 1 ? 4 : 16;
			const void *a = type == 1 ? (const void *)&rule->a[i] : (const void *)&rule->aaaa[i];
			const unsigned char rr[] = { 0xc0, 0x0c, 0, (unsigned char)type, 0, 1, 0, 0, 0, 60,
						     0, (unsigned char)alen };

			memcpy(r + o, rr, sizeof(rr));
			memcpy(r + o + sizeof(rr), a, alen);
			o += sizeof(rr) + alen;
			n++;
		}
	}
	r[6] = 0, r[7] = (unsigned char)n;
	(void)!sendto(d->io.fd, r, o, 0, (const struct sockaddr *)from, fromlen);
}

static void on_dns(struct loop *l, struct loop_io *io, uint32_t events)
{
	struct fake_dns *d = io->arg;
	unsigned char q[512];
	struct sockaddr_storage from;
	socklen_t fromlen = sizeof(from);
	ssize_t n = recvfrom(io->fd, q, sizeof(q), 0, (struct sockaddr *)&from, &fromlen);
	char name[256], line[300];
	uint16_t type;

	if (n <= 0)
		return;
	dns_question(q, (size_t)n, name, sizeof(name), &type);
	if (type == 1 || type == 28)
		snprintf(line, sizeof(line), "%s %s\n", name, type == 1 ? "A" : "AAAA");
	else
		snprintf(line, sizeof(line), "%s %u\n", name, type);
	assert_true(strlen(d->asked) + strlen(line) < sizeof(d->asked));
	strcat(d->asked, line);
	if (d->hold) {
		struct dns_held *h = &d->held[d->nheld++];

		assert_true(d->nheld <= DNS_HELD);
		memcpy(h->q, q, (size_t)n);
		h->len = (size_t)n;
		h->from = from;
		h->fromlen = fromlen;
		return;
	}
	dns_answer(d, q, (size_t)n, &from, fromlen);
}

struct fake_dns *fake_dns_new(struct proxy *px)
{
	struct fake_dns *d = calloc(1, sizeof(*d));
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sin);
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	assert_non_null(d);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
	d->px = px;
	d->port = ntohs(sin.sin_port);
	assert_int_equal(loop_io_add(px->loop, &d->io, fd, EPOLLIN, on_dns, d), 0);
	return d;
}

void fake_dns_free(struct fake_dns *d)
{
	if (d == NULL)
		return;
	loop_io_close(d->px->loop, &d->io);
	free(d);
}

uint16_t fake_dns_port(const struct fake_dns *d)
{
	return d->port;
}

void fake_dns_set(struct fake_dns *d, const char *name, const char *const *addrs, int rcode,
		  bool silent)
{
	struct dns_rule *r = &d->rule[d->nrules++];

	assert_true(d->nrules <= DNS_NAMES);
	memset(r, 0, sizeof(*r));
	snprintf(r->name, sizeof(r->name), "%s", name);
	r->rcode = rcode;
	r->silent = silent;
	for (size_t i = 0; addrs != NULL && addrs[i] != NULL; i++) {
		if (inet_pton(AF_INET, addrs[i], &r->a[r->na]) == 1) {
			assert_true(++r->na <= 8);
			continue;
		}
		assert_int_equal(inet_pton(AF_INET6, addrs[i], &r->aaaa[r->naaaa]), 1);
		assert_true(++r->naaaa <= 8);
	}
}

void fake_dns_hold(struct fake_dns *d)
{
	d->hold = true;
}

void fake_dns_release(struct fake_dns *d)
{
	d->hold = false;
	for (size_t i = 0; i < d->nheld; i++)
		dns_answer(d, d->held[i].q, d->held[i].len, &d->held[i].from, d->held[i].fromlen);
	d->nheld = 0;
}

const char *fake_dns_asked(const struct fake_dns *d)
{
	return d->asked;
}

/* --- a connection ----------------------------------------------------- */

struct session *fake_session_new(struct proxy *px, int *feed)
{
	struct session *s = calloc(1, sizeof(*s));
	int p[2];

	assert_non_null(s);
	assert_int_equal(pipe2(p, O_NONBLOCK | O_CLOEXEC), 0);
	session_init(s, px, p[0], "127.0.0.7:40000", &h1_codec, &h1_head_state);
	session_link(s); /* as session_accept does, with no loop io: nothing reads the pipe */
	if (feed != NULL)
		*feed = p[1];
	else
		close(p[1]);
	return s;
}

void fake_session_free(struct session *s)
{
	struct proxy *px = s->px;
	struct list others;

	session_close(s, NULL); /* its buffers, its upstream's (session_upstream_close), its fd */
	/* s alone from the dead (another the code closed is freed by its own call) */
	list_remove(&px->dead, &s->link);
	others = px->dead;
	memset(&px->dead, 0, sizeof(px->dead));
	list_insert_head(&px->dead, &s->link);
	session_free_dead(px);
	px->dead = others;
}

/* --- a codec ----------------------------------------------------------- */

#define REFUSALS 64

static struct fake_refusal refusals[REFUSALS];
static size_t nrefusals;

static void fake_refuse(struct exchange *x, const struct refusal *r)
{
	struct fake_refusal *f;

	assert_true(nrefusals < REFUSALS);
	f = &refusals[nrefusals++];
	memset(f, 0, sizeof(*f));
	f->x = x;
	f->status = r->status;
	snprintf(f->reason, sizeof(f->reason), "%s", r->reason != NULL ? r->reason : "");
	snprintf(f->proxy_status, sizeof(f->proxy_status), "%s",
		 r->proxy_status != NULL ? r->proxy_status : "");
	snprintf(f->detail, sizeof(f->detail), "%s", r->detail);
	snprintf(f->id, sizeof(f->id), "%s", r->id);
	if (!x->active) { /* refused before it began: begun for its row, as h1.c does */
		exchange_reset(x);
		x->active = true;
		x->t_start = loop_clock_ms();
		x->dns_ms = x->connect_ms = -1;
		x->req = ++x->conn->nreq;
	}
	x->decision = "refuse";
	x->reason = r->reason;
	x->status = r->status;
	snprintf(x->detail, sizeof(x->detail), "%s", r->detail);
	memcpy(x->refusal, r->id, sizeof(x->refusal));
	f->logged = exchange_log(x);
}

const struct codec fake_codec = {
	.name = "fake",
	.refuse = fake_refuse,
	.close = exchange_conn_close, /* HTTP/1.1's: the one exchange's row, its budget, secrets */
	.release = exchange_conn_release,
};

size_t fake_refusals(void)
{
	return nrefusals;
}

const struct fake_refusal *fake_refused(size_t i)
{
	assert_true(i < nrefusals);
	return &refusals[i];
}

void fake_refusals_reset(void)
{
	nrefusals = 0;
}

/* --- the dialer -------------------------------------------------------- */

#define DIALS 16

static struct fake_dial dials[DIALS];
static size_t ndials;

void __wrap_dial_start(struct exchange *x, void (*then)(struct exchange *x))
{
	struct fake_dial *d;

	assert_true(ndials < DIALS);
	d = &dials[ndials++];
	d->x = x;
	x->up_then = then;
	snprintf(d->host, sizeof(d->host), "%s", x->t.host.name);
	d->port = x->t.port;
	d->connect = x->t.via == GRANT_VIA_CONNECT;
}

size_t fake_dials(void)
{
	return ndials;
}

const struct fake_dial *fake_dialed(size_t i)
{
	assert_true(i < ndials);
	return &dials[i];
}

void fake_dials_reset(void)
{
	ndials = 0;
}

/* --- the loop ---------------------------------------------------------- */

struct steps {
	enum fake_step (*step)(void *arg, unsigned n);
	void *arg;
	unsigned n;
	struct timespec began;  /* the kernel's monotonic clock: the bound in real time */
	struct loop_timer tick; /* due at once: the turn does not wait */
};

static void on_tick(struct loop *l, struct loop_timer *t)
{
}

static void on_turn(struct loop *l, void *arg)
{
	struct steps *st = arg;
	struct timespec now;
	enum fake_step next;

	syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &now);
	assert_true(st->n < 10000);
	assert_true(now.tv_sec - st->began.tv_sec < 20);
	next = st->step(st->arg, st->n++);
	loop_timer_cancel(l, &st->tick);
	if (next == FAKE_STOP)
		loop_stop(l);
	else if (next == FAKE_TURN)
		loop_timer_set(l, &st->tick, 0, on_tick, st);
}

/* A loop that never comes back to a step (a timer re-armed for ever, say) ends the test. */
static void on_alarm(int sig)
{
	static const char msg[] = "proxy_fakes: the loop ran 30 s without coming back to a step\n";

	(void)!write(2, msg, sizeof(msg) - 1);
	_exit(1);
}

void fake_loop_steps(struct proxy *px, enum fake_step (*step)(void *arg, unsigned n), void *arg)
{
	struct steps st = { .step = step, .arg = arg };
	struct sigaction sa = { .sa_handler = on_alarm }, old;

	syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &st.began);
	assert_int_equal(sigaction(SIGALRM, &sa, &old), 0);
	alarm(30);
	loop_set_hook(px->loop, on_turn, &st);
	assert_int_equal(loop_run(px->loop), 0);
	loop_set_hook(px->loop, NULL, NULL);
	alarm(0);
	sigaction(SIGALRM, &old, NULL);
}

/* --- a TLS ClientHello ------------------------------------------------- */

size_t fake_put16(uint8_t *p, size_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
	return 2;
}

size_t fake_client_hello(uint8_t *m, const char *name)
{
	size_t nl = strlen(name), o = 0, hs, ext;

	m[o++] = 22, m[o++] = 3, m[o++] = 1;
	o += 2; /* record length */
	hs = o;
	m[o++] = 1, m[o++] = 0;
	o += 2; /* handshake length (24 bits, the top byte 0) */
	m[o++] = 3, m[o++] = 3;
	memset(m + o, 0xab, 32), o += 32;
	m[o++] = 0;                                /* session id */
	o += fake_put16(m + o, 2), m[o++] = 0, m[o++] = 0x2f; /* one cipher suite */
	m[o++] = 1, m[o++] = 0;                    /* null compression */
	ext = o;
	o += 2;
	o += fake_put16(m + o, 0);                      /* server_name */
	o += fake_put16(m + o, nl + 5);
	o += fake_put16(m + o, nl + 3);
	m[o++] = 0;
	o += fake_put16(m + o, nl);
	memcpy(m + o, name, nl), o += nl;
	fake_put16(m + ext, o - ext - 2);
	fake_put16(m + hs + 2, o - hs - 4);
	fake_put16(m + 3, o - 5);
	return o;
}
