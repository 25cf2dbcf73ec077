/* SPDX-License-Identifier: MIT */
/*
 * Statistics: the summary and --stats-json; recfs-record's seal and verdict
 * (rr_finish).  Nothing here prints unasked: the program calls rr_summary
 * and rr_write_stats after rr_finish, and prints the verdict line.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rr.h"

const char *const rr_stop_what[] = {
	[RR_STOP_NONE] = "stopped",
	[RR_STOP_EOF] = "input ended",
	[RR_STOP_DURATION] = "--duration reached",
	[RR_STOP_SIZE] = "--size reached",
	[RR_STOP_SIGNAL] = "stopped by signal",
	[RR_STOP_FULL] = "pack full",
	[RR_STOP_IOERR] = "member write error",
	[RR_STOP_INPUT] = "input error",
};

static int rr_write_json(struct rr *r, uint64_t len, int status, enum rr_stop why,
			 const struct rusage *ru)
{
	FILE *f = r->json_f;
	r->json_f = NULL;
	if (!f)
		return 0;
	double dur = r->t_first ? (double)(r->t_end - r->t_first) * 1e-9 : 0;
	const struct recfs_loss *l = &r->loss;
	fprintf(f, "{\n  ");
	recfs_json_name(f, "name", r->name);
	fprintf(f, ",\n  ");
	recfs_json_name(f, "input", r->input_spec);
	fprintf(f, ",\n  \"stop\": ");
	recfs_json_str(f, rr_stop_what[why]);
	fprintf(f, ",\n  \"exit_status\": %d,\n", status);
	fprintf(f, "  \"bytes\": %llu,\n  \"duration_s\": %.6f,\n  \"rate_bytes_per_s\": %.0f,\n",
		(unsigned long long)len, dur, dur > 0 ? (double)len / dur : 0.0);
	fprintf(f, "  \"chunk_size\": %u,\n  \"queue_depth\": %u,\n", r->chunk, r->qd);
	fprintf(f, "  \"ring_bytes\": %llu,\n  \"ring_max_fill_bytes\": %llu,\n",
		(unsigned long long)r->ring_size, (unsigned long long)atomic_load(&r->ring_max));
	fprintf(f, "  \"ring_locked\": %s,\n  \"ring_hugepages\": %s,\n"
		"  \"realtime\": {\"receiver\": %s, \"writer\": %s},\n",
		r->ring_locked ? "true" : "false", r->ring_huge ? "true" : "false",
		r->rt_rcv ? "true" : "false", r->rt_wr ? "true" : "false");
	fprintf(f, "  \"members\": [");
	for (unsigned i = 0; r->g && i < r->g->members; i++) {
		const struct rr_member_stat *m = &r->mst[i];
		struct recfs_dev *d = recfs_pack_dev(r->p, i);
		fprintf(f, "%s\n    {\"index\": %u, ", i ? "," : "", i);
		recfs_json_name(f, "path", d ? d->path : "");
		fprintf(f, ", \"writes\": %llu, \"short_writes\": %llu, \"latency_max_s\": %.6f, \"latency_mean_s\": %.6f}",
			(unsigned long long)m->writes, (unsigned long long)m->short_writes,
			(double)m->max_ns * 1e-9,
			m->writes ? (double)m->sum_ns / (double)m->writes * 1e-9 : 0.0);
	}
	fprintf(f, "\n  ],\n");
	fprintf(f, "  \"datagrams\": {\"received\": %llu, \"wrong_size\": %llu, "
		"\"dropped_ring_full\": %llu, \"dropped_kernel\": %llu},\n",
		(unsigned long long)l->packets, (unsigned long long)l->wrong_size,
		(unsigned long long)r->ring_dropped, (unsigned long long)r->kernel_dropped);
	fprintf(f, "  \"vdif\": {\"frame_size\": %u, \"frames_lost\": %llu, \"out_of_order\": %llu, "
		"\"invalid\": %llu, \"gaps_coalesced\": %s, \"gaps\": [",
		r->fmt_vdif ? (atomic_load(&r->learned_frame) ? atomic_load(&r->learned_frame)
							  : r->frame_size) : 0,
		(unsigned long long)l->frames_lost,
		(unsigned long long)l->out_of_order, (unsigned long long)l->invalid,
		(l->gap_flags & RECFS_GAPS_COALESCED) ? "true" : "false");
	for (uint32_t i = 0; i < r->rec.loss.gap_count; i++)
		fprintf(f, "%s{\"offset\": %llu, \"frames\": %u, \"thread\": %u}", i ? ", " : "",
			(unsigned long long)r->rec.loss.gaps[i].offset, r->rec.loss.gaps[i].frames,
			r->rec.loss.gaps[i].thread);
	fprintf(f, "]},\n");
	fprintf(f, "  \"cpu\": {\"user_s\": %.6f, \"system_s\": %.6f},\n",
		(double)ru->ru_utime.tv_sec + (double)ru->ru_utime.tv_usec * 1e-6,
		(double)ru->ru_stime.tv_sec + (double)ru->ru_stime.tv_usec * 1e-6);
	fprintf(f, "  \"commits\": %llu,\n  \"commit_max_s\": %.6f\n}\n",
		(unsigned long long)r->commits, (double)r->commit_max_ns * 1e-9);
	int bad = ferror(f);
	if (f != stdout ? fclose(f) || bad : fflush(f) || bad) {
		return recfs_seterr(-EIO, "%s: cannot write statistics: %s", r->stats_json,
				    strerror(errno ? errno : EIO));
	}
	return 0;
}

void rr_summary(struct rr *r, FILE *f)
{
	char b1[32], b2[32], b3[32];
	double dur = r->t_first ? (double)(r->t_end - r->t_first) * 1e-9 : 0;
	const struct recfs_loss *l = &r->loss;
	const uint64_t len = r->rec.committed_len;
	struct rusage ru;

	if (!r->created)
		return;
	getrusage(RUSAGE_SELF, &ru);
	fprintf(f, "written    %s in %.2f s, %s/s\n", recfs_fmt_size(len, b1, sizeof(b1)), dur,
		recfs_fmt_size(dur > 0 ? (uint64_t)((double)len / dur) : 0, b2, sizeof(b2)));
	fprintf(f, "ring       max %s unwritten of %s%s%s%s\n",
		recfs_fmt_size(atomic_load(&r->ring_max), b1, sizeof(b1)),
		recfs_fmt_size(r->ring_size, b3, sizeof(b3)), r->ring_locked ? ", locked" : "",
		r->ring_huge ? ", hugepages" : "", r->rt_rcv ? "; receiver SCHED_FIFO" : "");
	for (unsigned i = 0; i < r->g->members; i++) {
		const struct rr_member_stat *m = &r->mst[i];
		fprintf(f, "member %-3u %llu writes, latency mean %.2f ms, max %.2f ms (%s)\n", i,
			(unsigned long long)m->writes,
			m->writes ? (double)m->sum_ns / (double)m->writes * 1e-6 : 0.0,
			(double)m->max_ns * 1e-6, recfs_pack_dev(r->p, i)->path);
	}
	if (r->in_kind == RR_IN_UDP)
		fprintf(f, "datagrams  %llu received, %llu wrong size, %llu dropped (ring full), "
			"%llu dropped by the kernel\n",
			(unsigned long long)l->packets, (unsigned long long)l->wrong_size,
			(unsigned long long)r->ring_dropped, (unsigned long long)r->kernel_dropped);
	if (r->fmt_vdif)
		fprintf(f, "vdif       %llu frames lost in %u gaps%s, %llu out of order, %llu invalid\n",
			(unsigned long long)l->frames_lost, r->rec.loss.gap_count,
			(l->gap_flags & RECFS_GAPS_COALESCED) ? " (merged)" : "",
			(unsigned long long)l->out_of_order, (unsigned long long)l->invalid);
	fprintf(f, "cpu        user %.2f s, system %.2f s; %llu commits, slowest %.1f ms\n",
		(double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6,
		(double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6,
		(unsigned long long)r->commits, (double)r->commit_max_ns * 1e-6);
}

enum rr_outcome rr_finish(struct rr *r, int64_t len, char *line, size_t n)
{
	enum rr_outcome status = RR_NOTHING;
	int err;

	line[0] = 0;
	enum rr_stop why = (enum rr_stop)atomic_load(&r->stop);
	if (r->err_errno && why != RR_STOP_FULL)
		why = RR_STOP_IOERR; /* the writer failed after the input stopped: not all is kept */
	if (!r->created) {
		if (why == RR_STOP_FULL)
			status = RR_FULL;
		if (r->segs[0].msg[0]) /* the recording could not be created: why */
			snprintf(line, n, "%s", r->segs[0].msg);
		else if (why != RR_STOP_FULL && r->in_err[0])
			snprintf(line, n, "%s; recording '%s' not created", r->in_err, r->name);
		else if (why != RR_STOP_FULL && r->err_errno == 0)
			snprintf(line, n, "no data from %s; recording '%s' not created",
				 r->in_path ? r->in_path : r->input_spec, r->name);
		r->fin_status = (int)status;
		r->fin_why = why;
		return status;
	}

	/* seal at the exact length (the receiver's loss map is final) */
	char msg[768] = "";
	if (r->cm_err) /* the metadata path is broken: the seal is tried once anyway */
		snprintf(msg, sizeof(msg), "%.511s", r->cm_msg);
	err = cm_seal(r, len);
	if (err) {
		snprintf(msg, sizeof(msg),
			 "%s; '%s' may not be sealed: its last %llu committed bytes are durable"
			 " (fsck.recfs -y recovers it)",
			 recfs_errmsg(), r->name, (unsigned long long)r->durable_len);
		status = RR_IO;
	} else {
		status = why == RR_STOP_FULL ? RR_FULL
		       : why == RR_STOP_IOERR ? RR_IO
		       : why == RR_STOP_INPUT ? RR_INPUT : RR_OK;
	}
	if (!err && why == RR_STOP_IOERR && r->err_member >= 0 && !msg[0])
		if (r->err_short >= 0)
			snprintf(msg, sizeof(msg), "member %d (%s): write failed at byte %llu of '%s': "
				 "short write, %ld of %u bytes (device full?)",
				 r->err_member, recfs_pack_dev(r->p, (unsigned)r->err_member)->path,
				 (unsigned long long)r->err_off, r->name, r->err_short, r->err_len);
		else
			snprintf(msg, sizeof(msg), "member %d (%s): write failed at byte %llu of '%s': %s",
				 r->err_member, recfs_pack_dev(r->p, (unsigned)r->err_member)->path,
				 (unsigned long long)r->err_off, r->name, strerror(r->err_errno));
	else if (!err && why == RR_STOP_IOERR && !msg[0])
		snprintf(msg, sizeof(msg), "writer failed: %s", strerror(r->err_errno ? r->err_errno : EIO));
	else if (!err && why == RR_STOP_INPUT)
		snprintf(msg, sizeof(msg), "%.255s", r->in_err);

	char hs[32];
	r->fin_status = (int)status;
	r->fin_why = why;
	if (err)
		snprintf(line, n, "%s", msg);
	else if (msg[0])
		snprintf(line, n, "%s; '%s' sealed at %llu bytes (%s)", msg, r->name,
			 (unsigned long long)r->rec.committed_len,
			 recfs_fmt_size(r->rec.committed_len, hs, sizeof(hs)));
	else
		snprintf(line, n, "'%s' sealed at %llu bytes (%s): %s", r->name,
			 (unsigned long long)r->rec.committed_len,
			 recfs_fmt_size(r->rec.committed_len, hs, sizeof(hs)), rr_stop_what[why]);
	return status;
}

int rr_write_stats(struct rr *r)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return rr_write_json(r, r->rec.committed_len, r->fin_status, r->fin_why, &ru);
}
