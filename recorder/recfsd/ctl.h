/* SPDX-License-Identifier: MIT */
/*
 * recfsd's VSI-S keywords, private to recorder/recfsd/ctl*.c: the reply
 * being built, the time formats, and each keyword's handlers.  ctl.c holds
 * the keyword table and the transport's entry; each ctl_*.c one area of
 * the command set.
 */
#ifndef RECFS_RECORDER_RECFSD_CTL_H
#define RECFS_RECORDER_RECFSD_CTL_H

#include "recfsd.h"
#include "vsis.h"

/* status? bits, after Mark5/jive5ab's status word */
#define RD_ST_READY 0x1u
#define RD_ST_ERROR 0x2u
#define RD_ST_DELAYED 0x18u     /* bits 3 and 4: a delayed-completion command pending */
#define RD_ST_RECORD 0x40u
#define RD_ST_FULL 0x80u
#define RD_ST_PLAY 0x100u
#define RD_ST_D2F 0x1000u

struct rd_out {
	char *buf;
	size_t len, used;
	unsigned n;             /* fields so far (an empty one counts) */
};

void rd_field(struct rd_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
uint64_t rd_now_ns(void);
void rd_vsi_time(uint64_t ns, char *out, size_t len);
int64_t rd_vex_time(const char *s);
int rd_name_part(const char *s, size_t max);
/* scan_set's scan (d->check) sealed in every stream: 0, or VS_BUSY with
 * why (still recording, still being sealed) in o */
int rd_check_sealed(struct rd *d, struct rd_out *o);
/* a size: digits (base 0), then k or M when unit: 0, -1 not a number, -2
 * out of range */
int rd_num_ku(const char *s, bool unit, uint64_t max, uint64_t *out);
int rd_rec_alive(struct rd *d, const struct recfs_rec *rec, struct rd_out *o);
bool rd_check_rate(struct rd *d, const struct recfs_rec *rec, double *first, double *bps);
int rd_scan_off(struct rd *d, const char *s, bool is_start, const struct recfs_rec *rec, uint64_t start,
		uint64_t *out, struct rd_out *o);
/* the recording disk2file= copies of scan_set's scan: 0, or an rc with why */
int rd_d2f_rec(struct rd *d, struct recfs_rec *rec, struct rd_out *o);
bool rd_check_span(struct rd *d, const struct recfs_rec *rec, double *first, double *secs, uint64_t *missing);

/* A keyword's command or query: its return code, its reply fields in o. */
typedef int rd_handler(struct rd *d, unsigned np, char *const *p, struct rd_out *o);
rd_handler rd_record_q;
rd_handler rd_record_nthread;
rd_handler rd_record;
rd_handler rd_scan_set_q;
rd_handler rd_scan_set;
rd_handler rd_scan_check;
rd_handler rd_dir_info;
rd_handler rd_status;
rd_handler rd_error_q;
rd_handler rd_mode_q;
rd_handler rd_mode;
rd_handler rd_net_protocol_q;
rd_handler rd_net_protocol;
rd_handler rd_net_port_q;
rd_handler rd_net_port;
rd_handler rd_mtu_q;
rd_handler rd_mtu;
rd_handler rd_delete;
rd_handler rd_version_q;
rd_handler rd_dts_id_q;
rd_handler rd_os_rev_q;
rd_handler rd_evlbi_q;
rd_handler rd_evlbi;
rd_handler rd_tstat;
rd_handler rd_tstat_q;
rd_handler rd_rtime_q;
rd_handler rd_set_disks_q;
rd_handler rd_disk2file;
rd_handler rd_disk2file_q;
rd_handler rd_reset;
rd_handler rd_datastream_q;
rd_handler rd_datastream;
rd_handler rd_input_stream_q;
rd_handler rd_input_stream;
rd_handler rd_group_q;
rd_handler rd_group;
rd_handler rd_scan_info_q;
rd_handler rd_dialect_q;

#endif
