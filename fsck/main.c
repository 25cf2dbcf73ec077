/* SPDX-License-Identifier: MIT */
/* fsck.recfs: a thin front end to recfs_check() (fs/lib/check.c). */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "recfs/check.h"
#include "recfs/recfs.h"

struct fsck_ui {
	FILE *prog;               /* progress bar stream, NULL: none */
	bool all_yes;
	struct timespec t0;
	double last;
};

static volatile sig_atomic_t fsck_interrupted;

static void fsck_usage(FILE *f)
{
	fprintf(f,
		"Usage: fsck.recfs [-n | -y | -p | -a] [-f] [-v] [--verify] [--progress] PACK [MEMBER...]\n"
		"Check and repair a recfs pack; recover recordings cut short by a crash.\n"
		"PACK is a comma-separated member list (any order); members may also be\n"
		"given as separate arguments (as fsck -t recfs does).\n"
		"  -n            check only: open read-only, answer no, never write\n"
		"  -y            repair every problem that can be repaired\n"
		"  -p, -a        repair what is safe without asking; stop at anything else\n"
		"  -f            force a full check (every check is full; accepted for fsck)\n"
		"  -v            verbose: print each pass\n"
		"      --verify  read every committed chunk and check it against its checksum\n"
		"      --progress, -C [FD]  progress bar for --verify (stderr, or FD)\n"
		"  -r            accepted for fsck(8) compatibility\n"
		"  -h, --help    this help;  -V, --version  the version\n"
		"Exit status: 0 clean, 1 errors corrected, 4 errors left, 8 operational error,\n"
		"16 usage error, 32 cancelled (sums as in fsck(8)).\n");
}

static void fsck_out(void *ctx, const char *line)
{
	(void)ctx;
	printf("%s\n", line);
	fflush(stdout);
}

static int fsck_ask(void *ctx, const char *question)
{
	struct fsck_ui *ui = ctx;
	char line[64];

	if (ui->all_yes) {
		printf("  %s? yes\n", question);
		return RECFS_ASK_YES;
	}
	for (;;) {
		printf("  %s? [y]es/[n]o/[a]ll/[q]uit ", question);
		fflush(stdout);
		if (fsck_interrupted || !fgets(line, sizeof(line), stdin))
			return RECFS_ASK_CANCEL;
		switch (line[0]) {
		case 'y': case 'Y': return RECFS_ASK_YES;
		case 'n': case 'N': return RECFS_ASK_NO;
		case 'a': case 'A': ui->all_yes = true; return RECFS_ASK_YES;
		case 'q': case 'Q': return RECFS_ASK_CANCEL;
		default: break;
		}
	}
}

static double fsck_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void fsck_progress(void *ctx, uint64_t done, uint64_t total)
{
	struct fsck_ui *ui = ctx;
	char a[32], b[32], r[32];
	double t = fsck_now() - ((double)ui->t0.tv_sec + (double)ui->t0.tv_nsec / 1e9);
	double frac = total ? (double)done / (double)total : 1.0;
	double rate = t > 0 ? (double)done / t : 0;
	int width = 30, fill = (int)(frac * width + 0.5);
	unsigned eta = rate > 0 ? (unsigned)((double)(total - done) / rate) : 0;

	if (!ui->prog)
		return;
	fprintf(ui->prog, "\rverify [%.*s%.*s] %5.1f%% %s/%s %s/s ETA %u:%02u ", fill,
		"##############################", width - fill, "..............................",
		frac * 100.0, recfs_fmt_size(done, a, sizeof(a)), recfs_fmt_size(total, b, sizeof(b)),
		recfs_fmt_size((uint64_t)rate, r, sizeof(r)), eta / 60, eta % 60);
	if (done >= total)
		fputc('\n', ui->prog);
	fflush(ui->prog);
}

/* Does a writer hold the member (flock on files, O_EXCL on devices)? */
static bool fsck_in_use(const struct recfs_dev *d)
{
	int fd;

	if (d->fd < 0)
		return false;
	if (!d->blkdev) {
		if (flock(d->fd, LOCK_SH | LOCK_NB) < 0)
			return errno == EWOULDBLOCK;
		flock(d->fd, LOCK_UN);
		return false;
	}
	fd = open(d->path, O_RDONLY | O_EXCL | O_CLOEXEC);
	if (fd < 0)
		return errno == EBUSY;
	close(fd);
	return false;
}

static void fsck_on_signal(int sig)
{
	(void)sig;
	fsck_interrupted = 1;
}

static bool fsck_cancel(void *ctx)
{
	(void)ctx;
	return fsck_interrupted != 0;
}

#define FSCK_GO_ON (-1)

/* What the command line asks for besides o. */
struct fsck_args {
	char **members; /* the PACK and MEMBER arguments */
	int nmembers;
	int progress_fd; /* -1: no progress bar */
};

/* -C FD with a space too (getopt's optional argument takes only -CFD): a
 * number after -C that is not a file is the descriptor; argv is rewritten,
 * the new count returned */
static int fsck_join_c_fd(int argc, char **argv)
{
	static char cfd[16];

	for (int a = 1; a + 1 < argc && strcmp(argv[a], "--"); a++) {
		struct stat sc;
		if (strcmp(argv[a], "-C") || !argv[a + 1][0] ||
		    strspn(argv[a + 1], "0123456789") != strlen(argv[a + 1]) || stat(argv[a + 1], &sc) == 0)
			continue;
		snprintf(cfd, sizeof(cfd), "-C%.10s", argv[a + 1]);
		argv[a] = cfd;
		memmove(&argv[a + 1], &argv[a + 2], (size_t)(argc - a - 1) * sizeof(*argv));
		argc--;
	}
	return argc;
}

/* The command line into o and fa: FSCK_GO_ON, else the exit status (help,
 * version, a refusal: said). */
static int fsck_parse_args(int argc, char **argv, struct recfs_check_opts *o, struct fsck_args *fa)
{
	static const struct option lopts[] = {
		{ "verify", no_argument, NULL, 'K' },
		{ "progress", no_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned nmodes = 0;
	bool interactive = true;
	int ch;

	o->mode = RECFS_CHECK_ASK;
	fa->progress_fd = -1;
	argc = fsck_join_c_fd(argc, argv);
	while ((ch = getopt_long(argc, argv, "nypafvrC::hVt:", lopts, NULL)) != -1) {
		switch (ch) {
		case 'n': o->mode = RECFS_CHECK_NO; nmodes++; interactive = false; break;
		case 'y': o->mode = RECFS_CHECK_YES; nmodes++; interactive = false; break;
		case 'p':
		case 'a': o->mode = RECFS_CHECK_PREEN; nmodes++; interactive = false; break;
		case 'f': case 'r': case 't': break;
		case 'v': o->verbose = true; break;
		case 'K': o->verify = true; break;
		case 'P': fa->progress_fd = 2; break;
		case 'C':
			if (optarg) {
				uint64_t fd;
				if (recfs_parse_num("-C", optarg, 0, INT_MAX, &fd)) {
					fprintf(stderr, "fsck.recfs: %s\n", recfs_errmsg());
					return RECFS_FSCK_USAGE;
				}
				fa->progress_fd = fd ? (int)fd : 1;
			} else {
				fa->progress_fd = 2;
			}
			break;
		case 'h': fsck_usage(stdout); return 0;
		case 'V': printf("fsck.recfs (recfs) %s\n", RECFS_VERSION_STRING); return 0;
		default: fsck_usage(stderr); return RECFS_FSCK_USAGE;
		}
	}
	if (nmodes > 1) {
		fprintf(stderr, "fsck.recfs: only one of -n, -y, -p/-a may be given\n");
		return RECFS_FSCK_USAGE;
	}
	if (optind >= argc) {
		fsck_usage(stderr);
		return RECFS_FSCK_USAGE;
	}
	if (interactive && !isatty(STDIN_FILENO)) {
		fprintf(stderr,
			"fsck.recfs: need a terminal for interactive repairs: give -n, -y or -p\n");
		return RECFS_FSCK_ERROR;
	}
	fa->members = argv + optind;
	fa->nmembers = argc - optind;
	/* the progress descriptor and the report must not be a member */
	char fdname[32];
	snprintf(fdname, sizeof(fdname), "(descriptor %d)", fa->progress_fd);
	for (int a = 0; a < fa->nmembers; a++) {
		if ((fa->progress_fd > 2 &&
		     recfs_spec_check_output(fa->members[a], "-C", fdname, fa->progress_fd)) ||
		    recfs_spec_check_output(fa->members[a], "standard output", "(redirected)", 1)) {
			fprintf(stderr, "fsck.recfs: %s\n", recfs_errmsg());
			return RECFS_FSCK_USAGE;
		}
	}
	return FSCK_GO_ON;
}

/* Open member path, or take the same member opened before (one device,
 * reported by the check): FSCK_GO_ON, else the exit status (said). */
static int fsck_open_one(const char *path, unsigned fl, struct recfs_dev **devs, unsigned *nd,
			 unsigned max)
{
	if (*nd == max) {
		fprintf(stderr, "fsck.recfs: too many members\n");
		return RECFS_FSCK_USAGE;
	}
	struct stat sa;
	int same = -1;
	if (stat(path, &sa) == 0)
		for (unsigned j = 0; j < *nd && same < 0; j++) {
			struct stat sb;
			if (stat(devs[j]->path, &sb) == 0 && sa.st_dev == sb.st_dev &&
			    sa.st_ino == sb.st_ino)
				same = (int)j;
		}
	if (same >= 0) {
		devs[(*nd)++] = devs[same];
		return FSCK_GO_ON;
	}
	if (recfs_dev_open(path, fl, &devs[*nd])) {
		fprintf(stderr, "fsck.recfs: %s\n", recfs_errmsg());
		return RECFS_FSCK_ERROR;
	}
	(*nd)++;
	return FSCK_GO_ON;
}

/* members: comma lists and separate arguments alike.  FSCK_GO_ON, else the
 * exit status (said); *nd devices open either way (some twice). */
static int fsck_open_members(const struct fsck_args *fa, const struct recfs_check_opts *o,
			     struct recfs_dev **devs, unsigned *nd, unsigned max)
{
	unsigned fl = o->mode == RECFS_CHECK_NO ? 0 : RECFS_DEV_WRITE | RECFS_DEV_EXCL;

	for (int a = 0; a < fa->nmembers; a++) {
		char **paths;
		unsigned n;
		int ret = FSCK_GO_ON;
		if (recfs_spec_split(fa->members[a], &paths, &n)) {
			fprintf(stderr, "fsck.recfs: %s\n", recfs_errmsg());
			return RECFS_FSCK_USAGE;
		}
		for (unsigned i = 0; i < n && ret == FSCK_GO_ON; i++)
			ret = fsck_open_one(paths[i], fl, devs, nd, max);
		recfs_spec_free(paths, n);
		if (ret != FSCK_GO_ON)
			return ret;
	}
	return FSCK_GO_ON;
}

int main(int argc, char **argv)
{
	struct recfs_check_opts o = {0};
	struct recfs_check_stats st;
	struct recfs_dev *devs[RECFS_MAX_MEMBERS * 2];
	struct fsck_ui ui = {0};
	struct fsck_args fa;
	unsigned nd = 0;
	int ret = fsck_parse_args(argc, argv, &o, &fa);

	if (ret != FSCK_GO_ON)
		return ret;
	ret = fsck_open_members(&fa, &o, devs, &nd, sizeof(devs) / sizeof(devs[0]));
	if (ret != FSCK_GO_ON)
		goto out_close;
	/* -n beside a writer: its recordings in progress are not crashed */
	if (o.mode == RECFS_CHECK_NO)
		for (unsigned i = 0; i < nd && !o.live; i++)
			o.live = fsck_in_use(devs[i]);
	if (o.live)
		fprintf(stderr, "fsck.recfs: the pack is in use by a writer: checking read-only, "
				"recordings in progress are not final\n");
	if (fa.progress_fd >= 0 && o.verify) {
		ui.prog = fa.progress_fd == 2 ? stderr
			: fa.progress_fd == 1 ? stdout : fdopen(fa.progress_fd, "w");
		o.progress = fsck_progress;
	}
	signal(SIGINT, fsck_on_signal);
	clock_gettime(CLOCK_MONOTONIC, &ui.t0);
	o.out = fsck_out;
	o.ask = fsck_ask;
	o.cancel = fsck_cancel;
	o.ctx = &ui;
	ret = recfs_check(devs, nd, &o, &st);
	if (fsck_interrupted)
		ret |= RECFS_FSCK_CANCELLED;

out_close:
	for (unsigned i = 0; i < nd; i++) {
		bool shared = false;
		for (unsigned j = 0; j < i; j++)
			shared |= devs[j] == devs[i];
		if (!shared)
			recfs_dev_close(devs[i]);
	}
	return ret;
}
