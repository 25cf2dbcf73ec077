/* SPDX-License-Identifier: MIT */
/*
 * The --split vdif-thread receiver: one socket, one lane per VDIF thread.
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

/* The receiver's own record of the keys it published (struct rr_seen):
 * only a new station or a new second costs a store. */
struct rcv_seen {
	unsigned n;
	uint16_t station[RR_DS_STATIONS];
	uint32_t last[RR_DS_STATIONS][RR_VDIF_MAX_THREADS];
};

static void rcv_seen_key(struct rr_seen *pub, struct rcv_seen *me, uint16_t st, unsigned th, uint32_t now)
{
	unsigned s;
	for (s = 0; s < me->n && me->station[s] != st; s++)
		;
	if (s == me->n) {
		if (s == RR_DS_STATIONS)
			return; /* past the stations kept: a datastream names it, or none */
		me->station[me->n++] = st;
		atomic_store_explicit(&pub->station[s], 0x10000u | st, memory_order_release);
	}
	if (me->last[s][th] != now) {
		me->last[s][th] = now;
		atomic_store_explicit(&pub->last_s[s][th], now, memory_order_relaxed);
	}
}

/* A frame's lane in map m, -1 none. */
static inline int rcv_lane(const struct rr_dsmap *m, uint16_t st, unsigned th)
{
	unsigned r;
	for (r = 0; r < m->nst && m->station[r] != st; r++)
		;
	return m->lane[r][th];
}

/* --split vdif-thread and recfsd's datastreams: one socket, several lanes
 * (ring, writer, committer, recording), a datagram's lane chosen by its
 * VDIF station and thread through the scan's map (engine.h, struct
 * rr_split).  A datagram's thread is known only once it is in memory, so
 * the batch lands in a scratch buffer and each datagram is copied into its
 * lane's ring: one copy, where rcv_udp has none.  Kernel drops belong to no
 * thread: they count on the input (lane 0's totals). */
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
	struct rr_dsmap *map = malloc(sizeof(*map));
	struct rcv_seen *seen = calloc(1, sizeof(*seen));
	uint64_t map_seg = UINT64_MAX; /* the scan whose map is map */
	uint32_t ovfl_last = 0;

	if (!map || !seen)
		scratch = (free(scratch), NULL);
	else
		*map = sp->first;
	for (unsigned l = 0; l < nl; l++) {
		sp->lane[l]->size_given = sp->lane[l]->packet_size != 0;
		if (rr_vdif_track_init(&vt[l], 0, &sp->lane[l]->loss))
			scratch = (free(scratch), NULL);
	}
	if (!scratch) {
		snprintf(r0->in_err, sizeof(r0->in_err), "out of memory");
		rr_set_stop(r0, RR_STOP_INPUT);
		goto out_free;
	}
	unsigned held = 0; /* batches left unread while a post was half done */
	for (;;) {
		if (atomic_load(&r0->stop))
			break;
		/* record=on posts the scan to the lanes one after another; a
		 * lane still in the last scan while lane 0 (and so the map) is
		 * in the next would take frames the next scan's map routes to
		 * it.  Open nothing until every lane has it: the control plane
		 * ends the post within microseconds; bounded all the same, in
		 * case a lane never gets it (a refused post) */
		uint64_t p0 = atomic_load_explicit(&r0->seg_posted, memory_order_acquire);
		bool half = false;
		for (unsigned l = 1; l < nl; l++)
			half |= atomic_load_explicit(&sp->lane[l]->seg_posted, memory_order_acquire) != p0;
		if (half && held < 10000) {
			held++;
			sched_yield();
			continue;
		}
		if (!half)
			held = 0;
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
		/* a scan opened: its map, posted with it, from now on */
		uint64_t n0 = atomic_load_explicit(&r0->seg_rcv, memory_order_relaxed);
		if (seg[0] && n0 != map_seg) {
			*map = sp->maps[n0 % RR_SEGQ];
			map_seg = n0;
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
		const uint32_t now = (uint32_t)(rr_mono_ns() / 1000000000ull) + 1;
		for (int i = 0; i < got; i++) {
			const uint8_t *dg = scratch + (size_t)i * slot;
			uint32_t len = msgs[i].msg_len;
			struct rr_vdif_hdr h;
			int lane = -1;
			if (len > sp->strip && !(msgs[i].msg_hdr.msg_flags & MSG_TRUNC) && len - sp->strip >= 32 &&
			    rr_vdif_decode(dg, &h)) {
				/* a key the datastreams may give a lane: a whole frame's
				 * (stray datagrams that merely decode would fill the
				 * stations kept) */
				if (h.length == len - sp->strip)
					rcv_seen_key(sp->seen, seen, (uint16_t)h.station, h.thread, now);
				lane = rcv_lane(map, (uint16_t)h.station, h.thread);
			}
			if (lane < 0 || (unsigned)lane >= nl) {
				/* not a frame any lane takes: the input's */
				atomic_fetch_add_explicit(&r0->tot_other, 1, memory_order_relaxed);
				continue;
			}
			const uint32_t P = len - sp->strip;
			unsigned l = (unsigned)lane;
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
	free(map);
	free(seen);
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
