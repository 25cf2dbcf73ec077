/* SPDX-License-Identifier: MIT */
/*
 * recfs-mount data path: a cache of whole, verified chunks in aligned
 * buffers, filled by the requesting FUSE thread and by a pool of fetch
 * threads.  A read touching several chunks (on different members) has all
 * of them fetched at once; a sequential reader has the next chunks fetched
 * ahead of it, so every member has a request in flight.  Replies point
 * straight into the cached buffers (fuse_reply_iov): one copy, into the
 * kernel.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mount.h"

enum { RM_EMPTY = 0, RM_LOADING, RM_VALID };
enum { CL_HIT, CL_FILL, CL_WAIT, CL_NONE };

struct rm_chunk {
	/* key (uid 0: none): what makes the bytes unique on disk.  The uid
	 * alone is not: a damaged or crafted entry may repeat another's uid
	 * over another extent, and must never be served the other's bytes. */
	uint64_t uid, ext, k;
	uint32_t len;    /* valid bytes when VALID */
	int state;
	int err; /* fill result when it failed */
	unsigned refs;
	uint64_t tick; /* last use, for LRU */
	bool temp;     /* outside the cache: freed on last put */
	bool stale;    /* too short for a reader: no new claims, reused when free */
	void *buf;
	/* what to fill it from (set by whoever queues it) */
	struct rm_node *node;
	struct recfs_rec rec;
};

struct rm_cache {
	pthread_mutex_t lock;
	pthread_cond_t done;      /* an entry left LOADING */
	pthread_cond_t work;      /* a job was queued */
	pthread_cond_t freed;     /* an entry lost its last reference */
	unsigned nfree_wait;      /* readers waiting on freed */
	unsigned ntemp, max_temp; /* live temporary entries, their limit */
	unsigned prefetch;        /* c->o.prefetch, capped to what the cache holds */
	struct rm_chunk *e;
	unsigned n;
	uint64_t tick;
	struct rm_chunk **q;
	unsigned qcap, qhead, qlen;
	pthread_t *thr;
	unsigned nthr;
	bool stop;
	void *arena; /* the entries' buffers, one mapping */
	size_t arena_len;
	/* counters, printed at exit with RECFS_MOUNT_STATS=1 */
	uint64_t n_fetch, n_hit, n_wait, n_temp, n_prefetch, n_requests;
};

static void *chunk_buf_alloc(size_t len)
{
	void *b = NULL;
	if (posix_memalign(&b, 4096, len))
		return NULL;
	return b;
}

/* An entry about to be filled for node n pins n until the fill is done, so
 * the node table never frees a node a fill still reads (and never asks the
 * cache). */
static void pin(struct rm_chunk *e, struct rm_node *n)
{
	e->node = n;
	__atomic_add_fetch(&n->pins, 1, __ATOMIC_SEQ_CST);
}

static void unpin(struct rm_chunk *e)
{
	__atomic_sub_fetch(&e->node->pins, 1, __ATOMIC_SEQ_CST);
	e->node = NULL;
}

bool rm_member_bad(struct rm_ctx *c, unsigned m)
{
	return !recfs_pack_dev(c->p, m) || __atomic_load_n(&c->m_failed[m], __ATOMIC_RELAXED);
}

/* Read chunk k of r from its member and check it.  Fills buf, *lenp. */
static int chunk_fetch(struct rm_ctx *c, struct rm_node *node, const struct recfs_rec *r,
		       uint64_t k, void *buf, uint32_t *lenp)
{
	const struct recfs_geom *g = c->g;
	uint64_t cs = g->chunk_size, start = k * cs, want, moff;
	unsigned m;
	struct recfs_dev *d;
	size_t rlen, done = 0;
	uint64_t t0 = rm_now();
	int rc;

	if (start >= r->committed_len)
		return -EIO;
	want = r->committed_len - start;
	if (want > cs)
		want = cs;
	recfs_map(g, r->ext_start + start, &m, &moff);
	d = recfs_pack_dev(c->p, m);
	if (!d) {
		rm_log("%s: bytes %" PRIu64 "-%" PRIu64 ": member %u is missing", r->name, start,
		       start + want - 1, m);
		return -EIO;
	}
	rlen = want;
	if (d->direct || d->fd < 0) {
		uint64_t a = d->lbs > RECFS_BLOCK ? d->lbs : RECFS_BLOCK;
		rlen = (size_t)((want + a - 1) / a * a);
		if (rlen > cs)
			rlen = cs;
	}
	while (done < rlen) {
		ssize_t n;
		if (d->fd >= 0) {
			n = pread(d->fd, (char *)buf + done, rlen - done, (off_t)(moff + done));
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0)
				rc = -errno;
			else
				rc = 0;
		} else {
			rc = d->ops->pread(d, (char *)buf + done, rlen - done, moff + done);
			n = rc < 0 ? -1 : (ssize_t)(rlen - done);
		}
		if (rc < 0) {
			__atomic_store_n(&c->m_failed[m], true, __ATOMIC_RELAXED);
			rm_log("%s: bytes %" PRIu64 "-%" PRIu64
			       ": read error on member %s at %" PRIu64 ": %s",
			       r->name, start, start + want - 1, d->path, moff + done,
			       strerror(-rc));
			return -EIO;
		}
		if (n == 0) {
			if (done >= want)
				break;
			__atomic_store_n(&c->m_failed[m], true, __ATOMIC_RELAXED);
			rm_log("%s: bytes %" PRIu64 "-%" PRIu64 ": member %s ends at %" PRIu64,
			       r->name, start, start + want - 1, d->path, moff + done);
			return -EIO;
		}
		done += (size_t)n;
	}
	/* The checksum is checked with -o noverify too: seeded with the
	 * uid, it tells when a deleted recording's space holds another's data
	 * now (an open file must then get ESTALE, never those bytes); that is
	 * no corruption.  Only a mismatch re-reads the entry, to know which.
	 * noverify then returns the bytes instead of failing. */
	struct recfs_slot slot;
	bool tail = k >= r->committed_len / cs; /* checked against r->tail_csum */
	bool hint = !tail && rm_node_slot(c, node, r, k, &slot) == 0;
	/* the slot cached with the node first; only a mismatch or a
	 * damaged slot costs reads of the other members' copies.
	 * recfs_chunk_check reads only members and geometry, which a reload
	 * never changes: no c->meta needed (see mount.h) */
	rc = recfs_chunk_check(c->p, r, k, buf, (uint32_t)want, hint ? &slot : NULL);
	if (rc < 0) {
		/* deleted meanwhile: its slots may be another's now */
		if (rc == -ESTALE || rm_node_check(c, node, r, t0, true) == -ESTALE)
			return -ESTALE;
		if (c->o.verify && rc == -EIO) {
			rm_log("%s: bytes %" PRIu64 "-%" PRIu64
			       ": checksum mismatch (member %s at %" PRIu64 ")",
			       r->name, start, start + want - 1, d->path, moff);
			return -EIO;
		}
		if (c->o.verify) {
			rm_log("%s: bytes %" PRIu64 "-%" PRIu64 ": no checksum: %s", r->name, start,
			       start + want - 1, recfs_errmsg());
			return -EIO;
		}
	}
	*lenp = (uint32_t)want;
	return 0;
}

/* Under ca->lock.  Finds chunk k of the recording with uid and extent
 * start ext holding at least need bytes, or claims a free entry for it.  *how: CL_HIT (valid, referenced), CL_WAIT
 * (being filled by someone else, referenced), CL_FILL (claimed LOADING,
 * the caller fills it), CL_NONE (nothing free; NULL). */
static struct rm_chunk *claim(struct rm_cache *ca, uint64_t uid, uint64_t ext, uint64_t k,
			      uint32_t need, int *how)
{
	struct rm_chunk *victim = NULL;
	for (unsigned i = 0; i < ca->n; i++) {
		struct rm_chunk *e = &ca->e[i];
		if (e->uid == uid && e->ext == ext && e->k == k && e->state != RM_EMPTY &&
		    !e->stale) {
			if (e->state == RM_LOADING) {
				e->refs++;
				*how = CL_WAIT;
				return e;
			}
			if (e->len >= need) {
				e->refs++;
				e->tick = ++ca->tick;
				*how = CL_HIT;
				return e;
			}
			/* too short: the recording grew since.  Its holders
			 * still read their (shorter) range from it, so its key
			 * stays; it only takes no new claims. */
			e->stale = true;
		}
		if (e->refs || e->state == RM_LOADING)
			continue;
		bool e_free = e->uid == 0 || e->stale,
		     v_free = victim && (victim->uid == 0 || victim->stale);
		if (!victim || (!v_free && (e_free || e->tick < victim->tick)))
			victim = e;
	}
	if (!victim) {
		*how = CL_NONE;
		return NULL;
	}
	victim->uid = uid;
	victim->ext = ext;
	victim->k = k;
	victim->stale = false;
	victim->state = RM_LOADING;
	victim->len = 0;
	victim->err = 0;
	victim->refs = 1;
	victim->tick = ++ca->tick;
	*how = CL_FILL;
	return victim;
}

static void put_locked(struct rm_cache *ca, struct rm_chunk *e)
{
	if (--e->refs)
		return;
	if (e->temp) {
		free(e->buf);
		free(e);
		ca->ntemp--;
	}
	if (ca->nfree_wait)
		pthread_cond_broadcast(&ca->freed);
}

/* Under ca->lock: entries a claim could take now. */
static unsigned free_entries(const struct rm_cache *ca)
{
	unsigned n = 0;
	for (unsigned i = 0; i < ca->n; i++)
		n += ca->e[i].refs == 0 && ca->e[i].state != RM_LOADING;
	return n;
}

static void put(struct rm_cache *ca, struct rm_chunk *e)
{
	pthread_mutex_lock(&ca->lock);
	put_locked(ca, e);
	pthread_mutex_unlock(&ca->lock);
}

/* Fill a claimed entry from e->node/e->rec and publish the result. */
static int fill(struct rm_ctx *c, struct rm_chunk *e)
{
	struct rm_cache *ca = c->cache;
	uint32_t len = 0;
	int rc = 0;

	if (!e->buf)
		e->buf = chunk_buf_alloc(c->g->chunk_size);
	if (!e->buf)
		rc = -ENOMEM;
	if (rc == 0)
		rc = chunk_fetch(c, e->node, &e->rec, e->k, e->buf, &len);
	unpin(e);
	pthread_mutex_lock(&ca->lock);
	ca->n_fetch++;
	if (rc == 0) {
		e->state = RM_VALID;
		e->len = len;
	} else {
		e->state = RM_EMPTY;
		e->uid = 0;
		e->err = rc;
	}
	pthread_cond_broadcast(&ca->done);
	pthread_mutex_unlock(&ca->lock);
	return rc;
}

/* Under ca->lock: hand a claimed entry to the fetch threads (takes a
 * reference for them).  false when there are none or the queue is full. */
static bool enqueue(struct rm_cache *ca, struct rm_chunk *e)
{
	if (!ca->nthr || ca->qlen == ca->qcap)
		return false;
	e->refs++;
	ca->q[(ca->qhead + ca->qlen++) % ca->qcap] = e;
	pthread_cond_signal(&ca->work);
	return true;
}

static void *fetch_thread(void *arg)
{
	struct rm_ctx *c = arg;
	struct rm_cache *ca = c->cache;
	pthread_mutex_lock(&ca->lock);
	for (;;) {
		struct rm_chunk *e;
		while (!ca->stop && ca->qlen == 0)
			pthread_cond_wait(&ca->work, &ca->lock);
		if (ca->stop)
			break;
		e = ca->q[ca->qhead];
		ca->qhead = (ca->qhead + 1) % ca->qcap;
		ca->qlen--;
		pthread_mutex_unlock(&ca->lock);
		fill(c, e);
		pthread_mutex_lock(&ca->lock);
		put_locked(ca, e);
	}
	pthread_mutex_unlock(&ca->lock);
	return NULL;
}

static struct rm_chunk *temp_entry(struct rm_cache *ca, uint64_t uid, uint64_t ext, uint64_t k)
{
	struct rm_chunk *e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	ca->ntemp++;
	e->uid = uid;
	e->ext = ext;
	e->k = k;
	e->state = RM_LOADING;
	e->refs = 1;
	e->temp = true;
	return e;
}

#define RM_MAX_SPAN 64u

void rm_read(struct rm_ctx *c, fuse_req_t req, struct rm_file *f, const struct recfs_rec *r,
	     size_t size, uint64_t off)
{
	struct rm_cache *ca = c->cache;
	uint64_t cs = c->g->chunk_size, end = off + size, k0 = off / cs, k1 = (end - 1) / cs;
	unsigned n = (unsigned)(k1 - k0 + 1), i;
	struct rm_chunk *es[RM_MAX_SPAN];
	int how[RM_MAX_SPAN];
	struct iovec iov[RM_MAX_SPAN];
	size_t got = 0;
	int err = 0;

	if (n > RM_MAX_SPAN) { /* max_read keeps requests far below this */
		n = RM_MAX_SPAN;
		end = (k0 + n) * cs;
	}
	for (int attempt = 0;; attempt++) {
		struct rm_chunk *inl = NULL;
		bool retry = false;
		pthread_mutex_lock(&ca->lock);
		ca->n_requests += attempt == 0;
		/* the cache is full of chunks in use and other requests hold
		 * as many uncached buffers as allowed: wait for them (this
		 * one holds nothing yet) rather than exceed the budget more */
		while (ca->ntemp >= ca->max_temp && free_entries(ca) < n) {
			ca->nfree_wait++;
			pthread_cond_wait(&ca->freed, &ca->lock);
			ca->nfree_wait--;
		}
		for (i = 0; i < n; i++) {
			uint64_t k = k0 + i, cend = (k + 1) * cs;
			uint32_t need = (uint32_t)((cend < end ? cend : end) - k * cs);
			es[i] = claim(ca, r->uid, r->ext_start, k, need, &how[i]);
			ca->n_hit += how[i] == CL_HIT;
			ca->n_wait += how[i] == CL_WAIT;
			ca->n_temp += how[i] == CL_NONE;
			if (how[i] == CL_NONE) {
				es[i] = temp_entry(ca, r->uid, r->ext_start, k);
				how[i] = CL_FILL;
			}
			if (es[i] && how[i] == CL_FILL) {
				pin(es[i], f->node);
				es[i]->rec = *r;
				/* fill the first one here, the others in parallel */
				if (!inl && !es[i]->temp)
					inl = es[i];
				else if (es[i]->temp || !enqueue(ca, es[i]))
					how[i] = CL_FILL; /* filled below, here */
				else
					how[i] = CL_WAIT;
			}
		}
		/* prefetch for a sequential reader: one whose request starts
		 * within a chunk of where its last one ended (the kernel's
		 * read-ahead requests arrive slightly out of order) */
		if (ca->prefetch) {
			uint64_t last = (r->committed_len + cs - 1) / cs;
			uint64_t prev = __atomic_load_n(&f->next_off, __ATOMIC_RELAXED);
			if (off <= prev + cs && off + cs >= prev) {
				uint64_t j = f->ahead > k1 + 1 && f->ahead <= k1 + ca->prefetch + 1
						 ? f->ahead
						 : k1 + 1;
				for (; j <= k1 + ca->prefetch && j < last; j++) {
					int h;
					uint32_t need = (uint32_t)((j + 1) * cs <= r->committed_len
								       ? cs
								       : r->committed_len - j * cs);
					struct rm_chunk *e =
					    claim(ca, r->uid, r->ext_start, j, need, &h);
					if (h == CL_NONE)
						break;
					if (h == CL_FILL) {
						ca->n_prefetch++;
						pin(e, f->node);
						e->rec = *r;
						if (!enqueue(ca, e)) {
							unpin(e);
							e->state = RM_EMPTY;
							e->uid = 0;
							put_locked(ca, e);
							break;
						}
					}
					put_locked(ca, e);
				}
				f->ahead = j;
			}
			__atomic_store_n(&f->next_off, end, __ATOMIC_RELAXED);
		}
		pthread_mutex_unlock(&ca->lock);

		for (i = 0; i < n; i++)
			if (es[i] && how[i] == CL_FILL)
				fill(c, es[i]);
		err = 0;
		got = 0;
		pthread_mutex_lock(&ca->lock);
		for (i = 0; i < n; i++) {
			struct rm_chunk *e = es[i];
			uint64_t k = k0 + i, cstart = k * cs, cend = cstart + cs;
			uint64_t from = off > cstart ? off - cstart : 0;
			uint64_t to = (cend < end ? cend : end) - cstart;
			if (!e) {
				if (!err)
					err = -ENOMEM;
				continue;
			}
			while (e->state == RM_LOADING)
				pthread_cond_wait(&ca->done, &ca->lock);
			if (err)
				continue;
			if (e->state != RM_VALID || e->uid != r->uid || e->ext != r->ext_start ||
			    e->k != k) {
				err = e->err ? e->err : -EAGAIN;
				continue;
			}
			if (e->len < to) {
				err = -EAGAIN;
				continue;
			}
			iov[i].iov_base = (char *)e->buf + from;
			iov[i].iov_len = to - from;
			got = i + 1;
			/* read to its end: a sequential reader is done with it
			 * (and the page cache holds it), so it goes first when
			 * room is needed, before chunks fetched ahead */
			if (to == cs)
				e->tick = 0;
		}
		pthread_mutex_unlock(&ca->lock);
		if (err == -EAGAIN && attempt < 3) {
			retry = true;
			for (i = 0; i < n; i++)
				if (es[i])
					put(ca, es[i]);
		}
		if (!retry)
			break;
	}
	/* A bad chunk fails only reads that start in it: a direct read
	 * running into it returns the bytes before it.  A page-cache read
	 * fails whole: the kernel takes a short reply for the end of the file
	 * (it shrinks i_size and zero-fills), and retries the pages one by
	 * one when the reader reaches them, which is exact again. */
	if (got > 0 && (f->direct || !err))
		fuse_reply_iov(req, iov, (int)got);
	else
		fuse_reply_err(req, err == -EAGAIN || err == 0 ? EIO : -err);
	for (i = 0; i < n; i++)
		if (es[i])
			put(ca, es[i]);
}

int rm_cache_new(struct rm_ctx *c)
{
	struct rm_cache *ca = calloc(1, sizeof(*ca));
	uint64_t cs = c->g->chunk_size;
	unsigned per_req = (unsigned)(((1u << 20) + cs - 1) / cs) + 1;
	uint64_t budget = ((uint64_t)c->o.cache_mb << 20) / cs;
	uint64_t floor = per_req + 1, room;
	if (!ca)
		return -ENOMEM;
	c->cache = ca;
	/* the budget rules: at least one request's chunks and one more,
	 * whatever cache_mb says; read-ahead shrinks to fit (twice the
	 * prefetch window and two requests' chunks, when there is room) */
	ca->n = (unsigned)(budget > floor ? budget : floor);
	if (ca->n > 4096)
		ca->n = 4096;
	room = ca->n > per_req * 2 + 2 ? (ca->n - per_req * 2 - 2) / 2 : 0;
	ca->prefetch = c->o.prefetch < room ? c->o.prefetch : (unsigned)room;
	/* uncached buffers for requests that find every entry in use */
	ca->max_temp = per_req;
	ca->e = calloc(ca->n, sizeof(*ca->e));
	/* One anonymous mapping for every buffer, on transparent huge pages
	 * where the kernel allows: replying from a buffer pins its pages, and
	 * fewer, larger folios make that cheaper.  Pages are only populated
	 * when an entry is first filled. */
	ca->arena_len = (size_t)ca->n * cs;
	ca->arena_len = (ca->arena_len + (2u << 20) - 1) / (2u << 20) * (2u << 20);
	ca->arena = mmap(NULL, ca->arena_len + (2u << 20), PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (ca->arena == MAP_FAILED) {
		ca->arena = NULL;
	} else {
		/* align to 2 MiB, unmap the slack */
		uintptr_t a = (uintptr_t)ca->arena,
			  al = (a + (2u << 20) - 1) & ~(uintptr_t)((2u << 20) - 1);
		if (al > a)
			munmap(ca->arena, al - a);
		munmap((void *)(al + ca->arena_len), (2u << 20) - (al - a));
		ca->arena = (void *)al;
		madvise(ca->arena, ca->arena_len, MADV_HUGEPAGE);
		if (ca->e)
			for (unsigned i = 0; i < ca->n; i++)
				ca->e[i].buf = (char *)ca->arena + (size_t)i * cs;
	}
	ca->qcap = ca->n * 2;
	ca->q = calloc(ca->qcap, sizeof(*ca->q));
	if (!ca->e || !ca->q)
		return -ENOMEM;
	pthread_mutex_init(&ca->lock, NULL);
	pthread_cond_init(&ca->done, NULL);
	pthread_cond_init(&ca->work, NULL);
	pthread_cond_init(&ca->freed, NULL);
	ca->thr = calloc(c->o.io_threads ? c->o.io_threads : 1, sizeof(*ca->thr));
	if (!ca->thr)
		return -ENOMEM;
	for (unsigned i = 0; i < c->o.io_threads; i++) {
		int rc = pthread_create(&ca->thr[i], NULL, fetch_thread, c);
		if (rc)
			return -rc;
		ca->nthr++;
	}
	return 0;
}

void rm_cache_free(struct rm_ctx *c)
{
	struct rm_cache *ca = c->cache;
	if (!ca)
		return;
	if (getenv("RECFS_MOUNT_STATS"))
		fprintf(
		    stderr,
		    "recfs-mount: %" PRIu64 " read requests, chunk fetches %" PRIu64 " (%" PRIu64
		    " prefetched), hits %" PRIu64 ", waits %" PRIu64 ", uncached %" PRIu64 "\n",
		    ca->n_requests, ca->n_fetch, ca->n_prefetch, ca->n_hit, ca->n_wait, ca->n_temp);
	if (ca->thr) {
		pthread_mutex_lock(&ca->lock);
		ca->stop = true;
		pthread_cond_broadcast(&ca->work);
		pthread_mutex_unlock(&ca->lock);
		for (unsigned i = 0; i < ca->nthr; i++)
			pthread_join(ca->thr[i], NULL);
		free(ca->thr);
	}
	if (ca->arena)
		munmap(ca->arena, ca->arena_len);
	else if (ca->e)
		for (unsigned i = 0; i < ca->n; i++)
			free(ca->e[i].buf);
	free(ca->e);
	free(ca->q);
	free(ca);
	c->cache = NULL;
}

size_t rm_unreadable(struct rm_ctx *c, const struct recfs_rec *r, char *buf, size_t len)
{
	uint64_t cs = c->g->chunk_size, nchunks = (r->committed_len + cs - 1) / cs;
	uint64_t base = r->ext_start / cs, k = 0;
	unsigned m = c->g->members;
	bool *bad = calloc(m, sizeof(*bad)), any = false;
	size_t used = 0;

	buf[0] = '\0';
	if (!bad)
		return 0;
	/* chunk k is on member (base + k) % m: which members are missing
	 * decides every run, found by stepping over whole runs at a time */
	for (unsigned i = 0; i < m; i++)
		any |= bad[i] = rm_member_bad(c, i);
	while (any && k < nchunks) {
		uint64_t s0, e;
		int w;
		while (k < nchunks && !bad[(base + k) % m])
			k++;
		if (k >= nchunks)
			break;
		s0 = k;
		for (unsigned i = 0; i < m && k < nchunks && bad[(base + k) % m]; i++)
			k++;
		if (k < nchunks && bad[(base + k) % m]) /* every member missing */
			k = nchunks;
		e = k * cs < r->committed_len ? k * cs : r->committed_len;
		w = snprintf(buf + used, len - used, "%" PRIu64 "-%" PRIu64 "\n", s0 * cs, e - 1);
		if (w < 0 || (size_t)w >= len - used - 8) {
			used += (size_t)snprintf(buf + used, len - used, "...\n");
			break;
		}
		used += (size_t)w;
	}
	free(bad);
	return used;
}
