/* SPDX-License-Identifier: MIT */
/*
 * recfs cat's copy: a recording's byte range to a descriptor, with the
 * members read in parallel.  One reader at a time read chunk after chunk,
 * each from one member while the others idled: about 0.4 of what fio
 * reads from the same members (bench/pyread.sh).  Here a few threads each
 * read a piece (whole chunks, about 1 MiB) into a slot of a small window,
 * and the calling thread writes the slots out in order.  A piece that
 * fails stops the copy there: everything before it is written, and its
 * error is the one reported, as a single reader would have done.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cat.h"

#define CAT_PIECE_MIN (1u << 20)        /* a piece: whole chunks, at least this */
#define CAT_WINDOW_MAX (256ull << 20)   /* bytes in slots at most */
#define CAT_THREADS_MAX 16

struct cat_slot {
	uint8_t *buf;
	uint64_t k;             /* the piece it holds (valid when ready) */
	bool ready;
	size_t n;               /* bytes read */
	int err;                /* then this error (0: none), msg its message */
	char msg[512];
};

struct cat {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct recfs_pack *p;
	const struct recfs_rec *r;
	unsigned flags;
	uint64_t off, end;      /* the range */
	uint64_t base, piece;   /* piece k: [base + k*piece, ...) clipped to the range */
	uint64_t npieces;
	uint64_t next;          /* the next piece to hand a reader */
	uint64_t written;       /* pieces written out */
	unsigned nslots;
	struct cat_slot *slot;
	bool stop;
};

static void cat_piece(const struct cat *c, uint64_t k, uint64_t *start, size_t *n)
{
	uint64_t s = c->base + k * c->piece, e = s + c->piece;
	if (s < c->off)
		s = c->off;
	if (e > c->end)
		e = c->end;
	*start = s;
	*n = (size_t)(e - s);
}

/* A piece into s: the whole of it, or what comes before a failing chunk
 * and the error (recfs_rec_pread returns the first, and the error when
 * asked again from there). */
static void cat_read(struct cat *c, struct cat_slot *s, size_t n, uint64_t start)
{
	s->n = 0;
	s->err = 0;
	while (s->n < n) {
		ssize_t got = recfs_rec_pread(c->p, c->r, s->buf + s->n, n - s->n, start + s->n, c->flags);
		if (got < 0) {
			snprintf(s->msg, sizeof(s->msg), "%s", recfs_errmsg());
			s->err = (int)got;
			return;
		}
		if (got == 0) {
			snprintf(s->msg, sizeof(s->msg), "'%s': ends at byte %llu, before the %llu bytes asked",
				 c->r->name, (unsigned long long)(start + s->n), (unsigned long long)c->end);
			s->err = -EIO;
			return;
		}
		s->n += (size_t)got;
	}
}

static void *cat_reader(void *arg)
{
	struct cat *c = arg;
	pthread_mutex_lock(&c->mu);
	for (;;) {
		while (!c->stop && c->next < c->npieces && c->next - c->written >= c->nslots)
			pthread_cond_wait(&c->cv, &c->mu);
		if (c->stop || c->next >= c->npieces)
			break;
		uint64_t k = c->next++, start;
		size_t n;
		struct cat_slot *s = &c->slot[k % c->nslots];
		pthread_mutex_unlock(&c->mu);
		cat_piece(c, k, &start, &n);
		cat_read(c, s, n, start);
		pthread_mutex_lock(&c->mu);
		s->k = k;
		s->ready = true;
		pthread_cond_broadcast(&c->cv);
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

static int cat_write(int fd, const uint8_t *b, size_t n, char *err, size_t errlen)
{
	for (size_t w = 0; w < n;) {
		ssize_t k = write(fd, b + w, n - w);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EPIPE)
				return -EPIPE;
			snprintf(err, errlen, "standard output: %s", strerror(errno));
			return -errno;
		}
		w += (size_t)k;
	}
	return 0;
}

int recfs_cat_copy(struct recfs_pack *p, const struct recfs_rec *r, uint64_t off, uint64_t len,
		   unsigned flags, int fd, char *err, size_t errlen)
{
	const struct recfs_geom *g = recfs_pack_geom(p);
	const uint64_t cs = g->chunk_size;
	struct cat c = { .p = p, .r = r, .flags = flags, .off = off };
	pthread_t thr[CAT_THREADS_MAX];
	unsigned nthr = 0;
	int ret = 0;

	if (off >= r->committed_len || !len)
		return 0;
	c.end = len > r->committed_len - off ? r->committed_len : off + len;
	/* pieces of whole chunks from a chunk boundary: a verified read checks
	 * every chunk it touches whole, so a chunk split over two pieces
	 * would be read and checked twice */
	c.piece = cs >= CAT_PIECE_MIN ? cs : (CAT_PIECE_MIN + cs - 1) / cs * cs;
	c.base = off / c.piece * c.piece;
	c.npieces = (c.end - c.base + c.piece - 1) / c.piece;
	unsigned want = g->members * 2 < CAT_THREADS_MAX ? g->members * 2 : CAT_THREADS_MAX;
	uint64_t fit = CAT_WINDOW_MAX / c.piece;
	c.nslots = fit < 2 ? 2 : fit < 2ull * want ? (unsigned)fit : 2 * want;
	if (c.nslots > c.npieces)
		c.nslots = c.npieces < 2 ? 2 : (unsigned)c.npieces;
	if (want > c.nslots)
		want = c.nslots;
	c.slot = calloc(c.nslots, sizeof(*c.slot));
	if (!c.slot) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (unsigned i = 0; i < c.nslots; i++)
		if (!(c.slot[i].buf = malloc(c.piece))) {
			snprintf(err, errlen, "out of memory (%u buffers of %llu bytes)", c.nslots,
				 (unsigned long long)c.piece);
			ret = -ENOMEM;
			goto out;
		}
	pthread_mutex_init(&c.mu, NULL);
	pthread_cond_init(&c.cv, NULL);
	for (; nthr < want; nthr++)
		if (pthread_create(&thr[nthr], NULL, cat_reader, &c))
			break;
	if (!nthr) {
		snprintf(err, errlen, "cannot start a reader thread");
		ret = -EAGAIN;
	}
	for (uint64_t k = 0; k < c.npieces && !ret; k++) {
		struct cat_slot *s = &c.slot[k % c.nslots];
		pthread_mutex_lock(&c.mu);
		while (!(s->ready && s->k == k))
			pthread_cond_wait(&c.cv, &c.mu);
		pthread_mutex_unlock(&c.mu);
		ret = cat_write(fd, s->buf, s->n, err, errlen);
		if (!ret && s->err) {
			snprintf(err, errlen, "%s", s->msg);
			ret = s->err;
		}
		pthread_mutex_lock(&c.mu);
		s->ready = false;
		c.written = k + 1;
		pthread_cond_broadcast(&c.cv);
		pthread_mutex_unlock(&c.mu);
	}
	pthread_mutex_lock(&c.mu);
	c.stop = true;
	pthread_cond_broadcast(&c.cv);
	pthread_mutex_unlock(&c.mu);
	for (unsigned i = 0; i < nthr; i++)
		pthread_join(thr[i], NULL);
	pthread_cond_destroy(&c.cv);
	pthread_mutex_destroy(&c.mu);
out:
	for (unsigned i = 0; i < c.nslots; i++)
		free(c.slot[i].buf);
	free(c.slot);
	return ret;
}
