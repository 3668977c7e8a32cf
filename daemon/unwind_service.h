/* SPDX-License-Identifier: GPL-2.0-only */
/* Unwind rules the BPF side asks for: where the caller's return address lies
 * past code without frame pointers, read from the code's call frame
 * information. */
#ifndef UNWIND_SERVICE_H
#define UNWIND_SERVICE_H

#include <linux/types.h>
#include <stdint.h>

#include "offcpu.h"
#include "symbolizer.h"

/* The rule for the announcement's pc: a CFA offset from the user sp, or
 * OFFCPU_UNWIND_STOP when none can be told. */
int32_t unwind_service_rule(struct symbolizer *sym, const struct offcpu_announce *a);

#endif
