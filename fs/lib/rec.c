/* SPDX-License-Identifier: MIT */
/* Recordings: directory operations, the allocator, the commit path, reads. */
#include <stdio.h>
#include <sys/random.h>

#include "internal.h"

/* ------------------------------------------------------------ entry store */
static int entry_store_one(struct recfs_pack *p, const struct recfs_rec *r, bool flush);

/* Generations stop at 2^64-2: the one after is written as 3 into slot 1,
 * then as 2 into slot 0 (a cut between the two leaves the old newest). */
int recfs_entry_store(struct recfs_pack *p, struct recfs_rec *r)
{
	int err;

	if (r->seq < UINT64_MAX - 1)
		return entry_store_one(p, r, true);
	r->seq = 3;
	err = entry_store_one(p, r, true);
	r->seq = 2;
	if (!err)
		err = entry_store_one(p, r, true);
	r->seq = 3;
	if (!err)
		p->seq[r->index] = 3;
	return err;
}

/* read-modify-write per member: the neighbours in the block are that
 * member's own bytes and are written back unchanged */
struct entry_write {
	uint8_t *blk;
	uint64_t off, boff;
	const uint8_t *slot;
};

static int entry_write_one(struct recfs_dev *d, void *ctx)
{
	const struct entry_write *w = ctx;
	int err = d->ops->pread(d, w->blk, RECFS_BLOCK, w->boff);
	if (!err) {
		memcpy(w->blk + (w->off - w->boff), w->slot, RECFS_ENTRY_SIZE);
		err = d->ops->pwrite(d, w->blk, RECFS_BLOCK, w->boff);
	}
	return err;
}

/* flush: the members after the write (the entry durable on return) */
static int entry_store_one(struct recfs_pack *p, const struct recfs_rec *r, bool flush)
{
	uint64_t off = p->g.dir_off + ((uint64_t)r->index * 2 + (r->seq & 1)) * RECFS_ENTRY_SIZE;
	uint8_t slot[RECFS_ENTRY_SIZE];
	struct entry_write w = {.off = off, .boff = off / RECFS_BLOCK * RECFS_BLOCK, .slot = slot};
	int ret;

	w.blk = recfs_alloc(RECFS_BLOCK);
	if (!w.blk)
		return recfs_seterr(-ENOMEM, "out of memory");
	recfs_entry_encode(r, p->pack_seed, slot);
	ret = recfs__members_write(p, "directory", entry_write_one, &w);
	recfs_free(w.blk);
	if (!ret && flush)
		ret = recfs_flush_all(p);
	if (!ret && r->seq > p->seq[r->index])
		p->seq[r->index] = r->seq;
	return ret;
}

/* ------------------------------------------------------------------ lookup */
int recfs_rec_get(struct recfs_pack *p, uint32_t index, struct recfs_rec *out)
{
	if (index >= p->g.dir_capacity || !p->ent[index])
		return recfs_seterr(-ENOENT, "no recording with index %u", index);
	*out = *p->ent[index];
	return 0;
}

int recfs_rec_lookup(struct recfs_pack *p, const char *name, struct recfs_rec *out)
{
	int64_t i = recfs__hash_find(p, name);

	if (i < 0) {
		int err = recfs__dup_uid_err(p, name);
		return err ? err : recfs_seterr(-ENOENT, "no recording named '%s'", name);
	}
	*out = *p->ent[i];
	return 0;
}

int recfs_rec_next(struct recfs_pack *p, uint32_t *index, struct recfs_rec *out)
{
	for (uint32_t i = *index; i < p->dir_hwm && i < p->g.dir_capacity; i++) {
		if (p->ent[i]) {
			*out = *p->ent[i];
			*index = i;
			return 0;
		}
	}
	return -ENOENT;
}

int recfs_rec_refresh(struct recfs_pack *p, struct recfs_rec *r)
{
	struct recfs_rec n;
	int found = recfs__entry_read(p, r->index, &n);

	if (found < 0)
		return found;
	if (!found || n.state == RECFS_STATE_FREE || n.uid != r->uid)
		return recfs_seterr(-ENOENT, "recording '%s' is gone", r->name);
	if (!recfs__extent_ok(p, &n))
		return recfs_seterr(-EUCLEAN, "recording '%s': entry is inconsistent", r->name);
	if (n.seq < r->seq)
		return 0; /* an older replica answered: keep what we know */
	*r = n;
	if (p->ent[r->index] && p->ent[r->index]->uid == n.uid && !strcmp(p->ent[r->index]->name, n.name))
		*p->ent[r->index] = n;
	return 0;
}

/* --------------------------------------------------------------- allocator */
/* Rows [start, start+n): the smallest free run holding need rows (need > 0),
 * or the largest free run (need == 0).  -ENOSPC if none. */
static int alloc_rows(const struct recfs_pack *p, uint64_t need, uint64_t *start, uint64_t *n)
{
	uint64_t fr, ls, lr;

	if (need) {
		*n = need;
		return recfs__space_fit(p, need, start);
	}
	recfs__space(p, &fr, &ls, &lr);
	if (lr == 0)
		return -ENOSPC;
	*start = ls;
	*n = lr;
	return 0;
}

static uint64_t new_uid(const struct recfs_pack *p)
{
	uint64_t u;

	for (;;) {
		if (getrandom(&u, sizeof(u), 0) != sizeof(u))
			u = recfs_now_ns() ^ ((uint64_t)rand() << 32);
		if (u == 0)
			continue;
		bool dup = false;
		for (uint32_t i = 0; i < p->dir_hwm && !dup; i++)
			dup = (p->ent[i] && p->ent[i]->uid == u) || (p->bad[i] && p->bad[i]->uid == u);
		if (!dup)
			return u;
	}
}

static int need_rw(const struct recfs_pack *p)
{
	if (!(p->flags & RECFS_O_RDWR))
		return recfs_seterr(-EROFS, "pack is open read-only");
	return 0;
}

int recfs_rec_create(struct recfs_pack *p, const char *name, const struct recfs_input *in,
		     uint64_t size_hint, struct recfs_rec *out)
{
	struct recfs_rec *r;
	uint64_t rs, rn, need = 0;
	uint32_t idx;
	int err;

	if ((err = need_rw(p)) || (err = recfs_name_check(name)))
		return err;
	if (recfs__hash_find(p, name) >= 0)
		return recfs_seterr(-EEXIST, "a recording named '%s' already exists", name);
	/* nor a third entry by the name of one of two that share a uid */
	if ((err = recfs__dup_uid_err(p, name)))
		return err;
	for (idx = 0; idx < p->dir_hwm && idx < p->g.dir_capacity; idx++)
		if (!p->ent[idx] && !p->bad[idx])
			break;
	if (idx >= p->g.dir_capacity)
		return recfs_seterr(-ENFILE, "directory is full (%u recordings)", p->g.dir_capacity);
	if (size_hint)
		need = size_hint / p->g.row_bytes + (size_hint % p->g.row_bytes != 0);
	if (alloc_rows(p, need, &rs, &rn)) {
		char b[32];
		if (need)
			return recfs_seterr(-ENOSPC, "no free extent of %s for '%s'",
					    recfs_fmt_size(size_hint, b, sizeof(b)), name);
		return recfs_seterr(-ENOSPC, "pack is full: no free space for '%s'", name);
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return recfs_seterr(-ENOMEM, "out of memory");
	r->index = idx;
	r->seq = p->seq[idx] + 1;
	r->state = RECFS_STATE_RECORDING;
	snprintf(r->name, sizeof(r->name), "%s", name);
	r->uid = new_uid(p);
	r->ext_start = rs * p->g.row_bytes;
	r->alloc_len = rn * p->g.row_bytes;
	r->start_ns = r->end_ns = recfs_now_ns();
	if (in)
		r->input = *in;
	r->input.source[RECFS_SOURCE_MAX] = 0;

	/* bitmap (rows and the high-water mark) first, then the entry: a cut
	 * between the two leaves leaked rows, never a double allocation */
	for (uint64_t k = rs; k < rs + rn; k++)
		recfs_bit_set(p->bits, k);
	recfs__space_changed(p, rs, rs + rn);
	uint32_t old_hwm = p->dir_hwm;
	if (idx >= p->dir_hwm)
		p->dir_hwm = idx + 1;
	err = recfs_bitmap_store(p);
	if (!err)
		err = recfs_entry_store(p, r);
	if (err) {
		for (uint64_t k = rs; k < rs + rn; k++)
			recfs_bit_clear(p->bits, k);
		recfs__space_changed(p, rs, rs + rn);
		p->dir_hwm = old_hwm;
		free(r);
		return err;
	}
	p->ent[idx] = r;
	recfs__hash_add(p, idx);
	p->nrec++;
	if (out)
		*out = *r;
	return 0;
}

/* ------------------------------------------------------------ commit path */
struct slots_write {
	const struct recfs_pack *p;
	uint8_t *buf;
	size_t blen;
	uint64_t off, boff, bend, first, n, len;
	const uint64_t *csums;
};

static int slots_write_one(struct recfs_dev *d, void *ctx)
{
	const struct slots_write *w = ctx;
	uint8_t *buf = w->buf;
	/* only the first and last blocks hold others' slots */
	int err = d->ops->pread(d, buf, RECFS_BLOCK, w->boff);
	if (!err && w->blen > RECFS_BLOCK)
		err = d->ops->pread(d, buf + w->blen - RECFS_BLOCK, RECFS_BLOCK, w->bend - RECFS_BLOCK);
	if (err)
		return err;
	for (uint64_t k = 0; k < w->n; k++) {
		struct recfs_disk_slot *s = (void *)(buf + (w->off - w->boff) + k * RECFS_SLOT_SIZE);
		uint64_t c = w->first + k;
		uint64_t clen = w->len - c * w->p->g.chunk_size;
		if (clen > w->p->g.chunk_size)
			clen = w->p->g.chunk_size;
		s->csum = htole64(w->csums[k]);
		s->len = htole32((uint32_t)clen);
		s->reserved = 0;
	}
	return d->ops->pwrite(d, buf, w->blen, w->boff);
}

/* Write slots for the recording's chunks [first, first+n) on every member. */
static int slots_store(struct recfs_pack *p, const struct recfs_rec *r, uint64_t first,
		       uint64_t n, const uint64_t *csums, uint64_t len)
{
	uint64_t lc0 = r->ext_start / p->g.chunk_size + first;
	uint64_t off = p->g.csum_off + lc0 * RECFS_SLOT_SIZE;
	uint64_t boff = off / RECFS_BLOCK * RECFS_BLOCK;
	uint64_t bend = RECFS_ALIGN_UP(off + n * RECFS_SLOT_SIZE, RECFS_BLOCK);
	struct slots_write w = {.p = p, .blen = (size_t)(bend - boff), .off = off, .boff = boff,
				.bend = bend, .first = first, .n = n, .len = len, .csums = csums};
	int ret;

	if (n == 0)
		return 0;
	w.buf = recfs_alloc(w.blen);
	if (!w.buf)
		return recfs_seterr(-ENOMEM, "out of memory");
	ret = recfs__members_write(p, "checksum table", slots_write_one, &w);
	recfs_free(w.buf);
	return ret;
}

static int commit_entry(struct recfs_pack *p, struct recfs_rec *r, const struct recfs_commit *c,
			struct recfs_rec *n)
{
	const uint64_t cs = p->g.chunk_size;
	int err;

	*n = *r;
	if (!c)
		return 0;
	if (c->len < r->committed_len || c->len > r->alloc_len)
		return recfs_seterr(-EINVAL, "'%s': commit length %llu outside %llu..%llu", r->name,
				    (unsigned long long)c->len,
				    (unsigned long long)r->committed_len,
				    (unsigned long long)r->alloc_len);
	uint64_t first = r->committed_len / cs;
	uint64_t end = (c->len + cs - 1) / cs;
	if (c->len > r->committed_len) {
		if (!c->csums)
			return recfs_seterr(-EINVAL, "'%s': commit without checksums", r->name);
		err = slots_store(p, r, first, end - first, c->csums, c->len);
		if (err)
			return err;
		n->tail_csum = c->len % cs ? c->csums[end - 1 - first] : 0;
	}
	n->committed_len = c->len;
	n->end_ns = c->end_ns ? c->end_ns : recfs_now_ns();
	if (c->loss)
		n->loss = *c->loss;
	return 0;
}

int recfs_rec_commit(struct recfs_pack *p, struct recfs_rec *r, const struct recfs_commit *c)
{
	struct recfs_rec n;
	int err;

	if ((err = need_rw(p)))
		return err;
	if (r->state != RECFS_STATE_RECORDING)
		return recfs_seterr(-EINVAL, "'%s' is not being recorded", r->name);
	/* slots go out unflushed beside the data; one flush makes both
	 * durable before the entry points at them */
	err = commit_entry(p, r, c, &n);
	if (!err)
		err = recfs_flush_all(p);
	if (err)
		return err;
	n.seq = p->seq[r->index] + 1;
	err = recfs_entry_store(p, &n);
	if (err)
		return err;
	*r = n;
	if (p->ent[r->index])
		*p->ent[r->index] = n;
	return 0;
}

int recfs_rec_commit_stage(struct recfs_pack *p, struct recfs_rec *r, struct recfs_stage *st,
			   const struct recfs_commit *c)
{
	int err;

	if ((err = need_rw(p)))
		return err;
	if (r->state != RECFS_STATE_RECORDING)
		return recfs_seterr(-EINVAL, "'%s' is not being recorded", r->name);
	if (st->staged) {
		/* its data and slots went out before the last flush */
		struct recfs_rec n = st->next;
		n.seq = p->seq[r->index] + 1;
		if (n.seq < UINT64_MAX - 1)
			err = entry_store_one(p, &n, false);
		else
			err = recfs_entry_store(p, &n); /* two slots: flushed */
		if (err)
			return err;
		*r = n;
		if (p->ent[r->index])
			*p->ent[r->index] = n;
		st->staged = false;
	}
	if (c && c->len > r->committed_len) {
		err = commit_entry(p, r, c, &st->next);
		if (err)
			return err;
		st->staged = true;
	}
	return 0;
}

int recfs_pack_flush(struct recfs_pack *p)
{
	int err = need_rw(p);
	return err ? err : recfs_flush_all(p);
}

int recfs_rec_seal(struct recfs_pack *p, struct recfs_rec *r, const struct recfs_commit *c)
{
	struct recfs_rec n;
	int err;

	if ((err = need_rw(p)))
		return err;
	if (r->state != RECFS_STATE_RECORDING)
		return recfs_seterr(-EINVAL, "'%s' is already sealed", r->name);
	err = commit_entry(p, r, c, &n);
	if (!err)
		err = recfs_flush_all(p);
	if (err)
		return err;
	/* return the unused whole rows: entry first, then the bitmap */
	uint64_t keep = RECFS_ALIGN_UP(n.committed_len, p->g.row_bytes);
	uint64_t r0 = (n.ext_start + keep) / p->g.row_bytes;
	uint64_t r1 = (n.ext_start + n.alloc_len) / p->g.row_bytes;
	n.alloc_len = keep;
	if (keep == 0)
		n.ext_start = 0;
	n.state = RECFS_STATE_SEALED;
	n.seq = p->seq[r->index] + 1;
	err = recfs_entry_store(p, &n);
	if (err)
		return err;
	*r = n;
	if (p->ent[r->index])
		*p->ent[r->index] = n;
	for (uint64_t k = r0; k < r1; k++)
		recfs_bit_clear(p->bits, k);
	recfs_bits_from_extents(p, p->bits);
	recfs__space_changed(p, r0, r1);
	if (r1 > r0)
		err = recfs_bitmap_store(p);
	return err;
}

int recfs_rec_delete(struct recfs_pack *p, uint32_t index, unsigned flags)
{
	struct recfs_rec *r, n;
	int err;

	if ((err = need_rw(p)))
		return err;
	if (index >= p->g.dir_capacity || !(r = p->ent[index]))
		return recfs_seterr(-ENOENT, "no recording with index %u", index);
	if (r->state == RECFS_STATE_RECORDING && !(flags & RECFS_DEL_FORCE))
		return recfs_seterr(-EBUSY,
				    "'%s' was never sealed (a crashed recording?): run fsck.recfs to recover it, or force",
				    r->name);
	recfs_entry_free_init(&n, index, p->seq[index] + 1);
	err = recfs_entry_store(p, &n);
	if (err)
		return recfs_seterr(err, "deleting '%s': %s", r->name, recfs_errmsg());
	uint64_t r0 = r->ext_start / p->g.row_bytes, r1 = r0 + r->alloc_len / p->g.row_bytes;
	recfs__hash_remove(p, r->name);
	p->ent[index] = NULL;
	p->nrec--;
	free(r);
	for (uint64_t k = r0; k < r1 && k < p->g.rows; k++)
		recfs_bit_clear(p->bits, k);
	recfs_bits_from_extents(p, p->bits); /* an overlapping extent keeps its rows */
	recfs__space_changed(p, r0, r1);
	return recfs_bitmap_store(p);
}

/* ------------------------------------------------------------------- reads */
/* Slots [first, first+n) from the first readable member at or after `member`. */
static int slots_read(struct recfs_pack *p, const struct recfs_rec *r, uint64_t first, uint64_t n,
		      struct recfs_slot *out, unsigned member)
{
	uint64_t nchunks = r->alloc_len / p->g.chunk_size;
	uint64_t off, boff, bend;
	uint8_t *buf;
	int err;

	if (first > nchunks || n > nchunks - first)
		return recfs_seterr(-ERANGE, "'%s': slots %llu+%llu outside the extent", r->name,
				    (unsigned long long)first, (unsigned long long)n);
	if (n == 0)
		return 0;
	off = p->g.csum_off + (r->ext_start / p->g.chunk_size + first) * RECFS_SLOT_SIZE;
	boff = off / RECFS_BLOCK * RECFS_BLOCK;
	bend = RECFS_ALIGN_UP(off + n * RECFS_SLOT_SIZE, RECFS_BLOCK);
	buf = recfs_alloc(bend - boff);
	if (!buf)
		return recfs_seterr(-ENOMEM, "out of memory");
	err = recfs_meta_read(p, member, buf, bend - boff, boff);
	if (!err)
		for (uint64_t k = 0; k < n; k++) {
			const struct recfs_disk_slot *s = (const void *)(buf + (off - boff) + k * RECFS_SLOT_SIZE);
			out[k].csum = le64toh(s->csum);
			out[k].len = le32toh(s->len);
		}
	recfs_free(buf);
	return err;
}

int recfs_rec_slots(struct recfs_pack *p, const struct recfs_rec *r, uint64_t first, uint64_t n,
		    struct recfs_slot *out)
{
	return slots_read(p, r, first, n, out, 0);
}

int recfs_rec_slots_from(struct recfs_pack *p, const struct recfs_rec *r, uint64_t first,
			 uint64_t n, struct recfs_slot *out, unsigned member)
{
	return slots_read(p, r, first, n, out, member);
}

int recfs_rec_expect(struct recfs_pack *p, const struct recfs_rec *r, uint64_t c,
		     const struct recfs_slot *slot, uint64_t *csum, uint32_t *len)
{
	uint64_t full = r->committed_len / p->g.chunk_size;

	if (c < full) {
		if (!slot || slot->len != p->g.chunk_size)
			return recfs_seterr(-EUCLEAN, "'%s': checksum slot of chunk %llu is damaged",
					    r->name, (unsigned long long)c);
		*csum = slot->csum;
		*len = p->g.chunk_size;
		return 0;
	}
	if (c == full && r->committed_len % p->g.chunk_size) {
		*csum = r->tail_csum;
		*len = (uint32_t)(r->committed_len % p->g.chunk_size);
		return 0;
	}
	return recfs_seterr(-ERANGE, "'%s': chunk %llu is past the committed end", r->name,
			    (unsigned long long)c);
}

int recfs_chunk_check(struct recfs_pack *p, const struct recfs_rec *r, uint64_t c,
		      const void *data, uint32_t len, const struct recfs_slot *hint)
{
	const uint64_t cs = p->g.chunk_size;
	const bool full = c < r->committed_len / cs;
	bool compared = false, hashed = false;
	uint64_t h = 0, want = 0;
	uint32_t wlen = 0;
	int err = 0;

	for (int k = hint && full ? -1 : 0; k < (int)p->g.members; k++) {
		struct recfs_slot s = {0};
		if (k >= 0 && full && (err = slots_read(p, r, c, 1, &s, (unsigned)k)))
			continue;
		if ((err = recfs_rec_expect(p, r, c, k < 0 ? hint : &s, &want, &wlen)))
			continue;
		compared = true;
		if (wlen == len) {
			if (!hashed)
				h = recfs_chunk_csum(r->uid, c, data, len);
			hashed = true;
			if (h == want)
				return 0;
		}
		if (!full)
			break; /* the tail's checksum is in the entry */
	}
	if (!compared)
		return err;
	return recfs_seterr(-EIO, "'%s': bytes %llu-%llu (chunk %llu): checksum mismatch", r->name,
			    (unsigned long long)(c * cs), (unsigned long long)(c * cs + len - 1),
			    (unsigned long long)c);
}

/* Read [off, off+len) of the recording's chunk c (both inside the
 * committed part of it) into dst, verifying the whole chunk if asked. */
static int read_chunk_part(struct recfs_pack *p, const struct recfs_rec *r, uint64_t c,
			   uint8_t *bounce, uint8_t *dst, size_t off, size_t len, bool verify)
{
	const uint64_t cs = p->g.chunk_size;
	uint64_t logical = r->ext_start + c * cs, moff;
	uint64_t clen = r->committed_len - c * cs;
	unsigned m;
	int err;

	if (clen > cs)
		clen = cs;
	recfs_map(&p->g, logical, &m, &moff);
	struct recfs_dev *d = p->m[m].dev;
	if (!d || p->m[m].failed)
		return recfs_seterr(-EIO, "'%s': bytes %llu-%llu are on missing member %u", r->name,
				    (unsigned long long)(c * cs),
				    (unsigned long long)(c * cs + clen - 1), m);
	size_t a0 = verify ? 0 : off / RECFS_BLOCK * RECFS_BLOCK;
	size_t a1 = RECFS_ALIGN_UP(verify ? clen : off + len, RECFS_BLOCK);
	err = d->ops->pread(d, bounce + a0, a1 - a0, moff + a0);
	if (err)
		return recfs_seterr(-EIO, "'%s': bytes %llu-%llu: read from member %u (%s) failed",
				    r->name, (unsigned long long)(c * cs + off),
				    (unsigned long long)(c * cs + off + len - 1), m, d->path);
	if (verify && (err = recfs_chunk_check(p, r, c, bounce, (uint32_t)clen, NULL)))
		return err;
	memcpy(dst, bounce + off, len);
	return 0;
}

ssize_t recfs_rec_pread(struct recfs_pack *p, const struct recfs_rec *r, void *buf, size_t len,
			uint64_t off, unsigned flags)
{
	const uint64_t cs = p->g.chunk_size;
	uint8_t *bounce, *dst = buf;
	size_t done = 0;

	if (off >= r->committed_len)
		return 0;
	if (len > r->committed_len - off)
		len = (size_t)(r->committed_len - off);
	/* every byte used is read first: zeroing a whole chunk per call (up
	 * to 64 MiB) cost more than the read */
	bounce = recfs_alloc_raw(cs);
	if (!bounce)
		return recfs_seterr(-ENOMEM, "out of memory");
	while (done < len) {
		uint64_t pos = off + done, c = pos / cs;
		size_t in = (size_t)(pos % cs), n = (size_t)(cs - in);
		if (n > len - done)
			n = len - done;
		int err = read_chunk_part(p, r, c, bounce, dst + done, in, n,
					  flags & RECFS_READ_VERIFY);
		if (err) {
			recfs_free(bounce);
			return done ? (ssize_t)done : err;
		}
		done += n;
	}
	recfs_free(bounce);
	return (ssize_t)done;
}

/* ---------------------------------------------------------------- appender */
struct recfs_appender {
	int err;             /* the first error: every later call returns it */
	struct recfs_pack *p;
	struct recfs_rec *r;
	uint8_t *chunk;      /* the chunk being filled */
	size_t fill;         /* bytes in it */
	uint64_t written;    /* bytes handed to us, from the recording's start */
	uint64_t *csums;     /* chunks [cbase/cs, ...) */
	size_t ncsums, cap;
	uint64_t cbase;      /* the length whose slots are written */
	bool pipe;           /* commits through recfs_rec_commit_stage */
	struct recfs_stage st;
};

void recfs_appender_pipeline(struct recfs_appender *a, bool on)
{
	a->pipe = on;
}

int recfs_appender_new(struct recfs_pack *p, struct recfs_rec *r, struct recfs_appender **out)
{
	struct recfs_appender *a;
	const uint64_t cs = p->g.chunk_size;

	if (r->state != RECFS_STATE_RECORDING)
		return recfs_seterr(-EINVAL, "'%s' is not being recorded", r->name);
	a = calloc(1, sizeof(*a));
	if (!a || !(a->chunk = recfs_alloc(cs))) {
		free(a);
		return recfs_seterr(-ENOMEM, "out of memory");
	}
	a->p = p;
	a->r = r;
	a->written = r->committed_len;
	a->cbase = r->committed_len;
	a->fill = (size_t)(r->committed_len % cs);
	if (a->fill) {
		ssize_t got = recfs_rec_pread(p, r, a->chunk, a->fill, r->committed_len - a->fill, 0);
		if (got != (ssize_t)a->fill) {
			recfs_appender_free(a);
			return got < 0 ? (int)got : -EIO;
		}
	}
	*out = a;
	return 0;
}

static int csum_put(struct recfs_appender *a, uint64_t c, uint64_t v)
{
	const uint64_t base = a->cbase / a->p->g.chunk_size;
	if (c < base)
		return recfs_seterr(-EINVAL, "appender: chunk %llu is already committed",
				    (unsigned long long)c);
	size_t k = (size_t)(c - base);

	if (k >= a->cap) {
		size_t nc = a->cap ? a->cap * 2 : 64;
		while (nc <= k)
			nc *= 2;
		uint64_t *n = realloc(a->csums, nc * sizeof(*n));
		if (!n)
			return recfs_seterr(-ENOMEM, "out of memory");
		a->csums = n;
		a->cap = nc;
	}
	a->csums[k] = v;
	if (k + 1 > a->ncsums)
		a->ncsums = k + 1;
	return 0;
}

/* write the current chunk (fill bytes, padded to a block) */
static int write_chunk(struct recfs_appender *a)
{
	struct recfs_pack *p = a->p;
	const uint64_t cs = p->g.chunk_size;
	uint64_t c = (a->written - a->fill) / cs, moff;
	unsigned m;
	size_t wlen = RECFS_ALIGN_UP(a->fill, RECFS_BLOCK);
	int err;

	memset(a->chunk + a->fill, 0, wlen - a->fill);
	recfs_map(&p->g, a->r->ext_start + c * cs, &m, &moff);
	struct recfs_dev *d = p->m[m].dev;
	if (!d || p->m[m].failed)
		return recfs_seterr(-EIO, "member %u (%s) has failed", m, d ? d->path : "missing");
	err = d->ops->pwrite(d, a->chunk, wlen, moff);
	if (err) {
		p->m[m].failed = true;
		recfs_seterr(err, "member %u (%s): data write failed: %s", m, d->path, strerror(-err));
		recfs_note_fail(p);
		return err;
	}
	return csum_put(a, c, recfs_chunk_csum(a->r->uid, c, a->chunk, a->fill));
}

int recfs_append(struct recfs_appender *a, const void *buf, size_t len)
{
	const uint64_t cs = a->p->g.chunk_size;
	const uint8_t *s = buf;

	if (a->err)
		return a->err;
	if (len > a->r->alloc_len - a->written)
		return recfs_seterr(-ENOSPC, "'%s': its extent is full (%llu bytes)", a->r->name,
				    (unsigned long long)a->r->alloc_len);
	while (len) {
		size_t n = (size_t)(cs - a->fill);
		if (n > len)
			n = len;
		memcpy(a->chunk + a->fill, s, n);
		a->fill += n;
		a->written += n;
		s += n;
		len -= n;
		if (a->fill == cs) {
			int err = write_chunk(a);
			if (err)
				return a->err = err;
			a->fill = 0;
		}
	}
	return 0;
}

int recfs_append_sync(struct recfs_appender *a)
{
	const uint64_t cs = a->p->g.chunk_size;
	struct recfs_commit c = {0};
	int err;

	if (a->err)
		return a->err;
	if (a->written == a->cbase && !a->st.staged)
		return 0;
	if (a->fill && a->written > a->cbase) {
		err = write_chunk(a);
		if (err)
			return a->err = err;
	}
	c.len = a->written;
	c.csums = a->csums;
	if (!a->pipe)
		err = recfs_rec_commit(a->p, a->r, &c);
	else if (!(err = recfs_rec_commit_stage(a->p, a->r, &a->st, a->written > a->cbase ? &c : NULL)))
		err = recfs_pack_flush(a->p);
	if (err)
		return a->err = err;
	a->cbase = a->written;
	/* keep only a partial last chunk's entry */
	a->ncsums = 0;
	if (a->fill)
		a->csums[0] = recfs_chunk_csum(a->r->uid, a->written / cs, a->chunk, a->fill);
	(void)cs;
	return 0;
}

/* pipelined, as the recorders seal: the staged entry goes out unflushed,
 * then the seal commits what was appended since the last sync (its slots
 * beside that entry; the seal's first flush makes all three durable) */
static int append_seal_pipe(struct recfs_appender *a)
{
	struct recfs_commit c = {0};
	int err = 0;

	if (a->err)
		return a->err;
	if (a->fill && a->written > a->cbase)
		err = write_chunk(a);
	if (!err && a->st.staged)
		err = recfs_rec_commit_stage(a->p, a->r, &a->st, NULL);
	if (err)
		return a->err = err;
	c.len = a->written;
	c.csums = a->csums;
	return recfs_rec_seal(a->p, a->r, a->written > a->r->committed_len ? &c : NULL);
}

int recfs_append_seal(struct recfs_appender *a)
{
	if (a->pipe)
		return append_seal_pipe(a);
	int err = recfs_append_sync(a);

	if (!err)
		err = recfs_rec_seal(a->p, a->r, NULL);
	return err;
}

void recfs_appender_free(struct recfs_appender *a)
{
	if (!a)
		return;
	recfs_free(a->chunk);
	free(a->csums);
	free(a);
}
