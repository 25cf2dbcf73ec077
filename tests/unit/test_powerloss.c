/* Power loss at every write of a recording session, on the library alone:
 * after the cut the pack assembles, every acknowledged seal is byte-identical,
 * every interrupted recording holds at least its last acknowledged commit and
 * nothing that does not verify, extents never overlap, and new allocations
 * never clobber old data.  (fsck's recovery is tested in test_fsck_*.) */
#include "helpers.h"
#include "internal.h"

#define MSZ (8ull << 20)
#define CH (64u << 10)
#define NM 2

enum { R_OLD1, R_OLD2, R_LIVE, R_NEW, NR };
static const char *names[NR] = {"old1", "old2", "live", "new"};
static const uint64_t lens[NR] = {3 * CH + 100, 2 * CH, 5 * CH + 999, 2 * CH + 5};

/* One recording written and sealed, syncing every `step` bytes. */
static int put(struct recfs_pack *p, unsigned k, uint64_t step, struct tacked *ack)
{
	return tput(p, k, names[k], lens[k], k == R_NEW ? lens[k] : 0, step, true, ack);
}

static void session(struct recfs_fault *f, struct tacked *ack)
{
	struct recfs_pack *p;

	memset(ack, 0, sizeof(*ack));
	if (tpack_open(f, NM, NULL, RECFS_O_RDWR, &p))
		return;
	if (put(p, R_OLD1, CH, ack) || put(p, R_OLD2, 5 * CH, ack) || put(p, R_LIVE, CH + 333, ack))
		goto out;
	if (tdelete(p, R_OLD1, names[R_OLD1], ack))
		goto out;
	put(p, R_NEW, CH / 2, ack);
out:
	recfs_pack_close(p);
}

static void verify(struct recfs_fault *f, const struct tacked *ack, const char *what)
{
	tverify_lib(f, NM, NR, names, lens, 4096, ack, what);
}

static void run_cuts(unsigned torn, unsigned flags)
{
	struct tacked ack;
	struct recfs_fault *f = tpack_new(NM, MSZ, CH, 8);
	recfs_fault_reboot(f);
	session(f, &ack);
	uint64_t total = recfs_fault_writes(f);
	recfs_fault_free(f);
	assert_true(total > 20);
	assert_true(ack.sealed[R_NEW]);
	tcut_every(NM, MSZ, CH, 8, total, torn, flags, session, verify);
}

static void test_cut_clean(void **s) { (void)s; run_cuts(0, 0); }
static void test_cut_torn(void **s) { (void)s; run_cuts(1, 0); }
static void test_cut_torn3(void **s) { (void)s; run_cuts(3, 0); }
static void test_cut_volatile(void **s) { (void)s; run_cuts(0, RECFS_FAULT_VOLATILE); }
static void test_cut_volatile_torn(void **s) { (void)s; run_cuts(5, RECFS_FAULT_VOLATILE); }

/* the same session committed as the recorder commits (one flush per
 * sync, each sync writing the entry the last one staged): a sync's entry
 * is acknowledged one sync later */
static void run_cuts_pipe(unsigned torn, unsigned flags)
{
	tpipe = true;
	run_cuts(torn, flags);
	tpipe = false;
}
static void test_pipe_clean(void **s) { (void)s; run_cuts_pipe(0, 0); }
static void test_pipe_torn(void **s) { (void)s; run_cuts_pipe(1, 0); }
static void test_pipe_volatile(void **s) { (void)s; run_cuts_pipe(0, RECFS_FAULT_VOLATILE); }
static void test_pipe_volatile_torn(void **s) { (void)s; run_cuts_pipe(5, RECFS_FAULT_VOLATILE); }

/* a write error on one member: the pack goes on with the other replicas,
 * the error is reported naming the member */
static void test_fail_write(void **state)
{
	struct recfs_fault *f = tpack_new(NM, MSZ, CH, 8);
	struct recfs_pack *p;
	struct recfs_rec r;
	(void)state;

	recfs_fault_reboot(f);
	assert_int_equal(tpack_open(f, NM, NULL, RECFS_O_RDWR, &p), 0);
	recfs_fault_fail_at(f, 1);
	assert_int_equal(recfs_rec_create(p, "x", NULL, 0, &r), -EIO);
	assert_non_null(strstr(recfs_errmsg(), "fault0"));
	recfs_pack_close(p);
	recfs_fault_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cut_clean),    cmocka_unit_test(test_cut_torn),
		cmocka_unit_test(test_cut_torn3),    cmocka_unit_test(test_cut_volatile),
		cmocka_unit_test(test_cut_volatile_torn), cmocka_unit_test(test_fail_write),
		cmocka_unit_test(test_pipe_clean),   cmocka_unit_test(test_pipe_torn),
		cmocka_unit_test(test_pipe_volatile), cmocka_unit_test(test_pipe_volatile_torn),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
