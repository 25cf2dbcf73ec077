/* SPDX-License-Identifier: MIT */
/*
 * The Prometheus endpoint: the exposition-format writer, and /metrics served
 * with libmicrohttpd (connection limits in total and per client address,
 * idle time-outs, bounded request heads).  See prom.h.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
/*
 * libmicrohttpd serves the endpoint (DESIGN.md says why not a hand-written
 * server): one internal polling thread, every socket non-blocking, the
 * limits below.  The render callback runs in that thread.
 */
struct mx_server {
	struct MHD_Daemon *mhd;
	unsigned port;
	mx_render_fn fn;
	void *ctx;
	struct mx_buf body; /* only the MHD thread touches it */
	struct mx_server_stats st;
};

static void mx_count(uint64_t *c)
{
	__atomic_fetch_add(c, 1, __ATOMIC_RELAXED);
}

void mx_server_stats(const struct mx_server *s, struct mx_server_stats *st)
{
	st->accepted = __atomic_load_n(&s->st.accepted, __ATOMIC_RELAXED);
	st->scrapes = __atomic_load_n(&s->st.scrapes, __ATOMIC_RELAXED);
	st->bad = __atomic_load_n(&s->st.bad, __ATOMIC_RELAXED);
	st->errors = __atomic_load_n(&s->st.errors, __ATOMIC_RELAXED);
}

unsigned mx_server_port(const struct mx_server *s)
{
	return s->port;
}

static enum MHD_Result mx_reply(struct MHD_Connection *conn, unsigned code, const char *ctype,
				const char *body, size_t len)
{
	struct MHD_Response *r =
		MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	if (code == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	enum MHD_Result ret = MHD_queue_response(conn, code, r);
	MHD_destroy_response(r);
	return ret;
}

/* GET and HEAD /metrics (the query string is ignored); 404, 405 else */
static enum MHD_Result mx_handle(void *cls, struct MHD_Connection *conn, const char *url,
				 const char *method, const char *version, const char *upload,
				 size_t *upload_len, void **req)
{
	struct mx_server *s = cls;
	char msg[200];
	unsigned code = 200;

	(void)version;
	(void)upload;
	(void)upload_len;
	(void)req;
	if (strcmp(url, "/metrics"))
		code = MHD_HTTP_NOT_FOUND;
	else if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		code = MHD_HTTP_METHOD_NOT_ALLOWED;
	if (code != 200) {
		mx_count(&s->st.bad);
		int n = snprintf(msg, sizeof(msg), "%u %s\n", code, MHD_get_reason_phrase_for(code));
		return mx_reply(conn, code, "text/plain; charset=utf-8", msg, (size_t)n);
	}
	mx_buf_reset(&s->body);
	s->fn(s->ctx, &s->body);
	if (s->body.err) {
		mx_count(&s->st.errors);
		int n = snprintf(msg, sizeof(msg), "metrics: %s\n", s->body.errmsg);
		return mx_reply(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "text/plain; charset=utf-8", msg,
				(size_t)n);
	}
	mx_count(&s->st.scrapes);
	return mx_reply(conn, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", s->body.p,
			s->body.len);
}

static void mx_notify(void *cls, struct MHD_Connection *conn, void **sock_ctx,
		      enum MHD_ConnectionNotificationCode code)
{
	struct mx_server *s = cls;

	(void)conn;
	(void)sock_ctx;
	if (code == MHD_CONNECTION_NOTIFY_STARTED)
		mx_count(&s->st.accepted);
}

struct mx_server *mx_server_start(const struct sockaddr_storage *addr, socklen_t len,
				  mx_render_fn fn, void *ctx, char *err, size_t errlen)
{
	char host[NI_MAXHOST] = "?", serv[NI_MAXSERV] = "?";
	struct mx_server *s;
	sigset_t all, old;
	int one = 1, lfd, e;

	getnameinfo((const struct sockaddr *)addr, len, host, sizeof(host), serv, sizeof(serv),
		    NI_NUMERICHOST | NI_NUMERICSERV);
	s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, errlen, "metrics: out of memory");
		return NULL;
	}
	s->fn = fn;
	s->ctx = ctx;
	mx_buf_init(&s->body, 0);
	/* bound here: the message names the address, port 0 is read back */
	lfd = socket(addr->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (lfd < 0)
		goto out_errno;
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (const struct sockaddr *)addr, len) || listen(lfd, 64))
		goto out_errno_close_listen;
	struct sockaddr_storage bound;
	socklen_t blen = sizeof(bound);
	if (getsockname(lfd, (struct sockaddr *)&bound, &blen))
		goto out_errno_close_listen;
	s->port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
						     : ((struct sockaddr_in *)&bound)->sin_port);
	/* signals are for the daemon's other threads (SIGTERM seals the scan) */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	s->mhd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO |
					  (addr->ss_family == AF_INET6 ? MHD_USE_IPv6 : 0),
				  0, NULL, NULL, mx_handle, s,
				  MHD_OPTION_LISTEN_SOCKET, (MHD_socket)lfd,
				  MHD_OPTION_CONNECTION_LIMIT, (unsigned)MX_MAX_CLIENTS,
				  MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)MX_MAX_PER_IP,
				  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)MX_IDLE_TIMEOUT_S,
				  MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)MX_CONN_MEMORY,
				  MHD_OPTION_NOTIFY_CONNECTION, mx_notify, s,
				  MHD_OPTION_END);
	e = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!s->mhd) {
		errno = e ? e : EINVAL;
		goto out_errno_close_listen;
	}
	return s;

out_errno_close_listen:
	e = errno;
	close(lfd);
	errno = e;
out_errno:
	snprintf(err, errlen, "metrics: cannot listen on %s%s%s:%s: %s",
		 addr->ss_family == AF_INET6 ? "[" : "", host,
		 addr->ss_family == AF_INET6 ? "]" : "", serv, strerror(errno));
	mx_buf_free(&s->body);
	free(s);
	return NULL;
}

void mx_server_stop(struct mx_server *s)
{
	if (!s)
		return;
	MHD_stop_daemon(s->mhd); /* joins its thread, closes every socket */
	mx_buf_free(&s->body);
	free(s);
}
