/* FORMAT.md's reader rules that an independent reader had to guess (issue
 * 15, items 6 to 11), each pinned to what the library does. */
#include "helpers.h"
#include "internal.h"

#include <endian.h>
#include <xxhash.h>

#define MSZ (24ull << 20)
#define CH (64u << 10)

/* Write r as generation r->seq of its entry on every member; edit, if
 * given, changes the encoded slot (the checksum is made good after). */
static void put_entry(struct recfs_fault *f, unsigned members, const struct recfs_geom *g,
		      uint64_t seed, const struct recfs_rec *r,
		      void (*edit)(struct recfs_disk_entry *))
{
	uint8_t slot[RECFS_ENTRY_SIZE];
	struct recfs_disk_entry *d = (void *)slot;

	recfs_entry_encode(r, seed, slot);
	if (edit) {
		edit(d);
		d->checksum = htole64(XXH3_64bits_withSeed(slot, offsetof(struct recfs_disk_entry, checksum), seed));
	}
	for (unsigned m = 0; m < members; m++)
		memcpy(recfs_fault_image(f, m) + g->dir_off +
			       ((uint64_t)r->index * 2 + (r->seq & 1)) * RECFS_ENTRY_SIZE,
		       slot, sizeof(slot));
}

static void lookup(struct recfs_pack *p, const char *name, struct recfs_rec *r)
{
	assert_int_equal(recfs_rec_lookup(p, name, r), 0);
}

/* Item 6: the set-aside rules, in their order: extent (misaligned start or
 * length too), then names (the lowest index keeps one; an entry set aside
 * for its extent claims none), and overlapping live extents all shown, each
 * verified under its own uid. */
static void test_set_aside_order(void **state)
{
	struct recfs_fault *f = tpack_new(1, MSZ, CH, 8);
	struct recfs_pack *p;
	struct recfs_pack_info pi;
	struct recfs_rec r[5], x;
	const char *names[] = {"a", "b", "c", "d", "e"};
	uint8_t buf[CH];
	(void)state;

	assert_int_equal(tpack_open(f, 1, NULL, RECFS_O_RDWR, &p), 0);
	for (unsigned i = 0; i < 5; i++)
		twrite_rec(p, names[i], i + 1, CH, CH, &r[i]);
	const struct recfs_geom g = *recfs_pack_geom(p);
	const uint64_t seed = p->pack_seed;
	recfs_pack_close(p);
	/* 0: "n" with a misaligned start; 1: "n"; 2: "n"; 3: alloc_len off
	 * the row grid; 4: "o", sharing entry 1's extent under its own uid */
	x = r[0], x.seq++, x.ext_start += 4096, snprintf(x.name, sizeof(x.name), "n");
	put_entry(f, 1, &g, seed, &x, NULL);
	x = r[1], x.seq++, snprintf(x.name, sizeof(x.name), "n");
	put_entry(f, 1, &g, seed, &x, NULL);
	x = r[2], x.seq++, snprintf(x.name, sizeof(x.name), "n");
	put_entry(f, 1, &g, seed, &x, NULL);
	x = r[3], x.seq++, x.alloc_len += 4096;
	put_entry(f, 1, &g, seed, &x, NULL);
	x = r[4], x.seq++, snprintf(x.name, sizeof(x.name), "o"), x.ext_start = r[1].ext_start;
	put_entry(f, 1, &g, seed, &x, NULL);

	assert_int_equal(tpack_open(f, 1, NULL, 0, &p), 0);
	recfs_pack_info(p, &pi);
	assert_int_equal(pi.bad_entries, 3);
	assert_int_equal(pi.recordings, 2);
	lookup(p, "n", &x);
	assert_int_equal(x.index, 1);
	assert_int_equal(recfs_rec_lookup(p, "d", &x), -ENOENT);
	/* the overlap: both shown; the shared chunk is b's (stream 2) */
	lookup(p, "n", &x);
	assert_int_equal(tcheck(p, &x, 2, CH), 0);
	lookup(p, "o", &x);
	assert_int_equal(recfs_rec_pread(p, &x, buf, CH, 0, RECFS_READ_VERIFY), -EIO);
	recfs_pack_close(p);
	recfs_fault_free(f);
}

/* Item 7: a full chunk verifies when any member's replica of its table
 * slot matches it; only when none does is it a checksum error. */
static void test_slot_any_replica(void **state)
{
	struct recfs_fault *f = tpack_new(2, MSZ, CH, 8);
	struct recfs_pack *p;
	struct recfs_rec r;
	(void)state;

	assert_int_equal(tpack_open(f, 2, NULL, RECFS_O_RDWR, &p), 0);
	twrite_rec(p, "r", 3, 4 * CH + 10, 4 * CH + 10, &r);
	const struct recfs_geom g = *recfs_pack_geom(p);
	recfs_pack_close(p);
	uint64_t slot0 = g.csum_off + (r.ext_start / CH) * RECFS_SLOT_SIZE;
	/* chunk 0's replica wrong on member 0, chunk 1's wrong length on member 1 */
	recfs_fault_image(f, 0)[slot0] ^= 1;
	recfs_fault_image(f, 1)[slot0 + RECFS_SLOT_SIZE + 8] ^= 1;
	assert_int_equal(tpack_open(f, 2, NULL, 0, &p), 0);
	lookup(p, "r", &r);
	assert_int_equal(tcheck(p, &r, 3, 4 * CH + 10), 0);
	recfs_pack_close(p);
	/* both of chunk 0's replicas wrong: a checksum error */
	recfs_fault_image(f, 1)[slot0] ^= 1;
	assert_int_equal(tpack_open(f, 2, NULL, 0, &p), 0);
	lookup(p, "r", &r);
	assert_int_equal(tcheck(p, &r, 3, 4 * CH + 10), -1);
	assert_non_null(strstr(recfs_errmsg(), "chunk 0): checksum mismatch"));
	recfs_pack_close(p);
	recfs_fault_free(f);
}

/* Item 8: a recording in state 1 is shown at its committed_len; the slots
 * past it (valid ones, of data written after the last commit) are not
 * walked by readers, only by fsck's recovery. */
static void test_open_recording_committed(void **state)
{
	struct recfs_fault *f = tpack_new(1, MSZ, CH, 8);
	struct recfs_pack *p;
	struct recfs_rec r, x;
	uint8_t *buf = malloc(5 * CH);
	(void)state;

	assert_int_equal(tpack_open(f, 1, NULL, RECFS_O_RDWR, &p), 0);
	twrite_rec(p, "r", 4, 5 * CH, 5 * CH, &r);
	const struct recfs_geom g = *recfs_pack_geom(p);
	const uint64_t seed = p->pack_seed;
	recfs_pack_close(p);
	/* as if cut after writing chunks 2-4 and their slots, before the entry */
	x = r, x.seq++, x.state = RECFS_STATE_RECORDING, x.committed_len = 2 * CH, x.tail_csum = 0;
	put_entry(f, 1, &g, seed, &x, NULL);
	assert_int_equal(tpack_open(f, 1, NULL, 0, &p), 0);
	lookup(p, "r", &x);
	assert_int_equal(x.state, RECFS_STATE_RECORDING);
	assert_int_equal(x.committed_len, 2 * CH);
	assert_int_equal(recfs_rec_pread(p, &x, buf, 5 * CH, 0, RECFS_READ_VERIFY), 2 * CH);
	assert_int_equal(tcheck(p, &x, 4, 2 * CH), 0);
	recfs_pack_close(p);
	free(buf);
	recfs_fault_free(f);
}

/* Item 9: a bitmap copy counts only at its own location (copy 1 written
 * at copy 0's place is ignored) and with seq in 1..2^64-2. */
static void test_bitmap_copy_location(void **state)
{
	struct recfs_fault *f = tpack_new(1, MSZ, CH, 8);
	struct recfs_pack *p;
	struct recfs_pack_info pi;
	struct recfs_rec r;
	(void)state;

	assert_int_equal(tpack_open(f, 1, NULL, RECFS_O_RDWR, &p), 0);
	twrite_rec(p, "r", 1, CH, CH, &r);
	const struct recfs_geom g = *recfs_pack_geom(p);
	const uint64_t seed = p->pack_seed, seq = p->bmp_seq;
	recfs_pack_close(p);
	uint8_t *cp = calloc(1, g.bitmap_copy_size);
	struct recfs_bitmap_hdr h = {.nbits = g.rows, .dir_hwm = 8};
	memset(cp + RECFS_BLOCK, 0xff, (g.rows + 7) / 8); /* every row in use */
	/* a newer generation claiming copy 1, at copy 0's place */
	h.seq = seq + 11, h.copy = 1;
	if ((h.seq & 1) == 0)
		h.seq++;
	recfs_bitmap_encode(cp, &h, seed);
	memcpy(recfs_fault_image(f, 0) + g.bitmap_off, cp, g.bitmap_copy_size);
	/* and 2^64-1 at copy 1's own place */
	h.seq = UINT64_MAX, h.copy = 1;
	recfs_bitmap_encode(cp, &h, seed);
	uint8_t save[RECFS_BLOCK];
	memcpy(save, recfs_fault_image(f, 0) + g.bitmap_off + g.bitmap_copy_size, sizeof(save));
	memcpy(recfs_fault_image(f, 0) + g.bitmap_off + g.bitmap_copy_size, cp, g.bitmap_copy_size);
	assert_int_equal(tpack_open(f, 1, NULL, 0, &p), 0);
	recfs_pack_info(p, &pi);
	/* neither counts: no valid copy left (copy 1 was the newest), so the
	 * bitmap comes from the directory alone */
	assert_int_not_equal(p->bmp_seq, UINT64_MAX);
	assert_int_not_equal(p->bmp_seq, h.seq);
	assert_int_equal(pi.used, g.row_bytes);
	recfs_pack_close(p);
	free(cp);
	recfs_fault_free(f);
}

static void edit_zero_fields(struct recfs_disk_entry *d)
{
	d->flags = htole32(5);
	d->reserved0 = htole32(0xdeadbeef);
	memset(d->reserved1, 0xa5, sizeof(d->reserved1));
	for (unsigned i = 0; i < RECFS_GAPS_MAX; i++)
		d->gaps[i].reserved = htole16(0x77);
	d->uid = 0;
}

static void edit_flags(struct recfs_disk_entry *d)
{
	d->flags = htole32(0xffffffff);
	memset(d->reserved1, 0x5a, sizeof(d->reserved1));
}

/* Item 10: fields FORMAT.md calls zero (flags, reserved bytes and padding,
 * unused member_uuids slots) are ignored by readers, and a uid of 0 is
 * listed like any other. */
static void test_zero_fields_ignored(void **state)
{
	struct recfs_fault *f = tpack_new(2, MSZ, CH, 8);
	struct recfs_pack *p;
	struct recfs_rec r, e, x;
	(void)state;

	assert_int_equal(tpack_open(f, 2, NULL, RECFS_O_RDWR, &p), 0);
	twrite_rec(p, "r", 5, 2 * CH + 7, 2 * CH + 7, &r);
	twrite_rec(p, "e", 6, 0, 0, &e);
	const struct recfs_geom g = *recfs_pack_geom(p);
	const uint64_t seed = p->pack_seed;
	recfs_pack_close(p);
	x = r, x.seq++;
	put_entry(f, 2, &g, seed, &x, edit_flags);
	x = e, x.seq++;
	put_entry(f, 2, &g, seed, &x, edit_zero_fields);
	/* superblock reserved bytes and an unused member_uuids slot, the same
	 * on every member; bitmap header reserved bytes */
	for (unsigned m = 0; m < 2; m++) {
		uint8_t *sb = recfs_fault_image(f, m);
		for (unsigned k = 0; k < 2; k++) {
			uint8_t *b = sb + (k ? g.backup_off : 0);
			b[224] = 1, b[1280] = 2, b[4087] = 3, b[256 + 16 * 63] = 4;
			uint64_t c = XXH3_64bits(b, 4088);
			for (unsigned i = 0; i < 8; i++)
				b[4088 + i] = (uint8_t)(c >> (8 * i));
		}
	}
	assert_int_equal(tpack_open(f, 2, NULL, 0, &p), 0);
	lookup(p, "r", &x);
	assert_int_equal(tcheck(p, &x, 5, 2 * CH + 7), 0);
	lookup(p, "e", &x);
	assert_int_equal(x.uid, 0);
	uint32_t i = 0;
	unsigned n = 0;
	while (recfs_rec_next(p, &i, &x) == 0)
		n++, i++;
	assert_int_equal(n, 2);
	recfs_pack_close(p);
	recfs_fault_free(f);
}

/* Item 11: the 33rd gap merges the adjacent pair, in the order stored,
 * with the smallest distance; of equally close pairs the first; the merged
 * gap keeps the lower offset, thread 65535 if they differ. */
static void test_gap_merge_rule(void **state)
{
	struct recfs_loss l = {0};
	(void)state;

	/* equally spaced: the first pair merges */
	for (unsigned i = 0; i <= RECFS_GAPS_MAX; i++)
		recfs_loss_add_gap(&l, 1000ull * i, 1, (uint16_t)(i & 1));
	assert_int_equal(l.gap_count, RECFS_GAPS_MAX);
	assert_int_equal(l.gaps[0].offset, 0);
	assert_int_equal(l.gaps[0].frames, 2);
	assert_int_equal(l.gaps[0].thread, 65535);
	assert_int_equal(l.gaps[1].offset, 2000);
	/* stored out of offset order (a resynchronised thread's gap is found
	 * late): only neighbours in the stored order merge.  Gap 10 at offset 5
	 * is 5 bytes from gap 0, but not its neighbour in the list */
	memset(&l, 0, sizeof(l));
	for (unsigned i = 0; i <= RECFS_GAPS_MAX; i++)
		recfs_loss_add_gap(&l, i == 10 ? 5 : 100000ull * i, 1, 3);
	assert_int_equal(l.gap_count, RECFS_GAPS_MAX);
	assert_int_equal(l.gaps[0].offset, 0);
	assert_int_equal(l.gaps[0].frames, 2);
	assert_int_equal(l.gaps[0].thread, 3);
	assert_int_equal(l.gaps[1].offset, 200000);
	assert_int_equal(l.gaps[9].offset, 5);
	assert_int_equal(l.gaps[9].frames, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_set_aside_order),
		cmocka_unit_test(test_slot_any_replica),
		cmocka_unit_test(test_open_recording_committed),
		cmocka_unit_test(test_bitmap_copy_location),
		cmocka_unit_test(test_zero_fields_ignored),
		cmocka_unit_test(test_gap_merge_rule),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
