/* SPDX-License-Identifier: MIT */
#include "ck.h"

/* ---------------------------------------------------------------------- I/O */
int ck_dev_read(struct recfs_dev *d, void *buf, size_t len, uint64_t off)
{
	if (off > d->size || len > d->size - off)
		return recfs_seterr(-ENXIO, "read of %zu bytes at %llu is beyond the end (%llu bytes)",
				    len, (unsigned long long)off, (unsigned long long)d->size);
	return d->ops->pread(d, buf, len, off);
}

void ck_io_error(struct ck *c, struct recfs_dev *d, const char *what, int err)
{
	struct recfs_pctx pc = { .member = d->path };
	char s[400];

	snprintf(s, sizeof(s), "%s failed: %s", what, recfs_errmsg());
	pc.str = s;
	/* the same block read for each recording whose slots it holds fails
	 * the same way: one line */
	if (strcmp(s, c->last_io)) {
		ck_problem(c, PR_MEMBER_IO, &pc);
		snprintf(c->last_io, sizeof(c->last_io), "%s", s);
	}
	(void)err;
	c->status |= RECFS_FSCK_ERROR;
}

int ck_dev_write(struct ck *c, struct recfs_dev *d, const void *buf, size_t len, uint64_t off)
{
	int err;

	if (!ck_can_write(c))
		return -EROFS; /* never reached: ck_problem() said no */
	if (off > d->size || len > d->size - off)
		err = recfs_seterr(-ENXIO, "write at %llu is beyond the end", (unsigned long long)off);
	else
		err = d->ops->pwrite(d, buf, len, off);
	if (err)
		ck_io_error(c, d, "write", err);
	return err;
}

void ck_flush_all(struct ck *c)
{
	if (!ck_can_write(c))
		return;
	for (unsigned i = 0; i < c->sb.member_count; i++) {
		if (c->at[i] < 0)
			continue;
		struct recfs_dev *d = c->a[c->at[i]].dev;
		if (d->ops->flush(d))
			ck_io_error(c, d, "flush", -EIO);
	}
}

/* Write len bytes at off (not block aligned) on member argument ai by
 * read-modify-write of the blocks around them. */
int ck_patch(struct ck *c, unsigned ai, const void *src, size_t len, uint64_t off)
{
	struct recfs_dev *d = c->a[ai].dev;
	uint64_t b0 = off / RECFS_BLOCK * RECFS_BLOCK, b1 = RECFS_ALIGN_UP(off + len, RECFS_BLOCK);
	uint8_t *buf = recfs_alloc(b1 - b0);
	int err;

	if (!buf)
		return recfs_seterr(-ENOMEM, "out of memory");
	err = ck_dev_read(d, buf, b1 - b0, b0);
	if (err)
		ck_io_error(c, d, "read", err);
	else {
		memcpy(buf + (off - b0), src, len);
		err = ck_dev_write(c, d, buf, b1 - b0, b0);
	}
	recfs_free(buf);
	return err;
}

uint64_t ck_entry_off(const struct ck *c, uint32_t i, uint64_t seq)
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
			ck_patch(c, (unsigned)c->at[i], slot, sizeof(slot), ck_entry_off(c, r->index, r->seq));
	ck_flush_all(c);
}

/* Write r as the generation after r->seq.  At the top of the sequence
 * space (2^64-2 is the last valid one) both slots start over: 3 into slot
 * 1 first, then 2 into slot 0, so that a crash between the two writes
 * leaves the old newest generation standing, never a mix. */
void ck_entry_next(struct ck *c, struct recfs_rec *r)
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
void ck_entry_free(struct ck *c, uint32_t index, uint64_t prev_seq)
{
	struct recfs_rec f;

	recfs_entry_free_init(&f, index, prev_seq);
	ck_entry_next(c, &f);
}

/* An entry with no valid copy: both slots become valid FREE entries, so no
 * damaged slot is left behind to be reported again. */
void ck_entry_free_both(struct ck *c, uint32_t index)
{
	struct recfs_rec f;

	recfs_entry_free_init(&f, index, 1);
	entry_store(c, &f);
	recfs_entry_free_init(&f, index, 2);
	entry_store(c, &f);
}
