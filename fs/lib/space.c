/* SPDX-License-Identifier: MIT */
/*
 * Free space, kept as it changes rather than walked when asked.  The rows
 * are cut into blocks of RECFS_SPACE_BLOCK rows; each block keeps its free
 * rows, the free runs at its start and end, and its longest free run.  A
 * change of bits [r0, r1) recomputes the blocks it touches (64 rows a step
 * where a word is all free or all used), then the whole-pack figures from
 * the block summaries: the total and the largest free run are read without
 * touching the bitmap.  On 2 x 15 TiB (15.7 M rows of 1 MiB chunks) that is
 * 3,840 block summaries instead of 15.7 M bits.
 */
#include <endian.h>
#include <string.h>

#include "internal.h"

/* runs of free rows fed in row order */
struct run_acc {
	uint64_t free, head, tail, best, best_at, cur, cur_at;
	bool used_seen;
	/* best fit: the smallest run of at least need rows, the first of equals */
	uint64_t need, fit, fit_at;
};

static void acc_free(struct run_acc *a, uint64_t at, uint64_t n)
{
	if (a->cur == 0)
		a->cur_at = at;
	a->cur += n;
	a->free += n;
}

static void acc_end(struct run_acc *a)
{
	if (a->cur == 0)
		return;
	if (a->cur > a->best) {
		a->best = a->cur;
		a->best_at = a->cur_at;
	}
	if (a->need && a->cur >= a->need && (a->fit == 0 || a->cur < a->fit)) {
		a->fit = a->cur;
		a->fit_at = a->cur_at;
	}
	a->cur = 0;
}

static void acc_used(struct run_acc *a)
{
	if (!a->used_seen)
		a->head = a->cur;
	a->used_seen = true;
	acc_end(a);
}

/* rows [r0, r1), r0 a multiple of 64, r1 <= rows */
static void walk(const struct recfs_pack *p, uint64_t r0, uint64_t r1, struct run_acc *a)
{
	for (uint64_t r = r0; r < r1; r += 64) {
		uint64_t w;
		unsigned n = r1 - r < 64 ? (unsigned)(r1 - r) : 64;
		memcpy(&w, p->bits + r / 8, 8); /* the bitmap has 8 bytes of slack */
		w = le64toh(w);
		if (n < 64)
			w |= ~0ull << n; /* past the last row: used */
		if (w == 0) {
			acc_free(a, r, 64);
		} else if (w == ~0ull) {
			acc_used(a);
		} else {
			for (unsigned k = 0; k < n; k++) {
				if ((w >> k) & 1)
					acc_used(a);
				else
					acc_free(a, r + k, 1);
			}
		}
	}
}

static uint64_t blk_rows(const struct recfs_pack *p, uint64_t b)
{
	uint64_t r0 = b * RECFS_SPACE_BLOCK;
	return p->g.rows - r0 < RECFS_SPACE_BLOCK ? p->g.rows - r0 : RECFS_SPACE_BLOCK;
}

static void blk_compute(struct recfs_pack *p, uint64_t b)
{
	struct run_acc a = {0};
	uint64_t r0 = b * RECFS_SPACE_BLOCK;
	walk(p, r0, r0 + blk_rows(p, b), &a);
	uint64_t tail = a.cur;
	if (!a.used_seen)
		a.head = a.cur;
	acc_end(&a);
	struct recfs_space_blk *s = &p->space[b];
	s->free = (uint32_t)a.free;
	s->head = (uint32_t)a.head;
	s->tail = (uint32_t)tail;
	s->best = (uint32_t)a.best;
	s->best_at = (uint32_t)(a.best_at - r0);
}

/* the whole pack's figures from the blocks: the first of the longest runs */
static void combine(struct recfs_pack *p)
{
	uint64_t fr = 0, run = 0, run_at = 0, lr = 0, ls = 0;

	for (uint64_t b = 0; b < p->nspace; b++) {
		const struct recfs_space_blk *s = &p->space[b];
		uint64_t b0 = b * RECFS_SPACE_BLOCK, n = blk_rows(p, b);
		fr += s->free;
		if (s->free == n) {
			if (run == 0)
				run_at = b0;
			run += n;
			continue;
		}
		if (run + s->head > lr) {
			lr = run + s->head;
			ls = run ? run_at : b0;
		}
		if (s->best > lr) {
			lr = s->best;
			ls = b0 + s->best_at;
		}
		run = s->tail;
		run_at = b0 + n - s->tail;
	}
	if (run > lr) {
		lr = run;
		ls = run_at;
	}
	p->free_rows = fr;
	p->largest_rows = lr;
	p->largest_start = ls;
}

int recfs__space_rebuild(struct recfs_pack *p)
{
	if (!p->space) {
		p->nspace = (p->g.rows + RECFS_SPACE_BLOCK - 1) / RECFS_SPACE_BLOCK;
		p->space = calloc(p->nspace ? p->nspace : 1, sizeof(*p->space));
		if (!p->space)
			return recfs_seterr(-ENOMEM, "out of memory");
	}
	for (uint64_t b = 0; b < p->nspace; b++)
		blk_compute(p, b);
	combine(p);
	return 0;
}

void recfs__space_changed(struct recfs_pack *p, uint64_t r0, uint64_t r1)
{
	if (r1 > p->g.rows)
		r1 = p->g.rows;
	if (r0 >= r1)
		return;
	for (uint64_t b = r0 / RECFS_SPACE_BLOCK; b <= (r1 - 1) / RECFS_SPACE_BLOCK; b++)
		blk_compute(p, b);
	combine(p);
}

void recfs__space(const struct recfs_pack *p, uint64_t *free_rows, uint64_t *largest_start,
		  uint64_t *largest_rows)
{
	*free_rows = p->free_rows;
	*largest_start = p->largest_start;
	*largest_rows = p->largest_rows;
}

int recfs__space_fit(const struct recfs_pack *p, uint64_t need, uint64_t *start)
{
	struct run_acc a = {.need = need};

	if (need > p->largest_rows)
		return -ENOSPC;
	for (uint64_t b = 0; b < p->nspace; b++) {
		const struct recfs_space_blk *s = &p->space[b];
		uint64_t b0 = b * RECFS_SPACE_BLOCK, n = blk_rows(p, b);
		if (s->free == n)
			acc_free(&a, b0, n);
		else if (s->free == 0)
			acc_used(&a);
		else
			walk(p, b0, b0 + n, &a);
	}
	acc_end(&a);
	if (a.fit == 0)
		return -ENOSPC;
	*start = a.fit_at;
	return 0;
}
