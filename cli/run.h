/*
 * run.h: `sluice run`'s parts, and what they share. In layers, each file
 * calling only those below it: run_verb.c (the verb: arguments, the
 * order things are made in, waiting for CMD); run_up.c (the steps before
 * CMD: the daemons, grants, namespace, walls, forwarder, verify);
 * run_record.c (what a run made, recorded in STATE/runs/ID/record as it
 * is made, and taken down from there: by the run itself, or by a later
 * run or `sluice doctor --clean` when the run was killed); run_agent.c
 * (agent profiles handed over); run_sandbox.c (CMD's environment and
 * files); run_init.c (the sandbox's init: CMD's mounts and user);
 * run_socks.c (the machine's unix sockets, covered); run_filter.c (CMD's
 * seccomp filter); run_proc.c (processes: the daemons and tools it
 * starts, verify inside); run_note.c (what the proxy is told of the
 * run); run_principal.c (who the run is); run_trust.c (what its tools
 * trust).
 *
 * A run is a network namespace /run/netns/sluice-ID with only loopback
 * (and, with --image, the podman network sluice-ID's bridge): the
 * forwarder's listeners in it lead to the project's proxy and sluice-dns,
 * walls inside it refuse the rest, and CMD runs there as the sandbox user,
 * in a PID namespace of its own so nothing it started outlives it.
 */
#ifndef SLUICE_RUN_H
#define SLUICE_RUN_H

#include <stdbool.h>
#include <sys/types.h>

#include <limits.h>

#include "cli.h"
#include "grant.h"
#include "hmap.h"
#include "stamp.h"
#include "runnote.h"

#define EXIT_UNVERIFIED 3         /* the sandbox did not verify: CMD not started */
#define EXIT_RUN_FAILED 125       /* sluice run itself failed before CMD */

#define RUN_ID_LEN 12             /* hex digits */
#define RUN_NAME_MAX 32           /* "sluice-" ID */
#define RUN_PROCS_MAX 8
#define RUN_GRANTS_MAX 32
#define RUN_PATTERN_MAX (HOST_NAME_MAX_LEN + 16)
#define RUN_PODMAN_MAX 256
#define RUN_FWD_OFF 90            /* the forwarder in the sandbox: base+90, outside the proxy's 0..89 */
#define RUN_TRANSPARENT_OFF 91    /* its --transparent listener: 127.0.0.1:base+91 in the sandbox */

struct run_proc {
	pid_t pid;
	unsigned long long start; /* /proc/PID/stat's starttime: the same process, not a reused pid */
	char what[16];            /* "proxy", "dns", "forward", "engine", "cmd" */
};

struct run_grant {
	char pattern[RUN_PATTERN_MAX];
	char run[GRANT_RUN_ID_LEN + 1]; /* the proxy run it was added for */
};

/* What a run made, in the order it made it; taken down in the reverse order. */
struct run_record {
	char id[RUN_ID_LEN + 1];
	char name[RUN_NAME_MAX];  /* "sluice-ID": namespace, podman network, the stamps' net */
	pid_t supervisor;         /* the `sluice run` process */
	unsigned base;            /* the project's port band */
	bool netns;               /* /run/netns/NAME was made */
	bool walls;               /* walls applied there (their STATE/wall-* files) */
	struct run_proc procs[RUN_PROCS_MAX];
	size_t nprocs;
	struct run_grant grants[RUN_GRANTS_MAX];
	size_t ngrants;
	char podman[RUN_PODMAN_MAX]; /* the engine's command (--podman), for the two below */
	char network[RUN_NAME_MAX];  /* a podman network made, "" none */
	char container[RUN_NAME_MAX]; /* a container started, "" none */
};

#define RUN_ENV_MAX 64

/* The sandbox's user, resolved. */
struct run_user {
	char name[64];
	uid_t uid;
	gid_t gid;
	char home[256];
};


/* run_verb.c's options. */
struct run_opts {
	const char *project;      /* --project NAME (ports_name_valid), or NULL: the directory's */
	const char *name;         /* --name AGENT (ports_name_valid), or NULL */
	const char *allow[RUN_GRANTS_MAX];
	size_t nallow;
	const char *user;
	const char *env[RUN_ENV_MAX / 2];
	size_t nenv;
	const char *image;
	char **podman_opts; /* between --image IMAGE and -- */
	size_t npodman_opts;
	const char *podman;
	const char *agent; /* --agent PROFILE (run_agent.c) */
	char **cmd;
};

/* Everything the steps share. */
#define RUN_TRUST_MAX 8 /* bundle and keystore paths, together, that one run binds */

struct run {
	struct config *c;
	struct run_opts o;
	struct run_record r;
	struct run_user user;
	char self[PATH_MAX];    /* this program */
	char bindir[PATH_MAX];  /* where sluice-proxy, sluice-dns and sluice-forward are */
	char conf[PATH_MAX];    /* -c for the children, "" for the defaults */
	char dir[PATH_MAX];     /* STATE/runs/ID */
	char netns[64];         /* /run/netns/NAME */
	char proxy_run[GRANT_RUN_ID_LEN + 1];
	pid_t proxy_pid, dns_pid;  /* from their run files: told to reload after our grants */
	char proxy_up[128], dns_up[128]; /* the forwarder's upstreams */
	char gateway[64];       /* where the sandbox reaches the forwarder: 127.0.0.1, or the bridge's */
	char principal_src[64]; /* what every stamp of the run names as its source (run_principal) */
	char principal_as[STAMP_AS_MAX + 1]; /* and as its principal: project:NAME[/AGENT] */
	unsigned fwd_port;
	int lock_fd, log_fd;
	int out_fd;             /* the operator's stdout, CMD's alone: ours (fd 1) is stderr meanwhile */
	int users_fd;           /* STATE/runs/.users.lock, shared while we run (run_users_join) */
	int reaper_fd;          /* --image: run_reaper's; a byte there means "taken down" */
	char ca_volumes[2][PATH_MAX + 64]; /* --image: podman's -v for the CA's bundle and file */
	struct runnote note;    /* what the proxy is told of the run (run_note.c) */
	bool noted;             /* the note is in STATE/runnotes */
	struct config *agent;   /* --agent's profile, loaded */
	char agent_path[PATH_MAX + 80];
	/* --image: podman's -v for the run's trust over the image's own store (run_pub_make) */
	char trust_volumes[RUN_TRUST_MAX][PATH_MAX + 128];
	size_t ntrust_volumes;
};

/* run_agent.c: agent profiles and their hand-over (see there) */

/* NAME's profile (found on the search path; its file into path), or NULL after printing. */
struct config *agent_load(const char *name, char *path, size_t size);

/* Hand the profile and its keys over for this run, reload the daemons. Returns 0 or -1 after printing. */
int run_agent_begin(const struct run *x, const struct config *p, const char *path);

/* The run id's hand-over gone (if it had one); keys no run names removed. Returns 0 or -1. */
int run_agent_end(const struct config *c, const char *id);


/* run_up.c */

/*
 * The steps before CMD, in order (run_up.c), each recorded first. Returns
 * 0, EXIT_UNVERIFIED (said), 128+signal (one waits) or EXIT_RUN_FAILED.
 */
int run_up(struct run *x);

/* run_principal.c */

/*
 * Who the run is, to the proxy, chosen here alone: gw NULL, its principal
 * (project:NAME[/AGENT], NAME from --project or the current directory)
 * and source 127.0.0.1; gw the --image network's gateway, its source the
 * address after it. Returns 0, or -1 after printing.
 */
int run_principal(struct run *x, const struct sockaddr_storage *gw);

/*
 * The run's principal as a scope word (scope.h) into buf, which it
 * returns: project:NAME, or project:NAME/AGENT with --name (run_principal).
 */
const char *run_scope_word(const struct run *x, char *buf, size_t size);

/* run_trust.c */

/* The distribution's bundle files and Java keystores a run's trust goes over (NULL-ended). */
extern const char *const run_trust_bundles[];
extern const char *const run_trust_keystores[];

/*
 * The combined bundle at bundle_path (the certificate at ca_path, then
 * those of root's own bundle that read, the first of run_trust_bundles it
 * holds, links resolved inside root; as PEM written again) and a PKCS#12
 * truststore Java reads of the same certificates at keystore_path, both
 * 0644. root is "/" for the
 * machine. Returns 0 or -1 after printing.
 */
int run_trust_make(const char *root, const char *ca_path, const char *bundle_path,
		   const char *keystore_path);

/*
 * Which of paths root holds as regular files, into found (at most max,
 * each file once: two links to one file are one), links resolved inside
 * root; none: paths[0] alone, where the first tool looks. Returns the count.
 */
size_t run_trust_targets(const char *root, const char *const *paths, const char **found, size_t max);


/* run_sandbox.c */

/* The --podman command's words into argv (NULL-ended; words is their store). Returns the count. */
size_t run_podman_argv(const struct run *x, char *words, size_t wsize, char **argv, size_t max);

/*
 * CMD's whole environment into env (RUN_ENV_MAX + 1 slots, NULL-ended;
 * free with run_env_free): the proxy variables (both cases), the CA's as
 * `sluice ca show` names them (at ca_dir), for a process also PATH, who it
 * is and TERM, and each --env NAME (ours) or NAME=VALUE. Returns 0 or -1.
 */
int run_env_build(const struct run *x, const char *ca_dir, bool container, char **env);
void run_env_free(char **env);

/* CMD's /etc/hosts: the localhost lines, nothing else */
#define RUN_HOSTS "127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n"

/*
 * STATE/runs/ID/pub: resolv.conf (nameserver 127.0.0.1), hosts (RUN_HOSTS),
 * a copy of the CA's certificate, and (run_trust_make) ca-bundle.crt, the
 * machine's roots and the CA, and cacerts, the same as a Java keystore.
 * Without a CA (intercept off) only resolv.conf and hosts.
 */
int run_pub_make(struct run *x);

/*
 * STATE/sandbox/home, the sandbox user's home for this project's runs
 * (0700, the user's, its contents too; STATE/sandbox is root's, 0700),
 * into buf, and the user's home on the machine (where it is attached)
 * made when missing. Returns 0 or -1 after printing.
 */
int run_home_make(const struct run *x, char *buf, size_t size);

/* `podman run` for --image into argv (at most max), env passed with -e. Returns argv or NULL. */
char **run_image_argv(struct run *x, char **env, char *words, size_t wsize, char **argv,
		      size_t max);

/* run_note.c */

/*
 * The run's note for the proxy (STATE/runnotes/ID): its name, project,
 * command line, start, and a fresh nonce for verify's --probe. Returns 0
 * or -1 after printing.
 */
int run_note_begin(struct run *x);
/* verify is done: the nonce is taken out of the note (before CMD starts). */
void run_note_verified(struct run *x);
/*
 * The run ended with code: the note says so, the proxy is told (SIGHUP)
 * and given a bounded while to log the end row; then the note is removed.
 */
void run_note_end(struct run *x, int code);
/* Remove run id's note, if any (a run taken down by another). */
void run_note_remove(const struct config *c, const char *id);

/* run_record.c */

/* STATE/runs/ID (the run's directory) into buf. Returns 0 or -1 after printing. */
int run_dir(const struct config *c, const char *id, char *buf, size_t size);

/*
 * Make the run's directory and take its lock (held by the supervisor for
 * its life: a later run finds a killed one by the lock being free).
 * Returns the lock fd (O_CLOEXEC; close it in forked children that do not
 * exec), or -1 after printing.
 */
int run_record_begin(const struct config *c, const struct run_record *r);

/* Write the record as it stands (atomically). Returns 0 or -1 after printing. */
int run_record_save(const struct config *c, const struct run_record *r);

/*
 * Start argv[0] (a path) with argv, stdin /dev/null, stdout and stderr to
 * log_fd (-1: ours), nothing else open; SIGTERM when we die, unless
 * detach (a daemon: its own session, outliving us), through
 * run_proc_gated. Records it in r as what and saves the record before it
 * execs. Returns its pid, or -1 after printing.
 */
pid_t run_spawn(const struct config *c, struct run_record *r, const char *what,
		char *const argv[], bool detach, int log_fd);


/*
 * Join the project's runs: a shared lock on STATE/runs/.users.lock, held for
 * the run's life (while another run holds it, the grants a run added and
 * the daemons it started are kept for it). Returns the fd, or -1 after printing.
 */
int run_users_join(const struct config *c);

/*
 * Take down everything r records, in reverse: processes (SIGTERM, then
 * SIGKILL after 2 s; each only while it is the process recorded), the
 * container and network, the walls' state files, the namespace; then the
 * grants it added and the daemons it started, unless another run of the
 * project is live (users_fd: ours from run_users_join, or -1), in which
 * case they are handed over in STATE/runs/.shared to the last run out;
 * then the run's directory. Returns 0, or -1 when something could not be
 * removed (each named on stderr; the record then stays, for another try).
 */
int run_teardown(const struct config *c, struct run_record *r, int users_fd);

/*
 * Find runs in STATE/runs whose supervisor is gone (the lock is free) and
 * take them down. Prints one line per run cleaned. Returns how many, or -1
 * when one could not be taken down fully.
 */
int run_clean_stale(const struct config *c);

/* run_proc.c */

/* /proc/PID/stat's starttime, 0 when pid is gone (or unreadable). */
unsigned long long run_proc_start(pid_t pid);

/* Whether p is still the process recorded. */
bool run_proc_alive(const struct run_proc *p);

/*
 * SIGTERM p (when it is still the one recorded), wait up to grace_ms for it
 * to go (reaping it when it is our child), then SIGKILL. Returns 0 once it
 * is gone, -1 when it would not go.
 */
int run_proc_stop(const struct run_proc *p, int grace_ms);

/*
 * fork argv[0] (a path) with argv, stdin /dev/null, stdout and stderr to
 * log_fd (-1: ours), nothing else open; SIGTERM when we die, unless
 * detach (a daemon: its own session, outliving us). The child execs only
 * once a byte is written to *gate_fd (the pipe's other end, O_CLOEXEC: the
 * caller writes it, or closes it for no exec, and closes it either way).
 * Returns its pid, or -1 after printing.
 */
pid_t run_proc_gated(char *const argv[], bool detach, int log_fd, int *gate_fd);

/*
 * Run argv to its end (at most timeout_ms, then SIGKILL), output to log_fd
 * (-1: ours). Returns its exit status, 128 + signal when killed, or -1
 * after printing (could not start).
 */
int run_tool(char *const argv[], int log_fd, int timeout_ms);

/*
 * Run argv to its end like run_tool, its stdout into out (NUL-ended, cut
 * to size), stderr ours. Returns its exit status, or -1 after printing.
 */
int run_capture(char *const argv[], char *out, size_t size, int timeout_ms);

/* `sluice [-c CONF] ARGS...` (args[0..n)), the CLI's own verbs as a run_tool. */
int run_self_tool(const struct run *x, const char *const *args, size_t n, int log_fd);

/* In a child: the default signal mask (the supervisor blocks the ones it waits for). */
void run_child_signals(void);

/* setns into the network namespace at netns. Returns 0 or -1 after printing. */
int run_netns_enter(const char *netns);

/*
 * fork and exec argv (a PATH search) in netns with our stdio (the
 * operator's terminal) and close_fd closed: CMD under podman. SIGTERM when
 * we die. Returns the pid or -1 after printing.
 */
pid_t run_spawn_tty(char *const argv[], const char *netns, int close_fd);

/*
 * What the user may do with the directory at cwd on the machine (a child
 * that drops to it and tries): -1 not reach it, 0 enter it, 1 also write it.
 */
int run_cwd_access(const struct run_user *user, const char *cwd);

/* run_init.c */

/* What CMD is started with inside the sandbox. */
struct run_exec {
	const char *netns;     /* /run/netns/NAME */
	const char *pub_dir;   /* STATE/runs/ID/pub: resolv.conf, ca.crt, ca-bundle.crt */
	const struct run_user *user; /* NULL: stay root (--image: podman) */
	char *const *argv;     /* CMD */
	char *const *envp;     /* its whole environment */
	const char *cwd;       /* where it starts (else the user's home, else /); NULL: the user may not */
	bool cwd_writable;     /* the user may write cwd: it stays writable for CMD */
	const char *home_dir;  /* attached writable on the user's home (for sluice-sandbox the
				  project's, run_home_make), NULL none */
	int close_fd;          /* the record's lock, closed in the child (--image; the init closes all) */
	int alive_fd;          /* run_exec_start's own: the supervisor's liveness pipe */
};

/*
 * Start CMD in the sandbox: for a user, as PID 1's child in new PID, mount
 * and IPC namespaces (the machine read-only but for fresh world-writable
 * directories, home_dir on the user's home and a writable cwd;
 * /etc/resolv.conf and /run/sluice from pub_dir, a fresh /proc, /run and
 * devpts, the machine's unix sockets covered: run_socks.c), as that user
 * with no_new_privs; for NULL (podman) as root in
 * the namespace alone. Returns the pid we wait for (the PID namespace's init,
 * which exits with CMD's status), or -1 after printing.
 */
pid_t run_exec_start(const struct run_exec *x);

/*
 * A process that runs argv (podman rm of the run's container) if we die
 * without saying otherwise: write a byte to the fd returned (then close
 * it) once the container is taken down. A container that ignores SIGTERM
 * then does not outlive a SIGKILLed run. Returns the fd or -1 after printing.
 */
int run_reaper(char *const argv[]);

/*
 * `sluice verify` (cmd_verify with argv, argv[0] "verify") in a child
 * inside netns as user, its output into err_fd. Returns verify's exit
 * status, or -1 after printing.
 */
int run_verify(const char *netns, const struct run_user *user, int argc, char **argv, int err_fd,
	       int close_fd);


/* run_socks.c */

/* One of the machine's pathname unix sockets: its name, and the file it led to when listed. */
struct run_sock {
	size_t name; /* offset in run_socks.names */
	dev_t dev;
	ino_t ino;
};

/* The machine's pathname unix sockets, each name once (names: NUL-ended, one after another). */
struct run_socks {
	char *names;
	size_t len, cap; /* bytes */
	struct run_sock *socks;
	size_t n, socks_cap;
	size_t *slots; /* a hash set of names: index + 1 into socks, 0 for empty */
	size_t nslots;
	struct hmap_key key; /* the set's hash: SipHash (hmap.h) under it, drawn at the first name,
	                        since other runs bind the names */
};

/*
 * The name in one line of /proc/net/unix (len bytes, without its newline):
 * "ADDR: REFS PROTO FLAGS TYPE STATE INODE[ NAME]", six fields of hex
 * digits after the address, the inode padded with spaces. Returns the
 * name's length, *name pointing into line, for an absolute path; 0 for
 * none (unbound, abstract '@', relative, a NUL in it, the header, a line
 * not of that shape). Reads nothing past line[len - 1].
 */
size_t run_socks_line(const char *line, size_t len, const char **name);

/*
 * Add name (len bytes) to s when it leads to a socket here (lstat) and is
 * not in s already. Returns 0, or -1 after printing (over RUN_SOCKS_MAX
 * names, or out of memory). s starts zeroed.
 */
int run_socks_add(struct run_socks *s, const char *name, size_t len);

#define RUN_SOCKS_MAX (1u << 23) /* names: far more than the machine's open files allow bound at once */

/*
 * List the sockets bound to an absolute path in every network namespace
 * the machine's /proc (still mounted) shows a process or a thread in, and
 * those named in /run/netns (entered: leaves the caller in one of them, or
 * where it was), keeping each name once, and only when it leads to a
 * socket here. For the sandbox's init, as root. Returns 0 or -1 after
 * printing; free s with run_socks_release.
 */
int run_socks_scan(struct run_socks *s);

/*
 * Bind an empty file (mode 0, read-only) over each listed name that still
 * leads to a socket in this mount namespace: by a path without symbolic
 * links, or through them only to the very file listed. Returns 0, or -1
 * after printing (one could not be covered: CMD must not start).
 */
int run_socks_cover(const struct run_socks *s);

void run_socks_release(struct run_socks *s);


/* run_filter.c */

struct sock_filter;

#define RUN_FILTER_MAX 64 /* instructions */

/*
 * CMD's seccomp program (see run_filter.c for what it refuses) into out,
 * RUN_FILTER_MAX instructions. Returns its length, 0 for an architecture
 * it has none for.
 */
size_t run_filter_build(struct sock_filter *out);

/* Install it on this thread (no_new_privs set). Returns 0, or -1 after printing: CMD must not start. */
int run_filter_install(void);

#endif
