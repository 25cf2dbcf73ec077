/* SPDX-License-Identifier: MIT */
/*
 * recfsd's VSI-S: the state and configuration queries and commands
 * (status?, error?, dir_info?, mode, net_protocol, net_port, mtu,
 * identity) and delete=.
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

int rd_dir_info(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
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

/* status? : jive5ab's (status.cc): the status word, then the oldest
 * error error? has not read: its number, message and time.  Bits: 0x1
 * ready, 0x2 an error pending, 0x8 and 0x10 a delayed-completion command
 * pending (jive5ab: any transfer; here recording or disk2file), 0x40
 * recording, 0x100 and 0x1000 disk2file, 0x80 pack full (Mark5's media
 * full).  A condition (a member failed, an input stopped, a scan recording
 * nothing) is an error posted once when it arose (rd_watch): read by
 * error?, it is not flagged again while it stays. */
int rd_status(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
{
	int rc;
	unsigned st = RD_ST_READY;
	rd_watch(d);
	const char *no = rd_refuse(d, &rc);
	const struct rd_err *e = rd_error_peek(d);
	if (d->recording)
		st |= RD_ST_RECORD;
	if (atomic_load(&d->d2f.active))
		st |= RD_ST_PLAY | RD_ST_D2F;
	if (no && !strncmp(no, "pack full", 9))
		st |= RD_ST_FULL;
	if (e)
		st |= RD_ST_ERROR;
	if (d->dialect == RD_DIALECT_MARK6) {
		/* Mark6 cplane (Response.py, Status): its own return code and
		 * the status word alone; the error is error?'s to tell */
		rd_field(o, "0");
		rd_field(o, "0x%08x", st);
		return VS_OK;
	}
	if (st & (RD_ST_RECORD | RD_ST_PLAY))
		st |= RD_ST_DELAYED;
	rd_field(o, "0x%08x", st);
	if (e) {
		char t[48];
		rd_vsi_time(e->ns, t, sizeof(t));
		rd_field(o, "%d", e->no);
		rd_field(o, "%s", e->msg);
		rd_field(o, "%s", t);
	}
	return VS_OK;
}

/* error? : jive5ab's (error.cc): number : message : time : last time :
 * count (the last two when it happened more than once), and the error is
 * read: status? flags the next one, or none.  Nothing pending: five empty
 * fields. */
int rd_error_q(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
{
	struct rd_err e;
	rd_watch(d);
	if (!rd_error_pop(d, &e)) {
		for (unsigned k = 0; k < 5; k++)
			rd_field(o, "%s", "");
		return VS_OK;
	}
	char t[48];
	rd_vsi_time(e.ns, t, sizeof(t));
	rd_field(o, "%d", e.no);
	rd_field(o, "%s", e.msg);
	rd_field(o, "%s", t);
	if (e.count > 1) {
		rd_vsi_time(e.last_ns, t, sizeof(t));
		rd_field(o, "%s", t);
		rd_field(o, "%u", e.count);
	} else {
		rd_field(o, "%s", "");
		rd_field(o, "%s", "");
	}
	return VS_OK;
}

/* mode = VDIF_<payload>-<Mbps>-<channels>-<bits> | mark5b-<Mbps>-<channels>-<bits>
 * | raw | none: what applies to recfs is the data type (vdif checks frames
 * and keeps a loss map; a Mark5B stream is recorded as bytes, --format
 * raw).  mode? : jive5ab's magic-mode layout (mk5bdom_mode.cc), as the
 * FS's fb_mode reads it (nvi-inc/fs clib/mk5b_mode_util.c): mode : data
 * type : tracks : track rate (bit/s) [: frame size, VDIF only]; before a
 * mode, the data type alone. */
int rd_mode_q(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
{
	if (!d->mode[0]) {
		rd_field(o, "%s", d->fmt_vdif ? "vdif" : "raw");
		return VS_OK;
	}
	bool m5b = !d->fmt_vdif;
	rd_field(o, "%s", d->mode);
	rd_field(o, "%s", m5b ? "Mark5B" : "VDIF");
	rd_field(o, "%u", d->mode_tracks);
	/* in bit/s, as jive5ab (its trackbitrate, "%.3lf"): the FS logs it
	 * over 1e6 (mk5b_mode_util.c, mk5b_mode_2_m5 "%.6lf") */
	rd_field(o, "%.3f", d->mode_tracks ? (double)d->mode_mbps * 1e6 / d->mode_tracks : 0.0);
	if (!m5b)
		rd_field(o, "%u", d->mode_frame);
	return VS_OK;
}

/* PREFIX[<payload>-]<Mbps>-<channels>-<bits> (VDIF_ with a payload, a
 * multiple of 8; mark5b- without, at most 64 tracks), every number
 * strict: 0, or -1 */
static int rd_mode_magic(const char *m, bool vdif, uint64_t v[4])
{
	static const uint64_t hi[4] = { 65536 - 32, 1000000, 1024, 32 };
	static const char *const what[4] = { "payload", "Mbit/s", "channels", "bits" };
	char buf[64];
	size_t pl = vdif ? 5 : 7;
	if (strlen(m) >= sizeof(buf) || strncasecmp(m, vdif ? "VDIF_" : "mark5b-", pl))
		return -1;
	snprintf(buf, sizeof(buf), "%s", m + pl);
	/* strsep, not strtok: an empty field ("512--16") is refused, not
	 * skipped */
	char *rest = buf;
	for (unsigned k = vdif ? 0 : 1; k < 4; k++) {
		char *t = strsep(&rest, "-");
		if (!t || recfs_parse_num(what[k], t, 1, hi[k], &v[k]))
			return -1;
	}
	if (rest)
		return -1;
	return vdif ? (v[0] % 8 ? -1 : 0) : (v[2] * v[3] > 64 ? -1 : 0);
}

int rd_mode(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
{
	if (np < 1) {
		rd_field(o, "mode = VDIF_..., mark5b-..., raw or none");
		return VS_PARAM;
	}
	bool vdif, m5b = !strncasecmp(p[0], "mark5b-", 7);
	uint64_t v[4] = { 0 };
	if (!strncasecmp(p[0], "vdif", 4))
		vdif = true;
	else if (m5b || !strcasecmp(p[0], "raw") || !strcasecmp(p[0], "none"))
		vdif = false;
	else {
		rd_field(o, "mode '%.32s': recfsd takes VDIF_<payload>-<Mbit/s>-<channels>-<bits>, "
			    "mark5b-<Mbit/s>-<channels>-<bits>, raw or none", p[0]);
		return VS_PARAM;
	}
	if (vdif && strcasecmp(p[0], "vdif") && rd_mode_magic(p[0], true, v)) {
		rd_field(o, "mode '%.32s': want VDIF_<payload bytes>-<Mbit/s>-<channels>-<bits>", p[0]);
		return VS_PARAM;
	}
	if (m5b && rd_mode_magic(p[0], false, v)) {
		rd_field(o, "mode '%.32s': want mark5b-<Mbit/s>-<channels>-<bits>, at most 64 tracks", p[0]);
		return VS_PARAM;
	}
	if (vdif != d->fmt_vdif) {
		rd_field(o, "recfsd was started with --format %s, %s needs --format %s (restart recfsd with it)",
			 d->fmt_vdif ? "vdif" : "raw", m5b ? "a Mark5B stream" : vdif ? "VDIF" : "raw",
			 vdif ? "vdif" : "raw");
		return VS_CONFLICT;
	}
	d->mode[0] = 0;
	if (v[1]) {
		snprintf(d->mode, sizeof(d->mode), "%s", p[0]);
		/* a Mark5B frame: 16 bytes of header, 10000 of data */
		d->mode_payload = m5b ? 10000 : (uint32_t)v[0];
		d->mode_frame = m5b ? 10016 : (uint32_t)v[0] + 32;
		d->mode_mbps = (uint32_t)v[1];
		d->mode_tracks = (uint32_t)(v[2] * v[3]);
	}
	return VS_OK;
}

/* What the kernel gave input i's socket for data (it reports twice what
 * it keeps): 0 when it cannot be read. */
static uint64_t rd_np_have(struct rd *d, unsigned i)
{
	const struct rd_input *in = &d->in[i];
	int fd = d->nsplit ? in->split.fd : rr_input_fd(d->st[in->first].r), have = 0;
	socklen_t hl = sizeof(have);
	if (fd < 0 || getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &have, &hl) || have < 0)
		return 0;
	return (uint64_t)have / 2;
}

static void rd_np_set(struct rd *d, unsigned i, int ask)
{
	const struct rd_input *in = &d->in[i];
	int fd = d->nsplit ? in->split.fd : rr_input_fd(d->st[in->first].r);
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &ask, sizeof(ask)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &ask, sizeof(ask));
}

/* the socket buffer the inputs have: the least the kernel gave one */
static uint64_t rd_np_least(struct rd *d)
{
	uint64_t least = UINT64_MAX;
	for (unsigned i = 0; i < d->nin; i++) {
		uint64_t h = rd_np_have(d, i);
		least = h < least ? h : least;
	}
	return least == UINT64_MAX ? 0 : least;
}

#define RD_NP_BLOCK (128u * 1024) /* jive5ab's defaults (netparms.h) */
#define RD_NP_NBLOCK 8u

/* net_protocol? : jive5ab's PROTOCOL : SOCBUF : BLOCKSIZE : NBLOCK.  The
 * protocol as set (jive5ab's names: udp is udps, pudp plain UDP), else
 * what the inputs were started with; the socket buffer the kernel gave
 * (the least over the inputs), not what was asked; the ring's BLOCKSIZE
 * and NBLOCK as set (recfsd's ring is sized at start). */
int rd_net_protocol_q(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
{
	rd_field(o, "%s", d->np_proto[0] ? d->np_proto : rr_strip(d->st[0].r) == 8 ? "udps" : "pudp");
	rd_field(o, "%" PRIu64, rd_np_least(d));
	rd_field(o, "%u", d->np_block ? d->np_block : RD_NP_BLOCK);
	rd_field(o, "%u", d->np_nblock ? d->np_nblock : RD_NP_NBLOCK);
	return 0;
}

/* net_protocol = [PROTOCOL] [: SOCBUF [: BLOCKSIZE [: NBLOCK]]] as jive5ab
 * takes it (net_protocol.cc): an empty field keeps its value; a protocol
 * not recognized or a number not a number, 6; a number out of range, 8.
 * The protocol must match how the inputs were started (jive5ab's udp,
 * udps and udpsnor carry the 8-byte sequence number: --strip 8; pudp is
 * plain UDP: --strip 0), else 6.  A SOCBUF larger than the sockets have
 * is asked of the kernel for every input at once; what it gave is read
 * back, and when one input got less every input is put back and the
 * answer is 8 naming it.  Nothing changes on any refusal. */
int rd_net_protocol(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
{
	static const char *const known[] = { "udp", "pudp", "udps", "udpsnor", "udt",
					     "vtp", "tcp", "rtcp", "itcp", "unix" };
	if (np < 1) {
		rd_field(o, "net_protocol = PROTOCOL [: SOCBUF [: BLOCKSIZE [: NBLOCK]]]");
		return VS_PARAM;
	}
	if (np > 4) {
		rd_field(o, "net_protocol = PROTOCOL [: SOCBUF [: BLOCKSIZE [: NBLOCK]]]: %u fields", np);
		return VS_PARAM;
	}
	const char *proto = NULL;
	if (p[0][0]) {
		unsigned k = 0;
		while (k < sizeof(known) / sizeof(known[0]) && strcasecmp(p[0], known[k]))
			k++;
		if (k == sizeof(known) / sizeof(known[0])) {
			rd_field(o, "the protocol %.32s is not recognized as a valid protocol", p[0]);
			return VS_CONFLICT;
		}
		if (k > 3) {
			rd_field(o, "recfsd receives UDP: udp, udps or udpsnor (--strip 8), pudp (--strip 0), not %s",
				 known[k]);
			return VS_CONFLICT;
		}
		proto = k == 0 ? "udps" : known[k];
		unsigned want = k == 1 ? 0 : 8;
		if (rr_strip(d->st[0].r) != want) {
			rd_field(o, "inputs are bound with --strip %u, %s needs --strip %u (restart recfsd with it)",
				 rr_strip(d->st[0].r), known[k], want);
			return VS_CONFLICT;
		}
	}
	static const char *const what[] = { "", "socket buffer", "block size", "number of blocks" };
	static const uint64_t hi[] = { 0, INT_MAX, 1u << 30, UINT32_MAX };
	uint64_t v[4] = { 0 };
	bool given[4] = { false };
	for (unsigned k = 1; k < np; k++) {
		if (!p[k][0])
			continue;
		int e = rd_num_ku(p[k], k < 3, hi[k], &v[k]);
		if (!e && k == 3 && !v[k])
			e = -2;
		if (e == -1) {
			rd_field(o, "invalid %s '%.32s' (a number, optionally k or M)", what[k], p[k]);
			return VS_CONFLICT;
		}
		if (e) {
			rd_field(o, "%s '%.32s' out of range (%s to %" PRIu64 ")", what[k], p[k], k == 3 ? "1" : "0",
				 hi[k]);
			return VS_PARAM;
		}
		given[k] = true;
	}
	/* a larger socket buffer than the inputs have (the FS asks 128 MB
	 * above 4 Gbit/s): grown on every input now, as far as the kernel
	 * allows; the kernel's own figure decides */
	if (given[1] && v[1] > rd_np_least(d)) {
		uint64_t old[RD_MAX_INPUTS];
		for (unsigned i = 0; i < d->nin; i++)
			old[i] = rd_np_have(d, i);
		for (unsigned i = 0; i < d->nin; i++) {
			if (old[i] >= v[1])
				continue;
			rd_np_set(d, i, (int)v[1]);
			uint64_t have = rd_np_have(d, i);
			if (have < v[1]) {
				for (unsigned k = 0; k <= i; k++)
					if (old[k] < v[1])
						rd_np_set(d, k, (int)old[k]);
				rd_field(o, "the kernel gives input %s a socket buffer of %" PRIu64
					    " bytes, not %" PRIu64 " (raise net.core.rmem_max, or give recfsd CAP_NET_ADMIN)",
					 d->in[i].label, have, v[1]);
				return VS_PARAM;
			}
		}
		uint64_t least = rd_np_least(d);
		for (unsigned k = 0; k < d->nst; k++)
			rr_set_rcvbuf(d->st[k].r, least);
	}
	if (proto)
		snprintf(d->np_proto, sizeof(d->np_proto), "%s", proto);
	if (given[2])
		d->np_block = (uint32_t)(v[2] ? v[2] : RD_NP_BLOCK);
	if (given[3])
		d->np_nblock = (uint32_t)v[3];
	return VS_OK;
}

int rd_net_port_q(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
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

int rd_net_port(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
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

int rd_mtu_q(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
{
	rd_field(o, "%u", d->mtu ? d->mtu : 9000);
	return 0;
}

int rd_mtu(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
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
int rd_delete(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
{
	if (np != 1 || !p[0][0]) {
		rd_field(o, "delete = NAME");
		return VS_PARAM;
	}
	for (unsigned i = 0; i < d->nst; i++) {
		if (rr_seg_pending(d->st[i].r, p[0])) {
			rd_field(o, "'%.64s' is being recorded", p[0]);
			return VS_CONFLICT;
		}
	}
	struct recfs_rec rec;
	pthread_mutex_lock(&d->pack_lock);
	int err = recfs_rec_lookup(d->p, p[0], &rec);
	/* disk2file's copy reads its extent: not freed under it */
	bool copying = !err && atomic_load(&d->d2f.active) && d->d2f.rec.uid == rec.uid;
	if (!err && !copying)
		err = recfs_rec_delete(d->p, rec.index, 0);
	pthread_mutex_unlock(&d->pack_lock);
	if (copying) {
		rd_field(o, "'%.64s' is being copied by disk2file", p[0]);
		return VS_CONFLICT;
	}
	if (err) {
		rd_field(o, "%s", recfs_errmsg());
		return err == -ENOENT ? VS_PARAM : VS_FAILED;
	}
	return 0;
}

int rd_version_q(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
{
	rd_field(o, "recfsd");
	rd_field(o, "%s", RECFS_VERSION_STRING);
	return VS_OK;
}

/* dts_id? : jive5ab's fields (dtsid.cc) on a FlexBuff: system type
 * (none: "-"), software revision, media (1: disk), serial (the host's
 * short name), DIMs, DOMs, command set revision, I/O board fields. */
int rd_dts_id_q(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
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
int rd_os_rev_q(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
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
