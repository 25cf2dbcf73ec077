/* SPDX-License-Identifier: MIT */
/*
 * recfsd's /metrics: what an operator's dashboard shows, read from the
 * engines' counters at each scrape (prom.c serves it).  Names follow
 * Prometheus' conventions: recfsd_ prefix, base units (bytes, seconds),
 * counters end in _total.  Labels: input (its --input label), stream (the
 * recording suffix, "" for a single stream), member (index), path.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "prom.h"
#include "recfsd.h"

static struct mx_server *rd_mx;

/* per stream: one family, one sample per stream, from a getter */
typedef uint64_t (*rd_get_fn)(const struct rd_stream *st);

static void rd_per_stream(struct rd *d, struct mx_buf *b, const char *name, const char *type,
			  const char *help, rd_get_fn get)
{
	mx_family(b, name, type, help);
	for (unsigned k = 0; k < d->nst; k++) {
		const struct rd_stream *st = &d->st[k];
		const char *sfx = st->suffix[0] == '_' ? st->suffix + 1 : st->suffix;
		mx_sample(b, name, MX_LABELS("input", d->in[st->input].label, "stream", sfx), get(st));
	}
}

#define RD_GETTER(fn, expr)                                                                        \
	static uint64_t fn(const struct rd_stream *st)                                             \
	{                                                                                          \
		struct rr_stats s;                                                                 \
		rr_stats(st->r, &s);                                                               \
		return (expr);                                                                     \
	}
RD_GETTER(get_bytes, s.bytes)
RD_GETTER(get_written, s.written)
RD_GETTER(get_idle, s.idle_packets)
RD_GETTER(get_idle_bytes, s.idle_bytes)
RD_GETTER(get_ring_dropped, s.ring_dropped)
RD_GETTER(get_wrong, s.wrong_size)
RD_GETTER(get_ring_size, s.ring_size)
RD_GETTER(get_ring_max, s.ring_max)
RD_GETTER(get_start_ns, s.start_latency_ns)
RD_GETTER(get_blind_total, s.blind)
RD_GETTER(get_ring_fill, s.ring_fill)

/* an input's totals: its first stream's (lane 0 of a split input) */
static struct rr_stats rd_input_stats(const struct rd *d, unsigned i)
{
	struct rr_stats s;
	rr_stats(d->st[d->in[i].first].r, &s);
	return s;
}

/* frames lost in sealed scans plus the open one's so far */
static uint64_t get_frames_lost(const struct rd_stream *st)
{
	return rr_frames_lost(st->r);
}

static void rd_render(void *ctx, struct mx_buf *b)
{
	struct rd *d = ctx;
	char num[24];

	/* inputs: what the socket gave (all streams of a split input) */
	mx_family(b, "recfsd_input_datagrams_total", "counter", "Datagrams received, in scans or not");
	for (unsigned i = 0; i < d->nin; i++)
		mx_sample(b, "recfsd_input_datagrams_total", MX_LABELS("input", d->in[i].label),
			  rd_input_stats(d, i).packets);
	mx_family(b, "recfsd_input_kernel_dropped_datagrams_total", "counter",
		  "Datagrams the kernel dropped: the socket buffer was full");
	for (unsigned i = 0; i < d->nin; i++)
		mx_sample(b, "recfsd_input_kernel_dropped_datagrams_total", MX_LABELS("input", d->in[i].label),
			  rd_input_stats(d, i).kernel_dropped);
	if (d->nsplit) {
		mx_family(b, "recfsd_input_other_thread_datagrams_total", "counter",
			  "Datagrams no datastream takes (of a VDIF station and thread no lane has), or no VDIF frame");
		for (unsigned i = 0; i < d->nin; i++)
			mx_sample(b, "recfsd_input_other_thread_datagrams_total", MX_LABELS("input", d->in[i].label),
				  rd_input_stats(d, i).other);
	}

	/* streams: what went into recordings */
	rd_per_stream(d, b, "recfsd_recorded_bytes_total", "counter", "Bytes received into scans", get_bytes);
	rd_per_stream(d, b, "recfsd_written_bytes_total", "counter", "Bytes written to the members",
		      get_written);
	rd_per_stream(d, b, "recfsd_idle_datagrams_total", "counter",
		      "Datagrams received between scans, discarded", get_idle);
	rd_per_stream(d, b, "recfsd_idle_bytes_total", "counter", "Bytes received between scans, discarded",
		      get_idle_bytes);
	rd_per_stream(d, b, "recfsd_ring_full_dropped_datagrams_total", "counter",
		      "Datagrams dropped in a scan: the ring was full", get_ring_dropped);
	rd_per_stream(d, b, "recfsd_wrong_size_datagrams_total", "counter",
		      "Datagrams of another size than the scan's, not recorded", get_wrong);
	rd_per_stream(d, b, "recfsd_blind_scans_total", "counter",
		      "Scans that received datagrams and recorded (almost) none: all of the wrong size",
		      get_blind_total);
	if (d->fmt_vdif)
		rd_per_stream(d, b, "recfsd_vdif_frames_lost_total", "counter",
			      "VDIF frames missing from the streams, by their headers", get_frames_lost);
	mx_family(b, "recfsd_scan_start_latency_seconds", "gauge",
		  "The last scan: from record=on's arrival to its first datagram received");
	for (unsigned k = 0; k < d->nst; k++) {
		const struct rd_stream *st = &d->st[k];
		const char *sfx = st->suffix[0] == '_' ? st->suffix + 1 : st->suffix;
		mx_sample(b, "recfsd_scan_start_latency_seconds",
			  MX_LABELS("input", d->in[st->input].label, "stream", sfx), (double)get_start_ns(st) * 1e-9);
	}
	rd_per_stream(d, b, "recfsd_ring_size_bytes", "gauge", "Ring buffer size", get_ring_size);
	rd_per_stream(d, b, "recfsd_ring_fill_bytes", "gauge", "Bytes in the ring not yet written",
		      get_ring_fill);
	rd_per_stream(d, b, "recfsd_ring_fill_max_bytes", "gauge",
		      "Most bytes ever in the ring not yet written", get_ring_max);

	/* members: every stream's writes to member m, summed */
	const struct recfs_geom *g = recfs_pack_geom(d->p);
	static const char *const fam[] = { "recfsd_member_writes_total", "recfsd_member_write_seconds_total",
					   "recfsd_member_write_seconds_max", "recfsd_member_write_errors_total" };
	static const char *const help[] = { "Chunk writes completed", "Time chunk writes took, summed",
					    "Slowest chunk write", "Chunk writes that failed" };
	for (unsigned f = 0; f < 4; f++) {
		mx_family(b, fam[f], f == 2 ? "gauge" : "counter", help[f]);
		for (unsigned m = 0; m < g->members; m++) {
			uint64_t v = 0;
			for (unsigned k = 0; k < d->nst; k++) {
				const struct rr_member_stat *ms = rr_member_stat(d->st[k].r, m);
				uint64_t x = f == 0 ? atomic_load_explicit(&ms->writes, memory_order_relaxed)
					   : f == 1 ? atomic_load_explicit(&ms->sum_ns, memory_order_relaxed)
					   : f == 2 ? atomic_load_explicit(&ms->max_ns, memory_order_relaxed)
						    : atomic_load_explicit(&ms->errors, memory_order_relaxed);
				v = f == 2 ? (x > v ? x : v) : v + x;
			}
			snprintf(num, sizeof(num), "%u", m);
			const char *const *lab = MX_LABELS("member", num, "path", recfs_pack_dev(d->p, m)->path);
			if (f == 1 || f == 2)
				mx_sample(b, fam[f], lab, (double)v * 1e-9);
			else
				mx_sample(b, fam[f], lab, v);
		}
	}

	/* the pack */
	struct recfs_pack_info info;
	pthread_mutex_lock(&d->pack_lock);
	int err = recfs_pack_info(d->p, &info);
	pthread_mutex_unlock(&d->pack_lock);
	if (!err) {
		mx_family(b, "recfsd_pack_capacity_bytes", "gauge", "Data capacity of the pack");
		mx_sample(b, "recfsd_pack_capacity_bytes", NULL, info.capacity);
		mx_family(b, "recfsd_pack_free_bytes", "gauge", "Free bytes on the pack");
		mx_sample(b, "recfsd_pack_free_bytes", NULL, info.free);
		mx_family(b, "recfsd_pack_largest_free_bytes", "gauge", "The largest free extent");
		mx_sample(b, "recfsd_pack_largest_free_bytes", NULL, info.largest_free);
		mx_family(b, "recfsd_pack_recordings", "gauge", "Recordings on the pack");
		mx_sample(b, "recfsd_pack_recordings", NULL, (uint64_t)info.recordings);
	}

	/* the scan */
	pthread_mutex_lock(&d->lock);
	rd_refresh(d);
	int rc;
	const char *no = rd_refuse(d, &rc);
	const char *state = d->recording ? "recording" : d->halted[0] || no ? "halted" : "idle";
	mx_family(b, "recfsd_scans_total", "counter", "Scans started");
	mx_sample(b, "recfsd_scans_total", NULL, d->scans);
	mx_family(b, "recfsd_recording", "gauge", "1 while a scan is recording");
	mx_sample(b, "recfsd_recording", NULL, (uint64_t)d->recording);
	mx_family(b, "recfsd_scan_info", "gauge", "The current or last scan: its number, name and state");
	snprintf(num, sizeof(num), "%" PRIu64, d->cur.no);
	mx_sample(b, "recfsd_scan_info", MX_LABELS("scan", num, "name", d->cur.name, "state", state), 1);
	mx_family(b, "recfsd_scan_blind", "gauge",
		  "1 when the current or last scan received datagrams and recorded (almost) none: all of the wrong size");
	for (unsigned k = 0; k < d->nst; k++) {
		const struct rd_stream *st = &d->st[k];
		const char *sfx = st->suffix[0] == '_' ? st->suffix + 1 : st->suffix;
		bool blind = d->cur.no && rr_seg_blind(st->r, d->cur.seg, NULL, 0);
		mx_sample(b, "recfsd_scan_blind", MX_LABELS("input", d->in[st->input].label, "stream", sfx),
			  (uint64_t)blind);
	}
	pthread_mutex_unlock(&d->lock);
}

int rd_metrics_start(struct rd *d, const struct sockaddr_storage *a, socklen_t len, char *where,
		     size_t wlen)
{
	char err[256];
	rd_mx = mx_server_start(a, len, rd_render, d, err, sizeof(err));
	if (!rd_mx) {
		fprintf(stderr, "recfsd: --metrics: %s\n", err);
		return -EINVAL;
	}
	rr_sockaddr_str(a, mx_server_port(rd_mx), where, wlen);
	return 0;
}

void rd_metrics_stop(struct rd *d)
{
	(void)d;
	if (rd_mx)
		mx_server_stop(rd_mx);
	rd_mx = NULL;
}
