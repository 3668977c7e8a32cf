/* SPDX-License-Identifier: GPL-2.0-only */
/* CPython's location table (3.11 to 3.13) (co_linetable, CPython's Objects/locations.md):
 * the line of an instruction, as PyCode_Addr2Line gives it. */
#ifndef PYTHON_LINES_H
#define PYTHON_LINES_H

#include <stddef.h>
#include <stdint.h>

/* The line of instruction lasti (in 2-byte code units) of a code object
 * starting at firstlineno whose location table is table[0, size): firstlineno
 * for lasti < 0, -1 where the table says "no location" or ends before lasti. */
int32_t python_line(const uint8_t *table, size_t size, int32_t firstlineno, int32_t lasti);

#endif
