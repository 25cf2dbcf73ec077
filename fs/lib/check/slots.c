/* SPDX-License-Identifier: MIT */
#include "ck.h"

/* --------------------------------------------- slots, data, proving a prefix */
/* Slot of logical chunk lc on every present member into v[member]; absent
 * or unreadable members get len 0 and ok[member] false. */
void ck_read_slot(struct ck *c, uint64_t lc, struct recfs_slot *v, bool *ok)
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
		int err = ck_dev_read(m->dev, blk, RECFS_BLOCK, b);
		if (err) {
			if (err != -ENXIO) /* past a short member's end */
				ck_io_error(c, m->dev, "checksum table read", err);
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
int ck_read_chunk(struct ck *c, const struct recfs_rec *r, uint64_t k, uint8_t *buf,
		      unsigned *member)
{
	uint64_t moff;
	unsigned mi;

	recfs_map(&c->g, r->ext_start + k * c->g.chunk_size, &mi, &moff);
	if (member)
		*member = mi;
	if (c->at[mi] < 0)
		return recfs_seterr(-ENXIO, "member %u is missing", mi);
	return ck_dev_read(c->a[c->at[mi]].dev, buf, c->g.chunk_size, moff);
}

/*
 * The longest prefix of r provable from chunk `from` on: while a slot has
 * len > 0 and the data matches it, extend; stop after a slot with len <
 * chunk_size.  Starts from *len (bytes already trusted); *csums gets the
 * checksums of chunks from..end-1; *lost the bytes of this recording that
 * were durable after the first chunk that does not match (unreachable).
 */
int ck_prove(struct ck *c, const struct recfs_rec *r, uint64_t from, uint64_t limit,
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
		ck_read_slot(c, lc, v, ok);
		for (unsigned i = 0; i < c->sb.member_count; i++)
			if (ok[i] && v[i].len > 0 && v[i].len <= cs && v[i].len > claimed)
				claimed = v[i].len;
		if (!claimed)
			break;
		if (ck_read_chunk(c, r, k, data, NULL))
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
				ck_read_slot(c, r->ext_start / cs + j, v, ok);
				if (ck_read_chunk(c, r, j, data, NULL))
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
