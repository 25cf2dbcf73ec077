/* SPDX-License-Identifier: MIT */
/*
 * recfsd's datastreams: which lane records which VDIF station and thread
 * in the next scan.  Part of the scan model (scan.c asks rd_ds_plan at
 * each record=on); the keywords that edit them are ctl_stream.c.
 *
 * jive5ab's datastreams (mk5command/datastream.cc, mk6info.cc): each has a
 * NAME and MATCH specifications [STATION.]THREADS; a VDIF frame goes to
 * the first datastream, in the order of their names, that one of whose
 * specifications matches its station and thread, and is recorded as
 * SCAN_dsNAME (jive5ab 3.1's chunkmakers), {thread} and {station} in NAME
 * replaced by the frame's.  A frame no datastream takes is dropped.
 *
 * recfsd's lanes (engines and their rings) are reserved when it starts
 * (--split, --lanes); the datastreams are laid onto them at each
 * record=on (rd_ds_plan), from the definitions and the (station, thread)
 * keys each input's receiver saw in the last RD_SEEN_S seconds: a fixed
 * NAME takes one lane whatever arrives, a NAME with {thread} or {station}
 * one lane per expansion seen.  Keys first seen during a scan, matched by
 * such a NAME, wait for the next scan (their frames are dropped and
 * counted, tot_other).  Each scan's map goes to the receiver with the
 * scan's segment (engine.h, struct rr_split), so a change never reaches a
 * scan already open.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recfsd.h"

#define RD_SEEN_S 10u   /* a key seen this recently gets a lane */

/* --split vdif-thread:THREADS: datastream tN takes thread N, recorded as
 * SCAN_tN, as recfsd has always named them. */
void rd_ds_defaults(struct rd *d)
{
	d->nds = 0;
	for (unsigned k = 0; k < d->ndflt && k < RD_MAX_DS; k++) {
		struct rd_ds *ds = &d->ds[d->nds++];
		memset(ds, 0, sizeof(*ds));
		snprintf(ds->name, sizeof(ds->name), "t%u", d->split_thread[k]);
		ds->dflt = true;
		ds->nm = 1;
		snprintf(ds->m[0].text, sizeof(ds->m[0].text), ".%u", d->split_thread[k]);
		ds->m[0].kind = RD_STN_ANY;
		ds->m[0].threads[d->split_thread[k] / 64] |= 1ull << (d->split_thread[k] % 64);
	}
	/* jive5ab's order: by name */
	for (unsigned i = 1; i < d->nds; i++)
		for (unsigned j = i; j > 0 && strcmp(d->ds[j - 1].name, d->ds[j].name) > 0; j--) {
			struct rd_ds t = d->ds[j];
			d->ds[j] = d->ds[j - 1];
			d->ds[j - 1] = t;
		}
	d->plan_ns = 0;
}

static bool rd_templated(const struct rd_ds *ds)
{
	return strstr(ds->name, "{thread}") || strstr(ds->name, "{station}");
}

/* A frame of station st (known: a row's) and thread th: does m take it? */
static bool rd_match(const struct rd_match *m, bool known, uint16_t st, unsigned th)
{
	if (!(m->threads[th / 64] >> (th % 64) & 1))
		return false;
	switch (m->kind) {
	case RD_STN_ID: return known && st == m->station;
	case RD_STN_CHAR: return known && (st & 0xff00) == m->station;
	default: return true;
	}
}

/* NAME with {thread} and {station} replaced: the station as its two
 * characters when both are letters or digits, else 4 hex digits (jive5ab
 * prints a station of unprintable bytes as hex padded with spaces, which
 * no recording name may hold). */
static void rd_expand(const char *name, uint16_t st, unsigned th, char *out, size_t len)
{
	size_t n = 0;
	char stn[8];
	if (isalnum(st >> 8) && isalnum(st & 0xff))
		snprintf(stn, sizeof(stn), "%c%c", st >> 8, st & 0xff);
	else
		snprintf(stn, sizeof(stn), "%04x", st);
	for (const char *c = name; *c && n + 1 < len;) {
		int k = 0;
		if (!strncmp(c, "{thread}", 8)) {
			k = snprintf(out + n, len - n, "%u", th);
			c += 8;
		} else if (!strncmp(c, "{station}", 9)) {
			k = snprintf(out + n, len - n, "%s", stn);
			c += 9;
		} else {
			out[n] = *c++;
			k = 1;
		}
		n += (size_t)k < len - n ? (size_t)k : len - n - 1;
	}
	out[n] = 0;
}

/* The lane of suffix sfx among the first *nl, added when there is room:
 * its index, or -1. */
static int rd_lane_of(char (*names)[80], unsigned *nl, unsigned lanes, const char *sfx)
{
	for (unsigned l = 0; l < *nl; l++)
		if (!strcmp(names[l], sfx))
			return (int)l;
	if (*nl == lanes)
		return -1;
	snprintf(names[*nl], sizeof(names[0]), "%s", sfx);
	return (int)(*nl)++;
}

/* One input's plan into m and its lanes' sfx and used: how many
 * recordings found no lane (the first one's name in lost). */
static unsigned rd_plan_input(struct rd *d, unsigned i, struct rr_dsmap *m, char *lost, size_t llen)
{
	struct rd_input *in = &d->in[i];
	char lab[sizeof(in->label) + 1] = "";
	char names[RR_MAX_LANES][80];
	unsigned nl = 0, lanes = d->nsplit ? d->nsplit : 1, nlost = 0;
	if (d->nin > 1)
		snprintf(lab, sizeof(lab), "_%s", in->label);
	memset(m, 0, sizeof(*m));
	memset(m->lane, -1, sizeof(m->lane));
	if (!d->nsplit || !d->nds) {
		/* no datastreams: every frame to one recording, SCAN[_LABEL] */
		memset(m->lane, 0, sizeof(m->lane));
		snprintf(names[nl++], sizeof(names[0]), "%s", lab);
		goto out;
	}
	/* the rows: the stations a MATCH names first (so stray stations the
	 * receiver saw cannot crowd them out), then the others it saw */
	struct rr_seen *sn = in->split.seen;
	int slot[RR_DS_STATIONS]; /* a row's in sn, -1: named, not seen */
	uint32_t keys[RR_DS_STATIONS];
	for (unsigned s = 0; s < RR_DS_STATIONS; s++)
		keys[s] = atomic_load_explicit(&sn->station[s], memory_order_acquire);
	for (int named = 1; named >= 0; named--)
		for (unsigned k = 0; k < (named ? d->nds : RR_DS_STATIONS); k++)
			for (unsigned j = 0; j < (named ? d->ds[k].nm : 1); j++) {
				uint16_t st;
				if (named) {
					if (d->ds[k].m[j].kind != RD_STN_ID)
						continue;
					st = d->ds[k].m[j].station;
				} else if (keys[k]) {
					st = (uint16_t)keys[k];
				} else {
					continue;
				}
				unsigned r, s;
				for (r = 0; r < m->nst && m->station[r] != st; r++)
					;
				if (r < m->nst || m->nst == RR_DS_STATIONS)
					continue;
				for (s = 0; s < RR_DS_STATIONS && keys[s] != (0x10000u | st); s++)
					;
				slot[m->nst] = s < RR_DS_STATIONS ? (int)s : -1;
				m->station[m->nst++] = st;
			}
	/* a fixed NAME takes its lane whatever arrives, in their order */
	int fixed[RD_MAX_DS];
	for (unsigned k = 0; k < d->nds; k++) {
		char sfx[80];
		fixed[k] = -1;
		if (rd_templated(&d->ds[k]))
			continue;
		snprintf(sfx, sizeof(sfx), "%s_%s%s", lab, d->ds[k].dflt ? "" : "ds", d->ds[k].name);
		if ((fixed[k] = rd_lane_of(names, &nl, lanes, sfx)) < 0 && !nlost++)
			snprintf(lost, llen, "%s", sfx + 1);
	}
	uint32_t now = (uint32_t)(rr_mono_ns() / 1000000000ull) + 1;
	for (unsigned r = 0; r <= m->nst; r++) {
		bool known = r < m->nst;
		uint16_t st = known ? m->station[r] : 0;
		for (unsigned th = 0; th < RR_VDIF_MAX_THREADS; th++) {
			unsigned k;
			for (k = 0; k < d->nds; k++) {
				unsigned j;
				for (j = 0; j < d->ds[k].nm && !rd_match(&d->ds[k].m[j], known, st, th); j++)
					;
				if (j < d->ds[k].nm)
					break;
			}
			if (k == d->nds)
				continue; /* no datastream takes it: dropped */
			if (!rd_templated(&d->ds[k])) {
				m->lane[r][th] = (int8_t)fixed[k];
				continue;
			}
			/* {thread}, {station}: a lane per key seen of late */
			uint32_t last = known && slot[r] >= 0
					? atomic_load_explicit(&sn->last_s[slot[r]][th], memory_order_relaxed) : 0;
			if (!last || last + RD_SEEN_S < now)
				continue;
			char x[RD_DS_NAME + 16], sfx[80];
			rd_expand(d->ds[k].name, st, th, x, sizeof(x));
			snprintf(sfx, sizeof(sfx), "%s_ds%s", lab, x);
			int l = rd_lane_of(names, &nl, lanes, sfx);
			m->lane[r][th] = (int8_t)l;
			if (l < 0 && !nlost++)
				snprintf(lost, llen, "%s", sfx + 1);
		}
	}
out:
	if (!nl && !d->plan_none[0]) /* only {thread} or {station} NAMEs, nothing seen */
		snprintf(d->plan_none, sizeof(d->plan_none), "%s", in->label);
	for (unsigned l = 0; l < in->n; l++) {
		struct rd_stream *s = &d->st[in->first + l];
		s->used = l < nl;
		snprintf(s->sfx, sizeof(s->sfx), "%s", l < nl ? names[l] : "");
	}
	return nlost;
}

int rd_ds_plan(struct rd *d, bool maps, uint64_t seg, char *why, size_t len)
{
	if (!d->plan_ns || d->plan_ns != d->t_stmt_ns) {
		unsigned lost = 0, lanes = d->nsplit ? d->nsplit : 1;
		d->plan_rc = 0;
		d->plan_why[0] = 0;
		d->plan_none[0] = 0;
		for (unsigned i = 0; i < d->nin; i++) {
			char name[80] = "";
			unsigned n = rd_plan_input(d, i, &d->plan[i], name, sizeof(name));
			if (n && !lost)
				snprintf(d->plan_why, sizeof(d->plan_why),
					 "datastreams, %u recording%s past the %u lane%s reserved (--lanes), from '%s'",
					 n, n == 1 ? "" : "s", lanes, lanes == 1 ? "" : "s", name);
			lost += n;
		}
		d->plan_rc = lost ? -1 : 0;
		d->plan_ns = d->t_stmt_ns;
	}
	if (maps)
		for (unsigned i = 0; i < d->nin; i++) {
			struct rr_split *sp = &d->in[i].split;
			memcpy(seg == UINT64_MAX ? &sp->first : &sp->maps[seg % RR_SEGQ], &d->plan[i],
			       sizeof(d->plan[i]));
		}
	if (why)
		snprintf(why, len, "%s", d->plan_why);
	return d->plan_rc;
}
