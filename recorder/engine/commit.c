/* SPDX-License-Identifier: MIT */
/*
 * The committer: makes the written prefix durable every commit interval.
 */
#include <time.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rr.h"

/* Checksums of chunks [from, to), copied out under the lock, for a commit
 * at len bytes: when len is the partial chunk the writer wrote on a stall,
 * the last one is that write's.  NULL when one is missing (never pushed:
 * the array could not grow) or out of memory. */
static uint64_t *cm_csums(struct rr *r, uint64_t from, uint64_t to, uint64_t len)
{
	uint64_t *v = malloc((to - from + 1) * sizeof(*v));
	if (!v)
		return NULL;
	pthread_mutex_lock(&r->csum_lock);
	uint64_t n = to - from;
	bool tail = len % r->chunk && len == r->tail_len;
	if (tail)
		n--;
	if (from < r->csum_base || from + n > r->csum_base + r->csum_n) {
		pthread_mutex_unlock(&r->csum_lock);
		free(v);
		return NULL;
	}
	if (n)
		memcpy(v, r->csums + (from - r->csum_base), n * sizeof(*v));
	if (tail)
		v[n] = r->tail_csum;
	pthread_mutex_unlock(&r->csum_lock);
	return v;
}

/* Drop checksums below chunk `upto` (committed). */
static void cm_csums_trim(struct rr *r, uint64_t upto)
{
	pthread_mutex_lock(&r->csum_lock);
	if (upto > r->csum_base) {
		uint64_t k = upto - r->csum_base;
		memmove(r->csums, r->csums + k, (r->csum_n - k) * sizeof(*r->csums));
		r->csum_n -= k;
		r->csum_base = upto;
	}
	pthread_mutex_unlock(&r->csum_lock);
}

/* The loss snapshot to store with `len` bytes of the writer's segment: the
 * receiver's latest while it fills that segment, its final one once closed.
 * Gaps past len are left out. */
static void cm_loss(struct rr *r, uint64_t len, struct recfs_loss *out)
{
	uint64_t n = atomic_load(&r->seg_wr);
	struct rr_seg *s = rr_seg_at(r, n);
	pthread_mutex_lock(&r->loss_lock);
	if (atomic_load_explicit(&s->state, memory_order_acquire) >= RR_SEG_ENDED || r->loss_pub_seg != n)
		*out = s->loss;
	else
		*out = r->loss_pub;
	pthread_mutex_unlock(&r->loss_lock);
	uint32_t k = 0;
	for (uint32_t i = 0; i < out->gap_count; i++)
		if (out->gaps[i].offset <= len)
			out->gaps[k++] = out->gaps[i];
	out->gap_count = k;
}

void rr_gflush_init(struct rr_gflush *g)
{
	memset(g, 0, sizeof(*g));
	pthread_mutex_init(&g->m, NULL);
	pthread_cond_init(&g->c, NULL);
}

void rr_gflush_enter(struct rr_gflush *g)
{
	pthread_mutex_lock(&g->m);
	g->staging++;
	pthread_mutex_unlock(&g->m);
}

int rr_gflush(struct rr_gflush *g, struct recfs_pack *p, bool flush)
{
	pthread_mutex_lock(&g->m);
	if (--g->staging == 0)
		pthread_cond_broadcast(&g->c); /* a waiting leader may start */
	uint64_t need = g->started + 1; /* one that starts after this call */
	while (flush && g->done < need) {
		/* while another committer stages, wait: its writes join this
		 * flush (committers wake together, so one flush serves all) */
		if (g->running || g->staging) {
			pthread_cond_wait(&g->c, &g->m);
			continue;
		}
		g->running = true;
		uint64_t mine = ++g->started;
		pthread_mutex_unlock(&g->m);
		/* without the pack lock: the other committers stage meanwhile
		 * (their writes wait for the next flush) */
		int err = recfs_pack_flush(p);
		pthread_mutex_lock(&g->m);
		g->running = false;
		g->done = mine;
		g->err = err;
		g->flushes++;
		pthread_cond_broadcast(&g->c);
	}
	int err = flush ? g->err : 0;
	pthread_mutex_unlock(&g->m);
	return err;
}

/* Commit (or seal) the recording at len bytes.  A commit is pipelined
 * (recfs_rec_commit_stage): it writes the entry the last one staged and
 * the slots of chunks up to len, then one flush for the pack; r->rec is
 * then the durable entry, one commit behind the durable data.  A seal
 * first writes the staged entry, then seals as recfs_rec_seal does. */
int cm_commit(struct rr *r, uint64_t len, bool seal)
{
	uint64_t have = r->stage.staged ? r->stage.next.committed_len : r->rec.committed_len;
	uint64_t from = have / r->chunk;
	uint64_t to = (len + r->chunk - 1) / r->chunk;
	struct recfs_loss loss;
	struct recfs_commit c = { .len = len, .loss = &loss };
	struct rr_seg *s = rr_seg_at(r, atomic_load(&r->seg_wr));
	if (seal && r->daemon) /* sealed after the fact: it ended when closed */
		c.end_ns = s->t_close_wall_ns;
	uint64_t *cs = NULL;
	int err;

	if (len > have) {
		/* only new bytes take checksums: a seal at the committed length
		 * keeps the ones stored (the partial chunk's is in the entry) */
		cs = cm_csums(r, from, to, len);
		if (!cs)
			return recfs_seterr(-ENOMEM, "'%s': out of memory for chunk checksums", r->name);
	}
	c.csums = cs;
	cm_loss(r, len, &loss);
	uint64_t t0 = rr_mono_ns();
	if (!seal)
		rr_gflush_enter(r->gflush);
	pthread_mutex_lock(r->pack_lock);
	err = recfs_rec_commit_stage(r->p, &r->rec, &r->stage, seal ? NULL : &c);
	pthread_mutex_unlock(r->pack_lock);
	if (!seal) {
		int ferr = rr_gflush(r->gflush, r->p, !err);
		if (!err && !(err = ferr))
			r->durable_len = r->rec.committed_len;
	}
	if (!err && seal) { /* its first flush makes the staged entry durable */
		pthread_mutex_lock(r->pack_lock);
		if (len < r->rec.committed_len) /* the staged length: durable */
			c.len = r->rec.committed_len;
		err = recfs_rec_seal(r->p, &r->rec, &c);
		pthread_mutex_unlock(r->pack_lock);
	}
	uint64_t dt = rr_mono_ns() - t0;
	free(cs);
	if (err)
		return err;
	if (seal)
		r->durable_len = r->rec.committed_len;
	r->commits++;
	if (dt > r->commit_max_ns)
		r->commit_max_ns = dt;
	cm_csums_trim(r, len / r->chunk);
	return 0;
}

int cm_seal(struct rr *r, int64_t len)
{
	uint64_t final_len = len < 0 ? 0 : (uint64_t)len;
	if (r->cm_err) /* the last commit failed: try once, at the durable length */
		final_len = r->rec.committed_len;
	if (!r->cm_err && r->tail_len > final_len) /* a member failed after a stall */
		final_len = r->tail_len;
	if (final_len < r->rec.committed_len) /* a committed partial chunk */
		final_len = r->rec.committed_len;
	return cm_commit(r, final_len, true);
}

void cm_progress(struct rr *r, bool final)
{
	if (!r->progress)
		return;
	uint64_t now = rr_mono_ns();
	struct rr_progress p = { .final = final };
	p.bytes = atomic_load(&r->done_bytes);
	uint64_t t0 = atomic_load_explicit(&r->created, memory_order_acquire) ? r->t_first : r->t_start;
	double secs = (double)(now - t0) * 1e-9;
	p.bytes_per_s = secs > 0 ? (uint64_t)((double)p.bytes / secs) : 0;
	uint64_t filled = atomic_load(&r->filled), rel = atomic_load(&r->released);
	p.ring_fill = filled > rel ? filled - rel : 0;
	p.ring_max = atomic_load(&r->ring_max);
	pthread_mutex_lock(&r->loss_lock);
	p.dropped = r->loss_pub.dropped;
	p.frames_lost = r->loss_pub.frames_lost;
	pthread_mutex_unlock(&r->loss_lock);
	r->progress(&p, r->progress_arg);
	r->progress_shown = true;
}

/* The next commit: on whole multiples of the interval since the program
 * started (t_start, the same for every stream of recfsd), so every
 * committer of the pack commits at the same moment and they share one
 * flush, and the first comes one whole interval after the start. */
static uint64_t cm_next(const struct rr *r)
{
	uint64_t now = rr_mono_ns(), o = r->t_start && r->t_start <= now ? r->t_start : now;
	return o + ((now - o) / r->commit_ns + 1) * r->commit_ns;
}

void *cm_main(void *arg)
{
	struct rr *r = arg;
	uint64_t tick = r->commit_ns < 500000000ull ? r->commit_ns : 500000000ull;
	uint64_t next_commit = cm_next(r);
	uint64_t prev_chunks = 0; /* done_chunks at the last commit */
	uint64_t prev_seg = 0;    /* the segment prev_chunks counts in */

	pthread_mutex_lock(&r->cm_lock);
	while (!r->cm_quit) {
		struct timespec ts;
		uint64_t now0 = rr_mono_ns(), wait = tick;
		if (next_commit > now0 && next_commit - now0 < wait)
			wait = next_commit - now0;
		clock_gettime(CLOCK_REALTIME, &ts);
		uint64_t ns = (uint64_t)ts.tv_nsec + wait;
		ts.tv_sec += (time_t)(ns / 1000000000ull);
		ts.tv_nsec = (long)(ns % 1000000000ull);
		pthread_cond_timedwait(&r->cm_cond, &r->cm_lock, &ts);
		if (r->cm_quit)
			break;
		pthread_mutex_unlock(&r->cm_lock);
		uint64_t now = rr_mono_ns();
		bool tail_ready = atomic_exchange(&r->tail_ready, false);
		pthread_mutex_lock(&r->seg_lock); /* the writer seals under it */
		if ((now >= next_commit || tail_ready) &&
		    atomic_load_explicit(&r->created, memory_order_acquire) && !r->cm_err) {
			/* whole chunks while they stream; when no chunk
			 * completed for a whole interval, the writer is asked
			 * to write the partial one too (a copy: the receiver
			 * goes on filling its slot), and that exact length is
			 * committed once written */
			uint64_t dc = atomic_load(&r->done_chunks);
			uint64_t len = atomic_load(&r->done_bytes) / r->chunk * r->chunk;
			pthread_mutex_lock(&r->csum_lock);
			uint64_t tl = r->tail_len;
			pthread_mutex_unlock(&r->csum_lock);
			if (tl > len)
				len = tl;
			uint64_t seg = atomic_load(&r->seg_wr);
			if (seg != prev_seg) { /* a new segment: its chunks count from 0 */
				prev_seg = seg;
				prev_chunks = 0;
			}
			if (now >= next_commit) {
				bool ended;
				uint64_t f = rr_seg_bytes(r, rr_seg_at(r, seg), &ended);
				if (dc == prev_chunks && f > len && f > dc * r->chunk) {
					atomic_store(&r->tail_req, true);
					rr_kick(r->data_efd);
				}
				prev_chunks = dc;
			}
			if (len > r->rec.committed_len) {
				int err = cm_commit(r, len, false);
				if (err) {
					r->cm_err = err;
					snprintf(r->cm_msg, sizeof(r->cm_msg), "%s", recfs_errmsg());
					rr_set_stop(r, RR_STOP_IOERR);
				}
			}
			next_commit = cm_next(r);
		}
		pthread_mutex_unlock(&r->seg_lock);
		cm_progress(r, false);
		pthread_mutex_lock(&r->cm_lock);
	}
	pthread_mutex_unlock(&r->cm_lock);
	return NULL;
}

