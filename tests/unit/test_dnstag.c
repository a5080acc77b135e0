/*
 * test_dnstag.c: the asker tag of DNS queries: dnstag_add and
 * dnstag_take, what is believed and what is stripped.
 *
 * Inputs are placed right before a PROT_NONE page (guard.h). The known
 * answer was computed with python3's hmac module from the format in
 * dnstag.h, not with this code.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dnstag.h"
#include "guard.h"

#define NOW 1700000000
/* id 0x1234, n1.wild.test A IN, no EDNS */
#define KAT_QUERY "123401000001000000000000026e310477696c6404746573740000010001"
/* ... tagged: kid 3 (key bytes 0..31), time NOW, src 10.88.0.5, net runA, the OPT added */
#define KAT_TAGGED                                                                       \
	"123401000001000000000001026e310477696c6404746573740000010001000029020000000000003c" \
	"ff200038010100000003000000006553f100040a5800050472756e41de57bbd22410bb6d0f6d502f88" \
	"38b16e54b963ebc3660d5d9256663e72ffe3eb"

static size_t unhex(const char *h, uint8_t *out)
{
	size_t n = strlen(h) / 2;

	for (size_t i = 0; i < n; i++) {
		unsigned v;

		sscanf(h + 2 * i, "%2x", &v);
		out[i] = (uint8_t)v;
	}
	return n;
}

static struct stamp_key test_key(uint32_t kid)
{
	struct stamp_key k = { .kid = kid };

	for (int i = 0; i < STAMP_KEY_BYTES; i++)
		k.key[i] = (uint8_t)i;
	return k;
}

static struct dnstag tag_for(const char *src, const char *net, uint64_t when)
{
	struct dnstag t;

	memset(&t, 0, sizeof(t));
	snprintf(t.src, sizeof(t.src), "%s", src);
	snprintf(t.net, sizeof(t.net), "%s", net);
	t.time = when;
	return t;
}

/* take over a guarded copy of msg[0..len) */
static long take(const uint8_t *msg, size_t len, const struct stamp_key *keys, size_t n,
		 time_t now, uint8_t *out, struct dnstag *t, bool *believed)
{
	char *g = guard_copy(msg, len);
	long r = dnstag_take((const uint8_t *)g, len, out, 4096, keys, n, now, t, believed);

	guard_free(g, len);
	return r;
}

static void test_known_answer(void **state)
{
	uint8_t q[512], want[512], out[512], back[512];
	struct stamp_key k = test_key(3);
	struct dnstag t = tag_for("10.88.0.5", "runA", NOW), seen;
	size_t qlen = unhex(KAT_QUERY, q), wlen = unhex(KAT_TAGGED, want);
	char *g = guard_copy(q, qlen);
	long n = dnstag_add((const uint8_t *)g, qlen, &t, &k, out, sizeof(out));
	bool believed;

	guard_free(g, qlen);
	assert_int_equal(n, (long)wlen);
	assert_memory_equal(out, want, wlen);
	assert_int_equal(t.flags, DNSTAG_F_ADDED);
	/* verified, the tag and the OPT it added gone: the query as the client sent it */
	n = take(out, (size_t)n, &k, 1, NOW + 5, back, &seen, &believed);
	assert_true(believed);
	assert_int_equal(n, (long)qlen);
	assert_memory_equal(back, q, qlen);
	assert_string_equal(seen.net, "runA");
	assert_string_equal(seen.src, "10.88.0.5");
	assert_int_equal(seen.kid, 3);
}

/* A query with EDNS: a cookie option (10) and, optionally, a tag of the client's. */
static size_t edns_query(uint8_t *m, const uint8_t *client_tag, size_t tag_len)
{
	static const uint8_t head[] = { 0xab, 0xcd, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 1,
					3,    'a',  'p',  'i',  4, 't', 'e', 's', 't', 0,
					0,    28,   0,    1 };
	static const uint8_t cookie[] = { 0, 10, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8 };
	size_t n = sizeof(head), rdlen = sizeof(cookie) + tag_len;

	memcpy(m, head, n);
	m[n++] = 0;
	m[n++] = 0;
	m[n++] = 41;
	m[n++] = 0x04; /* 1232 */
	m[n++] = 0xd0;
	m[n++] = 0;
	m[n++] = 0;
	m[n++] = 0x80; /* DO */
	m[n++] = 0;
	m[n++] = (uint8_t)(rdlen >> 8);
	m[n++] = (uint8_t)rdlen;
	memcpy(m + n, cookie, sizeof(cookie));
	n += sizeof(cookie);
	if (tag_len > 0)
		memcpy(m + n, client_tag, tag_len);
	return n + tag_len;
}

static void test_client_tag_replaced(void **state)
{
	uint8_t forged[4 + 80], q[512], plain[512], out[4096], back[4096];
	struct stamp_key k = test_key(3);
	struct dnstag t = tag_for("2001:db8::5", "runA", NOW), seen;
	size_t qlen, plen = edns_query(plain, NULL, 0);
	long n;
	bool believed;

	memset(forged, 0x41, sizeof(forged));
	forged[0] = DNSTAG_OPTION >> 8;
	forged[1] = DNSTAG_OPTION & 0xff;
	forged[2] = 0;
	forged[3] = 80;
	qlen = edns_query(q, forged, sizeof(forged));
	n = dnstag_add(q, qlen, &t, &k, out, sizeof(out));
	assert_true(n > 0);
	assert_int_equal(t.flags, 0); /* the client's OPT was kept */
	n = take(out, (size_t)n, &k, 1, NOW, back, &seen, &believed);
	assert_true(believed);
	assert_string_equal(seen.net, "runA");
	assert_string_equal(seen.src, "2001:db8::5");
	/* the client's OPT, cookie and DO bit kept; both tags gone */
	assert_int_equal(n, (long)plen);
	assert_memory_equal(back, plain, plen);

	/* the client's tag alone, straight to the verifier: stripped, not believed */
	n = take(q, qlen, &k, 1, NOW, back, &seen, &believed);
	assert_false(believed);
	assert_int_equal(n, (long)plen);
	assert_memory_equal(back, plain, plen);
	assert_string_equal(seen.net, "");
}

static void test_not_believed(void **state)
{
	uint8_t q[512], out[512], bad[512], back[4096];
	struct stamp_key k = test_key(3), other = test_key(4), expired = test_key(3);
	struct dnstag t = tag_for("10.88.0.5", "runA", NOW), seen;
	size_t qlen = unhex(KAT_QUERY, q);
	long n = dnstag_add(q, qlen, &t, &k, out, sizeof(out)), m;
	bool believed;

	assert_true(n > 0);
	m = take(out, (size_t)n, &k, 1, NOW + DNSTAG_WINDOW, back, &seen, &believed);
	assert_true(believed && m == (long)qlen);
	/* outside the window, either way */
	take(out, (size_t)n, &k, 1, NOW + DNSTAG_WINDOW + 1, back, &seen, &believed);
	assert_false(believed);
	take(out, (size_t)n, &k, 1, NOW - DNSTAG_WINDOW - 1, back, &seen, &believed);
	assert_false(believed);
	/* no key of that kid; a key past its grace */
	take(out, (size_t)n, &other, 1, NOW, back, &seen, &believed);
	assert_false(believed);
	expired.expires = NOW - 1;
	take(out, (size_t)n, &expired, 1, NOW, back, &seen, &believed);
	assert_false(believed);
	take(out, (size_t)n, &k, 0, NOW, back, &seen, &believed);
	assert_false(believed);
	/* one byte changed: the id, the question (a tag copied onto another query), the
	 * flags, the time, the net, the MAC: stripped all the same, never believed */
	static const size_t at[] = { 0, 13, 28, 46, 52, 66, 100 };

	assert_int_equal(n, 101);
	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		memcpy(bad, out, (size_t)n);
		bad[at[i]] ^= 1;
		m = take(bad, (size_t)n, &k, 1, NOW, back, &seen, &believed);
		assert_false(believed);
		assert_int_equal(m, n - 4 - 56); /* the OPT stays, empty: not believed, not removed */
		assert_int_equal(back[11], 1);
	}
}

static void test_two_tags(void **state)
{
	uint8_t q[512], out[512], two[512], back[4096];
	struct stamp_key k = test_key(3);
	struct dnstag t = tag_for("10.88.0.5", "runA", NOW), seen;
	size_t qlen = unhex(KAT_QUERY, q);
	long n = dnstag_add(q, qlen, &t, &k, out, sizeof(out)), m;
	bool believed;

	/* the forwarder's own tag twice: neither is believed, both go */
	memcpy(two, out, (size_t)n);
	memcpy(two + n, out + 41, 60);
	two[40] = 120;
	m = take(two, (size_t)n + 60, &k, 1, NOW, back, &seen, &believed);
	assert_false(believed);
	assert_int_equal(m, 41);
}

static void test_malformed(void **state)
{
	uint8_t q[512], out[512], bad[512], back[4096];
	struct stamp_key k = test_key(3);
	struct dnstag t = tag_for("10.88.0.5", "runA", NOW), seen;
	size_t qlen = unhex(KAT_QUERY, q);
	long n = dnstag_add(q, qlen, &t, &k, out, sizeof(out));
	bool believed;

	/* every truncation of a tagged query reads as no query */
	for (size_t len = 0; len < (size_t)n; len++)
		assert_int_equal(take(out, len, &k, 1, NOW, back, &seen, &believed), -1);
	/* an option running past the OPT's data; trailing bytes; two questions */
	memcpy(bad, out, (size_t)n);
	bad[44] = 57;
	assert_int_equal(take(bad, (size_t)n, &k, 1, NOW, back, &seen, &believed), -1);
	assert_int_equal(dnstag_add(bad, (size_t)n, &t, &k, back, 4096), -1);
	memcpy(bad, out, (size_t)n);
	bad[n] = 0;
	assert_int_equal(take(bad, (size_t)n + 1, &k, 1, NOW, back, &seen, &believed), -1);
	memcpy(bad, q, qlen);
	bad[5] = 2;
	assert_int_equal(dnstag_add(bad, qlen, &t, &k, back, 4096), -1);
	/* a tag that cannot be written: a bad net, a bad address, no room */
	t = tag_for("10.88.0.5", "run A", NOW);
	assert_int_equal(dnstag_add(q, qlen, &t, &k, back, 4096), -1);
	t = tag_for("10.88.0.500", "runA", NOW);
	assert_int_equal(dnstag_add(q, qlen, &t, &k, back, 4096), -1);
	t = tag_for("10.88.0.5", "runA", NOW);
	assert_int_equal(dnstag_add(q, qlen, &t, &k, back, (size_t)n - 1), -1);
	assert_int_equal(dnstag_add(q, qlen, &t, &k, back, (size_t)n), n);
	assert_true((size_t)n <= qlen + DNSTAG_GROW);
	(void)believed;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_known_answer),
		cmocka_unit_test(test_client_tag_replaced),
		cmocka_unit_test(test_not_believed),
		cmocka_unit_test(test_two_tags),
		cmocka_unit_test(test_malformed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
