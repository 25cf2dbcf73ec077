/* SPDX-License-Identifier: MIT */
/* Problem numbers of the checker (the table is in problem.c). */
#ifndef RECFS_PROBLEM_H
#define RECFS_PROBLEM_H

#include "recfs/check.h"

enum recfs_pr {
	/* pass 1: members and superblocks */
	PR_PACK_NONE = 101,
	PR_MEMBER_SAME = 102,
	PR_MEMBER_FOREIGN = 103,
	PR_MEMBER_DUP = 104,
	PR_MEMBER_MISSING = 105,
	PR_MEMBER_SHORT = 106,
	PR_SB_PRIMARY = 107,
	PR_SB_BACKUP = 108,
	PR_SB_PRIMARY_FIELD = 109,
	PR_SB_BACKUP_FIELD = 110,
	PR_SB_NONE = 111,
	PR_SB_UNKNOWN = 112,
	PR_MEMBER_IO = 113,
	PR_SB_TIE = 114,
	/* pass 2: allocation bitmap copies */
	PR_BMP_NONE = 201,
	PR_BMP_COPY = 202,
	/* pass 3: directory entries */
	PR_ENT_UNUSED = 301,
	PR_ENT_DAMAGED = 302,
	PR_ENT_REPLICA = 303,
	PR_ENT_FIELD = 304,
	PR_ENT_NAME = 305,
	PR_ENT_COMMITTED = 306,
	PR_ENT_DUPNAME = 307,
	PR_ENT_ROLLBACK = 308,
	PR_ENT_UNKNOWN = 309,
	PR_ENT_DUPUID = 310,
	/* pass 4: extents and allocation */
	PR_EXT_RANGE = 401,
	PR_EXT_OVERLAP_TRUNC = 402,
	PR_EXT_OVERLAP_DROP = 403,
	PR_BMP_LEAK = 404,
	PR_BMP_HOLE = 405,
	PR_EXT_CUT = 406,
	/* pass 5: checksum table and crash recovery */
	PR_SLOT_REPLICA = 501,
	PR_SLOT_BAD = 502,
	PR_REC_CRASHED = 503,
	/* pass 6: data (--verify) */
	PR_DATA_BAD = 601,
	PR_DATA_IO = 602,
	PR_DATA_MISSING = 603,
};

#endif
