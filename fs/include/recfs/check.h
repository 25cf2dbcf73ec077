/* SPDX-License-Identifier: MIT */
/*
 * The pack checker behind fsck.recfs: check, repair, recover crashed
 * recordings, verify data.  It works on opened member devices (any
 * backend, in any order), not on an assembled pack, so that it can look at
 * packs the library would refuse to open.
 *
 * Every problem it reports has a stable code from one table (problem.c),
 * so that the output of a run is stable across versions and can be diffed.
 */
#ifndef RECFS_CHECK_H
#define RECFS_CHECK_H

#include <stdbool.h>
#include <stdint.h>

#include "recfs/recfs.h"

#ifdef __cplusplus
extern "C" {
#endif

/* fsck(8) exit status bits */
#define RECFS_FSCK_OK 0
#define RECFS_FSCK_CORRECTED 1
#define RECFS_FSCK_REBOOT 2        /* unused by recfs */
#define RECFS_FSCK_UNCORRECTED 4
#define RECFS_FSCK_ERROR 8         /* operational error */
#define RECFS_FSCK_USAGE 16
#define RECFS_FSCK_CANCELLED 32

enum recfs_check_mode {
	RECFS_CHECK_NO = 0,   /* -n: report only, never write */
	RECFS_CHECK_YES,      /* -y: repair everything repairable */
	RECFS_CHECK_PREEN,    /* -p: repair what is safe, stop at anything else */
	RECFS_CHECK_ASK,      /* ask through opts.ask for every repair */
};

/* Answer of opts.ask */
#define RECFS_ASK_NO 0
#define RECFS_ASK_YES 1
#define RECFS_ASK_CANCEL (-1)

struct recfs_check_opts {
	enum recfs_check_mode mode;
	bool verify;           /* read every committed chunk against its checksum */
	bool verbose;          /* also print per-pass details */
	bool live;             /* a writer holds the pack (-n beside a recorder):
				* recordings in progress are reported as such,
				* not as crashed */
	/* one line of output, without its newline (stdout of fsck) */
	void (*out)(void *ctx, const char *line);
	/* the problem line already printed by out(); question like "Fix" */
	int (*ask)(void *ctx, const char *question);
	/* --verify progress: bytes verified so far, of total; called from the
	 * checking thread a few times a second */
	void (*progress)(void *ctx, uint64_t done, uint64_t total);
	/* polled between passes, between entries and during --verify (also
	 * from its reader threads): true stops the check, as a cancelled
	 * question does (nothing more is written; NULL: never) */
	bool (*cancel)(void *ctx);
	void *ctx;
};

struct recfs_check_stats {
	unsigned members, recordings;
	unsigned problems, fixed, unfixed;
	uint64_t rows, rows_used;
	unsigned recovered;          /* crashed recordings sealed */
	uint64_t recovered_bytes;    /* bytes they hold after recovery */
	uint64_t beyond_commit;      /* of those, found past their last commit */
	uint64_t lost_bytes;         /* written after the durable end, unprovable */
	uint64_t verified_bytes;     /* --verify */
	uint64_t bad_chunks;         /* --verify: chunks failing their checksum */
	uint64_t verify_ns;          /* --verify: wall time of the data pass */
};

/*
 * Check the pack whose members are devs[0..n) (any order; the devices stay
 * owned by the caller and must have been opened writable unless mode is
 * RECFS_CHECK_NO).  Returns the fsck(8) exit status (RECFS_FSCK_* bits).
 * st may be NULL.
 */
int recfs_check(struct recfs_dev **devs, unsigned n, const struct recfs_check_opts *o,
		struct recfs_check_stats *st);

/*
 * A writer's crash recovery: when the pack (opened RECFS_O_RDWR) holds
 * recordings left unsealed by a crash, run the check in preen mode over its
 * own devices, which seals each one at its durable end exactly as
 * fsck.recfs -p does, and reload the pack.  0 when none is left unsealed
 * (st->recovered says how many were sealed; nothing is read when none was
 * unsealed; st->unfixed counts problems preen may not repair, left for
 * fsck.recfs), or -EUCLEAN naming the fix when preen stopped before sealing
 * them.  out gets the checker's lines (NULL: none).  st may be NULL.
 */
int recfs_pack_recover(struct recfs_pack *p, void (*out)(void *ctx, const char *line), void *ctx,
		       struct recfs_check_stats *st);

/* ------------------------------------------------------- the problem table */
#define RECFS_PRF_NOFIX 0x1   /* cannot be repaired: always left (exit 4) */
#define RECFS_PRF_PREEN 0x2   /* safe to repair in preen mode (-p) */
#define RECFS_PRF_FATAL 0x4   /* the check cannot go on (exit 8) */

struct recfs_problem {
	int number;               /* stable number, listed in fsck.recfs(8) */
	const char *code;         /* stable name, e.g. "PR_SB_PRIMARY" */
	const char *msg;          /* message template, see recfs_problem_format */
	const char *fix;          /* the repair, as a question ("Rewrite it") */
	unsigned flags;           /* RECFS_PRF_* */
	const char *doc;          /* one line for the man page */
};

/* Fills in a problem message: %m member path, %i member index, %e entry
 * index, %n recording name, %N second name, %a %b %c %d numbers, %s string. */
struct recfs_pctx {
	const char *member;
	unsigned mindex;
	uint32_t entry;
	const char *name, *name2;
	uint64_t a, b, c, d;
	const char *str;
};

/* Every problem, in number order, ending with a zeroed entry. */
extern const struct recfs_problem recfs_problems[];
const struct recfs_problem *recfs_problem_get(int number);
void recfs_problem_format(const char *tmpl, const struct recfs_pctx *pc, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
