/* SPDX-License-Identifier: GPL-2.0-only */
#include "unwind_service.h"

#include <errno.h>

#include "call_frames.h"
#include "frame_address.h"
#include "macro.h"

/* The call frame rule at a.pc, for the BPF side to recover callers with. */
int32_t unwind_service_rule(struct symbolizer *sym, const struct offcpu_announce *a)
{
    _cleanup_close_ int fd = -EBADF;
    uint64_t vaddr;
    int32_t rule;

    fd = symbolizer_open_code(sym, (pid_t)a->tgid, a->exec_id,
                              frame_lookup_address(a->pc, a->kind == OFFCPU_ANNOUNCE_UNWIND_CALLER),
                              &vaddr);
    if (fd < 0)
        return OFFCPU_UNWIND_STOP;
    return call_frames_cfa_offset(fd, vaddr, &rule) < 0 ? OFFCPU_UNWIND_STOP : rule;
}
