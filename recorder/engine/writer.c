/* SPDX-License-Identifier: MIT */
/*
 * The writer: every full ring slot to its member through libaio.
 */
#include <libaio.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rr.h"

struct wr_slot {
	struct iocb cb;
	uint64_t chunk;
	uint64_t t_submit;
	unsigned member;
	uint8_t *buf;   /* the request: len bytes from buf to off on the member */
	uint64_t off;
	uint32_t len;   /* bytes written (padded to a block) */
	uint32_t dlen;  /* data bytes */
	uint32_t wrote; /* of len, by earlier short completions */
	bool done;
};

/* (Re)arm sl's request for the part of it not yet written.  t_submit
 * stays the first submission's: a write's latency includes its resends. */
static void wr_prep(struct rr *r, struct wr_slot *sl)
{
	struct recfs_dev *d = recfs_pack_dev(r->p, sl->member);
	io_prep_pwrite(&sl->cb, d->fd, sl->buf + sl->wrote, sl->len - sl->wrote,
		       (long long)(sl->off + sl->wrote));
	io_set_eventfd(&sl->cb, r->aio_efd);
	sl->cb.data = sl;
}

/* Create the segment's recording once its first byte is in the ring. */
static int wr_create(struct rr *r, struct rr_seg *s)
{
	uint32_t learned = atomic_load(&r->learned_frame);
	struct recfs_input in = { .format = r->fmt_vdif ? RECFS_FMT_VDIF : RECFS_FMT_RAW,
				  .frame_size = learned ? learned : r->frame_size };
	if (s->frame_size) /* UDP: the size its first datagram came in */
		in.frame_size = s->frame_size;
	else if (r->in_kind == RR_IN_UDP && !r->fmt_vdif)
		in.frame_size = r->packet_size;
	snprintf(in.source, sizeof(in.source), "%s", r->input_spec);
	pthread_mutex_lock(&r->seg_lock);
	pthread_mutex_lock(r->pack_lock);
	uint64_t hint = 0;
	struct recfs_pack_info info;
	/* The streams of one scan share the free space: each takes the
	 * largest free extent over the streams still to create theirs, so N
	 * streams get about 1/N each whatever order they create in (1/N of
	 * what was left at each create gave the last of 2 streams a quarter
	 * of the pack, and its scan stopped while the pack had room). */
	if (r->share_left) {
		unsigned *left = &r->share_left[(size_t)(s - r->segs)];
		if (*left > 1 && recfs_pack_info(r->p, &info) == 0)
			hint = info.largest_free / *left;
		if (*left)
			(*left)--;
	}
	if (s->size_limit && (hint == 0 || s->size_limit < hint))
		hint = s->size_limit;
	if (!r->daemon)
		hint = 0; /* recfs-record: the largest free extent, as always */
	int err = recfs_rec_create(r->p, s->name, &in, hint, &r->rec);
	if (err == -ENOSPC && hint) /* no extent that large: the largest there is */
		err = recfs_rec_create(r->p, s->name, &in, 0, &r->rec);
	if (!err)
		atomic_store_explicit(&r->created, true, memory_order_release);
	pthread_mutex_unlock(r->pack_lock);
	pthread_mutex_unlock(&r->seg_lock);
	if (err)
		return err;
	uint64_t lim = atomic_load(&s->limit);
	if (r->rec.alloc_len < lim) {
		atomic_store(&s->limit_is_alloc, true);
		atomic_store(&s->limit, r->rec.alloc_len);
	}
	return 0;
}

static int wr_csum_push(struct rr *r, uint64_t k, uint64_t csum)
{
	pthread_mutex_lock(&r->csum_lock);
	if (r->csum_n == r->csum_cap) {
		uint64_t cap = r->csum_cap ? r->csum_cap * 2 : 4096;
		uint64_t *v = realloc(r->csums, cap * sizeof(*v));
		if (!v) {
			pthread_mutex_unlock(&r->csum_lock);
			return -ENOMEM;
		}
		r->csums = v;
		r->csum_cap = cap;
	}
	r->csums[k - r->csum_base] = csum;
	r->csum_n = k - r->csum_base + 1;
	pthread_mutex_unlock(&r->csum_lock);
	return 0;
}

/* What the writer keeps from segment to segment. */
struct wr_ctx {
	io_context_t ctx;
	unsigned cap;
	struct wr_slot *slots;  /* one per ring slot */
	struct iocb **pending;
	struct io_event *ev;
	uint8_t *tbuf;          /* the partial chunk's copy on a stall */
};

/* A write failed: recfs-record stops; recfsd's receiver closes the scan
 * and no more scans are taken. */
static void wr_stop_ioerr(struct rr *r)
{
	atomic_store(&r->wr_failed, true);
	if (!r->daemon)
		rr_set_stop(r, RR_STOP_IOERR);
}

static void wr_fail(struct rr *r, int member, int err)
{
	r->err_member = member;
	r->err_errno = err;
	wr_stop_ioerr(r);
}

/* AIO context and slots first (rr_start): a failure here creates nothing */
int wr_setup(struct rr *r)
{
	struct wr_ctx *w = r->wr = calloc(1, sizeof(*w));
	if (!w)
		return recfs_seterr(-ENOMEM, "out of memory");
	w->cap = r->g->members * r->qd;
	int err = io_setup((int)w->cap, &w->ctx);
	if (err) {
		w->ctx = 0;
		return recfs_seterr(err, "io_setup(%u): %s", w->cap, strerror(-err));
	}
	w->slots = calloc(r->nslots, sizeof(*w->slots));
	w->pending = calloc(w->cap, sizeof(*w->pending));
	w->ev = calloc(w->cap, sizeof(*w->ev));
	if (posix_memalign((void **)&w->tbuf, RECFS_BLOCK, r->chunk))
		w->tbuf = NULL;
	if (!w->slots || !w->pending || !w->ev || !w->tbuf)
		return recfs_seterr(-ENOMEM, "out of memory");
	return 0;
}

void wr_teardown(struct rr *r)
{
	struct wr_ctx *w = r->wr;
	if (!w)
		return;
	if (w->ctx)
		io_destroy(w->ctx);
	free(w->slots);
	free(w->pending);
	free(w->ev);
	free(w->tbuf);
	free(w);
	r->wr = NULL;
}

static void wr_wait(struct rr *r)
{
	struct pollfd pf = { .fd = r->data_efd, .events = POLLIN };
	if (poll(&pf, 1, 100) > 0)
		rr_drain(r->data_efd);
}

/* Write segment s: returns its final length (the prefix every write of
 * which completed); -1 if no recording was created. */
static int64_t wr_seg(struct rr *r, struct wr_ctx *w, struct rr_seg *s)
{
	const uint64_t cs = r->chunk, sbase = s->base / cs; /* its first ring chunk */
	unsigned inflight[RECFS_MAX_MEMBERS] = { 0 }, total_inflight = 0;
	const unsigned cap = w->cap;
	struct wr_slot *const slots = w->slots;
	struct iocb **const pending = w->pending;
	struct io_event *const ev = w->ev;
	uint8_t *const tbuf = w->tbuf;
	const io_context_t ctx = w->ctx;
	unsigned npending = 0;
	uint64_t next = 0, done = 0, pushed = 0;
	int64_t ret = -1;
	struct wr_slot tail_sl = { 0 };   /* the partial chunk on a stall */
	bool tail_busy = false;
	uint64_t tail_cs = 0;
	bool eof;

	/* wait for the first byte; VDIF in a byte stream also for its frame
	 * size (stored at create), a chunk, or the end of the input */
	const bool wait_frame = r->fmt_vdif && r->in_kind == RR_IN_FD;
	for (;;) {
		uint64_t f = rr_seg_bytes(r, s, &eof);
		if (f > 0 && (!wait_frame || eof || f >= cs || atomic_load(&r->learned_frame))) {
			r->t_first = rr_mono_ns();
			int cerr = wr_create(r, s);
			if (cerr) {
				/* recfsd's scan result, recfs-record's verdict (rr_finish) */
				snprintf(s->msg, sizeof(s->msg), "%s", recfs_errmsg());
				if (cerr == -ENOSPC) {
					atomic_store(&s->limit_is_alloc, true);
					atomic_store(&s->limit, 0); /* the receiver closes it: full */
					if (!r->daemon)
						rr_set_stop(r, RR_STOP_FULL);
				} else {
					wr_fail(r, -1, -cerr);
				}
				r->err_errno = -cerr;
				return -1;
			}
			break;
		}
		if (eof && f == 0)
			return -1;
		wr_wait(r);
	}

	/* the committer rewrites r->rec; the writer keeps its own copy of
	 * what never changes while recording */
	const uint64_t ext_start = r->rec.ext_start, alloc_len = r->rec.alloc_len, uid = r->rec.uid;

	bool failed = false;
	for (;;) {
		bool progress = false, again = false;
		uint64_t f = rr_seg_bytes(r, s, &eof);
		if (f > alloc_len) {
			/* more than fits: cut; the receiver closes the segment
			 * at its limit (recfs-record stops there) */
			f = alloc_len;
			if (!r->daemon)
				rr_set_stop(r, RR_STOP_FULL);
		}
		uint64_t ready = eof ? (f + cs - 1) / cs : f / cs;

		/* queue every ready chunk whose member has room, in order */
		uint64_t first_new = next;
		while (!failed && !tail_busy && next < ready && total_inflight < cap) {
			uint64_t lo;
			unsigned m;
			recfs_map(r->g, ext_start + next * cs, &m, &lo);
			if (inflight[m] >= r->qd)
				break;
			struct wr_slot *sl = &slots[(sbase + next) % r->nslots];
			uint8_t *buf = r->ring + ((sbase + next) % r->nslots) * cs;
			uint32_t len = (uint32_t)(f - next * cs < cs ? f - next * cs : cs);
			uint32_t plen = (len + RECFS_BLOCK - 1) / RECFS_BLOCK * RECFS_BLOCK;
			if (plen > len)
				memset(buf + len, 0, plen - len);
			sl->chunk = next;
			sl->member = m;
			sl->buf = buf;
			sl->off = lo;
			sl->len = plen;
			sl->dlen = len;
			sl->wrote = 0;
			sl->done = false;
			sl->t_submit = rr_mono_ns();
			wr_prep(r, sl);
			pending[npending++] = &sl->cb;
			inflight[m]++;
			total_inflight++;
			next++;
		}
		if (npending && !failed) {
			int n = io_submit(ctx, (long)npending, pending);
			if (n > 0) {
				memmove(pending, pending + n, (npending - (unsigned)n) * sizeof(*pending));
				npending -= (unsigned)n;
				progress = true;
			} else if (n == -EAGAIN || n == 0) {
				again = true; /* the kernel's AIO resources: retry soon */
			} else if (n != -EINTR) {
				struct wr_slot *sl = pending[0]->data;
				r->err_member = (int)sl->member;
				r->err_errno = -n;
				r->err_off = sl->chunk * cs;
				wr_stop_ioerr(r);
				failed = true;
			}
		}
		if (npending && failed) {
			/* after a failure nothing more goes to the members (a dying
			 * disk could hold each request for its whole timeout):
			 * forget what is not submitted */
			for (unsigned i = 0; i < npending; i++) {
				struct wr_slot *ps = pending[i]->data;
				inflight[ps->member]--;
				total_inflight--;
				if (ps == &tail_sl)
					tail_busy = false;
			}
			npending = 0;
		}

		/* checksums while the writes are in flight (the data does not
		 * change; the slot is not freed before done, below) */
		for (uint64_t k = first_new; k < next; k++) {
			struct wr_slot *sl = &slots[(sbase + k) % r->nslots];
			const uint8_t *buf = r->ring + ((sbase + k) % r->nslots) * cs;
			if (wr_csum_push(r, k, recfs_chunk_csum(uid, k, buf, sl->dlen))) {
				if (!failed) {
					r->err_member = -1;
					r->err_errno = ENOMEM;
					wr_stop_ioerr(r);
					failed = true;
				}
			} else if (k == pushed) {
				pushed = k + 1;
			}
		}

		/* the input stalled inside a chunk: write a padded copy of
		 * the partial chunk for the committer; the slot stays, and the
		 * chunk is written again in place when it fills */
		if (atomic_load(&r->tail_req)) {
			if (eof || failed || f >= (next + 1) * cs) {
				atomic_store(&r->tail_req, false); /* not needed */
			} else if (!tail_busy && npending == 0 && done == next && ready == next &&
				   f > next * cs) {
				uint32_t len = (uint32_t)(f - next * cs);
				uint32_t plen = (len + RECFS_BLOCK - 1) / RECFS_BLOCK * RECFS_BLOCK;
				uint64_t lo;
				unsigned m;
				memcpy(tbuf, r->ring + ((sbase + next) % r->nslots) * cs, len);
				memset(tbuf + len, 0, plen - len);
				recfs_map(r->g, ext_start + next * cs, &m, &lo);
				tail_sl.chunk = next;
				tail_sl.member = m;
				tail_sl.buf = tbuf;
				tail_sl.off = lo;
				tail_sl.len = plen;
				tail_sl.dlen = len;
				tail_sl.wrote = 0;
				tail_sl.t_submit = rr_mono_ns();
				wr_prep(r, &tail_sl);
				tail_cs = recfs_chunk_csum(uid, next, tbuf, len);
				struct iocb *one = &tail_sl.cb;
				int n = io_submit(ctx, 1, &one);
				if (n == 1) {
					atomic_store(&r->tail_req, false);
					inflight[m]++;
					total_inflight++;
					tail_busy = true;
					progress = true;
				} else if (n == -EAGAIN || n == 0 || n == -EINTR) {
					again = true; /* tail_req stays: tried again soon */
				} else {
					atomic_store(&r->tail_req, false);
					r->err_member = (int)m;
					r->err_errno = -n;
					r->err_off = next * cs;
					wr_stop_ioerr(r);
					failed = true;
				}
			}
		}

		/* reap */
		struct timespec zero = { 0, 0 };
		int got = total_inflight - npending > 0 ? io_getevents(ctx, 0, cap, ev, &zero) : 0;
		for (int i = 0; i < got; i++) {
			struct wr_slot *sl = ev[i].data;
			struct rr_member_stat *ms = &r->mst[sl->member];
			inflight[sl->member]--;
			total_inflight--;
			long res = (long)ev[i].res;
			uint32_t left = sl->len - sl->wrote;
			if (res > 0 && res < (long)left && res % RECFS_BLOCK == 0 && !failed) {
				/* a short write (the device took part of it): send
				 * the rest, as fio requeues a residual; no progress
				 * at all is an error, below */
				sl->wrote += (uint32_t)res;
				rr_stat_add(&ms->short_writes, 1);
				wr_prep(r, sl);
				pending[npending++] = &sl->cb;
				inflight[sl->member]++;
				total_inflight++;
				continue;
			}
			/* one write per request, from its first submission */
			uint64_t lat = rr_mono_ns() - sl->t_submit;
			rr_stat_add(&ms->writes, 1);
			rr_stat_add(&ms->sum_ns, lat);
			if (lat > atomic_load_explicit(&ms->max_ns, memory_order_relaxed))
				atomic_store_explicit(&ms->max_ns, lat, memory_order_relaxed);
			if (res != (long)left) {
				rr_stat_add(&ms->errors, 1);
				if (!failed || r->err_errno == 0) {
					r->err_member = (int)sl->member;
					r->err_errno = res < 0 ? (int)-res : EIO;
					r->err_short = res < 0 ? -1 : (long)sl->wrote + res;
					r->err_len = sl->len;
					r->err_off = sl->chunk * cs;
				}
				failed = true;
				wr_stop_ioerr(r);
				if (sl == &tail_sl)
					tail_busy = false;
				continue;
			}
			if (sl == &tail_sl) {
				tail_busy = false;
				pthread_mutex_lock(&r->csum_lock);
				r->tail_len = sl->chunk * cs + sl->dlen;
				r->tail_csum = tail_cs;
				pthread_mutex_unlock(&r->csum_lock);
				atomic_store(&r->tail_ready, true);
				pthread_mutex_lock(&r->cm_lock);
				pthread_cond_signal(&r->cm_cond);
				pthread_mutex_unlock(&r->cm_lock);
				continue;
			}
			sl->done = true;
		}
		if (got > 0)
			progress = true;
		uint64_t d0 = done;
		/* never past a chunk whose checksum is missing */
		while (done < next && done < pushed && slots[(sbase + done) % r->nslots].done) {
			slots[(sbase + done) % r->nslots].done = false;
			done++;
		}
		if (done != d0) {
			atomic_store_explicit(&r->done_bytes, done * cs < f ? done * cs : f,
					      memory_order_release);
			atomic_store_explicit(&r->done_chunks, done, memory_order_release);
			atomic_store_explicit(&r->released, s->base + done * cs, memory_order_release);
			atomic_fetch_add_explicit(&r->tot_written, (done - d0) * cs, memory_order_relaxed);
			rr_kick(r->space_efd);
		}

		if (failed && total_inflight == npending) {
			ret = (int64_t)(done * cs < f ? done * cs : f);
			break;
		}
		if (eof && !failed && done == ready && npending == 0) {
			ret = (int64_t)f;
			break;
		}
		if (!progress) {
			struct pollfd pf[2] = { { .fd = r->aio_efd, .events = POLLIN },
						{ .fd = r->data_efd, .events = POLLIN } };
			if (poll(pf, 2, again ? 1 : 100) > 0) {
				if (pf[0].revents)
					rr_drain(r->aio_efd);
				if (pf[1].revents)
					rr_drain(r->data_efd);
			}
		}
	}
	return ret;
}

/* The receiver closed segment s (or ended): free its part of the ring. */
static void wr_seg_release(struct rr *r, struct rr_seg *s)
{
	bool eof;
	while (rr_seg_bytes(r, s, &eof), !eof)
		wr_wait(r);
	atomic_store_explicit(&r->released, s->after, memory_order_release);
	rr_kick(r->space_efd);
}

int64_t wr_run(struct rr *r)
{
	int64_t len = -1;
	while (atomic_load_explicit(&r->seg_rcv, memory_order_acquire) == 0 &&
	       atomic_load_explicit(&r->segs[0].state, memory_order_acquire) == RR_SEG_QUEUED &&
	       !atomic_load_explicit(&r->eof, memory_order_acquire))
		wr_wait(r);
	if (atomic_load(&r->segs[0].state) != RR_SEG_QUEUED)
		len = wr_seg(r, r->wr, &r->segs[0]);
	return len;
}

/* Start segment n's bookkeeping: the committer sees nothing until it is
 * created. */
static void wr_seg_begin(struct rr *r, uint64_t n, struct rr_seg *s)
{
	pthread_mutex_lock(&r->seg_lock);
	atomic_store(&r->created, false);
	memset(&r->rec, 0, sizeof(r->rec));
	r->name = s->name;
	r->t_first = 0;
	r->cm_err = 0;
	r->cm_msg[0] = 0;
	memset(&r->stage, 0, sizeof(r->stage));
	r->durable_len = 0;
	atomic_store(&r->done_bytes, 0);
	atomic_store(&r->done_chunks, 0);
	atomic_store(&r->tail_req, false);
	atomic_store(&r->tail_ready, false);
	pthread_mutex_lock(&r->csum_lock);
	r->csum_base = r->csum_n = 0;
	r->tail_len = r->tail_csum = 0;
	pthread_mutex_unlock(&r->csum_lock);
	atomic_store(&r->seg_wr, n);
	pthread_mutex_unlock(&r->seg_lock);
}

/* Seal segment s at the length written; its result for the control plane. */
static void wr_seg_end(struct rr *r, struct rr_seg *s, int64_t len)
{
	pthread_mutex_lock(&r->seg_lock);
	int state = RR_SEG_SEALED;
	if (atomic_load(&r->created)) {
		if (cm_seal(r, len)) {
			snprintf(s->msg, sizeof(s->msg), "%s", recfs_errmsg());
			state = RR_SEG_FAILED;
			atomic_store(&r->wr_failed, true);
		} else if (r->err_errno && !s->msg[0]) {
			if (r->err_member >= 0)
				snprintf(s->msg, sizeof(s->msg), "member %d (%s): write failed: %s",
					 r->err_member, recfs_pack_dev(r->p, (unsigned)r->err_member)->path,
					 strerror(r->err_errno));
			else
				snprintf(s->msg, sizeof(s->msg), "writer failed: %s", strerror(r->err_errno));
		}
		s->rec = r->rec;
		s->len = r->rec.committed_len;
		atomic_store(&r->created, false);
	} else if (s->msg[0]) {
		state = RR_SEG_FAILED; /* not created */
	}
	atomic_store_explicit(&s->state, state, memory_order_release);
	pthread_mutex_unlock(&r->seg_lock);
}

void *wr_main(void *arg)
{
	struct rr *r = arg;

	for (uint64_t n = 0;; n++) {
		struct rr_seg *s = rr_seg_at(r, n);
		/* wait until segment n is open, or nothing more will come */
		for (;;) {
			bool posted = atomic_load_explicit(&r->seg_posted, memory_order_acquire) > n;
			if (posted && atomic_load_explicit(&s->state, memory_order_acquire) != RR_SEG_QUEUED)
				break;
			if (atomic_load_explicit(&r->eof, memory_order_acquire) ||
			    (!posted && atomic_load(&r->wr_quit)))
				break;
			wr_wait(r);
		}
		if (atomic_load_explicit(&s->state, memory_order_acquire) == RR_SEG_QUEUED ||
		    atomic_load_explicit(&r->seg_posted, memory_order_acquire) <= n) {
			/* the receiver ended first: what was posted never opened */
			if (atomic_load(&r->seg_posted) > n) {
				snprintf(s->msg, sizeof(s->msg), "the input stopped before the scan began");
				atomic_store(&s->state, RR_SEG_FAILED);
				atomic_store(&r->seg_done, n + 1);
				continue;
			}
			break;
		}
		wr_seg_begin(r, n, s);
		int64_t len = -1;
		if (!atomic_load(&r->wr_failed))
			len = wr_seg(r, r->wr, s);
		else if (!s->msg[0])
			snprintf(s->msg, sizeof(s->msg), "a member failed: no more scans on this pack");
		wr_seg_release(r, s);
		wr_seg_end(r, s, len);
		atomic_store_explicit(&r->seg_done, n + 1, memory_order_release);
	}
	return NULL;
}

