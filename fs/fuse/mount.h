/* SPDX-License-Identifier: MIT */
/*
 * recfs-mount internals: the FUSE driver's shared state.
 *
 * Locking: ctx->meta serialises every librecfs call that touches the
 * pack's in-memory directory or bitmap (lookup, get, next, refresh,
 * reload, slots, info).  The data path never takes it: it maps chunks with
 * recfs_map and preads the member fds directly, and it asks the other
 * members for a chunk's checksum slot (recfs_rec_slots_from, after a
 * mismatch) without it too: that call reads only the members (p->m[]) and
 * the geometry (p->g), which recfs_pack_reload never writes (it replaces
 * only the directory and bitmap tables), and a member's fd is only ever
 * closed at unmount (p->m[].failed is set only by writes, which a mount
 * never does; file preads are thread-safe).  An index's newest node is
 * found without c->meta; its older nodes (and their links) only under it.
 * Each node has its own lock
 * for its recording copy and its checksum-slot pages.  Lock order:
 * ctx->meta, then a node's lock, then the chunk cache's lock.
 */
#ifndef RECFS_MOUNT_H
#define RECFS_MOUNT_H

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "recfs/recfs.h"

#define RM_SLOT_PAGE  4096u               /* checksum slots loaded per read (64 KiB) */
#define RM_REFRESH_NS (100ull * 1000000)  /* at most one refresh per 100 ms */
#define RM_RELOAD_NS  (1000ull * 1000000) /* directory re-read before lookups */

struct rm_opts {
	uid_t uid;
	gid_t gid;
	mode_t umask;
	bool verify;
	bool degraded;
	bool direct_io;  /* FOPEN_DIRECT_IO on every open */
	bool keep_cache; /* FOPEN_KEEP_CACHE on sealed recordings */
	bool clone_fd;
	bool single; /* single-threaded session loop */
	bool foreground;
	bool debug;
	unsigned threads;        /* max FUSE worker threads */
	unsigned io_threads;     /* chunk fetch threads */
	unsigned prefetch;       /* chunks fetched ahead of a sequential reader */
	unsigned cache_mb;       /* chunk cache budget */
	unsigned readahead_kb;   /* bdi read_ahead_kb; 0: leave */
	unsigned max_background; /* 0: kernel default */
};

/* One node per recording seen at a directory index.  A new recording at
 * that index gets a new node (and FUSE node id), the old one stays (gone)
 * for its open files: the kernel marks an inode bad, and every later call
 * on it EIO, when a node id comes back with another generation.  An old
 * node is freed once the kernel has forgotten it, no file is open on it
 * and no chunk fetch uses it (else at unmount); the index's newest node
 * lives until unmount. */
struct rm_node {
	pthread_mutex_t lock;
	struct recfs_rec rec; /* copy; refreshed while RECORDING */
	fuse_ino_t ino;       /* FUSE node id: index + 2, plus incarnation << 32 */
	struct rm_node *older; /* the index's previous recording (under c->meta) */
	uint64_t nlookup;      /* lookups the kernel holds (under c->meta) */
	uint64_t refreshed_ns;
	uint64_t checked_ns; /* start of the last refresh that found it */
	bool gone;           /* deleted (or index reused) since lookup */
	unsigned opens;      /* open files; slot pages dropped at the last close */
	unsigned pins;       /* chunk fills using it (atomic): the cache pins the
			      * node while an entry it fills is loading */
	/* checksum slots in pages of RM_SLOT_PAGE; page_n[i] valid slots */
	struct recfs_slot **pages;
	uint32_t *page_n;
	uint64_t npages;
};

struct rm_file {
	struct rm_node *node;
	uint64_t uid;
	uint64_t next_off; /* where a sequential reader goes next */
	uint64_t ahead;    /* first chunk not yet prefetched */
	bool direct;       /* opened with FOPEN_DIRECT_IO */
};

struct rm_cache;

struct rm_ctx {
	struct rm_opts o;
	struct recfs_pack *p;
	const struct recfs_geom *g;
	char *spec;
	char *mountpoint;
	struct fuse_session *se;
	pthread_mutex_t meta;
	uint64_t reloaded_ns;
	uint64_t created_ns;
	uint32_t dir_capacity;
	struct rm_node **nodes; /* by directory index: its newest node */
	bool *m_failed;         /* by member: a data read failed since mount (atomic) */
	struct rm_cache *cache;
	bool ra_set;            /* readahead raised (atomic; set under meta) */
};

/* ops.c */
extern const struct fuse_lowlevel_ops rm_ops;
/* FUSE node ids: the root, and the first node of directory index i */
#define RM_ROOT       1
#define RM_INO(index) ((fuse_ino_t)(index) + 2)

/* log.c */
void rm_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void rm_log_init(bool foreground);
uint64_t rm_now(void);

/* node.c.  Under c->meta: the node for r (created or brought up to date). */
struct rm_node *rm_node_set(struct rm_ctx *c, const struct recfs_rec *r);
/* The node of FUSE node id ino, or NULL. */
struct rm_node *rm_node_of(struct rm_ctx *c, fuse_ino_t ino);
/* The kernel dropped nlookup lookups of ino. */
void rm_node_forget(struct rm_ctx *c, fuse_ino_t ino, uint64_t nlookup);
/* Under c->meta, after a successful reload: mark the nodes whose index no
 * longer holds their recording gone. */
void rm_nodes_mark_gone(struct rm_ctx *c);
/* Free n's loaded checksum slots (its last open file closed). */
void rm_node_drop_slots(struct rm_node *n);
/* Snapshot of a node's recording, refreshed first when it is still being
 * recorded and the last refresh is older than RM_REFRESH_NS (force: any
 * age).  Returns 0, -ENOENT when gone. */
int rm_node_snapshot(struct rm_ctx *c, struct rm_node *n, bool force, struct recfs_rec *out);
/* The checksum slot of chunk k (committed in r). */
int rm_node_slot(struct rm_ctx *c, struct rm_node *n, const struct recfs_rec *r, uint64_t k,
		 struct recfs_slot *out);
/* Is r (n's recording, or what it was) still in the pack?  Re-reads its
 * entry unless a refresh that started at or after since_ns found it
 * (force: always).  0, or -ESTALE (deleted or index reused: n is marked
 * gone).  Other errors keep the answer "present" (fails open). */
int rm_node_check(struct rm_ctx *c, struct rm_node *n, const struct recfs_rec *r, uint64_t since_ns,
		  bool force);
void rm_nodes_free(struct rm_ctx *c);

/* cache.c */
int rm_cache_new(struct rm_ctx *c);
void rm_cache_free(struct rm_ctx *c);
/* Serve a read of [off, off+size) of r (already clipped to committed). */
void rm_read(struct rm_ctx *c, fuse_req_t req, struct rm_file *f, const struct recfs_rec *r,
	     size_t size, uint64_t off);
/* A member is missing or failed a read since mount. */
bool rm_member_bad(struct rm_ctx *c, unsigned m);
/* Byte ranges of r on such members, "START-END\n" lines, into buf. */
size_t rm_unreadable(struct rm_ctx *c, const struct recfs_rec *r, char *buf, size_t len);

#endif
