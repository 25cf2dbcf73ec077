/* SPDX-License-Identifier: MIT */
/* The recorder's small helpers: the clock, UDP addresses, little-endian
 * fields. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "recfs/recfs.h"
#include "util.h"

uint64_t rr_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void rr_sleep_ns(uint64_t ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000ull),
			       .tv_nsec = (long)(ns % 1000000000ull) };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

void rr_sockaddr_str(const struct sockaddr_storage *ss, unsigned port, char *out, size_t len)
{
	char host[INET6_ADDRSTRLEN] = "?";
	if (ss->ss_family == AF_INET6) {
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)ss)->sin6_addr, host, sizeof(host));
		snprintf(out, len, "[%s]:%u", host, port);
	} else {
		inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr, host, sizeof(host));
		snprintf(out, len, "%s:%u", host, port);
	}
}

int rr_parse_udp(const char *s, bool need_host, struct sockaddr_storage *ss, socklen_t *len)
{
	char host[256] = "";
	const char *port = s;
	const char *colon = strrchr(s, ':');

	if (colon) {
		size_t hl = (size_t)(colon - s);
		if (hl >= sizeof(host))
			return -EINVAL;
		memcpy(host, s, hl);
		host[hl] = 0;
		port = colon + 1;
		/* [v6]:port */
		if (host[0] == '[' && hl >= 2 && host[hl - 1] == ']') {
			memmove(host, host + 1, hl - 2);
			host[hl - 2] = 0;
		}
	}
	if (need_host && !host[0])
		return -EINVAL;
	uint64_t p;
	if (recfs_parse_num("port", port, need_host ? 1 : 0, 65535, &p))
		return -EINVAL;

	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_DGRAM,
				  .ai_flags = need_host ? 0 : AI_PASSIVE };
	struct addrinfo *res = NULL;
	char pstr[8];
	snprintf(pstr, sizeof(pstr), "%u", (unsigned)p);
	if (getaddrinfo(host[0] ? host : NULL, pstr, &hints, &res) || !res)
		return -EADDRNOTAVAIL;
	/* prefer IPv4 for the wildcard so a v4 sender reaches us */
	struct addrinfo *pick = res;
	if (!host[0])
		for (struct addrinfo *a = res; a; a = a->ai_next)
			if (a->ai_family == AF_INET) {
				pick = a;
				break;
			}
	memcpy(ss, pick->ai_addr, pick->ai_addrlen);
	*len = pick->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

void rr_put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

uint64_t rr_get_le64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}
