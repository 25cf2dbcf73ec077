/* SPDX-License-Identifier: MIT */
/*
 * The one table of every problem the checker reports (e2fsck's problem.c
 * is the model): a stable number and code, the message, the repair, and
 * whether the repair is safe without asking (-p).  Messages name members
 * by the path given and recordings by name, never by anything random
 * (UUIDs, times), so that expected outputs stay stable.
 */
#include <stdio.h>

#include "internal.h"
#include "problem.h"

#define NOFIX RECFS_PRF_NOFIX
#define PREEN RECFS_PRF_PREEN
#define FATAL (RECFS_PRF_FATAL | RECFS_PRF_NOFIX)

const struct recfs_problem recfs_problems[] = {
	{ PR_PACK_NONE, "PR_PACK_NONE", "no member holds a valid recfs superblock (%s)", NULL, FATAL,
	  "No copy of any member's superblock is valid: this is not a recfs pack." },
	{ PR_MEMBER_SAME, "PR_MEMBER_SAME", "%m is given twice", NULL, NOFIX,
	  "The same file or device was given twice; the second is ignored." },
	{ PR_MEMBER_FOREIGN, "PR_MEMBER_FOREIGN", "%m belongs to another pack (%s)", NULL, NOFIX,
	  "A member's superblocks name another pack: a member swapped with a foreign pack's. It is never written." },
	{ PR_MEMBER_DUP, "PR_MEMBER_DUP", "%m is a copy of member %i (%s)", NULL, NOFIX,
	  "Two members claim the same index (a disk copied onto another); the later one is ignored, and nothing is written to the pack until the copy is removed (which copy is current is not known)." },
	{ PR_MEMBER_MISSING, "PR_MEMBER_MISSING", "member %i of the pack is missing", NULL, NOFIX,
	  "A member of the pack was not given (or was rejected). Nothing is written to a pack with a missing member." },
	{ PR_MEMBER_SHORT, "PR_MEMBER_SHORT",
	  "%m is %a bytes, smaller than the pack's member size of %b bytes (truncated): its backup superblock and last rows are missing",
	  NULL, NOFIX,
	  "A member is shorter than the pack's member size. Its end cannot be rewritten; data there is reported by --verify." },
	{ PR_SB_PRIMARY, "PR_SB_PRIMARY", "%m: primary superblock is invalid (%s)",
	  "Rewrite it from a good copy", PREEN,
	  "The superblock at offset 0 of a member fails its magic, checksum, version or layout check." },
	{ PR_SB_BACKUP, "PR_SB_BACKUP", "%m: backup superblock is invalid (%s)",
	  "Rewrite it from a good copy", PREEN,
	  "The superblock at the end of a member fails its magic, checksum, version or layout check." },
	{ PR_SB_PRIMARY_FIELD, "PR_SB_PRIMARY_FIELD",
	  "%m: primary superblock field %s disagrees with the rest of the pack",
	  "Rewrite it from a good copy", PREEN,
	  "A valid primary superblock whose field differs from the copies on the other members." },
	{ PR_SB_BACKUP_FIELD, "PR_SB_BACKUP_FIELD",
	  "%m: backup superblock field %s disagrees with the rest of the pack",
	  "Rewrite it from a good copy", PREEN,
	  "A valid backup superblock whose field differs from the copies on the other members." },
	{ PR_SB_NONE, "PR_SB_NONE",
	  "%m has no valid superblock; it is the only candidate for missing member %i",
	  "Rebuild its superblocks", 0,
	  "Both superblocks of a member are damaged; it is identified by elimination, and rebuilt only if a bitmap copy or directory entry on it validates with this pack (else it is reported as PR_SB_UNKNOWN)." },
	{ PR_SB_UNKNOWN, "PR_SB_UNKNOWN", "%m has no valid superblock (%s) and cannot be identified",
	  NULL, NOFIX, "A member with no valid superblock that cannot be identified by elimination." },
	{ PR_MEMBER_IO, "PR_MEMBER_IO", "%m: %s", NULL, NOFIX,
	  "A metadata read or write failed on a member." },
	{ PR_SB_TIE, "PR_SB_TIE",
	  "%m and %n hold different pack superblocks (%s) with as many votes; nothing is written",
	  NULL, NOFIX,
	  "Valid superblocks disagree on a pack field (pack_uuid: members of two packs) and as many members back each version: which is the pack's is not known, so nothing is rewritten (the check goes on read-only with the lower pack UUID, then member index, whatever the order of the arguments)." },

	{ PR_BMP_NONE, "PR_BMP_NONE", "no valid allocation bitmap copy on any member",
	  "Rebuild it from the directory", 0,
	  "Every copy of the allocation bitmap is damaged; it is rebuilt from the recordings' extents." },
	{ PR_BMP_COPY, "PR_BMP_COPY", "%m: bitmap copy %a (generation %b) is %s",
	  "Rewrite it from a good copy", PREEN,
	  "A member's copy of the newest allocation bitmap is damaged, unreadable or older than another member's (an unreadable copy is rewritten: a disk remaps a bad sector on write)." },

	{ PR_ENT_UNUSED, "PR_ENT_UNUSED",
	  "entry %e has no valid copy: a create that never completed", "Free the slot", PREEN,
	  "A directory slot below the high-water mark that was never completely written (a crash during create). No data is lost." },
	{ PR_ENT_DAMAGED, "PR_ENT_DAMAGED", "entry %e is damaged on every member (%s)",
	  "Drop it", 0,
	  "Every copy of a directory entry fails its checksum: the recording cannot be trusted and is dropped. Declined, no rows that seem leaked are freed (they may be its)." },
	{ PR_ENT_REPLICA, "PR_ENT_REPLICA", "entry %e ('%n'): copy on %m is %s", "Rewrite it",
	  PREEN, "A member's copy of a directory entry is damaged or older than another member's." },
	{ PR_ENT_FIELD, "PR_ENT_FIELD", "entry %e: %s", "Repair it", 0,
	  "A directory entry with a good checksum but an impossible field and no valid older generation: an unknown state is taken as recording (crash recovery finds its end), a gap count over 32 keeps 32 gaps marked merged, a sequence out of range starts over. Declined, the entry is set aside and its rows stay allocated." },
	{ PR_ENT_NAME, "PR_ENT_NAME", "entry %e: invalid name (%s)", "Rename it to '%N'", PREEN,
	  "A recording's name breaks the naming rules; it is renamed." },
	{ PR_ENT_COMMITTED, "PR_ENT_COMMITTED",
	  "recording '%n': committed length %a exceeds allocated length %b",
	  "Truncate it to the %c bytes its checksums prove", 0,
	  "An entry claims more committed bytes than it has allocated; it keeps the prefix its chunk checksums prove." },
	{ PR_ENT_DUPNAME, "PR_ENT_DUPNAME", "recording '%n' (entry %e) has the same name as entry %a",
	  "Rename it to '%N'", PREEN, "Two recordings with the same name; the later entry is renamed." },

	{ PR_ENT_ROLLBACK, "PR_ENT_ROLLBACK",
	  "entry %e ('%n'): its newest generation is damaged on every member (%s); generation %a is used",
	  "Rewrite it", PREEN,
	  "The newest copy of an entry is damaged everywhere (a torn write during a crash, or damage), or has a good checksum but an impossible field: the previous generation stands and is written over it." },
	{ PR_ENT_UNKNOWN, "PR_ENT_UNKNOWN", "entry %e: %s; it is left as it is", NULL, NOFIX,
	  "A directory entry with a good checksum that cannot be decoded or repaired: it is left alone, and no leaked rows are freed while it stands (they may be its)." },
	{ PR_ENT_DUPUID, "PR_ENT_DUPUID",
	  "recording '%n' (entry %e) has the same uid as '%N' (entry %a), which keeps it (%s)",
	  "Give '%n' a new uid", 0,
	  "Two entries share a recording's unique id (a damaged or crafted entry: the id seeds the chunk checksums and tells readers' caches apart, and readers refuse both). The one whose first chunk matches its checksum under that uid keeps it; when both or neither do, the older one (earlier start, then lower entry). The other gets a new uid, so its data no longer matches its checksums: it reads as EIO (recfs cat --no-verify and mount -o noverify still return the bytes), and --verify reports it. Declined, both stay hidden." },

	{ PR_EXT_RANGE, "PR_EXT_RANGE",
	  "recording '%n': extent of %b bytes at %a is not row aligned or outside the data area of %c bytes",
	  "Drop the recording", 0,
	  "A recording's extent cannot be right: it is dropped (its rows become free). Declined, no rows that seem leaked are freed." },
	{ PR_EXT_OVERLAP_TRUNC, "PR_EXT_OVERLAP_TRUNC",
	  "recordings '%n' and '%N' share data bytes %a-%b; %s",
	  "Truncate '%n' to %c bytes", 0,
	  "Two extents overlap; the one whose checksums (a crashed recording's proven prefix included) do not match the shared chunks is cut before them. When neither matches, the choice loses the fewest bytes the checksums vouch for; a lossless cut is taken first." },
	{ PR_EXT_OVERLAP_DROP, "PR_EXT_OVERLAP_DROP",
	  "recordings '%n' and '%N' share data bytes %a-%b; %s",
	  "Drop '%n'", 0,
	  "Two extents overlap and the one that does not own the shared chunks starts inside them: it is dropped. When neither owns them, the one with fewer bytes its checksums vouch for is dropped." },
	{ PR_BMP_LEAK, "PR_BMP_LEAK", "rows %a-%b are marked in use but belong to no recording",
	  "Free them", PREEN,
	  "Leaked space: allocated rows with no recording (a crash during create, delete or seal)." },
	{ PR_BMP_HOLE, "PR_BMP_HOLE", "rows %a-%b of recording '%n' are marked free",
	  "Mark them in use", PREEN, "Rows in use by a recording but free in the bitmap." },
	{ PR_EXT_CUT, "PR_EXT_CUT",
	  "recording '%n': extent of %b bytes at %a runs outside the data area of %c bytes",
	  "Cut it to the %d bytes its committed data needs", 0,
	  "A recording's extent starts right but its length cannot be: it is cut to the rows its committed bytes need (nothing committed is lost). Declined, the recording is left as it is and no rows that seem leaked are freed." },

	{ PR_SLOT_REPLICA, "PR_SLOT_REPLICA", "recording '%n': checksum of chunk %a on %m is %s",
	  "Rewrite it", PREEN,
	  "A member's copy of a chunk checksum differs from the others (or is missing)." },
	{ PR_SLOT_BAD, "PR_SLOT_BAD",
	  "recording '%n': chunk %a (bytes %b-%c) has no valid checksum on any member", NULL, NOFIX,
	  "A committed chunk's checksum is damaged on every member, or its copies differ and the data matches none of them (none is copied over the others): its data cannot be verified." },
	{ PR_REC_CRASHED, "PR_REC_CRASHED",
	  "recording '%n' was not sealed: %a bytes committed, %b more found durable after the last commit, %c bytes lost",
	  "Seal it at %d bytes", PREEN,
	  "A recording left in the recording state (its writer crashed or lost power): its durable end is found from the chunk checksums and it is sealed there." },

	{ PR_DATA_BAD, "PR_DATA_BAD", "recording '%n': bytes %a-%b (chunk %c on %m) fail their checksum",
	  NULL, NOFIX, "--verify: committed data that does not match its checksum." },
	{ PR_DATA_IO, "PR_DATA_IO", "recording '%n': bytes %a-%b (chunk %c) unreadable on %m (%s)", NULL,
	  NOFIX, "--verify: committed data that cannot be read." },
	{ PR_DATA_MISSING, "PR_DATA_MISSING",
	  "recording '%n': %a chunks (%b bytes) are on missing member %i and cannot be verified",
	  NULL, NOFIX, "--verify on an incomplete pack: what lies on the missing member." },
	{ 0, NULL, NULL, NULL, 0, NULL },
};

const struct recfs_problem *recfs_problem_get(int number)
{
	for (const struct recfs_problem *p = recfs_problems; p->code; p++)
		if (p->number == number)
			return p;
	return NULL;
}

void recfs_problem_format(const char *t, const struct recfs_pctx *pc, char *buf, size_t len)
{
	size_t o = 0;

	if (!len)
		return;
	for (; *t && o + 1 < len; t++) {
		char tmp[32];
		const char *s = NULL;

		if (*t != '%' || !t[1]) {
			buf[o++] = *t;
			continue;
		}
		t++;
		switch (*t) {
		case 'm': s = pc->member ? pc->member : "?"; break;
		case 'n': s = pc->name ? pc->name : "?"; break;
		case 'N': s = pc->name2 ? pc->name2 : "?"; break;
		case 's': s = pc->str ? pc->str : ""; break;
		case 'i': snprintf(tmp, sizeof(tmp), "%u", pc->mindex); s = tmp; break;
		case 'e': snprintf(tmp, sizeof(tmp), "%u", pc->entry); s = tmp; break;
		case 'a': snprintf(tmp, sizeof(tmp), "%llu", (unsigned long long)pc->a); s = tmp; break;
		case 'b': snprintf(tmp, sizeof(tmp), "%llu", (unsigned long long)pc->b); s = tmp; break;
		case 'c': snprintf(tmp, sizeof(tmp), "%llu", (unsigned long long)pc->c); s = tmp; break;
		case 'd': snprintf(tmp, sizeof(tmp), "%llu", (unsigned long long)pc->d); s = tmp; break;
		case '%': s = "%"; break;
		default: tmp[0] = '%'; tmp[1] = *t; tmp[2] = 0; s = tmp; break;
		}
		while (*s && o + 1 < len)
			buf[o++] = *s++;
	}
	buf[o] = 0;
}
