/* SPDX-License-Identifier: MIT */
#include "ck.h"

/* ---------------------------------------------------------- pass 2: bitmap */
int ck_pass2(struct ck *c)
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
		ck_out(c, "Pass 2: allocation bitmap");
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
			if (ck_dev_read(m->dev, buf[i][k], size, off)) {
				ck_io_error(c, m->dev, "bitmap read", -EIO);
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
		c->bmp_rebuild = ck_problem(c, PR_BMP_NONE, &pc); /* in pass 4 */
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
		if (ck_problem(c, PR_BMP_COPY, &pc)) {
			ck_dev_write(c, m->dev, c->bmp, size, c->g.bitmap_off + (uint64_t)wk * size);
			if (m->dev->ops->flush(m->dev))
				ck_io_error(c, m->dev, "flush", -EIO);
		}
	}
out_free:
	for (unsigned i = 0; i < RECFS_MAX_MEMBERS; i++)
		for (int k = 0; k < 2; k++)
			recfs_free(buf[i][k]);
	return ret;
}
