/*
 * netlog_chain.c: the hash chain of a network log written with log-chain on.
 *
 * Every row ends in "prev": the SHA-256, in lower-case hex, of the exact
 * bytes of the line before it (its newline not included), or null when no
 * line came before it. The writer (netlog.c) keeps the hash of its last row
 * and carries it across rotation; at start it hashes the last line already
 * in the file. The checker below walks lines in order and says where the
 * chain breaks. It proves that no row between the chain's first and last
 * was removed, changed or inserted; it cannot see rows cut from either end
 * (rotation drops the oldest ones by design), and it parses no JSON: the
 * caller may, and says which lines are cut short (netlog_chain_step_cut).
 */
#include "netlog.h"

#include "digits.h"
#include "file.h"
#include "hex.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TAIL_CHUNK 4096

static const char prev_key[] = ",\"prev\":";

void netlog_chain_hash(const char *line, size_t len, char out[NETLOG_PREV_HEX + 1])
{
	unsigned char md[SHA256_DIGEST_LENGTH];

	SHA256((const unsigned char *)line, len, md);
	hex_encode(md, sizeof(md), out);
}

int netlog_chain_prev(const char *row, size_t len, char out[NETLOG_PREV_HEX + 1])
{
	size_t klen = sizeof(prev_key) - 1;
	size_t hexed = klen + 1 + NETLOG_PREV_HEX + 2; /* ,"prev":"HEX"} */
	size_t nulled = klen + 5;                       /* ,"prev":null} */

	if (len >= nulled && memcmp(row + len - nulled, prev_key, klen) == 0 &&
	    memcmp(row + len - 5, "null}", 5) == 0)
		return 0;
	if (len < hexed || memcmp(row + len - hexed, prev_key, klen) != 0 ||
	    row[len - hexed + klen] != '"' || memcmp(row + len - 2, "\"}", 2) != 0)
		return -1;
	if (!hex_is_lower(row + len - hexed + klen + 1, NETLOG_PREV_HEX))
		return -1;
	memcpy(out, row + len - hexed + klen + 1, NETLOG_PREV_HEX);
	out[NETLOG_PREV_HEX] = '\0';
	return 1;
}

int netlog_chain_last(const char *path, uid_t owner, char out[NETLOG_PREV_HEX + 1],
		      bool *unterminated, const char **why)
{
	char chunk[TAIL_CHUNK];
	struct stat st;
	off_t end, start, pos;
	EVP_MD_CTX *ctx = NULL;
	unsigned char md[SHA256_DIGEST_LENGTH];
	int fd, ret = -1;

	*unterminated = false;
	/* read as root at start: a link planted in the log's directory must not leak a hash */
	fd = file_open_owned(path, O_RDONLY, 0, owner, why);
	if (fd == -1)
		return errno == ENOENT ? 0 : -1;
	errno = 0; /* a short read below is EIO */
	if (fstat(fd, &st) == -1)
		goto out_close_fd;
	if (st.st_size == 0) {
		ret = 0;
		goto out_close_fd;
	}
	end = st.st_size;
	if (pread(fd, chunk, 1, end - 1) != 1)
		goto out_close_fd;
	if (chunk[0] == '\n')
		end--;
	else
		*unterminated = true;
	/* the line starts after the last newline before end */
	start = 0;
	for (pos = end; pos > 0 && start == 0;) {
		size_t n = pos > TAIL_CHUNK ? TAIL_CHUNK : (size_t)pos;

		pos -= (off_t)n;
		if (pread(fd, chunk, n, pos) != (ssize_t)n)
			goto out_close_fd;
		for (size_t i = n; i > 0; i--) {
			if (chunk[i - 1] == '\n') {
				start = pos + (off_t)i;
				break;
			}
		}
	}
	ctx = EVP_MD_CTX_new();
	if (ctx == NULL || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1)
		goto out_free_ctx;
	for (pos = start; pos < end;) {
		size_t n = end - pos > TAIL_CHUNK ? TAIL_CHUNK : (size_t)(end - pos);

		if (pread(fd, chunk, n, pos) != (ssize_t)n || EVP_DigestUpdate(ctx, chunk, n) != 1)
			goto out_free_ctx;
		pos += (off_t)n;
	}
	if (EVP_DigestFinal_ex(ctx, md, NULL) != 1)
		goto out_free_ctx;
	hex_encode(md, sizeof(md), out);
	ret = 1;
out_free_ctx:
	EVP_MD_CTX_free(ctx);
out_close_fd:
	if (ret == -1 && errno == 0)
		errno = EIO;
	close(fd);
	return ret;
}

void netlog_chain_init(struct netlog_chain *c)
{
	memset(c, 0, sizeof(*c));
}

enum netlog_chain_verdict netlog_chain_step(struct netlog_chain *c, const char *line, size_t len,
					    const char **why)
{
	char prev[NETLOG_PREV_HEX + 1];
	enum netlog_chain_verdict v = NETLOG_CHAIN_OK;
	int r = netlog_chain_prev(line, len, prev);

	*why = NULL;
	if (r == -1 && !c->started) {
		c->unchained++;
		v = NETLOG_CHAIN_UNCHAINED;
	} else if (r == -1) {
		*why = "it carries no prev (a row not written by the chain, or cut short)";
		v = NETLOG_CHAIN_BROKEN;
	} else if (r == 0 && c->lines > 0) {
		*why = "its prev is null, as if no row came before it";
		v = NETLOG_CHAIN_BROKEN;
	} else if (r == 1 && c->lines > 0 && strcmp(prev, c->last) != 0) {
		*why = c->last_cut ? "the line before it is cut short and its prev is not the hash of "
				     "that line: it was not the writer's cut row, or was changed"
				   : "its prev is not the hash of the row before it: that row was "
				     "changed, or rows between them were removed";
		v = NETLOG_CHAIN_BROKEN;
	} else if (!c->started) {
		c->started = true;
		c->from_start = r == 0;
	}
	if (v != NETLOG_CHAIN_UNCHAINED && v != NETLOG_CHAIN_BROKEN)
		c->chained++;
	netlog_chain_hash(line, len, c->last);
	c->lines++;
	c->last_cut = false;
	return v;
}

enum netlog_chain_verdict netlog_chain_step_cut(struct netlog_chain *c, const char *line,
						size_t len)
{
	enum netlog_chain_verdict v = NETLOG_CHAIN_UNCHAINED;

	if (c->started) {
		c->cut++;
		v = NETLOG_CHAIN_CUT;
	} else {
		c->unchained++;
	}
	netlog_chain_hash(line, len, c->last);
	c->lines++;
	c->last_cut = c->started;
	return v;
}
