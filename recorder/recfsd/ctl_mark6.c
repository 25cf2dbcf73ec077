/* SPDX-License-Identifier: MIT */
/*
 * recfsd's VSI-S: Mark6 cplane's own keywords (input_stream, group,
 * scan_info) and dialect?.  Their replies have cplane's layout in either
 * dialect (jive5ab has none of them): cplane's own return code (0) after
 * the VSI-S one, then the fields its Response.py lists.  What maps onto
 * recfsd is answered from its inputs, its pack and its scans; what does
 * not is refused with the reason (recfsd.8's table).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ctl.h"

/* recfsd's one group: its pack, always mounted and open */
#define RD_GROUP "1"

/* An input's spec, udp:[ADDR:]PORT, as its address and port */
static void rd_input_addr(const struct rd_input *in, char *addr, size_t alen, char *port, size_t plen)
{
	const char *s = in->spec + 4, *c = strrchr(s, ':');
	if (!c || (c > s && c[-1] == ':')) { /* PORT alone */
		snprintf(addr, alen, "0.0.0.0");
		snprintf(port, plen, "%s", c ? c + 1 : s);
		return;
	}
	snprintf(port, plen, "%s", c + 1);
	if (*s == '[' && c > s + 1 && c[-1] == ']')
		snprintf(addr, alen, "%.*s", (int)(c - s - 2), s + 1);
	else
		snprintf(addr, alen, "%.*s", (int)(c - s), s);
}

/* The interface that holds addr ("any" for the wildcard, "-" unknown) */
static void rd_input_iface(const char *addr, char *out, size_t len)
{
	struct in_addr a4;
	struct in6_addr a6;
	bool v4 = inet_pton(AF_INET, addr, &a4) == 1, v6 = !v4 && inet_pton(AF_INET6, addr, &a6) == 1;
	snprintf(out, len, "-");
	if ((v4 && a4.s_addr == htonl(INADDR_ANY)) || (v6 && IN6_IS_ADDR_UNSPECIFIED(&a6))) {
		snprintf(out, len, "any");
		return;
	}
	struct ifaddrs *ifs, *i;
	if (getifaddrs(&ifs))
		return;
	for (i = ifs; i; i = i->ifa_next) {
		if (!i->ifa_addr)
			continue;
		if ((v4 && i->ifa_addr->sa_family == AF_INET &&
		     ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr == a4.s_addr) ||
		    (v6 && i->ifa_addr->sa_family == AF_INET6 &&
		     !memcmp(&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr, &a6, sizeof(a6)))) {
			snprintf(out, len, "%s", i->ifa_name);
			break;
		}
	}
	freeifaddrs(ifs);
}

/* input_stream? [LABEL] : cplane's GetInputStream, per input: label :
 * data format : payload size : payload offset : PSN offset : interface :
 * filter address : port : subgroup.  recfsd's: its --input labels; vdif
 * or raw (--format); the frame size mode= gives, else 0 (learned from the
 * stream); the payload after the Ethernet, IP and UDP headers (42) and
 * --strip; the PSN at 42 when --strip 8 (udps), else 0; the interface
 * holding the bound address; the bound address; the port; group 1. */
int rd_input_stream_q(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
{
	if (np > 1) {
		rd_field(o, "input_stream? [LABEL]");
		return VS_PARAM;
	}
	const char *want = np == 1 && p[0][0] ? p[0] : NULL;
	unsigned n = 0;
	rd_field(o, "0");
	for (unsigned i = 0; i < d->nin; i++) {
		const struct rd_input *in = &d->in[i];
		if (want && strcmp(want, in->label))
			continue;
		char addr[128], port[16], ifn[64];
		unsigned strip = rr_strip(d->st[in->first].r);
		rd_input_addr(in, addr, sizeof(addr), port, sizeof(port));
		rd_input_iface(addr, ifn, sizeof(ifn));
		rd_field(o, "%s", in->label);
		rd_field(o, "%s", d->fmt_vdif ? "vdif" : "raw");
		rd_field(o, "%u", d->mode[0] ? d->mode_frame : 0);
		rd_field(o, "%u", 42 + strip);
		rd_field(o, "%u", strip == 8 ? 42 : 0);
		rd_field(o, "%s", ifn);
		rd_field(o, "%s", addr);
		rd_field(o, "%s", port);
		rd_field(o, RD_GROUP);
		n++;
	}
	if (want && !n) {
		o->used = 0;
		o->n = 0;
		o->buf[0] = 0;
		rd_field(o, "no input '%.32s' (inputs are recfsd's --input labels)", want);
		return VS_PARAM;
	}
	return VS_OK;
}

/* input_stream = add : LABEL : FORMAT : [PAYLOAD SIZE] : [PAYLOAD OFFSET] :
 * [PSN OFFSET] : [INTERFACE] : [FILTER ADDRESS] : [PORT] : [SUBGROUP] |
 * dismount : LABEL | delete : LABEL | commit.  recfsd binds its inputs
 * when it starts: add of an input it has (its label, format and, when
 * given, port) and commit are done (0); anything else changes the inputs,
 * refused (6) naming the option that does it. */
int rd_input_stream(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
{
	if (np < 1 || !p[0][0]) {
		rd_field(o, "input_stream = add : LABEL : FORMAT : ... | dismount : LABEL | delete : LABEL | commit");
		return VS_PARAM;
	}
	if (!strcasecmp(p[0], "commit")) {
		rd_field(o, "0");
		return VS_OK;
	}
	bool add = !strcasecmp(p[0], "add");
	if (!add && strcasecmp(p[0], "dismount") && strcasecmp(p[0], "delete")) {
		rd_field(o, "input_stream: '%.16s' is not add, dismount, delete or commit", p[0]);
		return VS_PARAM;
	}
	if (np < 2 || !p[1][0] || np > 10 || (add && np < 3)) {
		rd_field(o, add ? "input_stream = add : LABEL : FORMAT : [PAYLOAD SIZE] : [PAYLOAD OFFSET] : "
				  "[PSN OFFSET] : [INTERFACE] : [FILTER ADDRESS] : [PORT] : [SUBGROUP]"
				: "input_stream = %s : LABEL", p[0]);
		return VS_PARAM;
	}
	if (!add) {
		rd_field(o, "recfsd's inputs are bound while it runs; restart it without --input %.32s=...", p[1]);
		return VS_CONFLICT;
	}
	for (unsigned i = 0; i < d->nin; i++) {
		const struct rd_input *in = &d->in[i];
		if (strcmp(in->label, p[1]))
			continue;
		char addr[128], port[16];
		rd_input_addr(in, addr, sizeof(addr), port, sizeof(port));
		bool fmt = !strcasecmp(p[2], d->fmt_vdif ? "vdif" : "raw");
		if (fmt && (np < 9 || !p[8][0] || !strcmp(p[8], port))) {
			rd_field(o, "0"); /* already there */
			return VS_OK;
		}
		rd_field(o, "input %s is %s on port %s; recfsd binds its inputs when it starts (--input, --format)",
			 in->label, d->fmt_vdif ? "vdif" : "raw", port);
		return VS_CONFLICT;
	}
	rd_field(o, "no input '%.32s': recfsd binds its inputs when it starts (--input %.32s=udp:[ADDR:]PORT)", p[1],
		 p[1]);
	return VS_CONFLICT;
}

/* group? : cplane's GetGroupCmd: the open group.  recfsd's is its pack. */
int rd_group_q(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
{
	rd_field(o, "0");
	rd_field(o, RD_GROUP);
	return VS_OK;
}

/* group = ACTION : [GROUP] : cplane's new, mount, open, close, unmount,
 * protect, unprotect.  The pack is opened with recfsd and is its one
 * group: mount and open of it are done; close and unmount would take it
 * from recfsd (6); new is mkfs.recfs's, protect and unprotect have no
 * recfs meaning (2). */
int rd_group(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
{
	if (np < 1 || np > 2 || !p[0][0]) {
		rd_field(o, "group = new|mount|open|close|unmount|protect|unprotect : [GROUP]");
		return VS_PARAM;
	}
	const char *g = np == 2 ? p[1] : "";
	if (!strcasecmp(p[0], "mount") || !strcasecmp(p[0], "open")) {
		if (g[0] && strcmp(g, RD_GROUP)) {
			rd_field(o, "no group '%.16s': recfsd's one group is its pack, " RD_GROUP, g);
			return VS_PARAM;
		}
		rd_field(o, "0");
		rd_field(o, RD_GROUP);
		return VS_OK;
	}
	if (!strcasecmp(p[0], "close") || !strcasecmp(p[0], "unmount")) {
		rd_field(o, "the pack is recfsd's while it runs; stop recfsd to %s it", p[0]);
		return VS_CONFLICT;
	}
	if (!strcasecmp(p[0], "new")) {
		rd_field(o, "a pack is made with mkfs.recfs, not over VSI-S");
		return VS_NOT_IMPL;
	}
	if (!strcasecmp(p[0], "protect") || !strcasecmp(p[0], "unprotect")) {
		rd_field(o, "recfs never writes over a recording; delete= removes one");
		return VS_NOT_IMPL;
	}
	rd_field(o, "group: '%.16s' is not new, mount, open, close, unmount, protect or unprotect", p[0]);
	return VS_PARAM;
}

/* scan_info? [SCAN# | NAME] : cplane's GetScanInfo: group : scan number :
 * scan name : status : start : duration : data streams : performance
 * code.  The last scan, or one of the last RR_SEGQ.  Status recording,
 * pending, flushing, complete or halted (as record?); once its VDIF
 * recordings are sealed, start and duration from the data as scan_check?
 * reads them (the earliest first frame's time tag to the latest end),
 * before that by the host clock of their first and last writes (the
 * pack's directory; to now while recording); data streams its
 * recordings on the pack; performance 0, or 1 when they lost data (loss
 * map, dropped datagrams, bytes the time tags miss). */
int rd_scan_info_q(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
{
	if (np > 1) {
		rd_field(o, "scan_info? [SCAN# or NAME]");
		return VS_PARAM;
	}
	rd_refresh(d);
	const struct rd_scan *sc = d->cur.no ? &d->cur : NULL;
	if (np == 1 && p[0][0]) {
		sc = NULL;
		for (unsigned k = 0; k < RR_SEGQ && !sc; k++) {
			char no[24];
			snprintf(no, sizeof(no), "%" PRIu64, d->hist[k].no);
			if (d->hist[k].no && (!strcmp(no, p[0]) || !strcmp(d->hist[k].name, p[0])))
				sc = &d->hist[k];
		}
		if (sc && sc->no == d->cur.no)
			sc = &d->cur;
		if (!sc) {
			rd_field(o, "no scan '%.64s' among the last %u recorded", p[0], RR_SEGQ);
			return VS_PARAM;
		}
	}
	if (!sc) {
		rd_field(o, "no scan recorded yet");
		return VS_FAILED;
	}
	bool cur = sc == &d->cur, on = cur && d->recording, data = true;
	uint64_t t0 = 0, t1 = 0, lost = 0;
	double f0 = 0, f1 = 0; /* by the VDIF time tags */
	unsigned n = 0;
	for (unsigned k = 0; k < d->nst; k++) {
		/* the scan's own recording names (the datastreams may have
		 * changed the suffixes since) */
		struct rr_seg_result res;
		struct recfs_rec rec;
		rr_seg_result(d->st[k].r, sc->seg, &res);
		pthread_mutex_lock(&d->pack_lock);
		int err = res.name[0] ? recfs_rec_lookup(d->p, res.name, &rec) : -ENOENT;
		pthread_mutex_unlock(&d->pack_lock);
		if (err || !rec.start_ns)
			continue;
		n++;
		if (!t0 || rec.start_ns < t0)
			t0 = rec.start_ns;
		if (rec.end_ns > t1)
			t1 = rec.end_ns;
		lost += rec.loss.frames_lost + rec.loss.dropped + rec.loss.gap_count;
		double first, secs;
		uint64_t missing;
		if (rec.state != RECFS_STATE_SEALED || !rd_check_span(d, &rec, &first, &secs, &missing)) {
			data = false;
			continue;
		}
		lost += missing;
		if (!f0 || first < f0)
			f0 = first;
		if (first + secs > f1)
			f1 = first + secs;
	}
	data = data && n && f0 > 0;
	const char *st = "complete";
	if (on)
		st = d->start_at_ns && !n ? "pending" : "recording";
	else if (cur && d->halted[0])
		st = "halted";
	else if (!rd_scan_done(d, sc))
		st = "flushing";
	if (on || t1 < t0)
		t1 = rd_now_ns();
	char t[48] = "-";
	if (data)
		rd_vsi_time((uint64_t)(f0 * 1e9 + 0.5), t, sizeof(t));
	else if (t0)
		rd_vsi_time(t0, t, sizeof(t));
	rd_field(o, "0");
	rd_field(o, RD_GROUP);
	rd_field(o, "%" PRIu64, sc->no);
	rd_field(o, "%s", sc->name);
	rd_field(o, "%s", st);
	rd_field(o, "%s", t);
	rd_field(o, "%.3f", data ? f1 - f0 : t0 ? (double)(t1 - t0) * 1e-9 : 0.0);
	rd_field(o, "%u", n);
	rd_field(o, "%d", lost ? 1 : 0);
	return VS_OK;
}

/* dialect? : a recfs extension: which dialect record?, status? and rtime?
 * answer in (--dialect) */
int rd_dialect_q(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
{
	rd_field(o, "%s", d->dialect == RD_DIALECT_MARK6 ? "mark6" : "jive5ab");
	return VS_OK;
}
