/* SPDX-License-Identifier: MIT */
/*
 * recfsd's VSI-S: loss and rate (evlbi, tstat, rtime?), from the same
 * counters as /metrics.
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

/* The counters /metrics shows, summed over the streams. */
struct rd_sums {
	uint64_t packets, bytes, ring_dropped, kernel_dropped, wrong_size, frames_lost, written;
};

static void rd_sums(const struct rd *d, struct rd_sums *t)
{
	memset(t, 0, sizeof(*t));
	for (unsigned i = 0; i < d->nst; i++) {
		struct rr_stats s;
		rr_stats(d->st[i].r, &s);
		t->packets += s.packets;
		t->bytes += s.bytes;
		t->ring_dropped += s.ring_dropped;
		t->kernel_dropped += s.kernel_dropped;
		t->wrong_size += s.wrong_size;
		t->frames_lost += s.frames_lost;
		t->written += s.written;
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

int rd_evlbi_q(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
{
	return rd_evlbi_fmt(d, "total : %t : loss : %l (%L) : out-of-order : %o (%O) : extent : %R", o);
}

int rd_evlbi(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
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
int rd_tstat(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
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

int rd_tstat_q(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
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
		struct rr_stats s;
		rr_stats(d->st[i].r, &s);
		size += s.ring_size;
		fill += s.ring_fill;
	}
	rd_field(o, "F%4.1f%%", size ? fill * 100.0 / size : 0.0);
	d->tstat_ns = now;
	d->tstat_rx = t.bytes;
	d->tstat_wr = t.written;
	return VS_OK;
}

/* rtime? [RATE] as Mark6 cplane answers it (Response.py, GetRtime): its
 * own return code (0), then group : data rate (Mbit/s) : seconds left :
 * GB left : GB of the group.  RATE as drudg writes it (mk6=rtime?  8192;,
 * the data rate in Mbit/s), else the rate mode= gives; recfsd's one group
 * is its pack, 1 (group?). */
static int rd_rtime_mark6(struct rd *d, unsigned np, char *const *p, double free_b, double cap,
			  struct rd_out *o)
{
	uint64_t mbps = 0;
	if (np > 1 || (np == 1 && p[0][0] && recfs_parse_num("rtime rate", p[0], 1, 1000000, &mbps))) {
		rd_field(o, "rtime? [RATE], the data rate in Mbit/s (1 to 1000000)");
		return VS_PARAM;
	}
	if (!mbps && d->mode[0])
		mbps = (uint64_t)d->mode_mbps;
	if (!mbps) {
		rd_field(o, "rtime? RATE: no rate given and no mode= set");
		return VS_PARAM;
	}
	rd_field(o, "0");
	rd_field(o, "1");
	rd_field(o, "%" PRIu64, mbps);
	rd_field(o, "%.1f", free_b * 8 / ((double)mbps * 1e6));
	rd_field(o, "%.3f", free_b / 1e9);
	rd_field(o, "%.3f", cap / 1e9);
	return VS_OK;
}

/* rtime? : jive5ab's on a FlexBuff (rtime_vbs.cc): seconds of recording
 * left at the mode's rate : GB free : % free : format : tracks : 0MHz :
 * total rate, from mode= (before one: "<unknown> (no mode set yet)"). */
int rd_rtime_q(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
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
	if (d->dialect == RD_DIALECT_MARK6)
		return rd_rtime_mark6(d, np, p, free_b, cap, o);
	/* the rate on the wire: payload rate times frame over payload */
	double bps = d->mode[0] ? (double)d->mode_mbps * 1e6 * d->mode_frame / d->mode_payload : 0;
	if (bps > 0)
		rd_field(o, "%.3fs", free_b * 8 / bps);
	else
		rd_field(o, "<unknown> (no mode set yet)");
	rd_field(o, "%.3fGB", free_b / 1e9);
	rd_field(o, "%.2f%%", cap > 0 ? free_b * 100 / cap : 0.0);
	rd_field(o, "%s", d->mode[0] ? (d->fmt_vdif ? "VDIF" : "Mark5B") : d->fmt_vdif ? "vdif" : "raw");
	rd_field(o, "%u", d->mode[0] ? d->mode_tracks : 0);
	rd_field(o, "0MHz");
	if (bps > 0)
		rd_field(o, "%.3fMbps", bps / 1e6);
	else
		rd_field(o, "<unknown> Mbps");
	return VS_OK;
}
