/* Strict UTF-8 (recfs_utf8_len, recfs_utf8_valid) and the JSON the tools
 * write names with (recfs_json_str, recfs_json_name). */
#include "helpers.h"

struct u8case {
	const char *what;
	const char *bytes;
	size_t len;
	bool valid;
};

#define C(what, s, v) {what, s, sizeof(s) - 1, v}

static const struct u8case cases[] = {
	C("empty", "", true),
	C("ASCII", "scan1", true),
	C("NUL and DEL are code points", "a\x00\x7f", true),
	C("U+0080, smallest 2 bytes", "\xc2\x80", true),
	C("U+00E9", "caf\xc3\xa9", true),
	C("U+00FF", "\xc3\xbf", true),
	C("U+07FF, largest 2 bytes", "\xdf\xbf", true),
	C("U+0800, smallest 3 bytes", "\xe0\xa0\x80", true),
	C("U+D7FF, below the surrogates", "\xed\x9f\xbf", true),
	C("U+E000, above the surrogates", "\xee\x80\x80", true),
	C("U+FFFD", "\xef\xbf\xbd", true),
	C("U+FFFF", "\xef\xbf\xbf", true),
	C("U+10000, smallest 4 bytes", "\xf0\x90\x80\x80", true),
	C("U+10FFFF, the last code point", "\xf4\x8f\xbf\xbf", true),
	C("mixed", "a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80z", true),

	C("stray continuation byte", "\x80", false),
	C("continuation byte after ASCII", "a\xbf", false),
	C("0xFF", "\xff", false),
	C("0xFE", "\xfe", false),
	C("overlong '/' (C0 AF)", "\xc0\xaf", false),
	C("overlong NUL (C0 80)", "\xc0\x80", false),
	C("overlong C1 BF", "\xc1\xbf", false),
	C("overlong 3 bytes (E0 80 AF)", "\xe0\x80\xaf", false),
	C("overlong U+07FF in 3 bytes (E0 9F BF)", "\xe0\x9f\xbf", false),
	C("overlong 4 bytes (F0 80 80 AF)", "\xf0\x80\x80\xaf", false),
	C("overlong U+FFFF in 4 bytes (F0 8F BF BF)", "\xf0\x8f\xbf\xbf", false),
	C("high surrogate U+D800 (ED A0 80)", "\xed\xa0\x80", false),
	C("low surrogate U+DFFF (ED BF BF)", "\xed\xbf\xbf", false),
	C("surrogate pair in CESU-8", "\xed\xa0\xbd\xed\xb8\x80", false),
	C("U+110000 (F4 90 80 80)", "\xf4\x90\x80\x80", false),
	C("F5 lead byte", "\xf5\x80\x80\x80", false),
	C("5-byte form", "\xf8\x88\x80\x80\x80", false),
	C("truncated 2-byte at the end", "ab\xc3", false),
	C("truncated 3-byte at the end", "\xe2\x82", false),
	C("truncated 4-byte at the end", "\xf0\x9f\x98", false),
	C("truncated 3-byte before ASCII", "\xe2\x82z", false),
	C("lead byte followed by a lead byte", "\xc3\xc3\xa9", false),
	C("continuation replaced by NUL", "\xc3\x00", false),
};

static void test_utf8_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct u8case *c = &cases[i];
		bool got = recfs_utf8_valid(c->bytes, c->len);
		if (got != c->valid)
			fail_msg("%s: recfs_utf8_valid says %s", c->what, got ? "valid" : "invalid");
	}
}

/* the length of one sequence, and that it never reads past n */
static void test_utf8_len(void **state)
{
	(void)state;
	assert_int_equal(recfs_utf8_len("", 0), 0);
	assert_int_equal(recfs_utf8_len("a", 1), 1);
	assert_int_equal(recfs_utf8_len("\xc3\xa9", 2), 2);
	assert_int_equal(recfs_utf8_len("\xe2\x82\xac", 3), 3);
	assert_int_equal(recfs_utf8_len("\xf0\x9f\x98\x80", 4), 4);
	/* complete in memory but cut by n */
	assert_int_equal(recfs_utf8_len("\xc3\xa9", 1), 0);
	assert_int_equal(recfs_utf8_len("\xe2\x82\xac", 2), 0);
	assert_int_equal(recfs_utf8_len("\xf0\x9f\x98\x80", 3), 0);
	assert_false(recfs_utf8_valid("\xe2\x82\xac", 2));
	assert_true(recfs_utf8_valid("\xe2\x82\xac" "\xff", 3));
}

static char *json_of(const char *key, const char *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	if (key)
		recfs_json_name(f, key, s);
	else
		recfs_json_str(f, s);
	assert_int_equal(fclose(f), 0);
	return buf;
}

static void expect_json(const char *key, const char *s, const char *want)
{
	char *got = json_of(key, s);
	if (strcmp(got, want))
		fail_msg("JSON of '%s': got [%s], want [%s]", s, got, want);
	free(got);
}

static void test_json(void **state)
{
	(void)state;
	expect_json(NULL, "scan1", "\"scan1\"");
	expect_json(NULL, "a\"b\\c", "\"a\\\"b\\\\c\"");
	expect_json(NULL, "t\tn\nc\x01\x1f\x7f", "\"t\\tn\\nc\\u0001\\u001f\\u007f\"");
	expect_json(NULL, "caf\xc3\xa9", "\"caf\xc3\xa9\"");
	/* every byte outside a well-formed sequence becomes U+FFFD */
	expect_json(NULL, "\xff", "\"\\ufffd\"");
	expect_json(NULL, "\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"");
	expect_json(NULL, "a\xc0\xafz", "\"a\\ufffd\\ufffdz\"");
	expect_json(NULL, "\xf4\x90\x80\x80!", "\"\\ufffd\\ufffd\\ufffd\\ufffd!\"");

	/* a valid name: no name_hex */
	expect_json("name", "caf\xc3\xa9 \xc3\xbf", "\"name\": \"caf\xc3\xa9 \xc3\xbf\"");
	expect_json("name", "", "\"name\": \"\"");
	/* an invalid one: lossy name and the exact bytes */
	expect_json("name", "caf\xc3\xa9 \xff",
		    "\"name\": \"caf\xc3\xa9 \\ufffd\", \"name_hex\": \"636166c3a920ff\"");
	expect_json("source", "\xed\xa0\x80",
		    "\"source\": \"\\ufffd\\ufffd\\ufffd\", \"source_hex\": \"eda080\"");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_utf8_table),
		cmocka_unit_test(test_utf8_len),
		cmocka_unit_test(test_json),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
