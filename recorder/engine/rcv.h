/* SPDX-License-Identifier: MIT */
/*
 * The receivers' common steps (rcv.c), shared by the byte-stream receiver
 * (input.c), the UDP receiver (udp.c) and the --split vdif-thread receiver
 * (split.c).  Private to recorder/engine/.
 */
#ifndef RECFS_RECORDER_ENGINE_RCV_H
#define RECFS_RECORDER_ENGINE_RCV_H

#include "rr.h"

#define RR_BATCH 64
#define RR_COALESCE_NS 200000

/* rcv.c */

void rcv_publish(struct rr *r, uint64_t old, uint64_t now);
uint64_t rcv_budget(struct rr *r, struct rr_seg *s, uint64_t filled, uint64_t deadline,
		    enum rr_stop *why);
bool rcv_idle_wait(int sock, int efd);
void rcv_kernel_drops(struct rr *r);
struct rr_seg *rcv_seg_open(struct rr *r, uint64_t filled, struct rr_vdif_track *vt);
void rcv_first(struct rr *r, struct rr_seg *s, uint64_t t_ns);
void rcv_seg_counts(struct rr *r, struct rr_seg *s);
void rcv_wrong(struct rr *r, uint64_t n, uint64_t len);
void rcv_seg_close(struct rr *r, uint64_t *filled, enum rr_stop why, bool read_drops);
struct rr_seg *rcv_seg(struct rr *r, uint64_t *filled, struct rr_vdif_track *vt);
struct rr_seg *rcv_seg_waiting(struct rr *r);
bool rcv_at_second(const struct rr_seg *s, const uint8_t *d, size_t len);
bool rcv_can_teach(const struct rr *r, const uint8_t *d, uint64_t len);
int rcv_set_size(struct rr *r, uint32_t len, uint8_t **tmp);
uint32_t rcv_run(struct rr *r, const uint8_t *d, uint64_t len);
int rcv_learn_idle(struct rr *r, const uint8_t *d, uint64_t len, uint8_t **tmp);
void rcv_flush_run(struct rr *r, struct rr_seg *s, uint64_t *filled, struct rr_vdif_track *vt);
int rcv_scan_first(struct rr *r, struct rr_seg *s, uint64_t *filled, uint64_t budget,
		   const uint8_t *d, uint64_t len, struct rr_vdif_track *vt, uint8_t **tmp);
bool rcv_failed(struct rr *r);

/* udp.c */
void rcv_udp(struct rr *r);

#endif
