/* SPDX-License-Identifier: MIT */
/*
 * recfsd's VSI-S commands: what each keyword does to the daemon and what it
 * answers.  The transport (TCP, several clients, hostile input) is vsis.c;
 * this file only sees one parsed statement at a time.  Replies follow
 * jive5ab's field order where jive5ab has the keyword (recfsd.8 lists them).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

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
	int n = snprintf(o->buf + o->used, o->len - o->used, "%s%s", o->used ? " : " : "", tmp);
	if (n > 0)
		o->used += (size_t)n < o->len - o->used ? (size_t)n : o->len - o->used - 1;
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

static int rd_record(struct rd *d, bool query, unsigned np, char *const *p, struct rd_out *o)
{
	if (query) {
		rd_refresh(d);
		if (d->recording) {
			rd_field(o, "on");
			rd_field(o, "%" PRIu64, d->cur.no);
			rd_field(o, "%s", d->cur.name);
		} else if (d->halted[0]) {
			rd_field(o, "halted");
			rd_field(o, "%" PRIu64, d->cur.no);
			rd_field(o, "%s", d->cur.name);
			rd_field(o, "%s", d->halted);
		} else {
			rd_field(o, "off");
		}
		return 0;
	}
	if (np == 0) {
		rd_field(o, "record = on or START : SCAN [: EXPERIMENT [: STATION]] or record = off");
		return 8;
	}
	if (!strcasecmp(p[0], "off")) {
		if (np > 1) {
			rd_field(o, "record=off takes no parameters");
			return 8;
		}
		int rc = rd_scan_stop(d);
		if (rc)
			rd_field(o, "%s", d->why);
		return rc;
	}
	/* on: at the next datagram; a VEX time (Mark6's start time): at
	 * the first VDIF frame 0 of a second at or after it, so a time
	 * already past starts at the next second boundary */
	int64_t start = 0;
	if (strcasecmp(p[0], "on")) {
		start = rd_vex_time(p[0]);
		if (start < 0) {
			rd_field(o, "'%.32s' is not on, off or a start time such as 2026y327d18h30m00s", p[0]);
			return 8;
		}
		if (!d->fmt_vdif) {
			rd_field(o, "a start time needs --format vdif (it waits for a VDIF second)");
			return 6;
		}
		if (d->nsplit) {
			rd_field(o, "a start time is not implemented with --split");
			return 2;
		}
	}
	if (np < 2 || np > 4 || rd_name_part(p[1], 64) || (np > 2 && p[2][0] && rd_name_part(p[2], 32)) ||
	    (np > 3 && p[3][0] && rd_name_part(p[3], 8))) {
		rd_field(o, "record = on or START : SCAN [: EXPERIMENT [: STATION]], at most 64, 32 and 8 printable bytes, no spaces or '/'");
		return 8;
	}
	/* jive5ab: EXPERIMENT_STATION_SCAN when they are given */
	char name[RECFS_NAME_MAX + 1];
	const char *exp = np > 2 ? p[2] : "", *st = np > 3 ? p[3] : "";
	int n;
	if (exp[0] && st[0])
		n = snprintf(name, sizeof(name), "%s_%s_%s", exp, st, p[1]);
	else if (exp[0])
		n = snprintf(name, sizeof(name), "%s_%s", exp, p[1]);
	else
		n = snprintf(name, sizeof(name), "%s", p[1]);
	if (n < 0 || (size_t)n >= sizeof(name)) {
		rd_field(o, "scan name too long (at most %d bytes)", RECFS_NAME_MAX);
		return 8;
	}
	int rc = rd_scan_start(d, name, p[1], 0, start);
	if (rc)
		rd_field(o, "%s", d->why);
	else {
		snprintf(d->exp, sizeof(d->exp), "%s", exp);
		snprintf(d->station, sizeof(d->station), "%s", st);
	}
	return rc;
}

/* scan_set = SCAN# | NAME : which scan scan_check? reports (one of the
 * last RR_SEGQ this daemon recorded). */
static int rd_scan_set(struct rd *d, bool query, unsigned np, char *const *p, struct rd_out *o)
{
	if (query) {
		if (!d->check.no) {
			rd_field(o, "no scan");
			return 4;
		}
		rd_field(o, "%" PRIu64, d->check.no);
		rd_field(o, "%s", d->check.name);
		return 0;
	}
	if (np < 1 || !p[0][0]) {
		rd_field(o, "scan_set = SCAN# or NAME");
		return 8;
	}
	if (np > 1) {
		rd_field(o, "scan_set: start and stop offsets are not implemented here");
		return 2;
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
	return 8;
}

/* scan_check? : the last scan (or scan_set's) once sealed, per jive5ab:
 * scan# : label : data type : frame size : start : length : rate :
 * missing bytes, one group of fields per input. */
static int rd_scan_check(struct rd *d, struct rd_out *o)
{
	rd_refresh(d);
	if (!d->check.no) {
		rd_field(o, "no scan recorded yet");
		return 4;
	}
	if (d->recording && d->check.no == d->cur.no) {
		rd_field(o, "scan %" PRIu64 " is still recording", d->check.no);
		return 5;
	}
	struct rd_scan sc = d->check;
	if (!rd_scan_wait(d, &sc, 1000000000ull)) {
		rd_field(o, "scan %" PRIu64 " is still being sealed", sc.no);
		return 5;
	}
	int rc = 0;
	for (unsigned i = 0; i < d->nst; i++) {
		struct rr *r = d->st[i].r;
		struct rr_seg *s = rr_seg_at(r, sc.seg);
		pthread_mutex_lock(&r->seg_lock);
		struct recfs_rec rec = s->rec;
		int state = atomic_load(&s->state);
		uint64_t len = s->len, dropped = s->ring_dropped + s->kernel_dropped;
		uint64_t lost = s->loss.frames_lost;
		char msg[sizeof(s->msg)];
		snprintf(msg, sizeof(msg), "%s", s->msg);
		char name[RECFS_NAME_MAX + 1];
		snprintf(name, sizeof(name), "%s", s->name);
		pthread_mutex_unlock(&r->seg_lock);
		rd_field(o, "%" PRIu64, sc.no);
		rd_field(o, "%s", name);
		if (state == RR_SEG_FAILED) {
			rd_field(o, "error");
			rd_field(o, "%s", msg);
			rc = 4;
			continue;
		}
		if (len == 0) { /* nothing arrived: no recording */
			rd_field(o, "-");
			rd_field(o, "no data");
			continue;
		}
		double secs = rec.end_ns > rec.start_ns ? (double)(rec.end_ns - rec.start_ns) * 1e-9 : 0;
		char t[48];
		rd_vsi_time(rec.start_ns, t, sizeof(t));
		rd_field(o, "%s", rec.input.format == RECFS_FMT_VDIF  ? "vdif"
				  : rec.input.format == RECFS_FMT_RAW ? "raw"
								      : "unknown");
		rd_field(o, "%u", rec.input.frame_size);
		rd_field(o, "%s", t);
		rd_field(o, "%.4fs", secs);
		rd_field(o, "%.3fMbps", secs > 0 ? (double)len * 8e-6 / secs : 0.0);
		/* missing: frames the VDIF headers say were lost, else datagrams dropped */
		uint64_t fs = rec.input.frame_size ? rec.input.frame_size : 0;
		rd_field(o, "%" PRIu64, lost ? lost * fs : dropped * fs);
		rd_field(o, "%" PRIu64, len);
	}
	return rc;
}

static int rd_dir_info(struct rd *d, struct rd_out *o)
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
		return 4;
	}
	rd_field(o, "%" PRIu64, n);
	rd_field(o, "%" PRIu64, bytes);
	rd_field(o, "%" PRIu64, info.free);
	return 0;
}

static int rd_status(struct rd *d, struct rd_out *o)
{
	int rc;
	unsigned st = RD_ST_READY;
	rd_refresh(d);
	const char *no = rd_refuse(d, &rc);
	if (d->recording)
		st |= RD_ST_RECORD;
	if (no && !strncmp(no, "pack full", 9))
		st |= RD_ST_FULL;
	else if (no)
		st |= RD_ST_ERROR;
	if (d->halted[0] && !(st & RD_ST_FULL))
		st |= RD_ST_ERROR;
	rd_field(o, "0x%08x", st);
	rd_field(o, "%s", d->recording ? "recording" : no ? "halted" : "idle");
	if (no)
		rd_field(o, "%s", no);
	else if (d->halted[0])
		rd_field(o, "%s", d->halted);
	return 0;
}

/* mode = VDIF_<framesize>-<Mbps>-<channels>-<bits> | raw : what applies
 * to recfs is the data type (vdif checks frames and keeps a loss map). */
static int rd_mode(struct rd *d, bool query, unsigned np, char *const *p, struct rd_out *o)
{
	if (query) {
		rd_field(o, "%s", d->fmt_vdif ? "vdif" : "raw");
		return 0;
	}
	if (np < 1) {
		rd_field(o, "mode = VDIF_... or raw");
		return 8;
	}
	bool vdif;
	if (!strncasecmp(p[0], "vdif", 4))
		vdif = true;
	else if (!strcasecmp(p[0], "raw") || !strcasecmp(p[0], "none"))
		vdif = false;
	else {
		rd_field(o, "mode '%.32s': recfsd records VDIF or raw streams", p[0]);
		return 8;
	}
	if (vdif != d->fmt_vdif) {
		rd_field(o, "recfsd was started with --format %s; restart it to change", d->fmt_vdif ? "vdif" : "raw");
		return 6;
	}
	return 0;
}

static int rd_net_protocol(struct rd *d, bool query, unsigned np, char *const *p, struct rd_out *o)
{
	if (query) {
		rd_field(o, "%s", d->st[0].r->strip == 8 ? "udps" : "udp");
		rd_field(o, "%" PRIu64, d->st[0].r->rcvbuf);
		return 0;
	}
	if (np < 1 || (strcasecmp(p[0], "udp") && strcasecmp(p[0], "udps") && strcasecmp(p[0], "udpsnor"))) {
		rd_field(o, "recfsd receives udp (and udps, the 8-byte sequence-number prefix, as --strip 8)");
		return np < 1 ? 8 : 6;
	}
	/* jive5ab: PROTOCOL : SOCBUF : BLOCKSIZE : NBLOCK.  The socket
	 * buffer and the ring are sized when recfsd starts: a SOCBUF within
	 * --rcvbuf is already had, the ring's shape is recfsd's own */
	static const char *const what[] = { "", "SOCBUF", "BLOCKSIZE", "NBLOCK" };
	uint64_t v[4] = { 0 }, rcvbuf = d->st[0].r->rcvbuf;
	if (np > 4) {
		rd_field(o, "net_protocol = PROTOCOL [: SOCBUF [: BLOCKSIZE [: NBLOCK]]]");
		return 8;
	}
	for (unsigned k = 1; k < np; k++)
		if (p[k][0] && recfs_parse_bytes("net_protocol", p[k], 0, UINT64_MAX, &v[k])) {
			rd_field(o, "net_protocol %s '%.32s' is not a size", what[k], p[k]);
			return 8;
		}
	if (v[1] > rcvbuf) {
		rd_field(o, "socket buffer is %" PRIu64 " bytes (--rcvbuf, set when recfsd starts)", rcvbuf);
		return 6;
	}
	bool udps = strcasecmp(p[0], "udp") != 0;
	unsigned want = udps ? 8 : 0;
	if (d->st[0].r->strip != want) {
		rd_field(o, "inputs are bound with --strip %u; restart recfsd with --strip %u", d->st[0].r->strip,
			 want);
		return 6;
	}
	return 0;
}

static int rd_net_port(struct rd *d, bool query, unsigned np, char *const *p, struct rd_out *o)
{
	if (query) {
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
	if (np != 1 || !p[0][0]) {
		rd_field(o, "net_port = [ADDR@]PORT");
		return 8;
	}
	const char *port = strchr(p[0], '@') ? strchr(p[0], '@') + 1 : p[0];
	for (unsigned i = 0; i < d->nin; i++) {
		const char *mine = strrchr(d->in[i].spec, ':');
		if (mine && !strcmp(mine + 1, port))
			return 0; /* already listening there */
	}
	rd_field(o, "inputs are bound when recfsd starts (--input); port %.16s is not one of them", port);
	return 6;
}

static int rd_mtu(struct rd *d, bool query, unsigned np, char *const *p, struct rd_out *o)
{
	if (query) {
		rd_field(o, "%u", d->mtu ? d->mtu : 9000);
		return 0;
	}
	uint64_t v;
	if (np != 1 || recfs_parse_num("mtu", p[0], 64, 65535, &v)) {
		rd_field(o, "mtu = 64 to 65535");
		return 8;
	}
	d->mtu = (uint32_t)v; /* datagram sizes are learned from the stream */
	return 0;
}

/* delete = NAME : a recfs extension (the pack is the daemon's while it runs,
 * so recfs rm cannot open it for writing): deletes a sealed recording that
 * no scan of this daemon is still writing. */
static int rd_delete(struct rd *d, bool query, unsigned np, char *const *p, struct rd_out *o)
{
	if (query || np != 1 || !p[0][0]) {
		rd_field(o, "delete = NAME");
		return query ? 2 : 8;
	}
	for (unsigned i = 0; i < d->nst; i++) {
		struct rr *r = d->st[i].r;
		for (uint64_t n = atomic_load(&r->seg_done); n < atomic_load(&r->seg_posted); n++)
			if (!strcmp(rr_seg_at(r, n)->name, p[0])) {
				rd_field(o, "'%.64s' is being recorded", p[0]);
				return 6;
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
		return err == -ENOENT ? 8 : 4;
	}
	return 0;
}

int rd_ctl_exec(struct rd *d, const char *kw, bool query, unsigned np, char *const *p, char *out,
		size_t outlen)
{
	struct rd_out o = { out, outlen, 0 };
	int rc;
	out[0] = 0;
	uint64_t t_arrived = rr_mono_ns(); /* before waiting for the lock */
	pthread_mutex_lock(&d->lock);
	d->t_stmt_ns = t_arrived;
	if (!strcasecmp(kw, "record"))
		rc = rd_record(d, query, np, p, &o);
	else if (!strcasecmp(kw, "scan_set"))
		rc = rd_scan_set(d, query, np, p, &o);
	else if (!strcasecmp(kw, "scan_check"))
		rc = query ? rd_scan_check(d, &o) : (rd_field(&o, "scan_check is a query"), 2);
	else if (!strcasecmp(kw, "dir_info"))
		rc = query ? rd_dir_info(d, &o) : (rd_field(&o, "dir_info is a query"), 2);
	else if (!strcasecmp(kw, "status"))
		rc = query ? rd_status(d, &o) : (rd_field(&o, "status is a query"), 2);
	else if (!strcasecmp(kw, "version")) {
		if (query) {
			rd_field(&o, "recfsd");
			rd_field(&o, "%s", RECFS_VERSION_STRING);
			rc = 0;
		} else {
			rd_field(&o, "version is a query");
			rc = 2;
		}
	} else if (!strcasecmp(kw, "mode"))
		rc = rd_mode(d, query, np, p, &o);
	else if (!strcasecmp(kw, "net_protocol"))
		rc = rd_net_protocol(d, query, np, p, &o);
	else if (!strcasecmp(kw, "net_port"))
		rc = rd_net_port(d, query, np, p, &o);
	else if (!strcasecmp(kw, "mtu"))
		rc = rd_mtu(d, query, np, p, &o);
	else if (!strcasecmp(kw, "delete"))
		rc = rd_delete(d, query, np, p, &o);
	else {
		rd_field(&o, "no such keyword");
		rc = 7;
	}
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
	(void)d;
	if (rd_vs)
		vs_server_stop(rd_vs);
	rd_vs = NULL;
}
