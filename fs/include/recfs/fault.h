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
 *
 * Reorder model (CrashMonkey's, ALICE's): a disk may persist any subset of
 * the writes issued since its last flush, in any order, and members are
 * independent disks.  Cut with recfs_fault_cut_at_flush (the power goes
 * just before a flush: every member keeps its log of unflushed writes),
 * then recfs_fault_reboot_pick: each logged write, independently, is lost,
 * kept, or torn (any subset of its sectors kept).  Overlapping writes: a
 * sector's final bytes are those of the newest write that persisted that
 * sector, or what the last flush left if none did; so keeping a later
 * write and losing an earlier one to the same bytes is a legal state.
 *
 * Read faults: reads overlapping a range given to recfs_fault_read_error
 * fail with -EIO (a bad sector); they stay until recfs_fault_read_clear,
 * reboots included.
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
/* Power cut at flush call number n (>= 1, counted over all members'
 * flush calls): that flush and everything after it fail with -EIO and
 * every member keeps its unflushed writes for recfs_fault_reboot_pick.
 * 0 disarms. */
void recfs_fault_cut_at_flush(struct recfs_fault *f, uint64_t n);
/* Flush calls seen so far (all members). */
uint64_t recfs_fault_flushes(const struct recfs_fault *f);
/* Writes on member i since its last flush (the reorder candidates). */
size_t recfs_fault_pending(const struct recfs_fault *f, unsigned member);
/* Chooses what of write k (0 = oldest of the nlog pending on `member`, at
 * [off, off+len)) persists: set keep[j] non-zero for each 512-byte sector
 * j of the write (counted from the sector holding off) that lands; keep
 * comes zeroed (the write is lost). */
typedef void (*recfs_fault_pick_fn)(void *ctx, unsigned member, size_t k, size_t nlog,
				    uint64_t off, size_t len, uint8_t *keep);
/* "Reboot" in the reorder model: every member's image becomes what its
 * last flush made durable plus the chosen sectors of its pending writes,
 * applied oldest first; then as recfs_fault_reboot.  A write torn by
 * recfs_fault_cut_at is dropped. */
void recfs_fault_reboot_pick(struct recfs_fault *f, recfs_fault_pick_fn pick, void *ctx);
/* A deep copy (images, pending writes, armed faults): one cut state,
 * rebooted many ways.  NULL when out of memory. */
struct recfs_fault *recfs_fault_clone(const struct recfs_fault *f);
/* Reads of member i overlapping [off, off+len) fail with -EIO (at most 8
 * ranges; -EINVAL beyond). */
int recfs_fault_read_error(struct recfs_fault *f, unsigned member, uint64_t off, uint64_t len);
void recfs_fault_read_clear(struct recfs_fault *f);
/* Direct access to member i's (current) image, for corrupting tests. */
uint8_t *recfs_fault_image(struct recfs_fault *f, unsigned i);

#endif
