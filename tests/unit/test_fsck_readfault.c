/* Reads that fail: the fault backend returns EIO for a member's byte
 * range (a bad sector), and fsck must say so (PR_MEMBER_IO for metadata,
 * PR_DATA_IO under --verify for data), exit with the right status, never
 * "repair" what it could not read, and leave everything outside the fault
 * as it was: once the range reads again, the pack checks clean and every
 * recording reads back byte-identical. */
#include "helpers.h"
#include "internal.h"
#include "recfs/check.h"

#define MSZ (4ull << 20)
#define CH (64u << 10)
#define NM 2
#define NREC 3

static const uint64_t lens[NREC] = {5 * CH + 1000, 3 * CH, 2 * CH + 77};
static const char *names[NREC] = {"r0", "r1", "r2"};

static struct recfs_fault *populated(void)
{
	return tpopulated(NM, MSZ, CH, 8, NREC, names, lens, CH + 333, 0);
}

/* fsck in mode, its report into ob */
static int check(struct recfs_fault *f, enum recfs_check_mode mode, bool verify,
		 struct toutbuf *ob, struct recfs_check_stats *st)
{
	return tfsck(f, NM, mode, verify, ob, st);
}

/* lines of text starting with "CODE:" */
static unsigned count_code(const char *text, const char *code)
{
	unsigned n = 0;
	size_t l = strlen(code);
	for (const char *s = text; s && *s; s = strchr(s, '\n'), s = s ? s + 1 : NULL)
		n += !strncmp(s, code, l) && s[l] == ':';
	return n;
}

/* no problem reported but the one expected */
static void only_code(const char *text, const char *code)
{
	for (const char *s = text; s && *s; s = strchr(s, '\n'), s = s ? s + 1 : NULL)
		if (!strncmp(s, "PR_", 3) && (strncmp(s, code, strlen(code)) || s[strlen(code)] != ':'))
			fail_msg("expected only %s, got:\n%s", code, text);
}

static void snapshot(struct recfs_fault *f, uint8_t *img[NM])
{
	for (unsigned i = 0; i < NM; i++) {
		img[i] = malloc(MSZ);
		assert_non_null(img[i]);
		memcpy(img[i], recfs_fault_image(f, i), MSZ);
	}
}

static void same_images(struct recfs_fault *f, uint8_t *img[NM], const char *what)
{
	for (unsigned i = 0; i < NM; i++)
		if (memcmp(img[i], recfs_fault_image(f, i), MSZ))
			fail_msg("%s: member %u changed", what, i);
}

static void free_images(uint8_t *img[NM])
{
	for (unsigned i = 0; i < NM; i++)
		free(img[i]);
}

/* with the fault gone: a clean -n --verify, every recording intact */
static void all_intact(struct recfs_fault *f, const char *what)
{
	struct toutbuf ob;
	struct recfs_check_stats st;
	struct recfs_pack *p;
	struct recfs_rec r;

	recfs_fault_read_clear(f);
	int ret = check(f, RECFS_CHECK_NO, true, &ob, &st);
	if (ret != 0 || st.problems || st.bad_chunks)
		fail_msg("%s: fsck -n --verify after the fault exit %d:\n%s", what, ret, ob.text);
	assert_int_equal(tpack_open(f, NM, NULL, 0, &p), 0);
	for (unsigned k = 0; k < NREC; k++) {
		assert_int_equal(recfs_rec_lookup(p, names[k], &r), 0);
		assert_int_equal(r.state, RECFS_STATE_SEALED);
		assert_int_equal(r.committed_len, lens[k]);
		if (tcheck(p, &r, k, lens[k]))
			fail_msg("%s: %s differs: %s", what, names[k], recfs_errmsg());
	}
	recfs_pack_close(p);
}

static void geom(struct recfs_geom *g)
{
	assert_int_equal(recfs_geom_compute(g, NM, MSZ, CH, 8), 0);
}

/* only PR_MEMBER_IO, and `also` if not NULL */
static void only_io(const char *text, const char *also)
{
	for (const char *s = text; s && *s; s = strchr(s, '\n'), s = s ? s + 1 : NULL)
		if (!strncmp(s, "PR_", 3) && strncmp(s, "PR_MEMBER_IO:", 13) &&
		    (!also || strncmp(s, also, strlen(also))))
			fail_msg("expected only PR_MEMBER_IO%s%s, got:\n%s", also ? " and " : "",
				 also ? also : "", text);
}

/* Metadata unreadable on one member: PR_MEMBER_IO naming the member, the
 * read and the device's error; exit status 12 (operational error, left
 * uncorrected) with -n and -y alike; -n writes nothing.  `also`: the one other line the
 * fault may add (with -y the one repair: an unreadable replica rewritten
 * from a good one, the same bytes).  Either way every byte of both
 * members is as it was. */
static void member_io(unsigned member, uint64_t off, uint64_t len, const char *read_what,
		      const char *also, unsigned nio)
{
	struct recfs_fault *f = populated();
	struct toutbuf ob;
	struct recfs_check_stats st;
	uint8_t *img[NM];
	char want[96];

	snapshot(f, img);
	assert_int_equal(recfs_fault_read_error(f, member, off, len), 0);
	snprintf(want, sizeof(want), "PR_MEMBER_IO: fault%u: %s failed:", member, read_what);
	for (int pass = 0; pass < 2; pass++) {
		enum recfs_check_mode mode = pass ? RECFS_CHECK_YES : RECFS_CHECK_NO;
		int ret = check(f, mode, true, &ob, &st);
		if (!strstr(ob.text, want))
			fail_msg("-%c: no '%s' in:\n%s", pass ? 'y' : 'n', want, ob.text);
		only_io(ob.text, also);
		if (count_code(ob.text, "PR_MEMBER_IO") != nio) /* each failed read once */
			fail_msg("-%c: not %u PR_MEMBER_IO lines:\n%s", pass ? 'y' : 'n', nio, ob.text);
		if (also && !strstr(ob.text, also))
			fail_msg("-%c: no '%s' in:\n%s", pass ? 'y' : 'n', also, ob.text);
		if (!strstr(ob.text, "injected I/O error"))
			fail_msg("the member's error is not quoted:\n%s", ob.text);
		/* PR_MEMBER_IO itself cannot be repaired: 12, or 13 with the repair */
		int want_ret = RECFS_FSCK_ERROR | RECFS_FSCK_UNCORRECTED |
			       (also && pass ? RECFS_FSCK_CORRECTED : 0);
		if (ret != want_ret)
			fail_msg("-%c: exit %d, not %d:\n%s", pass ? 'y' : 'n', ret, want_ret, ob.text);
		assert_int_equal(st.bad_chunks, 0);
		if (!pass || !also)
			assert_int_equal(recfs_fault_writes(f), 0);
		else
			assert_true(recfs_fault_writes(f) > 0);
		same_images(f, img, read_what);
		recfs_fault_reboot(f); /* counts writes from 0 again */
	}
	free_images(img);
	all_intact(f, read_what);
	recfs_fault_free(f);
}

static void test_member_io_dir(void **s)
{
	struct recfs_geom g;
	(void)s;
	geom(&g);
	member_io(1, g.dir_off, RECFS_BLOCK, "directory read", NULL, 1);
}

static void test_member_io_bitmap(void **s)
{
	struct recfs_geom g;
	(void)s;
	geom(&g);
	member_io(0, g.bitmap_off, 2 * g.bitmap_copy_size, "bitmap read",
		  "PR_BMP_COPY: fault0: bitmap copy 1 (generation 7) is unreadable.", 2);
}

static void test_member_io_slots(void **s)
{
	struct recfs_geom g;
	(void)s;
	geom(&g);
	/* the block holds all three recordings' slots: one line, not three */
	member_io(0, g.csum_off, RECFS_BLOCK, "checksum table read", NULL, 1);
}

/* an unreadable primary superblock is an invalid one, the error quoted;
 * -y rewrites it from a good copy (the same bytes) */
static void test_super_io(void **s)
{
	struct recfs_fault *f = populated();
	struct toutbuf ob;
	struct recfs_check_stats st;
	uint8_t *img[NM];
	const char *want = "PR_SB_PRIMARY: fault1: primary superblock is invalid (fault1: read "
			   "at 0: injected I/O error).";
	(void)s;

	snapshot(f, img);
	assert_int_equal(recfs_fault_read_error(f, 1, 0, RECFS_SECTOR), 0);
	for (int pass = 0; pass < 2; pass++) {
		int ret = check(f, pass ? RECFS_CHECK_YES : RECFS_CHECK_NO, true, &ob, &st);
		if (!strstr(ob.text, want) || count_code(ob.text, "PR_SB_PRIMARY") != 1)
			fail_msg("-%c: no '%s' in:\n%s", pass ? 'y' : 'n', want, ob.text);
		only_code(ob.text, "PR_SB_PRIMARY");
		if (ret != (pass ? RECFS_FSCK_CORRECTED : RECFS_FSCK_UNCORRECTED))
			fail_msg("-%c: exit %d:\n%s", pass ? 'y' : 'n', ret, ob.text);
		assert_true(pass ? recfs_fault_writes(f) > 0 : recfs_fault_writes(f) == 0);
		same_images(f, img, "superblock read");
		recfs_fault_reboot(f);
	}
	free_images(img);
	all_intact(f, "superblock read");
	recfs_fault_free(f);
}

/* Data unreadable: --verify reports PR_DATA_IO for exactly that chunk
 * (recording, byte range, chunk, member, the errno's text), exit status 4
 * (left uncorrected), with -n and -y alike; the other chunks and
 * recordings verify; nothing is written */
static void test_data_io(void **s)
{
	struct recfs_fault *f = populated();
	struct toutbuf ob;
	struct recfs_check_stats st;
	struct recfs_pack *p;
	struct recfs_rec r;
	struct recfs_geom g;
	uint8_t *img[NM];
	unsigned m;
	uint64_t moff;
	char want[160];
	(void)s;

	geom(&g);
	assert_int_equal(tpack_open(f, NM, NULL, 0, &p), 0);
	assert_int_equal(recfs_rec_lookup(p, "r0", &r), 0);
	recfs_pack_close(p);
	/* chunk 3 of r0, one sector in its middle */
	recfs_map(&g, r.ext_start + 3 * CH, &m, &moff);
	snapshot(f, img);
	assert_int_equal(recfs_fault_read_error(f, m, moff + CH / 2, RECFS_SECTOR), 0);
	snprintf(want, sizeof(want),
		 "PR_DATA_IO: recording 'r0': bytes %llu-%llu (chunk 3) unreadable on fault%u "
		 "(Input/output error)",
		 (unsigned long long)(3 * CH), (unsigned long long)(4 * CH - 1), m);
	for (int pass = 0; pass < 2; pass++) {
		enum recfs_check_mode mode = pass ? RECFS_CHECK_YES : RECFS_CHECK_NO;
		int ret = check(f, mode, true, &ob, &st);
		if (!strstr(ob.text, want) || count_code(ob.text, "PR_DATA_IO") != 1)
			fail_msg("-%c: no single '%s' in:\n%s", pass ? 'y' : 'n', want, ob.text);
		only_code(ob.text, "PR_DATA_IO");
		if (ret != RECFS_FSCK_UNCORRECTED)
			fail_msg("-%c: exit %d:\n%s", pass ? 'y' : 'n', ret, ob.text);
		assert_int_equal(st.bad_chunks, 1);
		assert_int_equal(recfs_fault_writes(f), 0);
		same_images(f, img, "data read");
	}
	/* without --verify the data is not read: nothing to report */
	int ret = check(f, RECFS_CHECK_NO, false, &ob, &st);
	if (ret != 0 || st.problems)
		fail_msg("-n without --verify: exit %d:\n%s", ret, ob.text);
	/* the library says the same to a reader, and reads the rest */
	assert_int_equal(tpack_open(f, NM, NULL, 0, &p), 0);
	uint8_t *buf = malloc(CH);
	assert_non_null(buf);
	assert_int_equal(recfs_rec_pread(p, &r, buf, CH, 3 * CH, RECFS_READ_VERIFY), -EIO);
	assert_int_equal(recfs_rec_pread(p, &r, buf, CH, 2 * CH, RECFS_READ_VERIFY), (ssize_t)CH);
	free(buf);
	recfs_pack_close(p);
	free_images(img);
	all_intact(f, "data read");
	recfs_fault_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_member_io_dir),
		cmocka_unit_test(test_member_io_bitmap),
		cmocka_unit_test(test_member_io_slots),
		cmocka_unit_test(test_super_io),
		cmocka_unit_test(test_data_io),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
