/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Call frame information (.eh_frame, .debug_frame): where code compiled
 * without frame pointers keeps its return address. Debian's glibc is such
 * code; a frame-pointer walk through one of its syscall wrappers skips the
 * wrapper's caller. The BPF side recovers it with the rules read here.
 *
 * x86-64 only: a rule is "the CFA is rsp + offset", the return address
 * lying just below the CFA.
 */
#ifndef CALL_FRAMES_H
#define CALL_FRAMES_H

#include <linux/types.h>
#include <stdint.h>

#include "offcpu.h"

/* For the ELF file open on fd and the ELF address vaddr: *ret is the offset
 * from rsp to the CFA (> 0), or OFFCPU_UNWIND_STOP where there is no
 * rsp-based rule (the frame pointer holds the CFA, or nothing is known): the
 * frame-pointer walk knows better there. Returns 0 or a negative errno. */
int call_frames_cfa_offset(int fd, uint64_t vaddr, int32_t *ret);

#endif
