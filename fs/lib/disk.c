/* SPDX-License-Identifier: MIT */
/* The I/O boundary: host-order structs to and from disk bytes, checksums,
 * geometry and the stripe map. */
#include <endian.h>
#include <xxhash.h>

#include "internal.h"

/* Data checksums are most of the CPU a recorder, a verifying mount and
 * fsck --verify spend.  Debian builds libxxhash for baseline x86-64
 * (SSE2); its _dispatch entry points choose AVX2 or AVX-512 at run time,
 * with the same values: 1.6x to 4.5x as fast on the development machine
 * (DESIGN.md, per-chunk checksums). */
#if (defined(__x86_64__) || defined(__i386__)) && __has_include(<xxh_x86dispatch.h>)
#include <xxh_x86dispatch.h>
#define xxh3_seeded XXH3_64bits_withSeed_dispatch
#else
#define xxh3_seeded XXH3_64bits_withSeed
#endif

uint64_t recfs_pack_seed(const uint8_t uuid[16])
{
	return XXH3_64bits(uuid, 16);
}

uint64_t recfs_chunk_seed(uint64_t uid, uint64_t chunk)
{
	uint64_t le = htole64(chunk);

	return XXH3_64bits_withSeed(&le, sizeof(le), uid);
}

uint64_t recfs_chunk_csum(uint64_t uid, uint64_t chunk, const void *data, size_t len)
{
	return xxh3_seeded(data, len, recfs_chunk_seed(uid, chunk));
}

/* ---------------------------------------------------------------- geometry */
static bool is_pow2(uint64_t x)
{
	return x && !(x & (x - 1));
}

int recfs_geom_compute(struct recfs_geom *g, uint32_t members, uint64_t member_size,
		       uint32_t chunk_size, uint32_t dir_capacity)
{
	uint64_t rows_max, align, need;

	memset(g, 0, sizeof(*g));
	if (members < 1 || members > RECFS_MAX_MEMBERS)
		return recfs_seterr(-EINVAL, "member count %u out of range 1..%u", members,
				    RECFS_MAX_MEMBERS);
	if (!is_pow2(chunk_size) || chunk_size < RECFS_CHUNK_MIN || chunk_size > RECFS_CHUNK_MAX)
		return recfs_seterr(-EINVAL,
				    "chunk size %u is not a power of two from 64 KiB to 64 MiB",
				    chunk_size);
	if (dir_capacity < 1 || dir_capacity > RECFS_DIR_MAX)
		return recfs_seterr(-EINVAL, "directory capacity %u out of range 1..%u",
				    dir_capacity, RECFS_DIR_MAX);
	if (member_size > (1ull << 62))
		return recfs_seterr(-EFBIG, "member size %llu too large",
				    (unsigned long long)member_size);
	g->members = members;
	g->chunk_size = chunk_size;
	g->chunk_shift = (uint32_t)__builtin_ctz(chunk_size);
	g->dir_capacity = dir_capacity;
	g->member_size = member_size / RECFS_BLOCK * RECFS_BLOCK;
	rows_max = g->member_size / chunk_size;
	g->bitmap_off = RECFS_BLOCK;
	g->bitmap_copy_size = RECFS_BLOCK + RECFS_ALIGN_UP((rows_max + 7) / 8, RECFS_BLOCK);
	g->dir_off = g->bitmap_off + 2 * g->bitmap_copy_size;
	g->csum_off = g->dir_off +
		      RECFS_ALIGN_UP((uint64_t)dir_capacity * 2 * RECFS_ENTRY_SIZE, RECFS_BLOCK);
	g->csum_size = RECFS_ALIGN_UP((uint64_t)members * rows_max * RECFS_SLOT_SIZE, RECFS_BLOCK);
	align = chunk_size > (1u << 20) ? chunk_size : (1u << 20);
	g->data_off = RECFS_ALIGN_UP(g->csum_off + g->csum_size, align);
	need = g->data_off + chunk_size + RECFS_BLOCK;
	if (g->member_size < need)
		return recfs_seterr(-ENOSPC,
				    "members of %llu bytes are too small: this geometry needs at least %llu bytes per member",
				    (unsigned long long)g->member_size, (unsigned long long)need);
	g->backup_off = g->member_size - RECFS_BLOCK;
	g->rows = (g->backup_off - g->data_off) / chunk_size;
	g->row_bytes = (uint64_t)chunk_size * members;
	g->capacity = g->rows * g->row_bytes;
	return 0;
}

void recfs_map(const struct recfs_geom *g, uint64_t logical, unsigned *member, uint64_t *member_off)
{
	uint64_t chunk = logical >> g->chunk_shift;

	*member = (unsigned)(chunk % g->members);
	*member_off = g->data_off + ((chunk / g->members) << g->chunk_shift) +
		      (logical & (g->chunk_size - 1));
}

/* -------------------------------------------------------------- superblock */
int recfs_super_decode(const void *blk, struct recfs_super *s)
{
	const struct recfs_disk_super *d = blk;

	if (memcmp(d->magic, RECFS_SB_MAGIC_BYTES, 8) != 0)
		return recfs_seterr(-EUCLEAN, "no recfs superblock (bad magic)");
	if (le64toh(d->checksum) != XXH3_64bits(d, offsetof(struct recfs_disk_super, checksum)))
		return recfs_seterr(-EUCLEAN, "superblock checksum mismatch");
	memset(s, 0, sizeof(*s));
	s->version = le32toh(d->version);
	if (s->version != RECFS_DISK_VERSION)
		return recfs_seterr(-EPROTONOSUPPORT, "format version %u not supported (this is %u)",
				    s->version, RECFS_DISK_VERSION);
	if (le32toh(d->sb_size) != RECFS_BLOCK)
		return recfs_seterr(-EUCLEAN, "superblock size %u is not %u", le32toh(d->sb_size),
				    RECFS_BLOCK);
	s->compat = le64toh(d->compat);
	s->incompat = le64toh(d->incompat);
	if (s->incompat & ~RECFS_FEATURE_INCOMPAT_SUPP)
		return recfs_seterr(-EPROTONOSUPPORT, "unknown incompatible features 0x%llx",
				    (unsigned long long)(s->incompat & ~RECFS_FEATURE_INCOMPAT_SUPP));
	memcpy(s->pack_uuid, d->pack_uuid, 16);
	memcpy(s->member_uuid, d->member_uuid, 16);
	s->member_index = le32toh(d->member_index);
	s->member_count = le32toh(d->member_count);
	s->chunk_size = le32toh(d->chunk_size);
	s->dir_capacity = le32toh(d->dir_capacity);
	s->member_size = le64toh(d->member_size);
	s->rows = le64toh(d->rows);
	s->created_ns = le64toh(d->created_ns);
	s->bitmap_off = le64toh(d->bitmap_off);
	s->bitmap_copy_size = le64toh(d->bitmap_copy_size);
	s->dir_off = le64toh(d->dir_off);
	s->csum_off = le64toh(d->csum_off);
	s->csum_size = le64toh(d->csum_size);
	s->data_off = le64toh(d->data_off);
	s->backup_off = le64toh(d->backup_off);
	if (!memchr(d->label, 0, sizeof(d->label)))
		return recfs_seterr(-EUCLEAN, "superblock label is not NUL-terminated");
	memcpy(s->label, d->label, sizeof(d->label));
	memcpy(s->member_uuids, d->member_uuids, sizeof(s->member_uuids));
	if (s->member_count < 1 || s->member_count > RECFS_MAX_MEMBERS ||
	    s->member_index >= s->member_count)
		return recfs_seterr(-EUCLEAN, "member index %u of %u out of range", s->member_index,
				    s->member_count);
	if (memcmp(s->member_uuid, s->member_uuids[s->member_index], 16) != 0)
		return recfs_seterr(-EUCLEAN, "member UUID does not match the member list");
	return recfs_super_check_geom(s);
}

void recfs_super_encode(const struct recfs_super *s, void *blk)
{
	struct recfs_disk_super *d = blk;

	memset(d, 0, sizeof(*d));
	memcpy(d->magic, RECFS_SB_MAGIC_BYTES, 8);
	d->version = htole32(RECFS_DISK_VERSION);
	d->sb_size = htole32(RECFS_BLOCK);
	d->compat = htole64(s->compat);
	d->incompat = htole64(s->incompat);
	memcpy(d->pack_uuid, s->pack_uuid, 16);
	memcpy(d->member_uuid, s->member_uuid, 16);
	d->member_index = htole32(s->member_index);
	d->member_count = htole32(s->member_count);
	d->chunk_size = htole32(s->chunk_size);
	d->dir_capacity = htole32(s->dir_capacity);
	d->member_size = htole64(s->member_size);
	d->rows = htole64(s->rows);
	d->created_ns = htole64(s->created_ns);
	d->bitmap_off = htole64(s->bitmap_off);
	d->bitmap_copy_size = htole64(s->bitmap_copy_size);
	d->dir_off = htole64(s->dir_off);
	d->csum_off = htole64(s->csum_off);
	d->csum_size = htole64(s->csum_size);
	d->data_off = htole64(s->data_off);
	d->backup_off = htole64(s->backup_off);
	memcpy(d->label, s->label, strnlen(s->label, RECFS_LABEL_MAX));
	for (uint32_t i = 0; i < s->member_count && i < RECFS_MAX_MEMBERS; i++)
		memcpy(d->member_uuids[i], s->member_uuids[i], 16);
	d->checksum = htole64(XXH3_64bits(d, offsetof(struct recfs_disk_super, checksum)));
}

const char *recfs_super_diff(const struct recfs_super *a, const struct recfs_super *b)
{
#define F(x) if (a->x != b->x) return #x
	F(version);
	F(compat);
	F(incompat);
	if (memcmp(a->pack_uuid, b->pack_uuid, 16))
		return "pack_uuid";
	F(member_count);
	F(chunk_size);
	F(dir_capacity);
	F(member_size);
	F(rows);
	F(created_ns);
	F(bitmap_off);
	F(bitmap_copy_size);
	F(dir_off);
	F(csum_off);
	F(csum_size);
	F(data_off);
	F(backup_off);
#undef F
	if (strcmp(a->label, b->label))
		return "label";
	/* all 64 slots: the unused ones too */
	if (memcmp(a->member_uuids, b->member_uuids, sizeof(a->member_uuids)))
		return "member_uuids";
	return NULL;
}

int recfs_super_check_geom(const struct recfs_super *s)
{
	struct recfs_geom g;
	int err;

	err = recfs_geom_compute(&g, s->member_count, s->member_size, s->chunk_size,
				 s->dir_capacity);
	if (err)
		return recfs_seterr(-EUCLEAN, "superblock geometry invalid: %s", recfs_errmsg());
	if (g.member_size != s->member_size || g.rows != s->rows || g.bitmap_off != s->bitmap_off ||
	    g.bitmap_copy_size != s->bitmap_copy_size || g.dir_off != s->dir_off ||
	    g.csum_off != s->csum_off || g.csum_size != s->csum_size ||
	    g.data_off != s->data_off || g.backup_off != s->backup_off)
		return recfs_seterr(-EUCLEAN, "superblock layout fields are inconsistent");
	return 0;
}

void recfs_super_set_geom(struct recfs_super *s, const struct recfs_geom *g)
{
	s->member_count = g->members;
	s->chunk_size = g->chunk_size;
	s->dir_capacity = g->dir_capacity;
	s->member_size = g->member_size;
	s->rows = g->rows;
	s->bitmap_off = g->bitmap_off;
	s->bitmap_copy_size = g->bitmap_copy_size;
	s->dir_off = g->dir_off;
	s->csum_off = g->csum_off;
	s->csum_size = g->csum_size;
	s->data_off = g->data_off;
	s->backup_off = g->backup_off;
}

void recfs_super_to_geom(const struct recfs_super *s, struct recfs_geom *g)
{
	/* s passed recfs_super_check_geom */
	(void)recfs_geom_compute(g, s->member_count, s->member_size, s->chunk_size,
				 s->dir_capacity);
}

/* ------------------------------------------------------------------ bitmap */
int recfs_bitmap_decode(const void *copy, size_t copy_size, uint64_t pack_seed,
			struct recfs_bitmap_hdr *h)
{
	const struct recfs_disk_bitmap *d = copy;
	uint64_t nbytes;

	if (le32toh(d->magic) != RECFS_BMP_MAGIC)
		return recfs_seterr(-EUCLEAN, "bitmap: bad magic");
	if (le64toh(d->checksum) !=
	    XXH3_64bits_withSeed(d, offsetof(struct recfs_disk_bitmap, checksum), pack_seed))
		return recfs_seterr(-EUCLEAN, "bitmap: header checksum mismatch");
	h->copy = le32toh(d->copy);
	h->seq = le64toh(d->seq);
	h->nbits = le64toh(d->nbits);
	h->bits_csum = le64toh(d->bits_csum);
	h->dir_hwm = le32toh(d->dir_hwm);
	nbytes = (h->nbits + 7) / 8;
	if (h->copy > 1 || nbytes > copy_size - RECFS_BLOCK || h->seq == 0 || h->seq == UINT64_MAX)
		return recfs_seterr(-EUCLEAN, "bitmap: header fields out of range");
	if (h->bits_csum != XXH3_64bits_withSeed((const uint8_t *)copy + RECFS_BLOCK, nbytes, pack_seed))
		return recfs_seterr(-EUCLEAN, "bitmap: bits checksum mismatch");
	return 0;
}

void recfs_bitmap_encode(void *copy, const struct recfs_bitmap_hdr *h, uint64_t pack_seed)
{
	struct recfs_disk_bitmap *d = copy;
	uint64_t nbytes = (h->nbits + 7) / 8;

	memset(d, 0, sizeof(*d));
	d->magic = htole32(RECFS_BMP_MAGIC);
	d->copy = htole32(h->copy);
	d->seq = htole64(h->seq);
	d->nbits = htole64(h->nbits);
	d->bits_csum = htole64(XXH3_64bits_withSeed((const uint8_t *)copy + RECFS_BLOCK, nbytes,
						    pack_seed));
	d->dir_hwm = htole32(h->dir_hwm);
	d->checksum = htole64(
		XXH3_64bits_withSeed(d, offsetof(struct recfs_disk_bitmap, checksum), pack_seed));
}

/* ------------------------------------------------------------------- entry */
int recfs_name_check(const char *name)
{
	size_t l = strlen(name);

	if (l == 0)
		return recfs_seterr(-EINVAL, "recording name is empty");
	if (l > RECFS_NAME_MAX)
		return recfs_seterr(-ENAMETOOLONG, "recording name is %zu bytes (at most %u)", l,
				    RECFS_NAME_MAX);
	if (strchr(name, '/'))
		return recfs_seterr(-EINVAL, "recording name '%s' contains '/'", name);
	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return recfs_seterr(-EINVAL, "recording name '%s' is reserved", name);
	return 0;
}

int recfs_entry_decode(const void *slot, uint64_t pack_seed, uint32_t index, struct recfs_rec *r)
{
	const struct recfs_disk_entry *d = slot;
	uint16_t nl;

	if (le32toh(d->magic) != RECFS_ENT_MAGIC)
		return recfs_seterr(-EUCLEAN, "entry %u: bad magic", index);
	if (le64toh(d->checksum) !=
	    XXH3_64bits_withSeed(d, offsetof(struct recfs_disk_entry, checksum), pack_seed))
		return recfs_seterr(-EUCLEAN, "entry %u: checksum mismatch", index);
	if (le32toh(d->index) != index)
		return recfs_seterr(-EUCLEAN, "entry %u: records index %u", index,
				    le32toh(d->index));
	memset(r, 0, sizeof(*r));
	r->index = index;
	r->seq = le64toh(d->seq);
	r->state = d->state;
	nl = le16toh(d->name_len);
	if (r->state > RECFS_STATE_SEALED)
		return recfs_seterr(-EUCLEAN, "entry %u: unknown state %u", index, r->state);
	if (r->seq == 0 || r->seq == UINT64_MAX)
		return recfs_seterr(-EUCLEAN, "entry %u: sequence %llu out of range", index,
				    (unsigned long long)r->seq);
	if (r->state != RECFS_STATE_FREE) {
		if (nl < 1 || nl > RECFS_NAME_MAX || memchr(d->name, 0, nl))
			return recfs_seterr(-EUCLEAN, "entry %u: bad name length %u", index, nl);
		memcpy(r->name, d->name, nl);
		r->name[nl] = 0;
		if (recfs_name_check(r->name))
			return recfs_seterr(-EUCLEAN, "entry %u: invalid name", index);
	}
	r->input.format = d->format;
	r->uid = le64toh(d->uid);
	r->ext_start = le64toh(d->ext_start);
	r->alloc_len = le64toh(d->alloc_len);
	r->committed_len = le64toh(d->committed_len);
	r->tail_csum = le64toh(d->tail_csum);
	r->start_ns = le64toh(d->start_ns);
	r->end_ns = le64toh(d->end_ns);
	r->input.frame_size = le32toh(d->frame_size);
	memcpy(r->input.source, d->source, RECFS_SOURCE_MAX);
	r->input.source[RECFS_SOURCE_MAX] = 0;
	r->loss.packets = le64toh(d->packets);
	r->loss.wrong_size = le64toh(d->wrong_size);
	r->loss.dropped = le64toh(d->dropped);
	r->loss.frames_lost = le64toh(d->frames_lost);
	r->loss.out_of_order = le64toh(d->out_of_order);
	r->loss.invalid = le64toh(d->invalid);
	r->loss.gap_count = le32toh(d->gap_count);
	r->loss.gap_flags = le32toh(d->gap_flags);
	if (r->loss.gap_count > RECFS_GAPS_MAX)
		return recfs_seterr(-EUCLEAN, "entry %u: gap count %u", index, r->loss.gap_count);
	for (uint32_t i = 0; i < r->loss.gap_count; i++) {
		r->loss.gaps[i].offset = le64toh(d->gaps[i].offset);
		r->loss.gaps[i].frames = le32toh(d->gaps[i].frames);
		r->loss.gaps[i].thread = le16toh(d->gaps[i].thread);
	}
	if (r->committed_len > r->alloc_len)
		return recfs_seterr(-EUCLEAN, "entry %u: committed %llu > allocated %llu", index,
				    (unsigned long long)r->committed_len,
				    (unsigned long long)r->alloc_len);
	return 0;
}

void recfs_entry_encode(const struct recfs_rec *r, uint64_t pack_seed, void *slot)
{
	struct recfs_disk_entry *d = slot;
	size_t nl = strnlen(r->name, RECFS_NAME_MAX);

	memset(d, 0, sizeof(*d));
	d->magic = htole32(RECFS_ENT_MAGIC);
	d->index = htole32(r->index);
	d->seq = htole64(r->seq);
	d->state = r->state;
	if (r->state != RECFS_STATE_FREE) {
		d->name_len = htole16((uint16_t)nl);
		memcpy(d->name, r->name, nl);
		d->format = r->input.format;
		d->uid = htole64(r->uid);
		d->ext_start = htole64(r->ext_start);
		d->alloc_len = htole64(r->alloc_len);
		d->committed_len = htole64(r->committed_len);
		d->tail_csum = htole64(r->tail_csum);
		d->start_ns = htole64(r->start_ns);
		d->end_ns = htole64(r->end_ns);
		d->frame_size = htole32(r->input.frame_size);
		memcpy(d->source, r->input.source, strnlen(r->input.source, RECFS_SOURCE_MAX));
		d->packets = htole64(r->loss.packets);
		d->wrong_size = htole64(r->loss.wrong_size);
		d->dropped = htole64(r->loss.dropped);
		d->frames_lost = htole64(r->loss.frames_lost);
		d->out_of_order = htole64(r->loss.out_of_order);
		d->invalid = htole64(r->loss.invalid);
		uint32_t n = r->loss.gap_count > RECFS_GAPS_MAX ? RECFS_GAPS_MAX : r->loss.gap_count;
		d->gap_count = htole32(n);
		d->gap_flags = htole32(r->loss.gap_flags);
		for (uint32_t i = 0; i < n; i++) {
			d->gaps[i].offset = htole64(r->loss.gaps[i].offset);
			d->gaps[i].frames = htole32(r->loss.gaps[i].frames);
			d->gaps[i].thread = htole16(r->loss.gaps[i].thread);
		}
	}
	d->checksum = htole64(
		XXH3_64bits_withSeed(d, offsetof(struct recfs_disk_entry, checksum), pack_seed));
}

void recfs_entry_free_init(struct recfs_rec *r, uint32_t index, uint64_t seq)
{
	memset(r, 0, sizeof(*r));
	r->index = index;
	r->seq = seq;
	r->state = RECFS_STATE_FREE;
}

void recfs_loss_add_gap(struct recfs_loss *l, uint64_t offset, uint32_t frames, uint16_t thread)
{
	struct recfs_gap g[RECFS_GAPS_MAX + 1];
	uint32_t n = l->gap_count < RECFS_GAPS_MAX ? l->gap_count : RECFS_GAPS_MAX;

	memcpy(g, l->gaps, n * sizeof(g[0]));
	g[n].offset = offset;
	g[n].frames = frames;
	g[n].thread = thread;
	n++;
	if (n > RECFS_GAPS_MAX) {
		/* merge the two neighbours closest together (the new gap takes
		 * part); the merged gap keeps the first offset, the counts add */
		uint32_t best = 0;
		uint64_t bestd = UINT64_MAX;
		for (uint32_t i = 0; i + 1 < n; i++) {
			uint64_t a = g[i].offset, b = g[i + 1].offset;
			uint64_t dd = b > a ? b - a : a - b;
			if (dd < bestd) {
				bestd = dd;
				best = i;
			}
		}
		uint64_t sum = (uint64_t)g[best].frames + g[best + 1].frames;
		g[best].frames = sum > UINT32_MAX ? UINT32_MAX : (uint32_t)sum;
		if (g[best].thread != g[best + 1].thread)
			g[best].thread = UINT16_MAX;
		if (g[best + 1].offset < g[best].offset)
			g[best].offset = g[best + 1].offset;
		memmove(&g[best + 1], &g[best + 2], (n - best - 2) * sizeof(g[0]));
		n--;
		l->gap_flags |= RECFS_GAPS_COALESCED;
	}
	memcpy(l->gaps, g, n * sizeof(g[0]));
	l->gap_count = n;
}
