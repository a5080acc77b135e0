/*
 * cgpath.c: which cgroup v2 paths may name a container or a build.
 *
 * Only the component right below an engine parent decides; a libpod-<id>
 * anywhere else (a user's own subtree, or nested inside a container's
 * cgroup) names nothing. Touches no file system and allocates nothing.
 */
#include "cgpath.h"

#include <stdio.h>
#include <string.h>

#include "digits.h"

#define LIBPOD "libpod-"
#define SCOPE ".scope"

bool cgpath_parent_valid(const char *p)
{
	const char *c;

	if (p == NULL || p[0] != '/')
		return false;
	if (strcmp(p, "/") == 0)
		return true;
	for (c = p; *c != '\0'; c++)
		if ((unsigned char)*c < 0x21 || (unsigned char)*c == 0x7f)
			return false;
	for (c = p; *c == '/';) {
		size_t n = strcspn(c + 1, "/");

		if (n == 0 || (n == 1 && c[1] == '.') || (n == 2 && c[1] == '.' && c[2] == '.'))
			return false;
		c += 1 + n;
	}
	return *c == '\0';
}

static bool ends_with(const char *s, size_t n, const char *suffix)
{
	size_t sl = strlen(suffix);

	return n >= sl && memcmp(s + n - sl, suffix, sl) == 0;
}

/* libpod-<64 hex> or libpod-<64 hex>.scope (libpod-conmon-* has no hex there). */
static bool is_container(const char *c, size_t n)
{
	size_t pl = sizeof(LIBPOD) - 1, sl = sizeof(SCOPE) - 1;

	return (n == pl + CGPATH_ID_LEN || (n == pl + CGPATH_ID_LEN + sl && ends_with(c, n, SCOPE))) &&
	       memcmp(c, LIBPOD, pl) == 0 && hex_is_lower(c + pl, CGPATH_ID_LEN);
}

/* *buildah-*.scope: crun-buildah-buildah123.scope, runc-buildah-... */
static bool is_build(const char *c, size_t n)
{
	return ends_with(c, n, SCOPE) && memmem(c, n - (sizeof(SCOPE) - 1), "buildah-", 8) != NULL;
}

/* What stamp.c accepts in as=. */
static bool as_valid(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > STAMP_AS_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-' || c == ':'))
			return false;
	}
	return true;
}

/*
 * The component of path right below parent, if parent is a proper prefix
 * on a component boundary: *comp and *n. Returns whether it is.
 */
static bool below(const char *path, const char *parent, const char **comp, size_t *n)
{
	size_t pl = strcmp(parent, "/") == 0 ? 0 : strlen(parent);

	if (strncmp(path, parent, pl) != 0 || path[pl] != '/')
		return false;
	*comp = path + pl + 1;
	*n = strcspn(*comp, "/");
	return *n > 0;
}

int cgpath_classify(const char *path, const char *const *parents, size_t nparents,
		    struct cgpath_match *m)
{
	const char *best = NULL;
	size_t best_n = 0;

	memset(m, 0, sizeof(*m));
	m->kind = CGPATH_USER;
	snprintf(m->as, sizeof(m->as), "user");
	for (size_t i = 0; i < nparents; i++) {
		const char *c;
		size_t n;

		if (!below(path, parents[i], &c, &n) || !(is_container(c, n) || is_build(c, n)))
			continue;
		if (best == NULL || c < best) {
			best = c;
			best_n = n;
		}
	}
	if (best == NULL) {
		for (const char *c = path; *c == '/';) {
			size_t n = strcspn(c + 1, "/");

			if (is_container(c + 1, n) || is_build(c + 1, n))
				m->lookalike = true;
			c += 1 + n;
		}
		return 0;
	}
	m->parent_len = (size_t)(best - 1 - path);
	m->dir_len = (size_t)(best + best_n - path);
	if (is_container(best, best_n)) {
		m->kind = CGPATH_CONTAINER;
		memcpy(m->id, best + sizeof(LIBPOD) - 1, CGPATH_ID_LEN);
		snprintf(m->as, sizeof(m->as), "container:%s", m->id);
		return 0;
	}
	if (best_n - (sizeof(SCOPE) - 1) > STAMP_AS_MAX - 6)
		goto out_bad;
	m->kind = CGPATH_BUILD;
	snprintf(m->as, sizeof(m->as), "build:%.*s", (int)(best_n - (sizeof(SCOPE) - 1)), best);
	if (as_valid(m->as))
		return 0;
out_bad:
	memset(m, 0, sizeof(*m));
	return -1;
}
