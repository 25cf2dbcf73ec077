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
#include <endian.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/random.h>
#include <time.h>
#include <xxhash.h>

#include "internal.h"
#include "problem.h"
#include "recfs/check.h"

#define CK_MAX_ARGS 256
#define CK_DIR_BATCH 512u         /* entries per directory read */
#define CK_SLOT_BATCH 8192u       /* checksum slots per table read */
#define CK_SLOT_REPORTS 8         /* per recording, then summarized */
#define CK_VERIFY_IO (8u << 20)   /* bytes per --verify read */
#define CK_VERIFY_WORKERS 4       /* reads in flight per member */
#define CK_VERIFY_MEM (256u << 20) /* read buffers of all workers */
#define CK_BAD_MAX (1u << 20)     /* bad chunks remembered (24 bytes each) */
#define CK_BAD_LINES 20           /* bad chunks listed per recording */

struct ck_member {
	struct recfs_dev *dev;
	int err[2];                 /* decode result: primary, backup */
	char why[2][200];
	struct recfs_super sb[2];
	bool good[2];               /* valid and agrees with the pack */
	const char *field[2];       /* first field that disagrees */
	int index;                  /* member index, -1 unknown */
	bool ignored;               /* not part of the pack */
	bool shrt;                  /* shorter than member_size */
};

struct ck_rec {
	struct recfs_rec r;
	bool drop;                  /* no longer live */
	bool aside;                 /* kept as found (a repair declined): not
				       checked, its rows stay allocated */
	bool commit_bad;            /* committed_len > alloc_len on disk */
	bool own_known;             /* own: committed, or proven if crashed */
	uint64_t own;
	uint64_t commit_orig;
	/* crash recovery */
	bool crashed;
	uint64_t seal_len;
	uint64_t *seal_csums;
	uint64_t nseal;
	/* expected checksums of the committed full chunks (--verify) */
	uint64_t *exp;
	uint8_t *exp_bad;           /* 1: no trustworthy checksum */
	uint64_t nexp;
};

struct ck_bad {
	uint32_t rec;               /* position in c->rec */
	uint32_t member;
	uint64_t chunk;
	int io;                     /* 0 checksum, else -errno */
};

struct ck {
	const struct recfs_check_opts *o;
	struct recfs_check_stats *st;
	char last_io[400];          /* the last PR_MEMBER_IO text: said once */
	unsigned n;
	struct ck_member *a;
	int at[RECFS_MAX_MEMBERS];  /* member index -> argument, -1 missing */
	struct recfs_super sb;
	struct recfs_geom g;
	uint64_t seed;
	bool degraded;              /* member missing: nothing is written */
	bool dup;                   /* two members claim one index: nothing is written */
	bool sb_tie;                /* no superblock has a majority: nothing is written */
	uint64_t dev_rows;          /* data rows the shortest member holds */
	bool dev_rows_set;
	bool cancelled, preen_stop;
	bool keep_leaks;            /* an entry of unknown extent was kept: free no leaked rows */
	int status;
	/* bitmap */
	bool have_bmp, hwm_known, bmp_rebuild;
	struct recfs_bitmap_hdr bh;
	uint8_t *bmp;               /* the newest valid copy */
	uint32_t hwm;
	/* live entries */
	struct ck_rec *rec;
	uint32_t nrec, caprec;
	/* pass 6 */
	struct ck_bad *bad;
	size_t nbad, capbad;
	uint64_t bad_unlisted;      /* beyond CK_BAD_MAX */
	pthread_mutex_t lock;
	pthread_cond_t done;
	atomic_uint_fast64_t vdone;
	atomic_bool verify_oom;
};

/* ------------------------------------------------------------------ output */
static void out(struct ck *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out(struct ck *c, const char *fmt, ...)
{
	char line[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (c->o->out)
		c->o->out(c->o->ctx, line);
}

/* after an unexpected inconsistency, preen mode only reports */
/* Has the caller cancelled the check (opts.cancel)?  Main thread only. */
static bool stop_now(struct ck *c)
{
	if (!c->cancelled && c->o->cancel && c->o->cancel(c->o->ctx))
		c->cancelled = true;
	return c->cancelled;
}

static bool can_write(const struct ck *c)
{
	return c->o->mode != RECFS_CHECK_NO && !c->degraded && !c->dup && !c->sb_tie && !c->cancelled &&
	       !c->preen_stop;
}

/* Report problem num; returns true if the repair is to be done. */
static bool problem(struct ck *c, int num, const struct recfs_pctx *pc)
{
	const struct recfs_problem *p = recfs_problem_get(num);
	char msg[1200], q[400];
	bool yes = false;

	recfs_problem_format(p->msg, pc, msg, sizeof(msg));
	c->st->problems++;
	if (p->flags & RECFS_PRF_NOFIX) {
		out(c, "%s: %s.", p->code, msg);
		c->st->unfixed++;
		c->status |= (p->flags & RECFS_PRF_FATAL) ? RECFS_FSCK_ERROR : RECFS_FSCK_UNCORRECTED;
		return false;
	}
	recfs_problem_format(p->fix, pc, q, sizeof(q));
	if (!can_write(c)) {
		if (c->preen_stop)
			out(c, "%s: %s.", p->code, msg);
		else
			out(c, "%s: %s.  %s? no", p->code, msg, q);
	} else if (c->o->mode == RECFS_CHECK_YES) {
		out(c, "%s: %s.  %s? yes", p->code, msg, q);
		yes = true;
	} else if (c->o->mode == RECFS_CHECK_PREEN) {
		if (p->flags & RECFS_PRF_PREEN) {
			out(c, "%s: %s.  %s? yes", p->code, msg, q);
			yes = true;
		} else {
			out(c, "%s: %s.  UNEXPECTED INCONSISTENCY: run fsck.recfs without -p.",
			    p->code, msg);
			c->preen_stop = true;
		}
	} else {
		out(c, "%s: %s.", p->code, msg);
		int a = c->o->ask ? c->o->ask(c->o->ctx, q) : RECFS_ASK_NO;
		if (a == RECFS_ASK_CANCEL) {
			c->cancelled = true;
			c->status |= RECFS_FSCK_CANCELLED;
		}
		yes = a == RECFS_ASK_YES;
	}
	if (yes) {
		c->st->fixed++;
		c->status |= RECFS_FSCK_CORRECTED;
	} else {
		c->st->unfixed++;
		c->status |= RECFS_FSCK_UNCORRECTED;
	}
	return yes;
}

/* ---------------------------------------------------------------------- I/O */
static int dev_read(struct recfs_dev *d, void *buf, size_t len, uint64_t off)
{
	if (off > d->size || len > d->size - off)
		return recfs_seterr(-ENXIO, "read of %zu bytes at %llu is beyond the end (%llu bytes)",
				    len, (unsigned long long)off, (unsigned long long)d->size);
	return d->ops->pread(d, buf, len, off);
}

static void io_error(struct ck *c, struct recfs_dev *d, const char *what, int err)
{
	struct recfs_pctx pc = { .member = d->path };
	char s[400];

	snprintf(s, sizeof(s), "%s failed: %s", what, recfs_errmsg());
	pc.str = s;
	/* the same block read for each recording whose slots it holds fails
	 * the same way: one line */
	if (strcmp(s, c->last_io)) {
		problem(c, PR_MEMBER_IO, &pc);
		snprintf(c->last_io, sizeof(c->last_io), "%s", s);
	}
	(void)err;
	c->status |= RECFS_FSCK_ERROR;
}

static int dev_write(struct ck *c, struct recfs_dev *d, const void *buf, size_t len, uint64_t off)
{
	int err;

	if (!can_write(c))
		return -EROFS; /* never reached: problem() said no */
	if (off > d->size || len > d->size - off)
		err = recfs_seterr(-ENXIO, "write at %llu is beyond the end", (unsigned long long)off);
	else
		err = d->ops->pwrite(d, buf, len, off);
	if (err)
		io_error(c, d, "write", err);
	return err;
}

static void flush_all(struct ck *c)
{
	if (!can_write(c))
		return;
	for (unsigned i = 0; i < c->sb.member_count; i++) {
		if (c->at[i] < 0)
			continue;
		struct recfs_dev *d = c->a[c->at[i]].dev;
		if (d->ops->flush(d))
			io_error(c, d, "flush", -EIO);
	}
}

/* Write len bytes at off (not block aligned) on member argument ai by
 * read-modify-write of the blocks around them. */
static int patch(struct ck *c, unsigned ai, const void *src, size_t len, uint64_t off)
{
	struct recfs_dev *d = c->a[ai].dev;
	uint64_t b0 = off / RECFS_BLOCK * RECFS_BLOCK, b1 = RECFS_ALIGN_UP(off + len, RECFS_BLOCK);
	uint8_t *buf = recfs_alloc(b1 - b0);
	int err;

	if (!buf)
		return recfs_seterr(-ENOMEM, "out of memory");
	err = dev_read(d, buf, b1 - b0, b0);
	if (err)
		io_error(c, d, "read", err);
	else {
		memcpy(buf + (off - b0), src, len);
		err = dev_write(c, d, buf, b1 - b0, b0);
	}
	recfs_free(buf);
	return err;
}

static uint64_t entry_off(const struct ck *c, uint32_t i, uint64_t seq)
{
	return c->g.dir_off + ((uint64_t)i * 2 + (seq & 1)) * RECFS_ENTRY_SIZE;
}

/* Write entry r on every member (slot seq & 1), then flush. */
static void entry_store(struct ck *c, const struct recfs_rec *r)
{
	uint8_t slot[RECFS_ENTRY_SIZE];

	recfs_entry_encode(r, c->seed, slot);
	for (unsigned i = 0; i < c->sb.member_count; i++)
		if (c->at[i] >= 0)
			patch(c, (unsigned)c->at[i], slot, sizeof(slot), entry_off(c, r->index, r->seq));
	flush_all(c);
}

/* Write r as the generation after r->seq.  At the top of the sequence
 * space (2^64-2 is the last valid one) both slots start over: 3 into slot
 * 1 first, then 2 into slot 0, so that a crash between the two writes
 * leaves the old newest generation standing, never a mix. */
static void entry_next(struct ck *c, struct recfs_rec *r)
{
	if (r->seq < UINT64_MAX - 2) {
		r->seq++;
		entry_store(c, r);
		return;
	}
	r->seq = 3;
	entry_store(c, r);
	r->seq = 2;
	entry_store(c, r);
	r->seq = 3;
}

/* Free entry index by a generation after prev_seq. */
static void entry_free(struct ck *c, uint32_t index, uint64_t prev_seq)
{
	struct recfs_rec f;

	recfs_entry_free_init(&f, index, prev_seq);
	entry_next(c, &f);
}

/* An entry with no valid copy: both slots become valid FREE entries, so no
 * damaged slot is left behind to be reported again. */
static void entry_free_both(struct ck *c, uint32_t index)
{
	struct recfs_rec f;

	recfs_entry_free_init(&f, index, 1);
	entry_store(c, &f);
	recfs_entry_free_init(&f, index, 2);
	entry_store(c, &f);
}

/* ------------------------------------------------------ pass 1: superblocks */
/* Does a device with no valid superblock hold metadata of this pack (a
 * bitmap copy or a directory entry that validates with its seed)?  Only
 * then is it rebuilt as the missing member: elimination alone could name
 * an unrelated disk. */
static bool vouched(struct ck *c, struct ck_member *m)
{
	const size_t dirlen = (size_t)RECFS_ALIGN_UP((uint64_t)CK_DIR_BATCH * 2 * RECFS_ENTRY_SIZE, RECFS_BLOCK);
	size_t len = c->g.bitmap_copy_size > dirlen ? (size_t)c->g.bitmap_copy_size : dirlen;
	uint8_t *buf = recfs_alloc(len);
	struct recfs_bitmap_hdr h;
	struct recfs_rec r;
	bool yes = false;

	if (!buf)
		return false;
	for (unsigned k = 0; k < 2 && !yes; k++)
		yes = dev_read(m->dev, buf, c->g.bitmap_copy_size,
			       c->g.bitmap_off + k * c->g.bitmap_copy_size) == 0 &&
		      recfs_bitmap_decode(buf, c->g.bitmap_copy_size, c->seed, &h) == 0;
	uint32_t n = c->sb.dir_capacity < CK_DIR_BATCH ? c->sb.dir_capacity : CK_DIR_BATCH;
	if (!yes && dev_read(m->dev, buf, RECFS_ALIGN_UP((size_t)n * 2 * RECFS_ENTRY_SIZE, RECFS_BLOCK),
			     c->g.dir_off) == 0)
		for (uint32_t k = 0; k < 2 * n && !yes; k++)
			yes = recfs_entry_decode(buf + (size_t)k * RECFS_ENTRY_SIZE, c->seed, k / 2, &r) == 0;
	recfs_free(buf);
	return yes;
}

static const char *sb_diff(const struct recfs_super *a, const struct recfs_super *b)
{
#define F(x) if (a->x != b->x) return #x
	F(version);
	F(compat);
	F(incompat);
	if (memcmp(a->pack_uuid, b->pack_uuid, 16))
		return "pack_uuid";
	F(member_count);
	F(chunk_size);
	F(dir_capacity);
	F(member_size);
	F(rows);
	F(created_ns);
	F(bitmap_off);
	F(bitmap_copy_size);
	F(dir_off);
	F(csum_off);
	F(csum_size);
	F(data_off);
	F(backup_off);
#undef F
	if (strcmp(a->label, b->label))
		return "label";
	if (memcmp(a->member_uuids, b->member_uuids, sizeof(a->member_uuids)))
		return "member_uuids";
	return NULL;
}

static int read_super(struct ck_member *m, int k, uint64_t off)
{
	uint8_t *blk = recfs_alloc(RECFS_BLOCK);
	int err;

	if (!blk)
		return -ENOMEM;
	err = dev_read(m->dev, blk, RECFS_BLOCK, off);
	if (!err)
		err = recfs_super_decode(blk, &m->sb[k]);
	if (err)
		snprintf(m->why[k], sizeof(m->why[k]), "%s", recfs_errmsg());
	m->err[k] = err;
	recfs_free(blk);
	return err;
}

static bool same_dev(const struct recfs_dev *x, const struct recfs_dev *y)
{
	if (x == y)
		return true;
	if (x->fd < 0 || y->fd < 0)
		return x->priv && x->priv == y->priv && x->ops == y->ops && !strcmp(x->path, y->path);
	if (x->blkdev && y->blkdev)
		return x->st_rdev == y->st_rdev;
	return !x->blkdev && !y->blkdev && x->st_dev == y->st_dev && x->st_ino == y->st_ino;
}

static void write_super(struct ck *c, unsigned ai, int k)
{
	struct ck_member *m = &c->a[ai];
	struct recfs_super s = c->sb;
	uint8_t *blk = recfs_alloc(RECFS_BLOCK);

	if (!blk)
		return;
	s.member_index = (uint32_t)m->index;
	memcpy(s.member_uuid, c->sb.member_uuids[m->index], 16);
	recfs_super_encode(&s, blk);
	dev_write(c, m->dev, blk, RECFS_BLOCK, k ? c->sb.backup_off : 0);
	recfs_free(blk);
	if (m->dev->ops->flush(m->dev))
		io_error(c, m->dev, "flush", -EIO);
}

static int pass1(struct ck *c)
{
	struct recfs_pctx pc;
	int best = -1, bestk = 0;
	unsigned bestv = 0;
	char u[37];

	if (c->o->verbose)
		out(c, "Pass 1: members and superblocks");
	/* primaries; backups at the offset a valid primary names, else at the
	 * end of the device */
	for (unsigned i = 0; i < c->n; i++) {
		struct ck_member *m = &c->a[i];
		m->index = -1;
		for (unsigned j = 0; j < i; j++)
			if (!c->a[j].ignored && same_dev(m->dev, c->a[j].dev)) {
				memset(&pc, 0, sizeof(pc));
				pc.member = m->dev->path;
				problem(c, PR_MEMBER_SAME, &pc);
				m->ignored = true;
				break;
			}
		if (m->ignored)
			continue;
		read_super(m, 0, 0);
	}
	for (unsigned i = 0; i < c->n; i++) {
		struct ck_member *m = &c->a[i];
		uint64_t boff;
		if (m->ignored)
			continue;
		if (m->err[0] == 0)
			boff = m->sb[0].backup_off;
		else {
			boff = m->dev->size / RECFS_BLOCK * RECFS_BLOCK - RECFS_BLOCK;
			for (unsigned j = 0; j < c->n; j++)
				if (!c->a[j].ignored && c->a[j].err[0] == 0) {
					boff = c->a[j].sb[0].backup_off;
					break;
				}
		}
		if (m->dev->size < 2 * RECFS_BLOCK || boff < RECFS_BLOCK) {
			m->err[1] = -EUCLEAN;
			snprintf(m->why[1], sizeof(m->why[1]), "device too small");
		} else if (boff + RECFS_BLOCK > m->dev->size) {
			m->err[1] = -ENXIO;
			snprintf(m->why[1], sizeof(m->why[1]), "beyond the end of the device");
		} else {
			read_super(m, 1, boff);
		}
	}
	/* no valid primary: only the smallest member's backup is at its end;
	 * it names member_size, hence backup_off, for the others (FORMAT.md 3) */
	for (unsigned j = 0; j < c->n; j++) {
		uint64_t boff;
		if (c->a[j].ignored || c->a[j].err[1] || !c->a[j].err[0])
			continue;
		boff = c->a[j].sb[1].backup_off;
		for (unsigned i = 0; i < c->n; i++) {
			struct ck_member *m = &c->a[i];
			if (!m->ignored && !m->err[0])
				boff = 0; /* a valid primary placed every backup */
		}
		for (unsigned i = 0; boff && i < c->n; i++) {
			struct ck_member *m = &c->a[i];
			if (!m->ignored && m->err[1] && boff + RECFS_BLOCK <= m->dev->size)
				read_super(m, 1, boff);
		}
		break;
	}
	/* the pack's superblock: the one most members agree with (a copy
	 * of theirs does), then most copies; a different one with as many
	 * votes is a tie that nothing here can settle */
	unsigned votes[RECFS_MAX_MEMBERS * 2][2] = {{0}};
	for (unsigned i = 0; i < c->n; i++)
		for (int k = 0; k < 2; k++) {
			if (c->a[i].ignored || c->a[i].err[k])
				continue;
			unsigned v = 0;
			for (unsigned j = 0; j < c->n; j++) {
				unsigned cp = 0;
				for (int l = 0; l < 2; l++)
					cp += !c->a[j].ignored && !c->a[j].err[l] &&
					      !sb_diff(&c->a[i].sb[k], &c->a[j].sb[l]);
				v += (cp ? 1000 : 0) + cp;
			}
			if (i < RECFS_MAX_MEMBERS * 2)
				votes[i][k] = v;
			/* as many votes: the lower pack UUID, then member index,
			 * so that the order of the arguments decides nothing */
			const struct recfs_super *ns = &c->a[i].sb[k], *bs = best >= 0 ? &c->a[best].sb[bestk] : NULL;
			int uc = bs ? memcmp(ns->pack_uuid, bs->pack_uuid, 16) : 0;
			if (v > bestv || (v == bestv && bs && (uc < 0 || (!uc && ns->member_index < bs->member_index)))) {
				bestv = v;
				best = (int)i;
				bestk = k;
			}
		}
	for (unsigned i = 0; best >= 0 && i < c->n && i < RECFS_MAX_MEMBERS * 2 && !c->sb_tie; i++)
		for (int k = 0; k < 2 && !c->sb_tie; k++) {
			const char *f;
			if (c->a[i].ignored || c->a[i].err[k] || votes[i][k] != bestv)
				continue;
			f = sb_diff(&c->a[best].sb[bestk], &c->a[i].sb[k]);
			/* another pack's member is foreign, never written; but as
			 * many votes for another pack leave which pack is meant
			 * unknown (FORMAT.md 3): nothing is written either */
			if (f) {
				memset(&pc, 0, sizeof(pc));
				pc.member = c->a[best].dev->path;
				pc.name = c->a[i].dev->path;
				pc.str = f;
				problem(c, PR_SB_TIE, &pc);
				c->sb_tie = true;
			}
		}
	if (best < 0) {
		memset(&pc, 0, sizeof(pc));
		pc.str = c->n ? c->a[0].why[0] : "no members";
		problem(c, PR_PACK_NONE, &pc);
		return -EUCLEAN;
	}
	c->sb = c->a[best].sb[bestk];
	/* as the encoder writes it: unused member list entries zero (a copy
	 * with anything there disagrees, and is rewritten) */
	memset(c->sb.member_uuids[c->sb.member_count], 0,
	       (RECFS_MAX_MEMBERS - c->sb.member_count) * 16);
	recfs_super_to_geom(&c->sb, &c->g);
	c->seed = recfs_pack_seed(c->sb.pack_uuid);
	for (unsigned i = 0; i < RECFS_MAX_MEMBERS; i++)
		c->at[i] = -1;

	/* identify members */
	for (unsigned i = 0; i < c->n; i++) {
		struct ck_member *m = &c->a[i];
		bool foreign = false;
		if (m->ignored)
			continue;
		for (int k = 0; k < 2; k++) {
			if (m->err[k])
				continue;
			m->field[k] = sb_diff(&m->sb[k], &c->sb);
			m->good[k] = !m->field[k];
			if (m->field[k] && memcmp(m->sb[k].pack_uuid, c->sb.pack_uuid, 16))
				foreign = true;
		}
		if (m->good[0])
			m->index = (int)m->sb[0].member_index;
		if (m->good[1]) {
			if (m->index < 0)
				m->index = (int)m->sb[1].member_index;
			else if ((int)m->sb[1].member_index != m->index) {
				m->good[1] = false;
				m->field[1] = "member_index";
			}
		}
		if (m->index < 0 && foreign) {
			int k = m->err[0] == 0 ? 0 : 1;
			char s[160];
			recfs_uuid_unparse(m->sb[k].pack_uuid, u);
			snprintf(s, sizeof(s), "%s, label '%s'", u, m->sb[k].label);
			memset(&pc, 0, sizeof(pc));
			pc.member = m->dev->path;
			pc.str = s;
			problem(c, PR_MEMBER_FOREIGN, &pc);
			m->ignored = true;
			continue;
		}
		if (m->index < 0)
			continue;
		if (c->at[m->index] >= 0) {
			memset(&pc, 0, sizeof(pc));
			pc.member = m->dev->path;
			pc.mindex = (unsigned)m->index;
			pc.str = c->a[c->at[m->index]].dev->path;
			problem(c, PR_MEMBER_DUP, &pc);
			m->ignored = true;
			/* which copy is current is unknown: neither is written */
			c->dup = true;
			continue;
		}
		c->at[m->index] = (int)i;
	}
	/* valid copies that disagree on some field still name their index */
	for (unsigned i = 0; i < c->n; i++) {
		struct ck_member *m = &c->a[i];
		if (m->ignored || m->index >= 0)
			continue;
		for (int k = 0; k < 2 && m->index < 0; k++) {
			uint32_t idx = m->sb[k].member_index;
			if (!m->err[k] && idx < c->sb.member_count && c->at[idx] < 0 &&
			    !memcmp(m->sb[k].member_uuid, c->sb.member_uuids[idx], 16)) {
				m->index = (int)idx;
				c->at[idx] = (int)i;
			}
		}
	}
	/* members with no valid superblock: by elimination, if that is unique */
	{
		unsigned nunk = 0, nmiss = 0, miss = 0, unk = 0;
		for (unsigned i = 0; i < c->n; i++)
			if (!c->a[i].ignored && c->a[i].index < 0) {
				nunk++;
				unk = i;
			}
		for (unsigned i = 0; i < c->sb.member_count; i++)
			if (c->at[i] < 0) {
				nmiss++;
				miss = i;
			}
		for (unsigned i = 0; i < c->n; i++) {
			struct ck_member *m = &c->a[i];
			if (m->ignored || m->index >= 0)
				continue;
			memset(&pc, 0, sizeof(pc));
			pc.member = m->dev->path;
			if (nunk == 1 && nmiss == 1 && i == unk &&
			    m->dev->size >= c->sb.member_size && vouched(c, m)) {
				pc.mindex = miss;
				/* decided below, once the pack is known to be complete */
				m->index = (int)miss;
				c->at[miss] = (int)i;
				continue;
			}
			pc.str = nunk == 1 && nmiss == 1 && m->dev->size >= c->sb.member_size
					 ? "nothing on it belongs to this pack: no bitmap copy or directory entry"
					 : m->why[0];
			problem(c, PR_SB_UNKNOWN, &pc);
			m->ignored = true;
		}
	}
	for (unsigned i = 0; i < c->sb.member_count; i++) {
		if (c->at[i] >= 0)
			continue;
		memset(&pc, 0, sizeof(pc));
		pc.mindex = i;
		problem(c, PR_MEMBER_MISSING, &pc);
		c->degraded = true;
	}
	for (unsigned i = 0; i < c->sb.member_count; i++) {
		if (c->at[i] < 0)
			continue;
		struct ck_member *m = &c->a[c->at[i]];
		memset(&pc, 0, sizeof(pc));
		pc.member = m->dev->path;
		pc.mindex = i;
		if (m->dev->size < c->sb.member_size) {
			pc.a = m->dev->size;
			pc.b = c->sb.member_size;
			problem(c, PR_MEMBER_SHORT, &pc);
			m->shrt = true;
		}
		if (!m->good[0] && !m->good[1] && m->err[0] && m->err[1] && !m->shrt) {
			/* identified by elimination */
			if (problem(c, PR_SB_NONE, &pc)) {
				write_super(c, (unsigned)c->at[i], 0);
				write_super(c, (unsigned)c->at[i], 1);
			}
			continue;
		}
		for (int k = 0; k < 2; k++) {
			if (m->good[k] || (k == 1 && m->shrt))
				continue;
			int num;
			if (m->err[k]) {
				num = k ? PR_SB_BACKUP : PR_SB_PRIMARY;
				pc.str = m->why[k];
			} else {
				num = k ? PR_SB_BACKUP_FIELD : PR_SB_PRIMARY_FIELD;
				pc.str = m->field[k];
			}
			if (problem(c, num, &pc))
				write_super(c, (unsigned)c->at[i], k);
		}
	}
	c->st->members = c->sb.member_count;
	c->st->rows = c->g.rows;
	/* every later allocation is bounded by the metadata area: it must be
	 * on the members (a member cut shorter than that is not checked on) */
	for (unsigned i = 0; i < c->sb.member_count; i++) {
		if (c->at[i] < 0)
			continue;
		struct ck_member *m = &c->a[c->at[i]];
		if (m->dev->size < c->g.data_off) {
			out(c, "%s: the metadata area (%llu bytes) does not fit on the member: check stopped",
			    m->dev->path, (unsigned long long)c->g.data_off);
			c->status |= RECFS_FSCK_UNCORRECTED;
			return -EUCLEAN;
		}
		uint64_t rows = (m->dev->size - c->g.data_off) / c->g.chunk_size;
		if (rows < c->dev_rows || !c->dev_rows_set) {
			c->dev_rows = rows;
			c->dev_rows_set = true;
		}
	}
	return 0;
}

/* every present member's device, in member order */
#define FOR_MEMBERS(c, i, m)                                         \
	for (unsigned i = 0; i < (c)->sb.member_count; i++)          \
		if ((c)->at[i] >= 0 && ((m) = &(c)->a[(c)->at[i]], 1))

/* ---------------------------------------------------------- pass 2: bitmap */
static int pass2(struct ck *c)
{
	const uint64_t size = c->g.bitmap_copy_size;
	const size_t nbytes = (size_t)((c->g.rows + 7) / 8);
	uint8_t *buf[RECFS_MAX_MEMBERS][2] = {{0}};
	struct recfs_bitmap_hdr h[RECFS_MAX_MEMBERS][2];
	bool ok[RECFS_MAX_MEMBERS][2] = {{0}}, rfail[RECFS_MAX_MEMBERS][2] = {{0}};
	int wi = -1, wk = 0;
	struct ck_member *m;
	struct recfs_pctx pc;
	int ret = 0;

	if (c->o->verbose)
		out(c, "Pass 2: allocation bitmap");
	FOR_MEMBERS(c, i, m) {
		for (int k = 0; k < 2; k++) {
			uint64_t off = c->g.bitmap_off + (uint64_t)k * size;
			if (off + size > m->dev->size)
				continue; /* a short member: nothing to read */
			buf[i][k] = recfs_alloc(size);
			if (!buf[i][k]) {
				ret = recfs_seterr(-ENOMEM, "out of memory");
				goto out_free;
			}
			if (dev_read(m->dev, buf[i][k], size, off)) {
				io_error(c, m->dev, "bitmap read", -EIO);
				rfail[i][k] = true;
				continue;
			}
			ok[i][k] = recfs_bitmap_decode(buf[i][k], size, c->seed, &h[i][k]) == 0 &&
				   h[i][k].copy == (unsigned)k && (h[i][k].seq & 1) == (unsigned)k &&
				   h[i][k].nbits == c->g.rows && h[i][k].dir_hwm <= c->g.dir_capacity;
			if (ok[i][k] && (wi < 0 || h[i][k].seq > h[wi][wk].seq)) {
				wi = (int)i;
				wk = k;
			}
		}
	}
	if (wi < 0) {
		memset(&pc, 0, sizeof(pc));
		c->bmp_rebuild = problem(c, PR_BMP_NONE, &pc); /* in pass 4 */
		c->hwm = c->g.dir_capacity;
		c->hwm_known = false;
		goto out_free;
	}
	c->have_bmp = true;
	c->hwm_known = true;
	c->bh = h[wi][wk];
	c->hwm = c->bh.dir_hwm;
	c->bmp = buf[wi][wk];
	buf[wi][wk] = NULL;
	FOR_MEMBERS(c, i, m) {
		if ((int)i == wi)
			continue;
		const uint8_t *b = buf[i][wk];
		if (b && ok[i][wk] && h[i][wk].seq == c->bh.seq &&
		    !memcmp(b, c->bmp, RECFS_BLOCK) && !memcmp(b + RECFS_BLOCK, c->bmp + RECFS_BLOCK, nbytes))
			continue;
		if (m->shrt && !b)
			continue;
		memset(&pc, 0, sizeof(pc));
		pc.member = m->dev->path;
		pc.a = (uint64_t)wk;
		pc.b = c->bh.seq;
		pc.str = rfail[i][wk] ? "unreadable"
			 : b && ok[i][wk] && h[i][wk].seq < c->bh.seq ? "out of date" : "damaged";
		if (problem(c, PR_BMP_COPY, &pc)) {
			dev_write(c, m->dev, c->bmp, size, c->g.bitmap_off + (uint64_t)wk * size);
			if (m->dev->ops->flush(m->dev))
				io_error(c, m->dev, "flush", -EIO);
		}
	}
out_free:
	for (unsigned i = 0; i < RECFS_MAX_MEMBERS; i++)
		for (int k = 0; k < 2; k++)
			recfs_free(buf[i][k]);
	return ret;
}

/* ------------------------------------------------------- pass 3: directory */
struct raw_entry_view {
	uint32_t magic, index;
	uint64_t seq, committed;
	bool csum_ok;
};

static void raw_entry(const uint8_t *slot, uint64_t seed, struct raw_entry_view *v)
{
	const struct recfs_disk_entry *d = (const void *)slot;

	v->magic = le32toh(d->magic);
	v->index = le32toh(d->index);
	v->seq = le64toh(d->seq);
	v->committed = le64toh(d->committed_len);
	v->csum_ok = le64toh(d->checksum) ==
		     XXH3_64bits_withSeed(d, offsetof(struct recfs_disk_entry, checksum), seed);
}

static int rec_add(struct ck *c, const struct recfs_rec *r)
{
	if (c->nrec == c->caprec) {
		uint32_t nc = c->caprec ? c->caprec * 2 : 64;
		struct ck_rec *n = realloc(c->rec, nc * sizeof(*n));
		if (!n)
			return recfs_seterr(-ENOMEM, "out of memory");
		c->rec = n;
		c->caprec = nc;
	}
	memset(&c->rec[c->nrec], 0, sizeof(c->rec[0]));
	c->rec[c->nrec].r = *r;
	c->nrec++;
	return 0;
}

/* recfs_errmsg() without its "entry N: " prefix (the messages name the
 * entry themselves). */
static void entry_why(char *why, size_t n)
{
	const char *m = recfs_errmsg(), *p = m;

	if (!strncmp(p, "entry ", 6)) {
		p += 6;
		while (*p >= '0' && *p <= '9')
			p++;
		if (p[0] == ':' && p[1] == ' ')
			m = p + 2;
	}
	snprintf(why, n, "%s", m);
}

static void why_add(char *why, size_t n, const char *what)
{
	size_t l = strlen(why);

	snprintf(why + l, n - l, "%s%s", l ? "; " : "", what);
}

/* An entry whose checksum is right but whose fields are not (decode
 * failed): repair what can be repaired.  slot is the raw copy; older, if
 * not NULL, a valid older generation of the same entry.  Returns 1 when
 * the older generation should stand instead (why says what is wrong with
 * the newer one): a state, gap count or sequence that cannot be right is
 * damage, and the older generation is known good.  Never drops what it
 * cannot decode: an entry kept as it is stays set aside (its rows stay
 * allocated). */
static int entry_fields(struct ck *c, uint32_t i, const uint8_t *slot, const struct recfs_rec *older,
			char *whyout, size_t whyn)
{
	uint8_t tmp[RECFS_ENTRY_SIZE];
	struct recfs_disk_entry *d = (void *)tmp;
	struct recfs_rec r;
	struct recfs_pctx pc;
	char why[256], fix[256] = "", nn[RECFS_NAME_MAX + 1];
	uint64_t orig_committed = 0;
	bool name_bad = false, commit_bad = false, other_bad = false;

	memcpy(tmp, slot, sizeof(tmp));
	recfs_entry_decode(tmp, c->seed, i, &r);
	entry_why(why, sizeof(why));
	/* the fields whose damage says the copy is not to be trusted */
	if (d->state > RECFS_STATE_SEALED) {
		char t[96];
		snprintf(t, sizeof(t), "unknown state %u: taken as recording, its end found from its checksums",
			 d->state);
		why_add(fix, sizeof(fix), t);
		d->state = RECFS_STATE_RECORDING;
		other_bad = true;
	}
	if (le32toh(d->gap_count) > RECFS_GAPS_MAX) {
		char t[96];
		snprintf(t, sizeof(t), "gap count %u: the first %u gaps kept, marked as merged",
			 le32toh(d->gap_count), RECFS_GAPS_MAX);
		why_add(fix, sizeof(fix), t);
		d->gap_count = htole32(RECFS_GAPS_MAX);
		d->gap_flags |= htole32(1);
		other_bad = true;
	}
	if (le64toh(d->seq) == UINT64_MAX) {
		why_add(fix, sizeof(fix), "sequence out of range: generations start over");
		d->seq = htole64(UINT64_MAX - 2); /* same slot; the rewrite wraps */
		other_bad = true;
	}
	if (other_bad && older) {
		snprintf(whyout, whyn, "%s", fix);
		return 1;
	}
	/* the repairable fields: a name, a committed length */
	if (le64toh(d->committed_len) > le64toh(d->alloc_len)) {
		commit_bad = true;
		orig_committed = le64toh(d->committed_len);
		d->committed_len = d->alloc_len;
	}
	if (d->state != RECFS_STATE_FREE && d->state <= RECFS_STATE_SEALED) {
		uint16_t nl = le16toh(d->name_len);
		char nm[RECFS_NAME_MAX + 1];
		bool bad = nl < 1 || nl > RECFS_NAME_MAX || memchr(d->name, 0, nl);
		if (!bad) {
			memcpy(nm, d->name, nl);
			nm[nl] = 0;
			bad = recfs_name_check(nm) != 0;
			if (bad)
				entry_why(why, sizeof(why));
		} else {
			snprintf(why, sizeof(why), "name length %u", nl);
		}
		if (bad) {
			name_bad = true;
			snprintf(nn, sizeof(nn), "entry-%u", i);
			memset(d->name, 0, sizeof(d->name));
			memcpy(d->name, nn, strlen(nn));
			d->name_len = htole16((uint16_t)strlen(nn));
		}
	}
	d->checksum = htole64(XXH3_64bits_withSeed(d, offsetof(struct recfs_disk_entry, checksum), c->seed));
	if (recfs_entry_decode(tmp, c->seed, i, &r)) {
		/* nothing known to repair: keep it out of the checks, never
		 * free its rows */
		memset(&pc, 0, sizeof(pc));
		pc.entry = i;
		entry_why(why, sizeof(why));
		pc.str = why;
		if (older) {
			snprintf(whyout, whyn, "%s", why);
			return 1;
		}
		problem(c, PR_ENT_UNKNOWN, &pc);
		c->keep_leaks = true;
		return 0;
	}
	bool store = false, aside = false;
	if (other_bad) {
		memset(&pc, 0, sizeof(pc));
		pc.entry = i;
		pc.str = fix;
		if (problem(c, PR_ENT_FIELD, &pc))
			store = true;
		else
			aside = true;
	}
	if (name_bad) {
		memset(&pc, 0, sizeof(pc));
		pc.entry = i;
		pc.str = why;
		pc.name2 = nn;
		if (problem(c, PR_ENT_NAME, &pc))
			store = true;
	}
	if (store && !commit_bad && !aside)
		entry_next(c, &r);
	int err = rec_add(c, &r);
	if (err)
		return err;
	if (aside)
		c->rec[c->nrec - 1].aside = c->rec[c->nrec - 1].drop = true;
	if (commit_bad) {
		c->rec[c->nrec - 1].commit_bad = true;
		c->rec[c->nrec - 1].commit_orig = orig_committed;
	}
	return 0;
}

static int pass3(struct ck *c)
{
	const size_t pair = 2 * RECFS_ENTRY_SIZE;
	uint8_t *buf[RECFS_MAX_MEMBERS] = {0};
	struct ck_member *m;
	struct recfs_pctx pc;
	uint32_t last_used = 0;
	int ret = 0;

	if (c->o->verbose)
		out(c, "Pass 3: directory (%u entries used)", c->hwm);
	FOR_MEMBERS(c, i, m) {
		buf[i] = recfs_alloc(CK_DIR_BATCH * pair);
		if (!buf[i]) {
			ret = recfs_seterr(-ENOMEM, "out of memory");
			goto out_free;
		}
	}
	for (uint32_t first = 0; first < c->hwm && !stop_now(c); first += CK_DIR_BATCH) {
		uint32_t cnt = c->hwm - first < CK_DIR_BATCH ? c->hwm - first : CK_DIR_BATCH;
		size_t len = RECFS_ALIGN_UP((size_t)cnt * pair, RECFS_BLOCK);
		bool rd[RECFS_MAX_MEMBERS] = {0};
		FOR_MEMBERS(c, i, m) {
			int e = dev_read(m->dev, buf[i], len, c->g.dir_off + (uint64_t)first * pair);
			if (e)
				io_error(c, m->dev, "directory read", e);
			rd[i] = e == 0;
		}
		for (uint32_t k = 0; k < cnt; k++) {
			uint32_t idx = first + k;
			struct recfs_rec best, r;
			const uint8_t *bestraw = NULL, *lenient = NULL;
			uint64_t lenient_seq = 0, damaged_seq = 0;
			bool damaged = false, fresh = true;
			char why[256] = "";

			FOR_MEMBERS(c, i, m) {
				if (!rd[i])
					continue;
				for (unsigned s = 0; s < 2; s++) {
					const uint8_t *raw = buf[i] + (size_t)k * pair + s * RECFS_ENTRY_SIZE;
					struct raw_entry_view v;
					if (recfs_entry_decode(raw, c->seed, idx, &r) == 0 && (r.seq & 1) == s) {
						if (!bestraw || r.seq > best.seq) {
							best = r;
							bestraw = raw;
						}
						continue;
					}
					raw_entry(raw, c->seed, &v);
					if (v.magic != RECFS_ENT_MAGIC || v.index != idx)
						continue;
					if (v.csum_ok && (v.seq & 1) == s && v.seq) {
						if (!lenient || v.seq > lenient_seq) {
							lenient = raw;
							lenient_seq = v.seq;
						}
						continue;
					}
					/* damaged: judged below, once best is known */
				}
			}
			/*
			 * A damaged slot is a torn or damaged newer generation only
			 * if it fits: its seq is in its own slot and, beside a valid
			 * generation, is the next one.  Anything else is a previous
			 * pack's slot (mkfs leaves them) or older damage, and is
			 * ignored.  With no valid generation, the entry is a create
			 * that never completed unless a slot shows this pack got
			 * past generation 1 (slot 1 beyond seq 1, or seq 2 in slot 0).
			 */
			FOR_MEMBERS(c, i, m) {
				if (!rd[i])
					continue;
				for (unsigned s = 0; s < 2; s++) {
					const uint8_t *raw = buf[i] + (size_t)k * pair + s * RECFS_ENTRY_SIZE;
					struct raw_entry_view v;
					raw_entry(raw, c->seed, &v);
					if (v.magic != RECFS_ENT_MAGIC || v.index != idx || (v.seq & 1) != s)
						continue;
					if (recfs_entry_decode(raw, c->seed, idx, &r) == 0 || (v.csum_ok && v.seq))
						continue; /* valid, or lenient */
					if (bestraw && v.seq != best.seq + 1)
						continue;
					if (!bestraw && (s == 1 ? v.seq != 1 || v.committed != 0 : v.seq == 2))
						fresh = false;
					if (!damaged)
						entry_why(why, sizeof(why));
					damaged = true;
					if (v.seq > damaged_seq)
						damaged_seq = v.seq;
				}
			}
			if (lenient && (!bestraw || lenient_seq > best.seq)) {
				last_used = idx + 1;
				ret = entry_fields(c, idx, lenient, bestraw ? &best : NULL, why, sizeof(why));
				if (ret < 0)
					goto out_free;
				if (ret == 0)
					continue;
				/* the newer generation is damage: the older stands */
				ret = 0;
				damaged = true;
				damaged_seq = lenient_seq;
			}
			if (!bestraw) {
				memset(&pc, 0, sizeof(pc));
				pc.entry = idx;
				if (damaged && !fresh) {
					last_used = idx + 1;
					pc.str = why;
					if (problem(c, PR_ENT_DAMAGED, &pc))
						entry_free_both(c, idx);
					else
						c->keep_leaks = true; /* its extent is unknown */
				} else if (c->hwm_known) {
					if (problem(c, PR_ENT_UNUSED, &pc))
						entry_free_both(c, idx);
				}
				continue;
			}
			last_used = idx + 1;
			if (damaged && damaged_seq > best.seq) {
				memset(&pc, 0, sizeof(pc));
				pc.entry = idx;
				pc.name = best.state == RECFS_STATE_FREE ? "(free)" : best.name;
				pc.str = why;
				pc.a = best.seq;
				if (problem(c, PR_ENT_ROLLBACK, &pc)) {
					/* the same content two generations on, over
					 * both slots on every member: no damaged slot
					 * is left behind */
					entry_next(c, &best);
					entry_next(c, &best);
					bestraw = NULL;
				}
			}
			/* every member's copy of the newest generation */
			FOR_MEMBERS(c, i, m) {
				const uint8_t *mine;
				if (!rd[i] || !bestraw)
					continue;
				mine = buf[i] + (size_t)k * pair + (best.seq & 1) * RECFS_ENTRY_SIZE;
				if (!memcmp(mine, bestraw, RECFS_ENTRY_SIZE))
					continue;
				memset(&pc, 0, sizeof(pc));
				pc.entry = idx;
				pc.member = m->dev->path;
				pc.name = best.state == RECFS_STATE_FREE ? "(free)" : best.name;
				r.seq = 0;
				if (recfs_entry_decode(mine, c->seed, idx, &r) == 0 && r.seq < best.seq)
					pc.str = "out of date";
				else
					pc.str = "damaged";
				{
					const uint8_t *other = buf[i] + (size_t)k * pair +
							       (1 - (best.seq & 1)) * RECFS_ENTRY_SIZE;
					struct recfs_rec o2;
					if (recfs_entry_decode(other, c->seed, idx, &o2) == 0 &&
					    o2.seq < best.seq && strcmp(pc.str, "out of date"))
						pc.str = "out of date";
				}
				if (problem(c, PR_ENT_REPLICA, &pc))
					patch(c, (unsigned)c->at[i], bestraw, RECFS_ENTRY_SIZE,
					      entry_off(c, idx, best.seq));
			}
			if (best.state == RECFS_STATE_FREE)
				continue;
			ret = rec_add(c, &best);
			if (ret)
				goto out_free;
		}
	}
	flush_all(c);
	if (!c->hwm_known)
		c->hwm = last_used;
out_free:
	FOR_MEMBERS(c, i, m)
		recfs_free(buf[i]);
	return ret;
}

/* --------------------------------------------- slots, data, proving a prefix */
/* Slot of logical chunk lc on every present member into v[member]; absent
 * or unreadable members get len 0 and ok[member] false. */
static void read_slot(struct ck *c, uint64_t lc, struct recfs_slot *v, bool *ok)
{
	uint64_t off = c->g.csum_off + lc * RECFS_SLOT_SIZE, b = off / RECFS_BLOCK * RECFS_BLOCK;
	uint8_t *blk = recfs_alloc(RECFS_BLOCK);
	struct ck_member *m;

	for (unsigned i = 0; i < c->sb.member_count; i++) {
		v[i].csum = 0;
		v[i].len = 0;
		ok[i] = false;
	}
	if (!blk)
		return;
	FOR_MEMBERS(c, i, m) {
		int err = dev_read(m->dev, blk, RECFS_BLOCK, b);
		if (err) {
			if (err != -ENXIO) /* past a short member's end */
				io_error(c, m->dev, "checksum table read", err);
			continue;
		}
		const struct recfs_disk_slot *s = (const void *)(blk + (off - b));
		v[i].csum = le64toh(s->csum);
		v[i].len = le32toh(s->len);
		ok[i] = true;
	}
	recfs_free(blk);
}

/* Read chunk k of recording r (whole chunk) into buf. */
static int read_chunk(struct ck *c, const struct recfs_rec *r, uint64_t k, uint8_t *buf,
		      unsigned *member)
{
	uint64_t moff;
	unsigned mi;

	recfs_map(&c->g, r->ext_start + k * c->g.chunk_size, &mi, &moff);
	if (member)
		*member = mi;
	if (c->at[mi] < 0)
		return recfs_seterr(-ENXIO, "member %u is missing", mi);
	return dev_read(c->a[c->at[mi]].dev, buf, c->g.chunk_size, moff);
}

/*
 * The longest prefix of r provable from chunk `from` on: while a slot has
 * len > 0 and the data matches it, extend; stop after a slot with len <
 * chunk_size.  Starts from *len (bytes already trusted); *csums gets the
 * checksums of chunks from..end-1; *lost the bytes of this recording that
 * were durable after the first chunk that does not match (unreachable).
 */
static int prove(struct ck *c, const struct recfs_rec *r, uint64_t from, uint64_t limit,
		 uint64_t *len, uint64_t **csums, uint64_t *ncsums, uint64_t *lost)
{
	const uint64_t cs = c->g.chunk_size;
	struct recfs_slot v[RECFS_MAX_MEMBERS];
	bool ok[RECFS_MAX_MEMBERS];
	uint8_t *data = recfs_alloc(cs);
	uint64_t n = 0, cap = 0, *arr = NULL;
	int ret = 0;

	*lost = 0;
	if (!data)
		return recfs_seterr(-ENOMEM, "out of memory");
	for (uint64_t k = from; k < limit / cs; k++) {
		uint64_t lc = r->ext_start / cs + k, hit = 0, claimed = 0;
		uint32_t hitlen = 0;
		bool found = false;
		read_slot(c, lc, v, ok);
		for (unsigned i = 0; i < c->sb.member_count; i++)
			if (ok[i] && v[i].len > 0 && v[i].len <= cs && v[i].len > claimed)
				claimed = v[i].len;
		if (!claimed)
			break;
		if (read_chunk(c, r, k, data, NULL))
			break;
		/* members may hold different generations of this slot (a
		 * crash between their writes): the longest that matches the
		 * data is the furthest this chunk is proven */
		for (unsigned i = 0; i < c->sb.member_count; i++) {
			if (!ok[i] || v[i].len == 0 || v[i].len > cs || v[i].len <= hitlen)
				continue;
			if (recfs_chunk_csum(r->uid, k, data, v[i].len) == v[i].csum) {
				found = true;
				hit = v[i].csum;
				hitlen = v[i].len;
			}
		}
		if (!found || k * cs + hitlen < *len) {
			/* this chunk's slot may be a deleted recording's: only
			 * what provably belongs to this recording and was durable
			 * past the gap is counted as lost */
			for (uint64_t j = k + 1; j < limit / cs && claimed == cs; j++) {
				bool more = false;
				read_slot(c, r->ext_start / cs + j, v, ok);
				if (read_chunk(c, r, j, data, NULL))
					break;
				claimed = 0;
				for (unsigned i = 0; i < c->sb.member_count; i++)
					if (ok[i] && v[i].len > claimed && v[i].len <= cs &&
					    recfs_chunk_csum(r->uid, j, data, v[i].len) == v[i].csum) {
						more = true;
						claimed = v[i].len;
					}
				if (!more)
					break;
				*lost += claimed;
			}
			break;
		}
		if (n == cap) {
			uint64_t nc = cap ? cap * 2 : 16;
			uint64_t *na = realloc(arr, nc * sizeof(*na));
			if (!na) {
				ret = recfs_seterr(-ENOMEM, "out of memory");
				break;
			}
			arr = na;
			cap = nc;
		}
		arr[n++] = hit;
		*len = k * cs + hitlen;
		if (hitlen < cs)
			break;
	}
	recfs_free(data);
	if (ret) {
		free(arr);
		return ret;
	}
	*csums = arr;
	*ncsums = n;
	return 0;
}

/* ------------------------------------------------------- pass 4: extents */
static int cmp_name(const void *x, const void *y, void *arg)
{
	const struct ck *c = arg;
	const uint32_t *a = x, *b = y;
	int r = strcmp(c->rec[*a].r.name, c->rec[*b].r.name);
	return r ? r : (c->rec[*a].r.index < c->rec[*b].r.index ? -1 : 1);
}

static int cmp_start(const void *x, const void *y, void *arg)
{
	const struct ck *c = arg;
	const struct recfs_rec *a = &c->rec[*(const uint32_t *)x].r, *b = &c->rec[*(const uint32_t *)y].r;
	if (a->ext_start != b->ext_start)
		return a->ext_start < b->ext_start ? -1 : 1;
	return a->index < b->index ? -1 : 1;
}

static void drop(struct ck *c, struct ck_rec *e)
{
	e->drop = true;
	if (can_write(c))
		entry_free(c, e->r.index, e->r.seq);
}

/* The bytes of e that its checksums vouch for: its committed length, and
 * for a crashed recording (state 1) the prefix proven past it. */
static uint64_t own_len(struct ck *c, struct ck_rec *e)
{
	uint64_t len = e->r.committed_len, *cks = NULL, ncks = 0, lost = 0;

	if (e->own_known)
		return e->own;
	e->own_known = true;
	e->own = len;
	if (e->r.state == RECFS_STATE_RECORDING && !e->commit_bad &&
	    prove(c, &e->r, e->r.committed_len / c->g.chunk_size, e->r.alloc_len, &len, &cks, &ncks,
		  &lost) == 0) {
		free(cks);
		if (len > e->own)
			e->own = len;
	}
	return e->own;
}

/* Does recording r own logical chunk lc: its data matches the slot, within
 * the len bytes it is known to hold? */
static bool owns(struct ck *c, const struct recfs_rec *r, uint64_t lc, uint64_t len)
{
	const uint64_t cs = c->g.chunk_size;
	uint64_t k = lc - r->ext_start / cs;
	struct recfs_slot v[RECFS_MAX_MEMBERS];
	bool ok[RECFS_MAX_MEMBERS], yes = false;
	uint8_t *data;

	if (k * cs >= len)
		return false;
	data = recfs_alloc(cs);
	if (!data)
		return false;
	read_slot(c, lc, v, ok);
	if (read_chunk(c, r, k, data, NULL) == 0) {
		uint64_t want = len - k * cs >= cs ? cs : len - k * cs;
		for (unsigned i = 0; i < c->sb.member_count && !yes; i++)
			yes = ok[i] && v[i].len == want &&
			      recfs_chunk_csum(r->uid, k, data, want) == v[i].csum;
		if (!yes && want < cs && len == r->committed_len)
			yes = recfs_chunk_csum(r->uid, k, data, want) == r->tail_csum;
	}
	recfs_free(data);
	return yes;
}

/*
 * Two extents share bytes s..e-1 (A starts first or at the same place).
 * The owner of the shared chunks is the one whose data matches the checksum
 * table there, counting a crashed recording's proven prefix.  When neither
 * does, the choice loses the fewest bytes the checksums vouch for: cut A
 * before s (if it starts earlier), or drop the one that starts at s; a
 * lossless cut is always taken first.
 */
static void overlaps(struct ck *c, uint32_t *ord, uint32_t n)
{
	const uint64_t cs = c->g.chunk_size;
	struct recfs_pctx pc;
	char why[RECFS_NAME_MAX + 64];

	for (uint32_t x = 0; x < n; x++) {
		struct ck_rec *A = &c->rec[ord[x]];
		for (uint32_t y = x + 1; y < n && !A->drop; y++) {
			struct ck_rec *B = &c->rec[ord[y]];
			uint64_t aend = A->r.ext_start + A->r.alloc_len;
			if (B->drop || B->r.alloc_len == 0)
				continue;
			if (B->r.ext_start >= aend)
				break;
			uint64_t bend = B->r.ext_start + B->r.alloc_len;
			uint64_t s = B->r.ext_start, e = aend < bend ? aend : bend;
			uint64_t lc = s / cs;
			uint64_t alen = own_len(c, A), blen = own_len(c, B);
			struct ck_rec *win, *lose;
			bool ao = owns(c, &A->r, lc, alen), bo = owns(c, &B->r, lc, blen);
			if (bo && !ao) {
				win = B, lose = A;
			} else if (ao && !bo) {
				win = A, lose = B;
			} else if (A->r.ext_start < s) {
				/* bytes lost: A's past s if cut, all of B's if dropped */
				uint64_t keep = s - A->r.ext_start;
				uint64_t acut = alen > keep ? alen - keep : 0;
				if (acut <= blen)
					win = B, lose = A;
				else
					win = A, lose = B;
			} else if (alen != blen) {
				win = alen > blen ? A : B, lose = win == A ? B : A;
			} else {
				win = A->r.index < B->r.index ? A : B, lose = win == A ? B : A;
			}
			if (ao != bo)
				snprintf(why, sizeof(why), "the shared chunks hold '%s'", win->r.name);
			else
				snprintf(why, sizeof(why), "the shared chunks match neither's checksums");
			memset(&pc, 0, sizeof(pc));
			pc.name = lose->r.name;
			pc.name2 = win->r.name;
			pc.str = why;
			pc.a = s;
			pc.b = e - 1;
			if (lose->r.ext_start < s) {
				/* what it keeps: committed bytes, or a crashed
				 * recording's proven ones, before the cut */
				uint64_t held = own_len(c, lose);
				pc.c = s - lose->r.ext_start;
				if (pc.c > held)
					pc.c = held;
				if (problem(c, PR_EXT_OVERLAP_TRUNC, &pc)) {
					lose->r.alloc_len = s - lose->r.ext_start;
					if (lose->r.committed_len > lose->r.alloc_len) {
						lose->r.committed_len = lose->r.alloc_len;
						lose->r.tail_csum = 0;
					}
					if (lose->own > lose->r.alloc_len)
						lose->own = lose->r.alloc_len;
					entry_next(c, &lose->r);
				}
			} else if (problem(c, PR_EXT_OVERLAP_DROP, &pc)) {
				drop(c, lose);
			}
		}
	}
}

/* The next run, from *k up to end, of rows whose bit in a is av and, when
 * b is given, whose bit in b is bv: [*lo, *hi); *k moves past it. */
static bool row_run(const uint8_t *a, bool av, const uint8_t *b, bool bv, uint64_t *k,
		    uint64_t end, uint64_t *lo, uint64_t *hi)
{
#define ROW_IN(j) (recfs_bit_test(a, j) == av && (!b || recfs_bit_test(b, j) == bv))
	while (*k < end && !ROW_IN(*k))
		(*k)++;
	if (*k >= end)
		return false;
	*lo = *k;
	while (*k < end && ROW_IN(*k))
		(*k)++;
	*hi = *k;
	return true;
#undef ROW_IN
}

static void bitmap_runs(struct ck *c, const uint8_t *have, uint8_t *newbits, bool *dirty)
{
	struct recfs_pctx pc;
	const uint64_t rb = c->g.row_bytes;
	uint8_t *want = calloc(1, (size_t)((c->g.rows + 7) / 8) + 8);
	uint64_t k, lo, hi;

	if (!want)
		return;
	for (uint32_t x = 0; x < c->nrec; x++) {
		struct ck_rec *e = &c->rec[x];
		if (e->drop && !e->aside)
			continue;
		uint64_t r0 = e->r.ext_start / rb, r1 = r0 + e->r.alloc_len / rb;
		if (r1 > c->g.rows)
			r1 = c->g.rows;
		for (k = r0; k < r1; k++)
			recfs_bit_set(want, k);
		/* holes: its rows the bitmap has free */
		for (k = r0; have && row_run(have, false, NULL, false, &k, r1, &lo, &hi);) {
			memset(&pc, 0, sizeof(pc));
			pc.a = lo;
			pc.b = hi - 1;
			pc.name = e->r.name;
			if (problem(c, PR_BMP_HOLE, &pc)) {
				for (uint64_t j = lo; j < hi; j++)
					recfs_bit_set(newbits, j);
				*dirty = true;
			}
		}
	}
	if (have && c->keep_leaks) {
		/* an entry of unknown extent was left as found: rows that
		 * seem leaked may be its, and stay allocated */
		out(c, "rows that belong to no known recording stay allocated: an entry was left as found");
	} else if (have) {
		/* leaks: rows the bitmap has allocated that no recording has */
		for (k = 0; row_run(have, true, want, false, &k, c->g.rows, &lo, &hi);) {
			memset(&pc, 0, sizeof(pc));
			pc.a = lo;
			pc.b = hi - 1;
			if (problem(c, PR_BMP_LEAK, &pc)) {
				for (uint64_t j = lo; j < hi; j++)
					recfs_bit_clear(newbits, j);
				*dirty = true;
			}
		}
	} else {
		memcpy(newbits, want, (size_t)((c->g.rows + 7) / 8));
	}
	c->st->rows_used = 0;
	for (k = 0; k < c->g.rows; k++)
		c->st->rows_used += recfs_bit_test(want, k);
	free(want);
}

static int cmp_uid(const void *x, const void *y, void *arg)
{
	const struct ck *c = arg;
	const struct recfs_rec *a = &c->rec[*(const uint32_t *)x].r, *b = &c->rec[*(const uint32_t *)y].r;
	if (a->uid != b->uid)
		return a->uid < b->uid ? -1 : 1;
	return a->index < b->index ? -1 : 1;
}

/* Does e's first chunk match its checksum under e's uid? */
static bool first_chunk_ok(struct ck *c, struct ck_rec *e)
{
	uint64_t len = own_len(c, e);
	return len > 0 && owns(c, &e->r, e->r.ext_start / c->g.chunk_size, len);
}

/* A uid not used by any entry. */
static uint64_t fresh_uid(const struct ck *c)
{
	for (;;) {
		uint64_t u;
		bool used = false;
		if (getrandom(&u, sizeof(u), 0) != sizeof(u))
			u = recfs_now_ns() * 0x9E3779B97F4A7C15ull;
		for (uint32_t x = 0; x < c->nrec && !used; x++)
			used = c->rec[x].r.uid == u;
		if (u && !used)
			return u;
	}
}

/*
 * Entries sharing a uid (FORMAT.md 5: it is unique): the one whose first
 * chunk matches its checksum under the uid keeps it; when both or neither
 * do, the older (earlier start, then lower index).  The others get a new
 * uid.  ord has room for every entry.
 */
static void dup_uids(struct ck *c, uint32_t *ord)
{
	struct recfs_pctx pc;
	uint32_t n = 0;

	for (uint32_t x = 0; x < c->nrec; x++)
		if (!c->rec[x].drop)
			ord[n++] = x;
	qsort_r(ord, n, sizeof(*ord), cmp_uid, c);
	for (uint32_t x = 0, y; x < n; x = y) {
		struct ck_rec *keep = NULL;
		unsigned matching = 0;
		for (y = x + 1; y < n && c->rec[ord[y]].r.uid == c->rec[ord[x]].r.uid; y++)
			;
		if (y - x < 2)
			continue;
		for (uint32_t z = x; z < y; z++) {
			struct ck_rec *e = &c->rec[ord[z]];
			if (first_chunk_ok(c, e)) {
				matching++;
				keep = e;
			}
		}
		if (matching != 1) {
			keep = &c->rec[ord[x]];
			for (uint32_t z = x + 1; z < y; z++) {
				struct ck_rec *e = &c->rec[ord[z]];
				if (e->r.start_ns < keep->r.start_ns ||
				    (e->r.start_ns == keep->r.start_ns && e->r.index < keep->r.index))
					keep = e;
			}
		}
		for (uint32_t z = x; z < y; z++) {
			struct ck_rec *e = &c->rec[ord[z]];
			if (e == keep)
				continue;
			memset(&pc, 0, sizeof(pc));
			pc.name = e->r.name;
			pc.entry = e->r.index;
			pc.name2 = keep->r.name;
			pc.a = keep->r.index;
			pc.str = matching == 1   ? "its first chunk matches the uid's checksum"
				 : matching == 0 ? "the older; neither's first chunk matches"
						 : "the older; both first chunks match";
			if (problem(c, PR_ENT_DUPUID, &pc)) {
				e->r.uid = fresh_uid(c);
				e->own_known = false;
				entry_next(c, &e->r);
			}
		}
	}
}

static int pass4(struct ck *c)
{
	const uint64_t rb = c->g.row_bytes, cs = c->g.chunk_size;
	struct recfs_pctx pc;
	uint32_t *ord = NULL, n = 0;
	uint8_t *copy = NULL;
	bool dirty = false;
	int ret = 0;

	if (c->o->verbose)
		out(c, "Pass 4: extents and allocation (%u recordings)", c->nrec);
	/* extents */
	for (uint32_t x = 0; x < c->nrec; x++) {
		struct ck_rec *e = &c->rec[x];
		struct recfs_rec *r = &e->r;
		if (e->drop)
			continue;
		bool bad = r->ext_start % rb || r->alloc_len % rb || r->ext_start > c->g.capacity ||
			   r->alloc_len > c->g.capacity - r->ext_start ||
			   (r->state == RECFS_STATE_RECORDING && r->alloc_len == 0);
		if (!bad)
			continue;
		memset(&pc, 0, sizeof(pc));
		pc.name = r->name;
		pc.a = r->ext_start;
		pc.b = r->alloc_len;
		pc.c = c->g.capacity;
		/* a good start and committed data that fits: only the length
		 * is wrong, and the rows the committed bytes need are kept */
		uint64_t need = RECFS_ALIGN_UP(r->committed_len, rb);
		if (r->ext_start % rb == 0 && r->ext_start < c->g.capacity &&
		    r->committed_len <= c->g.capacity - r->ext_start &&
		    need <= c->g.capacity - r->ext_start &&
		    (need > 0 || r->state != RECFS_STATE_RECORDING)) {
			pc.d = need;
			if (problem(c, PR_EXT_CUT, &pc)) {
				r->alloc_len = need;
				entry_next(c, r);
			} else {
				e->drop = true;
				c->keep_leaks = true;
			}
			continue;
		}
		if (problem(c, PR_EXT_RANGE, &pc)) {
			drop(c, e);
		} else {
			e->drop = true; /* not usable for anything below */
			c->keep_leaks = true; /* nor are its rows known */
		}
	}
	/* committed beyond the allocation: keep what the checksums prove */
	for (uint32_t x = 0; x < c->nrec; x++) {
		struct ck_rec *e = &c->rec[x];
		uint64_t len = 0, *cks = NULL, ncks = 0, lost;
		if (!e->commit_bad || e->drop)
			continue;
		e->r.committed_len = 0;
		ret = prove(c, &e->r, 0, e->r.alloc_len, &len, &cks, &ncks, &lost);
		if (ret)
			goto out_free;
		memset(&pc, 0, sizeof(pc));
		pc.name = e->r.name;
		pc.a = e->commit_orig;
		pc.b = e->r.alloc_len;
		pc.c = len;
		e->r.committed_len = len;
		e->r.tail_csum = len % cs && ncks ? cks[ncks - 1] : 0;
		free(cks);
		if (problem(c, PR_ENT_COMMITTED, &pc)) {
			entry_next(c, &e->r);
		}
	}
	ord = malloc((c->nrec + 1) * sizeof(*ord));
	if (!ord) {
		ret = recfs_seterr(-ENOMEM, "out of memory");
		goto out_free;
	}
	/* duplicate names: the later entry is renamed */
	n = 0;
	for (uint32_t x = 0; x < c->nrec; x++)
		if (!c->rec[x].drop)
			ord[n++] = x;
	qsort_r(ord, n, sizeof(*ord), cmp_name, c);
	for (uint32_t x = 1; x < n; x++) {
		struct ck_rec *p = &c->rec[ord[x - 1]], *e = &c->rec[ord[x]];
		if (strcmp(p->r.name, e->r.name))
			continue;
		char nn[RECFS_NAME_MAX + 1], sfx[24];
		snprintf(sfx, sizeof(sfx), "~%u", e->r.index);
		snprintf(nn, sizeof(nn), "%.*s%s", (int)(RECFS_NAME_MAX - strlen(sfx)), e->r.name, sfx);
		memset(&pc, 0, sizeof(pc));
		pc.name = e->r.name;
		pc.entry = e->r.index;
		pc.a = p->r.index;
		pc.name2 = nn;
		if (problem(c, PR_ENT_DUPNAME, &pc)) {
			snprintf(e->r.name, sizeof(e->r.name), "%s", nn);
			entry_next(c, &e->r);
		}
	}
	/* duplicate uids: one keeps it, the others get a new one */
	dup_uids(c, ord);
	/* overlaps */
	n = 0;
	for (uint32_t x = 0; x < c->nrec; x++)
		if (!c->rec[x].drop && c->rec[x].r.alloc_len)
			ord[n++] = x;
	qsort_r(ord, n, sizeof(*ord), cmp_start, c);
	overlaps(c, ord, n);

	/* the bitmap against the extents */
	size_t nb = (size_t)((c->g.rows + 7) / 8);
	copy = recfs_alloc(c->g.bitmap_copy_size);
	if (!copy) {
		ret = recfs_seterr(-ENOMEM, "out of memory");
		goto out_free;
	}
	if (c->have_bmp)
		memcpy(copy + RECFS_BLOCK, c->bmp + RECFS_BLOCK, nb);
	bitmap_runs(c, c->have_bmp ? c->bmp + RECFS_BLOCK : NULL, copy + RECFS_BLOCK, &dirty);
	if (!c->have_bmp && c->bmp_rebuild)
		dirty = true;
	if (dirty && can_write(c)) {
		struct recfs_bitmap_hdr h = {0};
		struct ck_member *m;
		/* the next generation; at the top of the sequence space
		 * (2^64-2 is the last valid one) 3 into copy 1, then 2 into
		 * copy 0, as entry_next does */
		uint64_t seqs[2] = { c->have_bmp ? c->bh.seq + 1 : 2, 0 };
		unsigned nseq = 1;
		if (c->have_bmp && c->bh.seq >= UINT64_MAX - 2)
			seqs[0] = 3, seqs[1] = 2, nseq = 2;
		for (unsigned q = 0; q < nseq; q++) {
			h.seq = seqs[q];
			h.copy = (uint32_t)(h.seq & 1);
			h.nbits = c->g.rows;
			h.dir_hwm = c->hwm;
			recfs_bitmap_encode(copy, &h, c->seed);
			FOR_MEMBERS(c, i, m)
				dev_write(c, m->dev, copy, c->g.bitmap_copy_size,
					  c->g.bitmap_off + h.copy * c->g.bitmap_copy_size);
			flush_all(c);
		}
	}
out_free:
	recfs_free(copy);
	free(ord);
	return ret;
}

/* ------------------------------------- pass 5: checksum table, crash recovery */
static int slots_check(struct ck *c, struct ck_rec *e)
{
	const uint64_t cs = c->g.chunk_size;
	const uint64_t nfull = e->r.committed_len / cs, lc0 = e->r.ext_start / cs;
	uint8_t *buf[RECFS_MAX_MEMBERS] = {0};
	bool rd[RECFS_MAX_MEMBERS];
	struct ck_member *m;
	struct recfs_pctx pc;
	unsigned reports = 0;
	bool last_answer = false;
	int ret = 0;

	/* expected checksums for --verify, but never more than the members'
	 * data areas can hold (a short member's rows are unreadable anyway) */
	if (c->o->verify && nfull <= c->dev_rows * c->g.members + 1) {
		e->exp = calloc(nfull + 1, sizeof(*e->exp));
		e->exp_bad = calloc(nfull + 1, 1);
		if (!e->exp || !e->exp_bad)
			return recfs_seterr(-ENOMEM, "out of memory");
		e->nexp = nfull;
	}
	size_t blen = RECFS_ALIGN_UP(CK_SLOT_BATCH * RECFS_SLOT_SIZE, RECFS_BLOCK) + RECFS_BLOCK;
	FOR_MEMBERS(c, i, m) {
		buf[i] = recfs_alloc(blen);
		if (!buf[i]) {
			ret = recfs_seterr(-ENOMEM, "out of memory");
			goto out_free;
		}
	}
	for (uint64_t k0 = 0; k0 < nfull; k0 += CK_SLOT_BATCH) {
		uint64_t cnt = nfull - k0 < CK_SLOT_BATCH ? nfull - k0 : CK_SLOT_BATCH;
		uint64_t off = c->g.csum_off + (lc0 + k0) * RECFS_SLOT_SIZE;
		uint64_t b0 = off / RECFS_BLOCK * RECFS_BLOCK;
		uint64_t b1 = RECFS_ALIGN_UP(off + cnt * RECFS_SLOT_SIZE, RECFS_BLOCK);
		FOR_MEMBERS(c, i, m) {
			/* an unreadable replica is reported, and neither judged
			 * nor rewritten */
			int e2 = dev_read(m->dev, buf[i], b1 - b0, b0);
			rd[i] = e2 == 0;
			if (e2 && e2 != -ENXIO) /* ENXIO: past a short member's end */
				io_error(c, m->dev, "checksum table read", e2);
		}
		for (uint64_t k = k0; k < k0 + cnt; k++) {
			struct recfs_slot v[RECFS_MAX_MEMBERS];
			const struct recfs_disk_slot *raw[RECFS_MAX_MEMBERS] = {0};
			int pick = -1;
			bool agree = true, multi = false;
			FOR_MEMBERS(c, i, m) {
				if (!rd[i]) {
					v[i].len = 0;
					continue;
				}
				raw[i] = (const void *)(buf[i] + (off - b0) + (k - k0) * RECFS_SLOT_SIZE);
				v[i].csum = le64toh(raw[i]->csum);
				v[i].len = le32toh(raw[i]->len);
			}
			FOR_MEMBERS(c, i, m) {
				if (!raw[i])
					continue;
				if (v[i].len != cs) {
					agree = false;
					continue;
				}
				if (pick < 0)
					pick = (int)i;
				else if (v[i].csum != v[pick].csum)
					agree = false, multi = true;
			}
			if (agree && pick >= 0) {
				if (e->exp)
					e->exp[k] = v[pick].csum;
				continue;
			}
			if (multi) {
				/* the data decides */
				uint8_t *data = recfs_alloc(cs);
				int p2 = -1;
				if (data && read_chunk(c, &e->r, k, data, NULL) == 0) {
					uint64_t h = recfs_chunk_csum(e->r.uid, k, data, cs);
					FOR_MEMBERS(c, i, m)
						if (p2 < 0 && raw[i] && v[i].len == cs && v[i].csum == h)
							p2 = (int)i;
				}
				recfs_free(data);
				/* copies that disagree and data that matches none:
				 * which is right is unknown, none is copied over
				 * the others */
				pick = p2;
			}
			if (pick < 0) {
				memset(&pc, 0, sizeof(pc));
				pc.name = e->r.name;
				pc.a = k;
				pc.b = k * cs;
				pc.c = (k + 1) * cs - 1;
				problem(c, PR_SLOT_BAD, &pc);
				if (e->exp_bad)
					e->exp_bad[k] = 1;
				continue;
			}
			if (e->exp)
				e->exp[k] = v[pick].csum;
			FOR_MEMBERS(c, i, m) {
				if (!raw[i] || ((int)i != pick && v[i].len == cs && v[i].csum == v[pick].csum))
					continue;
				if ((int)i == pick)
					continue;
				bool yes;
				memset(&pc, 0, sizeof(pc));
				pc.name = e->r.name;
				pc.a = k;
				pc.member = m->dev->path;
				pc.str = v[i].len == 0 ? "missing" : "different";
				if (reports < CK_SLOT_REPORTS) {
					yes = problem(c, PR_SLOT_REPLICA, &pc);
					if (++reports == CK_SLOT_REPORTS)
						out(c, "(further checksum replica problems of '%s' are handled the same way)",
						    e->r.name);
				} else {
					yes = last_answer && can_write(c);
					c->st->problems++;
					if (yes)
						c->st->fixed++;
					else {
						c->st->unfixed++;
						c->status |= RECFS_FSCK_UNCORRECTED;
					}
				}
				last_answer = yes;
				if (yes)
					patch(c, (unsigned)c->at[i], raw[pick], RECFS_SLOT_SIZE,
					      c->g.csum_off + (lc0 + k) * RECFS_SLOT_SIZE);
			}
		}
	}
out_free:
	FOR_MEMBERS(c, i, m)
		recfs_free(buf[i]);
	return ret;
}

static int pass5(struct ck *c)
{
	struct recfs_pctx pc;
	int ret = 0;

	if (c->o->verbose)
		out(c, "Pass 5: checksum table and crash recovery");
	for (uint32_t x = 0; x < c->nrec && !stop_now(c); x++) {
		struct ck_rec *e = &c->rec[x];
		if (e->drop)
			continue;
		ret = slots_check(c, e);
		if (ret)
			return ret;
		flush_all(c);
		if (e->r.state != RECFS_STATE_RECORDING)
			continue;
		if (c->o->live) {
			out(c, "recording '%s' is being recorded: %llu bytes committed so far", e->r.name,
			    (unsigned long long)e->r.committed_len);
			continue;
		}
		uint64_t len = e->r.committed_len, lost = 0;
		ret = prove(c, &e->r, e->r.committed_len / c->g.chunk_size, e->r.alloc_len, &len,
			    &e->seal_csums, &e->nseal, &lost);
		if (ret)
			return ret;
		memset(&pc, 0, sizeof(pc));
		pc.name = e->r.name;
		pc.a = e->r.committed_len;
		pc.b = len - e->r.committed_len;
		pc.c = lost;
		pc.d = len;
		e->seal_len = len;
		c->st->lost_bytes += lost;
		if (problem(c, PR_REC_CRASHED, &pc)) {
			e->crashed = true;
			c->st->recovered++;
			c->st->recovered_bytes += len;
			c->st->beyond_commit += len - e->r.committed_len;
		}
	}
	return ret;
}

/* Borrowed device views for recfs_pack_open_devs (which takes ownership). */
static int bw_pread(struct recfs_dev *d, void *buf, size_t len, uint64_t off)
{
	struct recfs_dev *u = d->priv;
	return u->ops->pread(u, buf, len, off);
}

static int bw_pwrite(struct recfs_dev *d, const void *buf, size_t len, uint64_t off)
{
	struct recfs_dev *u = d->priv;
	return u->ops->pwrite(u, buf, len, off);
}

static int bw_flush(struct recfs_dev *d)
{
	struct recfs_dev *u = d->priv;
	return u->ops->flush(u);
}

static void bw_close(struct recfs_dev *d)
{
	(void)d;
}

static const struct recfs_dev_ops borrow_ops = { bw_pread, bw_pwrite, bw_flush, bw_close };

/* Seal the crashed recordings at their proven ends, through the library. */
static int seal_crashed(struct ck *c)
{
	struct recfs_dev *devs[RECFS_MAX_MEMBERS] = {0};
	struct recfs_pack *p = NULL;
	struct ck_member *m;
	unsigned nd = 0;
	bool any = false;
	int err = 0;

	for (uint32_t x = 0; x < c->nrec; x++)
		any |= c->rec[x].crashed && !c->rec[x].drop;
	if (!any || !can_write(c))
		return 0;
	FOR_MEMBERS(c, i, m) {
		struct recfs_dev *d = calloc(1, sizeof(*d));
		if (!d || !(d->path = strdup(m->dev->path))) {
			free(d);
			err = recfs_seterr(-ENOMEM, "out of memory");
			goto out_close;
		}
		struct recfs_dev *u = m->dev;
		d->ops = &borrow_ops;
		d->priv = u;
		d->size = u->size;
		d->lbs = u->lbs;
		d->fd = u->fd;
		d->direct = u->direct;
		d->blkdev = u->blkdev;
		d->st_dev = u->st_dev;
		d->st_ino = u->st_ino;
		d->st_rdev = u->st_rdev;
		devs[nd++] = d;
	}
	err = recfs_pack_open_devs(devs, nd, RECFS_O_RDWR, &p);
	nd = 0; /* owned by the pack now, also on failure */
	if (err) {
		out(c, "cannot open the pack to seal recovered recordings: %s", recfs_errmsg());
		c->status |= RECFS_FSCK_ERROR;
		return err;
	}
	for (uint32_t x = 0; x < c->nrec; x++) {
		struct ck_rec *e = &c->rec[x];
		struct recfs_rec r;
		if (!e->crashed || e->drop)
			continue;
		err = recfs_rec_get(p, e->r.index, &r);
		if (!err && (r.uid != e->r.uid || r.state != RECFS_STATE_RECORDING ||
			     r.committed_len != e->r.committed_len))
			err = recfs_seterr(-ESTALE, "entry changed under the checker");
		if (!err) {
			struct recfs_commit cm = {0};
			cm.len = e->seal_len;
			cm.csums = e->seal_csums;
			cm.end_ns = r.end_ns ? r.end_ns : 1;
			err = recfs_rec_seal(p, &r, e->seal_len > r.committed_len ? &cm : NULL);
		}
		if (err) {
			out(c, "recording '%s': sealing failed: %s", e->r.name, recfs_errmsg());
			c->status |= RECFS_FSCK_ERROR;
			continue;
		}
		/* --verify checks what was recovered too */
		if (e->exp) {
			uint64_t nfull = r.committed_len / c->g.chunk_size;
			uint64_t *ne = realloc(e->exp, (nfull + 1) * sizeof(*ne));
			uint8_t *nb = realloc(e->exp_bad, nfull + 1);
			if (ne)
				e->exp = ne;
			if (nb)
				e->exp_bad = nb;
			if (ne && nb) {
				uint64_t k0 = e->r.committed_len / c->g.chunk_size;
				for (uint64_t k = k0; k < nfull; k++) {
					e->exp[k] = k - k0 < e->nseal ? e->seal_csums[k - k0] : 0;
					e->exp_bad[k] = k - k0 >= e->nseal;
				}
				e->nexp = nfull;
			}
		}
		e->r = r;
	}
	err = recfs_pack_close(p);
	if (err) {
		out(c, "closing the pack after sealing failed: %s", recfs_errmsg());
		c->status |= RECFS_FSCK_ERROR;
	}
	return err;

out_close:
	for (unsigned i = 0; i < nd; i++)
		recfs_dev_close(devs[i]);
	return err;
}

/* ------------------------------------------------------ pass 6: --verify */
struct vctx {
	struct ck *c;
	unsigned member, worker;    /* worker of CK_VERIFY_WORKERS on the member */
	atomic_uint *finished;
};

static void bad_add(struct ck *c, uint32_t x, uint64_t k, unsigned member, int io)
{
	pthread_mutex_lock(&c->lock);
	if (c->nbad == c->capbad && c->nbad < CK_BAD_MAX) {
		size_t nc = c->capbad ? c->capbad * 2 : 64;
		struct ck_bad *n = realloc(c->bad, nc * sizeof(*n));
		if (n) {
			c->bad = n;
			c->capbad = nc;
		}
	}
	if (c->nbad == c->capbad) {
		c->bad_unlisted++;
		pthread_mutex_unlock(&c->lock);
		return;
	}
	struct ck_bad *b = &c->bad[c->nbad++];
	b->rec = x;
	b->chunk = k;
	b->member = member;
	b->io = io;
	pthread_mutex_unlock(&c->lock);
}

static void *verify_member(void *arg)
{
	struct vctx *v = arg;
	struct ck *c = v->c;
	const uint64_t cs = c->g.chunk_size;
	const unsigned nm = c->g.members;
	/* at most CK_VERIFY_MEM in buffers over all workers */
	uint64_t io = CK_VERIFY_MEM / ((uint64_t)nm * CK_VERIFY_WORKERS);
	uint64_t maxk = (io < CK_VERIFY_IO ? io : CK_VERIFY_IO) / cs;
	struct recfs_dev *d = c->a[c->at[v->member]].dev;
	uint8_t *buf;

	if (maxk == 0)
		maxk = 1;
	buf = recfs_alloc(maxk * cs);
	if (!buf) {
		atomic_store(&c->verify_oom, true);
		goto out;
	}
	for (uint32_t x = 0; x < c->nrec; x++) {
		struct ck_rec *e = &c->rec[x];
		const struct recfs_rec *r = &e->r;
		if (e->drop || r->committed_len == 0)
			continue;
		uint64_t lc0 = r->ext_start / cs, nch = (r->committed_len + cs - 1) / cs;
		/* first chunk of this recording on this member */
		uint64_t k = (v->member + nm - (unsigned)(lc0 % nm)) % nm;
		for (uint64_t batch = 0; k < nch; batch++) {
			uint64_t cnt = 0, moff;
			unsigned mi;
			while (k + cnt * nm < nch && cnt < maxk)
				cnt++;
			if (batch % CK_VERIFY_WORKERS != v->worker) {
				k += cnt * nm; /* another worker's */
				continue;
			}
			if (c->o->cancel && c->o->cancel(c->o->ctx))
				goto out;
			recfs_map(&c->g, r->ext_start + k * cs, &mi, &moff);
			int err = dev_read(d, buf, cnt * cs, moff);
			for (uint64_t j = 0; j < cnt; j++) {
				uint64_t kk = k + j * nm;
				uint64_t len = r->committed_len - kk * cs >= cs ? cs : r->committed_len - kk * cs;
				if (err) {
					/* retry chunk by chunk to locate it */
					int e2 = dev_read(d, buf + j * cs, cs, moff + j * cs);
					if (e2) {
						bad_add(c, x, kk, v->member, e2);
						atomic_fetch_add(&c->vdone, len);
						continue;
					}
				}
				uint64_t want;
				if (len == cs) {
					if (kk >= e->nexp || !e->exp || e->exp_bad[kk]) {
						atomic_fetch_add(&c->vdone, len);
						continue; /* reported in pass 5 */
					}
					want = e->exp[kk];
				} else {
					want = r->tail_csum;
				}
				if (recfs_chunk_csum(r->uid, kk, buf + j * cs, len) != want)
					bad_add(c, x, kk, v->member, 0);
				atomic_fetch_add(&c->vdone, len);
			}
			k += cnt * nm;
		}
	}
	recfs_free(buf);
out:
	pthread_mutex_lock(&c->lock);
	atomic_fetch_add(v->finished, 1);
	pthread_cond_signal(&c->done);
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

static int cmp_bad(const void *x, const void *y)
{
	const struct ck_bad *a = x, *b = y;
	if (a->rec != b->rec)
		return a->rec < b->rec ? -1 : 1;
	return a->chunk < b->chunk ? -1 : a->chunk > b->chunk;
}

static int pass6(struct ck *c)
{
	pthread_t th[RECFS_MAX_MEMBERS * CK_VERIFY_WORKERS];
	struct vctx vc[RECFS_MAX_MEMBERS * CK_VERIFY_WORKERS];
	bool started[RECFS_MAX_MEMBERS * CK_VERIFY_WORKERS] = {0};
	atomic_uint finished = 0;
	unsigned nstarted = 0;
	uint64_t total = 0;
	struct timespec t0, t1;
	struct ck_member *m;

	if (c->o->verbose)
		out(c, "Pass 6: data checksums");
	for (uint32_t x = 0; x < c->nrec; x++)
		if (!c->rec[x].drop)
			total += c->rec[x].r.committed_len;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	FOR_MEMBERS(c, i, m) {
		(void)m;
		for (unsigned w = 0; w < CK_VERIFY_WORKERS; w++) {
			unsigned t = i * CK_VERIFY_WORKERS + w;
			vc[t].c = c;
			vc[t].member = i;
			vc[t].worker = w;
			vc[t].finished = &finished;
			if (pthread_create(&th[t], NULL, verify_member, &vc[t]) == 0) {
				started[t] = true;
				nstarted++;
			}
		}
	}
	pthread_mutex_lock(&c->lock);
	while (atomic_load(&finished) < nstarted) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 200 * 1000 * 1000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&c->done, &c->lock, &ts);
		if (c->o->progress && atomic_load(&finished) < nstarted) {
			pthread_mutex_unlock(&c->lock);
			c->o->progress(c->o->ctx, atomic_load(&c->vdone), total);
			pthread_mutex_lock(&c->lock);
		}
	}
	pthread_mutex_unlock(&c->lock);
	for (unsigned i = 0; i < RECFS_MAX_MEMBERS * CK_VERIFY_WORKERS; i++)
		if (started[i])
			pthread_join(th[i], NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (c->o->progress)
		c->o->progress(c->o->ctx, atomic_load(&c->vdone), total);
	c->st->verified_bytes = atomic_load(&c->vdone);
	if (atomic_load(&c->verify_oom)) {
		out(c, "verify: out of memory for read buffers: not every chunk was read");
		c->status |= RECFS_FSCK_ERROR;
	}
	c->st->verify_ns = (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000000ull +
			   (uint64_t)(t1.tv_nsec - t0.tv_nsec);
	if (c->nbad)
		qsort(c->bad, c->nbad, sizeof(*c->bad), cmp_bad);
	for (size_t b = 0, listed = 0; b < c->nbad; b++) {
		const struct ck_bad *bd = &c->bad[b];
		const struct recfs_rec *r = &c->rec[bd->rec].r;
		struct recfs_pctx pc = {0};
		uint64_t end = (bd->chunk + 1) * c->g.chunk_size;
		char why[96];
		if (b == 0 || bd->rec != c->bad[b - 1].rec)
			listed = 0;
		c->st->bad_chunks++;
		if (listed++ == CK_BAD_LINES) {
			size_t more = 0;
			while (b + more < c->nbad && c->bad[b + more].rec == bd->rec)
				more++;
			out(c, "(and %zu more bad chunks in '%s')", more, r->name);
			c->st->bad_chunks += more - 1;
			b += more - 1;
			continue;
		}
		if (end > r->committed_len)
			end = r->committed_len;
		pc.name = r->name;
		pc.a = bd->chunk * c->g.chunk_size;
		pc.b = end - 1;
		pc.c = bd->chunk;
		pc.member = c->a[c->at[bd->member]].dev->path;
		snprintf(why, sizeof(why), "%s", strerror(-bd->io));
		pc.str = why;
		problem(c, bd->io ? PR_DATA_IO : PR_DATA_BAD, &pc);
	}
	if (c->bad_unlisted) {
		out(c, "(and %llu more bad chunks not listed)", (unsigned long long)c->bad_unlisted);
		c->st->bad_chunks += c->bad_unlisted;
		c->status |= RECFS_FSCK_UNCORRECTED;
	}
	/* chunks on missing members: one line per recording and member */
	for (uint32_t x = 0; x < c->nrec && c->degraded; x++) {
		const struct recfs_rec *r = &c->rec[x].r;
		uint64_t n[RECFS_MAX_MEMBERS] = {0}, bytes[RECFS_MAX_MEMBERS] = {0};
		if (c->rec[x].drop)
			continue;
		for (uint64_t k = 0; k * c->g.chunk_size < r->committed_len; k++) {
			unsigned mi;
			uint64_t mo, len = r->committed_len - k * c->g.chunk_size;
			recfs_map(&c->g, r->ext_start + k * c->g.chunk_size, &mi, &mo);
			if (c->at[mi] >= 0)
				continue;
			n[mi]++;
			bytes[mi] += len < c->g.chunk_size ? len : c->g.chunk_size;
		}
		for (unsigned mi = 0; mi < c->g.members; mi++) {
			struct recfs_pctx pc = {0};
			if (!n[mi])
				continue;
			pc.name = r->name;
			pc.a = n[mi];
			pc.b = bytes[mi];
			pc.mindex = mi;
			problem(c, PR_DATA_MISSING, &pc);
		}
	}
	return 0;
}

/* ---------------------------------------------------------------- driver */
/* Rows the live extents cover, after every repair. */
static void rows_used(struct ck *c)
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

	err = pass1(c);
	if (err)
		goto out_free;
	if (stop_now(c) || (err = pass2(c)) || stop_now(c))
		goto out_err;
	if ((err = pass3(c)) || stop_now(c))
		goto out_err;
	if ((err = pass4(c)) || stop_now(c))
		goto out_err;
	if ((err = pass5(c)) || stop_now(c))
		goto out_err;
	seal_crashed(c);
	if (o->verify && !stop_now(c))
		pass6(c);
	stop_now(c);
	st->recordings = 0;
	for (uint32_t x = 0; x < c->nrec; x++)
		st->recordings += !c->rec[x].drop;
	rows_used(c);
	{
		char lbl[RECFS_LABEL_MAX + 8] = "";
		if (c->sb.label[0])
			snprintf(lbl, sizeof(lbl), " '%s'", c->sb.label);
		out(c, "pack%s: %u members, %u recordings, %llu/%llu rows in use", lbl,
		    c->sb.member_count, st->recordings, (unsigned long long)st->rows_used,
		    (unsigned long long)c->g.rows);
	}
	if (o->verify)
		out(c, "verify: %llu bytes checked, %llu bad chunks", (unsigned long long)st->verified_bytes,
		    (unsigned long long)st->bad_chunks);
	if (o->verify && o->verbose && st->verify_ns)
		out(c, "verify: %.1f MiB/s", (double)st->verified_bytes / 1048576.0 /
						  ((double)st->verify_ns / 1e9));
	if (c->preen_stop)
		out(c, "UNEXPECTED INCONSISTENCY: run fsck.recfs manually (without -p or -a).");
	if (c->status & RECFS_FSCK_CORRECTED)
		out(c, "***** PACK WAS MODIFIED *****");
	goto out_free;

out_err:
	if (err) {
		out(c, "check aborted: %s", recfs_errmsg());
		c->status |= RECFS_FSCK_ERROR;
	}
out_free:
	if (c->cancelled) {
		out(c, "check cancelled: the pack holds the repairs made so far");
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
