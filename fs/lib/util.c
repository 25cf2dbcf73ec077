/* SPDX-License-Identifier: MIT */
/* Errors, aligned buffers, sizes, times, PACK specs. */
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <stdio.h>
#include <time.h>
#include <uuid/uuid.h>

#include "internal.h"

static _Thread_local char errmsg[512];

const char *recfs_errmsg(void)
{
	return errmsg;
}

/* Formatted into a copy first: a message may quote the one it replaces
 * (recfs_seterr(err, "deleting '%s': %s", name, recfs_errmsg())). */
int recfs_seterr(int err, const char *fmt, ...)
{
	char tmp[sizeof(errmsg)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	memcpy(errmsg, tmp, sizeof(errmsg));
	return err;
}

void *recfs_alloc_raw(size_t len)
{
	void *p = NULL;

	if (len == 0)
		len = RECFS_BLOCK;
	if (posix_memalign(&p, RECFS_BLOCK, RECFS_ALIGN_UP(len, RECFS_BLOCK)))
		return NULL;
	return p;
}

void *recfs_alloc(size_t len)
{
	void *p = recfs_alloc_raw(len);

	if (p)
		memset(p, 0, RECFS_ALIGN_UP(len ? len : RECFS_BLOCK, RECFS_BLOCK));
	return p;
}

void recfs_free(void *p)
{
	free(p);
}

uint64_t recfs_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------------ numbers */
/*
 * One parser for every number a person or a control line gives a tool:
 * plain decimal digits, nothing before or after them (no sign, space, 0x,
 * exponent, NaN or infinity), no overflow; a size may end in K, M, G or T
 * (powers of 1024, then an optional "i" and "B"); seconds may have up to
 * nine decimals.  Each failure is one line naming what was given.
 */
static int num_digits(const char *s, const char **end, uint64_t *v)
{
	uint64_t x = 0;
	const char *p = s;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (x > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
			return -ERANGE;
		x = x * 10 + (uint64_t)(*p - '0');
	}
	*end = p;
	*v = x;
	return p == s ? -EINVAL : 0;
}

static void num_secs_str(uint64_t ns, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%llu.%09llu", (unsigned long long)(ns / 1000000000ull),
			 (unsigned long long)(ns % 1000000000ull));
	while (n > 0 && buf[n - 1] == '0')
		buf[--n] = 0;
	if (n > 0 && buf[n - 1] == '.')
		buf[--n] = 0;
}

static int num_refuse(int err, const char *what, const char *s, const char *why, const char *lo,
		      const char *hi, const char *unit)
{
	return recfs_seterr(err, "%s '%.40s'%s: %s; want %s to %s%s", what, s ? s : "",
			    s && strlen(s) > 40 ? "..." : "", why, lo, hi, unit);
}

/* a byte count the way a size option takes it: 64K, 1G, 1000 */
static void num_bytes_str(uint64_t v, char *buf, size_t len)
{
	static const char sfx[] = "KMGT";
	int k = -1;
	while (k < 3 && v && v % 1024 == 0) {
		v /= 1024;
		k++;
	}
	snprintf(buf, len, "%llu%.*s", (unsigned long long)v, k >= 0, k >= 0 ? &sfx[k] : "");
}

enum num_kind { NUM_PLAIN, NUM_BYTES, NUM_SECS };

static int num_range(const char *what, const char *s, int err, uint64_t v, uint64_t lo, uint64_t hi,
		     enum num_kind kind)
{
	char a[32], b[32];
	if (kind == NUM_SECS) {
		num_secs_str(lo, a, sizeof(a));
		num_secs_str(hi, b, sizeof(b));
	} else if (kind == NUM_BYTES) {
		num_bytes_str(lo, a, sizeof(a));
		num_bytes_str(hi, b, sizeof(b));
	} else {
		snprintf(a, sizeof(a), "%llu", (unsigned long long)lo);
		snprintf(b, sizeof(b), "%llu", (unsigned long long)hi);
	}
	bool secs = kind == NUM_SECS;
	const char *unit = secs ? " seconds" : "";
	if (err == -ERANGE)
		return num_refuse(-ERANGE, what, s, "too large", a, b, unit);
	if (err)
		return num_refuse(-EINVAL, what, s, "not a number", a, b, unit);
	if (v < lo || v > hi)
		return num_refuse(-ERANGE, what, s, v < lo ? "too small" : "too large", a, b, unit);
	return 0;
}

int recfs_parse_num(const char *what, const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
	const char *end = s;
	uint64_t v = 0;
	int err = s ? num_digits(s, &end, &v) : -EINVAL;
	if (!err && *end)
		err = -EINVAL;
	if ((err = num_range(what, s, err, v, lo, hi, NUM_PLAIN)))
		return err;
	*out = v;
	return 0;
}

int recfs_parse_bytes(const char *what, const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
	const char *end = s;
	uint64_t v = 0, mul = 1;
	int err = s ? num_digits(s, &end, &v) : -EINVAL;
	if (!err && *end) {
		switch (*end) {
		case 'k': case 'K': mul = 1ull << 10; break;
		case 'm': case 'M': mul = 1ull << 20; break;
		case 'g': case 'G': mul = 1ull << 30; break;
		case 't': case 'T': mul = 1ull << 40; break;
		default: err = -EINVAL; break;
		}
		if (!err) {
			end++;
			if (*end == 'i')
				end++;
			if (*end == 'B' || *end == 'b')
				end++;
			if (*end)
				err = -EINVAL;
			else if (v > UINT64_MAX / mul)
				err = -ERANGE;
		}
	}
	if ((err = num_range(what, s, err, err ? 0 : v * mul, lo, hi, NUM_BYTES)))
		return err;
	*out = v * mul;
	return 0;
}

int recfs_parse_secs(const char *what, const char *s, uint64_t lo_ns, uint64_t hi_ns, uint64_t *ns)
{
	const char *end = s;
	uint64_t whole = 0, frac = 0;
	int err = s ? num_digits(s, &end, &whole) : -EINVAL;
	if (!err && *end == '.') {
		const char *f = end + 1;
		unsigned k = 0;
		for (end = f; *end >= '0' && *end <= '9'; end++, k++)
			if (k < 9)
				frac = frac * 10 + (uint64_t)(*end - '0');
			else if (*end != '0')
				err = -EINVAL; /* finer than a nanosecond */
		if (end == f)
			err = -EINVAL;
		for (; k < 9; k++)
			frac *= 10;
	}
	if (!err && *end)
		err = -EINVAL;
	if (!err && whole > (UINT64_MAX - frac) / 1000000000ull)
		err = -ERANGE;
	uint64_t v = err ? 0 : whole * 1000000000ull + frac;
	if ((err = num_range(what, s, err, v, lo_ns, hi_ns, NUM_SECS)))
		return err;
	*ns = v;
	return 0;
}

int recfs_parse_size(const char *s, uint64_t *out)
{
	return recfs_parse_bytes("size", s, 0, UINT64_MAX, out);
}

const char *recfs_fmt_size(uint64_t b, char *buf, size_t len)
{
	static const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
	double v = (double)b;
	int u = 0;

	while (v >= 1024 && u < 6) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%llu B", (unsigned long long)b);
	else
		snprintf(buf, len, "%.2f %s", v, unit[u]);
	return buf;
}

const char *recfs_fmt_time(uint64_t ns, char *buf, size_t len)
{
	time_t t = (time_t)(ns / 1000000000ull);
	struct tm tm;

	if (ns == 0) {
		snprintf(buf, len, "-");
		return buf;
	}
	gmtime_r(&t, &tm);
	snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03uZ", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		 (unsigned)((ns % 1000000000ull) / 1000000ull));
	return buf;
}

void recfs_uuid_unparse(const uint8_t uuid[16], char out[37])
{
	uuid_unparse_lower(uuid, out);
}

int recfs_spec_split(const char *spec, char ***paths, unsigned *n)
{
	char **v = NULL;
	unsigned cnt = 0;
	const char *s = spec, *c;

	if (!spec || !*spec)
		return recfs_seterr(-EINVAL, "empty pack: give member paths separated by commas");
	for (;;) {
		c = strchr(s, ',');
		size_t l = c ? (size_t)(c - s) : strlen(s);
		if (l == 0) {
			recfs_spec_free(v, cnt);
			return recfs_seterr(-EINVAL, "pack '%s': empty member path", spec);
		}
		if (cnt == RECFS_MAX_MEMBERS) {
			recfs_spec_free(v, cnt);
			return recfs_seterr(-E2BIG, "pack '%s': more than %u members", spec,
					    RECFS_MAX_MEMBERS);
		}
		char **nv = realloc(v, (cnt + 1) * sizeof(*v));
		if (!nv)
			goto out_nomem;
		v = nv;
		v[cnt] = strndup(s, l);
		if (!v[cnt])
			goto out_nomem;
		cnt++;
		if (!c)
			break;
		s = c + 1;
	}
	*paths = v;
	*n = cnt;
	return 0;
out_nomem:
	recfs_spec_free(v, cnt);
	return recfs_seterr(-ENOMEM, "out of memory");
}

void recfs_spec_free(char **paths, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
}

int recfs_spec_from_args(int argc, char *const argv[], char ***paths, unsigned *n)
{
	char **all = NULL;
	unsigned cnt = 0;

	if (argc < 1)
		return recfs_seterr(-EINVAL, "no pack given");
	for (int i = 0; i < argc; i++) {
		char **v;
		unsigned k;
		int err = recfs_spec_split(argv[i], &v, &k);
		if (err) {
			recfs_spec_free(all, cnt);
			return err;
		}
		if (cnt + k > RECFS_MAX_MEMBERS) {
			recfs_spec_free(v, k);
			recfs_spec_free(all, cnt);
			return recfs_seterr(-E2BIG, "more than %u members", RECFS_MAX_MEMBERS);
		}
		char **na = realloc(all, (cnt + k) * sizeof(*na));
		if (!na) {
			recfs_spec_free(v, k);
			recfs_spec_free(all, cnt);
			return recfs_seterr(-ENOMEM, "out of memory");
		}
		all = na;
		memcpy(all + cnt, v, k * sizeof(*v));
		cnt += k;
		free(v);
	}
	*paths = all;
	*n = cnt;
	return 0;
}

/* The whole disk a block device belongs to (itself when it is one). */
static dev_t whole_disk(dev_t d)
{
	char p[96], buf[32];
	unsigned maj, min;
	snprintf(p, sizeof(p), "/sys/dev/block/%u:%u/partition", major(d), minor(d));
	if (access(p, F_OK))
		return d;
	snprintf(p, sizeof(p), "/sys/dev/block/%u:%u/../dev", major(d), minor(d));
	FILE *f = fopen(p, "r");
	if (!f)
		return d;
	bool ok = fgets(buf, sizeof(buf), f) && sscanf(buf, "%u:%u", &maj, &min) == 2;
	fclose(f);
	return ok ? makedev(maj, min) : d;
}

/* Do a and b name the same storage: the same file, the same block device,
 * or a disk and one of its partitions? */
static bool same_storage(const struct stat *a, const struct stat *b)
{
	if (S_ISBLK(a->st_mode) && S_ISBLK(b->st_mode))
		return a->st_rdev == b->st_rdev || whole_disk(a->st_rdev) == b->st_rdev ||
		       a->st_rdev == whole_disk(b->st_rdev);
	return !S_ISBLK(a->st_mode) && !S_ISBLK(b->st_mode) && a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

int recfs_spec_check_output(const char *spec, const char *what, const char *path, int fd)
{
	struct stat out, st;
	char **paths;
	unsigned n;
	int err;

	if (fd >= 0 ? fstat(fd, &out) : stat(path, &out))
		return 0; /* a file that does not exist yet is no member */
	if (!S_ISREG(out.st_mode) && !S_ISBLK(out.st_mode))
		return 0; /* a pipe, a terminal, /dev/null */
	if ((err = recfs_spec_split(spec, &paths, &n)))
		return err;
	for (unsigned i = 0; i < n && !err; i++)
		if (stat(paths[i], &st) == 0 && same_storage(&out, &st))
			err = recfs_seterr(-EEXIST, "%s %s is member %s of the pack: refusing to write over it",
					   what, path, paths[i]);
	recfs_spec_free(paths, n);
	return err;
}

int recfs_paths_distinct(char *const paths[], unsigned n)
{
	struct stat *st = calloc(n ? n : 1, sizeof(*st));
	int ret = 0;

	if (!st)
		return recfs_seterr(-ENOMEM, "out of memory");
	for (unsigned i = 0; i < n && !ret; i++) {
		if (stat(paths[i], &st[i]) < 0) {
			ret = recfs_seterr(-errno, "%s: %s", paths[i], strerror(errno));
			break;
		}
		for (unsigned j = 0; j < i; j++) {
			bool same = same_storage(&st[i], &st[j]);
			if (!strcmp(paths[i], paths[j]))
				ret = recfs_seterr(-EINVAL, "%s is named twice", paths[i]);
			else if (same)
				ret = recfs_seterr(-EINVAL, "%s and %s are the same member", paths[j],
						   paths[i]);
			if (ret)
				break;
		}
	}
	free(st);
	return ret;
}

/* Well-formed UTF-8 (Unicode 15, table 3-7): the second byte's range
 * depends on the first, which excludes overlong forms (C0, C1, E0 80-9F,
 * F0 80-8F), surrogates (ED A0-BF) and values above U+10FFFF (F4 90-BF,
 * F5-FF). */
size_t recfs_utf8_len(const void *s, size_t n)
{
	const unsigned char *c = s;
	unsigned char lo = 0x80, hi = 0xbf;
	size_t len;

	if (n == 0)
		return 0;
	if (c[0] < 0x80)
		return 1;
	if (c[0] >= 0xc2 && c[0] <= 0xdf)
		len = 2;
	else if (c[0] >= 0xe0 && c[0] <= 0xef) {
		len = 3;
		if (c[0] == 0xe0)
			lo = 0xa0;
		else if (c[0] == 0xed)
			hi = 0x9f;
	} else if (c[0] >= 0xf0 && c[0] <= 0xf4) {
		len = 4;
		if (c[0] == 0xf0)
			lo = 0x90;
		else if (c[0] == 0xf4)
			hi = 0x8f;
	} else
		return 0;
	if (n < len || c[1] < lo || c[1] > hi)
		return 0;
	for (size_t k = 2; k < len; k++)
		if ((c[k] & 0xc0) != 0x80)
			return 0;
	return len;
}

bool recfs_utf8_valid(const void *s, size_t n)
{
	const unsigned char *c = s;

	for (size_t i = 0, k; i < n; i += k)
		if ((k = recfs_utf8_len(c + i, n - i)) == 0)
			return false;
	return true;
}

void recfs_json_str(FILE *f, const char *s)
{
	size_t n = strlen(s);
	const unsigned char *c = (const unsigned char *)s;

	fputc('"', f);
	for (size_t i = 0, k; i < n; i += k) {
		k = recfs_utf8_len(c + i, n - i);
		if (k == 0) {
			fputs("\\ufffd", f); /* U+FFFD */
			k = 1;
		} else if (c[i] == '"' || c[i] == '\\')
			fprintf(f, "\\%c", c[i]);
		else if (c[i] == '\n')
			fputs("\\n", f);
		else if (c[i] == '\t')
			fputs("\\t", f);
		else if (c[i] < 0x20 || c[i] == 0x7f)
			fprintf(f, "\\u%04x", c[i]);
		else
			fwrite(c + i, 1, k, f);
	}
	fputc('"', f);
}

void recfs_json_name(FILE *f, const char *key, const char *s)
{
	size_t n = strlen(s);

	fputc('"', f);
	fputs(key, f);
	fputs("\": ", f);
	recfs_json_str(f, s);
	if (recfs_utf8_valid(s, n))
		return;
	fprintf(f, ", \"%s_hex\": \"", key);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%02x", (unsigned char)s[i]);
	fputc('"', f);
}
