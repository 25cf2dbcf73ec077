/* SPDX-License-Identifier: MIT */
/* The recorder's small helpers: the clock, UDP addresses, little-endian
 * fields.  Prefix rr_ throughout recorder/. */
#ifndef RECFS_RECORDER_UTIL_H
#define RECFS_RECORDER_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

uint64_t rr_mono_ns(void);
void rr_sleep_ns(uint64_t ns);
/* the longest duration a tool takes: a year */
#define RR_SECS_MAX (366ull * 86400 * 1000000000ull)
/* "[ADDR:]PORT" (bind) or "HOST:PORT" (connect); fills a sockaddr_in/in6 */
int rr_parse_udp(const char *s, bool need_host, struct sockaddr_storage *ss, socklen_t *len);
/* "ADDR:PORT" ("[ADDR]:PORT" for IPv6) of ss with the given port */
void rr_sockaddr_str(const struct sockaddr_storage *ss, unsigned port, char *out, size_t len);
void rr_put_le64(uint8_t *p, uint64_t v);
uint64_t rr_get_le64(const uint8_t *p);
static inline uint32_t rr_get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline void rr_put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}

#endif
