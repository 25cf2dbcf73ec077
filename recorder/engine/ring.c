/* SPDX-License-Identifier: MIT */
/*
 * The ring: chunk-sized slots in locked memory, allocated once.
 */
#include <sys/mman.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rr.h"

uint64_t rr_mem_available(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[256];
	unsigned long long kb = 0;
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return (uint64_t)kb * 1024;
}

int rr_ring_alloc(struct rr *r)
{
	uint64_t want = r->buffer;
	/* the default keeps two full queues of chunks; an explicit --buffer
	 * may be smaller (fewer writes in flight), down to 2 chunks a member */
	uint64_t min = (uint64_t)r->chunk * r->g->members * (r->buffer ? 2 : r->qd * 2);

	if (!want) {
		/* an eighth of what the machine has free, 64 MiB .. 1 GiB */
		want = rr_mem_available() / 8;
		if (want < (64ull << 20))
			want = 64ull << 20;
		if (want > (1ull << 30))
			want = 1ull << 30;
	}
	if (want < min)
		want = min;
	want = want / r->chunk * r->chunk;
	r->nslots = want / r->chunk;
	r->ring_size = want;

	void *m = MAP_FAILED;
	if (want % (2u << 20) == 0)
		m = mmap(NULL, want, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_POPULATE, -1, 0);
	if (m != MAP_FAILED) {
		r->ring_huge = true;
	} else {
		m = mmap(NULL, want, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED) {
			return recfs_seterr(-ENOMEM, "cannot allocate a %llu-byte ring buffer: %s",
					    (unsigned long long)want, strerror(errno));
		}
		madvise(m, want, MADV_HUGEPAGE);
	}
	/* locked and touched now, so the receiver never takes a page fault */
	r->ring_locked = mlock(m, want) == 0;
	if (!r->ring_locked)
		for (uint64_t o = 0; o < want; o += 4096)
			((volatile uint8_t *)m)[o] = 0;
	r->ring = m;
	return 0;
}

