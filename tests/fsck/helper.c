/* SPDX-License-Identifier: MIT */
/*
 * fsck-helper: builds and damages packs for the tests/fsck image suite
 * through library calls, so that each case script states its damage in
 * terms of the format (an entry field, a superblock field, a bitmap row)
 * and still gets every checksum right where it wants to.
 *
 *   mkfs PACK CHUNK DIRCAP LABEL UUIDHEX       fixed UUID and creation time
 *   write PACK NAME BYTES STEP [nosync|noseal] create, append stream, sync every STEP
 *   pattern BYTES NAME                         the stream a recording was written with
 *   rollback PACK NAME                         drop the newest entry generation (a commit whose
 *                                              entry write never happened)
 *   set-entry PACK NAME FIELD VALUE [MEMBER]   rewrite the newest generation with a field changed
 *                                              (also format, source, flags, reserved: not checked)
 *                                              (uid @OTHER: OTHER's uid)
 *   set-super MEMBER primary|backup FIELD VALUE rewrite one superblock copy with a field changed
 *   bit PACK ROW set|clear                     change the newest bitmap copy on every member
 *   where PACK entry NAME | data NAME CHUNK | slot NAME CHUNK | bitmap
 *   slot PACK NAME CHUNK LEN MEMBER            write chunk CHUNK's checksum slot on MEMBER only,
 *                                              for the first LEN bytes of its data (an older commit)
 *                                              "PATH OFFSET" lines for dd
 */
#include <endian.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
#include <xxhash.h>

#include "internal.h"

static int die(const char *what)
{
	fprintf(stderr, "fsck-helper: %s: %s\n", what, recfs_errmsg());
	exit(2);
}

static uint8_t stream_byte(const char *name, uint64_t i)
{
	uint64_t h = 1469598103934665603ull;

	for (const char *p = name; *p; p++)
		h = (h ^ (uint8_t)*p) * 1099511628211ull;
	uint64_t x = (i / 8 + 1) * 0x9E3779B97F4A7C15ull ^ h;
	x ^= x >> 31;
	x *= 0xBF58476D1CE4E5B9ull;
	x ^= x >> 29;
	return (uint8_t)(x >> (8 * (i % 8)));
}

static void fill(const char *name, uint64_t off, uint8_t *b, size_t n)
{
	for (size_t k = 0; k < n; k++)
		b[k] = stream_byte(name, off + k);
}

static int hexuuid(const char *s, uint8_t u[16])
{
	for (int i = 0; i < 16; i++) {
		unsigned v;
		if (sscanf(s + 2 * i, "%2x", &v) != 1)
			return -1;
		u[i] = (uint8_t)v;
	}
	return 0;
}

static struct recfs_pack *open_pack(const char *spec, unsigned flags)
{
	struct recfs_pack *p;

	if (recfs_pack_open(spec, flags | RECFS_O_BUFFERED, &p))
		die(spec);
	return p;
}

/* raw file I/O, buffered (the helper never runs beside a writer) */
static void raw_rw(const char *path, void *buf, size_t len, uint64_t off, bool wr)
{
	int fd = open(path, wr ? O_RDWR : O_RDONLY);
	ssize_t r;

	if (fd < 0) {
		perror(path);
		exit(2);
	}
	r = wr ? pwrite(fd, buf, len, (off_t)off) : pread(fd, buf, len, (off_t)off);
	if (r != (ssize_t)len) {
		fprintf(stderr, "fsck-helper: %s: short %s at %llu\n", path, wr ? "write" : "read",
			(unsigned long long)off);
		exit(2);
	}
	if (wr)
		fsync(fd);
	close(fd);
}

static int cmd_mkfs(char **a)
{
	struct recfs_dev *d[RECFS_MAX_MEMBERS];
	struct recfs_mkfs_opts o = {0};
	uint8_t u[16];
	char **paths;
	unsigned n;
	uint64_t chunk;

	if (recfs_spec_split(a[0], &paths, &n) || recfs_parse_size(a[1], &chunk) ||
	    hexuuid(a[4], u))
		die("mkfs arguments");
	for (unsigned i = 0; i < n; i++)
		if (recfs_dev_open(paths[i], RECFS_DEV_WRITE | RECFS_DEV_BUFFERED, &d[i]))
			die(paths[i]);
	o.chunk_size = (uint32_t)chunk;
	o.dir_capacity = (uint32_t)atoi(a[2]);
	o.label = a[3];
	o.uuid = u;
	o.created_ns = 1700000000000000000ull;
	if (recfs_mkfs(d, n, &o, NULL))
		die("mkfs");
	for (unsigned i = 0; i < n; i++)
		recfs_dev_close(d[i]);
	recfs_spec_free(paths, n);
	return 0;
}

static int cmd_write(char **a, int argc)
{
	struct recfs_pack *p = open_pack(a[0], RECFS_O_RDWR);
	struct recfs_rec r;
	struct recfs_appender *ap;
	struct recfs_input in = { .format = RECFS_FMT_RAW };
	uint64_t len, step;
	uint8_t buf[8192];
	const char *mode = argc > 4 ? a[4] : "";

	if (recfs_parse_size(a[2], &len) || recfs_parse_size(a[3], &step) || !step)
		die("write arguments");
	snprintf(in.source, sizeof(in.source), "fsck-helper");
	if (recfs_rec_create(p, a[1], &in, 0, &r) || recfs_appender_new(p, &r, &ap))
		die(a[1]);
	for (uint64_t off = 0; off < len;) {
		size_t n = len - off < sizeof(buf) ? (size_t)(len - off) : sizeof(buf);
		if (n > step - off % step)
			n = (size_t)(step - off % step);
		fill(a[1], off, buf, n);
		if (recfs_append(ap, buf, n))
			die("append");
		off += n;
		if (off % step == 0 && strcmp(mode, "nosync") && recfs_append_sync(ap))
			die("sync");
	}
	if (!strcmp(mode, "")) {
		if (recfs_append_seal(ap))
			die("seal");
	} else if (!strcmp(mode, "noseal")) {
		if (recfs_append_sync(ap))
			die("sync");
	}
	recfs_appender_free(ap);
	/* a crash: no flush of what the appender still holds */
	recfs_pack_close(p);
	return 0;
}

static int cmd_pattern(char **a)
{
	uint64_t len;
	uint8_t buf[65536];

	if (recfs_parse_size(a[0], &len))
		die("pattern");
	for (uint64_t off = 0; off < len;) {
		size_t n = len - off < sizeof(buf) ? (size_t)(len - off) : sizeof(buf);
		fill(a[1], off, buf, n);
		fwrite(buf, 1, n, stdout);
		off += n;
	}
	return 0;
}

struct located {
	struct recfs_geom g;
	struct recfs_rec r;
	uint64_t seed;
	unsigned n;
	char path[RECFS_MAX_MEMBERS][4096];
};

static void locate(const char *spec, const char *name, struct located *L)
{
	struct recfs_pack *p = open_pack(spec, 0);

	L->g = *recfs_pack_geom(p);
	L->seed = p->pack_seed;
	L->n = L->g.members;
	for (unsigned i = 0; i < L->n; i++)
		snprintf(L->path[i], sizeof(L->path[i]), "%s", recfs_pack_dev(p, i)->path);
	if (name && recfs_rec_lookup(p, name, &L->r))
		die(name);
	recfs_pack_close(p);
}

static uint64_t entry_off(const struct located *L, uint32_t idx, uint64_t seq)
{
	return L->g.dir_off + ((uint64_t)idx * 2 + (seq & 1)) * RECFS_ENTRY_SIZE;
}

static int cmd_rollback(char **a)
{
	struct located L;
	uint8_t zero[RECFS_ENTRY_SIZE] = {0};

	locate(a[0], a[1], &L);
	for (unsigned i = 0; i < L.n; i++)
		raw_rw(L.path[i], zero, sizeof(zero), entry_off(&L, L.r.index, L.r.seq), true);
	return 0;
}

static int cmd_set_entry(char **a, int argc)
{
	struct located L;
	uint8_t slot[RECFS_ENTRY_SIZE];
	struct recfs_disk_entry *d = (void *)slot;
	const char *f = a[2], *v = a[3];
	uint64_t x = strtoull(v, NULL, 0);

	locate(a[0], a[1], &L);
	recfs_entry_encode(&L.r, L.seed, slot);
	if (!strcmp(f, "committed_len"))
		d->committed_len = htole64(x);
	else if (!strcmp(f, "alloc_len"))
		d->alloc_len = htole64(x);
	else if (!strcmp(f, "ext_start"))
		d->ext_start = htole64(x);
	else if (!strcmp(f, "gap_count"))
		d->gap_count = htole32((uint32_t)x);
	else if (!strcmp(f, "seq"))
		d->seq = htole64(x);
	else if (!strcmp(f, "state"))
		d->state = (uint8_t)x;
	else if (!strcmp(f, "uid")) {
		/* @NAME: the uid of recording NAME (a duplicate) */
		if (v[0] == '@') {
			struct located O;
			locate(a[0], v + 1, &O);
			x = O.r.uid;
		}
		d->uid = htole64(x);
	} else if (!strcmp(f, "name")) {
		memset(d->name, 0, sizeof(d->name));
		memcpy(d->name, v, strlen(v));
		d->name_len = htole16((uint16_t)strlen(v));
	} else if (!strcmp(f, "checksum"))
		d->checksum = htole64(x);
	else if (!strcmp(f, "format"))
		d->format = (uint8_t)x;
	else if (!strcmp(f, "source")) /* up to 64 bytes, no NUL needed */
		memcpy(d->source, v, strnlen(v, sizeof(d->source)));
	else if (!strcmp(f, "flags"))
		d->flags = htole32((uint32_t)x);
	else if (!strcmp(f, "reserved")) { /* every reserved byte of the slot */
		d->reserved0 = htole32((uint32_t)x);
		memset(d->reserved1, (int)(x & 0xff), sizeof(d->reserved1));
		for (unsigned g = 0; g < RECFS_GAPS_MAX; g++)
			d->gaps[g].reserved = htole16((uint16_t)x);
	} else {
		fprintf(stderr, "fsck-helper: unknown entry field %s\n", f);
		return 2;
	}
	if (strcmp(f, "checksum"))
		d->checksum = htole64(XXH3_64bits_withSeed(slot, offsetof(struct recfs_disk_entry, checksum), L.seed));
	for (unsigned i = 0; i < L.n; i++)
		if (argc < 5 || (unsigned)atoi(a[4]) == i)
			raw_rw(L.path[i], slot, sizeof(slot), entry_off(&L, L.r.index, L.r.seq), true);
	return 0;
}

static int cmd_set_super(char **a)
{
	uint8_t blk[RECFS_BLOCK];
	struct recfs_super s;
	uint64_t off = 0, x = strtoull(a[3], NULL, 0);
	const char *f = a[2];

	raw_rw(a[0], blk, sizeof(blk), 0, false);
	if (recfs_super_decode(blk, &s))
		die("primary superblock");
	if (!strcmp(a[1], "backup")) {
		off = s.backup_off;
		raw_rw(a[0], blk, sizeof(blk), off, false);
		if (recfs_super_decode(blk, &s))
			die("backup superblock");
	}
#define SET(name) else if (!strcmp(f, #name)) s.name = (__typeof__(s.name))x
	if (0)
		;
	SET(member_index);
	SET(member_count);
	SET(chunk_size);
	SET(dir_capacity);
	SET(member_size);
	SET(rows);
	SET(created_ns);
	SET(bitmap_off);
	SET(dir_off);
	SET(csum_off);
	SET(data_off);
	SET(backup_off);
	SET(compat);
#undef SET
	else if (!strcmp(f, "label"))
		snprintf(s.label, sizeof(s.label), "%s", a[3]);
	else if (!strcmp(f, "pack_uuid"))
		hexuuid(a[3], s.pack_uuid);
	else if (!strcmp(f, "member_uuid"))
		hexuuid(a[3], s.member_uuid);
	else if (strcmp(f, "version")) {
		fprintf(stderr, "fsck-helper: unknown superblock field %s\n", f);
		return 2;
	}
	recfs_super_encode(&s, blk);
	if (!strcmp(f, "version")) {
		struct recfs_disk_super *d = (void *)blk;
		d->version = htole32((uint32_t)x);
		d->checksum = htole64(XXH3_64bits(d, offsetof(struct recfs_disk_super, checksum)));
	}
	raw_rw(a[0], blk, sizeof(blk), off, true);
	return 0;
}

static int cmd_bit(char **a)
{
	struct located L;
	struct recfs_pack *p = open_pack(a[0], 0);
	uint64_t row = strtoull(a[1], NULL, 0), seq = p->bmp_seq;
	uint8_t *buf;
	struct recfs_bitmap_hdr h;

	locate(a[0], NULL, &L);
	recfs_pack_close(p);
	buf = malloc(L.g.bitmap_copy_size);
	for (unsigned i = 0; i < L.n; i++) {
		uint64_t off = L.g.bitmap_off + (seq & 1) * L.g.bitmap_copy_size;
		raw_rw(L.path[i], buf, L.g.bitmap_copy_size, off, false);
		if (recfs_bitmap_decode(buf, L.g.bitmap_copy_size, L.seed, &h))
			die("bitmap");
		if (!strcmp(a[2], "set"))
			recfs_bit_set(buf + RECFS_BLOCK, row);
		else
			recfs_bit_clear(buf + RECFS_BLOCK, row);
		recfs_bitmap_encode(buf, &h, L.seed);
		raw_rw(L.path[i], buf, L.g.bitmap_copy_size, off, true);
	}
	free(buf);
	return 0;
}

static int cmd_where(char **a)
{
	struct located L;
	const char *w = a[1];

	if (!strcmp(w, "bitmap")) {
		struct recfs_pack *p = open_pack(a[0], 0);
		uint64_t seq = p->bmp_seq;
		locate(a[0], NULL, &L);
		recfs_pack_close(p);
		for (unsigned i = 0; i < L.n; i++)
			printf("%s %llu\n", L.path[i],
			       (unsigned long long)(L.g.bitmap_off + (seq & 1) * L.g.bitmap_copy_size));
		return 0;
	}
	locate(a[0], a[2], &L);
	if (!strcmp(w, "entry")) {
		for (unsigned i = 0; i < L.n; i++)
			printf("%s %llu\n", L.path[i], (unsigned long long)entry_off(&L, L.r.index, L.r.seq));
	} else if (!strcmp(w, "data")) {
		unsigned m;
		uint64_t off;
		recfs_map(&L.g, L.r.ext_start + strtoull(a[3], NULL, 0) * L.g.chunk_size, &m, &off);
		printf("%s %llu\n", L.path[m], (unsigned long long)off);
	} else if (!strcmp(w, "slot")) {
		uint64_t lc = L.r.ext_start / L.g.chunk_size + strtoull(a[3], NULL, 0);
		for (unsigned i = 0; i < L.n; i++)
			printf("%s %llu\n", L.path[i],
			       (unsigned long long)(L.g.csum_off + lc * RECFS_SLOT_SIZE));
	} else {
		fprintf(stderr, "fsck-helper: where what?\n");
		return 2;
	}
	return 0;
}

static int cmd_slot(char **a)
{
	struct located L;
	uint64_t k = strtoull(a[2], NULL, 0), moff, lc;
	uint32_t len = (uint32_t)strtoul(a[3], NULL, 0);
	unsigned mi, who = (unsigned)atoi(a[4]);
	struct recfs_disk_slot s = {0};
	uint8_t *buf;

	locate(a[0], a[1], &L);
	if (len == 0 || len > L.g.chunk_size || who >= L.n) {
		fprintf(stderr, "fsck-helper: slot arguments\n");
		return 2;
	}
	buf = malloc(len);
	recfs_map(&L.g, L.r.ext_start + k * L.g.chunk_size, &mi, &moff);
	raw_rw(L.path[mi], buf, len, moff, false);
	s.csum = htole64(recfs_chunk_csum(L.r.uid, k, buf, len));
	s.len = htole32(len);
	lc = L.r.ext_start / L.g.chunk_size + k;
	raw_rw(L.path[who], &s, sizeof(s), L.g.csum_off + lc * RECFS_SLOT_SIZE, true);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		goto usage;
	const char *c = argv[1];
	char **a = argv + 2;
	int n = argc - 2;
	if (!strcmp(c, "mkfs") && n == 5)
		return cmd_mkfs(a);
	if (!strcmp(c, "write") && n >= 4)
		return cmd_write(a, n);
	if (!strcmp(c, "pattern") && n == 2)
		return cmd_pattern(a);
	if (!strcmp(c, "rollback") && n == 2)
		return cmd_rollback(a);
	if (!strcmp(c, "set-entry") && n >= 4)
		return cmd_set_entry(a, n);
	if (!strcmp(c, "set-super") && n == 4)
		return cmd_set_super(a);
	if (!strcmp(c, "bit") && n == 3)
		return cmd_bit(a);
	if (!strcmp(c, "where") && n >= 2)
		return cmd_where(a);
	if (!strcmp(c, "slot") && n == 5)
		return cmd_slot(a);
usage:
	fprintf(stderr, "usage: fsck-helper mkfs|write|pattern|rollback|set-entry|set-super|bit|where|slot ...\n");
	return 2;
}
