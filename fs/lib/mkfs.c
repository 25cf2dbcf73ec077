/* SPDX-License-Identifier: MIT */
/* mkfs: a new pack written over its members. */
#include <stdio.h>
#include <uuid/uuid.h>

#include "internal.h"

int recfs_mkfs(struct recfs_dev **devs, unsigned n, const struct recfs_mkfs_opts *o,
	       uint8_t uuid_out[16])
{
	struct recfs_super s;
	struct recfs_geom g;
	struct recfs_bitmap_hdr h = {0};
	uint64_t size = UINT64_MAX;
	uint8_t *blk = NULL, *bmp = NULL;
	int err;

	if (n < 1 || n > RECFS_MAX_MEMBERS)
		return recfs_seterr(-EINVAL, "a pack has 1 to %u members, %u given",
				    RECFS_MAX_MEMBERS, n);
	for (unsigned i = 0; i < n; i++)
		if (devs[i]->size < size)
			size = devs[i]->size;
	err = recfs_geom_compute(&g, n, size, o && o->chunk_size ? o->chunk_size : RECFS_CHUNK_DEFAULT,
				 o && o->dir_capacity ? o->dir_capacity : RECFS_DIR_DEFAULT);
	if (err)
		return err;
	if (o && o->label && strlen(o->label) > RECFS_LABEL_MAX)
		return recfs_seterr(-EINVAL, "label is %zu bytes (at most %u)", strlen(o->label),
				    RECFS_LABEL_MAX);

	memset(&s, 0, sizeof(s));
	s.version = RECFS_DISK_VERSION;
	if (o && o->uuid)
		memcpy(s.pack_uuid, o->uuid, 16);
	else
		uuid_generate(s.pack_uuid);
	for (unsigned i = 0; i < n; i++)
		uuid_generate(s.member_uuids[i]);
	recfs_super_set_geom(&s, &g);
	s.created_ns = o && o->created_ns ? o->created_ns : recfs_now_ns();
	if (o && o->label)
		snprintf(s.label, sizeof(s.label), "%s", o->label);

	blk = recfs_alloc(RECFS_BLOCK);
	bmp = recfs_alloc(g.bitmap_copy_size);
	if (!blk || !bmp) {
		err = recfs_seterr(-ENOMEM, "out of memory");
		goto out_free;
	}
	h.seq = 1;
	h.copy = 1;
	h.nbits = g.rows;
	h.dir_hwm = 0;
	recfs_bitmap_encode(bmp, &h, recfs_pack_seed(s.pack_uuid));
	for (unsigned i = 0; i < n; i++) {
		struct recfs_dev *d = devs[i];
		s.member_index = i;
		memcpy(s.member_uuid, s.member_uuids[i], 16);
		/* bitmap seq 1 lives in copy 1; copy 0 is cleared so no older
		 * pack with this UUID can leave a valid copy behind */
		memset(blk, 0, RECFS_BLOCK);
		err = d->ops->pwrite(d, blk, RECFS_BLOCK, g.bitmap_off);
		if (!err)
			err = d->ops->pwrite(d, bmp, g.bitmap_copy_size, g.bitmap_off + g.bitmap_copy_size);
		recfs_super_encode(&s, blk);
		if (!err)
			err = d->ops->pwrite(d, blk, RECFS_BLOCK, g.backup_off);
		if (!err)
			err = d->ops->flush(d);
		/* the primary last: a member is recfs only once all else is there */
		if (!err)
			err = d->ops->pwrite(d, blk, RECFS_BLOCK, 0);
		if (!err)
			err = d->ops->flush(d);
		if (err)
			goto out_free;
	}
	if (uuid_out)
		memcpy(uuid_out, s.pack_uuid, 16);
out_free:
	recfs_free(blk);
	recfs_free(bmp);
	return err;
}
