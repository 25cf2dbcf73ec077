/* The free-space summary (fs/lib/space.c) against a walk of every bit:
 * random runs set and cleared across block and word edges, the totals,
 * the largest run (the first of equals) and the best fit after each. */
#include "helpers.h"
#include "internal.h"

/* what the allocator did before space.c: bit by bit */
static void naive(const struct recfs_pack *p, uint64_t need, uint64_t *fr, uint64_t *ls, uint64_t *lr,
		  uint64_t *fit, uint64_t *fit_at)
{
	uint64_t run = 0, rs = 0;
	*fr = *ls = *lr = *fit = *fit_at = 0;
	for (uint64_t r = 0; r <= p->g.rows; r++) {
		if (r < p->g.rows && !recfs_bit_test(p->bits, r)) {
			if (run++ == 0)
				rs = r;
			(*fr)++;
			continue;
		}
		if (run > *lr) {
			*lr = run;
			*ls = rs;
		}
		if (need && run >= need && (*fit == 0 || run < *fit)) {
			*fit = run;
			*fit_at = rs;
		}
		run = 0;
	}
}

static void check_same(struct recfs_pack *p)
{
	uint64_t fr, ls, lr, nfr, nls, nlr, fit, fit_at, at;
	recfs__space(p, &fr, &ls, &lr);
	uint64_t need = 1 + (uint64_t)rand() % (p->g.rows < 600 ? p->g.rows : 600);
	naive(p, need, &nfr, &nls, &nlr, &fit, &fit_at);
	assert_int_equal(fr, nfr);
	assert_int_equal(lr, nlr);
	if (lr)
		assert_int_equal(ls, nls);
	int err = recfs__space_fit(p, need, &at);
	if (fit) {
		assert_int_equal(err, 0);
		assert_int_equal(at, fit_at);
	} else {
		assert_int_equal(err, -ENOSPC);
	}
}

static void test_space_random(void **state)
{
	static const uint64_t sizes[] = {1, 63, 64, 65, 4095, 4096, 4097, 3 * RECFS_SPACE_BLOCK + 77};
	(void)state;
	srand(15);
	for (unsigned s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		struct recfs_pack *p = calloc(1, sizeof(*p));
		assert_non_null(p);
		p->g.rows = sizes[s];
		p->bits = calloc(1, (p->g.rows + 7) / 8 + 8);
		assert_non_null(p->bits);
		assert_int_equal(recfs__space_rebuild(p), 0);
		check_same(p);
		for (unsigned it = 0; it < 1500; it++) {
			uint64_t r0 = (uint64_t)rand() % p->g.rows;
			uint64_t len = it % 7 == 0 ? (uint64_t)rand() % (p->g.rows + 1) : (uint64_t)rand() % 130;
			uint64_t r1 = r0 + len > p->g.rows ? p->g.rows : r0 + len;
			bool set = rand() % 2;
			for (uint64_t k = r0; k < r1; k++) {
				if (set)
					recfs_bit_set(p->bits, k);
				else
					recfs_bit_clear(p->bits, k);
			}
			recfs__space_changed(p, r0, r1);
			check_same(p);
		}
		/* a rebuild from the bits agrees with what the changes kept */
		uint64_t fr, ls, lr;
		recfs__space(p, &fr, &ls, &lr);
		assert_int_equal(recfs__space_rebuild(p), 0);
		uint64_t fr2, ls2, lr2;
		recfs__space(p, &fr2, &ls2, &lr2);
		assert_int_equal(fr, fr2);
		assert_int_equal(ls, ls2);
		assert_int_equal(lr, lr2);
		free(p->space);
		free(p->bits);
		free(p);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_space_random),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
