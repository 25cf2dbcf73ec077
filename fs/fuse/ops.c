/* SPDX-License-Identifier: MIT */
/*
 * recfs-mount: the low-level FUSE operations.  Every recording is a
 * regular file at the root; st_ino = directory index + 2, generation = the
 * recording's uid.  The FUSE node id is st_ino for the first recording the
 * mount sees at an index and gets the incarnation in its high 32 bits for
 * each later one (see struct rm_node).  Every modifying operation answers
 * EROFS.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "mount.h"

#define RM_TIMEOUT    1.0


static struct rm_ctx *ctx_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/* The node of FUSE node id ino and a snapshot of its recording into r, or
 * NULL with the error replied: ENOENT for no such node, `gone` for one
 * deleted since the kernel looked it up. */
static struct rm_node *node_req(fuse_req_t req, struct rm_ctx *c, fuse_ino_t ino, int gone,
				struct recfs_rec *r)
{
	struct rm_node *n = rm_node_of(c, ino);
	if (!n) {
		fuse_reply_err(req, ENOENT);
		return NULL;
	}
	if (rm_node_snapshot(c, n, false, r) < 0) {
		fuse_reply_err(req, gone);
		return NULL;
	}
	return n;
}

/* ------------------------------------------------------------ attributes */

static void ts_of(uint64_t ns, struct timespec *ts)
{
	ts->tv_sec = (time_t)(ns / 1000000000ull);
	ts->tv_nsec = (long)(ns % 1000000000ull);
}

static void rec_stat(struct rm_ctx *c, const struct recfs_rec *r, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = RM_INO(r->index);
	st->st_mode = S_IFREG | (0444 & ~c->o.umask);
	st->st_nlink = 1;
	st->st_uid = c->o.uid;
	st->st_gid = c->o.gid;
	st->st_size = (off_t)r->committed_len;
	st->st_blksize = (blksize_t)c->g->chunk_size;
	st->st_blocks = (blkcnt_t)((r->committed_len + 511) / 512);
	ts_of(r->end_ns ? r->end_ns : r->start_ns, &st->st_mtim);
	st->st_ctim = st->st_mtim;
	st->st_atim = st->st_mtim;
}

static void root_stat(struct rm_ctx *c, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = RM_ROOT;
	st->st_mode = S_IFDIR | (0555 & ~c->o.umask);
	st->st_nlink = 2;
	st->st_uid = c->o.uid;
	st->st_gid = c->o.gid;
	st->st_blksize = (blksize_t)c->g->chunk_size;
	ts_of(c->created_ns, &st->st_mtim);
	st->st_ctim = st->st_mtim;
	st->st_atim = st->st_mtim;
}

static double attr_timeout(const struct recfs_rec *r)
{
	return r->state == RECFS_STATE_SEALED ? RM_TIMEOUT : 0.0;
}

/* ------------------------------------------------------------ operations */

static void rm_init(void *userdata, struct fuse_conn_info *conn)
{
	struct rm_ctx *c = userdata;
	if (c->o.max_background)
		conn->max_background = c->o.max_background;
	if (c->o.readahead_kb && conn->max_readahead < c->o.readahead_kb * 1024u)
		conn->max_readahead = c->o.readahead_kb * 1024u;
	conn->want |= FUSE_CAP_ASYNC_READ;
	conn->want &= ~(unsigned)FUSE_CAP_WRITEBACK_CACHE;
}

/* mountinfo escapes space, tab, newline and backslash as \ooo: undo it
 * in place. */
static void mountinfo_unescape(char *s)
{
	char *o = s;
	for (; *s; s++, o++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*o = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*o = *s;
		}
	}
	*o = '\0';
}

/* Raise the mount's bdi readahead (root only).  Done at the first open:
 * by then the kernel has processed INIT (which would lower it again), and
 * the window is read from the bdi when a file is opened. */
static void set_readahead(struct rm_ctx *c)
{
	FILE *mi;
	char line[4096], path[128];
	unsigned maj = 0, min = 0;
	bool found = false;

	if (c->ra_set || !c->o.readahead_kb) /* under c->meta */
		return;
	__atomic_store_n(&c->ra_set, true, __ATOMIC_RELEASE);
	mi = fopen("/proc/self/mountinfo", "re");
	if (!mi)
		return;
	while (fgets(line, sizeof(line), mi)) {
		char mnt[2048];
		unsigned a, b;
		if (sscanf(line, "%*u %*u %u:%u %*s %2047s", &a, &b, mnt) != 3)
			continue;
		mountinfo_unescape(mnt);
		if (strcmp(mnt, c->mountpoint) == 0 && strstr(line, " - fuse")) {
			maj = a;
			min = b;
			found = true; /* the last one is the topmost */
		}
	}
	fclose(mi);
	if (!found)
		return;
	snprintf(path, sizeof(path), "/sys/class/bdi/%u:%u/read_ahead_kb", maj, min);
	FILE *f = fopen(path, "we");
	if (!f)
		return;
	fprintf(f, "%u\n", c->o.readahead_kb);
	fclose(f);
}

/* Under c->meta: re-read the directory.  A read that raced the writer's
 * metadata update can fail its checksums (the library then keeps the
 * directory it had): try again once.  Nodes whose recording went away are
 * marked gone. */
static int pack_reload(struct rm_ctx *c)
{
	int rc;
	c->reloaded_ns = rm_now();
	rc = recfs_pack_reload(c->p);
	if (rc < 0)
		rc = recfs_pack_reload(c->p);
	if (rc == 0)
		rm_nodes_mark_gone(c);
	return rc;
}

static void rm_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct rm_ctx *c = ctx_of(req);
	struct fuse_entry_param e;
	struct recfs_rec r;
	struct rm_node *n = NULL;
	int rc;

	if (parent != RM_ROOT) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	pthread_mutex_lock(&c->meta);
	/* Follow the writer: re-read the directory at most once a second
	 * before answering (a deleted recording disappears), and on a miss
	 * at most every 100 ms (a recording started since appears). */
	if (rm_now() - c->reloaded_ns >= RM_RELOAD_NS) {
		pack_reload(c);
	}
	rc = recfs_rec_lookup(c->p, name, &r);
	if (rc == -ENOENT && rm_now() - c->reloaded_ns >= RM_REFRESH_NS) {
		if (pack_reload(c) == 0)
			rc = recfs_rec_lookup(c->p, name, &r);
	}
	if (rc == 0)
		n = rm_node_set(c, &r);
	if (n)
		n->nlookup++; /* the reply below hands the kernel one */
	pthread_mutex_unlock(&c->meta);
	if (rc == -EUCLEAN) /* two entries with one uid: names both */
		rm_log("%s", recfs_errmsg());
	if (rc < 0) {
		fuse_reply_err(req, rc == -ENOENT || rc == -EINVAL ? ENOENT : -rc);
		return;
	}
	if (!n) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	memset(&e, 0, sizeof(e));
	e.ino = n->ino;
	e.generation = r.uid;
	e.attr_timeout = attr_timeout(&r);
	e.entry_timeout = RM_TIMEOUT;
	rec_stat(c, &r, &e.attr);
	fuse_reply_entry(req, &e);
}

static void rm_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	rm_node_forget(ctx_of(req), ino, nlookup);
	fuse_reply_none(req);
}

static void rm_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	for (size_t i = 0; i < count; i++)
		rm_node_forget(ctx_of(req), forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

static void rm_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct rm_ctx *c = ctx_of(req);
	struct stat st;
	struct recfs_rec r;
	struct rm_node *n;

	if (ino == RM_ROOT) {
		root_stat(c, &st);
		fuse_reply_attr(req, &st, RM_TIMEOUT);
		return;
	}
	/* deleted since lookup: ESTALE (the kernel asks here before reading
	 * an open file; a path lookup retries and then finds no name) */
	if (!(n = node_req(req, c, ino, ESTALE, &r)))
		return;
	rec_stat(c, &r, &st);
	fuse_reply_attr(req, &st, attr_timeout(&r));
}

static void rm_erofs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
			     struct fuse_file_info *fi)
{
	fuse_reply_err(req, EROFS);
}

static void rm_erofs_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
			   dev_t rdev)
{
	fuse_reply_err(req, EROFS);
}

static void rm_erofs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	fuse_reply_err(req, EROFS);
}

static void rm_erofs_name(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	fuse_reply_err(req, EROFS);
}

static void rm_erofs_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	fuse_reply_err(req, EROFS);
}

static void rm_erofs_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
			    fuse_ino_t newparent, const char *newname, unsigned int flags)
{
	fuse_reply_err(req, EROFS);
}

static void rm_erofs_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	fuse_reply_err(req, EROFS);
}

static void rm_erofs_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	fuse_reply_err(req, EROFS);
}

static void rm_erofs_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
			    struct fuse_file_info *fi)
{
	fuse_reply_err(req, EROFS);
}

static void rm_erofs_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
			      size_t size, int flags)
{
	fuse_reply_err(req, EROFS);
}

static void rm_erofs_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	fuse_reply_err(req, EROFS);
}

static void rm_erofs_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset, off_t length,
			       struct fuse_file_info *fi)
{
	fuse_reply_err(req, EROFS);
}

static void rm_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct rm_ctx *c = ctx_of(req);
	struct rm_node *n;
	struct rm_file *f;
	struct recfs_rec r;

	if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC)) {
		fuse_reply_err(req, EROFS);
		return;
	}
	if (ino == RM_ROOT) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	/* deleted: ESTALE makes the kernel look the name up again (the
	 * dentry it opened may be cached from before a delete and reuse):
	 * the new recording by that name, or ENOENT */
	if (!(n = node_req(req, c, ino, ESTALE, &r)))
		return;
	if (!__atomic_load_n(&c->ra_set, __ATOMIC_ACQUIRE)) {
		pthread_mutex_lock(&c->meta);
		set_readahead(c);
		pthread_mutex_unlock(&c->meta);
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	f->node = n;
	f->uid = r.uid;
	pthread_mutex_lock(&n->lock);
	n->opens++;
	pthread_mutex_unlock(&n->lock);
	fi->fh = (uint64_t)(uintptr_t)f;
	if (c->o.direct_io || r.state != RECFS_STATE_SEALED) {
		/* still growing: every read asks us, up to the committed end */
		fi->direct_io = 1;
		f->direct = true;
	} else {
		fi->keep_cache = c->o.keep_cache;
	}
	fi->noflush = 1;
	fuse_reply_open(req, fi);
}

static void rm_read_op(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	struct rm_ctx *c = ctx_of(req);
	struct rm_file *f = (struct rm_file *)(uintptr_t)fi->fh;
	struct recfs_rec r;
	uint64_t end;

	if (off < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	/* a live recording is refreshed here (rate-limited): reads past the
	 * end known at open see what the recorder has committed since */
	if (rm_node_snapshot(c, f->node, false, &r) < 0 || r.uid != f->uid) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	if ((uint64_t)off >= r.committed_len || size == 0) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	end = (uint64_t)off + size;
	if (end > r.committed_len)
		end = r.committed_len;
	rm_read(c, req, f, &r, (size_t)(end - (uint64_t)off), (uint64_t)off);
}

static void rm_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct rm_file *f = (struct rm_file *)(uintptr_t)fi->fh;
	struct rm_node *n = f->node;
	fuse_ino_t nino = n->ino;
	bool last = false;
	/* the last close drops the checksum slots read for it (16 bytes per
	 * chunk ever read; a fetch still in flight reads its page again) */
	pthread_mutex_lock(&n->lock);
	if (n->opens && --n->opens == 0) {
		rm_node_drop_slots(n);
		last = true;
	}
	pthread_mutex_unlock(&n->lock);
	free(f);
	/* n may be freed from here on (a forget that came first): an older
	 * node the kernel has forgotten goes now, found again by its id */
	if (last)
		rm_node_forget(ctx_of(req), nino, 0);
	fuse_reply_err(req, 0);
}

static void rm_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (ino != RM_ROOT) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	if ((fi->flags & O_ACCMODE) != O_RDONLY) {
		fuse_reply_err(req, EROFS);
		return;
	}
	fuse_reply_open(req, fi);
}

/* Directory offsets: 1 after ".", 2 after "..", index + 3 after the
 * recording with that directory index (stable across reloads). */
static void rm_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	struct rm_ctx *c = ctx_of(req);
	char *buf;
	size_t used = 0;
	struct stat st;
	uint32_t idx;

	if (ino != RM_ROOT) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	buf = malloc(size);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	memset(&st, 0, sizeof(st));
	if (off < 1) {
		st.st_ino = RM_ROOT;
		st.st_mode = S_IFDIR;
		used += fuse_add_direntry(req, buf + used, size - used, ".", &st, 1);
	}
	if (off < 2) {
		size_t l;
		st.st_ino = RM_ROOT;
		st.st_mode = S_IFDIR;
		l = fuse_add_direntry(req, buf + used, size - used, "..", &st, 2);
		if (l <= size - used)
			used += l;
	}
	pthread_mutex_lock(&c->meta);
	if (off == 0 && rm_now() - c->reloaded_ns >= RM_REFRESH_NS) {
		pack_reload(c);
	}
	idx = off >= 2 ? (uint32_t)(off - 2) : 0;
	for (;; idx++) {
		struct recfs_rec r;
		size_t l;
		if (recfs_rec_next(c->p, &idx, &r) < 0)
			break;
		st.st_ino = RM_INO(r.index);
		st.st_mode = S_IFREG;
		l = fuse_add_direntry(req, buf + used, size - used, r.name, &st,
				      (off_t)r.index + 3);
		if (l > size - used)
			break;
		used += l;
	}
	pthread_mutex_unlock(&c->meta);
	fuse_reply_buf(req, buf, used);
	free(buf);
}

static void rm_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct rm_ctx *c = ctx_of(req);
	struct recfs_pack_info pi;
	struct statvfs sv;
	int rc;

	pthread_mutex_lock(&c->meta);
	rc = recfs_pack_info(c->p, &pi);
	pthread_mutex_unlock(&c->meta);
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	memset(&sv, 0, sizeof(sv));
	sv.f_bsize = c->g->chunk_size;
	sv.f_frsize = RECFS_BLOCK;
	sv.f_blocks = pi.capacity / RECFS_BLOCK;
	sv.f_bfree = pi.free / RECFS_BLOCK;
	sv.f_bavail = 0; /* read-only */
	sv.f_files = pi.dir_capacity;
	sv.f_ffree = pi.dir_capacity > pi.recordings ? pi.dir_capacity - pi.recordings : 0;
	sv.f_favail = 0;
	sv.f_namemax = RECFS_NAME_MAX;
	sv.f_flag = ST_RDONLY;
	fuse_reply_statfs(req, &sv);
}

/* ----------------------------------------------------------------- xattrs */

#define XP "user.recfs."

static const char *const xattr_names[] = {
    "uid",        "state",          "sealed",      "start",        "end",
    "rate",       "format",         "frame_size",  "source",       "packets",
    "wrong_size", "dropped",        "frames_lost", "out_of_order", "invalid",
    "gaps",       "gaps_coalesced", "unreadable",
};
#define N_XATTR (sizeof(xattr_names) / sizeof(xattr_names[0]))

static bool pack_degraded(struct rm_ctx *c)
{
	for (unsigned i = 0; i < c->g->members; i++)
		if (rm_member_bad(c, i))
			return true;
	return false;
}

/* The value of user.recfs.<name> into buf (not NUL-terminated); length,
 * or -ENODATA. */
static ssize_t xattr_value(struct rm_ctx *c, const struct recfs_rec *r, const char *name, char *buf,
			   size_t len)
{
	const struct recfs_loss *l = &r->loss;
	char t[64];
	int w = -1;

	if (!strcmp(name, "uid"))
		w = snprintf(buf, len, "%016" PRIx64, r->uid);
	else if (!strcmp(name, "state"))
		w = snprintf(buf, len, "%s",
			     r->state == RECFS_STATE_SEALED ? "sealed" : "recording");
	else if (!strcmp(name, "sealed"))
		w = snprintf(buf, len, "%s", r->state == RECFS_STATE_SEALED ? "yes" : "no");
	else if (!strcmp(name, "start"))
		w = snprintf(buf, len, "%s", recfs_fmt_time(r->start_ns, t, sizeof(t)));
	else if (!strcmp(name, "end"))
		w = snprintf(buf, len, "%s", recfs_fmt_time(r->end_ns, t, sizeof(t)));
	else if (!strcmp(name, "rate")) {
		uint64_t dt = r->end_ns > r->start_ns ? r->end_ns - r->start_ns : 0;
		double bps = dt ? (double)r->committed_len * 1e9 / (double)dt : 0.0;
		w = snprintf(buf, len, "%.0f B/s (%.3f Gbit/s)", bps, bps * 8 / 1e9);
	} else if (!strcmp(name, "format"))
		w = snprintf(buf, len, "%s",
			     r->input.format == RECFS_FMT_VDIF  ? "vdif"
			     : r->input.format == RECFS_FMT_RAW ? "raw"
								: "unknown");
	else if (!strcmp(name, "frame_size"))
		w = snprintf(buf, len, "%" PRIu32, r->input.frame_size);
	else if (!strcmp(name, "source"))
		w = snprintf(buf, len, "%s", r->input.source);
	else if (!strcmp(name, "packets"))
		w = snprintf(buf, len, "%" PRIu64, l->packets);
	else if (!strcmp(name, "wrong_size"))
		w = snprintf(buf, len, "%" PRIu64, l->wrong_size);
	else if (!strcmp(name, "dropped"))
		w = snprintf(buf, len, "%" PRIu64, l->dropped);
	else if (!strcmp(name, "frames_lost"))
		w = snprintf(buf, len, "%" PRIu64, l->frames_lost);
	else if (!strcmp(name, "out_of_order"))
		w = snprintf(buf, len, "%" PRIu64, l->out_of_order);
	else if (!strcmp(name, "invalid"))
		w = snprintf(buf, len, "%" PRIu64, l->invalid);
	else if (!strcmp(name, "gaps_coalesced"))
		w = snprintf(buf, len, "%s", (l->gap_flags & RECFS_GAPS_COALESCED) ? "yes" : "no");
	else if (!strcmp(name, "gaps")) {
		/* one "OFFSET FRAMES THREAD" line per gap */
		size_t used = 0;
		unsigned ng = l->gap_count < RECFS_GAPS_MAX ? l->gap_count : RECFS_GAPS_MAX;
		buf[0] = '\0';
		for (unsigned i = 0; i < ng && used < len; i++) {
			int g = snprintf(buf + used, len - used, "%" PRIu64 " %" PRIu32 " %u\n",
					 l->gaps[i].offset, l->gaps[i].frames,
					 (unsigned)l->gaps[i].thread);
			if (g < 0)
				break;
			used += (size_t)g;
		}
		return (ssize_t)(used < len ? used : len);
	} else if (!strcmp(name, "unreadable")) {
		if (!pack_degraded(c))
			return -ENODATA;
		return (ssize_t)rm_unreadable(c, r, buf, len);
	} else
		return -ENODATA;
	if (w < 0)
		return -EIO;
	return (ssize_t)((size_t)w < len ? (size_t)w : len - 1);
}

static void rm_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	struct rm_ctx *c = ctx_of(req);
	struct recfs_rec r;
	struct rm_node *n;
	char *buf;
	ssize_t len;
	const size_t cap = 60000;

	if (ino == RM_ROOT || strncmp(name, XP, strlen(XP)) != 0) {
		fuse_reply_err(req, ENODATA);
		return;
	}
	if (!(n = node_req(req, c, ino, ENOENT, &r)))
		return;
	buf = malloc(cap);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	len = xattr_value(c, &r, name + strlen(XP), buf, cap);
	if (len < 0)
		fuse_reply_err(req, (int)-len);
	else if (size == 0)
		fuse_reply_xattr(req, (size_t)len);
	else if ((size_t)len > size)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, buf, (size_t)len);
	free(buf);
}

static void rm_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct rm_ctx *c = ctx_of(req);
	char buf[1024];
	size_t used = 0;

	if (ino != RM_ROOT) {
		bool degraded = pack_degraded(c);
		for (unsigned i = 0; i < N_XATTR; i++) {
			if (!strcmp(xattr_names[i], "unreadable") && !degraded)
				continue;
			used += (size_t)snprintf(buf + used, sizeof(buf) - used, XP "%s",
						 xattr_names[i]) +
				1;
		}
	}
	if (size == 0)
		fuse_reply_xattr(req, used);
	else if (used > size)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, buf, used);
}

const struct fuse_lowlevel_ops rm_ops = {
    .init = rm_init,
    .lookup = rm_lookup,
    .forget = rm_forget,
    .forget_multi = rm_forget_multi,
    .getattr = rm_getattr,
    .setattr = rm_erofs_setattr,
    .mknod = rm_erofs_mknod,
    .mkdir = rm_erofs_mkdir,
    .unlink = rm_erofs_name,
    .rmdir = rm_erofs_name,
    .symlink = rm_erofs_symlink,
    .rename = rm_erofs_rename,
    .link = rm_erofs_link,
    .open = rm_open,
    .read = rm_read_op,
    .write = rm_erofs_write,
    .release = rm_release,
    .opendir = rm_opendir,
    .readdir = rm_readdir,
    .statfs = rm_statfs,
    .setxattr = rm_erofs_setxattr,
    .getxattr = rm_getxattr,
    .listxattr = rm_listxattr,
    .removexattr = rm_erofs_removexattr,
    .create = rm_erofs_create,
    .fallocate = rm_erofs_fallocate,
};
