/* SPDX-License-Identifier: MIT */
/* The test-pattern generators (counter, VDIF) and their verifier, for
 * recfs-record's gen: inputs, recfs-play and recfs-play --check. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gen.h"
#include "util.h"
#include "vdif.h"

static uint32_t rr_gen_hdr_len(const struct rr_gen *g)
{
	return g->kind == RR_GEN_VDIF ? (g->legacy ? 16u : 32u) : 0u;
}

int rr_gen_init(struct rr_gen *g, enum rr_gen_kind kind, uint32_t block, uint32_t threads,
		uint32_t fps, bool legacy)
{
	memset(g, 0, sizeof(*g));
	g->kind = kind;
	g->block = block;
	g->threads = threads ? threads : 1;
	g->fps = fps ? fps : 1;
	g->legacy = legacy;
	uint32_t pre = rr_gen_hdr_len(g) + 8;
	if (block < pre + 1 || (kind == RR_GEN_VDIF && (block % 8 || block / 8 >= (1u << 24))))
		return -EINVAL;
	g->tmpl = calloc(1, block);
	if (!g->tmpl)
		return -ENOMEM;
	for (uint32_t i = pre; i < block; i++)
		g->tmpl[i] = (uint8_t)(i - pre);
	if (kind == RR_GEN_VDIF) {
		/* reference epoch: the half-year containing now */
		time_t now = time(NULL);
		struct tm tm;
		gmtime_r(&now, &tm);
		int year = tm.tm_year + 1900;
		int half = tm.tm_mon >= 6;
		struct tm e = { .tm_year = tm.tm_year, .tm_mon = half ? 6 : 0, .tm_mday = 1 };
		time_t es = timegm(&e);
		g->epoch = (uint32_t)(((year - 2000) * 2 + half) & 63);
		g->sec0 = (uint32_t)(now - es);
	}
	return 0;
}

void rr_gen_free(struct rr_gen *g)
{
	free(g->tmpl);
	g->tmpl = NULL;
}

/* The bytes of block n that are not the template: [0, prefix_len). */
static uint32_t rr_gen_prefix(const struct rr_gen *g, uint64_t n, uint8_t *pre)
{
	uint32_t hl = rr_gen_hdr_len(g);
	if (g->kind == RR_GEN_VDIF) {
		uint64_t per = n / g->threads;
		struct rr_vdif_hdr h = {
			.legacy = g->legacy,
			.seconds = g->sec0 + (uint32_t)(per / g->fps),
			.epoch = g->epoch,
			.frame_no = (uint32_t)(per % g->fps),
			.length = g->block,
			.thread = (uint32_t)(n % g->threads),
			.station = 0x5252, /* "RR" */
		};
		memset(pre, 0, hl);
		rr_vdif_encode(pre, &h);
	}
	rr_put_le64(pre + hl, n);
	return hl + 8;
}

void rr_gen_fill(const struct rr_gen *g, uint8_t *dst, uint64_t off, size_t len, bool tmpl_ready)
{
	uint64_t pos = off, end = off + len;
	uint8_t pre[48];

	while (pos < end) {
		uint64_t n = pos / g->block;
		uint32_t fo = (uint32_t)(pos % g->block);
		uint32_t take = (uint32_t)((end - pos < g->block - fo) ? end - pos : g->block - fo);
		uint32_t pl = rr_gen_prefix(g, n, pre);
		uint8_t *d = dst + (pos - off);
		if (fo < pl)
			memcpy(d, pre + fo, pl - fo < take ? pl - fo : take);
		if (!tmpl_ready) {
			uint32_t lo = fo > pl ? fo : pl, hi = fo + take;
			if (hi > lo)
				memcpy(d + (lo - fo), g->tmpl + lo, hi - lo);
		}
		pos += take;
	}
}

/* ------------------------------------------------------------ verifier */
int rr_check_init(struct rr_check *c, enum rr_gen_kind kind, uint32_t block)
{
	memset(c, 0, sizeof(*c));
	c->first_bad = UINT64_MAX;
	int ret = rr_gen_init(&c->g, kind, block, 1, 1, false);
	if (ret)
		return ret;
	if (kind == RR_GEN_VDIF) {
		c->frame = malloc(block);
		if (!c->frame) {
			rr_gen_free(&c->g);
			return -ENOMEM;
		}
	}
	return 0;
}

void rr_check_free(struct rr_check *c)
{
	rr_gen_free(&c->g);
	free(c->frame);
	c->frame = NULL;
}

static void rr_check_bad(struct rr_check *c, uint64_t off, uint64_t n)
{
	if (c->first_bad == UINT64_MAX)
		c->first_bad = off;
	c->bad_bytes += n;
}

static uint64_t rr_count_diff(const uint8_t *a, const uint8_t *b, size_t n, size_t *first)
{
	uint64_t d = 0;
	*first = SIZE_MAX;
	for (size_t i = 0; i < n; i++)
		if (a[i] != b[i]) {
			if (*first == SIZE_MAX)
				*first = i;
			d++;
		}
	return d;
}

static void rr_check_counter(struct rr_check *c, const uint8_t *buf, size_t len)
{
	uint64_t pos = c->off, end = c->off + len;
	uint8_t pre[48];
	size_t first;

	while (pos < end) {
		uint64_t n = pos / c->g.block;
		uint32_t fo = (uint32_t)(pos % c->g.block);
		uint32_t take = (uint32_t)((end - pos < c->g.block - fo) ? end - pos : c->g.block - fo);
		uint32_t pl = rr_gen_prefix(&c->g, n, pre);
		const uint8_t *s = buf + (pos - c->off);
		if (fo < pl) {
			uint32_t k = pl - fo < take ? pl - fo : take;
			if (memcmp(s, pre + fo, k)) {
				uint64_t d = rr_count_diff(s, pre + fo, k, &first);
				rr_check_bad(c, pos + first, d);
			}
		}
		uint32_t lo = fo > pl ? fo : pl, hi = fo + take;
		if (hi > lo && memcmp(s + (lo - fo), c->g.tmpl + lo, hi - lo)) {
			uint64_t d = rr_count_diff(s + (lo - fo), c->g.tmpl + lo, hi - lo, &first);
			rr_check_bad(c, pos + (lo - fo) + first, d);
		}
		pos += take;
	}
	c->off = end;
}

/* One whole (or trailing partial) VDIF frame at stream offset foff. */
static void rr_check_frame(struct rr_check *c, const uint8_t *f, uint32_t len, uint64_t foff)
{
	struct rr_vdif_hdr h;
	c->frames++;
	if (!rr_vdif_decode(f, &h) || h.length != c->g.block || h.invalid) {
		c->bad_frames++;
		rr_check_bad(c, foff, len);
		return;
	}
	uint32_t hl = h.legacy ? 16 : 32;
	if (len < hl + 8)
		return;
	uint64_t serial = rr_get_le64(f + hl);
	if (c->seen && serial <= c->last_serial) {
		c->bad_frames++;
		rr_check_bad(c, foff + hl, 8);
	} else {
		if (c->seen)
			c->missing += serial - c->last_serial - 1;
		else if (serial)
			c->missing += serial;
		c->seen = true;
		c->last_serial = serial;
	}
	/* payload after the serial: counter from 0 */
	const uint8_t *p = f + hl + 8;
	uint32_t n = len - hl - 8;
	for (uint32_t i = 0; i < n; i++)
		if (p[i] != (uint8_t)i) {
			/* the rest of the frame counts as bad: one frame, one report */
			c->bad_frames++;
			rr_check_bad(c, foff + hl + 8 + i, n - i);
			break;
		}
}

void rr_check_feed(struct rr_check *c, const uint8_t *buf, size_t len)
{
	if (c->g.kind == RR_GEN_COUNTER) {
		rr_check_counter(c, buf, len);
		return;
	}
	while (len) {
		uint32_t k = c->g.block - c->have;
		if (k > len)
			k = (uint32_t)len;
		if (c->have == 0 && k == c->g.block) {
			rr_check_frame(c, buf, k, c->off);
		} else {
			memcpy(c->frame + c->have, buf, k);
			c->have += k;
			if (c->have == c->g.block) {
				rr_check_frame(c, c->frame, c->have, c->off + k - c->have);
				c->have = 0;
			}
		}
		c->off += k;
		buf += k;
		len -= k;
	}
}

void rr_check_end(struct rr_check *c)
{
	if (c->g.kind == RR_GEN_VDIF && c->have) {
		rr_check_frame(c, c->frame, c->have, c->off - c->have);
		c->have = 0;
	}
}
