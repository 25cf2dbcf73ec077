/* The stripe map, exhaustively for small geometries, and the layout. */
#include "helpers.h"

static void test_map_exhaustive(void **state)
{
	(void)state;
	for (uint32_t members = 1; members <= 9; members++) {
		for (uint32_t chunk = 64 << 10; chunk <= (256 << 10); chunk <<= 1) {
			struct recfs_geom g;
			uint64_t size = (uint64_t)(8 + members) << 20;
			assert_int_equal(recfs_geom_compute(&g, members, size, chunk, 4), 0);
			/* model: walk rows, then members, handing out logical chunks */
			uint8_t *hit = calloc(members * g.rows, 1);
			uint64_t c = 0;
			for (uint64_t row = 0; row < g.rows; row++) {
				for (unsigned m = 0; m < members; m++, c++) {
					uint64_t probes[] = {0, 1, 4095, 4096, chunk / 2, chunk - 1};
					for (unsigned k = 0; k < 6; k++) {
						unsigned gm;
						uint64_t go;
						recfs_map(&g, c * chunk + probes[k], &gm, &go);
						assert_int_equal(gm, m);
						assert_int_equal(go, g.data_off + row * chunk + probes[k]);
					}
					unsigned gm;
					uint64_t go;
					recfs_map(&g, c * chunk, &gm, &go);
					hit[gm * g.rows + (go - g.data_off) / chunk]++;
				}
			}
			assert_int_equal(c * chunk, g.capacity);
			for (uint64_t k = 0; k < members * g.rows; k++)
				assert_int_equal(hit[k], 1); /* a bijection */
			free(hit);
			/* every data byte is inside the member, before the backup */
			unsigned lm;
			uint64_t lo;
			recfs_map(&g, g.capacity - 1, &lm, &lo);
			assert_true(lo < g.backup_off);
			assert_int_equal(lm, members - 1);
		}
	}
}

static void test_geometry(void **state)
{
	struct recfs_geom g;
	(void)state;

	assert_int_equal(recfs_geom_compute(&g, 4, 1ull << 40, 1 << 20, 8192), 0);
	assert_int_equal(g.data_off % (1 << 20), 0);
	assert_true(g.dir_off >= g.bitmap_off + 2 * g.bitmap_copy_size);
	assert_true(g.csum_off >= g.dir_off + 8192ull * 2048);
	assert_true(g.csum_off + g.csum_size <= g.data_off);
	assert_true(g.csum_size >= 4 * g.rows * 16);
	assert_true(g.data_off + g.rows * g.chunk_size <= g.backup_off);
	assert_int_equal(g.backup_off, (1ull << 40) - 4096);
	/* a million recordings fit */
	assert_int_equal(recfs_geom_compute(&g, 2, 1ull << 36, 1 << 20, 1000000), 0);
	/* bad chunk sizes and too small members */
	assert_int_equal(recfs_geom_compute(&g, 2, 1ull << 30, 3 << 16, 10), -EINVAL);
	assert_int_equal(recfs_geom_compute(&g, 2, 1ull << 30, 32 << 10, 10), -EINVAL);
	assert_int_equal(recfs_geom_compute(&g, 2, 1ull << 30, 128 << 20, 10), -EINVAL);
	assert_int_equal(recfs_geom_compute(&g, 2, 1 << 20, 1 << 20, 10), -ENOSPC);
	assert_int_equal(recfs_geom_compute(&g, 65, 1ull << 30, 1 << 20, 10), -EINVAL);
	assert_int_equal(recfs_geom_compute(&g, 0, 1ull << 30, 1 << 20, 10), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_map_exhaustive),
		cmocka_unit_test(test_geometry),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
