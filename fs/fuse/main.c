/* SPDX-License-Identifier: MIT */
/*
 * recfs-mount / mount.recfs: mount a recfs pack read-only with FUSE.
 *
 *   recfs-mount [-f] [-d] [-s] [-o OPTIONS] PACK MOUNTPOINT
 *   mount.recfs PACK MOUNTPOINT [-sfnv] [-o OPTIONS]   (mount(8) helper)
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mount.h"

static const char *prog = "recfs-mount";
static bool sloppy; /* mount.recfs -s: unknown options are warned about, not fatal */

static void usage(FILE *out)
{
	fprintf(
	    out,
	    "Usage: %s [-f] [-d] [-s] [-o OPTIONS] PACK MOUNTPOINT\n"
	    "       mount.recfs PACK MOUNTPOINT [-o OPTIONS]   (mount -t recfs PACK DIR)\n"
	    "Mount a recfs pack read-only: every recording is a file at the root.\n"
	    "PACK is a comma-separated list of member devices or files, in any order.\n"
	    "\n"
	    "  -f                stay in the foreground\n"
	    "  -d                debug: foreground, log every FUSE request\n"
	    "  -s                single-threaded request loop\n"
	    "  -o OPTIONS        comma-separated options:\n"
	    "     uid=N gid=N umask=OCT   owner and permission mask of every file (0444 & ~umask)\n"
	    "     noverify        return a chunk whose checksum does not match instead of EIO\n"
	    "     degraded        mount with missing or damaged members; their chunks read as EIO\n"
	    "     direct_io       bypass the page cache (default: page cache, keep_cache on\n"
	    "                     sealed recordings; recordings still growing are direct)\n"
	    "     nokeep_cache    drop cached pages at every open\n"
	    "     readahead_kb=N  the mount's bdi read_ahead_kb (root; default 4096, 0: leave)\n"
	    "     prefetch=N      chunks fetched ahead of a sequential reader (default 2x "
	    "members,\n"
	    "                     at least 4, at most 128 MiB)\n"
	    "     io_threads=N    chunk fetch threads (default 2x members, at least 4)\n"
	    "     cache_mb=N      chunk cache size (default 64)\n"
	    "     threads=N       most FUSE request threads (default 16)\n"
	    "     clone_fd        one /dev/fuse descriptor per request thread\n"
	    "     max_background=N  kernel background (readahead) requests (default 32)\n"
	    "     allow_other, allow_root, default_permissions, fsname=, subtype=, auto_unmount,\n"
	    "     noexec, nosuid, nodev, noatime: passed to FUSE; ro, rw, defaults, auto, noauto,\n"
	    "     user, users, nofail, _netdev, x-*: accepted for fstab and ignored\n"
	    "  -h, --help        this help\n"
	    "  -V, --version     version\n",
	    prog);
}


/* A numeric option into c->o: 1 if name is one (n = 1), -EINVAL on a bad
 * value, 0 if name is not numeric. */
static int numopt(const char *name, const char *v, unsigned long *n, struct rm_ctx *c)
{
	static const struct {
		const char *name;
		unsigned base;
		unsigned long lo, hi;
	} t[] = {
	    {"uid", 10, 0, UINT_MAX},
	    {"gid", 10, 0, UINT_MAX},
	    {"umask", 8, 0, 0777},
	    {"readahead_kb", 10, 0, 1u << 20},
	    {"prefetch", 10, 0, 1024},
	    {"io_threads", 10, 0, 256},
	    {"cache_mb", 10, 1, 1u << 20},
	    {"threads", 10, 1, 1024},
	    {"max_background", 10, 1, 65535},
	};
	uint64_t val;
	for (unsigned i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		if (strcmp(name, t[i].name))
			continue;
		char what[48];
		snprintf(what, sizeof(what), "option %s", name);
		int err;
		if (t[i].base == 8) { /* umask: octal digits, at most 0777 */
			val = 0;
			err = *v && !v[strspn(v, "01234567")] && strlen(v) <= 4 ? 0 : -EINVAL;
			for (const char *q = v; !err && *q; q++)
				val = val * 8 + (uint64_t)(*q - '0');
			if (err || val > t[i].hi)
				err = recfs_seterr(-EINVAL, "%s '%s': not an octal number from 0 to 0777", what, v);
		} else {
			err = recfs_parse_num(what, v, t[i].lo, t[i].hi, &val);
		}
		if (err) {
			fprintf(stderr, "%s: %s\n", prog, recfs_errmsg());
			*n = 0;
			return -EINVAL;
		}
		switch (i) {
		case 0: c->o.uid = (uid_t)val; break;
		case 1: c->o.gid = (gid_t)val; break;
		case 2: c->o.umask = (mode_t)val; break;
		case 3: c->o.readahead_kb = (unsigned)val; break;
		case 4: c->o.prefetch = (unsigned)val; break;
		case 5: c->o.io_threads = (unsigned)val; break;
		case 6: c->o.cache_mb = (unsigned)val; break;
		case 7: c->o.threads = (unsigned)val; break;
		default: c->o.max_background = (unsigned)val; break;
		}
		*n = 1;
		return 1;
	}
	return 0;
}

/* One -o list into c->o and the FUSE option string. */
static int parse_opts(struct rm_ctx *c, char *list, char **fopts, bool *have_fsname)
{
	char *save = NULL;
	for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char *v = strchr(t, '=');
		unsigned long n = 0;
		if (v)
			*v++ = '\0';
		if (v && numopt(t, v, &n, c)) {
			if (n == 1)
				continue;
			return -EINVAL;
		}
		if (!strcmp(t, "noverify"))
			c->o.verify = false;
		else if (!strcmp(t, "verify"))
			c->o.verify = true;
		else if (!strcmp(t, "degraded"))
			c->o.degraded = true;
		else if (!strcmp(t, "direct_io"))
			c->o.direct_io = true;
		else if (!strcmp(t, "nokeep_cache"))
			c->o.keep_cache = false;
		else if (!strcmp(t, "keep_cache"))
			c->o.keep_cache = true;
		else if (!strcmp(t, "clone_fd"))
			c->o.clone_fd = true;
		else if (!strcmp(t, "debug"))
			c->o.debug = c->o.foreground = true;
		else if (!strcmp(t, "allow_other") || !strcmp(t, "allow_root") ||
			 !strcmp(t, "default_permissions") || !strcmp(t, "auto_unmount") ||
			 !strcmp(t, "noexec") || !strcmp(t, "nosuid") || !strcmp(t, "nodev") ||
			 !strcmp(t, "noatime") || !strcmp(t, "exec") || !strcmp(t, "suid") ||
			 !strcmp(t, "dev") || !strcmp(t, "atime") || !strcmp(t, "relatime") ||
			 !strcmp(t, "fsname") || !strcmp(t, "subtype") || !strcmp(t, "max_read")) {
			char *e = NULL;
			if (v && asprintf(&e, "%s=%s", t, v) < 0)
				return -ENOMEM;
			if (!strcmp(t, "fsname"))
				*have_fsname = true;
			/* libfuse escapes the commas of a value */
			if (fuse_opt_add_opt_escaped(fopts, e ? e : t)) {
				free(e);
				return -ENOMEM;
			}
			free(e);
		} else if (!strcmp(t, "ro") || !strcmp(t, "rw") || !strcmp(t, "defaults") ||
			   !strcmp(t, "auto") || !strcmp(t, "noauto") || !strcmp(t, "user") ||
			   !strcmp(t, "nouser") || !strcmp(t, "users") || !strcmp(t, "owner") ||
			   !strcmp(t, "nofail") || !strcmp(t, "_netdev") || !strcmp(t, "async") ||
			   !strcmp(t, "sync") || !strncmp(t, "x-", 2) || !strcmp(t, "comment")) {
			/* fstab/mount(8) options: nothing to do (always read-only) */
		} else if (sloppy) {
			fprintf(stderr, "%s: ignoring unknown option '%s' (-s)\n", prog, t);
		} else {
			fprintf(stderr, "%s: unknown option '%s'\n", prog, t);
			return -EINVAL;
		}
	}
	return 0;
}

static void defaults(struct rm_ctx *c)
{
	c->o.uid = getuid();
	c->o.gid = getgid();
	c->o.umask = 0022;
	c->o.verify = true;
	c->o.keep_cache = true;
	c->o.threads = 16;
	c->o.cache_mb = 64;
	c->o.readahead_kb = 4096;
	c->o.max_background = 32;
	c->o.io_threads = UINT_MAX; /* set from the member count */
	c->o.prefetch = UINT_MAX;
}

/* What main carries from the command line to the FUSE session. */
struct rm_args {
	bool fake;        /* mount.recfs -f: everything but the mount */
	bool have_fsname; /* -o fsname= given */
	char *fopts;      /* options passed to FUSE */
	char *fargv[8];
	struct fuse_args fuse;
};

/* The command line into c and a: 0 to go on, 1 when it is done (help,
 * version), -1 on a refusal (said). */
static int rm_parse_args(int argc, char **argv, struct rm_ctx *c, struct rm_args *a)
{
	const char *base = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
	bool helper = !strncmp(base, "mount.", 6);
	int opt, rc, ret = -1, nol = 0;
	const char **olist;
	static const struct option longopts[] = {
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'},
	    {NULL, 0, NULL, 0},
	};

	olist = calloc((size_t)argc + 1, sizeof(*olist));
	if (!olist)
		return -1;
	if (helper)
		prog = base;
	while ((opt = getopt_long(argc, argv, helper ? "sfnvo:N:hV" : "fdso:hV", longopts, NULL)) !=
	       -1) {
		switch (opt) {
		case 'f':
			if (helper)
				a->fake = true; /* mount(8): do everything but the mount */
			else
				c->o.foreground = true;
			break;
		case 'd': c->o.debug = c->o.foreground = true; break;
		case 's':
			if (helper)
				sloppy = true; /* mount(8): tolerate unknown options */
			else
				c->o.single = true;
			break;
		case 'n':
		case 'v':
		case 'N': break;
		case 'o': /* parsed after the loop: a later -s still counts */
			olist[nol++] = optarg;
			break;
		case 'h':
			usage(stdout);
			ret = 1;
			goto out;
		case 'V':
			printf("%s %s\n", prog, RECFS_VERSION_STRING);
			ret = 1;
			goto out;
		default: usage(stderr); goto out;
		}
	}
	for (int i = 0; i < nol; i++) {
		char *dup = strdup(olist[i]);
		if (!dup)
			goto out;
		rc = parse_opts(c, dup, &a->fopts, &a->have_fsname);
		free(dup);
		if (rc)
			goto out;
	}
	if (argc - optind != 2) {
		usage(stderr);
		goto out;
	}
	c->spec = argv[optind];
	c->mountpoint = realpath(argv[optind + 1], NULL);
	if (!c->mountpoint) {
		fprintf(stderr, "%s: mount point %s: %s\n", prog, argv[optind + 1],
			strerror(errno));
		goto out;
	}
	struct stat st;
	if (stat(c->mountpoint, &st) || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "%s: mount point %s: not a directory\n", prog, c->mountpoint);
		goto out;
	}
	ret = 0;
out:
	free(olist);
	return ret;
}

/* degraded: name what is left out, and why (before going to the background) */
static void rm_say_left_out(struct rm_ctx *c, const struct recfs_pack_info *pi)
{
	const char *lp, *lw;
	int lm;

	for (unsigned i = 0; i < pi->members; i++) {
		struct recfs_member_info mi;
		char u[37];
		if (recfs_pack_member(c->p, i, &mi) || mi.present || mi.damaged)
			continue;
		recfs_uuid_unparse(mi.uuid, u);
		fprintf(stderr, "%s: degraded: member %u (UUID %s) is missing\n", prog, i, u);
	}
	for (unsigned i = 0; recfs_pack_left_out(c->p, i, &lp, &lw, &lm) == 0; i++) {
		char m[32] = "";
		if (lm >= 0)
			snprintf(m, sizeof(m), " (member %d)", lm);
		fprintf(stderr, "%s: degraded: %s%s left out: %s\n", prog, lp, m, lw);
	}
}

/* Open the pack and size what depends on it; 0, or -1 (said, the pack
 * closed). */
static int rm_open_pack(struct rm_ctx *c)
{
	struct recfs_pack_info pi;
	int rc = recfs_pack_open(c->spec, c->o.degraded ? RECFS_O_DEGRADED : 0, &c->p);

	if (rc < 0) {
		fprintf(stderr, "%s: %s\n", prog, recfs_errmsg());
		return -1;
	}
	c->g = recfs_pack_geom(c->p);
	rc = recfs_pack_info(c->p, &pi);
	if (rc < 0) {
		fprintf(stderr, "%s: %s\n", prog, recfs_errmsg());
		recfs_pack_close(c->p);
		return -1;
	}
	rm_say_left_out(c, &pi);
	c->created_ns = pi.created_ns;
	c->reloaded_ns = rm_now();
	c->dir_capacity = pi.dir_capacity;
	if (c->o.prefetch == UINT_MAX) {
		/* at most 128 MiB in flight ahead of a reader (2 chunks of 64 MiB) */
		uint64_t cap = (128ull << 20) / c->g->chunk_size;
		c->o.prefetch = 2 * c->g->members;
		if (c->o.prefetch < 4)
			c->o.prefetch = 4;
		if (c->o.prefetch > cap)
			c->o.prefetch = cap > 1 ? (unsigned)cap : 1;
	}
	if (c->o.io_threads == UINT_MAX)
		c->o.io_threads = 2 * c->g->members < 4 ? 4 : 2 * c->g->members;
	return 0;
}

/* A FUSE session mounted on c->mountpoint with its signal handlers; 0, or
 * -1 with what was set up undone (but a->fuse, which main frees). */
static int rm_session_start(struct rm_ctx *c, struct rm_args *a)
{
	int fargc = 0;

	if (!a->have_fsname) {
		char *e = NULL;
		if (asprintf(&e, "fsname=%s", c->spec) < 0 || fuse_opt_add_opt_escaped(&a->fopts, e)) {
			free(e);
			return -1;
		}
		free(e);
	}
	if (fuse_opt_add_opt(&a->fopts, "ro") || fuse_opt_add_opt(&a->fopts, "subtype=recfs") ||
	    fuse_opt_add_opt(&a->fopts, "default_permissions"))
		return -1;
	a->fargv[fargc++] = (char *)prog;
	a->fargv[fargc++] = "-o";
	a->fargv[fargc++] = a->fopts;
	if (c->o.debug)
		a->fargv[fargc++] = "-d";
	a->fargv[fargc] = NULL;
	a->fuse = (struct fuse_args)FUSE_ARGS_INIT(fargc, a->fargv);

	c->se = fuse_session_new(&a->fuse, &rm_ops, sizeof(rm_ops), c);
	if (!c->se) {
		fprintf(stderr, "%s: cannot start a FUSE session\n", prog);
		return -1;
	}
	if (fuse_set_signal_handlers(c->se)) {
		fprintf(stderr, "%s: cannot set signal handlers\n", prog);
		goto out_destroy;
	}
	if (fuse_session_mount(c->se, c->mountpoint)) {
		fprintf(stderr, "%s: cannot mount on %s\n", prog, c->mountpoint);
		goto out_signals;
	}
	return 0;
out_signals:
	fuse_remove_signal_handlers(c->se);
out_destroy:
	fuse_session_destroy(c->se);
	return -1;
}

/* Serve the mount until it is unmounted or signalled: the exit status. */
static int rm_serve(struct rm_ctx *c)
{
	struct fuse_loop_config *lc;
	struct recfs_rec a, b;
	int rc;

	rm_log_init(c->o.foreground);
	for (uint32_t i = 0; recfs_pack_dup_uid(c->p, &i, &a, &b) == 0; i++)
		rm_log("recordings '%s' (entry %u) and '%s' (entry %u) have the same uid "
		       "%016llx: both are hidden until fsck.recfs repairs the directory",
		       a.name, a.index, b.name, b.index, (unsigned long long)a.uid);
	if (fuse_daemonize(c->o.foreground)) {
		fprintf(stderr, "%s: cannot go to the background\n", prog);
		return 1;
	}
	/* threads only now: fuse_daemonize forks */
	rc = rm_cache_new(c);
	if (rc < 0) {
		rm_log("cannot start the chunk cache: %s", strerror(-rc));
		goto out_cache;
	}
	if (c->o.single) {
		rc = fuse_session_loop(c->se);
	} else {
		lc = fuse_loop_cfg_create();
		if (!lc) {
			rc = -1;
			goto out_cache;
		}
		fuse_loop_cfg_set_clone_fd(lc, c->o.clone_fd);
		fuse_loop_cfg_set_max_threads(lc, c->o.threads);
		fuse_loop_cfg_set_idle_threads(lc, c->o.threads / 2 ? c->o.threads / 2 : 1);
		rc = fuse_session_loop_mt(c->se, lc);
		fuse_loop_cfg_destroy(lc);
	}
out_cache:
	rm_cache_free(c);
	return rc < 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct rm_ctx c;
	struct rm_args a;
	int ret = 1, err;

	memset(&c, 0, sizeof(c));
	memset(&a, 0, sizeof(a));
	pthread_mutex_init(&c.meta, NULL);
	defaults(&c);
	err = rm_parse_args(argc, argv, &c, &a);
	if (err) {
		ret = err > 0 ? 0 : 1;
		goto out;
	}
	if (rm_open_pack(&c))
		goto out;
	if (a.fake) {
		ret = 0;
		goto out_close_pack;
	}
	c.nodes = calloc(c.dir_capacity ? c.dir_capacity : 1, sizeof(*c.nodes));
	c.m_failed = calloc(c.g->members, sizeof(*c.m_failed));
	if (!c.nodes || !c.m_failed) {
		fprintf(stderr, "%s: out of memory\n", prog);
		goto out_close_pack;
	}
	if (rm_session_start(&c, &a))
		goto out_free_nodes;
	ret = rm_serve(&c);
	fuse_session_unmount(c.se);
	fuse_remove_signal_handlers(c.se);
	fuse_session_destroy(c.se);
out_free_nodes:
	fuse_opt_free_args(&a.fuse);
	rm_nodes_free(&c);
out_close_pack:
	free(c.m_failed);
	recfs_pack_close(c.p);
out:
	free(a.fopts);
	free(c.mountpoint);
	return ret;
}
