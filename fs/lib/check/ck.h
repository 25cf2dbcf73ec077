/* SPDX-License-Identifier: MIT */
/* The checker's private header: its limits, its state (struct ck), and
 * what one pass calls in another.  Only fs/lib/check/ includes it. */
#ifndef RECFS_CHECK_CK_H
#define RECFS_CHECK_CK_H

#include <endian.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/random.h>
#include <time.h>
#include <xxhash.h>

#include "../internal.h"
#include "problem.h"
#include "recfs/check.h"

#define CK_MAX_ARGS 256
#define CK_DIR_BATCH 512u         /* entries per directory read */
#define CK_SLOT_BATCH 8192u       /* checksum slots per table read */
#define CK_SLOT_REPORTS 8         /* per recording, then summarized */
#define CK_VERIFY_IO (8u << 20)   /* bytes per --verify read */
#define CK_VERIFY_WORKERS 4       /* reads in flight per member */
#define CK_VERIFY_MEM (256u << 20) /* read buffers of all workers */
#define CK_BAD_MAX (1u << 20)     /* bad chunks remembered (24 bytes each) */
#define CK_BAD_LINES 20           /* bad chunks listed per recording */

struct ck_member {
	struct recfs_dev *dev;
	int err[2];                 /* decode result: primary, backup */
	char why[2][200];
	struct recfs_super sb[2];
	bool good[2];               /* valid and agrees with the pack */
	const char *field[2];       /* first field that disagrees */
	int index;                  /* member index, -1 unknown */
	bool ignored;               /* not part of the pack */
	bool shrt;                  /* shorter than member_size */
};

struct ck_rec {
	struct recfs_rec r;
	bool drop;                  /* no longer live */
	bool aside;                 /* kept as found (a repair declined): not
				       checked, its rows stay allocated */
	bool commit_bad;            /* committed_len > alloc_len on disk */
	bool own_known;             /* own: committed, or proven if crashed */
	uint64_t own;
	uint64_t commit_orig;
	/* crash recovery */
	bool crashed;
	uint64_t seal_len;
	uint64_t *seal_csums;
	uint64_t nseal;
	/* expected checksums of the committed full chunks (--verify) */
	uint64_t *exp;
	uint8_t *exp_bad;           /* 1: no trustworthy checksum */
	uint64_t nexp;
};

struct ck_bad {
	uint32_t rec;               /* position in c->rec */
	uint32_t member;
	uint64_t chunk;
	int io;                     /* 0 checksum, else -errno */
};

struct ck {
	const struct recfs_check_opts *o;
	struct recfs_check_stats *st;
	char last_io[400];          /* the last PR_MEMBER_IO text: said once */
	unsigned n;
	struct ck_member *a;
	int at[RECFS_MAX_MEMBERS];  /* member index -> argument, -1 missing */
	struct recfs_super sb;
	struct recfs_geom g;
	uint64_t seed;
	bool degraded;              /* member missing: nothing is written */
	bool dup;                   /* two members claim one index: nothing is written */
	bool sb_tie;                /* no superblock has a majority: nothing is written */
	uint64_t dev_rows;          /* data rows the shortest member holds */
	bool dev_rows_set;
	bool cancelled, preen_stop;
	bool keep_leaks;            /* an entry of unknown extent was kept: free no leaked rows */
	int status;
	/* bitmap */
	bool have_bmp, hwm_known, bmp_rebuild;
	struct recfs_bitmap_hdr bh;
	uint8_t *bmp;               /* the newest valid copy */
	uint32_t hwm;
	/* live entries */
	struct ck_rec *rec;
	uint32_t nrec, caprec;
	/* pass 6 */
	struct ck_bad *bad;
	size_t nbad, capbad;
	uint64_t bad_unlisted;      /* beyond CK_BAD_MAX */
	pthread_mutex_t lock;
	pthread_cond_t done;
	atomic_uint_fast64_t vdone;
	atomic_bool verify_oom;
};

/* output.c */
bool ck_stop_now(struct ck *c);
bool ck_can_write(const struct ck *c);
bool ck_problem(struct ck *c, int num, const struct recfs_pctx *pc);

/* io.c */
int ck_dev_read(struct recfs_dev *d, void *buf, size_t len, uint64_t off);
void ck_io_error(struct ck *c, struct recfs_dev *d, const char *what, int err);
int ck_dev_write(struct ck *c, struct recfs_dev *d, const void *buf, size_t len, uint64_t off);
void ck_flush_all(struct ck *c);
int ck_patch(struct ck *c, unsigned ai, const void *src, size_t len, uint64_t off);
uint64_t ck_entry_off(const struct ck *c, uint32_t i, uint64_t seq);
void ck_entry_next(struct ck *c, struct recfs_rec *r);
void ck_entry_free(struct ck *c, uint32_t index, uint64_t prev_seq);
void ck_entry_free_both(struct ck *c, uint32_t index);

/* super.c */
int ck_pass1(struct ck *c);

/* bitmap.c */
int ck_pass2(struct ck *c);

/* dir.c */
int ck_pass3(struct ck *c);

/* slots.c */
void ck_read_slot(struct ck *c, uint64_t lc, struct recfs_slot *v, bool *ok);
int ck_read_chunk(struct ck *c, const struct recfs_rec *r, uint64_t k, uint8_t *buf, unsigned *member);
int ck_prove(struct ck *c, const struct recfs_rec *r, uint64_t from, uint64_t limit, uint64_t *len, uint64_t **csums, uint64_t *ncsums, uint64_t *lost);

/* extents.c */
void ck_drop(struct ck *c, struct ck_rec *e);
int ck_pass4(struct ck *c);

/* csums.c */
int ck_pass5(struct ck *c);
int ck_seal_crashed(struct ck *c);

/* verify.c */
int ck_pass6(struct ck *c);

/* check.c */
void ck_rows_used(struct ck *c);

void ck_out(struct ck *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define FOR_MEMBERS(c, i, m)                                         \
	for (unsigned i = 0; i < (c)->sb.member_count; i++)          \
		if ((c)->at[i] >= 0 && ((m) = &(c)->a[(c)->at[i]], 1))

#endif
