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
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "engine/engine.h"
#include "common/opts.h"
#include "common/sdnotify.h"

#define PROG "recfs-record"

/* exit statuses (recfs-record.1, EXIT STATUS): the engine's outcomes
 * (engine.h), RR_EXIT_NOTHING also for what is refused before it runs */
enum {
	RR_EXIT_OK = RR_OK,
	RR_EXIT_NOTHING = RR_NOTHING,
	RR_EXIT_FULL = RR_FULL,
	RR_EXIT_IO = RR_IO,
};

/* SIGINT, SIGTERM: the engine's receiver stops on it (rr_conf.stop_flag) */
static _Atomic int rec_stop_sig;
static void rec_on_signal(int sig)
{
	atomic_store(&rec_stop_sig, sig);
}

/* --progress: the live line, from the engine's committer thread */
static void rec_progress(const struct rr_progress *p, void *arg)
{
	char b1[32], b2[32], b3[32], b4[32];
	(void)arg;
	fprintf(stderr, "\r%s  %s/s  ring %s (max %s)  dropped %llu  lost %llu \033[K%s",
		recfs_fmt_size(p->bytes, b1, sizeof(b1)), recfs_fmt_size(p->bytes_per_s, b2, sizeof(b2)),
		recfs_fmt_size(p->ring_fill, b3, sizeof(b3)), recfs_fmt_size(p->ring_max, b4, sizeof(b4)),
		(unsigned long long)p->dropped, (unsigned long long)p->frames_lost, p->final ? "\n" : "");
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
	int ready_fd;
	int progress;  /* -1 auto, 0 off, 1 on */
	bool quiet;    /* no progress line and no summary */
	bool sizes_set;
};

/* The command line into c and a: 0 go on, 1 done (--help, --version), -1
 * refused (said). */
static int parse_args(int argc, char **argv, struct rr_conf *c, struct rec_args *a)
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
	uint64_t v;
	int o;

	rr_opts_default(&c->eo);
	a->progress = -1;
	c->threads = 1;
	c->fps = 10000;
	while ((o = getopt_long(argc, argv, "i:d:s:qhV" RR_ENGINE_SHORTOPTS, lo, NULL)) != -1) {
		switch (o) {
		case 'i': c->input = optarg; break;
		case 2:
			if (rr_opt(recfs_parse_bytes("--frame-size", optarg, 1, 64u << 20, &v)))
				return -1;
			c->frame_size = (uint32_t)v;
			a->sizes_set = true;
			break;
		case 3:
			if (rr_opt(recfs_parse_num("--threads", optarg, 1, RR_VDIF_MAX_THREADS, &v)))
				return -1;
			c->threads = (uint32_t)v;
			break;
		case 4:
			if (rr_opt(recfs_parse_num("--frame-rate", optarg, 1, 1u << 24, &v)))
				return -1;
			c->fps = (uint32_t)v;
			break;
		case 5: c->legacy = true; break;
		case 6:
			if (rr_opt(recfs_parse_bytes("--rate", optarg, 0, 1ull << 40, &c->rate)))
				return -1;
			break;
		case 'd':
			if (rr_opt(recfs_parse_secs("--duration", optarg, 1000000ull, RR_SECS_MAX, &c->duration_ns)))
				return -1;
			break;
		case 's':
			if (rr_opt(recfs_parse_bytes("--size", optarg, 1, 1ull << 60, &c->size_limit)))
				return -1;
			break;
		case 7: a->progress = 1; break;
		case 'q': a->quiet = true; break;
		case 8: c->stats_json = optarg; break;
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
			switch (rr_opt_parse(&c->eo, o, optarg)) {
			case 1: break;
			case 0: usage(stderr); return -1;
			default: rr_opt(-EINVAL); return -1;
			}
		}
	}
	return 0;
}

/* What can be refused before the pack is opened: -1 refused (said). */
static int check_args(int argc, char **argv, struct rr_conf *c, const struct rec_args *a)
{
	if (argc - optind != 2) {
		fprintf(stderr, PROG ": expected PACK and NAME (see --help)\n");
		return -1;
	}
	c->pack_spec = argv[optind];
	c->name = argv[optind + 1];
	if (!a->quiet && (a->progress < 0 ? isatty(2) : a->progress))
		c->progress = rec_progress;
	c->stop_flag = &rec_stop_sig;

	int kind = rr_input_kind(c->input);
	if (kind < 0) {
		fprintf(stderr, PROG ": --input: '%s' is not stdin, file:PATH, udp:[ADDR:]PORT, "
			"gen:counter or gen:vdif\n", c->input);
		return -1;
	}
	if (kind != RR_IN_UDP && (c->eo.packet_size || c->eo.strip)) {
		fprintf(stderr, PROG ": --packet-size and --strip apply to udp input only\n");
		return -1;
	}
	if (kind != RR_IN_GEN && c->rate) {
		fprintf(stderr, PROG ": --rate paces the gen: inputs only\n");
		return -1;
	}
	if (kind != RR_IN_GEN && a->sizes_set) {
		fprintf(stderr, PROG ": --frame-size applies to gen: inputs only\n");
		return -1;
	}
	if (recfs_name_check(c->name)) {
		fprintf(stderr, PROG ": %s\n", recfs_errmsg());
		return -1;
	}
	/* a typo must not write statistics over a member */
	if (c->stats_json && recfs_spec_check_output(c->pack_spec, "--stats-json",
						     strcmp(c->stats_json, "-") ? c->stats_json : "(standard output)",
						     strcmp(c->stats_json, "-") ? -1 : 1)) {
		fprintf(stderr, PROG ": %s\n", recfs_errmsg());
		return -1;
	}
	if (a->ready_fd >= 0 && recfs_spec_check_output(c->pack_spec, "--ready-fd", "(descriptor)", a->ready_fd)) {
		fprintf(stderr, PROG ": %s\n", recfs_errmsg());
		return -1;
	}
	return 0;
}

/* The pack, locked for writing, with room for the recording, in c->p: 0,
 * or the exit status (the pack closed again). */
static int open_pack(struct rr_conf *c)
{
	/* pack: the exclusive writer lock is held from here to the end */
	int status = RR_EXIT_NOTHING;
	if (rr_pack_open(c->pack_spec, &c->p)) {
		fprintf(stderr, PROG ": %s\n", recfs_errmsg());
		return RR_EXIT_NOTHING;
	}
	struct recfs_rec old;
	if (recfs_rec_lookup(c->p, c->name, &old) == 0) {
		fprintf(stderr, PROG ": recording '%s' already exists on %s\n", c->name, c->pack_spec);
		goto out_close;
	}
	struct recfs_pack_info info;
	if (recfs_pack_info(c->p, &info) == 0 && info.largest_free == 0) {
		fprintf(stderr, PROG ": %s: pack full: no free space for '%s'\n", c->pack_spec, c->name);
		status = RR_EXIT_FULL;
		goto out_close;
	}
	return 0;
out_close:
	recfs_pack_close(c->p);
	c->p = NULL;
	return status;
}

int main(int argc, char **argv)
{
	struct rr_conf c = { .input = "stdin" };
	struct rec_args a = { .ready_fd = -1 };
	struct rr *r = NULL;
	int status, err = parse_args(argc, argv, &c, &a);

	if (err)
		return err > 0 ? 0 : RR_EXIT_NOTHING;
	if (check_args(argc, argv, &c, &a))
		return RR_EXIT_NOTHING;
	if ((status = open_pack(&c)))
		return status;
	status = RR_EXIT_NOTHING;
	/* the ring, the input (a socket is bound from here) and the engine */
	if ((err = rr_new(&c, &r)) == 0) {
		struct sigaction sa = { .sa_handler = rec_on_signal };
		sigemptyset(&sa.sa_mask);
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
		err = rr_start(r, 0);
	}
	if (err) {
		fprintf(stderr, PROG ": %s\n", recfs_errmsg());
	} else {
		/* the socket is bound and its receiver running: a datagram
		 * sent now is recorded */
		rr_notify_ready(a.ready_fd);
		char line[1024];
		int64_t len = rr_run(r);
		status = (int)rr_finish(r, len, line, sizeof(line));
		if (!a.quiet)
			rr_summary(r, stderr);
		/* the statistics before the last line, which stays the
		 * verdict; a write error there is said but leaves the
		 * outcome alone */
		if (rr_write_stats(r))
			fprintf(stderr, PROG ": %s\n", recfs_errmsg());
		if (line[0])
			fprintf(stderr, PROG ": %s\n", line);
	}
	rr_free(r);
	err = recfs_pack_close(c.p);
	if (err && status == RR_EXIT_OK) {
		fprintf(stderr, PROG ": %s\n", recfs_errmsg());
		status = RR_EXIT_IO;
	}
	return status;
}
