/* The Prometheus exposition writer (recorder/recfsd/prom.c): exact output,
 * escaping, number formatting, and every misuse refused. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../recorder/recfsd/prom.h"

/* the body as a string */
static const char *body(struct mx_buf *b)
{
	static char s[1 << 16];
	assert_true(b->len < sizeof(s));
	memcpy(s, b->p ? b->p : "", b->len);
	s[b->len] = 0;
	return s;
}

static void test_family_and_samples(void **state)
{
	struct mx_buf b;
	(void)state;
	mx_buf_init(&b, 0);
	assert_int_equal(mx_family(&b, "recfsd_input_bytes_total", "counter", "Bytes received."), 0);
	assert_int_equal(mx_sample(&b, "recfsd_input_bytes_total", MX_LABELS("input", "udp0"),
				   (uint64_t)123),
			 0);
	assert_int_equal(mx_sample(&b, "recfsd_input_bytes_total",
				   MX_LABELS("input", "udp1", "port", "4001"), 7u),
			 0);
	assert_int_equal(mx_family(&b, "recfsd_ring_fill_bytes", "gauge", "Ring fill."), 0);
	assert_int_equal(mx_sample(&b, "recfsd_ring_fill_bytes", NULL, 0.5), 0);
	assert_string_equal(body(&b), "# HELP recfsd_input_bytes_total Bytes received.\n"
				      "# TYPE recfsd_input_bytes_total counter\n"
				      "recfsd_input_bytes_total{input=\"udp0\"} 123\n"
				      "recfsd_input_bytes_total{input=\"udp1\",port=\"4001\"} 7\n"
				      "# HELP recfsd_ring_fill_bytes Ring fill.\n"
				      "# TYPE recfsd_ring_fill_bytes gauge\n"
				      "recfsd_ring_fill_bytes 0.5\n");
	/* reset: the same families may be declared again for the next scrape */
	mx_buf_reset(&b);
	assert_int_equal(b.len, 0);
	assert_int_equal(mx_family(&b, "recfsd_ring_fill_bytes", "gauge", "Ring fill."), 0);
	mx_buf_free(&b);
}

static void test_label_escaping(void **state)
{
	struct mx_buf b;
	(void)state;
	mx_buf_init(&b, 0);
	mx_family(&b, "x", "gauge", "");
	mx_sample(&b, "x", MX_LABELS("v", "a\\b\"c\nd"), 1);
	mx_sample(&b, "x", MX_LABELS("v", "Mets\xc3\xa4hovi \xe2\x82\xac \xf0\x9f\x93\xa1"), 2);
	/* not UTF-8: a stray byte, an overlong '/', a surrogate, a truncated
	 * sequence, above U+10FFFF: each bad byte becomes U+FFFD */
	mx_sample(&b, "x", MX_LABELS("v", "a\xff" "b"), 3);
	mx_sample(&b, "x", MX_LABELS("v", "\xc0\xaf"), 4);
	mx_sample(&b, "x", MX_LABELS("v", "\xed\xa0\x80"), 5);
	mx_sample(&b, "x", MX_LABELS("v", "\xe2\x82"), 6);
	mx_sample(&b, "x", MX_LABELS("v", "\xf4\x90\x80\x80"), 7);
	mx_sample(&b, "x", MX_LABELS("v", ""), 8);
	assert_int_equal(b.err, 0);
#define R "\xef\xbf\xbd"
	assert_string_equal(body(&b), "# HELP x \n# TYPE x gauge\n"
				      "x{v=\"a\\\\b\\\"c\\nd\"} 1\n"
				      "x{v=\"Mets\xc3\xa4hovi \xe2\x82\xac \xf0\x9f\x93\xa1\"} 2\n"
				      "x{v=\"a" R "b\"} 3\n"
				      "x{v=\"" R R "\"} 4\n"
				      "x{v=\"" R R R "\"} 5\n"
				      "x{v=\"" R R "\"} 6\n"
				      "x{v=\"" R R R R "\"} 7\n"
				      "x{v=\"\"} 8\n");
	/* HELP escapes backslash and newline, not the quote */
	mx_buf_reset(&b);
	mx_family(&b, "y", "untyped", "a\\b \"q\"\nnext");
	assert_string_equal(body(&b), "# HELP y a\\\\b \"q\"\\nnext\n# TYPE y untyped\n");
#undef R
	mx_buf_free(&b);
}

static void test_values(void **state)
{
	struct mx_buf b;
	(void)state;
	mx_buf_init(&b, 0);
	mx_family(&b, "v", "gauge", "h");
	mx_sample(&b, "v", MX_LABELS("k", "u64max"), UINT64_MAX);
	mx_sample(&b, "v", MX_LABELS("k", "i64min"), INT64_MIN);
	mx_sample(&b, "v", MX_LABELS("k", "tenth"), 0.1);
	mx_sample(&b, "v", MX_LABELS("k", "big"), 2e300);
	mx_sample(&b, "v", MX_LABELS("k", "two53p1"), 9007199254740993.0);
	mx_sample(&b, "v", MX_LABELS("k", "third"), 1.0 / 3);
	mx_sample(&b, "v", MX_LABELS("k", "nan"), NAN);
	mx_sample(&b, "v", MX_LABELS("k", "inf"), INFINITY);
	mx_sample(&b, "v", MX_LABELS("k", "ninf"), -INFINITY);
	mx_sample(&b, "v", MX_LABELS("k", "int"), -3);
	mx_sample(&b, "v", MX_LABELS("k", "float"), 1.5f);
	assert_int_equal(b.err, 0);
	assert_string_equal(body(&b), "# HELP v h\n# TYPE v gauge\n"
				      "v{k=\"u64max\"} 18446744073709551615\n"
				      "v{k=\"i64min\"} -9223372036854775808\n"
				      "v{k=\"tenth\"} 0.1\n"
				      "v{k=\"big\"} 2e+300\n"
				      "v{k=\"two53p1\"} 9007199254740992\n"
				      "v{k=\"third\"} 0.3333333333333333\n"
				      "v{k=\"nan\"} NaN\n"
				      "v{k=\"inf\"} +Inf\n"
				      "v{k=\"ninf\"} -Inf\n"
				      "v{k=\"int\"} -3\n"
				      "v{k=\"float\"} 1.5\n");
	/* every double printed reads back as the same double */
	double scale = 1e-20;
	for (int i = 0; i < 10000; i++) {
		double x = (double)rand() / RAND_MAX * scale;
		scale = i % 40 == 39 ? 1e-20 : scale * 10;
		mx_buf_reset(&b);
		mx_family(&b, "v", "gauge", "h");
		mx_sample(&b, "v", NULL, x);
		const char *s = strstr(body(&b), "\nv ");
		assert_non_null(s);
		assert_true(strtod(s + 3, NULL) == x);
	}
	mx_buf_free(&b);
}

static void test_histogram(void **state)
{
	struct mx_buf b;
	const double bounds[] = {0.0005, 0.001, 0.25};
	const uint64_t counts[] = {3, 0, 5, 2};
	(void)state;
	mx_buf_init(&b, 0);
	mx_family(&b, "lat_seconds", "histogram", "h");
	assert_int_equal(mx_histogram(&b, "lat_seconds", MX_LABELS("member", "0"), bounds, counts,
				      3, 1.25),
			 0);
	assert_int_equal(mx_histogram(&b, "lat_seconds", NULL, bounds, counts, 0, 0), 0);
	assert_string_equal(body(&b), "# HELP lat_seconds h\n# TYPE lat_seconds histogram\n"
				      "lat_seconds_bucket{member=\"0\",le=\"0.0005\"} 3\n"
				      "lat_seconds_bucket{member=\"0\",le=\"0.001\"} 3\n"
				      "lat_seconds_bucket{member=\"0\",le=\"0.25\"} 8\n"
				      "lat_seconds_bucket{member=\"0\",le=\"+Inf\"} 10\n"
				      "lat_seconds_sum{member=\"0\"} 1.25\n"
				      "lat_seconds_count{member=\"0\"} 10\n"
				      "lat_seconds_bucket{le=\"+Inf\"} 3\n"
				      "lat_seconds_sum 0\n"
				      "lat_seconds_count 3\n");
	mx_buf_free(&b);
}

/* each misuse: the error, its message, and nothing written after it */
static void misuse(void (*fn)(struct mx_buf *), int err, const char *msg)
{
	struct mx_buf b;
	mx_buf_init(&b, 0);
	fn(&b);
	assert_int_equal(b.err, err);
	if (!strstr(b.errmsg, msg))
		fail_msg("errmsg '%s' lacks '%s'", b.errmsg, msg);
	size_t len = b.len;
	/* sticky: a valid call afterwards writes nothing */
	assert_int_equal(mx_family(&b, "later", "gauge", "h"), err);
	assert_int_equal(b.len, len);
	mx_buf_free(&b);
}

static void bad_name(struct mx_buf *b) { mx_family(b, "1abc", "gauge", "h"); }
static void bad_name2(struct mx_buf *b) { mx_family(b, "a-b", "gauge", "h"); }
static void bad_name3(struct mx_buf *b) { mx_family(b, "", "gauge", "h"); }
static void bad_type(struct mx_buf *b) { mx_family(b, "a", "info", "h"); }
static void counter_no_total(struct mx_buf *b) { mx_family(b, "a_bytes", "counter", "h"); }
static void gauge_total(struct mx_buf *b) { mx_family(b, "a_total", "gauge", "h"); }
static void hist_suffix(struct mx_buf *b) { mx_family(b, "a_count", "histogram", "h"); }
static void twice(struct mx_buf *b)
{
	mx_family(b, "a", "gauge", "h");
	mx_family(b, "b", "gauge", "h");
	mx_family(b, "a", "gauge", "h");
}
static void no_family(struct mx_buf *b) { mx_sample(b, "a", NULL, 1); }
static void other_family(struct mx_buf *b)
{
	mx_family(b, "a", "gauge", "h");
	mx_family(b, "b", "gauge", "h");
	mx_sample(b, "a", NULL, 1);
}
static void bad_label(struct mx_buf *b)
{
	mx_family(b, "a", "gauge", "h");
	mx_sample(b, "a", MX_LABELS("in-put", "x"), 1);
}
static void reserved_label(struct mx_buf *b)
{
	mx_family(b, "a", "gauge", "h");
	mx_sample(b, "a", MX_LABELS("__name__", "x"), 1);
}
static void odd_labels(struct mx_buf *b)
{
	mx_family(b, "a", "gauge", "h");
	mx_sample(b, "a", MX_LABELS("k", "v", "lonely"), 1);
}
static void dup_label(struct mx_buf *b)
{
	mx_family(b, "a", "gauge", "h");
	mx_sample(b, "a", MX_LABELS("k", "v", "k", "w"), 1);
}
static void neg_counter(struct mx_buf *b)
{
	mx_family(b, "a_total", "counter", "h");
	mx_sample(b, "a_total", NULL, -1);
}
static void neg_counter_f(struct mx_buf *b)
{
	mx_family(b, "a_total", "counter", "h");
	mx_sample(b, "a_total", NULL, -0.5);
}
static void hist_by_sample(struct mx_buf *b)
{
	mx_family(b, "h", "histogram", "h");
	mx_sample(b, "h_bucket", MX_LABELS("le", "1"), 1);
}
static void hist_le(struct mx_buf *b)
{
	const double bd[] = {1};
	const uint64_t c[] = {1, 1};
	mx_family(b, "h", "histogram", "h");
	mx_histogram(b, "h", MX_LABELS("le", "x"), bd, c, 1, 1);
}
static void hist_bounds(struct mx_buf *b)
{
	const double bd[] = {1, 1};
	const uint64_t c[] = {1, 1, 1};
	mx_family(b, "h", "histogram", "h");
	mx_histogram(b, "h", NULL, bd, c, 2, 1);
}
static void hist_not_hist(struct mx_buf *b)
{
	const double bd[] = {1};
	const uint64_t c[] = {1, 1};
	mx_family(b, "h", "gauge", "h");
	mx_histogram(b, "h", NULL, bd, c, 1, 1);
}
static void summary_no_quantile(struct mx_buf *b)
{
	mx_family(b, "s", "summary", "h");
	mx_sample(b, "s_count", NULL, 3u);
	mx_sample(b, "s", NULL, 0.5);
}
static void over_cap(struct mx_buf *b)
{
	b->max = 200;
	mx_family(b, "a", "gauge", "h");
	for (int i = 0; i < 100; i++)
		mx_sample(b, "a", MX_LABELS("k", "some value"), i);
}

static void test_misuse(void **state)
{
	(void)state;
	misuse(bad_name, -EINVAL, "invalid metric name '1abc'");
	misuse(bad_name2, -EINVAL, "invalid metric name 'a-b'");
	misuse(bad_name3, -EINVAL, "invalid metric name ''");
	misuse(bad_type, -EINVAL, "unknown metric type 'info'");
	misuse(counter_no_total, -EINVAL, "end in _total");
	misuse(gauge_total, -EINVAL, "end in _total");
	misuse(hist_suffix, -EINVAL, "no _bucket/_sum/_count");
	misuse(twice, -EINVAL, "family a declared twice");
	misuse(no_family, -EINVAL, "before any mx_family");
	misuse(other_family, -EINVAL, "not in the current family b");
	misuse(bad_label, -EINVAL, "invalid label name 'in-put'");
	misuse(reserved_label, -EINVAL, "invalid label name '__name__'");
	misuse(odd_labels, -EINVAL, "label 'lonely' has no value");
	misuse(dup_label, -EINVAL, "label 'k' given twice");
	misuse(neg_counter, -EINVAL, "cannot be negative");
	misuse(neg_counter_f, -EINVAL, "cannot be negative");
	misuse(hist_by_sample, -EINVAL, "written by mx_histogram");
	misuse(hist_le, -EINVAL, "label 'le' is the helper's");
	misuse(hist_bounds, -EINVAL, "finite and increasing");
	misuse(hist_not_hist, -EINVAL, "not the current histogram");
	misuse(summary_no_quantile, -EINVAL, "without quantile");
	misuse(over_cap, -E2BIG, "over its 200-byte cap");
}

/* summaries: quantile samples, _sum and _count */
static void test_summary(void **state)
{
	struct mx_buf b;
	(void)state;
	mx_buf_init(&b, 0);
	mx_family(&b, "s_seconds", "summary", "h");
	mx_sample(&b, "s_seconds", MX_LABELS("quantile", "0.99"), 0.25);
	mx_sample(&b, "s_seconds_sum", NULL, 2.0);
	mx_sample(&b, "s_seconds_count", NULL, 8u);
	assert_int_equal(b.err, 0);
	assert_string_equal(body(&b), "# HELP s_seconds h\n# TYPE s_seconds summary\n"
				      "s_seconds{quantile=\"0.99\"} 0.25\n"
				      "s_seconds_sum 2\n"
				      "s_seconds_count 8\n");
	mx_buf_free(&b);
}

/* the buffer grows past its first allocation and keeps every byte */
static void test_growth(void **state)
{
	struct mx_buf b;
	char v[24];
	(void)state;
	mx_buf_init(&b, 0);
	mx_family(&b, "g", "gauge", "h");
	for (unsigned i = 0; i < 100000; i++) {
		snprintf(v, sizeof(v), "%u", i);
		mx_sample(&b, "g", MX_LABELS("i", v), i);
	}
	assert_int_equal(b.err, 0);
	assert_true(b.cap >= b.len && b.cap <= MX_BUF_MAX);
	const char *p = memchr(b.p, '\n', b.len) + 1;
	p = memchr(p, '\n', b.len) + 1;
	for (unsigned i = 0; i < 100000; i++) {
		char want[64];
		int n = snprintf(want, sizeof(want), "g{i=\"%u\"} %u\n", i, i);
		assert_memory_equal(p, want, (size_t)n);
		p += n;
	}
	assert_ptr_equal(p, b.p + b.len);
	mx_buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_family_and_samples),
		cmocka_unit_test(test_label_escaping),
		cmocka_unit_test(test_values),
		cmocka_unit_test(test_histogram),
		cmocka_unit_test(test_summary),
		cmocka_unit_test(test_misuse),
		cmocka_unit_test(test_growth),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
