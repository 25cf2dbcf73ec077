/* SPDX-License-Identifier: MIT */
/*
 * recfsd's VSI-S: datastream.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"

/* datastream? [NAME] : jive5ab's (datastream.cc): how many, then their
 * names; with NAME its match.  recfsd's datastreams are --split's lanes,
 * t<THREAD> matching VDIF thread THREAD ('.THREAD', jive5ab's form).
 * datastream= add, remove, clear and reset answer 2: the lanes are fixed
 * when recfsd starts. */
int rd_datastream_q(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
{
	if (np > 0 && p[0][0]) {
		for (unsigned k = 0; k < d->nsplit; k++) {
			char nm[16];
			snprintf(nm, sizeof(nm), "t%u", d->split_thread[k]);
			if (!strcmp(nm, p[0])) {
				rd_field(o, "%s", nm);
				rd_field(o, ".%u", d->split_thread[k]);
				return VS_OK;
			}
		}
		rd_field(o, "The stream '%.32s' is not defined", p[0]);
		return VS_PARAM;
	}
	rd_field(o, "%u", d->nsplit);
	for (unsigned k = 0; k < d->nsplit; k++)
		rd_field(o, "t%u", d->split_thread[k]);
	return VS_OK;
}

int rd_datastream(struct rd *d, unsigned np, char *const *p, struct rd_out *o)
{
	rd_field(o, "datastreams are recfsd's --split vdif-thread lanes, set when it starts");
	return VS_NOT_IMPL;
}
