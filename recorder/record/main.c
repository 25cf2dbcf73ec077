/* SPDX-License-Identifier: MIT */
/*
 * recfs-record: write one stream onto a pack at line rate, through the
 * recording engine (engine.h).  The recording is created only when the
 * first byte arrives, so a run that receives nothing leaves the pack
 * untouched.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libaio.h>
#include <limits.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "engine/engine.h"
#include "common/opts.h"
#include "common/sdnotify.h"

#define PROG "recfs-record"

/* exit statuses (recfs-record.1, EXIT STATUS) */
enum {
	RR_EXIT_OK = 0,       /* sealed: input ended, limit reached, or signal */
	RR_EXIT_NOTHING = 1,  /* nothing recorded: usage, pack, name, input, no data */
	RR_EXIT_FULL = 2,     /* pack full: sealed at the last byte that fit */
	RR_EXIT_IO = 3,       /* member I/O error: sealed at the durable prefix */
	RR_EXIT_INPUT = 4,    /* input failed mid-stream: sealed at what arrived */
};

static void rr_on_signal(int sig)
{
	rr_signal = sig;
}

/* ------------------------------------------------------------------- main */
static void usage(FILE *f)
{
	fprintf(f,
		"Usage: " PROG " [options] PACK NAME\n"
		"Record one stream into recording NAME on PACK (members a,b,c).\n"
		"\n"
		"Input:\n"
		"  -i, --input SPEC        stdin (default), file:PATH, udp:[ADDR:]PORT,\n"
		"                          gen:counter or gen:vdif\n"
		"  -F, --format FMT        raw (default) or vdif: check VDIF frames, keep a loss map\n"
		"  -P, --packet-size N     UDP payload bytes after --strip (default: the first's)\n"
		"  -S, --strip N           drop an N-byte prefix from every datagram\n"
		"      --rcvbuf SIZE       socket receive buffer (default 64M)\n"
		"      --frame-size N      gen: block (counter, 8192) or frame (vdif, 8032) size\n"
		"      --threads N         gen:vdif threads (default 1)\n"
		"      --frame-rate N      gen:vdif frames per second per thread (default 10000)\n"
		"      --legacy            gen:vdif legacy 16-byte headers\n"
		"      --rate BYTES_PER_S  pace the generator (default 0: as fast as possible)\n"
		"Limits:\n"
		"  -d, --duration SECONDS  stop after this long\n"
		"  -s, --size BYTES        stop after this many bytes\n"
		"Writer:\n"
		"  -Q, --queue-depth N     requests in flight per member (default 4)\n"
		"  -b, --buffer SIZE       ring buffer (default 1/8 of available RAM, 64M..1G)\n"
		"  -c, --commit-interval S make the written prefix durable every S seconds (default 1)\n"
		"      --no-realtime       udp: do not run receiver and writer SCHED_FIFO\n"
		"      --ready-fd N        write READY=1 to fd N once receiving (also sd_notify)\n"
		"Report:\n"
		"      --progress          live progress line even when stderr is not a terminal\n"
		"  -q, --quiet             no progress line and no summary\n"
		"      --stats-json FILE   write the final statistics as JSON (- for stdout)\n"
		"  -h, --help, -V, --version\n");
}

/* A refused option value: the parser's one line (fs/lib/util.c). */
static int rr_opt(int err)
{
	if (err)
		fprintf(stderr, PROG ": %s\n", recfs_errmsg());
	return err;
}

/* What main carries from the command line to the steps after it. */
struct rec_args {
	const char *input;
	int ready_fd;
	bool sizes_set;
};

/* The command line into r and a: 0 go on, 1 done (--help, --version), -1
 * refused (said). */
static int parse_args(int argc, char **argv, struct rr *r, struct rec_args *a)
{
	static const struct option lo[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "frame-size", required_argument, NULL, 2 },
		{ "threads", required_argument, NULL, 3 },
		{ "frame-rate", required_argument, NULL, 4 },
		{ "legacy", no_argument, NULL, 5 },
		{ "rate", required_argument, NULL, 6 },
		{ "duration", required_argument, NULL, 'd' },
		{ "size", required_argument, NULL, 's' },
		{ "progress", no_argument, NULL, 7 },
		{ "quiet", no_argument, NULL, 'q' },
		{ "stats-json", required_argument, NULL, 8 },
		{ "ready-fd", required_argument, NULL, 10 },
		RR_ENGINE_LONGOPTS,
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 }
	};
	struct rr_opts eo;
	uint64_t v;
	int c;

	rr_opts_default(&eo);
	r->progress = -1;
	r->threads = 1;
	r->fps = 10000;
	while ((c = getopt_long(argc, argv, "i:d:s:qhV" RR_ENGINE_SHORTOPTS, lo, NULL)) != -1) {
		switch (c) {
		case 'i': a->input = optarg; break;
		case 2:
			if (rr_opt(recfs_parse_bytes("--frame-size", optarg, 1, 64u << 20, &v)))
				return -1;
			r->frame_size = (uint32_t)v;
			a->sizes_set = true;
			break;
		case 3:
			if (rr_opt(recfs_parse_num("--threads", optarg, 1, RR_VDIF_MAX_THREADS, &v)))
				return -1;
			r->threads = (uint32_t)v;
			break;
		case 4:
			if (rr_opt(recfs_parse_num("--frame-rate", optarg, 1, 1u << 24, &v)))
				return -1;
			r->fps = (uint32_t)v;
			break;
		case 5: r->legacy = true; break;
		case 6:
			if (rr_opt(recfs_parse_bytes("--rate", optarg, 0, 1ull << 40, &r->rate)))
				return -1;
			break;
		case 'd':
			if (rr_opt(recfs_parse_secs("--duration", optarg, 1000000ull, RR_SECS_MAX, &r->duration_ns)))
				return -1;
			break;
		case 's':
			if (rr_opt(recfs_parse_bytes("--size", optarg, 1, 1ull << 60, &r->size_limit)))
				return -1;
			break;
		case 7: r->progress = 1; break;
		case 'q': r->quiet = true; break;
		case 8: r->stats_json = optarg; break;
		case 10:
			if (rr_opt(recfs_parse_num("--ready-fd", optarg, 0, INT_MAX, &v)))
				return -1;
			if (fcntl((int)v, F_GETFD) < 0) {
				fprintf(stderr, PROG ": --ready-fd %s: not an open descriptor\n", optarg);
				return -1;
			}
			a->ready_fd = (int)v;
			break;
		case 'h': usage(stdout); return 1;
		case 'V': printf(PROG " " RECFS_VERSION_STRING "\n"); return 1;
		default:
			switch (rr_opt_parse(&eo, c, optarg)) {
			case 1: break;
			case 0: usage(stderr); return -1;
			default: rr_opt(-EINVAL); return -1;
			}
		}
	}
	rr_defaults(r, &eo);
	r->prog = PROG;
	return 0;
}

/* What can be refused before the pack is opened: -1 refused (said). */
static int check_args(int argc, char **argv, struct rr *r, const struct rec_args *a)
{
	if (argc - optind != 2) {
		fprintf(stderr, PROG ": expected PACK and NAME (see --help)\n");
		return -1;
	}
	r->pack_spec = argv[optind];
	r->name = argv[optind + 1];
	if (r->quiet)
		r->progress = 0;
	else if (r->progress < 0)
		r->progress = isatty(2);

	if (rr_parse_input(r, a->input)) {
		fprintf(stderr, PROG ": --input: '%s' is not stdin, file:PATH, udp:[ADDR:]PORT, "
			"gen:counter or gen:vdif\n", a->input);
		return -1;
	}
	if (r->in_kind != RR_IN_UDP && (r->packet_size || r->strip)) {
		fprintf(stderr, PROG ": --packet-size and --strip apply to udp input only\n");
		return -1;
	}
	if (r->in_kind != RR_IN_GEN && r->rate) {
		fprintf(stderr, PROG ": --rate paces the gen: inputs only\n");
		return -1;
	}
	if (r->in_kind != RR_IN_GEN && a->sizes_set) {
		fprintf(stderr, PROG ": --frame-size applies to gen: inputs only\n");
		return -1;
	}
	if (recfs_name_check(r->name)) {
		fprintf(stderr, PROG ": %s\n", recfs_errmsg());
		return -1;
	}
	/* a typo must not write statistics over a member */
	if (r->stats_json && recfs_spec_check_output(r->pack_spec, "--stats-json",
						     strcmp(r->stats_json, "-") ? r->stats_json : "(standard output)",
						     strcmp(r->stats_json, "-") ? -1 : 1)) {
		fprintf(stderr, PROG ": %s\n", recfs_errmsg());
		return -1;
	}
	if (a->ready_fd >= 0 && recfs_spec_check_output(r->pack_spec, "--ready-fd", "(descriptor)", a->ready_fd)) {
		fprintf(stderr, PROG ": %s\n", recfs_errmsg());
		return -1;
	}
	return 0;
}

/* The pack, locked for writing, with room for the recording: 0, or the exit
 * status (the pack closed again). */
static int open_pack(struct rr *r)
{
	/* pack: the exclusive writer lock is held from here to the end */
	int status = RR_EXIT_NOTHING, err = recfs_pack_open(r->pack_spec, RECFS_O_RDWR, &r->p);
	if (err) {
		fprintf(stderr, PROG ": %s\n", recfs_errmsg());
		return RR_EXIT_NOTHING;
	}
	r->g = recfs_pack_geom(r->p);
	r->chunk = r->g->chunk_size;
	for (unsigned i = 0; i < r->g->members; i++) {
		struct recfs_dev *d = recfs_pack_dev(r->p, i);
		if (!d || d->fd < 0) {
			fprintf(stderr, PROG ": %s: member %u is %s\n", r->pack_spec, i,
				d ? "not a file or block device" : "missing");
			goto out_close;
		}
	}
	struct recfs_rec old;
	if (recfs_rec_lookup(r->p, r->name, &old) == 0) {
		fprintf(stderr, PROG ": recording '%s' already exists on %s\n", r->name, r->pack_spec);
		goto out_close;
	}
	struct recfs_pack_info info;
	if (recfs_pack_info(r->p, &info) == 0 && info.largest_free == 0) {
		fprintf(stderr, PROG ": %s: pack full: no free space for '%s'\n", r->pack_spec, r->name);
		status = RR_EXIT_FULL;
		goto out_close;
	}
	return 0;
out_close:
	recfs_pack_close(r->p);
	r->p = NULL;
	return status;
}

/* Ring, input, engine, the statistics file, the receiver and the committer:
 * 0, or -1 (said; main releases what was set up). */
static int start(struct rr *r, pthread_t *rcv, pthread_t *cm)
{
	static pthread_mutex_t pack_lock;
	int err;

	/* the ring first: it takes time to lock, and a bound socket would
	 * already be dropping datagrams meanwhile */
	if (rr_ring_alloc(r) || rr_open_input(r) || rr_engine_init(r)) {
		fprintf(stderr, PROG ": %s\n", recfs_errmsg());
		return -1;
	}
	pthread_mutex_init(&pack_lock, NULL);
	r->pack_lock = &pack_lock;
	static struct rr_gflush gflush;
	rr_gflush_init(&gflush);
	r->gflush = &gflush;
	/* one segment: the whole stream is the recording */
	rr_seg_post(r, r->name, r->size_limit, 0, 0, NULL);

	struct sigaction sa = { .sa_handler = rr_on_signal };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	/* the statistics file now: one that cannot be written refuses the
	 * start instead of failing after the recording */
	if (r->stats_json) {
		r->json_f = strcmp(r->stats_json, "-") ? fopen(r->stats_json, "w") : stdout;
		if (!r->json_f) {
			fprintf(stderr, PROG ": %s: cannot write statistics: %s\n", r->stats_json,
				strerror(errno));
			return -1;
		}
	}

	r->t_start = rr_mono_ns();
	if ((err = pthread_create(rcv, NULL, rcv_main, r))) {
		fprintf(stderr, PROG ": cannot start the receiver: %s\n", strerror(err));
		return -1;
	}
	if ((err = pthread_create(cm, NULL, cm_main, r))) {
		fprintf(stderr, PROG ": cannot start the committer: %s\n", strerror(err));
		rr_set_stop(r, RR_STOP_INPUT);
		pthread_join(*rcv, NULL);
		return -1;
	}
	return 0;
}

/* Write until the stream ends, then stop the receiver and the committer:
 * the length written. */
static int64_t run(struct rr *r, int ready_fd, pthread_t rcv, pthread_t cm)
{
	/* the socket is bound and its receiver running: a datagram sent now
	 * is recorded */
	rr_notify_ready(ready_fd);
	if (r->in_kind == RR_IN_UDP && !r->no_rt)
		r->rt_wr = rr_realtime(10);
	int64_t len = wr_run(r);
	r->t_end = rr_mono_ns();
	if (!atomic_load(&r->stop))
		rr_set_stop(r, RR_STOP_IOERR);
	pthread_join(rcv, NULL);
	rr_cm_stop(r, cm);
	if (r->progress_shown) {
		rr_progress(r, true);
	}
	return len;
}

/* Seal at the exact length (the receiver's loss map is final) and say what
 * happened: the exit status. */
static int seal_report(struct rr *r, int64_t len)
{
	int status = RR_EXIT_NOTHING, err;

	enum rr_stop why = (enum rr_stop)atomic_load(&r->stop);
	if (r->err_errno && why != RR_STOP_FULL)
		why = RR_STOP_IOERR; /* the writer failed after the input stopped: not all is kept */
	if (!r->created) {
		if (why == RR_STOP_FULL)
			status = RR_EXIT_FULL;
		else if (r->in_err[0])
			fprintf(stderr, PROG ": %s; recording '%s' not created\n", r->in_err, r->name);
		else if (r->err_errno == 0)
			fprintf(stderr, PROG ": no data from %s; recording '%s' not created\n",
				r->in_path ? r->in_path : r->input_spec, r->name);
		if (r->json_f) { /* the statistics say so */
			struct rusage ru;
			getrusage(RUSAGE_SELF, &ru);
			rr_write_json(r, r->rec.committed_len, status, why, &ru);
		}
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
		status = RR_EXIT_IO;
	} else {
		status = why == RR_STOP_FULL ? RR_EXIT_FULL
		       : why == RR_STOP_IOERR ? RR_EXIT_IO
		       : why == RR_STOP_INPUT ? RR_EXIT_INPUT : RR_EXIT_OK;
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

	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	if (!r->quiet)
		rr_summary(r, r->rec.committed_len, &ru);
	char hs[32];
	/* the statistics before the last line, which stays the verdict; a
	 * write error there is reported but leaves the exit status alone */
	struct rusage ru2;
	getrusage(RUSAGE_SELF, &ru2);
	rr_write_json(r, r->rec.committed_len, status, why, &ru2);
	if (err)
		fprintf(stderr, PROG ": %s\n", msg);
	else if (msg[0])
		fprintf(stderr, PROG ": %s; '%s' sealed at %llu bytes (%s)\n", msg, r->name,
			(unsigned long long)r->rec.committed_len,
			recfs_fmt_size(r->rec.committed_len, hs, sizeof(hs)));
	else
		fprintf(stderr, PROG ": '%s' sealed at %llu bytes (%s): %s\n", r->name,
			(unsigned long long)r->rec.committed_len,
			recfs_fmt_size(r->rec.committed_len, hs, sizeof(hs)), rr_stop_what[why]);
	return status;
}

int main(int argc, char **argv)
{
	static struct rr rr_state; /* one per process; nothing to free on early exits */
	struct rr *r = &rr_state;
	struct rec_args a = { .input = "stdin", .ready_fd = -1 };
	pthread_t rcv, cm;
	int status, err = parse_args(argc, argv, r, &a);

	if (err)
		return err > 0 ? 0 : RR_EXIT_NOTHING;
	if (check_args(argc, argv, r, &a))
		return RR_EXIT_NOTHING;
	if ((status = open_pack(r)))
		return status;
	status = RR_EXIT_NOTHING;
	if (start(r, &rcv, &cm) == 0)
		status = seal_report(r, run(r, a.ready_fd, rcv, cm));
	rr_release(r);
	err = recfs_pack_close(r->p);
	if (err && status == RR_EXIT_OK) {
		fprintf(stderr, PROG ": %s\n", recfs_errmsg());
		status = RR_EXIT_IO;
	}
	return status;
}
