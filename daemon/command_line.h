/* SPDX-License-Identifier: GPL-2.0-only */
/* offcpud's command line: the configuration file it names, then its options
 * over the file's settings. */
#ifndef COMMAND_LINE_H
#define COMMAND_LINE_H

#include "config.h"

/* Returns 0 to go on, 1 to exit successfully (help, version), -EINVAL on
 * misuse (said on stderr). Parses the same arguments again on a reload. */
int command_line_parse(int argc, char **argv, struct config *cfg);

#endif
