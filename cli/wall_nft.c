/*
 * wall_nft.c: talking to nftables for `sluice wall`, and reading its listings.
 *
 * A libnftables context with output and errors buffered (so nothing is
 * printed behind our back), one command or batch at a time, and the
 * comparison `status` makes between the listing apply recorded and the
 * live one. nft normalises what it is given, so its own listing is the only
 * fair reference; only "# handle N" comments and blanks are ignored.
 * Rendering rules is lib/wall.c's, choosing them cli/wall.c's.
 */
#include <nftables/libnftables.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

struct nft_ctx *wall_nft_open(void)
{
	struct nft_ctx *nft = nft_ctx_new(NFT_CTX_DEFAULT);

	if (nft == NULL) {
		fprintf(stderr, "wall: nft_ctx_new failed\n");
		return NULL;
	}
	/* no counters or quotas in a listing: they would differ on every status */
	nft_ctx_output_set_flags(nft, NFT_CTX_OUTPUT_STATELESS);
	if (nft_ctx_buffer_output(nft) != 0 || nft_ctx_buffer_error(nft) != 0) {
		fprintf(stderr, "wall: nft: cannot buffer output\n");
		nft_ctx_free(nft);
		return NULL;
	}
	return nft;
}

int wall_nft_run(struct nft_ctx *nft, const char *cmd, char **out, char **errtext)
{
	int rc = nft_run_cmd_from_buffer(nft, cmd);
	const char *o = nft_ctx_get_output_buffer(nft);
	const char *e = nft_ctx_get_error_buffer(nft);

	if (out != NULL)
		*out = NULL;
	if (errtext != NULL)
		*errtext = NULL;
	if (rc != 0) {
		if (errtext != NULL)
			*errtext = strdup(e != NULL ? e : "");
		return -1;
	}
	if (out != NULL)
		*out = strdup(o != NULL ? o : "");
	return 0;
}

void wall_nft_put_error(const char *errtext)
{
	const char *s = errtext != NULL ? errtext : "";

	while (*s != '\0') {
		const char *nl = strchr(s, '\n');
		size_t n = nl != NULL ? (size_t)(nl - s) : strlen(s);

		if (n > 0)
			fprintf(stderr, "  %.*s\n", (int)n, s);
		s += n + (nl != NULL);
	}
}

int wall_nft_table_list(struct nft_ctx *nft, const char *table, char **out)
{
	char cmd[128], *errtext;

	snprintf(cmd, sizeof(cmd), "list table inet %s", table);
	if (wall_nft_run(nft, cmd, out, &errtext) == 0) {
		if (*out == NULL) {
			fprintf(stderr, "wall: out of memory\n");
			return -1;
		}
		return 0;
	}
	if (errtext != NULL && strstr(errtext, "No such file or directory") != NULL) {
		free(errtext);
		return 1;
	}
	fprintf(stderr, "wall: list table inet %s failed:\n", table);
	wall_nft_put_error(errtext);
	free(errtext);
	return -1;
}

/*
 * Split a listing into normalised lines in place: "# handle N" cut off,
 * surrounding blanks trimmed, empty lines dropped. Returns the count (at
 * most max; more lines are ignored).
 */
static size_t listing_lines(char *text, char **lines, size_t max)
{
	size_t n = 0;
	char *s = text, *nl, *hash, *end;

	while (s != NULL && *s != '\0' && n < max) {
		nl = strchr(s, '\n');
		if (nl != NULL)
			*nl = '\0';
		hash = strstr(s, "# handle ");
		if (hash != NULL)
			*hash = '\0';
		while (*s == ' ' || *s == '\t')
			s++;
		end = s + strlen(s);
		while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
			*--end = '\0';
		if (*s != '\0')
			lines[n++] = s;
		s = nl != NULL ? nl + 1 : NULL;
	}
	return n;
}

#define LINES_MAX 4096

/*
 * Whether a listed rule's `socket cgroupv2` names a bare number: nft lists
 * the path of the cgroup the rule was loaded with while it exists, and its
 * id once it is gone (a cgroup made again at that path has a new id).
 */
static bool cgroup_gone(const char *line)
{
	const char *s = strstr(line, "socket cgroupv2 level ");

	if (s == NULL)
		return false;
	s += strlen("socket cgroupv2 level ");
	s += strspn(s, "0123456789");
	if (*s++ != ' ' || strspn(s, "0123456789") == 0)
		return false;
	s += strspn(s, "0123456789");
	return *s == ' ' || *s == '\0';
}

bool wall_nft_same(const char *table, char *want_text, char *live_text)
{
	static char *want[LINES_MAX], *live[LINES_MAX];
	size_t nw = listing_lines(want_text, want, LINES_MAX);
	size_t nl = listing_lines(live_text, live, LINES_MAX);
	const char *chain = NULL;
	size_t i, j;

	for (i = 0; i < nw && i < nl && strcmp(want[i], live[i]) == 0; i++)
		if (strncmp(want[i], "chain ", 6) == 0)
			chain = want[i] + 6;
	if (i == nw && i == nl)
		return true;
	fprintf(stderr, "wall: status: table inet %s differs from what apply loaded", table);
	if (chain != NULL)
		fprintf(stderr, " (in chain %.*s)", (int)strcspn(chain, " {"), chain);
	fputs(":\n", stderr);
	if (i < nw) {
		for (j = i; j < nl && strcmp(want[i], live[j]) != 0; j++)
			;
		if (j == nl) {
			fprintf(stderr, "  rule missing or changed: %s\n", want[i]);
			if (i < nl)
				fprintf(stderr, "  found instead: %s\n", live[i]);
			if (i < nl && cgroup_gone(live[i]))
				fprintf(stderr, "  the cgroup this rule names was removed or recreated since "
						"apply: the rule matches nothing now (apply again)\n");
			return false;
		}
	}
	fprintf(stderr, "  rule added: %s\n", live[i]);
	return false;
}
