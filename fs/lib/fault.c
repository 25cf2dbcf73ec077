/* SPDX-License-Identifier: MIT */
/* The fault-injecting in-memory backend (see recfs/fault.h). */
#include <stdio.h>

#include "internal.h"
#include "recfs/fault.h"

struct undo {
	uint64_t off;
	size_t len;
	uint8_t *old; /* the bytes it replaced */
	uint8_t *new; /* its own bytes (the reorder model replays them) */
};

#define FAULT_READ_RANGES 8

struct rrange {
	unsigned member;
	uint64_t off, len;
};

struct fmember {
	uint8_t *img;
	struct undo *log;   /* writes since the last flush, oldest first */
	size_t nlog, caplog;
};

struct recfs_fault {
	unsigned n;
	uint64_t size;
	struct fmember *m;
	uint64_t writes, flushes;
	uint64_t cut_at, fail_at, cut_flush;
	unsigned torn_sectors, cut_flags;
	bool fired;
	/* the torn write, applied at reboot */
	unsigned torn_member;
	uint64_t torn_off;
	uint8_t *torn_data;
	size_t torn_len;
	/* reads that fail with -EIO */
	struct rrange rfail[FAULT_READ_RANGES];
	unsigned nrfail;
};

struct fdev {
	struct recfs_fault *f;
	unsigned i;
};

static struct recfs_fault *F(struct recfs_dev *d, unsigned *i)
{
	struct fdev *fd = d->priv;
	*i = fd->i;
	return fd->f;
}

static int f_pread(struct recfs_dev *d, void *buf, size_t len, uint64_t off)
{
	unsigned i;
	struct recfs_fault *f = F(d, &i);

	if (off > f->size || len > f->size - off)
		return recfs_seterr(-EIO, "%s: read at %llu: beyond the end", d->path,
				    (unsigned long long)off);
	for (unsigned k = 0; k < f->nrfail; k++) {
		const struct rrange *r = &f->rfail[k];
		if (r->member == i && off < r->off + r->len && r->off < off + len)
			return recfs_seterr(-EIO, "%s: read at %llu: injected I/O error", d->path,
					    (unsigned long long)off);
	}
	memcpy(buf, f->m[i].img + off, len);
	return 0;
}

static void clear_log(struct fmember *m)
{
	for (size_t k = 0; k < m->nlog; k++) {
		free(m->log[k].old);
		free(m->log[k].new);
	}
	m->nlog = 0;
}

static int f_pwrite(struct recfs_dev *d, const void *buf, size_t len, uint64_t off)
{
	unsigned i;
	struct recfs_fault *f = F(d, &i);
	struct fmember *m = &f->m[i];

	if (off > f->size || len > f->size - off)
		return recfs_seterr(-EIO, "%s: write at %llu: beyond the end", d->path,
				    (unsigned long long)off);
	if (f->fired)
		return recfs_seterr(-EIO, "%s: write after power cut", d->path);
	f->writes++;
	if (f->fail_at && f->writes == f->fail_at)
		return recfs_seterr(-EIO, "%s: write at %llu: injected I/O error", d->path,
				    (unsigned long long)off);
	if (f->cut_at && f->writes == f->cut_at) {
		size_t t = (size_t)f->torn_sectors * RECFS_SECTOR;
		if (t > len)
			t = len;
		f->fired = true;
		f->torn_member = i;
		f->torn_off = off;
		f->torn_len = t;
		f->torn_data = t ? malloc(t) : NULL;
		if (t)
			memcpy(f->torn_data, buf, t);
		return recfs_seterr(-EIO, "%s: power cut", d->path);
	}
	if (m->nlog == m->caplog) {
		size_t nc = m->caplog ? m->caplog * 2 : 16;
		struct undo *nl = realloc(m->log, nc * sizeof(*nl));
		if (!nl)
			return -ENOMEM;
		m->log = nl;
		m->caplog = nc;
	}
	struct undo *u = &m->log[m->nlog];
	u->old = malloc(len);
	u->new = malloc(len);
	if (!u->old || !u->new) {
		free(u->old);
		free(u->new);
		return -ENOMEM;
	}
	u->off = off;
	u->len = len;
	memcpy(u->old, m->img + off, len);
	memcpy(u->new, buf, len);
	m->nlog++;
	memcpy(m->img + off, buf, len);
	return 0;
}

static int f_flush(struct recfs_dev *d)
{
	unsigned i;
	struct recfs_fault *f = F(d, &i);

	if (f->fired)
		return recfs_seterr(-EIO, "%s: flush after power cut", d->path);
	f->flushes++;
	if (f->cut_flush && f->flushes == f->cut_flush) {
		/* the power goes before this flush: the member's log stands */
		f->fired = true;
		return recfs_seterr(-EIO, "%s: power cut", d->path);
	}
	clear_log(&f->m[i]);
	return 0;
}

static void f_close(struct recfs_dev *d)
{
	free(d->priv);
}

static const struct recfs_dev_ops fault_ops = {
	.pread = f_pread,
	.pwrite = f_pwrite,
	.flush = f_flush,
	.close = f_close,
};

struct recfs_fault *recfs_fault_new(unsigned members, uint64_t size)
{
	struct recfs_fault *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->n = members;
	f->size = size;
	f->m = calloc(members, sizeof(*f->m));
	if (!f->m) {
		free(f);
		return NULL;
	}
	for (unsigned i = 0; i < members; i++) {
		f->m[i].img = calloc(1, size);
		if (!f->m[i].img) {
			recfs_fault_free(f);
			return NULL;
		}
	}
	return f;
}

void recfs_fault_free(struct recfs_fault *f)
{
	if (!f)
		return;
	for (unsigned i = 0; i < f->n; i++) {
		clear_log(&f->m[i]);
		free(f->m[i].log);
		free(f->m[i].img);
	}
	free(f->torn_data);
	free(f->m);
	free(f);
}

struct recfs_dev *recfs_fault_dev(struct recfs_fault *f, unsigned i)
{
	struct recfs_dev *d = calloc(1, sizeof(*d));
	struct fdev *fd = calloc(1, sizeof(*fd));
	char name[32];

	if (!d || !fd) {
		free(d);
		free(fd);
		return NULL;
	}
	snprintf(name, sizeof(name), "fault%u", i);
	d->path = strdup(name);
	d->ops = &fault_ops;
	d->size = f->size;
	d->lbs = RECFS_BLOCK;
	d->fd = -1;
	fd->f = f;
	fd->i = i;
	d->priv = fd;
	return d;
}

uint64_t recfs_fault_writes(const struct recfs_fault *f)
{
	return f->writes;
}

void recfs_fault_cut_at(struct recfs_fault *f, uint64_t n, unsigned torn_sectors, unsigned flags)
{
	f->cut_at = n;
	f->torn_sectors = torn_sectors;
	f->cut_flags = flags;
}

void recfs_fault_cut_at_flush(struct recfs_fault *f, uint64_t n)
{
	f->cut_flush = n;
}

uint64_t recfs_fault_flushes(const struct recfs_fault *f)
{
	return f->flushes;
}

void recfs_fault_fail_at(struct recfs_fault *f, uint64_t n)
{
	f->fail_at = n;
}

bool recfs_fault_cut_fired(const struct recfs_fault *f)
{
	return f->fired;
}

void recfs_fault_reboot(struct recfs_fault *f)
{
	for (unsigned i = 0; i < f->n; i++) {
		struct fmember *m = &f->m[i];
		if (f->fired && (f->cut_flags & RECFS_FAULT_VOLATILE))
			for (size_t k = m->nlog; k-- > 0;)
				memcpy(m->img + m->log[k].off, m->log[k].old, m->log[k].len);
		clear_log(m);
	}
	if (f->fired && f->torn_len)
		memcpy(f->m[f->torn_member].img + f->torn_off, f->torn_data, f->torn_len);
	free(f->torn_data);
	f->torn_data = NULL;
	f->torn_len = 0;
	f->fired = false;
	f->cut_at = 0;
	f->fail_at = 0;
	f->cut_flush = 0;
	f->writes = 0;
	f->flushes = 0;
}

size_t recfs_fault_pending(const struct recfs_fault *f, unsigned member)
{
	return member < f->n ? f->m[member].nlog : 0;
}

void recfs_fault_reboot_pick(struct recfs_fault *f, recfs_fault_pick_fn pick, void *ctx)
{
	uint8_t *keep = NULL;
	size_t capkeep = 0;

	for (unsigned i = 0; i < f->n; i++) {
		struct fmember *m = &f->m[i];
		/* back to what the last flush made durable ... */
		for (size_t k = m->nlog; k-- > 0;)
			memcpy(m->img + m->log[k].off, m->log[k].old, m->log[k].len);
		/* ... then each write, oldest first, its chosen sectors only: a
		 * sector ends as the newest persisted write to it left it */
		for (size_t k = 0; k < m->nlog; k++) {
			const struct undo *u = &m->log[k];
			uint64_t s0 = u->off / RECFS_SECTOR;
			uint64_t s1 = (u->off + u->len + RECFS_SECTOR - 1) / RECFS_SECTOR;
			size_t ns = (size_t)(s1 - s0);
			if (ns > capkeep) {
				uint8_t *nk = realloc(keep, ns);
				if (!nk)
					abort(); /* a test helper: no way to go on */
				keep = nk;
				capkeep = ns;
			}
			memset(keep, 0, ns);
			pick(ctx, i, k, m->nlog, u->off, u->len, keep);
			for (size_t j = 0; j < ns; j++) {
				if (!keep[j])
					continue;
				uint64_t a = (s0 + j) * RECFS_SECTOR, b = a + RECFS_SECTOR;
				if (a < u->off)
					a = u->off;
				if (b > u->off + u->len)
					b = u->off + u->len;
				memcpy(m->img + a, u->new + (a - u->off), (size_t)(b - a));
			}
		}
	}
	free(keep);
	/* a write torn by cut_at is one more write to keep or lose: the
	 * reorder model is for cuts at a flush (recfs_fault_cut_at_flush) */
	free(f->torn_data);
	f->torn_data = NULL;
	f->torn_len = 0;
	f->fired = true;
	f->cut_flags = 0;
	recfs_fault_reboot(f);
}

struct recfs_fault *recfs_fault_clone(const struct recfs_fault *f)
{
	struct recfs_fault *c = recfs_fault_new(f->n, f->size);

	if (!c)
		return NULL;
	c->writes = f->writes;
	c->flushes = f->flushes;
	c->cut_at = f->cut_at;
	c->fail_at = f->fail_at;
	c->cut_flush = f->cut_flush;
	c->torn_sectors = f->torn_sectors;
	c->cut_flags = f->cut_flags;
	c->fired = f->fired;
	c->torn_member = f->torn_member;
	c->torn_off = f->torn_off;
	c->torn_len = f->torn_len;
	memcpy(c->rfail, f->rfail, sizeof(c->rfail));
	c->nrfail = f->nrfail;
	if (f->torn_len && !(c->torn_data = malloc(f->torn_len)))
		goto fail;
	if (f->torn_len)
		memcpy(c->torn_data, f->torn_data, f->torn_len);
	for (unsigned i = 0; i < f->n; i++) {
		const struct fmember *s = &f->m[i];
		struct fmember *d = &c->m[i];
		memcpy(d->img, s->img, f->size);
		if (!s->nlog)
			continue;
		d->log = calloc(s->nlog, sizeof(*d->log));
		if (!d->log)
			goto fail;
		d->caplog = s->nlog;
		for (size_t k = 0; k < s->nlog; k++) {
			struct undo *u = &d->log[k];
			u->off = s->log[k].off;
			u->len = s->log[k].len;
			u->old = malloc(u->len);
			u->new = malloc(u->len);
			d->nlog = k + 1;
			if (!u->old || !u->new)
				goto fail;
			memcpy(u->old, s->log[k].old, u->len);
			memcpy(u->new, s->log[k].new, u->len);
		}
	}
	return c;
fail:
	recfs_fault_free(c);
	return NULL;
}

int recfs_fault_read_error(struct recfs_fault *f, unsigned member, uint64_t off, uint64_t len)
{
	if (member >= f->n || f->nrfail == FAULT_READ_RANGES)
		return -EINVAL;
	f->rfail[f->nrfail].member = member;
	f->rfail[f->nrfail].off = off;
	f->rfail[f->nrfail].len = len;
	f->nrfail++;
	return 0;
}

void recfs_fault_read_clear(struct recfs_fault *f)
{
	f->nrfail = 0;
}

uint8_t *recfs_fault_image(struct recfs_fault *f, unsigned i)
{
	return f->m[i].img;
}
