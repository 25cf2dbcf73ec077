/*
 * libFuzzer harness: pack assembly and fsck on a small in-memory pack
 * (2 members of 2 MiB, 64 KiB chunks, 4 entries: two sealed recordings and
 * one left recording).  The input is a list of patches applied to a copy
 * of that pack:
 *   byte 0        bits 0-1: checker mode (0 -n, 1 -y, 2 -p, 3 -y --verify);
 *                 bit 2: afterwards make every checksum of metadata that has
 *                 its magic right again, to reach the field checks
 *   then records  [sel][off lo][off hi][len][len bytes]
 *                 sel bit 0: member; bits 1-3: region (primary superblock,
 *                 bitmap copies, directory, checksum table, data, backup
 *                 superblock, anywhere); off is taken modulo the region.
 * Before fsck, the library assembles the patched pack (both member orders,
 * plain and degraded): it must not crash, and refuses or opens the same
 * way in either order, naming the same inconsistent or foreign member.
 * Properties: no crash or sanitizer report; fsck never writes in -n mode;
 * a repairing run is followed by a run that repairs nothing more
 * (FUZZ_STRICT=1 also makes a non-clean second run fatal); after a clean
 * second run the library assembles the pack.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <endian.h>
#include <xxhash.h>

#include "internal.h"
#include "recfs/check.h"
#include "recfs/fault.h"

#define FZ_MSZ (2u << 20)
#define FZ_NM 2
#define FZ_CH (64u << 10)

static uint8_t *base[FZ_NM];
static struct recfs_geom geom;
static int strict;

static void quiet(void *ctx, const char *line)
{
	(void)ctx;
	if (getenv("FUZZ_VERBOSE"))
		fprintf(stderr, "%s\n", line);
}

static void put(struct recfs_pack *p, const char *name, uint64_t len, int seal)
{
	struct recfs_rec r;
	struct recfs_appender *a;
	uint8_t buf[4096];

	if (recfs_rec_create(p, name, NULL, 0, &r) || recfs_appender_new(p, &r, &a))
		abort();
	for (uint64_t off = 0; off < len; off += sizeof(buf)) {
		size_t n = len - off < sizeof(buf) ? (size_t)(len - off) : sizeof(buf);
		for (size_t k = 0; k < n; k++)
			buf[k] = (uint8_t)((off + k) * 7 + (uint8_t)name[0]);
		if (recfs_append(a, buf, n))
			abort();
		if ((off / sizeof(buf)) % 9 == 8 && recfs_append_sync(a))
			abort();
	}
	if (seal ? recfs_append_seal(a) : recfs_append_sync(a))
		abort();
	recfs_appender_free(a);
}

static void build_base(void)
{
	struct recfs_fault *f = recfs_fault_new(FZ_NM, FZ_MSZ);
	struct recfs_dev *d[FZ_NM];
	struct recfs_mkfs_opts o = {.chunk_size = FZ_CH, .dir_capacity = 4, .label = "fuzz"};
	struct recfs_pack *p;

	for (unsigned i = 0; i < FZ_NM; i++)
		d[i] = recfs_fault_dev(f, i);
	if (recfs_mkfs(d, FZ_NM, &o, NULL))
		abort();
	for (unsigned i = 0; i < FZ_NM; i++)
		recfs_dev_close(d[i]);
	for (unsigned i = 0; i < FZ_NM; i++)
		d[i] = recfs_fault_dev(f, i);
	if (recfs_pack_open_devs(d, FZ_NM, RECFS_O_RDWR, &p))
		abort();
	geom = *recfs_pack_geom(p);
	put(p, "a", 3 * FZ_CH + 100, 1);
	put(p, "b", 40000, 1);
	put(p, "live", 2 * FZ_CH + 5, 0);
	recfs_pack_close(p);
	recfs_fault_reboot(f);
	for (unsigned i = 0; i < FZ_NM; i++) {
		base[i] = malloc(FZ_MSZ);
		memcpy(base[i], recfs_fault_image(f, i), FZ_MSZ);
	}
	recfs_fault_free(f);
	strict = getenv("FUZZ_STRICT") != NULL;
}

static int check(struct recfs_fault *f, enum recfs_check_mode mode, bool verify,
		 struct recfs_check_stats *st)
{
	struct recfs_dev *d[FZ_NM];
	struct recfs_check_opts o = {.mode = mode, .verify = verify, .out = quiet};
	int ret;

	for (unsigned i = 0; i < FZ_NM; i++)
		d[i] = recfs_fault_dev(f, i);
	ret = recfs_check(d, FZ_NM, &o, st);
	for (unsigned i = 0; i < FZ_NM; i++)
		recfs_dev_close(d[i]);
	return ret;
}

static void fix_checksums(struct recfs_fault *f)
{
	uint64_t seed = 0;

	for (unsigned i = 0; i < FZ_NM; i++) {
		uint8_t *img = recfs_fault_image(f, i);
		uint64_t sbo[2] = {0, geom.backup_off};
		for (int k = 0; k < 2; k++) {
			struct recfs_disk_super *d = (void *)(img + sbo[k]);
			if (memcmp(d->magic, RECFS_SB_MAGIC_BYTES, 8))
				continue;
			d->checksum = htole64(XXH3_64bits(d, offsetof(struct recfs_disk_super, checksum)));
			if (!seed)
				seed = recfs_pack_seed(d->pack_uuid);
		}
	}
	for (unsigned i = 0; i < FZ_NM; i++) {
		uint8_t *img = recfs_fault_image(f, i);
		for (int k = 0; k < 2; k++) {
			uint8_t *c = img + geom.bitmap_off + k * geom.bitmap_copy_size;
			struct recfs_disk_bitmap *b = (void *)c;
			uint64_t nb = (le64toh(b->nbits) + 7) / 8;
			if (le32toh(b->magic) != RECFS_BMP_MAGIC)
				continue;
			if (nb <= geom.bitmap_copy_size - RECFS_BLOCK)
				b->bits_csum = htole64(XXH3_64bits_withSeed(c + RECFS_BLOCK, nb, seed));
			b->checksum = htole64(XXH3_64bits_withSeed(b, offsetof(struct recfs_disk_bitmap, checksum), seed));
		}
		for (uint32_t e = 0; e < geom.dir_capacity * 2; e++) {
			struct recfs_disk_entry *d = (void *)(img + geom.dir_off + e * RECFS_ENTRY_SIZE);
			if (le32toh(d->magic) == RECFS_ENT_MAGIC)
				d->checksum = htole64(XXH3_64bits_withSeed(d, offsetof(struct recfs_disk_entry, checksum), seed));
		}
	}
}

/* Pack assembly on the patched members, as every tool but fsck does it:
 * 0 opened, else the error.  rev: members in the reverse order. */
static int assemble(struct recfs_fault *f, bool rev, unsigned flags, char *msg, size_t msglen)
{
	struct recfs_dev *d[FZ_NM];
	struct recfs_pack *pk;
	int err;

	for (unsigned i = 0; i < FZ_NM; i++)
		d[i] = recfs_fault_dev(f, rev ? FZ_NM - 1 - i : i);
	err = recfs_pack_open_devs(d, FZ_NM, flags, &pk);
	if (!err)
		recfs_pack_close(pk);
	snprintf(msg, msglen, "%s", err ? recfs_errmsg() : "");
	return err;
}

static void assemble_both_orders(struct recfs_fault *f)
{
	for (unsigned flags = 0; flags <= RECFS_O_DEGRADED; flags += RECFS_O_DEGRADED) {
		char m0[600], m1[600];
		int e0 = assemble(f, false, flags, m0, sizeof(m0));
		int e1 = assemble(f, true, flags, m1, sizeof(m1));
		/* FORMAT.md 3: what is decided does not depend on the order the
		 * members come in, nor which member is named inconsistent or
		 * foreign (a device that is no member is named as it comes) */
		bool named = strstr(m0, "inconsistent") || strstr(m0, "pack");
		if (e0 != e1 || (named && strcmp(m0, m1))) {
			fprintf(stderr, "assembly depends on the member order: %d '%s' / %d '%s'\n", e0, m0,
				e1, m1);
			abort();
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct recfs_fault *f;
	struct recfs_check_stats st;
	uint64_t rs[8][2];
	unsigned mode;
	int ret;

	if (!base[0])
		build_base();
	if (size < 1)
		return 0;
	mode = data[0] & 3;
	rs[0][0] = 0, rs[0][1] = RECFS_BLOCK;
	rs[1][0] = geom.bitmap_off, rs[1][1] = 2 * geom.bitmap_copy_size;
	rs[2][0] = geom.dir_off, rs[2][1] = geom.csum_off - geom.dir_off;
	rs[3][0] = geom.csum_off, rs[3][1] = geom.csum_size;
	rs[4][0] = geom.data_off, rs[4][1] = geom.backup_off - geom.data_off;
	rs[5][0] = geom.backup_off, rs[5][1] = RECFS_BLOCK;
	rs[6][0] = 0, rs[6][1] = FZ_MSZ;
	rs[7][0] = geom.dir_off, rs[7][1] = 2 * RECFS_ENTRY_SIZE * 3;

	f = recfs_fault_new(FZ_NM, FZ_MSZ);
	for (unsigned i = 0; i < FZ_NM; i++)
		memcpy(recfs_fault_image(f, i), base[i], FZ_MSZ);
	for (size_t p = 1; p + 4 <= size;) {
		unsigned m = data[p] & 1, reg = (data[p] >> 1) & 7;
		uint64_t off = rs[reg][0] + ((uint64_t)data[p + 1] | (uint64_t)data[p + 2] << 8) % rs[reg][1];
		size_t len = data[p + 3];
		p += 4;
		if (len > size - p)
			len = size - p;
		if (off + len > FZ_MSZ)
			len = FZ_MSZ - off;
		memcpy(recfs_fault_image(f, m) + off, data + p, len);
		p += len;
	}

	if (data[0] & 4)
		fix_checksums(f);
	assemble_both_orders(f);
	if (recfs_fault_writes(f) != 0)
		abort(); /* a read-only open wrote */
	if (mode == 0) {
		ret = check(f, RECFS_CHECK_NO, true, &st);
		if (recfs_fault_writes(f) != 0)
			abort(); /* -n wrote */
	} else {
		ret = check(f, mode == 2 ? RECFS_CHECK_PREEN : RECFS_CHECK_YES, mode == 3, &st);
		if (!(ret & (RECFS_FSCK_ERROR | RECFS_FSCK_UNCORRECTED))) {
			/* a repaired pack: the next run finds nothing, and it assembles */
			int again = check(f, RECFS_CHECK_YES, false, &st);
			if (strict && again != 0) {
				fprintf(stderr, "second run exit %d after first run exit %d\n", again, ret);
				abort();
			}
			if (again == 0) {
				struct recfs_dev *d[FZ_NM];
				struct recfs_pack *pk;
				for (unsigned i = 0; i < FZ_NM; i++)
					d[i] = recfs_fault_dev(f, i);
				if (recfs_pack_open_devs(d, FZ_NM, 0, &pk)) {
					fprintf(stderr, "clean pack does not assemble: %s\n", recfs_errmsg());
					if (strict)
						abort();
				} else {
					recfs_pack_close(pk);
				}
			}
		}
	}
	recfs_fault_free(f);
	return 0;
}
