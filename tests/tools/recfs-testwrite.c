/* SPDX-License-Identifier: MIT */
/*
 * recfs-testwrite: a test-only writer that stores a file's bytes as a
 * recording through librecfs's appender (no recorder needed).
 *
 *   recfs-testwrite [OPTIONS] PACK NAME FILE|-     one recording
 *   recfs-testwrite --many N [--bytes B] PACK PREFIX   N small sealed recordings
 *
 * Options:
 *   --open            leave the recording in state RECORDING (synced, not sealed)
 *   --sync-every B    commit after every B bytes (default: once at the end)
 *   --pace-ms MS      sleep MS after every commit (a slow live writer)
 *   --size-hint B     extent to allocate (default: the file's size, or largest free)
 *   --source S, --vdif FRAMESIZE, --packets N, --dropped N, --frames-lost N,
 *   --gap OFF:FRAMES:THREAD (repeatable)   metadata stored in the entry
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "recfs/recfs.h"

static const char *prog = "recfs-testwrite";

static void die(const char *what)
{
	fprintf(stderr, "%s: %s: %s\n", prog, what, recfs_errmsg());
	exit(1);
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static uint64_t num(const char *s)
{
	uint64_t v;
	if (recfs_parse_size(s, &v)) {
		fprintf(stderr, "%s: bad number '%s'\n", prog, s);
		exit(2);
	}
	return v;
}

static int many(struct recfs_pack *p, const char *prefix, uint64_t count, uint64_t bytes)
{
	uint8_t *buf = malloc(bytes ? bytes : 1);
	if (!buf)
		return 1;
	for (uint64_t i = 0; i < count; i++) {
		struct recfs_input in = {.format = RECFS_FMT_RAW};
		struct recfs_rec r;
		struct recfs_appender *a;
		char name[RECFS_NAME_MAX + 1];
		snprintf(name, sizeof(name), "%s%06" PRIu64, prefix, i);
		for (uint64_t j = 0; j < bytes; j++)
			buf[j] = (uint8_t)(i + j);
		if (recfs_rec_create(p, name, &in, bytes ? bytes : 1, &r))
			die(name);
		if (recfs_appender_new(p, &r, &a))
			die(name);
		if (bytes && recfs_append(a, buf, bytes))
			die(name);
		if (recfs_append_seal(a))
			die(name);
		recfs_appender_free(a);
	}
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
	    {"open", no_argument, NULL, 'o'},
	    {"sync-every", required_argument, NULL, 's'},
	    {"pace-ms", required_argument, NULL, 'p'},
	    {"size-hint", required_argument, NULL, 'z'},
	    {"source", required_argument, NULL, 'S'},
	    {"vdif", required_argument, NULL, 'v'},
	    {"packets", required_argument, NULL, 'P'},
	    {"dropped", required_argument, NULL, 'D'},
	    {"frames-lost", required_argument, NULL, 'F'},
	    {"gap", required_argument, NULL, 'g'},
	    {"many", required_argument, NULL, 'm'},
	    {"bytes", required_argument, NULL, 'b'},
	    {NULL, 0, NULL, 0},
	};
	struct recfs_input in = {.format = RECFS_FMT_RAW};
	struct recfs_loss loss;
	bool open_end = false, have_hint = false;
	uint64_t sync_every = 0, hint = 0, nmany = 0, bytes = 4096;
	unsigned pace = 0;
	int c;

	memset(&loss, 0, sizeof(loss));
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'o': open_end = true; break;
		case 's': sync_every = num(optarg); break;
		case 'p': pace = (unsigned)num(optarg); break;
		case 'z':
			hint = num(optarg);
			have_hint = true;
			break;
		case 'S': snprintf(in.source, sizeof(in.source), "%s", optarg); break;
		case 'v':
			in.format = RECFS_FMT_VDIF;
			in.frame_size = (uint32_t)num(optarg);
			break;
		case 'P': loss.packets = num(optarg); break;
		case 'D': loss.dropped = num(optarg); break;
		case 'F': loss.frames_lost = num(optarg); break;
		case 'g': {
			unsigned long long o;
			unsigned f, t;
			if (sscanf(optarg, "%llu:%u:%u", &o, &f, &t) != 3) {
				fprintf(stderr, "%s: bad gap '%s'\n", prog, optarg);
				return 2;
			}
			recfs_loss_add_gap(&loss, o, f, (uint16_t)t);
			break;
		}
		case 'm': nmany = num(optarg); break;
		case 'b': bytes = num(optarg); break;
		default:
			fprintf(stderr,
				"usage: %s [OPTIONS] PACK NAME FILE|- | --many N PACK PREFIX\n",
				prog);
			return 2;
		}
	}
	if (nmany) {
		struct recfs_pack *p;
		if (argc - optind != 2) {
			fprintf(stderr, "%s: --many needs PACK PREFIX\n", prog);
			return 2;
		}
		if (recfs_pack_open(argv[optind], RECFS_O_RDWR, &p))
			die(argv[optind]);
		int rc = many(p, argv[optind + 1], nmany, bytes);
		if (recfs_pack_close(p))
			die("close");
		return rc;
	}
	if (argc - optind != 3) {
		fprintf(stderr, "usage: %s [OPTIONS] PACK NAME FILE|-\n", prog);
		return 2;
	}
	const char *spec = argv[optind], *name = argv[optind + 1], *file = argv[optind + 2];
	FILE *src = strcmp(file, "-") ? fopen(file, "rb") : stdin;
	struct recfs_pack *p;
	struct recfs_rec r;
	struct recfs_appender *a;
	uint64_t since = 0;
	size_t bufsz = 1 << 20, n;
	char *buf = malloc(bufsz);

	if (!src) {
		fprintf(stderr, "%s: %s: %s\n", prog, file, strerror(errno));
		return 1;
	}
	if (!have_hint && src != stdin) {
		struct stat st;
		if (fstat(fileno(src), &st) == 0 && st.st_size > 0)
			hint = (uint64_t)st.st_size;
	}
	if (recfs_pack_open(spec, RECFS_O_RDWR, &p))
		die(spec);
	if (recfs_rec_create(p, name, &in, hint, &r))
		die(name);
	if (recfs_appender_new(p, &r, &a))
		die(name);
	while ((n = fread(buf, 1, sync_every && sync_every < bufsz ? sync_every : bufsz, src)) >
	       0) {
		if (recfs_append(a, buf, n))
			die(name);
		since += n;
		if (sync_every && since >= sync_every) {
			if (recfs_append_sync(a))
				die(name);
			since = 0;
			if (pace)
				sleep_ms(pace);
		}
	}
	if (ferror(src)) {
		fprintf(stderr, "%s: %s: read error\n", prog, file);
		return 1;
	}
	r.loss = loss;
	r.loss.gap_count = loss.gap_count;
	if (open_end) {
		if (recfs_append_sync(a))
			die(name);
	} else if (recfs_append_seal(a)) {
		die(name);
	}
	recfs_appender_free(a);
	if (recfs_pack_close(p))
		die("close");
	if (src != stdin)
		fclose(src);
	free(buf);
	return 0;
}
