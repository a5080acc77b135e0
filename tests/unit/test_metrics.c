/*
 * test_metrics.c: lib/metrics.c's registry and text: a family's series by
 * label values, what a label value may be (a short word, else "other";
 * NULL "none"), the exposition text byte for byte, and what happens past
 * the series pool and the family table. The listener is tested against
 * the real daemons (tests/integ/test_metrics.sh).
 *
 * The registry is process-wide, so the tests run in order on one registry.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "metrics.h"

static char *text(struct buf *b)
{
	buf_init(b, METRICS_OUT_MAX);
	assert_int_equal(metrics_write(b), 0);
	assert_int_equal(buf_append(b, "", 1), 0);
	return buf_head(b);
}

static void test_text(void **state)
{
	struct metrics_family *plain = metrics_family("t_plain_total", METRICS_COUNTER,
						      "A counter", NULL, NULL, NULL);
	struct metrics_family *lab = metrics_family("t_req_total", METRICS_COUNTER, "By kind",
						    "kind", "reason", NULL);
	struct metrics_family *g = metrics_family("t_open", METRICS_GAUGE, "Open now", NULL,
						  NULL, NULL);
	struct buf b;

	assert_ptr_equal(metrics_family("t_plain_total", METRICS_COUNTER, "again", NULL, NULL,
					NULL), plain);
	metrics_inc(plain);
	metrics_add(plain, 41, NULL, NULL, NULL);
	metrics_add(lab, 1, "http", "no-grant", NULL);
	metrics_add(lab, 2, "http", "no-grant", NULL);
	metrics_add(lab, 1, "tunnel", NULL, NULL);
	metrics_add(lab, 1, "api.example.com", "no_grant", NULL); /* a dot: not a code */
	metrics_add(lab, 1, "/secret/path", "x\"y", NULL);
	metrics_add(lab, 1, "", "0123456789012345678901234567890123456789", NULL); /* 40 */
	metrics_add(lab, 1, "a", "01234567890123456789012345678901234567890", NULL); /* 41 */
	metrics_set(g, 7, NULL, NULL, NULL);
	metrics_set(g, 3, NULL, NULL, NULL);
	assert_string_equal(text(&b),
			    "# HELP t_plain_total A counter\n"
			    "# TYPE t_plain_total counter\n"
			    "t_plain_total 42\n"
			    "# HELP t_req_total By kind\n"
			    "# TYPE t_req_total counter\n"
			    "t_req_total{kind=\"http\",reason=\"no-grant\"} 3\n"
			    "t_req_total{kind=\"tunnel\",reason=\"none\"} 1\n"
			    "t_req_total{kind=\"other\",reason=\"no_grant\"} 1\n"
			    "t_req_total{kind=\"other\",reason=\"other\"} 1\n"
			    "t_req_total{kind=\"other\","
			    "reason=\"0123456789012345678901234567890123456789\"} 1\n"
			    "t_req_total{kind=\"a\",reason=\"other\"} 1\n"
			    "# HELP t_open Open now\n"
			    "# TYPE t_open gauge\n"
			    "t_open 3\n");
	buf_release(&b);
}

/* Past the pool, a family's new label values count as its "other" series; NULL does nothing. */
static void test_limits(void **state)
{
	struct metrics_family *f = metrics_family("t_many_total", METRICS_COUNTER, "Many", "n",
						  NULL, NULL);
	struct buf b;
	char v[16], *t;
	unsigned i;

	for (i = 0; i < METRICS_SERIES + 10; i++) {
		snprintf(v, sizeof(v), "v%u", i);
		metrics_add(f, 1, v, NULL, NULL);
	}
	metrics_add(f, 1, "v0", NULL, NULL);
	t = text(&b);
	assert_non_null(strstr(t, "t_many_total{n=\"v0\"} 2\n"));
	assert_non_null(strstr(t, "t_many_total{n=\"other\"} "));
	assert_null(strstr(t, "{n=\"v767\"}")); /* past the pool */
	buf_release(&b);
	/* the table: names must outlive the registry, so static storage */
	for (i = 0; i < METRICS_FAMILIES; i++) {
		static char names[METRICS_FAMILIES][16];

		snprintf(names[i], sizeof(names[i]), "t_fill%u", i);
		if (metrics_family(names[i], METRICS_COUNTER, "Fill", NULL, NULL, NULL) == NULL)
			break;
	}
	assert_int_equal(i, METRICS_FAMILIES - 4); /* four made above */
	assert_null(metrics_family("t_none", METRICS_COUNTER, "None", NULL, NULL, NULL));
	assert_non_null(metrics_family("t_open", METRICS_GAUGE, "Open now", NULL, NULL, NULL));
	metrics_inc(NULL);
	metrics_set(NULL, 1, NULL, NULL, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_text),
		cmocka_unit_test(test_limits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
