/* SPDX-License-Identifier: MIT */
/*
 * recfs-play: send a recording out over UDP (the disk-to-network half of the
 * recorder), send a generated test stream, or check a recording against the
 * generators' pattern.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/gen.h"
#include "common/util.h"
#include "common/vdif.h"

#define PROG "recfs-play"
#define PL_BATCH 64

struct pl {
	const char *pack_spec, *name, *udp;
	enum rr_gen_kind gen, check;
	uint32_t packet_size, frame_size, threads, fps;
	bool legacy, sequence, verify, quiet;
	uint64_t rate, duration_ns, size, sndbuf;
	struct recfs_pack *p;
	struct recfs_rec rec;
	struct rr_gen g;  /* --gen's generator */
	uint32_t P;       /* payload bytes per datagram */
	int sock;
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: " PROG " [options] PACK NAME --udp HOST:PORT\n"
		"       " PROG " [options] --gen counter|vdif --udp HOST:PORT\n"
		"       " PROG " --check counter|vdif PACK NAME\n"
		"Send recording NAME over UDP, one datagram per VDIF frame (VDIF recordings)\n"
		"or per --packet-size bytes; or send a generated stream; or check a recording\n"
		"made from gen:counter / gen:vdif byte for byte.\n"
		"\n"
		"  -u, --udp HOST:PORT     destination\n"
		"  -r, --rate BYTES_PER_S  pace the payload rate (default 0: as fast as possible)\n"
		"  -P, --packet-size N     bytes per datagram for non-VDIF data (default 8192)\n"
		"      --sequence          prefix each datagram with an 8-byte little-endian\n"
		"                          sequence number (record with --strip 8)\n"
		"      --verify            check every chunk's checksum while reading\n"
		"      --sndbuf SIZE       socket send buffer (default 16M)\n"
		"  -g, --gen KIND          send a generated counter or vdif stream, no pack\n"
		"      --frame-size N      gen block/frame size (8192 counter, 8032 vdif)\n"
		"      --threads N, --frame-rate N, --legacy   gen:vdif headers (as recfs-record)\n"
		"  -d, --duration SECONDS  gen: stop after this long\n"
		"  -s, --size BYTES        gen: stop after this many bytes; play: send only these\n"
		"      --check KIND        verify NAME against the counter or vdif pattern\n"
		"  -q, --quiet             no summary\n"
		"  -h, --help, -V, --version\n");
}

static int pl_kind(const char *s, enum rr_gen_kind *k)
{
	if (!strcmp(s, "counter"))
		*k = RR_GEN_COUNTER;
	else if (!strcmp(s, "vdif"))
		*k = RR_GEN_VDIF;
	else
		return -EINVAL;
	return 0;
}

/* --check: read every committed byte (with checksum verification) and
 * compare it with the generator's pattern. */
static int pl_check(struct pl *pl)
{
	uint32_t block = pl->frame_size ? pl->frame_size : pl->rec.input.frame_size;
	struct rr_check c;
	size_t bs = 4u << 20;
	uint8_t *buf;
	int status = 0;

	if (!block)
		block = pl->check == RR_GEN_VDIF ? 8032 : 8192;
	if (rr_check_init(&c, pl->check, block)) {
		fprintf(stderr, PROG ": --check: block size %u is not usable\n", block);
		return 1;
	}
	buf = malloc(bs);
	if (!buf) {
		rr_check_free(&c);
		return 1;
	}
	uint64_t off = 0;
	for (;;) {
		ssize_t n = recfs_rec_pread(pl->p, &pl->rec, buf, bs, off, RECFS_READ_VERIFY);
		if (n < 0) {
			fprintf(stderr, PROG ": %s\n", recfs_errmsg());
			status = 1;
			goto out;
		}
		if (n == 0)
			break;
		rr_check_feed(&c, buf, (size_t)n);
		off += (uint64_t)n;
	}
	rr_check_end(&c);
	const char *state = pl->rec.state == RECFS_STATE_SEALED ? "sealed" : "recording";
	if (off != pl->rec.committed_len) {
		fprintf(stderr, PROG ": '%s': read %llu bytes, committed length is %llu\n", pl->name,
			(unsigned long long)off, (unsigned long long)pl->rec.committed_len);
		status = 1;
	}
	if (pl->check == RR_GEN_COUNTER)
		printf("'%s': %llu bytes, %s, counter pattern: %llu bad bytes", pl->name,
		       (unsigned long long)off, state, (unsigned long long)c.bad_bytes);
	else
		printf("'%s': %llu bytes, %s, vdif: %llu frames, %llu missing, %llu bad, %llu bad bytes",
		       pl->name, (unsigned long long)off, state, (unsigned long long)c.frames,
		       (unsigned long long)c.missing, (unsigned long long)c.bad_frames,
		       (unsigned long long)c.bad_bytes);
	if (c.bad_bytes) {
		printf(", first at byte %llu\n", (unsigned long long)c.first_bad);
		status = 1;
	} else {
		printf("\n");
	}
out:
	free(buf);
	rr_check_free(&c);
	return status;
}

/* Send buf[0..len) as datagrams of P bytes (the last may be shorter). */
static int pl_send(struct pl *pl, const uint8_t *buf, size_t len, uint32_t P, uint64_t *seq,
		   uint64_t *datagrams, uint64_t *sent, uint64_t t0)
{
	struct mmsghdr msgs[PL_BATCH];
	struct iovec iov[PL_BATCH][2];
	uint8_t seqb[PL_BATCH][8];
	size_t off = 0;

	while (off < len) {
		if (pl->rate) {
			uint64_t due = t0 + (uint64_t)((double)*sent / (double)pl->rate * 1e9);
			uint64_t now = rr_mono_ns();
			if (due > now)
				rr_sleep_ns(due - now);
		}
		unsigned n = 0;
		memset(msgs, 0, sizeof(msgs));
		while (n < PL_BATCH && off < len) {
			size_t k = len - off < P ? len - off : P;
			int i = 0;
			if (pl->sequence) {
				rr_put_le64(seqb[n], (*seq)++);
				iov[n][i++] = (struct iovec){ seqb[n], 8 };
			}
			iov[n][i++] = (struct iovec){ (void *)(buf + off), k };
			msgs[n].msg_hdr.msg_iov = iov[n];
			msgs[n].msg_hdr.msg_iovlen = (size_t)i;
			off += k;
			n++;
			/* paced: about 100 us of the stream per call, so the
			 * stream is smooth, not bursts of PL_BATCH datagrams */
			if (pl->rate && n >= pl->rate / 10000 / P)
				break;
		}
		unsigned done = 0;
		while (done < n) {
			int r = sendmmsg(pl->sock, msgs + done, n - done, 0);
			if (r < 0) {
				if (errno == EINTR || errno == ENOBUFS || errno == EAGAIN)
					continue;
				fprintf(stderr, PROG ": %s: send failed: %s\n", pl->udp, strerror(errno));
				return -errno;
			}
			for (int i = 0; i < r; i++)
				*sent += msgs[done + (unsigned)i].msg_hdr.msg_iov[pl->sequence ? 1 : 0].iov_len;
			done += (unsigned)r;
			*datagrams += (uint64_t)r;
		}
	}
	return 0;
}

#define PL_NBUF 4

/* Buffers filled by the reader thread, sent in order by main. */
struct pl_rd {
	struct pl *pl;
	const struct rr_gen *g;
	size_t bs;
	uint64_t end, t0;
	uint8_t *buf[PL_NBUF];
	ssize_t len[PL_NBUF];   /* > 0 data, 0 the end, < 0 an error (err) */
	unsigned head, tail;    /* filled, sent */
	bool quit;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	char err[512];
};

static void *pl_reader(void *arg)
{
	struct pl_rd *rd = arg;
	struct pl *pl = rd->pl;
	uint64_t off = 0;

	for (;;) {
		pthread_mutex_lock(&rd->lock);
		while (rd->head - rd->tail == PL_NBUF && !rd->quit)
			pthread_cond_wait(&rd->cond, &rd->lock);
		bool quit = rd->quit;
		unsigned i = rd->head % PL_NBUF;
		pthread_mutex_unlock(&rd->lock);
		if (quit)
			break;
		size_t want = rd->end - off < rd->bs ? (size_t)(rd->end - off) : rd->bs;
		ssize_t n;
		if (want == 0 || (pl->gen && pl->duration_ns && rr_mono_ns() - rd->t0 >= pl->duration_ns)) {
			n = 0;
		} else if (pl->gen) {
			rr_gen_fill(rd->g, rd->buf[i], off, want, false);
			n = (ssize_t)want;
		} else {
			n = recfs_rec_pread(pl->p, &pl->rec, rd->buf[i], want, off,
					    pl->verify ? RECFS_READ_VERIFY : 0);
			if (n < 0)
				snprintf(rd->err, sizeof(rd->err), "%s", recfs_errmsg());
		}
		pthread_mutex_lock(&rd->lock);
		rd->len[i] = n;
		rd->head++;
		pthread_cond_signal(&rd->cond);
		pthread_mutex_unlock(&rd->lock);
		if (n <= 0)
			break;
		off += (uint64_t)n;
	}
	return NULL;
}

static int pl_connect(struct pl *pl)
{
	struct sockaddr_storage ss;
	socklen_t len;
	if (rr_parse_udp(pl->udp, true, &ss, &len)) {
		fprintf(stderr, PROG ": --udp: '%s' is not HOST:PORT\n", pl->udp);
		return -EINVAL;
	}
	pl->sock = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (pl->sock < 0 || connect(pl->sock, (struct sockaddr *)&ss, len)) {
		fprintf(stderr, PROG ": %s: %s\n", pl->udp, strerror(errno));
		return -errno;
	}
	int want = pl->sndbuf > INT_MAX ? INT_MAX : (int)pl->sndbuf;
	if (setsockopt(pl->sock, SOL_SOCKET, SO_SNDBUFFORCE, &want, sizeof(want)))
		setsockopt(pl->sock, SOL_SOCKET, SO_SNDBUF, &want, sizeof(want));
	return 0;
}

/* A refused option value: the parser's one line (fs/lib/util.c). */
static int pl_opt(int err)
{
	if (err)
		fprintf(stderr, PROG ": %s\n", recfs_errmsg());
	return err;
}

/* The command line into pl: 0 to go on, 1 when it is done (help,
 * version), -1 on a refusal (said). */
static int pl_parse_args(int argc, char **argv, struct pl *pl)
{
	static const struct option lo[] = {
		{ "udp", required_argument, NULL, 'u' },
		{ "rate", required_argument, NULL, 'r' },
		{ "packet-size", required_argument, NULL, 'P' },
		{ "sequence", no_argument, NULL, 1 },
		{ "verify", no_argument, NULL, 2 },
		{ "sndbuf", required_argument, NULL, 3 },
		{ "gen", required_argument, NULL, 'g' },
		{ "frame-size", required_argument, NULL, 4 },
		{ "threads", required_argument, NULL, 5 },
		{ "frame-rate", required_argument, NULL, 6 },
		{ "legacy", no_argument, NULL, 7 },
		{ "duration", required_argument, NULL, 'd' },
		{ "size", required_argument, NULL, 's' },
		{ "check", required_argument, NULL, 8 },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 }
	};
	uint64_t v;
	int c;

	while ((c = getopt_long(argc, argv, "u:r:P:g:d:s:qhV", lo, NULL)) != -1) {
		switch (c) {
		case 'u': pl->udp = optarg; break;
		case 'r':
			if (pl_opt(recfs_parse_bytes("--rate", optarg, 0, 1ull << 40, &pl->rate)))
				return -1;
			break;
		case 'P':
			if (pl_opt(recfs_parse_bytes("--packet-size", optarg, 1, 65507, &v)))
				return -1;
			pl->packet_size = (uint32_t)v;
			break;
		case 1: pl->sequence = true; break;
		case 2: pl->verify = true; break;
		case 3:
			if (pl_opt(recfs_parse_bytes("--sndbuf", optarg, 4096, 1ull << 31, &pl->sndbuf)))
				return -1;
			break;
		case 'g':
			if (pl_kind(optarg, &pl->gen))
				return fprintf(stderr, PROG ": --gen: '%s' is not counter or vdif\n", optarg), -1;
			break;
		case 4:
			if (pl_opt(recfs_parse_bytes("--frame-size", optarg, 1, 65507, &v)))
				return -1;
			pl->frame_size = (uint32_t)v;
			break;
		case 5:
			if (pl_opt(recfs_parse_num("--threads", optarg, 1, RR_VDIF_MAX_THREADS, &v)))
				return -1;
			pl->threads = (uint32_t)v;
			break;
		case 6:
			if (pl_opt(recfs_parse_num("--frame-rate", optarg, 1, 1u << 24, &v)))
				return -1;
			pl->fps = (uint32_t)v;
			break;
		case 7: pl->legacy = true; break;
		case 'd':
			if (pl_opt(recfs_parse_secs("--duration", optarg, 1000000ull, RR_SECS_MAX, &pl->duration_ns)))
				return -1;
			break;
		case 's':
			if (pl_opt(recfs_parse_bytes("--size", optarg, 1, 1ull << 60, &pl->size)))
				return -1;
			break;
		case 8:
			if (pl_kind(optarg, &pl->check))
				return fprintf(stderr, PROG ": --check: '%s' is not counter or vdif\n", optarg), -1;
			break;
		case 'q': pl->quiet = true; break;
		case 'h': usage(stdout); return 1;
		case 'V': printf(PROG " " RECFS_VERSION_STRING "\n"); return 1;
		default: usage(stderr); return -1;
		}
	}
	int nargs = argc - optind;
	if (pl->gen ? nargs != 0 : nargs != 2) {
		fprintf(stderr, PROG ": expected %s (see --help)\n",
			pl->gen ? "no PACK NAME with --gen" : "PACK and NAME");
		return -1;
	}
	if (!pl->check && !pl->udp) {
		fprintf(stderr, PROG ": --udp HOST:PORT is required\n");
		return -1;
	}
	if (pl->gen && !pl->size && !pl->duration_ns) {
		fprintf(stderr, PROG ": --gen needs --size or --duration\n");
		return -1;
	}
	if (!pl->gen) {
		pl->pack_spec = argv[optind];
		pl->name = argv[optind + 1];
	}
	return 0;
}

/* The generator, or the pack and the recording; the payload size.  0, or
 * -1 (said, nothing left open). */
static int pl_open(struct pl *pl)
{
	if (pl->gen) {
		uint32_t block = pl->frame_size ? pl->frame_size : pl->gen == RR_GEN_VDIF ? 8032u : 8192u;
		if (rr_gen_init(&pl->g, pl->gen, block, pl->threads, pl->fps, pl->legacy)) {
			fprintf(stderr, PROG ": --frame-size %u is not usable\n", block);
			return -1;
		}
		pl->P = pl->packet_size ? pl->packet_size : block;
		return 0;
	}
	if (recfs_pack_open(pl->pack_spec, 0, &pl->p)) {
		fprintf(stderr, PROG ": %s\n", recfs_errmsg());
		return -1;
	}
	if (recfs_rec_lookup(pl->p, pl->name, &pl->rec)) {
		fprintf(stderr, PROG ": %s\n", recfs_errmsg());
		recfs_pack_close(pl->p);
		pl->p = NULL;
		return -1;
	}
	if (pl->rec.input.format == RECFS_FMT_VDIF && pl->rec.input.frame_size && !pl->packet_size)
		pl->P = pl->rec.input.frame_size;
	else
		pl->P = pl->packet_size ? pl->packet_size
		      : pl->rec.input.frame_size ? pl->rec.input.frame_size : 8192u;
	return 0;
}

/* what goes on the wire: the payload behind its --sequence number */
static int pl_fits(const struct pl *pl)
{
	if ((uint64_t)pl->P + (pl->sequence ? 8 : 0) > 65507) {
		fprintf(stderr, PROG ": %s%s%s: %u-byte payloads%s do not fit a datagram (65507 bytes); "
			"use --packet-size\n", pl->name ? "'" : "", pl->name ? pl->name : "--gen",
			pl->name ? "'" : "", pl->P, pl->sequence ? " behind an 8-byte --sequence" : "");
		return -1;
	}
	return 0;
}

/* Read ahead in a thread, send in this one; the summary.  The exit status. */
static int pl_play(struct pl *pl)
{
	int status = 1;

	/* a whole number of datagrams per read; reads run ahead of the
	 * sender in a thread of their own */
	struct pl_rd rd = { .pl = pl, .g = &pl->g, .bs = (size_t)((4u << 20) / pl->P + 1) * pl->P,
			    .end = pl->size ? pl->size : UINT64_MAX, .t0 = rr_mono_ns() };
	pthread_mutex_init(&rd.lock, NULL);
	pthread_cond_init(&rd.cond, NULL);
	for (unsigned i = 0; i < PL_NBUF; i++)
		if (!(rd.buf[i] = malloc(rd.bs))) {
			fprintf(stderr, PROG ": out of memory\n");
			goto out;
		}
	pthread_t thr;
	if (pthread_create(&thr, NULL, pl_reader, &rd)) {
		fprintf(stderr, PROG ": cannot start the reader\n");
		goto out;
	}
	uint64_t seq = 0, datagrams = 0, sent = 0, t0 = rd.t0;
	status = 0;
	for (;;) {
		pthread_mutex_lock(&rd.lock);
		while (rd.tail == rd.head)
			pthread_cond_wait(&rd.cond, &rd.lock);
		unsigned i = rd.tail % PL_NBUF;
		ssize_t n = rd.len[i];
		pthread_mutex_unlock(&rd.lock);
		if (n < 0) {
			fprintf(stderr, PROG ": %s\n", rd.err);
			status = 1;
			break;
		}
		if (n == 0)
			break;
		if (pl_send(pl, rd.buf[i], (size_t)n, pl->P, &seq, &datagrams, &sent, t0)) {
			status = 1;
			break;
		}
		pthread_mutex_lock(&rd.lock);
		rd.tail++;
		pthread_cond_signal(&rd.cond);
		pthread_mutex_unlock(&rd.lock);
	}
	pthread_mutex_lock(&rd.lock);
	rd.quit = true;
	pthread_cond_signal(&rd.cond);
	pthread_mutex_unlock(&rd.lock);
	pthread_join(thr, NULL);
	double secs = (double)(rr_mono_ns() - t0) * 1e-9;
	if (!pl->quiet) {
		char b1[32], b2[32];
		fprintf(stderr, PROG ": sent %llu datagrams, %s in %.2f s (%s/s)\n",
			(unsigned long long)datagrams, recfs_fmt_size(sent, b1, sizeof(b1)), secs,
			recfs_fmt_size(secs > 0 ? (uint64_t)((double)sent / secs) : 0, b2, sizeof(b2)));
	}
out:
	for (unsigned i = 0; i < PL_NBUF; i++)
		free(rd.buf[i]);
	return status;
}

int main(int argc, char **argv)
{
	struct pl pl = { .threads = 1, .fps = 10000, .sndbuf = 16u << 20, .sock = -1 };
	int status = 1, err = pl_parse_args(argc, argv, &pl);

	if (err)
		return err > 0 ? 0 : 1;
	if (pl_open(&pl))
		return 1;
	if (!pl.gen && pl.check)
		status = pl_check(&pl);
	else if (!pl_fits(&pl) && !pl_connect(&pl))
		status = pl_play(&pl);
	if (pl.sock >= 0)
		close(pl.sock);
	if (pl.p)
		recfs_pack_close(pl.p);
	rr_gen_free(&pl.g);
	return status;
}
