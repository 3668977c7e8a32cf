/* SPDX-License-Identifier: GPL-2.0-only */
#include "frame_rules.h"

#include "symbolizer.h"

enum frame_step frame_rule(bool kernel, uint32_t i, uint32_t kept, int result)
{
    /* further up, a BPF program is another's, and keeps its name */
    if (result == SYMBOLIZER_SKIP)
        return kept == 0 ? FRAME_STEP_DROP : FRAME_STEP_KEEP;
    if (kernel)
        return FRAME_STEP_KEEP;
    /* the leaf is where the task was, no link of the frame-pointer chain: an
     * unknown one does not make the links above it junk */
    if (result < 0 && i > 0)
        return FRAME_STEP_UNKNOWN_LAST;
    return result == SYMBOLIZER_ROOT ? FRAME_STEP_LAST : FRAME_STEP_KEEP;
}
