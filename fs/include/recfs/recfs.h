/* SPDX-License-Identifier: MIT */
/*
 * librecfs: the public interface.
 *
 * Conventions: functions return 0 (or a count) on success and a negative
 * errno on failure.  The failing call also leaves a one-line human message
 * naming the member/recording and what is wrong, readable with
 * recfs_errmsg() in the same thread until the next failing call.
 * Metadata corruption is -EUCLEAN; a data chunk that fails its checksum is
 * -EIO with the byte range in recfs_errmsg().
 */
#ifndef RECFS_RECFS_H
#define RECFS_RECFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/types.h>

#include "recfs/format.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RECFS_VERSION_STRING "0.1.0"

/* ---------------------------------------------------------------- errors */
const char *recfs_errmsg(void);
/* set the thread's message (printf style); returns err for tail calls */
int recfs_seterr(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* --------------------------------------------------------------- devices */
struct recfs_dev;

/* All member I/O goes through these.  Lengths and offsets of metadata I/O
 * are multiples of RECFS_BLOCK; buffers are RECFS_BLOCK aligned. */
struct recfs_dev_ops {
	int (*pread)(struct recfs_dev *d, void *buf, size_t len, uint64_t off);
	int (*pwrite)(struct recfs_dev *d, const void *buf, size_t len, uint64_t off);
	int (*flush)(struct recfs_dev *d);
	void (*close)(struct recfs_dev *d);
};

struct recfs_dev {
	const struct recfs_dev_ops *ops;
	char *path;     /* as given; used in every message */
	uint64_t size;  /* bytes */
	uint32_t lbs;   /* logical block size (512 or 4096) */
	int fd;         /* -1 for non-file backends */
	bool direct;    /* fd was opened with O_DIRECT */
	bool blkdev;
	dev_t st_dev;   /* identity, to refuse the same member twice */
	ino_t st_ino;
	dev_t st_rdev;
	void *priv;
};

#define RECFS_DEV_WRITE 0x1     /* open read-write */
#define RECFS_DEV_EXCL 0x2      /* O_EXCL on block devices, flock on files */
#define RECFS_DEV_BUFFERED 0x4  /* no O_DIRECT */

int recfs_dev_open(const char *path, unsigned flags, struct recfs_dev **out);
void recfs_dev_close(struct recfs_dev *d);
/* libblkid probe: *what gets e.g. "xfs filesystem" or "gpt partition table";
 * returns 1 if a signature was found, 0 if none, <0 on error. */
int recfs_dev_probe(struct recfs_dev *d, char *what, size_t whatlen);
/* remove every signature libblkid finds (mkfs -f) */
int recfs_dev_wipe(struct recfs_dev *d);
/* is this block device itself mounted (per /proc/self/mountinfo)? 1 yes,
 * 0 no or not a block device.  Other openers are caught by RECFS_DEV_EXCL. */
int recfs_dev_mounted(const char *path);

/* Split "a,b,c" into paths.  Free with recfs_spec_free. */
int recfs_spec_split(const char *spec, char ***paths, unsigned *n);
void recfs_spec_free(char **paths, unsigned n);
/* Members given as several arguments, each itself a PACK list. */
int recfs_spec_from_args(int argc, char *const argv[], char ***paths, unsigned *n);
/* -EINVAL naming them if two paths are the same member (name or inode). */
int recfs_paths_distinct(char *const paths[], unsigned n);
/* A file a tool is about to write (path, or fd >= 0 already open) must not
 * be one of spec's members: the same file, block device, or a disk and one
 * of its partitions.  0, or -EEXIST with one line naming both ("WHAT PATH
 * is member M of the pack"). */
int recfs_spec_check_output(const char *spec, const char *what, const char *path, int fd);

/* ------------------------------------------------------------- geometry */
struct recfs_geom {
	uint32_t members;
	uint32_t chunk_size;
	uint32_t chunk_shift;
	uint32_t dir_capacity;
	uint64_t member_size;   /* usable bytes per member */
	uint64_t rows;          /* data chunks per member */
	uint64_t row_bytes;     /* chunk_size * members: the allocation unit */
	uint64_t capacity;      /* rows * row_bytes: logical data bytes */
	uint64_t bitmap_off, bitmap_copy_size, dir_off, csum_off, csum_size;
	uint64_t data_off, backup_off;
};

/* Lay out a pack; -ENOSPC (with message) if member_size cannot hold the
 * metadata and at least one row of data. */
int recfs_geom_compute(struct recfs_geom *g, uint32_t members, uint64_t member_size,
		       uint32_t chunk_size, uint32_t dir_capacity);
/* The stripe map: logical byte -> (member, byte offset on that member). */
void recfs_map(const struct recfs_geom *g, uint64_t logical, unsigned *member,
	       uint64_t *member_off);

/* ---------------------------------------------------------------- packs */
struct recfs_pack;

#define RECFS_O_RDWR 0x1      /* one exclusive writer (locks every member) */
#define RECFS_O_DEGRADED 0x2  /* assemble with missing, damaged or unreadable
				* members left out (read-only) */
#define RECFS_O_BUFFERED 0x4  /* members without O_DIRECT */

/* spec: comma-separated member paths in any order. */
int recfs_pack_open(const char *spec, unsigned flags, struct recfs_pack **out);
/* Assemble from opened devices (any backend).  Takes ownership of every
 * dev, also on failure. */
int recfs_pack_open_devs(struct recfs_dev **devs, unsigned n, unsigned flags,
			 struct recfs_pack **out);
/* Flushes (read-write) and frees; returns the flush result. */
int recfs_pack_close(struct recfs_pack *p);
/* Re-read the bitmap header and directory: a read-only opener following a
 * live writer.  Existing recfs_rec copies stay valid. */
int recfs_pack_reload(struct recfs_pack *p);

const struct recfs_geom *recfs_pack_geom(const struct recfs_pack *p);
/* member i's device, NULL if missing (degraded) */
struct recfs_dev *recfs_pack_dev(struct recfs_pack *p, unsigned i);

struct recfs_pack_info {
	uint8_t uuid[16];
	char label[RECFS_LABEL_MAX + 1];
	uint64_t created_ns;
	uint32_t members, members_present;
	uint32_t chunk_size;
	uint32_t dir_capacity;
	uint32_t recordings;
	uint64_t capacity, used, free, largest_free;
	uint64_t compat, incompat;
	uint32_t bad_entries;   /* directory entries skipped as unusable: run fsck */
};
int recfs_pack_info(struct recfs_pack *p, struct recfs_pack_info *info);

struct recfs_member_info {
	const char *path;   /* NULL when missing; when damaged, the device left out */
	uint8_t uuid[16];
	uint64_t dev_size;
	bool present;
	bool failed;        /* an I/O error since open */
	const char *damaged; /* not present: a device given for it was left out by a
			      * degraded open, why (e.g. too short); else NULL */
};
int recfs_pack_member(struct recfs_pack *p, unsigned i, struct recfs_member_info *mi);
/* RECFS_O_DEGRADED treats a damaged or unreadable device like a missing
 * member: it is left out and remembered here.  The i-th such device: its
 * path, why (without the path) and the member index its superblock gives
 * (-1 when it has none that is valid, or it could not be opened);
 * -ENOENT past the last.  Without RECFS_O_DEGRADED the open fails with
 * that reason, naming the device. */
int recfs_pack_left_out(struct recfs_pack *p, unsigned i, const char **path, const char **why,
			int *member);

struct recfs_mkfs_opts {
	uint32_t chunk_size;    /* 0: default */
	uint32_t dir_capacity;  /* 0: default */
	const char *label;      /* NULL: empty */
	const uint8_t *uuid;    /* NULL: generate.  Tests only: reusing a UUID over an
				 * old pack with it lets its stale slots validate */
	uint64_t created_ns;    /* 0: now */
};
/* Write a new pack over devs (in member order).  Writes superblocks and the
 * first bitmap copy only.  Does not probe signatures (the tool does). */
int recfs_mkfs(struct recfs_dev **devs, unsigned n, const struct recfs_mkfs_opts *o,
	       uint8_t uuid_out[16]);

/* ------------------------------------------------------------ recordings */
struct recfs_gap {
	uint64_t offset;
	uint32_t frames;
	uint16_t thread;
};

struct recfs_loss {
	uint64_t packets, wrong_size, dropped;
	uint64_t frames_lost, out_of_order, invalid;
	uint32_t gap_count, gap_flags;
	struct recfs_gap gaps[RECFS_GAPS_MAX];
};

struct recfs_input {
	uint8_t format;         /* RECFS_FMT_* */
	uint32_t frame_size;
	char source[RECFS_SOURCE_MAX + 1];
};

/* A recording, in host order.  A copy: refresh it to see a writer's progress. */
struct recfs_rec {
	uint32_t index;         /* directory index: stable for its life */
	uint64_t seq;
	uint8_t state;          /* RECFS_STATE_* */
	char name[RECFS_NAME_MAX + 1];
	uint64_t uid;
	uint64_t ext_start, alloc_len, committed_len, tail_csum;
	uint64_t start_ns, end_ns;
	struct recfs_input input;
	struct recfs_loss loss;
};

/* 0 if name is acceptable, else -EINVAL with the reason */
int recfs_name_check(const char *name);
/* Add a gap, merging the closest neighbours when the table is full. */
void recfs_loss_add_gap(struct recfs_loss *l, uint64_t offset, uint32_t frames, uint16_t thread);

/* -ENOENT; -EUCLEAN naming both when name is one of two entries that
 * share a uid (both are set aside at load, like entries with an unusable
 * extent: not listed, not found, index and rows never reused). */
int recfs_rec_lookup(struct recfs_pack *p, const char *name, struct recfs_rec *out);
/* Iterate the entries set aside because they share a uid: the first
 * entry *index or later that repeats the uid of an earlier one (other),
 * and that earlier one (first); -ENOENT when none is left.  Next call:
 * (*index)++ first. */
int recfs_pack_dup_uid(struct recfs_pack *p, uint32_t *index, struct recfs_rec *first,
		       struct recfs_rec *other);
int recfs_rec_get(struct recfs_pack *p, uint32_t index, struct recfs_rec *out);
/* Iterate: fills the first recording with index >= *index and sets *index
 * to it; -ENOENT when none is left.  Next call: (*index)++ first. */
int recfs_rec_next(struct recfs_pack *p, uint32_t *index, struct recfs_rec *out);
/* Re-read one entry from the members (read-only follower of a writer). */
int recfs_rec_refresh(struct recfs_pack *p, struct recfs_rec *r);

/* Create NAME in state RECORDING.  size_hint 0: take the largest free
 * extent (unknown length); else the smallest free extent that holds it.
 * -EEXIST when NAME exists; -EUCLEAN naming both when NAME is one of two
 * set-aside entries that share a uid. */
int recfs_rec_create(struct recfs_pack *p, const char *name, const struct recfs_input *in,
		     uint64_t size_hint, struct recfs_rec *out);

/* Make a longer prefix durable.  The caller has written the data (through
 * the member devices or their fds).  csums[] are the checksums of the
 * recording's chunks first = r->committed_len / chunk_size up to
 * ceil(len / chunk_size) - 1 (the last one over len % chunk_size bytes
 * when len is not a chunk multiple).  Order: write slots, flush members
 * (data and slots), write entry, flush. */
struct recfs_commit {
	uint64_t len;
	const uint64_t *csums;
	uint64_t end_ns;               /* 0: now */
	const struct recfs_loss *loss; /* NULL: unchanged */
};
int recfs_rec_commit(struct recfs_pack *p, struct recfs_rec *r, const struct recfs_commit *c);
/*
 * The pipelined commit, for recorders: one flush per commit interval, not
 * two, and one flush for every recording of the pack (group commit).  Per
 * interval, for each recording, recfs_rec_commit_stage writes the entry
 * staged by its last call (its data and slots went out before the last
 * flush, so it never points past durable data) and the slots of c (NULL or
 * nothing new: none), and stages c's entry in *st; nothing is flushed.
 * Then one recfs_pack_flush.  After that flush: data and slots up to the
 * staged length are durable (fsck finds that end from the slots), and the
 * entry written by this call, r->committed_len, is durable: a commit's
 * entry is durable one interval after its data.  A last call with c NULL
 * and a flush makes the staged length the entry's; recfs_rec_seal after it
 * seals.  st starts zeroed.
 */
struct recfs_stage {
	bool staged;
	struct recfs_rec next;  /* the entry to write at the next call */
};
int recfs_rec_commit_stage(struct recfs_pack *p, struct recfs_rec *r, struct recfs_stage *st,
			   const struct recfs_commit *c);
/* Flush every member at once (durable when it returns 0). */
int recfs_pack_flush(struct recfs_pack *p);
/* Commit (c may be NULL), mark SEALED, return the unused whole rows. */
int recfs_rec_seal(struct recfs_pack *p, struct recfs_rec *r, const struct recfs_commit *c);

#define RECFS_DEL_FORCE 0x1  /* also delete an unsealed (crashed) recording */
int recfs_rec_delete(struct recfs_pack *p, uint32_t index, unsigned flags);

/* Synchronous appender for simple writers (tools, tests): buffers one chunk,
 * writes whole chunks through the device ops, keeps the checksums, and
 * commits on recfs_rec_sync. */
struct recfs_appender;
int recfs_appender_new(struct recfs_pack *p, struct recfs_rec *r, struct recfs_appender **out);
int recfs_append(struct recfs_appender *a, const void *buf, size_t len);
int recfs_append_sync(struct recfs_appender *a);  /* commit everything appended */
int recfs_append_seal(struct recfs_appender *a);  /* sync, seal */
/* Commit as a recorder does (recfs_rec_commit_stage, then one flush): a
 * sync's entry is durable at the next sync, its data at once. */
void recfs_appender_pipeline(struct recfs_appender *a, bool on);
void recfs_appender_free(struct recfs_appender *a);

/* Checksums.  chunk is the index within the recording (0 = first). */
uint64_t recfs_chunk_seed(uint64_t uid, uint64_t chunk);
uint64_t recfs_chunk_csum(uint64_t uid, uint64_t chunk, const void *data, size_t len);

struct recfs_slot {
	uint64_t csum;
	uint32_t len;
};
/* Read checksum slots [first, first+n) of the recording (from the first
 * member whose copy reads; slots are replicated on every member). */
int recfs_rec_slots(struct recfs_pack *p, const struct recfs_rec *r, uint64_t first, uint64_t n,
		    struct recfs_slot *out);
/* The same from member `member`'s replica (or the next readable one): a
 * member that missed updates may hold stale slots. */
int recfs_rec_slots_from(struct recfs_pack *p, const struct recfs_rec *r, uint64_t first,
			 uint64_t n, struct recfs_slot *out, unsigned member);
/* The checksum and length the committed data of chunk c must match. */
int recfs_rec_expect(struct recfs_pack *p, const struct recfs_rec *r, uint64_t c,
		     const struct recfs_slot *slot_c, uint64_t *csum, uint32_t *len);
/* Check the len committed bytes of chunk c in data against their
 * checksum: the entry's for the partial last chunk, else the chunk's slot,
 * tried in `hint` (a copy the caller has, or NULL) and then on every
 * member in turn, since a member that missed an update may hold a stale or
 * damaged one.  The checksum is computed once.  0: it matches; -EIO: no
 * slot matches; else no slot could be read or was whole (-EUCLEAN). */
int recfs_chunk_check(struct recfs_pack *p, const struct recfs_rec *r, uint64_t c,
		      const void *data, uint32_t len, const struct recfs_slot *hint);

#define RECFS_READ_VERIFY 0x1
/* Read committed bytes; returns bytes read (0 at end) or -errno.  With
 * VERIFY every chunk touched is read whole and checked. */
ssize_t recfs_rec_pread(struct recfs_pack *p, const struct recfs_rec *r, void *buf, size_t len,
			uint64_t off, unsigned flags);

/* Small helpers shared by the tools */
uint64_t recfs_now_ns(void);
/*
 * Numbers from a command line or a control line, parsed strictly: decimal
 * digits only (no sign, space, 0x, exponent, NaN or infinity), no
 * overflow, within [lo, hi].  recfs_parse_bytes also takes a K, M, G or T
 * suffix (1024-based, optional "i" and "B"); recfs_parse_secs up to nine
 * decimals, into nanoseconds.  On failure -EINVAL or -ERANGE and one line
 * in recfs_errmsg(): "WHAT 'S': not a number; want LO to HI".
 */
int recfs_parse_num(const char *what, const char *s, uint64_t lo, uint64_t hi, uint64_t *out);
int recfs_parse_bytes(const char *what, const char *s, uint64_t lo, uint64_t hi, uint64_t *out);
int recfs_parse_secs(const char *what, const char *s, uint64_t lo_ns, uint64_t hi_ns, uint64_t *ns);
/* recfs_parse_bytes over the whole range */
int recfs_parse_size(const char *s, uint64_t *out);
/* human size into buf: "1.50 GiB" */
const char *recfs_fmt_size(uint64_t bytes, char *buf, size_t len);
/* Strict UTF-8: the length of the well-formed sequence that starts s (at
 * most n bytes), 0 if none (overlong forms, surrogates, values above
 * U+10FFFF, stray continuation bytes, a sequence cut short). */
size_t recfs_utf8_len(const void *s, size_t n);
/* all n bytes are well-formed UTF-8 */
bool recfs_utf8_valid(const void *s, size_t n);
/* s as a JSON string that is valid UTF-8 whatever s holds: well-formed
 * UTF-8 passes through, '"', '\\' and control characters are escaped, and
 * each byte that is not part of a well-formed sequence becomes \ufffd
 * (lossy). */
void recfs_json_str(FILE *f, const char *s);
/* "KEY": s as recfs_json_str writes it, and when s is not valid UTF-8,
 * after it ', "KEY_hex": "..."' with s's exact bytes in lowercase hex: the
 * way every tool writes a name (or any string from the user) in JSON, so
 * that different names never read the same. */
void recfs_json_name(FILE *f, const char *key, const char *s);
/* ISO 8601 UTC with ms: "2026-11-22T04:18:34.123Z" */
const char *recfs_fmt_time(uint64_t ns, char *buf, size_t len);
void recfs_uuid_unparse(const uint8_t uuid[16], char out[37]);

#ifdef __cplusplus
}
#endif
#endif
