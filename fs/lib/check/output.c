/* SPDX-License-Identifier: MIT */
#include "ck.h"

/* ------------------------------------------------------------------ output */
void ck_out(struct ck *c, const char *fmt, ...)
{
	char line[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (c->o->out)
		c->o->out(c->o->ctx, line);
}

/* after an unexpected inconsistency, preen mode only reports */
/* Has the caller cancelled the check (opts.cancel)?  Main thread only. */
bool ck_stop_now(struct ck *c)
{
	if (!c->cancelled && c->o->cancel && c->o->cancel(c->o->ctx))
		c->cancelled = true;
	return c->cancelled;
}

bool ck_can_write(const struct ck *c)
{
	return c->o->mode != RECFS_CHECK_NO && !c->degraded && !c->dup && !c->sb_tie && !c->cancelled &&
	       !c->preen_stop;
}

/* Report problem num; returns true if the repair is to be done. */
bool ck_problem(struct ck *c, int num, const struct recfs_pctx *pc)
{
	const struct recfs_problem *p = recfs_problem_get(num);
	char msg[1200], q[400];
	bool yes = false;

	recfs_problem_format(p->msg, pc, msg, sizeof(msg));
	c->st->problems++;
	if (p->flags & RECFS_PRF_NOFIX) {
		ck_out(c, "%s: %s.", p->code, msg);
		c->st->unfixed++;
		c->status |= (p->flags & RECFS_PRF_FATAL) ? RECFS_FSCK_ERROR : RECFS_FSCK_UNCORRECTED;
		return false;
	}
	recfs_problem_format(p->fix, pc, q, sizeof(q));
	if (!ck_can_write(c)) {
		if (c->preen_stop)
			ck_out(c, "%s: %s.", p->code, msg);
		else
			ck_out(c, "%s: %s.  %s? no", p->code, msg, q);
	} else if (c->o->mode == RECFS_CHECK_YES) {
		ck_out(c, "%s: %s.  %s? yes", p->code, msg, q);
		yes = true;
	} else if (c->o->mode == RECFS_CHECK_PREEN) {
		if (p->flags & RECFS_PRF_PREEN) {
			ck_out(c, "%s: %s.  %s? yes", p->code, msg, q);
			yes = true;
		} else {
			ck_out(c, "%s: %s.  UNEXPECTED INCONSISTENCY: run fsck.recfs without -p.",
			    p->code, msg);
			c->preen_stop = true;
		}
	} else {
		ck_out(c, "%s: %s.", p->code, msg);
		int a = c->o->ask ? c->o->ask(c->o->ctx, q) : RECFS_ASK_NO;
		if (a == RECFS_ASK_CANCEL) {
			c->cancelled = true;
			c->status |= RECFS_FSCK_CANCELLED;
		}
		yes = a == RECFS_ASK_YES;
	}
	if (yes) {
		c->st->fixed++;
		c->status |= RECFS_FSCK_CORRECTED;
	} else {
		c->st->unfixed++;
		c->status |= RECFS_FSCK_UNCORRECTED;
	}
	return yes;
}
