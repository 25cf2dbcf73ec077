/* SPDX-License-Identifier: MIT */
/*
 * The engine's private header: struct rr and its units' entry points, for
 * the files of recorder/engine/ only (tests/integration/00-layout.sh checks that).
 * The programs see engine.h, where struct rr is opaque.
 *
 * Three threads share one RAM ring of chunk-sized slots:
 *  - the receiver (rcv_*: input.c, udp.c, split.c, rcv.c) fills the ring
 *    from the input: read() for a byte stream, recvmmsg() straight into the
 *    ring for UDP, or the built-in generators; it never waits for a disk,
 *    only for ring space (byte streams) or it drops datagrams and counts
 *    them (UDP);
 *  - the writer (wr_*, writer.c) sends every full slot to its member with
 *    one libaio request per chunk, members' queues kept at --queue-depth,
 *    and frees slots in order as their writes complete;
 *  - the committer (cm_*, commit.c) makes the written prefix durable every
 *    --commit-interval through recfs_rec_commit and calls the program's
 *    progress callback.
 * The ring lives in ring.c, the statistics and reports in report.c.
 * Tool-private prefix: rr_ (engine-wide), rcv_, wr_, cm_ (per unit).
 */
#ifndef RECFS_RECORDER_ENGINE_RR_H
#define RECFS_RECORDER_ENGINE_RR_H

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

#include "common/gen.h"
#include "common/util.h"
#include "common/vdif.h"
#include "engine.h"

static inline void rr_stat_add(_Atomic uint64_t *a, uint64_t v)
{
	atomic_store_explicit(a, atomic_load_explicit(a, memory_order_relaxed) + v, memory_order_relaxed);
}

/*
 * A segment: one recording's part of the stream.  recfs-record has one,
 * from stream byte 0; recfsd one per scan.  The control plane posts it, the
 * receiver opens it at a chunk boundary between two batches and closes it
 * after a whole datagram, the writer creates the recording on its first
 * byte, writes it and (recfsd) seals it.  segs[] is a queue: segment n lives
 * in segs[n % RR_SEGQ].
 */
struct rr_seg {
	/* set by the control plane before it is posted */
	char name[RECFS_NAME_MAX + 1];
	uint64_t size_limit;          /* 0: none */
	int64_t start_unix;           /* VDIF: open at the first frame 0 of a
				       * second at or after this Unix time
				       * (0: at the next datagram) */
	/* receiver */
	uint64_t base;                /* stream offset of byte 0 (chunk aligned) */
	_Atomic uint64_t end;         /* past its last byte; UINT64_MAX while open */
	uint64_t after;               /* where the next may start (set before end) */
	_Atomic uint64_t limit;       /* bytes it may hold (writer lowers it) */
	_Atomic bool limit_is_alloc;  /* limit is the extent: reaching it is "full" */
	_Atomic int why;              /* enum rr_stop: why the receiver closed it */
	struct recfs_loss loss;       /* final at close (under loss_lock) */
	uint64_t ring_dropped, kernel_dropped, t_open_ns, t_close_ns;
	uint64_t t_close_wall_ns;     /* the recording's end time */
	uint64_t t_post_ns;           /* asked for (record=on arrived) */
	bool first_seen;              /* receiver: its first datagram arrived */
	uint32_t frame_size;          /* receiver, UDP: the datagram size its first
				       * byte came in (stored at create) */
	/* receiver, UDP, read by recfsd's status? and metrics at any time
	 * (relaxed, one writer): datagrams received while it was open, those
	 * of the wrong size, the last wrong one's size and the size wanted
	 * then (both with --strip; want 0: none learned yet) */
	_Atomic uint64_t rx, wrong;
	_Atomic uint32_t wrong_len, want_len;
	/* writer, then read under seg_lock */
	_Atomic int state;            /* enum rr_seg_state */
	uint64_t len;                 /* sealed length */
	struct recfs_rec rec;         /* as sealed */
	char msg[320];                /* why it failed or was cut */
};

struct wr_ctx;  /* writer.c's */

struct rr {
	/* options */
	const char *pack_spec, *name, *input_spec, *stats_json;
	FILE *json_f;                    /* --stats-json, opened before the start */
	enum rr_input_kind in_kind;
	const char *in_path;             /* file:PATH, NULL for stdin */
	int in_fd;
	bool fmt_vdif;
	uint32_t packet_size, strip, frame_size, threads, fps;
	bool legacy;
	uint64_t rcvbuf, rate, duration_ns, size_limit, buffer;
	uint32_t qd;
	uint64_t commit_ns;
	void (*progress)(const struct rr_progress *p, void *arg); /* NULL: none */
	void *progress_arg;
	const _Atomic int *stop_flag;    /* the program's (rr_conf), else &no_stop */
	_Atomic int no_stop;             /* stays 0 */
	bool no_rt;
	bool rt_rcv, rt_wr;              /* SCHED_FIFO obtained */
	struct rr_gen gen;

	/* recfsd: the receiver opens and closes segments between batches
	 * (daemon); recfs-record's one segment ends the receiver */
	bool daemon;
	struct rr_seg segs[RR_SEGQ];
	_Atomic uint64_t seg_posted;     /* segments posted by the control plane */
	_Atomic uint64_t seg_off;        /* segments [0, seg_off) asked to close */
	_Atomic uint64_t seg_rcv;        /* the receiver's: opened [0, seg_rcv] */
	_Atomic bool seg_open;           /* segment seg_rcv is open */
	_Atomic uint64_t seg_wr;         /* the writer's current segment */
	_Atomic uint64_t seg_done;       /* segments [0, seg_done) finished */
	_Atomic bool wr_quit;            /* recfsd: writer ends when idle */
	_Atomic bool wr_failed;          /* a member failed: nothing more is written */
	pthread_mutex_t seg_lock;        /* rec, created and results (writer, committer, control) */
	pthread_mutex_t *pack_lock;      /* library calls on the shared pack */
	/* recfsd: per queued scan (by segment number mod RR_SEGQ), how many
	 * of its streams have yet to create their recording; shared by every
	 * stream, read and decremented under pack_lock */
	unsigned *share_left;
	/* totals over the input's life (recfsd metrics; receiver, relaxed) */
	_Atomic uint64_t tot_packets, tot_bytes, tot_idle_packets, tot_idle_bytes;
	_Atomic uint64_t tot_ring_dropped, tot_kernel_dropped, tot_wrong_size, tot_frames_lost;
	_Atomic uint64_t tot_written;
	_Atomic uint64_t tot_other;      /* --split: datagrams of no lane's thread */
	_Atomic uint64_t tot_blind;      /* scans closed blind (rr_blind) */
	_Atomic uint64_t start_latency_ns; /* last segment: asked for to first datagram */

	/* pack */
	struct recfs_pack *p;
	const struct recfs_geom *g;
	struct recfs_rec rec;           /* the committer's (main's after the join) */
	_Atomic bool created;           /* rec and t_first are set (release) */
	uint32_t chunk;

	/* ring: nslots chunk-sized slots, stream byte s lives at s % size */
	uint8_t *ring;
	uint64_t ring_size, nslots;
	bool ring_huge, ring_locked;

	_Atomic uint64_t filled;    /* stream bytes in the ring (receiver) */
	_Atomic uint64_t released;  /* stream bytes written and freed (writer) */
	_Atomic bool eof;           /* receiver done: filled is final */
	_Atomic int stop;           /* enum rr_stop, first reason wins */
	_Atomic uint64_t ring_max;  /* max unwritten bytes in the ring */
	_Atomic uint32_t learned_frame; /* VDIF frame / UDP datagram size seen */
	int data_efd, space_efd, aio_efd;
	int rcv_efd;                /* recfsd: a scan posted, wakes an idle receiver */

	/* receiver statistics; loss_pub is the committer's copy */
	struct recfs_loss loss;
	uint64_t ring_dropped, kernel_dropped; /* loss.dropped is their sum */
	uint32_t ovfl_last;              /* the socket's last drop count */
	/* recfsd learns the datagram size from runs (rcv.c): run_n
	 * datagrams in a row of size run_q, other than packet_size; run_staged
	 * of them wait in the ring past filled (a scan that has recorded
	 * nothing yet), since run_t0; last_wrong: the last wrong size */
	bool size_given;                 /* --packet-size: never relearned */
	uint32_t run_q, run_n, run_staged, last_wrong;
	uint64_t run_t0;
	uint64_t coalesce_ns;            /* sleep after a thin batch (0: never) */
	pthread_mutex_t loss_lock;
	struct recfs_loss loss_pub;
	uint64_t loss_pub_seg;           /* the segment loss_pub belongs to */
	char in_err[256];

	/* writer */
	_Atomic uint64_t done_chunks;    /* the segment's chunks [0, done) written */
	_Atomic uint64_t done_bytes;     /* its bytes in those chunks */
	struct rr_member_stat mst[RECFS_MAX_MEMBERS];
	int err_member, err_errno;
	long err_short;                  /* bytes a short write wrote, -1 none */
	uint32_t err_len;                /* of that request */
	uint64_t err_off;
	pthread_mutex_t csum_lock;
	uint64_t *csums, csum_base, csum_n, csum_cap;
	/* the partial chunk the writer wrote when the input stalled: stream
	 * bytes [0, tail_len) are on the members, the last chunk's checksum
	 * over tail_len % chunk bytes is tail_csum (under csum_lock) */
	uint64_t tail_len, tail_csum;
	_Atomic bool tail_req;           /* committer: write the partial chunk */
	_Atomic bool tail_ready;         /* writer: a new tail_len to commit */

	/* committer */
	struct rr_gflush *gflush;        /* shared by the pack's committers */
	struct recfs_stage stage;        /* the entry the next commit writes */
	uint64_t durable_len;            /* the entry last flushed: what a cut
					  * leaves at least (rec may be ahead,
					  * written and not yet flushed) */
	pthread_mutex_t cm_lock;
	pthread_cond_t cm_cond;
	bool cm_quit;
	uint64_t commits, commit_max_ns;
	int cm_err;
	char cm_msg[512];
	bool progress_shown;
	struct wr_ctx *wr;               /* the writer's AIO context (rr_start) */
	int fin_status;                  /* rr_finish's outcome and reason, */
	enum rr_stop fin_why;            /* for rr_write_stats */

	uint64_t t_start, t_first, t_end;

	/* rr_new's and rr_start's */
	pthread_mutex_t own_pack_lock;   /* pack_lock when the program shares none */
	struct rr_gflush *own_gflush;    /* gflush when the program shares none */
	pthread_t rcv_th, wr_th, cm_th;  /* the threads rr_start started */
	bool rcv_started, wr_started, cm_started;
};

/*
 * One flush for every recording of a pack (group commit): each committer
 * announces itself (rr_gflush_enter), stages its entry and slots
 * (recfs_rec_commit_stage), then asks for a flush that starts after that
 * and after every committer then staging is done; while one runs, later
 * callers wait and the next one covers them all.  Committers wake on the same clock (whole
 * multiples of the interval since the start), so the streams of a scan share each flush.
 * recfsd shares one between its inputs; recfs-record has its own.
 */
struct rr_gflush {
	pthread_mutex_t m;
	pthread_cond_t c;
	bool running;
	unsigned staging;         /* committers between enter and rr_gflush */
	uint64_t started, done;   /* flushes started and finished */
	int err;                  /* the last flush's */
	uint64_t flushes;         /* for the report */
};
void rr_gflush_init(struct rr_gflush *g);
/* a committer is about to stage: the next flush waits for it */
void rr_gflush_enter(struct rr_gflush *g);
/* staged (flush false: staging failed, only leave): wait for a flush that
 * starts after every committer now staging is done */
int rr_gflush(struct rr_gflush *g, struct recfs_pack *p, bool flush);

static inline void rr_set_stop(struct rr *r, enum rr_stop why)
{
	int none = RR_STOP_NONE;
	atomic_compare_exchange_strong(&r->stop, &none, (int)why);
}

static inline void rr_kick(int efd)
{
	uint64_t one = 1;
	ssize_t n = write(efd, &one, sizeof(one));
	(void)n;
}

static inline void rr_drain(int efd)
{
	uint64_t v;
	ssize_t n = read(efd, &v, sizeof(v));
	(void)n;
}


static inline struct rr_seg *rr_seg_at(struct rr *r, uint64_t n)
{
	return &r->segs[n % RR_SEGQ];
}

/*
 * The bytes segment s holds so far, and whether it is closed.  The receiver
 * closes a segment by storing its end, then moving filled on to the next
 * chunk boundary (where the next segment starts): so end is read again
 * after filled, or a close between the two reads would hand out the
 * boundary as this segment's length.
 */
static inline uint64_t rr_seg_bytes(struct rr *r, struct rr_seg *s, bool *ended)
{
	uint64_t end = atomic_load_explicit(&s->end, memory_order_acquire), f = end;
	if (end == UINT64_MAX) {
		f = atomic_load_explicit(&r->filled, memory_order_acquire);
		end = atomic_load_explicit(&s->end, memory_order_acquire);
		if (end != UINT64_MAX)
			f = end;
	}
	*ended = end != UINT64_MAX;
	return f > s->base ? f - s->base : 0;
}

/*
 * recfsd's datagram size is what RR_LEARN_RUN datagrams in a row agree on,
 * learned between scans or before a scan's first byte (rcv.c).  A scan
 * is blind when it received datagrams and recorded (almost) none: at least
 * RR_LEARN_RUN of the wrong size, and 9 in 10 of all it received.
 */
#define RR_LEARN_RUN 8
static inline bool rr_blind(uint64_t rx, uint64_t wrong)
{
	return wrong >= RR_LEARN_RUN && wrong * 10 >= rx * 9;
}

/* ring.c */
int rr_ring_alloc(struct rr *r);
static inline uint64_t rr_ring_free(struct rr *r, uint64_t filled)
{
	return r->ring_size - (filled - atomic_load_explicit(&r->released, memory_order_acquire));
}

/* copy out of / into the ring at stream offset s, across the wrap */
static inline void rr_ring_read(struct rr *r, uint64_t s, void *buf, size_t n)
{
	uint64_t pos = s % r->ring_size, k = r->ring_size - pos < n ? r->ring_size - pos : n;
	memcpy(buf, r->ring + pos, k);
	memcpy((uint8_t *)buf + k, r->ring, n - k);
}

static inline void rr_ring_write(struct rr *r, uint64_t s, const void *buf, size_t n)
{
	uint64_t pos = s % r->ring_size, k = r->ring_size - pos < n ? r->ring_size - pos : n;
	memcpy(r->ring + pos, buf, k);
	memcpy(r->ring, (const uint8_t *)buf + k, n - k);
}

/* input.c */
int rr_parse_input(struct rr *r, const char *spec);
int rr_open_input(struct rr *r);
bool rr_realtime(int prio);

/* commit.c */
int cm_commit(struct rr *r, uint64_t len, bool seal);
/* Seal the writer's segment: at the written length `len` (-1: none) unless
 * a commit failed (then at the durable length) or a stall wrote more. */
int cm_seal(struct rr *r, int64_t len);
void cm_progress(struct rr *r, bool final);
void *cm_main(void *arg);

/* writer.c */
/* the AIO context and slots in r->wr: 0, or -errno with recfs_errmsg() */
int wr_setup(struct rr *r);
void wr_teardown(struct rr *r);
/* recfs-record: write segment 0; its length (-1: not created) */
int64_t wr_run(struct rr *r);
/* recfsd: write and seal segments until wr_quit and none is left */
void *wr_main(void *arg);


#endif
