/* SPDX-License-Identifier: MIT */
#include "ck.h"

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

void ck_drop(struct ck *c, struct ck_rec *e)
{
	e->drop = true;
	if (ck_can_write(c))
		ck_entry_free(c, e->r.index, e->r.seq);
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
	    ck_prove(c, &e->r, e->r.committed_len / c->g.chunk_size, e->r.alloc_len, &len, &cks, &ncks,
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
	ck_read_slot(c, lc, v, ok);
	if (ck_read_chunk(c, r, k, data, NULL) == 0) {
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
				if (ck_problem(c, PR_EXT_OVERLAP_TRUNC, &pc)) {
					lose->r.alloc_len = s - lose->r.ext_start;
					if (lose->r.committed_len > lose->r.alloc_len) {
						lose->r.committed_len = lose->r.alloc_len;
						lose->r.tail_csum = 0;
					}
					if (lose->own > lose->r.alloc_len)
						lose->own = lose->r.alloc_len;
					ck_entry_next(c, &lose->r);
				}
			} else if (ck_problem(c, PR_EXT_OVERLAP_DROP, &pc)) {
				ck_drop(c, lose);
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
			if (ck_problem(c, PR_BMP_HOLE, &pc)) {
				for (uint64_t j = lo; j < hi; j++)
					recfs_bit_set(newbits, j);
				*dirty = true;
			}
		}
	}
	if (have && c->keep_leaks) {
		/* an entry of unknown extent was left as found: rows that
		 * seem leaked may be its, and stay allocated */
		ck_out(c, "rows that belong to no known recording stay allocated: an entry was left as found");
	} else if (have) {
		/* leaks: rows the bitmap has allocated that no recording has */
		for (k = 0; row_run(have, true, want, false, &k, c->g.rows, &lo, &hi);) {
			memset(&pc, 0, sizeof(pc));
			pc.a = lo;
			pc.b = hi - 1;
			if (ck_problem(c, PR_BMP_LEAK, &pc)) {
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
			if (ck_problem(c, PR_ENT_DUPUID, &pc)) {
				e->r.uid = fresh_uid(c);
				e->own_known = false;
				ck_entry_next(c, &e->r);
			}
		}
	}
}

int ck_pass4(struct ck *c)
{
	const uint64_t rb = c->g.row_bytes, cs = c->g.chunk_size;
	struct recfs_pctx pc;
	uint32_t *ord = NULL, n = 0;
	uint8_t *copy = NULL;
	bool dirty = false;
	int ret = 0;

	if (c->o->verbose)
		ck_out(c, "Pass 4: extents and allocation (%u recordings)", c->nrec);
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
			if (ck_problem(c, PR_EXT_CUT, &pc)) {
				r->alloc_len = need;
				ck_entry_next(c, r);
			} else {
				e->drop = true;
				c->keep_leaks = true;
			}
			continue;
		}
		if (ck_problem(c, PR_EXT_RANGE, &pc)) {
			ck_drop(c, e);
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
		ret = ck_prove(c, &e->r, 0, e->r.alloc_len, &len, &cks, &ncks, &lost);
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
		if (ck_problem(c, PR_ENT_COMMITTED, &pc)) {
			ck_entry_next(c, &e->r);
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
		if (ck_problem(c, PR_ENT_DUPNAME, &pc)) {
			snprintf(e->r.name, sizeof(e->r.name), "%s", nn);
			ck_entry_next(c, &e->r);
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
	if (dirty && ck_can_write(c)) {
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
				ck_dev_write(c, m->dev, copy, c->g.bitmap_copy_size,
					  c->g.bitmap_off + h.copy * c->g.bitmap_copy_size);
			ck_flush_all(c);
		}
	}
out_free:
	recfs_free(copy);
	free(ord);
	return ret;
}
