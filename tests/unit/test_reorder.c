/* Crash states that reorder writes (CrashMonkey's and ALICE's model): a
 * disk may persist any subset of the writes issued since its last flush,
 * in any order, a write may be torn, and the members are independent disks.
 *
 * A record/seal/delete/reuse session (two recordings sealed, the first
 * deleted, one written in a single commit of 8 chunks, one left open as a recorder that dies with the machine, one
 * more created in the first one's rows and directory index and sealed) is
 * cut before each of its flushes in turn; every member keeps the writes it
 * had not flushed.  Each cut state is then rebooted many ways:
 *  - every subset of the pending writes (all members together) when there
 *    are at most ENUM_MAX of them, a seeded sample of subsets otherwise;
 *  - a seeded random sample over all cuts where each write is lost, kept
 *    or torn (a prefix of its sectors lands, as FORMAT.md assumes);
 * and each rebooted state must pass test_powerloss's invariants on the
 * library (the pack assembles, every acknowledged seal byte-identical,
 * every open recording at least its last acknowledged commit and an exact
 * prefix, no overlapping extents, a new recording filling the free space
 * moves nothing) and test_fsck_powerloss's on the checker (only what a
 * crash leaves is reported, every recording sealed within its
 * acknowledged..written bounds and byte-identical, a second read-only
 * --verify run finds nothing).
 *
 * RECFS_REORDER_SAMPLES (default 2000 prefix-torn, 500 any-sector) sets
 * the random samples' size, RECFS_REORDER_SEED (default 1) their seed;
 * RECFS_REORDER_FSCK_EVERY (default 1: every state) runs the checker on
 * one state in N of the exhaustive part; RECFS_REORDER_ENUM_MAX (default
 * 12, at most 20) is the most pending writes whose subsets are all tried. */
#include <time.h>

#include "helpers.h"
#include "internal.h"
#include "recfs/check.h"

#define MSZ (4ull << 20)
#define CH (64u << 10)
#define NM 2
#define DIRCAP 8
#define ENUM_MAX 12
#define SUBSET_SAMPLES 64 /* per cut, when its pending writes are too many */

/* defaults: about 40 s here; a sanitizer build (about 6x slower) runs
 * fsck on one subset state in 4 and a quarter of the random samples */
#ifdef __SANITIZE_ADDRESS__
#define SCALE 4
#else
#define SCALE 1
#endif

/* burst: one commit of 8 chunks, 10 writes pending before its flush */
enum { R_A, R_B, R_BURST, R_LIVE, R_D, NR };
static const char *names[NR] = {"a", "b", "burst", "live", "d"};
static const uint64_t lens[NR] = {3 * CH + 100, 2 * CH + 7, 7 * CH + 77, 4 * CH + 123, CH + 5};
static const uint64_t steps[NR] = {CH, 50000, 7 * CH + 77, CH + 333, CH / 2};

static int put(struct recfs_pack *p, unsigned k, bool seal, struct tacked *ack)
{
	bool sized = k == R_D || k == R_BURST;
	return tput(p, k, names[k], lens[k], sized ? lens[k] : 0, steps[k], seal, ack);
}

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
	if (put(p, R_BURST, true, ack) || put(p, R_LIVE, false, ack))
		goto out;
	put(p, R_D, true, ack);
out:
	recfs_pack_close(p);
}

/* ------------------------------------------------------------ invariants */
/* test_powerloss's, on the library alone (writes to f: "life goes on") */
static void verify_lib(struct recfs_fault *f, const struct tacked *ack, const char *what)
{
	tverify_lib(f, NM, NR, names, lens, CH, ack, what);
}

/* fsck --verify allocates and clears 8 MiB per reading thread, which
 * costs more than the rest of a state: the data is read back through the
 * library below anyway, so only one state in VERIFY_EVERY adds it */
#define VERIFY_EVERY 16
static unsigned long long verify_runs;

/* test_fsck_powerloss's, on the checker (repairs f) */
static void verify_fsck(struct recfs_fault *f, const struct tacked *ack, const char *what)
{
	bool verify = verify_runs++ % VERIFY_EVERY == 0;
	struct toutbuf ob;
	struct recfs_check_stats st;
	struct recfs_pack *p;
	struct recfs_rec r;
	int ret;

	ret = tfsck(f, NM, RECFS_CHECK_YES, false, &ob, &st);
	if (ret & ~RECFS_FSCK_CORRECTED)
		fail_msg("%s: fsck -y exit %d:\n%s", what, ret, ob.text);
	tonly_crash_problems(ob.text, what);
	/* the second run, read-only (and sometimes reading every byte back),
	 * finds nothing */
	ret = tfsck(f, NM, RECFS_CHECK_NO, verify, &ob, &st);
	if (ret != 0 || st.problems || st.bad_chunks)
		fail_msg("%s: second fsck (-n%s) exit %d:\n%s", what, verify ? " --verify" : "", ret,
			 ob.text);

	if (tpack_open(f, NM, NULL, 0, &p))
		fail_msg("%s: pack does not assemble after fsck: %s", what, recfs_errmsg());
	for (unsigned k = 0; k < NR; k++) {
		if (!tacked_find(p, k, names[k], &r, ack, what))
			continue;
		if (r.state != RECFS_STATE_SEALED)
			fail_msg("%s: %s left in state %u after fsck", what, names[k], r.state);
		tacked_check(p, &r, k, names[k], lens[k], ack->durable[k], ack, what);
	}
	recfs_pack_close(p);
}

/* ------------------------------------------------------------ the picks */
/* whole writes: bit base[member]+k of mask keeps write k of member */
struct maskpick {
	uint64_t mask;
	size_t base[NM];
};

static void pick_mask(void *ctx, unsigned member, size_t k, size_t nlog, uint64_t off,
		      size_t len, uint8_t *keep)
{
	const struct maskpick *m = ctx;
	size_t ns = (size_t)((off + len + RECFS_SECTOR - 1) / RECFS_SECTOR - off / RECFS_SECTOR);
	(void)nlog;
	if (m->mask >> (m->base[member] + k) & 1)
		memset(keep, 1, ns);
}

/* each write lost, kept or torn: a prefix of its sectors lands, or (any)
 * any subset of them */
struct randpick {
	uint64_t x;
	bool any;
	unsigned kept, lost, torn;
};

static void pick_rand(void *ctx, unsigned member, size_t k, size_t nlog, uint64_t off,
		      size_t len, uint8_t *keep)
{
	struct randpick *rp = ctx;
	size_t ns = (size_t)((off + len + RECFS_SECTOR - 1) / RECFS_SECTOR - off / RECFS_SECTOR);
	unsigned c = (unsigned)(trng(&rp->x) % 3);
	(void)member, (void)k, (void)nlog;
	if (c == 0) {
		rp->lost++;
		return;
	}
	if (c == 1 || ns < 2) {
		rp->kept++;
		memset(keep, 1, ns);
		return;
	}
	rp->torn++;
	if (rp->any) {
		for (size_t j = 0; j < ns; j++)
			keep[j] = trng(&rp->x) & 1;
	} else {
		memset(keep, 1, 1 + (size_t)(trng(&rp->x) % (ns - 1)));
	}
}

/* ------------------------------------------------------------ the runs */
static uint64_t env_num(const char *name, uint64_t dflt)
{
	const char *v = getenv(name);
	return v && *v ? strtoull(v, NULL, 0) : dflt;
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static uint64_t session_flushes(void)
{
	struct tacked ack;
	struct recfs_fault *f = tpack_new(NM, MSZ, CH, DIRCAP);
	recfs_fault_reboot(f);
	session(f, &ack);
	uint64_t n = recfs_fault_flushes(f);
	assert_true(ack.sealed[R_D]);
	recfs_fault_free(f);
	return n;
}

/* the session cut before flush call n; NULL if nothing was pending */
static struct recfs_fault *cut_state(uint64_t n, struct tacked *ack, size_t pend[NM])
{
	struct recfs_fault *f = tpack_new(NM, MSZ, CH, DIRCAP);
	size_t tot = 0;

	recfs_fault_reboot(f);
	recfs_fault_cut_at_flush(f, n);
	session(f, ack);
	assert_true(recfs_fault_cut_fired(f));
	for (unsigned i = 0; i < NM; i++)
		tot += pend[i] = recfs_fault_pending(f, i);
	if (!tot) {
		recfs_fault_free(f);
		return NULL;
	}
	return f;
}

/* reboot a copy of cut state f the way pick says; check both ways */
static void check_state(struct recfs_fault *f, recfs_fault_pick_fn pick, void *ctx,
			const struct tacked *ack, const char *what, bool fsck)
{
	struct recfs_fault *g = recfs_fault_clone(f);
	assert_non_null(g);
	recfs_fault_reboot_pick(g, pick, ctx);
	if (fsck) {
		struct recfs_fault *h = recfs_fault_clone(g);
		assert_non_null(h);
		verify_fsck(h, ack, what);
		recfs_fault_free(h);
	}
	verify_lib(g, ack, what);
	recfs_fault_free(g);
}

/* every subset of the pending writes at every flush (sampled when more
 * than ENUM_MAX are pending) */
static void test_subsets(void **s)
{
	uint64_t nflush = session_flushes();
	uint64_t fsck_every = env_num("RECFS_REORDER_FSCK_EVERY", SCALE);
	uint64_t enum_max = env_num("RECFS_REORDER_ENUM_MAX", ENUM_MAX);
	uint64_t x = env_num("RECFS_REORDER_SEED", 1) * 0x9E3779B97F4A7C15ull | 1;
	unsigned long long states = 0, fscked = 0, cuts = 0, full = 0, sampled = 0;
	size_t maxpend = 0;
	double t0 = now_s();
	(void)s;

	if (enum_max > 20)
		enum_max = 20;
	for (uint64_t n = 1; n <= nflush; n++) {
		struct tacked ack;
		size_t pend[NM];
		struct recfs_fault *f = cut_state(n, &ack, pend);
		if (!f)
			continue;
		cuts++;
		struct maskpick mp = {0};
		size_t tot = 0;
		for (unsigned i = 0; i < NM; i++) {
			mp.base[i] = tot;
			tot += pend[i];
		}
		if (tot > maxpend)
			maxpend = tot;
		uint64_t count = tot <= enum_max ? 1ull << tot : SUBSET_SAMPLES;
		if (tot <= enum_max)
			full++;
		else
			sampled++;
		for (uint64_t k = 0; k < count; k++) {
			char what[160];
			mp.mask = tot <= enum_max ? k : trng(&x) & (tot >= 64 ? ~0ull : (1ull << tot) - 1);
			snprintf(what, sizeof(what), "cut before flush %llu/%llu, %zu+%zu pending, kept 0x%llx",
				 (unsigned long long)n, (unsigned long long)nflush, pend[0], pend[1],
				 (unsigned long long)mp.mask);
			bool fsck = states % fsck_every == 0;
			check_state(f, pick_mask, &mp, &ack, what, fsck);
			states++;
			fscked += fsck;
		}
		recfs_fault_free(f);
	}
	print_message("%llu flushes, %llu cut states with writes pending (at most %zu; %llu "
		      "enumerated, %llu sampled): %llu crash states, %llu of them through fsck, "
		      "%.1f s\n",
		      (unsigned long long)nflush, cuts, maxpend, full, sampled, states, fscked,
		      now_s() - t0);
	assert_true(cuts > 20);
}

/* a seeded sample over every cut: writes lost, kept or torn */
static void run_random(bool any, uint64_t dflt)
{
	uint64_t nflush = session_flushes();
	uint64_t samples = env_num("RECFS_REORDER_SAMPLES", dflt);
	uint64_t x = env_num("RECFS_REORDER_SEED", 1) * 0xD1B54A32D192ED03ull | 1;
	struct randpick rp = {.any = any};
	unsigned long long states = 0;
	unsigned ncut = 0;
	double t0 = now_s();
	uint64_t *per = calloc(nflush + 1, sizeof(*per));

	/* how many samples each cut gets, then one cut state at a time */
	assert_non_null(per);
	for (uint64_t k = 0; k < samples; k++)
		per[1 + trng(&x) % nflush]++;
	for (uint64_t n = 1; n <= nflush; n++) {
		struct tacked ack;
		size_t pend[NM];
		struct recfs_fault *f = cut_state(n, &ack, pend);
		if (!f) {
			per[n % nflush + 1] += per[n] * (n < nflush); /* to the next cut */
			continue;
		}
		ncut++;
		for (uint64_t k = 0; k < per[n]; k++) {
			char what[160];
			rp.x = trng(&x) | 1;
			snprintf(what, sizeof(what),
				 "cut before flush %llu/%llu, %zu+%zu pending, %s tears, pick seed 0x%llx",
				 (unsigned long long)n, (unsigned long long)nflush, pend[0], pend[1],
				 any ? "any-sector" : "prefix", (unsigned long long)rp.x);
			check_state(f, pick_rand, &rp, &ack, what, true);
			states++;
		}
		recfs_fault_free(f);
	}
	free(per);
	print_message("%s tears: %llu random crash states over %u cuts (writes kept %u, lost %u, "
		      "torn %u), each through the library and fsck, %.1f s\n",
		      any ? "any-sector" : "prefix", states, ncut, rp.kept, rp.lost, rp.torn,
		      now_s() - t0);
	assert_true(states > 0);
}

/* the backend itself: what a reboot keeps of overlapping writes, torn
 * writes, members apart; read faults */
struct sectorpick {
	uint64_t mask;   /* bit base[member]+k: write k kept */
	uint8_t only[4]; /* if only[0]: write 0 of member 0 keeps these sectors */
};

static void pick_sectors(void *ctx, unsigned member, size_t k, size_t nlog, uint64_t off,
			 size_t len, uint8_t *keep)
{
	const struct sectorpick *sp = ctx;
	size_t ns = (len + RECFS_SECTOR - 1) / RECFS_SECTOR;
	(void)nlog, (void)off;
	if (member == 0 && k == 0 && sp->only[0]) {
		for (size_t j = 0; j < ns && j < 4; j++)
			keep[j] = sp->only[j] == 2;
		return;
	}
	if (sp->mask >> (member ? 2 + k : k) & 1)
		memset(keep, 1, ns);
}

/* expected bytes of member 0's first 1536 as 3 chars per 512 ('0' zero) */
static void expect3(struct recfs_fault *f, const char *want)
{
	const uint8_t *img = recfs_fault_image(f, 0);
	for (unsigned j = 0; j < 3; j++) {
		uint8_t w = want[j] == '0' ? 0 : (uint8_t)want[j];
		for (unsigned b = 0; b < RECFS_SECTOR; b++)
			if (img[j * RECFS_SECTOR + b] != w)
				fail_msg("want %s: sector %u byte %u is 0x%02x", want, j, b,
					 img[j * RECFS_SECTOR + b]);
	}
}

static void test_backend(void **s)
{
	struct recfs_fault *f = recfs_fault_new(2, 1 << 20);
	struct recfs_dev *d0 = recfs_fault_dev(f, 0), *d1 = recfs_fault_dev(f, 1);
	uint8_t a[1024], b[1024], c[512], buf[512];
	(void)s;

	memset(a, 'A', sizeof(a));
	memset(b, 'B', sizeof(b));
	memset(c, 'C', sizeof(c));
	assert_int_equal(d1->ops->pwrite(d1, c, 512, 4096), 0);
	assert_int_equal(d1->ops->flush(d1), 0); /* durable: never a candidate */
	assert_int_equal(d0->ops->pwrite(d0, a, 1024, 0), 0);   /* sectors 0-1 */
	assert_int_equal(d0->ops->pwrite(d0, b, 1024, 512), 0); /* sectors 1-2 */
	assert_int_equal(d1->ops->pwrite(d1, c, 512, 0), 0);
	assert_int_equal(recfs_fault_pending(f, 0), 2);
	assert_int_equal(recfs_fault_pending(f, 1), 1);
	recfs_fault_cut_at_flush(f, 2);
	assert_int_equal(d0->ops->flush(d0), -EIO);
	assert_true(recfs_fault_cut_fired(f));
	assert_int_equal(d1->ops->pwrite(d1, c, 512, 0), -EIO); /* the power is off */
	assert_int_equal(recfs_fault_pending(f, 0), 2);

	static const struct {
		struct sectorpick p;
		const char *m0;
		bool c;
	} cases[] = {
		{{0, {0}}, "000", false},
		{{1, {0}}, "AA0", false},
		{{2, {0}}, "0BB", false}, /* the later write alone: a legal state */
		{{3, {0}}, "ABB", false}, /* a sector is its newest persisted write's */
		{{4, {0}}, "000", true},  /* members apart */
		{{7, {0}}, "ABB", true},
		{{0, {1, 2}}, "0A0", false},    /* A torn: its second sector only */
		{{2, {2, 1}}, "ABB", false},    /* A's first sector, then all of B */
	};
	for (unsigned k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		struct recfs_fault *g = recfs_fault_clone(f);
		assert_non_null(g);
		recfs_fault_reboot_pick(g, pick_sectors, (void *)&cases[k].p);
		expect3(g, cases[k].m0);
		const uint8_t *m1 = recfs_fault_image(g, 1);
		assert_int_equal(m1[0], cases[k].c ? 'C' : 0);
		assert_int_equal(m1[4096], 'C');
		assert_false(recfs_fault_cut_fired(g));
		assert_int_equal(recfs_fault_pending(g, 0), 0);
		recfs_fault_free(g);
	}
	recfs_fault_reboot_pick(f, pick_sectors, &(struct sectorpick){3, {0}});
	expect3(f, "ABB");

	/* read faults: only the range, on its member, until cleared */
	assert_int_equal(recfs_fault_read_error(f, 0, 1000, 1), 0);
	assert_int_equal(d0->ops->pread(d0, buf, 512, 512), -EIO);
	assert_int_equal(d0->ops->pread(d0, buf, 512, 0), 0);
	assert_int_equal(d0->ops->pread(d0, buf, 512, 1024), 0);
	assert_int_equal(d1->ops->pread(d1, buf, 512, 512), 0);
	recfs_fault_reboot(f);
	assert_int_equal(d0->ops->pread(d0, buf, 512, 512), -EIO);
	recfs_fault_read_clear(f);
	assert_int_equal(d0->ops->pread(d0, buf, 512, 512), 0);
	assert_int_equal(buf[0], 'B');
	recfs_dev_close(d0);
	recfs_dev_close(d1);
	recfs_fault_free(f);
}

static void test_random_prefix(void **s) { (void)s; run_random(false, 2000 / SCALE); }
static void test_random_any(void **s) { (void)s; run_random(true, 500 / SCALE); }

/* the session committed as the recorder commits (recfs_appender_pipeline:
 * each sync writes the entry the last one staged, then one flush): every
 * subset at every flush, and any-sector tears */
static void test_subsets_pipe(void **s)
{
	tpipe = true;
	test_subsets(s);
	tpipe = false;
}
static void test_random_any_pipe(void **s)
{
	(void)s;
	tpipe = true;
	run_random(true, 500 / SCALE);
	tpipe = false;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_backend),
		cmocka_unit_test(test_subsets),
		cmocka_unit_test(test_random_prefix),
		cmocka_unit_test(test_random_any),
		cmocka_unit_test(test_subsets_pipe),
		cmocka_unit_test(test_random_any_pipe),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
