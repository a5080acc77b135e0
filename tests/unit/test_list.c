/*
 * test_list.c: the intrusive list (list.h) and the LRU on it (lru.h):
 * insertion at both ends, removal at the head, middle and tail, removal of
 * every other node while iterating, a node on two lists, and the LRU's
 * eviction order as nodes are added, touched and removed.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "list.h"
#include "lru.h"

struct item {
	struct list_node on;    /* a list, or an LRU */
	struct list_node other; /* a second list */
	int key;
};

/* l's keys in order into out; their number. Checks the back links on the way. */
static size_t keys(const struct list *l, int *out, size_t max)
{
	size_t n = 0;
	const struct list_node *prev = NULL;

	for (struct list_node *p = l->first; p != NULL && n < max; p = p->next) {
		assert_ptr_equal(p->prev, prev);
		out[n++] = list_entry(p, struct item, on)->key;
		prev = p;
	}
	assert_ptr_equal(l->last, prev);
	return n;
}

static void expect(const struct list *l, const int *want, size_t n)
{
	int got[32];

	assert_int_equal(keys(l, got, 32), n);
	assert_memory_equal(got, want, n * sizeof(int));
}

static void test_insert_remove(void **state)
{
	struct list l;
	struct item it[5];

	memset(&l, 0, sizeof(l));
	memset(it, 0, sizeof(it));
	assert_true(list_empty(&l));
	assert_null(list_entry(l.first, struct item, on));
	for (int i = 0; i < 5; i++)
		it[i].key = i;
	list_insert_tail(&l, &it[2].on);
	list_insert_head(&l, &it[1].on);
	list_insert_tail(&l, &it[3].on);
	list_insert_head(&l, &it[0].on);
	list_insert_tail(&l, &it[4].on);
	expect(&l, (int[]){ 0, 1, 2, 3, 4 }, 5);
	list_remove(&l, &it[2].on); /* middle */
	assert_null(it[2].on.prev);
	assert_null(it[2].on.next);
	expect(&l, (int[]){ 0, 1, 3, 4 }, 4);
	list_remove(&l, &it[0].on); /* head */
	expect(&l, (int[]){ 1, 3, 4 }, 3);
	list_remove(&l, &it[4].on); /* tail */
	expect(&l, (int[]){ 1, 3 }, 2);
	list_remove(&l, &it[1].on);
	list_remove(&l, &it[3].on);
	assert_true(list_empty(&l));
	assert_null(l.last);
	list_insert_head(&l, &it[4].on); /* reusable once off */
	expect(&l, (int[]){ 4 }, 1);
}

/* Removing the node in hand (every other one, the first and the last) while iterating. */
static void test_foreach_remove(void **state)
{
	struct list l, two;
	struct item it[10];
	struct list_node *n, *tmp;
	int visited = 0;

	memset(&l, 0, sizeof(l));
	memset(&two, 0, sizeof(two));
	memset(it, 0, sizeof(it));
	for (int i = 0; i < 10; i++) {
		it[i].key = i;
		list_insert_tail(&l, &it[i].on);
		list_insert_head(&two, &it[i].other);
	}
	list_foreach_safe(n, tmp, &l) {
		struct item *x = list_entry(n, struct item, on);

		assert_int_equal(x->key, visited++);
		if (x->key % 2 == 0 || x->key == 9)
			list_remove(&l, n);
	}
	assert_int_equal(visited, 10);
	expect(&l, (int[]){ 1, 3, 5, 7 }, 4);
	list_foreach_safe(n, tmp, &l)
		list_remove(&l, n);
	assert_true(list_empty(&l));
	/* the second list, through its own node, is untouched: 9 down to 0 */
	visited = 9;
	for (n = two.first; n != NULL; n = n->next)
		assert_int_equal(list_entry(n, struct item, other)->key, visited--);
	assert_int_equal(visited, -1);
}

/* The LRU gives up nodes least recently used first: added order, changed by touches. */
static void test_lru_order(void **state)
{
	struct lru u;
	struct item it[6];
	int order[6];
	size_t n = 0;

	memset(&u, 0, sizeof(u));
	memset(it, 0, sizeof(it));
	assert_null(lru_oldest(&u));
	for (int i = 0; i < 6; i++) {
		it[i].key = i;
		lru_add(&u, &it[i].on);
	}
	assert_int_equal(u.count, 6);
	assert_ptr_equal(lru_newest(&u), &it[5].on);
	lru_touch(&u, &it[0].on); /* the oldest, now the newest */
	lru_touch(&u, &it[3].on);
	lru_touch(&u, &it[3].on); /* the newest already: stays */
	lru_remove(&u, &it[4].on);
	assert_int_equal(u.count, 5);
	lru_touch(&u, &it[1].on);
	/* eviction order: 2, 5, 0, 3, 1 */
	while (lru_oldest(&u) != NULL) {
		struct list_node *o = lru_oldest(&u);

		order[n++] = list_entry(o, struct item, on)->key;
		lru_remove(&u, o);
	}
	assert_int_equal(n, 5);
	assert_memory_equal(order, ((int[]){ 2, 5, 0, 3, 1 }), 5 * sizeof(int));
	assert_int_equal(u.count, 0);
	assert_true(list_empty(&u.list));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_insert_remove),
		cmocka_unit_test(test_foreach_remove),
		cmocka_unit_test(test_lru_order),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
