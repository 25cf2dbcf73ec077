/* SPDX-License-Identifier: MIT */
#include "ck.h"

/* ------------------------------------------------------- pass 3: directory */
struct raw_entry_view {
	uint32_t magic, index;
	uint64_t seq, committed;
	bool csum_ok;
};

static void raw_entry(const uint8_t *slot, uint64_t seed, struct raw_entry_view *v)
{
	const struct recfs_disk_entry *d = (const void *)slot;

	v->magic = le32toh(d->magic);
	v->index = le32toh(d->index);
	v->seq = le64toh(d->seq);
	v->committed = le64toh(d->committed_len);
	v->csum_ok = le64toh(d->checksum) ==
		     XXH3_64bits_withSeed(d, offsetof(struct recfs_disk_entry, checksum), seed);
}

static int rec_add(struct ck *c, const struct recfs_rec *r)
{
	if (c->nrec == c->caprec) {
		uint32_t nc = c->caprec ? c->caprec * 2 : 64;
		struct ck_rec *n = realloc(c->rec, nc * sizeof(*n));
		if (!n)
			return recfs_seterr(-ENOMEM, "out of memory");
		c->rec = n;
		c->caprec = nc;
	}
	memset(&c->rec[c->nrec], 0, sizeof(c->rec[0]));
	c->rec[c->nrec].r = *r;
	c->nrec++;
	return 0;
}

/* recfs_errmsg() without its "entry N: " prefix (the messages name the
 * entry themselves). */
static void entry_why(char *why, size_t n)
{
	const char *m = recfs_errmsg(), *p = m;

	if (!strncmp(p, "entry ", 6)) {
		p += 6;
		while (*p >= '0' && *p <= '9')
			p++;
		if (p[0] == ':' && p[1] == ' ')
			m = p + 2;
	}
	snprintf(why, n, "%s", m);
}

static void why_add(char *why, size_t n, const char *what)
{
	size_t l = strlen(why);

	snprintf(why + l, n - l, "%s%s", l ? "; " : "", what);
}

/* An entry whose checksum is right but whose fields are not (decode
 * failed): repair what can be repaired.  slot is the raw copy; older, if
 * not NULL, a valid older generation of the same entry.  Returns 1 when
 * the older generation should stand instead (why says what is wrong with
 * the newer one): a state, gap count or sequence that cannot be right is
 * damage, and the older generation is known good.  Never drops what it
 * cannot decode: an entry kept as it is stays set aside (its rows stay
 * allocated). */
static int entry_fields(struct ck *c, uint32_t i, const uint8_t *slot, const struct recfs_rec *older,
			char *whyout, size_t whyn)
{
	uint8_t tmp[RECFS_ENTRY_SIZE];
	struct recfs_disk_entry *d = (void *)tmp;
	struct recfs_rec r;
	struct recfs_pctx pc;
	char why[256], fix[256] = "", nn[RECFS_NAME_MAX + 1];
	uint64_t orig_committed = 0;
	bool name_bad = false, commit_bad = false, other_bad = false;

	memcpy(tmp, slot, sizeof(tmp));
	recfs_entry_decode(tmp, c->seed, i, &r);
	entry_why(why, sizeof(why));
	/* the fields whose damage says the copy is not to be trusted */
	if (d->state > RECFS_STATE_SEALED) {
		char t[96];
		snprintf(t, sizeof(t), "unknown state %u: taken as recording, its end found from its checksums",
			 d->state);
		why_add(fix, sizeof(fix), t);
		d->state = RECFS_STATE_RECORDING;
		other_bad = true;
	}
	if (le32toh(d->gap_count) > RECFS_GAPS_MAX) {
		char t[96];
		snprintf(t, sizeof(t), "gap count %u: the first %u gaps kept, marked as merged",
			 le32toh(d->gap_count), RECFS_GAPS_MAX);
		why_add(fix, sizeof(fix), t);
		d->gap_count = htole32(RECFS_GAPS_MAX);
		d->gap_flags |= htole32(1);
		other_bad = true;
	}
	if (le64toh(d->seq) == UINT64_MAX) {
		why_add(fix, sizeof(fix), "sequence out of range: generations start over");
		d->seq = htole64(UINT64_MAX - 2); /* same slot; the rewrite wraps */
		other_bad = true;
	}
	if (other_bad && older) {
		snprintf(whyout, whyn, "%s", fix);
		return 1;
	}
	/* the repairable fields: a name, a committed length */
	if (le64toh(d->committed_len) > le64toh(d->alloc_len)) {
		commit_bad = true;
		orig_committed = le64toh(d->committed_len);
		d->committed_len = d->alloc_len;
	}
	if (d->state != RECFS_STATE_FREE && d->state <= RECFS_STATE_SEALED) {
		uint16_t nl = le16toh(d->name_len);
		char nm[RECFS_NAME_MAX + 1];
		bool bad = nl < 1 || nl > RECFS_NAME_MAX || memchr(d->name, 0, nl);
		if (!bad) {
			memcpy(nm, d->name, nl);
			nm[nl] = 0;
			bad = recfs_name_check(nm) != 0;
			if (bad)
				entry_why(why, sizeof(why));
		} else {
			snprintf(why, sizeof(why), "name length %u", nl);
		}
		if (bad) {
			name_bad = true;
			snprintf(nn, sizeof(nn), "entry-%u", i);
			memset(d->name, 0, sizeof(d->name));
			memcpy(d->name, nn, strlen(nn));
			d->name_len = htole16((uint16_t)strlen(nn));
		}
	}
	d->checksum = htole64(XXH3_64bits_withSeed(d, offsetof(struct recfs_disk_entry, checksum), c->seed));
	if (recfs_entry_decode(tmp, c->seed, i, &r)) {
		/* nothing known to repair: keep it out of the checks, never
		 * free its rows */
		memset(&pc, 0, sizeof(pc));
		pc.entry = i;
		entry_why(why, sizeof(why));
		pc.str = why;
		if (older) {
			snprintf(whyout, whyn, "%s", why);
			return 1;
		}
		ck_problem(c, PR_ENT_UNKNOWN, &pc);
		c->keep_leaks = true;
		return 0;
	}
	bool store = false, aside = false;
	if (other_bad) {
		memset(&pc, 0, sizeof(pc));
		pc.entry = i;
		pc.str = fix;
		if (ck_problem(c, PR_ENT_FIELD, &pc))
			store = true;
		else
			aside = true;
	}
	if (name_bad) {
		memset(&pc, 0, sizeof(pc));
		pc.entry = i;
		pc.str = why;
		pc.name2 = nn;
		if (ck_problem(c, PR_ENT_NAME, &pc))
			store = true;
	}
	if (store && !commit_bad && !aside)
		ck_entry_next(c, &r);
	int err = rec_add(c, &r);
	if (err)
		return err;
	if (aside)
		c->rec[c->nrec - 1].aside = c->rec[c->nrec - 1].drop = true;
	if (commit_bad) {
		c->rec[c->nrec - 1].commit_bad = true;
		c->rec[c->nrec - 1].commit_orig = orig_committed;
	}
	return 0;
}

int ck_pass3(struct ck *c)
{
	const size_t pair = 2 * RECFS_ENTRY_SIZE;
	uint8_t *buf[RECFS_MAX_MEMBERS] = {0};
	struct ck_member *m;
	struct recfs_pctx pc;
	uint32_t last_used = 0;
	int ret = 0;

	if (c->o->verbose)
		ck_out(c, "Pass 3: directory (%u entries used)", c->hwm);
	FOR_MEMBERS(c, i, m) {
		buf[i] = recfs_alloc(CK_DIR_BATCH * pair);
		if (!buf[i]) {
			ret = recfs_seterr(-ENOMEM, "out of memory");
			goto out_free;
		}
	}
	for (uint32_t first = 0; first < c->hwm && !ck_stop_now(c); first += CK_DIR_BATCH) {
		uint32_t cnt = c->hwm - first < CK_DIR_BATCH ? c->hwm - first : CK_DIR_BATCH;
		size_t len = RECFS_ALIGN_UP((size_t)cnt * pair, RECFS_BLOCK);
		bool rd[RECFS_MAX_MEMBERS] = {0};
		FOR_MEMBERS(c, i, m) {
			int e = ck_dev_read(m->dev, buf[i], len, c->g.dir_off + (uint64_t)first * pair);
			if (e)
				ck_io_error(c, m->dev, "directory read", e);
			rd[i] = e == 0;
		}
		for (uint32_t k = 0; k < cnt; k++) {
			uint32_t idx = first + k;
			struct recfs_rec best, r;
			const uint8_t *bestraw = NULL, *lenient = NULL;
			uint64_t lenient_seq = 0, damaged_seq = 0;
			bool damaged = false, fresh = true;
			char why[256] = "";

			FOR_MEMBERS(c, i, m) {
				if (!rd[i])
					continue;
				for (unsigned s = 0; s < 2; s++) {
					const uint8_t *raw = buf[i] + (size_t)k * pair + s * RECFS_ENTRY_SIZE;
					struct raw_entry_view v;
					if (recfs_entry_decode(raw, c->seed, idx, &r) == 0 && (r.seq & 1) == s) {
						if (!bestraw || r.seq > best.seq) {
							best = r;
							bestraw = raw;
						}
						continue;
					}
					raw_entry(raw, c->seed, &v);
					if (v.magic != RECFS_ENT_MAGIC || v.index != idx)
						continue;
					if (v.csum_ok && (v.seq & 1) == s && v.seq) {
						if (!lenient || v.seq > lenient_seq) {
							lenient = raw;
							lenient_seq = v.seq;
						}
						continue;
					}
					/* damaged: judged below, once best is known */
				}
			}
			/*
			 * A damaged slot is a torn or damaged newer generation only
			 * if it fits: its seq is in its own slot and, beside a valid
			 * generation, is the next one.  Anything else is a previous
			 * pack's slot (mkfs leaves them) or older damage, and is
			 * ignored.  With no valid generation, the entry is a create
			 * that never completed unless a slot shows this pack got
			 * past generation 1 (slot 1 beyond seq 1, or seq 2 in slot 0).
			 */
			FOR_MEMBERS(c, i, m) {
				if (!rd[i])
					continue;
				for (unsigned s = 0; s < 2; s++) {
					const uint8_t *raw = buf[i] + (size_t)k * pair + s * RECFS_ENTRY_SIZE;
					struct raw_entry_view v;
					raw_entry(raw, c->seed, &v);
					if (v.magic != RECFS_ENT_MAGIC || v.index != idx || (v.seq & 1) != s)
						continue;
					if (recfs_entry_decode(raw, c->seed, idx, &r) == 0 || (v.csum_ok && v.seq))
						continue; /* valid, or lenient */
					if (bestraw && v.seq != best.seq + 1)
						continue;
					if (!bestraw && (s == 1 ? v.seq != 1 || v.committed != 0 : v.seq == 2))
						fresh = false;
					if (!damaged)
						entry_why(why, sizeof(why));
					damaged = true;
					if (v.seq > damaged_seq)
						damaged_seq = v.seq;
				}
			}
			if (lenient && (!bestraw || lenient_seq > best.seq)) {
				last_used = idx + 1;
				ret = entry_fields(c, idx, lenient, bestraw ? &best : NULL, why, sizeof(why));
				if (ret < 0)
					goto out_free;
				if (ret == 0)
					continue;
				/* the newer generation is damage: the older stands */
				ret = 0;
				damaged = true;
				damaged_seq = lenient_seq;
			}
			if (!bestraw) {
				memset(&pc, 0, sizeof(pc));
				pc.entry = idx;
				if (damaged && !fresh) {
					last_used = idx + 1;
					pc.str = why;
					if (ck_problem(c, PR_ENT_DAMAGED, &pc))
						ck_entry_free_both(c, idx);
					else
						c->keep_leaks = true; /* its extent is unknown */
				} else if (c->hwm_known) {
					if (ck_problem(c, PR_ENT_UNUSED, &pc))
						ck_entry_free_both(c, idx);
				}
				continue;
			}
			last_used = idx + 1;
			if (damaged && damaged_seq > best.seq) {
				memset(&pc, 0, sizeof(pc));
				pc.entry = idx;
				pc.name = best.state == RECFS_STATE_FREE ? "(free)" : best.name;
				pc.str = why;
				pc.a = best.seq;
				if (ck_problem(c, PR_ENT_ROLLBACK, &pc)) {
					/* the same content two generations on, over
					 * both slots on every member: no damaged slot
					 * is left behind */
					ck_entry_next(c, &best);
					ck_entry_next(c, &best);
					bestraw = NULL;
				}
			}
			/* every member's copy of the newest generation */
			FOR_MEMBERS(c, i, m) {
				const uint8_t *mine;
				if (!rd[i] || !bestraw)
					continue;
				mine = buf[i] + (size_t)k * pair + (best.seq & 1) * RECFS_ENTRY_SIZE;
				if (!memcmp(mine, bestraw, RECFS_ENTRY_SIZE))
					continue;
				memset(&pc, 0, sizeof(pc));
				pc.entry = idx;
				pc.member = m->dev->path;
				pc.name = best.state == RECFS_STATE_FREE ? "(free)" : best.name;
				r.seq = 0;
				if (recfs_entry_decode(mine, c->seed, idx, &r) == 0 && r.seq < best.seq)
					pc.str = "out of date";
				else
					pc.str = "damaged";
				{
					const uint8_t *other = buf[i] + (size_t)k * pair +
							       (1 - (best.seq & 1)) * RECFS_ENTRY_SIZE;
					struct recfs_rec o2;
					if (recfs_entry_decode(other, c->seed, idx, &o2) == 0 &&
					    o2.seq < best.seq && strcmp(pc.str, "out of date"))
						pc.str = "out of date";
				}
				if (ck_problem(c, PR_ENT_REPLICA, &pc))
					ck_patch(c, (unsigned)c->at[i], bestraw, RECFS_ENTRY_SIZE,
					      ck_entry_off(c, idx, best.seq));
			}
			if (best.state == RECFS_STATE_FREE)
				continue;
			ret = rec_add(c, &best);
			if (ret)
				goto out_free;
		}
	}
	ck_flush_all(c);
	if (!c->hwm_known)
		c->hwm = last_used;
out_free:
	FOR_MEMBERS(c, i, m)
		recfs_free(buf[i]);
	return ret;
}
