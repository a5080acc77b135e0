/*
 * cli.h: the sluice command line's table of contents.
 *
 * Each verb lives in its own file and exports one cmd_<verb>() taking the
 * arguments from the verb's name on (argv[0] is the verb) and returning the
 * process exit status. main.c owns the verb table and the global options;
 * conf.c, usage.c, say.c and state.c what every verb shares.
 */
#ifndef SLUICE_CLI_H
#define SLUICE_CLI_H

#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include "config.h"
#include "units.h"     /* install.c: UNITS_ID_HEX */
#include "principal.h" /* snapshot.c and principal.c: engine snapshots, naming principals */

/* Exit statuses, as usage() documents them. */
#define EXIT_OK 0
#define EXIT_ERROR 1
#define EXIT_USAGE 2

/* conf.c: the config in force */

/* Use path as the config file (-c FILE); it must outlive the process's use of it. */
void cli_config_use(const char *path);

/*
 * The config file in force: -c FILE, else $SLUICE_CONFIG, else
 * etc/sluice.conf when it exists in the working directory, else NULL
 * (the built-in defaults).
 */
const char *cli_config_path(void);

/*
 * Load the config in force (defaults when cli_config_path() is NULL).
 * Errors go to stderr as "file:line: message". Returns a config the
 * caller frees with config_free, or NULL after printing why.
 */
struct config *cli_config_load(void);

/* The uid of the config's `user` (who may own the log files), FILE_NO_UID without one. */
uid_t cli_user_uid(const struct config *c);

/* usage.c */

/*
 * Print the synopsis of one verb (argv[0] of a verb) to f, or the whole
 * usage when verb is NULL. Verbs call it for -h (stdout, exit 0) and for a
 * usage error (stderr, exit 2).
 */
void cli_usage(FILE *f, const char *verb);


/* say.c */

/* fputs strerror(e) with a lower-case first letter (diagnostics read that way). */
void cli_put_strerror(FILE *f, int e);

/* t as local time, "2026-12-02 03:13:16", into buf. Returns buf. */
char *cli_time_text(time_t t, char *buf, size_t size);

/* state.c */

/*
 * Open a file of STATE's that the CLI (root) writes or locks, through
 * file_open_owned: never a symbolic link, a hard link, or a file not
 * root's (or the caller's). verb prefixes the diagnostic. Returns the fd,
 * or -1 after printing why.
 */
int cli_open_state(const char *verb, const char *path, int flags, mode_t mode);

/* check.c */
int cmd_check(int argc, char **argv);

/* allow.c */
int cmd_allow(int argc, char **argv);

/* allow_store.c: STATE/grants, replaced whole under STATE/grants.lock */

/* The store as read: grants owned by the caller, who frees g. */
struct allow_store {
	struct grant *g;
	size_t n;
	struct grant_mode mode; /* its mode and learned lines, kept across an edit */
};

/* Create STATE if needed and take the store lock. Returns the lock fd or -1 after printing. */
int allow_store_lock(const struct config *c);

/*
 * Load the store. A missing file is an empty store. Returns 0, or -1 after
 * printing why (unreadable, or damaged: then nothing may rewrite it).
 */
int allow_store_load(const struct config *c, struct allow_store *s);

/*
 * Replace the store with s (its grants and mode): a temporary file beside it, fsync,
 * rename, fsync of the directory. Returns 0 or -1 after printing.
 */
int allow_store_save(const struct config *c, const struct allow_store *s);

/*
 * Drop expired once grants and (when like is not NULL) the grant that is
 * like (grant_same: its pattern and scopes), counted in *removed (may be NULL).
 */
void allow_store_prune(struct allow_store *s, const struct grant *like, time_t now,
		       size_t *removed);

/* Append g to s. Returns 0 or -1 after printing. */
int allow_store_append(struct allow_store *s, const struct grant *g);

/* allow_grant.c: a grant, from its words to the store (calls only allow_store.c) */

#define ALLOW_PATTERN_MAX (HOST_NAME_MAX_LEN + 24) /* "*.NAME:PORT tunnel" */

/* Print "allow: MESSAGE" and the synopsis to stderr. Returns EXIT_USAGE. */
int allow_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Parse a GRANT argument into g. Returns 0 or -1 after printing why. */
int allow_pattern(const char *s, struct grant *g);

/* A --level argument. Returns 0, or -1 when it is none of once, session, permanent. */
int allow_level_parse(const char *s, enum grant_level *level);

/* A --ttl argument for level into *ttl seconds. Returns 0, or EXIT_USAGE after printing why. */
int allow_ttl_parse(const char *s, enum grant_level level, long long *ttl);

/*
 * Store g (its pattern and scopes) at level, replacing the same grant:
 * once for ttl seconds, session for the running proxy, or permanent; print
 * what was done on out (errors and notes on stderr). Returns 0 or -1 after printing why.
 */
int allow_grant(FILE *out, const struct config *c, struct grant *g, enum grant_level level,
		long long ttl);

/* SECONDS with an optional s, m, h or d suffix, 1 s to 366 days. Returns 0 or -1. */
int allow_duration_parse(const char *s, long long *out);
/* "1m52s", "3h4m", "2d1h" for a positive number of seconds, into buf; returns buf. */
char *allow_duration_format(long long secs, char *buf, size_t size);

/* g's pattern as the user types it, with " tunnel" for a tunnel grant, into buf; returns buf. */
char *allow_grant_label(const struct grant *g, char *buf, size_t size);
/* " for A,B" when g has scopes, into buf; "" otherwise. Returns buf. */
char *allow_grant_scopes_text(const struct grant *g, char *buf, size_t size);
/*
 * g's budget as "max-up=N max-requests=N per=DURATION" (those it has; "-"
 * none) into buf, each principal's. Returns buf.
 */
char *allow_grant_budget_text(const struct grant *g, char *buf, size_t size);

/*
 * A run's grant (`sluice run --allow`): pattern at level session for the
 * proxy run `run`, added only when no live grant of that pattern is stored
 * or in the config, so an operator's grant is never replaced. Returns 1
 * added, 0 already granted, -1 after printing why.
 */
int allow_session_add(const struct config *c, const char *pattern, const char *run);

/* The session grant of pattern for run removed, if still stored. Returns 0 or -1 after printing. */
int allow_session_drop(const struct config *c, const char *pattern, const char *run);

/* allow_approve.c: `sluice allow approve ID` */
int allow_approve(int argc, char **argv);

/*
 * The grant a refusal's row asked for, into g (no scope): its host and
 * port, bare for CONNECT, https and wss to 443 and for plain http and ws to
 * 80, else host:port; and the principal that asked, as a scope word, into
 * who: the row's as= when it has one, else SRC@NET, else "" (no stamp).
 * Returns 0, or -1 with *why (static text) and nothing to grant.
 */
int allow_row_grant(json_t *row, struct grant *g, char *who, size_t size, const char **why);

/* allow_log.c: the network log's files, read whole */

/* The network log's file k (0: the log itself, k: its k-th rotation) into path. */
void allow_log_path(const struct config *c, unsigned k, char *path, size_t size);

/*
 * All of the log's file k (opened as `sluice log` opens it) into *buf
 * (free it) and *len. Returns 1 read, 0 missing, -1 after printing why.
 */
int allow_log_read(const struct config *c, unsigned k, char **buf, size_t *len);

/* allow_learn.c: `sluice allow enforce [on|off|learn]`, `sluice allow learn` */
int allow_enforce(int argc, char **argv);
int allow_learn(int argc, char **argv);

/* build_token.c */
int cmd_build_token(int argc, char **argv);

/* log.c, log_table.c */
int cmd_log(int argc, char **argv);

/*
 * The principal a network row's connection was judged as, beyond its
 * address: the row's build (a build token's build:NAME) over its as=; NULL
 * for neither.
 */
const char *log_row_as(json_t *row);

/* log_reader.c: a log file read line by line and followed (log -f, watch) */
struct log_reader;

/* One complete line of r's file (len bytes, no newline); arg is the reader's. */
typedef void (*log_line_fn)(void *arg, const struct log_reader *r, const char *s, size_t len);

struct log_reader {
	const char *path;
	uid_t owner;     /* who besides root and us may own the log (the proxy's user) */
	const char *why; /* the last open's refusal, or NULL */
	int fd;          /* -1: not open (missing) */
	dev_t dev;
	ino_t ino;
	off_t off;       /* bytes consumed from fd */
	char *buf;       /* partial line carried between reads */
	size_t len;      /* bytes in buf */
	size_t cap;      /* buf size */
	size_t line;     /* lines completed in this file */
	bool skipping;   /* inside an over-long line: drop bytes to its newline */
	log_line_fn line_fn;
	void *arg;
};

/* r for path, not yet open; each line goes to fn(arg, ...). */
void log_reader_init(struct log_reader *r, const char *path, uid_t owner, log_line_fn fn,
		     void *arg);

/* Open r's path from its start. Returns 0, or -1 with errno (and r->why when refused). */
int log_reader_open(struct log_reader *r);

/* Read r to its current end, each complete line to the callback. Returns 0 or -1 with errno. */
int log_reader_drain(struct log_reader *r);

/* The end of a file that will not grow: a last line without its newline is still a row. */
void log_reader_finish(struct log_reader *r);

/*
 * One step of following, after a pause: open the file if it was missing,
 * on rotation drain and finish the old file and open the new one, on
 * truncation start over. Returns 0, or -1 with errno.
 */
int log_reader_poll(struct log_reader *r);
void log_reader_release(struct log_reader *r);

/* The engine snapshots and what their file looked like when read. */
struct log_snaps {
	char path[PATH_MAX];
	struct snapshots all;
	struct stat st; /* ino, size, mtime when read; st_ino 0: no file */
};

/*
 * sn (zeroed) for STATE/engine.jsonl, read; damaged lines are reported on
 * stderr after prefix and skipped. Returns 0, or -1 after printing why.
 */
int log_snaps_init(struct log_snaps *sn, const struct config *c, const char *prefix);

/* Read the snapshots again if their file changed since. Returns whether it did. */
bool log_snaps_refresh(struct log_snaps *sn, const char *prefix);

#define LOG_WHO_MAX 300 /* a principal's label */

/* What differs between the network log's rows and the DNS log's (log_table.c). */
struct log_rows {
	const char *host_key; /* the key --host matches */
	const char *kind;     /* every row's "kind" is this (else reported, skipped); NULL: any */
	bool principals;      /* named from the engine snapshots; --json adds "principal" */
	void (*header)(void);
	void (*row)(json_t *row, const struct principal *p); /* one table line */
};

extern const struct log_rows log_network_rows, log_dns_rows;

/*
 * One table cell of width columns: what a terminal would act on or hide
 * shown as an escape (utf8_display), cut with "..." at the end, padded
 * and followed by two spaces (last: a newline instead).
 */
#define LOG_CELL_MAX 4096 /* bytes of a cell shown */
/* A JSON text to stdout, what a terminal would act on or hide escaped (utf8_json_unhide). */
void log_put_json(const char *s, size_t len);
void log_put_cell(const char *s, int width, bool last);

/* "11-30 04:01:02" in local time from a log ts, in buf; else ts itself. */
const char *log_time_cell(const char *ts, char *buf, size_t size);

/*
 * Whether row is a suppression row (kind "suppressed"); then "N rows
 * suppressed" into what and its reasons ("too-many-streams 5800, ...") into why.
 */
/*
 * Whether row is one exchange's own row (kind http, https, ws, wss or
 * tunnel): what request counts, learn and refusal views count. Rows of
 * other kinds (suppressed, a run's start and end, the run's self-check
 * probe, a long exchange's open or progress rows) are not exchanges.
 */
bool log_row_is_exchange(json_t *row);
/*
 * Whether row is a quiet refusal (reason quiet: an agent profile's
 * telemetry, refused on purpose, no refusal id), or a suppression row
 * that counts only those (the proxy gives them a row budget of their own,
 * so such a row never counts another reason): logged, and left out of
 * every count of refusals the operator must act on (--refused, --by-*,
 * watch's marks; learn reads only observe rows, which it never is).
 */
bool log_row_is_quiet(json_t *row);
/*
 * Whether row is a long exchange's open or progress row (kind "open" or
 * "progress"); then "ws open for 2.0 s: 11 bytes up, 7 down so far" into what.
 */
bool log_row_long(json_t *row, char *what, size_t size);
bool log_row_suppressed(json_t *row, char *what, size_t wsize, char *why, size_t ysize);
/*
 * A row's host and port as host_port_format writes them, the port as the
 * row's own text (a cell's "-" too, any number the row holds): "[::1]:443",
 * "a.test:-"; port NULL: the host alone. Cut short to fit out[0..size).
 */
void log_host_port(char *out, size_t size, const char *host, const char *port);

/* p as the "principal" object of --json output (a new reference), or NULL. */
json_t *log_principal_json(const struct principal *p);

/* log_verify.c: `log verify [FILE...]`, argv[0] is "verify"; returns the exit status */
int log_verify_cmd(int argc, char **argv);

/* logview.c: the views that group rows instead of listing them */
enum logview_kind {
	LOGVIEW_BY_HOST, /* per host, per principal: allowed / refused / observed, last time */
	LOGVIEW_REFUSED, /* per principal, per host: count, last reason and time, grant hint */
	LOGVIEW_DNS_REFUSED, /* DNS rows, per name: count, last reason and time, grant hint */
	LOGVIEW_BY_RULE, /* rows an inject rule was applied to, per rule, per principal: count,
			    first and last time */
	LOGVIEW_BY_WHO,  /* per principal, per host (as a grant names it): allowed / refused /
			    observed, last time */
};

/*
 * A new empty view (logview_free frees it), or NULL when out of memory.
 * quiet: count the quiet rows too (log_row_is_quiet; `sluice log --all`).
 */
struct logview *logview_new(enum logview_kind kind, bool quiet);

/*
 * Count one row (an object) whose principal is p (NULL for a DNS row, the
 * rows of LOGVIEW_DNS_REFUSED). Returns 0 or -1 (out of memory).
 */
int logview_add(struct logview *v, json_t *row, const struct principal *p);

/* Print the view, sorted, as a table or as JSON lines. */
void logview_print(const struct logview *v, bool json);

void logview_free(struct logview *v);

/* watch.c: `sluice watch`, a live view of the network log on a terminal */
int cmd_watch(int argc, char **argv);

/* watch_term.c: its terminal (raw input, the alternate screen, signals) */
enum watch_key { /* past the bytes a key sends as itself */
	WATCH_KEY_NONE = 0x100, /* a sequence we do not use */
	WATCH_KEY_UP,
	WATCH_KEY_DOWN,
	WATCH_KEY_PGUP,
	WATCH_KEY_PGDN,
	WATCH_KEY_HOME,
	WATCH_KEY_END,
	WATCH_KEY_ESC,
};

/*
 * Raw input, the alternate screen, the cursor hidden; SIGINT, SIGTERM,
 * SIGHUP and SIGQUIT set watch_term_quit, SIGWINCH watch_term_resized, a
 * crash restores first. Returns 0, or -1 after printing why (nothing changed).
 */
int watch_term_open(void);

/* Put the terminal back (again is harmless). Returns the signal that asked to quit, or 0. */
int watch_term_close(void);

/* The window's size into *rows, *cols. Returns 0, or -1 with 24x80 assumed. */
int watch_term_size(int *rows, int *cols);

bool watch_term_quit(void);
bool watch_term_resized(void); /* true once per SIGWINCH (clears it) */

/* stderr into a memory file while the screen is up (fd -1: not captured) */
struct watch_capture {
	int fd;     /* the memory file */
	int saved;  /* the real stderr */
	off_t seen; /* bytes of fd already taken */
};

/* Send stderr to a new memory file. Returns 0, or -1 with stderr as it was. */
int watch_capture_start(struct watch_capture *k);

/* stderr back where it was (none started: nothing). */
void watch_capture_end(struct watch_capture *k);

/* The last line written to stderr since the last look, into buf ("" when none). */
void watch_capture_take(struct watch_capture *k, char *buf, size_t size);

/* All of s to the terminal. Returns 0 or -1 (it is gone). */
int watch_term_write(const char *s, size_t len);

/*
 * Wait up to timeout_ms for input; its keys (bytes, or enum watch_key)
 * into keys[0..*nkeys), at most max. Returns 0 (maybe none: a signal or
 * the timeout), 1 when the terminal hung up, -1 on a read error.
 */
int watch_term_keys(int timeout_ms, int *keys, size_t max, size_t *nkeys);

/* engine.c */
int cmd_engine(int argc, char **argv);

/* podman.c: running the container engine's command, bounded */
#define PODMAN_ARGS_MAX 32

struct podman {
	const char *text;                /* the command as given, for messages */
	char *buf;                       /* owned copy of text, split in place */
	char *argv[PODMAN_ARGS_MAX + 1]; /* its words, NULL-ended */
	size_t argc;
};

/*
 * Split cmd on blanks (no shell) into pm; pm keeps pointing at cmd. Returns
 * 0, or -1 (no words, more than PODMAN_ARGS_MAX, out of memory); release
 * pm with podman_release either way.
 */
int podman_init(struct podman *pm, const char *cmd);
void podman_release(struct podman *pm);

/*
 * Start the command with args appended: stdin /dev/null, stdout into a new
 * *out_fd, stderr into a new *err_fd (err_fd NULL: ours), the default
 * signal mask, SIGKILL when we die. Returns its pid (the caller reaps it),
 * or -1 after printing why.
 */
pid_t podman_spawn(const struct podman *pm, const char *const *args, size_t nargs, int *out_fd,
		   int *err_fd);

/*
 * The engine's running (or paused) containers now, as a snapshot of net
 * stamped with the current time, into s (the caller releases it). Each run
 * is killed after 20 s and its output capped at 16 MiB. Returns 0, or -1
 * after printing why.
 */
int podman_snapshot(const struct podman *pm, const char *net, struct snapshot *s);

/* key.c */
int cmd_key(int argc, char **argv);

/* ca.c */
int cmd_ca(int argc, char **argv);

/*
 * The i-th variable `ca show` prints (NULL past the last), and whether it
 * names the bundle (else ca.crt alone): what a sandbox's CMD is given.
 */
const char *ca_env_var(size_t i, bool *bundle);

/* ports.c */
int cmd_ports(int argc, char **argv);

/*
 * The port base of project: its band in the registry, allocated there
 * first when it has none and allocate is set (as `sluice ports` would,
 * said on stderr); for project NULL, $SLUICE_PORT_BASE when set, else the
 * current directory's band. Returns 0 with *base, or -1 after printing why
 * (a bad override, no band, an unreadable registry).
 */
int ports_band_of(const char *project, bool allocate, unsigned *base);

/* wall.c */
int cmd_wall(int argc, char **argv);

/* wall_netns.c: enter the network namespace at path (--netns). Returns 0, or -1 after printing why. */
int wall_netns_enter(const char *path);

/* wall_nft.c: libnftables for `wall`, and its listings */
struct nft_ctx;

/* A libnftables context with output and errors buffered, or NULL after printing why. */
struct nft_ctx *wall_nft_open(void);

/*
 * Run one nft command (or batch) from cmd. Returns 0 with *out (out may be
 * NULL) a copy of nft's output the caller frees; or -1 with *errtext a copy
 * of nft's error text (caller frees; may be NULL when out of memory).
 */
int wall_nft_run(struct nft_ctx *nft, const char *cmd, char **out, char **errtext);

/* nft's multi-line error text, indented under our own diagnostic, to stderr. */
void wall_nft_put_error(const char *errtext);

/* "list table inet NAME": 0 with *out (caller frees), 1 when the table is absent, -1 after printing. */
int wall_nft_table_list(struct nft_ctx *nft, const char *table, char **out);

/*
 * Compare the listing apply recorded with the live one (both split in
 * place). Returns true when they match; else prints the first difference,
 * named by its chain (and a cgroup recreated under a rule), and returns false.
 */
bool wall_nft_same(const char *table, char *want_text, char *live_text);

/* wall_denied.c: `wall denied`, argv[0] is "denied"; returns the exit status */
int wall_denied_cmd(int argc, char **argv);

/* doctor.c */
int cmd_doctor(int argc, char **argv);

/* run_verb.c, run_agent.c (run.h: their parts) */
int cmd_run(int argc, char **argv);
int cmd_agents(int argc, char **argv);

/* verify.c */
int cmd_verify(int argc, char **argv);

/* install.c */
int cmd_install(int argc, char **argv);

/*
 * The Lima boot script `sluice install --sandbox-vm lima --project PROJECT`
 * renders now (PROJECT NULL: the current directory's band), from the
 * config in force, into a new *script (the caller frees it), and its
 * provision id (SHA-256 hex, what the guest records as "id HEX" in
 * /run/sluice/state/provision) into id. Returns 0, or -1 after printing why.
 */
int install_lima_script(const char *project, char **script, char id[UNITS_ID_HEX + 1]);

#endif
