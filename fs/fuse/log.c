/* SPDX-License-Identifier: MIT */
/*
 * recfs-mount: the log (stderr in the foreground, syslog as a daemon) and
 * the clock.
 */
#include <stdarg.h>
#include <stdio.h>
#include <syslog.h>
#include <time.h>

#include "mount.h"

static bool log_stderr = true;

void rm_log_init(bool foreground)
{
	log_stderr = foreground;
	if (!foreground)
		openlog("recfs-mount", LOG_PID, LOG_DAEMON);
}

void rm_log(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (log_stderr) {
		char line[1024];
		vsnprintf(line, sizeof(line), fmt, ap);
		fprintf(stderr, "recfs-mount: %s\n", line);
	} else {
		vsyslog(LOG_ERR, fmt, ap);
	}
	va_end(ap);
}

uint64_t rm_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
