/* SPDX-License-Identifier: MIT */
/*
 * recfsd's scan model: the scans a station starts and stops (record=on /
 * record=off) over the daemon's streams, their names, the refusals, the
 * error jive5ab's error? answers and the bookkeeping at each line's end.
 * The keywords (ctl*.c) and the metrics (rdmetrics.c) call into it; it
 * calls only the engine (engine.h) and librecfs, never back up.  main.c
 * wires the daemon together.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/engine.h"
#include "recfsd.h"
#include "vsis.h"

/* ------------------------------------------------------------ the scans */
static uint64_t rd_wall_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The recording name of scan `base` on stream k (its suffix as the
 * datastreams set it for the next scan). */
void rd_rec_name(const struct rd *d, const char *base, unsigned k, char *out, size_t len)
{
	int n = snprintf(out, len, "%s%s", base, d->st[k].sfx);
	if (n < 0 || (size_t)n >= len)
		out[0] = 0; /* too long: refused as no valid name */
}

bool rd_scan_done(const struct rd *d, const struct rd_scan *sc)
{
	for (unsigned i = 0; i < d->nst; i++)
		if (rr_seg_done(d->st[i].r) <= sc->seg)
			return false;
	return true;
}

/* A stream of the open scan ended by itself (pack full, member error,
 * input error): record=off, record? and status? will say why, even while
 * the scan's other streams go on; once every stream has ended the scan is
 * no longer recording.  Under d->lock. */
void rd_refresh(struct rd *d)
{
	if (!d->recording)
		return;
	bool all = true;
	for (unsigned i = 0; i < d->nst; i++) {
		enum rr_stop why;
		if (rr_seg_state(d->st[i].r, d->cur.seg, &why) < RR_SEG_ENDED) {
			all = false;
			continue;
		}
		if (why != RR_STOP_NONE && !d->halted[0]) {
			char name[RECFS_NAME_MAX + 1];
			snprintf(name, sizeof(name), "%s", rr_seg_name(d->st[i].r, d->cur.seg));
			snprintf(d->halted, sizeof(d->halted), "%s: scan '%s' stopped",
				 rr_stop_what[why], name);
			rd_error(d, VS_FAILED, d->halted);
		}
	}
	if (all)
		d->recording = false;
}

/* Why no scan can start now, or NULL.  Under d->lock. */
const char *rd_refuse(struct rd *d, int *rc)
{
	*rc = VS_FAILED;
	for (unsigned i = 0; i < d->nst; i++) {
		struct rr_stats s;
		rr_stats(d->st[i].r, &s);
		if (s.wr_failed) {
			snprintf(d->why, sizeof(d->why), "member I/O error: no more scans on this pack (%s)",
				 s.err_member >= 0 ? recfs_pack_dev(d->p, (unsigned)s.err_member)->path
						   : "writer");
			return d->why;
		}
		if (s.eof) {
			snprintf(d->why, sizeof(d->why), "input %s stopped: %s", d->in[d->st[i].input].label,
				 s.in_err[0] ? s.in_err : "receiver ended");
			return d->why;
		}
	}
	/* full: no free extent, and none coming back from a scan still being
	 * sealed (a recording holds the largest extent until its seal) */
	bool sealing = false;
	for (unsigned i = 0; i < d->nst; i++)
		sealing |= rr_seg_done(d->st[i].r) < rr_seg_posted(d->st[i].r);
	struct recfs_pack_info info;
	pthread_mutex_lock(&d->pack_lock);
	int err = recfs_pack_info(d->p, &info);
	pthread_mutex_unlock(&d->pack_lock);
	if (err || (info.largest_free == 0 && !sealing)) {
		snprintf(d->why, sizeof(d->why), "pack full, no free space (delete recordings first)");
		return d->why;
	}
	return NULL;
}

/* Does a recording of scan `name` exist on any stream, or is one queued? */
bool rd_name_taken(struct rd *d, const char *name)
{
	if (!d->recording)
		rd_ds_plan(d, false, 0, NULL, 0);
	for (unsigned i = 0; i < d->nst; i++) {
		char rn[RECFS_NAME_MAX + 16];
		if (!d->st[i].used)
			continue;
		struct recfs_rec old;
		rd_rec_name(d, name, i, rn, sizeof(rn));
		pthread_mutex_lock(&d->pack_lock);
		bool found = recfs_rec_lookup(d->p, rn, &old) == 0;
		pthread_mutex_unlock(&d->pack_lock);
		if (found || rr_seg_pending(d->st[i].r, rn))
			return true;
	}
	return false;
}

/* Post an error on jive5ab's queue (errorqueue.cc): one already there
 * with the same number and message counts again (its last time, its
 * count); a condition's (key) has its message brought up to date while
 * unread.  Full: the oldest goes.  Under d->lock. */
static void rd_error_at(struct rd *d, int no, const char *msg, uint64_t ns, uint64_t key)
{
	for (unsigned i = 0; i < d->nerr; i++) {
		struct rd_err *e = &d->errq[i];
		if (key && e->key == key) {
			snprintf(e->msg, sizeof(e->msg), "%s", msg);
			return;
		}
		if (e->no == no && !strcmp(e->msg, msg)) {
			e->count++;
			e->last_ns = ns;
			return;
		}
	}
	if (d->nerr == RD_ERRQ) {
		memmove(&d->errq[0], &d->errq[1], (RD_ERRQ - 1) * sizeof(d->errq[0]));
		d->nerr--;
		d->err_dropped++;
	}
	struct rd_err *e = &d->errq[d->nerr++];
	e->no = no;
	snprintf(e->msg, sizeof(e->msg), "%s", msg);
	e->ns = e->last_ns = ns;
	e->count = 1;
	e->key = key;
}

/* The error status? flags (bit 0x2) until error? reads it.  Under d->lock. */
void rd_error(struct rd *d, int no, const char *msg)
{
	rd_error_at(d, no, msg, rd_wall_ns(), 0);
}

/* The oldest error not yet read (status?), or NULL.  Under d->lock. */
const struct rd_err *rd_error_peek(struct rd *d)
{
	return d->nerr ? &d->errq[0] : NULL;
}

/* Read and clear the oldest error (error?): false when none.  Under d->lock. */
bool rd_error_pop(struct rd *d, struct rd_err *e)
{
	if (!d->nerr)
		return false;
	*e = d->errq[0];
	memmove(&d->errq[0], &d->errq[1], (d->nerr - 1) * sizeof(d->errq[0]));
	d->nerr--;
	return true;
}

/* The conditions that post an error once, when they arise (ten times a
 * second from rd_tick, and before status? and error? answer): the open
 * scan's streams stopping by themselves (rd_refresh), the last scan
 * recording nothing (blind: at the scan's start time, its message kept up
 * to date while unread), a member failing, an input stopping.  A
 * condition that stays is not posted again.  Under d->lock. */
void rd_watch(struct rd *d)
{
	rd_refresh(d);
	const char *blind = rd_scan_blind(d, &d->cur);
	if (blind && d->blind_posted != d->cur.no) {
		d->blind_posted = d->cur.no;
		rd_error_at(d, VS_FAILED, blind, d->cur.t_on_ns, d->cur.no);
	} else if (blind) { /* its counts grow: the message, while unread */
		for (unsigned i = 0; i < d->nerr; i++)
			if (d->errq[i].key == d->cur.no)
				snprintf(d->errq[i].msg, sizeof(d->errq[i].msg), "%s", blind);
	}
	for (unsigned i = 0; i < d->nst; i++) {
		struct rr_stats s;
		char msg[sizeof(d->why)];
		rr_stats(d->st[i].r, &s);
		if (s.wr_failed && !(d->st_posted[i] & RD_POSTED_FAIL)) {
			d->st_posted[i] |= RD_POSTED_FAIL;
			snprintf(msg, sizeof(msg), "member I/O error: no more scans on this pack (%s)",
				 s.err_member >= 0 ? recfs_pack_dev(d->p, (unsigned)s.err_member)->path : "writer");
			rd_error(d, VS_FAILED, msg);
		}
		/* an input's lanes end together: once per input */
		unsigned first = d->in[d->st[i].input].first;
		if (s.eof && !(d->st_posted[first] & RD_POSTED_EOF)) {
			d->st_posted[first] |= RD_POSTED_EOF;
			snprintf(msg, sizeof(msg), "input %s stopped: %s", d->in[d->st[i].input].label,
				 s.in_err[0] ? s.in_err : "receiver ended");
			rd_error(d, VS_FAILED, msg);
		}
	}
}

/* Ten times a second from main: a scan given a duration (Mark6's record
 * line) stops itself when the wall clock reaches its end. */
void rd_tick(struct rd *d)
{
	pthread_mutex_lock(&d->lock);
	rd_watch(d);
	if (d->recording && d->stop_at_ns && rd_wall_ns() >= d->stop_at_ns) {
		d->stop_at_ns = 0;
		if (rd_scan_stop(d))
			rd_error(d, VS_FAILED, d->why);
		rd_line_end(d);
	}
	pthread_mutex_unlock(&d->lock);
}

/* Start scan `name` on every input, at each one's next datagram.  0, or a
 * VSI-S return code with d->why set.  Under d->lock. */
int rd_scan_start(struct rd *d, const char *name, const char *label, uint64_t size_limit, int64_t start_unix)
{
	int rc;
	/* the last scan's conditions are posted before it stops being the
	 * last (a blind scan followed at once by the next record=on) */
	rd_watch(d);
	if (d->recording) {
		snprintf(d->why, sizeof(d->why), "already recording scan '%s'", d->cur.name);
		return VS_CONFLICT;
	}
	if (rd_refuse(d, &rc))
		return rc;
	/* the datastreams onto the lanes: which recordings this scan makes */
	char dswhy[sizeof(d->plan_why)];
	int dsbad = rd_ds_plan(d, false, 0, dswhy, sizeof(dswhy));
	/* every input's recording name must be valid and not queued */
	unsigned used = 0;
	for (unsigned i = 0; i < d->nst; i++) {
		char rn[RECFS_NAME_MAX + 16];
		rd_rec_name(d, name, i, rn, sizeof(rn));
		used += d->st[i].used;
		if (d->st[i].used && (strlen(rn) > RECFS_NAME_MAX || recfs_name_check(rn))) {
			snprintf(d->why, sizeof(d->why), "scan name '%.64s' is not a valid recording name", rn);
			return VS_PARAM;
		}
		if (rr_seg_full(d->st[i].r)) {
			snprintf(d->why, sizeof(d->why), "%u scans still being sealed", RR_SEGQ);
			return VS_BUSY;
		}
	}
	if (rd_name_taken(d, name)) {
		snprintf(d->why, sizeof(d->why), "a recording of scan '%s' already exists", name);
		return VS_CONFLICT;
	}
	/* all streams have room: post them together, so their segment
	 * numbers stay the same; behind a record=off of the same line, each
	 * receiver closes the last scan and opens this one at once */
	d->close_pending = false;
	uint64_t seg = 0;
	/* the slot is free: its last scan's streams have all been sealed */
	uint64_t next = rr_seg_posted(d->st[0].r);
	pthread_mutex_lock(&d->pack_lock);
	d->share_left[next % RR_SEGQ] = used;
	pthread_mutex_unlock(&d->pack_lock);
	/* each input's map for this scan, before its lane 0 is posted */
	if (d->nsplit)
		rd_ds_plan(d, true, next, NULL, 0);
	if (dsbad) { /* recorded all the same: status? and error? say what is dropped */
		char msg[sizeof(d->errq[0].msg)];
		snprintf(msg, sizeof(msg), "%.340s, their frames are dropped", dswhy);
		rd_error(d, VS_FAILED, msg);
	}
	if (d->plan_none[0]) { /* the FS's ds{thread} before the backend sends */
		char msg[sizeof(d->errq[0].msg)];
		snprintf(msg, sizeof(msg),
			 "datastreams take no frame input %s received in the last 10 s, scan '%.64s' records nothing on it",
			 d->plan_none, name);
		rd_error(d, VS_FAILED, msg);
	}
	for (unsigned i = 0; i < d->nst; i++) {
		char rn[RECFS_NAME_MAX + 16];
		/* a lane no datastream takes gets no datagram: no recording */
		if (d->st[i].used)
			rd_rec_name(d, name, i, rn, sizeof(rn));
		else
			rn[0] = 0;
		rr_seg_post(d->st[i].r, rn, size_limit, start_unix, d->t_stmt_ns, &seg);
		rr_kick_writer(d->st[i].r);
	}
	/* every stream posted: now wake receivers waiting between scans, so
	 * the scan opens before the next datagram is read */
	for (unsigned i = 0; i < d->nst; i++)
		rr_kick_receiver(d->st[i].r);
	d->scans++;
	d->stop_at_ns = 0;
	d->start_at_ns = 0;
	d->bytes0 = 0;
	for (unsigned i = 0; i < d->nst; i++) {
		struct rr_stats s;
		rr_stats(d->st[i].r, &s);
		d->bytes0 += s.bytes;
	}
	memset(&d->cur, 0, sizeof(d->cur));
	d->cur.no = d->scans;
	d->cur.seg = seg;
	d->cur.t_on_ns = rd_wall_ns();
	snprintf(d->cur.name, sizeof(d->cur.name), "%s", name);
	snprintf(d->cur.label, sizeof(d->cur.label), "%s", label);
	d->recording = true;
	d->halted[0] = 0;
	d->check = d->cur;
	d->check_nrec = 0;
	memset(d->check_off, 0, sizeof(d->check_off));
	d->hist[d->cur.no % RR_SEGQ] = d->cur;
	return 0;
}

/* Close the open scan after each input's last whole datagram.  0, or a
 * VSI-S return code with d->why set (the scan had already stopped by
 * itself: 4 with the reason).  Under d->lock. */
int rd_scan_stop(struct rd *d)
{
	rd_refresh(d);
	if (!d->recording) {
		if (d->halted[0]) {
			snprintf(d->why, sizeof(d->why), "%s", d->halted);
			d->halted[0] = 0;
			return VS_FAILED;
		}
		snprintf(d->why, sizeof(d->why), "not recording");
		return VS_CONFLICT;
	}
	/* posted at the end of the control line, unless a record=on on the
	 * same line switches to the next scan between the same two batches */
	d->close_pending = true;
	d->recording = false;
	d->stop_at_ns = 0;
	d->cur.t_off_ns = rd_wall_ns();
	d->check = d->cur;
	d->check_nrec = 0;
	memset(d->check_off, 0, sizeof(d->check_off));
	d->hist[d->cur.no % RR_SEGQ] = d->cur;
	if (d->halted[0]) { /* one of its streams had stopped before */
		snprintf(d->why, sizeof(d->why), "%s", d->halted);
		d->halted[0] = 0;
		return VS_FAILED;
	}
	return 0;
}

/* The end of a control line: a record=off not followed by a record=on
 * closes its scan now.  Under d->lock. */
void rd_line_end(struct rd *d)
{
	if (!d->close_pending)
		return;
	d->close_pending = false;
	for (unsigned i = 0; i < d->nst; i++) {
		rr_seg_close(d->st[i].r);
		rr_kick_writer(d->st[i].r);
	}
	/* a receiver waiting for the stream closes the scan now, before
	 * the next datagram */
	for (unsigned i = 0; i < d->nst; i++)
		rr_kick_receiver(d->st[i].r);
}

/* Scan sc received datagrams on a stream and recorded (almost) none, all
 * of the wrong size (rr_blind): why, or NULL.  The open scan so far, or the
 * last one; status? and scan_check? answer it as an error.  Under d->lock. */
const char *rd_scan_blind(struct rd *d, const struct rd_scan *sc)
{
	if (!sc->no)
		return NULL;
	for (unsigned i = 0; i < d->nst; i++) {
		if (rr_seg_blind(d->st[i].r, sc->seg, d->blind, sizeof(d->blind)))
			return d->blind;
	}
	return NULL;
}
