/* SPDX-License-Identifier: MIT */
/* The open pack: replicated metadata I/O, the bitmap, the directory in
 * memory (assembly is in assemble.c, mkfs in mkfs.c). */
#include <pthread.h>
#include <stdio.h>
#include <uuid/uuid.h>

#include "internal.h"

/* ------------------------------------------------------------ metadata I/O */
int recfs_meta_read(struct recfs_pack *p, unsigned member, void *buf, size_t len, uint64_t off)
{
	int err = -ENXIO;

	for (unsigned k = 0; k < p->g.members; k++) {
		unsigned i = (member + k) % p->g.members;
		if (!p->m[i].dev || p->m[i].failed)
			continue;
		err = p->m[i].dev->ops->pread(p->m[i].dev, buf, len, off);
		if (err == 0)
			return 0;
	}
	if (err == -ENXIO)
		recfs_seterr(err, "no member of the pack is readable");
	return err;
}

void recfs_note_fail(struct recfs_pack *p)
{
	if (!p->first_fail[0])
		snprintf(p->first_fail, sizeof(p->first_fail), "%s", recfs_errmsg());
}

int recfs_none_writable(struct recfs_pack *p)
{
	if (p->first_fail[0])
		return recfs_seterr(-ENXIO, "no member of the pack is writable (first: %s)", p->first_fail);
	return recfs_seterr(-ENXIO, "no member of the pack is writable");
}

int recfs__members_write(struct recfs_pack *p, const char *what,
			 int (*io)(struct recfs_dev *d, void *ctx), void *ctx)
{
	int ret = 0, ok = 0;

	for (unsigned i = 0; i < p->g.members; i++) {
		struct recfs_dev *d = p->m[i].dev;
		if (!d || p->m[i].failed)
			continue;
		int err = io(d, ctx);
		if (err) {
			p->m[i].failed = true;
			if (!ret)
				ret = recfs_seterr(err, "member %u (%s): %s write failed: %s", i,
						   d->path, what, strerror(-err));
			recfs_note_fail(p);
			continue;
		}
		ok++;
	}
	if (!ok && !ret)
		ret = recfs_none_writable(p);
	return ret;
}

struct meta_write {
	const void *buf;
	size_t len;
	uint64_t off;
};

static int meta_write_one(struct recfs_dev *d, void *ctx)
{
	const struct meta_write *w = ctx;
	return d->ops->pwrite(d, w->buf, w->len, w->off);
}

int recfs_meta_write_all(struct recfs_pack *p, const void *buf, size_t len, uint64_t off)
{
	struct meta_write w = {buf, len, off};
	return recfs__members_write(p, "metadata", meta_write_one, &w);
}

struct flush_job {
	struct recfs_dev *d;
	int err;
	char msg[256];
};

static void *flush_one(void *arg)
{
	struct flush_job *j = arg;
	j->err = j->d->ops->flush(j->d);
	if (j->err) /* the message is this thread's */
		snprintf(j->msg, sizeof(j->msg), "%s", recfs_errmsg());
	return NULL;
}

/* Every member at once: a flush costs what the slowest member's costs, not
 * their sum.  Members on file descriptors (disks, files) get a thread each
 * but the first; other backends (the fault-injecting one: a deterministic
 * order of writes and flushes) are flushed one after another. */
int recfs_flush_all(struct recfs_pack *p)
{
	struct flush_job job[RECFS_MAX_MEMBERS];
	pthread_t th[RECFS_MAX_MEMBERS];
	bool started[RECFS_MAX_MEMBERS] = {false};
	unsigned n = 0;
	bool par = true;
	int ret = 0;

	for (unsigned i = 0; i < p->g.members; i++) {
		struct recfs_dev *d = p->m[i].dev;
		if (!d || p->m[i].failed)
			continue;
		if (d->fd < 0)
			par = false;
		n++;
	}
	for (unsigned i = 0; i < p->g.members; i++) {
		struct recfs_dev *d = p->m[i].dev;
		job[i].d = d;
		job[i].err = 0;
		if (!d || p->m[i].failed)
			continue;
		/* the last live member is flushed in this thread */
		if (par && --n > 0 && pthread_create(&th[i], NULL, flush_one, &job[i]) == 0)
			started[i] = true;
		else
			flush_one(&job[i]);
	}
	for (unsigned i = 0; i < p->g.members; i++) {
		if (started[i])
			pthread_join(th[i], NULL);
		if (!job[i].d || p->m[i].failed || !job[i].err)
			continue;
		p->m[i].failed = true;
		if (!ret)
			ret = recfs_seterr(job[i].err, "member %u (%s): flush failed: %s", i, job[i].d->path,
					   strerror(-job[i].err));
		recfs_note_fail(p);
	}
	return ret;
}

/* ------------------------------------------------------------------ bitmap */
size_t recfs__bits_bytes(const struct recfs_pack *p)
{
	return (size_t)((p->g.rows + 7) / 8);
}

int recfs_bitmap_store(struct recfs_pack *p)
{
	struct recfs_bitmap_hdr h = {0};
	uint8_t *buf;
	int err;

	buf = recfs_alloc(p->g.bitmap_copy_size);
	if (!buf)
		return recfs_seterr(-ENOMEM, "out of memory");
	memcpy(buf + RECFS_BLOCK, p->bits, recfs__bits_bytes(p));
	h.nbits = p->g.rows;
	h.dir_hwm = p->dir_hwm;
	/* generations stop at 2^64-2: then 3 into copy 1, 2 into copy 0 */
	uint64_t seqs[2] = {p->bmp_seq + 1, 0};
	if (p->bmp_seq + 1 >= UINT64_MAX - 1) {
		seqs[0] = 3;
		seqs[1] = 2;
	}
	err = 0;
	for (int k = 0; k < 2 && seqs[k] && !err; k++) {
		h.seq = seqs[k];
		h.copy = (uint32_t)(h.seq & 1);
		recfs_bitmap_encode(buf, &h, p->pack_seed);
		err = recfs_meta_write_all(p, buf, p->g.bitmap_copy_size,
					   p->g.bitmap_off + h.copy * p->g.bitmap_copy_size);
		if (!err)
			err = recfs_flush_all(p);
	}
	recfs_free(buf);
	if (!err)
		p->bmp_seq = seqs[0];
	return err;
}

void recfs_bits_from_extents(const struct recfs_pack *p, uint8_t *bits)
{
	for (uint32_t i = 0; i < p->dir_hwm; i++) {
		/* set-aside entries keep their rows too, as far as they are sane */
		const struct recfs_rec *r = p->ent[i] ? p->ent[i] : p->bad ? p->bad[i] : NULL;
		if (!r || r->ext_start >= p->g.capacity)
			continue;
		uint64_t len = r->alloc_len < p->g.capacity - r->ext_start
				       ? r->alloc_len
				       : p->g.capacity - r->ext_start;
		uint64_t r0 = r->ext_start / p->g.row_bytes;
		uint64_t r1 = (r->ext_start + len + p->g.row_bytes - 1) / p->g.row_bytes;
		for (uint64_t k = r0; k < r1 && k < p->g.rows; k++)
			recfs_bit_set(bits, k);
	}
}

/* Newest valid bitmap copy across the members into p->bits/bmp_seq/dir_hwm:
 * headers of every copy first (cheap), then whole copies newest first.
 * No valid copy anywhere: bits from the extents alone, whole directory. */
static int bitmap_load(struct recfs_pack *p)
{
	struct cand {
		uint64_t seq;
		unsigned m, c;
	} cand[2 * RECFS_MAX_MEMBERS];
	unsigned nc = 0;
	uint8_t *buf;

	buf = recfs_alloc(p->g.bitmap_copy_size);
	if (!buf)
		return recfs_seterr(-ENOMEM, "out of memory");
	for (unsigned i = 0; i < p->g.members; i++) {
		struct recfs_dev *d = p->m[i].dev;
		if (!d || p->m[i].failed)
			continue;
		for (unsigned c = 0; c < 2; c++) {
			const struct recfs_disk_bitmap *dh = (const void *)buf;
			if (d->ops->pread(d, buf, RECFS_BLOCK, p->g.bitmap_off + c * p->g.bitmap_copy_size))
				continue;
			if (le32toh(dh->magic) != RECFS_BMP_MAGIC)
				continue;
			cand[nc].seq = le64toh(dh->seq);
			cand[nc].m = i;
			cand[nc].c = c;
			nc++;
		}
	}
	p->bmp_seq = 0;
	while (nc) {
		unsigned b = 0;
		for (unsigned k = 1; k < nc; k++)
			if (cand[k].seq > cand[b].seq)
				b = k;
		struct recfs_dev *d = p->m[cand[b].m].dev;
		struct recfs_bitmap_hdr h;
		uint64_t off = p->g.bitmap_off + cand[b].c * p->g.bitmap_copy_size;
		if (d->ops->pread(d, buf, p->g.bitmap_copy_size, off) == 0 &&
		    recfs_bitmap_decode(buf, p->g.bitmap_copy_size, p->pack_seed, &h) == 0 &&
		    h.nbits == p->g.rows && h.copy == cand[b].c && (h.seq & 1) == h.copy &&
		    h.dir_hwm <= p->g.dir_capacity) {
			memcpy(p->bits, buf + RECFS_BLOCK, recfs__bits_bytes(p));
			p->bmp_seq = h.seq;
			p->dir_hwm = h.dir_hwm;
			break;
		}
		cand[b] = cand[--nc];
	}
	if (p->bmp_seq == 0) {
		/* no valid bitmap: trust the directory, read all of it */
		memset(p->bits, 0, recfs__bits_bytes(p));
		p->dir_hwm = p->g.dir_capacity;
	}
	recfs_free(buf);
	return 0;
}

/* --------------------------------------------------------------- directory */
static uint32_t name_hash(const char *s)
{
	uint32_t h = 2166136261u;

	while (*s)
		h = (h ^ (uint8_t)*s++) * 16777619u;
	return h;
}

static int64_t hash_find(const struct recfs_pack *p, const char *name, uint32_t *cell);

static int hash_insert(struct recfs_pack *p, uint32_t index)
{
	uint32_t h = name_hash(p->ent[index]->name) & (p->hash_size - 1);
	int64_t tomb = -1;

	if (hash_find(p, p->ent[index]->name, NULL) >= 0)
		return -EEXIST;
	for (uint32_t n = 0; n < p->hash_size; n++) {
		uint32_t v = p->hash[h];
		if (v == UINT32_MAX && tomb < 0)
			tomb = h;
		if (v == 0) {
			p->hash[tomb >= 0 ? (uint32_t)tomb : h] = index + 1;
			return 0;
		}
		h = (h + 1) & (p->hash_size - 1);
	}
	if (tomb < 0)
		return -ENOSPC;
	p->hash[tomb] = index + 1;
	return 0;
}

/* index of name or -1.  Deleted hash cells hold UINT32_MAX (tombstones). */
static int64_t hash_find(const struct recfs_pack *p, const char *name, uint32_t *cell)
{
	uint32_t h = name_hash(name) & (p->hash_size - 1);

	for (uint32_t n = 0; n < p->hash_size; n++) {
		uint32_t v = p->hash[h];
		if (v == 0)
			return -1;
		if (v != UINT32_MAX && !strcmp(p->ent[v - 1]->name, name)) {
			if (cell)
				*cell = h;
			return v - 1;
		}
		h = (h + 1) & (p->hash_size - 1);
	}
	return -1;
}


int64_t recfs__hash_find(const struct recfs_pack *p, const char *name)
{
	return hash_find(p, name, NULL);
}


void recfs__hash_remove(struct recfs_pack *p, const char *name)
{
	uint32_t cell;

	if (hash_find(p, name, &cell) >= 0)
		p->hash[cell] = UINT32_MAX;
}


int recfs__hash_add(struct recfs_pack *p, uint32_t index)
{
	return hash_insert(p, index);
}

/* Is the entry's extent inside the data area and row aligned? */

int recfs__extent_ok(const struct recfs_pack *p, const struct recfs_rec *r)
{
	if (r->state == RECFS_STATE_FREE)
		return 1;
	if (r->ext_start % p->g.row_bytes || r->alloc_len % p->g.row_bytes)
		return 0;
	if (r->ext_start > p->g.capacity || r->alloc_len > p->g.capacity - r->ext_start)
		return 0;
	if (r->committed_len > r->alloc_len)
		return 0;
	if (r->state == RECFS_STATE_RECORDING && r->alloc_len == 0)
		return 0;
	return 1;
}

/* Newest valid slot of entry i from the 2 KiB pair in buf. 1 found, 0 none. */
static int pair_decode(const struct recfs_pack *p, const uint8_t *pair, uint32_t i,
		       struct recfs_rec *out)
{
	struct recfs_rec a, b;
	int va = recfs_entry_decode(pair, p->pack_seed, i, &a) == 0 && (a.seq & 1) == 0;
	int vb = recfs_entry_decode(pair + RECFS_ENTRY_SIZE, p->pack_seed, i, &b) == 0 &&
		 (b.seq & 1) == 1;

	if (va && (!vb || a.seq > b.seq))
		*out = a;
	else if (vb)
		*out = b;
	else
		return 0;
	return 1;
}

/* Read entry i's newest copy over all members (for the rare slow path and
 * refresh).  1 found, 0 none valid, <0 I/O. */

int recfs__entry_read(struct recfs_pack *p, uint32_t i, struct recfs_rec *out)
{
	uint64_t off = p->g.dir_off + (uint64_t)i * 2 * RECFS_ENTRY_SIZE;
	uint64_t boff = off / RECFS_BLOCK * RECFS_BLOCK;
	uint8_t *blk = recfs_alloc(RECFS_BLOCK);
	int found = 0, err = -ENXIO;
	struct recfs_rec r;

	if (!blk)
		return recfs_seterr(-ENOMEM, "out of memory");
	for (unsigned m = 0; m < p->g.members; m++) {
		struct recfs_dev *d = p->m[m].dev;
		if (!d || p->m[m].failed)
			continue;
		err = d->ops->pread(d, blk, RECFS_BLOCK, boff);
		if (err)
			continue;
		if (pair_decode(p, blk + (off - boff), i, &r) && (!found || r.seq > out->seq)) {
			*out = r;
			found = 1;
		}
	}
	recfs_free(blk);
	if (found)
		return 1;
	return err == 0 || err == -ENXIO ? 0 : err;
}

void recfs__dir_clear(struct recfs_pack *p)
{
	for (uint32_t i = 0; i < p->g.dir_capacity; i++) {
		if (p->ent) {
			free(p->ent[i]);
			p->ent[i] = NULL;
		}
		if (p->bad) {
			free(p->bad[i]);
			p->bad[i] = NULL;
		}
	}
	if (p->hash)
		memset(p->hash, 0, p->hash_size * sizeof(*p->hash));
	p->nrec = 0;
}

/* Keep entry r at index i: live, or (unusable extent, duplicate name) set
 * aside in p->bad so its index and rows are never handed out again. */
static int dir_keep(struct recfs_pack *p, uint32_t i, const struct recfs_rec *r)
{
	struct recfs_rec *c = malloc(sizeof(*c));

	if (!c)
		return recfs_seterr(-ENOMEM, "out of memory");
	*c = *r;
	if (recfs__extent_ok(p, c)) {
		p->ent[i] = c;
		if (hash_insert(p, i) == 0) {
			p->nrec++;
			return 0;
		}
		p->ent[i] = NULL; /* duplicate name: keep the first, fsck reports */
	}
	p->bad[i] = c;
	p->bad_entries++;
	return 0;
}

/* Every entry below dir_hwm, newest valid slot over all members: a member
 * that missed updates (a failed write, a cut) never hides a newer entry.
 * Replicas in agreement cost a read and a peek at each slot's seq. */
static int dir_load(struct recfs_pack *p)
{
	const uint32_t per = (4u << 20) / (2 * RECFS_ENTRY_SIZE); /* entries per read */
	uint8_t *buf;
	struct recfs_rec *best;
	bool *have;
	int ret = 0;

	buf = recfs_alloc((size_t)per * 2 * RECFS_ENTRY_SIZE);
	best = malloc(per * sizeof(*best));
	have = malloc(per * sizeof(*have));
	if (!buf || !best || !have) {
		ret = recfs_seterr(-ENOMEM, "out of memory");
		goto out_free;
	}
	recfs__dir_clear(p);
	for (uint32_t first = 0; first < p->dir_hwm; first += per) {
		uint32_t n = p->dir_hwm - first < per ? p->dir_hwm - first : per;
		size_t len = RECFS_ALIGN_UP((size_t)n * 2 * RECFS_ENTRY_SIZE, RECFS_BLOCK);
		uint64_t off = p->g.dir_off + (uint64_t)first * 2 * RECFS_ENTRY_SIZE;
		unsigned readable = 0;
		int rerr = -ENXIO;

		memset(have, 0, n * sizeof(*have));
		for (unsigned m = 0; m < p->g.members; m++) {
			struct recfs_dev *d = p->m[m].dev;
			if (!d || p->m[m].failed)
				continue;
			if ((rerr = d->ops->pread(d, buf, len, off)))
				continue;
			readable++;
			for (uint32_t k = 0; k < n; k++) {
				for (unsigned sl = 0; sl < 2; sl++) {
					const uint8_t *slot = buf + ((size_t)k * 2 + sl) * RECFS_ENTRY_SIZE;
					const struct recfs_disk_entry *de = (const void *)slot;
					uint64_t seq = le64toh(de->seq);
					struct recfs_rec r;
					if (le32toh(de->magic) != RECFS_ENT_MAGIC || (seq & 1) != sl ||
					    (have[k] && seq <= best[k].seq))
						continue;
					if (recfs_entry_decode(slot, p->pack_seed, first + k, &r))
						continue;
					best[k] = r;
					have[k] = true;
				}
			}
		}
		if (!readable) {
			ret = recfs_seterr(rerr, "directory entries %u-%u unreadable on every member: %s",
					   first, first + n - 1, recfs_errmsg());
			goto out_free;
		}
		for (uint32_t k = 0; k < n; k++) {
			uint32_t i = first + k;
			if (!have[k])
				continue;
			if (best[k].seq > p->seq[i])
				p->seq[i] = best[k].seq;
			if (best[k].state == RECFS_STATE_FREE)
				continue;
			if ((ret = dir_keep(p, i, &best[k])))
				goto out_free;
		}
	}
out_free:
	recfs_free(buf);
	free(best);
	free(have);
	return ret;
}

static int cmp_uid(const void *x, const void *y, void *arg)
{
	const struct recfs_pack *p = arg;
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
	uint64_t ua = p->ent[a]->uid, ub = p->ent[b]->uid;
	if (ua != ub)
		return ua < ub ? -1 : 1;
	return a < b ? -1 : 1;
}

/* A uid is unique (FORMAT.md 5): it keys what readers cache and seeds the
 * chunk checksums.  Live entries that share one are all set aside: which
 * one is the recording is fsck's to decide (readers name both). */
static int dir_dup_uids(struct recfs_pack *p)
{
	uint32_t n = 0, *ord;

	if (p->nrec < 2)
		return 0;
	ord = malloc((size_t)p->nrec * sizeof(*ord));
	if (!ord)
		return recfs_seterr(-ENOMEM, "out of memory");
	for (uint32_t i = 0; i < p->dir_hwm && n < p->nrec; i++)
		if (p->ent[i])
			ord[n++] = i;
	qsort_r(ord, n, sizeof(*ord), cmp_uid, p);
	for (uint32_t x = 0, y; x < n; x = y) {
		for (y = x + 1; y < n && p->ent[ord[y]]->uid == p->ent[ord[x]]->uid; y++)
			;
		if (y - x < 2)
			continue;
		for (uint32_t z = x; z < y; z++) {
			uint32_t i = ord[z];
			recfs__hash_remove(p, p->ent[i]->name);
			p->bad[i] = p->ent[i];
			p->ent[i] = NULL;
			p->nrec--;
			p->bad_entries++;
			p->dup_uids++;
		}
	}
	free(ord);
	return 0;
}

/* Set-aside entries i and j (j < i) with one uid: the first j for i. */
static int64_t dup_uid_partner(const struct recfs_pack *p, uint32_t i)
{
	for (uint32_t j = 0; j < p->dir_hwm; j++)
		if (j != i && p->bad[j] && p->bad[j]->uid == p->bad[i]->uid)
			return j;
	return -1;
}

int recfs__dup_uid_err(const struct recfs_pack *p, const char *name)
{
	for (uint32_t i = 0; p->dup_uids && i < p->dir_hwm; i++) {
		int64_t j;
		if (!p->bad[i] || strcmp(p->bad[i]->name, name) || (j = dup_uid_partner(p, i)) < 0)
			continue;
		const struct recfs_rec *a = (uint32_t)j < i ? p->bad[j] : p->bad[i],
				       *b = (uint32_t)j < i ? p->bad[i] : p->bad[j];
		return recfs_seterr(-EUCLEAN,
				    "recordings '%s' (entry %u) and '%s' (entry %u) have the same uid "
				    "%016llx: both are refused until fsck.recfs repairs the directory",
				    a->name, a->index, b->name, b->index, (unsigned long long)a->uid);
	}
	return 0;
}

int recfs_pack_dup_uid(struct recfs_pack *p, uint32_t *index, struct recfs_rec *first,
		       struct recfs_rec *other)
{
	for (uint32_t i = *index; p->dup_uids && i < p->dir_hwm && i < p->g.dir_capacity; i++) {
		int64_t j;
		if (!p->bad[i] || (j = dup_uid_partner(p, i)) < 0 || (uint32_t)j > i)
			continue;
		*first = *p->bad[j];
		*other = *p->bad[i];
		*index = i;
		return 0;
	}
	return -ENOENT;
}

int recfs__meta_load(struct recfs_pack *p)
{
	int err;

	p->bad_entries = 0;
	p->dup_uids = 0;
	err = bitmap_load(p);
	if (!err)
		err = dir_load(p);
	if (!err)
		err = dir_dup_uids(p);
	if (!err)
		recfs_bits_from_extents(p, p->bits);
	return err;
}

/* Load into fresh tables and swap them in only when the whole load worked:
 * a failed reload leaves the pack as it was.  Only the directory and bitmap
 * tables change; members and geometry are never written, so readers of
 * those need no lock against a reload. */
int recfs_pack_reload(struct recfs_pack *p)
{
	struct recfs_pack n = *p;
	int err;

	n.bits = calloc(1, recfs__bits_bytes(p) + 8);
	n.ent = calloc(p->g.dir_capacity, sizeof(*n.ent));
	n.bad = calloc(p->g.dir_capacity, sizeof(*n.bad));
	n.seq = calloc(p->g.dir_capacity, sizeof(*n.seq));
	n.hash = calloc(p->hash_size, sizeof(*n.hash));
	err = n.bits && n.ent && n.bad && n.seq && n.hash ? recfs__meta_load(&n)
							  : recfs_seterr(-ENOMEM, "out of memory");
	struct recfs_pack *gone = err ? &n : p;
	recfs__dir_clear(gone);
	free(gone->bits);
	free(gone->ent);
	free(gone->bad);
	free(gone->seq);
	free(gone->hash);
	if (err)
		return err;
	p->bits = n.bits;
	p->bmp_seq = n.bmp_seq;
	p->dir_hwm = n.dir_hwm;
	p->ent = n.ent;
	p->bad = n.bad;
	p->seq = n.seq;
	p->nrec = n.nrec;
	p->hash = n.hash;
	p->bad_entries = n.bad_entries;
	p->dup_uids = n.dup_uids;
	return recfs__space_rebuild(p); /* allocated at open: cannot fail */
}
