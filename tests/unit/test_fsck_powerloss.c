/* Power loss at every write, then fsck: a recording session is cut at every
 * write in turn (clean, torn, and with a volatile write cache), the images
 * "reboot", and the checker repairs them.  Then: every acknowledged seal is
 * byte-identical, every interrupted recording is sealed holding at least its
 * last acknowledged commit and nothing that was not written, the checker
 * reported only what a crash can leave (never data loss), and a second check
 * finds nothing. */
#include "helpers.h"
#include "internal.h"
#include "recfs/check.h"

#define MSZ (8ull << 20)
#define CH (64u << 10)
#define NM 2
#define DIRCAP 8

enum { R_A, R_B, R_LIVE, R_D, NR };
static const char *names[NR] = {"a", "b", "live", "d"};
static const uint64_t lens[NR] = {3 * CH + 100, 2 * CH + 7, 4 * CH + 123, CH + 5};
static const uint64_t steps[NR] = {CH, 50000, CH + 333, CH / 2};

static int put(struct recfs_pack *p, unsigned k, bool seal, struct tacked *ack)
{
	return tput(p, k, names[k], lens[k], k == R_D ? lens[k] : 0, steps[k], seal, ack);
}

/* create, append+sync, seal; another; delete the first; one left open
 * (a recorder that dies with the machine); one more created and sealed */
static void session(struct recfs_fault *f, struct tacked *ack)
{
	struct recfs_pack *p;

	memset(ack, 0, sizeof(*ack));
	if (tpack_open(f, NM, NULL, RECFS_O_RDWR, &p))
		return;
	if (put(p, R_A, true, ack) || put(p, R_B, true, ack))
		goto out;
	if (tdelete(p, R_A, names[R_A], ack))
		goto out;
	if (put(p, R_LIVE, false, ack))
		goto out;
	put(p, R_D, true, ack);
out:
	recfs_pack_close(p);
}

static void check_after(struct recfs_fault *f, const struct tacked *ack, const char *what)
{
	struct toutbuf ob;
	struct recfs_check_stats st;
	struct recfs_pack *p;
	struct recfs_rec r;
	int ret;

	ret = tfsck(f, NM, RECFS_CHECK_YES, false, &ob, &st);
	if (ret & ~RECFS_FSCK_CORRECTED)
		fail_msg("%s: fsck -y exit %d:\n%s", what, ret, ob.text);
	tonly_crash_problems(ob.text, what);
	if (!strcmp(what, "no cut") && !strstr(ob.text, "PR_REC_CRASHED: recording 'live'"))
		fail_msg("the open recording was not recovered:\n%s", ob.text);
	ret = tfsck(f, NM, RECFS_CHECK_YES, false, &ob, &st);
	if (ret != 0 || st.problems)
		fail_msg("%s: second fsck -y exit %d:\n%s", what, ret, ob.text);
	/* the read-only check with --verify reads everything back */
	ret = tfsck(f, NM, RECFS_CHECK_NO, true, &ob, &st);
	if (ret != 0 || st.bad_chunks)
		fail_msg("%s: fsck -n --verify exit %d:\n%s", what, ret, ob.text);

	if (tpack_open(f, NM, NULL, 0, &p))
		fail_msg("%s: pack does not assemble after fsck: %s", what, recfs_errmsg());
	for (unsigned k = 0; k < NR; k++) {
		if (!tacked_find(p, k, names[k], &r, ack, what))
			continue;
		if (r.state != RECFS_STATE_SEALED)
			fail_msg("%s: %s left in state %u after fsck", what, names[k], r.state);
		tacked_check(p, &r, k, names[k], lens[k], ack->synced[k], ack, what);
	}
	recfs_pack_close(p);
}

static void run_cuts(unsigned torn, unsigned flags)
{
	struct tacked ack;
	struct recfs_fault *f = tpack_new(NM, MSZ, CH, DIRCAP);
	uint64_t total;

	recfs_fault_reboot(f);
	session(f, &ack);
	total = recfs_fault_writes(f);
	assert_true(ack.sealed[R_D]);
	/* the uncut session, too, ends with a recording to recover */
	check_after(f, &ack, "no cut");
	recfs_fault_free(f);
	assert_true(total > 20);
	print_message("session of %llu writes: every one a cut point\n", (unsigned long long)total);
	tcut_every(NM, MSZ, CH, DIRCAP, total, torn, flags, session, check_after);
}

static void test_cut_clean(void **s) { (void)s; run_cuts(0, 0); }
static void test_cut_torn1(void **s) { (void)s; run_cuts(1, 0); }
static void test_cut_torn3(void **s) { (void)s; run_cuts(3, 0); }
static void test_cut_volatile(void **s) { (void)s; run_cuts(0, RECFS_FAULT_VOLATILE); }
static void test_cut_volatile_torn(void **s) { (void)s; run_cuts(2, RECFS_FAULT_VOLATILE); }

/* -n never writes, even on a pack that needs repairs */
static void test_readonly(void **s)
{
	struct tacked ack;
	struct recfs_fault *f = tpack_new(NM, MSZ, CH, DIRCAP);
	struct toutbuf ob;
	struct recfs_check_stats st;
	uint8_t *before[NM];
	(void)s;

	recfs_fault_reboot(f);
	recfs_fault_cut_at(f, 40, 1, 0);
	session(f, &ack);
	recfs_fault_reboot(f);
	for (unsigned i = 0; i < NM; i++) {
		before[i] = malloc(MSZ);
		memcpy(before[i], recfs_fault_image(f, i), MSZ);
	}
	int ret = tfsck(f, NM, RECFS_CHECK_NO, true, &ob, &st);
	assert_true(ret & RECFS_FSCK_UNCORRECTED);
	assert_true(st.problems > 0);
	assert_int_equal(recfs_fault_writes(f), 0);
	for (unsigned i = 0; i < NM; i++) {
		assert_memory_equal(before[i], recfs_fault_image(f, i), MSZ);
		free(before[i]);
	}
	recfs_fault_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_readonly),     cmocka_unit_test(test_cut_clean),
		cmocka_unit_test(test_cut_torn1),    cmocka_unit_test(test_cut_torn3),
		cmocka_unit_test(test_cut_volatile), cmocka_unit_test(test_cut_volatile_torn),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
