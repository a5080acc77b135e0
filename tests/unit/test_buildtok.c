/*
 * test_buildtok.c: the build token file and the Proxy-Authorization that
 * names a token (lib/buildtok.c).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buildtok.h"

#define SECRET "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

/* base64 of "sluice-build:" SECRET, as curl and wget send it */
static const char *auth_ours(void)
{
	return "Basic c2x1aWNlLWJ1aWxkOjAxMjM0NTY3ODlhYmNkZWYwMTIzNDU2Nzg5YWJjZGVmMDEyMzQ1Njc4OWFi"
	       "Y2RlZjAxMjM0NTY3ODlhYmNkZWY=";
}

static void test_auth(void **state)
{
	char secret[BUILDTOK_SECRET_LEN + 1];
	size_t n;
	const char *v = auth_ours();

	assert_int_equal(buildtok_auth_parse(v, strlen(v), secret, sizeof(secret), &n), 1);
	assert_int_equal(n, 64);
	assert_string_equal(secret, SECRET);
	/* the scheme in any case, more than one blank */
	{
		char alt[200];

		snprintf(alt, sizeof(alt), "bAsIc \t %s", v + 6);
		assert_int_equal(buildtok_auth_parse(alt, strlen(alt), secret, sizeof(secret), &n), 1);
	}
	/* not ours: another scheme, another user, base64 that does not decode */
	assert_int_equal(buildtok_auth_parse("Bearer x", 8, secret, sizeof(secret), &n), 0);
	assert_int_equal(buildtok_auth_parse("Basic b3RoZXI6cHc=", 18, secret, sizeof(secret), &n), 0);
	assert_int_equal(buildtok_auth_parse("Basic !!!!", 10, secret, sizeof(secret), &n), 0);
	assert_int_equal(buildtok_auth_parse("Basic", 5, secret, sizeof(secret), &n), 0);
	assert_int_equal(buildtok_auth_parse("Basic b3RoZXI6cHc", 17, secret, sizeof(secret), &n), 0);
	/* ours, malformed: "sluice-build:short" and "sluice-build:" with upper-case hex */
	assert_int_equal(buildtok_auth_parse("Basic c2x1aWNlLWJ1aWxkOnNob3J0", 30, secret,
					     sizeof(secret), &n),
			 -1);
	assert_int_equal(buildtok_auth_parse("Basic c2x1aWNlLWJ1aWxkOg==", 26, secret, sizeof(secret),
					     &n),
			 -1);
	/* non-canonical padding bits ("b3RoZXI6cHd=" decodes like "...cHc="): not base64 we take */
	assert_int_equal(buildtok_auth_parse("Basic b3RoZXI6cHd=", 18, secret, sizeof(secret), &n), 0);
}

static void test_file(void **state)
{
	static const char file[] = "# sluice build tokens v1\n"
				   "img 93e4aceb0160906fbc9c1f02c9218ec76368ad01abd0fd66da6262e73c5a1f52 10 20\n"
				   "\n"
				   "docs.v2 0000000000000000000000000000000000000000000000000000000000000000 1 2\n";
	struct buildtok t[4], b[4];
	size_t n, nb, line, len = 0;
	const char *err;
	char *out = NULL;
	FILE *f;

	assert_int_equal(buildtok_file_parse(file, strlen(file), t, 4, &n, &line, &err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(t[0].name, "img");
	assert_int_equal(t[0].hash[0], 0x93);
	assert_int_equal(t[0].expires, 20);
	f = open_memstream(&out, &len);
	assert_non_null(f);
	assert_int_equal(buildtok_file_write(f, t, n), 0);
	assert_int_equal(fclose(f), 0);
	assert_string_equal(out, "# sluice build tokens v1\n"
				 "img 93e4aceb0160906fbc9c1f02c9218ec76368ad01abd0fd66da6262e73c5a1f52 10 20\n"
				 "docs.v2 0000000000000000000000000000000000000000000000000000000000000000 1 2\n");
	assert_int_equal(buildtok_file_parse(out, len, b, 4, &nb, &line, &err), 0);
	assert_int_equal(nb, 2);
	assert_memory_equal(b[0].hash, t[0].hash, 32);
	free(out);

	assert_int_equal(buildtok_file_parse("img x 1 2\n", 10, t, 4, &n, &line, &err), -1);
	assert_string_equal(err, "bad hash (64 lower-case hex digits)");
	assert_int_equal(buildtok_file_parse("a b\nc d e f g\n", 14, t, 4, &n, &line, &err), -1);
	assert_int_equal(line, 1);
	assert_string_equal(err, "expected NAME SHA256 CREATED EXPIRES");
	assert_int_equal(buildtok_file_parse("a/b 0000000000000000000000000000000000000000000000000000"
					     "000000000000 1 2\n", 74, t, 4, &n, &line, &err),
			 -1);
	assert_string_equal(err, "bad name (1-64 of [A-Za-z0-9._-])");
	assert_false(buildtok_name_valid(""));
	assert_false(buildtok_name_valid("a b"));
	assert_true(buildtok_name_valid("a.b_c-9"));
}

static void test_find(void **state)
{
	struct buildtok t[2] = { { .name = "a", .expires = 100 }, { .name = "b", .expires = 200 } };
	bool expired;

	buildtok_hash(SECRET, 64, t[1].hash);
	assert_ptr_equal(buildtok_find(t, 2, SECRET, 64, 150, &expired), &t[1]);
	assert_false(expired);
	assert_null(buildtok_find(t, 2, SECRET, 64, 200, &expired));
	assert_true(expired);
	assert_null(buildtok_find(t, 2, "1123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
				  64, 150, &expired));
	assert_false(expired);
	assert_null(buildtok_find(t, 0, SECRET, 64, 150, &expired));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_auth),
		cmocka_unit_test(test_file),
		cmocka_unit_test(test_find),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
