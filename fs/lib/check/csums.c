/* SPDX-License-Identifier: MIT */
#include "ck.h"

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
			int e2 = ck_dev_read(m->dev, buf[i], b1 - b0, b0);
			rd[i] = e2 == 0;
			if (e2 && e2 != -ENXIO) /* ENXIO: past a short member's end */
				ck_io_error(c, m->dev, "checksum table read", e2);
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
				if (data && ck_read_chunk(c, &e->r, k, data, NULL) == 0) {
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
				ck_problem(c, PR_SLOT_BAD, &pc);
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
					yes = ck_problem(c, PR_SLOT_REPLICA, &pc);
					if (++reports == CK_SLOT_REPORTS)
						ck_out(c, "(further checksum replica problems of '%s' are handled the same way)",
						    e->r.name);
				} else {
					yes = last_answer && ck_can_write(c);
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
					ck_patch(c, (unsigned)c->at[i], raw[pick], RECFS_SLOT_SIZE,
					      c->g.csum_off + (lc0 + k) * RECFS_SLOT_SIZE);
			}
		}
	}
out_free:
	FOR_MEMBERS(c, i, m)
		recfs_free(buf[i]);
	return ret;
}

int ck_pass5(struct ck *c)
{
	struct recfs_pctx pc;
	int ret = 0;

	if (c->o->verbose)
		ck_out(c, "Pass 5: checksum table and crash recovery");
	for (uint32_t x = 0; x < c->nrec && !ck_stop_now(c); x++) {
		struct ck_rec *e = &c->rec[x];
		if (e->drop)
			continue;
		ret = slots_check(c, e);
		if (ret)
			return ret;
		ck_flush_all(c);
		if (e->r.state != RECFS_STATE_RECORDING)
			continue;
		if (c->o->live) {
			ck_out(c, "recording '%s' is being recorded: %llu bytes committed so far", e->r.name,
			    (unsigned long long)e->r.committed_len);
			continue;
		}
		uint64_t len = e->r.committed_len, lost = 0;
		ret = ck_prove(c, &e->r, e->r.committed_len / c->g.chunk_size, e->r.alloc_len, &len,
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
		if (ck_problem(c, PR_REC_CRASHED, &pc)) {
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
int ck_seal_crashed(struct ck *c)
{
	struct recfs_dev *devs[RECFS_MAX_MEMBERS] = {0};
	struct recfs_pack *p = NULL;
	struct ck_member *m;
	unsigned nd = 0;
	bool any = false;
	int err = 0;

	for (uint32_t x = 0; x < c->nrec; x++)
		any |= c->rec[x].crashed && !c->rec[x].drop;
	if (!any || !ck_can_write(c))
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
		ck_out(c, "cannot open the pack to seal recovered recordings: %s", recfs_errmsg());
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
			ck_out(c, "recording '%s': sealing failed: %s", e->r.name, recfs_errmsg());
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
		ck_out(c, "closing the pack after sealing failed: %s", recfs_errmsg());
		c->status |= RECFS_FSCK_ERROR;
	}
	return err;

out_close:
	for (unsigned i = 0; i < nd; i++)
		recfs_dev_close(devs[i]);
	return err;
}
