/* SPDX-License-Identifier: MIT */
/*
 * recfsd: the daemon's state, shared by its scan model (scan.c, ds.c), its
 * control plane (ctl*.c), its metrics (rdmetrics.c) and its wiring
 * (main.c).  Calls go down that list's reverse: main.c starts the control
 * plane and the metrics, which call the model, which calls the engine;
 * never back up (tests/integration/00-layout.sh checks the objects).
 * Private prefix: rd_.
 */
#ifndef RECFS_RECORDER_RECFSD_H
#define RECFS_RECORDER_RECFSD_H

#include <sys/socket.h>

#include "engine/engine.h"

#define RD_MAX_INPUTS 8
#define RD_MAX_STREAMS 32
#define RD_ERRQ 32 /* errors kept for error? */

/* A stream (a lane): one engine (ring, writer, committer) and one
 * recording a scan.  An input feeds one stream, or with --split or --lanes
 * its lanes, reserved at start; the datastreams choose before each scan
 * which VDIF threads each lane takes and its recording's suffix. */
struct rd_stream {
	struct rr *r;
	unsigned input;
	char suffix[32];        /* its name in metrics: "", _LABEL, _tN, _laneK */
	char sfx[80];           /* the next scan's recording suffix: "", _LABEL, _tN, _dsNAME */
	bool used;              /* the next scan records on it */
	bool started;           /* rr_start'ed: rr_wait joins it */
};

/* A datastream (jive5ab's datastream = add : NAME : MATCH ...): frames of
 * the VDIF stations and threads MATCH names go to recording SCAN_dsNAME,
 * {thread} and {station} in NAME expanded per frame. */
#define RD_MAX_DS 32
#define RD_DS_MATCH 8
#define RD_DS_NAME 32
struct rd_ds {
	char name[RD_DS_NAME + 1];
	bool dflt;              /* --split's: recorded as SCAN_tN */
	unsigned nm;
	struct rd_match {
		char text[48];          /* as given, for datastream? NAME */
		uint8_t kind;           /* RD_STN_ANY, RD_STN_ID, RD_STN_CHAR */
		uint16_t station;       /* ID, or the first character << 8 */
		uint64_t threads[RR_VDIF_MAX_THREADS / 64];
	} m[RD_DS_MATCH];
};
enum { RD_STN_ANY, RD_STN_ID, RD_STN_CHAR };

struct rd_input {
	char label[16];
	const char *spec;       /* udp:[ADDR:]PORT */
	int cpu;                /* -1: not pinned */
	unsigned first, n;      /* its streams */
	struct rr_split split;  /* --split: its receiver's lanes */
	pthread_t rcv;
	bool started;
};

struct rd_scan {
	uint64_t no;            /* 1, 2, ... since the daemon started */
	uint64_t seg;           /* its segment number in every input */
	char name[RECFS_NAME_MAX + 1];  /* the recordings' base name */
	char label[RECFS_NAME_MAX + 1]; /* the scan label as given */
	uint64_t t_on_ns, t_off_ns;     /* wall clock of record=on/off */
};

struct rd {
	struct recfs_pack *p;
	const char *pack_spec;
	pthread_mutex_t pack_lock;      /* library calls on p */
	struct rr_gflush *gflush;       /* every input's commits share each flush */
	unsigned share_left[RR_SEGQ];   /* streams of a queued scan yet to create (engine.h) */
	unsigned nin, nst;
	struct rd_input in[RD_MAX_INPUTS];
	struct rd_stream st[RD_MAX_STREAMS];
	bool fmt_vdif;
	unsigned nsplit;                /* lanes per input (--split, --lanes), 0: one stream, no datastreams */
	unsigned ndflt;                 /* --split vdif-thread: its threads, the default datastreams */
	uint32_t split_thread[RR_MAX_LANES];
	/* datastreams, under lock, in jive5ab's order (by name) */
	unsigned nds;
	struct rd_ds ds[RD_MAX_DS];
	/* the next scan's plan (rd_ds_plan): each input's map, made once per
	 * statement (plan_ns: its t_stmt_ns; 0 after a change) */
	struct rr_dsmap plan[RD_MAX_INPUTS];
	uint64_t plan_ns;
	int plan_rc;
	char plan_why[384];
	char plan_none[16];             /* an input whose datastreams take nothing seen ("": none) */
	uint64_t t_start;

	/* control state, under lock */
	pthread_mutex_t lock;
	bool recording;
	bool close_pending;             /* record=off on this control line */
	uint64_t scans;                 /* scans started */
	struct rd_scan cur;             /* the last scan started */
	struct rd_scan check;           /* scan_check?'s (scan_set=) */
	struct rd_scan hist[RR_SEGQ];   /* the last scans, by no % RR_SEGQ */
	char halted[320];               /* the open scan stopped by itself: why */
	char why[384];                  /* the last refusal's reason */
	char blind[384];                /* rd_scan_blind's */
	char exp[64], station[16];      /* the last record=on's, for names */
	uint32_t mtu;                   /* mtu= as the station set it (0: none) */
	uint64_t t_stmt_ns;             /* the statement being carried out arrived
					 * (rr_mono_ns(), before any lock) */
	char np_proto[8];               /* net_protocol='s, jive5ab's name ("": none) */
	uint32_t np_block, np_nblock;   /* net_protocol='s BLOCKSIZE, NBLOCK (0: none) */
	char mode[64];                  /* mode= VDIF_... or mark5b-..., as given ("": none) */
	uint32_t mode_payload, mode_mbps, mode_tracks;
	uint32_t mode_frame;            /* its frame: VDIF payload + 32, Mark5B 10016 */
	unsigned nthread_r, nthread_w;
	uint64_t tstat_ns, tstat_rx, tstat_wr; /* tstat?'s last sample */
	/* disk2file: one copy at a time, in a thread of its own (ctl_d2f.c) */
	struct rd_d2f {
		pthread_t thr;
		bool started;           /* a thread to join */
		_Atomic bool active, quit;
		int fd;
		struct recfs_rec rec;
		char dest[256], mode[4], err[400];
		uint64_t start, end;
		_Atomic uint64_t cur;
	} d2f;  /* record=nthread (jive5ab's; kept, not used) */
	uint64_t stop_at_ns;            /* wall clock: the open scan stops itself (0: never) */
	uint64_t start_at_ns;           /* wall clock: a Mark6 line's START (0: at once) */
	/* scan_set= of a scan or recording found on the pack, not among hist[]:
	 * its recordings by name (check_nrec 0: d->check's streams) */
	unsigned check_nrec;
	char check_recs[RD_MAX_STREAMS][RECFS_NAME_MAX + 1];
	char check_off[2][40];          /* scan_set='s START and END as given ("": none) */
	/* replies to the queries both dialects have (record?, status?, rtime?) */
	enum rd_dialect { RD_DIALECT_JIVE5AB, RD_DIALECT_MARK6 } dialect;
	uint64_t bytes0;                /* bytes recorded before the open scan */
	/* jive5ab's error queue (errorqueue.cc): status? flags the oldest
	 * (bit 0x2) until error? reads it; the same number and message again
	 * counts as one error (count, last_ns).  A condition (a blind scan, a
	 * member failed, an input stopped) posts once, when it arises. */
	struct rd_err {
		int no;                 /* a VSI-S code, never 0 */
		char msg[384];
		uint64_t ns, last_ns;   /* wall clock: first and last time */
		unsigned count;
		uint64_t key;           /* a condition's: updated in place (0: none) */
	} errq[RD_ERRQ];
	unsigned nerr;
	uint64_t err_dropped;           /* the oldest, when the queue was full */
	uint64_t blind_posted;          /* the scan whose blindness was posted */
	uint8_t st_posted[RD_MAX_STREAMS]; /* RD_POSTED_*: a stream's conditions posted */
};
#define RD_POSTED_FAIL 1u
#define RD_POSTED_EOF 2u

/* scan.c: the scan model */
void rd_rec_name(const struct rd *d, const char *base, unsigned k, char *out, size_t len);
bool rd_scan_done(const struct rd *d, const struct rd_scan *sc);
void rd_refresh(struct rd *d);
const char *rd_refuse(struct rd *d, int *rc);
int rd_scan_start(struct rd *d, const char *name, const char *label, uint64_t size_limit, int64_t start_unix);
int rd_scan_stop(struct rd *d);
void rd_line_end(struct rd *d);
const char *rd_scan_blind(struct rd *d, const struct rd_scan *sc);
bool rd_name_taken(struct rd *d, const char *name);
void rd_error(struct rd *d, int no, const char *msg);
const struct rd_err *rd_error_peek(struct rd *d);
bool rd_error_pop(struct rd *d, struct rd_err *e);
void rd_watch(struct rd *d);
void rd_tick(struct rd *d);
/* ds.c: the datastreams onto the lanes for the next scan (sets each
 * stream's sfx and used; with maps, each input's map for segment seg).  0,
 * or -1 with why (lanes too few) set: the frames left without a lane are
 * dropped. */
int rd_ds_plan(struct rd *d, bool maps, uint64_t seg, char *why, size_t len);
void rd_ds_defaults(struct rd *d);

/* ctl.c (the keyword table; ctl_*.c the keywords): one VSI-S statement; its return code, its reply fields in out */
int rd_ctl_exec(struct rd *d, const char *kw, bool query, unsigned np, char *const *p, char *out,
		size_t outlen);
void rd_ctl_line_end(struct rd *d);   /* after the last statement of a line */
int rd_ctl_start(struct rd *d, const struct sockaddr_storage *a, socklen_t len, char *where, size_t wlen);
void rd_ctl_stop(struct rd *d);
/* rdmetrics.c */
int rd_metrics_start(struct rd *d, const struct sockaddr_storage *a, socklen_t len, char *where,
		     size_t wlen);
void rd_metrics_stop(struct rd *d);

#endif
