/* SPDX-License-Identifier: MIT */
#include "ck.h"

/* ------------------------------------------------------ pass 6: --verify */
struct vctx {
	struct ck *c;
	unsigned member, worker;    /* worker of CK_VERIFY_WORKERS on the member */
	atomic_uint *finished;
};

static void bad_add(struct ck *c, uint32_t x, uint64_t k, unsigned member, int io)
{
	pthread_mutex_lock(&c->lock);
	if (c->nbad == c->capbad && c->nbad < CK_BAD_MAX) {
		size_t nc = c->capbad ? c->capbad * 2 : 64;
		struct ck_bad *n = realloc(c->bad, nc * sizeof(*n));
		if (n) {
			c->bad = n;
			c->capbad = nc;
		}
	}
	if (c->nbad == c->capbad) {
		c->bad_unlisted++;
		pthread_mutex_unlock(&c->lock);
		return;
	}
	struct ck_bad *b = &c->bad[c->nbad++];
	b->rec = x;
	b->chunk = k;
	b->member = member;
	b->io = io;
	pthread_mutex_unlock(&c->lock);
}

static void *verify_member(void *arg)
{
	struct vctx *v = arg;
	struct ck *c = v->c;
	const uint64_t cs = c->g.chunk_size;
	const unsigned nm = c->g.members;
	/* at most CK_VERIFY_MEM in buffers over all workers */
	uint64_t io = CK_VERIFY_MEM / ((uint64_t)nm * CK_VERIFY_WORKERS);
	uint64_t maxk = (io < CK_VERIFY_IO ? io : CK_VERIFY_IO) / cs;
	struct recfs_dev *d = c->a[c->at[v->member]].dev;
	uint8_t *buf;

	if (maxk == 0)
		maxk = 1;
	buf = recfs_alloc(maxk * cs);
	if (!buf) {
		atomic_store(&c->verify_oom, true);
		goto out;
	}
	for (uint32_t x = 0; x < c->nrec; x++) {
		struct ck_rec *e = &c->rec[x];
		const struct recfs_rec *r = &e->r;
		if (e->drop || r->committed_len == 0)
			continue;
		uint64_t lc0 = r->ext_start / cs, nch = (r->committed_len + cs - 1) / cs;
		/* first chunk of this recording on this member */
		uint64_t k = (v->member + nm - (unsigned)(lc0 % nm)) % nm;
		for (uint64_t batch = 0; k < nch; batch++) {
			uint64_t cnt = 0, moff;
			unsigned mi;
			while (k + cnt * nm < nch && cnt < maxk)
				cnt++;
			if (batch % CK_VERIFY_WORKERS != v->worker) {
				k += cnt * nm; /* another worker's */
				continue;
			}
			if (c->o->cancel && c->o->cancel(c->o->ctx))
				goto out;
			recfs_map(&c->g, r->ext_start + k * cs, &mi, &moff);
			int err = ck_dev_read(d, buf, cnt * cs, moff);
			for (uint64_t j = 0; j < cnt; j++) {
				uint64_t kk = k + j * nm;
				uint64_t len = r->committed_len - kk * cs >= cs ? cs : r->committed_len - kk * cs;
				if (err) {
					/* retry chunk by chunk to locate it */
					int e2 = ck_dev_read(d, buf + j * cs, cs, moff + j * cs);
					if (e2) {
						bad_add(c, x, kk, v->member, e2);
						atomic_fetch_add(&c->vdone, len);
						continue;
					}
				}
				uint64_t want;
				if (len == cs) {
					if (kk >= e->nexp || !e->exp || e->exp_bad[kk]) {
						atomic_fetch_add(&c->vdone, len);
						continue; /* reported in pass 5 */
					}
					want = e->exp[kk];
				} else {
					want = r->tail_csum;
				}
				if (recfs_chunk_csum(r->uid, kk, buf + j * cs, len) != want)
					bad_add(c, x, kk, v->member, 0);
				atomic_fetch_add(&c->vdone, len);
			}
			k += cnt * nm;
		}
	}
	recfs_free(buf);
out:
	pthread_mutex_lock(&c->lock);
	atomic_fetch_add(v->finished, 1);
	pthread_cond_signal(&c->done);
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

static int cmp_bad(const void *x, const void *y)
{
	const struct ck_bad *a = x, *b = y;
	if (a->rec != b->rec)
		return a->rec < b->rec ? -1 : 1;
	return a->chunk < b->chunk ? -1 : a->chunk > b->chunk;
}

int ck_pass6(struct ck *c)
{
	pthread_t th[RECFS_MAX_MEMBERS * CK_VERIFY_WORKERS];
	struct vctx vc[RECFS_MAX_MEMBERS * CK_VERIFY_WORKERS];
	bool started[RECFS_MAX_MEMBERS * CK_VERIFY_WORKERS] = {0};
	atomic_uint finished = 0;
	unsigned nstarted = 0;
	uint64_t total = 0;
	struct timespec t0, t1;
	struct ck_member *m;

	if (c->o->verbose)
		ck_out(c, "Pass 6: data checksums");
	for (uint32_t x = 0; x < c->nrec; x++)
		if (!c->rec[x].drop)
			total += c->rec[x].r.committed_len;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	FOR_MEMBERS(c, i, m) {
		(void)m;
		for (unsigned w = 0; w < CK_VERIFY_WORKERS; w++) {
			unsigned t = i * CK_VERIFY_WORKERS + w;
			vc[t].c = c;
			vc[t].member = i;
			vc[t].worker = w;
			vc[t].finished = &finished;
			if (pthread_create(&th[t], NULL, verify_member, &vc[t]) == 0) {
				started[t] = true;
				nstarted++;
			}
		}
	}
	pthread_mutex_lock(&c->lock);
	while (atomic_load(&finished) < nstarted) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 200 * 1000 * 1000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&c->done, &c->lock, &ts);
		if (c->o->progress && atomic_load(&finished) < nstarted) {
			pthread_mutex_unlock(&c->lock);
			c->o->progress(c->o->ctx, atomic_load(&c->vdone), total);
			pthread_mutex_lock(&c->lock);
		}
	}
	pthread_mutex_unlock(&c->lock);
	for (unsigned i = 0; i < RECFS_MAX_MEMBERS * CK_VERIFY_WORKERS; i++)
		if (started[i])
			pthread_join(th[i], NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (c->o->progress)
		c->o->progress(c->o->ctx, atomic_load(&c->vdone), total);
	c->st->verified_bytes = atomic_load(&c->vdone);
	if (atomic_load(&c->verify_oom)) {
		ck_out(c, "verify: out of memory for read buffers: not every chunk was read");
		c->status |= RECFS_FSCK_ERROR;
	}
	c->st->verify_ns = (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000000ull +
			   (uint64_t)(t1.tv_nsec - t0.tv_nsec);
	if (c->nbad)
		qsort(c->bad, c->nbad, sizeof(*c->bad), cmp_bad);
	for (size_t b = 0, listed = 0; b < c->nbad; b++) {
		const struct ck_bad *bd = &c->bad[b];
		const struct recfs_rec *r = &c->rec[bd->rec].r;
		struct recfs_pctx pc = {0};
		uint64_t end = (bd->chunk + 1) * c->g.chunk_size;
		char why[96];
		if (b == 0 || bd->rec != c->bad[b - 1].rec)
			listed = 0;
		c->st->bad_chunks++;
		if (listed++ == CK_BAD_LINES) {
			size_t more = 0;
			while (b + more < c->nbad && c->bad[b + more].rec == bd->rec)
				more++;
			ck_out(c, "(and %zu more bad chunks in '%s')", more, r->name);
			c->st->bad_chunks += more - 1;
			b += more - 1;
			continue;
		}
		if (end > r->committed_len)
			end = r->committed_len;
		pc.name = r->name;
		pc.a = bd->chunk * c->g.chunk_size;
		pc.b = end - 1;
		pc.c = bd->chunk;
		pc.member = c->a[c->at[bd->member]].dev->path;
		snprintf(why, sizeof(why), "%s", strerror(-bd->io));
		pc.str = why;
		ck_problem(c, bd->io ? PR_DATA_IO : PR_DATA_BAD, &pc);
	}
	if (c->bad_unlisted) {
		ck_out(c, "(and %llu more bad chunks not listed)", (unsigned long long)c->bad_unlisted);
		c->st->bad_chunks += c->bad_unlisted;
		c->status |= RECFS_FSCK_UNCORRECTED;
	}
	/* chunks on missing members: one line per recording and member */
	for (uint32_t x = 0; x < c->nrec && c->degraded; x++) {
		const struct recfs_rec *r = &c->rec[x].r;
		uint64_t n[RECFS_MAX_MEMBERS] = {0}, bytes[RECFS_MAX_MEMBERS] = {0};
		if (c->rec[x].drop)
			continue;
		for (uint64_t k = 0; k * c->g.chunk_size < r->committed_len; k++) {
			unsigned mi;
			uint64_t mo, len = r->committed_len - k * c->g.chunk_size;
			recfs_map(&c->g, r->ext_start + k * c->g.chunk_size, &mi, &mo);
			if (c->at[mi] >= 0)
				continue;
			n[mi]++;
			bytes[mi] += len < c->g.chunk_size ? len : c->g.chunk_size;
		}
		for (unsigned mi = 0; mi < c->g.members; mi++) {
			struct recfs_pctx pc = {0};
			if (!n[mi])
				continue;
			pc.name = r->name;
			pc.a = n[mi];
			pc.b = bytes[mi];
			pc.mindex = mi;
			ck_problem(c, PR_DATA_MISSING, &pc);
		}
	}
	return 0;
}
