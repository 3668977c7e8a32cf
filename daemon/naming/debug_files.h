/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Separate debug files, where distributions put the symbols they strip
 * (Debian's *-dbg and *-dbgsym packages): by build-id under
 * /usr/lib/debug/.build-id/, or by .gnu_debuglink next to the file, in its
 * .debug/ directory, or under /usr/lib/debug. Looked up inside the process's
 * own root first (a container has its own), then the host's.
 */
#ifndef DEBUG_FILES_H
#define DEBUG_FILES_H

#include <sys/types.h>

#include "elf_symbols.h"

/* Open the debug file for the file at path (as the process sees it).
 * Returns an fd, or -ENOENT when there is none. */
int debug_file_open(pid_t pid, const char *path, const struct elf_debug_ref *ref);

#endif
