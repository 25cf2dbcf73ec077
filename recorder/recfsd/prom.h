/* SPDX-License-Identifier: MIT */
/*
 * A Prometheus /metrics endpoint: the text exposition format (version 0.0.4)
 * written through helpers that refuse what the format does not allow, and
 * the server (libmicrohttpd) that serves it.  No dependency on the engine:
 * the caller's render callback reads its live state on each scrape.
 * Prefix: mx_.
 */
#ifndef RECFS_RECFSD_PROM_H
#define RECFS_RECFSD_PROM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* ------------------------------------------------------------- writer */
#define MX_BUF_MAX (8u << 20) /* a body larger than this is an error */

/*
 * The body being built.  Every helper checks what it writes; the first
 * mistake (a bad name, a sample outside its family, a family declared twice,
 * a negative counter, the buffer over its cap, out of memory) is kept in
 * `err` (negative errno) and `errmsg`, and every later call does nothing.  The
 * server answers 500 with errmsg instead of a malformed body.
 */
struct mx_buf {
	char *p;
	size_t len, cap, max;
	int err;
	char errmsg[160];
	/* families declared so far (each at most once) and the current one */
	char **fams;
	size_t nfam, fam_cap;
	int type; /* enum mx_type of the current family */
};

void mx_buf_init(struct mx_buf *b, size_t max);
/* empty it for the next body, keeping the memory */
void mx_buf_reset(struct mx_buf *b);
void mx_buf_free(struct mx_buf *b);

/*
 * Start a family: "# HELP name help" and "# TYPE name type".  type is one of
 * "counter", "gauge", "histogram", "summary", "untyped".  A counter's name
 * must end in _total.  Returns 0 or the buffer's (sticky) error.
 */
int mx_family(struct mx_buf *b, const char *name, const char *type, const char *help);

/*
 * One sample of the current family.  `labels` is NULL or a NULL-terminated
 * list of name, value pairs: build it with MX_LABELS("input", "udp0", ...).
 * Label values may hold any bytes but NUL; they are escaped.  The name must
 * be the family's (or name_bucket/_sum/_count for histograms and summaries).
 * Integers are printed exactly, doubles in the shortest form that reads
 * back as the same double (at most 17 digits), NaN as NaN and infinities as
 * +Inf/-Inf.  Use mx_sample(), which picks the type.
 */
#define MX_LABELS(...) ((const char *const[]){__VA_ARGS__, NULL})
int mx_sample_u64(struct mx_buf *b, const char *name, const char *const *labels, uint64_t v);
int mx_sample_i64(struct mx_buf *b, const char *name, const char *const *labels, int64_t v);
int mx_sample_f64(struct mx_buf *b, const char *name, const char *const *labels, double v);
#define mx_sample(b, name, labels, v)                                                              \
	_Generic((v),                                                                              \
		float: mx_sample_f64,                                                              \
		double: mx_sample_f64,                                                             \
		signed char: mx_sample_i64,                                                        \
		short: mx_sample_i64,                                                              \
		int: mx_sample_i64,                                                                \
		long: mx_sample_i64,                                                               \
		long long: mx_sample_i64,                                                          \
		default: mx_sample_u64)(b, name, labels, v)

/*
 * A whole histogram series (the current family must be a histogram):
 * counts[i] observations <= bounds[i] and > bounds[i-1], for i < n, and
 * counts[n] above bounds[n-1].  Writes the cumulative name_bucket{le=...}
 * lines, +Inf included, then name_sum and name_count.  bounds must be
 * finite and strictly increasing.
 */
int mx_histogram(struct mx_buf *b, const char *name, const char *const *labels,
		 const double *bounds, const uint64_t *counts, size_t n, double sum);

/* ------------------------------------------------------------- server */
struct mx_server;
typedef void (*mx_render_fn)(void *ctx, struct mx_buf *b);

/* libmicrohttpd's limits.  A client that trickles its request keeps a
 * connection for as long as it sends a byte within the idle time-out, so
 * what keeps scrapes served is room: a client address holds at most
 * MX_MAX_PER_IP connections, and MX_MAX_CLIENTS in all are many more than
 * one address may take (tests/integration/6j). */
#define MX_MAX_CLIENTS     128      /* connections at once; more are closed at accept */
#define MX_MAX_PER_IP      8        /* of those, from one client address */
#define MX_IDLE_TIMEOUT_S  5        /* a connection silent this long is closed */
#define MX_CONN_MEMORY     (32 << 10) /* a connection's buffers; a longer head gets 431 */

/*
 * Listen on addr and serve GET/HEAD /metrics from a thread: fn(ctx, b) is
 * called there for each scrape and must only read live state (it runs
 * while other clients wait).  The socket is bound and listening when this
 * returns, so a scrape right after succeeds.  NULL on error, with a
 * one-line message in err.
 */
struct mx_server *mx_server_start(const struct sockaddr_storage *addr, socklen_t len,
				  mx_render_fn fn, void *ctx, char *err, size_t errlen);
/* the bound port (useful after binding port 0) */
unsigned mx_server_port(const struct mx_server *s);
/* stop the thread, close every connection, free */
void mx_server_stop(struct mx_server *s);

/* What the server saw; readable from any thread (relaxed snapshots).
 * Connections libmicrohttpd closes over its limits are not seen. */
struct mx_server_stats {
	uint64_t accepted;   /* connections accepted */
	uint64_t scrapes;    /* 200 answers (GET and HEAD) */
	uint64_t bad;        /* 404 and 405 answers */
	uint64_t errors;     /* 500 (render error) */
};
void mx_server_stats(const struct mx_server *s, struct mx_server_stats *st);

#endif
