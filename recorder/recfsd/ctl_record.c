/* SPDX-License-Identifier: MIT */
/*
 * recfsd's VSI-S: record= and record? (jive5ab's and Mark6's record lines),
 * scan_set.
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

/* record? as Mark6 cplane answers it (its Response.py, GetRecord): its
 * own return code (0), then status : scan number : scan name.  Status
 * pending (a START not reached: nothing recorded yet), recording,
 * flushing (stopped, still being sealed) or off, as the FS's
 * mk6_record_util.c lists them; halted is recfsd's (a scan that stopped
 * by itself, until record=off).  The number and name: the last scan's,
 * always there (M6_CC reads the status as the third field). */
static int rd_record_q_mark6(struct rd *d, uint64_t bytes, struct rd_out *o)
{
	const char *st = "off";
	if (d->recording)
		st = d->start_at_ns && !bytes ? "pending" : "recording";
	else if (d->halted[0])
		st = "halted";
	else if (d->cur.no && !rd_scan_done(d, &d->cur))
		st = "flushing";
	rd_field(o, "0");
	rd_field(o, "%s", st);
	rd_field(o, "%" PRIu64, d->cur.no); /* 0 and "" before the first */
	rd_field(o, "%s", d->cur.name);
	return VS_OK;
}

/* record? [nthread | mk6] : jive5ab's (net2vbs.cc): off, or on : scans
 * recorded : the recording : bytes so far; halted is recfsd's (a scan
 * that stopped by itself, until record=off). */
int rd_record_q(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
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
	for (unsigned i = 0; i < d->nst; i++) {
		struct rr_stats s;
		rr_stats(d->st[i].r, &s);
		bytes += s.bytes;
	}
	bytes -= bytes < d->bytes0 ? bytes : d->bytes0;
	if (d->dialect == RD_DIALECT_MARK6)
		return rd_record_q_mark6(d, bytes, o);
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
int rd_record_nthread(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
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

int rd_record(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
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
		else if (d->dialect == RD_DIALECT_MARK6) {
			rd_field(o, "0"); /* cplane's SetRecord: 0, its own code 0 */
			return VS_OK;
		}
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
			rd_field(o, "a start time is not implemented with --split or --lanes");
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
	d->start_at_ns = (uint64_t)start * 1000000000ull;
	if (d->dialect == RD_DIALECT_MARK6)
		rd_field(o, "0"); /* cplane's own return code */
	/* jive5ab names the recording when it gave it a suffix */
	if (renamed)
		rd_field(o, "%s", name);
	return VS_OK;
}

/* scan_set? : SCAN# : NAME : START : END, jive5ab's, the bytes disk2file=
 * would copy (the offsets as given while the scan is being sealed).
 *
 * scan_set = [SCAN# | NAME | inc | dec | next] [: START [: END]] : which
 * scan scan_check? and disk2file= read (no name: the last scan, as
 * jive5ab; inc, dec and next: rd_scan_set_step, rd_scan_set_next).  One
 * of the last RR_SEGQ this daemon recorded, by its number or its
 * recordings' base name (an older number of its own: 8);
 * else from the pack's directory, as jive5ab looks a scan up
 * (scan_set_vbs.cc): a scan's recordings by its base name (every
 * stream's NAME_SUFFIX found), one recording by its exact name (jive5ab's
 * LABEL_dsname: disk2file= copies any recording of a scan so), else the
 * newest recording whose name contains NAME, case ignored (with its scan's
 * other streams when its name ends in one of their suffixes). */
int rd_scan_set_q(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
{
	if (d->check_nrec)
		rd_field(o, "?"); /* jive5ab's scan number of a scan it did not record */
	else if (!d->check.no) {
		rd_field(o, "no scan");
		return VS_FAILED;
	} else
		rd_field(o, "%" PRIu64, d->check.no);
	rd_field(o, "%s", d->check.name);
	/* jive5ab's start and end bytes, of the recording disk2file= copies;
	 * the offsets as given while it is not sealed */
	char tmp[512];
	struct rd_out scratch = { tmp, sizeof(tmp), 0, 0 };
	struct recfs_rec rec;
	uint64_t start = 0, end = 0;
	if (rd_d2f_rec(d, &rec, &scratch) == 0) {
		end = rec.committed_len;
		if ((!d->check_off[0][0] || !rd_scan_off(d, d->check_off[0], true, &rec, 0, &start, &scratch)) &&
		    (!d->check_off[1][0] || !rd_scan_off(d, d->check_off[1], false, &rec, start, &end, &scratch))) {
			rd_field(o, "%" PRIu64, start);
			rd_field(o, "%" PRIu64, end);
			return 0;
		}
	}
	rd_field(o, "%s", d->check_off[0]);
	rd_field(o, "%s", d->check_off[1]);
	return 0;
}

/* Every stream's recording of scan `base` found on the pack, into
 * names[]: how many. */
static unsigned rd_pack_scan(struct rd *d, const char *base, char names[][RECFS_NAME_MAX + 1])
{
	unsigned n = 0;
	for (unsigned k = 0; k < d->nst; k++) {
		char rn[RECFS_NAME_MAX + 16];
		struct recfs_rec rec;
		rd_rec_name(d, base, k, rn, sizeof(rn));
		pthread_mutex_lock(&d->pack_lock);
		bool found = rn[0] && recfs_rec_lookup(d->p, rn, &rec) == 0;
		pthread_mutex_unlock(&d->pack_lock);
		for (unsigned j = 0; found && j < n; j++)
			found = strcmp(names[j], rn) != 0; /* two streams, one name */
		if (found && strlen(rn) <= RECFS_NAME_MAX)
			memcpy(names[n++], rn, strlen(rn) + 1);
	}
	return n;
}

static int rd_scan_find(struct rd *d, const char *key, struct rd_out *o)
{
	static char names[RD_MAX_STREAMS][RECFS_NAME_MAX + 1]; /* under d->lock */
	char base[RECFS_NAME_MAX + 1];
	struct recfs_rec rec;
	bool exact = false, sub = false;
	uint64_t sub_ns = 0;
	unsigned n = rd_pack_scan(d, key, names);
	snprintf(base, sizeof(base), "%s", key);
	if (!n) {
		/* the pack lock one entry at a time: writers' commits wait for it */
		for (uint32_t i = 0;; i++) {
			pthread_mutex_lock(&d->pack_lock);
			int err = recfs_rec_next(d->p, &i, &rec);
			pthread_mutex_unlock(&d->pack_lock);
			if (err)
				break;
			exact |= !strcmp(rec.name, key);
			if (strcasestr(rec.name, key) && (!sub || rec.start_ns >= sub_ns)) {
				sub = true;
				sub_ns = rec.start_ns;
				snprintf(base, sizeof(base), "%s", rec.name);
			}
		}
		if (exact) {
			snprintf(base, sizeof(base), "%s", key);
			snprintf(names[n++], RECFS_NAME_MAX + 1, "%s", key);
		} else if (sub) {
			/* the newest match; its scan when it ends in a stream's suffix */
			char b[RECFS_NAME_MAX + 1];
			size_t bl = strlen(base);
			for (unsigned k = 0; k < d->nst && !n; k++) {
				size_t sl = strlen(d->st[k].sfx);
				if (!sl || sl >= bl || strcmp(base + bl - sl, d->st[k].sfx))
					continue;
				snprintf(b, sizeof(b), "%.*s", (int)(bl - sl), base);
				n = rd_pack_scan(d, b, names);
				if (n)
					snprintf(base, sizeof(base), "%s", b);
			}
			if (!n)
				snprintf(names[n++], RECFS_NAME_MAX + 1, "%s", base);
		}
	}
	if (!n) {
		rd_field(o, "no scan or recording '%.64s' on the pack", key);
		return VS_PARAM;
	}
	/* a scan of this daemon's last RR_SEGQ: its number, as scan_set=NAME */
	for (unsigned k = 0; k < RR_SEGQ; k++)
		if (d->hist[k].no && !strcmp(d->hist[k].name, base)) {
			d->check = d->hist[k];
			d->check_nrec = 0;
			return 0;
		}
	memset(&d->check, 0, sizeof(d->check));
	snprintf(d->check.name, sizeof(d->check.name), "%s", base);
	snprintf(d->check.label, sizeof(d->check.label), "%s", key);
	memcpy(d->check_recs, names, sizeof(names[0]) * n);
	d->check_nrec = n;
	return 0;
}

static int rd_scan_set_name(struct rd *d, const char *key, struct rd_out *o);

/* scan_set='s first field without a name, as jive5ab takes it
 * (scan_set_vbs.cc): the last scan this daemon recorded (while one
 * records, the one before it); 6 when there is none */
static int rd_scan_set_last(struct rd *d, struct rd_out *o)
{
	uint64_t no = d->cur.no;
	if (no && d->recording)
		no--;
	if (!d->cur.no) {
		rd_field(o, "there are no scans recorded in this session");
		return VS_CONFLICT;
	}
	if (!no) {
		rd_field(o, "not enough scans recorded yet (recording first scan)");
		return VS_CONFLICT;
	}
	d->check = d->hist[no % RR_SEGQ];
	d->check_nrec = 0;
	return 0;
}

/* The oldest scan of the last RR_SEGQ, whose rd_scan hist[] keeps */
static uint64_t rd_hist_lo(const struct rd *d)
{
	return d->scans > RR_SEGQ ? d->scans - RR_SEGQ + 1 : 1;
}

/* scan_set = inc | dec : jive5ab's step through this session's scans from
 * scan_set's (inc the next newer, wrapping to the oldest; dec the next
 * older, wrapping to the newest).  recfsd's session list is its last
 * RR_SEGQ scans: the steps wrap round within them. */
static int rd_scan_set_step(struct rd *d, bool inc, struct rd_out *o)
{
	if (d->check_nrec || !d->check.no) {
		rd_field(o, "there is no recorded scan to %s from", inc ? "increment" : "decrement");
		return VS_CONFLICT;
	}
	uint64_t no = d->check.no, lo = rd_hist_lo(d);
	if (inc)
		no = no < lo || no >= d->scans ? lo : no + 1;
	else
		no = no <= lo ? d->scans : no - 1;
	d->check = d->hist[no % RR_SEGQ];
	d->check_nrec = 0;
	return 0;
}

/* scan_set = next : jive5ab's next scan of this session (recfsd: of its
 * last RR_SEGQ), after scan_set's, whose name holds the last search's
 * text (case ignored, wrapping round); else that text looked up as a
 * name again */
static char rd_search[RECFS_NAME_MAX + 1]; /* under d->lock */
static int rd_scan_set_next(struct rd *d, struct rd_out *o)
{
	if (!rd_search[0]) {
		rd_field(o, "no search string given yet");
		return VS_FAILED;
	}
	uint64_t lo = rd_hist_lo(d), no = d->check_nrec ? 0 : d->check.no;
	if (no < lo || no > d->scans)
		no = d->scans; /* from the window's start */
	for (uint64_t k = lo; d->scans && k <= d->scans; k++) {
		no = no >= d->scans ? lo : no + 1;
		const struct rd_scan *sc = &d->hist[no % RR_SEGQ];
		if (sc->no == no && strcasestr(sc->name, rd_search)) {
			d->check = *sc;
			d->check_nrec = 0;
			return 0;
		}
	}
	return rd_scan_set_name(d, rd_search, o);
}

int rd_scan_set(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
{
	/* jive5ab: not while a transfer runs (its INPROGRESS) */
	if (atomic_load(&d->d2f.active)) {
		rd_field(o, "not whilst disk2file is in progress");
		return VS_CONFLICT;
	}
	/* the FS sends scan_set = LABEL :  :  ; with empty offsets: the
	 * whole scan, as jive5ab takes them; given ones are checked against
	 * the recording disk2file= copies now when it is sealed (8 when out
	 * of it, the choice unchanged), and again at disk2file= */
	if (np > 3) {
		rd_field(o, "scan_set = [SCAN# | NAME | inc | dec | next] [: START [: END]]");
		return VS_PARAM;
	}
	for (unsigned k = 1; k < np; k++) {
		uint64_t v;
		if (strlen(p[k]) >= sizeof(d->check_off[0])) {
			rd_field(o, "scan_set: an offset is at most %zu bytes", sizeof(d->check_off[0]) - 1);
			return VS_PARAM;
		}
		if (p[k][0] && rd_scan_off(d, p[k], k == 1, NULL, 0, &v, o))
			return VS_PARAM;
	}
	/* the choice as it was, should an offset not fit the new one */
	static struct rd_scan check0;
	static char recs0[RD_MAX_STREAMS][RECFS_NAME_MAX + 1];
	static char search0[sizeof(rd_search)];
	unsigned nrec0 = d->check_nrec;
	check0 = d->check;
	memcpy(recs0, d->check_recs, sizeof(recs0));
	memcpy(search0, rd_search, sizeof(search0));
	int rc;
	if (np == 0 || !p[0][0])
		rc = rd_scan_set_last(d, o);
	else if (!strcmp(p[0], "inc") || !strcmp(p[0], "dec"))
		rc = rd_scan_set_step(d, p[0][0] == 'i', o);
	else if (!strcmp(p[0], "next"))
		rc = rd_scan_set_next(d, o);
	else {
		rc = rd_scan_set_name(d, p[0], o);
		if (!rc && p[0][strspn(p[0], "0123456789")])
			snprintf(rd_search, sizeof(rd_search), "%s", p[0]);
	}
	if (rc)
		return rc;
	uint64_t start = 0, end;
	struct recfs_rec rec;
	if (np > 1 && (p[1][0] || (np > 2 && p[2][0])) && rd_d2f_rec(d, &rec, o) == 0) {
		end = rec.committed_len;
		if ((p[1][0] && rd_scan_off(d, p[1], true, &rec, 0, &start, o)) ||
		    (np > 2 && p[2][0] && rd_scan_off(d, p[2], false, &rec, start, &end, o))) {
			d->check = check0;
			d->check_nrec = nrec0;
			memcpy(d->check_recs, recs0, sizeof(recs0));
			memcpy(rd_search, search0, sizeof(search0));
			return VS_PARAM;
		}
	}
	o->used = 0; /* a recording not sealed yet: its offsets at disk2file= */
	o->n = 0;
	o->buf[0] = 0;
	memset(d->check_off, 0, sizeof(d->check_off));
	for (unsigned k = 1; k < np; k++)
		snprintf(d->check_off[k - 1], sizeof(d->check_off[0]), "%s", p[k]);
	return 0;
}

/* scan_set='s scan by its number or name; 0, or an rc */
static int rd_scan_set_name(struct rd *d, const char *key, struct rd_out *o)
{
	if (strlen(key) > RECFS_NAME_MAX) {
		rd_field(o, "scan_set: a name is at most %u bytes", RECFS_NAME_MAX);
		return VS_PARAM;
	}
	for (unsigned k = 0; k < RR_SEGQ; k++) {
		const struct rd_scan *sc = &d->hist[k];
		char no[24];
		snprintf(no, sizeof(no), "%" PRIu64, sc->no);
		if (sc->no && (!strcmp(no, key) || !strcmp(sc->name, key))) {
			d->check = *sc;
			d->check_nrec = 0;
			return 0;
		}
	}
	/* a number of this daemon's beyond the last RR_SEGQ: its name is not
	 * kept (a search for the digits would find another scan) */
	uint64_t no;
	if (key[strspn(key, "0123456789")] == 0 && !recfs_parse_num("scan_set", key, 1, d->scans, &no)) {
		rd_field(o, "scan %" PRIu64 " is older than the last %u; scan_set= its name", no, RR_SEGQ);
		return VS_PARAM;
	}
	/* older, or recorded before this daemon started: the pack's directory */
	return rd_scan_find(d, key, o);
}
