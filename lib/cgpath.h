/*
 * cgpath.h: which cgroup v2 paths may name a container or a build.
 *
 * A cgroup's name is chosen by whoever made it, and anyone with a delegated
 * subtree can make libpod-<id>. So a name counts only where the engine
 * makes its cgroups: as a direct child of one of the engine's parent
 * cgroups (sluice-forward's --engine-cgroup). These are pure string
 * functions over paths relative to the cgroup2 mount ("/a/b", "" for its
 * root); who owns the directories and whether the engine has the container
 * is for the caller (forward/cgroup.c) to check.
 */
#ifndef SLUICE_CGPATH_H
#define SLUICE_CGPATH_H

#include <stdbool.h>
#include <stddef.h>

#include "stamp.h"

#define CGPATH_ID_LEN 64

enum cgpath_kind {
	CGPATH_USER,      /* anything else: the sandbox's own user */
	CGPATH_CONTAINER, /* PARENT/libpod-<64 hex>[.scope][/...] */
	CGPATH_BUILD,     /* PARENT/<...>buildah-<...>.scope[/...] */
};

struct cgpath_match {
	enum cgpath_kind kind;
	size_t parent_len;             /* path[0..parent_len) is the engine parent; 0 for "/" */
	size_t dir_len;                /* path[0..dir_len) is the container's or build's cgroup */
	char id[CGPATH_ID_LEN + 1];    /* CGPATH_CONTAINER: the id; else "" */
	char as[STAMP_AS_MAX + 1];     /* the principal: container:<id>, build:<scope> or user */
	bool lookalike;                /* user, though a component is named like a container or build */
};

/*
 * Whether p can be an engine parent: "/" or "/a/b", no empty, "." or ".."
 * component, no trailing '/', no byte below 0x21 or 0x7f.
 */
bool cgpath_parent_valid(const char *p);

/*
 * Classify path against the engine parents (each cgpath_parent_valid):
 * a container when a parent is a proper prefix of path on a component
 * boundary and the component after it is libpod-<64 lower hex> or that
 * with ".scope" (libpod-conmon-* is not); a build when that component is
 * *buildah-*.scope; else user. Of several parents followed by such a
 * component, the shortest decides; a user path with such a component
 * elsewhere is a lookalike. Returns 0 with *m filled, or -1 when a build's scope name
 * cannot be spelled in a stamp (the caller resets the client).
 */
int cgpath_classify(const char *path, const char *const *parents, size_t nparents,
		    struct cgpath_match *m);

#endif
