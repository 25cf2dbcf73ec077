/* SPDX-License-Identifier: MIT */
/*
 * The fault-injecting device backend, for tests.  Members live in memory.
 * Every write is counted (across all members of one recfs_fault, from 1).
 * Power-loss model: a write is durable once it completed and the member
 * was flushed after it; a cut at write N means write N is torn (its first
 * `torn_sectors` 512-byte sectors land, the rest not), and writes after N
 * never happen.  With RECFS_FAULT_VOLATILE the cut also loses every write
 * not yet flushed on its member (a write-back cache losing its contents);
 * without it, unflushed writes before N survive (littlefs emubd's model).
 */
#ifndef RECFS_FAULT_H
#define RECFS_FAULT_H

#include "recfs/recfs.h"

struct recfs_fault;

#define RECFS_FAULT_VOLATILE 0x1

struct recfs_fault *recfs_fault_new(unsigned members, uint64_t size);
void recfs_fault_free(struct recfs_fault *f);
/* A device view of member i.  Closing it does not free the image. */
struct recfs_dev *recfs_fault_dev(struct recfs_fault *f, unsigned i);

/* Writes seen so far (all members). */
uint64_t recfs_fault_writes(const struct recfs_fault *f);
/* Power cut at write number n (>= 1): see above.  0 disarms. */
void recfs_fault_cut_at(struct recfs_fault *f, uint64_t n, unsigned torn_sectors,
			unsigned flags);
/* Write number n fails with -EIO (the write does not happen); 0 disarms. */
void recfs_fault_fail_at(struct recfs_fault *f, uint64_t n);
/* After a cut fired: true; writes after it return -EIO. */
bool recfs_fault_cut_fired(const struct recfs_fault *f);
/* "Reboot": the images become what survived the cut; disarm; counting
 * restarts at 0. */
void recfs_fault_reboot(struct recfs_fault *f);
/* Direct access to member i's (current) image, for corrupting tests. */
uint8_t *recfs_fault_image(struct recfs_fault *f, unsigned i);

#endif
