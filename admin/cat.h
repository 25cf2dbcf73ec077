/* SPDX-License-Identifier: MIT */
/* recfs cat's copy (cat.c) */
#ifndef RECFS_ADMIN_CAT_H
#define RECFS_ADMIN_CAT_H

#include <stdint.h>

#include "recfs/recfs.h"

/* Bytes [off, off + len) of r (clipped to its committed length) to fd, in
 * order, the members read in parallel.  0, or -EPIPE (the reader went
 * away: nothing in err), or another -errno with its message in err; all
 * the bytes before a failed piece are written. */
int recfs_cat_copy(struct recfs_pack *p, const struct recfs_rec *r, uint64_t off, uint64_t len,
		   unsigned flags, int fd, char *err, size_t errlen);

#endif
