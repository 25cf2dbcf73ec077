/* SPDX-License-Identifier: MIT */
/*
 * recfs-record: write one stream onto a pack at line rate.
 *
 * Three threads share one RAM ring of chunk-sized slots:
 *  - the receiver (rcv_*) fills the ring from the input: read() for a
 *    byte stream, recvmmsg() straight into the ring for UDP, or the
 *    built-in generators; it never waits for a disk, only for ring space
 *    (byte streams) or it drops datagrams and counts them (UDP);
 *  - the writer (wr_*, the main thread) sends every full slot to its member
 *    with one libaio request per chunk, members' queues kept at
 *    --queue-depth, and frees slots in order as their writes complete;
 *  - the committer (cm_*) makes the written prefix durable every
 *    --commit-interval through recfs_rec_commit and draws the progress line.
 * The recording is created only when the first byte arrives, so a run that
 * receives nothing leaves the pack untouched.
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

#include "rec.h"

#define PROG "recfs-record"

/* exit statuses (recfs-record.1, EXIT STATUS) */
enum {
	RR_EXIT_OK = 0,       /* sealed: input ended, limit reached, or signal */
	RR_EXIT_NOTHING = 1,  /* nothing recorded: usage, pack, name, input, no data */
	RR_EXIT_FULL = 2,     /* pack full: sealed at the last byte that fit */
	RR_EXIT_IO = 3,       /* member I/O error: sealed at the durable prefix */
	RR_EXIT_INPUT = 4,    /* input failed mid-stream: sealed at what arrived */
};

enum rr_stop {
	RR_STOP_NONE = 0,
	RR_STOP_EOF,
	RR_STOP_DURATION,
	RR_STOP_SIZE,
	RR_STOP_SIGNAL,
	RR_STOP_FULL,
	RR_STOP_IOERR,
	RR_STOP_INPUT,
};

static const char *const rr_stop_what[] = {
	[RR_STOP_NONE] = "stopped",
	[RR_STOP_EOF] = "input ended",
	[RR_STOP_DURATION] = "--duration reached",
	[RR_STOP_SIZE] = "--size reached",
	[RR_STOP_SIGNAL] = "stopped by signal",
	[RR_STOP_FULL] = "pack full",
	[RR_STOP_IOERR] = "member write error",
	[RR_STOP_INPUT] = "input error",
};

enum rr_input_kind { RR_IN_FD, RR_IN_UDP, RR_IN_GEN };

struct rr_member_stat {
	uint64_t max_ns, sum_ns, writes;
	uint64_t short_writes;           /* completed short; the rest sent again */
};

struct rr {
	/* options */
	const char *pack_spec, *name, *input_spec, *stats_json;
	FILE *json_f;                    /* --stats-json, opened before the start */
	enum rr_input_kind in_kind;
	const char *in_path;             /* file:PATH, NULL for stdin */
	int in_fd;
	bool fmt_vdif;
	uint32_t packet_size, strip, frame_size, threads, fps;
	bool legacy;
	uint64_t rcvbuf, rate, duration_ns, size_limit, buffer;
	uint32_t qd;
	uint64_t commit_ns;
	int progress;                    /* -1 auto, 0 off, 1 on */
	bool quiet;
	bool no_rt;
	bool rt_rcv, rt_wr;              /* SCHED_FIFO obtained */
	struct rr_gen gen;

	/* pack */
	struct recfs_pack *p;
	const struct recfs_geom *g;
	struct recfs_rec rec;           /* the committer's (main's after the join) */
	_Atomic bool created;           /* rec and t_first are set (release) */
	uint32_t chunk;

	/* ring: nslots chunk-sized slots, stream byte s lives at s % size */
	uint8_t *ring;
	uint64_t ring_size, nslots;
	bool ring_huge, ring_locked;

	_Atomic uint64_t filled;    /* stream bytes in the ring (receiver) */
	_Atomic uint64_t released;  /* stream bytes written and freed (writer) */
	_Atomic uint64_t limit;     /* receiver stops here */
	_Atomic bool limit_is_alloc;
	_Atomic bool eof;           /* receiver done: filled is final */
	_Atomic int stop;           /* enum rr_stop, first reason wins */
	_Atomic uint64_t ring_max;  /* max unwritten bytes in the ring */
	_Atomic uint32_t learned_frame; /* VDIF frame / UDP datagram size seen */
	int data_efd, space_efd, aio_efd;

	/* receiver statistics; loss_pub is the committer's copy */
	struct recfs_loss loss;
	uint64_t ring_dropped, kernel_dropped; /* loss.dropped is their sum */
	uint32_t ovfl_last;              /* the socket's last drop count */
	uint64_t coalesce_ns;            /* sleep after a thin batch (0: never) */
	pthread_mutex_t loss_lock;
	struct recfs_loss loss_pub;
	char in_err[256];

	/* writer */
	_Atomic uint64_t done_chunks;    /* chunks [0, done) written */
	_Atomic uint64_t done_bytes;     /* stream bytes in those chunks */
	struct rr_member_stat mst[RECFS_MAX_MEMBERS];
	int err_member, err_errno;
	long err_short;                  /* bytes a short write wrote, -1 none */
	uint32_t err_len;                /* of that request */
	uint64_t err_off;
	pthread_mutex_t csum_lock;
	uint64_t *csums, csum_base, csum_n, csum_cap;
	/* the partial chunk the writer wrote when the input stalled: stream
	 * bytes [0, tail_len) are on the members, the last chunk's checksum
	 * over tail_len % chunk bytes is tail_csum (under csum_lock) */
	uint64_t tail_len, tail_csum;
	_Atomic bool tail_req;           /* committer: write the partial chunk */
	_Atomic bool tail_ready;         /* writer: a new tail_len to commit */

	/* committer */
	pthread_mutex_t cm_lock;
	pthread_cond_t cm_cond;
	bool cm_quit;
	uint64_t commits, commit_max_ns;
	int cm_err;
	char cm_msg[512];
	bool progress_shown;

	uint64_t t_start, t_first, t_end;
};

static volatile sig_atomic_t rr_signal;

static void rr_on_signal(int sig)
{
	rr_signal = sig;
}

static void rr_set_stop(struct rr *r, enum rr_stop why)
{
	int none = RR_STOP_NONE;
	atomic_compare_exchange_strong(&r->stop, &none, (int)why);
}

static void rr_kick(int efd)
{
	uint64_t one = 1;
	ssize_t n = write(efd, &one, sizeof(one));
	(void)n;
}

static void rr_drain(int efd)
{
	uint64_t v;
	ssize_t n = read(efd, &v, sizeof(v));
	(void)n;
}

/* ------------------------------------------------------------------ ring */
static uint64_t rr_mem_available(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[256];
	unsigned long long kb = 0;
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return (uint64_t)kb * 1024;
}

static int rr_ring_alloc(struct rr *r)
{
	uint64_t want = r->buffer;
	/* the default keeps two full queues of chunks; an explicit --buffer
	 * may be smaller (fewer writes in flight), down to 2 chunks a member */
	uint64_t min = (uint64_t)r->chunk * r->g->members * (r->buffer ? 2 : r->qd * 2);

	if (!want) {
		/* an eighth of what the machine has free, 64 MiB .. 1 GiB */
		want = rr_mem_available() / 8;
		if (want < (64ull << 20))
			want = 64ull << 20;
		if (want > (1ull << 30))
			want = 1ull << 30;
	}
	if (want < min)
		want = min;
	want = want / r->chunk * r->chunk;
	r->nslots = want / r->chunk;
	r->ring_size = want;

	void *m = MAP_FAILED;
	if (want % (2u << 20) == 0)
		m = mmap(NULL, want, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_POPULATE, -1, 0);
	if (m != MAP_FAILED) {
		r->ring_huge = true;
	} else {
		m = mmap(NULL, want, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED) {
			fprintf(stderr, PROG ": cannot allocate a %llu-byte ring buffer: %s\n",
				(unsigned long long)want, strerror(errno));
			return -ENOMEM;
		}
		madvise(m, want, MADV_HUGEPAGE);
	}
	/* locked and touched now, so the receiver never takes a page fault */
	r->ring_locked = mlock(m, want) == 0;
	if (!r->ring_locked)
		for (uint64_t o = 0; o < want; o += 4096)
			((volatile uint8_t *)m)[o] = 0;
	r->ring = m;
	return 0;
}

static uint64_t rr_ring_free(struct rr *r, uint64_t filled)
{
	return r->ring_size - (filled - atomic_load_explicit(&r->released, memory_order_acquire));
}

/* copy out of / into the ring at stream offset s, across the wrap */
static void rr_ring_read(struct rr *r, uint64_t s, void *buf, size_t n)
{
	uint64_t pos = s % r->ring_size, k = r->ring_size - pos < n ? r->ring_size - pos : n;
	memcpy(buf, r->ring + pos, k);
	memcpy((uint8_t *)buf + k, r->ring, n - k);
}

static void rr_ring_write(struct rr *r, uint64_t s, const void *buf, size_t n)
{
	uint64_t pos = s % r->ring_size, k = r->ring_size - pos < n ? r->ring_size - pos : n;
	memcpy(r->ring + pos, buf, k);
	memcpy(r->ring, (const uint8_t *)buf + k, n - k);
}

/* -------------------------------------------------------------- receiver */
struct rr_vdif_stream {
	struct rr_vdif_track t;
	uint64_t next;     /* stream offset of the next frame header */
	bool resync;       /* looking for the first valid header */
};

/* Publish new bytes [old, now): loss snapshot, wake the writer on a chunk. */
static void rcv_publish(struct rr *r, uint64_t old, uint64_t now)
{
	atomic_store_explicit(&r->filled, now, memory_order_release);
	uint64_t rel = atomic_load_explicit(&r->released, memory_order_acquire);
	uint64_t fill = now > rel ? now - rel : 0;
	if (fill > atomic_load_explicit(&r->ring_max, memory_order_relaxed))
		atomic_store_explicit(&r->ring_max, fill, memory_order_relaxed);
	if (old / r->chunk != now / r->chunk || old == 0) {
		if (r->fmt_vdif || r->in_kind == RR_IN_UDP) {
			pthread_mutex_lock(&r->loss_lock);
			r->loss_pub = r->loss;
			pthread_mutex_unlock(&r->loss_lock);
		}
		rr_kick(r->data_efd);
	}
}

/* VDIF inside a byte stream: frames back to back, headers read in place.
 * Until the first valid header the scan moves in 8-byte steps and counts
 * the whole unreadable run as one invalid frame. */
static void rcv_vdif_scan(struct rr *r, struct rr_vdif_stream *vs, uint64_t filled)
{
	uint8_t hdr[32];
	while (vs->next + 32 <= filled) {
		rr_ring_read(r, vs->next, hdr, sizeof(hdr));
		if (!vs->t.frame_size) {
			struct rr_vdif_hdr h;
			if (!rr_vdif_decode(hdr, &h)) {
				if (!vs->resync)
					r->loss.invalid++;
				vs->resync = true;
				vs->next += 8;
				continue;
			}
			vs->resync = false;
		}
		uint32_t len = rr_vdif_frame(&vs->t, hdr, 0, vs->next);
		vs->next += len ? len : vs->t.frame_size; /* bad header: skip one frame */
	}
}

/* Wait for ring space; false when told to stop. */
static bool rcv_wait_space(struct rr *r, uint64_t filled)
{
	while (rr_ring_free(r, filled) == 0) {
		if (atomic_load(&r->stop) || rr_signal)
			return false;
		struct pollfd pf = { .fd = r->space_efd, .events = POLLIN };
		if (poll(&pf, 1, 100) > 0)
			rr_drain(r->space_efd);
	}
	return true;
}

/* Common per-iteration checks; returns the byte budget for this step (0:
 * stop). */
static uint64_t rcv_budget(struct rr *r, uint64_t filled, uint64_t deadline)
{
	if (rr_signal) {
		rr_set_stop(r, RR_STOP_SIGNAL);
		return 0;
	}
	if (atomic_load(&r->stop))
		return 0;
	if (deadline && rr_mono_ns() >= deadline) {
		rr_set_stop(r, RR_STOP_DURATION);
		return 0;
	}
	uint64_t lim = atomic_load(&r->limit);
	if (filled >= lim) {
		rr_set_stop(r, atomic_load(&r->limit_is_alloc) ? RR_STOP_FULL : RR_STOP_SIZE);
		return 0;
	}
	return lim - filled;
}

static void rcv_stream(struct rr *r)
{
	uint64_t filled = 0, deadline = r->duration_ns ? rr_mono_ns() + r->duration_ns : 0;
	struct rr_vdif_stream vs = { 0 };
	bool tmpl_ok = false;  /* every slot holds the counter template already */
	bool can_tmpl = r->in_kind == RR_IN_GEN && r->chunk % r->gen.block == 0;
	uint64_t t0 = rr_mono_ns();

	if (r->fmt_vdif && rr_vdif_track_init(&vs.t, r->frame_size, &r->loss)) {
		snprintf(r->in_err, sizeof(r->in_err), "out of memory");
		rr_set_stop(r, RR_STOP_INPUT);
		return;
	}
	for (;;) {
		uint64_t budget = rcv_budget(r, filled, deadline);
		if (!budget)
			break;
		if (!rcv_wait_space(r, filled))
			continue;
		uint64_t pos = filled % r->ring_size;
		uint64_t n = rr_ring_free(r, filled);
		if (n > r->ring_size - pos)
			n = r->ring_size - pos;
		if (n > budget)
			n = budget;

		if (r->in_kind == RR_IN_GEN) {
			if (r->rate) {
				/* wr.c-style paced input: bytes due by now */
				uint64_t due = (uint64_t)((double)(rr_mono_ns() - t0) * 1e-9 * (double)r->rate);
				if (due <= filled) {
					rr_sleep_ns(1000000);
					continue;
				}
				if (n > due - filled)
					n = due - filled;
			}
			if (n > r->chunk)
				n = r->chunk;
			rr_gen_fill(&r->gen, r->ring + pos, filled, n, tmpl_ok);
		} else {
			struct pollfd pf = { .fd = r->in_fd, .events = POLLIN };
			int pr = poll(&pf, 1, 100);
			if (pr == 0 || (pr < 0 && errno == EINTR))
				continue;
			ssize_t got = read(r->in_fd, r->ring + pos, n);
			if (got < 0) {
				if (errno == EINTR || errno == EAGAIN)
					continue;
				snprintf(r->in_err, sizeof(r->in_err), "%s: read failed: %s",
					 r->in_path ? r->in_path : "stdin", strerror(errno));
				rr_set_stop(r, RR_STOP_INPUT);
				break;
			}
			if (got == 0) {
				rr_set_stop(r, RR_STOP_EOF);
				break;
			}
			n = (uint64_t)got;
		}
		uint64_t old = filled;
		filled += n;
		if (can_tmpl && filled >= r->ring_size)
			tmpl_ok = true;
		if (r->fmt_vdif) {
			rcv_vdif_scan(r, &vs, filled);
			if (vs.t.frame_size && !atomic_load_explicit(&r->learned_frame, memory_order_relaxed))
				atomic_store(&r->learned_frame, vs.t.frame_size); /* stored at create */
		}
		rcv_publish(r, old, filled);
	}
	if (r->fmt_vdif) {
		pthread_mutex_lock(&r->loss_lock);
		r->loss_pub = r->loss;
		pthread_mutex_unlock(&r->loss_lock);
		rr_vdif_track_free(&vs.t);
	}
}

#define RR_BATCH 64
#define RR_COALESCE_NS 200000

/* The socket's drop count (SO_MEMINFO's SK_MEMINFO_DROPS, cumulative, 32
 * bits), read once a chunk rather than as a control message on every
 * datagram (SO_RXQ_OVFL: 3 % of the receiver's cycles); the recording's
 * `dropped` is ring-full plus kernel drops. */
static void rcv_kernel_drops(struct rr *r)
{
	uint32_t mi[SK_MEMINFO_VARS];
	socklen_t len = sizeof(mi);
	if (getsockopt(r->in_fd, SOL_SOCKET, SO_MEMINFO, mi, &len) == 0 &&
	    len > SK_MEMINFO_DROPS * sizeof(uint32_t)) {
		r->kernel_dropped += (uint32_t)(mi[SK_MEMINFO_DROPS] - r->ovfl_last);
		r->ovfl_last = mi[SK_MEMINFO_DROPS];
	}
	r->loss.dropped = r->ring_dropped + r->kernel_dropped;
}

static void rcv_udp(struct rr *r)
{
	uint64_t filled = 0, deadline = r->duration_ns ? rr_mono_ns() + r->duration_ns : 0;
	struct mmsghdr msgs[RR_BATCH];
	struct iovec iov[RR_BATCH][3];
	uint8_t stripbuf[RR_BATCH][64];
	uint8_t *scratch = NULL, *tmp = NULL;
	struct rr_vdif_track vt = { 0 };
	const int sock = r->in_fd;
	bool at_limit = false;

	scratch = malloc(65536);
	/* tmp closes the holes wrong-sized datagrams leave: needed as soon
	 * as the datagram size is known, given or learned */
	if (r->packet_size)
		tmp = malloc(r->packet_size);
	if (!scratch || (r->packet_size && !tmp) ||
	    (r->fmt_vdif && rr_vdif_track_init(&vt, 0, &r->loss))) {
		snprintf(r->in_err, sizeof(r->in_err), "out of memory");
		rr_set_stop(r, RR_STOP_INPUT);
		goto out_free;
	}
	for (;;) {
		uint64_t budget = rcv_budget(r, filled, deadline);
		if (!budget)
			break;
		if (!r->packet_size) {
			/* learn the datagram size from the first one (the socket
			 * has a receive timeout: the loop sees stop flags) */
			ssize_t n = recv(sock, scratch, 65536, MSG_PEEK | MSG_TRUNC);
			if (n < 0) {
				if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
					continue; /* the receive timeout: look at the flags */
				snprintf(r->in_err, sizeof(r->in_err), "%s: receive failed: %s",
					 r->input_spec, strerror(errno));
				rr_set_stop(r, RR_STOP_INPUT);
				break;
			}
			if ((uint64_t)n <= r->strip) {
				r->loss.packets++;
				r->loss.wrong_size++;
				if (recv(sock, scratch, 65536, MSG_DONTWAIT) < 0)
					continue;
				continue;
			}
			r->packet_size = (uint32_t)n - r->strip;
			tmp = malloc(r->packet_size);
			if (!tmp) {
				snprintf(r->in_err, sizeof(r->in_err), "out of memory");
				rr_set_stop(r, RR_STOP_INPUT);
				break;
			}
		}
		const uint32_t P = r->packet_size;
		if (r->fmt_vdif && !atomic_load_explicit(&r->learned_frame, memory_order_relaxed))
			atomic_store(&r->learned_frame, P); /* stored at create */
		uint64_t room = rr_ring_free(r, filled) / P;
		unsigned nm = room < RR_BATCH ? (unsigned)room : RR_BATCH;
		if (nm && budget < (uint64_t)nm * P) /* the last datagram of --size */
			nm = (unsigned)((budget + P - 1) / P);

		memset(msgs, 0, sizeof(msgs));
		if (nm == 0) {
			/* ring full: drain the socket and count what is lost */
			for (unsigned i = 0; i < RR_BATCH; i++) {
				iov[i][0] = (struct iovec){ scratch, 65536 };
				msgs[i].msg_hdr.msg_iov = iov[i];
				msgs[i].msg_hdr.msg_iovlen = 1;
			}
			int got = recvmmsg(sock, msgs, RR_BATCH, MSG_WAITFORONE, NULL);
			if (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
				snprintf(r->in_err, sizeof(r->in_err), "%s: receive failed: %s",
					 r->input_spec, strerror(errno));
				rr_set_stop(r, RR_STOP_INPUT);
				break;
			}
			if (got <= 0)
				continue;
			r->loss.packets += (uint64_t)got;
			r->ring_dropped += (uint64_t)got;
			rcv_kernel_drops(r);
			continue;
		}
		for (unsigned i = 0; i < nm; i++) {
			uint64_t s = filled + (uint64_t)i * P;
			uint64_t pos = s % r->ring_size;
			int k = 0;
			if (r->strip)
				iov[i][k++] = (struct iovec){ stripbuf[i], r->strip };
			if (pos + P <= r->ring_size) {
				iov[i][k++] = (struct iovec){ r->ring + pos, P };
			} else {
				iov[i][k++] = (struct iovec){ r->ring + pos, r->ring_size - pos };
				iov[i][k++] = (struct iovec){ r->ring, P - (r->ring_size - pos) };
			}
			msgs[i].msg_hdr.msg_iov = iov[i];
			msgs[i].msg_hdr.msg_iovlen = (size_t)k;
		}
		/* block for the first datagram (up to the receive timeout),
		 * then take what is queued: one syscall per batch */
		int got = recvmmsg(sock, msgs, nm, MSG_WAITFORONE, NULL);
		if (got < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
				continue;
			snprintf(r->in_err, sizeof(r->in_err), "%s: receive failed: %s", r->input_spec,
				 strerror(errno));
			rr_set_stop(r, RR_STOP_INPUT);
			break;
		}
		/* the kernel's drop count, read once a chunk (for rcv_publish's
		 * loss snapshot) and right after the call that reaches the
		 * limit, so no drop from after the last datagram is counted */
		at_limit = got > 0 && (uint64_t)got * P >= budget;
		if (got > 0 && (filled / r->chunk != (filled + (uint64_t)got * P) / r->chunk || at_limit))
			rcv_kernel_drops(r);
		if (got > 0 && got < RR_BATCH / 4 && r->coalesce_ns && !at_limit)
			rr_sleep_ns(r->coalesce_ns); /* let a batch gather */
		uint64_t old = filled, dst = filled;
		for (int i = 0; i < got; i++) {
			uint64_t src = filled + (uint64_t)i * P;
			r->loss.packets++;
			if (msgs[i].msg_len != r->strip + P || (msgs[i].msg_hdr.msg_flags & MSG_TRUNC)) {
				r->loss.wrong_size++;
				continue;
			}
			if (dst != src) {
				/* a wrong-sized datagram before this one: close the hole */
				rr_ring_read(r, src, tmp, P);
				rr_ring_write(r, dst, tmp, P);
			}
			if (r->fmt_vdif) {
				uint8_t hdr[32] = { 0 }; /* a datagram under 32 bytes: zeros past it */
				rr_ring_read(r, dst, hdr, sizeof(hdr) < P ? sizeof(hdr) : P);
				rr_vdif_frame(&vt, hdr, P, dst);
			}
			dst += P;
		}
		filled = dst;
		if (filled > old + budget)
			filled = old + budget; /* cut the last datagram at the limit */
		if (filled != old)
			rcv_publish(r, old, filled);
	}
out_free:
	if (!at_limit) /* stopped by a signal, --duration, an error: until now */
		rcv_kernel_drops(r);
	pthread_mutex_lock(&r->loss_lock);
	r->loss_pub = r->loss;
	pthread_mutex_unlock(&r->loss_lock);
	rr_vdif_track_free(&vt);
	free(scratch);
	free(tmp);
}

/* UDP: the socket must be drained whatever else runs, so the receiver (and
 * below it the writer) run SCHED_FIFO where permitted. */
static bool rr_realtime(int prio)
{
	struct sched_param sp = { .sched_priority = prio };
	return pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) == 0;
}

static void *rcv_main(void *arg)
{
	struct rr *r = arg;
	if (r->in_kind == RR_IN_UDP && !r->no_rt)
		r->rt_rcv = rr_realtime(20);
	if (r->in_kind == RR_IN_UDP)
		rcv_udp(r);
	else
		rcv_stream(r);
	atomic_store_explicit(&r->eof, true, memory_order_release);
	rr_kick(r->data_efd);
	return NULL;
}

/* -------------------------------------------------------------- committer */
/* Checksums of chunks [from, to), copied out under the lock, for a commit
 * at len bytes: when len is the partial chunk the writer wrote on a stall,
 * the last one is that write's.  NULL when one is missing (never pushed:
 * the array could not grow) or out of memory. */
static uint64_t *cm_csums(struct rr *r, uint64_t from, uint64_t to, uint64_t len)
{
	uint64_t *v = malloc((to - from + 1) * sizeof(*v));
	if (!v)
		return NULL;
	pthread_mutex_lock(&r->csum_lock);
	uint64_t n = to - from;
	bool tail = len % r->chunk && len == r->tail_len;
	if (tail)
		n--;
	if (from < r->csum_base || from + n > r->csum_base + r->csum_n) {
		pthread_mutex_unlock(&r->csum_lock);
		free(v);
		return NULL;
	}
	if (n)
		memcpy(v, r->csums + (from - r->csum_base), n * sizeof(*v));
	if (tail)
		v[n] = r->tail_csum;
	pthread_mutex_unlock(&r->csum_lock);
	return v;
}

/* Drop checksums below chunk `upto` (committed). */
static void cm_csums_trim(struct rr *r, uint64_t upto)
{
	pthread_mutex_lock(&r->csum_lock);
	if (upto > r->csum_base) {
		uint64_t k = upto - r->csum_base;
		memmove(r->csums, r->csums + k, (r->csum_n - k) * sizeof(*r->csums));
		r->csum_n -= k;
		r->csum_base = upto;
	}
	pthread_mutex_unlock(&r->csum_lock);
}

/* The loss snapshot to store with `len` bytes: gaps past len are left out. */
static void cm_loss(struct rr *r, uint64_t len, struct recfs_loss *out)
{
	pthread_mutex_lock(&r->loss_lock);
	*out = r->loss_pub;
	pthread_mutex_unlock(&r->loss_lock);
	uint32_t k = 0;
	for (uint32_t i = 0; i < out->gap_count; i++)
		if (out->gaps[i].offset <= len)
			out->gaps[k++] = out->gaps[i];
	out->gap_count = k;
}

/* Commit (or seal) the recording at len bytes. */
static int cm_commit(struct rr *r, uint64_t len, bool seal)
{
	uint64_t from = r->rec.committed_len / r->chunk;
	uint64_t to = (len + r->chunk - 1) / r->chunk;
	struct recfs_loss loss;
	struct recfs_commit c = { .len = len, .loss = &loss };
	uint64_t *cs = NULL;
	int err;

	if (len > r->rec.committed_len) {
		/* only new bytes take checksums: a seal at the committed length
		 * keeps the ones stored (the partial chunk's is in the entry) */
		cs = cm_csums(r, from, to, len);
		if (!cs)
			return recfs_seterr(-ENOMEM, "'%s': out of memory for chunk checksums", r->name);
	}
	c.csums = cs;
	cm_loss(r, len, &loss);
	uint64_t t0 = rr_mono_ns();
	err = seal ? recfs_rec_seal(r->p, &r->rec, &c) : recfs_rec_commit(r->p, &r->rec, &c);
	uint64_t dt = rr_mono_ns() - t0;
	free(cs);
	if (err)
		return err;
	r->commits++;
	if (dt > r->commit_max_ns)
		r->commit_max_ns = dt;
	cm_csums_trim(r, len / r->chunk);
	return 0;
}

static void rr_progress(struct rr *r, bool final)
{
	if (!r->progress)
		return;
	uint64_t now = rr_mono_ns();
	uint64_t bytes = atomic_load(&r->done_bytes);
	uint64_t t0 = atomic_load_explicit(&r->created, memory_order_acquire) ? r->t_first : r->t_start;
	double secs = (double)(now - t0) * 1e-9;
	uint64_t filled = atomic_load(&r->filled), rel = atomic_load(&r->released);
	char b1[32], b2[32], b3[32], b4[32];
	pthread_mutex_lock(&r->loss_lock);
	uint64_t dropped = r->loss_pub.dropped, lost = r->loss_pub.frames_lost;
	pthread_mutex_unlock(&r->loss_lock);
	fprintf(stderr, "\r%s  %s/s  ring %s (max %s)  dropped %llu  lost %llu \033[K%s",
		recfs_fmt_size(bytes, b1, sizeof(b1)),
		recfs_fmt_size(secs > 0 ? (uint64_t)((double)bytes / secs) : 0, b2, sizeof(b2)),
		recfs_fmt_size(filled > rel ? filled - rel : 0, b3, sizeof(b3)),
		recfs_fmt_size(atomic_load(&r->ring_max), b4, sizeof(b4)),
		(unsigned long long)dropped, (unsigned long long)lost, final ? "\n" : "");
	r->progress_shown = true;
}

static void *cm_main(void *arg)
{
	struct rr *r = arg;
	uint64_t tick = r->commit_ns < 500000000ull ? r->commit_ns : 500000000ull;
	uint64_t next_commit = rr_mono_ns() + r->commit_ns;
	uint64_t prev_chunks = 0; /* done_chunks at the last commit */

	pthread_mutex_lock(&r->cm_lock);
	while (!r->cm_quit) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		uint64_t ns = (uint64_t)ts.tv_nsec + tick;
		ts.tv_sec += (time_t)(ns / 1000000000ull);
		ts.tv_nsec = (long)(ns % 1000000000ull);
		pthread_cond_timedwait(&r->cm_cond, &r->cm_lock, &ts);
		if (r->cm_quit)
			break;
		pthread_mutex_unlock(&r->cm_lock);
		uint64_t now = rr_mono_ns();
		bool tail_ready = atomic_exchange(&r->tail_ready, false);
		if ((now >= next_commit || tail_ready) &&
		    atomic_load_explicit(&r->created, memory_order_acquire) && !r->cm_err) {
			/* whole chunks while they stream; when no chunk
			 * completed for a whole interval, the writer is asked
			 * to write the partial one too (a copy: the receiver
			 * goes on filling its slot), and that exact length is
			 * committed once written */
			uint64_t dc = atomic_load(&r->done_chunks);
			uint64_t len = atomic_load(&r->done_bytes) / r->chunk * r->chunk;
			pthread_mutex_lock(&r->csum_lock);
			uint64_t tl = r->tail_len;
			pthread_mutex_unlock(&r->csum_lock);
			if (tl > len)
				len = tl;
			if (now >= next_commit) {
				uint64_t f = atomic_load_explicit(&r->filled, memory_order_acquire);
				if (dc == prev_chunks && f > len && f > dc * r->chunk) {
					atomic_store(&r->tail_req, true);
					rr_kick(r->data_efd);
				}
				prev_chunks = dc;
			}
			if (len > r->rec.committed_len) {
				int err = cm_commit(r, len, false);
				if (err) {
					r->cm_err = err;
					snprintf(r->cm_msg, sizeof(r->cm_msg), "%s", recfs_errmsg());
					rr_set_stop(r, RR_STOP_IOERR);
				}
			}
			next_commit = now + r->commit_ns;
		}
		rr_progress(r, false);
		pthread_mutex_lock(&r->cm_lock);
	}
	pthread_mutex_unlock(&r->cm_lock);
	return NULL;
}

/* ----------------------------------------------------------------- writer */
struct wr_slot {
	struct iocb cb;
	uint64_t chunk;
	uint64_t t_submit;
	unsigned member;
	uint8_t *buf;   /* the request: len bytes from buf to off on the member */
	uint64_t off;
	uint32_t len;   /* bytes written (padded to a block) */
	uint32_t dlen;  /* data bytes */
	uint32_t wrote; /* of len, by earlier short completions */
	bool done;
};

/* (Re)arm sl's request for the part of it not yet written.  t_submit
 * stays the first submission's: a write's latency includes its resends. */
static void wr_prep(struct rr *r, struct wr_slot *sl)
{
	struct recfs_dev *d = recfs_pack_dev(r->p, sl->member);
	io_prep_pwrite(&sl->cb, d->fd, sl->buf + sl->wrote, sl->len - sl->wrote,
		       (long long)(sl->off + sl->wrote));
	io_set_eventfd(&sl->cb, r->aio_efd);
	sl->cb.data = sl;
}

/* Create the recording once the first byte is in the ring. */
static int wr_create(struct rr *r)
{
	uint32_t learned = atomic_load(&r->learned_frame);
	struct recfs_input in = { .format = r->fmt_vdif ? RECFS_FMT_VDIF : RECFS_FMT_RAW,
				  .frame_size = learned ? learned : r->frame_size };
	if (r->in_kind == RR_IN_UDP && !r->fmt_vdif)
		in.frame_size = r->packet_size;
	snprintf(in.source, sizeof(in.source), "%s", r->input_spec);
	int err = recfs_rec_create(r->p, r->name, &in, 0, &r->rec);
	if (err)
		return err;
	atomic_store_explicit(&r->created, true, memory_order_release);
	uint64_t lim = atomic_load(&r->limit);
	if (r->rec.alloc_len < lim) {
		atomic_store(&r->limit_is_alloc, true);
		atomic_store(&r->limit, r->rec.alloc_len);
	}
	return 0;
}

static int wr_csum_push(struct rr *r, uint64_t k, uint64_t csum)
{
	pthread_mutex_lock(&r->csum_lock);
	if (r->csum_n == r->csum_cap) {
		uint64_t cap = r->csum_cap ? r->csum_cap * 2 : 4096;
		uint64_t *v = realloc(r->csums, cap * sizeof(*v));
		if (!v) {
			pthread_mutex_unlock(&r->csum_lock);
			return -ENOMEM;
		}
		r->csums = v;
		r->csum_cap = cap;
	}
	r->csums[k - r->csum_base] = csum;
	r->csum_n = k - r->csum_base + 1;
	pthread_mutex_unlock(&r->csum_lock);
	return 0;
}

/* Returns the final recording length (the prefix every write of which
 * completed); -1 if no recording was created. */
static int64_t wr_run(struct rr *r)
{
	const unsigned nm = r->g->members;
	const uint64_t cs = r->chunk;
	unsigned inflight[RECFS_MAX_MEMBERS] = { 0 }, total_inflight = 0;
	unsigned cap = nm * r->qd;
	io_context_t ctx = 0;
	struct wr_slot *slots = NULL;
	struct iocb **pending = NULL;
	struct io_event *ev = NULL;
	unsigned npending = 0;
	uint64_t next = 0, done = 0, pushed = 0;
	int64_t ret = -1;
	struct wr_slot tail_sl = { 0 };   /* the partial chunk on a stall */
	uint8_t *tbuf = NULL;              /* its copy */
	bool tail_busy = false;
	uint64_t tail_cs = 0;

	/* AIO context and slots first: a failure here creates nothing */
	int err = io_setup((int)cap, &ctx);
	if (err) {
		fprintf(stderr, PROG ": io_setup(%u): %s\n", cap, strerror(-err));
		r->err_member = -1;
		r->err_errno = -err;
		rr_set_stop(r, RR_STOP_IOERR);
		return -1;
	}
	slots = calloc(r->nslots, sizeof(*slots));
	pending = calloc(cap, sizeof(*pending));
	ev = calloc(cap, sizeof(*ev));
	if (posix_memalign((void **)&tbuf, RECFS_BLOCK, cs))
		tbuf = NULL;
	if (!slots || !pending || !ev || !tbuf) {
		fprintf(stderr, PROG ": out of memory\n");
		r->err_member = -1;
		r->err_errno = ENOMEM;
		rr_set_stop(r, RR_STOP_IOERR);
		goto out_free;
	}

	/* wait for the first byte; VDIF in a byte stream also for its frame
	 * size (stored at create), a chunk, or the end of the input */
	const bool wait_frame = r->fmt_vdif && r->in_kind == RR_IN_FD;
	while (!atomic_load(&r->created)) {
		bool in_end = atomic_load_explicit(&r->eof, memory_order_acquire);
		uint64_t f = atomic_load_explicit(&r->filled, memory_order_acquire);
		if (f > 0 && (!wait_frame || in_end || f >= cs || atomic_load(&r->learned_frame))) {
			r->t_first = rr_mono_ns();
			int cerr = wr_create(r);
			if (cerr) {
				fprintf(stderr, PROG ": %s\n", recfs_errmsg());
				rr_set_stop(r, cerr == -ENOSPC ? RR_STOP_FULL : RR_STOP_IOERR);
				r->err_errno = -cerr;
				goto out_free;
			}
			break;
		}
		if (in_end && f == 0)
			goto out_free;
		struct pollfd pf = { .fd = r->data_efd, .events = POLLIN };
		if (poll(&pf, 1, 100) > 0)
			rr_drain(r->data_efd);
	}

	/* the committer rewrites r->rec; the writer keeps its own copy of
	 * what never changes while recording */
	const uint64_t ext_start = r->rec.ext_start, alloc_len = r->rec.alloc_len, uid = r->rec.uid;

	bool failed = false;
	for (;;) {
		bool progress = false, again = false;
		uint64_t f = atomic_load_explicit(&r->filled, memory_order_acquire);
		bool eof = atomic_load_explicit(&r->eof, memory_order_acquire);
		if (eof) /* eof is stored after the last filled: reread */
			f = atomic_load_explicit(&r->filled, memory_order_acquire);
		if (f > alloc_len) {
			f = alloc_len;
			rr_set_stop(r, RR_STOP_FULL);
		}
		uint64_t ready = eof ? (f + cs - 1) / cs : f / cs;

		/* queue every ready chunk whose member has room, in order */
		uint64_t first_new = next;
		while (!failed && !tail_busy && next < ready && total_inflight < cap) {
			uint64_t lo;
			unsigned m;
			recfs_map(r->g, ext_start + next * cs, &m, &lo);
			if (inflight[m] >= r->qd)
				break;
			struct wr_slot *sl = &slots[next % r->nslots];
			uint8_t *buf = r->ring + (next % r->nslots) * cs;
			uint32_t len = (uint32_t)(f - next * cs < cs ? f - next * cs : cs);
			uint32_t plen = (len + RECFS_BLOCK - 1) / RECFS_BLOCK * RECFS_BLOCK;
			if (plen > len)
				memset(buf + len, 0, plen - len);
			sl->chunk = next;
			sl->member = m;
			sl->buf = buf;
			sl->off = lo;
			sl->len = plen;
			sl->dlen = len;
			sl->wrote = 0;
			sl->done = false;
			sl->t_submit = rr_mono_ns();
			wr_prep(r, sl);
			pending[npending++] = &sl->cb;
			inflight[m]++;
			total_inflight++;
			next++;
		}
		if (npending && !failed) {
			int n = io_submit(ctx, (long)npending, pending);
			if (n > 0) {
				memmove(pending, pending + n, (npending - (unsigned)n) * sizeof(*pending));
				npending -= (unsigned)n;
				progress = true;
			} else if (n == -EAGAIN || n == 0) {
				again = true; /* the kernel's AIO resources: retry soon */
			} else if (n != -EINTR) {
				struct wr_slot *sl = pending[0]->data;
				r->err_member = (int)sl->member;
				r->err_errno = -n;
				r->err_off = sl->chunk * cs;
				rr_set_stop(r, RR_STOP_IOERR);
				failed = true;
			}
		}
		if (npending && failed) {
			/* after a failure nothing more goes to the members (a dying
			 * disk could hold each request for its whole timeout):
			 * forget what is not submitted */
			for (unsigned i = 0; i < npending; i++) {
				struct wr_slot *s = pending[i]->data;
				inflight[s->member]--;
				total_inflight--;
				if (s == &tail_sl)
					tail_busy = false;
			}
			npending = 0;
		}

		/* checksums while the writes are in flight (the data does not
		 * change; the slot is not freed before done, below) */
		for (uint64_t k = first_new; k < next; k++) {
			struct wr_slot *sl = &slots[k % r->nslots];
			const uint8_t *buf = r->ring + (k % r->nslots) * cs;
			if (wr_csum_push(r, k, recfs_chunk_csum(uid, k, buf, sl->dlen))) {
				if (!failed) {
					r->err_member = -1;
					r->err_errno = ENOMEM;
					rr_set_stop(r, RR_STOP_IOERR);
					failed = true;
				}
			} else if (k == pushed) {
				pushed = k + 1;
			}
		}

		/* the input stalled inside a chunk: write a padded copy of
		 * the partial chunk for the committer; the slot stays, and the
		 * chunk is written again in place when it fills */
		if (atomic_load(&r->tail_req)) {
			if (eof || failed || f >= (next + 1) * cs) {
				atomic_store(&r->tail_req, false); /* not needed */
			} else if (!tail_busy && npending == 0 && done == next && ready == next &&
				   f > next * cs) {
				uint32_t len = (uint32_t)(f - next * cs);
				uint32_t plen = (len + RECFS_BLOCK - 1) / RECFS_BLOCK * RECFS_BLOCK;
				uint64_t lo;
				unsigned m;
				memcpy(tbuf, r->ring + (next % r->nslots) * cs, len);
				memset(tbuf + len, 0, plen - len);
				recfs_map(r->g, ext_start + next * cs, &m, &lo);
				tail_sl.chunk = next;
				tail_sl.member = m;
				tail_sl.buf = tbuf;
				tail_sl.off = lo;
				tail_sl.len = plen;
				tail_sl.dlen = len;
				tail_sl.wrote = 0;
				tail_sl.t_submit = rr_mono_ns();
				wr_prep(r, &tail_sl);
				tail_cs = recfs_chunk_csum(uid, next, tbuf, len);
				struct iocb *one = &tail_sl.cb;
				int n = io_submit(ctx, 1, &one);
				if (n == 1) {
					atomic_store(&r->tail_req, false);
					inflight[m]++;
					total_inflight++;
					tail_busy = true;
					progress = true;
				} else if (n == -EAGAIN || n == 0 || n == -EINTR) {
					again = true; /* tail_req stays: tried again soon */
				} else {
					atomic_store(&r->tail_req, false);
					r->err_member = (int)m;
					r->err_errno = -n;
					r->err_off = next * cs;
					rr_set_stop(r, RR_STOP_IOERR);
					failed = true;
				}
			}
		}

		/* reap */
		struct timespec zero = { 0, 0 };
		int got = total_inflight - npending > 0 ? io_getevents(ctx, 0, cap, ev, &zero) : 0;
		for (int i = 0; i < got; i++) {
			struct wr_slot *sl = ev[i].data;
			struct rr_member_stat *ms = &r->mst[sl->member];
			inflight[sl->member]--;
			total_inflight--;
			long res = (long)ev[i].res;
			uint32_t left = sl->len - sl->wrote;
			if (res > 0 && res < (long)left && res % RECFS_BLOCK == 0 && !failed) {
				/* a short write (the device took part of it): send
				 * the rest, as fio requeues a residual; no progress
				 * at all is an error, below */
				sl->wrote += (uint32_t)res;
				ms->short_writes++;
				wr_prep(r, sl);
				pending[npending++] = &sl->cb;
				inflight[sl->member]++;
				total_inflight++;
				continue;
			}
			/* one write per request, from its first submission */
			uint64_t lat = rr_mono_ns() - sl->t_submit;
			ms->writes++;
			ms->sum_ns += lat;
			if (lat > ms->max_ns)
				ms->max_ns = lat;
			if (res != (long)left) {
				if (!failed || r->err_errno == 0) {
					r->err_member = (int)sl->member;
					r->err_errno = res < 0 ? (int)-res : EIO;
					r->err_short = res < 0 ? -1 : (long)sl->wrote + res;
					r->err_len = sl->len;
					r->err_off = sl->chunk * cs;
				}
				failed = true;
				rr_set_stop(r, RR_STOP_IOERR);
				if (sl == &tail_sl)
					tail_busy = false;
				continue;
			}
			if (sl == &tail_sl) {
				tail_busy = false;
				pthread_mutex_lock(&r->csum_lock);
				r->tail_len = sl->chunk * cs + sl->dlen;
				r->tail_csum = tail_cs;
				pthread_mutex_unlock(&r->csum_lock);
				atomic_store(&r->tail_ready, true);
				pthread_mutex_lock(&r->cm_lock);
				pthread_cond_signal(&r->cm_cond);
				pthread_mutex_unlock(&r->cm_lock);
				continue;
			}
			sl->done = true;
		}
		if (got > 0)
			progress = true;
		uint64_t d0 = done;
		/* never past a chunk whose checksum is missing */
		while (done < next && done < pushed && slots[done % r->nslots].done) {
			slots[done % r->nslots].done = false;
			done++;
		}
		if (done != d0) {
			atomic_store_explicit(&r->done_bytes, done * cs < f ? done * cs : f,
					      memory_order_release);
			atomic_store_explicit(&r->done_chunks, done, memory_order_release);
			atomic_store_explicit(&r->released, done * cs, memory_order_release);
			rr_kick(r->space_efd);
		}

		if (failed && total_inflight == npending) {
			ret = (int64_t)(done * cs < f ? done * cs : f);
			break;
		}
		if (eof && !failed && done == ready && npending == 0) {
			ret = (int64_t)f;
			break;
		}
		if (!progress) {
			struct pollfd pf[2] = { { .fd = r->aio_efd, .events = POLLIN },
						{ .fd = r->data_efd, .events = POLLIN } };
			if (poll(pf, 2, again ? 1 : 100) > 0) {
				if (pf[0].revents)
					rr_drain(r->aio_efd);
				if (pf[1].revents)
					rr_drain(r->data_efd);
			}
		}
	}
out_free:
	io_destroy(ctx);
	free(slots);
	free(pending);
	free(ev);
	free(tbuf);
	return ret;
}

/* ------------------------------------------------------------------ input */
static int rr_parse_input(struct rr *r, const char *spec)
{
	r->input_spec = spec;
	if (!strcmp(spec, "stdin") || !strcmp(spec, "-")) {
		r->in_kind = RR_IN_FD;
		r->in_path = NULL;
	} else if (!strncmp(spec, "file:", 5) && spec[5]) {
		r->in_kind = RR_IN_FD;
		r->in_path = spec + 5;
	} else if (!strncmp(spec, "udp:", 4)) {
		struct sockaddr_storage ss;
		socklen_t len;
		r->in_kind = RR_IN_UDP;
		if (rr_parse_udp(spec + 4, false, &ss, &len))
			return -EINVAL;
	} else if (!strcmp(spec, "gen:counter")) {
		r->in_kind = RR_IN_GEN;
		r->gen.kind = RR_GEN_COUNTER;
	} else if (!strcmp(spec, "gen:vdif")) {
		r->in_kind = RR_IN_GEN;
		r->gen.kind = RR_GEN_VDIF;
		r->fmt_vdif = true;
	} else {
		return -EINVAL;
	}
	return 0;
}

static int rr_open_input(struct rr *r)
{
	if (r->in_kind == RR_IN_FD) {
		if (!r->in_path) {
			r->in_fd = 0;
			return 0;
		}
		r->in_fd = open(r->in_path, O_RDONLY | O_CLOEXEC);
		if (r->in_fd < 0) {
			fprintf(stderr, PROG ": %s: cannot open: %s\n", r->in_path, strerror(errno));
			return -errno;
		}
		return 0;
	}
	if (r->in_kind == RR_IN_GEN) {
		uint32_t block = r->frame_size ? r->frame_size
					       : r->gen.kind == RR_GEN_VDIF ? 8032u : 8192u;
		int err = rr_gen_init(&r->gen, r->gen.kind, block, r->threads, r->fps, r->legacy);
		if (err) {
			fprintf(stderr, PROG ": %s: --frame-size %u is not usable%s\n", r->input_spec,
				block, r->gen.kind == RR_GEN_VDIF ? " (a multiple of 8, above the header)" : "");
			return err;
		}
		r->frame_size = block;
		return 0;
	}

	struct sockaddr_storage ss;
	socklen_t len;
	rr_parse_udp(r->input_spec + 4, false, &ss, &len);
	int s = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0) {
		fprintf(stderr, PROG ": %s: socket: %s\n", r->input_spec, strerror(errno));
		return -errno;
	}
	int want = r->rcvbuf > INT_MAX ? INT_MAX : (int)r->rcvbuf;
	if (setsockopt(s, SOL_SOCKET, SO_RCVBUFFORCE, &want, sizeof(want)))
		setsockopt(s, SOL_SOCKET, SO_RCVBUF, &want, sizeof(want));
	/* blocking receives wake at least every 100 ms to see a stop */
	struct timeval tv = { .tv_sec = 0, .tv_usec = 100000 };
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (bind(s, (struct sockaddr *)&ss, len)) {
		int e = errno;
		fprintf(stderr, PROG ": %s: cannot bind: %s\n", r->input_spec, strerror(e));
		close(s);
		return -e;
	}
	/* A receiver that drains the socket faster than datagrams arrive
	 * wakes for every few of them: at 2 GB/s of 8 KB datagrams, 10 a
	 * call and 30,000 context switches a second.  Sleeping 200 us after
	 * a call that found under a quarter of a batch lets them gather: 40%
	 * less CPU per GB on the development machine.  Only with a socket
	 * buffer that holds 200 us at well over line rate: --rcvbuf 8M or
	 * more (the kernel reports it doubled, and charges 16.6 KB for an
	 * 8 KB datagram, so 8M holds about 4 MB: 10 GB/s for 200 us fills
	 * half); a faster stream fills the batches and never sleeps. */
	int have = 0;
	socklen_t hl = sizeof(have);
	if (!getsockopt(s, SOL_SOCKET, SO_RCVBUF, &have, &hl) && have / 2 >= (8 << 20))
		r->coalesce_ns = RR_COALESCE_NS;
	r->in_fd = s;
	return 0;
}

/* ---------------------------------------------------------------- report */
static int rr_write_json(struct rr *r, uint64_t len, int status, enum rr_stop why,
			 const struct rusage *ru)
{
	FILE *f = r->json_f;
	r->json_f = NULL;
	if (!f)
		return 0;
	double dur = r->t_first ? (double)(r->t_end - r->t_first) * 1e-9 : 0;
	const struct recfs_loss *l = &r->loss;
	fprintf(f, "{\n  \"name\": ");
	recfs_json_str(f, r->name);
	fprintf(f, ",\n  \"input\": ");
	recfs_json_str(f, r->input_spec);
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
		fprintf(f, "%s\n    {\"index\": %u, \"path\": ", i ? "," : "", i);
		recfs_json_str(f, d ? d->path : "");
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
		fprintf(stderr, PROG ": %s: cannot write statistics: %s\n", r->stats_json,
			strerror(errno ? errno : EIO));
		return -EIO;
	}
	return 0;
}

static void rr_summary(struct rr *r, uint64_t len, const struct rusage *ru)
{
	char b1[32], b2[32], b3[32];
	double dur = r->t_first ? (double)(r->t_end - r->t_first) * 1e-9 : 0;
	const struct recfs_loss *l = &r->loss;

	fprintf(stderr, "written    %s in %.2f s, %s/s\n", recfs_fmt_size(len, b1, sizeof(b1)), dur,
		recfs_fmt_size(dur > 0 ? (uint64_t)((double)len / dur) : 0, b2, sizeof(b2)));
	fprintf(stderr, "ring       max %s unwritten of %s%s%s%s\n",
		recfs_fmt_size(atomic_load(&r->ring_max), b1, sizeof(b1)),
		recfs_fmt_size(r->ring_size, b3, sizeof(b3)), r->ring_locked ? ", locked" : "",
		r->ring_huge ? ", hugepages" : "", r->rt_rcv ? "; receiver SCHED_FIFO" : "");
	for (unsigned i = 0; i < r->g->members; i++) {
		const struct rr_member_stat *m = &r->mst[i];
		fprintf(stderr, "member %-3u %llu writes, latency mean %.2f ms, max %.2f ms (%s)\n", i,
			(unsigned long long)m->writes,
			m->writes ? (double)m->sum_ns / (double)m->writes * 1e-6 : 0.0,
			(double)m->max_ns * 1e-6, recfs_pack_dev(r->p, i)->path);
	}
	if (r->in_kind == RR_IN_UDP)
		fprintf(stderr, "datagrams  %llu received, %llu wrong size, %llu dropped (ring full), "
			"%llu dropped by the kernel\n",
			(unsigned long long)l->packets, (unsigned long long)l->wrong_size,
			(unsigned long long)r->ring_dropped, (unsigned long long)r->kernel_dropped);
	if (r->fmt_vdif)
		fprintf(stderr, "vdif       %llu frames lost in %u gaps%s, %llu out of order, %llu invalid\n",
			(unsigned long long)l->frames_lost, r->rec.loss.gap_count,
			(l->gap_flags & RECFS_GAPS_COALESCED) ? " (merged)" : "",
			(unsigned long long)l->out_of_order, (unsigned long long)l->invalid);
	fprintf(stderr, "cpu        user %.2f s, system %.2f s; %llu commits, slowest %.1f ms\n",
		(double)ru->ru_utime.tv_sec + (double)ru->ru_utime.tv_usec * 1e-6,
		(double)ru->ru_stime.tv_sec + (double)ru->ru_stime.tv_usec * 1e-6,
		(unsigned long long)r->commits, (double)r->commit_max_ns * 1e-6);
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
		"Report:\n"
		"      --progress          live progress line even when stderr is not a terminal\n"
		"  -q, --quiet             no progress line and no summary\n"
		"      --stats-json FILE   write the final statistics as JSON (- for stdout)\n"
		"  -h, --help, -V, --version\n");
}

static int rr_num(const char *opt, const char *s, uint64_t *v, bool size)
{
	int err;
	if (size) {
		err = recfs_parse_size(s, v);
	} else {
		char *end;
		errno = 0;
		unsigned long long x = strtoull(s, &end, 10);
		err = (errno || end == s || *end || s[0] == '-') ? -EINVAL : 0;
		*v = x;
	}
	if (err)
		fprintf(stderr, PROG ": %s: invalid value '%s'\n", opt, s);
	return err;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "format", required_argument, NULL, 'F' },
		{ "packet-size", required_argument, NULL, 'P' },
		{ "strip", required_argument, NULL, 'S' },
		{ "rcvbuf", required_argument, NULL, 1 },
		{ "frame-size", required_argument, NULL, 2 },
		{ "threads", required_argument, NULL, 3 },
		{ "frame-rate", required_argument, NULL, 4 },
		{ "legacy", no_argument, NULL, 5 },
		{ "rate", required_argument, NULL, 6 },
		{ "duration", required_argument, NULL, 'd' },
		{ "size", required_argument, NULL, 's' },
		{ "queue-depth", required_argument, NULL, 'Q' },
		{ "buffer", required_argument, NULL, 'b' },
		{ "commit-interval", required_argument, NULL, 'c' },
		{ "progress", no_argument, NULL, 7 },
		{ "quiet", no_argument, NULL, 'q' },
		{ "stats-json", required_argument, NULL, 8 },
		{ "no-realtime", no_argument, NULL, 9 },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 }
	};
	static struct rr rr_state; /* one per process; nothing to free on early exits */
	struct rr *r = &rr_state;
	const char *input = "stdin";
	uint64_t v;
	int c, status = RR_EXIT_NOTHING;
	bool sizes_set = false;

	r->qd = 4;
	r->commit_ns = 1000000000ull;
	r->rcvbuf = 64ull << 20;
	r->progress = -1;
	r->threads = 1;
	r->fps = 10000;
	r->in_fd = -1;
	r->err_member = -1;
	r->err_short = -1;
	r->data_efd = r->space_efd = r->aio_efd = -1;
	atomic_store(&r->limit, UINT64_MAX);

	while ((c = getopt_long(argc, argv, "i:F:P:S:d:s:Q:b:c:qhV", lo, NULL)) != -1) {
		switch (c) {
		case 'i': input = optarg; break;
		case 'F':
			if (!strcmp(optarg, "vdif"))
				r->fmt_vdif = true;
			else if (strcmp(optarg, "raw")) {
				fprintf(stderr, PROG ": --format: '%s' is not raw or vdif\n", optarg);
				return RR_EXIT_NOTHING;
			}
			break;
		case 'P':
			if (rr_num("--packet-size", optarg, &v, true) || v == 0 || v > 65507)
				return fprintf(stderr, PROG ": --packet-size: 1..65507\n"), RR_EXIT_NOTHING;
			r->packet_size = (uint32_t)v;
			break;
		case 'S':
			if (rr_num("--strip", optarg, &v, false) || v > 64)
				return fprintf(stderr, PROG ": --strip: 0..64\n"), RR_EXIT_NOTHING;
			r->strip = (uint32_t)v;
			break;
		case 1:
			if (rr_num("--rcvbuf", optarg, &r->rcvbuf, true))
				return RR_EXIT_NOTHING;
			break;
		case 2:
			if (rr_num("--frame-size", optarg, &v, true) || v == 0 || v > (64u << 20))
				return fprintf(stderr, PROG ": --frame-size: 1..64M\n"), RR_EXIT_NOTHING;
			r->frame_size = (uint32_t)v;
			sizes_set = true;
			break;
		case 3:
			if (rr_num("--threads", optarg, &v, false) || v == 0 || v > RR_VDIF_MAX_THREADS)
				return fprintf(stderr, PROG ": --threads: 1..1024\n"), RR_EXIT_NOTHING;
			r->threads = (uint32_t)v;
			break;
		case 4:
			if (rr_num("--frame-rate", optarg, &v, false) || v == 0 || v > (1u << 24))
				return fprintf(stderr, PROG ": --frame-rate: 1..16777216\n"), RR_EXIT_NOTHING;
			r->fps = (uint32_t)v;
			break;
		case 5: r->legacy = true; break;
		case 6:
			if (rr_num("--rate", optarg, &r->rate, true))
				return RR_EXIT_NOTHING;
			break;
		case 'd':
			if (rr_parse_seconds(optarg, &r->duration_ns) || !r->duration_ns)
				return fprintf(stderr, PROG ": --duration: invalid '%s'\n", optarg), RR_EXIT_NOTHING;
			break;
		case 's':
			if (rr_num("--size", optarg, &r->size_limit, true) || !r->size_limit)
				return RR_EXIT_NOTHING;
			atomic_store(&r->limit, r->size_limit);
			break;
		case 'Q':
			if (rr_num("--queue-depth", optarg, &v, false) || v == 0 || v > 256)
				return fprintf(stderr, PROG ": --queue-depth: 1..256\n"), RR_EXIT_NOTHING;
			r->qd = (uint32_t)v;
			break;
		case 'b':
			if (rr_num("--buffer", optarg, &r->buffer, true))
				return RR_EXIT_NOTHING;
			break;
		case 'c':
			if (rr_parse_seconds(optarg, &r->commit_ns) || r->commit_ns < 10000000ull)
				return fprintf(stderr, PROG ": --commit-interval: at least 0.01 s\n"), RR_EXIT_NOTHING;
			break;
		case 7: r->progress = 1; break;
		case 'q': r->quiet = true; break;
		case 8: r->stats_json = optarg; break;
		case 9: r->no_rt = true; break;
		case 'h': usage(stdout); return 0;
		case 'V': printf(PROG " " RECFS_VERSION_STRING "\n"); return 0;
		default: usage(stderr); return RR_EXIT_NOTHING;
		}
	}
	if (argc - optind != 2) {
		fprintf(stderr, PROG ": expected PACK and NAME (see --help)\n");
		return RR_EXIT_NOTHING;
	}
	r->pack_spec = argv[optind];
	r->name = argv[optind + 1];
	if (r->quiet)
		r->progress = 0;
	else if (r->progress < 0)
		r->progress = isatty(2);

	if (rr_parse_input(r, input)) {
		fprintf(stderr, PROG ": --input: '%s' is not stdin, file:PATH, udp:[ADDR:]PORT, "
			"gen:counter or gen:vdif\n", input);
		return RR_EXIT_NOTHING;
	}
	if (r->in_kind != RR_IN_UDP && (r->packet_size || r->strip)) {
		fprintf(stderr, PROG ": --packet-size and --strip apply to udp input only\n");
		return RR_EXIT_NOTHING;
	}
	if (r->in_kind != RR_IN_GEN && r->rate) {
		fprintf(stderr, PROG ": --rate paces the gen: inputs only\n");
		return RR_EXIT_NOTHING;
	}
	if (r->in_kind != RR_IN_GEN && sizes_set) {
		fprintf(stderr, PROG ": --frame-size applies to gen: inputs only\n");
		return RR_EXIT_NOTHING;
	}
	if (recfs_name_check(r->name)) {
		fprintf(stderr, PROG ": %s\n", recfs_errmsg());
		return RR_EXIT_NOTHING;
	}

	/* pack: the exclusive writer lock is held from here to the end */
	int err = recfs_pack_open(r->pack_spec, RECFS_O_RDWR, &r->p);
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
			goto out_close_pack;
		}
	}
	struct recfs_rec old;
	if (recfs_rec_lookup(r->p, r->name, &old) == 0) {
		fprintf(stderr, PROG ": recording '%s' already exists on %s\n", r->name, r->pack_spec);
		goto out_close_pack;
	}
	struct recfs_pack_info info;
	if (recfs_pack_info(r->p, &info) == 0 && info.largest_free == 0) {
		fprintf(stderr, PROG ": %s: pack full: no free space for '%s'\n", r->pack_spec, r->name);
		status = RR_EXIT_FULL;
		goto out_close_pack;
	}
	/* the ring first: it takes time to lock, and a bound socket would
	 * already be dropping datagrams meanwhile */
	if (rr_ring_alloc(r))
		goto out_close_pack;
	if (rr_open_input(r))
		goto out_close_input_ring;
	r->data_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	r->space_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	r->aio_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (r->data_efd < 0 || r->space_efd < 0 || r->aio_efd < 0) {
		fprintf(stderr, PROG ": eventfd: %s\n", strerror(errno));
		goto out_close_input_ring;
	}
	pthread_mutex_init(&r->loss_lock, NULL);
	pthread_mutex_init(&r->csum_lock, NULL);
	pthread_mutex_init(&r->cm_lock, NULL);
	pthread_cond_init(&r->cm_cond, NULL);

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
			goto out_close_input_ring;
		}
	}

	pthread_t rcv_thr, cm_thr;
	r->t_start = rr_mono_ns();
	if ((err = pthread_create(&rcv_thr, NULL, rcv_main, r))) {
		fprintf(stderr, PROG ": cannot start the receiver: %s\n", strerror(err));
		goto out_close_input_ring;
	}
	if ((err = pthread_create(&cm_thr, NULL, cm_main, r))) {
		fprintf(stderr, PROG ": cannot start the committer: %s\n", strerror(err));
		rr_set_stop(r, RR_STOP_INPUT);
		pthread_join(rcv_thr, NULL);
		goto out_close_input_ring;
	}

	if (r->in_kind == RR_IN_UDP && !r->no_rt)
		r->rt_wr = rr_realtime(10);
	int64_t len = wr_run(r);
	r->t_end = rr_mono_ns();
	if (!atomic_load(&r->stop))
		rr_set_stop(r, RR_STOP_IOERR);
	pthread_join(rcv_thr, NULL);
	pthread_mutex_lock(&r->cm_lock);
	r->cm_quit = true;
	pthread_cond_signal(&r->cm_cond);
	pthread_mutex_unlock(&r->cm_lock);
	pthread_join(cm_thr, NULL);
	if (r->progress_shown) {
		rr_progress(r, true);
	}

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
		goto out_stats;
	}

	/* seal at the exact length */
	pthread_mutex_lock(&r->loss_lock);
	r->loss_pub = r->loss; /* receiver joined: final */
	pthread_mutex_unlock(&r->loss_lock);
	char msg[768] = "";
	uint64_t final_len = len < 0 ? 0 : (uint64_t)len;
	if (r->cm_err) {
		/* the last commit failed: the metadata path is broken; try the
		 * seal once anyway, at the last durable length */
		final_len = r->rec.committed_len;
		snprintf(msg, sizeof(msg), "%.511s", r->cm_msg);
	}
	if (!r->cm_err && r->tail_len > final_len) /* a member failed after a stall */
		final_len = r->tail_len;
	if (final_len < r->rec.committed_len) /* a committed partial chunk */
		final_len = r->rec.committed_len;
	err = cm_commit(r, final_len, true);
	if (err) {
		snprintf(msg, sizeof(msg), "%s; '%s' not sealed: its last %llu committed bytes are durable",
			 recfs_errmsg(), r->name, (unsigned long long)r->rec.committed_len);
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

out_stats:
	if (r->json_f) { /* not created: the statistics say so */
		struct rusage ru3;
		getrusage(RUSAGE_SELF, &ru3);
		rr_write_json(r, r->rec.committed_len, status, why, &ru3);
	}
out_close_input_ring:
	if (r->data_efd >= 0)
		close(r->data_efd);
	if (r->space_efd >= 0)
		close(r->space_efd);
	if (r->aio_efd >= 0)
		close(r->aio_efd);
	if (r->json_f && r->json_f != stdout)
		fclose(r->json_f);
	if (r->ring)
		munmap(r->ring, r->ring_size);
	if (r->in_fd > 0)
		close(r->in_fd);
	rr_gen_free(&r->gen);
out_close_pack:
	err = recfs_pack_close(r->p);
	if (err && status == RR_EXIT_OK) {
		fprintf(stderr, PROG ": %s\n", recfs_errmsg());
		status = RR_EXIT_IO;
	}
	free(r->csums);
	return status;
}
