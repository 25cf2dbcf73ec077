/* SPDX-License-Identifier: MIT */
/*
 * recfsd's VSI-S: datastream = add | remove | clear | reset and
 * datastream?, jive5ab's (mk5command/datastream.cc, mk6info.cc).  What the
 * datastreams mean for a scan, their matching and the lanes, is ds.c.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

#define RD_DS_LIST_MAX 960 /* datastream?'s fields, bytes */

/* datastream? [NAME] : jive5ab's: how many, then their names; with NAME
 * its match specifications as given. */
int rd_datastream_q(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
{
	if (np > 0 && p[0][0]) {
		for (unsigned k = 0; k < d->nds; k++)
			if (!strcmp(d->ds[k].name, p[0])) {
				rd_field(o, "%s", d->ds[k].name);
				for (unsigned j = 0; j < d->ds[k].nm; j++)
					rd_field(o, "%s", d->ds[k].m[j].text);
				return VS_OK;
			}
		rd_field(o, "The stream '%.32s' is not defined", p[0]);
		return VS_PARAM;
	}
	/* the names while the reply fits the FS's 1022 bytes (32 names of 32
	 * bytes would not): the rest counted in a last field */
	rd_field(o, "%u", d->nds);
	for (unsigned k = 0; k < d->nds; k++) {
		if (o->used + strlen(d->ds[k].name) + 3 > RD_DS_LIST_MAX) {
			rd_field(o, "and %u more", d->nds - k);
			break;
		}
		rd_field(o, "%s", d->ds[k].name);
	}
	return VS_OK;
}

/* a thread number 0-1023, digits only */
static int rd_thread_num(const char *s, const char *e, unsigned *v)
{
	if (e == s || e - s > 4)
		return -1;
	*v = 0;
	for (const char *c = s; c < e; c++) {
		if (*c < '0' || *c > '9')
			return -1;
		*v = *v * 10 + (unsigned)(*c - '0');
	}
	return *v < RR_VDIF_MAX_THREADS ? 0 : -1;
}

/* [STATION.]THREADS, jive5ab's (mk6info.cc, compile_criteria): STATION *,
 * one or two letters, or 0x and 1 to 4 hex digits (recfsd also takes an
 * empty one, '.3'); THREADS * or a comma-separated list of N and N-M.  0,
 * or -1 with the reason in o (rc in *rc). */
static int rd_parse_match(const char *txt, struct rd_match *m, struct rd_out *o, int *rc)
{
	memset(m, 0, sizeof(*m));
	*rc = VS_FAILED;
	if (strlen(txt) >= sizeof(m->text)) {
		rd_field(o, "The vdif criterion '%.32s...' is too long", txt);
		return -1;
	}
	snprintf(m->text, sizeof(m->text), "%s", txt);
	if (strchr(txt, '/') || strchr(txt, '@')) {
		rd_field(o, "'%s', matching on the sender's address or port is not implemented (one --input per sender)", txt);
		*rc = VS_NOT_IMPL;
		return -1;
	}
	const char *dot = strchr(txt, '.'), *th = dot ? dot + 1 : txt;
	if (dot) {
		size_t n = (size_t)(dot - txt);
		m->kind = RD_STN_ANY;
		if (n == 0 || (n == 1 && txt[0] == '*'))
			;
		else if ((n == 1 || n == 2) && isalpha((unsigned char)txt[0]) && (n == 1 || isalpha((unsigned char)txt[1]))) {
			m->kind = n == 1 ? RD_STN_CHAR : RD_STN_ID;
			m->station = (uint16_t)((unsigned char)txt[0] << 8 | (n == 2 ? (unsigned char)txt[1] : 0));
		} else if (n >= 3 && n <= 6 && txt[0] == '0' && txt[1] == 'x') {
			unsigned v = 0;
			for (size_t k = 2; k < n; k++) {
				if (!isxdigit((unsigned char)txt[k]))
					goto bad;
				v = v * 16 + (unsigned)(isdigit((unsigned char)txt[k]) ? txt[k] - '0' : (tolower((unsigned char)txt[k]) - 'a' + 10));
			}
			m->kind = RD_STN_ID;
			m->station = (uint16_t)v;
		} else {
			goto bad;
		}
	}
	if (!strcmp(th, "*")) {
		memset(m->threads, 0xff, sizeof(m->threads));
		return 0;
	}
	for (const char *c = th;;) {
		const char *e = strchr(c, ','), *end = e ? e : c + strlen(c), *dash = memchr(c, '-', (size_t)(end - c));
		unsigned lo, hi;
		if (rd_thread_num(c, dash ? dash : end, &lo) || (dash && rd_thread_num(dash + 1, end, &hi)))
			goto bad;
		if (!dash)
			hi = lo;
		if (hi < lo)
			goto bad;
		for (unsigned t = lo; t <= hi; t++)
			m->threads[t / 64] |= 1ull << (t % 64);
		if (!e)
			break;
		c = e + 1;
	}
	return 0;
bad:
	rd_field(o, "The vdif criterion '%s' does not match [STATION.]THREADS (STATION *, 1 or 2 letters or 0xHHHH; THREADS * or N[-M],... of 0-1023)",
		 txt);
	return -1;
}

/* A datastream NAME: 1 to 32 bytes a recording name may hold, and no
 * braces but those of {thread} and {station}. */
static int rd_ds_name_ok(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n > RD_DS_NAME)
		return -1;
	for (const char *c = name; *c;) {
		if (!strncmp(c, "{thread}", 8)) {
			c += 8;
			continue;
		}
		if (!strncmp(c, "{station}", 9)) {
			c += 9;
			continue;
		}
		if ((unsigned char)*c <= 0x20 || (unsigned char)*c >= 0x7f || *c == '/' || *c == '{' || *c == '}')
			return -1;
		c++;
	}
	return 0;
}

/* datastream = add : NAME : MATCH [: MATCH ...] | remove : NAME | clear |
 * reset.  Between scans only (jive5ab's 6 while recording).  An add the
 * reserved lanes cannot hold is refused. */
int rd_datastream(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
{
	rd_refresh(d);
	if (d->recording) {
		rd_field(o, "not whilst recording scan '%s'", d->cur.name);
		return VS_CONFLICT;
	}
	if (np == 0 || !p[0][0]) {
		rd_field(o, "subcommand (add, remove, clear, reset) is required");
		return VS_PARAM;
	}
	const char *sub = p[0];
	if (!strcmp(sub, "clear")) {
		d->nds = 0;
		d->plan_ns = 0;
		return VS_OK;
	}
	if (!strcmp(sub, "reset")) /* jive5ab: forget the expanded names; recfsd lays them out at every record=on */
		return VS_OK;
	if (strcmp(sub, "add") && strcmp(sub, "remove")) {
		rd_field(o, "%.32s does not apply to datastream", sub);
		return VS_NOT_IMPL;
	}
	if (np < 2 || !p[1][0]) {
		rd_field(o, "Missing data stream name");
		return VS_PARAM;
	}
	const char *name = p[1];
	unsigned k;
	for (k = 0; k < d->nds && strcmp(d->ds[k].name, name); k++)
		;
	if (!strcmp(sub, "remove")) {
		if (k == d->nds) {
			rd_field(o, "The data stream '%.32s' was not defined so cannot remove it", name);
			return VS_FAILED;
		}
		memmove(&d->ds[k], &d->ds[k + 1], (d->nds - k - 1) * sizeof(d->ds[0]));
		d->nds--;
		d->plan_ns = 0;
		return VS_OK;
	}
	if (!d->nsplit) {
		rd_field(o, "recfsd was started without lanes for datastreams (--format vdif --lanes N)");
		return VS_FAILED;
	}
	if (rd_ds_name_ok(name)) {
		rd_field(o, "'%.40s' is not a datastream name: 1 to %u printable bytes, no '/', '{' or '}' but in {thread} and {station}",
			 name, RD_DS_NAME);
		return VS_PARAM;
	}
	if (k < d->nds) {
		rd_field(o, "The data stream '%s' already has a definition", name);
		return VS_FAILED;
	}
	if (d->nds == RD_MAX_DS) {
		rd_field(o, "at most %u datastreams", RD_MAX_DS);
		return VS_FAILED;
	}
	static struct rd_ds nw; /* under d->lock; large */
	memset(&nw, 0, sizeof(nw));
	snprintf(nw.name, sizeof(nw.name), "%s", name);
	for (unsigned j = 2; j < np; j++) {
		int rc;
		if (!p[j][0])
			continue; /* jive5ab leaves empty ones out */
		if (nw.nm == RD_DS_MATCH) {
			rd_field(o, "at most %u match specifications", RD_DS_MATCH);
			return VS_FAILED;
		}
		if (rd_parse_match(p[j], &nw.m[nw.nm++], o, &rc))
			return rc;
	}
	if (!nw.nm) {
		rd_field(o, "Missing data stream match specification(s)");
		return VS_PARAM;
	}
	/* in jive5ab's order; the lanes must hold what is known to arrive */
	struct rd_ds *save = malloc(sizeof(d->ds));
	if (!save) {
		rd_field(o, "out of memory");
		return VS_FAILED;
	}
	memcpy(save, d->ds, sizeof(d->ds));
	unsigned at;
	for (at = 0; at < d->nds && strcmp(d->ds[at].name, name) < 0; at++)
		;
	memmove(&d->ds[at + 1], &d->ds[at], (d->nds - at) * sizeof(d->ds[0]));
	d->ds[at] = nw;
	d->nds++;
	d->plan_ns = 0;
	char why[sizeof(d->plan_why)];
	if (rd_ds_plan(d, false, 0, why, sizeof(why))) {
		memcpy(d->ds, save, sizeof(d->ds));
		d->nds--;
		d->plan_ns = 0;
		free(save);
		rd_field(o, "%s", why);
		return VS_FAILED;
	}
	free(save);
	return VS_OK;
}
