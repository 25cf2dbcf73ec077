/* SPDX-License-Identifier: MIT */
/*
 * recfs-udpsink (bench only, not installed): the ceiling for bench/udp.sh.
 * recvmmsg in batches into one buffer and discard; counts datagrams and
 * bytes from the first datagram until IDLE_SECONDS (default 1) without
 * one.  Prints "datagrams N bytes N seconds S cpu S" (cpu: user+system
 * of the whole process, as recfs-record's --stats-json reports its own).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/util.h"
#include "recfs/recfs.h"

#define SINK_BATCH 64

int main(int argc, char **argv)
{
	struct sockaddr_storage ss;
	socklen_t len;
	uint64_t idle_ns = 1000000000ull;

	if (argc < 2 || rr_parse_udp(argv[1], false, &ss, &len) ||
	    (argc > 2 && recfs_parse_secs("IDLE_SECONDS", argv[2], 1000000ull, RR_SECS_MAX, &idle_ns))) {
		fprintf(stderr, "usage: recfs-udpsink [ADDR:]PORT [IDLE_SECONDS]\n");
		return 1;
	}
	int s = socket(ss.ss_family, SOCK_DGRAM, 0);
	int want = 64 << 20;
	if (setsockopt(s, SOL_SOCKET, SO_RCVBUFFORCE, &want, sizeof(want)))
		setsockopt(s, SOL_SOCKET, SO_RCVBUF, &want, sizeof(want));
	if (s < 0 || bind(s, (struct sockaddr *)&ss, len)) {
		fprintf(stderr, "recfs-udpsink: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	/* the same scheduling the recorder's receiver gets, where permitted */
	struct sched_param sp = { .sched_priority = 20 };
	pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
	uint8_t *buf = malloc((size_t)SINK_BATCH * 65536);
	struct mmsghdr msgs[SINK_BATCH];
	struct iovec iov[SINK_BATCH];
	uint64_t n = 0, bytes = 0, t0 = 0, tlast = 0;
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		struct pollfd pf = { .fd = s, .events = POLLIN };
		int pr = poll(&pf, 1, 50);
		uint64_t now = rr_mono_ns();
		if (pr <= 0) {
			if (t0 && now - tlast > idle_ns)
				break;
			continue;
		}
		memset(msgs, 0, sizeof(msgs));
		for (int i = 0; i < SINK_BATCH; i++) {
			iov[i] = (struct iovec){ buf + (size_t)i * 65536, 65536 };
			msgs[i].msg_hdr.msg_iov = &iov[i];
			msgs[i].msg_hdr.msg_iovlen = 1;
		}
		int got;
		while ((got = recvmmsg(s, msgs, SINK_BATCH, MSG_DONTWAIT, NULL)) > 0) {
			if (!t0)
				t0 = rr_mono_ns();
			n += (uint64_t)got;
			for (int i = 0; i < got; i++)
				bytes += msgs[i].msg_len;
		}
		tlast = rr_mono_ns();
	}
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("datagrams %llu bytes %llu seconds %.3f cpu %.3f\n", (unsigned long long)n,
	       (unsigned long long)bytes, (double)(tlast - t0) * 1e-9,
	       (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
		       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6);
	free(buf);
	close(s);
	return 0;
}
