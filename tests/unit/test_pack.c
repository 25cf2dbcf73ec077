/* Assembly, the directory and the allocator on in-memory packs. */
#include "helpers.h"
#include "internal.h"

#include <xxhash.h>

#define MSZ (24ull << 20)
#define CH (64u << 10)

static void test_assembly_permuted(void **state)
{
	struct recfs_fault *f = tpack_new(4, MSZ, CH, 16);
	unsigned perms[][4] = {{0, 1, 2, 3}, {3, 2, 1, 0}, {2, 0, 3, 1}, {1, 3, 0, 2}};
	struct recfs_pack *p;
	(void)state;

	for (unsigned k = 0; k < 4; k++) {
		assert_int_equal(tpack_open(f, 4, perms[k], 0, &p), 0);
		assert_int_equal(recfs_pack_geom(p)->members, 4);
		for (unsigned i = 0; i < 4; i++) {
			char want[16];
			snprintf(want, sizeof(want), "fault%u", i);
			assert_string_equal(recfs_pack_dev(p, i)->path, want);
		}
		recfs_pack_close(p);
	}
	recfs_fault_free(f);
}

static void test_assembly_refusals(void **state)
{
	struct recfs_fault *f = tpack_new(3, MSZ, CH, 16);
	struct recfs_fault *g = tpack_new(3, MSZ, CH, 16);
	struct recfs_pack *p;
	struct recfs_dev *d[4];
	(void)state;

	/* missing member 1 */
	d[0] = recfs_fault_dev(f, 0);
	d[1] = recfs_fault_dev(f, 2);
	assert_int_equal(recfs_pack_open_devs(d, 2, 0, &p), -ENXIO);
	assert_non_null(strstr(recfs_errmsg(), "member 1"));
	/* ... accepted degraded, read-only only */
	d[0] = recfs_fault_dev(f, 0);
	d[1] = recfs_fault_dev(f, 2);
	assert_int_equal(recfs_pack_open_devs(d, 2, RECFS_O_DEGRADED, &p), 0);
	assert_null(recfs_pack_dev(p, 1));
	recfs_pack_close(p);
	d[0] = recfs_fault_dev(f, 0);
	d[1] = recfs_fault_dev(f, 2);
	assert_int_equal(recfs_pack_open_devs(d, 2, RECFS_O_DEGRADED | RECFS_O_RDWR, &p), -EROFS);
	/* foreign member, named */
	d[0] = recfs_fault_dev(f, 0);
	d[1] = recfs_fault_dev(f, 1);
	d[2] = recfs_fault_dev(g, 2);
	assert_int_equal(recfs_pack_open_devs(d, 3, 0, &p), -EXDEV);
	assert_non_null(strstr(recfs_errmsg(), "fault2: member of another pack"));
	/* duplicated member */
	d[0] = recfs_fault_dev(f, 0);
	d[1] = recfs_fault_dev(f, 1);
	d[2] = recfs_fault_dev(f, 1);
	assert_int_equal(recfs_pack_open_devs(d, 3, 0, &p), -EINVAL);
	assert_non_null(strstr(recfs_errmsg(), "both member 1"));
	/* not recfs at all */
	memset(recfs_fault_image(g, 0), 0, MSZ);
	d[0] = recfs_fault_dev(g, 0);
	assert_int_equal(recfs_pack_open_devs(d, 1, 0, &p), -EUCLEAN);
	assert_non_null(strstr(recfs_errmsg(), "fault0: not a recfs member"));
	recfs_fault_free(f);
	recfs_fault_free(g);
}

static void test_backup_superblock(void **state)
{
	struct recfs_fault *f = tpack_new(2, MSZ, CH, 16);
	struct recfs_pack *p;
	(void)state;

	/* primary of member 1 destroyed: the backup is used */
	memset(recfs_fault_image(f, 1), 0xee, 4096);
	assert_int_equal(tpack_open(f, 2, NULL, 0, &p), 0);
	recfs_pack_close(p);
	/* both gone: refused, naming the member */
	memset(recfs_fault_image(f, 1) + MSZ - 4096, 0xee, 4096);
	assert_int_equal(tpack_open(f, 2, NULL, 0, &p), -EUCLEAN);
	assert_non_null(strstr(recfs_errmsg(), "fault1"));
	recfs_fault_free(f);
}

static void mut_field(struct recfs_super *s, unsigned k)
{
	switch (k) {
	case 0: snprintf(s->label, sizeof(s->label), "intruder"); break;
	case 1: s->created_ns++; break;
	case 2: s->compat |= 1; break;
	case 3: break; /* an unused slot: super_mutate pokes it */
	case 4: s->member_uuids[(s->member_index + 1) % s->member_count][0] ^= 1; break;
	case 5: { /* a valid geometry of another size */
		struct recfs_geom g;
		assert_int_equal(recfs_geom_compute(&g, s->member_count, s->member_size - (1u << 20),
						    s->chunk_size, s->dir_capacity), 0);
		recfs_super_set_geom(s, &g);
		break;
	}
	case 6: { /* another directory capacity */
		struct recfs_geom g;
		assert_int_equal(recfs_geom_compute(&g, s->member_count, s->member_size, s->chunk_size,
						    s->dir_capacity + 1), 0);
		recfs_super_set_geom(s, &g);
		break;
	}
	}
}

/* Rewrite member m's primary superblock with mut applied (checksum made
 * good again): a valid superblock that disagrees with the others. */
static void super_mutate(struct recfs_fault *f, unsigned m, void (*mut)(struct recfs_super *, unsigned),
			 unsigned arg)
{
	struct recfs_super s;
	uint8_t *img = recfs_fault_image(f, m);

	assert_int_equal(recfs_super_decode(img, &s), 0);
	mut(&s, arg);
	recfs_super_encode(&s, img);
	if (mut == mut_field && arg == 3) {
		/* the encoder writes only the used slots: an unused one by hand */
		img[256 + 16 * 40 + 3] = 0x5a;
		uint64_t c = XXH3_64bits(img, 4088);
		for (unsigned b = 0; b < 8; b++)
			img[4088 + b] = (uint8_t)(c >> (8 * b));
	}
}

static const char *const mut_names[] = {"label", "created_ns", "compat", "member_uuids",
					"member_uuids", "member_size", "dir_capacity"};

/* Issue 15 item 2: one member's valid superblock differs from the others'
 * in a field that must agree.  Every tool refused with SIGSEGV (the message
 * named a device already handed to the pack).  Refused, naming the member
 * and the field, in every member order, degraded or not; the pack opens
 * again once the superblock is restored. */
static void test_inconsistent_member(void **state)
{
	unsigned perms[][3] = {{0, 1, 2}, {1, 0, 2}, {2, 1, 0}, {1, 2, 0}};
	(void)state;

	for (unsigned k = 0; k < sizeof(mut_names) / sizeof(mut_names[0]); k++)
		for (unsigned m = 0; m < 3; m++) {
			struct recfs_fault *f = tpack_new(3, MSZ, CH, 16);
			uint8_t save[4096];
			struct recfs_pack *p;
			char want[64];
			memcpy(save, recfs_fault_image(f, m), sizeof(save));
			super_mutate(f, m, mut_field, k);
			snprintf(want, sizeof(want), "fault%u: inconsistent member: superblock field %s",
				 m, mut_names[k]);
			for (unsigned q = 0; q < 4; q++)
				for (unsigned fl = 0; fl < 2; fl++) {
					assert_int_equal(tpack_open(f, 3, perms[q], fl ? RECFS_O_DEGRADED : 0, &p),
							 -EUCLEAN);
					if (!strstr(recfs_errmsg(), want))
						fail_msg("%s: got '%s'", want, recfs_errmsg());
				}
			memcpy(recfs_fault_image(f, m), save, sizeof(save));
			assert_int_equal(tpack_open(f, 3, NULL, 0, &p), 0);
			recfs_pack_close(p);
			recfs_fault_free(f);
		}
}

/* No majority (FORMAT.md 3): two versions held by as many members, or two
 * packs given with as many members each, are refused with the same
 * message whatever the order. */
static void test_assembly_ties(void **state)
{
	struct recfs_fault *f = tpack_new(2, MSZ, CH, 16), *g = tpack_new(1, MSZ, CH, 16),
			   *h = tpack_new(1, MSZ, CH, 16);
	struct recfs_pack *p;
	struct recfs_dev *d[2];
	char first[512];
	(void)state;

	super_mutate(f, 1, mut_field, 0);
	assert_int_equal(tpack_open(f, 2, (unsigned[]){0, 1}, 0, &p), -EUCLEAN);
	snprintf(first, sizeof(first), "%s", recfs_errmsg());
	assert_non_null(strstr(first, "fault0 and fault1: inconsistent members: superblock field label"));
	assert_int_equal(tpack_open(f, 2, (unsigned[]){1, 0}, 0, &p), -EUCLEAN);
	assert_string_equal(recfs_errmsg(), first);

	d[0] = recfs_fault_dev(g, 0);
	d[1] = recfs_fault_dev(h, 0);
	assert_int_equal(recfs_pack_open_devs(d, 2, 0, &p), -EXDEV);
	snprintf(first, sizeof(first), "%s", recfs_errmsg());
	assert_non_null(strstr(first, "are members of different packs"));
	d[0] = recfs_fault_dev(h, 0);
	d[1] = recfs_fault_dev(g, 0);
	assert_int_equal(recfs_pack_open_devs(d, 2, RECFS_O_DEGRADED, &p), -EXDEV);
	assert_string_equal(recfs_errmsg(), first);
	recfs_fault_free(f);
	recfs_fault_free(g);
	recfs_fault_free(h);
}

/* Pack assembly fuzzed deterministically: every byte of one member's
 * primary superblock, one bit at a time, the checksum made good again.
 * Whatever the change, the pack opens the same (the member's superblock is
 * invalid and its backup used, or the byte is one no reader looks at) or is
 * refused naming that member; never a crash. */
static void test_assembly_fuzz_fields(void **state)
{
	struct recfs_fault *f = tpack_new(3, MSZ, CH, 16);
	uint8_t *img = recfs_fault_image(f, 1), save[4096];
	unsigned opened = 0, refused = 0;
	(void)state;

	memcpy(save, img, sizeof(save));
	for (unsigned off = 0; off < 4088; off++)
		for (unsigned bit = 0; bit < 8; bit += 3) {
			struct recfs_pack *p;
			memcpy(img, save, sizeof(save));
			img[off] ^= (uint8_t)(1u << bit);
			uint64_t c = XXH3_64bits(img, 4088);
			for (unsigned b = 0; b < 8; b++)
				img[4088 + b] = (uint8_t)(c >> (8 * b));
			int err = tpack_open(f, 3, (off & 1) ? (unsigned[]){2, 1, 0} : NULL, 0, &p);
			if (err == 0) {
				assert_int_equal(recfs_pack_geom(p)->members, 3);
				assert_int_equal(recfs_pack_geom(p)->member_size, MSZ);
				recfs_pack_close(p);
				opened++;
			} else {
				if (!strstr(recfs_errmsg(), "fault1"))
					fail_msg("byte %u bit %u: %s", off, bit, recfs_errmsg());
				refused++;
			}
		}
	memcpy(img, save, sizeof(save));
	assert_true(opened > 0 && refused > 0);
	recfs_fault_free(f);
}

static void test_directory_ops(void **state)
{
	struct recfs_fault *f = tpack_new(3, MSZ, CH, 8);
	struct recfs_pack *p;
	struct recfs_rec r, a, b;
	(void)state;

	assert_int_equal(tpack_open(f, 3, NULL, RECFS_O_RDWR, &p), 0);
	twrite_rec(p, "a", 1, 100000, 0, &a);
	assert_int_equal(a.state, RECFS_STATE_SEALED);
	assert_int_equal(a.committed_len, 100000);
	assert_int_equal(a.alloc_len, recfs_pack_geom(p)->row_bytes); /* tail returned */
	assert_int_equal(recfs_rec_create(p, "a", NULL, 0, &r), -EEXIST);
	assert_int_equal(recfs_rec_create(p, "x/y", NULL, 0, &r), -EINVAL);
	assert_int_equal(recfs_rec_create(p, "..", NULL, 0, &r), -EINVAL);
	twrite_rec(p, "b", 2, 3 * CH + 17, 0, &b);
	assert_int_equal(recfs_rec_lookup(p, "b", &r), 0);
	assert_int_equal(r.uid, b.uid);
	assert_int_not_equal(a.uid, b.uid);
	assert_int_equal(tcheck(p, &r, 2, 3 * CH + 17), 0);
	/* unaligned reads at every boundary */
	uint8_t buf[300];
	uint64_t offs[] = {0, 1, CH - 1, CH - 150, 2 * CH - 7, 3 * CH, 3 * CH + 16};
	for (unsigned k = 0; k < 7; k++) {
		ssize_t want = (ssize_t)(3 * CH + 17 - offs[k]);
		if (want > 300)
			want = 300;
		assert_int_equal(recfs_rec_pread(p, &r, buf, 300, offs[k], RECFS_READ_VERIFY), want);
		for (ssize_t i = 0; i < want; i++)
			assert_int_equal(buf[i], tbyte(2, offs[k] + (uint64_t)i));
	}
	assert_int_equal(recfs_rec_pread(p, &r, buf, 300, 3 * CH + 17, 0), 0);
	/* delete and reopen */
	assert_int_equal(recfs_rec_delete(p, a.index, 0), 0);
	assert_int_equal(recfs_rec_lookup(p, "a", &r), -ENOENT);
	recfs_pack_close(p);
	assert_int_equal(tpack_open(f, 3, NULL, 0, &p), 0);
	assert_int_equal(recfs_rec_lookup(p, "a", &r), -ENOENT);
	assert_int_equal(recfs_rec_lookup(p, "b", &r), 0);
	assert_int_equal(tcheck(p, &r, 2, 3 * CH + 17), 0);
	/* read-only: every modification refused */
	assert_int_equal(recfs_rec_create(p, "c", NULL, 0, &r), -EROFS);
	assert_int_equal(recfs_rec_delete(p, b.index, 0), -EROFS);
	recfs_pack_close(p);
	recfs_fault_free(f);
}

static void test_directory_full(void **state)
{
	struct recfs_fault *f = tpack_new(1, MSZ, CH, 3);
	struct recfs_pack *p;
	struct recfs_rec r;
	(void)state;

	assert_int_equal(tpack_open(f, 1, NULL, RECFS_O_RDWR, &p), 0);
	twrite_rec(p, "1", 1, 10, CH, &r);
	twrite_rec(p, "2", 1, 10, CH, &r);
	twrite_rec(p, "3", 1, 10, CH, &r);
	assert_int_equal(recfs_rec_create(p, "4", NULL, CH, &r), -ENFILE);
	assert_int_equal(recfs_rec_lookup(p, "2", &r), 0);
	assert_int_equal(recfs_rec_delete(p, r.index, 0), 0);
	twrite_rec(p, "4", 1, 10, CH, &r);
	assert_int_equal(r.index, 1); /* the freed slot is reused */
	recfs_pack_close(p);
	recfs_fault_free(f);
}

static void test_allocator(void **state)
{
	struct recfs_fault *f = tpack_new(2, MSZ, CH, 32);
	struct recfs_pack *p;
	struct recfs_pack_info pi;
	struct recfs_rec r, big, x[6];
	(void)state;

	assert_int_equal(tpack_open(f, 2, NULL, RECFS_O_RDWR, &p), 0);
	const uint64_t row = recfs_pack_geom(p)->row_bytes, cap = recfs_pack_geom(p)->capacity;
	/* six recordings of 2 rows each, back to back from the start */
	for (int i = 0; i < 6; i++) {
		char n[16];
		snprintf(n, sizeof(n), "x%d", i);
		twrite_rec(p, n, (unsigned)i, 2 * row, 2 * row, &x[i]);
		assert_int_equal(x[i].ext_start, (uint64_t)i * 2 * row);
	}
	/* free the space before and between recordings */
	assert_int_equal(recfs_rec_delete(p, x[0].index, 0), 0);
	assert_int_equal(recfs_rec_delete(p, x[2].index, 0), 0);
	assert_int_equal(recfs_rec_delete(p, x[3].index, 0), 0);
	recfs_pack_info(p, &pi);
	assert_int_equal(pi.free, cap - 6 * row);
	/* a sized stream takes the smallest hole that fits: the 2-row hole at 0 */
	twrite_rec(p, "fit2", 9, 2 * row, 2 * row, &r);
	assert_int_equal(r.ext_start, 0);
	/* a 4-row stream goes to the hole x2+x3 left */
	twrite_rec(p, "fit4", 9, 4 * row - 5, 4 * row, &r);
	assert_int_equal(r.ext_start, 4 * row);
	/* unknown length: the largest free extent, tail returned at seal */
	twrite_rec(p, "stream", 3, row + 1, 0, &big);
	assert_int_equal(big.ext_start, 12 * row);
	assert_int_equal(big.alloc_len, 2 * row);
	recfs_pack_info(p, &pi);
	assert_int_equal(pi.free, cap - 14 * row);
	assert_int_equal(pi.largest_free, cap - 14 * row);
	/* fill the pack: the appender stops at the extent's end */
	assert_int_equal(recfs_rec_create(p, "fill", NULL, 0, &r), 0);
	struct recfs_appender *a;
	assert_int_equal(recfs_appender_new(p, &r, &a), 0);
	uint8_t buf[4096] = {0};
	uint64_t put = 0;
	while (recfs_append(a, buf, sizeof(buf)) == 0)
		put += sizeof(buf);
	assert_int_equal(put, cap - 14 * row);
	assert_int_equal(recfs_append_seal(a), 0);
	recfs_appender_free(a);
	recfs_pack_info(p, &pi);
	assert_int_equal(pi.free, 0);
	assert_int_equal(recfs_rec_create(p, "more", NULL, 0, &r), -ENOSPC);
	/* reopen: the bitmap and the directory agree */
	recfs_pack_close(p);
	assert_int_equal(tpack_open(f, 2, NULL, 0, &p), 0);
	recfs_pack_info(p, &pi);
	assert_int_equal(pi.free, 0);
	assert_int_equal(pi.recordings, 7);
	assert_int_equal(recfs_rec_lookup(p, "stream", &r), 0);
	assert_int_equal(tcheck(p, &r, 3, row + 1), 0);
	recfs_pack_close(p);
	recfs_fault_free(f);
}

static void test_corrupt_chunk(void **state)
{
	struct recfs_fault *f = tpack_new(2, MSZ, CH, 8);
	struct recfs_pack *p;
	struct recfs_rec r;
	uint8_t buf[100];
	(void)state;

	assert_int_equal(tpack_open(f, 2, NULL, RECFS_O_RDWR, &p), 0);
	twrite_rec(p, "c", 5, 4 * CH, 0, &r);
	const struct recfs_geom *g = recfs_pack_geom(p);
	unsigned m;
	uint64_t mo;
	recfs_map(g, r.ext_start + 2 * CH + 10, &m, &mo);
	recfs_fault_image(f, m)[mo] ^= 1;
	assert_int_equal(recfs_rec_pread(p, &r, buf, 100, 2 * CH + 50, RECFS_READ_VERIFY), -EIO);
	assert_non_null(strstr(recfs_errmsg(), "131072-196607"));
	assert_int_equal(recfs_rec_pread(p, &r, buf, 100, CH, RECFS_READ_VERIFY), 100);
	assert_int_equal(recfs_rec_pread(p, &r, buf, 100, 2 * CH + 50, 0), 100);
	recfs_pack_close(p);
	recfs_fault_free(f);
}

static void test_replica_damage(void **state)
{
	struct recfs_fault *f = tpack_new(3, MSZ, CH, 8);
	struct recfs_pack *p;
	struct recfs_rec r;
	(void)state;

	assert_int_equal(tpack_open(f, 3, NULL, RECFS_O_RDWR, &p), 0);
	twrite_rec(p, "keep", 4, 5 * CH + 3, 0, &r);
	const struct recfs_geom g = *recfs_pack_geom(p);
	recfs_pack_close(p);
	/* wipe member 0's directory and both bitmap copies: other replicas serve */
	memset(recfs_fault_image(f, 0) + g.bitmap_off, 0, g.csum_off - g.bitmap_off);
	assert_int_equal(tpack_open(f, 3, NULL, 0, &p), 0);
	assert_int_equal(recfs_rec_lookup(p, "keep", &r), 0);
	assert_int_equal(tcheck(p, &r, 4, 5 * CH + 3), 0);
	recfs_pack_close(p);
	recfs_fault_free(f);
}

/* A member that missed updates after a write error is stale; reopening
 * must still find everything the other replica holds and never reuse it. */
static void test_stale_member(void **state)
{
	struct recfs_fault *f = tpack_new(2, MSZ, CH, 8);
	struct recfs_pack *p;
	struct recfs_rec r, b;
	(void)state;

	recfs_fault_reboot(f);
	assert_int_equal(tpack_open(f, 2, NULL, RECFS_O_RDWR, &p), 0);
	struct recfs_appender *a;
	uint8_t buf[3 * CH + 5];
	tfill(7, 0, buf, sizeof(buf));
	assert_int_equal(recfs_rec_create(p, "b", NULL, 4 * CH, &b), 0);
	assert_int_equal(recfs_appender_new(p, &b, &a), 0);
	assert_int_equal(recfs_append(a, buf, sizeof(buf)), 0);
	assert_int_equal(recfs_append_sync(a), 0);
	recfs_appender_free(a);
	/* the seal's entry write fails on member 0: member 1 alone has it */
	recfs_fault_fail_at(f, recfs_fault_writes(f) + 1);
	assert_int_equal(recfs_rec_seal(p, &b, NULL), -EIO);
	assert_non_null(strstr(recfs_errmsg(), "fault0"));
	recfs_pack_close(p);
	assert_int_equal(tpack_open(f, 2, NULL, 0, &p), 0);
	assert_int_equal(recfs_rec_lookup(p, "b", &r), 0);
	assert_int_equal(r.uid, b.uid);
	assert_int_equal(r.state, RECFS_STATE_SEALED); /* member 0's copy is older */
	assert_int_equal(tcheck(p, &r, 7, 3 * CH + 5), 0);
	recfs_pack_close(p);
	assert_int_equal(tpack_open(f, 2, NULL, RECFS_O_RDWR, &p), 0);
	twrite_rec(p, "c", 8, CH, 0, &r);
	assert_int_not_equal(r.index, b.index);
	assert_int_equal(recfs_rec_lookup(p, "b", &r), 0);
	assert_int_equal(tcheck(p, &r, 7, 3 * CH + 5), 0);
	recfs_pack_close(p);
	recfs_fault_free(f);
}

/* An entry the library cannot use is set aside, never overwritten. */
static void test_bad_entry_kept(void **state)
{
	struct recfs_fault *f = tpack_new(1, MSZ, CH, 8);
	struct recfs_pack *p;
	struct recfs_pack_info pi;
	struct recfs_rec r, x;
	uint8_t slot[RECFS_ENTRY_SIZE];
	(void)state;

	assert_int_equal(tpack_open(f, 1, NULL, RECFS_O_RDWR, &p), 0);
	twrite_rec(p, "x", 1, 2 * CH, 0, &x);
	const struct recfs_geom g = *recfs_pack_geom(p);
	const uint64_t seed = p->pack_seed;
	recfs_pack_close(p);
	/* a newer generation of x with an extent off the row grid */
	x.seq++;
	x.ext_start += 4096;
	recfs_entry_encode(&x, seed, slot);
	memcpy(recfs_fault_image(f, 0) + g.dir_off + ((uint64_t)x.index * 2 + (x.seq & 1)) * RECFS_ENTRY_SIZE,
	       slot, sizeof(slot));
	assert_int_equal(tpack_open(f, 1, NULL, RECFS_O_RDWR, &p), 0);
	recfs_pack_info(p, &pi);
	assert_int_equal(pi.bad_entries, 1);
	assert_int_equal(recfs_rec_lookup(p, "x", &r), -ENOENT);
	twrite_rec(p, "y", 2, CH, CH, &r);
	assert_int_not_equal(r.index, x.index);
	assert_true(r.ext_start >= x.ext_start + x.alloc_len); /* its rows are kept too */
	recfs_pack_close(p);
	recfs_fault_free(f);
}

/* Two live entries with one uid are both set aside; either name fails
 * EUCLEAN naming both, and no third entry takes either name. */
static void test_dup_uid(void **state)
{
	struct recfs_fault *f = tpack_new(1, MSZ, CH, 8);
	struct recfs_pack *p;
	struct recfs_pack_info pi;
	struct recfs_rec r, a, b, c;
	uint8_t slot[RECFS_ENTRY_SIZE];
	uint32_t i = 0;
	(void)state;

	assert_int_equal(tpack_open(f, 1, NULL, RECFS_O_RDWR, &p), 0);
	twrite_rec(p, "a", 1, 2 * CH, 0, &a);
	twrite_rec(p, "b", 2, 2 * CH, 0, &b);
	twrite_rec(p, "c", 3, CH, 0, &c);
	const struct recfs_geom g = *recfs_pack_geom(p);
	const uint64_t seed = p->pack_seed;
	recfs_pack_close(p);
	/* a newer generation of b with a's uid */
	b.seq++;
	b.uid = a.uid;
	recfs_entry_encode(&b, seed, slot);
	memcpy(recfs_fault_image(f, 0) + g.dir_off + ((uint64_t)b.index * 2 + (b.seq & 1)) * RECFS_ENTRY_SIZE,
	       slot, sizeof(slot));
	assert_int_equal(tpack_open(f, 1, NULL, RECFS_O_RDWR, &p), 0);
	recfs_pack_info(p, &pi);
	assert_int_equal(pi.bad_entries, 2);
	assert_int_equal(pi.recordings, 1);
	assert_int_equal(recfs_rec_lookup(p, "a", &r), -EUCLEAN);
	assert_non_null(strstr(recfs_errmsg(), "'a' (entry 0) and 'b' (entry 1) have the same uid"));
	assert_int_equal(recfs_rec_lookup(p, "b", &r), -EUCLEAN);
	assert_int_equal(recfs_rec_lookup(p, "c", &r), 0);
	assert_int_equal(recfs_rec_lookup(p, "d", &r), -ENOENT);
	assert_int_equal(recfs_rec_next(p, &i, &r), 0);
	assert_string_equal(r.name, "c");
	i = 0;
	assert_int_equal(recfs_pack_dup_uid(p, &i, &r, &c), 0);
	assert_string_equal(r.name, "a");
	assert_string_equal(c.name, "b");
	i++;
	assert_int_equal(recfs_pack_dup_uid(p, &i, &r, &c), -ENOENT);
	struct recfs_input in = {0};
	assert_int_equal(recfs_rec_create(p, "b", &in, CH, &r), -EUCLEAN);
	twrite_rec(p, "d", 4, CH, 0, &r);
	assert_int_not_equal(r.uid, a.uid);
	assert_true(r.index > b.index); /* their indexes and rows are kept */
	assert_true(r.ext_start >= b.ext_start + b.alloc_len);
	recfs_pack_close(p);
	recfs_fault_free(f);
}

/* A read-only opener follows a writer: reload and refresh. */
static void test_follow_writer(void **state)
{
	struct recfs_fault *f = tpack_new(2, MSZ, CH, 8);
	struct recfs_pack *w, *ro;
	struct recfs_rec r, seen;
	struct recfs_appender *a;
	uint8_t buf[CH];
	(void)state;

	assert_int_equal(tpack_open(f, 2, NULL, RECFS_O_RDWR, &w), 0);
	assert_int_equal(tpack_open(f, 2, NULL, 0, &ro), 0);
	assert_int_equal(recfs_rec_create(w, "live", NULL, 0, &r), 0);
	assert_int_equal(recfs_rec_lookup(ro, "live", &seen), -ENOENT);
	assert_int_equal(recfs_pack_reload(ro), 0);
	assert_int_equal(recfs_rec_lookup(ro, "live", &seen), 0);
	assert_int_equal(seen.committed_len, 0);
	assert_int_equal(recfs_appender_new(w, &r, &a), 0);
	tfill(3, 0, buf, sizeof(buf));
	assert_int_equal(recfs_append(a, buf, sizeof(buf)), 0);
	assert_int_equal(recfs_append_sync(a), 0);
	assert_int_equal(recfs_rec_refresh(ro, &seen), 0);
	assert_int_equal(seen.committed_len, CH);
	assert_int_equal(tcheck(ro, &seen, 3, CH), 0);
	assert_int_equal(recfs_append_seal(a), 0);
	recfs_appender_free(a);
	assert_int_equal(recfs_rec_delete(w, r.index, 0), 0);
	assert_int_equal(recfs_rec_refresh(ro, &seen), -ENOENT);
	assert_int_equal(recfs_pack_reload(ro), 0);
	assert_int_equal(recfs_rec_lookup(ro, "live", &seen), -ENOENT);
	recfs_pack_close(ro);
	recfs_pack_close(w);
	recfs_fault_free(f);
}

/* An entry at the last generation wraps without losing the update. */
static void test_seq_wrap_entry(void **state)
{
	struct recfs_fault *f = tpack_new(1, MSZ, CH, 8);
	struct recfs_pack *p;
	struct recfs_rec r, w;
	uint8_t slot[RECFS_ENTRY_SIZE];
	(void)state;

	assert_int_equal(tpack_open(f, 1, NULL, RECFS_O_RDWR, &p), 0);
	twrite_rec(p, "w", 1, CH, 0, &w);
	const struct recfs_geom g = *recfs_pack_geom(p);
	const uint64_t seed = p->pack_seed;
	recfs_pack_close(p);
	w.seq = UINT64_MAX - 1; /* even: slot 0 */
	recfs_entry_encode(&w, seed, slot);
	memcpy(recfs_fault_image(f, 0) + g.dir_off + (uint64_t)w.index * 2 * RECFS_ENTRY_SIZE, slot,
	       sizeof(slot));
	assert_int_equal(tpack_open(f, 1, NULL, RECFS_O_RDWR, &p), 0);
	assert_int_equal(recfs_rec_lookup(p, "w", &r), 0);
	assert_int_equal(r.seq, UINT64_MAX - 1);
	assert_int_equal(recfs_rec_delete(p, r.index, 0), 0);
	recfs_pack_close(p);
	assert_int_equal(tpack_open(f, 1, NULL, 0, &p), 0);
	assert_int_equal(recfs_rec_lookup(p, "w", &r), -ENOENT); /* the delete stuck */
	recfs_pack_close(p);
	recfs_fault_free(f);
}

/* Odd directory capacities still put the checksum table on a block. */
static void test_odd_capacity(void **state)
{
	struct recfs_geom g;
	(void)state;
	for (uint32_t cap = 1; cap < 8; cap++) {
		assert_int_equal(recfs_geom_compute(&g, 3, MSZ, CH, cap), 0);
		assert_int_equal(g.csum_off % RECFS_BLOCK, 0);
		assert_true(g.csum_off >= g.dir_off + (uint64_t)cap * 2048);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_assembly_permuted), cmocka_unit_test(test_assembly_refusals),
		cmocka_unit_test(test_backup_superblock), cmocka_unit_test(test_directory_ops),
		cmocka_unit_test(test_directory_full),    cmocka_unit_test(test_allocator),
		cmocka_unit_test(test_corrupt_chunk),     cmocka_unit_test(test_replica_damage),
		cmocka_unit_test(test_stale_member),      cmocka_unit_test(test_bad_entry_kept),
		cmocka_unit_test(test_odd_capacity),      cmocka_unit_test(test_follow_writer),
		cmocka_unit_test(test_seq_wrap_entry),    cmocka_unit_test(test_dup_uid),
		cmocka_unit_test(test_inconsistent_member), cmocka_unit_test(test_assembly_ties),
		cmocka_unit_test(test_assembly_fuzz_fields),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
