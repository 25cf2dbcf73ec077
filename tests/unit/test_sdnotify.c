/* rr_sd_notify (recorder/common/sdnotify.c) against real AF_UNIX datagram sockets
 * bound here, as systemd binds its notification socket. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../recorder/common/sdnotify.h"

/* bind a datagram socket at path ('@' first: abstract); returns the fd */
static int listen_at(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t n = strlen(path);
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	assert_true(fd >= 0);
	assert_true(n < sizeof(sa.sun_path));
	memcpy(sa.sun_path, path, n);
	if (path[0] == '@')
		sa.sun_path[0] = 0;
	assert_int_equal(bind(fd, (struct sockaddr *)&sa,
			      (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n)),
			 0);
	return fd;
}

/* the one datagram waiting on fd */
static void expect_datagram(int fd, const char *want)
{
	char buf[512];
	ssize_t r = recv(fd, buf, sizeof(buf), 0);
	assert_int_equal(r, (ssize_t)strlen(want));
	assert_memory_equal(buf, want, strlen(want));
	assert_int_equal(recv(fd, buf, sizeof(buf), 0), -1); /* and only one */
	assert_int_equal(errno, EAGAIN);
}

static void test_unset(void **state)
{
	(void)state;
	unsetenv("NOTIFY_SOCKET");
	assert_int_equal(rr_sd_notify("READY=1"), 0);
	setenv("NOTIFY_SOCKET", "", 1);
	assert_int_equal(rr_sd_notify("READY=1"), 0);
}

static void test_path_socket(void **state)
{
	char dir[] = "/tmp/recfs-sdnotify.XXXXXX", path[128];
	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/notify", dir);
	int fd = listen_at(path);
	setenv("NOTIFY_SOCKET", path, 1);
	assert_int_equal(rr_sd_notify("READY=1"), 1);
	expect_datagram(fd, "READY=1");
	/* several assignments, newline-separated, arrive as one datagram */
	assert_int_equal(rr_sd_notify("READY=1\nSTATUS=recording scan no0042"), 1);
	expect_datagram(fd, "READY=1\nSTATUS=recording scan no0042");
	close(fd);
	unlink(path);
	/* nobody there any more */
	assert_int_equal(rr_sd_notify("STOPPING=1"), -ENOENT);
	rmdir(dir);
}

static void test_abstract_socket(void **state)
{
	char name[64];
	(void)state;
	snprintf(name, sizeof(name), "@recfs-sdnotify-test-%d", (int)getpid());
	int fd = listen_at(name);
	setenv("NOTIFY_SOCKET", name, 1);
	assert_int_equal(rr_sd_notify("READY=1"), 1);
	expect_datagram(fd, "READY=1");
	close(fd);
	assert_int_equal(rr_sd_notify("READY=1"), -ECONNREFUSED);
	/* the abstract name is exact: a longer or shorter one is another socket */
	char longer[80];
	snprintf(longer, sizeof(longer), "%sx", name);
	fd = listen_at(longer);
	setenv("NOTIFY_SOCKET", name, 1);
	assert_int_equal(rr_sd_notify("READY=1"), -ECONNREFUSED);
	close(fd);
}

static void test_bad_addresses(void **state)
{
	char big[200];
	(void)state;
	setenv("NOTIFY_SOCKET", "relative/notify", 1);
	assert_int_equal(rr_sd_notify("READY=1"), -EAFNOSUPPORT);
	setenv("NOTIFY_SOCKET", "vsock:2:1234", 1);
	assert_int_equal(rr_sd_notify("READY=1"), -EAFNOSUPPORT);
	memset(big, 'a', sizeof(big) - 1);
	big[0] = '/';
	big[sizeof(big) - 1] = 0;
	setenv("NOTIFY_SOCKET", big, 1);
	assert_int_equal(rr_sd_notify("READY=1"), -ENAMETOOLONG);
	/* 108 bytes fit an abstract name, not a path (its NUL) */
	big[108] = 0;
	setenv("NOTIFY_SOCKET", big, 1);
	assert_int_equal(rr_sd_notify("READY=1"), -ENAMETOOLONG);
	big[0] = '@';
	setenv("NOTIFY_SOCKET", big, 1);
	assert_int_equal(rr_sd_notify("READY=1"), -ECONNREFUSED);
	assert_int_equal(rr_sd_notify(""), -EINVAL);
	unsetenv("NOTIFY_SOCKET");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unset),
		cmocka_unit_test(test_path_socket),
		cmocka_unit_test(test_abstract_socket),
		cmocka_unit_test(test_bad_addresses),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
