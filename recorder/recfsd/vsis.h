/* SPDX-License-Identifier: MIT */
/*
 * VSI-S over TCP: the control transport of recfsd.  A line holds statements
 * `keyword = p1 : p2 ... ;` (commands) or `keyword ? p1 ... ;` (queries);
 * each gets a reply `!keyword = rc [: field]* ;` (or `?`), the replies to a
 * line on one line.  One thread serves every client with poll(); input is
 * hostile until parsed: lines are capped, floods and stalled clients are
 * dropped, and nothing a client sends can block another or the recording.
 * No dependency on the engine.  Prefix: vs_.
 */
#ifndef RECFS_RECORDER_VSIS_H
#define RECFS_RECORDER_VSIS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#define VS_LINE_MAX 4096      /* a longer line: rc 3, the rest of it discarded */
#define VS_KEYWORD_MAX 32     /* keyword bytes, letters, digits and '_' */
#define VS_PARAMS_MAX 16      /* parameters a statement may carry */
#define VS_STMTS_MAX 64       /* statements on one line: more, rc 3 and none run */
#define VS_FIELDS_MAX 16384   /* one reply's fields (scan_check? of 32 streams) */
#define VS_REPLY_MAX (VS_FIELDS_MAX + 64)
#define VS_OUT_MAX (64u << 10) /* replies a client leaves unread: more, dropped */
#define VS_CLIENTS_MAX 32     /* connections at once; more are told and closed */
#define VS_PARTIAL_TIMEOUT_MS 30000 /* a line begun and not ended: dropped */

/* VSI-S return codes (the VSI-S specification, as Mark5 and jive5ab use them) */
enum vs_rc {
	VS_OK = 0,            /* action done */
	VS_INITIATED = 1,     /* action initiated, completes later (record=off) */
	VS_NOT_IMPL = 2,      /* not implemented (here, or not as a command/query) */
	VS_SYNTAX = 3,        /* syntax error */
	VS_FAILED = 4,        /* error while carrying it out */
	VS_BUSY = 5,          /* busy: try again */
	VS_CONFLICT = 6,      /* inconsistent or conflicting request */
	VS_NO_KEYWORD = 7,    /* no such keyword */
	VS_PARAM = 8,         /* parameter error */
};

struct vs_req {
	char keyword[VS_KEYWORD_MAX];
	bool query;
	unsigned nparam;
	char *param[VS_PARAMS_MAX];   /* into the caller's statement copy, trimmed */
};

/* Parse one statement (no ';') in place: 0, or 3 with the reason in why. */
int vs_parse(char *stmt, struct vs_req *req, char *why, size_t whylen);

/* Format the reply to a statement with rc and fields ("f1 : f2", may be
 * empty) into out (len bytes, NUL-terminated, cut to fit); its length. */
size_t vs_reply(char *out, size_t len, const char *keyword, bool query, int rc, const char *fields);
/* The same as Mark6 cplane writes it (its Response.py): no spaces around
 * the separators, !record?0:0:off:0:; (a field's own spaces stay). */
size_t vs_reply_compact(char *out, size_t len, const char *keyword, bool query, int rc, const char *fields);

/* The handler: rc for one statement, its reply fields in fields. */
typedef int (*vs_handler_fn)(void *ctx, const struct vs_req *req, char *fields, size_t len);
/* Called after the last statement of each line. */
typedef void (*vs_line_end_fn)(void *ctx);

struct vs_server;
/* Listening when it returns; NULL with a one-line message in err.  With
 * compact, replies have no spaces around the separators, as Mark6 cplane
 * writes them (fixed before the control thread starts). */
struct vs_server *vs_server_start(const struct sockaddr_storage *addr, socklen_t len, vs_handler_fn fn,
				  vs_line_end_fn end, void *ctx, bool compact, char *err, size_t errlen);
unsigned vs_server_port(const struct vs_server *s);
void vs_server_stop(struct vs_server *s);

#endif
