/* SPDX-License-Identifier: MIT */
/*
 * VSI-S over TCP (vsis.h): the statement parser, the reply writer, and a
 * one-thread poll() server.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "vsis.h"

/* --------------------------------------------------------------- parser */
static char *vs_trim(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	char *e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
		*--e = 0;
	return s;
}

int vs_parse(char *stmt, struct vs_req *req, char *why, size_t whylen)
{
	memset(req, 0, sizeof(*req));
	char *sep = strpbrk(stmt, "=?");
	char *kw = stmt;
	if (sep) {
		req->query = *sep == '?';
		*sep = 0;
	}
	kw = vs_trim(kw);
	size_t kl = strlen(kw);
	if (kl == 0 || kl >= VS_KEYWORD_MAX) {
		snprintf(why, whylen, kl ? "keyword longer than %d bytes" : "no keyword", VS_KEYWORD_MAX - 1);
		snprintf(req->keyword, sizeof(req->keyword), "%s", kl ? "error" : "error");
		return VS_SYNTAX;
	}
	for (size_t i = 0; i < kl; i++)
		if (!isalnum((unsigned char)kw[i]) && kw[i] != '_') {
			snprintf(why, whylen, "a keyword is letters, digits and '_'");
			snprintf(req->keyword, sizeof(req->keyword), "error");
			return VS_SYNTAX;
		}
	memcpy(req->keyword, kw, kl + 1);
	if (!sep) {
		snprintf(why, whylen, "no '=' or '?' after the keyword");
		return VS_SYNTAX;
	}
	char *rest = sep + 1;
	if (!*vs_trim(rest))
		return 0; /* "record?" or "record=" alone */
	for (;;) {
		char *colon = strchr(rest, ':');
		if (colon)
			*colon = 0;
		if (req->nparam == VS_PARAMS_MAX) {
			snprintf(why, whylen, "more than %d parameters", VS_PARAMS_MAX);
			return VS_SYNTAX;
		}
		req->param[req->nparam++] = vs_trim(rest);
		if (!colon)
			break;
		rest = colon + 1;
	}
	return 0;
}

size_t vs_reply(char *out, size_t len, const char *keyword, bool query, int rc, const char *fields)
{
	int n = snprintf(out, len, "!%s %c %d%s%s ;", keyword, query ? '?' : '=', rc,
			 fields && fields[0] ? " : " : "", fields ? fields : "");
	return n < 0 ? 0 : (size_t)n < len ? (size_t)n : len - 1;
}

/* vsis.h; ':' never appears inside a field (rd_field and the parser's
 * reasons see to it), so " : " is always a separator */
size_t vs_reply_compact(char *out, size_t len, const char *keyword, bool query, int rc, const char *fields)
{
	int n = snprintf(out, len, "!%s%c%d", keyword, query ? '?' : '=', rc);
	size_t m = n < 0 ? 0 : (size_t)n < len ? (size_t)n : len - 1;
	if (fields && fields[0] && m + 1 < len)
		out[m++] = ':';
	for (const char *f = fields ? fields : ""; *f && m + 2 < len; f++) {
		if (!strncmp(f, " : ", 3)) {
			out[m++] = ':';
			f += 2;
		} else
			out[m++] = *f;
	}
	if (m + 1 < len)
		out[m++] = ';';
	out[m] = 0;
	return m;
}

/* --------------------------------------------------------------- server */
struct vs_client {
	int fd;
	char in[VS_LINE_MAX + 1];
	size_t inlen;
	bool discard;           /* the line was too long: drop to its newline */
	char *out;
	size_t outlen, outcap;
	uint64_t partial_since; /* when the unfinished line began (ms), 0 none */
	uint64_t since;         /* its accept's number: the order they came in */
	uint64_t last_line;     /* the last whole line arrived (ms), 0 none yet */
};

struct vs_server {
	int lfd, wake;
	unsigned port;
	vs_handler_fn fn;
	vs_line_end_fn end;
	void *ctx;
	pthread_t thr;
	uint64_t accept_after;  /* accept failed for want of descriptors: wait (ms) */
	uint64_t accepted;      /* connections accepted so far */
	struct vs_client cl[VS_CLIENTS_MAX];
	char fields[VS_FIELDS_MAX];             /* one statement's reply fields */
	char reply[VS_REPLY_MAX];               /* one statement's reply */
	bool compact;                           /* cplane's layout, fixed at start */
};

static uint64_t vs_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void vs_drop(struct vs_client *c)
{
	close(c->fd);
	free(c->out);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
}

static bool vs_flush(struct vs_client *c);

/* queue bytes for the client; false when it has left too much unread
 * (what the socket takes now is sent first: a long line's replies are
 * not held against a client that reads them) */
static bool vs_queue(struct vs_client *c, const char *p, size_t n)
{
	if (c->outlen + n > VS_OUT_MAX && (!vs_flush(c) || c->outlen + n > VS_OUT_MAX))
		return false;
	if (c->outlen + n > c->outcap) {
		size_t cap = c->outcap ? c->outcap : 1024;
		while (cap < c->outlen + n)
			cap *= 2;
		char *o = realloc(c->out, cap);
		if (!o)
			return false;
		c->out = o;
		c->outcap = cap;
	}
	memcpy(c->out + c->outlen, p, n);
	c->outlen += n;
	return true;
}

static bool vs_flush(struct vs_client *c)
{
	while (c->outlen) {
		ssize_t w = send(c->fd, c->out, c->outlen, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
		memmove(c->out, c->out + w, c->outlen - (size_t)w);
		c->outlen -= (size_t)w;
	}
	return true;
}

/* One whole line: every statement answered, the replies on one line, each
 * queued as it is made (no reply is cut short, however many statements the
 * line holds; a client that leaves more than VS_OUT_MAX unread is dropped). */
static bool vs_line(struct vs_server *s, struct vs_client *c, char *line)
{
	char why[128];
	const char *err = NULL;
	size_t n = strlen(line), nst = 0, m;
	if (n && line[n - 1] == '\r')
		line[--n] = 0;
	for (size_t i = 0; i < n && !err; i++)
		if ((unsigned char)line[i] < 0x20 && line[i] != '\t')
			err = "control characters in the line";
	/* statements on the line, counted before any is carried out */
	for (const char *p = line; *p && !err;) {
		size_t k = strcspn(p, ";");
		if (strspn(p, " \t") < k)
			nst++;
		p += k + (p[k] == ';');
	}
	if (nst > VS_STMTS_MAX) {
		snprintf(why, sizeof(why), "more than %d statements on a line, none carried out", VS_STMTS_MAX);
		err = why;
	}
	if (err) {
		m = vs_reply(s->reply, VS_REPLY_MAX, "error", false, 3, err);
		return vs_queue(c, s->reply, m) && vs_queue(c, "\n", 1);
	}
	bool first = true, ok = true;
	char *save = NULL;
	for (char *st = strtok_r(line, ";", &save); st; st = strtok_r(NULL, ";", &save)) {
		if (!*vs_trim(st))
			continue;
		struct vs_req req;
		int rc = vs_parse(st, &req, why, sizeof(why));
		if (rc) {
			m = (s->compact ? vs_reply_compact : vs_reply)(s->reply, VS_REPLY_MAX,
				req.keyword[0] ? req.keyword : "error", req.query, rc, why);
		} else {
			s->fields[0] = 0;
			rc = s->fn(s->ctx, &req, s->fields, VS_FIELDS_MAX);
			m = (s->compact ? vs_reply_compact : vs_reply)(s->reply, VS_REPLY_MAX, req.keyword, req.query,
								       rc, s->fields);
		}
		if ((!first && !vs_queue(c, " ", 1)) || !vs_queue(c, s->reply, m)) {
			ok = false; /* the client is dropped, but what ran is ended */
			break;
		}
		first = false;
	}
	/* always: a record=off that ran closes its scan here */
	if (s->end)
		s->end(s->ctx);
	return ok && (first || vs_queue(c, "\n", 1)); /* an empty line: no answer */
}

/* Read what the client sent; false to drop it. */
static bool vs_read(struct vs_server *s, struct vs_client *c)
{
	char buf[4096];
	ssize_t r = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);
	if (r == 0)
		return false; /* gone, maybe mid-line: nothing to do */
	if (r < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
	for (ssize_t i = 0; i < r; i++) {
		char ch = buf[i];
		if (ch == '\n') {
			if (c->discard) {
				c->discard = false;
			} else {
				c->in[c->inlen] = 0;
				if (!vs_line(s, c, c->in))
					return false;
			}
			c->inlen = 0;
			c->partial_since = 0;
			c->last_line = vs_ms();
			continue;
		}
		if (c->discard)
			continue;
		/* blanks before a line are not a line begun: the FS sends a
		 * space after some '\n's (disk_record_util.c, mk5b_mode_util.c) */
		if (c->inlen == 0 && (ch == ' ' || ch == '\t' || ch == '\r'))
			continue;
		if (ch == 0) { /* NUL cannot be in a line: answer once, drop the line */
			if (!vs_queue(c, "!error = 3 : NUL byte in the line ;\n", 36))
				return false;
			c->discard = true;
			continue;
		}
		if (c->inlen == VS_LINE_MAX) {
			char msg[96];
			int m = snprintf(msg, sizeof(msg), "!error = 3 : line longer than %d bytes ;\n", VS_LINE_MAX);
			if (!vs_queue(c, msg, (size_t)m))
				return false;
			c->discard = true;
			c->inlen = 0;
			continue;
		}
		if (c->inlen == 0)
			c->partial_since = vs_ms();
		c->in[c->inlen++] = ch;
	}
	return true;
}

/* The connection to close when every place is taken: the station's own
 * client sends whole lines in one write and stays, so first the one whose
 * unfinished line began longest ago (dripping), then the one connected
 * longest without a whole line (idle since it came), then the one whose
 * last line is oldest. */
static unsigned vs_victim(const struct vs_server *s)
{
	unsigned best = 0;
	uint64_t key[3] = { UINT64_MAX, UINT64_MAX, UINT64_MAX };
	for (unsigned i = 0; i < VS_CLIENTS_MAX; i++) {
		const struct vs_client *c = &s->cl[i];
		uint64_t k[3] = { c->partial_since ? c->partial_since : UINT64_MAX,
				  c->last_line ? UINT64_MAX : c->since, c->last_line };
		if (k[0] < key[0] || (k[0] == key[0] && (k[1] < key[1] || (k[1] == key[1] && k[2] < key[2])))) {
			memcpy(key, k, sizeof(key));
			best = i;
		}
	}
	return best;
}

/* A peer that vanished (power cut, cable) is found within about 90 s. */
static void vs_keepalive(int fd)
{
	int one = 1, idle = 60, intvl = 10, cnt = 3;
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
}

static void *vs_main(void *arg)
{
	struct vs_server *s = arg;
	struct pollfd pf[VS_CLIENTS_MAX + 2];
	struct vs_client *who[VS_CLIENTS_MAX]; /* the client of pf[k + 2] */
	pthread_setname_np(pthread_self(), "vsi-s");  /* top -H, /proc/PID/task/TID/comm */
	for (;;) {
		unsigned n = 0, nc = 0;
		/* out of descriptors: the listener stays readable, so leave it
		 * out of the poll for a while instead of spinning on accept */
		bool pause_accept = vs_ms() < s->accept_after;
		pf[n++] = (struct pollfd){ .fd = s->wake, .events = POLLIN };
		pf[n++] = (struct pollfd){ .fd = pause_accept ? -1 : s->lfd, .events = POLLIN };
		/* only the connected clients: poll fails (EINVAL) for more
		 * entries than the descriptor limit, and a low limit once ended
		 * this thread for good */
		for (unsigned i = 0; i < VS_CLIENTS_MAX; i++)
			if (s->cl[i].fd >= 0) {
				struct vs_client *c = who[nc++] = &s->cl[i];
				pf[n++] = (struct pollfd){ .fd = c->fd, .events = (short)(POLLIN | (c->outlen ? POLLOUT : 0)) };
			}
		if (poll(pf, n, pause_accept ? 100 : 1000) < 0) {
			if (errno != EINTR)
				poll(NULL, 0, 100); /* keep serving; never spin */
			continue;
		}
		if (pf[0].revents)
			break; /* vs_server_stop */
		if (pf[1].revents & POLLIN) {
			int fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
			if (fd < 0 && (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM))
				s->accept_after = vs_ms() + 100;
			if (fd >= 0) {
				unsigned i;
				for (i = 0; i < VS_CLIENTS_MAX && s->cl[i].fd >= 0; i++)
					;
				if (i == VS_CLIENTS_MAX) {
					/* full: the new one is served, the one least like
					 * a station's client goes (vs_victim) */
					static const char busy[] =
						"!error = 5 : too many control connections, this one closed ;\n";
					i = vs_victim(s);
					ssize_t w = send(s->cl[i].fd, busy, sizeof(busy) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
					(void)w;
					vs_drop(&s->cl[i]);
					for (unsigned k = 0; k < nc; k++)
						if (who[k] == &s->cl[i])
							pf[k + 2].revents = 0;
				}
				vs_keepalive(fd);
				s->cl[i].fd = fd;
				s->cl[i].since = ++s->accepted;
			}
		}
		for (unsigned k = 0; k < nc; k++) {
			struct vs_client *c = who[k];
			short ev = pf[k + 2].revents;
			bool ok = true;
			if (ev & (POLLIN | POLLHUP | POLLERR))
				ok = vs_read(s, c);
			if (ok && c->outlen)
				ok = vs_flush(c);
			/* a line begun and abandoned, or replies never read.  The
			 * clock is read after the read: one taken before it was
			 * older than a line the read began, and the unsigned
			 * difference dropped the client (a line split over two
			 * reads across a millisecond; seen under TSan) */
			if (ok && c->partial_since && vs_ms() - c->partial_since > VS_PARTIAL_TIMEOUT_MS)
				ok = false;
			if (!ok)
				vs_drop(c);
		}
	}
	return NULL;
}

struct vs_server *vs_server_start(const struct sockaddr_storage *addr, socklen_t len, vs_handler_fn fn,
				  vs_line_end_fn end, void *ctx, bool compact, char *err, size_t errlen)
{
	struct vs_server *s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	for (unsigned i = 0; i < VS_CLIENTS_MAX; i++)
		s->cl[i].fd = -1;
	s->fn = fn;
	s->end = end;
	s->ctx = ctx;
	s->compact = compact;
	s->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	s->lfd = socket(addr->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1;
	if (s->wake < 0 || s->lfd < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		goto out_free;
	}
	setsockopt(s->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(s->lfd, (const struct sockaddr *)addr, len) || listen(s->lfd, 16)) {
		snprintf(err, errlen, "cannot listen: %s", strerror(errno));
		goto out_free;
	}
	struct sockaddr_storage got;
	socklen_t gl = sizeof(got);
	getsockname(s->lfd, (struct sockaddr *)&got, &gl);
	s->port = ntohs(got.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&got)->sin6_port
						  : ((struct sockaddr_in *)&got)->sin_port);
	int e = pthread_create(&s->thr, NULL, vs_main, s);
	if (e) {
		snprintf(err, errlen, "cannot start the control thread: %s", strerror(e));
		goto out_free;
	}
	return s;
out_free:
	if (s->lfd >= 0)
		close(s->lfd);
	if (s->wake >= 0)
		close(s->wake);
	free(s);
	return NULL;
}

unsigned vs_server_port(const struct vs_server *s)
{
	return s->port;
}

void vs_server_stop(struct vs_server *s)
{
	uint64_t one = 1;
	ssize_t w = write(s->wake, &one, sizeof(one));
	(void)w;
	pthread_join(s->thr, NULL);
	for (unsigned i = 0; i < VS_CLIENTS_MAX; i++)
		if (s->cl[i].fd >= 0)
			vs_drop(&s->cl[i]);
	close(s->lfd);
	close(s->wake);
	free(s);
}
