/* SPDX-License-Identifier: MIT */
/* mkfs.recfs: format a pack.  Everything is checked before anything is
 * written; a refused run leaves every member untouched. */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uuid/uuid.h>

#include "recfs/recfs.h"

static const char *prog = "mkfs.recfs";

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s [-c CHUNK] [-n MAX_RECORDINGS] [-L LABEL] [-f] [-q] PACK | MEMBER...\n"
		"Format the members of PACK (comma-separated, in member order) as one recfs pack.\n"
		"  -c, --chunk-size SIZE   stripe chunk, power of two 64K..64M (default 1M)\n"
		"  -n, --max-recordings N  directory capacity (default %u)\n"
		"  -L, --label LABEL       pack label (up to %u bytes)\n"
		"  -f, --force             overwrite existing recfs packs and other signatures\n"
		"  -q, --quiet             print nothing on success\n"
		"  -V, --version           print the version\n"
		"  -h, --help              this help\n",
		prog, RECFS_DIR_DEFAULT, RECFS_LABEL_MAX);
}

__attribute__((format(printf, 2, 3))) static int die(int code, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return code;
}

/* The recfs magic at either superblock place, valid or not. */
static bool has_recfs_magic(struct recfs_dev *d)
{
	void *blk = NULL;
	bool found = false;
	uint64_t offs[2] = {0, d->size / RECFS_BLOCK * RECFS_BLOCK - RECFS_BLOCK};

	if (posix_memalign(&blk, RECFS_BLOCK, RECFS_BLOCK))
		return false;
	for (int k = 0; k < 2 && !found; k++)
		if (d->size >= RECFS_BLOCK && d->ops->pread(d, blk, RECFS_BLOCK, offs[k]) == 0)
			found = !memcmp(blk, RECFS_SB_MAGIC_BYTES, 8);
	free(blk);
	return found;
}

/* What the command line asks for. */
struct mk_args {
	struct recfs_mkfs_opts o;
	bool force, quiet;
	char **paths;
	unsigned n;
};

/* The command line into a: -1 to go on, else the exit status (help,
 * version, a refusal). */
static int mk_parse_args(int argc, char **argv, struct mk_args *a)
{
	static const struct option lo[] = {
		{"chunk-size", required_argument, 0, 'c'}, {"max-recordings", required_argument, 0, 'n'},
		{"label", required_argument, 0, 'L'},      {"force", no_argument, 0, 'f'},
		{"quiet", no_argument, 0, 'q'},            {"version", no_argument, 0, 'V'},
		{"help", no_argument, 0, 'h'},             {0, 0, 0, 0}};
	uint64_t v;
	int c;

	while ((c = getopt_long(argc, argv, "c:n:L:fqVh", lo, NULL)) != -1) {
		switch (c) {
		case 'c':
			if (recfs_parse_bytes("-c/--chunk-size", optarg, RECFS_CHUNK_MIN, RECFS_CHUNK_MAX, &v))
				return die(1, "%s", recfs_errmsg());
			if (v & (v - 1))
				return die(1, "-c/--chunk-size '%s': not a power of two; want 64K to 64M", optarg);
			a->o.chunk_size = (uint32_t)v;
			break;
		case 'n':
			if (recfs_parse_num("-n/--max-recordings", optarg, 1, RECFS_DIR_MAX, &v))
				return die(1, "%s", recfs_errmsg());
			a->o.dir_capacity = (uint32_t)v;
			break;
		case 'L':
			if (strlen(optarg) > RECFS_LABEL_MAX)
				return die(1, "label '%s' is longer than 63 bytes", optarg);
			a->o.label = optarg;
			break;
		case 'f': a->force = true; break;
		case 'q': a->quiet = true; break;
		case 'V': printf("%s %s (format v%u)\n", prog, RECFS_VERSION_STRING, RECFS_DISK_VERSION); return 0;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 16;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 16;
	}
	if (recfs_spec_from_args(argc - optind, argv + optind, &a->paths, &a->n))
		return die(1, "%s", recfs_errmsg());
	return -1;
}

/* Without -f: nothing on member d (paths[i]) may be overwritten.  0 to go
 * on, else the exit status (said); *d is reopened, or NULL when the pack
 * check took it. */
static int mk_check_unused(const char *path, struct recfs_dev **dp)
{
	char what[128];
	/* our own superblock first: it names the pack it belongs to */
	struct recfs_dev *one[1] = {*dp};
	struct recfs_pack *old;
	int err = recfs_pack_open_devs(one, 1, RECFS_O_DEGRADED, &old);

	if (!err) {
		struct recfs_pack_info pi;
		char u[37];
		recfs_pack_info(old, &pi);
		recfs_uuid_unparse(pi.uuid, u);
		fprintf(stderr,
			"%s: %s already holds recfs pack '%s' (%s, %u recordings); use -f to overwrite\n",
			prog, path, pi.label, u, pi.recordings);
		/* pack_open_devs took the device; do not close it twice */
		*dp = NULL;
		recfs_pack_close(old);
		return 1;
	}
	/* recfs_pack_open_devs closed d on failure: reopen */
	err = recfs_dev_open(path, RECFS_DEV_WRITE | RECFS_DEV_EXCL, dp);
	if (err) {
		*dp = NULL;
		return die(1, "%s", recfs_errmsg());
	}
	/* libblkid does not know recfs: a damaged or newer recfs member */
	if (has_recfs_magic(*dp)) {
		fprintf(stderr, "%s: %s holds a damaged or unsupported recfs member; use -f to overwrite\n",
			prog, path);
		return 1;
	}
	int found = recfs_dev_probe(*dp, what, sizeof(what));
	if (found < 0)
		return die(1, "%s", recfs_errmsg());
	if (found) {
		fprintf(stderr, "%s: %s holds %s; use -f to overwrite\n", prog, path, what);
		return 1;
	}
	return 0;
}

/* Open and check every member before writing anything: 0, or the exit
 * status (said); *nd devices open either way. */
static int mk_open_members(const struct mk_args *a, struct recfs_dev **devs, unsigned *nd)
{
	for (unsigned i = 0; i < a->n; i++) {
		if (recfs_dev_mounted(a->paths[i]))
			return die(1, "%s is mounted", a->paths[i]);
		if (recfs_dev_open(a->paths[i], RECFS_DEV_WRITE | RECFS_DEV_EXCL, &devs[*nd]))
			return die(1, "%s", recfs_errmsg());
		(*nd)++;
		struct recfs_dev *d = devs[*nd - 1];
		for (unsigned j = 0; j + 1 < *nd; j++)
			if ((d->blkdev && devs[j]->blkdev && d->st_rdev == devs[j]->st_rdev) ||
			    (!d->blkdev && !devs[j]->blkdev && d->st_dev == devs[j]->st_dev &&
			     d->st_ino == devs[j]->st_ino))
				return die(1, "%s and %s are the same member", devs[j]->path, d->path);
		if (a->force)
			continue;
		int ret = mk_check_unused(a->paths[i], &devs[*nd - 1]);
		if (!devs[*nd - 1])
			(*nd)--;
		if (ret)
			return ret;
	}
	return 0;
}

/* The geometry the smallest member gives: 0, or the exit status (said). */
static int mk_geom(const struct mk_args *a, struct recfs_dev **devs, unsigned nd,
		   struct recfs_geom *g)
{
	uint64_t smallest = UINT64_MAX;
	for (unsigned i = 0; i < nd; i++)
		if (devs[i]->size < smallest)
			smallest = devs[i]->size;
	unsigned si = 0;
	for (unsigned i = 0; i < nd; i++)
		if (devs[i]->size == smallest)
			si = i;
	if (recfs_geom_compute(g, nd, smallest, a->o.chunk_size ? a->o.chunk_size : RECFS_CHUNK_DEFAULT,
			       a->o.dir_capacity ? a->o.dir_capacity : RECFS_DIR_DEFAULT))
		return die(1, "%s: %s", devs[si]->path, recfs_errmsg());
	return 0;
}

static void mk_report(const struct mk_args *a, struct recfs_dev **devs, unsigned nd,
		      const struct recfs_geom *g, const uint8_t *uuid)
{
	char u[37], b1[32], b2[32];
	recfs_uuid_unparse(uuid, u);
	printf("recfs pack created\n");
	printf("  uuid:            %s\n", u);
	printf("  label:           %s\n", a->o.label ? a->o.label : "");
	printf("  members:         %u\n", nd);
	for (unsigned i = 0; i < nd; i++)
		printf("    %2u  %s\n", i, devs[i]->path);
	printf("  chunk size:      %s\n", recfs_fmt_size(g->chunk_size, b1, sizeof(b1)));
	printf("  per member:      %s usable, data from byte %llu\n",
	       recfs_fmt_size(g->rows * g->chunk_size, b2, sizeof(b2)),
	       (unsigned long long)g->data_off);
	printf("  capacity:        %s (%llu bytes)\n", recfs_fmt_size(g->capacity, b1, sizeof(b1)),
	       (unsigned long long)g->capacity);
	printf("  max recordings:  %u\n", g->dir_capacity);
}

int main(int argc, char **argv)
{
	struct mk_args a = {0};
	struct recfs_dev *devs[RECFS_MAX_MEMBERS] = {0};
	struct recfs_geom g;
	unsigned nd = 0;
	uint8_t uuid[16];
	int ret = mk_parse_args(argc, argv, &a);

	if (ret >= 0)
		return ret;
	ret = 1;
	if (recfs_paths_distinct(a.paths, a.n)) {
		ret = die(1, "%s", recfs_errmsg());
		goto out_free;
	}
	ret = mk_open_members(&a, devs, &nd);
	if (!ret)
		ret = mk_geom(&a, devs, nd, &g);
	if (ret)
		goto out_close;
	ret = 1;
	if (a.force)
		for (unsigned i = 0; i < nd; i++)
			if (recfs_dev_wipe(devs[i])) {
				ret = die(1, "%s", recfs_errmsg());
				goto out_close;
			}
	if (recfs_mkfs(devs, nd, &a.o, uuid)) {
		ret = die(1, "%s", recfs_errmsg());
		goto out_close;
	}
	if (!a.quiet)
		mk_report(&a, devs, nd, &g, uuid);
	ret = 0;
out_close:
	for (unsigned i = 0; i < nd; i++)
		recfs_dev_close(devs[i]);
out_free:
	recfs_spec_free(a.paths, a.n);
	return ret;
}
