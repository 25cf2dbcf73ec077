/* SPDX-License-Identifier: MIT */
/*
 * The engine's options, shared by recfs-record and recfsd: one table, one
 * set of ranges, one wording of every refusal.  A program puts
 * RR_ENGINE_LONGOPTS in its getopt_long table and RR_ENGINE_SHORTOPTS in its
 * option string, and hands every option it does not know to rr_opt_parse.
 */
#ifndef RECFS_RECORDER_OPTS_H
#define RECFS_RECORDER_OPTS_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>

struct rr_opts {
	bool fmt_vdif;        /* --format vdif */
	uint32_t packet_size; /* --packet-size (UDP), 0: learned */
	uint32_t strip;       /* --strip: bytes before each datagram's payload */
	uint64_t rcvbuf;      /* --rcvbuf */
	uint32_t qd;          /* --queue-depth: writes in flight per member */
	uint64_t buffer;      /* --buffer: ring bytes, 0: the program's default */
	uint64_t commit_ns;   /* --commit-interval */
	bool no_rt;           /* --no-realtime */
};

/* long-option codes of the options without a short one */
enum { RR_OPT_RCVBUF = 0x100, RR_OPT_NO_RT };

#define RR_ENGINE_SHORTOPTS "F:P:S:Q:b:c:"
#define RR_ENGINE_LONGOPTS                                                  \
	{ "format", required_argument, NULL, 'F' },                         \
	{ "packet-size", required_argument, NULL, 'P' },                    \
	{ "strip", required_argument, NULL, 'S' },                          \
	{ "rcvbuf", required_argument, NULL, RR_OPT_RCVBUF },               \
	{ "queue-depth", required_argument, NULL, 'Q' },                    \
	{ "buffer", required_argument, NULL, 'b' },                         \
	{ "commit-interval", required_argument, NULL, 'c' },                \
	{ "no-realtime", no_argument, NULL, RR_OPT_NO_RT }

/* The defaults: raw, 64 MiB socket buffer, depth 4, a 1 s commit. */
void rr_opts_default(struct rr_opts *o);
/* Option c with argument arg: 1 taken, 0 not an engine option, -EINVAL a
 * bad value (the reason in recfs_errmsg(), naming the option). */
int rr_opt_parse(struct rr_opts *o, int c, const char *arg);

#endif
