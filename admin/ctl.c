/* SPDX-License-Identifier: MIT */
/*
 * recfs ctl: send VSI-S statements to recfsd (or any VSI-S recorder) and
 * print its replies, one line each.  Exit 0 when every reply's return code
 * is 0 or 1, 4 when one is not, 1 when the recorder cannot be reached.
 */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "recfs/recfs.h"
#include "ctl.h"

#define CTL_DEFAULT "127.0.0.1:2620"

static int ctl_err(const char *fmt, const char *a, const char *b)
{
	fprintf(stderr, "recfs ctl: ");
	fprintf(stderr, fmt, a, b);
	fputc('\n', stderr);
	return 1;
}

/* HOST:PORT or [V6]:PORT, and nothing a statement would have */
static int ctl_is_addr(const char *s)
{
	const char *c = strrchr(s, ':');
	if (!c || !c[1] || strpbrk(s, "=?;"))
		return 0;
	for (const char *p = c + 1; *p; p++)
		if (*p < '0' || *p > '9')
			return 0;
	return 1;
}

static int ctl_connect(const char *where, int timeout_ms)
{
	char host[256];
	const char *c = strrchr(where, ':');
	size_t hl = (size_t)(c - where);
	if (hl >= sizeof(host))
		return -EINVAL;
	memcpy(host, where, hl);
	host[hl] = 0;
	if (host[0] == '[' && hl > 2 && host[hl - 1] == ']') {
		memmove(host, host + 1, hl - 2);
		host[hl - 2] = 0;
	}
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res = NULL;
	if (getaddrinfo(host, c + 1, &hints, &res) || !res)
		return -EADDRNOTAVAIL;
	int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct timeval tv = { .tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000 };
	if (fd >= 0) {
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	}
	int err = fd < 0 || connect(fd, res->ai_addr, res->ai_addrlen) ? -errno : 0;
	freeaddrinfo(res);
	if (err) {
		if (fd >= 0)
			close(fd);
		return err;
	}
	return fd;
}

/* One statement out, one reply line in; its return code, -1 if unreadable. */
static int ctl_one(int fd, FILE *in, const char *stmt)
{
	size_t n = strlen(stmt);
	while (n && (stmt[n - 1] == ' ' || stmt[n - 1] == '\n'))
		n--;
	char line[4200];
	int m = snprintf(line, sizeof(line), "%.*s%s\n", (int)n, stmt, n && stmt[n - 1] == ';' ? "" : ";");
	if (m < 0 || (size_t)m >= sizeof(line) || send(fd, line, (size_t)m, MSG_NOSIGNAL) != m)
		return -2;
	char reply[16384];
	if (!fgets(reply, sizeof(reply), in))
		return -2;
	fputs(reply, stdout);
	/* the worst return code of the statements on the line */
	int worst = -1;
	for (const char *p = reply; (p = strchr(p, '!')); p++) {
		const char *op = strpbrk(p, "=?");
		int rc;
		if (op && sscanf(op + 1, " %d", &rc) == 1 && rc > worst)
			worst = rc;
	}
	return worst;
}

int recfs_ctl_main(int argc, char **argv)
{
	const char *where = CTL_DEFAULT;
	int timeout_ms = 10000, i = 1;
	if (i < argc && !strcmp(argv[i], "-t")) {
		uint64_t ns;
		if (i + 1 >= argc)
			return ctl_err("-t needs SECONDS%s%s", "", "");
		if (recfs_parse_secs("-t", argv[i + 1], 1000000ull, 3600000000000ull, &ns))
			return ctl_err("%s%s", recfs_errmsg(), "");
		timeout_ms = (int)(ns / 1000000);
		i += 2;
	}
	if (i < argc && ctl_is_addr(argv[i]))
		where = argv[i++];
	if (i >= argc) {
		fprintf(stderr, "Usage: recfs ctl [-t SECONDS] [ADDR:PORT] STATEMENT... | -\n");
		return 1;
	}
	int fd = ctl_connect(where, timeout_ms);
	if (fd < 0)
		return ctl_err("%s: cannot connect: %s", where, strerror(-fd));
	FILE *in = fdopen(dup(fd), "r");
	int worst = 0;
	char buf[4200];
	for (; i < argc; i++) {
		bool from_stdin = !strcmp(argv[i], "-");
		while (from_stdin ? fgets(buf, sizeof(buf), stdin) != NULL : true) {
			const char *stmt = from_stdin ? buf : argv[i];
			if (from_stdin && strspn(buf, " \t\r\n") == strlen(buf))
				continue;
			int rc = ctl_one(fd, in, stmt);
			if (rc == -2) {
				fclose(in);
				close(fd);
				return ctl_err("%s: %s", where, errno == EAGAIN ? "no reply in time" : "connection lost");
			}
			if (rc != 0 && rc != 1)
				worst = 4;
			if (!from_stdin)
				break;
		}
	}
	fclose(in);
	close(fd);
	return worst;
}
