/*
 * log_verify.c: `sluice log verify [FILE...]`, checking a chained log.
 *
 * With log-chain on, every row of the network log ends in "prev", the
 * SHA-256 of the row before it (lib/netlog_chain.c). This reads the files
 * oldest first, in rotation order (FILE.3, FILE.2, FILE.1, FILE: without
 * arguments the config's log and its rotated files; given files are put in
 * that order, so a shell glob works), checks that every line is a JSON
 * object and that its prev is the hash of the line before it, and names the
 * first line where that fails. The first line of the oldest file is not
 * checked (its predecessor was rotated away, or it is the log's first row:
 * prev null). Rows cut from the newest end leave no trace a chain could
 * show. A line that is the start of a row cut short (what a write that
 * failed part way, on a full disk, leaves; the writer starts its next row on
 * a line of its own, with prev the hash of that part) holds when the next
 * row's prev hashes it; it is named, and nothing can tie it to the row
 * before it. A cut last line has nothing after it to vouch for it: it is
 * named too. Neither breaks the chain. The chain is not keyed: whoever rewrites a row and every row after
 * it makes a chain that holds. So a run that holds prints the last row's
 * hash, and --anchor HASH (such a hash, kept elsewhere) also requires a row
 * that still hashes to it: then nothing up to that row was rewritten. It
 * writes nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "digits.h"
#include "file.h"
#include "netlog.h"

#define VERIFY_LINE_MAX (1024 * 1024) /* a longer line is not a row the proxy wrote */
#define VERIFY_FILES_MAX 1024
#define READ_CHUNK 65536

struct vfile {
	char path[PATH_MAX];
	size_t group;      /* the index of the first file given with the same base */
	unsigned long gen; /* FILE.N: N; FILE: 0 */
	size_t given;      /* position on the command line */
};

/* Where the walk is: the last line stepped, for the messages. */
struct walk {
	struct netlog_chain chain;
	const char *first_path;
	uint64_t first_line;
	const char *last_path;
	uint64_t last_line;
	const char *cut_path; /* the first line cut short */
	uint64_t cut_line;
	const char *anchor; /* --anchor: a row must hash to it; NULL: none */
	bool anchored;      /* a row did */
	bool owned;         /* the config's files: opened as file_open_owned does, owner */
	uid_t owner;        /* the proxy's user, who may own them */
	char *line;         /* VERIFY_LINE_MAX + 1 */
};

/* "x.log.3" is generation 3 of "x.log"; anything else is generation 0 of itself. */
static void split_gen(const char *path, size_t *base_len, unsigned long *gen)
{
	size_t len = strlen(path), i = len;
	uint64_t g;

	*base_len = len;
	*gen = 0;
	while (i > 0 && path[i - 1] >= '0' && path[i - 1] <= '9')
		i--;
	/* ".N": one to six digits, no leading zero */
	if (i == len || i < 2 || path[i - 1] != '.' || path[i] == '0' || len - i > 6 ||
	    dec_parse(path + i, len - i, UINT64_MAX, &g) == -1)
		return;
	*base_len = i - 1;
	*gen = (unsigned long)g;
}

static int vfile_cmp(const void *a, const void *b)
{
	const struct vfile *x = a, *y = b;

	if (x->group != y->group)
		return x->group < y->group ? -1 : 1;
	if (x->gen != y->gen)
		return x->gen > y->gen ? -1 : 1; /* higher generations are older */
	return x->given < y->given ? -1 : x->given > y->given;
}

/* Put the given files in rotation order. Returns the count, or -1 after printing. */
static long order_files(char **paths, size_t n, struct vfile *out)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		size_t bl, bl2;
		unsigned long gen, gen2;
		bool dup = false;

		if (strlen(paths[i]) >= sizeof(out[0].path)) {
			fprintf(stderr, "log verify: %s: path too long\n", paths[i]);
			return -1;
		}
		for (size_t j = 0; j < k; j++)
			dup = dup || strcmp(out[j].path, paths[i]) == 0;
		if (dup)
			continue;
		split_gen(paths[i], &bl, &gen);
		out[k].group = k;
		for (size_t j = 0; j < k; j++) {
			split_gen(out[j].path, &bl2, &gen2);
			if (bl == bl2 && strncmp(out[j].path, paths[i], bl) == 0) {
				out[k].group = out[j].group;
				break;
			}
		}
		strcpy(out[k].path, paths[i]);
		out[k].gen = gen;
		out[k].given = k;
		k++;
	}
	qsort(out, k, sizeof(*out), vfile_cmp);
	return (long)k;
}

/* The config's log and the rotated files of it that exist, oldest first. */
static long config_files(struct vfile *out, struct walk *w)
{
	struct config *c = cli_config_load();
	size_t k = 0;

	if (c == NULL)
		return -1;
	w->owned = true;
	w->owner = cli_user_uid(c);
	for (unsigned i = c->log_keep; i >= 1; i--) {
		int n = snprintf(out[k].path, sizeof(out[k].path), "%s.%u", c->log_path, i);

		if (n > 0 && (size_t)n < sizeof(out[k].path) && access(out[k].path, F_OK) == 0)
			k++;
	}
	snprintf(out[k].path, sizeof(out[k].path), "%s", c->log_path);
	k++;
	config_free(c);
	return (long)k;
}

/* Print the break at path:line and return 1. */
static int broken(const struct walk *w, const char *path, uint64_t line, const char *why)
{
	printf("log verify: %s:%llu: the chain breaks: %s", path, (unsigned long long)line, why);
	if (w->last_path != NULL)
		printf(" (the row before: %s:%llu)", w->last_path, (unsigned long long)w->last_line);
	printf("\n");
	return 1;
}

/* One line: a JSON object whose prev (when it ends in one) the chain accepts. 0, or 1 broken. */
static int step_line(struct walk *w, const char *path, uint64_t lineno, const char *s, size_t len)
{
	char hex[NETLOG_PREV_HEX + 1];
	const char *why = NULL;
	json_error_t jerr;
	json_t *row = json_loadb(s, len, JSON_REJECT_DUPLICATES, &jerr);
	int r = netlog_chain_prev(s, len, hex);
	bool object = row != NULL && json_is_object(row), agrees = false;

	if (object) {
		json_t *p = json_object_get(row, "prev");

		agrees = r == 1 ? p != NULL && json_is_string(p) && strcmp(json_string_value(p), hex) == 0
		       : r == 0 ? p != NULL && json_is_null(p)
				: p == NULL;
	}
	json_decref(row);
	if (!object && len > 0 && s[0] == '{') {
		/* the start of a row, cut short: the next row vouches for it, or breaks */
		if (netlog_chain_step_cut(&w->chain, s, len) == NETLOG_CHAIN_CUT &&
		    w->cut_path == NULL) {
			w->cut_path = path;
			w->cut_line = lineno;
		}
	} else if (!agrees) {
		return broken(w, path, lineno, !object ? "not a JSON object: not a row"
						       : "its prev field is not the last, or not a hash");
	} else if (netlog_chain_step(&w->chain, s, len, &why) == NETLOG_CHAIN_BROKEN) {
		return broken(w, path, lineno, why);
	}
	if (w->first_path == NULL) {
		w->first_path = path;
		w->first_line = lineno;
	}
	if (w->anchor != NULL && strcmp(w->chain.last, w->anchor) == 0)
		w->anchored = true;
	w->last_path = path;
	w->last_line = lineno;
	return 0;
}

/* Walk one file. Returns 0, 1 broken (printed), or -1 unreadable (printed). */
static int walk_file(struct walk *w, const char *path)
{
	char chunk[READ_CHUNK];
	size_t len = 0;
	uint64_t lineno = 0;
	bool too_long = false;
	const char *why = NULL;
	int fd, ret = -1;

	/* files named on the command line are the operator's choice; the config's are in
	 * the proxy user's directory, where a planted link must not be followed */
	fd = w->owned ? file_open_owned(path, O_RDONLY, 0, w->owner, &why)
		      : open(path, O_RDONLY | O_CLOEXEC);
	if (fd == -1) {
		fprintf(stderr, "log verify: open %s: ", path);
		if (why != NULL)
			fputs(why, stderr);
		else
			cli_put_strerror(stderr, errno);
		fputc('\n', stderr);
		return -1;
	}
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof(chunk));

		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			fprintf(stderr, "log verify: read %s: ", path);
			cli_put_strerror(stderr, errno);
			fputc('\n', stderr);
			goto out_close_fd;
		}
		if (n == 0)
			break;
		for (size_t i = 0; i < (size_t)n; i++) {
			if (chunk[i] != '\n') {
				if (len == VERIFY_LINE_MAX)
					too_long = true;
				else
					w->line[len++] = chunk[i];
				continue;
			}
			lineno++;
			if (too_long) {
				ret = broken(w, path, lineno, "longer than 1 MiB: not a row sluice-proxy wrote");
				goto out_close_fd;
			}
			if (step_line(w, path, lineno, w->line, len) != 0) {
				ret = 1;
				goto out_close_fd;
			}
			len = 0;
		}
	}
	ret = 0;
	if (too_long)
		ret = broken(w, path, lineno + 1, "longer than 1 MiB: not a row sluice-proxy wrote");
	else if (len > 0)
		ret = step_line(w, path, lineno + 1, w->line, len); /* no newline: cut, or a whole row */
out_close_fd:
	close(fd);
	return ret;
}

int log_verify_cmd(int argc, char **argv)
{
	struct vfile *files;
	struct walk w;
	long n;
	int ret = EXIT_ERROR;

	const char *anchor = NULL;
	int first = 1;

	if (argc >= 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
		cli_usage(stdout, "log");
		return EXIT_OK;
	}
	if (argc >= 2 && strcmp(argv[1], "--anchor") == 0) {
		anchor = argc >= 3 ? argv[2] : "";
		if (strlen(anchor) != NETLOG_PREV_HEX ||
		    !hex_is_lower(anchor, NETLOG_PREV_HEX)) {
			fprintf(stderr, "log verify: bad --anchor \"%s\": a row's hash, 64 lower-case "
					"hex digits\n", anchor);
			cli_usage(stderr, "log");
			return EXIT_USAGE;
		}
		first = 3;
	}
	for (int i = first; i < argc; i++) {
		if (argv[i][0] == '-') {
			fprintf(stderr, "log verify: unknown option \"%s\"\n", argv[i]);
			cli_usage(stderr, "log");
			return EXIT_USAGE;
		}
	}
	if (argc - first > VERIFY_FILES_MAX) {
		fprintf(stderr, "log verify: more than %d files\n", VERIFY_FILES_MAX);
		return EXIT_USAGE;
	}
	files = calloc(VERIFY_FILES_MAX + 1, sizeof(*files));
	memset(&w, 0, sizeof(w));
	w.line = malloc(VERIFY_LINE_MAX + 1);
	if (files == NULL || w.line == NULL) {
		fprintf(stderr, "log verify: out of memory\n");
		goto out_free;
	}
	netlog_chain_init(&w.chain);
	w.anchor = anchor;
	n = argc > first ? order_files(argv + first, (size_t)(argc - first), files)
			 : config_files(files, &w);
	if (n <= 0)
		goto out_free;
	for (long i = 0; i < n; i++) {
		int r = walk_file(&w, files[i].path);

		if (r != 0)
			goto out_free; /* broken (1) or unreadable: both exit 1 */
	}
	if (w.chain.lines == 0) {
		printf("log verify: no rows to check\n");
	} else if (!w.chain.started) {
		printf("log verify: no row carries prev: this log is not chained (log-chain on)\n");
	} else if (anchor != NULL && !w.anchored) {
		printf("log verify: no row hashes to the anchor %s: the rows up to it were "
		       "rewritten, or it was rotated away\n", anchor);
	} else {
		printf("log verify: the chain holds: %llu rows, %s:%llu to %s:%llu; %s",
		       (unsigned long long)w.chain.chained, w.first_path,
		       (unsigned long long)w.first_line, w.last_path,
		       (unsigned long long)w.last_line,
		       w.chain.from_start ? "it starts at the log's first row"
					  : "its first row follows rows rotated away (not checked)");
		if (w.chain.unchained > 0)
			printf("; %llu rows before it carry no prev",
			       (unsigned long long)w.chain.unchained);
		if (w.chain.cut > (w.chain.last_cut ? 1u : 0u))
			printf("; rows cut short by a failed write: %llu (the first %s:%llu), each "
			       "vouched for by the row after it; whether rows right before one were "
			       "removed cannot be shown",
			       (unsigned long long)(w.chain.cut - (w.chain.last_cut ? 1 : 0)),
			       w.cut_path, (unsigned long long)w.cut_line);
		if (w.chain.last_cut)
			printf("; the last line, %s:%llu, is a row cut short (a failed write, or the "
			       "file was cut there): nothing after it vouches for it",
			       w.last_path, (unsigned long long)w.last_line);
		if (anchor != NULL)
			printf("; the anchor is in it");
		printf("; last row's hash %s\n", w.chain.last);
		ret = EXIT_OK;
	}
out_free:
	free(w.line);
	free(files);
	return ret;
}
