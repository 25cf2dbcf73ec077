/* SPDX-License-Identifier: MIT */
/* Crash recovery for a writer that opens a pack: the recordings a crash
 * left unsealed are sealed at their durable end by the checker, exactly as
 * fsck.recfs -p does, before the writer allocates anything. */
#include <string.h>

#include "internal.h"
#include "recfs/check.h"

int recfs_pack_recover(struct recfs_pack *p, void (*out)(void *ctx, const char *line), void *ctx,
		       struct recfs_check_stats *st)
{
	struct recfs_check_stats local;
	struct recfs_dev *devs[RECFS_MAX_MEMBERS];
	unsigned n = 0;
	bool crashed = false;

	if (!st)
		st = &local;
	memset(st, 0, sizeof(*st));
	if (!(p->flags & RECFS_O_RDWR))
		return recfs_seterr(-EROFS, "pack is open read-only");
	for (uint32_t i = 0; i < p->dir_hwm && !crashed; i++)
		crashed = p->ent[i] && p->ent[i]->state == RECFS_STATE_RECORDING;
	if (!crashed)
		return 0;
	/* the pack's own devices: the writer lock is held throughout */
	for (unsigned i = 0; i < p->g.members; i++)
		if (p->m[i].dev && !p->m[i].failed)
			devs[n++] = p->m[i].dev;
	struct recfs_check_opts o = { .mode = RECFS_CHECK_PREEN, .out = out, .ctx = ctx };
	int status = recfs_check(devs, n, &o, st);
	/* the checker wrote through its own view: re-read what it left */
	int err = recfs_pack_reload(p);
	if (err)
		return err;
	/* preen stopped at a problem it may not repair (it repairs nothing
	 * after that), or the check could not run: the crashed recordings
	 * are left as they are */
	for (uint32_t i = 0; i < p->dir_hwm; i++)
		if (p->ent[i] && p->ent[i]->state == RECFS_STATE_RECORDING)
			return recfs_seterr(-EUCLEAN,
					    "crashed recording '%s' not recovered: the pack needs more than "
					    "fsck.recfs -p repairs (exit status %d): run fsck.recfs",
					    p->ent[i]->name, status);
	if (status & (RECFS_FSCK_ERROR | RECFS_FSCK_CANCELLED))
		return recfs_seterr(-EIO, "crash recovery failed (fsck exit status %d): run fsck.recfs", status);
	return 0;
}
