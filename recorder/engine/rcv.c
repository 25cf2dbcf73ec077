/* SPDX-License-Identifier: MIT */
/*
 * The receivers' common steps: publishing bytes to the writer, the per-step
 * budget, segments opened and closed, the datagram size taught and learned.
 */
#include <fcntl.h>
#include <limits.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rcv.h"

/* Publish new bytes [old, now): loss snapshot, wake the writer on a chunk. */
void rcv_publish(struct rr *r, uint64_t old, uint64_t now)
{
	atomic_store_explicit(&r->filled, now, memory_order_release);
	uint64_t rel = atomic_load_explicit(&r->released, memory_order_acquire);
	uint64_t fill = now > rel ? now - rel : 0;
	if (fill > atomic_load_explicit(&r->ring_max, memory_order_relaxed))
		atomic_store_explicit(&r->ring_max, fill, memory_order_relaxed);
	if (old / r->chunk != now / r->chunk || old % r->chunk == 0) {
		if (r->fmt_vdif || r->in_kind == RR_IN_UDP) {
			pthread_mutex_lock(&r->loss_lock);
			r->loss_pub = r->loss;
			pthread_mutex_unlock(&r->loss_lock);
		}
		rr_kick(r->data_efd);
	}
}

/* Common per-iteration checks; returns the byte budget for this step in
 * segment s (0: stop, or with *why set, the segment is at its limit: recfs-
 * record stops there, recfsd closes the segment). */
uint64_t rcv_budget(struct rr *r, struct rr_seg *s, uint64_t filled, uint64_t deadline,
		    enum rr_stop *why)
{
	*why = RR_STOP_NONE;
	if (atomic_load(r->stop_flag)) {
		rr_set_stop(r, RR_STOP_SIGNAL);
		return 0;
	}
	if (atomic_load(&r->stop))
		return 0;
	if (deadline && rr_mono_ns() >= deadline) {
		rr_set_stop(r, RR_STOP_DURATION);
		return 0;
	}
	if (r->daemon && atomic_load_explicit(&r->wr_failed, memory_order_relaxed)) {
		*why = RR_STOP_IOERR; /* the writer failed: close the scan */
		return 0;
	}
	uint64_t room = atomic_load(&s->limit), lim = s->base + room;
	if (lim < s->base)
		lim = UINT64_MAX;
	if (filled >= lim) {
		*why = atomic_load(&s->limit_is_alloc) ? RR_STOP_FULL : RR_STOP_SIZE;
		if (!r->daemon)
			rr_set_stop(r, *why);
		return 0;
	}
	return lim - filled;
}

/* recfsd between scans: wait up to 100 ms for a datagram or for a scan
 * posted (rcv_efd).  False when woken by a post (or by nothing): the
 * caller opens the scan first, so the datagram that follows record=on is
 * the scan's first, not idle.  (Blocked in recvmmsg, the receiver took
 * the first batch after record=on as idle: 12 to 25 datagrams of a stream
 * started right after record=on, in bench/daemon.sh.) */
bool rcv_idle_wait(int sock, int efd)
{
	struct pollfd pf[2] = { { .fd = sock, .events = POLLIN }, { .fd = efd, .events = POLLIN } };
	int n = poll(pf, 2, 100);
	if (n > 0 && pf[1].revents) {
		rr_drain(efd);
		return false;
	}
	return n > 0 && pf[0].revents;
}

/* The socket's drop count (SO_MEMINFO's SK_MEMINFO_DROPS, cumulative, 32
 * bits), read once a chunk rather than as a control message on every
 * datagram (SO_RXQ_OVFL: 3 % of the receiver's cycles); the recording's
 * `dropped` is ring-full plus kernel drops. */
void rcv_kernel_drops(struct rr *r)
{
	uint32_t mi[SK_MEMINFO_VARS];
	socklen_t len = sizeof(mi);
	if (getsockopt(r->in_fd, SOL_SOCKET, SO_MEMINFO, mi, &len) == 0 &&
	    len > SK_MEMINFO_DROPS * sizeof(uint32_t)) {
		uint32_t d = (uint32_t)(mi[SK_MEMINFO_DROPS] - r->ovfl_last);
		r->kernel_dropped += d;
		atomic_fetch_add_explicit(&r->tot_kernel_dropped, d, memory_order_relaxed);
		r->ovfl_last = mi[SK_MEMINFO_DROPS];
	}
	r->loss.dropped = r->ring_dropped + r->kernel_dropped;
}

/* ------------------------------------------------------------- segments */
/* Open segment seg_rcv at stream offset *filled (a chunk boundary): its
 * loss counters and VDIF tracker start afresh, its offsets count from 0. */
struct rr_seg *rcv_seg_open(struct rr *r, uint64_t filled, struct rr_vdif_track *vt)
{
	uint64_t n = atomic_load_explicit(&r->seg_rcv, memory_order_relaxed);
	struct rr_seg *s = rr_seg_at(r, n);
	if (r->in_kind == RR_IN_UDP && r->in_fd >= 0)
		rcv_kernel_drops(r); /* drops so far belong to no segment */
	pthread_mutex_lock(&r->loss_lock);
	memset(&r->loss, 0, sizeof(r->loss));
	r->ring_dropped = r->kernel_dropped = 0;
	r->loss_pub = r->loss;
	r->loss_pub_seg = n;
	pthread_mutex_unlock(&r->loss_lock);
	if (vt && vt->th) {
		/* its frame size is its first datagram's, not the input's
		 * first ever (the size may be learned anew between scans) */
		rr_vdif_track_free(vt);
		if (rr_vdif_track_init(vt, 0, &r->loss)) {
			snprintf(r->in_err, sizeof(r->in_err), "out of memory");
			rr_set_stop(r, RR_STOP_INPUT);
		}
	}
	s->base = filled;
	r->run_staged = 0;
	s->t_open_ns = rr_mono_ns();
	atomic_store_explicit(&s->end, UINT64_MAX, memory_order_relaxed);
	atomic_store_explicit(&s->state, RR_SEG_OPEN, memory_order_release);
	atomic_store_explicit(&r->seg_open, true, memory_order_release);
	rr_kick(r->data_efd);
	return s;
}

/* The segment's first datagram is in (at t_ns): how long after record=on. */
void rcv_first(struct rr *r, struct rr_seg *s, uint64_t t_ns)
{
	s->first_seen = true;
	atomic_store_explicit(&r->start_latency_ns, t_ns > s->t_post_ns ? t_ns - s->t_post_ns : 0,
			      memory_order_relaxed);
}

/* The open segment's datagram counters, for status? while it records. */
void rcv_seg_counts(struct rr *r, struct rr_seg *s)
{
	atomic_store_explicit(&s->rx, r->loss.packets, memory_order_relaxed);
	if (atomic_load_explicit(&s->wrong, memory_order_relaxed) != r->loss.wrong_size) {
		atomic_store_explicit(&s->wrong_len, r->last_wrong, memory_order_relaxed);
		atomic_store_explicit(&s->want_len, r->packet_size ? r->strip + r->packet_size : 0,
				      memory_order_relaxed);
		atomic_store_explicit(&s->wrong, r->loss.wrong_size, memory_order_relaxed);
	}
}

/* One datagram of the wrong size (len bytes with --strip), or n of them. */
void rcv_wrong(struct rr *r, uint64_t n, uint64_t len)
{
	r->loss.wrong_size += n;
	r->last_wrong = (uint32_t)len;
	atomic_fetch_add_explicit(&r->tot_wrong_size, n, memory_order_relaxed);
}

/* Close the open segment after its last whole datagram (*filled, cut at
 * its limit), and move *filled to the next chunk boundary, where the next
 * segment will start. */
void rcv_seg_close(struct rr *r, uint64_t *filled, enum rr_stop why, bool read_drops)
{
	uint64_t n = atomic_load_explicit(&r->seg_rcv, memory_order_relaxed);
	struct rr_seg *s = rr_seg_at(r, n);
	uint64_t end = *filled, room = atomic_load(&s->limit);
	if (room < end - s->base)
		end = s->base + room;
	if (read_drops && r->in_kind == RR_IN_UDP && r->in_fd >= 0)
		rcv_kernel_drops(r);
	if (r->run_staged) /* a run too short to teach its size */
		rcv_wrong(r, r->run_staged, r->strip + r->run_q);
	r->run_staged = 0;
	rcv_seg_counts(r, s);
	if (rr_blind(r->loss.packets, r->loss.wrong_size))
		atomic_fetch_add_explicit(&r->tot_blind, 1, memory_order_relaxed);
	pthread_mutex_lock(&r->loss_lock);
	s->loss = r->loss;
	s->ring_dropped = r->ring_dropped;
	s->kernel_dropped = r->kernel_dropped;
	r->loss_pub = r->loss;
	pthread_mutex_unlock(&r->loss_lock);
	atomic_fetch_add_explicit(&r->tot_frames_lost, r->loss.frames_lost, memory_order_relaxed);
	s->t_close_ns = rr_mono_ns();
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	s->t_close_wall_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	uint64_t next = (*filled + r->chunk - 1) / r->chunk * r->chunk;
	s->after = next;
	atomic_store_explicit(&s->why, (int)why, memory_order_relaxed);
	atomic_store_explicit(&s->end, end, memory_order_release);
	atomic_store_explicit(&s->state, RR_SEG_ENDED, memory_order_release);
	atomic_store_explicit(&r->seg_open, false, memory_order_release);
	atomic_store_explicit(&r->seg_rcv, n + 1, memory_order_release);
	*filled = next;
	atomic_store_explicit(&r->filled, next, memory_order_release);
	rr_kick(r->data_efd);
}

/* recfsd, between two batches: close the open segment when record=off
 * asked for it or a later one is posted, open the next one posted.  The open segment, or NULL
 * between scans. */
struct rr_seg *rcv_seg(struct rr *r, uint64_t *filled, struct rr_vdif_track *vt)
{
	uint64_t n = atomic_load_explicit(&r->seg_rcv, memory_order_relaxed);
	bool open = atomic_load_explicit(&r->seg_open, memory_order_relaxed);
	/* closed by record=off, or by the next scan posted behind it: a
	 * switch closes one and opens the next between the same two batches */
	if (open && (atomic_load_explicit(&r->seg_off, memory_order_acquire) > n ||
		     atomic_load_explicit(&r->seg_posted, memory_order_acquire) > n + 1)) {
		rcv_flush_run(r, rr_seg_at(r, n), filled, vt);
		rcv_seg_close(r, filled, RR_STOP_NONE, true);
		n++;
		open = false;
	}
	if (!open && atomic_load_explicit(&r->seg_posted, memory_order_acquire) > n) {
		/* one that waits for a VDIF second opens when rcv_udp sees
		 * it, or empty at once when record=off came first */
		if (rr_seg_at(r, n)->start_unix) {
			if (atomic_load_explicit(&r->seg_off, memory_order_acquire) <= n)
				return NULL;
			rcv_seg_open(r, *filled, vt);
			rcv_seg_close(r, filled, RR_STOP_NONE, false);
			return NULL;
		}
		return rcv_seg_open(r, *filled, vt);
	}
	return open ? rr_seg_at(r, n) : NULL;
}

/* The posted segment waiting for its VDIF second, or NULL. */
struct rr_seg *rcv_seg_waiting(struct rr *r)
{
	uint64_t n = atomic_load_explicit(&r->seg_rcv, memory_order_relaxed);
	if (atomic_load_explicit(&r->seg_open, memory_order_relaxed) ||
	    atomic_load_explicit(&r->seg_posted, memory_order_acquire) <= n)
		return NULL;
	struct rr_seg *s = rr_seg_at(r, n);
	return s->start_unix ? s : NULL;
}

/* Is this datagram (strip removed) the valid frame 0 of a second at or
 * after the segment's start time? */
bool rcv_at_second(const struct rr_seg *s, const uint8_t *d, size_t len)
{
	struct rr_vdif_hdr h;
	return len >= 16 && rr_vdif_decode(d, &h) && !h.invalid && h.frame_no == 0 &&
	       rr_vdif_unix(&h) >= s->start_unix;
}

/* ---------------------------------------------------- the datagram size */
/*
 * recfs-record takes the size of the first datagram that can teach one.
 * recfsd's is what RR_LEARN_RUN datagrams in a row agree on, learned anew
 * whenever such a run of another size arrives between scans or before a
 * scan's first byte: a stray datagram (a probe, a port scan's, a sender's
 * start-up packet) never decides what the stream is, and a stream that
 * changed size is followed at the next scan.
 */

/* Can this datagram (payload d, len bytes after --strip; d holds at least
 * the first 32 or len of them) teach the size?  Raw: any with a payload.
 * VDIF: only a frame whose header decodes and gives the datagram's own
 * length. */
bool rcv_can_teach(const struct rr *r, const uint8_t *d, uint64_t len)
{
	struct rr_vdif_hdr h;
	if (!r->fmt_vdif)
		return len > 0 && len <= UINT32_MAX;
	return len >= 16 && rr_vdif_decode(d, &h) && h.length == len;
}

/* The datagram size is len from now on; rcv_udp's tmp (NULL: none) follows. */
int rcv_set_size(struct rr *r, uint32_t len, uint8_t **tmp)
{
	if (tmp) {
		uint8_t *t = realloc(*tmp, len);
		if (!t) {
			snprintf(r->in_err, sizeof(r->in_err), "out of memory");
			rr_set_stop(r, RR_STOP_INPUT);
			return -ENOMEM;
		}
		*tmp = t;
	}
	r->packet_size = len;
	if (r->fmt_vdif)
		atomic_store(&r->learned_frame, len); /* stored at create */
	return 0;
}

/* recfsd: the run with one more datagram: its length now, 0 when this one
 * neither extends nor starts a run (it is of the size learned, or cannot
 * teach one). */
uint32_t rcv_run(struct rr *r, const uint8_t *d, uint64_t len)
{
	if (r->size_given || len == r->packet_size || !rcv_can_teach(r, d, len))
		return r->run_n = 0;
	if (!r->run_n || r->run_q != len) {
		r->run_q = (uint32_t)len;
		r->run_n = 0;
	}
	return ++r->run_n;
}

/* recfsd, a datagram no scan records: it may complete a run.  -1: out of
 * memory. */
int rcv_learn_idle(struct rr *r, const uint8_t *d, uint64_t len, uint8_t **tmp)
{
	if (rcv_run(r, d, len) < RR_LEARN_RUN)
		return 0;
	r->run_n = 0;
	return rcv_set_size(r, r->run_q, tmp);
}

/* The scan's first n datagrams of len bytes are in the ring at *filled
 * (the first arrived at t): recorded, up to budget bytes (not published). */
static void rcv_record_first(struct rr *r, struct rr_seg *s, uint64_t *filled, uint64_t budget, uint64_t n,
			     uint64_t len, struct rr_vdif_track *vt, uint64_t t)
{
	uint64_t old = *filled;
	s->frame_size = (uint32_t)len;
	for (uint64_t i = 0; r->fmt_vdif && i < n; i++) {
		uint8_t hdr[32] = { 0 };
		rr_ring_read(r, old + i * len, hdr, len < sizeof(hdr) ? len : sizeof(hdr));
		rr_vdif_frame(vt, hdr, (uint32_t)len, old + i * len - s->base);
	}
	*filled = old + (n * len < budget ? n * len : budget);
	atomic_fetch_add_explicit(&r->tot_bytes, *filled - old, memory_order_relaxed);
	rcv_first(r, s, t);
}

/* recfsd, a scan about to close with nothing recorded and no size learned
 * yet: the run it holds (shorter than RR_LEARN_RUN) is all it received of
 * one size, and is recorded; the size stays unlearned. */
void rcv_flush_run(struct rr *r, struct rr_seg *s, uint64_t *filled, struct rr_vdif_track *vt)
{
	if (!r->daemon || !r->run_staged || r->packet_size || *filled != s->base)
		return;
	uint64_t old = *filled;
	rcv_record_first(r, s, filled, atomic_load(&s->limit), r->run_staged, r->run_q, vt, r->run_t0);
	r->run_staged = 0;
	rcv_seg_counts(r, s);
	rcv_publish(r, old, *filled);
}

/* recfsd, a scan that has recorded nothing yet and a size learned, not
 * given: one datagram, len bytes after --strip at d.  One of the size
 * learned is the scan's first.  One of a run of another size waits in the
 * ring past *filled; when the run reaches RR_LEARN_RUN its size is the
 * stream's and its datagrams are the scan's first, none lost.  The rest are
 * the wrong size.  What it records moves *filled (not published); -1: out
 * of memory. */
int rcv_scan_first(struct rr *r, struct rr_seg *s, uint64_t *filled, uint64_t budget,
		   const uint8_t *d, uint64_t len, struct rr_vdif_track *vt, uint8_t **tmp)
{
	uint64_t t = rr_mono_ns(), n = 1, old = *filled;
	bool mine = len && len == r->packet_size;
	uint32_t q0 = r->run_q;
	uint32_t run = mine ? (r->run_n = 0) : rcv_run(r, d, len);
	r->loss.packets++;
	if (run <= 1 && r->run_staged) { /* the run it held is broken */
		rcv_wrong(r, r->run_staged, r->strip + q0);
		r->run_staged = 0;
	}
	if (!mine && !run) {
		rcv_wrong(r, 1, r->strip + len);
		return 0;
	}
	uint64_t at = old + (mine ? 0 : (uint64_t)r->run_staged * len);
	if (rr_ring_free(r, old) < at - old + len) { /* no room: as a full ring */
		r->ring_dropped++;
		r->loss.dropped = r->ring_dropped + r->kernel_dropped;
		atomic_fetch_add_explicit(&r->tot_ring_dropped, 1, memory_order_relaxed);
		return 0;
	}
	rr_ring_write(r, at, d, len);
	if (!mine) {
		if (!r->run_staged++)
			r->run_t0 = t;
		if (run < RR_LEARN_RUN)
			return 0;
		n = r->run_staged;
		t = r->run_t0;
		r->run_staged = r->run_n = 0;
		if (rcv_set_size(r, (uint32_t)len, tmp))
			return -1;
	}
	rcv_record_first(r, s, filled, budget, n, len, vt, t);
	return 0;
}

/* After a receive call failed: false for the receive timeout, a signal or
 * an empty socket (look at the flags, go on); true for a real failure,
 * which stops the input with its reason. */
bool rcv_failed(struct rr *r)
{
	if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
		return false;
	snprintf(r->in_err, sizeof(r->in_err), "%s: receive failed: %s", r->input_spec,
		 strerror(errno));
	rr_set_stop(r, RR_STOP_INPUT);
	return true;
}
