/* SPDX-License-Identifier: MIT */
/* VDIF headers and the frame-loss tracker. */
#ifndef RECFS_RECORDER_VDIF_H
#define RECFS_RECORDER_VDIF_H

#include <stdbool.h>
#include <stdint.h>

#include "recfs/recfs.h"

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
