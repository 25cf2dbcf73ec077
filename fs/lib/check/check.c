/* SPDX-License-Identifier: MIT */
/*
 * The pack checker (fsck.recfs).  Passes, in order:
 *   1 members and superblocks: identify every member, pick the pack's
 *     superblock by vote, rewrite bad copies
 *   2 allocation bitmap copies: the newest valid generation on every member
 *   3 directory: the newest valid copy of every entry below the high-water
 *     mark on every member, entry fields
 *   4 extents: inside the data area, no overlaps, no duplicate names, the
 *     bitmap equal to the extents (leaks and holes)
 *   5 checksum table replicas of committed chunks; crash recovery of
 *     recordings left RECORDING (sealed through the library)
 *   6 --verify: every committed chunk against its checksum, one thread per
 *     member
 * It reads members through their dev ops only, never past a member's end,
 * sizes every allocation by fields already checked against the geometry
 * and the device sizes, and writes nothing in RECFS_CHECK_NO mode.
 */
#include "ck.h"

/* ---------------------------------------------------------------- driver */
/* Rows the live extents cover, after every repair. */
void ck_rows_used(struct ck *c)
{
	uint8_t *b = calloc(1, (size_t)((c->g.rows + 7) / 8) + 8);

	if (!b)
		return;
	c->st->rows_used = 0;
	for (uint32_t x = 0; x < c->nrec; x++) {
		const struct recfs_rec *r = &c->rec[x].r;
		if (c->rec[x].drop)
			continue;
		uint64_t r0 = r->ext_start / c->g.row_bytes, r1 = r0 + r->alloc_len / c->g.row_bytes;
		for (uint64_t k = r0; k < r1 && k < c->g.rows; k++)
			if (!recfs_bit_test(b, k)) {
				recfs_bit_set(b, k);
				c->st->rows_used++;
			}
	}
	free(b);
}

/* The passes in order, each in its own file (see ck.h) */
static int (*const ck_passes[])(struct ck *c) = {
	ck_pass1, /* super.c: members and superblocks */
	ck_pass2, /* bitmap.c: allocation bitmap copies */
	ck_pass3, /* dir.c: directory entries */
	ck_pass4, /* extents.c: extents against each other and the bitmap */
	ck_pass5, /* csums.c: checksum table replicas; crashed recordings found */
};

int recfs_check(struct recfs_dev **devs, unsigned n, const struct recfs_check_opts *o,
		struct recfs_check_stats *st)
{
	struct recfs_check_stats dummy;
	struct ck *c;
	int err;

	if (!st)
		st = &dummy;
	memset(st, 0, sizeof(*st));
	if (n == 0 || n > CK_MAX_ARGS)
		return RECFS_FSCK_USAGE;
	c = calloc(1, sizeof(*c));
	if (!c)
		return RECFS_FSCK_ERROR;
	c->o = o;
	c->st = st;
	c->n = n;
	c->a = calloc(n, sizeof(*c->a));
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->done, NULL);
	atomic_init(&c->vdone, 0);
	if (!c->a) {
		c->status = RECFS_FSCK_ERROR;
		goto out_free;
	}
	for (unsigned i = 0; i < n; i++)
		c->a[i].dev = devs[i];

	/* passes 1 to 5: an error or a stop (cancelled, preen stopped) ends
	 * the check; pass 1's error has said why the pack is not checkable */
	for (size_t i = 0; i < sizeof(ck_passes) / sizeof(ck_passes[0]); i++) {
		if ((err = ck_passes[i](c)) && i == 0)
			goto out_free;
		if (err || ck_stop_now(c))
			goto out_err;
	}
	/* then crash recovery, and pass 6 unless stopped */
	ck_seal_crashed(c);
	if (o->verify && !ck_stop_now(c))
		ck_pass6(c);
	ck_stop_now(c);
	st->recordings = 0;
	for (uint32_t x = 0; x < c->nrec; x++)
		st->recordings += !c->rec[x].drop;
	ck_rows_used(c);
	{
		char lbl[RECFS_LABEL_MAX + 8] = "";
		if (c->sb.label[0])
			snprintf(lbl, sizeof(lbl), " '%s'", c->sb.label);
		ck_out(c, "pack%s: %u members, %u recordings, %llu/%llu rows in use", lbl,
		    c->sb.member_count, st->recordings, (unsigned long long)st->rows_used,
		    (unsigned long long)c->g.rows);
	}
	if (o->verify)
		ck_out(c, "verify: %llu bytes checked, %llu bad chunks", (unsigned long long)st->verified_bytes,
		    (unsigned long long)st->bad_chunks);
	if (o->verify && o->verbose && st->verify_ns)
		ck_out(c, "verify: %.1f MiB/s", (double)st->verified_bytes / 1048576.0 /
						  ((double)st->verify_ns / 1e9));
	if (c->preen_stop)
		ck_out(c, "UNEXPECTED INCONSISTENCY: run fsck.recfs manually (without -p or -a).");
	if (c->status & RECFS_FSCK_CORRECTED)
		ck_out(c, "***** PACK WAS MODIFIED *****");
	goto out_free;

out_err:
	if (err) {
		ck_out(c, "check aborted: %s", recfs_errmsg());
		c->status |= RECFS_FSCK_ERROR;
	}
out_free:
	if (c->cancelled) {
		ck_out(c, "check cancelled: the pack holds the repairs made so far");
		c->status |= RECFS_FSCK_CANCELLED;
	}
	err = c->status;
	for (uint32_t x = 0; c->rec && x < c->nrec; x++) {
		free(c->rec[x].seal_csums);
		free(c->rec[x].exp);
		free(c->rec[x].exp_bad);
	}
	free(c->rec);
	free(c->bad);
	recfs_free(c->bmp);
	free(c->a);
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->done);
	free(c);
	return err;
}
