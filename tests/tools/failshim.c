/* SPDX-License-Identifier: MIT */
/*
 * failshim.so: an LD_PRELOAD shim that makes an input or a flush fail, so
 * the recorder's paths for them run in a test
 * (tests/integration/3b-record-failures.sh):
 *
 *   FAILSHIM_READ_AFTER=N  read() on descriptor 0 hands out N bytes in all,
 *                          then fails with EIO (an input dying mid-stream)
 *   FAILSHIM_SYNC_FROM=K   the Kth fsync()/fdatasync() of the process and
 *                          every later one fail with EIO (1: the first)
 *   FAILSHIM_STATS=FILE    at exit, "syncs N failed N read N"
 *
 * The calls that are let through go to the kernel as system calls.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

static _Atomic unsigned long n_sync, n_failed, n_read;

static long env_num(const char *name)
{
	const char *v = getenv(name);
	return v && *v ? strtol(v, NULL, 10) : -1;
}

__attribute__((destructor)) static void report(void)
{
	const char *stats = getenv("FAILSHIM_STATS");
	FILE *f;
	if (!stats || !(f = fopen(stats, "w")))
		return;
	fprintf(f, "syncs %lu failed %lu read %lu\n", n_sync, n_failed, n_read);
	fclose(f);
}

static int sync_call(long nr, int fd)
{
	long from = env_num("FAILSHIM_SYNC_FROM");
	unsigned long k = atomic_fetch_add(&n_sync, 1) + 1;
	if (from > 0 && k >= (unsigned long)from) {
		atomic_fetch_add(&n_failed, 1);
		errno = EIO;
		return -1;
	}
	return (int)syscall(nr, fd);
}

int fsync(int fd)
{
	return sync_call(SYS_fsync, fd);
}

int fdatasync(int fd)
{
	return sync_call(SYS_fdatasync, fd);
}

ssize_t read(int fd, void *buf, size_t len)
{
	long after = fd == 0 ? env_num("FAILSHIM_READ_AFTER") : -1;
	if (after >= 0) {
		unsigned long done = atomic_load(&n_read);
		if (done >= (unsigned long)after) {
			errno = EIO;
			return -1;
		}
		if (len > (unsigned long)after - done)
			len = (unsigned long)after - done;
	}
	ssize_t r = syscall(SYS_read, fd, buf, len);
	if (fd == 0 && r > 0)
		atomic_fetch_add(&n_read, (unsigned long)r);
	return r;
}
