/* SPDX-License-Identifier: MIT */
/*
 * VDIF headers (VDIF specification 1.0/1.1.1): four little-endian 32-bit
 * words (legacy) or eight (standard).
 *   w0: bit 31 invalid, bit 30 legacy, bits 29..0 seconds from epoch
 *   w1: bits 29..24 reference epoch, bits 23..0 frame number in second
 *   w2: bits 31..29 version, 28..24 log2(channels), 23..0 length / 8
 *   w3: bit 31 complex, 30..26 bits/sample - 1, 25..16 thread, 15..0 station
 * and the frame-loss tracker the recorder runs over them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <time.h>

#include "util.h"
#include "vdif.h"

bool rr_vdif_decode(const uint8_t *p, struct rr_vdif_hdr *h)
{
	uint32_t w0 = rr_get_le32(p), w1 = rr_get_le32(p + 4), w2 = rr_get_le32(p + 8),
		 w3 = rr_get_le32(p + 12);
	h->invalid = w0 >> 31;
	h->legacy = (w0 >> 30) & 1;
	h->seconds = w0 & 0x3fffffff;
	h->epoch = (w1 >> 24) & 0x3f;
	h->frame_no = w1 & 0xffffff;
	h->version = w2 >> 29;
	h->length = (w2 & 0xffffff) * 8;
	h->thread = (w3 >> 16) & 0x3ff;
	h->station = w3 & 0xffff;
	return h->length >= (h->legacy ? 16u : 32u) && h->version == 0;
}

int64_t rr_vdif_unix(const struct rr_vdif_hdr *h)
{
	/* epoch e: 1 January (e even) or 1 July (e odd) of 2000 + e / 2 */
	struct tm tm = { .tm_year = 100 + (int)(h->epoch / 2), .tm_mon = h->epoch % 2 ? 6 : 0, .tm_mday = 1 };
	return (int64_t)timegm(&tm) + h->seconds;
}

void rr_vdif_encode(uint8_t *p, const struct rr_vdif_hdr *h)
{
	rr_put_le32(p, (uint32_t)h->invalid << 31 | (uint32_t)h->legacy << 30 | (h->seconds & 0x3fffffff));
	rr_put_le32(p + 4, (h->epoch & 0x3f) << 24 | (h->frame_no & 0xffffff));
	rr_put_le32(p + 8, (h->version & 7) << 29 | ((h->length / 8) & 0xffffff));
	/* 2 bits per sample, real, one channel */
	rr_put_le32(p + 12, 1u << 26 | (h->thread & 0x3ff) << 16 | (h->station & 0xffff));
}

int rr_vdif_track_init(struct rr_vdif_track *t, uint32_t frame_size, struct recfs_loss *loss)
{
	memset(t, 0, sizeof(*t));
	t->frame_size = frame_size;
	t->loss = loss;
	t->th = calloc(RR_VDIF_MAX_THREADS, sizeof(*t->th));
	return t->th ? 0 : -ENOMEM;
}

void rr_vdif_track_free(struct rr_vdif_track *t)
{
	free(t->th);
	t->th = NULL;
}

/* A frame more than RR_VDIF_MAX_JUMP_S seconds ahead of its thread: counted
 * invalid and taking the expected frame's place (like a frame the source
 * flagged invalid), so one corrupt seconds field costs one frame.  When RR_VDIF_RESYNC such frames in a row follow each other,
 * the jump was real: they were valid, and the frames between are lost. */
static uint32_t rr_vdif_suspect(struct rr_vdif_track *t, struct rr_vdif_thread *th,
				const struct rr_vdif_hdr *h, uint64_t off)
{
	struct recfs_loss *l = t->loss;
	l->invalid++;
	if (!th->cand_n || h->seconds != th->cand_sec || h->frame_no != th->cand_fn) {
		th->cand_n = 0;
		th->cand_sec0 = h->seconds;
		th->cand_fn0 = h->frame_no;
		th->cand_off = off;
		th->base_sec = th->next_sec;
		th->base_fn = th->next_fn;
	}
	th->cand_n++;
	th->cand_sec = h->seconds;
	th->cand_fn = h->frame_no + 1;
	if (t->fps && th->cand_fn >= t->fps) {
		th->cand_sec++;
		th->cand_fn = 0;
	}
	if (th->cand_n < RR_VDIF_RESYNC) {
		if (++th->next_fn >= t->fps && t->fps) {
			th->next_sec++;
			th->next_fn = 0;
		}
		return h->length;
	}

	l->invalid -= th->cand_n;
	if (!t->fps)
		t->fps = th->max_fn + 1 > th->next_fn ? th->max_fn + 1 : th->next_fn;
	int64_t d = (int64_t)(th->cand_sec0 - th->base_sec) * t->fps + th->cand_fn0 - th->base_fn;
	if (d > 0) {
		l->frames_lost += (uint64_t)d;
		recfs_loss_add_gap(l, th->cand_off, d > UINT32_MAX ? UINT32_MAX : (uint32_t)d,
				   (uint16_t)h->thread);
	}
	th->next_sec = th->cand_sec;
	th->next_fn = th->cand_fn;
	th->cand_n = 0;
	return h->length;
}

uint32_t rr_vdif_frame(struct rr_vdif_track *t, const uint8_t *hdr, uint32_t len, uint64_t off)
{
	struct rr_vdif_hdr h;
	struct recfs_loss *l = t->loss;

	if (!rr_vdif_decode(hdr, &h) || (t->frame_size && h.length != t->frame_size) ||
	    (len && h.length != len)) {
		l->invalid++;
		return 0;
	}
	if (!t->frame_size)
		t->frame_size = h.length;
	if (h.invalid)
		l->invalid++; /* flagged by the source; it still takes its place */

	struct rr_vdif_thread *th = &t->th[h.thread];
	if (!th->seen) {
		th->seen = true;
		th->next_sec = h.seconds;
		th->next_fn = h.frame_no + 1;
		th->max_fn = h.frame_no;
		goto roll;
	}
	if (h.seconds > th->next_sec && h.seconds - th->next_sec > RR_VDIF_MAX_JUMP_S)
		return rr_vdif_suspect(t, th, &h, off);
	th->cand_n = 0;
	if (h.frame_no > th->max_fn)
		th->max_fn = h.frame_no;
	if (t->fps && h.frame_no >= t->fps)
		t->fps = h.frame_no + 1; /* learned too low: the first second was short */

	int64_t d;
	if (h.seconds == th->next_sec) {
		d = (int64_t)h.frame_no - th->next_fn;
	} else if (h.seconds > th->next_sec) {
		if (!t->fps) {
			/* first second boundary: frames per second = the frame
			 * numbers seen so far in that second */
			t->fps = th->max_fn + 1 > th->next_fn ? th->max_fn + 1 : th->next_fn;
		}
		d = (int64_t)(h.seconds - th->next_sec) * t->fps + h.frame_no - th->next_fn;
	} else {
		d = -1;
	}
	if (d < 0) {
		l->out_of_order++;
		return h.length;
	}
	if (d > 0) {
		l->frames_lost += (uint64_t)d;
		recfs_loss_add_gap(l, off, d > UINT32_MAX ? UINT32_MAX : (uint32_t)d, (uint16_t)h.thread);
	}
	th->next_sec = h.seconds;
	th->next_fn = h.frame_no + 1;
roll:
	if (t->fps && th->next_fn >= t->fps) {
		th->next_sec++;
		th->next_fn = 0;
	}
	return h.length;
}
