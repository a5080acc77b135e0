/*
 * watch_term.c: the terminal for `sluice watch`: raw input, the alternate
 * screen, keys, the window size, and putting it all back.
 *
 * Plain VT100/ANSI control sequences only (the alternate screen, cursor
 * moves, erase, reverse video and colours), so it works in any terminal
 * and over ssh; no mouse, no terminfo. Input stays in raw mode with ISIG
 * on, so Ctrl-C is SIGINT; SIGINT, SIGTERM, SIGHUP and SIGQUIT ask the
 * loop to quit, SIGWINCH to redraw, and a crash (SIGSEGV, SIGABRT, ...)
 * puts the terminal back before it dies. Ctrl-Z is off (a stopped watch
 * would leave the terminal raw). While the screen is up stderr can go to
 * a memory file whose last line watch.c shows. What to draw is watch.c's.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "cli.h"
#include "digits.h"

#define CAPTURE_MAX (1024 * 1024) /* the stderr file is emptied past this */
#define ESC_WAIT_MS 40 /* a lone ESC is the Esc key once nothing follows it this long */

static const char enter_seq[] = "\x1b[?1049h\x1b[?25l\x1b[H\x1b[2J";
static const char leave_seq[] = "\x1b[0m\x1b[?25h\x1b[?1049l";

static struct termios saved;
static volatile sig_atomic_t raw_on;   /* saved holds what to put back */
static volatile sig_atomic_t quit_sig; /* the signal that asked to quit, 0: none */
static volatile sig_atomic_t resized;

static const int quit_sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
static const int fatal_sigs[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT };

/* Async-signal-safe: write and tcsetattr only. */
static void restore_raw(void)
{
	ssize_t n;

	if (!raw_on)
		return;
	raw_on = 0;
	n = write(STDOUT_FILENO, leave_seq, sizeof(leave_seq) - 1);
	(void)n;
	tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved);
}

static void on_quit(int sig)
{
	quit_sig = sig;
}

static void on_winch(int sig)
{
	resized = 1;
}

/* The terminal back, then die of sig as we would have (SA_RESETHAND made it the default). */
static void on_fatal(int sig)
{
	restore_raw();
	raise(sig);
}

static void handlers_set(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on_quit; /* no SA_RESTART: poll returns at once */
	for (size_t i = 0; i < sizeof(quit_sigs) / sizeof(quit_sigs[0]); i++)
		sigaction(quit_sigs[i], &sa, NULL);
	sa.sa_handler = on_winch;
	sigaction(SIGWINCH, &sa, NULL);
	sa.sa_handler = on_fatal;
	sa.sa_flags = SA_RESETHAND;
	for (size_t i = 0; i < sizeof(fatal_sigs) / sizeof(fatal_sigs[0]); i++)
		sigaction(fatal_sigs[i], &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

static void handlers_reset(void)
{
	for (size_t i = 0; i < sizeof(quit_sigs) / sizeof(quit_sigs[0]); i++)
		signal(quit_sigs[i], SIG_DFL);
	for (size_t i = 0; i < sizeof(fatal_sigs) / sizeof(fatal_sigs[0]); i++)
		signal(fatal_sigs[i], SIG_DFL);
	signal(SIGWINCH, SIG_DFL);
}

int watch_term_open(void)
{
	struct termios t;

	if (tcgetattr(STDIN_FILENO, &saved) == -1) {
		fprintf(stderr, "watch: tcgetattr: ");
		cli_put_strerror(stderr, errno);
		fputc('\n', stderr);
		return -1;
	}
	t = saved;
	t.c_iflag &= ~(tcflag_t)(IXON | ICRNL | INLCR | IGNCR | ISTRIP | BRKINT);
	t.c_lflag &= ~(tcflag_t)(ECHO | ICANON | IEXTEN);
	t.c_lflag |= ISIG;
	t.c_cc[VSUSP] = _POSIX_VDISABLE;
	t.c_cc[VMIN] = 1;
	t.c_cc[VTIME] = 0;
	handlers_set();
	if (tcsetattr(STDIN_FILENO, TCSAFLUSH, &t) == -1) {
		handlers_reset();
		fprintf(stderr, "watch: tcsetattr: ");
		cli_put_strerror(stderr, errno);
		fputc('\n', stderr);
		return -1;
	}
	raw_on = 1;
	atexit(restore_raw); /* an exit() anywhere still puts it back */
	if (watch_term_write(enter_seq, sizeof(enter_seq) - 1) == -1) {
		restore_raw();
		handlers_reset();
		fprintf(stderr, "watch: write to the terminal failed\n");
		return -1;
	}
	return 0;
}

int watch_term_close(void)
{
	int sig = quit_sig;

	restore_raw();
	handlers_reset();
	return sig;
}

int watch_term_size(int *rows, int *cols)
{
	struct winsize ws;

	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == -1 || ws.ws_row == 0 || ws.ws_col == 0) {
		*rows = 24; /* what a terminal that does not say is */
		*cols = 80;
		return -1;
	}
	*rows = ws.ws_row;
	*cols = ws.ws_col;
	return 0;
}

bool watch_term_quit(void)
{
	return quit_sig != 0;
}

bool watch_term_resized(void)
{
	if (!resized)
		return false;
	resized = 0;
	return true;
}

int watch_term_write(const char *s, size_t len)
{
	while (len > 0) {
		ssize_t n = write(STDOUT_FILENO, s, len);

		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		s += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Whether more input arrives within ms (for telling Esc from a sequence). */
static bool more_within(int ms)
{
	struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };

	return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

/* Decode the sequence after ESC in b[i..n) into *key; returns the bytes used. */
static size_t decode_esc(const unsigned char *b, size_t n, int *key)
{
	size_t i = 0;
	uint64_t num = 0;

	*key = WATCH_KEY_ESC;
	if (n == 0 || (b[0] != '[' && b[0] != 'O'))
		return 0;
	if (n < 2)
		return 1; /* a cut sequence: taken, ignored */
	for (i = 1; i < n && is_digit(b[i]); i++)
		;
	if (i > 1 && dec_parse((const char *)b + 1, i - 1, 999, &num) == -1)
		num = 1000; /* no key's number */
	while (i < n && (b[i] == ';' || (b[i] >= '0' && b[i] <= '9')))
		i++; /* modifiers: ignored */
	if (i == n)
		return i;
	switch (b[i]) {
	case 'A': *key = WATCH_KEY_UP; break;
	case 'B': *key = WATCH_KEY_DOWN; break;
	case 'H': *key = WATCH_KEY_HOME; break;
	case 'F': *key = WATCH_KEY_END; break;
	case '~':
		*key = num == 5 ? WATCH_KEY_PGUP : num == 6 ? WATCH_KEY_PGDN
		     : num == 1 || num == 7 ? WATCH_KEY_HOME : num == 4 || num == 8 ? WATCH_KEY_END
		     : WATCH_KEY_NONE;
		break;
	default: *key = WATCH_KEY_NONE; break;
	}
	return i + 1;
}

int watch_term_keys(int timeout_ms, int *keys, size_t max, size_t *nkeys)
{
	struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
	unsigned char b[256];
	ssize_t got;
	size_t n, i = 0;
	int r;

	*nkeys = 0;
	r = poll(&p, 1, timeout_ms);
	if (r == -1 && errno == EINTR)
		return 0;
	if (r == -1)
		return -1;
	if (r == 0)
		return 0;
	if (!(p.revents & POLLIN))
		return 1; /* hung up */
	got = read(STDIN_FILENO, b, sizeof(b));
	if (got == -1 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (got <= 0)
		return got == 0 ? 1 : -1;
	n = (size_t)got;
	if (b[n - 1] == 0x1b && n < sizeof(b) && more_within(ESC_WAIT_MS)) {
		got = read(STDIN_FILENO, b + n, sizeof(b) - n);
		if (got > 0)
			n += (size_t)got;
	}
	while (i < n && *nkeys < max) {
		int key;

		if (b[i] == 0x1b) {
			i++;
			i += decode_esc(b + i, n - i, &key);
		} else {
			key = b[i++];
		}
		if (key != WATCH_KEY_NONE)
			keys[(*nkeys)++] = key;
	}
	return 0;
}

int watch_capture_start(struct watch_capture *w)
{
	fflush(stderr);
	w->fd = memfd_create("sluice-watch-stderr", MFD_CLOEXEC);
	if (w->fd == -1)
		return -1;
	w->saved = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
	if (w->saved == -1 || dup2(w->fd, STDERR_FILENO) == -1) {
		if (w->saved != -1)
			close(w->saved);
		close(w->fd);
		w->fd = w->saved = -1;
		return -1;
	}
	w->seen = 0;
	return 0;
}

void watch_capture_end(struct watch_capture *w)
{
	if (w->fd == -1)
		return;
	fflush(stderr);
	dup2(w->saved, STDERR_FILENO);
	close(w->saved);
	close(w->fd);
	w->fd = w->saved = -1;
}

void watch_capture_take(struct watch_capture *w, char *buf, size_t size)
{
	char text[1024];
	struct stat st;
	ssize_t got;
	off_t from;
	size_t len, end, start;

	buf[0] = '\0';
	if (w->fd == -1)
		return;
	fflush(stderr);
	if (fstat(w->fd, &st) == -1 || st.st_size <= w->seen)
		return;
	from = st.st_size - w->seen > (off_t)sizeof(text) ? st.st_size - (off_t)sizeof(text)
							       : w->seen;
	got = pread(w->fd, text, sizeof(text), from);
	w->seen = st.st_size;
	if (st.st_size > CAPTURE_MAX && ftruncate(w->fd, 0) == 0 &&
	    lseek(w->fd, 0, SEEK_SET) == 0)
		w->seen = 0;
	if (got <= 0)
		return;
	len = (size_t)got;
	end = len;
	while (end > 0 && (text[end - 1] == '\n' || text[end - 1] == '\r'))
		end--;
	start = end;
	while (start > 0 && text[start - 1] != '\n')
		start--;
	snprintf(buf, size, "%.*s", (int)(end - start), text + start);
}
