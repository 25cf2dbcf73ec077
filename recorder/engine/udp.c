/* SPDX-License-Identifier: MIT */
/*
 * The UDP receiver: recvmmsg batches straight into the ring.
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

void rcv_udp(struct rr *r)
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
