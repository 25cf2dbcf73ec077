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

#endif
