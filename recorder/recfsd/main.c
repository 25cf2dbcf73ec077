/* SPDX-License-Identifier: MIT */
/*
 * recfsd: the station recorder.  One long-running daemon per pack: it opens
 * the pack read-write once, allocates and locks each input's ring once,
 * binds its inputs once and drains them continuously; the station's control
 * software starts and stops scans over TCP in VSI-S (record=on / record=off),
 * and each scan becomes one recording per input (or per VDIF thread).
 *
 * Each input runs the recording engine (engine.h) in its daemon mode: the
 * receiver opens a segment at the first batch after record=on and closes it
 * after the last whole datagram before record=off; what arrives between
 * scans is counted as idle and discarded.  The control plane (vsis.c) and
 * the metrics endpoint (prom.c, on libmicrohttpd) run in threads of their own and only
 * post requests and read counters: a client can never stall a recording.
 *
 * This file is the wiring: options, the pack, the streams and their
 * threads, signals, readiness.  The scan model is scan.c.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "engine/engine.h"
#include "recfs/check.h"
#include "recfsd.h"
#include "common/opts.h"
#include "common/sdnotify.h"
#include "vsis.h"

#define PROG "recfsd"


/* ------------------------------------------------------------ readiness */
/* Every input bound and drained, control listening: tell whoever started
 * us (systemd's NOTIFY_SOCKET, --ready-fd, and a first line on stdout),
 * so no datagram meant for a scan is sent before we listen. */
static void rd_ready(struct rd *d, int fd, const char *ctl, const char *mx)
{
	char line[512];
	int n = snprintf(line, sizeof(line), "ready control=%s%s%s inputs=", ctl, mx[0] ? " metrics=" : "", mx);
	for (unsigned i = 0; i < d->nin && n > 0 && (size_t)n < sizeof(line); i++)
		n += snprintf(line + n, sizeof(line) - (size_t)n, "%s%s=%s", i ? "," : "", d->in[i].label,
			      d->in[i].spec);
	printf("%s\n", line);
	fflush(stdout);
	rr_notify_ready(fd);
}

/* ------------------------------------------------------------ options */
static void usage(FILE *f)
{
	fprintf(f,
		"Usage: " PROG " [options] PACK\n"
		"Record scans onto PACK (members a,b,c) as a station's control software asks\n"
		"over TCP in VSI-S (record=on:SCAN ... record=off).\n"
		"\n"
		"  -i, --input [LABEL=]udp:[ADDR:]PORT  an input (repeat for several; labels\n"
		"                          default to 0, 1, ...; a scan records SCAN_LABEL each)\n"
		"  -F, --format FMT        raw (default) or vdif: check VDIF frames, keep a loss map\n"
		"      --split vdif-thread:THREADS  one recording per VDIF thread (SCAN_tN),\n"
		"                          THREADS a list such as 0-3 or 0,2: the default datastreams\n"
		"      --lanes N           reserve N lanes (ring, writer) per input for datastreams\n"
		"                          set at run time (default: --split's count)\n"
		"  -P, --packet-size N     UDP payload bytes after --strip (default: learned, 8 in a row)\n"
		"  -S, --strip N           drop an N-byte prefix from every datagram\n"
		"      --rcvbuf SIZE       socket receive buffer (default 64M)\n"
		"      --cpu LIST          pin the receivers: one CPU per input, comma-separated\n"
		"  -l, --listen ADDR:PORT  VSI-S control (default 127.0.0.1:2620)\n"
		"      --dialect D         jive5ab (default) or mark6: how record?, status?\n"
		"                          and rtime? answer (jive5ab's or Mark6 cplane's)\n"
		"  -m, --metrics ADDR:PORT Prometheus /metrics (default: off)\n"
		"  -Q, --queue-depth N     requests in flight per member (default 4)\n"
		"  -b, --buffer SIZE       ring buffer per input (default 1/8 of available RAM\n"
		"                          over the inputs, 64M..1G each)\n"
		"  -c, --commit-interval S make the written prefix durable every S seconds (default 1)\n"
		"      --ready-fd N        write READY=1 to fd N once listening (also sd_notify)\n"
		"      --no-realtime       do not run receivers and writers SCHED_FIFO\n"
		"  -h, --help, -V, --version\n");
}

/* one strict number (fs/lib/util.c); its one-line refusal printed */
static int rd_num(const char *opt, const char *s, uint64_t *v, bool size, uint64_t lo, uint64_t hi)
{
	int err = size ? recfs_parse_bytes(opt, s, lo, hi, v) : recfs_parse_num(opt, s, lo, hi, v);
	if (err)
		fprintf(stderr, PROG ": %s\n", recfs_errmsg());
	return err;
}

/* [LABEL=]udp:[ADDR:]PORT */
static int rd_add_input(struct rd *d, const char *arg)
{
	if (d->nin == RD_MAX_INPUTS) {
		fprintf(stderr, PROG ": --input: at most %u inputs\n", RD_MAX_INPUTS);
		return -EINVAL;
	}
	struct rd_input *in = &d->in[d->nin];
	const char *eq = strchr(arg, '=');
	const char *spec = arg;
	if (eq) {
		size_t n = (size_t)(eq - arg);
		if (n == 0 || n >= sizeof(in->label)) {
			fprintf(stderr, PROG ": --input '%s': a label is 1 to %zu characters\n", arg,
				sizeof(in->label) - 1);
			return -EINVAL;
		}
		memcpy(in->label, arg, n);
		in->label[n] = 0;
		for (size_t k = 0; k < n; k++)
			if (!(in->label[k] >= 'a' && in->label[k] <= 'z') && !(in->label[k] >= 'A' && in->label[k] <= 'Z') &&
			    !(in->label[k] >= '0' && in->label[k] <= '9') && in->label[k] != '-') {
				fprintf(stderr, PROG ": --input '%s': a label is letters, digits and '-'\n", arg);
				return -EINVAL;
			}
		spec = eq + 1;
	} else {
		snprintf(in->label, sizeof(in->label), "%u", d->nin);
	}
	struct sockaddr_storage ss;
	socklen_t len;
	if (strncmp(spec, "udp:", 4) || rr_parse_udp(spec + 4, false, &ss, &len)) {
		fprintf(stderr, PROG ": --input '%s': not [LABEL=]udp:[ADDR:]PORT\n", arg);
		return -EINVAL;
	}
	for (unsigned i = 0; i < d->nin; i++)
		if (!strcmp(d->in[i].label, in->label)) {
			fprintf(stderr, PROG ": --input '%s': label '%s' given twice\n", arg, in->label);
			return -EINVAL;
		}
	in->spec = spec;
	in->cpu = -1;
	d->nin++;
	return 0;
}

static int rd_parse_cpus(struct rd *d, const char *list)
{
	char *copy = strdup(list), *save = NULL, *tok;
	unsigned k = 0;
	int err = 0;
	if (!copy)
		return -ENOMEM;
	if (!list[0] || list[0] == ',' || list[strlen(list) - 1] == ',' || strstr(list, ",,")) {
		free(copy);
		fprintf(stderr, PROG ": --cpu '%s': want a comma-separated list of CPU numbers\n", list);
		return -EINVAL;
	}
	unsigned want = 1;
	for (const char *p = list; *p; p++)
		want += *p == ',';
	if (want > d->nin) {
		free(copy);
		fprintf(stderr, PROG ": --cpu '%s': %u CPUs for %u input%s (one per --input, in order)\n", list,
			want, d->nin, d->nin == 1 ? "" : "s");
		return -EINVAL;
	}
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		uint64_t v;
		if (rd_num("--cpu", tok, &v, false, 0, CPU_SETSIZE - 1)) {
			err = -EINVAL;
			break;
		}
		d->in[k++].cpu = (int)v;
	}
	free(copy);
	return err;
}

/* vdif-thread:LIST, LIST a comma-separated list of threads or ranges
 * (0-3,8) */
static int rd_parse_split(struct rd *d, const char *arg)
{
	if (strncmp(arg, "vdif-thread:", 12) || !arg[12]) {
		fprintf(stderr, PROG ": --split '%s': want vdif-thread:THREADS (0-3 or 0,1,2,3)\n", arg);
		return -EINVAL;
	}
	const char *l = arg + 12;
	if (l[0] == ',' || l[strlen(l) - 1] == ',' || strstr(l, ",,")) {
		fprintf(stderr, PROG ": --split '%s': an empty thread in the list\n", arg);
		return -EINVAL;
	}
	char *copy = strdup(l), *save = NULL, *tok;
	int err = copy ? 0 : -ENOMEM;
	for (tok = copy ? strtok_r(copy, ",", &save) : NULL; tok && !err; tok = strtok_r(NULL, ",", &save)) {
		uint64_t lo, hi;
		char *dash = strchr(tok, '-');
		if (dash)
			*dash = 0;
		if (rd_num("--split thread", tok, &lo, false, 0, RR_VDIF_MAX_THREADS - 1) ||
		    rd_num("--split thread", dash ? dash + 1 : tok, &hi, false, lo, RR_VDIF_MAX_THREADS - 1)) {
			err = -EINVAL;
			break;
		}
		for (uint64_t th = lo; th <= hi && !err; th++) {
			for (unsigned k = 0; k < d->ndflt; k++)
				if (d->split_thread[k] == th) {
					fprintf(stderr, PROG ": --split: thread %llu given twice\n", (unsigned long long)th);
					err = -EINVAL;
				}
			if (!err && d->ndflt == RR_MAX_LANES) {
				fprintf(stderr, PROG ": --split: at most %u threads\n", RR_MAX_LANES);
				err = -EINVAL;
			}
			if (!err)
				d->split_thread[d->ndflt++] = (uint32_t)th;
		}
	}
	free(copy);
	return err;
}

/* the crash recovery's lines (the checker's, as fsck.recfs -p prints them) */
static void rd_recover_line(void *ctx, const char *line)
{
	fprintf(stderr, PROG ": recovery: %s\n", line);
}

static volatile sig_atomic_t rd_stop_sig;
static void rd_on_signal(int sig)
{
	rd_stop_sig = sig;
}

/* What main carries from the command line to the steps after it. */
struct rd_args {
	const char *listen_spec, *metrics_spec, *cpus;
	int ready_fd;
	struct rr_opts eo;
	struct sockaddr_storage ctl_addr, mx_addr;
	socklen_t ctl_len, mx_len;
};

/* The command line into d and a, checked as far as it can be before the
 * pack is opened: 0 go on, 1 done (--help, --version), -1 refused (said). */
static int rd_parse_args(int argc, char **argv, struct rd *d, struct rd_args *a)
{
	static const struct option lo[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "cpu", required_argument, NULL, 2 },
		{ "listen", required_argument, NULL, 'l' },
		{ "metrics", required_argument, NULL, 'm' },
		{ "ready-fd", required_argument, NULL, 3 },
		{ "split", required_argument, NULL, 5 },
		{ "dialect", required_argument, NULL, 6 },
		{ "lanes", required_argument, NULL, 7 },
		RR_ENGINE_LONGOPTS,
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 }
	};
	uint64_t v;
	unsigned lanes = 0;
	int c;

	a->listen_spec = "127.0.0.1:2620";
	a->ready_fd = -1;
	rr_opts_default(&a->eo);
	while ((c = getopt_long(argc, argv, "i:l:m:hV" RR_ENGINE_SHORTOPTS, lo, NULL)) != -1) {
		switch (c) {
		case 'i':
			if (rd_add_input(d, optarg))
				return -1;
			break;
		case 2: a->cpus = optarg; break;
		case 'l': a->listen_spec = optarg; break;
		case 'm': a->metrics_spec = optarg; break;
		case 3:
			if (rd_num("--ready-fd", optarg, &v, false, 0, INT_MAX))
				return -1;
			a->ready_fd = (int)v;
			break;
		case 5:
			if (rd_parse_split(d, optarg))
				return -1;
			break;
		case 6:
			if (!strcmp(optarg, "jive5ab"))
				d->dialect = RD_DIALECT_JIVE5AB;
			else if (!strcmp(optarg, "mark6"))
				d->dialect = RD_DIALECT_MARK6;
			else {
				fprintf(stderr, PROG ": --dialect '%s': want jive5ab or mark6\n", optarg);
				return -1;
			}
			break;
		case 7:
			if (rd_num("--lanes", optarg, &v, false, 1, RR_MAX_LANES))
				return -1;
			lanes = (unsigned)v;
			break;
		case 'h': usage(stdout); return 1;
		case 'V': printf(PROG " " RECFS_VERSION_STRING "\n"); return 1;
		default:
			switch (rr_opt_parse(&a->eo, c, optarg)) {
			case 1: break;
			case 0: usage(stderr); return -1;
			default: fprintf(stderr, PROG ": %s\n", recfs_errmsg()); return -1;
			}
		}
	}
	d->fmt_vdif = a->eo.fmt_vdif;
	if (argc - optind != 1) {
		fprintf(stderr, PROG ": expected PACK (see --help)\n");
		return -1;
	}
	d->pack_spec = argv[optind];
	if (d->nin == 0 && rd_add_input(d, "udp:50000"))
		return -1;
	if (a->cpus && rd_parse_cpus(d, a->cpus))
		return -1;
	if (d->ndflt && !d->fmt_vdif) {
		fprintf(stderr, PROG ": --split vdif-thread needs --format vdif\n");
		return -1;
	}
	if (lanes && !d->fmt_vdif) {
		fprintf(stderr, PROG ": --lanes needs --format vdif (datastreams choose VDIF threads)\n");
		return -1;
	}
	if (lanes && lanes < d->ndflt) {
		fprintf(stderr, PROG ": --lanes %u: fewer than --split's %u threads\n", lanes, d->ndflt);
		return -1;
	}
	/* the lanes each input reserves: the datastreams share them */
	d->nsplit = lanes ? lanes : d->ndflt;
	if (rr_parse_udp(a->listen_spec, false, &a->ctl_addr, &a->ctl_len)) {
		fprintf(stderr, PROG ": --listen '%s': not [ADDR:]PORT\n", a->listen_spec);
		return -1;
	}
	if (a->metrics_spec && rr_parse_udp(a->metrics_spec, false, &a->mx_addr, &a->mx_len)) {
		fprintf(stderr, PROG ": --metrics '%s': not [ADDR:]PORT\n", a->metrics_spec);
		return -1;
	}
	if (a->ready_fd >= 0 && fcntl(a->ready_fd, F_GETFD) < 0) {
		fprintf(stderr, PROG ": --ready-fd %d: not an open descriptor\n", a->ready_fd);
		return -1;
	}
	/* the ready line (stdout) and READY=1 must not land on a member */
	if ((a->ready_fd >= 0 && recfs_spec_check_output(d->pack_spec, "--ready-fd", "(descriptor)", a->ready_fd)) ||
	    recfs_spec_check_output(d->pack_spec, "standard output", "(redirected)", 1)) {
		fprintf(stderr, PROG ": %s\n", recfs_errmsg());
		return -1;
	}
	return 0;
}

/* The pack, locked for the daemon's life, its members all there, and the
 * scans a crash left unsealed recovered: 0, or -1 (said; closed again). */
static int rd_open_pack(struct rd *d)
{
	/* the pack: the exclusive writer lock is held for the daemon's life */
	pthread_mutex_init(&d->pack_lock, NULL);
	pthread_mutex_init(&d->lock, NULL);
	if (!(d->gflush = rr_gflush_new())) {
		fprintf(stderr, PROG ": out of memory\n");
		return -1;
	}
	if (rr_pack_open(d->pack_spec, &d->p)) {
		fprintf(stderr, PROG ": %s\n", recfs_errmsg());
		return -1;
	}

	/* scans a crash left unsealed hold their extents: seal them at their
	 * durable end, as fsck.recfs -p does, before any scan allocates */
	struct recfs_check_stats cst;
	if (recfs_pack_recover(d->p, rd_recover_line, NULL, &cst)) {
		fprintf(stderr, PROG ": %s: %s\n", d->pack_spec, recfs_errmsg());
		goto out_close;
	}
	if (cst.recovered)
		fprintf(stderr, PROG ": recovered %u crashed recording%s (%llu bytes, %llu lost)\n", cst.recovered,
			cst.recovered == 1 ? "" : "s", (unsigned long long)cst.recovered_bytes,
			(unsigned long long)cst.lost_bytes);
	if (cst.unfixed)
		fprintf(stderr, PROG ": %u problem%s left that fsck.recfs -p does not repair: see fsck.recfs -n\n",
			cst.unfixed, cst.unfixed == 1 ? "" : "s");
	return 0;
out_close:
	recfs_pack_close(d->p);
	d->p = NULL;
	return -1;
}

/* Each stream: its engine, its ring (locked now: it takes time); each input
 * its socket, bound; nothing is received before all are ready.  0, or -1
 * (said; rd_streams_free frees what was made). */
static int rd_streams_setup(struct rd *d, const struct rd_args *a)
{
	unsigned lanes = d->nsplit ? d->nsplit : 1;
	if (d->nin * lanes > RD_MAX_STREAMS) {
		fprintf(stderr, PROG ": %u inputs of %u streams each: at most %u streams\n", d->nin, lanes,
			RD_MAX_STREAMS);
		return -1;
	}
	for (unsigned i = 0; i < d->nin; i++) {
		struct rd_input *in = &d->in[i];
		in->first = d->nst;
		in->n = lanes;
		for (unsigned l = 0; l < lanes; l++) {
			struct rd_stream *st = &d->st[d->nst];
			st->input = i;
			/* built apart: the label lives in the same object as the
			 * suffix, and snprintf's arguments may not overlap it.  A
			 * lane's name in the metrics: --split's by its thread,
			 * the others by their number */
			char lab[sizeof(in->label) + 1] = "", thr[16] = "";
			if (d->nin > 1)
				snprintf(lab, sizeof(lab), "_%s", in->label);
			if (l < d->ndflt)
				snprintf(thr, sizeof(thr), "_t%u", d->split_thread[l]);
			else if (d->nsplit > 1)
				snprintf(thr, sizeof(thr), "_lane%u", l);
			snprintf(st->suffix, sizeof(st->suffix), "%s%s", lab, thr);
			d->nst++;
			/* every stream's engine shares the pack, its lock, one
			 * group flush and the scans' free-space shares */
			struct rr_conf c = { .input = in->spec, .eo = a->eo, .p = d->p,
					     .pack_spec = d->pack_spec, .daemon = true,
					     .no_socket = l > 0, .pack_lock = &d->pack_lock,
					     .gflush = d->gflush, .share_left = d->share_left };
			if (a->eo.buffer) {
				c.eo.buffer = a->eo.buffer / lanes;
			} else {
				/* an eighth of what the machine has free, over the streams */
				c.eo.buffer = rr_mem_available() / 8 / (d->nin * lanes);
				if (c.eo.buffer < (64ull << 20))
					c.eo.buffer = 64ull << 20;
				if (c.eo.buffer > (1ull << 30))
					c.eo.buffer = 1ull << 30;
			}
			/* lane 0 binds the input's socket; a split receiver
			 * takes it over (the spec was checked by rd_add_input) */
			if (rr_new(&c, &st->r)) {
				fprintf(stderr, PROG ": %s\n", recfs_errmsg());
				return -1;
			}
			in->split.lane[l] = st->r;
		}
		if (d->nsplit) {
			in->split.n = lanes;
			in->split.fd = rr_input_take(in->split.lane[0]);
			in->split.strip = a->eo.strip;
			in->split.maps = calloc(RR_SEGQ, sizeof(*in->split.maps));
			in->split.seen = calloc(1, sizeof(*in->split.seen));
			if (!in->split.maps || !in->split.seen) {
				fprintf(stderr, PROG ": out of memory\n");
				return -1;
			}
		}
	}
	/* the socket buffer the kernel gave each input (it reports twice
	 * what it keeps): less than --rcvbuf without CAP_NET_ADMIN beyond
	 * net.core.rmem_max; net_protocol? reports the same figure */
	for (unsigned i = 0; i < d->nin; i++) {
		struct rd_input *in = &d->in[i];
		int fd = d->nsplit ? in->split.fd : rr_input_fd(d->st[in->first].r), have = 0;
		socklen_t hl = sizeof(have);
		if (fd >= 0 && !getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &have, &hl) && (uint64_t)have / 2 < a->eo.rcvbuf)
			fprintf(stderr,
				PROG ": input %s: the kernel gave a socket buffer of %d bytes, not the %" PRIu64
				     " asked (--rcvbuf): raise net.core.rmem_max, or give recfsd CAP_NET_ADMIN\n",
				in->label, have / 2, a->eo.rcvbuf);
	}
	/* --split's threads are the datastreams until the station sets its
	 * own; the receivers start with their map */
	rd_ds_defaults(d);
	rd_ds_plan(d, d->nsplit != 0, UINT64_MAX, NULL, 0);
	return 0;
}

/* Signals: every thread started after this blocks them; the main thread
 * waits for them with sigtimedwait. */
static void rd_signals(sigset_t *block, sigset_t *old)
{
	struct sigaction sa = { .sa_handler = rd_on_signal };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL); /* the terminal closed: seal and stop, as SIGTERM */
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(block);
	sigaddset(block, SIGINT);
	sigaddset(block, SIGTERM);
	sigaddset(block, SIGHUP);
	pthread_sigmask(SIG_BLOCK, block, old);
}

/* The writers, committers and receivers: 0, or -1 (said; rd_streams_stop
 * stops those started). */
static int rd_threads_start(struct rd *d)
{
	int err;

	d->t_start = rr_mono_ns();
	for (unsigned k = 0; k < d->nst; k++) {
		struct rd_stream *st = &d->st[k];
		if (rr_start(st->r, d->t_start)) {
			fprintf(stderr, PROG ": %s\n", recfs_errmsg());
			return -1;
		}
		st->started = true;
	}
	for (unsigned i = 0; i < d->nin; i++) {
		struct rd_input *in = &d->in[i];
		err = d->nsplit ? pthread_create(&in->rcv, NULL, rcv_split_main, &in->split)
				: pthread_create(&in->rcv, NULL, rcv_main, in->split.lane[0]);
		if (err) {
			fprintf(stderr, PROG ": cannot start input %s: %s\n", in->label, strerror(err));
			return -1;
		}
		in->started = true;
		if (in->cpu >= 0) {
			cpu_set_t set;
			CPU_ZERO(&set);
			CPU_SET(in->cpu, &set);
			if ((err = pthread_setaffinity_np(in->rcv, sizeof(set), &set)))
				fprintf(stderr, PROG ": input %s: cannot pin to CPU %d: %s\n", in->label,
					in->cpu, strerror(err));
		}
	}
	return 0;
}

/* Stop every stream: the receivers close their open segments, the writers
 * seal them.  3 when a recording failed or a writer did, else 0. */
static int rd_streams_stop(struct rd *d)
{
	int status = 0;

	for (unsigned k = 0; k < d->nst; k++)
		rr_stop(d->st[k].r);
	for (unsigned i = 0; i < d->nin; i++)
		if (d->in[i].started)
			pthread_join(d->in[i].rcv, NULL);
	for (unsigned k = 0; k < d->nst; k++) {
		struct rd_stream *st = &d->st[k];
		struct rr *r = st->r;
		if (!st->started)
			continue;
		rr_wait(r, d->in[st->input].started); /* its receiver may never have run */
		uint64_t posted = rr_seg_posted(r);
		for (uint64_t n = posted > RR_SEGQ ? posted - RR_SEGQ : 0; n < posted; n++) {
			struct rr_seg_result res;
			rr_seg_result(r, n, &res);
			if (res.state == RR_SEG_FAILED) {
				fprintf(stderr, PROG ": '%s': %s\n", res.name, res.msg);
				status = 3;
			}
		}
		struct rr_stats s;
		rr_stats(r, &s);
		if (s.wr_failed)
			status = 3;
	}
	return status;
}

/* What rd_streams_setup made. */
static void rd_streams_free(struct rd *d)
{
	for (unsigned i = 0; i < d->nin; i++) {
		if (d->nsplit && d->in[i].split.fd > 0)
			close(d->in[i].split.fd);
		free(d->in[i].split.maps);
		free(d->in[i].split.seen);
	}
	for (unsigned k = 0; k < d->nst; k++) {
		rr_free(d->st[k].r);
	}
	rr_gflush_free(d->gflush);
}

int main(int argc, char **argv)
{
	static struct rd rd_state;
	static struct rd_args a;
	struct rd *d = &rd_state;
	sigset_t block, old;
	int status = 1, err = rd_parse_args(argc, argv, d, &a);

	if (err)
		return err > 0 ? 0 : 1;
	if (rd_open_pack(d))
		return 1;
	if (rd_streams_setup(d, &a))
		goto out_inputs;
	rd_signals(&block, &old);
	if (rd_threads_start(d))
		goto out_stop;

	char ctl_where[96] = "", mx_where[96] = "";
	if (rd_ctl_start(d, &a.ctl_addr, a.ctl_len, ctl_where, sizeof(ctl_where)))
		goto out_stop;
	if (a.mx_len && rd_metrics_start(d, &a.mx_addr, a.mx_len, mx_where, sizeof(mx_where)))
		goto out_ctl;

	/* ready: every input is bound and drained, control is listening */
	rd_ready(d, a.ready_fd, ctl_where, mx_where);
	/* the signals stay blocked in this thread too: sigtimedwait takes
	 * them, and wakes ten times a second for rd_tick */
	while (!rd_stop_sig) {
		struct timespec tick = { 0, 100000000 };
		int sig = sigtimedwait(&block, NULL, &tick);
		if (sig > 0)
			rd_stop_sig = sig;
		rd_tick(d);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	fprintf(stderr, PROG ": %s: sealing the open scan and stopping\n", strsignal(rd_stop_sig));
	status = 0;

	rd_metrics_stop(d);
out_ctl:
	rd_ctl_stop(d);
out_stop:
	if (rd_streams_stop(d))
		status = 3;
out_inputs:
	rd_streams_free(d);
	err = recfs_pack_close(d->p);
	if (err && status == 0) {
		fprintf(stderr, PROG ": %s\n", recfs_errmsg());
		status = 3;
	}
	return status;
}
