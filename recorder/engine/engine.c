/* SPDX-License-Identifier: MIT */
/*
 * What a front end does with one input's engine: set it up, post and close
 * segments (recfsd's scans).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include "engine.h"

_Atomic int rr_signal; /* a program's signal handler sets it (engine.h) */

void rr_defaults(struct rr *r, const struct rr_opts *o)
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

int rr_engine_init(struct rr *r)
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

void rr_engine_close(struct rr *r)
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

void rr_cm_stop(struct rr *r, pthread_t cm)
{
	pthread_mutex_lock(&r->cm_lock);
	r->cm_quit = true;
	pthread_cond_signal(&r->cm_cond);
	pthread_mutex_unlock(&r->cm_lock);
	pthread_join(cm, NULL);
}

void rr_release(struct rr *r)
{
	rr_engine_close(r);
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
