/* SPDX-License-Identifier: MIT */
/*
 * The recording engine shared by recfs-record and recfsd: one input (or one
 * --split lane) onto a pack, through a RAM ring, a receiver, a writer and a
 * committer.  struct rr is opaque here; its fields and the units' entry
 * points are the engine's own (rr.h, private to recorder/engine/).
 *
 * A program fills a struct rr_conf and calls, in this order:
 *   rr_new      the ring (locked now: it takes time), the input opened
 *               (a UDP socket is bound and starts to queue), eventfds, locks
 *   rr_start    the threads: recfs-record's receiver and committer (its
 *               writer runs in rr_run), recfsd's writer and committer (its
 *               receivers are started by the program: rcv_main, or
 *               rcv_split_main for the lanes of one socket)
 *   rr_run      recfs-record: write until the stream ends, then stop
 *   rr_finish   recfs-record: seal at the exact length and report
 *   rr_stop, rr_wait   recfsd: ask every thread to end, then join them
 *   rr_free     everything rr_new and rr_start made (the pack stays)
 * recfsd posts and closes segments (scans) between them with rr_seg_post
 * and rr_seg_close and reads their outcome with rr_seg_result; counters for
 * metrics, VSI-S and the reports come as an rr_stats snapshot.
 *
 * The engine prints nothing and has no global state: a failing call
 * returns -errno with the reason in recfs_errmsg() (librecfs's convention,
 * recfs.h), a failed segment keeps its reason (rr_seg_result), recfs-
 * record's verdict comes back from rr_finish as a line; the program prints
 * them, and asks for the summary (rr_summary), the statistics
 * (rr_write_stats) and the progress line (rr_conf.progress) itself.  A
 * program's signal handler stops the receiver through rr_conf.stop_flag.
 */
#ifndef RECFS_RECORDER_ENGINE_H
#define RECFS_RECORDER_ENGINE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "recfs/recfs.h"
#include "common/opts.h"
#include "common/util.h"
#include "common/vdif.h"

struct rr;         /* one input's engine */
struct rr_gflush;  /* one group flush, shared by a pack's committers */

enum rr_stop {
	RR_STOP_NONE = 0,
	RR_STOP_EOF,
	RR_STOP_DURATION,
	RR_STOP_SIZE,
	RR_STOP_SIGNAL,
	RR_STOP_FULL,
	RR_STOP_IOERR,
	RR_STOP_INPUT,
};

extern const char *const rr_stop_what[];

enum rr_input_kind { RR_IN_FD, RR_IN_UDP, RR_IN_GEN };
/* The kind of input SPEC names (stdin or -, file:PATH, udp:[ADDR:]PORT,
 * gen:counter, gen:vdif), or -EINVAL. */
int rr_input_kind(const char *spec);

/* How a recording ended: recfs-record's exit status (recfs-record.1) and
 * its statistics' "status". */
enum rr_outcome {
	RR_OK = 0,        /* sealed: input ended, limit reached, or signal */
	RR_NOTHING = 1,   /* nothing recorded */
	RR_FULL = 2,      /* pack full: sealed at the last byte that fit */
	RR_IO = 3,        /* member I/O error: sealed at the durable prefix */
	RR_INPUT = 4,     /* input failed mid-stream: sealed at what arrived */
};

/* What the progress callback is given (rr_conf.progress). */
struct rr_progress {
	uint64_t bytes;               /* written */
	uint64_t bytes_per_s;         /* since the first byte (or the start) */
	uint64_t ring_fill, ring_max; /* unwritten bytes in the ring, its most */
	uint64_t dropped;             /* datagrams dropped, ring full */
	uint64_t frames_lost;         /* VDIF frames missing */
	bool final;                   /* the last call: the threads ended */
};

/* What a program sets up an engine with. */
struct rr_conf {
	const char *input;            /* the input's spec (rr_input_kind) */
	struct rr_opts eo;            /* the engine's options (common/opts.h);
				       * eo.buffer 0: the ring's default */
	struct recfs_pack *p;         /* open for writing; stays the caller's */
	const char *pack_spec;        /* for messages */
	/* recfs-record */
	const char *name;             /* the recording, posted by rr_start */
	const char *stats_json;       /* --stats-json: NULL none, "-" stdout */
	uint32_t frame_size, threads, fps; /* gen: block or frame size, VDIF threads, rate */
	bool legacy;                  /* gen:vdif: legacy headers */
	uint64_t rate;                /* gen: bytes a second, 0 unpaced */
	uint64_t duration_ns, size_limit;  /* 0: none */
	/* the live progress line: called by the committer thread at least
	 * twice a second while recording, and once more (final) by rr_run after the
	 * threads ended (NULL: none) */
	void (*progress)(const struct rr_progress *p, void *arg);
	void *progress_arg;
	/* a program's signal handler sets *stop_flag non-zero (it must be
	 * lock-free: atomic_store is async-signal-safe then); the receiver
	 * stops on it, the recording ends as RR_STOP_SIGNAL.  NULL: none
	 * (recfsd stops its inputs with rr_stop) */
	const _Atomic int *stop_flag;
	/* recfsd */
	bool daemon;                  /* segments come and go (rr_seg_post) */
	bool no_socket;               /* a --split lane past the first: the
				       * input's socket is lane 0's */
	pthread_mutex_t *pack_lock;   /* library calls on a shared pack (NULL:
				       * the engine's own) */
	struct rr_gflush *gflush;     /* NULL: the engine's own */
	unsigned *share_left;         /* [RR_SEGQ]: per queued scan, how many
				       * streams have yet to create their
				       * recording (under pack_lock) */
};

/* 0 and *rp, or -errno with the reason in recfs_errmsg() (nothing left). */
int rr_new(const struct rr_conf *c, struct rr **rp);
/* The writer's AIO context and the threads, the clock started at t_start
 * (rr_mono_ns(); 0: now).  0, or -errno with the reason in recfs_errmsg()
 * (a thread it started is stopped and joined again; nothing created). */
int rr_start(struct rr *r, uint64_t t_start);
/* recfs-record: write the stream (SCHED_FIFO for UDP unless --no-realtime),
 * stop the receiver and the committer: the length written (-1: the
 * recording was not created). */
int64_t rr_run(struct rr *r);
/* recfs-record: seal at len (the receiver's loss map is final); the
 * verdict line in line (without the program's name, "" none): the
 * outcome.  It prints nothing. */
enum rr_outcome rr_finish(struct rr *r, int64_t len, char *line, size_t n);
/* recfs-record, after rr_finish: the summary on f (nothing when the
 * recording was not created), and --stats-json (rr_conf.stats_json, opened
 * by rr_start): 0, or -EIO with the reason in recfs_errmsg(). */
void rr_summary(struct rr *r, FILE *f);
int rr_write_stats(struct rr *r);
/* recfsd: ask the receiver to close its segment and the writer to end
 * when idle. */
void rr_stop(struct rr *r);
/* recfsd, after the receiver thread ended (or never ran: receiver_ran
 * false): join the writer and the committer. */
void rr_wait(struct rr *r, bool receiver_ran);
void rr_free(struct rr *r);

/* The receiver threads' entries: one input's engine (rcv_main), or one
 * socket's lanes (rcv_split_main on a struct rr_split): --split
 * vdif-thread and recfsd's datastreams, a datagram's lane chosen by its
 * VDIF station and thread. */
void *rcv_main(void *r);
#define RR_MAX_LANES 16
#define RR_DS_STATIONS 8
/* Which lane takes a frame: a row per station listed, the last row for any
 * other station; -1 none (counted as other, dropped). */
struct rr_dsmap {
	unsigned nst;
	uint16_t station[RR_DS_STATIONS];
	int8_t lane[RR_DS_STATIONS + 1][RR_VDIF_MAX_THREADS];
};
/* The (station, thread) keys the receiver has seen and when: written by the
 * receiver only, read by the control plane (relaxed atomics). */
struct rr_seen {
	_Atomic uint32_t station[RR_DS_STATIONS];  /* 0 free, else 0x10000 | id; in order */
	_Atomic uint32_t last_s[RR_DS_STATIONS][RR_VDIF_MAX_THREADS]; /* rr_mono_ns() seconds + 1; 0 never */
};
struct rr_split {
	int fd;                          /* the input's socket (rr_input_take) */
	uint32_t strip;
	unsigned n;
	struct rr *lane[RR_MAX_LANES];   /* lane 0 holds the input's totals */
	/* the map of scan (segment) k is maps[k % RR_SEGQ], written before
	 * lane 0's segment k is posted; the receiver takes its copy when lane
	 * 0 opens k and keeps it until the next (between scans too); before
	 * the first scan, first */
	struct rr_dsmap *maps;           /* RR_SEGQ of them */
	struct rr_dsmap first;
	struct rr_seen *seen;
};
void *rcv_split_main(void *sp);

/* The input's socket (-1: none); rr_input_take hands it over to the
 * caller (a split receiver), which closes it. */
int rr_input_fd(const struct rr *r);
int rr_input_take(struct rr *r);
uint32_t rr_strip(const struct rr *r);
uint64_t rr_rcvbuf(const struct rr *r);
void rr_set_rcvbuf(struct rr *r, uint64_t rcvbuf); /* what status? reports */

/* The pack opened read-write for recording (the writer's lock held until
 * it is closed), every member present: a degraded pack records nothing.
 * 0, or -errno with recfs_errmsg(). */
int rr_pack_open(const char *spec, struct recfs_pack **p);

/* One flush for a pack's committers (group commit): NULL out of memory. */
struct rr_gflush *rr_gflush_new(void);
void rr_gflush_free(struct rr_gflush *g);

/* Free RAM, for a ring's size. */
uint64_t rr_mem_available(void);

/*
 * Segments: one recording's part of the stream, numbered from 0.  recfs-
 * record has one; recfsd one per scan, at most RR_SEGQ unfinished.
 */
#define RR_SEGQ 8
enum rr_seg_state {
	RR_SEG_QUEUED = 0,  /* posted, not yet opened by the receiver */
	RR_SEG_OPEN,        /* the receiver fills it */
	RR_SEG_ENDED,       /* closed: end is final; the writer finishes it */
	RR_SEG_SEALED,      /* sealed at len (or empty: nothing arrived) */
	RR_SEG_FAILED,      /* not created, or not sealed: msg says why */
};
/* post a segment (0, or -EBUSY when RR_SEGQ are unfinished); start_unix:
 * VDIF, open at the first frame 0 of a second at or after this Unix time
 * (0: at the next datagram); t_asked_ns when it was asked for (rr_mono_ns(),
 * the start latency's origin; 0: now); its number in *id */
int rr_seg_post(struct rr *r, const char *name, uint64_t size_limit, int64_t start_unix,
		uint64_t t_asked_ns, uint64_t *id);
void rr_seg_close(struct rr *r);       /* close every posted segment */
/* after posting or closing: wake the writer, and a receiver waiting
 * between scans (after every stream is posted) */
void rr_kick_writer(struct rr *r);
void rr_kick_receiver(struct rr *r);
uint64_t rr_seg_posted(const struct rr *r);   /* segments posted */
uint64_t rr_seg_done(const struct rr *r);     /* [0, done) finished */
bool rr_seg_full(const struct rr *r);         /* RR_SEGQ unfinished */
/* Is a segment still unfinished named name? */
bool rr_seg_pending(const struct rr *r, const char *name);
/* segment n's state now and why the receiver closed it (lock-free) */
enum rr_seg_state rr_seg_state(const struct rr *r, uint64_t n, enum rr_stop *why);
/* segment n's name: set at the post, stays until the slot is posted again */
const char *rr_seg_name(const struct rr *r, uint64_t n);
/* segment n as the writer left it (read under its lock) */
struct rr_seg_result {
	char name[RECFS_NAME_MAX + 1];
	enum rr_seg_state state;
	uint64_t len;                 /* sealed length */
	struct recfs_rec rec;         /* as sealed */
	char msg[320];                /* why it failed or was cut */
};
void rr_seg_result(struct rr *r, uint64_t n, struct rr_seg_result *res);
/* Did segment n receive datagrams and record (almost) none, all of the
 * wrong size, so far or at its close?  Why in msg (when not NULL). */
bool rr_seg_blind(const struct rr *r, uint64_t n, char *msg, size_t len);

/* Counters over the engine's life, for metrics, VSI-S and the reports. */
struct rr_stats {
	uint64_t packets, bytes;        /* received while a segment was open */
	uint64_t idle_packets, idle_bytes; /* received between segments */
	uint64_t ring_dropped, kernel_dropped, wrong_size;
	uint64_t frames_lost;           /* in closed segments (rr_frames_lost) */
	uint64_t written;
	uint64_t other;                 /* --split: datagrams of no lane's thread */
	uint64_t blind;                 /* segments closed blind */
	uint64_t start_latency_ns;      /* last segment: asked for to first datagram */
	uint64_t ring_size, ring_fill, ring_max; /* bytes */
	bool wr_failed;                 /* a member failed: nothing more is written */
	int err_member;                 /* which (wr_failed), -1: not a member's */
	bool eof;                       /* the receiver ended */
	char in_err[256];               /* why (eof), "" */
};
void rr_stats(const struct rr *r, struct rr_stats *st);
/* frames lost in closed segments plus the open one's so far */
uint64_t rr_frames_lost(struct rr *r);
/* Written by the writer only, read by recfsd's metrics (relaxed). */
struct rr_member_stat {
	_Atomic uint64_t max_ns, sum_ns, writes;
	_Atomic uint64_t short_writes;   /* completed short; the rest sent again */
	_Atomic uint64_t errors;         /* writes that failed */
};
const struct rr_member_stat *rr_member_stat(const struct rr *r, unsigned member);

_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "rr_conf.stop_flag must be lock-free for a signal handler");

#endif
