/*
 * test_proxy_stats.c: the proxy's metrics (proxy/stats.c) as a scrape
 * reads them (metrics_write): every family there at 0 before anything is
 * counted; one request per row by kind, decision and reason ("none"
 * without one), its bytes up and down; a quiet row counted in
 * sluice_proxy_quiet_total alone, never as a request or bytes; handshakes by side and result, leaf-cache hits
 * and misses, token runs, reloads; no host, path or client ever a label.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "proxy_fakes.h"

static char *scrape(void)
{
	struct buf b;
	char *out;

	buf_init(&b, METRICS_OUT_MAX);
	assert_int_equal(metrics_write(&b), 0);
	out = strndup(buf_head(&b), buf_len(&b));
	buf_release(&b);
	return out;
}

/* The line "series value" is in text, whole. */
static void assert_line(const char *text, const char *line)
{
	size_t n = strlen(line);
	const char *p = text;

	while ((p = strstr(p, line)) != NULL) {
		if ((p == text || p[-1] == '\n') && p[n] == '\n')
			return;
		p++;
	}
	print_error("no line \"%s\" in:\n%s\n", line, text);
	fail();
}

static struct netlog_row row(const char *kind, const char *decision, const char *reason,
			     uint64_t up, uint64_t down)
{
	struct netlog_row r;

	memset(&r, 0, sizeof(r));
	r.kind = kind;
	r.decision = decision;
	r.reason = reason;
	r.up = up;
	r.down = down;
	r.host = "secret-host.example";
	r.path = "/secret/path";
	r.path_len = 12;
	r.client = "127.0.0.9:5555";
	return r;
}

static void test_counts(void **state)
{
	struct fake_proxy *fp = fake_proxy_new("");
	struct netlog_row r;
	char *t;

	assert_int_equal(stats_init(&fp->px), 0);
	assert_null(fp->px.metrics); /* metrics-listen not given: no listener */
	t = scrape();
	assert_line(t, "sluice_proxy_quiet_total 0");
	assert_line(t, "sluice_proxy_bytes_total{direction=\"up\"} 0");
	assert_line(t, "sluice_proxy_bytes_total{direction=\"down\"} 0");
	assert_line(t, "sluice_proxy_leaf_cache_total{result=\"hit\"} 0");
	assert_line(t, "sluice_proxy_leaf_cache_total{result=\"miss\"} 0");
	assert_line(t, "sluice_proxy_token_runs_total{result=\"minted\"} 0");
	assert_line(t, "sluice_proxy_token_runs_total{result=\"failed\"} 0");
	assert_line(t, "sluice_proxy_reloads_total{result=\"ok\"} 0");
	assert_line(t, "sluice_proxy_reloads_total{result=\"failed\"} 0");
	assert_null(strstr(t, "sluice_proxy_requests_total{"));
	free(t);

	r = row("http", "allow", NULL, 100, 2000);
	stats_row(&r);
	stats_row(&r);
	r = row("tunnel", "refuse", "not-granted", 0, 0);
	stats_row(&r);
	r = row("https", "observe", "budget", 7, 0);
	stats_row(&r);
	/* an agent's telemetry: quiet alone, its bytes not counted */
	r = row("https", "refuse", "quiet", 50, 60);
	stats_row(&r);
	stats_row(&r);
	stats_row(&r);
	stats_handshake(false, true);
	stats_handshake(true, false);
	stats_handshake(true, false);
	stats_leaf(true);
	stats_leaf(false);
	stats_leaf(false);
	stats_token(true);
	stats_token(false);
	stats_reload(false);

	t = scrape();
	assert_line(t, "sluice_proxy_requests_total{kind=\"http\",decision=\"allow\",reason=\"none\"} 2");
	assert_line(t, "sluice_proxy_requests_total{kind=\"tunnel\",decision=\"refuse\",reason=\"not-granted\"} 1");
	assert_line(t, "sluice_proxy_requests_total{kind=\"https\",decision=\"observe\",reason=\"budget\"} 1");
	assert_null(strstr(t, "reason=\"quiet\""));
	assert_line(t, "sluice_proxy_quiet_total 3");
	assert_line(t, "sluice_proxy_bytes_total{direction=\"up\"} 207");
	assert_line(t, "sluice_proxy_bytes_total{direction=\"down\"} 4000");
	assert_line(t, "sluice_proxy_tls_handshakes_total{side=\"client\",result=\"ok\"} 1");
	assert_line(t, "sluice_proxy_tls_handshakes_total{side=\"upstream\",result=\"failed\"} 2");
	assert_line(t, "sluice_proxy_leaf_cache_total{result=\"hit\"} 2");
	assert_line(t, "sluice_proxy_leaf_cache_total{result=\"miss\"} 1");
	assert_line(t, "sluice_proxy_token_runs_total{result=\"minted\"} 1");
	assert_line(t, "sluice_proxy_token_runs_total{result=\"failed\"} 1");
	assert_line(t, "sluice_proxy_reloads_total{result=\"ok\"} 0");
	assert_line(t, "sluice_proxy_reloads_total{result=\"failed\"} 1");
	/* only fixed codes are labels */
	assert_null(strstr(t, "secret"));
	assert_null(strstr(t, "127.0.0.9"));
	free(t);
	stats_release(&fp->px);
	fake_proxy_free(fp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
