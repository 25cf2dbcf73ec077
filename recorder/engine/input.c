/* SPDX-License-Identifier: MIT */
/*
 * Inputs: the receiver thread for a byte stream, UDP or a generator.
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

#include "engine.h"

struct rr_vdif_stream {
	struct rr_vdif_track t;
	uint64_t next;     /* stream offset of the next frame header */
	bool resync;       /* looking for the first valid header */
};

/* Publish new bytes [old, now): loss snapshot, wake the writer on a chunk. */
static void rcv_publish(struct rr *r, uint64_t old, uint64_t now)
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

/* VDIF inside a byte stream: frames back to back, headers read in place.
 * Until the first valid header the scan moves in 8-byte steps and counts
 * the whole unreadable run as one invalid frame. */
static void rcv_vdif_scan(struct rr *r, struct rr_vdif_stream *vs, uint64_t filled)
{
	uint8_t hdr[32];
	while (vs->next + 32 <= filled) {
		rr_ring_read(r, vs->next, hdr, sizeof(hdr));
		if (!vs->t.frame_size) {
			struct rr_vdif_hdr h;
			if (!rr_vdif_decode(hdr, &h)) {
				if (!vs->resync)
					r->loss.invalid++;
				vs->resync = true;
				vs->next += 8;
				continue;
			}
			vs->resync = false;
		}
		uint32_t len = rr_vdif_frame(&vs->t, hdr, 0, vs->next);
		vs->next += len ? len : vs->t.frame_size; /* bad header: skip one frame */
	}
}

/* Wait for ring space; false when told to stop. */
static bool rcv_wait_space(struct rr *r, uint64_t filled)
{
	while (rr_ring_free(r, filled) == 0) {
		if (atomic_load(&r->stop) || rr_signal)
			return false;
		struct pollfd pf = { .fd = r->space_efd, .events = POLLIN };
		if (poll(&pf, 1, 100) > 0)
			rr_drain(r->space_efd);
	}
	return true;
}

/* Common per-iteration checks; returns the byte budget for this step in
 * segment s (0: stop, or with *why set, the segment is at its limit: recfs-
 * record stops there, recfsd closes the segment). */
static uint64_t rcv_budget(struct rr *r, struct rr_seg *s, uint64_t filled, uint64_t deadline,
			   enum rr_stop *why)
{
	*why = RR_STOP_NONE;
	if (rr_signal) {
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
static bool rcv_idle_wait(int sock, int efd)
{
	struct pollfd pf[2] = { { .fd = sock, .events = POLLIN }, { .fd = efd, .events = POLLIN } };
	int n = poll(pf, 2, 100);
	if (n > 0 && pf[1].revents) {
		rr_drain(efd);
		return false;
	}
	return n > 0 && pf[0].revents;
}

#define RR_BATCH 64
#define RR_COALESCE_NS 200000

/* The socket's drop count (SO_MEMINFO's SK_MEMINFO_DROPS, cumulative, 32
 * bits), read once a chunk rather than as a control message on every
 * datagram (SO_RXQ_OVFL: 3 % of the receiver's cycles); the recording's
 * `dropped` is ring-full plus kernel drops. */
static void rcv_kernel_drops(struct rr *r)
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
static struct rr_seg *rcv_seg_open(struct rr *r, uint64_t filled, struct rr_vdif_track *vt)
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
static void rcv_first(struct rr *r, struct rr_seg *s, uint64_t t_ns)
{
	s->first_seen = true;
	atomic_store_explicit(&r->start_latency_ns, t_ns > s->t_post_ns ? t_ns - s->t_post_ns : 0,
			      memory_order_relaxed);
}

/* The open segment's datagram counters, for status? while it records. */
static void rcv_seg_counts(struct rr *r, struct rr_seg *s)
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
static void rcv_wrong(struct rr *r, uint64_t n, uint64_t len)
{
	r->loss.wrong_size += n;
	r->last_wrong = (uint32_t)len;
	atomic_fetch_add_explicit(&r->tot_wrong_size, n, memory_order_relaxed);
}

/* Close the open segment after its last whole datagram (*filled, cut at
 * its limit), and move *filled to the next chunk boundary, where the next
 * segment will start. */
static void rcv_seg_close(struct rr *r, uint64_t *filled, enum rr_stop why, bool read_drops)
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

static void rcv_flush_run(struct rr *r, struct rr_seg *s, uint64_t *filled, struct rr_vdif_track *vt);

/* recfsd, between two batches: close the open segment when record=off
 * asked for it or a later one is posted, open the next one posted.  The open segment, or NULL
 * between scans. */
static struct rr_seg *rcv_seg(struct rr *r, uint64_t *filled, struct rr_vdif_track *vt)
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
static struct rr_seg *rcv_seg_waiting(struct rr *r)
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
static bool rcv_at_second(const struct rr_seg *s, const uint8_t *d, size_t len)
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
static bool rcv_can_teach(const struct rr *r, const uint8_t *d, uint64_t len)
{
	struct rr_vdif_hdr h;
	if (!r->fmt_vdif)
		return len > 0 && len <= UINT32_MAX;
	return len >= 16 && rr_vdif_decode(d, &h) && h.length == len;
}

/* The datagram size is len from now on; rcv_udp's tmp (NULL: none) follows. */
static int rcv_set_size(struct rr *r, uint32_t len, uint8_t **tmp)
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
static uint32_t rcv_run(struct rr *r, const uint8_t *d, uint64_t len)
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
static int rcv_learn_idle(struct rr *r, const uint8_t *d, uint64_t len, uint8_t **tmp)
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
static void rcv_flush_run(struct rr *r, struct rr_seg *s, uint64_t *filled, struct rr_vdif_track *vt)
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
static int rcv_scan_first(struct rr *r, struct rr_seg *s, uint64_t *filled, uint64_t budget,
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

static void rcv_stream(struct rr *r)
{
	uint64_t filled = 0, deadline = r->duration_ns ? rr_mono_ns() + r->duration_ns : 0;
	struct rr_vdif_stream vs = { 0 };
	bool tmpl_ok = false;  /* every slot holds the counter template already */
	bool can_tmpl = r->in_kind == RR_IN_GEN && r->chunk % r->gen.block == 0;
	uint64_t t0 = rr_mono_ns();

	if (r->fmt_vdif && rr_vdif_track_init(&vs.t, r->frame_size, &r->loss)) {
		snprintf(r->in_err, sizeof(r->in_err), "out of memory");
		rr_set_stop(r, RR_STOP_INPUT);
		return;
	}
	/* a byte stream is recfs-record's: one segment, the whole stream */
	struct rr_seg *seg = rcv_seg_open(r, 0, NULL);
	enum rr_stop why;
	for (;;) {
		uint64_t budget = rcv_budget(r, seg, filled, deadline, &why);
		if (!budget)
			break;
		if (!rcv_wait_space(r, filled))
			continue;
		uint64_t pos = filled % r->ring_size;
		uint64_t n = rr_ring_free(r, filled);
		if (n > r->ring_size - pos)
			n = r->ring_size - pos;
		if (n > budget)
			n = budget;

		if (r->in_kind == RR_IN_GEN) {
			if (r->rate) {
				/* wr.c-style paced input: bytes due by now */
				uint64_t due = (uint64_t)((double)(rr_mono_ns() - t0) * 1e-9 * (double)r->rate);
				if (due <= filled) {
					rr_sleep_ns(1000000);
					continue;
				}
				if (n > due - filled)
					n = due - filled;
			}
			if (n > r->chunk)
				n = r->chunk;
			rr_gen_fill(&r->gen, r->ring + pos, filled, n, tmpl_ok);
		} else {
			struct pollfd pf = { .fd = r->in_fd, .events = POLLIN };
			int pr = poll(&pf, 1, 100);
			if (pr == 0 || (pr < 0 && errno == EINTR))
				continue;
			ssize_t got = read(r->in_fd, r->ring + pos, n);
			if (got < 0) {
				if (errno == EINTR || errno == EAGAIN)
					continue;
				snprintf(r->in_err, sizeof(r->in_err), "%s: read failed: %s",
					 r->in_path ? r->in_path : "stdin", strerror(errno));
				rr_set_stop(r, RR_STOP_INPUT);
				break;
			}
			if (got == 0) {
				rr_set_stop(r, RR_STOP_EOF);
				break;
			}
			n = (uint64_t)got;
		}
		uint64_t old = filled;
		filled += n;
		if (can_tmpl && filled >= r->ring_size)
			tmpl_ok = true;
		if (r->fmt_vdif) {
			rcv_vdif_scan(r, &vs, filled);
			if (vs.t.frame_size && !atomic_load_explicit(&r->learned_frame, memory_order_relaxed))
				atomic_store(&r->learned_frame, vs.t.frame_size); /* stored at create */
		}
		rcv_publish(r, old, filled);
	}
	rcv_seg_close(r, &filled, (enum rr_stop)atomic_load(&r->stop), false);
	if (r->fmt_vdif)
		rr_vdif_track_free(&vs.t);
}

/* After a receive call failed: false for the receive timeout, a signal or
 * an empty socket (look at the flags, go on); true for a real failure,
 * which stops the input with its reason. */
static bool rcv_failed(struct rr *r)
{
	if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
		return false;
	snprintf(r->in_err, sizeof(r->in_err), "%s: receive failed: %s", r->input_spec,
		 strerror(errno));
	rr_set_stop(r, RR_STOP_INPUT);
	return true;
}

static void rcv_udp(struct rr *r)
{
	uint64_t filled = 0, deadline = r->duration_ns ? rr_mono_ns() + r->duration_ns : 0;
	struct mmsghdr msgs[RR_BATCH];
	struct iovec iov[RR_BATCH][3];
	uint8_t stripbuf[RR_BATCH][64];
	uint8_t head[RR_BATCH][64 + 32]; /* between scans: --strip and a VDIF header */
	uint8_t *scratch = NULL, *tmp = NULL;
	struct rr_vdif_track vt = { 0 };
	const int sock = r->in_fd;
	bool at_limit = false;

	r->size_given = r->packet_size != 0;
	scratch = malloc(65536);
	/* tmp closes the holes wrong-sized datagrams leave: needed as soon
	 * as the datagram size is known, given or learned */
	if (r->packet_size)
		tmp = malloc(r->packet_size);
	if (!scratch || (r->packet_size && !tmp) ||
	    (r->fmt_vdif && rr_vdif_track_init(&vt, 0, &r->loss))) {
		snprintf(r->in_err, sizeof(r->in_err), "out of memory");
		rr_set_stop(r, RR_STOP_INPUT);
		goto out_free;
	}
	/* recfs-record's one segment is open from the start; recfsd's open
	 * and close between batches, and between them the receiver drains
	 * the socket and counts what it discards as idle */
	struct rr_seg *seg = r->daemon ? NULL : rcv_seg_open(r, 0, &vt);
	enum rr_stop why = RR_STOP_NONE;
	for (;;) {
		if (r->daemon) {
			if (atomic_load(&r->stop))
				break;
			seg = rcv_seg(r, &filled, &vt);
		}
		uint64_t budget = seg ? rcv_budget(r, seg, filled, deadline, &why) : 0;
		if (seg && !budget) {
			if (!r->daemon || why == RR_STOP_NONE)
				break;
			rcv_seg_close(r, &filled, why, !at_limit); /* full: idle until record=off */
			seg = NULL;
			continue;
		}
		if (!r->packet_size && !r->daemon) {
			/* recfs-record: the size of the first datagram that can
			 * teach one (the socket has a receive timeout: the loop
			 * sees stop flags) */
			ssize_t n = recv(sock, scratch, 65536, MSG_PEEK | MSG_TRUNC);
			if (n < 0) {
				if (rcv_failed(r))
					break;
				continue; /* the receive timeout: look at the flags */
			}
			if ((uint64_t)n <= r->strip ||
			    !rcv_can_teach(r, scratch + r->strip, (uint64_t)n - r->strip)) {
				r->loss.packets++;
				r->loss.wrong_size++;
				if (recv(sock, scratch, 65536, MSG_DONTWAIT) < 0)
					continue;
				continue;
			}
			if (rcv_set_size(r, (uint32_t)n - r->strip, &tmp))
				break;
			continue;
		}
		/* recfsd: 0 until learned, between scans (below) */
		const uint32_t P = r->packet_size;
		if (r->fmt_vdif && P && !atomic_load_explicit(&r->learned_frame, memory_order_relaxed))
			atomic_store(&r->learned_frame, P); /* stored at create */
		struct rr_seg *w = seg ? NULL : rcv_seg_waiting(r);
		if (w) {
			/* a scan that starts at a VDIF second: one datagram at
			 * a time until its frame 0, what comes before is idle */
			ssize_t n = recv(sock, scratch, 65536, 0);
			if (n < 0) {
				if (rcv_failed(r))
					break;
				continue; /* the receive timeout: look at the flags */
			}
			atomic_fetch_add_explicit(&r->tot_packets, 1, memory_order_relaxed);
			if (P && (size_t)n == r->strip + P && rcv_at_second(w, scratch + r->strip, P) &&
			    rr_ring_free(r, filled) >= P) {
				uint64_t old = filled;
				seg = rcv_seg_open(r, filled, &vt);
				rr_ring_write(r, filled, scratch + r->strip, P);
				r->loss.packets++;
				r->run_n = 0;
				seg->frame_size = P;
				if (r->fmt_vdif)
					rr_vdif_frame(&vt, scratch + r->strip, P, 0);
				filled += P;
				atomic_fetch_add_explicit(&r->tot_bytes, P, memory_order_relaxed);
				rcv_first(r, seg, rr_mono_ns());
				rcv_seg_counts(r, seg);
				rcv_publish(r, old, filled);
			} else {
				atomic_fetch_add_explicit(&r->tot_idle_packets, 1, memory_order_relaxed);
				atomic_fetch_add_explicit(&r->tot_idle_bytes, (uint64_t)n, memory_order_relaxed);
				if ((uint64_t)n > r->strip &&
				    rcv_learn_idle(r, scratch + r->strip, (uint64_t)n - r->strip, &tmp))
					break;
			}
			continue;
		}
		if (seg && r->daemon && !r->size_given && filled == seg->base) {
			/* recfsd, a scan's first datagrams: one at a time, until
			 * one is recorded (rcv_scan_first) */
			ssize_t n = recv(sock, scratch, 65536, MSG_TRUNC);
			if (n < 0) {
				if (rcv_failed(r))
					break;
				continue; /* the receive timeout: look at the flags */
			}
			atomic_fetch_add_explicit(&r->tot_packets, 1, memory_order_relaxed);
			uint64_t old = filled, len = (uint64_t)n > r->strip ? (uint64_t)n - r->strip : 0;
			if (len > 65536 - r->strip) { /* cannot be: a datagram is at most 65507 bytes */
				r->loss.packets++;
				rcv_wrong(r, 1, (uint64_t)n);
			} else if (rcv_scan_first(r, seg, &filled, budget, scratch + r->strip, len, &vt, &tmp)) {
				break;
			}
			rcv_seg_counts(r, seg);
			if (filled != old)
				rcv_publish(r, old, filled);
			continue;
		}
		uint64_t room = seg ? rr_ring_free(r, filled) / P : 0;
		unsigned nm = room < RR_BATCH ? (unsigned)room : RR_BATCH;
		if (nm && budget < (uint64_t)nm * P) /* the last datagram of --size */
			nm = (unsigned)((budget + P - 1) / P);

		memset(msgs, 0, sizeof(msgs));
		if (nm == 0) {
			if (!seg && r->daemon && !rcv_idle_wait(sock, r->rcv_efd))
				continue;
			/* ring full: drain the socket and count what is lost;
			 * between scans each datagram's head is kept apart, for
			 * learning the size */
			for (unsigned i = 0; i < RR_BATCH; i++) {
				iov[i][0] = (struct iovec){ head[i], r->strip + 32 };
				iov[i][1] = (struct iovec){ scratch, 65536 };
				msgs[i].msg_hdr.msg_iov = iov[i];
				msgs[i].msg_hdr.msg_iovlen = 2;
			}
			int got = recvmmsg(sock, msgs, RR_BATCH, MSG_WAITFORONE, NULL);
			if (got < 0 && rcv_failed(r))
				break;
			if (got <= 0)
				continue;
			atomic_fetch_add_explicit(&r->tot_packets, (uint64_t)got, memory_order_relaxed);
			if (!seg) { /* between scans */
				uint64_t b = 0;
				int bad = 0;
				for (int i = 0; i < got; i++) {
					uint64_t len = msgs[i].msg_len;
					b += len;
					if (len > r->strip && !bad)
						bad = rcv_learn_idle(r, head[i] + r->strip, len - r->strip, &tmp);
				}
				atomic_fetch_add_explicit(&r->tot_idle_packets, (uint64_t)got, memory_order_relaxed);
				atomic_fetch_add_explicit(&r->tot_idle_bytes, b, memory_order_relaxed);
				if (bad)
					break;
				continue;
			}
			r->loss.packets += (uint64_t)got;
			r->ring_dropped += (uint64_t)got;
			atomic_fetch_add_explicit(&r->tot_ring_dropped, (uint64_t)got, memory_order_relaxed);
			rcv_kernel_drops(r);
			rcv_seg_counts(r, seg);
			continue;
		}
		for (unsigned i = 0; i < nm; i++) {
			uint64_t s = filled + (uint64_t)i * P;
			uint64_t pos = s % r->ring_size;
			int k = 0;
			if (r->strip)
				iov[i][k++] = (struct iovec){ stripbuf[i], r->strip };
			if (pos + P <= r->ring_size) {
				iov[i][k++] = (struct iovec){ r->ring + pos, P };
			} else {
				iov[i][k++] = (struct iovec){ r->ring + pos, r->ring_size - pos };
				iov[i][k++] = (struct iovec){ r->ring, P - (r->ring_size - pos) };
			}
			msgs[i].msg_hdr.msg_iov = iov[i];
			msgs[i].msg_hdr.msg_iovlen = (size_t)k;
		}
		/* block for the first datagram (up to the receive timeout),
		 * then take what is queued: one syscall per batch (MSG_TRUNC:
		 * msg_len is a longer datagram's own length, for status?) */
		/* recfsd never blocks with a scan open: a record=off, or the
		 * next scan, posted while it blocked would see the datagrams
		 * that end the wait land in this scan (after a pause in the
		 * stream, the next scan's first one did: test 69).  An empty
		 * socket is waited for beside the control's eventfd, and the
		 * loop's top sees what was posted. */
		int got = recvmmsg(sock, msgs, nm,
				   (r->daemon ? MSG_DONTWAIT : MSG_WAITFORONE) | MSG_TRUNC, NULL);
		if (got < 0 && r->daemon && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			rcv_idle_wait(sock, r->rcv_efd);
			continue;
		}
		if (got < 0) {
			if (rcv_failed(r))
				break;
			continue; /* the receive timeout: look at the flags */
		}
		/* the kernel's drop count, read once a chunk (for rcv_publish's
		 * loss snapshot) and right after the call that reaches the
		 * limit, so no drop from after the last datagram is counted */
		/* the scan's first datagram is in the ring: stamped before the
		 * coalescing sleep below, which is not part of the latency */
		if (got > 0 && !seg->first_seen) {
			seg->frame_size = P;
			rcv_first(r, seg, rr_mono_ns());
		}
		at_limit = got > 0 && (uint64_t)got * P >= budget;
		if (got > 0 && (filled / r->chunk != (filled + (uint64_t)got * P) / r->chunk || at_limit))
			rcv_kernel_drops(r);
		if (got > 0 && got < RR_BATCH / 4 && r->coalesce_ns && !at_limit)
			rr_sleep_ns(r->coalesce_ns); /* let a batch gather */
		uint64_t old = filled, dst = filled;
		for (int i = 0; i < got; i++) {
			uint64_t src = filled + (uint64_t)i * P;
			r->loss.packets++;
			if (msgs[i].msg_len != r->strip + P || (msgs[i].msg_hdr.msg_flags & MSG_TRUNC)) {
				rcv_wrong(r, 1, msgs[i].msg_len);
				continue;
			}
			if (dst != src) {
				/* a wrong-sized datagram before this one: close the hole */
				rr_ring_read(r, src, tmp, P);
				rr_ring_write(r, dst, tmp, P);
			}
			if (r->fmt_vdif) {
				uint8_t hdr[32] = { 0 }; /* a datagram under 32 bytes: zeros past it */
				rr_ring_read(r, dst, hdr, sizeof(hdr) < P ? sizeof(hdr) : P);
				rr_vdif_frame(&vt, hdr, P, dst - seg->base);
			}
			dst += P;
		}
		filled = dst;
		if (filled > old + budget)
			filled = old + budget; /* cut the last datagram at the limit */
		atomic_fetch_add_explicit(&r->tot_packets, (uint64_t)got, memory_order_relaxed);
		atomic_fetch_add_explicit(&r->tot_bytes, filled - old, memory_order_relaxed);
		if (got > 0)
			rcv_seg_counts(r, seg);
		if (filled != old)
			rcv_publish(r, old, filled);
	}
out_free:
	/* stopped by a signal, --duration, an error: drops until now; at the
	 * limit they were read right after the last datagram */
	if (atomic_load_explicit(&r->seg_open, memory_order_relaxed)) {
		rcv_flush_run(r, rr_seg_at(r, atomic_load(&r->seg_rcv)), &filled, &vt);
		rcv_seg_close(r, &filled, (enum rr_stop)atomic_load(&r->stop), !at_limit);
	}
	rr_vdif_track_free(&vt);
	free(scratch);
	free(tmp);
}

/* UDP: the socket must be drained whatever else runs, so the receiver (and
 * below it the writer) run SCHED_FIFO where permitted. */
bool rr_realtime(int prio)
{
	struct sched_param sp = { .sched_priority = prio };
	return pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) == 0;
}

/* --split vdif-thread: one socket, one lane (ring, writer, committer,
 * recording) per VDIF thread.  A datagram's thread is known only once it is
 * in memory, so the batch lands in a scratch buffer and each datagram is
 * copied into its lane's ring: one copy, where rcv_udp has none.  Kernel
 * drops belong to no thread: they count on the input (lane 0's totals). */
static void rcv_split(struct rr_split *sp)
{
	struct rr *const r0 = sp->lane[0];
	const unsigned nl = sp->n;
	const size_t slot = 65536;
	uint8_t *scratch = malloc((size_t)RR_BATCH * slot);
	struct mmsghdr msgs[RR_BATCH];
	struct iovec iov[RR_BATCH][2];
	uint8_t stripbuf[RR_BATCH][64];
	uint64_t filled[RR_MAX_LANES] = { 0 }, old[RR_MAX_LANES];
	struct rr_vdif_track vt[RR_MAX_LANES] = { { 0 } };
	struct rr_seg *seg[RR_MAX_LANES] = { 0 };
	int16_t map[RR_VDIF_MAX_THREADS];
	uint32_t ovfl_last = 0;

	memset(map, 0xff, sizeof(map));
	for (unsigned l = 0; l < nl; l++) {
		map[sp->thread[l]] = (int16_t)l;
		sp->lane[l]->size_given = sp->lane[l]->packet_size != 0;
		if (rr_vdif_track_init(&vt[l], 0, &sp->lane[l]->loss))
			scratch = (free(scratch), NULL);
	}
	if (!scratch) {
		snprintf(r0->in_err, sizeof(r0->in_err), "out of memory");
		rr_set_stop(r0, RR_STOP_INPUT);
		goto out_free;
	}
	for (;;) {
		if (atomic_load(&r0->stop))
			break;
		bool any = false; /* a lane recording */
		for (unsigned l = 0; l < nl; l++) {
			struct rr *r = sp->lane[l];
			enum rr_stop why;
			seg[l] = rcv_seg(r, &filled[l], &vt[l]);
			if (seg[l] && !rcv_budget(r, seg[l], filled[l], 0, &why) && why != RR_STOP_NONE) {
				rcv_seg_close(r, &filled[l], why, false); /* full, or its writer failed */
				seg[l] = NULL;
			}
			old[l] = filled[l];
			any |= seg[l] != NULL;
		}
		if (!any && !rcv_idle_wait(sp->fd, r0->rcv_efd))
			continue; /* between scans, woken by record=on */
		for (unsigned i = 0; i < RR_BATCH; i++) {
			int k = 0;
			if (sp->strip)
				iov[i][k++] = (struct iovec){ stripbuf[i], sp->strip };
			iov[i][k++] = (struct iovec){ scratch + i * slot, slot };
			memset(&msgs[i], 0, sizeof(msgs[i]));
			msgs[i].msg_hdr.msg_iov = iov[i];
			msgs[i].msg_hdr.msg_iovlen = (size_t)k;
		}
		/* never blocks with a lane open (as rcv_udp) */
		int got = recvmmsg(sp->fd, msgs, RR_BATCH, MSG_DONTWAIT, NULL);
		if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			rcv_idle_wait(sp->fd, r0->rcv_efd);
			continue;
		}
		if (got < 0) {
			if (rcv_failed(r0))
				break;
			continue; /* the receive timeout: look at the flags */
		}
		atomic_fetch_add_explicit(&r0->tot_packets, (uint64_t)got, memory_order_relaxed);
		for (int i = 0; i < got; i++) {
			const uint8_t *dg = scratch + (size_t)i * slot;
			uint32_t len = msgs[i].msg_len;
			struct rr_vdif_hdr h;
			if (len <= sp->strip || (msgs[i].msg_hdr.msg_flags & MSG_TRUNC) ||
			    len - sp->strip < 32 || !rr_vdif_decode(dg, &h) || map[h.thread] < 0) {
				/* not a frame of any lane's thread: the input's */
				atomic_fetch_add_explicit(&r0->tot_other, 1, memory_order_relaxed);
				continue;
			}
			const uint32_t P = len - sp->strip;
			unsigned l = (unsigned)map[h.thread];
			struct rr *r = sp->lane[l];
			if (!seg[l]) { /* each lane learns its frame size (rcv_run) */
				atomic_fetch_add_explicit(&r->tot_idle_packets, 1, memory_order_relaxed);
				atomic_fetch_add_explicit(&r->tot_idle_bytes, P, memory_order_relaxed);
				rcv_learn_idle(r, dg, P, NULL);
				continue;
			}
			enum rr_stop why;
			uint64_t budget = rcv_budget(r, seg[l], filled[l], 0, &why);
			if (!r->size_given && filled[l] == seg[l]->base) {
				rcv_scan_first(r, seg[l], &filled[l], budget, dg, P, &vt[l], NULL);
				continue;
			}
			r->loss.packets++;
			if (P != r->packet_size) {
				rcv_wrong(r, 1, len);
				continue;
			}
			if (rr_ring_free(r, filled[l]) < P || budget < P) {
				r->ring_dropped++;
				r->loss.dropped = r->ring_dropped;
				atomic_fetch_add_explicit(&r->tot_ring_dropped, 1, memory_order_relaxed);
				continue;
			}
			if (!seg[l]->first_seen) {
				seg[l]->frame_size = P;
				rcv_first(r, seg[l], rr_mono_ns());
			}
			rr_ring_write(r, filled[l], dg, P);
			rr_vdif_frame(&vt[l], dg, P, filled[l] - seg[l]->base);
			filled[l] += P;
			atomic_fetch_add_explicit(&r->tot_bytes, P, memory_order_relaxed);
		}
		for (unsigned l = 0; l < nl; l++) {
			if (seg[l])
				rcv_seg_counts(sp->lane[l], seg[l]);
			if (filled[l] != old[l])
				rcv_publish(sp->lane[l], old[l], filled[l]);
		}
		/* the socket's drops, for the input */
		uint32_t mi[SK_MEMINFO_VARS];
		socklen_t ml = sizeof(mi);
		if (getsockopt(sp->fd, SOL_SOCKET, SO_MEMINFO, mi, &ml) == 0 &&
		    ml > SK_MEMINFO_DROPS * sizeof(uint32_t)) {
			atomic_fetch_add_explicit(&r0->tot_kernel_dropped, (uint32_t)(mi[SK_MEMINFO_DROPS] - ovfl_last),
						  memory_order_relaxed);
			ovfl_last = mi[SK_MEMINFO_DROPS];
		}
	}
out_free:
	for (unsigned l = 0; l < nl; l++) {
		struct rr *r = sp->lane[l];
		if (atomic_load_explicit(&r->seg_open, memory_order_relaxed)) {
			rcv_flush_run(r, rr_seg_at(r, atomic_load(&r->seg_rcv)), &filled[l], &vt[l]);
			rcv_seg_close(r, &filled[l], (enum rr_stop)atomic_load(&r0->stop), false);
		}
		rr_vdif_track_free(&vt[l]);
	}
	free(scratch);
}

void *rcv_split_main(void *arg)
{
	struct rr_split *sp = arg;
	if (!sp->lane[0]->no_rt)
		sp->lane[0]->rt_rcv = rr_realtime(20);
	rcv_split(sp);
	for (unsigned l = 0; l < sp->n; l++) {
		atomic_store_explicit(&sp->lane[l]->eof, true, memory_order_release);
		rr_kick(sp->lane[l]->data_efd);
	}
	return NULL;
}

void *rcv_main(void *arg)
{
	struct rr *r = arg;
	if (r->in_kind == RR_IN_UDP && !r->no_rt)
		r->rt_rcv = rr_realtime(20);
	if (r->in_kind == RR_IN_UDP)
		rcv_udp(r);
	else
		rcv_stream(r);
	atomic_store_explicit(&r->eof, true, memory_order_release);
	rr_kick(r->data_efd);
	return NULL;
}


int rr_parse_input(struct rr *r, const char *spec)
{
	r->input_spec = spec;
	if (!strcmp(spec, "stdin") || !strcmp(spec, "-")) {
		r->in_kind = RR_IN_FD;
		r->in_path = NULL;
	} else if (!strncmp(spec, "file:", 5) && spec[5]) {
		r->in_kind = RR_IN_FD;
		r->in_path = spec + 5;
	} else if (!strncmp(spec, "udp:", 4)) {
		struct sockaddr_storage ss;
		socklen_t len;
		r->in_kind = RR_IN_UDP;
		if (rr_parse_udp(spec + 4, false, &ss, &len))
			return -EINVAL;
	} else if (!strcmp(spec, "gen:counter")) {
		r->in_kind = RR_IN_GEN;
		r->gen.kind = RR_GEN_COUNTER;
	} else if (!strcmp(spec, "gen:vdif")) {
		r->in_kind = RR_IN_GEN;
		r->gen.kind = RR_GEN_VDIF;
		r->fmt_vdif = true;
	} else {
		return -EINVAL;
	}
	return 0;
}

int rr_open_input(struct rr *r)
{
	if (r->in_kind == RR_IN_FD) {
		if (!r->in_path) {
			r->in_fd = 0;
			return 0;
		}
		r->in_fd = open(r->in_path, O_RDONLY | O_CLOEXEC);
		if (r->in_fd < 0) {
			int e = errno;
			return recfs_seterr(-e, "%s: cannot open: %s", r->in_path, strerror(e));
		}
		return 0;
	}
	if (r->in_kind == RR_IN_GEN) {
		uint32_t block = r->frame_size ? r->frame_size
					       : r->gen.kind == RR_GEN_VDIF ? 8032u : 8192u;
		int err = rr_gen_init(&r->gen, r->gen.kind, block, r->threads, r->fps, r->legacy);
		if (err) {
			return recfs_seterr(err, "%s: --frame-size %u is not usable%s", r->input_spec, block,
					    r->gen.kind == RR_GEN_VDIF ? " (a multiple of 8, above the header)" : "");
		}
		r->frame_size = block;
		return 0;
	}

	struct sockaddr_storage ss;
	socklen_t len;
	rr_parse_udp(r->input_spec + 4, false, &ss, &len);
	int s = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0) {
		int e = errno;
		return recfs_seterr(-e, "%s: socket: %s", r->input_spec, strerror(e));
	}
	int want = r->rcvbuf > INT_MAX ? INT_MAX : (int)r->rcvbuf;
	if (setsockopt(s, SOL_SOCKET, SO_RCVBUFFORCE, &want, sizeof(want)))
		setsockopt(s, SOL_SOCKET, SO_RCVBUF, &want, sizeof(want));
	/* blocking receives wake at least every 100 ms to see a stop */
	struct timeval tv = { .tv_sec = 0, .tv_usec = 100000 };
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (bind(s, (struct sockaddr *)&ss, len)) {
		int e = errno;
		close(s);
		return recfs_seterr(-e, "%s: cannot bind: %s", r->input_spec, strerror(e));
	}
	/* A receiver that drains the socket faster than datagrams arrive
	 * wakes for every few of them: at 2 GB/s of 8 KB datagrams, 10 a
	 * call and 30,000 context switches a second.  Sleeping 200 us after
	 * a call that found under a quarter of a batch lets them gather: 40%
	 * less CPU per GB on the development machine.  Only with a socket
	 * buffer that holds 200 us at well over line rate: --rcvbuf 8M or
	 * more (the kernel reports it doubled, and charges 16.6 KB for an
	 * 8 KB datagram, so 8M holds about 4 MB: 10 GB/s for 200 us fills
	 * half); a faster stream fills the batches and never sleeps. */
	int have = 0;
	socklen_t hl = sizeof(have);
	if (!getsockopt(s, SOL_SOCKET, SO_RCVBUF, &have, &hl) && have / 2 >= (8 << 20))
		r->coalesce_ns = RR_COALESCE_NS;
	r->in_fd = s;
	return 0;
}

