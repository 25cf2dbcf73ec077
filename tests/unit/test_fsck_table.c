/* The checker's problem table, and "evil" packs (littlefs style): metadata
 * overwritten with random bytes must give a clean verdict, never a crash or
 * a hang, and one repairing run must leave nothing for a second one. */
#include "helpers.h"
#include "internal.h"
#include "recfs/check.h"

#include <xxhash.h>

#define MSZ (4ull << 20)
#define CH (64u << 10)

static void test_table(void **s)
{
	(void)s;
	int last = 0;
	unsigned n = 0;
	for (const struct recfs_problem *p = recfs_problems; p->code; p++, n++) {
		assert_true(p->number > last); /* ascending, so unique */
		last = p->number;
		assert_non_null(p->msg);
		assert_non_null(p->doc);
		assert_true(!strncmp(p->code, "PR_", 3));
		for (const struct recfs_problem *q = recfs_problems; q != p; q++)
			assert_string_not_equal(p->code, q->code);
		/* repairable problems say how; the others do not pretend */
		assert_true(!(p->flags & RECFS_PRF_NOFIX) == (p->fix != NULL));
		assert_ptr_equal(recfs_problem_get(p->number), p);
	}
	assert_true(n >= 30);
	assert_null(recfs_problem_get(1));
}

static void test_format(void **s)
{
	struct recfs_pctx pc = {.member = "m0.img", .mindex = 3, .entry = 7, .name = "scan",
				.name2 = "other", .a = 1, .b = 22, .c = 333, .d = 4444, .str = "why"};
	char buf[200];
	(void)s;

	recfs_problem_format("%m %i %e '%n' '%N' %a %b %c %d (%s) 100%% %q", &pc, buf, sizeof(buf));
	assert_string_equal(buf, "m0.img 3 7 'scan' 'other' 1 22 333 4444 (why) 100% %q");
	recfs_problem_format("%m%m%m%m", &pc, buf, 10);
	assert_string_equal(buf, "m0.imgm0.");
}

static void quiet(void *ctx, const char *line)
{
	(void)ctx;
	if (getenv("DBG_FSCK"))
		printf("%s\n", line);
}

static int check(struct recfs_fault *f, unsigned nm, enum recfs_check_mode mode)
{
	struct recfs_check_opts o = {.mode = mode, .verify = true, .out = quiet};
	struct recfs_check_stats st;

	return tfsck_opts(f, nm, &o, &st);
}

/* r0, r1 sealed, r2 left recording (crashed): 150,000 bytes each */
static struct recfs_fault *populated(void)
{
	static const char *const names[] = {"r0", "r1", "r2"};
	static const uint64_t lens[] = {30 * 5000, 30 * 5000, 30 * 5000};

	return tpopulated(2, MSZ, CH, 8, 3, names, lens, 0, 1u << 2);
}

/* everything but the superblocks randomized: the check ends, repairs, and
 * a second run has nothing left to repair */
static void test_evil_metadata(void **s)
{
	(void)s;
	for (uint64_t seed = 1; seed <= 40; seed++) {
		struct recfs_fault *f = populated();
		struct recfs_geom g;
		uint64_t x = seed * 0x9E3779B97F4A7C15ull;
		assert_int_equal(recfs_geom_compute(&g, 2, MSZ, CH, 8), 0);
		/* a few random spans of random bytes in bitmap/directory/slots */
		for (unsigned k = 0; k < 6; k++) {
			unsigned m = trng(&x) & 1;
			uint64_t off = g.bitmap_off + trng(&x) % (g.data_off - g.bitmap_off);
			uint64_t len = 1 + trng(&x) % 64;
			if (seed % 3 == 0)
				len = 1 + trng(&x) % 3000; /* wide ones too */
			uint8_t *img = recfs_fault_image(f, m);
			for (uint64_t i = 0; i < len && off + i < g.data_off; i++)
				img[off + i] = (uint8_t)trng(&x);
		}
		int r1 = check(f, 2, RECFS_CHECK_YES);
		assert_false(r1 & RECFS_FSCK_ERROR);
		int r2 = check(f, 2, RECFS_CHECK_YES);
		if (r2 & (RECFS_FSCK_CORRECTED | RECFS_FSCK_ERROR))
			fail_msg("seed %llu: second run exit %d after %d", (unsigned long long)seed, r2, r1);
		recfs_fault_free(f);
	}
}

/* every byte of the first MiB random (primary superblocks included) */
static void test_evil_everything(void **s)
{
	(void)s;
	for (uint64_t seed = 1; seed <= 10; seed++) {
		struct recfs_fault *f = populated();
		uint64_t x = seed;
		for (unsigned m = 0; m < 2; m++) {
			uint8_t *img = recfs_fault_image(f, m);
			for (uint64_t i = 0; i < (1u << 20); i++)
				img[i] = (uint8_t)trng(&x);
		}
		/* the backups survive: the pack is found and repaired from them */
		int r1 = check(f, 2, RECFS_CHECK_YES);
		int r2 = check(f, 2, RECFS_CHECK_YES);
		if ((r1 & RECFS_FSCK_ERROR) || (r2 & (RECFS_FSCK_CORRECTED | RECFS_FSCK_ERROR)))
			fail_msg("seed %llu: runs exit %d then %d", (unsigned long long)seed, r1, r2);
		/* and now the backups too: no superblock, an operational error */
		for (unsigned m = 0; m < 2; m++) {
			uint8_t *img = recfs_fault_image(f, m);
			for (uint64_t i = MSZ - RECFS_BLOCK; i < MSZ; i++)
				img[i] = (uint8_t)trng(&x);
			for (uint64_t i = 0; i < RECFS_BLOCK; i++)
				img[i] = (uint8_t)trng(&x);
		}
		uint64_t w = recfs_fault_writes(f);
		int r = check(f, 2, RECFS_CHECK_YES);
		assert_true(r & RECFS_FSCK_ERROR);
		assert_int_equal(recfs_fault_writes(f), w);
		recfs_fault_free(f);
	}
}

/* Answers "no" to the problems named in ctx->no, "yes" to the rest. */
struct asker {
	const char *no;
	char last[512];
	unsigned leaks;
};

static void ask_out(void *ctx, const char *line)
{
	struct asker *k = ctx;
	snprintf(k->last, sizeof(k->last), "%s", line);
}

static int ask_answer(void *ctx, const char *question)
{
	struct asker *k = ctx;
	(void)question;
	k->leaks += !strncmp(k->last, "PR_BMP_LEAK:", 12);
	return strncmp(k->last, k->no, strlen(k->no)) ? RECFS_ASK_YES : RECFS_ASK_NO;
}

/* newest valid bitmap copy of member 0: is row set? */
static bool row_set(struct recfs_fault *f, const struct recfs_geom *g, uint64_t seed, uint64_t row)
{
	const uint8_t *img = recfs_fault_image(f, 0);
	struct recfs_bitmap_hdr h;
	uint64_t best = 0;
	int pick = -1;
	for (int k = 0; k < 2; k++)
		if (recfs_bitmap_decode(img + g->bitmap_off + k * g->bitmap_copy_size, g->bitmap_copy_size,
					seed, &h) == 0 && h.seq > best)
			best = h.seq, pick = k;
	assert_true(pick >= 0);
	return recfs_bit_test(img + g->bitmap_off + pick * g->bitmap_copy_size + RECFS_BLOCK, row);
}

/* A recording whose entry is damaged everywhere, the drop declined: its
 * rows must not be freed as leaked by a later "yes". */
static void test_declined_drop_keeps_rows(void **s)
{
	struct recfs_fault *f = populated();
	struct recfs_pack *p;
	struct recfs_rec r;
	struct recfs_geom g;
	struct asker k = {.no = "PR_ENT_DAMAGED:"};
	struct recfs_check_opts o = {.mode = RECFS_CHECK_ASK, .out = ask_out, .ask = ask_answer, .ctx = &k};
	struct recfs_check_stats st;
	uint64_t seed;
	(void)s;

	assert_int_equal(tpack_open(f, 2, NULL, 0, &p), 0);
	assert_int_equal(recfs_rec_lookup(p, "r1", &r), 0);
	g = *recfs_pack_geom(p);
	seed = p->pack_seed;
	recfs_pack_close(p);
	recfs_fault_reboot(f);
	uint64_t row = r.ext_start / g.row_bytes;
	assert_true(row_set(f, &g, seed, row));
	/* both slots of its entry, on both members */
	for (unsigned m = 0; m < 2; m++)
		for (unsigned sl = 0; sl < 2; sl++)
			recfs_fault_image(f, m)[g.dir_off + ((uint64_t)r.index * 2 + sl) * RECFS_ENTRY_SIZE + 100] ^= 0x55;
	int ret = tfsck_opts(f, 2, &o, &st);
	assert_false(ret & RECFS_FSCK_ERROR);
	assert_int_equal(k.leaks, 0);
	assert_true(row_set(f, &g, seed, row));
	recfs_fault_free(f);
}

/* opts.cancel stops a non-interactive run: nothing more is written and the
 * status says cancelled (fsck.recfs sets it from SIGINT) */
static bool cancel_now(void *ctx)
{
	unsigned *polls = ctx;
	++*polls;
	return true;
}

static void test_cancel(void **s)
{
	struct recfs_fault *f = populated(); /* r2 crashed: a -y run would seal it */
	unsigned polls = 0;
	struct recfs_check_opts o = {.mode = RECFS_CHECK_YES, .verify = true, .out = quiet,
				     .cancel = cancel_now, .ctx = &polls};
	struct recfs_check_stats st;
	(void)s;

	uint64_t w = recfs_fault_writes(f);
	int ret = tfsck_opts(f, 2, &o, &st);
	assert_true(ret & RECFS_FSCK_CANCELLED);
	assert_false(ret & RECFS_FSCK_CORRECTED);
	assert_true(polls > 0);
	assert_int_equal(recfs_fault_writes(f), w);
	/* and without it the same run repairs */
	assert_true(check(f, 2, RECFS_CHECK_YES) & RECFS_FSCK_CORRECTED);
	recfs_fault_free(f);
}

/* Generations at the top of the sequence space (2^64-2 is the last valid
 * one): a rollback and a bitmap rewrite there start over at 2 and 3
 * instead of writing the invalid 2^64-1. */
static void test_seq_wrap(void **s)
{
	struct recfs_fault *f = populated();
	struct recfs_pack *p;
	struct recfs_rec r;
	struct recfs_geom g;
	struct recfs_bitmap_hdr h;
	uint8_t slot[RECFS_ENTRY_SIZE];
	uint64_t seed;
	(void)s;

	/* r2's crash recovered first: the wrap is fsck's alone here */
	assert_true(check(f, 2, RECFS_CHECK_YES) & RECFS_FSCK_CORRECTED);
	assert_int_equal(tpack_open(f, 2, NULL, 0, &p), 0);
	assert_int_equal(recfs_rec_lookup(p, "r0", &r), 0);
	g = *recfs_pack_geom(p);
	seed = p->pack_seed;
	recfs_pack_close(p);
	recfs_fault_reboot(f);
	uint8_t *bm = malloc(g.bitmap_copy_size);
	assert_non_null(bm);
	for (unsigned m = 0; m < 2; m++) {
		uint8_t *img = recfs_fault_image(f, m);
		uint64_t e0 = g.dir_off + (uint64_t)r.index * 2 * RECFS_ENTRY_SIZE;
		/* r0 valid at 2^64-3 (slot 1), a torn 2^64-2 in slot 0 */
		r.seq = UINT64_MAX - 2;
		recfs_entry_encode(&r, seed, slot);
		memcpy(img + e0 + RECFS_ENTRY_SIZE, slot, sizeof(slot));
		r.seq = UINT64_MAX - 1;
		recfs_entry_encode(&r, seed, slot);
		slot[200] ^= 0x55;
		memcpy(img + e0, slot, sizeof(slot));
		/* the newest bitmap copy at 2^64-2 (copy 0), with a leaked row */
		int best = -1;
		uint64_t bs = 0;
		for (int k = 0; k < 2; k++)
			if (recfs_bitmap_decode(img + g.bitmap_off + k * g.bitmap_copy_size,
						g.bitmap_copy_size, seed, &h) == 0 && h.seq > bs)
				bs = h.seq, best = k;
		assert_true(best >= 0);
		memcpy(bm, img + g.bitmap_off + best * g.bitmap_copy_size, g.bitmap_copy_size);
		assert_int_equal(recfs_bitmap_decode(bm, g.bitmap_copy_size, seed, &h), 0);
		h.seq = UINT64_MAX - 1;
		h.copy = 0;
		recfs_bit_set(bm + RECFS_BLOCK, g.rows - 1);
		recfs_bitmap_encode(bm, &h, seed);
		memcpy(img + g.bitmap_off, bm, g.bitmap_copy_size);
	}
	free(bm);
	int r1 = check(f, 2, RECFS_CHECK_YES);
	assert_true(r1 & RECFS_FSCK_CORRECTED);
	assert_false(r1 & (RECFS_FSCK_ERROR | RECFS_FSCK_UNCORRECTED));
	int r2 = check(f, 2, RECFS_CHECK_YES);
	if (r2 & (RECFS_FSCK_CORRECTED | RECFS_FSCK_ERROR | RECFS_FSCK_UNCORRECTED))
		fail_msg("second run exit %d", r2);
	recfs_fault_reboot(f);
	assert_int_equal(tpack_open(f, 2, NULL, 0, &p), 0);
	assert_int_equal(recfs_rec_lookup(p, "r0", &r), 0);
	assert_true(r.seq < 16);
	assert_int_equal(r.committed_len, 30 * 5000);
	recfs_pack_close(p);
	recfs_fault_free(f);
}

/* fsck -y without --verify (whose read buffers cost more than the rest) */
static int check_text(struct recfs_fault *f, struct toutbuf *tb)
{
	struct recfs_check_stats st;
	return tfsck(f, 2, RECFS_CHECK_YES, false, tb, &st);
}

/* PR_ENT_UNKNOWN ("a good checksum that cannot be decoded or repaired")
 * is a guard: every check a checksum-valid slot of the right index can
 * fail is repaired first.  Entry r1 with no older generation and random
 * damage to its fields, checksum recomputed: the checker repairs or drops
 * it, never leaves it "unknown", and a second run is clean. */
static void test_ent_fields_never_unknown(void **s)
{
	unsigned repaired = 0;
	(void)s;
	for (uint64_t seed = 1; seed <= 200; seed++) {
		struct recfs_fault *f = populated();
		struct recfs_pack *p;
		struct recfs_rec r;
		struct recfs_geom g;
		uint64_t x = seed * 0x9E3779B97F4A7C15ull | 1, ps;
		uint8_t slot[RECFS_ENTRY_SIZE];
		struct recfs_disk_entry *d = (void *)slot;

		assert_int_equal(tpack_open(f, 2, NULL, 0, &p), 0);
		assert_int_equal(recfs_rec_lookup(p, "r1", &r), 0);
		ps = p->pack_seed;
		g = p->g;
		recfs_pack_close(p);
		recfs_entry_encode(&r, ps, slot);
		if (trng(&x) % 2)
			d->state = (uint8_t)trng(&x);
		if (trng(&x) % 3 == 0)
			d->gap_count = (uint32_t)trng(&x) % 100;
		if (trng(&x) % 4 == 0)
			d->seq = UINT64_MAX;
		if (trng(&x) % 3 == 0)
			d->committed_len = trng(&x) % (4 * g.row_bytes);
		if (trng(&x) % 3 == 0)
			d->name_len = (uint16_t)(trng(&x) % 300);
		if (trng(&x) % 3 == 0)
			d->name[trng(&x) % 3] = "/\0."[trng(&x) % 3];
		if (trng(&x) % 6 == 0)
			memset(d->name, '.', 2), d->name_len = (uint16_t)(1 + trng(&x) % 2);
		if (trng(&x) % 5 == 0)
			d->alloc_len = trng(&x) % (4 * g.row_bytes);
		if (trng(&x) % 5 == 0)
			d->ext_start = trng(&x) % (4 * g.row_bytes);
		if (trng(&x) % 5 == 0)
			d->flags = (uint32_t)trng(&x);
		if (trng(&x) % 5 == 0)
			d->format = (uint8_t)trng(&x);
		d->checksum = XXH3_64bits_withSeed(d, offsetof(struct recfs_disk_entry, checksum), ps);
		unsigned sl = (unsigned)(d->seq & 1);
		for (unsigned m = 0; m < 2; m++) {
			uint8_t *e = recfs_fault_image(f, m) + g.dir_off + (uint64_t)r.index * 2 * RECFS_ENTRY_SIZE;
			memset(e, 0, 2 * RECFS_ENTRY_SIZE);
			memcpy(e + sl * RECFS_ENTRY_SIZE, slot, sizeof(slot));
		}
		struct toutbuf tb, tb2;
		int r1 = check_text(f, &tb);
		if (strstr(tb.text, "PR_ENT_UNKNOWN") || (r1 & RECFS_FSCK_ERROR))
			fail_msg("seed %llu: exit %d:\n%s", (unsigned long long)seed, r1, tb.text);
		repaired += strstr(tb.text, "PR_ENT_FIELD") || strstr(tb.text, "PR_ENT_NAME") ||
			    strstr(tb.text, "PR_ENT_COMMITTED");
		int r2 = check_text(f, &tb2);
		if (r2 & (RECFS_FSCK_CORRECTED | RECFS_FSCK_ERROR))
			fail_msg("seed %llu: second run exit %d after %d:\n%s\nthen\n%s",
				 (unsigned long long)seed, r2, r1, tb.text, tb2.text);
		recfs_fault_free(f);
	}
	print_message("%u of 200 damaged entries went through the field repairs\n", repaired);
	assert_true(repaired > 80);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_evil_metadata),
		cmocka_unit_test(test_evil_everything),
		cmocka_unit_test(test_declined_drop_keeps_rows),
		cmocka_unit_test(test_cancel),
		cmocka_unit_test(test_seq_wrap),
		cmocka_unit_test(test_ent_fields_never_unknown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
