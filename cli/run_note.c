/*
 * run_note.c: what a run tells the project's proxy about itself
 * (STATE/runnotes/ID, lib/runnote.h), so that the proxy, whose log and
 * chain it is, writes the run's own rows: "run" when it starts and ends,
 * and "probe" for its self-check, known by a nonce the note carries only
 * until verify is done. Root alone writes there (0750 directory, 0640
 * files, STATE's group: a proxy running as `user` reads them through it).
 *
 * It does not write the log: it only waits, a bounded while, for the
 * proxy's end row to be there before it takes the note away.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hex.h"
#include "run.h"

#define END_WAIT_MS 3000   /* for the proxy's end row */
#define TAIL_BYTES 65536   /* of the log searched for it */

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int note_path(const struct config *c, const char *id, char *buf, size_t size)
{
	int n = snprintf(buf, size, "%s/%s%s%s", c->state_dir, RUNNOTE_DIR, id != NULL ? "/" : "",
			 id != NULL ? id : "");

	return n < 0 || (size_t)n >= size ? -1 : 0;
}

/* x's note as it stands, written in place (a new file renamed over the old). Returns 0 or -1 after printing. */
static int note_save(const struct run *x)
{
	char dir[PATH_MAX], path[PATH_MAX], tmp[PATH_MAX + 8], buf[RUNNOTE_MAX_BYTES];
	struct stat st;
	int len = runnote_format(&x->note, buf, sizeof(buf)), fd;

	if (len < 0 || note_path(x->c, NULL, dir, sizeof(dir)) == -1 ||
	    note_path(x->c, x->note.id, path, sizeof(path)) == -1 ||
	    stat(x->c->state_dir, &st) == -1) {
		fprintf(stderr, "run: the run's note for the proxy: %s\n",
			len < 0 ? "cannot be written" : strerror(errno));
		return -1;
	}
	snprintf(tmp, sizeof(tmp), "%s.new", path);
	if ((mkdir(dir, 0750) == -1 && errno != EEXIST) || chown(dir, 0, st.st_gid) == -1 ||
	    chmod(dir, 0750) == -1) {
		fprintf(stderr, "run: %s: %s\n", dir, strerror(errno));
		return -1;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0640);
	if (fd == -1 || fchown(fd, 0, st.st_gid) == -1 || fchmod(fd, 0640) == -1 ||
	    write(fd, buf, (size_t)len) != len || close(fd) == -1 || rename(tmp, path) == -1) {
		fprintf(stderr, "run: %s: %s\n", path, strerror(errno));
		if (fd != -1)
			unlink(tmp);
		return -1;
	}
	return 0;
}

int run_note_begin(struct run *x)
{
	struct runnote *n = &x->note;
	unsigned char raw[RUNNOTE_NONCE_LEN / 2];
	/* the project's NAME, as the run's principal names it (run_principal) */
	const char *project = x->principal_as + strlen("project:");

	memset(n, 0, sizeof(*n));
	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw)) {
		fprintf(stderr, "run: getrandom: %s\n", strerror(errno));
		return -1;
	}
	hex_encode(raw, sizeof(raw), n->nonce);
	snprintf(n->id, sizeof(n->id), "%s", x->r.id);
	if (x->o.name != NULL)
		snprintf(n->name, sizeof(n->name), "%s", x->o.name);
	snprintf(n->project, sizeof(n->project), "%.*s", (int)strcspn(project, "/"), project);
	runnote_cmd(x->o.cmd, n->cmd, sizeof(n->cmd));
	n->start_ms = now_ms();
	if (note_save(x) == -1)
		return -1;
	x->noted = true;
	return 0;
}

void run_note_verified(struct run *x)
{
	if (!x->noted)
		return;
	x->note.nonce[0] = '\0';
	note_save(x);
}

/* Whether the log's last TAIL_BYTES hold the proxy's end row for id. */
static bool end_row_seen(const struct config *c, const char *id)
{
	char needle[80], *buf;
	struct stat st;
	off_t from;
	ssize_t got;
	bool seen;
	int fd = open(c->log_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd == -1)
		return false;
	buf = malloc(TAIL_BYTES);
	if (buf == NULL || fstat(fd, &st) == -1) {
		free(buf);
		close(fd);
		return false;
	}
	from = st.st_size > TAIL_BYTES ? st.st_size - TAIL_BYTES : 0;
	got = pread(fd, buf, TAIL_BYTES, from);
	close(fd);
	snprintf(needle, sizeof(needle), "\"kind\":\"run\",\"event\":\"end\",\"sandbox\":\"%s\"", id);
	seen = got > 0 && memmem(buf, (size_t)got, needle, strlen(needle)) != NULL;
	free(buf);
	return seen;
}

void run_note_end(struct run *x, int code)
{
	char path[PATH_MAX];

	if (!x->noted)
		return;
	x->note.nonce[0] = '\0';
	x->note.ended = true;
	x->note.status = code >= 0 && code <= 255 ? (unsigned)code : 255;
	x->note.end_ms = now_ms();
	if (note_save(x) == 0 && x->proxy_pid > 0 && kill(x->proxy_pid, SIGHUP) == 0) {
		int waited = 0;

		for (; waited < END_WAIT_MS && !end_row_seen(x->c, x->note.id); waited += 20) {
			struct timespec ts = { 0, 20000000 };

			nanosleep(&ts, NULL);
		}
		if (waited >= END_WAIT_MS)
			fprintf(stderr, "run: the proxy did not log the run's end within %d s\n",
				END_WAIT_MS / 1000);
	}
	if (note_path(x->c, x->note.id, path, sizeof(path)) == 0)
		unlink(path);
	x->noted = false;
}

void run_note_remove(const struct config *c, const char *id)
{
	char path[PATH_MAX];

	if (note_path(c, id, path, sizeof(path)) == 0 && unlink(path) == -1 && errno != ENOENT)
		fprintf(stderr, "run: %s: %s\n", path, strerror(errno));
}
