/* SPDX-License-Identifier: MIT */
/* The real device backend: block devices and regular files, pread/pwrite,
 * O_DIRECT when the file system allows it; signature probing with libblkid. */
#include <blkid/blkid.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "internal.h"

static int file_pread(struct recfs_dev *d, void *buf, size_t len, uint64_t off)
{
	char *p = buf;

	while (len) {
		ssize_t r = pread(d->fd, p, len, (off_t)off);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return recfs_seterr(-errno, "%s: read at %llu: %s", d->path,
					    (unsigned long long)off, strerror(errno));
		}
		if (r == 0)
			return recfs_seterr(-EIO, "%s: read at %llu: beyond the end", d->path,
					    (unsigned long long)off);
		p += r;
		off += (uint64_t)r;
		len -= (size_t)r;
	}
	return 0;
}

static int file_pwrite(struct recfs_dev *d, const void *buf, size_t len, uint64_t off)
{
	const char *p = buf;

	while (len) {
		ssize_t r = pwrite(d->fd, p, len, (off_t)off);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return recfs_seterr(-errno, "%s: write at %llu: %s", d->path,
					    (unsigned long long)off, strerror(errno));
		}
		if (r == 0)
			return recfs_seterr(-EIO, "%s: write at %llu: no progress", d->path,
					    (unsigned long long)off);
		p += r;
		off += (uint64_t)r;
		len -= (size_t)r;
	}
	return 0;
}

static int file_flush(struct recfs_dev *d)
{
	if (fdatasync(d->fd) < 0)
		return recfs_seterr(-errno, "%s: flush: %s", d->path, strerror(errno));
	return 0;
}

static void file_close(struct recfs_dev *d)
{
	if (d->fd >= 0)
		close(d->fd);
}

static const struct recfs_dev_ops file_ops = {
	.pread = file_pread,
	.pwrite = file_pwrite,
	.flush = file_flush,
	.close = file_close,
};

/* ------------------------------------------------------------ loop devices */
/* sysfs attribute /sys/block/NAME/ATTR into buf, without its newline; 0 or -1 */
static int sys_read(const char *name, const char *attr, char *buf, size_t len)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "/sys/block/%s/%s", name, attr);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	if (buf[n - 1] == '\n')
		buf[n - 1] = 0;
	return 0;
}

/* Is loop device NAME held: opened exclusively (a mount, a recfs writer,
 * mkfs) or claimed by a stacked device (holders/)? */
static bool loop_held(const char *name)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "/dev/%s", name);
	int fd = open(path, O_RDONLY | O_EXCL | O_CLOEXEC);
	if (fd >= 0) {
		close(fd);
	} else if (errno == EBUSY) {
		return true;
	}
	snprintf(path, sizeof(path), "/sys/block/%s/holders", name);
	DIR *h = opendir(path);
	bool held = false;
	for (struct dirent *e; h && !held && (e = readdir(h));)
		held = e->d_name[0] != '.';
	if (h)
		closedir(h);
	return held;
}

/* A lock on a regular file does not reach a writer that goes through a loop
 * device backed by it (losetup -j FILE): -EBUSY naming the loop device if
 * one is held, else 0. */
static int loop_backing_check(const char *path, const struct stat *st)
{
	DIR *dir = opendir("/sys/block");
	int err = 0;
	if (!dir)
		return 0;
	for (struct dirent *e; !err && (e = readdir(dir));) {
		char back[PATH_MAX];
		struct stat bs;
		if (strncmp(e->d_name, "loop", 4) || sys_read(e->d_name, "loop/backing_file", back, sizeof(back)) ||
		    stat(back, &bs) || bs.st_dev != st->st_dev || bs.st_ino != st->st_ino)
			continue;
		if (loop_held(e->d_name))
			err = recfs_seterr(-EBUSY, "%s: in use through loop device /dev/%s (its backing file)",
					   path, e->d_name);
	}
	closedir(dir);
	return err;
}

/* The other way round: loop device path whose backing file a writer has
 * locked (flock, as RECFS_DEV_EXCL takes on files). */
static int loop_file_check(const char *path, const struct stat *st)
{
	char name[64], back[PATH_MAX];
	snprintf(name, sizeof(name), "loop%u", minor(st->st_rdev));
	if (major(st->st_rdev) != 7 || sys_read(name, "loop/backing_file", back, sizeof(back)))
		return 0;
	int fd = open(back, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	int err = 0;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0 && errno == EWOULDBLOCK)
		err = recfs_seterr(-EBUSY, "%s: its backing file %s is in use by another writer (locked)", path,
				   back);
	close(fd);
	return err;
}

int recfs_dev_open(const char *path, unsigned flags, struct recfs_dev **out)
{
	struct recfs_dev *d;
	struct stat st;
	int oflags = (flags & RECFS_DEV_WRITE) ? O_RDWR : O_RDONLY;
	int fd, err;

	if (stat(path, &st) < 0)
		return recfs_seterr(-errno, "%s: %s", path, strerror(errno));
	if (!S_ISBLK(st.st_mode) && !S_ISREG(st.st_mode))
		return recfs_seterr(-ENOTBLK, "%s: not a block device or regular file", path);
	if (S_ISBLK(st.st_mode) && (flags & RECFS_DEV_EXCL))
		oflags |= O_EXCL;
	oflags |= O_CLOEXEC;

	fd = -1;
	bool direct = false;
	if (!(flags & RECFS_DEV_BUFFERED)) {
		fd = open(path, oflags | O_DIRECT);
		if (fd >= 0)
			direct = true;
		else if (errno != EINVAL)
			goto out_errno;
	}
	if (fd < 0) {
		fd = open(path, oflags);
		if (fd < 0)
			goto out_errno;
	}
	if (S_ISREG(st.st_mode) && (flags & RECFS_DEV_EXCL) && flock(fd, LOCK_EX | LOCK_NB) < 0) {
		err = errno == EWOULDBLOCK ? -EBUSY : -errno;
		close(fd);
		return recfs_seterr(err, "%s: in use by another writer (locked)", path);
	}
	if ((flags & RECFS_DEV_EXCL) &&
	    (err = S_ISREG(st.st_mode) ? loop_backing_check(path, &st) : loop_file_check(path, &st))) {
		close(fd);
		return err;
	}

	d = calloc(1, sizeof(*d));
	if (!d || !(d->path = strdup(path))) {
		free(d);
		close(fd);
		return recfs_seterr(-ENOMEM, "out of memory");
	}
	d->ops = &file_ops;
	d->fd = fd;
	d->direct = direct;
	d->blkdev = S_ISBLK(st.st_mode);
	d->st_dev = st.st_dev;
	d->st_ino = st.st_ino;
	d->st_rdev = st.st_rdev;
	d->lbs = RECFS_BLOCK;
	if (d->blkdev) {
		uint64_t sz = 0;
		int ss = 0;
		if (ioctl(fd, BLKGETSIZE64, &sz) < 0) {
			err = recfs_seterr(-errno, "%s: cannot get size: %s", path, strerror(errno));
			recfs_dev_close(d);
			return err;
		}
		d->size = sz;
		if (ioctl(fd, BLKSSZGET, &ss) == 0 && ss > 0)
			d->lbs = (uint32_t)ss < RECFS_BLOCK ? RECFS_BLOCK : (uint32_t)ss;
		if (d->lbs > RECFS_BLOCK) {
			err = recfs_seterr(-EINVAL,
					   "%s: logical block size %u is larger than recfs's %u-byte metadata blocks",
					   path, d->lbs, RECFS_BLOCK);
			recfs_dev_close(d);
			return err;
		}
	} else {
		d->size = (uint64_t)st.st_size;
	}
	*out = d;
	return 0;

out_errno:
	err = -errno;
	if (err == -EBUSY)
		return recfs_seterr(err, "%s: busy: mounted or opened exclusively elsewhere", path);
	return recfs_seterr(err, "%s: %s", path, strerror(errno));
}

void recfs_dev_close(struct recfs_dev *d)
{
	if (!d)
		return;
	if (d->ops && d->ops->close)
		d->ops->close(d);
	free(d->path);
	free(d);
}

int recfs_dev_probe(struct recfs_dev *d, char *what, size_t whatlen)
{
	blkid_probe pr;
	const char *val = NULL;
	int r, ret = 0;

	pr = blkid_new_probe_from_filename(d->path);
	if (!pr)
		return recfs_seterr(-EIO, "%s: cannot probe for signatures", d->path);
	blkid_probe_enable_superblocks(pr, 1);
	blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_TYPE | BLKID_SUBLKS_USAGE);
	blkid_probe_enable_partitions(pr, 1);
	blkid_probe_set_partitions_flags(pr, BLKID_PARTS_MAGIC);
	r = blkid_do_safeprobe(pr);
	if (r == 0) {
		if (blkid_probe_lookup_value(pr, "TYPE", &val, NULL) == 0)
			snprintf(what, whatlen, "a file system signature (%s)", val);
		else if (blkid_probe_lookup_value(pr, "PTTYPE", &val, NULL) == 0)
			snprintf(what, whatlen, "a partition table (%s)", val);
		else
			snprintf(what, whatlen, "an unknown signature");
		ret = 1;
	} else if (r == -2) {
		snprintf(what, whatlen, "several conflicting signatures");
		ret = 1;
	} else if (r < 0) {
		ret = recfs_seterr(-EIO, "%s: signature probe failed", d->path);
	}
	blkid_free_probe(pr);
	return ret;
}

int recfs_dev_wipe(struct recfs_dev *d)
{
	blkid_probe pr;
	int fd, ret = 0;

	fd = open(d->path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return recfs_seterr(-errno, "%s: %s", d->path, strerror(errno));
	pr = blkid_new_probe();
	if (!pr || blkid_probe_set_device(pr, fd, 0, 0) != 0) {
		ret = recfs_seterr(-EIO, "%s: cannot probe for signatures", d->path);
		goto out_close;
	}
	blkid_probe_enable_superblocks(pr, 1);
	blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_MAGIC);
	blkid_probe_enable_partitions(pr, 1);
	blkid_probe_set_partitions_flags(pr, BLKID_PARTS_MAGIC);
	while (blkid_do_probe(pr) == 0) {
		if (blkid_do_wipe(pr, 0) != 0) {
			ret = recfs_seterr(-EIO, "%s: cannot wipe a signature", d->path);
			break;
		}
	}
	if (ret == 0 && fsync(fd) < 0)
		ret = recfs_seterr(-errno, "%s: flush: %s", d->path, strerror(errno));
out_close:
	if (pr)
		blkid_free_probe(pr);
	close(fd);
	return ret;
}

int recfs_dev_mounted(const char *path)
{
	struct stat st;
	FILE *f;
	char line[4096];
	int found = 0;

	if (stat(path, &st) < 0 || !S_ISBLK(st.st_mode))
		return 0;
	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned maj, mnr;
		if (sscanf(line, "%*u %*u %u:%u", &maj, &mnr) == 2 &&
		    maj == major(st.st_rdev) && mnr == minor(st.st_rdev)) {
			found = 1;
			break;
		}
	}
	fclose(f);
	return found;
}
