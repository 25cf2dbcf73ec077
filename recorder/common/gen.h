/* SPDX-License-Identifier: MIT */
/* The test-pattern generators and their verifier. */
#ifndef RECFS_RECORDER_GEN_H
#define RECFS_RECORDER_GEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

#endif
