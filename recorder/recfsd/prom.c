/* SPDX-License-Identifier: MIT */
/*
 * The Prometheus endpoint: exposition-format writer and a one-thread HTTP/1.x
 * server.  The server is one poll() loop over the listening socket and at most
 * MX_MAX_CLIENTS connections, every socket non-blocking: a client that
 * trickles its request, never sends it, or never reads its answer holds one
 * slot until its deadline and never the thread.  See metrics.h.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "prom.h"

/* ============================================================= writer */
enum mx_type { MX_NONE, MX_COUNTER, MX_GAUGE, MX_HISTOGRAM, MX_SUMMARY, MX_UNTYPED };
static const char *const mx_type_names[] = {
	[MX_COUNTER] = "counter", [MX_GAUGE] = "gauge",     [MX_HISTOGRAM] = "histogram",
	[MX_SUMMARY] = "summary", [MX_UNTYPED] = "untyped",
};

void mx_buf_init(struct mx_buf *b, size_t max)
{
	memset(b, 0, sizeof(*b));
	b->max = max ? max : MX_BUF_MAX;
}

void mx_buf_reset(struct mx_buf *b)
{
	for (size_t i = 0; i < b->nfam; i++)
		free(b->fams[i]);
	b->nfam = 0;
	b->len = 0;
	b->err = 0;
	b->errmsg[0] = 0;
	b->type = MX_NONE;
}

void mx_buf_free(struct mx_buf *b)
{
	mx_buf_reset(b);
	free(b->fams);
	free(b->p);
	mx_buf_init(b, b->max);
}

__attribute__((format(printf, 3, 4))) static int mx_fail(struct mx_buf *b, int err,
							  const char *fmt, ...)
{
	if (b->err)
		return b->err;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(b->errmsg, sizeof(b->errmsg), fmt, ap);
	va_end(ap);
	b->err = err;
	return err;
}

static void mx_put(struct mx_buf *b, const char *s, size_t n)
{
	if (b->err)
		return;
	if (n > b->max - b->len) {
		mx_fail(b, -E2BIG, "metrics body over its %zu-byte cap", b->max);
		return;
	}
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->len + n)
			cap *= 2;
		if (cap > b->max)
			cap = b->max;
		char *p = realloc(b->p, cap);
		if (!p) {
			mx_fail(b, -ENOMEM, "out of memory for the metrics body");
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
}

static void mx_puts(struct mx_buf *b, const char *s)
{
	mx_put(b, s, strlen(s));
}

/* length of the valid UTF-8 sequence at c (overlongs, surrogates and values
 * above U+10FFFF are invalid), 0 if none */
static size_t mx_utf8_len(const unsigned char *c)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n;

	if (*c < 0x80)
		return 1;
	if (*c >= 0xc2 && *c <= 0xdf)
		n = 2;
	else if (*c >= 0xe0 && *c <= 0xef) {
		n = 3;
		if (*c == 0xe0)
			lo = 0xa0;
		else if (*c == 0xed)
			hi = 0x9f;
	} else if (*c >= 0xf0 && *c <= 0xf4) {
		n = 4;
		if (*c == 0xf0)
			lo = 0x90;
		else if (*c == 0xf4)
			hi = 0x8f;
	} else
		return 0;
	if (c[1] < lo || c[1] > hi)
		return 0;
	for (size_t k = 2; k < n; k++)
		if ((c[k] & 0xc0) != 0x80)
			return 0;
	return n;
}

/* s escaped: backslash and newline always, the double quote in label values;
 * bytes that are not UTF-8 become U+FFFD (the body is declared UTF-8) */
static void mx_put_escaped(struct mx_buf *b, const char *s, bool quote)
{
	const unsigned char *c = (const unsigned char *)s;
	while (*c) {
		size_t run = 0, n;
		while (c[run] && c[run] != '\\' && c[run] != '\n' && !(quote && c[run] == '"') &&
		       (n = mx_utf8_len(c + run)) > 0)
			run += n;
		mx_put(b, (const char *)c, run);
		c += run;
		if (!*c)
			break;
		if (*c == '\\')
			mx_puts(b, "\\\\");
		else if (*c == '\n')
			mx_puts(b, "\\n");
		else if (*c == '"')
			mx_puts(b, "\\\"");
		else
			mx_puts(b, "\xef\xbf\xbd");
		c++;
	}
}

static bool mx_valid_name(const char *s, bool metric)
{
	if (!s || !*s)
		return false;
	for (const char *c = s; *c; c++) {
		bool alpha = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || *c == '_' ||
			     (metric && *c == ':');
		if (!alpha && !(c > s && *c >= '0' && *c <= '9'))
			return false;
	}
	return true;
}

static bool mx_ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n >= k && !strcmp(s + n - k, suffix);
}

static const char *mx_cur(const struct mx_buf *b)
{
	return b->nfam ? b->fams[b->nfam - 1] : NULL;
}

int mx_family(struct mx_buf *b, const char *name, const char *type, const char *help)
{
	int t = MX_NONE;

	if (b->err)
		return b->err;
	if (!mx_valid_name(name, true))
		return mx_fail(b, -EINVAL, "invalid metric name '%s'", name ? name : "(null)");
	for (int k = MX_COUNTER; k <= MX_UNTYPED; k++)
		if (type && !strcmp(type, mx_type_names[k]))
			t = k;
	if (t == MX_NONE)
		return mx_fail(b, -EINVAL, "%s: unknown metric type '%s'", name,
			       type ? type : "(null)");
	if ((t == MX_COUNTER) != mx_ends_with(name, "_total"))
		return mx_fail(b, -EINVAL, "%s: counters and only counters end in _total", name);
	if ((t == MX_HISTOGRAM || t == MX_SUMMARY) &&
	    (mx_ends_with(name, "_bucket") || mx_ends_with(name, "_sum") ||
	     mx_ends_with(name, "_count")))
		return mx_fail(b, -EINVAL, "%s: a %s's name takes no _bucket/_sum/_count", name,
			       type);
	for (size_t i = 0; i < b->nfam; i++)
		if (!strcmp(b->fams[i], name))
			return mx_fail(b, -EINVAL, "metric family %s declared twice", name);
	if (b->nfam == b->fam_cap) {
		size_t cap = b->fam_cap ? 2 * b->fam_cap : 16;
		char **f = realloc(b->fams, cap * sizeof(*f));
		if (!f)
			return mx_fail(b, -ENOMEM, "out of memory for the metrics body");
		b->fams = f;
		b->fam_cap = cap;
	}
	if (!(b->fams[b->nfam] = strdup(name)))
		return mx_fail(b, -ENOMEM, "out of memory for the metrics body");
	b->nfam++;
	b->type = t;
	mx_puts(b, "# HELP ");
	mx_puts(b, name);
	mx_puts(b, " ");
	mx_put_escaped(b, help ? help : "", false);
	mx_puts(b, "\n# TYPE ");
	mx_puts(b, name);
	mx_puts(b, " ");
	mx_puts(b, type);
	mx_puts(b, "\n");
	return b->err;
}

/* "name{labels" up to the closing brace (left open for le=) */
static int mx_put_series(struct mx_buf *b, const char *name, const char *const *labels,
			 const char *reserved)
{
	mx_puts(b, name);
	if (!labels || !labels[0])
		return b->err;
	mx_puts(b, "{");
	for (size_t i = 0; labels[i]; i += 2) {
		if (!mx_valid_name(labels[i], false) || !strncmp(labels[i], "__", 2))
			return mx_fail(b, -EINVAL, "%s: invalid label name '%s'", name, labels[i]);
		if (reserved && !strcmp(labels[i], reserved))
			return mx_fail(b, -EINVAL, "%s: label '%s' is the helper's to write", name,
				       reserved);
		if (!labels[i + 1])
			return mx_fail(b, -EINVAL, "%s: label '%s' has no value", name, labels[i]);
		for (size_t k = 0; k < i; k += 2)
			if (!strcmp(labels[k], labels[i]))
				return mx_fail(b, -EINVAL, "%s: label '%s' given twice", name,
					       labels[i]);
		if (i)
			mx_puts(b, ",");
		mx_puts(b, labels[i]);
		mx_puts(b, "=\"");
		mx_put_escaped(b, labels[i + 1], true);
		mx_puts(b, "\"");
	}
	return b->err;
}

static bool mx_has_label(const char *const *labels, const char *name)
{
	for (size_t i = 0; labels && labels[i] && labels[i + 1]; i += 2)
		if (!strcmp(labels[i], name))
			return true;
	return false;
}

/* the checks every sample passes, then the series; `neg` the value is < 0 */
static int mx_begin_sample(struct mx_buf *b, const char *name, const char *const *labels, bool neg)
{
	const char *fam = mx_cur(b);
	char want[3][160];
	bool ok = false;

	if (b->err)
		return b->err;
	if (!fam)
		return mx_fail(b, -EINVAL, "sample %s before any mx_family", name ? name : "(null)");
	if (!name)
		return mx_fail(b, -EINVAL, "%s: sample without a name", fam);
	switch (b->type) {
	case MX_HISTOGRAM:
		return mx_fail(b, -EINVAL, "%s: histogram samples are written by mx_histogram", name);
	case MX_SUMMARY:
		snprintf(want[0], sizeof(want[0]), "%s_sum", fam);
		snprintf(want[1], sizeof(want[1]), "%s_count", fam);
		ok = !strcmp(name, want[0]) || !strcmp(name, want[1]);
		if (!strcmp(name, fam)) {
			if (!mx_has_label(labels, "quantile"))
				return mx_fail(b, -EINVAL, "%s: summary sample without quantile",
					       name);
			ok = true;
		}
		break;
	default:
		ok = !strcmp(name, fam);
	}
	if (!ok)
		return mx_fail(b, -EINVAL, "sample %s is not in the current family %s", name, fam);
	if (neg && b->type == MX_COUNTER)
		return mx_fail(b, -EINVAL, "%s: a counter cannot be negative", name);
	mx_put_series(b, name, labels, NULL);
	if (labels && labels[0])
		mx_puts(b, "}");
	return b->err;
}

static void mx_put_f64(struct mx_buf *b, double v)
{
	char s[40];
	if (isnan(v))
		mx_puts(b, "NaN");
	else if (isinf(v))
		mx_puts(b, v > 0 ? "+Inf" : "-Inf");
	else {
		/* the shortest form that reads back as v (as Go's client prints,
		 * so a bucket's le="0.1" stays the same string) */
		for (int prec = 15; prec <= 17; prec++) {
			snprintf(s, sizeof(s), "%.*g", prec, v);
			if (strtod(s, NULL) == v)
				break;
		}
		mx_puts(b, s);
	}
}

int mx_sample_u64(struct mx_buf *b, const char *name, const char *const *labels, uint64_t v)
{
	char s[32];
	if (mx_begin_sample(b, name, labels, false))
		return b->err;
	snprintf(s, sizeof(s), " %llu\n", (unsigned long long)v);
	mx_puts(b, s);
	return b->err;
}

int mx_sample_i64(struct mx_buf *b, const char *name, const char *const *labels, int64_t v)
{
	char s[32];
	if (mx_begin_sample(b, name, labels, v < 0))
		return b->err;
	snprintf(s, sizeof(s), " %lld\n", (long long)v);
	mx_puts(b, s);
	return b->err;
}

int mx_sample_f64(struct mx_buf *b, const char *name, const char *const *labels, double v)
{
	if (mx_begin_sample(b, name, labels, v < 0))
		return b->err;
	mx_puts(b, " ");
	mx_put_f64(b, v);
	mx_puts(b, "\n");
	return b->err;
}

int mx_histogram(struct mx_buf *b, const char *name, const char *const *labels,
		 const double *bounds, const uint64_t *counts, size_t n, double sum)
{
	const char *fam = mx_cur(b);
	char series[160];
	uint64_t cum = 0;
	char s[32];

	if (b->err)
		return b->err;
	if (!fam || b->type != MX_HISTOGRAM || !name || strcmp(name, fam))
		return mx_fail(b, -EINVAL, "histogram %s is not the current histogram family",
			       name ? name : "(null)");
	for (size_t i = 0; i < n; i++)
		if (!isfinite(bounds[i]) || (i && bounds[i] <= bounds[i - 1]))
			return mx_fail(b, -EINVAL, "%s: bucket bounds not finite and increasing",
				       name);
	if (isnan(sum))
		return mx_fail(b, -EINVAL, "%s: sum is NaN", name);
	snprintf(series, sizeof(series), "%s_bucket", name);
	for (size_t i = 0; i <= n; i++) {
		cum += counts[i];
		if (mx_put_series(b, series, labels, "le"))
			return b->err;
		mx_puts(b, labels && labels[0] ? ",le=\"" : "{le=\"");
		if (i < n)
			mx_put_f64(b, bounds[i]);
		else
			mx_puts(b, "+Inf");
		snprintf(s, sizeof(s), "\"} %llu\n", (unsigned long long)cum);
		mx_puts(b, s);
	}
	snprintf(series, sizeof(series), "%s_sum", name);
	if (mx_put_series(b, series, labels, NULL))
		return b->err;
	mx_puts(b, labels && labels[0] ? "} " : " ");
	mx_put_f64(b, sum);
	mx_puts(b, "\n");
	snprintf(series, sizeof(series), "%s_count", name);
	mx_put_series(b, series, labels, NULL);
	snprintf(s, sizeof(s), "%s%llu\n", labels && labels[0] ? "} " : " ",
		 (unsigned long long)cum);
	mx_puts(b, s);
	return b->err;
}

/* ============================================================= server */
enum mx_state { MX_FREE, MX_READ, MX_SEND, MX_DRAIN };

#define MX_DRAIN_MS  1000       /* lingering close: read what the client still sends */
#define MX_DRAIN_MAX (64 << 10) /* ... up to this much */
#define MX_SNDBUF    (128 << 10)

struct mx_client {
	int fd;
	enum mx_state st;
	uint64_t deadline;      /* ms, CLOCK_MONOTONIC */
	char head[MX_HEAD_MAX];
	size_t hlen;
	char hdr[512];          /* the response head */
	size_t hdr_len, sent;   /* sent: of hdr_len + body bytes */
	struct mx_buf body;
	bool with_body;
	size_t drained;
};

struct mx_server {
	int lfd, wake;
	unsigned port;
	mx_render_fn fn;
	void *ctx;
	pthread_t thread;
	uint64_t pause_accept; /* ms: accept failed for lack of fds */
	struct mx_client cl[MX_MAX_CLIENTS];
	struct mx_server_stats st;
};

static uint64_t mx_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void mx_count(uint64_t *c)
{
	__atomic_fetch_add(c, 1, __ATOMIC_RELAXED);
}

void mx_server_stats(const struct mx_server *s, struct mx_server_stats *st)
{
	st->accepted = __atomic_load_n(&s->st.accepted, __ATOMIC_RELAXED);
	st->scrapes = __atomic_load_n(&s->st.scrapes, __ATOMIC_RELAXED);
	st->rejected = __atomic_load_n(&s->st.rejected, __ATOMIC_RELAXED);
	st->bad = __atomic_load_n(&s->st.bad, __ATOMIC_RELAXED);
	st->timeouts = __atomic_load_n(&s->st.timeouts, __ATOMIC_RELAXED);
	st->errors = __atomic_load_n(&s->st.errors, __ATOMIC_RELAXED);
}

unsigned mx_server_port(const struct mx_server *s)
{
	return s->port;
}

static const char *mx_reason(int code)
{
	switch (code) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 503: return "Service Unavailable";
	case 505: return "HTTP Version Not Supported";
	}
	return "Error";
}

/* RFC 9110 IMF-fixdate, independent of the locale */
static void mx_date(char *out, size_t len)
{
	static const char *const wd[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
	static const char *const mo[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
					 "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	snprintf(out, len, "%s, %02d %s %04d %02d:%02d:%02d GMT", wd[tm.tm_wday], tm.tm_mday,
		 mo[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

static bool mx_tchar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

/*
 * The status a complete request head gets: 200 for GET/HEAD /metrics.
 * Lines end in CRLF or a bare LF (RFC 9112 2.2 allows accepting it).
 */
static int mx_parse(const char *h, size_t len, bool *is_head)
{
	const char *end = h + len, *p = h, *eol;
	size_t ml, tl;
	bool host = false;

	while (p < end && (*p == '\r' || *p == '\n')) /* RFC 9112 2.2: empty lines first */
		p++;
	const char *meth = p;
	eol = memchr(p, '\n', (size_t)(end - p));
	if (!eol)
		return 400;
	const char *le = eol > p && eol[-1] == '\r' ? eol - 1 : eol;
	/* method SP target SP HTTP/d.d */
	for (ml = 0; p + ml < le && mx_tchar((unsigned char)p[ml]); ml++)
		;
	if (!ml || p + ml >= le || p[ml] != ' ')
		return 400;
	const char *t = p + ml + 1;
	for (tl = 0; t + tl < le && t[tl] > 0x20 && t[tl] < 0x7f; tl++)
		;
	if (!tl || t + tl >= le || t[tl] != ' ')
		return 400;
	const char *v = t + tl + 1;
	if (le - v != 8 || memcmp(v, "HTTP/", 5) || v[5] < '0' || v[5] > '9' || v[6] != '.' ||
	    v[7] < '0' || v[7] > '9')
		return 400;
	if (v[5] != '1')
		return 505;
	bool http10 = v[7] == '0';

	/* header fields: name ":" value, no obsolete line folding, no CTLs */
	for (p = eol + 1; p < end; p = eol + 1) {
		eol = memchr(p, '\n', (size_t)(end - p));
		if (!eol)
			return 400;
		le = eol > p && eol[-1] == '\r' ? eol - 1 : eol;
		if (le == p)
			break; /* the empty line */
		size_t nl;
		for (nl = 0; p + nl < le && mx_tchar((unsigned char)p[nl]); nl++)
			;
		if (!nl || p + nl >= le || p[nl] != ':')
			return 400;
		for (const char *c = p + nl + 1; c < le; c++)
			if (((unsigned char)*c < 0x20 && *c != '\t') || *c == 0x7f)
				return 400;
		if (nl == 4 && !strncasecmp(p, "host", 4)) {
			if (host)
				return 400; /* RFC 9112 3.2 */
			host = true;
		}
	}
	if (!http10 && !host)
		return 400; /* RFC 9112 3.2: HTTP/1.1 needs exactly one Host */

	/* absolute-form "http://authority/path" names the same path */
	if (tl > 7 && !strncasecmp(t, "http://", 7)) {
		const char *slash = memchr(t + 7, '/', tl - 7);
		size_t skip = slash ? (size_t)(slash - t) : tl;
		t += skip;
		tl -= skip;
	}
	if (!tl || *t != '/')
		return 400;
	size_t pl = 0;
	while (pl < tl && t[pl] != '?')
		pl++;
	if (pl != 8 || memcmp(t, "/metrics", 8))
		return 404;
	bool get = ml == 3 && !memcmp(meth, "GET", 3);
	*is_head = ml == 4 && !memcmp(meth, "HEAD", 4);
	if (!get && !*is_head)
		return 405;
	return 200;
}

/* a request line that cannot become valid: bad bytes before the method ends */
static bool mx_bad_early(const struct mx_client *c)
{
	size_t i = 0;
	while (i < c->hlen && (c->head[i] == '\r' || c->head[i] == '\n'))
		i++;
	for (size_t m = 0; i < c->hlen; i++, m++) {
		if (c->head[i] == ' ')
			return m == 0;
		if (!mx_tchar((unsigned char)c->head[i]) || m >= 32)
			return true;
	}
	return false;
}

/* offset just past the empty line ending the head, 0 if not there yet */
static size_t mx_head_end(const struct mx_client *c, size_t from)
{
	for (size_t i = from; i < c->hlen; i++) {
		if (c->head[i] != '\n')
			continue;
		if (i + 1 < c->hlen && c->head[i + 1] == '\n')
			return i + 2;
		if (i + 2 < c->hlen && c->head[i + 1] == '\r' && c->head[i + 2] == '\n')
			return i + 3;
	}
	return 0;
}

static void mx_close(struct mx_client *c, bool abort)
{
	if (abort) {
		/* a reset frees the kernel's queue for a client that stopped reading */
		struct linger l = {.l_onoff = 1, .l_linger = 0};
		setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
	}
	close(c->fd);
	c->fd = -1;
	c->st = MX_FREE;
	mx_buf_free(&c->body);
}

/* 1 all sent, 0 the socket is full, <0 the client is gone */
static int mx_send_some(struct mx_client *c)
{
	for (;;) {
		size_t blen = c->with_body ? c->body.len : 0;
		struct iovec iov[2];
		int n = 0;

		if (c->sent >= c->hdr_len + blen)
			return 1;
		if (c->sent < c->hdr_len)
			iov[n++] = (struct iovec){c->hdr + c->sent, c->hdr_len - c->sent};
		size_t bo = c->sent > c->hdr_len ? c->sent - c->hdr_len : 0;
		if (bo < blen)
			iov[n++] = (struct iovec){c->body.p + bo, blen - bo};
		struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)n};
		ssize_t w = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			return -errno;
		}
		c->sent += (size_t)w;
	}
}

static void mx_send_step(struct mx_client *c, uint64_t now)
{
	int r = mx_send_some(c);
	if (r < 0) {
		mx_close(c, true);
	} else if (r > 0) {
		/* lingering close: a reset now could destroy the answer in flight */
		shutdown(c->fd, SHUT_WR);
		c->st = MX_DRAIN;
		c->drained = 0;
		c->deadline = now + MX_DRAIN_MS;
	}
}

static void mx_respond(struct mx_server *s, struct mx_client *c, int code, bool is_head,
		       uint64_t now)
{
	char date[40], msg[200];
	const char *ctype = "text/plain; charset=utf-8";

	if (code == 200) {
		mx_buf_reset(&c->body);
		s->fn(s->ctx, &c->body);
		if (c->body.err) {
			snprintf(msg, sizeof(msg), "metrics: %s\n", c->body.errmsg);
			code = 500;
			mx_count(&s->st.errors);
		} else {
			ctype = "text/plain; version=0.0.4; charset=utf-8";
			mx_count(&s->st.scrapes);
		}
	} else {
		snprintf(msg, sizeof(msg), "%d %s\n", code, mx_reason(code));
		mx_count(code == 408 ? &s->st.timeouts : &s->st.bad);
	}
	if (code != 200) {
		mx_buf_reset(&c->body);
		mx_puts(&c->body, msg);
	}
	mx_date(date, sizeof(date));
	int n = snprintf(c->hdr, sizeof(c->hdr),
			 "HTTP/1.1 %d %s\r\nDate: %s\r\nContent-Type: %s\r\n"
			 "Content-Length: %zu\r\nConnection: close\r\n%s\r\n",
			 code, mx_reason(code), date, ctype, c->body.len,
			 code == 405 ? "Allow: GET, HEAD\r\n" : "");
	c->hdr_len = (size_t)n < sizeof(c->hdr) ? (size_t)n : sizeof(c->hdr) - 1;
	c->with_body = !is_head;
	c->sent = 0;
	c->st = MX_SEND;
	c->deadline = now + MX_SEND_TIMEOUT_MS;
	mx_send_step(c, now);
}

static void mx_read_step(struct mx_server *s, struct mx_client *c, uint64_t now)
{
	size_t old = c->hlen, end;
	ssize_t r;

	do
		r = recv(c->fd, c->head + c->hlen, sizeof(c->head) - c->hlen, MSG_DONTWAIT);
	while (r < 0 && errno == EINTR);
	if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return;
	if (r <= 0) {
		mx_close(c, r < 0); /* gone before asking */
		return;
	}
	c->hlen += (size_t)r;
	if ((end = mx_head_end(c, old >= 2 ? old - 2 : 0))) {
		bool is_head = false;
		int code = mx_parse(c->head, end, &is_head);
		mx_respond(s, c, code, code == 200 && is_head, now);
	} else if (mx_bad_early(c)) {
		mx_respond(s, c, 400, false, now);
	} else if (c->hlen == sizeof(c->head)) {
		mx_respond(s, c, 431, false, now);
	}
}

static void mx_drain_step(struct mx_client *c)
{
	ssize_t r = recv(c->fd, c->head, sizeof(c->head), MSG_DONTWAIT);
	if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	if (r > 0 && (c->drained += (size_t)r) <= MX_DRAIN_MAX)
		return;
	mx_close(c, false);
}

static void mx_accept(struct mx_server *s, uint64_t now)
{
	static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\n"
				   "Content-Length: 24\r\nConnection: close\r\n\r\n"
				   "503 too many connections";

	for (int k = 0; k < 64; k++) {
		int fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				s->pause_accept = now + 100; /* EMFILE & co: do not spin */
			return;
		}
		mx_count(&s->st.accepted);
		struct mx_client *c = NULL;
		for (unsigned i = 0; i < MX_MAX_CLIENTS && !c; i++)
			if (s->cl[i].st == MX_FREE)
				c = &s->cl[i];
		if (!c) {
			/* the socket's buffer is empty: this never blocks */
			send(fd, busy, sizeof(busy) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
			close(fd);
			mx_count(&s->st.rejected);
			continue;
		}
		int sndbuf = MX_SNDBUF;
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
		c->fd = fd;
		c->st = MX_READ;
		c->hlen = 0;
		c->deadline = now + MX_HEAD_TIMEOUT_MS;
	}
}

static void *mx_thread(void *arg)
{
	struct mx_server *s = arg;
	struct pollfd pf[2 + MX_MAX_CLIENTS];
	unsigned idx[MX_MAX_CLIENTS];

	for (;;) {
		uint64_t now = mx_now_ms();
		int64_t timeout = -1;
		nfds_t n = 0;

		pf[n++] = (struct pollfd){.fd = s->wake, .events = POLLIN};
		bool listening = now >= s->pause_accept;
		pf[n++] = (struct pollfd){.fd = listening ? s->lfd : -1, .events = POLLIN};
		if (!listening)
			timeout = (int64_t)(s->pause_accept - now);
		for (unsigned i = 0; i < MX_MAX_CLIENTS; i++) {
			struct mx_client *c = &s->cl[i];
			if (c->st == MX_FREE)
				continue;
			idx[n - 2] = i;
			pf[n++] = (struct pollfd){
				.fd = c->fd, .events = c->st == MX_SEND ? POLLOUT : POLLIN};
			int64_t left = c->deadline > now ? (int64_t)(c->deadline - now) : 0;
			if (timeout < 0 || left < timeout)
				timeout = left;
		}
		if (poll(pf, n, (int)timeout) < 0) {
			if (errno != EINTR)
				usleep(10000); /* ENOMEM: try again */
			continue;
		}
		if (pf[0].revents)
			break;
		now = mx_now_ms();
		for (nfds_t k = 2; k < n; k++) {
			struct mx_client *c = &s->cl[idx[k - 2]];
			if (!pf[k].revents)
				continue;
			if (c->st == MX_READ)
				mx_read_step(s, c, now);
			else if (c->st == MX_SEND)
				mx_send_step(c, now);
			else if (c->st == MX_DRAIN)
				mx_drain_step(c);
		}
		for (unsigned i = 0; i < MX_MAX_CLIENTS; i++) {
			struct mx_client *c = &s->cl[i];
			if (c->st == MX_FREE || now < c->deadline)
				continue;
			if (c->st == MX_READ) {
				mx_respond(s, c, 408, false, now);
			} else if (c->st == MX_SEND) {
				mx_count(&s->st.timeouts);
				mx_close(c, true);
			} else {
				mx_close(c, false);
			}
		}
		if (pf[1].revents)
			mx_accept(s, now);
	}
	return NULL;
}

struct mx_server *mx_server_start(const struct sockaddr_storage *addr, socklen_t len,
				  mx_render_fn fn, void *ctx, char *err, size_t errlen)
{
	char host[NI_MAXHOST] = "?", serv[NI_MAXSERV] = "?";
	struct mx_server *s;
	sigset_t all, old;
	int one = 1, e;

	getnameinfo((const struct sockaddr *)addr, len, host, sizeof(host), serv, sizeof(serv),
		    NI_NUMERICHOST | NI_NUMERICSERV);
	s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, errlen, "metrics: out of memory");
		return NULL;
	}
	s->fn = fn;
	s->ctx = ctx;
	for (unsigned i = 0; i < MX_MAX_CLIENTS; i++) {
		s->cl[i].fd = -1;
		mx_buf_init(&s->cl[i].body, 0);
	}
	s->lfd = socket(addr->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->lfd < 0)
		goto out_errno;
	setsockopt(s->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(s->lfd, (const struct sockaddr *)addr, len) || listen(s->lfd, 64))
		goto out_errno_close_listen;
	struct sockaddr_storage bound;
	socklen_t blen = sizeof(bound);
	if (getsockname(s->lfd, (struct sockaddr *)&bound, &blen))
		goto out_errno_close_listen;
	s->port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
						     : ((struct sockaddr_in *)&bound)->sin_port);
	s->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (s->wake < 0)
		goto out_errno_close_listen;
	/* signals are for the daemon's other threads (SIGTERM seals the scan) */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	e = pthread_create(&s->thread, NULL, mx_thread, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (e) {
		errno = e;
		goto out_errno_close_wake;
	}
	return s;

out_errno_close_wake:
	e = errno;
	close(s->wake);
	errno = e;
out_errno_close_listen:
	e = errno;
	close(s->lfd);
	errno = e;
out_errno:
	snprintf(err, errlen, "metrics: cannot listen on %s%s%s:%s: %s",
		 addr->ss_family == AF_INET6 ? "[" : "", host,
		 addr->ss_family == AF_INET6 ? "]" : "", serv, strerror(errno));
	free(s);
	return NULL;
}

void mx_server_stop(struct mx_server *s)
{
	uint64_t one = 1;

	if (!s)
		return;
	while (write(s->wake, &one, sizeof(one)) < 0 && errno == EINTR)
		;
	pthread_join(s->thread, NULL);
	for (unsigned i = 0; i < MX_MAX_CLIENTS; i++)
		if (s->cl[i].st != MX_FREE)
			mx_close(&s->cl[i], false);
	close(s->wake);
	close(s->lfd);
	free(s);
}
