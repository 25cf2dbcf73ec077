/* Shared by the cmocka unit tests: in-memory packs on the fault backend. */
#ifndef RECFS_TEST_HELPERS_H
#define RECFS_TEST_HELPERS_H

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

#include <cmocka.h>

#include "internal.h"
#include "recfs/check.h"
#include "recfs/fault.h"
#include "recfs/recfs.h"

/* mkfs a fault pack; returns the fault images */
static inline struct recfs_fault *tpack_new(unsigned members, uint64_t size, uint32_t chunk,
					    uint32_t dircap)
{
	struct recfs_fault *f = recfs_fault_new(members, size);
	struct recfs_dev *d[RECFS_MAX_MEMBERS];
	struct recfs_mkfs_opts o = {.chunk_size = chunk, .dir_capacity = dircap, .label = "test"};

	assert_non_null(f);
	for (unsigned i = 0; i < members; i++)
		d[i] = recfs_fault_dev(f, i);
	assert_int_equal(recfs_mkfs(d, members, &o, NULL), 0);
	for (unsigned i = 0; i < members; i++)
		recfs_dev_close(d[i]);
	return f;
}

/* open members in the given order (perm may be NULL: identity) */
static inline int tpack_open(struct recfs_fault *f, unsigned members, const unsigned *perm,
			     unsigned flags, struct recfs_pack **p)
{
	struct recfs_dev *d[RECFS_MAX_MEMBERS];

	for (unsigned i = 0; i < members; i++)
		d[i] = recfs_fault_dev(f, perm ? perm[i] : i);
	return recfs_pack_open_devs(d, members, flags, p);
}

/* deterministic test data: byte i of stream s */
static inline uint8_t tbyte(unsigned s, uint64_t i)
{
	uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ull ^ ((uint64_t)s << 56);
	x ^= x >> 29;
	return (uint8_t)(x ^ (x >> 17));
}

static inline void tfill(unsigned s, uint64_t off, uint8_t *buf, size_t len)
{
	for (size_t k = 0; k < len; k++)
		buf[k] = tbyte(s, off + k);
}

/* append bytes [from, to) of stream s */
static inline int tappend(struct recfs_appender *a, unsigned s, uint64_t from, uint64_t to)
{
	uint8_t buf[7000];

	for (uint64_t off = from; off < to;) {
		size_t n = to - off < sizeof(buf) ? (size_t)(to - off) : sizeof(buf);
		tfill(s, off, buf, n);
		int err = recfs_append(a, buf, n);
		if (err)
			return err;
		off += n;
	}
	return 0;
}

/* What a power-loss session got acknowledged, per recording k (stream k). */
#define TREC_MAX 8
struct tacked {
	bool create_started[TREC_MAX], created[TREC_MAX], sealed[TREC_MAX];
	bool deleted[TREC_MAX], delete_started[TREC_MAX];
	uint64_t synced[TREC_MAX];   /* last acknowledged committed length */
	uint64_t durable[TREC_MAX];  /* what fsck must recover: synced (with
				      * tpipe too: a sync may rewrite the slot
				      * of the chunk the last one ended in,
				      * and only the entry vouches for it) */
	uint64_t appended[TREC_MAX]; /* bytes handed to the appender */
};

/* tput commits as a recorder does (recfs_appender_pipeline): a sync
 * acknowledges its data, and the entry of the sync before it */
static bool tpipe;

/* Create recording k as `name` (size hint `hint`), append stream k up to
 * len syncing every `step` bytes, seal if asked; record what succeeded. */
static inline int tput(struct recfs_pack *p, unsigned k, const char *name, uint64_t len,
		       uint64_t hint, uint64_t step, bool seal, struct tacked *ack)
{
	struct recfs_rec r;
	struct recfs_appender *a;
	int err;

	ack->create_started[k] = true;
	if ((err = recfs_rec_create(p, name, NULL, hint, &r)))
		return err;
	ack->created[k] = true;
	if ((err = recfs_appender_new(p, &r, &a)))
		return err;
	recfs_appender_pipeline(a, tpipe);
	for (uint64_t off = 0; off < len;) {
		uint64_t to = off + step < len ? off + step : len;
		ack->appended[k] = to;
		if ((err = tappend(a, k, off, to)))
			goto out;
		if (tpipe && seal && to == len)
			break; /* the recorders seal with their last bytes unsynced */
		if ((err = recfs_append_sync(a)))
			goto out;
		ack->synced[k] = tpipe ? r.committed_len : to;
		ack->durable[k] = ack->synced[k];
		off = to;
	}
	if (seal && !(err = recfs_append_seal(a)))
		ack->sealed[k] = true;
out:
	recfs_appender_free(a);
	return err;
}

/* Delete recording k (named name), noting the start and the end. */
static inline int tdelete(struct recfs_pack *p, unsigned k, const char *name, struct tacked *ack)
{
	struct recfs_rec r;
	int err;

	if ((err = recfs_rec_lookup(p, name, &r)))
		return err;
	ack->delete_started[k] = true;
	if ((err = recfs_rec_delete(p, r.index, 0)))
		return err;
	ack->deleted[k] = true;
	return 0;
}

/* read a whole recording with verification and compare with stream s */
static inline int tcheck(struct recfs_pack *p, const struct recfs_rec *r, unsigned s, uint64_t len)
{
	uint8_t *buf = malloc(len ? len : 1);
	ssize_t got = recfs_rec_pread(p, r, buf, len, 0, RECFS_READ_VERIFY);
	int ok = got == (ssize_t)len;
	for (uint64_t k = 0; ok && k < len; k++)
		ok = buf[k] == tbyte(s, k);
	free(buf);
	return ok ? 0 : -1;
}

/* Run session once per write it makes, cut at that write (torn sectors,
 * RECFS_FAULT_* flags as recfs_fault_cut_at takes), each on a fresh pack
 * from tpack_new(members, size, chunk, dircap); after the reboot, check
 * what is left against what the session had acknowledged. */
static inline void tcut_every(unsigned members, uint64_t size, uint32_t chunk, unsigned dircap,
			      uint64_t total, unsigned torn, unsigned flags,
			      void (*session)(struct recfs_fault *, struct tacked *),
			      void (*check)(struct recfs_fault *, const struct tacked *, const char *))
{
	struct tacked ack;

	for (uint64_t n = 1; n <= total; n++) {
		char what[96];
		snprintf(what, sizeof(what), "cut at write %llu/%llu torn %u%s",
			 (unsigned long long)n, (unsigned long long)total, torn,
			 flags ? " volatile" : "");
		struct recfs_fault *f = tpack_new(members, size, chunk, dircap);
		recfs_fault_reboot(f);
		recfs_fault_cut_at(f, n, torn, flags);
		session(f, &ack);
		assert_true(recfs_fault_cut_fired(f));
		recfs_fault_reboot(f);
		check(f, &ack, what);
		recfs_fault_free(f);
	}
}

/* xorshift64: the tests' reproducible random numbers (*x not 0) */
static inline uint64_t trng(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* recording name on p, stream s's bytes [0, len), created with the
 * allocation hint (recfs_rec_create) and sealed; its entry in *r */
static inline void twrite_rec(struct recfs_pack *p, const char *name, unsigned s, uint64_t len,
			      uint64_t hint, struct recfs_rec *r)
{
	struct recfs_appender *a;

	assert_int_equal(recfs_rec_create(p, name, NULL, hint, r), 0);
	assert_int_equal(recfs_appender_new(p, r, &a), 0);
	assert_int_equal(tappend(a, s, 0, len), 0);
	assert_int_equal(recfs_append_seal(a), 0);
	recfs_appender_free(a);
}

/* A rebooted fault pack (tpack_new) holding n recordings: names[k] is
 * stream k, lens[k] bytes, synced every `step` bytes and sealed (tput);
 * step 0: appended whole, then sealed, or only synced for those whose bit
 * is set in open (a recorder that died with them open). */
static inline struct recfs_fault *tpopulated(unsigned members, uint64_t size, uint32_t chunk,
					     uint32_t dircap, unsigned n, const char *const *names,
					     const uint64_t *lens, uint64_t step, unsigned open)
{
	struct recfs_fault *f = tpack_new(members, size, chunk, dircap);
	struct recfs_pack *p;
	struct tacked ack = {0};

	recfs_fault_reboot(f);
	assert_int_equal(tpack_open(f, members, NULL, RECFS_O_RDWR, &p), 0);
	for (unsigned k = 0; k < n; k++) {
		bool seal = !(open >> k & 1);
		if (step) {
			assert_int_equal(tput(p, k, names[k], lens[k], 0, step, seal, &ack), 0);
			continue;
		}
		struct recfs_rec r;
		struct recfs_appender *a;
		assert_int_equal(recfs_rec_create(p, names[k], NULL, 0, &r), 0);
		assert_int_equal(recfs_appender_new(p, &r, &a), 0);
		assert_int_equal(tappend(a, k, 0, lens[k]), 0);
		assert_int_equal(seal ? recfs_append_seal(a) : recfs_append_sync(a), 0);
		recfs_appender_free(a);
	}
	recfs_pack_close(p);
	recfs_fault_reboot(f);
	return f;
}

/* recfs_check over the fault pack's first `members` images */
static inline int tfsck_opts(struct recfs_fault *f, unsigned members,
			     const struct recfs_check_opts *o, struct recfs_check_stats *st)
{
	struct recfs_dev *d[RECFS_MAX_MEMBERS];
	int ret;

	for (unsigned i = 0; i < members; i++)
		d[i] = recfs_fault_dev(f, i);
	ret = recfs_check(d, members, o, st);
	for (unsigned i = 0; i < members; i++)
		recfs_dev_close(d[i]);
	return ret;
}

/* the checker's report, collected (printed too with DBG_FSCK set) */
struct toutbuf {
	char text[16384];
	size_t len;
};

static inline void tcollect(void *ctx, const char *line)
{
	struct toutbuf *o = ctx;
	int n = snprintf(o->text + o->len, sizeof(o->text) - o->len, "%s\n", line);
	if (n > 0 && o->len + (size_t)n < sizeof(o->text))
		o->len += (size_t)n;
}

/* fsck in mode (with --verify if asked), its report into ob: the exit status */
static inline int tfsck(struct recfs_fault *f, unsigned members, enum recfs_check_mode mode,
			bool verify, struct toutbuf *ob, struct recfs_check_stats *st)
{
	struct recfs_check_opts o = {.mode = mode, .verify = verify, .out = tcollect, .ctx = ob};
	int ret;

	memset(ob, 0, sizeof(*ob));
	ret = tfsck_opts(f, members, &o, st);
	if (getenv("DBG_FSCK"))
		printf("exit %d\n%s", ret, ob->text);
	return ret;
}

/* what a crash may leave: leaked rows, unused slots, replicas one write
 * behind, a torn newest generation, recordings to seal */
static inline void tonly_crash_problems(const char *text, const char *what)
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
				fail_msg("%s: fsck reported more than a crash leaves: %.*s\n%s", what,
					 (int)n, l, text);
		}
		l += n + (e ? 1 : 0);
	}
}

/* Recording k (named name) into r: true when it is there.  Fails when a
 * deleted one is there, a created one is gone (unless a delete had
 * started: it may or may not have landed), or one is there that was never
 * created. */
static inline bool tacked_find(struct recfs_pack *p, unsigned k, const char *name,
			       struct recfs_rec *r, const struct tacked *ack, const char *what)
{
	bool found = recfs_rec_lookup(p, name, r) == 0;

	if (ack->deleted[k]) {
		if (found)
			fail_msg("%s: %s deleted but present", what, name);
		return false;
	}
	if (!found) {
		if (ack->created[k] && !ack->delete_started[k])
			fail_msg("%s: %s lost", what, name);
		return false;
	}
	if (!ack->create_started[k])
		fail_msg("%s: %s present but never created", what, name);
	return true;
}

/* recording r (stream k, named name) against what the session had
 * acknowledged: sealed at len if its seal was, holding at least `least`
 * bytes and no more than were appended, each the stream's */
static inline void tacked_check(struct recfs_pack *p, const struct recfs_rec *r, unsigned k,
				const char *name, uint64_t len, uint64_t least,
				const struct tacked *ack, const char *what)
{
	if (ack->sealed[k] && (r->state != RECFS_STATE_SEALED || r->committed_len != len))
		fail_msg("%s: %s sealed at %llu, now state %u len %llu", what, name,
			 (unsigned long long)len, r->state, (unsigned long long)r->committed_len);
	if (r->committed_len < least || r->committed_len > ack->appended[k])
		fail_msg("%s: %s committed %llu outside acked %llu..appended %llu", what, name,
			 (unsigned long long)r->committed_len, (unsigned long long)least,
			 (unsigned long long)ack->appended[k]);
	if (tcheck(p, r, k, r->committed_len))
		fail_msg("%s: %s data differs within its %llu committed bytes: %s", what, name,
			 (unsigned long long)r->committed_len, recfs_errmsg());
}

/* no two live extents share a row */
static inline void tno_overlap(const struct recfs_pack *p, const char *what)
{
	for (uint32_t i = 0; i < p->dir_hwm; i++)
		for (uint32_t j = i + 1; j < p->dir_hwm; j++) {
			const struct recfs_rec *a = p->ent[i], *b = p->ent[j];
			if (a && b && a->alloc_len && b->alloc_len &&
			    a->ext_start < b->ext_start + b->alloc_len &&
			    b->ext_start < a->ext_start + a->alloc_len)
				fail_msg("%s: %s and %s overlap", what, a->name, b->name);
		}
}

/* life goes on: a new recording fills the free space, appended `step`
 * bytes at a time; recordings names[0..n) (stream k each) keep their bytes */
static inline void tlife_goes_on(struct recfs_fault *f, unsigned members, unsigned n,
				 const char *const *names, size_t step, const char *what)
{
	struct recfs_pack *p;
	struct recfs_rec r;

	if (tpack_open(f, members, NULL, RECFS_O_RDWR, &p))
		fail_msg("%s: pack does not open read-write: %s", what, recfs_errmsg());
	if (recfs_rec_create(p, "after", NULL, 0, &r) == 0) {
		struct recfs_appender *a;
		uint8_t *junk = malloc(step);
		assert_non_null(junk);
		assert_int_equal(recfs_appender_new(p, &r, &a), 0);
		memset(junk, 0x5a, step);
		while (recfs_append(a, junk, step) == 0)
			;
		assert_int_equal(recfs_append_seal(a), 0);
		recfs_appender_free(a);
		free(junk);
	}
	for (unsigned k = 0; k < n; k++)
		if (recfs_rec_lookup(p, names[k], &r) == 0 && tcheck(p, &r, k, r.committed_len))
			fail_msg("%s: %s clobbered by a later allocation", what, names[k]);
	recfs_pack_close(p);
}

/* test_powerloss's checks after a cut, on the library alone (writes to f):
 * the pack assembles, every recording k (names[k], stream k, sealed at
 * lens[k]) is as the session acknowledged it, no extents overlap, and a
 * new recording filling the free space (fill bytes an append) moves nothing */
static inline void tverify_lib(struct recfs_fault *f, unsigned members, unsigned n,
			       const char *const *names, const uint64_t *lens, size_t fill,
			       const struct tacked *ack, const char *what)
{
	struct recfs_pack *p;
	struct recfs_rec r;

	if (tpack_open(f, members, NULL, 0, &p))
		fail_msg("%s: pack does not assemble: %s", what, recfs_errmsg());
	for (unsigned k = 0; k < n; k++) {
		if (!tacked_find(p, k, names[k], &r, ack, what))
			continue;
		tacked_check(p, &r, k, names[k], lens[k], ack->synced[k], ack, what);
	}
	tno_overlap(p, what);
	recfs_pack_close(p);
	tlife_goes_on(f, members, n, names, fill, what);
}

#endif
