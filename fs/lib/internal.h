/* SPDX-License-Identifier: MIT */
/* librecfs internals: shared by the library's files and by fsck (check.c). */
#ifndef RECFS_INTERNAL_H
#define RECFS_INTERNAL_H

#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "recfs/format.h"
#include "recfs/recfs.h"

#ifndef EUCLEAN
#define EUCLEAN 117
#endif

#define RECFS_ALIGN_UP(x, a) ((((x) + (a) - 1) / (a)) * (a))

/* Host-order superblock. */
struct recfs_super {
	uint32_t version;
	uint64_t compat, incompat;
	uint8_t pack_uuid[16];
	uint8_t member_uuid[16];
	uint32_t member_index, member_count, chunk_size, dir_capacity;
	uint64_t member_size, rows, created_ns;
	uint64_t bitmap_off, bitmap_copy_size, dir_off, csum_off, csum_size, data_off, backup_off;
	char label[RECFS_LABEL_MAX + 1];
	uint8_t member_uuids[RECFS_MAX_MEMBERS][16];
};

/* Decoders check magic, checksum and (entries) the index and return
 * -EUCLEAN with a reason in recfs_errmsg() (no device name: callers add it).
 * recfs_super_decode also refuses unknown incompat features (-EPROTONOSUPPORT)
 * and an unknown version. */
int recfs_super_decode(const void *blk, struct recfs_super *s);
void recfs_super_encode(const struct recfs_super *s, void *blk);
/* Fields consistent with each other and with recfs_geom_compute. */
int recfs_super_check_geom(const struct recfs_super *s);
/* The first field (by name) in which two members' superblocks disagree where
 * FORMAT.md 3 says they must agree (all but member_index and member_uuid),
 * or NULL. */
const char *recfs_super_diff(const struct recfs_super *a, const struct recfs_super *b);
void recfs_super_to_geom(const struct recfs_super *s, struct recfs_geom *g);
/* The layout fields of s from g (the inverse). */
void recfs_super_set_geom(struct recfs_super *s, const struct recfs_geom *g);

struct recfs_bitmap_hdr {
	uint32_t copy;
	uint64_t seq, nbits, bits_csum;
	uint32_t dir_hwm;
};
/* Decodes a whole bitmap copy (header + bits, bitmap_copy_size bytes);
 * checks both checksums. */
int recfs_bitmap_decode(const void *copy, size_t copy_size, uint64_t pack_seed,
			struct recfs_bitmap_hdr *h);
/* Encodes header and bits checksum in place (bits already at copy+4096). */
void recfs_bitmap_encode(void *copy, const struct recfs_bitmap_hdr *h, uint64_t pack_seed);

int recfs_entry_decode(const void *slot, uint64_t pack_seed, uint32_t index, struct recfs_rec *r);
void recfs_entry_encode(const struct recfs_rec *r, uint64_t pack_seed, void *slot);
/* A FREE entry with this seq (what delete writes). */
void recfs_entry_free_init(struct recfs_rec *r, uint32_t index, uint64_t seq);

uint64_t recfs_pack_seed(const uint8_t uuid[16]);

/* Bits */
static inline int recfs_bit_test(const uint8_t *b, uint64_t i) { return (b[i >> 3] >> (i & 7)) & 1; }
static inline void recfs_bit_set(uint8_t *b, uint64_t i) { b[i >> 3] |= (uint8_t)(1u << (i & 7)); }
static inline void recfs_bit_clear(uint8_t *b, uint64_t i) { b[i >> 3] &= (uint8_t)~(1u << (i & 7)); }

/* Aligned buffers for O_DIRECT (RECFS_BLOCK aligned, zeroed; _raw: not
 * zeroed, for buffers every used byte of which is read into first). */
void *recfs_alloc(size_t len);
void *recfs_alloc_raw(size_t len);
void recfs_free(void *p);

/* The pack in memory. */
struct recfs_member {
	struct recfs_dev *dev;  /* NULL: missing */
	struct recfs_super sb;  /* as read from this member */
	bool failed;            /* an I/O error since open */
};

struct recfs_pack {
	unsigned flags;
	struct recfs_geom g;
	struct recfs_super sb;        /* the pack's (member_index meaningless) */
	uint64_t pack_seed;
	struct recfs_member m[RECFS_MAX_MEMBERS];
	unsigned present;

	/* allocation: stored bitmap OR'ed with the rows of every extent */
	uint8_t *bits;
	/* free space, kept by recfs__space_changed (space.c) */
	struct recfs_space_blk {
		uint32_t free, head, tail, best, best_at;
	} *space;
	uint64_t nspace;
	uint64_t free_rows, largest_start, largest_rows;
	uint64_t bmp_seq;
	uint32_t dir_hwm;

	/* directory: ent[i] non-NULL for a live entry; seq[i] newest seen */
	struct recfs_rec **ent;
	struct recfs_rec **bad; /* set aside at load: bad extent, duplicate name or uid */
	uint64_t *seq;
	uint32_t nrec;
	/* name hash: open addressing over indexes+1, 0 empty */
	uint32_t *hash;
	uint32_t hash_size;
	uint32_t bad_entries;   /* skipped at load: bad extent, duplicate name or uid */
	uint32_t dup_uids;      /* of those, for a duplicate uid */

	/* devices a degraded open left out: damaged or unreadable */
	struct recfs_left {
		char *path;
		char *why;
		int member;     /* index from its superblock, -1 unknown */
	} left[RECFS_MAX_MEMBERS];
	unsigned nleft;

	/* the first member failure since open, for "no member is writable" */
	char first_fail[256];
};
/* after a member was marked failed and recfs_errmsg() says why: keep the
 * first such message */
void recfs_note_fail(struct recfs_pack *p);
/* -ENXIO: every member has failed, naming the first failure */
int recfs_none_writable(struct recfs_pack *p);

/* shared between pack.c and rec.c */
int64_t recfs__hash_find(const struct recfs_pack *p, const char *name);
void recfs__hash_remove(struct recfs_pack *p, const char *name);
int recfs__hash_add(struct recfs_pack *p, uint32_t index);
/* pack.c, for assembly and mkfs: the directory and bitmap in memory */
void recfs__dir_clear(struct recfs_pack *p);
size_t recfs__bits_bytes(const struct recfs_pack *p);
int recfs__meta_load(struct recfs_pack *p);
/* name is a set-aside entry sharing its uid with another: -EUCLEAN naming
 * both; else 0 */
int recfs__dup_uid_err(const struct recfs_pack *p, const char *name);
int recfs__extent_ok(const struct recfs_pack *p, const struct recfs_rec *r);
int recfs__entry_read(struct recfs_pack *p, uint32_t i, struct recfs_rec *out);
/* space.c: free runs of rows, the largest (the first of equals) and the
 * total, as of the last change; O(1) */
void recfs__space(const struct recfs_pack *p, uint64_t *free_rows, uint64_t *largest_start,
		  uint64_t *largest_rows);
#define RECFS_SPACE_BLOCK 4096 /* rows per summary block (a multiple of 64) */
/* every block from the bits (open, reload) */
int recfs__space_rebuild(struct recfs_pack *p);
/* after bits [r0, r1) changed */
void recfs__space_changed(struct recfs_pack *p, uint64_t r0, uint64_t r1);
/* the smallest free run of at least need rows (the first of equals):
 * its start, or -ENOSPC */
int recfs__space_fit(const struct recfs_pack *p, uint64_t need, uint64_t *start);

/* Metadata I/O over the replicas.  read: the first member whose read
 * succeeds (skipping missing/failed); write: every present member; a
 * member's failure marks it failed and is reported unless none succeed. */
int recfs_meta_read(struct recfs_pack *p, unsigned member, void *buf, size_t len, uint64_t off);
int recfs_meta_write_all(struct recfs_pack *p, const void *buf, size_t len, uint64_t off);
/* The fan-out under every metadata write: io(member, ctx) on each present,
 * unfailed member in member order (the write order the power-loss tests
 * cut at).  A member whose io fails is marked failed; the first failure
 * ("member N (path): <what> write failed: ...") is returned, or -ENXIO
 * when no member took the write. */
int recfs__members_write(struct recfs_pack *p, const char *what,
			 int (*io)(struct recfs_dev *d, void *ctx), void *ctx);
int recfs_flush_all(struct recfs_pack *p);
/* Write (and flush) the in-memory bitmap as the next copy. */
int recfs_bitmap_store(struct recfs_pack *p);
/* Write entry r (r->seq already incremented) into slot seq&1 on every member. */
int recfs_entry_store(struct recfs_pack *p, struct recfs_rec *r);
/* Recompute the bits from the live extents (ignoring the stored bitmap). */
void recfs_bits_from_extents(const struct recfs_pack *p, uint8_t *bits);

#endif
