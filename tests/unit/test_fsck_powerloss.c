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
	struct recfs_rec r;

	memset(ack, 0, sizeof(*ack));
	if (tpack_open(f, NM, NULL, RECFS_O_RDWR, &p))
		return;
	if (put(p, R_A, true, ack) || put(p, R_B, true, ack))
		goto out;
	if (recfs_rec_lookup(p, names[R_A], &r))
		goto out;
	ack->delete_started[R_A] = true;
	if (recfs_rec_delete(p, r.index, 0))
		goto out;
	ack->deleted[R_A] = true;
	if (put(p, R_LIVE, false, ack))
		goto out;
	put(p, R_D, true, ack);
out:
	recfs_pack_close(p);
}

struct outbuf {
	char text[16384];
	size_t len;
};

static void collect(void *ctx, const char *line)
{
	struct outbuf *o = ctx;
	int n = snprintf(o->text + o->len, sizeof(o->text) - o->len, "%s\n", line);
	if (n > 0 && o->len + (size_t)n < sizeof(o->text))
		o->len += (size_t)n;
}

static int run_check(struct recfs_fault *f, enum recfs_check_mode mode, struct outbuf *ob,
		     struct recfs_check_stats *st)
{
	struct recfs_dev *d[NM];
	struct recfs_check_opts o = {0};
	int ret;

	memset(ob, 0, sizeof(*ob));
	for (unsigned i = 0; i < NM; i++)
		d[i] = recfs_fault_dev(f, i);
	o.mode = mode;
	o.out = collect;
	o.ctx = ob;
	o.verify = mode == RECFS_CHECK_NO;
	ret = recfs_check(d, NM, &o, st);
	for (unsigned i = 0; i < NM; i++)
		recfs_dev_close(d[i]);
	return ret;
}

/* what a crash may leave: leaked rows, unused slots, replicas one write
 * behind, a torn newest generation, recordings to seal */
static void only_crash_problems(const char *text, const char *what)
{
	static const char *ok[] = {"PR_ENT_UNUSED:", "PR_ENT_REPLICA:", "PR_ENT_ROLLBACK:",
				   "PR_BMP_COPY:", "PR_BMP_LEAK:", "PR_SLOT_REPLICA:",
				   "PR_REC_CRASHED:", NULL};
	for (const char *l = text; *l;) {
		const char *e = strchr(l, '\n');
		size_t n = e ? (size_t)(e - l) : strlen(l);
		if (!strncmp(l, "PR_", 3)) {
			bool fine = false;
			for (unsigned k = 0; ok[k] && !fine; k++)
				fine = !strncmp(l, ok[k], strlen(ok[k]));
			if (!fine)
				fail_msg("%s: fsck reported more than a crash leaves: %.*s", what, (int)n, l);
		}
		l += n + (e ? 1 : 0);
	}
}

static void check_after(struct recfs_fault *f, const struct tacked *ack, const char *what)
{
	struct outbuf ob;
	struct recfs_check_stats st;
	struct recfs_pack *p;
	struct recfs_rec r;
	int ret;

	ret = run_check(f, RECFS_CHECK_YES, &ob, &st);
	if (ret & ~RECFS_FSCK_CORRECTED)
		fail_msg("%s: fsck -y exit %d:\n%s", what, ret, ob.text);
	only_crash_problems(ob.text, what);
	if (!strcmp(what, "no cut") && !strstr(ob.text, "PR_REC_CRASHED: recording 'live'"))
		fail_msg("the open recording was not recovered:\n%s", ob.text);
	ret = run_check(f, RECFS_CHECK_YES, &ob, &st);
	if (ret != 0 || st.problems)
		fail_msg("%s: second fsck -y exit %d:\n%s", what, ret, ob.text);
	/* the read-only check with --verify reads everything back */
	ret = run_check(f, RECFS_CHECK_NO, &ob, &st);
	if (ret != 0 || st.bad_chunks)
		fail_msg("%s: fsck -n --verify exit %d:\n%s", what, ret, ob.text);

	if (tpack_open(f, NM, NULL, 0, &p))
		fail_msg("%s: pack does not assemble after fsck: %s", what, recfs_errmsg());
	for (unsigned k = 0; k < NR; k++) {
		int found = recfs_rec_lookup(p, names[k], &r) == 0;
		if (ack->deleted[k]) {
			if (found)
				fail_msg("%s: %s deleted but present", what, names[k]);
			continue;
		}
		if (!found) {
			if (ack->created[k] && !ack->delete_started[k])
				fail_msg("%s: %s lost", what, names[k]);
			continue;
		}
		if (!ack->create_started[k])
			fail_msg("%s: %s present but never created", what, names[k]);
		if (r.state != RECFS_STATE_SEALED)
			fail_msg("%s: %s left in state %u after fsck", what, names[k], r.state);
		if (ack->sealed[k] && r.committed_len != lens[k])
			fail_msg("%s: %s sealed at %llu, now %llu", what, names[k],
				 (unsigned long long)lens[k], (unsigned long long)r.committed_len);
		if (r.committed_len < ack->synced[k] || r.committed_len > ack->appended[k])
			fail_msg("%s: %s holds %llu bytes, outside synced %llu..written %llu", what,
				 names[k], (unsigned long long)r.committed_len,
				 (unsigned long long)ack->synced[k],
				 (unsigned long long)ack->appended[k]);
		if (tcheck(p, &r, k, r.committed_len))
			fail_msg("%s: %s differs within its %llu bytes: %s", what, names[k],
				 (unsigned long long)r.committed_len, recfs_errmsg());
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
	struct outbuf ob;
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
	int ret = run_check(f, RECFS_CHECK_NO, &ob, &st);
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
