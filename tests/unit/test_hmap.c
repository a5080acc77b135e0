/*
 * test_hmap.c: the hash table and its keyed hash (hmap.h): SipHash-2-4's
 * published vector, one message under two keys, nodes under one hash
 * (collisions) told apart by key, growth keeping every node findable,
 * a table that may not grow, removal while iterating, and hmap_pop.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "hmap.h"

struct item {
	struct hmap_node node;
	int key;
	bool seen;
};

/* The item in m whose key is key, under hash h; NULL none. */
static struct item *lookup(const struct hmap *m, uint64_t h, int key)
{
	for (struct hmap_node *n = hmap_find(m, h); n != NULL; n = hmap_find_next(n)) {
		struct item *it = hmap_entry(n, struct item, node);

		if (it->key == key)
			return it;
	}
	return NULL;
}

static uint64_t hash_int(const struct hmap *m, int key)
{
	return hmap_hash(m, &key, sizeof(key));
}

/* The vector of the SipHash paper (appendix A): key 00..0f, message 00..0e. */
static void test_siphash_vector(void **state)
{
	struct hmap_key k = { 0x0706050403020100ull, 0x0f0e0d0c0b0a0908ull };
	uint8_t msg[15];

	for (size_t i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)i;
	assert_true(hmap_siphash(&k, msg, sizeof(msg)) == 0xa129ca6149be45e5ull);
	/* the empty message, from the reference implementation's vectors.h */
	assert_true(hmap_siphash(&k, "", 0) == 0x726fdb47dd0e0e31ull);
}

/* The same bytes under two keys hash apart; so do two tables' hmap_hash. */
static void test_keyed(void **state)
{
	struct hmap_key a = { 1, 2 }, b = { 1, 3 };
	struct hmap m1, m2;
	const char *name = "a.example.com";
	int differ = 0;

	assert_true(hmap_siphash(&a, name, strlen(name)) != hmap_siphash(&b, name, strlen(name)));
	assert_true(hmap_siphash(&a, name, strlen(name)) == hmap_siphash(&a, name, strlen(name)));
	assert_int_equal(hmap_init(&m1, 16, 16), 0);
	assert_int_equal(hmap_init(&m2, 16, 16), 0);
	assert_true(m1.key.k0 != m2.key.k0 || m1.key.k1 != m2.key.k1);
	/* two random keys: a few names, and at least one hashes apart (all 8 alike: 2^-512) */
	for (int i = 0; i < 8; i++) {
		char s[32];

		snprintf(s, sizeof(s), "host%d.example", i);
		differ += hmap_hash(&m1, s, strlen(s)) != hmap_hash(&m2, s, strlen(s));
	}
	assert_true(differ > 0);
	hmap_release(&m1);
	hmap_release(&m2);
}

/* Every node under one hash: each still found by its key, removed one by one. */
static void test_collisions(void **state)
{
	struct hmap m;
	struct item it[20];

	assert_int_equal(hmap_init(&m, 4, 4), 0);
	for (int i = 0; i < 20; i++) {
		it[i].key = i;
		hmap_insert(&m, &it[i].node, 42);
	}
	assert_int_equal(m.count, 20);
	assert_int_equal(m.nbuckets, 4); /* may not grow */
	for (int i = 0; i < 20; i++)
		assert_ptr_equal(lookup(&m, 42, i), &it[i]);
	assert_null(lookup(&m, 42, 20));
	assert_null(lookup(&m, 43, 0));
	/* a hash in the same bucket but not equal is skipped */
	assert_null(hmap_find(&m, 42 + 4));
	for (int i = 0; i < 20; i += 2)
		hmap_remove(&m, &it[i].node);
	assert_int_equal(m.count, 10);
	for (int i = 0; i < 20; i++)
		assert_ptr_equal(lookup(&m, 42, i), i % 2 ? &it[i] : NULL);
	hmap_release(&m);
}

/* A table from 2 buckets up to 1024: every node findable at every size. */
static void test_growth(void **state)
{
	static struct item it[3000];
	struct hmap m;

	assert_int_equal(hmap_init(&m, 2, 1000), 0);
	assert_int_equal(m.nbuckets, 2);
	assert_int_equal(m.max_buckets, 1024);
	for (int i = 0; i < 3000; i++) {
		it[i].key = i;
		hmap_insert(&m, &it[i].node, hash_int(&m, i));
		if (i == 100) {
			assert_int_equal(m.nbuckets, 128);
			for (int j = 0; j <= i; j++)
				assert_ptr_equal(lookup(&m, hash_int(&m, j), j), &it[j]);
		}
	}
	assert_int_equal(m.nbuckets, 1024); /* stopped at its most */
	assert_int_equal(m.count, 3000);
	for (int i = 0; i < 3000; i++)
		assert_ptr_equal(lookup(&m, hash_int(&m, i), i), &it[i]);
	assert_null(lookup(&m, hash_int(&m, 3000), 3000));
	hmap_release(&m);
}

/* Iterating every node once, removing the odd ones meanwhile; then popping the rest. */
static void test_iterate_remove(void **state)
{
	static struct item it[200];
	struct hmap m;
	struct hmap_node *n, *next;
	int visited = 0, popped = 0;

	assert_int_equal(hmap_init(&m, 8, 64), 0);
	assert_null(hmap_first(&m));
	assert_null(hmap_pop(&m));
	for (int i = 0; i < 200; i++) {
		it[i].key = i;
		it[i].seen = false;
		hmap_insert(&m, &it[i].node, hash_int(&m, i) % 5); /* many collisions too */
	}
	for (n = hmap_first(&m); n != NULL; n = next) {
		struct item *x = hmap_entry(n, struct item, node);

		next = hmap_next(&m, n);
		assert_false(x->seen);
		x->seen = true;
		visited++;
		if (x->key % 2)
			hmap_remove(&m, n);
	}
	assert_int_equal(visited, 200);
	assert_int_equal(m.count, 100);
	for (int i = 0; i < 200; i++)
		assert_ptr_equal(lookup(&m, hash_int(&m, i) % 5, i), i % 2 ? NULL : &it[i]);
	while ((n = hmap_pop(&m)) != NULL) {
		assert_int_equal(hmap_entry(n, struct item, node)->key % 2, 0);
		popped++;
	}
	assert_int_equal(popped, 100);
	assert_int_equal(m.count, 0);
	hmap_release(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_siphash_vector),
		cmocka_unit_test(test_keyed),
		cmocka_unit_test(test_collisions),
		cmocka_unit_test(test_growth),
		cmocka_unit_test(test_iterate_remove),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
