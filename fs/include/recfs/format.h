/* SPDX-License-Identifier: MIT */
/*
 * recfs on-disk format, version 1.  FORMAT.md is the prose specification;
 * this header is its only C rendering.  Every integer is little-endian on
 * disk; these structs hold disk byte order and are converted to host order
 * only by the readers/writers in fs/lib/disk.c.
 *
 * Per member, all offsets in bytes, all region offsets multiples of 4096:
 *
 *   0               superblock, primary copy (4096)
 *   bitmap_off      bitmap copy 0 (4096 header + bits, bitmap_copy_size)
 *   +copy_size      bitmap copy 1
 *   dir_off         directory: dir_capacity x 2 slots x 1024 (to 4096)
 *   csum_off        chunk checksum table: member_count x rows_max x 16
 *   data_off        data: rows x chunk_size (multiple of chunk_size)
 *   member_size-4096 superblock, backup copy
 */
#ifndef RECFS_FORMAT_H
#define RECFS_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#define RECFS_DISK_VERSION 1u

#define RECFS_BLOCK 4096u         /* metadata alignment and I/O unit */
#define RECFS_SECTOR 512u         /* unit a write is assumed atomic in */
#define RECFS_MAX_MEMBERS 64u
#define RECFS_NAME_MAX 255u
#define RECFS_LABEL_MAX 63u       /* label bytes, NUL-terminated on disk */
#define RECFS_SOURCE_MAX 63u
#define RECFS_GAPS_MAX 32u
#define RECFS_CHUNK_MIN (64u << 10)
#define RECFS_CHUNK_MAX (64u << 20)
#define RECFS_CHUNK_DEFAULT (1u << 20)
#define RECFS_DIR_DEFAULT 8192u
#define RECFS_DIR_MAX (1u << 24)
#define RECFS_ENTRY_SIZE 1024u
#define RECFS_SLOT_SIZE 16u

#define RECFS_SB_MAGIC_BYTES "RECFSPK1"
#define RECFS_BMP_MAGIC 0x504d4252u /* "RBMP" */
#define RECFS_ENT_MAGIC 0x544e4552u /* "RENT" */

/* Feature flags.  A reader refuses a pack with an incompat bit it does not
 * know; unknown compat bits are ignored.  v1 defines none. */
#define RECFS_FEATURE_COMPAT_SUPP 0ull
#define RECFS_FEATURE_INCOMPAT_SUPP 0ull

/* ---- superblock: one 4096-byte block, identical on every member but for
 * member_index and member_uuid, and identical in the primary and backup. */
struct recfs_disk_super {
	uint8_t magic[8];          /*    8  "RECFSPK1" */
	uint32_t version;          /*   12  RECFS_DISK_VERSION */
	uint32_t sb_size;          /*   16  4096 */
	uint64_t compat;           /*   24  compat feature bits */
	uint64_t incompat;         /*   32  incompat feature bits */
	uint8_t pack_uuid[16];     /*   48  the pack */
	uint8_t member_uuid[16];   /*   64  this member (== member_uuids[idx]) */
	uint32_t member_index;     /*   68  0 .. member_count-1 */
	uint32_t member_count;     /*   72  1 .. 64 */
	uint32_t chunk_size;       /*   76  power of two, 64 KiB .. 64 MiB */
	uint32_t dir_capacity;     /*   80  directory entries */
	uint64_t member_size;      /*   88  usable bytes per member */
	uint64_t rows;             /*   96  data chunks per member */
	uint64_t created_ns;       /*  104  mkfs time, ns since 1970 UTC */
	uint64_t bitmap_off;       /*  112  bitmap copy 0 */
	uint64_t bitmap_copy_size; /*  120  bytes per bitmap copy */
	uint64_t dir_off;          /*  128  directory */
	uint64_t csum_off;         /*  136  checksum table */
	uint64_t csum_size;        /*  144  bytes reserved for the table */
	uint64_t data_off;         /*  152  first data chunk */
	uint64_t backup_off;       /*  160  backup superblock (member_size-4096) */
	char label[64];            /*  224  NUL-terminated, NUL-padded */
	uint8_t reserved0[32];     /*  256  zero */
	uint8_t member_uuids[RECFS_MAX_MEMBERS][16]; /* 1280 by index; unused zero */
	uint8_t reserved1[2808];   /* 4088  zero */
	uint64_t checksum;         /* 4096  XXH3-64 of bytes 0..4087, seed 0 */
};

/* ---- bitmap copy header: the first 4096 bytes of a bitmap copy, followed
 * by ceil(rows/8) bytes of bits rounded up to 4096.  Bit r (byte r/8, bit
 * r%8, LSB first) set means row r is allocated. */
struct recfs_disk_bitmap {
	uint32_t magic;            /*    4  RECFS_BMP_MAGIC */
	uint32_t copy;             /*    8  0 or 1: which copy this is */
	uint64_t seq;              /*   16  generation; newest valid wins */
	uint64_t nbits;            /*   24  == rows */
	uint64_t bits_csum;        /*   32  XXH3-64 of the ceil(nbits/8) bit bytes, seed pack_seed */
	uint32_t dir_hwm;          /*   36  directory slots at or above this were never used */
	uint32_t reserved0;        /*   40  zero */
	uint8_t reserved1[4048];   /* 4088  zero */
	uint64_t checksum;         /* 4096  XXH3-64 of bytes 0..4087, seed pack_seed */
};

/* ---- one lost-data gap, recorded by the recorder from frame headers */
struct recfs_disk_gap {
	uint64_t offset;           /*    8  byte offset in the recording of the gap */
	uint32_t frames;           /*   12  frames missing there */
	uint16_t thread;           /*   14  VDIF thread id */
	uint16_t reserved;         /*   16  zero */
};

/* ---- directory entry: two 1024-byte slots per entry index, slot = seq & 1.
 * The valid slot with the larger seq is the entry. */
struct recfs_disk_entry {
	uint32_t magic;            /*    4  RECFS_ENT_MAGIC */
	uint32_t index;            /*    8  entry index (slot pair number) */
	uint64_t seq;              /*   16  entry generation, >= 1 */
	uint8_t state;             /*   17  RECFS_STATE_* */
	uint8_t format;            /*   18  RECFS_FMT_* */
	uint16_t name_len;         /*   20  1..255 when state != FREE */
	uint32_t flags;            /*   24  zero in v1 */
	uint64_t uid;              /*   32  unique id: seeds the chunk checksums */
	uint64_t ext_start;        /*   40  logical byte offset, row aligned */
	uint64_t alloc_len;        /*   48  bytes allocated, whole rows */
	uint64_t committed_len;    /*   56  durable bytes, <= alloc_len */
	uint64_t tail_csum;        /*   64  checksum of the partial last chunk */
	uint64_t start_ns;         /*   72  first byte's time, ns UTC */
	uint64_t end_ns;           /*   80  last commit's time, ns UTC */
	uint32_t frame_size;       /*   84  bytes per frame/packet, 0 unknown */
	uint32_t reserved0;        /*   88  zero */
	char source[64];           /*  152  input description, NUL-padded */
	uint64_t packets;          /*  160  datagrams received */
	uint64_t wrong_size;       /*  168  datagrams of the wrong size */
	uint64_t dropped;          /*  176  datagrams dropped: ring full */
	uint64_t frames_lost;      /*  184  frames missing by header count */
	uint64_t out_of_order;     /*  192  frames arriving out of order */
	uint64_t invalid;          /*  200  frames with invalid headers */
	uint32_t gap_count;        /*  204  gaps[] in use, <= 32 */
	uint32_t gap_flags;        /*  208  RECFS_GAPS_* */
	struct recfs_disk_gap gaps[RECFS_GAPS_MAX]; /* 720 */
	char name[256];            /*  976  name_len bytes, zero padded */
	uint8_t reserved1[40];     /* 1016  zero */
	uint64_t checksum;         /* 1024  XXH3-64 of bytes 0..1015, seed pack_seed */
};

/* ---- checksum table slot: logical chunk c has slot c on every member */
struct recfs_disk_slot {
	uint64_t csum;             /*    8  XXH3-64 of the chunk's first len bytes, chunk seed */
	uint32_t len;              /*   12  bytes covered, 1..chunk_size; 0 never written */
	uint32_t reserved;         /*   16  zero */
};

enum recfs_state {
	RECFS_STATE_FREE = 0,
	RECFS_STATE_RECORDING = 1,
	RECFS_STATE_SEALED = 2,
};

enum recfs_fmt {
	RECFS_FMT_RAW = 0,
	RECFS_FMT_VDIF = 1,
};

#define RECFS_GAPS_COALESCED 0x1u /* more gaps than slots: neighbours merged */

_Static_assert(sizeof(struct recfs_disk_super) == RECFS_BLOCK, "super size");
_Static_assert(offsetof(struct recfs_disk_super, pack_uuid) == 32, "super pack_uuid");
_Static_assert(offsetof(struct recfs_disk_super, member_index) == 64, "super member_index");
_Static_assert(offsetof(struct recfs_disk_super, chunk_size) == 72, "super chunk_size");
_Static_assert(offsetof(struct recfs_disk_super, data_off) == 144, "super data_off");
_Static_assert(offsetof(struct recfs_disk_super, label) == 160, "super label");
_Static_assert(offsetof(struct recfs_disk_super, member_uuids) == 256, "super member_uuids");
_Static_assert(offsetof(struct recfs_disk_super, checksum) == 4088, "super checksum");
_Static_assert(sizeof(struct recfs_disk_bitmap) == RECFS_BLOCK, "bitmap size");
_Static_assert(offsetof(struct recfs_disk_bitmap, dir_hwm) == 32, "bitmap hwm");
_Static_assert(offsetof(struct recfs_disk_bitmap, checksum) == 4088, "bitmap checksum");
_Static_assert(sizeof(struct recfs_disk_gap) == 16, "gap size");
_Static_assert(sizeof(struct recfs_disk_entry) == RECFS_ENTRY_SIZE, "entry size");
_Static_assert(offsetof(struct recfs_disk_entry, uid) == 24, "entry uid");
_Static_assert(offsetof(struct recfs_disk_entry, committed_len) == 48, "entry committed");
_Static_assert(offsetof(struct recfs_disk_entry, source) == 88, "entry source");
_Static_assert(offsetof(struct recfs_disk_entry, gaps) == 208, "entry gaps");
_Static_assert(offsetof(struct recfs_disk_entry, name) == 720, "entry name");
_Static_assert(offsetof(struct recfs_disk_entry, checksum) == 1016, "entry checksum");
_Static_assert(sizeof(struct recfs_disk_slot) == RECFS_SLOT_SIZE, "slot size");

#endif
