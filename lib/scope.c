/*
 * scope.c: principal words (scope.h), parsed once into canonical text and
 * matched against a connection's stamp fields by byte comparison (a
 * container id prefix ignoring case).
 */
#include "scope.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "host.h"

#define NET_MAX 64 /* stamp.h's STAMP_NET_MAX */
#define AS_MAX 100 /* stamp.h's STAMP_AS_MAX */

static bool is_alnum(unsigned char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
}

static bool is_hex(unsigned char ch)
{
	return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F');
}

/* 1..max bytes, each alphanumeric or in extra. */
static bool word_of(const char *s, size_t max, const char *extra)
{
	size_t n = strlen(s);

	if (n == 0 || n > max)
		return false;
	for (; *s != '\0'; s++)
		if (!is_alnum((unsigned char)*s) && strchr(extra, *s) == NULL)
			return false;
	return true;
}

/* A numeric address, canonical into out (46 bytes). */
static bool addr_canon(const char *s, size_t len, char *out)
{
	char tmp[64];
	unsigned char bytes[16];
	struct host h;
	const char *why;

	if (len == 0 || len >= sizeof(tmp))
		return false;
	memcpy(tmp, s, len);
	tmp[len] = '\0';
	if (inet_pton(AF_INET, tmp, bytes) != 1 && inet_pton(AF_INET6, tmp, bytes) != 1)
		return false;
	if (host_canon(tmp, len, &h, &why) == -1 || h.kind == HOST_NAME)
		return false;
	snprintf(out, 46, "%s", h.name);
	return true;
}

/* "NAME" or "NAME/AGENT", each 1..SCOPE_PROJECT_NAME_MAX of [A-Za-z0-9._-]. */
static bool project_valid(const char *s)
{
	const char *slash = strchr(s, '/');
	char name[SCOPE_PROJECT_NAME_MAX + 1];
	size_t n = slash != NULL ? (size_t)(slash - s) : strlen(s);

	if (n == 0 || n > SCOPE_PROJECT_NAME_MAX)
		return false;
	memcpy(name, s, n);
	name[n] = '\0';
	return word_of(name, SCOPE_PROJECT_NAME_MAX, "._-") &&
	       (slash == NULL || word_of(slash + 1, SCOPE_PROJECT_NAME_MAX, "._-"));
}

int scope_parse(const char *v, struct scope *out, const char **err)
{
	const char *at = strrchr(v, '@');
	char addr[46];

	memset(out, 0, sizeof(*out));
	if (strcmp(v, "unattributed") == 0) {
		*err = "unattributed is not a principal: a connection without a stamp has none";
		return -1;
	}
	if (strncmp(v, "container:", 10) == 0) {
		size_t n = strlen(v + 10);

		for (size_t i = 10; v[i] != '\0'; i++)
			if (!is_hex((unsigned char)v[i]))
				n = 0;
		if (n < SCOPE_ID_PREFIX_MIN || n > SCOPE_ID_LEN) {
			*err = "container:<id> needs 12 to 64 hex digits";
			return -1;
		}
		out->kind = SCOPE_CONTAINER;
		for (size_t i = 0; v[i] != '\0'; i++)
			out->text[i] = (char)((v[i] >= 'A' && v[i] <= 'F') ? v[i] - 'A' + 'a' : v[i]);
	} else if (strncmp(v, "project:", 8) == 0) {
		if (!project_valid(v + 8)) {
			*err = "expected project:NAME or project:NAME/AGENT (each [A-Za-z0-9._-], "
			       "at most 40)";
			return -1;
		}
		out->kind = SCOPE_PROJECT;
		snprintf(out->text, sizeof(out->text), "%s", v);
	} else if (strcmp(v, "user") == 0 || strncmp(v, "build:", 6) == 0) {
		if ((!word_of(v, AS_MAX, "._:-") && strcmp(v, "build:*") != 0) ||
		    strcmp(v, "build:") == 0) {
			*err = "not a stamp principal";
			return -1;
		}
		out->kind = SCOPE_AS;
		snprintf(out->text, sizeof(out->text), "%s", v);
	} else if (at != NULL) {
		if (!addr_canon(v, (size_t)(at - v), addr) || !word_of(at + 1, NET_MAX, "._-")) {
			*err = "expected ADDR@NET";
			return -1;
		}
		out->kind = SCOPE_SRC_NET;
		snprintf(out->text, sizeof(out->text), "%s@%s", addr, at + 1);
	} else if (addr_canon(v, strlen(v), addr)) {
		out->kind = SCOPE_ADDR;
		snprintf(out->text, sizeof(out->text), "%s", addr);
	} else if (is_alnum((unsigned char)v[0]) && word_of(v, SCOPE_TEXT_MAX, "._-")) {
		/* a container name as podman allows: [A-Za-z0-9][A-Za-z0-9_.-]* */
		out->kind = SCOPE_NAME;
		snprintf(out->text, sizeof(out->text), "%s", v);
	} else {
		*err = "expected ADDR, ADDR@NET, container:<id>, build:<scope>, user, "
		       "project:NAME[/AGENT] or a container name";
		return -1;
	}
	return 0;
}

bool scope_matches(const struct scope *sc, const char *who, const char *src, const char *as)
{
	size_t n;

	if (who == NULL)
		return false;
	if (as != NULL && as[0] == '\0')
		as = NULL;
	switch (sc->kind) {
	case SCOPE_ADDR:
		return src != NULL && strcmp(src, sc->text) == 0;
	case SCOPE_SRC_NET:
		return strcmp(who, sc->text) == 0;
	case SCOPE_CONTAINER:
		n = strlen(sc->text);
		return as != NULL && strlen(as) >= n && strncmp(as, "container:", 10) == 0 &&
		       strncasecmp(as + 10, sc->text + 10, n - 10) == 0;
	case SCOPE_AS:
		if (strcmp(sc->text, "build:*") == 0)
			return as != NULL && strncmp(as, "build:", 6) == 0;
		return as != NULL && strcmp(as, sc->text) == 0;
	case SCOPE_PROJECT:
		n = strlen(sc->text);
		/* project:NAME is every agent's too; project:NAME/AGENT only its own */
		return as != NULL && strncmp(as, sc->text, n) == 0 &&
		       (as[n] == '\0' || (as[n] == '/' && strchr(sc->text, '/') == NULL));
	case SCOPE_NAME:
		return false;
	}
	return false;
}

bool scope_in(const struct scope *sc, const struct scope *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i].text, sc->text) == 0)
			return true;
	return false;
}
