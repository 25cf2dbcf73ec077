/* SPDX-License-Identifier: MIT */
/* The engine's options: see opts.h. */
#include <errno.h>
#include <string.h>

#include "opts.h"
#include "recfs/recfs.h"

void rr_opts_default(struct rr_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->rcvbuf = 64ull << 20;
	o->qd = 4;
	o->commit_ns = 1000000000ull;
}

int rr_opt_parse(struct rr_opts *o, int c, const char *arg)
{
	uint64_t v;
	int err = 0;

	switch (c) {
	case 'F':
		if (!strcmp(arg, "vdif"))
			o->fmt_vdif = true;
		else if (!strcmp(arg, "raw"))
			o->fmt_vdif = false;
		else
			err = recfs_seterr(-EINVAL, "--format: '%s' is not raw or vdif", arg);
		break;
	case 'P':
		err = recfs_parse_bytes("--packet-size", arg, 1, 65507, &v);
		o->packet_size = err ? o->packet_size : (uint32_t)v;
		break;
	case 'S':
		err = recfs_parse_num("--strip", arg, 0, 64, &v);
		o->strip = err ? o->strip : (uint32_t)v;
		break;
	case RR_OPT_RCVBUF:
		err = recfs_parse_bytes("--rcvbuf", arg, 4096, 1ull << 31, &o->rcvbuf);
		break;
	case 'Q':
		err = recfs_parse_num("--queue-depth", arg, 1, 256, &v);
		o->qd = err ? o->qd : (uint32_t)v;
		break;
	case 'b':
		err = recfs_parse_bytes("--buffer", arg, 1u << 20, 1ull << 40, &o->buffer);
		break;
	case 'c':
		err = recfs_parse_secs("--commit-interval", arg, 10000000ull, 3600000000000ull,
				       &o->commit_ns);
		break;
	case RR_OPT_NO_RT:
		o->no_rt = true;
		break;
	default:
		return 0;
	}
	return err ? -EINVAL : 1;
}
