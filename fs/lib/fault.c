/* SPDX-License-Identifier: MIT */
/* The fault-injecting in-memory backend (see recfs/fault.h). */
#include <stdio.h>

#include "internal.h"
#include "recfs/fault.h"

struct undo {
	uint64_t off;
	size_t len;
	uint8_t *old;
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
	uint64_t writes;
	uint64_t cut_at, fail_at;
	unsigned torn_sectors, cut_flags;
	bool fired;
	/* the torn write, applied at reboot */
	unsigned torn_member;
	uint64_t torn_off;
	uint8_t *torn_data;
	size_t torn_len;
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
	memcpy(buf, f->m[i].img + off, len);
	return 0;
}

static void clear_log(struct fmember *m)
{
	for (size_t k = 0; k < m->nlog; k++)
		free(m->log[k].old);
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
	if (!u->old)
		return -ENOMEM;
	u->off = off;
	u->len = len;
	memcpy(u->old, m->img + off, len);
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
	f->writes = 0;
}

uint8_t *recfs_fault_image(struct recfs_fault *f, unsigned i)
{
	return f->m[i].img;
}
