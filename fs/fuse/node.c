/* SPDX-License-Identifier: MIT */
/*
 * recfs-mount: the node table.  One struct rm_node per recording the kernel
 * has looked up (see struct rm_node in mount.h), its snapshot of the
 * recording, and its checksum slots, loaded a page at a time.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "mount.h"

void rm_node_drop_slots(struct rm_node *n)
{
	for (uint64_t i = 0; i < n->npages; i++)
		free(n->pages[i]);
	free(n->pages);
	free(n->page_n);
	n->pages = NULL;
	n->page_n = NULL;
	n->npages = 0;
}

static struct rm_node *node_new(const struct recfs_rec *r, struct rm_node *older)
{
	struct rm_node *n = calloc(1, sizeof(*n));
	if (!n)
		return NULL;
	pthread_mutex_init(&n->lock, NULL);
	n->rec = *r;
	n->refreshed_ns = rm_now();
	n->older = older;
	/* the incarnation in the high half: index + 2 < 2^25 */
	n->ino = (older ? older->ino + (1ull << 32) : 0) | RM_INO(r->index);
	return n;
}

static void nodes_sweep(struct rm_ctx *c, uint64_t idx);

/* Under c->meta: the node for r (created or brought up to date).  Another
 * recording at r's index gets a node of its own: the old one stays, gone,
 * for the files still open on it (ESTALE). */
struct rm_node *rm_node_set(struct rm_ctx *c, const struct recfs_rec *r)
{
	struct rm_node *n;
	if (r->index >= c->dir_capacity)
		return NULL;
	n = c->nodes[r->index];
	if (!n || n->rec.uid != r->uid) {
		struct rm_node *old = n;
		n = node_new(r, old);
		if (!n)
			return NULL;
		if (old) {
			pthread_mutex_lock(&old->lock);
			old->gone = true;
			pthread_mutex_unlock(&old->lock);
		}
		/* node_of reads it without c->meta: publish it initialised */
		__atomic_store_n(&c->nodes[r->index], n, __ATOMIC_RELEASE);
		nodes_sweep(c, r->index);
		return n;
	}
	pthread_mutex_lock(&n->lock);
	if (r->committed_len >= n->rec.committed_len)
		n->rec = *r;
	n->gone = false;
	n->refreshed_ns = rm_now();
	pthread_mutex_unlock(&n->lock);
	return n;
}

/* The node of FUSE node id ino: the index's newest node (found without
 * c->meta) or one of its older ones (under it).  Loads it from the pack
 * when the kernel knows an inode this process has not seen (cannot happen
 * today: newest nodes live until unmount).  The kernel holds a lookup of
 * ino while it asks, so an older node found is not freed meanwhile. */
struct rm_node *rm_node_of(struct rm_ctx *c, fuse_ino_t ino)
{
	uint64_t idx;
	struct rm_node *n;
	if (ino < 2)
		return NULL;
	idx = (ino & 0xffffffffu) - 2;
	if (idx >= c->dir_capacity)
		return NULL;
	n = __atomic_load_n(&c->nodes[idx], __ATOMIC_ACQUIRE);
	if (n && n->ino == ino)
		return n;
	if (!n && ino != RM_INO(idx))
		return NULL;
	pthread_mutex_lock(&c->meta);
	n = c->nodes[idx];
	if (!n) {
		struct recfs_rec r;
		if (recfs_rec_get(c->p, (uint32_t)idx, &r) == 0)
			n = rm_node_set(c, &r);
	}
	while (n && n->ino != ino)
		n = n->older;
	pthread_mutex_unlock(&c->meta);
	return n;
}

/* Under c->meta: free the older nodes of index idx that the kernel has
 * forgotten, with no open file and no chunk fetch using them. */
static void nodes_sweep(struct rm_ctx *c, uint64_t idx)
{
	struct rm_node *head = c->nodes[idx], **link;
	if (!head)
		return;
	for (link = &head->older; *link;) {
		struct rm_node *n = *link;
		bool idle;
		pthread_mutex_lock(&n->lock);
		idle = n->nlookup == 0 && n->opens == 0 &&
		       __atomic_load_n(&n->pins, __ATOMIC_SEQ_CST) == 0;
		pthread_mutex_unlock(&n->lock);
		if (!idle) {
			link = &n->older;
			continue;
		}
		*link = n->older;
		rm_node_drop_slots(n);
		pthread_mutex_destroy(&n->lock);
		free(n);
	}
}

/* The kernel dropped nlookup lookups of ino. */
void rm_node_forget(struct rm_ctx *c, fuse_ino_t ino, uint64_t nlookup)
{
	uint64_t idx = (ino & 0xffffffffu) - 2;
	struct rm_node *n;
	if (ino < 2 || idx >= c->dir_capacity)
		return;
	pthread_mutex_lock(&c->meta);
	for (n = c->nodes[idx]; n && n->ino != ino; n = n->older)
		;
	if (n) {
		n->nlookup = nlookup < n->nlookup ? n->nlookup - nlookup : 0;
		if (n != c->nodes[idx] && n->nlookup == 0)
			nodes_sweep(c, idx);
	}
	pthread_mutex_unlock(&c->meta);
}

void rm_nodes_free(struct rm_ctx *c)
{
	if (!c->nodes)
		return;
	for (uint32_t i = 0; i < c->dir_capacity; i++) {
		struct rm_node *n = c->nodes[i];
		while (n) {
			struct rm_node *older = n->older;
			rm_node_drop_slots(n);
			pthread_mutex_destroy(&n->lock);
			free(n);
			n = older;
		}
	}
	free(c->nodes);
	c->nodes = NULL;
}

int rm_node_snapshot(struct rm_ctx *c, struct rm_node *n, bool force, struct recfs_rec *out)
{
	uint64_t now = rm_now();
	pthread_mutex_lock(&n->lock);
	if (!n->gone && n->rec.state == RECFS_STATE_RECORDING &&
	    (force || now - n->refreshed_ns >= RM_REFRESH_NS)) {
		struct recfs_rec tmp = n->rec;
		int rc;
		n->refreshed_ns = now;
		pthread_mutex_unlock(&n->lock);
		pthread_mutex_lock(&c->meta);
		rc = recfs_rec_refresh(c->p, &tmp);
		pthread_mutex_unlock(&c->meta);
		pthread_mutex_lock(&n->lock);
		if (rc == 0 && tmp.uid == n->rec.uid && tmp.state != RECFS_STATE_FREE) {
			if (tmp.committed_len >= n->rec.committed_len)
				n->rec = tmp;
		} else if (rc == -ENOENT || rc == 0) {
			n->gone = true;
		}
	}
	if (n->gone) {
		pthread_mutex_unlock(&n->lock);
		return -ENOENT;
	}
	*out = n->rec;
	pthread_mutex_unlock(&n->lock);
	return 0;
}

int rm_node_check(struct rm_ctx *c, struct rm_node *n, const struct recfs_rec *r, uint64_t since_ns,
		  bool force)
{
	struct recfs_rec tmp = *r;
	uint64_t now;
	int rc;

	pthread_mutex_lock(&n->lock);
	if (n->gone || n->rec.uid != r->uid) {
		pthread_mutex_unlock(&n->lock);
		return -ESTALE;
	}
	if (!force && n->checked_ns >= since_ns) {
		pthread_mutex_unlock(&n->lock);
		return 0;
	}
	pthread_mutex_unlock(&n->lock);
	pthread_mutex_lock(&c->meta);
	/* another thread may have checked while this one waited */
	pthread_mutex_lock(&n->lock);
	rc = !force && !n->gone && n->rec.uid == r->uid && n->checked_ns >= since_ns;
	pthread_mutex_unlock(&n->lock);
	if (rc) {
		pthread_mutex_unlock(&c->meta);
		return 0;
	}
	now = rm_now();
	rc = recfs_rec_refresh(c->p, &tmp);
	pthread_mutex_lock(&n->lock);
	if (rc == -ENOENT || (rc == 0 && tmp.uid != r->uid)) {
		if (n->rec.uid == r->uid)
			n->gone = true;
		rc = -ESTALE;
	} else if (n->gone || n->rec.uid != r->uid) {
		rc = -ESTALE;
	} else {
		if (rc == 0 && now > n->checked_ns)
			n->checked_ns = now;
		rc = 0;
	}
	pthread_mutex_unlock(&n->lock);
	pthread_mutex_unlock(&c->meta);
	return rc;
}

/* Under c->meta, after a successful reload: a node whose index no longer
 * holds its recording is gone (open files on it get ESTALE; a lookup of a
 * new recording at that index brings it back with the new one). */
void rm_nodes_mark_gone(struct rm_ctx *c)
{
	for (uint32_t i = 0; i < c->dir_capacity; i++) {
		struct rm_node *n = c->nodes[i];
		struct recfs_rec r;
		bool present;
		if (!n)
			continue;
		present = recfs_rec_get(c->p, i, &r) == 0;
		pthread_mutex_lock(&n->lock);
		if (!present || r.uid != n->rec.uid)
			n->gone = true;
		pthread_mutex_unlock(&n->lock);
	}
}

/* Under n->lock: make room for slot page pi. */
static int slot_pages_grow(struct rm_node *n, uint64_t pi)
{
	uint64_t np = pi + 1;
	struct recfs_slot **pg;
	uint32_t *pn;

	if (pi < n->npages)
		return 0;
	pg = realloc(n->pages, np * sizeof(*pg));
	if (!pg)
		return -ENOMEM;
	n->pages = pg;
	pn = realloc(n->page_n, np * sizeof(*pn));
	if (!pn)
		return -ENOMEM;
	n->page_n = pn;
	for (uint64_t i = n->npages; i < np; i++) {
		n->pages[i] = NULL;
		n->page_n[i] = 0;
	}
	n->npages = np;
	return 0;
}

/* Lock order: c->meta before n->lock (lookup holds meta while it updates
 * a node), so the slot read runs with n->lock dropped. */
int rm_node_slot(struct rm_ctx *c, struct rm_node *n, const struct recfs_rec *r, uint64_t k,
		 struct recfs_slot *out)
{
	uint64_t cs = c->g->chunk_size, full = r->committed_len / cs;
	uint64_t pi = k / RM_SLOT_PAGE, first = pi * RM_SLOT_PAGE, last;
	struct recfs_slot *page;
	int rc;

	if (k >= full) /* the partial last chunk is checked against r->tail_csum */
		return -ERANGE;
	pthread_mutex_lock(&n->lock);
	if (n->rec.uid != r->uid) {
		pthread_mutex_unlock(&n->lock);
		return -ESTALE;
	}
	if (pi < n->npages && k - first < n->page_n[pi]) {
		*out = n->pages[pi][k - first];
		pthread_mutex_unlock(&n->lock);
		return 0;
	}
	pthread_mutex_unlock(&n->lock);

	last = first + RM_SLOT_PAGE < full ? first + RM_SLOT_PAGE : full;
	page = calloc(RM_SLOT_PAGE, sizeof(*page));
	if (!page)
		return -ENOMEM;
	pthread_mutex_lock(&c->meta);
	rc = recfs_rec_slots(c->p, r, first, last - first, page);
	pthread_mutex_unlock(&c->meta);
	if (rc < 0) {
		free(page);
		return rc;
	}
	*out = page[k - first];

	pthread_mutex_lock(&n->lock);
	if (n->rec.uid == r->uid && n->opens && slot_pages_grow(n, pi) == 0 &&
	    n->page_n[pi] < last - first) {
		free(n->pages[pi]);
		n->pages[pi] = page;
		n->page_n[pi] = (uint32_t)(last - first);
		page = NULL;
	}
	pthread_mutex_unlock(&n->lock);
	free(page);
	return 0;
}

