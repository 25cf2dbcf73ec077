/* SPDX-License-Identifier: MIT */
#ifndef RECFS_ADMIN_CTL_H
#define RECFS_ADMIN_CTL_H
#include <stdbool.h>
/* recfs ctl [-t SECONDS] [ADDR:PORT] STATEMENT... */
int recfs_ctl_main(int argc, char **argv);
#endif
