/*
 * store.c: the files both daemons re-read (store.h), and the policy built
 * from them.
 */
#include "store.h"

#include <errno.h>
#include <ifaddrs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "file.h"
#include "runfile.h"

#define STORE_MAX_BYTES (4 * 1024 * 1024)

bool watch_changed(struct watched_file *w)
{
	struct stat st;
	bool present = stat(w->path, &st) == 0;

	if (present != w->present ||
	    (present && (st.st_ino != w->st.st_ino || st.st_size != w->st.st_size ||
			 st.st_mtim.tv_sec != w->st.st_mtim.tv_sec ||
			 st.st_mtim.tv_nsec != w->st.st_mtim.tv_nsec ||
			 st.st_ctim.tv_nsec != w->st.st_ctim.tv_nsec))) {
		w->present = present;
		if (present)
			w->st = st;
		return true;
	}
	return false;
}

int grant_store_load(const char *path, const char *who, struct grant **out, size_t *n,
		     struct grant_mode *mode)
{
	size_t len, line = 0;
	const char *err = NULL;
	char *buf;
	struct grant *g;

	*out = NULL;
	*n = 0;
	memset(mode, 0, sizeof(*mode));
	if (file_read(path, STORE_MAX_BYTES, &buf, &len) == -1) {
		if (errno == ENOENT)
			return 0;
		if (errno == EMFILE || errno == ENFILE || errno == ENOMEM)
			return -2; /* this process's trouble, not the store's */
		fprintf(stderr,
			"%s: ERROR: grant store %s unreadable: %s; enforcing with no "
			"stored grants until it is repaired\n",
			who, path, strerror(errno));
		return -1;
	}
	g = calloc(STORE_MAX_GRANTS, sizeof(*g));
	if (g == NULL || grant_store_parse(buf, len, g, STORE_MAX_GRANTS, n, mode, &line, &err) == -1) {
		fprintf(stderr,
			"%s: ERROR: grant store %s:%zu: %s; enforcing with no stored "
			"grants until it is repaired (or deleted: no grants)\n",
			who, path, line, g == NULL ? "out of memory" : err);
		free(g);
		free(buf);
		*n = 0;
		memset(mode, 0, sizeof(*mode));
		return -1;
	}
	free(buf);
	*out = g;
	return 0;
}

int store_run_id(const char *state_dir, char *run)
{
	struct runfile rf;

	if (runfile_read(state_dir, "proxy.run", &rf) == -1)
		return -1;
	memcpy(run, rf.id, sizeof(rf.id));
	return 0;
}

long own_addresses(struct ipnet *own, size_t max)
{
	struct ifaddrs *ifa, *i;
	long n = 0;

	if (getifaddrs(&ifa) == -1)
		return -1;
	for (i = ifa; i != NULL && (size_t)n < max; i = i->ifa_next) {
		if (i->ifa_addr == NULL)
			continue;
		if (i->ifa_addr->sa_family == AF_INET) {
			own[n].family = AF_INET;
			memcpy(own[n].addr, &((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr, 4);
			own[n].prefix = 32;
			n++;
		} else if (i->ifa_addr->sa_family == AF_INET6) {
			own[n].family = AF_INET6;
			memcpy(own[n].addr, &((struct sockaddr_in6 *)(void *)i->ifa_addr)->sin6_addr,
			       16);
			own[n].prefix = 128;
			n++;
		}
	}
	freeifaddrs(ifa);
	return n;
}

#define OWN_MAX 256

struct policy *store_policy(const struct config *c, const char *store_path, const char *run_id,
			    const char *who, time_t *next_expiry)
{
	struct ipnet own[OWN_MAX];
	long nown = own_addresses(own, OWN_MAX);
	struct grant *store;
	struct grant_mode mode;
	size_t nstore;
	int r = nown < 0 ? -2 : grant_store_load(store_path, who, &store, &nstore, &mode);
	bool damaged = r == -1;
	time_t now = time(NULL);
	struct policy *p;

	if (r == -2) { /* out of descriptors or memory: nothing to judge the files by */
		fprintf(stderr, "%s: reload: %s; keeping the running policy\n", who,
			strerror(errno));
		return NULL;
	}
	p = policy_new(c, store, nstore, damaged, own, (size_t)nown, run_id, now);

	if (p != NULL)
		policy_set_mode(p, &mode);
	if (next_expiry != NULL) {
		*next_expiry = 0;
		for (size_t i = 0; i < nstore; i++)
			if (store[i].level == GRANT_ONCE && store[i].expires > now &&
			    (*next_expiry == 0 || store[i].expires < *next_expiry))
				*next_expiry = store[i].expires;
	}
	free(store);
	if (p == NULL) {
		fprintf(stderr, "%s: reload: out of memory; keeping the old policy\n", who);
		return NULL;
	}
	if (damaged) {
		p->mode = MODE_ENFORCE;
		p->learn_until = 0;
	}
	return p;
}
