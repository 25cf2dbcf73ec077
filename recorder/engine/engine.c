/* SPDX-License-Identifier: MIT */
/*
 * What a front end does with one input's engine (engine.h): set it up,
 * start and stop its threads, post and close segments (recfsd's scans),
 * read its counters.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rr.h"

/* Before anything else: the engine's options, and every descriptor unset
 * (so rr_engine_close is safe whatever failed). */
static void rr_defaults(struct rr *r, const struct rr_opts *o)
{
	r->fmt_vdif = o->fmt_vdif;
	r->packet_size = o->packet_size;
	r->strip = o->strip;
	r->rcvbuf = o->rcvbuf;
	r->qd = o->qd;
	r->buffer = o->buffer;
	r->commit_ns = o->commit_ns;
	r->no_rt = o->no_rt;
	r->in_fd = -1;
	r->err_member = -1;
	r->err_short = -1;
	r->data_efd = r->space_efd = r->aio_efd = r->rcv_efd = -1;
}

/* eventfds, locks */
static int rr_engine_init(struct rr *r)
{
	r->data_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	r->space_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	r->aio_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	r->rcv_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (r->data_efd < 0 || r->space_efd < 0 || r->aio_efd < 0 || r->rcv_efd < 0) {
		int e = errno;
		return recfs_seterr(-e, "eventfd: %s", strerror(e));
	}
	pthread_mutex_init(&r->loss_lock, NULL);
	pthread_mutex_init(&r->csum_lock, NULL);
	pthread_mutex_init(&r->cm_lock, NULL);
	pthread_mutex_init(&r->seg_lock, NULL);
	pthread_cond_init(&r->cm_cond, NULL);
	return 0;
}

static void rr_engine_close(struct rr *r)
{
	if (r->data_efd >= 0)
		close(r->data_efd);
	if (r->space_efd >= 0)
		close(r->space_efd);
	if (r->aio_efd >= 0)
		close(r->aio_efd);
	if (r->rcv_efd >= 0)
		close(r->rcv_efd);
	r->data_efd = r->space_efd = r->aio_efd = r->rcv_efd = -1;
}

/* Stop the committer thread cm (after the writer ended) and wait for it. */
static void rr_cm_stop(struct rr *r, pthread_t cm)
{
	pthread_mutex_lock(&r->cm_lock);
	r->cm_quit = true;
	pthread_cond_signal(&r->cm_cond);
	pthread_mutex_unlock(&r->cm_lock);
	pthread_join(cm, NULL);
}

/* Everything rr_new and rr_start set up: descriptors, ring, statistics
 * file, generator, checksum array.  The pack stays the caller's. */
static void rr_release(struct rr *r)
{
	rr_engine_close(r);
	wr_teardown(r);
	if (r->json_f && r->json_f != stdout)
		fclose(r->json_f);
	r->json_f = NULL;
	if (r->ring)
		munmap(r->ring, r->ring_size);
	r->ring = NULL;
	if (r->in_fd > 0) /* 0: recfs-record's standard input stays open */
		close(r->in_fd);
	r->in_fd = -1;
	rr_gen_free(&r->gen);
	free(r->csums);
	r->csums = NULL;
}

int rr_seg_post(struct rr *r, const char *name, uint64_t size_limit, int64_t start_unix,
		uint64_t t_asked_ns, uint64_t *id)
{
	uint64_t n = atomic_load_explicit(&r->seg_posted, memory_order_relaxed);
	/* the slot is free once the writer finished the segment RR_SEGQ back */
	if (n >= RR_SEGQ && atomic_load_explicit(&r->seg_done, memory_order_acquire) <= n - RR_SEGQ)
		return -EBUSY;
	struct rr_seg *s = rr_seg_at(r, n);
	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->size_limit = size_limit;
	s->start_unix = start_unix;
	s->t_post_ns = t_asked_ns ? t_asked_ns : rr_mono_ns();
	atomic_store(&s->limit, size_limit ? size_limit : UINT64_MAX);
	atomic_store(&s->end, UINT64_MAX);
	atomic_store(&s->state, RR_SEG_QUEUED);
	atomic_store_explicit(&r->seg_posted, n + 1, memory_order_release);
	if (id)
		*id = n;
	return 0;
}

void rr_seg_close(struct rr *r)
{
	atomic_store_explicit(&r->seg_off, atomic_load(&r->seg_posted), memory_order_release);
}

bool rr_seg_blind(const struct rr *r, uint64_t n, char *msg, size_t len)
{
	const struct rr_seg *s = &r->segs[n % RR_SEGQ];
	uint64_t rx = atomic_load_explicit(&s->rx, memory_order_relaxed);
	uint64_t wrong = atomic_load_explicit(&s->wrong, memory_order_relaxed);
	if (!rr_blind(rx, wrong))
		return false;
	if (msg) {
		uint32_t got = atomic_load_explicit(&s->wrong_len, memory_order_relaxed);
		uint32_t want = atomic_load_explicit(&s->want_len, memory_order_relaxed);
		char w[64];
		if (want)
			snprintf(w, sizeof(w), "not %u", want);
		else
			snprintf(w, sizeof(w), "and no %s learned yet", r->fmt_vdif ? "VDIF frame size" : "size");
		snprintf(msg, len, "scan '%s' recorded %snothing, %llu of %llu datagrams were the wrong size (%u bytes, %s)",
			 s->name, wrong < rx ? "almost " : "", (unsigned long long)wrong, (unsigned long long)rx, got, w);
	}
	return true;
}

int rr_input_kind(const char *spec)
{
	struct rr r = { 0 };
	int err = rr_parse_input(&r, spec);
	return err ? err : (int)r.in_kind;
}

int rr_new(const struct rr_conf *c, struct rr **rp)
{
	struct rr *r = calloc(1, sizeof(*r));
	if (!r)
		return recfs_seterr(-ENOMEM, "out of memory");
	rr_defaults(r, &c->eo);
	r->pack_spec = c->pack_spec;
	r->name = c->name;
	r->stats_json = c->stats_json;
	r->frame_size = c->frame_size;
	r->threads = c->threads;
	r->fps = c->fps;
	r->legacy = c->legacy;
	r->rate = c->rate;
	r->duration_ns = c->duration_ns;
	r->size_limit = c->size_limit;
	r->progress = c->progress;
	r->progress_arg = c->progress_arg;
	r->stop_flag = c->stop_flag ? c->stop_flag : &r->no_stop;
	r->daemon = c->daemon;
	r->p = c->p;
	r->g = recfs_pack_geom(c->p);
	r->chunk = r->g->chunk_size;
	r->share_left = c->share_left;
	pthread_mutex_init(&r->own_pack_lock, NULL);
	r->pack_lock = c->pack_lock ? c->pack_lock : &r->own_pack_lock;
	r->gflush = c->gflush;
	int err = 0;
	if (!r->gflush && !(r->gflush = r->own_gflush = rr_gflush_new()))
		err = recfs_seterr(-ENOMEM, "out of memory");
	if (!err && rr_parse_input(r, c->input))
		err = recfs_seterr(-EINVAL, "--input: '%s' is not stdin, file:PATH, udp:[ADDR:]PORT, "
				   "gen:counter or gen:vdif", c->input);
	/* the ring first: it takes time to lock, and a bound socket would
	 * already be dropping datagrams meanwhile */
	if (!err)
		err = rr_ring_alloc(r);
	if (!err && !c->no_socket)
		err = rr_open_input(r);
	if (!err)
		err = rr_engine_init(r);
	if (err) {
		rr_free(r);
		return err;
	}
	*rp = r;
	return 0;
}

int rr_start(struct rr *r, uint64_t t_start)
{
	int err = wr_setup(r);

	if (err)
		return err;
	if (!r->daemon) {
		/* one segment: the whole stream is the recording */
		rr_seg_post(r, r->name, r->size_limit, 0, 0, NULL);
		/* the statistics file now: one that cannot be written refuses
		 * the start instead of failing after the recording */
		if (r->stats_json) {
			r->json_f = strcmp(r->stats_json, "-") ? fopen(r->stats_json, "w") : stdout;
			if (!r->json_f) {
				int e = errno;
				return recfs_seterr(-e, "%s: cannot write statistics: %s", r->stats_json,
						    strerror(e));
			}
		}
	}
	r->t_start = t_start ? t_start : rr_mono_ns();
	if (!r->daemon) {
		if ((err = pthread_create(&r->rcv_th, NULL, rcv_main, r)))
			return recfs_seterr(-err, "cannot start the receiver: %s", strerror(err));
		r->rcv_started = true;
	} else {
		if ((err = pthread_create(&r->wr_th, NULL, wr_main, r)))
			return recfs_seterr(-err, "cannot start a writer: %s", strerror(err));
		r->wr_started = true;
	}
	if ((err = pthread_create(&r->cm_th, NULL, cm_main, r))) {
		if (r->rcv_started) {
			rr_set_stop(r, RR_STOP_INPUT);
			pthread_join(r->rcv_th, NULL);
			r->rcv_started = false;
			return recfs_seterr(-err, "cannot start the committer: %s", strerror(err));
		}
		rr_stop(r);
		rr_wait(r, false);
		return recfs_seterr(-err, "cannot start a writer: %s", strerror(err));
	}
	r->cm_started = true;
	return 0;
}

int64_t rr_run(struct rr *r)
{
	if (r->in_kind == RR_IN_UDP && !r->no_rt)
		r->rt_wr = rr_realtime(10);
	int64_t len = wr_run(r);
	r->t_end = rr_mono_ns();
	if (!atomic_load(&r->stop))
		rr_set_stop(r, RR_STOP_IOERR);
	pthread_join(r->rcv_th, NULL);
	r->rcv_started = false;
	rr_cm_stop(r, r->cm_th);
	r->cm_started = false;
	if (r->progress_shown)
		cm_progress(r, true);
	return len;
}

void rr_stop(struct rr *r)
{
	rr_set_stop(r, RR_STOP_SIGNAL);
	atomic_store(&r->wr_quit, true);
}

void rr_wait(struct rr *r, bool receiver_ran)
{
	if (!r->wr_started && !r->cm_started)
		return;
	if (!receiver_ran)
		atomic_store(&r->eof, true);
	rr_kick(r->data_efd);
	if (r->wr_started)
		pthread_join(r->wr_th, NULL);
	if (r->cm_started)
		rr_cm_stop(r, r->cm_th);
	r->wr_started = r->cm_started = false;
}

void rr_free(struct rr *r)
{
	if (!r)
		return;
	rr_release(r);
	rr_gflush_free(r->own_gflush);
	free(r);
}

int rr_input_fd(const struct rr *r)
{
	return r->in_fd;
}

int rr_input_take(struct rr *r)
{
	int fd = r->in_fd;
	r->in_fd = -1;
	return fd;
}

uint32_t rr_strip(const struct rr *r)
{
	return r->strip;
}

uint64_t rr_rcvbuf(const struct rr *r)
{
	return r->rcvbuf;
}

void rr_set_rcvbuf(struct rr *r, uint64_t rcvbuf)
{
	r->rcvbuf = rcvbuf;
}

void rr_kick_writer(struct rr *r)
{
	rr_kick(r->data_efd);
}

void rr_kick_receiver(struct rr *r)
{
	rr_kick(r->rcv_efd);
}

uint64_t rr_seg_posted(const struct rr *r)
{
	return atomic_load(&r->seg_posted);
}

uint64_t rr_seg_done(const struct rr *r)
{
	return atomic_load_explicit(&r->seg_done, memory_order_acquire);
}

bool rr_seg_full(const struct rr *r)
{
	uint64_t posted = atomic_load(&r->seg_posted);
	return posted >= RR_SEGQ && atomic_load(&r->seg_done) <= posted - RR_SEGQ;
}

bool rr_seg_pending(const struct rr *r, const char *name)
{
	for (uint64_t n = atomic_load(&r->seg_done); n < atomic_load(&r->seg_posted); n++)
		if (!strcmp(r->segs[n % RR_SEGQ].name, name))
			return true;
	return false;
}

enum rr_seg_state rr_seg_state(const struct rr *r, uint64_t n, enum rr_stop *why)
{
	const struct rr_seg *s = &r->segs[n % RR_SEGQ];
	enum rr_seg_state state = (enum rr_seg_state)atomic_load_explicit(&s->state, memory_order_acquire);
	if (why)
		*why = (enum rr_stop)atomic_load(&s->why);
	return state;
}

const char *rr_seg_name(const struct rr *r, uint64_t n)
{
	return r->segs[n % RR_SEGQ].name;
}

void rr_seg_result(struct rr *r, uint64_t n, struct rr_seg_result *res)
{
	struct rr_seg *s = rr_seg_at(r, n);
	pthread_mutex_lock(&r->seg_lock);
	res->rec = s->rec;
	res->state = (enum rr_seg_state)atomic_load(&s->state);
	res->len = s->len;
	snprintf(res->msg, sizeof(res->msg), "%s", s->msg);
	snprintf(res->name, sizeof(res->name), "%s", s->name);
	pthread_mutex_unlock(&r->seg_lock);
}

void rr_stats(const struct rr *r, struct rr_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->packets = atomic_load_explicit(&r->tot_packets, memory_order_relaxed);
	st->bytes = atomic_load_explicit(&r->tot_bytes, memory_order_relaxed);
	st->idle_packets = atomic_load_explicit(&r->tot_idle_packets, memory_order_relaxed);
	st->idle_bytes = atomic_load_explicit(&r->tot_idle_bytes, memory_order_relaxed);
	st->ring_dropped = atomic_load_explicit(&r->tot_ring_dropped, memory_order_relaxed);
	st->kernel_dropped = atomic_load_explicit(&r->tot_kernel_dropped, memory_order_relaxed);
	st->wrong_size = atomic_load_explicit(&r->tot_wrong_size, memory_order_relaxed);
	st->frames_lost = atomic_load_explicit(&r->tot_frames_lost, memory_order_relaxed);
	st->written = atomic_load_explicit(&r->tot_written, memory_order_relaxed);
	st->other = atomic_load_explicit(&r->tot_other, memory_order_relaxed);
	st->blind = atomic_load_explicit(&r->tot_blind, memory_order_relaxed);
	st->start_latency_ns = atomic_load_explicit(&r->start_latency_ns, memory_order_relaxed);
	st->ring_size = r->ring_size;
	uint64_t f = atomic_load_explicit(&r->filled, memory_order_acquire);
	uint64_t rel = atomic_load_explicit(&r->released, memory_order_acquire);
	st->ring_fill = f > rel ? f - rel : 0;
	st->ring_max = atomic_load_explicit(&r->ring_max, memory_order_relaxed);
	/* the writer's and the receiver's reasons are final once they say so */
	st->wr_failed = atomic_load(&r->wr_failed);
	st->err_member = st->wr_failed ? r->err_member : -1;
	st->eof = atomic_load(&r->eof);
	if (st->eof)
		snprintf(st->in_err, sizeof(st->in_err), "%s", r->in_err);
}

uint64_t rr_frames_lost(struct rr *r)
{
	uint64_t v = atomic_load_explicit(&r->tot_frames_lost, memory_order_relaxed);
	pthread_mutex_lock(&r->loss_lock);
	if (atomic_load_explicit(&r->seg_open, memory_order_acquire))
		v += r->loss_pub.frames_lost;
	pthread_mutex_unlock(&r->loss_lock);
	return v;
}

const struct rr_member_stat *rr_member_stat(const struct rr *r, unsigned member)
{
	return &r->mst[member];
}

int rr_pack_open(const char *spec, struct recfs_pack **p)
{
	int err = recfs_pack_open(spec, RECFS_O_RDWR, p);
	if (err)
		return err;
	const struct recfs_geom *g = recfs_pack_geom(*p);
	for (unsigned i = 0; i < g->members; i++) {
		struct recfs_dev *d = recfs_pack_dev(*p, i);
		if (!d || d->fd < 0) {
			err = recfs_seterr(-ENODEV, "%s: member %u is %s", spec, i,
					   d ? "not a file or block device" : "missing");
			recfs_pack_close(*p);
			*p = NULL;
			return err;
		}
	}
	return 0;
}

struct rr_gflush *rr_gflush_new(void)
{
	struct rr_gflush *g = calloc(1, sizeof(*g));
	if (g)
		rr_gflush_init(g);
	return g;
}

void rr_gflush_free(struct rr_gflush *g)
{
	free(g);
}
