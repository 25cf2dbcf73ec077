/* SPDX-License-Identifier: MIT */
/*
 * Inputs: the receiver thread for a byte stream (a file, stdin or a generator),
 * and the input's parsing and opening; the UDP receiver is udp.c, the --split
 * vdif-thread receiver split.c, their common steps rcv.c.
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

struct rr_vdif_stream {
	struct rr_vdif_track t;
	uint64_t next;     /* stream offset of the next frame header */
	bool resync;       /* looking for the first valid header */
};

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
		if (atomic_load(&r->stop) || atomic_load(r->stop_flag))
			return false;
		struct pollfd pf = { .fd = r->space_efd, .events = POLLIN };
		if (poll(&pf, 1, 100) > 0)
			rr_drain(r->space_efd);
	}
	return true;
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

/* UDP: the socket must be drained whatever else runs, so the receiver (and
 * below it the writer) run SCHED_FIFO where permitted. */
bool rr_realtime(int prio)
{
	struct sched_param sp = { .sched_priority = prio };
	return pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) == 0;
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
