/* SPDX-License-Identifier: MIT */
/*
 * aioshim.so: an LD_PRELOAD shim for libaio's io_submit that makes the
 * kernel's rarer answers happen on demand, so the recorder's handling of
 * them runs in a test (tests/integration/3a-record-aio.sh):
 *
 *   AIOSHIM_ONE=1      take at most one request per call (a partial submit)
 *   AIOSHIM_EAGAIN=K   every Kth call returns -EAGAIN and submits nothing
 *   AIOSHIM_SHORT=K    every Kth write longer than 4 KiB is really submitted
 *                      with half its length (4 KiB aligned): the kernel
 *                      writes only that much and completes it short
 *   AIOSHIM_ZERO=K     every Kth write is submitted with length 0: it
 *                      completes having written nothing
 *   AIOSHIM_SETUP=E    io_setup fails with -E (11: EAGAIN, aio-max-nr reached)
 *   AIOSHIM_STATS=FILE at exit, "calls N partial N eagain N short N zero N
 *                      after N": after counts the io_submit calls made once
 *                      io_getevents had handed out an emptied write's
 *                      completion (a member error: nothing more should go)
 *
 * Both go to the kernel through the system calls, as libaio's own do.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <libaio.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

static unsigned long every_eagain, every_short, every_zero, setup_err;
static int one;
static const char *stats;
static _Atomic unsigned long n_calls, n_partial, n_eagain, n_short, n_zero, n_writes, n_after;
static atomic_bool error_seen;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static unsigned long env_num(const char *name)
{
	const char *v = getenv(name);
	return v ? strtoul(v, NULL, 10) : 0;
}

static void init(void)
{
	one = env_num("AIOSHIM_ONE") != 0;
	every_eagain = env_num("AIOSHIM_EAGAIN");
	every_short = env_num("AIOSHIM_SHORT");
	every_zero = env_num("AIOSHIM_ZERO");
	setup_err = env_num("AIOSHIM_SETUP");
	stats = getenv("AIOSHIM_STATS");
}

__attribute__((destructor)) static void report(void)
{
	FILE *f;

	if (!stats || !(f = fopen(stats, "w")))
		return;
	fprintf(f, "calls %lu partial %lu eagain %lu short %lu zero %lu after %lu\n", n_calls,
		n_partial, n_eagain, n_short, n_zero, n_after);
	fclose(f);
}

int io_setup(int maxevents, io_context_t *ctxp)
{
	pthread_once(&once, init);
	if (setup_err)
		return -(int)setup_err;
	return syscall(SYS_io_setup, maxevents, ctxp) < 0 ? -errno : 0;
}

int io_submit(io_context_t ctx, long nr, struct iocb *ios[])
{
	pthread_once(&once, init);
	unsigned long call = ++n_calls;
	if (atomic_load(&error_seen))
		n_after++;
	if (every_eagain && call % every_eagain == 0) {
		n_eagain++;
		return -EAGAIN;
	}
	if (nr <= 0)
		return (int)syscall(SYS_io_submit, ctx, nr, ios) < 0 ? -errno : 0;
	if (one && nr > 1) {
		nr = 1;
		n_partial++;
	}
	/* what each request is changed to; counted once the kernel took it */
	enum { KEEP, SHORT, ZERO } how[nr];
	unsigned long long len[nr];
	unsigned long w = n_writes;
	for (long i = 0; i < nr; i++) {
		struct iocb *cb = ios[i];
		how[i] = KEEP;
		len[i] = cb->u.c.nbytes;
		if (cb->aio_lio_opcode != IO_CMD_PWRITE)
			continue;
		w++;
		if (every_zero && w % every_zero == 0) {
			cb->u.c.nbytes = 0;
			how[i] = ZERO;
		} else if (every_short && w % every_short == 0 && cb->u.c.nbytes > 4096) {
			cb->u.c.nbytes = cb->u.c.nbytes / 2 / 4096 * 4096;
			how[i] = SHORT;
		}
	}
	long r = syscall(SYS_io_submit, ctx, nr, ios);
	int ret = r < 0 ? -errno : (int)r;
	long took = r < 0 ? 0 : r;
	for (long i = 0; i < nr; i++) {
		if (i >= took) {
			ios[i]->u.c.nbytes = len[i]; /* not taken: as the caller made it */
			continue;
		}
		if (ios[i]->aio_lio_opcode == IO_CMD_PWRITE)
			n_writes++;
		n_short += how[i] == SHORT;
		n_zero += how[i] == ZERO;
	}
	return ret;
}

int io_getevents(io_context_t ctx, long min_nr, long nr, struct io_event *events,
		 struct timespec *timeout)
{
	long r = syscall(SYS_io_getevents, ctx, min_nr, nr, events, timeout);
	if (r < 0)
		return -errno;
	for (long i = 0; i < r; i++)
		if (events[i].res == 0 && events[i].obj && events[i].obj->u.c.nbytes == 0)
			atomic_store(&error_seen, true);
	return (int)r;
}
