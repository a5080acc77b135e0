/*
 * test_stamp.c: stamp_parse, stamp_format, stamp_verify, the key file and
 * the replay window.
 *
 * Every parser input is placed right before a PROT_NONE page (guard.h), so
 * an over-read faults. The known-answer MACs were computed independently
 * with python3's hmac module, not with this code.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guard.h"
#include "stamp.h"

/*
 * Known answers: python3 -c 'import hmac, hashlib; print(hmac.new(KEY, SIGNED,
 * hashlib.sha256).hexdigest())' with KEY = bytes(range(32)) for the first and
 * bytes([0xaa] * 32) for the second.
 */
#define KAT_BOOT "9f2c4e6a8b0d1f37"
#define KAT_MAC "5d74d8447f359346329005ff6514c7d62712b87b3972db949fb9fedabd954024"
#define KAT_SIGNED "v=1; kid=3; src=10.88.0.5; net=podman; boot=" KAT_BOOT "; seq=42"
#define KAT_VALUE KAT_SIGNED "; mac=" KAT_MAC
#define KAT_KEY_HEX "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

#define KAT6_SIGNED "v=1; kid=7; src=2001:db8::1; net=lab.net_1-x; boot=0123456789abcdef; seq=0"
#define KAT6_MAC "908f3fdb005c7a1b3eb2ed4900badcc32f5a835ff63c5cd785324d25afc38435"
#define KAT6_VALUE KAT6_SIGNED "; mac=" KAT6_MAC

/* with the optional as= field (same key as the first) */
#define CTR_ID "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define KATA_SIGNED                                                                      \
	"v=1; kid=3; src=127.0.0.1; net=vm; as=container:" CTR_ID "; boot=" KAT_BOOT "; seq=43"
#define KATA_MAC "3e27c854f69fe3eccf4de2b0d4426c0d2575bd104bdec832aa04daaf383797d9"
#define KATA_VALUE KATA_SIGNED "; mac=" KATA_MAC
#define KATB_SIGNED                                                                       \
	"v=1; kid=3; src=10.88.0.5; net=podman; as=build:crun-buildah-buildah7; boot=" KAT_BOOT \
	"; seq=42"
#define KATB_MAC "34c0594d91f0a4e39285d97484ed2862bb741b0b9df9af7752e95db5609989b4"
#define KATB_VALUE KATB_SIGNED "; mac=" KATB_MAC

#define HEX_AA "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define HEX_BB "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

/* Pieces for building one-field-wrong variants of the KAT value. */
#define P_KID "v=1; kid="
#define P_SRC "v=1; kid=3; src="
#define P_NET "v=1; kid=3; src=10.88.0.5; net="
#define P_BOOT P_NET "podman; boot="
#define P_SEQ P_BOOT KAT_BOOT "; seq="
#define P_MAC P_SEQ "42; mac="
#define T_KID "; src=10.88.0.5; net=podman; boot=" KAT_BOOT "; seq=42; mac=" KAT_MAC
#define T_SRC "; net=podman; boot=" KAT_BOOT "; seq=42; mac=" KAT_MAC
#define T_NET "; boot=" KAT_BOOT "; seq=42; mac=" KAT_MAC
#define T_BOOT "; seq=42; mac=" KAT_MAC
#define T_SEQ "; mac=" KAT_MAC
#define P_AS P_NET "podman; as="

static struct stamp_key kat_key(void)
{
	struct stamp_key k = { .kid = 3, .expires = 0 };
	size_t i;

	for (i = 0; i < sizeof(k.key); i++)
		k.key[i] = (uint8_t)i;
	return k;
}

static struct stamp_key aa_key(uint32_t kid)
{
	struct stamp_key k = { .kid = kid, .expires = 0 };

	memset(k.key, 0xaa, sizeof(k.key));
	return k;
}

/* stamp_parse on a guarded copy of s[0..len); len 0 means strlen(s). */
static int parse_n(const char *s, size_t len, struct stamp *st, const char **err)
{
	char *g;
	int ret;

	if (len == 0)
		len = strlen(s);
	g = guard_copy(s, len);
	ret = stamp_parse(g, len, st, err);
	guard_free(g, len);
	return ret;
}

static bool parse_verify(const char *s, const struct stamp_key *keys, size_t n, time_t now)
{
	size_t len = strlen(s);
	char *g = guard_copy(s, len);
	struct stamp st;
	const char *err = NULL;
	bool ok;

	assert_int_equal(stamp_parse(g, len, &st, &err), 0);
	ok = stamp_verify(&st, g, keys, n, now);
	guard_free(g, len);
	return ok;
}

static void test_known_answer(void **state)
{
	struct stamp_key k = kat_key(), k6 = aa_key(7);
	struct stamp st;
	const char *err = NULL;
	char out[STAMP_VALUE_MAX];
	size_t i;

	assert_int_equal(parse_n(KAT_VALUE, 0, &st, &err), 0);
	assert_int_equal(st.version, 1);
	assert_int_equal(st.kid, 3);
	assert_string_equal(st.src, "10.88.0.5");
	assert_string_equal(st.net, "podman");
	assert_string_equal(st.boot, KAT_BOOT);
	assert_int_equal(st.seq, 42);
	assert_int_equal(st.signed_len, strlen(KAT_SIGNED));
	for (i = 0; i < 32; i++) {
		char hx[3];

		snprintf(hx, sizeof(hx), "%02x", st.mac[i]);
		assert_memory_equal(hx, &KAT_MAC[2 * i], 2);
	}
	assert_true(parse_verify(KAT_VALUE, &k, 1, 1000));

	/* formatting computes the same MAC as the independent implementation */
	memset(st.mac, 0, sizeof(st.mac));
	assert_int_equal(stamp_format(&st, &k, out, sizeof(out)), (int)strlen(KAT_VALUE));
	assert_string_equal(out, KAT_VALUE);

	assert_int_equal(parse_n(KAT6_VALUE, 0, &st, &err), 0);
	assert_true(parse_verify(KAT6_VALUE, &k6, 1, 1000));
	assert_int_equal(stamp_format(&st, &k6, out, sizeof(out)), (int)strlen(KAT6_VALUE));
	assert_string_equal(out, KAT6_VALUE);

	/* with as=: parsed, verified, formatted back byte for byte */
	assert_int_equal(parse_n(KATA_VALUE, 0, &st, &err), 0);
	assert_string_equal(st.src, "127.0.0.1");
	assert_string_equal(st.net, "vm");
	assert_string_equal(st.as, "container:" CTR_ID);
	assert_string_equal(st.boot, KAT_BOOT);
	assert_int_equal(st.seq, 43);
	assert_int_equal(st.signed_len, strlen(KATA_SIGNED));
	assert_true(parse_verify(KATA_VALUE, &k, 1, 1000));
	memset(st.mac, 0, sizeof(st.mac));
	assert_int_equal(stamp_format(&st, &k, out, sizeof(out)), (int)strlen(KATA_VALUE));
	assert_string_equal(out, KATA_VALUE);
	assert_int_equal(parse_n(KATB_VALUE, 0, &st, &err), 0);
	assert_string_equal(st.as, "build:crun-buildah-buildah7");
	assert_true(parse_verify(KATB_VALUE, &k, 1, 1000));
	assert_int_equal(stamp_format(&st, &k, out, sizeof(out)), (int)strlen(KATB_VALUE));
	assert_string_equal(out, KATB_VALUE);
	/* without as= the field is empty */
	assert_int_equal(parse_n(KAT_VALUE, 0, &st, &err), 0);
	assert_string_equal(st.as, "");
	/* a run's project and agent (sluice-forward --as): one '/', formatted and parsed back */
	snprintf(st.as, sizeof(st.as), "project:alpha/coder");
	assert_true(stamp_as_valid(st.as));
	assert_false(stamp_as_valid("user/x"));
	assert_true(stamp_format(&st, &k, out, sizeof(out)) > 0);
	assert_non_null(strstr(out, "; as=project:alpha/coder; boot="));
	assert_int_equal(parse_n(out, 0, &st, &err), 0);
	assert_string_equal(st.as, "project:alpha/coder");
	assert_true(parse_verify(out, &k, 1, 1000));

	/* the key file spelling of the KAT key decodes to the same bytes */
	{
		static const char file[] = "3 " KAT_KEY_HEX "\n";
		struct stamp_key got[1];
		size_t n = 0, line = 9;
		char *g = guard_str(file);

		assert_int_equal(stamp_keys_parse(g, strlen(file), got, 1, &n, &line, &err), 0);
		guard_free(g, strlen(file));
		assert_int_equal(n, 1);
		assert_memory_equal(got[0].key, k.key, sizeof(k.key));
	}
}

static void round_trip(const char *src, const char *net, const char *as, uint32_t kid,
		       uint64_t seq)
{
	struct stamp st = { .version = 1, .kid = kid, .seq = seq }, back;
	struct stamp_key k = aa_key(kid);
	const char *err = NULL;
	char out[STAMP_VALUE_MAX];
	int n;

	snprintf(st.src, sizeof(st.src), "%s", src);
	snprintf(st.net, sizeof(st.net), "%s", net);
	snprintf(st.as, sizeof(st.as), "%s", as);
	snprintf(st.boot, sizeof(st.boot), "%s", "00ff00ff00ff00ff");
	n = stamp_format(&st, &k, out, sizeof(out));
	assert_true(n > 0 && n < STAMP_VALUE_MAX);
	assert_int_equal((size_t)n, strlen(out));
	assert_int_equal(parse_n(out, (size_t)n, &back, &err), 0);
	assert_int_equal(back.kid, kid);
	assert_string_equal(back.src, src);
	assert_string_equal(back.net, net);
	assert_string_equal(back.as, as);
	assert_true((strstr(out, "; as=") != NULL) == (as[0] != '\0'));
	assert_string_equal(back.boot, st.boot);
	assert_true(back.seq == seq);
	assert_true(parse_verify(out, &k, 1, 1));
}

static void test_round_trip(void **state)
{
	static const char net64[] =
		"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._";

	static const char as100[] =
		"build:abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-:"
		"0123456789012345678901234567";

	assert_int_equal(strlen(as100), STAMP_AS_MAX);
	round_trip("10.88.0.5", "podman", "", 3, 42);
	round_trip("0.0.0.0", "a", "", 1, 0);
	round_trip("255.255.255.255", "x-y_z.w", "", 4294967295u, 9223372036854775807ull);
	round_trip("2001:db8::1", "podman", "", 7, 1);
	round_trip("::1", "n", "", 2, 18);
	round_trip("::", "n", "", 2, 18);
	round_trip("::ffff:1.2.3.4", "n", "", 2, 18);
	round_trip("fe80::1:2", "n", "", 2, 18);
	round_trip("127.0.0.1", "vm", "container:" CTR_ID, 3, 1);
	round_trip("127.0.0.1", "vm", "build:crun-buildah-buildah7", 3, 2);
	round_trip("::1", "vm", "user", 3, 3);
	round_trip("::1", "vm", "a", 3, 3);
	round_trip("::1", "vm", ":", 3, 3);
	/* longest value: longest inet_ntop text, 64-byte net, 100-byte as, largest kid and seq */
	round_trip("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", net64, "", 4294967295u,
		   9223372036854775807ull);
	round_trip("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", net64, as100, 4294967295u,
		   9223372036854775807ull);
}

struct bad_case {
	const char *in;
	size_t len; /* 0: strlen(in) */
	const char *err;
};

static const struct bad_case bad_cases[] = {
	{ "", 0, "expected v=" },
	{ "v", 0, "expected v=" },
	{ "V=1; kid=3" T_KID, 0, "expected v=" },
	{ " v=1; kid=3" T_KID, 0, "expected v=" },
	{ "v=2; kid=3" T_KID, 0, "unsupported stamp version" },
	{ "v=01; kid=3" T_KID, 0, "unsupported stamp version" },
	{ "v=; kid=3" T_KID, 0, "unsupported stamp version" },
	{ "v=1", 0, "expected kid=" },
	{ "v=1;kid=3" T_KID, 0, "expected kid=" },
	{ "v=1;  kid=3" T_KID, 0, "expected kid=" },
	{ "v=1; KID=3" T_KID, 0, "expected kid=" },
	{ "v=1; src=10.88.0.5; kid=3; net=podman; boot=" KAT_BOOT "; seq=42; mac=" KAT_MAC, 0,
	  "expected kid=" },
	/* kid */
	{ P_KID "0" T_KID, 0, "bad kid" },
	{ P_KID "03" T_KID, 0, "bad kid" },
	{ P_KID "" T_KID, 0, "bad kid" },
	{ P_KID "-1" T_KID, 0, "bad kid" },
	{ P_KID "+3" T_KID, 0, "bad kid" },
	{ P_KID "3a" T_KID, 0, "bad kid" },
	{ P_KID "3 " T_KID, 0, "bad kid" },
	{ P_KID "4294967296" T_KID, 0, "bad kid" },
	{ P_KID "99999999999999999999999" T_KID, 0, "bad kid" },
	{ "v=1; kid=3; kid=3" T_KID, 0, "expected src=" },
	/* src */
	{ P_SRC "" T_SRC, 0, "bad src" },
	{ P_SRC "10.88.0" T_SRC, 0, "bad src" },
	{ P_SRC "10.88.0.256" T_SRC, 0, "bad src" },
	{ P_SRC "10.88.0.5." T_SRC, 0, "bad src" },
	{ P_SRC " 10.88.0.5" T_SRC, 0, "bad src" },
	{ P_SRC "fe80::1%eth0" T_SRC, 0, "bad src" },
	{ P_SRC "[::1]" T_SRC, 0, "bad src" },
	{ P_SRC "host.example" T_SRC, 0, "bad src" },
	{ P_SRC "1::2::3" T_SRC, 0, "bad src" },
	{ P_SRC "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.2555" T_SRC, 0, "bad src" },
	{ P_SRC "10.88.0.5\0" T_SRC, sizeof(P_SRC "10.88.0.5\0" T_SRC) - 1, "bad src" },
	/* net */
	{ P_NET "" T_NET, 0, "bad net" },
	{ P_NET "pod man" T_NET, 0, "bad net" },
	{ P_NET "pod/man" T_NET, 0, "bad net" },
	{ P_NET "pod=man" T_NET, 0, "bad net" },
	{ P_NET "p\xc3\xb6" T_NET, 0, "bad net" },
	{ P_NET "pod\0man" T_NET, sizeof(P_NET "pod\0man" T_NET) - 1, "bad net" },
	{ P_NET "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-" T_NET, 0,
	  "bad net" },
	{ P_NET "podman; foo=1" T_NET, 0, "expected boot=" },
	{ P_NET "podman; net=podman" T_NET, 0, "expected boot=" },
	/* as: optional, right after net, 1-100 bytes of [A-Za-z0-9._:-] */
	{ P_AS "" T_NET, 0, "bad as" },
	{ P_AS "us er" T_NET, 0, "bad as" },
	{ P_AS "user " T_NET, 0, "bad as" },
	{ P_AS "a/b" T_NET, 0, "bad as" },
	{ P_AS "project:a/b/c" T_NET, 0, "bad as" },
	{ P_AS "project:a/" T_NET, 0, "bad as" },
	{ P_AS "project:/b" T_NET, 0, "bad as" },
	{ P_AS "project:a//b" T_NET, 0, "bad as" },
	{ P_AS "build:a/b" T_NET, 0, "bad as" },
	{ P_AS "a=b" T_NET, 0, "bad as" },
	{ P_AS "a,b" T_NET, 0, "bad as" },
	{ P_AS "a@b" T_NET, 0, "bad as" },
	{ P_AS "p\xc3\xb6" T_NET, 0, "bad as" },
	{ P_AS "a\tb" T_NET, 0, "bad as" },
	{ P_AS "us\0er" T_NET, sizeof(P_AS "us\0er" T_NET) - 1, "bad as" },
	{ P_AS "container:" CTR_ID "0123456789abcdef01234567890" T_NET, 0, "bad as" },
	{ P_AS "user; as=user" T_NET, 0, "expected boot=" },
	{ P_NET "podman; AS=user" T_NET, 0, "expected boot=" },
	{ P_NET "podman;as=user" T_NET, 0, "expected boot=" },
	{ P_NET "podman;  as=user" T_NET, 0, "expected boot=" },
	{ P_SRC "10.88.0.5; as=user; net=podman" T_NET, 0, "expected net=" },
	{ P_BOOT KAT_BOOT "; as=user; seq=42" T_SEQ, 0, "expected seq=" },
	{ P_SEQ "42; as=user" T_SEQ, 0, "expected mac=" },
	{ P_MAC KAT_MAC "; as=user", 0, "trailing bytes after mac" },
	/* boot */
	{ P_BOOT "9f2c4e6a8b0d1f3" T_BOOT, 0, "bad boot" },
	{ P_BOOT "9f2c4e6a8b0d1f370" T_BOOT, 0, "bad boot" },
	{ P_BOOT "9F2C4E6A8B0D1F37" T_BOOT, 0, "bad boot" },
	{ P_BOOT "9f2c4e6a8b0d1f3g" T_BOOT, 0, "bad boot" },
	{ P_BOOT "" T_BOOT, 0, "bad boot" },
	/* seq */
	{ P_SEQ "" T_SEQ, 0, "bad seq" },
	{ P_SEQ "042" T_SEQ, 0, "bad seq" },
	{ P_SEQ "00" T_SEQ, 0, "bad seq" },
	{ P_SEQ "-1" T_SEQ, 0, "bad seq" },
	{ P_SEQ "4 2" T_SEQ, 0, "bad seq" },
	{ P_SEQ "42\n" T_SEQ, 0, "bad seq" },
	{ P_SEQ "9223372036854775808" T_SEQ, 0, "bad seq" },
	{ P_SEQ "18446744073709551615" T_SEQ, 0, "bad seq" },
	{ P_SEQ "18446744073709551616" T_SEQ, 0, "bad seq" },
	/* mac */
	{ P_SEQ "42", 0, "expected mac=" },
	{ P_SEQ "42;", 0, "expected mac=" },
	{ P_SEQ "42; MAC=" KAT_MAC, 0, "expected mac=" },
	{ P_SEQ "42; seq=42" T_SEQ, 0, "expected mac=" },
	{ P_MAC "", 0, "bad mac" },
	{ P_MAC "5d74d8447f359346329005ff6514c7d62712b87b3972db949fb9fedabd95402", 0, "bad mac" },
	{ P_MAC KAT_MAC "0", 0, "bad mac" },
	{ P_MAC KAT_MAC " ", 0, "bad mac" },
	{ P_MAC "5D74D8447F359346329005FF6514C7D62712B87B3972DB949FB9FEDABD954024", 0, "bad mac" },
	{ P_MAC "5d74d8447f359346329005ff6514c7d62712b87b3972db949fb9fedabd95402g", 0, "bad mac" },
	{ P_MAC KAT_MAC ";", 0, "trailing bytes after mac" },
	{ P_MAC KAT_MAC "; mac=" KAT_MAC, 0, "trailing bytes after mac" },
	{ P_MAC KAT_MAC "; x=1", 0, "trailing bytes after mac" },
};

static void test_malformed(void **state)
{
	size_t i;

	for (i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		struct stamp st;
		const char *err = NULL;

		if (parse_n(bad_cases[i].in, bad_cases[i].len, &st, &err) != -1)
			fail_msg("case %zu accepted: %s", i, bad_cases[i].in);
		if (err == NULL || strcmp(err, bad_cases[i].err) != 0)
			fail_msg("case %zu (%s): got \"%s\", want \"%s\"", i, bad_cases[i].in,
				 err ? err : "(null)", bad_cases[i].err);
	}
	/* every proper prefix of a valid value is refused */
	for (i = 0; i < strlen(KAT_VALUE); i++) {
		struct stamp st;
		const char *err = NULL;

		if (i == 0) {
			/* a zero-length guarded copy: parse_n's 0 means strlen */
			char *g = guard_copy("", 0);

			assert_int_equal(stamp_parse(g, 0, &st, &err), -1);
			guard_free(g, 0);
			continue;
		}
		if (parse_n(KAT_VALUE, i, &st, &err) != -1)
			fail_msg("prefix of %zu bytes accepted", i);
	}
	for (i = 1; i < strlen(KATA_VALUE); i++) {
		struct stamp st;
		const char *err = NULL;

		if (parse_n(KATA_VALUE, i, &st, &err) != -1)
			fail_msg("prefix of %zu bytes (with as=) accepted", i);
	}
}

static void test_src_canonical(void **state)
{
	static const char *const bad[] = {
		"010.1.1.1",      "10.088.0.5",           "::FFFF:1.2.3.4",
		"0:0::1",         "2001:DB8::1",          "2001:db8:0:0:0:0:0:1",
		"2001:0db8::1",   "::ffff:0102:0304",     "2001:db8:0:0:1:0:0:1",
		"::0.0.0.1",      "0x1.2.3.4",            "1.2.3",
		"::ffff:1.2.3.4 ", "0000::1",             "FE80::1",
	};
	static const char *const good[] = {
		"1.2.3.4", "::1", "::", "::ffff:1.2.3.4", "2001:db8::1:0:0:1", "2001:db8:0:1:1:1:1:1",
	};
	char buf[STAMP_VALUE_MAX];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct stamp st;
		const char *err = NULL;

		snprintf(buf, sizeof(buf), P_SRC "%s" T_SRC, bad[i]);
		if (parse_n(buf, 0, &st, &err) != -1 || strcmp(err, "bad src") != 0)
			fail_msg("non-canonical src accepted: %s", bad[i]);
	}
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		struct stamp st;
		const char *err = NULL;

		snprintf(buf, sizeof(buf), P_SRC "%s" T_SRC, good[i]);
		if (parse_n(buf, 0, &st, &err) != 0)
			fail_msg("canonical src refused: %s (%s)", good[i], err);
		assert_string_equal(st.src, good[i]);
	}
}

static void test_verify_fails(void **state)
{
	struct stamp_key k = kat_key(), keys[3];
	size_t len = strlen(KAT_VALUE), i;
	char *g;

	/* wrong key bytes, same kid */
	keys[0] = aa_key(3);
	assert_false(parse_verify(KAT_VALUE, keys, 1, 1000));
	/* right bytes under another kid */
	keys[0] = k;
	keys[0].kid = 4;
	assert_false(parse_verify(KAT_VALUE, keys, 1, 1000));
	/* no keys at all */
	assert_false(parse_verify(KAT_VALUE, keys, 0, 1000));
	/* expired: live only while now < expires */
	keys[0] = k;
	keys[0].expires = 1000;
	assert_true(parse_verify(KAT_VALUE, keys, 1, 999));
	assert_false(parse_verify(KAT_VALUE, keys, 1, 1000));
	assert_false(parse_verify(KAT_VALUE, keys, 1, 5000));
	/* found among others */
	keys[0] = aa_key(1);
	keys[1] = aa_key(2);
	keys[1].expires = 10;
	keys[2] = k;
	assert_true(parse_verify(KAT_VALUE, keys, 3, 1000));

	/* the MAC covers as=: dropped, added or changed, it no longer verifies */
	keys[0] = k;
	assert_true(parse_verify(KATB_VALUE, keys, 1, 1000));
	assert_false(parse_verify(KAT_SIGNED "; mac=" KATB_MAC, keys, 1, 1000));
	assert_false(parse_verify(KATB_SIGNED "; mac=" KAT_MAC, keys, 1, 1000));
	assert_false(parse_verify("v=1; kid=3; src=10.88.0.5; net=podman; as=build:crun-buildah-"
				  "buildah8; boot=" KAT_BOOT "; seq=42; mac=" KATB_MAC,
				  keys, 1, 1000));
	assert_false(parse_verify("v=1; kid=3; src=10.88.0.5; net=podman; as=user; boot=" KAT_BOOT
				  "; seq=42; mac=" KAT_MAC,
				  keys, 1, 1000));

	/* any single changed byte: refused by the parser or by the MAC */
	g = guard_copy(KAT_VALUE, len);
	for (i = 0; i < len; i++) {
		static const unsigned char flips[] = { 0x01, 0x02, 0x20 };
		size_t f;

		for (f = 0; f < sizeof(flips); f++) {
			struct stamp st;
			const char *err = NULL;

			g[i] = (char)(g[i] ^ flips[f]);
			if (stamp_parse(g, len, &st, &err) == 0 && stamp_verify(&st, g, &k, 1, 1))
				fail_msg("tampered byte %zu (^0x%02x) verified", i, flips[f]);
			g[i] = (char)(g[i] ^ flips[f]);
		}
	}
	guard_free(g, len);
	len = strlen(KATA_VALUE);
	g = guard_copy(KATA_VALUE, len);
	for (i = 0; i < len; i++) {
		struct stamp st;
		const char *err = NULL;

		g[i] = (char)(g[i] ^ 0x01);
		if (stamp_parse(g, len, &st, &err) == 0 && stamp_verify(&st, g, &k, 1, 1))
			fail_msg("tampered byte %zu of the as= stamp verified", i);
		g[i] = (char)(g[i] ^ 0x01);
	}
	guard_free(g, len);
}

static void test_format_invalid(void **state)
{
	struct stamp good = { .version = 1, .kid = 3, .seq = 42 }, st;
	struct stamp_key k = kat_key();
	char out[STAMP_VALUE_MAX];

	strcpy(good.src, "10.88.0.5");
	strcpy(good.net, "podman");
	strcpy(good.boot, KAT_BOOT);
	assert_int_equal(stamp_format(&good, &k, out, sizeof(out)), (int)strlen(KAT_VALUE));
	/* too small by one, or not even the signed part */
	assert_int_equal(stamp_format(&good, &k, out, strlen(KAT_VALUE)), -1);
	assert_int_equal(stamp_format(&good, &k, out, 10), -1);

	st = good;
	st.version = 2;
	assert_int_equal(stamp_format(&st, &k, out, sizeof(out)), -1);
	st = good;
	st.kid = 0;
	k.kid = 0;
	assert_int_equal(stamp_format(&st, &k, out, sizeof(out)), -1);
	k = kat_key();
	st = good;
	st.kid = 4; /* names a key other than the one signing */
	assert_int_equal(stamp_format(&st, &k, out, sizeof(out)), -1);
	st = good;
	st.seq = (uint64_t)1 << 63;
	assert_int_equal(stamp_format(&st, &k, out, sizeof(out)), -1);
	st = good;
	strcpy(st.src, "010.88.0.5");
	assert_int_equal(stamp_format(&st, &k, out, sizeof(out)), -1);
	st = good;
	memset(st.src, '1', sizeof(st.src)); /* no NUL */
	assert_int_equal(stamp_format(&st, &k, out, sizeof(out)), -1);
	st = good;
	strcpy(st.net, "");
	assert_int_equal(stamp_format(&st, &k, out, sizeof(out)), -1);
	st = good;
	strcpy(st.net, "pod;man");
	assert_int_equal(stamp_format(&st, &k, out, sizeof(out)), -1);
	st = good;
	memset(st.net, 'n', sizeof(st.net)); /* no NUL */
	assert_int_equal(stamp_format(&st, &k, out, sizeof(out)), -1);
	st = good;
	strcpy(st.as, "us er");
	assert_int_equal(stamp_format(&st, &k, out, sizeof(out)), -1);
	st = good;
	strcpy(st.as, "a;b");
	assert_int_equal(stamp_format(&st, &k, out, sizeof(out)), -1);
	st = good;
	memset(st.as, 'a', sizeof(st.as)); /* no NUL */
	assert_int_equal(stamp_format(&st, &k, out, sizeof(out)), -1);
	st = good;
	memset(st.as, 'a', STAMP_AS_MAX); /* exactly the longest */
	st.as[STAMP_AS_MAX] = '\0';
	assert_true(stamp_format(&st, &k, out, sizeof(out)) > 0);
	st = good;
	strcpy(st.boot, "9F2C4E6A8B0D1F37");
	assert_int_equal(stamp_format(&st, &k, out, sizeof(out)), -1);
	st = good;
	strcpy(st.boot, "9f2c");
	assert_int_equal(stamp_format(&st, &k, out, sizeof(out)), -1);
}

static int keys_parse_str(const char *s, struct stamp_key *out, size_t max, size_t *n,
			  size_t *line, const char **err)
{
	size_t len = strlen(s);
	char *g = guard_copy(s, len);
	int ret = stamp_keys_parse(g, len, out, max, n, line, err);

	guard_free(g, len);
	return ret;
}

static void test_keys_parse(void **state)
{
	struct stamp_key keys[STAMP_KEYS_MAX];
	size_t n = 99, line = 99;
	const char *err = NULL;
	uint8_t aa[32], bb[32];

	memset(aa, 0xaa, sizeof(aa));
	memset(bb, 0xbb, sizeof(bb));
	assert_int_equal(keys_parse_str("# sluice stamp keys v1\n"
					"\n"
					"1\t" HEX_AA " 1700000000\n"
					"# rotated in\n"
					"4294967295 " HEX_BB,
					keys, STAMP_KEYS_MAX, &n, &line, &err),
			 0);
	assert_int_equal(n, 2);
	assert_int_equal(keys[0].kid, 1);
	assert_memory_equal(keys[0].key, aa, 32);
	assert_true(keys[0].expires == 1700000000);
	assert_int_equal(keys[1].kid, 4294967295u);
	assert_memory_equal(keys[1].key, bb, 32);
	assert_true(keys[1].expires == 0);

	/* only expiring keys, and an empty file, are fine */
	assert_int_equal(keys_parse_str("1 " HEX_AA "\t5\n2 " HEX_BB " 6\n", keys, 2, &n, &line,
					&err),
			 0);
	assert_int_equal(n, 2);
	assert_int_equal(keys_parse_str("", keys, 2, &n, &line, &err), 0);
	assert_int_equal(n, 0);
	assert_int_equal(keys_parse_str("# only a comment\n\n", keys, 2, &n, &line, &err), 0);
	assert_int_equal(n, 0);
	/* exactly max */
	assert_int_equal(keys_parse_str("1 " HEX_AA " 5\n2 " HEX_BB "\n", keys, 2, &n, &line,
					&err),
			 0);
	assert_int_equal(n, 2);
}

struct key_bad {
	const char *in;
	size_t max;
	size_t line;
	const char *err;
};

static const struct key_bad key_bads[] = {
	{ "0 " HEX_AA "\n", 4, 1, "bad kid" },
	{ "01 " HEX_AA "\n", 4, 1, "bad kid" },
	{ "x " HEX_AA "\n", 4, 1, "bad kid" },
	{ "4294967296 " HEX_AA "\n", 4, 1, "bad kid" },
	{ " 1 " HEX_AA "\n", 4, 1, "bad kid" },
	{ " \n", 4, 1, "bad kid" },
	{ "# c\n\n1\n", 4, 3, "expected key after kid" },
	{ "1  " HEX_AA "\n", 4, 1, "bad key: want 64 lowercase hex digits" },
	{ "1 AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n", 4, 1,
	  "bad key: want 64 lowercase hex digits" },
	{ "1 aaaa\n", 4, 1, "bad key: want 64 lowercase hex digits" },
	{ "1 " HEX_AA "a\n", 4, 1, "bad key: want 64 lowercase hex digits" },
	{ "1 " HEX_AA "\r\n", 4, 1, "bad key: want 64 lowercase hex digits" },
	{ "1 " HEX_AA " \n", 4, 1, "bad expiry" },
	{ "1 " HEX_AA " 0\n", 4, 1, "bad expiry" },
	{ "1 " HEX_AA " 05\n", 4, 1, "bad expiry" },
	{ "1 " HEX_AA " -5\n", 4, 1, "bad expiry" },
	{ "1 " HEX_AA " 99999999999999999999\n", 4, 1, "bad expiry" },
	{ "1 " HEX_AA " 5 \n", 4, 1, "trailing bytes after expiry" },
	{ "1 " HEX_AA " 5 6\n", 4, 1, "trailing bytes after expiry" },
	{ "# keys\n1 " HEX_AA "\n2 " HEX_BB " 7\n1 " HEX_BB " 9\n", 4, 4, "duplicate kid" },
	{ "# keys\n\n1 " HEX_AA "\n2 " HEX_BB "\n", 4, 4,
	  "two current keys (only one may lack an expiry)" },
	{ "1 " HEX_AA " 1\n2 " HEX_BB " 2\n3 " HEX_AA "\n", 2, 3, "too many keys" },
	{ "1 " HEX_AA "\n", 0, 1, "too many keys" },
};

static void test_keys_errors(void **state)
{
	struct stamp_key keys[STAMP_KEYS_MAX];
	size_t i;

	for (i = 0; i < sizeof(key_bads) / sizeof(key_bads[0]); i++) {
		size_t n = 99, line = 0;
		const char *err = NULL;

		if (keys_parse_str(key_bads[i].in, keys, key_bads[i].max, &n, &line, &err) != -1)
			fail_msg("key case %zu accepted", i);
		if (line != key_bads[i].line || err == NULL || strcmp(err, key_bads[i].err) != 0)
			fail_msg("key case %zu: line %zu \"%s\", want line %zu \"%s\"", i, line,
				 err ? err : "(null)", key_bads[i].line, key_bads[i].err);
		assert_int_equal(n, 0);
	}
}

static void test_keys_write(void **state)
{
	struct stamp_key keys[3] = { aa_key(1), kat_key(), aa_key(4294967295u) }, back[3];
	char *text = NULL;
	size_t textlen = 0, n = 0, line = 0, i;
	const char *err = NULL;
	FILE *f;

	keys[0].expires = 1700000000;
	keys[2].expires = 253402300799; /* 9999-12-31 */
	memset(keys[2].key, 0x5c, sizeof(keys[2].key));
	f = open_memstream(&text, &textlen);
	assert_non_null(f);
	assert_int_equal(stamp_keys_write(f, keys, 3), 0);
	assert_int_equal(fclose(f), 0);
	assert_string_equal(text, "# sluice stamp keys v1\n"
				  "1 " HEX_AA " 1700000000\n"
				  "3 " KAT_KEY_HEX "\n"
				  "4294967295 "
				  "5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c"
				  " 253402300799\n");
	assert_int_equal(keys_parse_str(text, back, 3, &n, &line, &err), 0);
	assert_int_equal(n, 3);
	for (i = 0; i < 3; i++) {
		assert_int_equal(back[i].kid, keys[i].kid);
		assert_memory_equal(back[i].key, keys[i].key, sizeof(keys[i].key));
		assert_true(back[i].expires == keys[i].expires);
	}
	free(text);
	text = NULL;

	/* what the parser would refuse is not written */
	f = open_memstream(&text, &textlen);
	assert_non_null(f);
	keys[1].kid = 0;
	assert_int_equal(stamp_keys_write(f, keys, 3), -1);
	keys[1].kid = 3;
	keys[1].expires = -1;
	assert_int_equal(stamp_keys_write(f, keys, 3), -1);
	assert_int_equal(stamp_keys_write(f, keys, 0), 0);
	fclose(f);
	free(text);
}

static struct stamp_replay *replay_new(void)
{
	struct stamp_replay *r = calloc(1, sizeof(*r));

	assert_non_null(r);
	return r;
}

#define BOOT_A "aaaaaaaaaaaaaaaa"
#define BOOT_B "bbbbbbbbbbbbbbbb"

static void test_replay_order(void **state)
{
	struct stamp_replay *r = replay_new();
	uint64_t s;

	/* in order, far past the window size */
	for (s = 0; s < 3000; s++)
		assert_true(stamp_replay_check(r, BOOT_A, s));
	for (s = 3000 - STAMP_WINDOW; s < 3000; s++)
		assert_false(stamp_replay_check(r, BOOT_A, s));
	assert_false(stamp_replay_check(r, BOOT_A, 0));
	/* another boot is independent */
	assert_true(stamp_replay_check(r, BOOT_B, 2999));
	assert_true(stamp_replay_check(r, BOOT_B, 2000));
	assert_false(stamp_replay_check(r, BOOT_B, 2000));
	free(r);

	/* out of order inside the window; duplicates refused */
	r = replay_new();
	assert_true(stamp_replay_check(r, BOOT_A, 10));
	assert_true(stamp_replay_check(r, BOOT_A, 5));
	assert_true(stamp_replay_check(r, BOOT_A, 7));
	assert_true(stamp_replay_check(r, BOOT_A, 6));
	assert_true(stamp_replay_check(r, BOOT_A, 0));
	assert_false(stamp_replay_check(r, BOOT_A, 5));
	assert_false(stamp_replay_check(r, BOOT_A, 10));
	assert_false(stamp_replay_check(r, BOOT_A, 0));
	assert_true(stamp_replay_check(r, BOOT_A, 9));
	assert_true(stamp_replay_check(r, BOOT_A, 11));
	assert_false(stamp_replay_check(r, BOOT_A, 11));
	free(r);
}

static void test_replay_window(void **state)
{
	struct stamp_replay *r = replay_new();
	uint64_t s;

	/* too old: the window is [top - STAMP_WINDOW, top) with top = highest + 1 */
	assert_true(stamp_replay_check(r, BOOT_A, 5000));
	assert_false(stamp_replay_check(r, BOOT_A, 5000 - STAMP_WINDOW));
	assert_false(stamp_replay_check(r, BOOT_A, 0));
	assert_true(stamp_replay_check(r, BOOT_A, 5001 - STAMP_WINDOW));
	assert_false(stamp_replay_check(r, BOOT_A, 5001 - STAMP_WINDOW));
	free(r);

	/* a jump inside the window keeps what the window still covers */
	r = replay_new();
	for (s = 0; s < 10; s++)
		assert_true(stamp_replay_check(r, BOOT_A, s));
	assert_true(stamp_replay_check(r, BOOT_A, 1030)); /* top 1031: window from 7 */
	assert_false(stamp_replay_check(r, BOOT_A, 6));
	assert_false(stamp_replay_check(r, BOOT_A, 7));
	assert_false(stamp_replay_check(r, BOOT_A, 9));
	assert_true(stamp_replay_check(r, BOOT_A, 10));
	assert_true(stamp_replay_check(r, BOOT_A, 1029));
	assert_true(stamp_replay_check(r, BOOT_A, 500));
	free(r);

	/* a slot reused by the ring is cleared: 0 then 1024 share a bit */
	r = replay_new();
	assert_true(stamp_replay_check(r, BOOT_A, 0));
	assert_true(stamp_replay_check(r, BOOT_A, STAMP_WINDOW));
	assert_true(stamp_replay_check(r, BOOT_A, 1));
	assert_false(stamp_replay_check(r, BOOT_A, 0));
	assert_true(stamp_replay_check(r, BOOT_A, 3 * STAMP_WINDOW + 1));
	assert_true(stamp_replay_check(r, BOOT_A, 2 * STAMP_WINDOW + 2));
	assert_false(stamp_replay_check(r, BOOT_A, 2 * STAMP_WINDOW + 1));
	free(r);

	/* a huge jump, the largest valid seq, and beyond it */
	r = replay_new();
	assert_true(stamp_replay_check(r, BOOT_A, 0));
	assert_true(stamp_replay_check(r, BOOT_A, 100000));
	assert_false(stamp_replay_check(r, BOOT_A, 0));
	assert_true(stamp_replay_check(r, BOOT_A, 99999));
	assert_true(stamp_replay_check(r, BOOT_A, 9223372036854775807ull));
	assert_false(stamp_replay_check(r, BOOT_A, 9223372036854775807ull));
	assert_true(stamp_replay_check(r, BOOT_A, 9223372036854775806ull));
	assert_false(stamp_replay_check(r, BOOT_A, 9223372036854775808ull));
	assert_false(stamp_replay_check(r, BOOT_B, UINT64_MAX));
	free(r);
}

static void boot_name(char out[17], unsigned i)
{
	snprintf(out, 17, "%016x", i);
}

static void test_replay_eviction(void **state)
{
	struct stamp_replay *r = replay_new();
	char b[17];
	unsigned i;

	for (i = 0; i < STAMP_BOOTS; i++) {
		boot_name(b, i);
		assert_true(stamp_replay_check(r, b, 0));
	}
	/* all 64 still remembered */
	for (i = 0; i < STAMP_BOOTS; i++) {
		boot_name(b, i);
		assert_false(stamp_replay_check(r, b, 0));
	}
	/* touch boot 0, so boot 1 is now the least recently used */
	boot_name(b, 0);
	assert_true(stamp_replay_check(r, b, 1));
	boot_name(b, STAMP_BOOTS);
	assert_true(stamp_replay_check(r, b, 0));
	assert_false(stamp_replay_check(r, b, 0));
	/* boot 1 was evicted and is forgotten; boot 0 is not */
	boot_name(b, 1);
	assert_true(stamp_replay_check(r, b, 0)); /* evicts boot 2 */
	boot_name(b, 0);
	assert_false(stamp_replay_check(r, b, 0));
	assert_false(stamp_replay_check(r, b, 1));
	boot_name(b, 2);
	assert_true(stamp_replay_check(r, b, 0));
	/* many more boots than slots */
	for (i = 100; i < 100 + 4 * STAMP_BOOTS; i++) {
		boot_name(b, i);
		assert_true(stamp_replay_check(r, b, 7));
		assert_false(stamp_replay_check(r, b, 7));
	}
	/* the last STAMP_BOOTS are remembered, the one before is not */
	for (i = 100 + 3 * STAMP_BOOTS; i < 100 + 4 * STAMP_BOOTS; i++) {
		boot_name(b, i);
		assert_false(stamp_replay_check(r, b, 7));
	}
	boot_name(b, 100 + 3 * STAMP_BOOTS - 1);
	assert_true(stamp_replay_check(r, b, 7));
	free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_known_answer),   cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_malformed),      cmocka_unit_test(test_src_canonical),
		cmocka_unit_test(test_verify_fails),   cmocka_unit_test(test_format_invalid),
		cmocka_unit_test(test_keys_parse),     cmocka_unit_test(test_keys_errors),
		cmocka_unit_test(test_keys_write),     cmocka_unit_test(test_replay_order),
		cmocka_unit_test(test_replay_window),  cmocka_unit_test(test_replay_eviction),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
