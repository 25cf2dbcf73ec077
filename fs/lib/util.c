/* SPDX-License-Identifier: MIT */
/* Errors, aligned buffers, sizes, times, PACK specs. */
#include <stdarg.h>
#include <sys/stat.h>
#include <stdio.h>
#include <time.h>
#include <uuid/uuid.h>

#include "internal.h"

static _Thread_local char errmsg[512];

const char *recfs_errmsg(void)
{
	return errmsg;
}

int recfs_seterr(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(errmsg, sizeof(errmsg), fmt, ap);
	va_end(ap);
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

int recfs_parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	uint64_t mul = 1;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	if (*end) {
		switch (*end) {
		case 'k': case 'K': mul = 1ull << 10; break;
		case 'm': case 'M': mul = 1ull << 20; break;
		case 'g': case 'G': mul = 1ull << 30; break;
		case 't': case 'T': mul = 1ull << 40; break;
		default: return -EINVAL;
		}
		end++;
		if (*end == 'i')
			end++;
		if (*end == 'B' || *end == 'b')
			end++;
		if (*end)
			return -EINVAL;
	}
	if (v > UINT64_MAX / mul)
		return -ERANGE;
	*out = v * mul;
	return 0;
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
			bool same = S_ISBLK(st[i].st_mode) && S_ISBLK(st[j].st_mode)
					    ? st[i].st_rdev == st[j].st_rdev
					    : st[i].st_dev == st[j].st_dev && st[i].st_ino == st[j].st_ino;
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

/* length of the valid UTF-8 sequence at c, 0 if invalid */
static int utf8_len(const unsigned char *c)
{
	int n = *c >= 0xf0 && *c <= 0xf4 ? 4 : *c >= 0xe0 ? 3 : *c >= 0xc2 && *c <= 0xdf ? 2 : 0;
	if (*c >= 0xf5 || (*c >= 0xe0 && *c < 0xf0 && n != 3))
		return 0;
	for (int k = 1; k < n; k++)
		if ((c[k] & 0xc0) != 0x80)
			return 0;
	return n;
}

void recfs_json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
		int n;
		if (*c == '"' || *c == '\\')
			fprintf(f, "\\%c", *c);
		else if (*c < 0x20 || *c == 0x7f)
			fprintf(f, "\\u%04x", *c);
		else if (*c < 0x80)
			fputc(*c, f);
		else if ((n = utf8_len(c)) > 0) {
			fwrite(c, 1, (size_t)n, f);
			c += n - 1;
		} else
			fprintf(f, "\\u%04x", *c);
	}
	fputc('"', f);
}
