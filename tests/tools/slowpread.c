/* SPDX-License-Identifier: MIT */
/*
 * slowpread.so: an LD_PRELOAD shim that makes regular files whose path
 * contains $SLOWPREAD_MATCH behave like disks for pread(): one request at a
 * time per file, served in arrival order (a spindle and its queue), each taking
 * $SLOWPREAD_ACCESS_US plus its length at $SLOWPREAD_MBS.  bench/read.sh runs fio and recfs-mount
 * under it, so "raw" and "through the mount" see the same emulated members and a reader that does
 * not keep every member busy shows it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_FILES 64

struct member {
	dev_t dev;
	ino_t ino;
	pthread_mutex_t lock;
	pthread_cond_t turn;
	uint64_t next, serving; /* a FIFO queue, as a disk's */
};

static ssize_t (*real_pread)(int, void *, size_t, off_t);
static struct member members[MAX_FILES];
static unsigned nmembers;
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static const char *match;
static double access_us = 2000, mbs = 150;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void init(void)
{
	const char *a = getenv("SLOWPREAD_ACCESS_US"), *r = getenv("SLOWPREAD_MBS");
	real_pread = (ssize_t(*)(int, void *, size_t, off_t))dlsym(RTLD_NEXT, "pread64");
	match = getenv("SLOWPREAD_MATCH");
	if (a)
		access_us = atof(a);
	if (r)
		mbs = atof(r);
}

/* The spindle of fd, or NULL when fd is not an emulated member. */
static struct member *member_of(int fd)
{
	char link[64], path[4096];
	struct stat st;
	ssize_t n;
	struct member *m = NULL;

	if (!match || fstat(fd, &st) || !S_ISREG(st.st_mode))
		return NULL;
	pthread_mutex_lock(&table_lock);
	for (unsigned i = 0; i < nmembers; i++)
		if (members[i].dev == st.st_dev && members[i].ino == st.st_ino) {
			m = &members[i];
			break;
		}
	pthread_mutex_unlock(&table_lock);
	if (m)
		return m;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof(path) - 1);
	if (n <= 0)
		return NULL;
	path[n] = '\0';
	if (!strstr(path, match))
		return NULL;
	pthread_mutex_lock(&table_lock);
	for (unsigned i = 0; i < nmembers; i++)
		if (members[i].dev == st.st_dev && members[i].ino == st.st_ino)
			m = &members[i];
	if (!m && nmembers < MAX_FILES) {
		m = &members[nmembers++];
		m->dev = st.st_dev;
		m->ino = st.st_ino;
		pthread_mutex_init(&m->lock, NULL);
		pthread_cond_init(&m->turn, NULL);
		m->next = m->serving = 0;
	}
	pthread_mutex_unlock(&table_lock);
	return m;
}

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

ssize_t pread64(int fd, void *buf, size_t len, off_t off)
{
	struct member *m;
	ssize_t ret;
	double t0, busy;

	pthread_once(&once, init);
	m = member_of(fd);
	if (!m)
		return real_pread(fd, buf, len, off);
	pthread_mutex_lock(&m->lock);
	uint64_t ticket = m->next++;
	while (m->serving != ticket)
		pthread_cond_wait(&m->turn, &m->lock);
	pthread_mutex_unlock(&m->lock);
	t0 = now_us();
	ret = real_pread(fd, buf, len, off);
	busy = access_us + (double)len / mbs; /* MB/s == bytes/us */
	while (now_us() - t0 < busy) {
		double left = busy - (now_us() - t0);
		struct timespec ts = {(time_t)(left / 1e6),
				      (long)((left - (double)(time_t)(left / 1e6) * 1e6) * 1e3)};
		nanosleep(&ts, NULL);
	}
	pthread_mutex_lock(&m->lock);
	m->serving++;
	pthread_cond_broadcast(&m->turn);
	pthread_mutex_unlock(&m->lock);
	return ret;
}

ssize_t pread(int fd, void *buf, size_t len, off_t off)
{
	return pread64(fd, buf, len, off);
}
