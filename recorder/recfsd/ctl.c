/* SPDX-License-Identifier: MIT */
/*
 * recfsd's VSI-S commands: what each keyword does to the daemon and what it
 * answers.  The transport (TCP, several clients, hostile input) is vsis.c;
 * this file only sees one parsed statement at a time.  Replies follow
 * jive5ab's field order where jive5ab has the keyword (recfsd.8 lists them).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "recfsd.h"
#include "vsis.h"

/* status? bits, after Mark5/jive5ab's status word */
#define RD_ST_READY 0x1u
#define RD_ST_ERROR 0x2u
#define RD_ST_RECORD 0x40u
#define RD_ST_FULL 0x80u

struct rd_out {
	char *buf;
	size_t len, used;
	unsigned n;             /* fields so far (an empty one counts) */
};

/* Append one reply field; characters that would end a field or the line
 * are replaced (scan names are the station's, messages may quote them). */
static void rd_field(struct rd_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void rd_field(struct rd_out *o, const char *fmt, ...)
{
	char tmp[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	for (char *q = tmp; *q; q++)
		if (*q == ';' || *q == ':' || *q == '!' || *q == '\n' || *q == '\r' || (unsigned char)*q < 0x20)
			*q = *q == ':' ? '.' : ' ';
	int n = snprintf(o->buf + o->used, o->len - o->used, "%s%s", o->n++ ? " : " : "", tmp);
	if (n > 0)
		o->used += (size_t)n < o->len - o->used ? (size_t)n : o->len - o->used - 1;
}

static uint64_t rd_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A VSI-S time: 2026y326d17h05m03.1234s (UTC) */
static void rd_vsi_time(uint64_t ns, char *out, size_t len)
{
	time_t s = (time_t)(ns / 1000000000ull);
	struct tm tm;
	gmtime_r(&s, &tm);
	snprintf(out, len, "%04dy%03dd%02dh%02dm%02d.%04us", tm.tm_year + 1900, tm.tm_yday + 1,
		 tm.tm_hour, tm.tm_min, tm.tm_sec, (unsigned)(ns % 1000000000ull / 100000));
}

/* Mark6's start time, a VEX time: 2026y326d17h05m03s (UTC, whole
 * seconds); every field its exact number of digits and in range.  The Unix
 * time, or -1. */
static int64_t rd_vex_time(const char *s)
{
	static const struct { unsigned digits; char unit; unsigned lo, hi; } f[] = {
		{ 4, 'y', 2000, 2099 }, { 3, 'd', 1, 366 }, { 2, 'h', 0, 23 }, { 2, 'm', 0, 59 }, { 2, 's', 0, 59 },
	};
	unsigned v[5];
	for (unsigned i = 0; i < 5; i++) {
		v[i] = 0;
		for (unsigned k = 0; k < f[i].digits; k++, s++) {
			if (*s < '0' || *s > '9')
				return -1;
			v[i] = v[i] * 10 + (unsigned)(*s - '0');
		}
		if (*s++ != f[i].unit || v[i] < f[i].lo || v[i] > f[i].hi)
			return -1;
	}
	if (*s)
		return -1;
	bool leap = v[0] % 4 == 0 && (v[0] % 100 != 0 || v[0] % 400 == 0);
	if (v[1] > (leap ? 366u : 365u))
		return -1;
	struct tm tm = { .tm_year = (int)v[0] - 1900, .tm_mday = (int)v[1], .tm_hour = (int)v[2],
			 .tm_min = (int)v[3], .tm_sec = (int)v[4] };
	return (int64_t)timegm(&tm); /* day-of-year as the day of January */
}

/* A scan or experiment name part: what recfs_name_check takes, no '_'
 * games: the name is built as jive5ab builds it, EXP_STATION_SCAN. */
static int rd_name_part(const char *s, size_t max)
{
	size_t n = strlen(s);
	if (n == 0 || n > max)
		return -1;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] <= 0x20 || s[i] == '/' || (unsigned char)s[i] >= 0x7f)
			return -1;
	return 0;
}

/* record? [nthread | mk6] : jive5ab's (net2vbs.cc): off, or on : scans
 * recorded : the recording : bytes so far; halted is recfsd's (a scan
 * that stopped by itself, until record=off). */
static int rd_record_q(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
{
	if (np > 0 && !strcasecmp(p[0], "nthread")) {
		rd_field(o, "%u", d->nthread_r);
		rd_field(o, "%u", d->nthread_w);
		return VS_OK;
	}
	if (np > 0 && !strcasecmp(p[0], "mk6")) {
		rd_field(o, "0");
		return VS_OK;
	}
	if (np > 0 && p[0][0]) {
		rd_field(o, "record? takes nthread, mk6 or nothing");
		return VS_PARAM;
	}
	rd_refresh(d);
	uint64_t bytes = 0;
	for (unsigned i = 0; i < d->nst; i++)
		bytes += atomic_load(&d->st[i].r->tot_bytes);
	bytes -= bytes < d->bytes0 ? bytes : d->bytes0;
	if (d->recording) {
		rd_field(o, "on");
		rd_field(o, "%" PRIu64, d->cur.no);
		rd_field(o, "%s", d->cur.name);
		rd_field(o, "%" PRIu64, bytes);
	} else if (d->halted[0]) {
		rd_field(o, "halted");
		rd_field(o, "%" PRIu64, d->cur.no);
		rd_field(o, "%s", d->cur.name);
		rd_field(o, "%" PRIu64, bytes);
		rd_field(o, "%s", d->halted);
	} else {
		rd_field(o, "off");
	}
	return VS_OK;
}

/* record = nthread : [R] : [W] as jive5ab: each given count 1 or more */
static int rd_record_nthread(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
{
	uint64_t v[2] = { d->nthread_r, d->nthread_w };
	if (np > 3) {
		rd_field(o, "record = nthread : [READERS] : [WRITERS]");
		return VS_PARAM;
	}
	for (unsigned k = 1; k < np; k++)
		if (p[k][0] && recfs_parse_num("nthread", p[k], 1, 1024, &v[k - 1])) {
			rd_field(o, "nthread '%.32s' is not a count from 1 to 1024", p[k]);
			return VS_PARAM;
		}
	d->nthread_r = (unsigned)v[0];
	d->nthread_w = (unsigned)v[1];
	return VS_OK;
}

/* The scan's recording name as jive5ab builds it: EXPERIMENT_STATION_SCAN
 * when they are given; one already recorded gets jive5ab's suffix, 'a'
 * to 'z' then 'A' to 'Z' (net2vbs.cc, mk_scan_name).  0, or an rc. */
static int rd_scan_name(struct rd *d, const char *scan, const char *exp, const char *st, char *name,
			size_t len, bool *renamed, struct rd_out *o)
{
	*renamed = false;
	int n;
	if (exp[0] && st[0])
		n = snprintf(name, len, "%s_%s_%s", exp, st, scan);
	else if (exp[0])
		n = snprintf(name, len, "%s_%s", exp, scan);
	else
		n = snprintf(name, len, "%s", scan);
	if (n < 0 || (size_t)n + 1 >= len) { /* room for the suffix */
		rd_field(o, "scan name too long (at most %zu bytes)", len - 2);
		return VS_PARAM;
	}
	if (!rd_name_taken(d, name))
		return VS_OK;
	static const char sfx[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
	for (const char *c = sfx; *c; c++) {
		name[n] = *c;
		name[n + 1] = 0;
		*renamed = true;
		if (!rd_name_taken(d, name))
			return VS_OK;
	}
	name[n] = 0;
	rd_field(o, "'%s' and its 52 suffixed names are all recorded", name);
	return VS_CONFLICT;
}

static int rd_record(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
{
	static const char usage[] = "record = on : SCAN [: EXPERIMENT [: STATION]], record = off, "
				    "record = START : [DURATION] : [GB] : SCAN [: EXPERIMENT [: STATION]], "
				    "record = nthread : [R] : [W] or record = mk6 : 0";
	if (np == 0) {
		rd_field(o, "%s", usage);
		return VS_PARAM;
	}
	/* off, with whatever follows (the FS sends its label): jive5ab's 1,
	 * the scan closes after the line */
	if (!strcasecmp(p[0], "off")) {
		int rc = rd_scan_stop(d);
		if (rc)
			rd_field(o, "%s", d->why);
		return rc ? rc : VS_INITIATED;
	}
	if (!strcasecmp(p[0], "nthread"))
		return rd_record_nthread(d, np, p, o);
	if (!strcasecmp(p[0], "mk6")) {
		uint64_t v;
		if (np != 2 || recfs_parse_num("mk6", p[1], 0, 1, &v)) {
			rd_field(o, "record = mk6 : 0 or 1");
			return VS_PARAM;
		}
		if (v) {
			rd_field(o, "recfsd records recfs recordings, not Mark6 scatter-gather files");
			return VS_NOT_IMPL;
		}
		return VS_OK;
	}
	/* on: at the next datagram.  A VEX time, Mark6 cplane's line START :
	 * DURATION : GB : SCAN : EXP : STATION: at the first VDIF frame 0 of
	 * a second at or after it (a time already past starts at the next
	 * second boundary), and for DURATION seconds from START */
	int64_t start = 0;
	uint64_t dur = 0;
	const char *scan, *exp, *st;
	if (!strcasecmp(p[0], "on")) {
		if (np < 2 || np > 4 || rd_name_part(p[1], 64) || (np > 2 && p[2][0] && rd_name_part(p[2], 32)) ||
		    (np > 3 && p[3][0] && rd_name_part(p[3], 8))) {
			rd_field(o, "record = on : SCAN [: EXPERIMENT [: STATION]], at most 64, 32 and 8 printable bytes, no spaces or '/'");
			return VS_PARAM;
		}
		scan = p[1];
		exp = np > 2 ? p[2] : "";
		st = np > 3 ? p[3] : "";
	} else {
		start = rd_vex_time(p[0]);
		if (start < 0) {
			rd_field(o, "'%.32s' is not on, off, nthread, mk6 or a start time such as 2026y327d18h30m00s", p[0]);
			return VS_PARAM;
		}
		uint64_t gb;
		if (np < 4 || np > 6 || (p[1][0] && recfs_parse_num("duration", p[1], 1, 86400, &dur)) ||
		    (p[2][0] && recfs_parse_num("GB", p[2], 0, 1000000, &gb)) || rd_name_part(p[3], 64) ||
		    (np > 4 && p[4][0] && rd_name_part(p[4], 32)) || (np > 5 && p[5][0] && rd_name_part(p[5], 8))) {
			rd_field(o, "record = START : [DURATION] : [GB] : SCAN [: EXPERIMENT [: STATION]] (Mark6 cplane), DURATION 1 to 86400 s");
			return VS_PARAM;
		}
		scan = p[3];
		exp = np > 4 ? p[4] : "";
		st = np > 5 ? p[5] : "";
		if (!d->fmt_vdif) {
			rd_field(o, "a start time needs --format vdif (it waits for a VDIF second)");
			return VS_CONFLICT;
		}
		if (d->nsplit) {
			rd_field(o, "a start time is not implemented with --split");
			return VS_NOT_IMPL;
		}
	}
	rd_refresh(d);
	if (d->recording) {
		rd_field(o, "already recording scan '%s'", d->cur.name);
		return VS_CONFLICT;
	}
	char name[RECFS_NAME_MAX + 1];
	bool renamed;
	int rc = rd_scan_name(d, scan, exp, st, name, sizeof(name), &renamed, o);
	if (rc)
		return rc;
	rc = rd_scan_start(d, name, scan, 0, start);
	if (rc) {
		rd_field(o, "%s", d->why);
		return rc;
	}
	snprintf(d->exp, sizeof(d->exp), "%s", exp);
	snprintf(d->station, sizeof(d->station), "%s", st);
	if (dur)
		d->stop_at_ns = (uint64_t)(start + (int64_t)dur) * 1000000000ull;
	/* jive5ab names the recording when it gave it a suffix */
	if (renamed)
		rd_field(o, "%s", name);
	return VS_OK;
}

/* scan_set = SCAN# | NAME : which scan scan_check? reports (one of the
 * last RR_SEGQ this daemon recorded). */
static int rd_scan_set_q(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
{
	if (!d->check.no) {
		rd_field(o, "no scan");
		return VS_FAILED;
	}
	rd_field(o, "%" PRIu64, d->check.no);
	rd_field(o, "%s", d->check.name);
	return 0;
}

static int rd_scan_set(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
{
	if (np < 1 || !p[0][0]) {
		rd_field(o, "scan_set = SCAN# or NAME");
		return VS_PARAM;
	}
	/* the FS sends scan_set = LABEL :  :  ; with empty offsets: the
	 * whole scan, as jive5ab takes them */
	bool offsets = false;
	for (unsigned k = 1; k < np; k++)
		offsets |= p[k][0] != 0;
	if (offsets) {
		rd_field(o, "scan_set: start and stop offsets are not implemented here");
		return VS_NOT_IMPL;
	}
	for (unsigned k = 0; k < RR_SEGQ; k++) {
		const struct rd_scan *sc = &d->hist[k];
		char no[24];
		snprintf(no, sizeof(no), "%" PRIu64, sc->no);
		if (sc->no && (!strcmp(no, p[0]) || !strcmp(sc->name, p[0]))) {
			d->check = *sc;
			return 0;
		}
	}
	rd_field(o, "no scan '%.64s' among the last %u recorded", p[0], RR_SEGQ);
	return VS_PARAM;
}

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

static void rd_check_rec(struct rd *d, const struct recfs_rec *rec, uint64_t len, struct rd_check *c)
{
	memset(c, 0, sizeof(*c));
	c->frame_size = rec->input.frame_size;
	uint32_t fs = c->frame_size;
	if (rec->input.format != RECFS_FMT_VDIF || fs < 32 || len < fs)
		return;
	size_t want = len < 1000000 ? (size_t)len : 1000000;
	want -= want % fs;
	uint8_t *buf = malloc(want), last[32];
	if (!buf)
		return;
	struct rr_vdif_hdr h0, h1, h;
	uint32_t seen[64];
	unsigned nseen = 0;
	/* the pack lock in 64 KiB pieces: a writer's commit waits for one */
	bool ok = true;
	for (size_t off = 0; ok && off < want; off += 65536) {
		size_t n = want - off < 65536 ? want - off : 65536;
		pthread_mutex_lock(&d->pack_lock);
		ok = recfs_rec_pread(d->p, rec, buf + off, n, off, 0) == (ssize_t)n;
		pthread_mutex_unlock(&d->pack_lock);
	}
	pthread_mutex_lock(&d->pack_lock);
	ok = ok && recfs_rec_pread(d->p, rec, last, sizeof(last), (len / fs - 1) * fs, 0) == (ssize_t)sizeof(last);
	pthread_mutex_unlock(&d->pack_lock);
	ok = ok && rr_vdif_decode(buf, &h0) && rr_vdif_decode(last, &h1);
	for (size_t off = 0; ok && off + fs <= want; off += fs) {
		if (!rr_vdif_decode(buf + off, &h))
			continue;
		unsigned k;
		for (k = 0; k < nseen && seen[k] != h.thread; k++)
			;
		if (k == nseen && nseen < 64)
			seen[nseen++] = h.thread;
	}
	if (ok) {
		/* word 2: log2 channels (bits 24-28); word 3: complex (31), bits
		 * per sample - 1 (26-30) */
		uint32_t w2 = rr_get_le32(buf + 8), w3 = rr_get_le32(buf + 12);
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
static void rd_check_fields(struct rd_out *o, uint64_t no, const char *label, const struct rd_check *c,
			    const struct recfs_rec *rec, uint64_t len, double secs)
{
	char t[48];
	rd_field(o, "%" PRIu64, no);
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

/* scan_check? [N] : the last scan (or scan_set's) once sealed.  Without N
 * one summary line for all its recordings (it fits mk5cn's 1022 bytes
 * however many streams): the nine fields of the FS, then recfs's own,
 * recordings : bytes : lost frames by the VDIF headers.  With N (0 to
 * recordings - 1) the same of recording N alone, named in full. */
static int rd_scan_check(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
{
	uint64_t which = UINT64_MAX;
	if (np > 1 || (np == 1 && p[0][0] && recfs_parse_num("scan_check", p[0], 0, d->nst - 1, &which))) {
		rd_field(o, "scan_check? [RECORDING], RECORDING 0 to %u", d->nst - 1);
		return VS_PARAM;
	}
	rd_refresh(d);
	if (!d->check.no) {
		rd_field(o, "no scan recorded yet");
		return VS_FAILED;
	}
	if (d->recording && d->check.no == d->cur.no) {
		rd_field(o, "scan %" PRIu64 " is still recording", d->check.no);
		return VS_BUSY;
	}
	struct rd_scan sc = d->check;
	if (!rd_scan_done(d, &sc)) {
		rd_field(o, "scan %" PRIu64 " is still being sealed", sc.no);
		return VS_BUSY;
	}
	struct rd_check sum = { 0 }, c;
	struct recfs_rec first = { 0 };
	uint64_t bytes = 0, lost = 0;
	double t0 = 0, t1 = 0, secs = 0;
	unsigned nrec = 0;
	for (unsigned i = 0; i < d->nst; i++) {
		if (which != UINT64_MAX && i != which)
			continue;
		struct rr *r = d->st[i].r;
		struct rr_seg *s = rr_seg_at(r, sc.seg);
		pthread_mutex_lock(&r->seg_lock);
		struct recfs_rec rec = s->rec;
		int state = atomic_load(&s->state);
		uint64_t len = s->len;
		char msg[sizeof(s->msg)], name[RECFS_NAME_MAX + 1];
		snprintf(msg, sizeof(msg), "%s", s->msg);
		snprintf(name, sizeof(name), "%s", s->name);
		pthread_mutex_unlock(&r->seg_lock);
		if (state == RR_SEG_FAILED || rr_seg_blind(r, s, d->blind, sizeof(d->blind))) {
			rd_field(o, "%" PRIu64, sc.no);
			rd_field(o, "%s", name);
			rd_field(o, "error");
			rd_field(o, "%s", state == RR_SEG_FAILED ? msg : d->blind);
			return VS_FAILED;
		}
		if (len == 0)
			continue; /* nothing arrived: no recording */
		/* a sealed recording does not change: read once per scan, so
		 * a line of 64 scan_check? costs one read of each recording */
		static struct { uint64_t uid, seq; struct rd_check c; } cache[RD_MAX_STREAMS];
		if (cache[i].uid != rec.uid || cache[i].seq != rec.seq || !rec.uid) {
			rd_check_rec(d, &rec, len, &cache[i].c);
			cache[i].uid = rec.uid;
			cache[i].seq = rec.seq;
		}
		c = cache[i].c;
		double rs = c.vdif ? c.secs : (rec.end_ns > rec.start_ns ? (double)(rec.end_ns - rec.start_ns) * 1e-9 : 0);
		if (which != UINT64_MAX) {
			rd_check_fields(o, sc.no, name, &c, &rec, len, rs);
			rd_field(o, "1");
			rd_field(o, "%" PRIu64, len);
			rd_field(o, "%" PRIu64, rec.loss.frames_lost);
			return VS_OK;
		}
		if (!nrec++) {
			sum = c;
			first = rec;
			t0 = c.first;
			t1 = c.first + rs;
			sum.tracks = sum.threads = 0;
			sum.missing = 0;
		}
		/* the scan: tracks x threads over its recordings, from the
		 * earliest first frame to the latest end */
		sum.threads += c.vdif ? c.tracks * c.threads : 0;
		sum.missing += c.missing;
		if (c.vdif && c.first < t0)
			t0 = c.first;
		if (c.first + rs > t1)
			t1 = c.first + rs;
		bytes += len;
		lost += rec.loss.frames_lost;
	}
	if (!nrec) {
		rd_field(o, "%" PRIu64, sc.no);
		rd_field(o, "%s", sc.name);
		rd_field(o, "-");
		rd_field(o, "no data");
		return VS_OK;
	}
	secs = t1 - t0;
	sum.first = t0;
	sum.tracks = sum.threads; /* tracks x threads, summed */
	sum.threads = 1;
	rd_check_fields(o, sc.no, sc.name, &sum, &first, bytes, secs);
	rd_field(o, "%u", nrec);
	rd_field(o, "%" PRIu64, bytes);
	rd_field(o, "%" PRIu64, lost);
	return VS_OK;
}

static int rd_dir_info(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
{
	struct recfs_pack_info info;
	uint64_t bytes = 0, n = 0;
	struct recfs_rec rec;
	pthread_mutex_lock(&d->pack_lock);
	int err = recfs_pack_info(d->p, &info);
	for (uint32_t i = 0; !err && recfs_rec_next(d->p, &i, &rec) == 0; i++) {
		n++;
		bytes += rec.committed_len;
	}
	pthread_mutex_unlock(&d->pack_lock);
	if (err) {
		rd_field(o, "%s", recfs_errmsg());
		return VS_FAILED;
	}
	/* jive5ab on a FlexBuff (dirinfo_vbs.cc): ? : used : total; recfsd
	 * counts the recordings, and adds the free bytes */
	rd_field(o, "%" PRIu64, n);
	rd_field(o, "%" PRIu64, bytes);
	rd_field(o, "%" PRIu64, info.capacity);
	rd_field(o, "%" PRIu64, info.free);
	return 0;
}

/* status? : jive5ab's (status.cc): the status word, then the pending
 * error's number, message and time.  Bits: 0x1 ready, 0x2 an error
 * error? has not read yet (or a condition that refuses every scan),
 * 0x40 recording, 0x80 pack full (Mark5's media full). */
static int rd_status(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
{
	int rc;
	unsigned st = RD_ST_READY;
	rd_refresh(d);
	const char *no = rd_refuse(d, &rc), *blind = rd_scan_blind(d, &d->cur);
	if (d->recording)
		st |= RD_ST_RECORD;
	if (blind)
		st |= RD_ST_ERROR;
	if (no && !strncmp(no, "pack full", 9))
		st |= RD_ST_FULL;
	else if (no)
		st |= RD_ST_ERROR;
	if (d->err_no)
		st |= RD_ST_ERROR;
	rd_field(o, "0x%08x", st);
	/* a condition that refuses every scan first (it names the member),
	 * else the error error? has not read */
	bool cond = no && !(st & RD_ST_FULL);
	/* then a scan recording nothing while datagrams arrive (blind) */
	if (cond || d->err_no || blind) {
		char t[48];
		bool now = cond || !d->err_no;
		rd_vsi_time(now ? rd_now_ns() : d->err_ns, t, sizeof(t));
		rd_field(o, "%d", now ? VS_FAILED : d->err_no);
		rd_field(o, "%s", cond ? no : d->err_no ? d->err_msg : blind);
		rd_field(o, "%s", t);
	}
	return VS_OK;
}

/* error? : jive5ab's (error.cc): number : message : time : (last time :
 * count, empty: recfsd keeps one error), and the error is read: status?
 * drops bit 0x2.  Empty fields when there is none. */
static int rd_error_q(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
{
	rd_refresh(d);
	if (!d->err_no) {
		rd_field(o, "%s", "");
		rd_field(o, "%s", "");
		rd_field(o, "%s", "");
	} else {
		char t[48];
		rd_vsi_time(d->err_ns, t, sizeof(t));
		rd_field(o, "%d", d->err_no);
		rd_field(o, "%s", d->err_msg);
		rd_field(o, "%s", t);
		d->err_no = 0;
	}
	rd_field(o, "%s", "");
	rd_field(o, "%s", "");
	return VS_OK;
}

/* mode = VDIF_<framesize>-<Mbps>-<channels>-<bits> | raw : what applies
 * to recfs is the data type (vdif checks frames and keeps a loss map). */
/* mode? : jive5ab's layout, as the FS's fb_mode reads it (nvi-inc/fs
 * clib/mk5b_mode_util.c): mode : data type : tracks : track rate (Mbit/s)
 * : frame size, from the last mode = VDIF_<payload>-<Mbps>-<channels>-<bits>;
 * before one, the data type alone. */
static int rd_mode_q(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
{
	if (!d->mode[0]) {
		rd_field(o, "%s", d->fmt_vdif ? "vdif" : "raw");
		return VS_OK;
	}
	rd_field(o, "%s", d->mode);
	rd_field(o, "VDIF");
	rd_field(o, "%u", d->mode_tracks);
	rd_field(o, "%.6f", d->mode_tracks ? (double)d->mode_mbps / d->mode_tracks : 0.0);
	rd_field(o, "%u", d->mode_payload + 32);
	return VS_OK;
}

/* VDIF_<payload>-<Mbps>-<channels>-<bits>, every number strict */
static int rd_mode_vdif(const char *m, uint64_t v[4])
{
	static const uint64_t hi[4] = { 65536 - 32, 1000000, 1024, 32 };
	static const char *const what[4] = { "payload", "Mbit/s", "channels", "bits" };
	char buf[64];
	if (strlen(m) >= sizeof(buf) || strncasecmp(m, "VDIF_", 5))
		return -1;
	snprintf(buf, sizeof(buf), "%s", m + 5);
	char *save = NULL, *t = strtok_r(buf, "-", &save);
	for (unsigned k = 0; k < 4; k++, t = strtok_r(NULL, "-", &save))
		if (!t || recfs_parse_num(what[k], t, 1, hi[k], &v[k]))
			return -1;
	return t || v[0] % 8 ? -1 : 0;
}

static int rd_mode(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
{
	if (np < 1) {
		rd_field(o, "mode = VDIF_... or raw");
		return VS_PARAM;
	}
	bool vdif;
	uint64_t v[4] = { 0 };
	if (!strncasecmp(p[0], "vdif", 4))
		vdif = true;
	else if (!strcasecmp(p[0], "raw") || !strcasecmp(p[0], "none"))
		vdif = false;
	else {
		rd_field(o, "mode '%.32s': recfsd records VDIF or raw streams", p[0]);
		return VS_PARAM;
	}
	if (vdif != d->fmt_vdif) {
		rd_field(o, "recfsd was started with --format %s; restart it to change", d->fmt_vdif ? "vdif" : "raw");
		return VS_CONFLICT;
	}
	if (vdif && strcasecmp(p[0], "vdif") && rd_mode_vdif(p[0], v)) {
		rd_field(o, "mode '%.32s': want VDIF_<payload bytes>-<Mbit/s>-<channels>-<bits>", p[0]);
		return VS_PARAM;
	}
	d->mode[0] = 0;
	if (v[0]) {
		snprintf(d->mode, sizeof(d->mode), "%s", p[0]);
		d->mode_payload = (uint32_t)v[0];
		d->mode_mbps = (uint32_t)v[1];
		d->mode_tracks = (uint32_t)(v[2] * v[3]);
	}
	return VS_OK;
}

static int rd_net_protocol_q(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
{
	rd_field(o, "%s", d->st[0].r->strip == 8 ? "udps" : "udp");
	rd_field(o, "%" PRIu64, d->st[0].r->rcvbuf);
	return 0;
}

static int rd_net_protocol(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
{
	if (np < 1 || (strcasecmp(p[0], "udp") && strcasecmp(p[0], "udps") && strcasecmp(p[0], "udpsnor"))) {
		rd_field(o, "recfsd receives udp (and udps, the 8-byte sequence-number prefix, as --strip 8)");
		return np < 1 ? VS_PARAM : VS_CONFLICT;
	}
	/* jive5ab: PROTOCOL : SOCBUF : BLOCKSIZE : NBLOCK.  A SOCBUF within
	 * --rcvbuf is already had, a larger one is asked of the kernel; the
	 * ring's shape is recfsd's own */
	static const char *const what[] = { "", "SOCBUF", "BLOCKSIZE", "NBLOCK" };
	uint64_t v[4] = { 0 }, rcvbuf = d->st[0].r->rcvbuf;
	if (np > 4) {
		rd_field(o, "net_protocol = PROTOCOL [: SOCBUF [: BLOCKSIZE [: NBLOCK]]]");
		return VS_PARAM;
	}
	for (unsigned k = 1; k < np; k++)
		if (p[k][0] && recfs_parse_bytes("net_protocol", p[k], 0, UINT64_MAX, &v[k])) {
			rd_field(o, "net_protocol %s '%.32s' is not a size", what[k], p[k]);
			return VS_PARAM;
		}
	bool udps = strcasecmp(p[0], "udp") != 0;
	unsigned want = udps ? 8 : 0;
	if (d->st[0].r->strip != want) {
		rd_field(o, "inputs are bound with --strip %u; restart recfsd with --strip %u", d->st[0].r->strip,
			 want);
		return VS_CONFLICT;
	}
	/* a larger socket buffer than --rcvbuf (the FS asks 128 MB above 4
	 * Gbit/s): grown on every input now, as far as the kernel allows */
	if (v[1] > rcvbuf) {
		if (v[1] > INT_MAX / 2) {
			rd_field(o, "socket buffer at most %d bytes", INT_MAX / 2);
			return VS_PARAM;
		}
		int ask = (int)v[1];
		for (unsigned i = 0; i < d->nin; i++) {
			const struct rd_input *in = &d->in[i];
			int fd = d->nsplit ? in->split.fd : d->st[in->first].r->in_fd, have = 0;
			socklen_t hl = sizeof(have);
			if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &ask, sizeof(ask)))
				setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &ask, sizeof(ask));
			/* the kernel reports twice what it keeps for data */
			if (getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &have, &hl) || (uint64_t)have / 2 < v[1]) {
				rd_field(o, "input %s: the kernel gave a socket buffer of %d bytes, not %" PRIu64
					 " (raise net.core.rmem_max, or start recfsd with --rcvbuf)",
					 in->label, have / 2, v[1]);
				return VS_CONFLICT;
			}
		}
		for (unsigned k = 0; k < d->nst; k++)
			d->st[k].r->rcvbuf = v[1];
	}
	return VS_OK;
}

static int rd_net_port_q(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
{
	/* jive5ab's form, [ADDR@]PORT: a ':' would split the field */
	for (unsigned i = 0; i < d->nin; i++) {
		char a[160];
		snprintf(a, sizeof(a), "%s", d->in[i].spec + 4);
		char *c = strrchr(a, ':');
		if (c && c[1] != ']')
			*c = '@';
		rd_field(o, "%s", a);
	}
	return 0;
}

static int rd_net_port(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
{
	if (np != 1 || !p[0][0]) {
		rd_field(o, "net_port = [ADDR@]PORT");
		return VS_PARAM;
	}
	const char *port = strchr(p[0], '@') ? strchr(p[0], '@') + 1 : p[0];
	for (unsigned i = 0; i < d->nin; i++) {
		const char *mine = strrchr(d->in[i].spec, ':');
		if (mine && !strcmp(mine + 1, port))
			return 0; /* already listening there */
	}
	rd_field(o, "inputs are bound when recfsd starts (--input); port %.16s is not one of them", port);
	return VS_CONFLICT;
}

static int rd_mtu_q(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
{
	rd_field(o, "%u", d->mtu ? d->mtu : 9000);
	return 0;
}

static int rd_mtu(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
{
	uint64_t v;
	if (np != 1 || recfs_parse_num("mtu", p[0], 64, 65535, &v)) {
		rd_field(o, "mtu = 64 to 65535");
		return VS_PARAM;
	}
	d->mtu = (uint32_t)v; /* datagram sizes are learned from the stream */
	return 0;
}

/* delete = NAME : a recfs extension (the pack is the daemon's while it runs,
 * so recfs rm cannot open it for writing): deletes a sealed recording that
 * no scan of this daemon is still writing. */
static int rd_delete(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
{
	if (np != 1 || !p[0][0]) {
		rd_field(o, "delete = NAME");
		return VS_PARAM;
	}
	for (unsigned i = 0; i < d->nst; i++) {
		struct rr *r = d->st[i].r;
		for (uint64_t n = atomic_load(&r->seg_done); n < atomic_load(&r->seg_posted); n++)
			if (!strcmp(rr_seg_at(r, n)->name, p[0])) {
				rd_field(o, "'%.64s' is being recorded", p[0]);
				return VS_CONFLICT;
			}
	}
	struct recfs_rec rec;
	pthread_mutex_lock(&d->pack_lock);
	int err = recfs_rec_lookup(d->p, p[0], &rec);
	if (!err)
		err = recfs_rec_delete(d->p, rec.index, 0);
	pthread_mutex_unlock(&d->pack_lock);
	if (err) {
		rd_field(o, "%s", recfs_errmsg());
		return err == -ENOENT ? VS_PARAM : VS_FAILED;
	}
	return 0;
}

static int rd_version_q(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
{
	rd_field(o, "recfsd");
	rd_field(o, "%s", RECFS_VERSION_STRING);
	return VS_OK;
}

/* dts_id? : jive5ab's fields (dtsid.cc) on a FlexBuff: system type
 * (none: "-"), software revision, media (1: disk), serial (the host's
 * short name), DIMs, DOMs, command set revision, I/O board fields. */
static int rd_dts_id_q(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
{
	char host[128] = "-";
	gethostname(host, sizeof(host) - 1);
	host[strcspn(host, ".")] = 0;
	rd_field(o, "-");
	rd_field(o, "recfsd-%s", RECFS_VERSION_STRING);
	rd_field(o, "1");
	rd_field(o, "%s", host);
	rd_field(o, "0");
	rd_field(o, "0");
	rd_field(o, "-");
	rd_field(o, "-");
	rd_field(o, "-");
	return VS_OK;
}

/* os_rev? : the first line of /proc/version, as jive5ab (os_rev.cc) */
static int rd_os_rev_q(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
{
	char line[400] = "";
	FILE *f = fopen("/proc/version", "r");
	if (!f || !fgets(line, sizeof(line), f)) {
		if (f)
			fclose(f);
		rd_field(o, "failed to read /proc/version");
		return VS_FAILED;
	}
	fclose(f);
	line[strcspn(line, "\n")] = 0;
	rd_field(o, "%s", line);
	return VS_OK;
}

/* The counters /metrics shows, summed over the streams. */
struct rd_sums {
	uint64_t packets, bytes, ring_dropped, kernel_dropped, wrong_size, frames_lost, written;
};

static void rd_sums(const struct rd *d, struct rd_sums *t)
{
	memset(t, 0, sizeof(*t));
	for (unsigned i = 0; i < d->nst; i++) {
		struct rr *r = d->st[i].r;
		t->packets += atomic_load_explicit(&r->tot_packets, memory_order_relaxed);
		t->bytes += atomic_load_explicit(&r->tot_bytes, memory_order_relaxed);
		t->ring_dropped += atomic_load_explicit(&r->tot_ring_dropped, memory_order_relaxed);
		t->kernel_dropped += atomic_load_explicit(&r->tot_kernel_dropped, memory_order_relaxed);
		t->wrong_size += atomic_load_explicit(&r->tot_wrong_size, memory_order_relaxed);
		t->frames_lost += atomic_load_explicit(&r->tot_frames_lost, memory_order_relaxed);
		t->written += atomic_load_explicit(&r->tot_written, memory_order_relaxed);
	}
}

/* evlbi? [= FORMAT...] : jive5ab's (evlbi.cc, runtime.cc fmt_evlbistats)
 * with its default format; evlbi= the format in its parameters.  recfsd
 * counts by datagram since it started: %t datagrams received, %l lost
 * (dropped by the kernel or a full ring, and VDIF frames the headers say
 * never came), %L as a percentage of received + lost, %d/%D discarded
 * (wrong size), %o/%O, %r and %R out of order and its extent (recfsd keeps
 * no such count: 0).  Any other text as written; ':' separates fields. */
static int rd_evlbi_fmt(struct rd *d, const char *fmt, struct rd_out *o)
{
	struct rd_sums t;
	rd_sums(d, &t);
	uint64_t lost = t.ring_dropped + t.kernel_dropped + t.frames_lost;
	double all = (double)t.packets + (double)lost;
	char buf[1024];
	size_t n = 0;
	for (const char *c = fmt; *c && n + 64 < sizeof(buf); c++) {
		if (*c != '%' || !c[1]) {
			buf[n++] = *c;
			continue;
		}
		c++;
		int w = 0;
		switch (*c) {
		case 't': w = snprintf(buf + n, 64, "%" PRIu64, t.packets); break;
		case 'l': w = snprintf(buf + n, 64, "%" PRIu64, lost); break;
		case 'L': w = snprintf(buf + n, 64, "%5.2f%%", all > 0 ? lost * 100.0 / all : 0.0); break;
		case 'd': w = snprintf(buf + n, 64, "%" PRIu64, t.wrong_size); break;
		case 'D': w = snprintf(buf + n, 64, "%5.2f%%", all > 0 ? t.wrong_size * 100.0 / all : 0.0); break;
		case 'o': case 'r': w = snprintf(buf + n, 64, "0"); break;
		case 'O': w = snprintf(buf + n, 64, "%5.2f%%", 0.0); break;
		case 'R': w = snprintf(buf + n, 64, "0seqnr/pkt"); break;
		case '%': w = snprintf(buf + n, 64, "%%"); break;
		default: w = snprintf(buf + n, 64, "%%%c", *c); break;
		}
		n += w > 0 ? (size_t)w : 0;
	}
	buf[n] = 0;
	char *save = NULL;
	for (char *f = strtok_r(buf, ":", &save); f; f = strtok_r(NULL, ":", &save)) {
		while (*f == ' ')
			f++;
		size_t l = strlen(f);
		while (l && f[l - 1] == ' ')
			f[--l] = 0;
		rd_field(o, "%s", f);
	}
	return VS_OK;
}

static int rd_evlbi_q(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
{
	return rd_evlbi_fmt(d, "total : %t : loss : %l (%L) : out-of-order : %o (%O) : extent : %R", o);
}

static int rd_evlbi(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
{
	char fmt[512] = "";
	size_t n = 0;
	for (unsigned k = 0; k < np && n < sizeof(fmt); k++) {
		int w = snprintf(fmt + n, sizeof(fmt) - n, "%s%s", k ? " : " : "", p[k]);
		n += w > 0 ? (size_t)w : 0;
	}
	return rd_evlbi_fmt(d, fmt, o);
}

/* tstat= : jive5ab's (tstat.cc): time : transfer : per step its count;
 * tstat? : seconds since the last tstat? : transfer : per step its rate,
 * then the ring's fill.  recfsd's steps: receive (bytes into the rings) and
 * write (bytes written to the members); "no_transfer" between scans. */
static int rd_tstat(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
{
	struct rd_sums t;
	rd_sums(d, &t);
	rd_refresh(d);
	rd_field(o, "%.3f", (double)rd_now_ns() * 1e-9);
	rd_field(o, "%s", d->recording ? "record" : "no_transfer");
	rd_field(o, "receive");
	rd_field(o, "%" PRIu64, t.bytes);
	rd_field(o, "write");
	rd_field(o, "%" PRIu64, t.written);
	return VS_OK;
}

static int rd_tstat_q(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
{
	struct rd_sums t;
	rd_sums(d, &t);
	rd_refresh(d);
	uint64_t now = rr_mono_ns();
	if (!d->recording) {
		rd_field(o, "0.0");
		rd_field(o, "no_transfer");
		d->tstat_ns = 0;
		return VS_OK;
	}
	if (!d->tstat_ns || now - d->tstat_ns < 100000000ull) {
		/* jive5ab: the first query only starts the clock */
		if (!d->tstat_ns) {
			d->tstat_ns = now;
			d->tstat_rx = t.bytes;
			d->tstat_wr = t.written;
		}
		rd_field(o, "Retry - we're initialized now");
		rd_field(o, "record");
		return VS_INITIATED;
	}
	double dt = (double)(now - d->tstat_ns) * 1e-9;
	rd_field(o, "%5.2fs", dt);
	rd_field(o, "record");
	rd_field(o, "receive %.3e bps", (double)(t.bytes - d->tstat_rx) * 8 / dt);
	rd_field(o, "write %.3e bps", (double)(t.written - d->tstat_wr) * 8 / dt);
	uint64_t fill = 0, size = 0;
	for (unsigned i = 0; i < d->nst; i++) {
		struct rr *r = d->st[i].r;
		uint64_t rel = atomic_load(&r->released), f = atomic_load(&r->filled);
		size += r->ring_size;
		fill += f > rel ? f - rel : 0;
	}
	rd_field(o, "F%4.1f%%", size ? fill * 100.0 / size : 0.0);
	d->tstat_ns = now;
	d->tstat_rx = t.bytes;
	d->tstat_wr = t.written;
	return VS_OK;
}

/* rtime? : jive5ab's on a FlexBuff (rtime_vbs.cc): seconds of recording
 * left at the mode's rate : GB free : % free : format : tracks : 0MHz :
 * total rate, from mode= (before one: "<unknown> (no mode set yet)"). */
static int rd_rtime_q(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
{
	struct recfs_pack_info info;
	pthread_mutex_lock(&d->pack_lock);
	int err = recfs_pack_info(d->p, &info);
	pthread_mutex_unlock(&d->pack_lock);
	if (err) {
		rd_field(o, "%s", recfs_errmsg());
		return VS_FAILED;
	}
	double free_b = (double)info.free, cap = (double)info.capacity;
	/* the rate on the wire: payload rate times frame over payload */
	double bps = d->mode[0] ? (double)d->mode_mbps * 1e6 * (d->mode_payload + 32) / d->mode_payload : 0;
	if (bps > 0)
		rd_field(o, "%.3fs", free_b * 8 / bps);
	else
		rd_field(o, "<unknown> (no mode set yet)");
	rd_field(o, "%.3fGB", free_b / 1e9);
	rd_field(o, "%.2f%%", cap > 0 ? free_b * 100 / cap : 0.0);
	rd_field(o, "%s", d->mode[0] ? "VDIF" : d->fmt_vdif ? "vdif" : "raw");
	rd_field(o, "%u", d->mode[0] ? d->mode_tracks : 0);
	rd_field(o, "0MHz");
	if (bps > 0)
		rd_field(o, "%.3fMbps", bps / 1e6);
	else
		rd_field(o, "<unknown> Mbps");
	return VS_OK;
}

/* set_disks? : jive5ab's (set_disks.cc): how many, then each mountpoint;
 * recfsd's are the pack's members (set with the pack at start: set_disks=
 * answers 2). */
static int rd_set_disks_q(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
{
	const struct recfs_geom *g = recfs_pack_geom(d->p);
	rd_field(o, "%u", g->members);
	for (unsigned i = 0; i < g->members; i++) {
		struct recfs_dev *dv = recfs_pack_dev(d->p, i);
		rd_field(o, "%s", dv ? dv->path : "-");
	}
	return VS_OK;
}

/* disk2file = [DEST] : [START] : [END | +BYTES] : [n | w | a] : jive5ab's
 * data pull (disk2file_vbs.cc) of scan_set's scan (its first recording),
 * bytes START to END into the local file DEST (default NAME.m5a, in
 * recfsd's directory): n a new file, w truncated, a appended.  A pack
 * member is refused as DEST, as every tool refuses it.  1 (initiated): a
 * thread copies; disk2file? reports. */
static void *rd_d2f_main(void *arg)
{
	struct rd *d = arg;
	struct rd_d2f *x = &d->d2f;
	size_t bs = 256u << 10; /* the pack lock for 256 KiB at a time */
	char *buf = malloc(bs);
	uint64_t off = x->start;
	while (buf && off < x->end && !atomic_load(&x->quit)) {
		size_t n = x->end - off < bs ? (size_t)(x->end - off) : bs;
		pthread_mutex_lock(&d->pack_lock);
		ssize_t r = recfs_rec_pread(d->p, &x->rec, buf, n, off, 0);
		pthread_mutex_unlock(&d->pack_lock);
		if (r <= 0) {
			snprintf(x->err, sizeof(x->err), "read at %" PRIu64 ": %s", off, r < 0 ? recfs_errmsg() : "end");
			break;
		}
		for (ssize_t w = 0; w < r;) {
			ssize_t k = write(x->fd, buf + w, (size_t)(r - w));
			if (k < 0) {
				snprintf(x->err, sizeof(x->err), "%s: %s", x->dest, strerror(errno));
				off = x->end;
				r = 0;
				break;
			}
			w += k;
		}
		off += (uint64_t)r;
		atomic_store(&x->cur, off);
	}
	if (!buf)
		snprintf(x->err, sizeof(x->err), "out of memory");
	free(buf);
	if (close(x->fd) && !x->err[0])
		snprintf(x->err, sizeof(x->err), "%s: %s", x->dest, strerror(errno));
	x->fd = -1;
	atomic_store(&x->active, false);
	return NULL;
}

static int rd_disk2file(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
{
	struct rd_d2f *x = &d->d2f;
	if (atomic_load(&x->active)) {
		rd_field(o, "disk2file to %s is still running", x->dest);
		return VS_BUSY;
	}
	if (x->started) {
		pthread_join(x->thr, NULL);
		x->started = false;
	}
	if (np > 4) {
		rd_field(o, "disk2file = [DEST] : [START] : [END or +BYTES] : [n, w or a]");
		return VS_PARAM;
	}
	rd_refresh(d);
	if (!d->check.no) {
		rd_field(o, "no scan was set using scan_set=");
		return VS_CONFLICT;
	}
	if (d->recording && d->check.no == d->cur.no) {
		rd_field(o, "scan %" PRIu64 " is still recording", d->check.no);
		return VS_BUSY;
	}
	if (!rd_scan_done(d, &d->check)) {
		rd_field(o, "scan %" PRIu64 " is still being sealed", d->check.no);
		return VS_BUSY;
	}
	/* the scan's first recording that holds data */
	struct recfs_rec rec = { 0 };
	bool have = false;
	for (unsigned i = 0; i < d->nst && !have; i++) {
		struct rr *r = d->st[i].r;
		struct rr_seg *s = rr_seg_at(r, d->check.seg);
		pthread_mutex_lock(&r->seg_lock);
		if (atomic_load(&s->state) == RR_SEG_SEALED && s->len) {
			rec = s->rec;
			have = true;
		}
		pthread_mutex_unlock(&r->seg_lock);
	}
	if (!have) {
		rd_field(o, "scan %" PRIu64 " has no recording to copy", d->check.no);
		return VS_CONFLICT;
	}
	uint64_t start = 0, end = rec.committed_len;
	if (np > 1 && p[1][0] && (p[1][0] == '+' || p[1][0] == '-')) {
		rd_field(o, "relative byteoffsets not allowed here");
		return VS_PARAM;
	}
	if (np > 1 && p[1][0] && recfs_parse_num("disk2file START", p[1], 0, rec.committed_len, &start)) {
		rd_field(o, "START '%.32s' is not a byte offset within the recording's %" PRIu64, p[1], rec.committed_len);
		return VS_PARAM;
	}
	if (np > 2 && p[2][0]) {
		bool plus = p[2][0] == '+';
		uint64_t v;
		if (recfs_parse_num("disk2file END", p[2] + plus, 0, UINT64_MAX, &v) ||
		    (plus ? v > rec.committed_len - start : v < start || v > rec.committed_len)) {
			rd_field(o, "END '%.32s' is not within the recording's %" PRIu64 " bytes, after START", p[2],
				 rec.committed_len);
			return VS_PARAM;
		}
		end = plus ? start + v : v;
	}
	const char *mode = np > 3 && p[3][0] ? p[3] : "n";
	int flags = O_WRONLY | O_CREAT | O_CLOEXEC | O_NOCTTY;
	if (!strcmp(mode, "n"))
		flags |= O_EXCL;
	else if (!strcmp(mode, "a"))
		flags |= O_APPEND;
	else if (strcmp(mode, "w")) {
		rd_field(o, "open mode must be n, w or a");
		return VS_PARAM;
	}
	char dest[sizeof(x->dest)];
	int n = np > 0 && p[0][0] ? snprintf(dest, sizeof(dest), "%s", p[0])
				  : snprintf(dest, sizeof(dest), "%s.m5a", rec.name);
	if (n < 0 || (size_t)n >= sizeof(dest)) {
		rd_field(o, "destination longer than %zu bytes", sizeof(dest) - 1);
		return VS_PARAM;
	}
	/* opened without truncating, refused if it is a member, then cut */
	int fd = open(dest, flags, 0644);
	if (fd < 0) {
		rd_field(o, "%s: %s", dest, strerror(errno));
		return errno == EEXIST ? VS_CONFLICT : VS_FAILED;
	}
	if (recfs_spec_check_output(d->pack_spec, "disk2file destination", dest, fd)) {
		rd_field(o, "%s", recfs_errmsg());
		close(fd);
		return VS_CONFLICT;
	}
	if (!strcmp(mode, "w") && ftruncate(fd, 0)) {
		rd_field(o, "%s: %s", dest, strerror(errno));
		close(fd);
		return VS_FAILED;
	}
	x->fd = fd;
	x->rec = rec;
	snprintf(x->dest, sizeof(x->dest), "%s", dest);
	snprintf(x->mode, sizeof(x->mode), "%s", mode);
	x->err[0] = 0;
	x->start = start;
	x->end = end;
	atomic_store(&x->cur, start);
	atomic_store(&x->quit, false);
	atomic_store(&x->active, true);
	int e = pthread_create(&x->thr, NULL, rd_d2f_main, d);
	if (e) {
		atomic_store(&x->active, false);
		close(fd);
		x->fd = -1;
		rd_field(o, "cannot start the copy: %s", strerror(e));
		return VS_FAILED;
	}
	x->started = true;
	return VS_INITIATED;
}

/* disk2file? : active : DEST : START : CURRENT : END : MODE, or inactive
 * [: DEST [: ERROR]] (recfsd adds why the last copy stopped short). */
static int rd_disk2file_q(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
{
	struct rd_d2f *x = &d->d2f;
	if (atomic_load(&x->active)) {
		rd_field(o, "active");
		rd_field(o, "%s", x->dest);
		rd_field(o, "%" PRIu64, x->start);
		rd_field(o, "%" PRIu64, atomic_load(&x->cur));
		rd_field(o, "%" PRIu64, x->end);
		rd_field(o, "%s", x->mode);
		return VS_OK;
	}
	rd_field(o, "inactive");
	if (x->dest[0])
		rd_field(o, "%s", x->dest);
	if (x->err[0])
		rd_field(o, "%s", x->err);
	return VS_OK;
}

/* datastream? [NAME] : jive5ab's (datastream.cc): how many, then their
 * names; with NAME its match.  recfsd's datastreams are --split's lanes,
 * t<THREAD> matching VDIF thread THREAD ('.THREAD', jive5ab's form).
 * datastream= add, remove, clear and reset answer 2: the lanes are fixed
 * when recfsd starts. */
static int rd_datastream_q(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
{
	if (np > 0 && p[0][0]) {
		for (unsigned k = 0; k < d->nsplit; k++) {
			char nm[16];
			snprintf(nm, sizeof(nm), "t%u", d->split_thread[k]);
			if (!strcmp(nm, p[0])) {
				rd_field(o, "%s", nm);
				rd_field(o, ".%u", d->split_thread[k]);
				return VS_OK;
			}
		}
		rd_field(o, "The stream '%.32s' is not defined", p[0]);
		return VS_PARAM;
	}
	rd_field(o, "%u", d->nsplit);
	for (unsigned k = 0; k < d->nsplit; k++)
		rd_field(o, "t%u", d->split_thread[k]);
	return VS_OK;
}

static int rd_datastream(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
{
	rd_field(o, "datastreams are recfsd's --split vdif-thread lanes, set when it starts");
	return VS_NOT_IMPL;
}

/* The keywords: what a command (keyword = ...) and a query (keyword ? ...)
 * run; NULL where the keyword has no such form (answered 2). */
typedef int rd_handler(struct rd *d, unsigned np, char *const *p, struct rd_out *o);
static const struct rd_keyword {
	const char *kw;
	rd_handler *cmd, *qry;
} rd_keywords[] = {
	{ "record", rd_record, rd_record_q },
	{ "scan_set", rd_scan_set, rd_scan_set_q },
	{ "scan_check", NULL, rd_scan_check },
	{ "dir_info", NULL, rd_dir_info },
	{ "status", NULL, rd_status },
	{ "error", NULL, rd_error_q },
	{ "version", NULL, rd_version_q },
	{ "dts_id", NULL, rd_dts_id_q },
	{ "os_rev", NULL, rd_os_rev_q },
	{ "evlbi", rd_evlbi, rd_evlbi_q },
	{ "tstat", rd_tstat, rd_tstat_q },
	{ "rtime", NULL, rd_rtime_q },
	{ "set_disks", NULL, rd_set_disks_q },
	{ "disk2file", rd_disk2file, rd_disk2file_q },
	{ "datastream", rd_datastream, rd_datastream_q },
	{ "mode", rd_mode, rd_mode_q },
	{ "net_protocol", rd_net_protocol, rd_net_protocol_q },
	{ "net_port", rd_net_port, rd_net_port_q },
	{ "mtu", rd_mtu, rd_mtu_q },
	{ "delete", rd_delete, NULL }, /* a recfs extension */
};

int rd_ctl_exec(struct rd *d, const char *kw, bool query, unsigned np, char *const *p, char *out,
		size_t outlen)
{
	struct rd_out o = { out, outlen, 0, 0 };
	const struct rd_keyword *k = NULL;
	int rc;
	out[0] = 0;
	uint64_t t_arrived = rr_mono_ns(); /* the start latency's origin */
	for (size_t i = 0; i < sizeof(rd_keywords) / sizeof(rd_keywords[0]) && !k; i++)
		if (!strcasecmp(kw, rd_keywords[i].kw))
			k = &rd_keywords[i];
	if (!k) {
		rd_field(&o, "no such keyword");
		return VS_NO_KEYWORD;
	}
	rd_handler *fn = query ? k->qry : k->cmd;
	if (!fn) {
		rd_field(&o, query ? "%s takes no query" : "%s is a query", k->kw);
		return VS_NOT_IMPL;
	}
	pthread_mutex_lock(&d->lock);
	d->t_stmt_ns = t_arrived; /* taken before waiting for the lock */
	rc = fn(d, np, p, &o);
	pthread_mutex_unlock(&d->lock);
	return rc;
}

void rd_ctl_line_end(struct rd *d)
{
	pthread_mutex_lock(&d->lock);
	rd_line_end(d);
	pthread_mutex_unlock(&d->lock);
}

/* ------------------------------------------------------------ transport */
static struct vs_server *rd_vs;

static int rd_vs_handler(void *ctx, const struct vs_req *req, char *fields, size_t len)
{
	return rd_ctl_exec(ctx, req->keyword, req->query, req->nparam, req->param, fields, len);
}

static void rd_vs_line_end(void *ctx)
{
	rd_ctl_line_end(ctx);
}

int rd_ctl_start(struct rd *d, const struct sockaddr_storage *a, socklen_t len, char *where, size_t wlen)
{
	char err[256];
	rd_vs = vs_server_start(a, len, rd_vs_handler, rd_vs_line_end, d, err, sizeof(err));
	if (!rd_vs) {
		fprintf(stderr, "recfsd: --listen: %s\n", err);
		return -EINVAL;
	}
	rr_sockaddr_str(a, vs_server_port(rd_vs), where, wlen);
	return 0;
}

void rd_ctl_stop(struct rd *d)
{
	if (rd_vs)
		vs_server_stop(rd_vs);
	rd_vs = NULL;
	if (d->d2f.started) { /* a copy under way stops at its next piece */
		atomic_store(&d->d2f.quit, true);
		pthread_join(d->d2f.thr, NULL);
		d->d2f.started = false;
	}
}
