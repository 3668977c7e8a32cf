/* SPDX-License-Identifier: GPL-2.0-only */
/* The commands offcpuctl dispatches to, one file each (cmd_NAME.c). */
#ifndef COMMANDS_H
#define COMMANDS_H

#include "cli.h"

int cmd_dump(const struct globals *g, int argc, char **argv);
int cmd_status(const struct globals *g, int argc, char **argv);
int cmd_flamegraph(const struct globals *g, int argc, char **argv);
int cmd_timeline(const struct globals *g, int argc, char **argv);
int cmd_diff(const struct globals *g, int argc, char **argv);
int cmd_stuck(const struct globals *g, int argc, char **argv);
int cmd_top(const struct globals *g, int argc, char **argv);
int cmd_hist(const struct globals *g, int argc, char **argv);
int cmd_wakers(const struct globals *g, int argc, char **argv);
int cmd_why(const struct globals *g, int argc, char **argv);

#endif
