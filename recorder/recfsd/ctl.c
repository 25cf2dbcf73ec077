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

#include "ctl.h"
#include "vsis.h"

/* Append one reply field; characters that would end a field or the line
 * are replaced (scan names are the station's, messages may quote them). */
void rd_field(struct rd_out *o, const char *fmt, ...)
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

uint64_t rd_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A VSI-S time: 2026y326d17h05m03.1234s (UTC) */
void rd_vsi_time(uint64_t ns, char *out, size_t len)
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
int64_t rd_vex_time(const char *s)
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

int rd_check_sealed(struct rd *d, struct rd_out *o)
{
	if (d->recording && d->check.no == d->cur.no) {
		rd_field(o, "scan %" PRIu64 " is still recording", d->check.no);
		return VS_BUSY;
	}
	if (!rd_scan_done(d, &d->check)) {
		rd_field(o, "scan %" PRIu64 " is still being sealed", d->check.no);
		return VS_BUSY;
	}
	return 0;
}

/* A size as jive5ab reads net_protocol's and scan_check's (net_protocol.cc): strtol
 * with base 0 (decimal, 0x hex, 0 octal), then an optional unit k (1024)
 * or M (1024 * 1024) and nothing after; here strictly: digits first (no
 * sign, no space), no overflow.  0, or -1 not a number, -2 out of range. */
int rd_num_ku(const char *s, bool unit, uint64_t max, uint64_t *out)
{
	if (*s == '-' || *s == '+')
		return *s == '-' && s[1] >= '0' && s[1] <= '9' ? -2 : -1;
	if (*s < '0' || *s > '9')
		return -1;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	uint64_t mul = 1;
	if (unit && (*end == 'k' || *end == 'M'))
		mul = *end++ == 'k' ? 1024 : 1024 * 1024;
	if (*end)
		return -1;
	if (errno == ERANGE || v > max / mul)
		return -2;
	*out = v * mul;
	return 0;
}

/* A scan's recording as the engine sealed it may since have been deleted
 * (delete=) and its rows given to a later scan: is rec still on the
 * directory, the same recording (its uid)?  When not, why in o and
 * VS_CONFLICT. */
int rd_rec_alive(struct rd *d, const struct recfs_rec *rec, struct rd_out *o)
{
	struct recfs_rec now;
	pthread_mutex_lock(&d->pack_lock);
	int err = recfs_rec_lookup(d->p, rec->name, &now);
	pthread_mutex_unlock(&d->pack_lock);
	if (err || now.uid != rec->uid) {
		rd_field(o, "recording '%s' was deleted", rec->name);
		return VS_CONFLICT;
	}
	return 0;
}

/* A scan or experiment name part: what recfs_name_check takes, no '_'
 * games: the name is built as jive5ab builds it, EXP_STATION_SCAN. */
int rd_name_part(const char *s, size_t max)
{
	size_t n = strlen(s);
	if (n == 0 || n > max)
		return -1;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] <= 0x20 || s[i] == '/' || (unsigned char)s[i] >= 0x7f)
			return -1;
	return 0;
}

/* The keywords: what a command (keyword = ...) and a query (keyword ? ...)
 * run; NULL where the keyword has no such form (answered 2). */
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
	{ "reset", rd_reset, NULL }, /* reset=abort: disk2file's */
	{ "datastream", rd_datastream, rd_datastream_q },
	{ "mode", rd_mode, rd_mode_q },
	{ "net_protocol", rd_net_protocol, rd_net_protocol_q },
	{ "net_port", rd_net_port, rd_net_port_q },
	{ "mtu", rd_mtu, rd_mtu_q },
	{ "input_stream", rd_input_stream, rd_input_stream_q }, /* Mark6 cplane's */
	{ "group", rd_group, rd_group_q },
	{ "scan_info", NULL, rd_scan_info_q },
	{ "delete", rd_delete, NULL }, /* a recfs extension */
	{ "dialect", NULL, rd_dialect_q }, /* a recfs extension */
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
	rd_vs = vs_server_start(a, len, rd_vs_handler, rd_vs_line_end, d, d->dialect == RD_DIALECT_MARK6, err,
				sizeof(err));
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
