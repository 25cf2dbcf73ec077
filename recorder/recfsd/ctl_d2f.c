/* SPDX-License-Identifier: MIT */
/*
 * recfsd's VSI-S: set_disks? and the FS's data pull, disk2file.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <inttypes.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"

/* set_disks? : jive5ab's (set_disks.cc): how many, then each mountpoint;
 * recfsd's are the pack's members (set with the pack at start: set_disks=
 * answers 2). */
int rd_set_disks_q(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
{
	const struct recfs_geom *g = recfs_pack_geom(d->p);
	rd_field(o, "%u", g->members);
	for (unsigned i = 0; i < g->members; i++) {
		struct recfs_dev *dv = recfs_pack_dev(d->p, i);
		rd_field(o, "%s", dv ? dv->path : "-");
	}
	return VS_OK;
}

/* disk2file = [DEST] : [START] : [END | +BYTES] : [n | w | a | resume] :
 * jive5ab's data pull (disk2file_vbs.cc) of scan_set's scan (its first
 * recording; another one of a scan of several: scan_set= that recording's
 * name), bytes START to END into the local file DEST (default NAME.m5a,
 * in recfsd's directory): n a new file, w truncated, a appended, resume
 * appended from START plus what DEST holds (after reset=abort).  A pack
 * member is refused as DEST, as every tool refuses it.  1 (initiated): a
 * thread copies; disk2file? reports. */
static void *rd_d2f_main(void *arg)
{
	struct rd *d = arg;
	struct rd_d2f *x = &d->d2f;
	size_t bs = 256u << 10; /* the pack lock for 256 KiB at a time */
	char *buf = malloc(bs);
	uint64_t off = x->start;
	while (buf && off < x->end && !atomic_load(&x->quit) && !x->err[0]) {
		size_t n = x->end - off < bs ? (size_t)(x->end - off) : bs;
		pthread_mutex_lock(&d->pack_lock);
		ssize_t r = recfs_rec_pread(d->p, &x->rec, buf, n, off, 0);
		pthread_mutex_unlock(&d->pack_lock);
		if (r <= 0) {
			snprintf(x->err, sizeof(x->err), "read at %" PRIu64 ": %s", off, r < 0 ? recfs_errmsg() : "end");
			break;
		}
		for (ssize_t w = 0; w < r && !atomic_load(&x->quit);) {
			ssize_t k = write(x->fd, buf + w, (size_t)(r - w));
			if (k < 0 && (errno == EAGAIN || errno == EINTR)) {
				/* a pipe's reader behind: reset=abort is seen within 100 ms */
				struct pollfd pf = { .fd = x->fd, .events = POLLOUT };
				poll(&pf, 1, 100);
				continue;
			}
			if (k < 0) {
				snprintf(x->err, sizeof(x->err), "%s: %s", x->dest, strerror(errno));
				break;
			}
			w += k;
			atomic_store(&x->cur, off + (uint64_t)w);
		}
		off = atomic_load(&x->cur);
	}
	/* reset=abort: what was written stays, as jive5ab leaves it */
	if (atomic_load(&x->quit) && off < x->end && !x->err[0])
		snprintf(x->err, sizeof(x->err), "aborted at byte %" PRIu64 " (%" PRIu64 " to %" PRIu64 ")", off,
			 x->start, x->end);
	if (!buf)
		snprintf(x->err, sizeof(x->err), "out of memory");
	free(buf);
	if (close(x->fd) && !x->err[0])
		snprintf(x->err, sizeof(x->err), "%s: %s", x->dest, strerror(errno));
	x->fd = -1;
	atomic_store(&x->active, false);
	return NULL;
}

/* A duration as jive5ab's relative times take it, [Nd][Nh][Nm][N[.F]s]
 * (at least one, in that order, a fraction on the seconds only): its
 * seconds, or -1. */
static double rd_dur(const char *s)
{
	static const struct { char unit; double secs; } u[] = { { 'd', 86400 }, { 'h', 3600 }, { 'm', 60 }, { 's', 1 } };
	double t = 0;
	unsigned k = 0;
	if (!*s)
		return -1;
	while (*s) {
		double v = 0, f = 1;
		unsigned nd = 0;
		for (; *s >= '0' && *s <= '9'; s++, nd++)
			v = v * 10 + (*s - '0');
		if (*s == '.')
			for (s++; *s >= '0' && *s <= '9'; s++, nd++)
				v += (*s - '0') * (f /= 10);
		if (!nd || nd > 12)
			return -1;
		while (k < 4 && u[k].unit != *s)
			k++;
		if (k == 4 || (f < 1 && u[k].unit != 's'))
			return -1;
		t += v * u[k++].secs;
		s++;
	}
	return t;
}

/* An absolute time as jive5ab's scan_set= takes it (dotzooi.cc,
 * parse_vex_time): some of YYYYy DDDd HHh MMm SS[.F]s, in that order
 * without gaps; the fields not given are those of `first` (the first
 * frame's time).  Before `first`, a unit of the field above the highest
 * given is added (16h34m53.5s is the next day's), as jive5ab does.  The
 * Unix time, or -1. */
static double rd_vex_partial(const char *s, double first)
{
	static const struct { char unit; int lo, hi; } f[] = {
		{ 'y', 1970, 2099 }, { 'd', 1, 366 }, { 'h', 0, 23 }, { 'm', 0, 59 }, { 's', 0, 60 },
	};
	static const double up[] = { 0, 365 * 86400.0, 86400, 3600, 60 };
	time_t t0 = (time_t)first;
	struct tm tm;
	gmtime_r(&t0, &tm);
	int v[5] = { tm.tm_year + 1900, tm.tm_yday + 1, tm.tm_hour, tm.tm_min, tm.tm_sec };
	double frac = first - (double)t0;
	int top = -1, k = 0;
	while (*s) {
		double x = 0, fr = 0, sc = 1;
		unsigned nd = 0;
		while (*s == ' ')
			s++; /* drudg's f5.2 seconds: " 3.50s" (jive5ab's sscanf skips it) */
		for (; *s >= '0' && *s <= '9' && nd < 9; s++, nd++)
			x = x * 10 + (*s - '0');
		if (*s == '.')
			for (s++; *s >= '0' && *s <= '9' && nd < 18; s++, nd++)
				fr += (*s - '0') * (sc /= 10);
		if (!nd)
			return -1;
		int i = k;
		while (i < 5 && f[i].unit != *s)
			i++;
		/* strict sequence: once begun, no field skipped */
		if (i == 5 || (top >= 0 && i != k) || (sc < 1 && f[i].unit != 's') || x < f[i].lo || x > f[i].hi)
			return -1;
		if (top < 0)
			top = i;
		v[i] = (int)x;
		if (f[i].unit == 's')
			frac = fr;
		k = i + 1;
		s++;
	}
	bool leap = v[0] % 4 == 0 && (v[0] % 100 != 0 || v[0] % 400 == 0);
	if (top < 0 || v[1] > (leap ? 366 : 365))
		return -1;
	struct tm q = { .tm_year = v[0] - 1900, .tm_mday = v[1], .tm_hour = v[2], .tm_min = v[3], .tm_sec = v[4] };
	double t = (double)timegm(&q) + frac; /* day-of-year as the day of January */
	if (t < first)
		t += up[top];
	return t;
}

/* scan_set='s START (is_start) or END, jive5ab's forms (scan_set_vbs.cc):
 * for START s, c, e or s+ (0, the middle, 1 MB before the end, 64 KiB);
 * +N or -N bytes (after START, or before the end; a plain number is
 * refused, as jive5ab refuses it); +T or -T a duration at the data rate
 * ([Nd][Nh][Nm][N[.F]s]); a VEX time YYYYyDDDdHHhMMmSS[.F]s or its
 * lower fields (rd_vex_partial), from the first frame.  rec NULL: the syntax alone.  0 with the byte offset in *out
 * (start: START's, for END), or 8 with the reason. */
int rd_scan_off(struct rd *d, const char *s, bool is_start, const struct recfs_rec *rec, uint64_t start,
		uint64_t *out, struct rd_out *o)
{
	static const char *const kw[] = { "s", "c", "e", "s+" };
	uint64_t len = rec ? rec->committed_len : 0;
	int64_t v = 0;
	for (unsigned k = 0; is_start && k < 4; k++)
		if (!strcmp(s, kw[k])) {
			v = k == 0 ? 0 : k == 1 ? (int64_t)(len / 2) : k == 2 ? (int64_t)len - 1000000 : 65536;
			goto have;
		}
	bool rel = s[0] == '+' || s[0] == '-';
	double secs = rel ? rd_dur(s + 1) : -1;
	double vex = rel ? -1 : rd_vex_partial(s, 86400 * 366.0);
	uint64_t n = 0;
	if (secs < 0 && vex < 0) {
		if (!rel || recfs_parse_num("scan_set offset", s + 1, 0, INT64_MAX, &n)) {
			rd_field(o, "%s '%.32s' is not one of jive5ab's offsets (relative bytes +N or -N, a time +10s, "
				 "-1m or a VEX time%s)", is_start ? "START" : "END", s, is_start ? ", s, c, e or s+" : "");
			return VS_PARAM;
		}
	}
	if (!rec)
		return 0;
	if (secs >= 0 || vex >= 0) {
		double first, bps;
		if (!rd_check_rate(d, rec, &first, &bps)) {
			rd_field(o, "'%s': no data rate for a time offset (not VDIF, or under a second of it)", rec->name);
			return VS_PARAM;
		}
		if (vex >= 0) {
			vex = rd_vex_partial(s, first);
			if (vex < first) {
				rd_field(o, "%.32s is before the recording's first frame", s);
				return VS_PARAM;
			}
			/* past the recording: out of bound, never a cast of a
			 * double out of range (undefined; 0 on x86-64) */
			double x = (vex - first) * bps + 0.5;
			v = x <= (double)len ? (int64_t)x : (int64_t)len + 1;
			goto have;
		}
		double x = secs * bps + 0.5;
		n = x <= (double)len ? (uint64_t)x : len + 1;
	}
	/* n past the recording is out of bound whichever way it counts */
	if (n > len)
		v = -1;
	else
		v = s[0] == '-' ? (int64_t)len - (int64_t)n : (int64_t)(is_start ? 0 : start) + (int64_t)n;
have:
	if (!rec)
		return 0;
	if (v < 0 || (uint64_t)v > len || (!is_start && (uint64_t)v < start)) {
		rd_field(o, "scan pointer offset(s) are out of bound ('%.32s' in '%s', %" PRIu64 " bytes)", s, rec->name, len);
		return VS_PARAM;
	}
	*out = (uint64_t)v;
	return 0;
}

/* The recording disk2file= copies of a scan_set= from the pack's
 * directory: its first sealed one that holds data (the one recording
 * scan_set=NAME_SUFFIX named).  0, or an rc. */
static int rd_d2f_pack_rec(struct rd *d, struct recfs_rec *rec, struct rd_out *o)
{
	for (unsigned i = 0; i < d->check_nrec; i++) {
		pthread_mutex_lock(&d->pack_lock);
		int err = recfs_rec_lookup(d->p, d->check_recs[i], rec);
		pthread_mutex_unlock(&d->pack_lock);
		if (err) {
			rd_field(o, "recording '%s': %s", d->check_recs[i], recfs_errmsg());
			return VS_FAILED;
		}
		if (rec->state != RECFS_STATE_SEALED) {
			rd_field(o, "recording '%s' is still being recorded", rec->name);
			return VS_BUSY;
		}
		if (rec->committed_len)
			return 0;
	}
	rd_field(o, "'%s' has no recording to copy", d->check.name);
	return VS_CONFLICT;
}

int rd_d2f_rec(struct rd *d, struct recfs_rec *rec, struct rd_out *o)
{
	rd_refresh(d);
	if (d->check_nrec) /* scan_set= found it on the pack's directory */
		return rd_d2f_pack_rec(d, rec, o);
	if (!d->check.no) {
		rd_field(o, "no scan was set using scan_set=");
		return VS_CONFLICT;
	}
	int busy = rd_check_sealed(d, o);
	if (busy)
		return busy;
	/* the scan's first recording that holds data */
	for (unsigned i = 0; i < d->nst; i++) {
		struct rr_seg_result res;
		rr_seg_result(d->st[i].r, d->check.seg, &res);
		if (res.state == RR_SEG_SEALED && res.len) {
			*rec = res.rec;
			return rd_rec_alive(d, rec, o);
		}
	}
	rd_field(o, "scan %" PRIu64 " has no recording to copy", d->check.no);
	return VS_CONFLICT;
}

/* d2f's thread ended: joined */
static void rd_d2f_join(struct rd_d2f *x)
{
	if (x->started && !atomic_load(&x->active)) {
		pthread_join(x->thr, NULL);
		x->started = false;
	}
}

int rd_disk2file(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
{
	struct rd_d2f *x = &d->d2f;
	/* jive5ab: not while a transfer runs (its INPROGRESS: 6) */
	if (atomic_load(&x->active)) {
		rd_field(o, "not whilst disk2file to %s is in progress", x->dest);
		return VS_CONFLICT;
	}
	rd_d2f_join(x);
	if (np > 4) {
		rd_field(o, "disk2file = [DEST] : [START] : [END or +BYTES] : [n, w, a or resume]");
		return VS_PARAM;
	}
	struct recfs_rec rec = { 0 };
	int rc = rd_d2f_rec(d, &rec, o);
	if (rc)
		return rc;
	uint64_t start = 0, end = rec.committed_len;
	/* scan_set='s offsets, against this recording: the defaults */
	if (d->check_off[0][0] && rd_scan_off(d, d->check_off[0], true, &rec, 0, &start, o))
		return VS_PARAM;
	if (d->check_off[1][0] && rd_scan_off(d, d->check_off[1], false, &rec, start, &end, o))
		return VS_PARAM;
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
	if (end < start) { /* START given, scan_set's END before it */
		rd_field(o, "END %" PRIu64 " (scan_set's) is before START %" PRIu64, end, start);
		return VS_PARAM;
	}
	const char *mode = np > 3 && p[3][0] ? p[3] : "n";
	int flags = O_WRONLY | O_CREAT | O_CLOEXEC | O_NOCTTY;
	/* jive5ab's resume: a, from START plus what DEST already holds */
	bool resume = !strcmp(mode, "resume");
	if (resume)
		mode = "a";
	if (!strcmp(mode, "n"))
		flags |= O_EXCL;
	else if (!strcmp(mode, "a"))
		flags |= O_APPEND;
	else if (strcmp(mode, "w")) {
		rd_field(o, "open mode must be n, w, a or resume");
		return VS_PARAM;
	}
	char dest[sizeof(x->dest)];
	int n = np > 0 && p[0][0] ? snprintf(dest, sizeof(dest), "%s", p[0])
				  : snprintf(dest, sizeof(dest), "%s.m5a", rec.name);
	if (n < 0 || (size_t)n >= sizeof(dest)) {
		rd_field(o, "destination longer than %zu bytes", sizeof(dest) - 1);
		return VS_PARAM;
	}
	/* opened without truncating, refused if it is a member, then cut;
	 * not blocking (a FIFO without a reader is refused, ENXIO, and a
	 * full one waits in the copy's poll, not in the control thread) */
	int fd = open(dest, flags | O_NONBLOCK, 0644);
	if (fd < 0) {
		rd_field(o, "%s: %s", dest, strerror(errno));
		return errno == EEXIST ? VS_CONFLICT : VS_FAILED;
	}
	if (recfs_spec_check_output(d->pack_spec, "disk2file destination", dest, fd)) {
		rd_field(o, "%s", recfs_errmsg());
		close(fd);
		return VS_CONFLICT;
	}
	struct stat sb;
	if (!strcmp(mode, "w") && !fstat(fd, &sb) && S_ISREG(sb.st_mode) && ftruncate(fd, 0)) { /* a FIFO: as O_TRUNC */
		rd_field(o, "%s: %s", dest, strerror(errno));
		close(fd);
		return VS_FAILED;
	}
	if (resume && !fstat(fd, &sb) && S_ISREG(sb.st_mode)) {
		if ((uint64_t)sb.st_size > end - start) {
			rd_field(o, "%s holds %jd bytes, more than START to END's %" PRIu64, dest, (intmax_t)sb.st_size,
				 end - start);
			close(fd);
			return VS_CONFLICT;
		}
		start += (uint64_t)sb.st_size;
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
 * [: DEST] (jive5ab's); a copy that stopped short (reset=abort, an error):
 * inactive : DEST : START : CURRENT : END : MODE : WHY, recfsd's. */
int rd_disk2file_q(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
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
	/* a copy that stopped short: where, then why, after the six fields
	 * the FS's m5_2_disk2file reads (its third to fifth are numbers) */
	if (x->err[0]) {
		rd_field(o, "%" PRIu64, x->start);
		rd_field(o, "%" PRIu64, atomic_load(&x->cur));
		rd_field(o, "%" PRIu64, x->end);
		rd_field(o, "%s", x->mode);
		rd_field(o, "%s", x->err);
	}
	return VS_OK;
}

/* reset = abort : jive5ab's (reset_vbs.cc): a running disk2file stops at
 * once (within its piece or 100 ms of a full pipe); what it wrote stays
 * in DEST, closed, and disk2file? says where it stopped.  0; 6 when nothing
 * runs, or for anything but abort (jive5ab's Mark5 resets do not apply). */
int rd_reset(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
{
	struct rd_d2f *x = &d->d2f;
	if (np == 0 || !p[0][0]) {
		rd_field(o, "reset needs at least one argument");
		return VS_CONFLICT;
	}
	if (strcmp(p[0], "abort")) {
		rd_field(o, "%.32s does not apply to reset for recfsd (reset = abort)", p[0]);
		return VS_CONFLICT;
	}
	if (!atomic_load(&x->active)) {
		rd_field(o, "nothing running to abort");
		return VS_CONFLICT;
	}
	atomic_store(&x->quit, true);
	pthread_join(x->thr, NULL);
	x->started = false;
	return VS_OK;
}
