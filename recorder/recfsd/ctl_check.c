/* SPDX-License-Identifier: MIT */
/*
 * recfsd's VSI-S: scan_check?, from the recordings' data.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"

/* What scan_check? reports of one recording, from its data: the first
 * frame's time tag, threads, tracks, frame size, and the time tag of
 * the last frame, as jive5ab's scan_check reads them (scan_check_vbs.cc
 * reads the first MB; threads are counted there). */
struct rd_check {
	bool vdif;
	uint32_t frame_size, threads, tracks, payload;
	uint64_t frames;                /* recorded */
	double first, last;             /* time tags, Unix seconds */
	double secs;                    /* duration by the time tags */
	uint64_t fps;                   /* frames per second per thread, 0 unknown */
	uint64_t missing;               /* bytes, by the time tags */
	double rate;                    /* Mbit/s per track */
};

/* scan_check?'s BYTES at most: the control port waits for the read of each
 * recording (jive5ab takes any) */
#define RD_CHECK_BYTES_MAX (64ull << 20)

/* bytes: read from the start to count the threads (scan_check?'s BYTES,
 * 0: jive5ab's default, 1 MB) */
static void rd_check_rec(struct rd *d, const struct recfs_rec *rec, uint64_t len, uint64_t bytes, struct rd_check *c)
{
	memset(c, 0, sizeof(*c));
	c->frame_size = rec->input.frame_size;
	uint32_t fs = c->frame_size;
	if (rec->input.format != RECFS_FMT_VDIF || fs < 32 || len < fs)
		return;
	if (!bytes)
		bytes = 1000000;
	uint64_t want = len < bytes ? len : bytes;
	want -= want % fs;
	if (want < fs)
		want = fs; /* the first frame at least (len is one or more) */
	/* read in pieces of whole frames, about 64 KiB: the pack lock is
	 * held for one piece at a time (a writer's commit waits for one), and
	 * BYTES costs no memory */
	size_t piece = fs >= 65536 ? fs : 65536 / fs * fs;
	uint8_t *buf = malloc(piece), last[32];
	if (!buf)
		return;
	struct rr_vdif_hdr h0, h1, h;
	uint32_t seen[64], w2 = 0, w3 = 0;
	unsigned nseen = 0;
	bool ok = true;
	for (uint64_t off = 0; ok && off < want; off += piece) {
		size_t n = want - off < piece ? (size_t)(want - off) : piece;
		pthread_mutex_lock(&d->pack_lock);
		ok = recfs_rec_pread(d->p, rec, buf, n, off, 0) == (ssize_t)n;
		pthread_mutex_unlock(&d->pack_lock);
		if (ok && off == 0) {
			ok = rr_vdif_decode(buf, &h0);
			w2 = rr_get_le32(buf + 8);
			w3 = rr_get_le32(buf + 12);
		}
		for (size_t f = 0; ok && f + fs <= n; f += fs) {
			if (!rr_vdif_decode(buf + f, &h))
				continue;
			unsigned k;
			for (k = 0; k < nseen && seen[k] != h.thread; k++)
				;
			if (k == nseen && nseen < 64)
				seen[nseen++] = h.thread;
		}
	}
	pthread_mutex_lock(&d->pack_lock);
	ok = ok && recfs_rec_pread(d->p, rec, last, sizeof(last), (len / fs - 1) * fs, 0) == (ssize_t)sizeof(last);
	pthread_mutex_unlock(&d->pack_lock);
	ok = ok && rr_vdif_decode(last, &h1);
	if (ok) {
		/* the first frame's word 2: log2 channels (bits 24-28); word 3:
		 * complex (31), bits per sample - 1 (26-30) */
		c->vdif = true;
		c->threads = nseen ? nseen : 1;
		c->tracks = (1u << ((w2 >> 24) & 0x1f)) * (((w3 >> 26) & 0x1f) + 1) * ((w3 >> 31) ? 2 : 1);
		c->payload = fs - (h0.legacy ? 16 : 32);
		c->frames = len / fs;
		/* frames per second from the two time tags: per thread, the
		 * frames from the first to the last, recorded or lost */
		int64_t s0 = rr_vdif_unix(&h0), s1 = rr_vdif_unix(&h1);
		uint64_t per = (c->frames + rec->loss.frames_lost) / c->threads;
		if (s1 > s0 && per > 1 + h1.frame_no) {
			uint64_t n = per - 1 - h1.frame_no + h0.frame_no;
			c->fps = (n + (uint64_t)(s1 - s0) / 2) / (uint64_t)(s1 - s0);
		}
		double fps = c->fps ? (double)c->fps : 0;
		c->first = (double)s0 + (fps ? h0.frame_no / fps : 0);
		c->last = (double)s1 + (fps ? h1.frame_no / fps : 0);
		c->secs = fps ? c->last - c->first + 1 / fps : (double)(rec->end_ns - rec->start_ns) * 1e-9;
		if (!fps && c->secs > 0)
			c->fps = (uint64_t)((double)per / c->secs + 0.5);
		c->rate = c->tracks ? (double)c->payload * 8 * (double)c->fps / c->tracks / 1e6 : 0;
		uint64_t expect = fps ? (uint64_t)(c->secs * fps + 0.5) * c->threads : c->frames;
		c->missing = expect > c->frames ? (expect - c->frames) * fs : 0;
	}
	free(buf);
}

/* A sealed VDIF recording's span from its data, as scan_check? reads it:
 * the first frame's time tag, the length by the time tags, the bytes the
 * time tags say are missing; false when it is not VDIF (or empty). */
bool rd_check_span(struct rd *d, const struct recfs_rec *rec, double *first, double *secs, uint64_t *missing)
{
	struct rd_check c;
	if (!rec->committed_len)
		return false;
	rd_check_rec(d, rec, rec->committed_len, 0, &c);
	if (!c.vdif)
		return false;
	*first = c.first;
	*secs = c.secs;
	*missing = c.missing;
	return true;
}

/* A sealed VDIF recording's first frame's time tag and its data rate
 * (bytes a second: frames a second per thread, threads, frame size), for
 * scan_set='s time offsets; false when not known. */
bool rd_check_rate(struct rd *d, const struct recfs_rec *rec, double *first, double *bps)
{
	struct rd_check c;
	if (!rec->committed_len)
		return false;
	rd_check_rec(d, rec, rec->committed_len, 0, &c);
	if (!c.vdif || !c.fps)
		return false;
	*first = c.first;
	*bps = (double)c.frame_size * (double)c.fps * c.threads;
	return true;
}

/* A time tag as VSI-S writes it: 2026y326d17h05m03.1234s (UTC) */
static void rd_vsi_time_s(double t, char *out, size_t len)
{
	uint64_t ns = t > 0 ? (uint64_t)(t * 1e9 + 0.5) : 0;
	rd_vsi_time(ns, out, len);
}

/* The nine fields the Field System reads from a FlexBuff's scan_check?
 * (nvi-inc/fs clib/scan_check_util.c, its mk5b branch), in its order:
 * scan# : label : data type : tracks x threads : start : duration :
 * track rate (Mbit/s) : missing bytes : frame size. */
static void rd_check_fields(struct rd_out *o, const char *no, const char *label, const struct rd_check *c,
			    const struct recfs_rec *rec, uint64_t len, double secs)
{
	char t[48];
	rd_field(o, "%s", no);
	rd_field(o, "%s", label);
	if (c->vdif) {
		rd_vsi_time_s(c->first, t, sizeof(t));
		rd_field(o, "VDIF");
		rd_field(o, "%u", c->tracks * c->threads);
		rd_field(o, "%s", t);
		rd_field(o, "%.4fs", secs);
		rd_field(o, "%.6f", c->rate);
		rd_field(o, "%" PRIu64, c->missing);
		rd_field(o, "%u", c->frame_size);
	} else {
		/* raw: the host clock, the bytes' rate, no tracks */
		rd_vsi_time(rec->start_ns, t, sizeof(t));
		rd_field(o, "raw");
		rd_field(o, "0");
		rd_field(o, "%s", t);
		rd_field(o, "%.4fs", secs);
		rd_field(o, "%.6f", secs > 0 ? (double)len * 8e-6 / secs : 0.0);
		rd_field(o, "%" PRIu64, (uint64_t)0);
		rd_field(o, "%u", rec->input.frame_size);
	}
}

/* scan_check? [STRICT [: BYTES [: RECORDING]]] : the last scan (or
 * scan_set's) once sealed.  Without RECORDING one summary line for all
 * its recordings (it fits mk5cn's 1022 bytes however many streams): the
 * nine fields of the FS, then recfs's own, recordings : bytes : lost
 * frames by the VDIF headers.  With RECORDING (0 to recordings - 1, or its
 * name) the same of that recording alone, named in full. */
/* A scan's recordings summed into scan_check?'s one line */
struct rd_check_sum {
	struct rd_check sum;
	struct recfs_rec first;
	uint64_t bytes, lost;
	double t0, t1;
	unsigned nrec;
};

static void rd_check_add(struct rd_check_sum *s, const struct rd_check *c, const struct recfs_rec *rec,
			 uint64_t len, double rs)
{
	if (!s->nrec++) {
		s->sum = *c;
		s->first = *rec;
		s->t0 = c->first;
		s->t1 = c->first + rs;
		s->sum.tracks = s->sum.threads = 0;
		s->sum.missing = 0;
	}
	/* the scan: tracks x threads over its recordings, from the
	 * earliest first frame to the latest end */
	s->sum.threads += c->vdif ? c->tracks * c->threads : 0;
	s->sum.missing += c->missing;
	if (c->vdif && c->first < s->t0)
		s->t0 = c->first;
	if (c->first + rs > s->t1)
		s->t1 = c->first + rs;
	s->bytes += len;
	s->lost += rec->loss.frames_lost;
}

static int rd_check_reply(struct rd_check_sum *s, const char *no, const char *name, struct rd_out *o)
{
	if (!s->nrec) {
		rd_field(o, "%s", no);
		rd_field(o, "%s", name);
		rd_field(o, "-");
		rd_field(o, "no data");
		return VS_OK;
	}
	s->sum.first = s->t0;
	s->sum.tracks = s->sum.threads; /* tracks x threads, summed */
	s->sum.threads = 1;
	rd_check_fields(o, no, name, &s->sum, &s->first, s->bytes, s->t1 - s->t0);
	rd_field(o, "%u", s->nrec);
	rd_field(o, "%" PRIu64, s->bytes);
	rd_field(o, "%" PRIu64, s->lost);
	return VS_OK;
}

/* scan_check?'s arguments: jive5ab's STRICT (0 or 1; recfsd's check is
 * the same either way) and BYTES, then recfsd's RECORDING */
struct rd_check_args {
	uint64_t bytes;                 /* 0: not given */
	uint64_t which;                 /* UINT64_MAX: the whole scan */
	const char *name;               /* RECORDING by name, or NULL */
};

/* recording i, `name`, is the one asked for */
static bool rd_check_sel(const struct rd_check_args *a, unsigned i, const char *name)
{
	if (a->name)
		return !strcmp(a->name, name);
	return a->which == UINT64_MAX || a->which == i;
}

/* jive5ab's refusal of a recording shorter than BYTES: 0 or 6 */
static int rd_check_short(const struct rd_check_args *a, const char *name, uint64_t len, struct rd_out *o)
{
	if (!a->bytes || len >= a->bytes)
		return 0;
	rd_field(o, "scan too short to check, need %" PRIu64 " bytes, '%s' has %" PRIu64, a->bytes, name, len);
	return VS_CONFLICT;
}

/* scan_check? of a scan or recording scan_set= found on the pack's
 * directory (d->check_recs): the same line, its number "?" as jive5ab
 * answers for a scan it did not record in this session. */
static int rd_scan_check_pack(struct rd *d, const struct rd_check_args *a, struct rd_out *o)
{
	struct rd_check_sum s = { 0 };
	bool found = false;
	for (unsigned i = 0; i < d->check_nrec; i++) {
		if (!rd_check_sel(a, i, d->check_recs[i]))
			continue;
		found = true;
		struct recfs_rec rec;
		pthread_mutex_lock(&d->pack_lock);
		int err = recfs_rec_lookup(d->p, d->check_recs[i], &rec);
		pthread_mutex_unlock(&d->pack_lock);
		if (err) {
			rd_field(o, "recording '%s': %s", d->check_recs[i], recfs_errmsg());
			return VS_FAILED;
		}
		if (rec.state != RECFS_STATE_SEALED) {
			rd_field(o, "recording '%s' is still being recorded", rec.name);
			return VS_BUSY;
		}
		uint64_t len = rec.committed_len;
		struct rd_check c;
		int rc = len ? rd_check_short(a, rec.name, len, o) : 0;
		if (rc)
			return rc;
		if (len == 0)
			continue;
		rd_check_rec(d, &rec, len, a->bytes, &c);
		double rs = c.vdif ? c.secs : (rec.end_ns > rec.start_ns ? (double)(rec.end_ns - rec.start_ns) * 1e-9 : 0);
		if (a->which != UINT64_MAX || a->name) {
			rd_check_fields(o, "?", rec.name, &c, &rec, len, rs);
			rd_field(o, "1");
			rd_field(o, "%" PRIu64, len);
			rd_field(o, "%" PRIu64, rec.loss.frames_lost);
			return VS_OK;
		}
		rd_check_add(&s, &c, &rec, len, rs);
	}
	if (a->name && !found) {
		rd_field(o, "no recording '%.64s' in scan '%s'", a->name, d->check.name);
		return VS_PARAM;
	}
	return rd_check_reply(&s, "?", d->check.name, o);
}

/* scan_check? [STRICT [: BYTES [: RECORDING]]] : jive5ab's STRICT (0 or 1)
 * and BYTES (read from the start to find the format; k or M after it, 1024
 * or 1048576, up to RD_CHECK_BYTES_MAX; a recording shorter answers 6, as jive5ab), then recfsd's
 * RECORDING (0 to recordings - 1, or its name) for one recording's line */
static int rd_check_parse(struct rd *d, unsigned np, char *const *p, struct rd_check_args *a, struct rd_out *o)
{
	unsigned nrec = d->check_nrec ? d->check_nrec : d->nst;
	a->bytes = 0;
	a->which = UINT64_MAX;
	a->name = NULL;
	if (np > 3) {
		rd_field(o, "scan_check? [STRICT [: BYTES [: RECORDING]]]");
		return VS_PARAM;
	}
	if (np > 0 && p[0][0] && strcmp(p[0], "0") && strcmp(p[0], "1")) {
		rd_field(o, "strict argument has to be 0 or 1 (one recording: scan_check? : : RECORDING)");
		return VS_PARAM;
	}
	if (np > 1 && p[1][0]) {
		uint64_t v;
		if (rd_num_ku(p[1], true, RD_CHECK_BYTES_MAX, &v)) {
			rd_field(o, "invalid number of bytes to read '%.32s' (up to 64 MiB, k or M after it)", p[1]);
			return VS_PARAM;
		}
		a->bytes = v & ~(uint64_t)7;
		if (!a->bytes) {
			rd_field(o, "need to read more than 0 bytes to detect anything");
			return VS_PARAM;
		}
	}
	if (np > 2 && p[2][0]) {
		if (p[2][strspn(p[2], "0123456789")])
			a->name = p[2];
		else if (recfs_parse_num("scan_check RECORDING", p[2], 0, nrec - 1, &a->which)) {
			rd_field(o, "RECORDING '%.32s' is not 0 to %u or a recording's name", p[2], nrec - 1);
			return VS_PARAM;
		}
	}
	return 0;
}

int rd_scan_check(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
{
	struct rd_check_args a;
	int rc = rd_check_parse(d, np, p, &a, o);
	if (rc)
		return rc;
	rd_refresh(d);
	if (d->check_nrec)
		return rd_scan_check_pack(d, &a, o);
	if (!d->check.no) {
		rd_field(o, "no scan recorded yet");
		return VS_FAILED;
	}
	int busy = rd_check_sealed(d, o);
	if (busy)
		return busy;
	struct rd_scan sc = d->check;
	struct rd_check_sum sum = { 0 };
	struct rd_check c;
	char no[24];
	snprintf(no, sizeof(no), "%" PRIu64, sc.no);
	bool found = false;
	for (unsigned i = 0; i < d->nst; i++) {
		struct rr *r = d->st[i].r;
		struct rr_seg_result res;
		rr_seg_result(r, sc.seg, &res);
		if (!rd_check_sel(&a, i, res.name))
			continue;
		found = true;
		struct recfs_rec rec = res.rec;
		int state = res.state;
		uint64_t len = res.len;
		const char *msg = res.msg, *name = res.name;
		if (state == RR_SEG_FAILED || rr_seg_blind(r, sc.seg, d->blind, sizeof(d->blind))) {
			rd_field(o, "%" PRIu64, sc.no);
			rd_field(o, "%s", name);
			rd_field(o, "error");
			rd_field(o, "%s", state == RR_SEG_FAILED ? msg : d->blind);
			return VS_FAILED;
		}
		if (len == 0)
			continue; /* nothing arrived: no recording */
		int rc2 = rd_rec_alive(d, &rec, o);
		if (!rc2)
			rc2 = rd_check_short(&a, name, len, o);
		if (rc2)
			return rc2;
		/* a sealed recording does not change: read once per scan, so
		 * a line of 64 scan_check? costs one read of each recording */
		static struct { uint64_t uid, seq, bytes; struct rd_check c; } cache[RD_MAX_STREAMS];
		if (cache[i].uid != rec.uid || cache[i].seq != rec.seq || cache[i].bytes != a.bytes || !rec.uid) {
			rd_check_rec(d, &rec, len, a.bytes, &cache[i].c);
			cache[i].uid = rec.uid;
			cache[i].seq = rec.seq;
			cache[i].bytes = a.bytes;
		}
		c = cache[i].c;
		double rs = c.vdif ? c.secs : (rec.end_ns > rec.start_ns ? (double)(rec.end_ns - rec.start_ns) * 1e-9 : 0);
		if (a.which != UINT64_MAX || a.name) {
			rd_check_fields(o, no, name, &c, &rec, len, rs);
			rd_field(o, "1");
			rd_field(o, "%" PRIu64, len);
			rd_field(o, "%" PRIu64, rec.loss.frames_lost);
			return VS_OK;
		}
		rd_check_add(&sum, &c, &rec, len, rs);
	}
	if (a.name && !found) {
		rd_field(o, "no recording '%.64s' in scan %" PRIu64, a.name, sc.no);
		return VS_PARAM;
	}
	return rd_check_reply(&sum, no, sc.name, o);
}
