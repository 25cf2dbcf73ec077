/* SPDX-License-Identifier: MIT */
/* Pack assembly: members read, identified and checked against each other
 * (FORMAT.md section 3), the pack opened and closed, and what it says of
 * itself. */
#include <stdio.h>
#include <uuid/uuid.h>

#include "internal.h"

static int read_super(struct recfs_dev *d, uint64_t off, struct recfs_super *s, char *why,
		      size_t whylen)
{
	uint8_t *blk = recfs_alloc(RECFS_BLOCK);
	int err;

	if (!blk)
		return recfs_seterr(-ENOMEM, "out of memory");
	if (off + RECFS_BLOCK > d->size) {
		snprintf(why, whylen, "beyond the end of the device");
		recfs_free(blk);
		return -EUCLEAN;
	}
	err = d->ops->pread(d, blk, RECFS_BLOCK, off);
	if (!err)
		err = recfs_super_decode(blk, s);
	snprintf(why, whylen, "%s", recfs_errmsg());
	recfs_free(blk);
	return err;
}

/* Remember a device a degraded open leaves out, and why (without its
 * path).  member: the index its superblock gives, -1 if unknown. */
static int left_add(struct recfs_pack *p, const char *path, int member, const char *why)
{
	struct recfs_left *l;

	if (p->nleft >= RECFS_MAX_MEMBERS)
		return 0; /* at most RECFS_MAX_MEMBERS paths are given */
	l = &p->left[p->nleft];
	l->path = strdup(path);
	l->why = strdup(why);
	l->member = member;
	if (!l->path || !l->why) {
		free(l->path);
		free(l->why);
		return recfs_seterr(-ENOMEM, "out of memory");
	}
	p->nleft++;
	return 0;
}

static void pack_free(struct recfs_pack *p)
{
	if (!p)
		return;
	for (unsigned i = 0; i < RECFS_MAX_MEMBERS; i++)
		recfs_dev_close(p->m[i].dev);
	for (unsigned i = 0; i < p->nleft; i++) {
		free(p->left[i].path);
		free(p->left[i].why);
	}
	recfs__dir_clear(p);
	free(p->ent);
	free(p->bad);
	free(p->seq);
	free(p->hash);
	free(p->bits);
	free(p->space);
	free(p);
}

/* Order of valid superblocks for assembly: member index, then pack UUID,
 * then as given. */
static bool sb_before(const struct recfs_super *sbs, unsigned a, unsigned b)
{
	if (sbs[a].member_index != sbs[b].member_index)
		return sbs[a].member_index < sbs[b].member_index;
	int c = memcmp(sbs[a].pack_uuid, sbs[b].pack_uuid, 16);
	return c ? c < 0 : a < b;
}

static bool sb_same(const struct recfs_super *a, const struct recfs_super *b, bool by_uuid)
{
	return by_uuid ? !memcmp(a->pack_uuid, b->pack_uuid, 16) : !recfs_super_diff(a, b);
}

/* The pack_uuid (by_uuid) or, among the members of *ref's pack, the whole
 * superblock that most members carry, into *ref: the first such member in
 * ord.  Another value carried by as many members is refused, naming the
 * first member (in ord) of each. */
static int pick_majority(struct recfs_dev **devs, const struct recfs_super *sbs,
			 const unsigned *ord, unsigned nord, bool by_uuid, int *ref)
{
	unsigned cnt[RECFS_MAX_MEMBERS] = {0}, best = 0;
	int b = -1;

	for (unsigned x = 0; x < nord; x++) {
		const struct recfs_super *s = &sbs[ord[x]];
		if (!by_uuid && memcmp(s->pack_uuid, sbs[*ref].pack_uuid, 16))
			continue;
		for (unsigned y = 0; y < nord; y++)
			cnt[x] += sb_same(s, &sbs[ord[y]], by_uuid);
		if (cnt[x] > best) {
			best = cnt[x];
			b = (int)x;
		}
	}
	for (unsigned x = 0; x < nord; x++) {
		const struct recfs_super *s = &sbs[ord[x]], *m = &sbs[ord[b]];
		char u[37], v[37];
		if (cnt[x] != best || sb_same(s, m, by_uuid))
			continue;
		if (by_uuid) {
			recfs_uuid_unparse(m->pack_uuid, u);
			recfs_uuid_unparse(s->pack_uuid, v);
			return recfs_seterr(-EXDEV,
					    "%s and %s are members of different packs (%s, %s), "
					    "each given with as many members: give one pack's members only",
					    devs[ord[b]]->path, devs[ord[x]]->path, u, v);
		}
		return recfs_seterr(-EUCLEAN,
				    "%s and %s: inconsistent members: superblock field %s differs, "
				    "and as many members agree with each",
				    devs[ord[b]]->path, devs[ord[x]]->path, recfs_super_diff(m, s));
	}
	*ref = (int)ord[b];
	return 0;
}

int recfs_pack_open_devs(struct recfs_dev **devs, unsigned n, unsigned flags,
			 struct recfs_pack **out)
{
	struct recfs_super *sbs = NULL;
	int *ok = NULL;
	struct recfs_pack *p = NULL;
	char why[256], why2[256], bad[600], first_bad[700] = "";
	uint64_t known_size = 0, tried[RECFS_MAX_MEMBERS] = {0};
	unsigned ord[RECFS_MAX_MEMBERS], nord = 0;
	int err = 0, ref = -1;

	if (n == 0 || n > RECFS_MAX_MEMBERS) {
		err = recfs_seterr(-EINVAL, "a pack has 1 to %u members, %u given",
				   RECFS_MAX_MEMBERS, n);
		goto out_close_devs;
	}
	sbs = calloc(n, sizeof(*sbs));
	ok = calloc(n, sizeof(*ok));
	p = calloc(1, sizeof(*p));
	if (!sbs || !ok || !p) {
		err = recfs_seterr(-ENOMEM, "out of memory");
		goto out_close_devs;
	}
	/* the same device named twice */
	for (unsigned i = 0; i < n; i++)
		for (unsigned j = i + 1; j < n; j++)
			if (devs[i]->fd >= 0 && devs[j]->fd >= 0 &&
			    ((devs[i]->blkdev && devs[j]->blkdev &&
			      devs[i]->st_rdev == devs[j]->st_rdev) ||
			     (!devs[i]->blkdev && !devs[j]->blkdev &&
			      devs[i]->st_dev == devs[j]->st_dev &&
			      devs[i]->st_ino == devs[j]->st_ino))) {
				err = recfs_seterr(-EINVAL, "%s and %s are the same member",
						   devs[i]->path, devs[j]->path);
				goto out_close_devs;
			}
	/* primaries, then backups for the ones that failed: at member_size
	 * from a valid primary, else at the device's end.  Members of unequal
	 * sizes: only the smallest one's backup is at its end, and it gives
	 * member_size for the others' (FORMAT.md 3), so those are tried again */
	for (unsigned i = 0; i < n; i++) {
		if (read_super(devs[i], 0, &sbs[i], why, sizeof(why)) == 0) {
			ok[i] = 1;
			if (!known_size)
				known_size = sbs[i].member_size;
		}
	}
	for (int pass = 0; pass < 2; pass++) {
		uint64_t found = 0;
		for (unsigned i = 0; i < n; i++) {
			if (ok[i])
				continue;
			uint64_t boff = (known_size ? known_size
						    : devs[i]->size / RECFS_BLOCK * RECFS_BLOCK) -
					RECFS_BLOCK;
			if (pass && boff == tried[i])
				continue;
			tried[i] = boff;
			if (read_super(devs[i], boff, &sbs[i], why2, sizeof(why2)) == 0) {
				ok[i] = 1;
				if (!found)
					found = sbs[i].member_size;
			}
		}
		if (known_size || !found)
			break;
		known_size = found;
	}
	for (unsigned i = 0; i < n; i++) {
		if (ok[i])
			continue;
		read_super(devs[i], 0, &sbs[i], why, sizeof(why));
		read_super(devs[i], tried[i], &sbs[i], why2, sizeof(why2));
		snprintf(bad, sizeof(bad), "not a recfs member: primary superblock: %s; backup: %s",
			 why, why2);
		snprintf(first_bad, sizeof(first_bad), "%s: %s", devs[i]->path, bad);
		if (!(flags & RECFS_O_DEGRADED)) {
			err = recfs_seterr(-EUCLEAN, "%s", first_bad);
			goto out_close_devs;
		}
		/* degraded: left out like a missing member, and named */
		err = left_add(p, devs[i]->path, -1, bad);
		if (err)
			goto out_close_devs;
	}
	/* valid superblocks in member order (then as given): every choice and
	 * every message below is the same whatever order the members came in */
	for (unsigned i = 0; i < n; i++)
		if (ok[i])
			ord[nord++] = i;
	for (unsigned x = 1; x < nord; x++)
		for (unsigned y = x; y > 0 && sb_before(sbs, ord[y], ord[y - 1]); y--) {
			unsigned t = ord[y];
			ord[y] = ord[y - 1];
			ord[y - 1] = t;
		}
	if (nord == 0) {
		err = recfs_seterr(-EUCLEAN, "%s", first_bad);
		goto out_close_devs;
	}
	/* the pack: the pack_uuid most members carry; two carried by as many
	 * members each is refused (which pack is meant is not known) */
	err = pick_majority(devs, sbs, ord, nord, true, &ref);
	if (err)
		goto out_close_devs;
	/* its superblock: the one most of its members carry (FORMAT.md 3) */
	err = pick_majority(devs, sbs, ord, nord, false, &ref);
	if (err)
		goto out_close_devs;
	p->sb = sbs[ref];
	for (unsigned o = 0; o < nord; o++) {
		unsigned i = ord[o];
		char u[37], pu[37];
		const char *f;
		if (memcmp(sbs[i].pack_uuid, p->sb.pack_uuid, 16)) {
			recfs_uuid_unparse(sbs[i].pack_uuid, u);
			recfs_uuid_unparse(p->sb.pack_uuid, pu);
			err = recfs_seterr(-EXDEV,
					   "%s: member of another pack (%s, label '%s'), not of pack %s",
					   devs[i]->path, u, sbs[i].label, pu);
			goto out_close_devs;
		}
		if ((f = recfs_super_diff(&sbs[i], &p->sb))) {
			err = recfs_seterr(-EUCLEAN,
					   "%s: inconsistent member: superblock field %s differs from the pack's (%s)",
					   devs[i]->path, f, devs[ref]->path);
			goto out_close_devs;
		}
	}
	for (unsigned o = 0; o < nord; o++) {
		unsigned i = ord[o];
		unsigned idx = sbs[i].member_index;
		if (p->m[idx].dev) {
			const char *a = p->m[idx].dev->path, *b = devs[i]->path;
			if (strcmp(a, b) > 0) { /* named the same in any order */
				const char *t = a;
				a = b;
				b = t;
			}
			err = recfs_seterr(-EINVAL, "%s and %s are both member %u of the pack", a, b, idx);
			goto out_close_devs;
		}
		if (devs[i]->size < p->sb.member_size) {
			snprintf(why, sizeof(why),
				 "device is %llu bytes, smaller than the pack's member size %llu (truncated?)",
				 (unsigned long long)devs[i]->size,
				 (unsigned long long)p->sb.member_size);
			if (!(flags & RECFS_O_DEGRADED)) {
				err = recfs_seterr(-EUCLEAN, "%s: %s", devs[i]->path, why);
				goto out_close_devs;
			}
			/* degraded: member idx is damaged; left out like a missing one */
			err = left_add(p, devs[i]->path, (int)idx, why);
			if (err)
				goto out_close_devs;
			continue;
		}
		p->m[idx].dev = devs[i];
		p->m[idx].sb = sbs[i];
		devs[i] = NULL;
		p->present++;
	}
	if (p->present == 0) {
		/* every device left out (degraded): nothing to assemble */
		err = recfs_seterr(-EUCLEAN, "%s: %s", p->left[0].path, p->left[0].why);
		goto out_close_devs;
	}
	for (unsigned i = 0; i < p->sb.member_count; i++) {
		char u[37];
		if (p->m[i].dev)
			continue;
		if (flags & RECFS_O_DEGRADED)
			continue;
		recfs_uuid_unparse(p->sb.member_uuids[i], u);
		/* a pack without a label is "the pack", not "pack ''" */
		err = recfs_seterr(-ENXIO, "%s%s%s has %u members: member %u (UUID %s) is missing",
				   p->sb.label[0] ? "pack '" : "the pack", p->sb.label,
				   p->sb.label[0] ? "'" : "", p->sb.member_count, i, u);
		goto out_close_devs;
	}
	if ((flags & RECFS_O_RDWR) && p->present != p->sb.member_count) {
		err = recfs_seterr(-EROFS, "cannot write to a degraded pack (%u of %u members)",
				   p->present, p->sb.member_count);
		goto out_close_devs;
	}
	p->flags = flags;
	recfs_super_to_geom(&p->sb, &p->g);
	p->pack_seed = recfs_pack_seed(p->sb.pack_uuid);
	p->bits = calloc(1, recfs__bits_bytes(p) + 8);
	p->ent = calloc(p->g.dir_capacity, sizeof(*p->ent));
	p->seq = calloc(p->g.dir_capacity, sizeof(*p->seq));
	p->bad = calloc(p->g.dir_capacity, sizeof(*p->bad));
	p->hash_size = 16;
	while (p->hash_size < 2 * p->g.dir_capacity + 2)
		p->hash_size <<= 1;
	p->hash = calloc(p->hash_size, sizeof(*p->hash));
	if (!p->bits || !p->ent || !p->seq || !p->bad || !p->hash) {
		err = recfs_seterr(-ENOMEM, "out of memory");
		goto out_close_devs;
	}
	err = recfs__meta_load(p);
	if (!err)
		err = recfs__space_rebuild(p);
	if (err)
		goto out_close_devs;
	for (unsigned i = 0; i < n; i++)
		recfs_dev_close(devs[i]); /* members left out (degraded) */
	free(sbs);
	free(ok);
	*out = p;
	return 0;

out_close_devs:
	for (unsigned i = 0; i < n; i++)
		recfs_dev_close(devs[i]);
	pack_free(p);
	free(sbs);
	free(ok);
	return err;
}

int recfs_pack_open(const char *spec, unsigned flags, struct recfs_pack **out)
{
	struct recfs_dev *devs[RECFS_MAX_MEMBERS] = {0};
	char **paths, *why[RECFS_MAX_MEMBERS] = {0};
	unsigned n, nd = 0;
	int err, first_err = 0;

	err = recfs_spec_split(spec, &paths, &n);
	if (err)
		return err;
	err = recfs_paths_distinct(paths, n);
	if (err && (err == -EINVAL || !(flags & RECFS_O_DEGRADED))) {
		recfs_spec_free(paths, n);
		return err;
	}
	for (unsigned i = 0; i < n; i++) {
		unsigned df = 0;
		if (flags & RECFS_O_RDWR)
			df |= RECFS_DEV_WRITE | RECFS_DEV_EXCL;
		if (flags & RECFS_O_BUFFERED)
			df |= RECFS_DEV_BUFFERED;
		err = recfs_dev_open(paths[i], df, &devs[nd]);
		if (err) {
			if ((flags & RECFS_O_DEGRADED) && !(flags & RECFS_O_RDWR) &&
			    (err == -ENOENT || err == -ENXIO || err == -EIO)) {
				/* left out like a missing member; its error kept to name it */
				const char *m = recfs_errmsg();
				size_t pl = strlen(paths[i]);
				if (!strncmp(m, paths[i], pl) && !strncmp(m + pl, ": ", 2))
					m += pl + 2;
				if (!first_err)
					first_err = err;
				if (!(why[i] = strdup(m))) {
					err = recfs_seterr(-ENOMEM, "out of memory");
					goto out_close;
				}
				continue;
			}
			goto out_close;
		}
		nd++;
	}
	if (nd == 0 && first_err) {
		/* nothing opened: the first device's error, as without degraded */
		for (unsigned i = 0; i < n; i++)
			if (why[i]) {
				err = recfs_seterr(first_err, "%s: %s", paths[i], why[i]);
				break;
			}
		goto out_close;
	}
	err = recfs_pack_open_devs(devs, nd, flags, out); /* owns devs from here */
	nd = 0;
	for (unsigned i = 0; i < n && !err; i++)
		if (why[i] && (err = left_add(*out, paths[i], -1, why[i]))) {
			recfs_pack_close(*out);
			*out = NULL;
		}

out_close:
	for (unsigned i = 0; i < nd; i++)
		recfs_dev_close(devs[i]);
	for (unsigned i = 0; i < n; i++)
		free(why[i]);
	recfs_spec_free(paths, n);
	return err;
}

int recfs_pack_close(struct recfs_pack *p)
{
	int err = 0;

	if (!p)
		return 0;
	if (p->flags & RECFS_O_RDWR)
		err = recfs_flush_all(p);
	pack_free(p);
	return err;
}

const struct recfs_geom *recfs_pack_geom(const struct recfs_pack *p)
{
	return &p->g;
}

struct recfs_dev *recfs_pack_dev(struct recfs_pack *p, unsigned i)
{
	return i < p->g.members ? p->m[i].dev : NULL;
}

int recfs_pack_info(struct recfs_pack *p, struct recfs_pack_info *info)
{
	uint64_t fr, ls, lr;

	memset(info, 0, sizeof(*info));
	memcpy(info->uuid, p->sb.pack_uuid, 16);
	memcpy(info->label, p->sb.label, sizeof(info->label));
	info->created_ns = p->sb.created_ns;
	info->members = p->g.members;
	info->members_present = p->present;
	info->chunk_size = p->g.chunk_size;
	info->dir_capacity = p->g.dir_capacity;
	info->recordings = p->nrec;
	info->capacity = p->g.capacity;
	recfs__space(p, &fr, &ls, &lr);
	info->free = fr * p->g.row_bytes;
	info->used = info->capacity - info->free;
	info->largest_free = lr * p->g.row_bytes;
	info->compat = p->sb.compat;
	info->incompat = p->sb.incompat;
	info->bad_entries = p->bad_entries;
	return 0;
}

int recfs_pack_member(struct recfs_pack *p, unsigned i, struct recfs_member_info *mi)
{
	if (i >= p->g.members)
		return -EINVAL;
	memset(mi, 0, sizeof(*mi));
	memcpy(mi->uuid, p->sb.member_uuids[i], 16);
	if (p->m[i].dev) {
		mi->path = p->m[i].dev->path;
		mi->dev_size = p->m[i].dev->size;
		mi->present = true;
		mi->failed = p->m[i].failed;
		return 0;
	}
	for (unsigned k = 0; k < p->nleft; k++)
		if (p->left[k].member == (int)i) {
			mi->path = p->left[k].path;
			mi->damaged = p->left[k].why;
			break;
		}
	return 0;
}

int recfs_pack_left_out(struct recfs_pack *p, unsigned i, const char **path, const char **why,
			int *member)
{
	if (i >= p->nleft)
		return -ENOENT;
	*path = p->left[i].path;
	*why = p->left[i].why;
	if (member)
		*member = p->left[i].member;
	return 0;
}
