/* SPDX-License-Identifier: MIT */
/* sd_notify(3) in a few lines: the protocol is one AF_UNIX datagram. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "sdnotify.h"

int rr_sd_notify(const char *state)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	socklen_t salen;
	size_t n, len;
	ssize_t w;
	int fd, ret = 1;

	if (!state || !*state)
		return -EINVAL;
	if (!path || !*path)
		return 0;
	if (path[0] != '/' && path[0] != '@')
		return -EAFNOSUPPORT; /* systemd's vsock: addresses are not for us */
	n = strlen(path);
	if (n > sizeof(sa.sun_path) - (path[0] == '/'))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, n);
	if (path[0] == '@')
		sa.sun_path[0] = 0; /* abstract: the name is exactly the bytes after the NUL */
	salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);

	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	len = strlen(state);
	do
		w = sendto(fd, state, len, MSG_NOSIGNAL, (struct sockaddr *)&sa, salen);
	while (w < 0 && errno == EINTR);
	if (w < 0)
		ret = -errno;
	else if ((size_t)w != len)
		ret = -EIO;
	close(fd);
	return ret;
}

void rr_notify_ready(int fd)
{
	if (fd >= 0) {
		static const char msg[] = "READY=1\n";
		ssize_t w;
		do
			w = write(fd, msg, sizeof(msg) - 1);
		while (w < 0 && errno == EINTR);
		if (fd > 2) /* --ready-fd 1 may share stdout with the report */
			close(fd);
	}
	rr_sd_notify("READY=1");
}
