/* SPDX-License-Identifier: MIT */
#include "ck.h"

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
		yes = ck_dev_read(m->dev, buf, c->g.bitmap_copy_size,
			       c->g.bitmap_off + k * c->g.bitmap_copy_size) == 0 &&
		      recfs_bitmap_decode(buf, c->g.bitmap_copy_size, c->seed, &h) == 0;
	uint32_t n = c->sb.dir_capacity < CK_DIR_BATCH ? c->sb.dir_capacity : CK_DIR_BATCH;
	if (!yes && ck_dev_read(m->dev, buf, RECFS_ALIGN_UP((size_t)n * 2 * RECFS_ENTRY_SIZE, RECFS_BLOCK),
			     c->g.dir_off) == 0)
		for (uint32_t k = 0; k < 2 * n && !yes; k++)
			yes = recfs_entry_decode(buf + (size_t)k * RECFS_ENTRY_SIZE, c->seed, k / 2, &r) == 0;
	recfs_free(buf);
	return yes;
}

static int read_super(struct ck_member *m, int k, uint64_t off)
{
	uint8_t *blk = recfs_alloc(RECFS_BLOCK);
	int err;

	if (!blk)
		return -ENOMEM;
	err = ck_dev_read(m->dev, blk, RECFS_BLOCK, off);
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
	ck_dev_write(c, m->dev, blk, RECFS_BLOCK, k ? c->sb.backup_off : 0);
	recfs_free(blk);
	if (m->dev->ops->flush(m->dev))
		ck_io_error(c, m->dev, "flush", -EIO);
}

int ck_pass1(struct ck *c)
{
	struct recfs_pctx pc;
	int best = -1, bestk = 0;
	unsigned bestv = 0;
	char u[37];

	if (c->o->verbose)
		ck_out(c, "Pass 1: members and superblocks");
	/* primaries; backups at the offset a valid primary names, else at the
	 * end of the device */
	for (unsigned i = 0; i < c->n; i++) {
		struct ck_member *m = &c->a[i];
		m->index = -1;
		for (unsigned j = 0; j < i; j++)
			if (!c->a[j].ignored && same_dev(m->dev, c->a[j].dev)) {
				memset(&pc, 0, sizeof(pc));
				pc.member = m->dev->path;
				ck_problem(c, PR_MEMBER_SAME, &pc);
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
					      !recfs_super_diff(&c->a[i].sb[k], &c->a[j].sb[l]);
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
			f = recfs_super_diff(&c->a[best].sb[bestk], &c->a[i].sb[k]);
			/* another pack's member is foreign, never written; but as
			 * many votes for another pack leave which pack is meant
			 * unknown (FORMAT.md 3): nothing is written either */
			if (f) {
				memset(&pc, 0, sizeof(pc));
				pc.member = c->a[best].dev->path;
				pc.name = c->a[i].dev->path;
				pc.str = f;
				ck_problem(c, PR_SB_TIE, &pc);
				c->sb_tie = true;
			}
		}
	if (best < 0) {
		memset(&pc, 0, sizeof(pc));
		pc.str = c->n ? c->a[0].why[0] : "no members";
		ck_problem(c, PR_PACK_NONE, &pc);
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
			m->field[k] = recfs_super_diff(&m->sb[k], &c->sb);
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
			ck_problem(c, PR_MEMBER_FOREIGN, &pc);
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
			ck_problem(c, PR_MEMBER_DUP, &pc);
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
			ck_problem(c, PR_SB_UNKNOWN, &pc);
			m->ignored = true;
		}
	}
	for (unsigned i = 0; i < c->sb.member_count; i++) {
		if (c->at[i] >= 0)
			continue;
		memset(&pc, 0, sizeof(pc));
		pc.mindex = i;
		ck_problem(c, PR_MEMBER_MISSING, &pc);
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
			ck_problem(c, PR_MEMBER_SHORT, &pc);
			m->shrt = true;
		}
		if (!m->good[0] && !m->good[1] && m->err[0] && m->err[1] && !m->shrt) {
			/* identified by elimination */
			if (ck_problem(c, PR_SB_NONE, &pc)) {
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
			if (ck_problem(c, num, &pc))
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
			ck_out(c, "%s: the metadata area (%llu bytes) does not fit on the member: check stopped",
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
