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
 *   AIOSHIM_STATS=FILE at exit, "calls N partial N eagain N short N zero N"
 *
 * The requests go to the kernel through the io_submit system call, as
 * libaio's own io_submit does.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <libaio.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

static unsigned long every_eagain, every_short, every_zero;
static int one;
static const char *stats;
static _Atomic unsigned long n_calls, n_partial, n_eagain, n_short, n_zero, n_writes;
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
	stats = getenv("AIOSHIM_STATS");
}

__attribute__((destructor)) static void report(void)
{
	FILE *f;

	if (!stats || !(f = fopen(stats, "w")))
		return;
	fprintf(f, "calls %lu partial %lu eagain %lu short %lu zero %lu\n", n_calls, n_partial,
		n_eagain, n_short, n_zero);
	fclose(f);
}

int io_submit(io_context_t ctx, long nr, struct iocb *ios[])
{
	pthread_once(&once, init);
	unsigned long call = ++n_calls;
	if (every_eagain && call % every_eagain == 0) {
		n_eagain++;
		return -EAGAIN;
	}
	if (one && nr > 1) {
		nr = 1;
		n_partial++;
	}
	for (long i = 0; i < nr; i++) {
		struct iocb *cb = ios[i];
		if (cb->aio_lio_opcode != IO_CMD_PWRITE)
			continue;
		unsigned long w = ++n_writes;
		if (every_zero && w % every_zero == 0) {
			cb->u.c.nbytes = 0;
			n_zero++;
		} else if (every_short && w % every_short == 0 && cb->u.c.nbytes > 4096) {
			cb->u.c.nbytes = cb->u.c.nbytes / 2 / 4096 * 4096;
			n_short++;
		}
	}
	long r = syscall(SYS_io_submit, ctx, nr, ios);
	return r < 0 ? -errno : (int)r;
}
