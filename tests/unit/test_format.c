/* On-disk structures: sizes, round trips, checksums, seeds, name rules. */
#include "helpers.h"
#include "internal.h"
#include <xxhash.h>

static void test_sizes(void **state)
{
	(void)state;
	assert_int_equal(sizeof(struct recfs_disk_super), 4096);
	assert_int_equal(sizeof(struct recfs_disk_bitmap), 4096);
	assert_int_equal(sizeof(struct recfs_disk_entry), 1024);
	assert_int_equal(sizeof(struct recfs_disk_slot), 16);
	assert_int_equal(offsetof(struct recfs_disk_entry, name), 720);
	assert_int_equal(offsetof(struct recfs_disk_super, member_uuids), 256);
}

static void test_super_roundtrip(void **state)
{
	struct recfs_super s = {0}, t;
	struct recfs_geom g;
	uint8_t *blk = recfs_alloc(4096);
	(void)state;

	assert_int_equal(recfs_geom_compute(&g, 3, 100ull << 20, 1 << 20, 100), 0);
	s.version = 1;
	recfs_super_set_geom(&s, &g);
	s.member_index = 2;
	s.created_ns = 123456789;
	strcpy(s.label, "label");
	for (int i = 0; i < 3; i++)
		memset(s.member_uuids[i], i + 1, 16);
	memcpy(s.member_uuid, s.member_uuids[2], 16);
	memset(s.pack_uuid, 0xab, 16);
	recfs_super_encode(&s, blk);
	/* little-endian at the documented offsets */
	assert_memory_equal(blk, "RECFSPK1", 8);
	assert_int_equal(blk[64], 2);
	assert_int_equal(blk[68], 3);
	assert_int_equal(blk[72 + 2], 0x10); /* 1 MiB = 0x00100000 */
	assert_int_equal(recfs_super_decode(blk, &t), 0);
	assert_int_equal(t.member_index, 2);
	assert_int_equal(t.data_off, g.data_off);
	assert_string_equal(t.label, "label");
	/* any flipped byte is caught */
	for (unsigned off = 0; off < 4096; off += 97) {
		blk[off] ^= 0x40;
		assert_int_not_equal(recfs_super_decode(blk, &t), 0);
		blk[off] ^= 0x40;
	}
	/* unknown incompat feature refused even with a good checksum */
	s.incompat = 1ull << 40;
	recfs_super_encode(&s, blk);
	assert_int_equal(recfs_super_decode(blk, &t), -EPROTONOSUPPORT);
	/* an inconsistent layout field is refused */
	s.incompat = 0;
	s.data_off += 4096;
	recfs_super_encode(&s, blk);
	assert_int_equal(recfs_super_decode(blk, &t), -EUCLEAN);
	recfs_free(blk);
}

static void test_entry_roundtrip(void **state)
{
	struct recfs_rec r = {0}, t;
	uint8_t slot[1024];
	(void)state;

	r.index = 7;
	r.seq = 5;
	r.state = RECFS_STATE_SEALED;
	strcpy(r.name, "scan 001 \xff\x01");
	r.uid = 0x1122334455667788ull;
	r.alloc_len = 1 << 22;
	r.committed_len = 12345;
	r.input.format = RECFS_FMT_VDIF;
	r.input.frame_size = 8032;
	strcpy(r.input.source, "udp:127.0.0.1:5000");
	r.loss.frames_lost = 3;
	recfs_loss_add_gap(&r.loss, 1000, 3, 1);
	recfs_entry_encode(&r, 42, slot);
	assert_int_equal(recfs_entry_decode(slot, 42, 7, &t), 0);
	assert_string_equal(t.name, r.name);
	assert_int_equal(t.committed_len, 12345);
	assert_int_equal(t.loss.gap_count, 1);
	assert_int_equal(t.loss.gaps[0].offset, 1000);
	assert_string_equal(t.input.source, "udp:127.0.0.1:5000");
	/* another pack's seed, another index: refused */
	assert_int_equal(recfs_entry_decode(slot, 43, 7, &t), -EUCLEAN);
	assert_int_equal(recfs_entry_decode(slot, 42, 8, &t), -EUCLEAN);
	/* torn: second sector from elsewhere */
	memset(slot + 512, 0, 512);
	assert_int_equal(recfs_entry_decode(slot, 42, 7, &t), -EUCLEAN);
}

static void test_names(void **state)
{
	char big[300];
	(void)state;

	assert_int_equal(recfs_name_check("a"), 0);
	assert_int_equal(recfs_name_check("with space and \x01 ctrl"), 0);
	assert_int_equal(recfs_name_check(""), -EINVAL);
	assert_int_equal(recfs_name_check("."), -EINVAL);
	assert_int_equal(recfs_name_check(".."), -EINVAL);
	assert_int_equal(recfs_name_check("..."), 0);
	assert_int_equal(recfs_name_check("a/b"), -EINVAL);
	memset(big, 'x', 255);
	big[255] = 0;
	assert_int_equal(recfs_name_check(big), 0);
	big[255] = 'x';
	big[256] = 0;
	assert_int_equal(recfs_name_check(big), -ENAMETOOLONG);
}

static void test_chunk_seed(void **state)
{
	uint8_t data[4096];
	(void)state;

	memset(data, 7, sizeof(data));
	uint64_t a = recfs_chunk_csum(1, 0, data, sizeof(data));
	assert_int_not_equal(a, recfs_chunk_csum(2, 0, data, sizeof(data))); /* other recording */
	assert_int_not_equal(a, recfs_chunk_csum(1, 1, data, sizeof(data))); /* other chunk */
	assert_int_equal(a, recfs_chunk_csum(1, 0, data, sizeof(data)));
	/* the documented definition */
	uint64_t k = 0;
	assert_int_equal(recfs_chunk_seed(1, 0), XXH3_64bits_withSeed(&k, 8, 1));
}

static void test_gaps_coalesce(void **state)
{
	struct recfs_loss l = {0};
	uint64_t total = 0;
	(void)state;

	for (unsigned i = 0; i < 100; i++) {
		recfs_loss_add_gap(&l, (uint64_t)i * 1000 + (i % 7) * 10, i + 1, 0);
		total += i + 1;
	}
	assert_int_equal(l.gap_count, RECFS_GAPS_MAX);
	assert_true(l.gap_flags & RECFS_GAPS_COALESCED);
	uint64_t sum = 0;
	for (unsigned i = 0; i < l.gap_count; i++) {
		sum += l.gaps[i].frames;
		if (i)
			assert_true(l.gaps[i].offset > l.gaps[i - 1].offset);
	}
	assert_int_equal(sum, total);
}

static void test_gap_merge_new(void **state)
{
	struct recfs_loss l = {0};
	(void)state;

	for (unsigned i = 0; i < RECFS_GAPS_MAX; i++)
		recfs_loss_add_gap(&l, (uint64_t)i * 1000000, 1, 0);
	/* the 33rd lands 10 bytes after the last: it is the one merged */
	recfs_loss_add_gap(&l, (RECFS_GAPS_MAX - 1) * 1000000ull + 10, 5, 0);
	assert_int_equal(l.gap_count, RECFS_GAPS_MAX);
	assert_int_equal(l.gaps[RECFS_GAPS_MAX - 1].frames, 6);
	assert_int_equal(l.gaps[RECFS_GAPS_MAX - 2].frames, 1);
	assert_int_equal(l.gaps[RECFS_GAPS_MAX - 1].offset, (RECFS_GAPS_MAX - 1) * 1000000ull);
}

static void test_parse_size(void **state)
{
	uint64_t v;
	(void)state;

	assert_int_equal(recfs_parse_size("1M", &v), 0);
	assert_int_equal(v, 1 << 20);
	assert_int_equal(recfs_parse_size("64KiB", &v), 0);
	assert_int_equal(v, 65536);
	assert_int_equal(recfs_parse_size("12", &v), 0);
	assert_int_equal(v, 12);
	assert_int_not_equal(recfs_parse_size("12Q", &v), 0);
	assert_int_not_equal(recfs_parse_size("-1", &v), 0);
	assert_int_not_equal(recfs_parse_size(" -1", &v), 0);
	assert_int_not_equal(recfs_parse_size("+5", &v), 0);
	assert_int_not_equal(recfs_parse_size("", &v), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sizes),        cmocka_unit_test(test_super_roundtrip),
		cmocka_unit_test(test_entry_roundtrip), cmocka_unit_test(test_names),
		cmocka_unit_test(test_chunk_seed),   cmocka_unit_test(test_gaps_coalesce),
		cmocka_unit_test(test_parse_size),   cmocka_unit_test(test_gap_merge_new),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
