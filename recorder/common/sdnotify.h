/* SPDX-License-Identifier: MIT */
/* sd_notify(3) without libsystemd: one datagram to $NOTIFY_SOCKET. */
#ifndef RECFS_RECORDER_SDNOTIFY_H
#define RECFS_RECORDER_SDNOTIFY_H

/*
 * Send state ("READY=1", "STOPPING=1", "STATUS=...", several separated by
 * newlines) to the service manager.  Returns 1 when sent, 0 when
 * NOTIFY_SOCKET is not set (not run by systemd), or a negative errno:
 * -EAFNOSUPPORT for an address that is neither a path nor '@abstract',
 * -ENAMETOOLONG, or what socket()/sendto() failed with.
 */
int rr_sd_notify(const char *state);

/* Ready: "READY=1\n" to fd (when >= 0, then closed unless it is 0, 1 or 2: --ready-fd) and to
 * systemd.  Shared by recfs-record and recfsd. */
void rr_notify_ready(int fd);

#endif
