/*
 * proxy.h: sluice-proxy's table of contents.
 *
 * The process (this header): main.c, reload.c and the services below the
 * connections, which know none. The connections and the request path have
 * their own headers: conn.h (the types), session.h (a connection and its
 * engine), request.h (everything above it).
 *
 * main.c     arguments, config, listeners, signals, the loop
 * reload.c   the grant store and config: watched, reloaded, what is in flight re-judged
 * resolve.c  c-ares driven by the loop; never a blocking lookup
 * refuse.c   refusal responses: status, Proxy-Status, a one-line body
 * replay.c   the stamp replay window, mapped from STATE/stamp.seen
 * budget.c   a grant's budgets, counted per principal (charge.c spends them)
 * limit.c    connections counted per client address or stamped principal
 * lograte.c  a refusal-row budget per principal: past it, rows counted, not written
 * sandbox.c  the runs `sluice run` told of: their run and probe rows
 * priv.c     the drop from root to `user NAME`, and what that user must reach
 * stats.c    its metrics (lib/metrics.h): counted on rows, handshakes, tokens, reloads
 * tls.c, token.c, inject.c: their process-wide parts (the CA and contexts,
 *            the token caches, the rules' sources)
 */
#ifndef SLUICE_PROXY_H
#define SLUICE_PROXY_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "buf.h"
#include "buildtok.h"
#include "config.h"
#include "file.h"
#include "http.h"
#include "list.h"
#include "loop.h"
#include "netlog.h"
#include "policy.h"
#include "relay.h"
#include "sock.h"
#include "sockaddr.h"
#include "stamp.h"
#include "store.h"

#define HEAD_MAX (32 * 1024)  /* a request head, all lines */
#define HEADERS_MAX HTTP_HEADERS_MAX /* header lines in one head (http.h) */
#define RESP_HEAD_MAX (64 * 1024)
#define IOBUF_MAX (64 * 1024) /* body and relay buffers */
#define DIAL_MAX 8            /* resolved addresses tried in order */
#define RESOLVE_MAX 64        /* answers judged; a name with more is refused */

struct session;
struct resolve_query;
struct limits;
struct limit_entry;
struct metrics_server;

struct listener {
	struct loop_io io;
	struct sockaddr_storage addr;
};

/* The process: one of these, owned by main. */
struct proxy {
	struct loop *loop;
	struct config *config;
	char config_path[PATH_MAX];
	struct policy *policy;
	struct netlog *netlog;
	char run_id[GRANT_RUN_ID_LEN + 1];
	int run_fd; /* STATE/proxy.run, share-locked while we run; -1 none */
	struct listener listeners[CONFIG_MAX_LISTEN];
	size_t nlisteners;
	struct list sessions; /* live sessions (struct session's link), the newest first */
	struct list dead;     /* closed, freed before the next sleep */
	unsigned nsessions;
	struct limits *limits; /* limit.c: connections per client */
	struct budgets *budgets; /* budget.c: what each principal spent of each grant's budget */
	struct lograte *lograte; /* lograte.c: each principal's refusal rows a second */
	uint64_t next_conn_id;
	struct loop_io sig_io;
	struct loop_timer watch_timer;
	struct watched_file watch_config;
	struct watched_file watch_store;
	struct watched_file watch_keys;     /* STATE/stamp.key */
	struct watched_file watch_buildtoks; /* STATE/build-tokens */
	struct buildtok *buildtoks;         /* build-token's (lib/buildtok.h); owned */
	size_t nbuildtoks;
	struct stamp_key keys[STAMP_KEYS_MAX];
	size_t nkeys;                       /* 0: no stamp verifies */
	struct stamp_replay *replay;        /* boot ids and sequences seen: STATE/stamp.seen, mapped */
	void *resolver; /* resolve.c's state */
	struct tls *tls; /* tls.c's state; NULL: intercept off */
	struct token *tokens; /* token.c: minted secrets, one per command source */
	bool trace;           /* -d: every session's state transitions on stderr */
	struct metrics_server *metrics; /* stats.c: GET /metrics, NULL when off */
};

/* budget.c */
struct budget_entry;
int budget_init(struct proxy *px);
void budget_release(struct proxy *px);
/*
 * A request grant g allowed for principal who (of network net, the
 * stamp's; NULL for none), its head bytes going up now and its declared
 * body after (0 unknown or none): counted, the head charged against max-up,
 * unless one of g's budgets is spent for who, head and body would pass it,
 * or who is new and net holds its share of the counts. Returns 0 with *e its count (give it back
 * with budget_put), or 1 refused with the one line saying why (the budget,
 * when it comes back, the command that raises it) in why.
 */
int budget_take(struct proxy *px, const struct grant *g, const char *who, const char *net,
		uint64_t head, uint64_t body, struct budget_entry **e, char *why, size_t size);
/* n more bytes up through e. Returns false once its max-up is passed. */
bool budget_spend(struct budget_entry *e, uint64_t n);
/* Bytes e may still send up; UINT64_MAX: no max-up. */
uint64_t budget_room(const struct budget_entry *e);
/* The line a refusal or a close past e's budget carries (up: max-up, else max-requests). */
void budget_words(const struct budget_entry *e, bool up, char *out, size_t size);
void budget_put(struct budget_entry *e); /* e may be NULL */

/* session.c: close each connection whose build token was removed or expired (row: build-token) */
void session_builds_check(struct proxy *px);

/* lograte.c */
int lograte_init(struct proxy *px);
/* Write every suppression row still due (the proxy is stopping) and free it all. */
void lograte_release(struct proxy *px);
/*
 * Whether row r of the principal named key is to be written: false when it
 * is a refusal that moved no byte and key's budget is spent (it is counted,
 * and a suppression row tells it within a second). key: the principal
 * (session_spender's, or lograte_unattributed's).
 */
bool lograte_admit(struct proxy *px, const char *key, const struct netlog_row *r);
/* The key of an unattributed client's rows: "unattributed UNIT" (sockaddr_unit). */
const char *lograte_unattributed(const char *client, char *out, size_t size);

/* limit.c */
int limit_init(struct proxy *px);
void limit_release(struct proxy *px);
/*
 * Count s for key (leaving what it was counted for), unless key already
 * holds config_per_client connections. Returns its entry (s->limit; s
 * leaves it with limit_put or session_close), or NULL when at the cap or
 * out of memory, s counted where it was: then free one (limit_idle_oldest)
 * or refuse.
 */
struct limit_entry *limit_take(struct proxy *px, const char *key, struct session *s);
/* The oldest of key's connections that is idle (as idle says), NULL when none is. */
struct session *limit_idle_oldest(struct proxy *px, const char *key,
				  bool (*idle)(const struct session *s));
void limit_put(struct proxy *px, struct session *s); /* s counted nowhere: nothing */

/* stats.c: families made, and the listener opened when metrics-listen is given */
int stats_init(struct proxy *px); /* 0, or -1 after printing */
void stats_release(struct proxy *px);
void stats_row(const struct netlog_row *r); /* a row written: its request and bytes */
void stats_handshake(bool upstream, bool ok);
void stats_leaf(bool minted);
void stats_token(bool ok);
void stats_reload(bool ok);

/* token.c */
void token_release_all(struct proxy *px);

/* inject.c: at start, each inject rule whose env or file source cannot be had, on stderr */
void inject_warn_sources(const struct proxy *px);

/* tls.c */
/* With intercept on: the CA, leaf cache and contexts. Returns 0, or -1 said on stderr. */
int tls_init(struct proxy *px);
/*
 * Config c is to replace the running one at a reload: when it turns
 * intercept on in a proxy that has no TLS set up (it started with intercept
 * off), set it up now from c (the CA read again: as the proxy's user, if
 * it dropped root). Returns 0, or -1 said on stderr: the reload keeps the
 * running config. Turning it off needs nothing here: tls_active.
 */
int tls_reload(struct proxy *px, const struct config *c);
/* Whether new CONNECTs are intercepted: TLS set up and the running config's intercept on. */
bool tls_active(const struct proxy *px);
void tls_release(struct proxy *px);
bool tls_intercepts(const struct proxy *px, const struct host *h, uint16_t port);

/* priv.c */
/*
 * Without `user`: a note on stderr when running as root; 0. With it: switch
 * to the user and its groups, no capability in any set, no_new_privs, check
 * that root cannot be had back and that the user can read the config, the
 * grant store and the stamp keys and write the log's directory, but cannot
 * write the state directory, which must not be the log's. Returns 0, or -1
 * after printing why (the proxy must not start).
 */
int priv_drop(struct proxy *px);
/* The uid of `user` into *uid, FILE_NO_UID without one. Returns 0 or -1 after printing. */
int priv_owner(const struct config *c, uid_t *uid);

/* replay.c */
/*
 * STATE/NAME mapped shared, size bytes that begin with a state_head: the
 * file as it was when its header names magic and size, else emptied (and
 * stderr says why, naming it as what). Its blocks are allocated first, so
 * a full disk fails here rather than as SIGBUS on a write through the map.
 * NULL when it cannot be opened or allocated (stderr says why).
 */
struct state_head {
	char magic[32];
	uint64_t size; /* the whole file's, when written */
};
void *state_map(const struct proxy *px, const char *name, const char *magic, size_t size,
		const char *what);
/* state_map in two steps: STATE/NAME opened (its path into path), later mapped */
int state_open(const struct proxy *px, const char *name, char *path, size_t size);
void *state_map_fd(int fd, const char *path, const char *magic, size_t size, const char *what);
int replay_open(struct proxy *px);
void replay_close(struct proxy *px);

/*
 * session.c: fd is a new client connection (TCP_NODELAY inherited from
 * the listener); it speaks codec from state st on (HTTP/1.1's, its head).
 */
struct codec;
struct state;
void session_accept(struct proxy *px, int fd, const struct sockaddr_storage *peer,
		    const struct codec *codec, const struct state *st);
void session_close(struct session *s, const char *why);
void session_free_dead(struct proxy *px);

/* resolve.c */
typedef void (*resolve_fn)(void *arg, int status, const struct sockaddr_storage *addrs,
			   size_t n, const char *error);
int resolve_init(struct proxy *px);
void resolve_release(struct proxy *px);
/*
 * Start a lookup of name. cb runs exactly once, later or before this
 * returns (hosts file, errors); the handle is NULL when it already ran.
 */
struct resolve_query *resolve_start(struct proxy *px, const char *name, resolve_fn cb,
				    void *arg);
/* The callback will not run after this. */
void resolve_cancel(struct resolve_query *q);

/* sandbox.c: the runs `sluice run` told us of (STATE/runnotes), their "run" and "probe" rows */
struct exchange;
struct stamp;
/* Adopt the notes there now (no start rows: those runs began before us). */
void sandbox_init(struct proxy *px);
/* Read the notes: a start row for each new run, an end row for each that ended. */
void sandbox_scan(struct proxy *px);
/*
 * Whether x, refused, is the self-check of the run its stamp st names:
 * its path carries the nonce of the run's note, used once. Writes the
 * run's start row first when it is not written yet.
 */
bool sandbox_probe(struct proxy *px, const struct exchange *x, const struct stamp *st);
/* An exchange's row r written: counted to its run (its net), for the run's end row. */
void sandbox_count(const struct netlog_row *r);

/* reload.c */
int reload_init(struct proxy *px);
void reload_now(struct proxy *px, const char *why);
void reload_release(struct proxy *px);

/* refuse.c */
#define REFUSAL_ID_LEN 16 /* lower-case hex: 64 random bits */

struct refusal {
	int status;
	const char *reason;       /* log reason code */
	const char *proxy_status; /* RFC 9209 error type */
	char detail[320];         /* the one line after "sluice: " */
	char id[REFUSAL_ID_LEN + 1]; /* a grantable refusal's id (`sluice allow approve`); "" none */
};
/*
 * A fresh refusal id into out (REFUSAL_ID_LEN + 1 bytes): 64 bits from the
 * kernel's CSPRNG (getrandom, else OpenSSL's), so a client that sees its
 * own refusal's id learns nothing of another's. Returns 0, or -1 with out
 * "" when no random bytes could be had.
 */
int refuse_id(char *out);
/* Append a complete refusal response to out. Returns 0 or -1 (no room). */
int refuse_write(struct buf *out, const struct refusal *r);
/* r's response onto out: its status, Proxy-Status ps and body[0..blen) (none to a HEAD). */
int refuse_response(struct buf *out, const struct refusal *r, const char *ps, const char *body,
		    int blen, bool head);
/*
 * Its Proxy-Status value and its body (HTTP/2 frames them itself), into
 * buffers of REFUSE_STATUS_MAX and REFUSE_BODY_MAX. Returns the body's length.
 */
#define REFUSE_STATUS_MAX 1280
#define REFUSE_BODY_MAX 336
int refuse_texts(const struct refusal *r, char *status, size_t ssize, char *body, size_t bsize);
const char *refuse_status_text(int status);

#endif
