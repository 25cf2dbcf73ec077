/* SPDX-License-Identifier: MIT */
/*
 * recfs-record and recfs-play: shared pieces (generators, VDIF, helpers).
 * Tool-private prefix: rr_.
 */
#ifndef RECFS_RECORDER_REC_H
#define RECFS_RECORDER_REC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "recfs/recfs.h"

/* ------------------------------------------------------------- helpers */
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

/* ---------------------------------------------------------- generators */
/*
 * counter: the stream is blocks of `block` bytes; block n holds n as a
 * little-endian 8-byte serial followed by an 8-bit counter that starts at 0
 * after the serial and wraps at 256 (the MCS-DR verification pattern).
 * Every byte is a function of its offset.
 *
 * vdif: frames of `frame` bytes (header 32 bytes, or 16 with legacy), frame
 * g in the stream belongs to thread g % threads; a thread's frames are
 * numbered within their second at `fps` frames per second.  The payload is
 * g as a little-endian 8-byte serial, then the counter pattern.
 */
enum rr_gen_kind { RR_GEN_COUNTER = 1, RR_GEN_VDIF = 2 };

struct rr_gen {
	enum rr_gen_kind kind;
	uint32_t block;       /* counter block / VDIF frame size */
	uint32_t threads;     /* vdif */
	uint32_t fps;         /* vdif frames per second per thread */
	bool legacy;          /* vdif legacy 16-byte header */
	uint32_t epoch;       /* vdif reference epoch (half-years since 2000) */
	uint32_t sec0;        /* vdif seconds since epoch of frame 0 */
	uint8_t *tmpl;        /* one block of the counter pattern (serial 0) */
};

int rr_gen_init(struct rr_gen *g, enum rr_gen_kind kind, uint32_t block, uint32_t threads,
		uint32_t fps, bool legacy);
void rr_gen_free(struct rr_gen *g);
/* Write stream bytes [off, off+len) into dst.  With `tmpl_ready` the caller
 * promises dst already holds the counter template at the same block phase
 * (only serials are written then). */
void rr_gen_fill(const struct rr_gen *g, uint8_t *dst, uint64_t off, size_t len, bool tmpl_ready);

/* Verifier over a stream (recfs-play --check).  Feed bytes in order. */
struct rr_check {
	struct rr_gen g;
	uint64_t off;          /* stream bytes seen */
	uint64_t bad_bytes;
	uint64_t first_bad;    /* offset of the first bad byte, UINT64_MAX none */
	/* vdif */
	uint8_t *frame;        /* frame being assembled */
	uint32_t have;
	uint64_t frames, bad_frames, missing, last_serial;
	bool seen;
};
int rr_check_init(struct rr_check *c, enum rr_gen_kind kind, uint32_t block);
void rr_check_feed(struct rr_check *c, const uint8_t *buf, size_t len);
/* a trailing partial vdif frame: checked as far as it goes */
void rr_check_end(struct rr_check *c);
void rr_check_free(struct rr_check *c);

/* ---------------------------------------------------------------- VDIF */
#define RR_VDIF_MAX_THREADS 1024u

struct rr_vdif_hdr {
	bool invalid, legacy;
	uint32_t seconds, epoch, frame_no, length; /* length in bytes */
	uint32_t version, thread, station;
};
/* Decode the first 16 bytes; false if the header cannot be a VDIF header
 * (zero length, length not a multiple of 8, version != 0). */
bool rr_vdif_decode(const uint8_t *p, struct rr_vdif_hdr *h);
void rr_vdif_encode(uint8_t *p, const struct rr_vdif_hdr *h);
/* The Unix time of a header's second (reference epoch + seconds). */
int64_t rr_vdif_unix(const struct rr_vdif_hdr *h);

/* Frame-loss tracker over (thread, second, frame number). */
struct rr_vdif_thread {
	uint32_t next_sec, next_fn;
	uint32_t max_fn;
	bool seen;
	/* frames further ahead than RR_VDIF_MAX_JUMP_S: suspect (a corrupt
	 * seconds field) until RR_VDIF_RESYNC of them in a row agree */
	uint32_t cand_n, cand_sec, cand_fn;     /* run length, its next frame */
	uint32_t cand_sec0, cand_fn0;           /* its first frame */
	uint32_t base_sec, base_fn;             /* next_* before the run */
	uint64_t cand_off;                      /* at this stream offset */
};
#define RR_VDIF_MAX_JUMP_S 4u
#define RR_VDIF_RESYNC 3u
struct rr_vdif_track {
	uint32_t frame_size;   /* expected bytes per frame; 0 learn from first */
	uint32_t fps;          /* frames per second, 0 until learned */
	struct rr_vdif_thread *th;   /* RR_VDIF_MAX_THREADS */
	struct recfs_loss *loss;     /* counters and gaps go here */
};
int rr_vdif_track_init(struct rr_vdif_track *t, uint32_t frame_size, struct recfs_loss *loss);
void rr_vdif_track_free(struct rr_vdif_track *t);
/* One frame at recording offset `off`, `len` bytes seen (datagram size or
 * frame_size in a byte stream).  Returns the frame's length from its header
 * when valid, else 0. */
uint32_t rr_vdif_frame(struct rr_vdif_track *t, const uint8_t *hdr, uint32_t len, uint64_t off);

#endif
