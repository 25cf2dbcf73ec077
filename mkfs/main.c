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

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{"chunk-size", required_argument, 0, 'c'}, {"max-recordings", required_argument, 0, 'n'},
		{"label", required_argument, 0, 'L'},      {"force", no_argument, 0, 'f'},
		{"quiet", no_argument, 0, 'q'},            {"version", no_argument, 0, 'V'},
		{"help", no_argument, 0, 'h'},             {0, 0, 0, 0}};
	struct recfs_mkfs_opts o = {0};
	struct recfs_dev *devs[RECFS_MAX_MEMBERS] = {0};
	struct recfs_geom g;
	char **paths = NULL;
	unsigned n = 0, nd = 0;
	bool force = false, quiet = false;
	uint64_t v;
	uint8_t uuid[16];
	int c, err, ret = 1;

	while ((c = getopt_long(argc, argv, "c:n:L:fqVh", lo, NULL)) != -1) {
		switch (c) {
		case 'c':
			if (recfs_parse_bytes("-c/--chunk-size", optarg, RECFS_CHUNK_MIN, RECFS_CHUNK_MAX, &v))
				return die(1, "%s", recfs_errmsg());
			if (v & (v - 1))
				return die(1, "-c/--chunk-size '%s': not a power of two; want 64K to 64M", optarg);
			o.chunk_size = (uint32_t)v;
			break;
		case 'n':
			if (recfs_parse_num("-n/--max-recordings", optarg, 1, RECFS_DIR_MAX, &v))
				return die(1, "%s", recfs_errmsg());
			o.dir_capacity = (uint32_t)v;
			break;
		case 'L':
			if (strlen(optarg) > RECFS_LABEL_MAX)
				return die(1, "label '%s' is longer than 63 bytes", optarg);
			o.label = optarg;
			break;
		case 'f': force = true; break;
		case 'q': quiet = true; break;
		case 'V': printf("%s %s (format v%u)\n", prog, RECFS_VERSION_STRING, RECFS_DISK_VERSION); return 0;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 16;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 16;
	}
	err = recfs_spec_from_args(argc - optind, argv + optind, &paths, &n);
	if (err)
		return die(1, "%s", recfs_errmsg());
	if (recfs_paths_distinct(paths, n)) {
		ret = die(1, "%s", recfs_errmsg());
		goto out_free;
	}

	/* open and check everything before writing anything */
	for (unsigned i = 0; i < n; i++) {
		char what[128];
		if (recfs_dev_mounted(paths[i])) {
			ret = die(1, "%s is mounted", paths[i]);
			goto out_close;
		}
		err = recfs_dev_open(paths[i], RECFS_DEV_WRITE | RECFS_DEV_EXCL, &devs[nd]);
		if (err) {
			ret = die(1, "%s", recfs_errmsg());
			goto out_close;
		}
		nd++;
		struct recfs_dev *d = devs[nd - 1];
		for (unsigned j = 0; j + 1 < nd; j++)
			if ((d->blkdev && devs[j]->blkdev && d->st_rdev == devs[j]->st_rdev) ||
			    (!d->blkdev && !devs[j]->blkdev && d->st_dev == devs[j]->st_dev &&
			     d->st_ino == devs[j]->st_ino)) {
				ret = die(1, "%s and %s are the same member", devs[j]->path, d->path);
				goto out_close;
			}
		if (force)
			continue;
		/* our own superblock first: it names the pack it belongs to */
		struct recfs_dev *one[1] = {d};
		struct recfs_pack *old;
		err = recfs_pack_open_devs(one, 1, RECFS_O_DEGRADED, &old);
		if (!err) {
			struct recfs_pack_info pi;
			char u[37];
			recfs_pack_info(old, &pi);
			recfs_uuid_unparse(pi.uuid, u);
			fprintf(stderr,
				"%s: %s already holds recfs pack '%s' (%s, %u recordings); use -f to overwrite\n",
				prog, paths[i], pi.label, u, pi.recordings);
			/* pack_open_devs took the device; do not close it twice */
			devs[--nd] = NULL;
			recfs_pack_close(old);
			goto out_close;
		}
		/* recfs_pack_open_devs closed d on failure: reopen */
		err = recfs_dev_open(paths[i], RECFS_DEV_WRITE | RECFS_DEV_EXCL, &devs[nd - 1]);
		if (err) {
			devs[--nd] = NULL;
			ret = die(1, "%s", recfs_errmsg());
			goto out_close;
		}
		d = devs[nd - 1];
		/* libblkid does not know recfs: a damaged or newer recfs member */
		if (has_recfs_magic(d)) {
			fprintf(stderr,
				"%s: %s holds a damaged or unsupported recfs member; use -f to overwrite\n",
				prog, paths[i]);
			goto out_close;
		}
		int found = recfs_dev_probe(d, what, sizeof(what));
		if (found < 0) {
			ret = die(1, "%s", recfs_errmsg());
			goto out_close;
		}
		if (found) {
			fprintf(stderr, "%s: %s holds %s; use -f to overwrite\n", prog, paths[i], what);
			goto out_close;
		}
	}
	{
		uint64_t smallest = UINT64_MAX;
		for (unsigned i = 0; i < nd; i++)
			if (devs[i]->size < smallest)
				smallest = devs[i]->size;
		unsigned si = 0;
		for (unsigned i = 0; i < nd; i++)
			if (devs[i]->size == smallest)
				si = i;
		err = recfs_geom_compute(&g, nd, smallest, o.chunk_size ? o.chunk_size : RECFS_CHUNK_DEFAULT,
					 o.dir_capacity ? o.dir_capacity : RECFS_DIR_DEFAULT);
		if (err) {
			ret = die(1, "%s: %s", devs[si]->path, recfs_errmsg());
			goto out_close;
		}
	}
	if (force)
		for (unsigned i = 0; i < nd; i++)
			if (recfs_dev_wipe(devs[i])) {
				ret = die(1, "%s", recfs_errmsg());
				goto out_close;
			}
	err = recfs_mkfs(devs, nd, &o, uuid);
	if (err) {
		ret = die(1, "%s", recfs_errmsg());
		goto out_close;
	}
	if (!quiet) {
		char u[37], b1[32], b2[32];
		recfs_uuid_unparse(uuid, u);
		printf("recfs pack created\n");
		printf("  uuid:            %s\n", u);
		printf("  label:           %s\n", o.label ? o.label : "");
		printf("  members:         %u\n", nd);
		for (unsigned i = 0; i < nd; i++)
			printf("    %2u  %s\n", i, devs[i]->path);
		printf("  chunk size:      %s\n", recfs_fmt_size(g.chunk_size, b1, sizeof(b1)));
		printf("  per member:      %s usable, data from byte %llu\n",
		       recfs_fmt_size(g.rows * g.chunk_size, b2, sizeof(b2)),
		       (unsigned long long)g.data_off);
		printf("  capacity:        %s (%llu bytes)\n", recfs_fmt_size(g.capacity, b1, sizeof(b1)),
		       (unsigned long long)g.capacity);
		printf("  max recordings:  %u\n", g.dir_capacity);
	}
	ret = 0;
out_close:
	for (unsigned i = 0; i < nd; i++)
		recfs_dev_close(devs[i]);
out_free:
	recfs_spec_free(paths, n);
	return ret;
}
