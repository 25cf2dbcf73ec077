/* SPDX-License-Identifier: MIT */
/* recfs: the admin tool.  info, ls, rm, cat. */
#include <errno.h>
#include <fnmatch.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "recfs/recfs.h"
#include "cat.h"
#include "ctl.h"

static const char *prog = "recfs";

__attribute__((format(printf, 1, 2))) static int die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 1;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s COMMAND [options] PACK ...\n"
		"PACK is the comma-separated list of member devices or files, in any order.\n"
		"Commands:\n"
		"  info PACK                          the pack: members, geometry, space\n"
		"  ls [-l] [--json] PACK              list recordings\n"
		"  rm [-f] PACK NAME|GLOB...          delete recordings (shell-style globs)\n"
		"  cat [--offset N] [--length N] [--no-verify] PACK NAME\n"
		"                                     write a recording to standard output\n"
		"  ctl [-t SECONDS] [ADDR:PORT] STATEMENT... | -\n"
		"                                     VSI-S statements to recfsd (127.0.0.1:2620)\n"
		"  --version, --help\n",
		prog);
}

static const char *state_name(uint8_t s)
{
	switch (s) {
	case RECFS_STATE_RECORDING: return "recording";
	case RECFS_STATE_SEALED: return "sealed";
	default: return "free";
	}
}

static const char *fmt_name(uint8_t f)
{
	return f == RECFS_FMT_VDIF ? "vdif" : f == RECFS_FMT_RAW ? "raw" : "unknown";
}

static double rec_rate(const struct recfs_rec *r)
{
	if (r->end_ns <= r->start_ns)
		return 0;
	return (double)r->committed_len / ((double)(r->end_ns - r->start_ns) / 1e9);
}

static int open_pack(const char *spec, unsigned flags, struct recfs_pack **p)
{
	int err = recfs_pack_open(spec, flags, p);

	if (err)
		die("%s", recfs_errmsg());
	return err;
}

/* one warning line per pair of entries that share a uid (both hidden) */
static void warn_dup_uids(struct recfs_pack *p)
{
	struct recfs_rec a, b;

	for (uint32_t i = 0; recfs_pack_dup_uid(p, &i, &a, &b) == 0; i++)
		fprintf(stderr,
			"%s: warning: recordings '%s' (entry %u) and '%s' (entry %u) have the same uid "
			"%016llx: both are hidden until fsck.recfs repairs the directory\n",
			prog, a.name, a.index, b.name, b.index, (unsigned long long)a.uid);
}

/* -------------------------------------------------------------------- info */
static int cmd_info(int argc, char **argv)
{
	struct recfs_pack *p;
	struct recfs_pack_info pi;
	char u[37], t[40], b[32];

	if (argc != 2) {
		usage(stderr);
		return 16;
	}
	if (open_pack(argv[1], RECFS_O_DEGRADED, &p))
		return 1;
	recfs_pack_info(p, &pi);
	recfs_uuid_unparse(pi.uuid, u);
	printf("label:          %s\n", pi.label);
	printf("uuid:           %s\n", u);
	printf("created:        %s\n", recfs_fmt_time(pi.created_ns, t, sizeof(t)));
	printf("format:         v%u (compat 0x%llx, incompat 0x%llx)\n", RECFS_DISK_VERSION,
	       (unsigned long long)pi.compat, (unsigned long long)pi.incompat);
	printf("members:        %u (%u present)\n", pi.members, pi.members_present);
	for (unsigned i = 0; i < pi.members; i++) {
		struct recfs_member_info mi;
		recfs_pack_member(p, i, &mi);
		recfs_uuid_unparse(mi.uuid, u);
		printf("  %2u  %-8s %s  %s\n", i,
		       mi.present ? "ok" : mi.damaged ? "DAMAGED" : "MISSING", u,
		       mi.path ? mi.path : "-");
	}
	/* what a degraded open left out, and why */
	const char *lp, *lw;
	for (unsigned i = 0; recfs_pack_left_out(p, i, &lp, &lw, NULL) == 0; i++)
		printf("left out:       %s: %s\n", lp, lw);
	printf("chunk size:     %s\n", recfs_fmt_size(pi.chunk_size, b, sizeof(b)));
	printf("capacity:       %s (%llu bytes)\n", recfs_fmt_size(pi.capacity, b, sizeof(b)),
	       (unsigned long long)pi.capacity);
	printf("used:           %s (%.1f%%)\n", recfs_fmt_size(pi.used, b, sizeof(b)),
	       pi.capacity ? 100.0 * (double)pi.used / (double)pi.capacity : 0.0);
	printf("free:           %s\n", recfs_fmt_size(pi.free, b, sizeof(b)));
	printf("largest free:   %s\n", recfs_fmt_size(pi.largest_free, b, sizeof(b)));
	printf("recordings:     %u (room for %u)\n", pi.recordings, pi.dir_capacity);
	if (pi.bad_entries) {
		printf("warning:        %u damaged directory entries skipped: run fsck.recfs\n",
		       pi.bad_entries);
		fflush(stdout);
		warn_dup_uids(p);
	}
	if (pi.members_present != pi.members)
		printf("warning:        pack is degraded: data on missing or damaged members is unreadable\n");
	recfs_pack_close(p);
	return 0;
}

/* ---------------------------------------------------------------------- ls */
/* names with control characters are printed escaped, like ls -b */
static void print_name(const char *s)
{
	for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
		if (*c < 0x20 || *c == 0x7f || *c == '\\')
			printf("\\%03o", *c);
		else
			putchar(*c);
	}
}

static int cmd_ls(int argc, char **argv)
{
	static const struct option lo[] = {{"long", no_argument, 0, 'l'},
					   {"json", no_argument, 0, 'j'},
					   {0, 0, 0, 0}};
	struct recfs_pack *p;
	struct recfs_rec r;
	bool lng = false, json = false;
	int c, n = 0;

	optind = 1;
	while ((c = getopt_long(argc, argv, "l", lo, NULL)) != -1) {
		if (c == 'l')
			lng = true;
		else if (c == 'j')
			json = true;
		else {
			usage(stderr);
			return 16;
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		return 16;
	}
	if (recfs_spec_check_output(argv[optind], "standard output", "(redirected)", 1))
		return die("%s", recfs_errmsg());
	if (open_pack(argv[optind], 0, &p))
		return 1;
	warn_dup_uids(p);
	if (json)
		printf("[");
	else if (lng)
		printf("%-24s %14s %-9s %-24s %-24s %10s %6s %10s %10s\n", "NAME", "SIZE", "STATE",
		       "START", "END", "MB/s", "FORMAT", "LOST", "DROPPED");
	for (uint32_t i = 0; recfs_rec_next(p, &i, &r) == 0; i++, n++) {
		char t1[40], t2[40];
		recfs_fmt_time(r.start_ns, t1, sizeof(t1));
		recfs_fmt_time(r.end_ns, t2, sizeof(t2));
		if (json) {
			printf("%s\n {", n ? "," : "");
			recfs_json_name(stdout, "name", r.name);
			printf(", \"size\": %llu, \"state\": \"%s\", \"start\": \"%s\", \"end\": \"%s\", "
			       "\"start_ns\": %llu, \"end_ns\": %llu, \"rate_bytes_per_s\": %.0f, "
			       "\"uid\": \"%016llx\", \"format\": \"%s\", \"frame_size\": %u, ",
			       (unsigned long long)r.committed_len, state_name(r.state), t1, t2,
			       (unsigned long long)r.start_ns, (unsigned long long)r.end_ns,
			       rec_rate(&r), (unsigned long long)r.uid, fmt_name(r.input.format),
			       r.input.frame_size);
			recfs_json_name(stdout, "source", r.input.source);
			printf(", \"allocated\": %llu, \"packets\": %llu, \"wrong_size\": %llu, "
			       "\"dropped\": %llu, \"frames_lost\": %llu, \"out_of_order\": %llu, "
			       "\"invalid\": %llu, \"gaps_coalesced\": %s, \"gaps\": [",
			       (unsigned long long)r.alloc_len, (unsigned long long)r.loss.packets,
			       (unsigned long long)r.loss.wrong_size, (unsigned long long)r.loss.dropped,
			       (unsigned long long)r.loss.frames_lost,
			       (unsigned long long)r.loss.out_of_order,
			       (unsigned long long)r.loss.invalid,
			       r.loss.gap_flags & RECFS_GAPS_COALESCED ? "true" : "false");
			for (uint32_t g = 0; g < r.loss.gap_count; g++)
				printf("%s{\"offset\": %llu, \"frames\": %u, \"thread\": %u}", g ? ", " : "",
				       (unsigned long long)r.loss.gaps[g].offset, r.loss.gaps[g].frames,
				       r.loss.gaps[g].thread);
			printf("]}");
		} else if (lng) {
			print_name(r.name);
			printf("%*s %14llu %-9s %-24s %-24s %10.2f %6s %10llu %10llu\n",
			       (int)(strlen(r.name) < 24 ? 24 - strlen(r.name) : 0), "",
			       (unsigned long long)r.committed_len, state_name(r.state), t1, t2,
			       rec_rate(&r) / 1e6, fmt_name(r.input.format),
			       (unsigned long long)r.loss.frames_lost,
			       (unsigned long long)r.loss.dropped);
			for (uint32_t g = 0; g < r.loss.gap_count; g++)
				printf("    gap at byte %llu: %u frames lost (thread %u)\n",
				       (unsigned long long)r.loss.gaps[g].offset, r.loss.gaps[g].frames,
				       r.loss.gaps[g].thread);
			if (r.loss.gap_flags & RECFS_GAPS_COALESCED)
				printf("    (more gaps than fit: nearby gaps merged)\n");
		} else {
			print_name(r.name);
			printf("\n");
		}
	}
	if (json)
		printf("%s]\n", n ? "\n" : "");
	recfs_pack_close(p);
	return 0;
}

/* ---------------------------------------------------------------------- rm */
static int add_victim(uint32_t **v, size_t *n, uint32_t index)
{
	uint32_t *nv = realloc(*v, (*n + 1) * sizeof(**v));

	if (!nv)
		return -ENOMEM;
	nv[(*n)++] = index;
	*v = nv;
	return 0;
}

static int cmd_rm(int argc, char **argv)
{
	static const struct option lo[] = {{"force", no_argument, 0, 'f'}, {0, 0, 0, 0}};
	struct recfs_pack *p;
	struct recfs_rec r;
	bool force = false;
	uint32_t *victims = NULL;
	size_t nv = 0;
	int c, ret = 1;

	optind = 1;
	while ((c = getopt_long(argc, argv, "f", lo, NULL)) != -1) {
		if (c == 'f')
			force = true;
		else {
			usage(stderr);
			return 16;
		}
	}
	if (argc - optind < 2) {
		usage(stderr);
		return 16;
	}
	int err = recfs_pack_open(argv[optind], RECFS_O_RDWR, &p);
	if (err == -EBUSY)
		return die("%s; if recfsd holds it, delete through it: recfs ctl delete=NAME", recfs_errmsg());
	if (err)
		return die("%s", recfs_errmsg());
	/* resolve every argument before deleting anything */
	for (int a = optind + 1; a < argc; a++) {
		const char *pat = argv[a];
		size_t before = nv;
		int found = recfs_rec_lookup(p, pat, &r);
		if (found == 0) {
			if (add_victim(&victims, &nv, r.index))
				goto out_nomem;
		} else if (found == -EUCLEAN) { /* one of two entries with one uid */
			die("%s", recfs_errmsg());
			goto out_close;
		} else {
			for (uint32_t i = 0; recfs_rec_next(p, &i, &r) == 0; i++)
				if (fnmatch(pat, r.name, 0) == 0 && add_victim(&victims, &nv, r.index))
					goto out_nomem;
		}
		if (nv == before) {
			die("no recording matches '%s'", pat);
			goto out_close;
		}
	}
	for (size_t k = 0; k < nv; k++) {
		recfs_rec_get(p, victims[k], &r);
		if (r.state == RECFS_STATE_RECORDING && !force) {
			die("'%s' was never sealed (a crashed recording?): run fsck.recfs to recover it, or rm -f",
			    r.name);
			goto out_close;
		}
	}
	for (size_t k = 0; k < nv; k++) {
		if (recfs_rec_get(p, victims[k], &r))
			continue; /* named twice */
		if (recfs_rec_delete(p, victims[k], force ? RECFS_DEL_FORCE : 0)) {
			die("%s", recfs_errmsg());
			goto out_close;
		}
	}
	ret = 0;
	goto out_close;
out_nomem:
	die("out of memory");
out_close:
	free(victims);
	if (recfs_pack_close(p) && ret == 0)
		ret = die("%s", recfs_errmsg());
	return ret;
}

/* --------------------------------------------------------------------- cat */
static int cmd_cat(int argc, char **argv)
{
	static const struct option lo[] = {{"offset", required_argument, 0, 'o'},
					   {"length", required_argument, 0, 'n'},
					   {"no-verify", no_argument, 0, 'N'},
					   {0, 0, 0, 0}};
	struct recfs_pack *p;
	struct recfs_rec r;
	uint64_t off = 0, len = UINT64_MAX;
	unsigned flags = RECFS_READ_VERIFY;
	int c, ret = 1;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'o':
			if (recfs_parse_bytes("--offset", optarg, 0, UINT64_MAX, &off))
				return die("%s", recfs_errmsg());
			break;
		case 'n':
			if (recfs_parse_bytes("--length", optarg, 0, UINT64_MAX, &len))
				return die("%s", recfs_errmsg());
			break;
		case 'N': flags = 0; break;
		default: usage(stderr); return 16;
		}
	}
	if (argc - optind != 2) {
		usage(stderr);
		return 16;
	}
	if (recfs_spec_check_output(argv[optind], "standard output", "(redirected)", 1))
		return die("%s", recfs_errmsg());
	if (open_pack(argv[optind], 0, &p))
		return 1;
	if (recfs_rec_lookup(p, argv[optind + 1], &r)) {
		die("%s", recfs_errmsg());
		goto out_close;
	}
	if (off > r.committed_len) {
		die("--offset %llu is past the end of '%s' (%llu bytes)", (unsigned long long)off,
		    r.name, (unsigned long long)r.committed_len);
		goto out_close;
	}
	signal(SIGPIPE, SIG_IGN);
	char err[600];
	int e = recfs_cat_copy(p, &r, off, len, flags, 1, err, sizeof(err));
	if (e && e != -EPIPE)
		die("%s", err);
	ret = e && e != -EPIPE;
out_close:
	recfs_pack_close(p);
	return ret;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 16;
	}
	const char *cmd = argv[1];
	if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(cmd, "--version") || !strcmp(cmd, "-V")) {
		printf("recfs %s (format v%u)\n", RECFS_VERSION_STRING, RECFS_DISK_VERSION);
		return 0;
	}
	if (!strcmp(cmd, "info"))
		return cmd_info(argc - 1, argv + 1);
	if (!strcmp(cmd, "ls"))
		return cmd_ls(argc - 1, argv + 1);
	if (!strcmp(cmd, "rm"))
		return cmd_rm(argc - 1, argv + 1);
	if (!strcmp(cmd, "cat"))
		return cmd_cat(argc - 1, argv + 1);
	if (!strcmp(cmd, "ctl"))
		return recfs_ctl_main(argc - 1, argv + 1);
	die("unknown command '%s' (try --help)", cmd);
	return 16;
}
