/* SPDX-License-Identifier: MIT */
/* VSI-S statements: the parser and the reply writer (recorder/recfsd/vsis.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "../../recorder/recfsd/vsis.h"

struct pcase {
	const char *in;
	int rc;
	const char *kw;
	int query;
	unsigned np;
	const char *p[4];
};

static const struct pcase pcases[] = {
	{ "record=on:scan1", 0, "record", 0, 2, { "on", "scan1" } },
	{ "  record = on : scan1 : exp : Mh  ", 0, "record", 0, 4, { "on", "scan1", "exp", "Mh" } },
	{ "record?", 0, "record", 1, 0, { 0 } },
	{ "record ? ", 0, "record", 1, 0, { 0 } },
	{ "scan_set=1:+10s", 0, "scan_set", 0, 2, { "1", "+10s" } },
	{ "mode=VDIF_8000-512-16-2", 0, "mode", 0, 1, { "VDIF_8000-512-16-2" } },
	{ "record=on::x", 0, "record", 0, 3, { "on", "", "x" } },
	{ "\trecord\t=\toff\t", 0, "record", 0, 1, { "off" } },
	{ "record=a=b", 0, "record", 0, 1, { "a=b" } },    /* the first '=' separates */
	{ "", 3, "error", 0, 0, { 0 } },
	{ "   ", 3, "error", 0, 0, { 0 } },
	{ "=on", 3, "error", 0, 0, { 0 } },
	{ "?", 3, "error", 0, 0, { 0 } },
	{ "record", 3, "record", 0, 0, { 0 } },            /* no = or ? */
	{ "rec ord=on", 3, "error", 0, 0, { 0 } },         /* a space inside the keyword */
	{ "r\xc3\xa9""cord=on", 3, "error", 0, 0, { 0 } }, /* not ASCII */
	{ "record!=on", 3, "error", 0, 0, { 0 } },
	{ "abcdefghijabcdefghijabcdefghijab=1", 3, "error", 0, 0, { 0 } }, /* 32-byte keyword */
	{ "abcdefghijabcdefghijabcdefghija=1", 0, "abcdefghijabcdefghijabcdefghija", 0, 1, { "1" } },
	{ "x=1:2:3:4:5:6:7:8:9:10:11:12:13:14:15:16", 0, "x", 0, 16, { "1", "2", "3", "4" } },
	{ "x=1:2:3:4:5:6:7:8:9:10:11:12:13:14:15:16:17", 3, "x", 0, 0, { 0 } },
};

static void parse_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(pcases) / sizeof(pcases[0]); i++) {
		const struct pcase *c = &pcases[i];
		char buf[256], why[128] = "";
		struct vs_req r;
		snprintf(buf, sizeof(buf), "%s", c->in);
		int rc = vs_parse(buf, &r, why, sizeof(why));
		if (rc != c->rc)
			fail_msg("'%s': rc %d, want %d (%s)", c->in, rc, c->rc, why);
		if (rc) {
			assert_true(why[0] != 0); /* a reason is always given */
			if (strcmp(r.keyword, c->kw))
				fail_msg("'%s': reply keyword '%s', want '%s'", c->in, r.keyword, c->kw);
			continue;
		}
		assert_string_equal(r.keyword, c->kw);
		assert_int_equal(r.query, c->query);
		assert_int_equal(r.nparam, c->np);
		for (unsigned k = 0; k < c->np && k < 4; k++)
			assert_string_equal(r.param[k], c->p[k]);
	}
}

static void reply_format(void **state)
{
	(void)state;
	char out[256];
	assert_int_equal(vs_reply(out, sizeof(out), "record", false, 0, ""), 13);
	assert_string_equal(out, "!record = 0 ;");
	assert_int_equal(vs_reply(out, sizeof(out), "record", true, 0, "on : 1 : s1"), 27);
	assert_string_equal(out, "!record ? 0 : on : 1 : s1 ;");
	char small[16];
	/* cut, still a string, and the length is what is in it */
	assert_int_equal(vs_reply(small, sizeof(small), "status", true, 0, "0x00000001 : idle"), 15);
	assert_int_equal(strlen(small), 15);
	/* cplane's layout (--dialect mark6): an empty last field kept, a
	 * field's own spaces kept */
	assert_int_equal(vs_reply_compact(out, sizeof(out), "record", true, 0, "0 : off : 0 : "), 19);
	assert_string_equal(out, "!record?0:0:off:0:;");
	vs_reply_compact(out, sizeof(out), "group", false, 6, "stop recfsd to close it");
	assert_string_equal(out, "!group=6:stop recfsd to close it;");
	vs_reply_compact(out, sizeof(out), "record", false, 0, "");
	assert_string_equal(out, "!record=0;");
	assert_int_equal(vs_reply_compact(small, sizeof(small), "status", true, 0, "0 : 0x00000001"), 15);
	assert_int_equal(strlen(small), 15);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(parse_table),
		cmocka_unit_test(reply_format),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
