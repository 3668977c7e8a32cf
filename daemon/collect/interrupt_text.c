/* SPDX-License-Identifier: GPL-2.0-only */
#include "interrupt_text.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "macro.h"

/* A function's start, then its end: the lowest symbol address above it. */
struct function_range {
    const char *name;
    struct text_range *r;
};

int interrupt_text_read(const char *path, struct interrupt_text *ret)
{
    _cleanup_fclose_ FILE *f = fopen(path, "re");
    struct function_range funcs[] = {{"asm_exc_nmi", &ret->nmi_entry},
                                     {"handle_softirqs", &ret->softirq}};
    char line[512], name[256], type;
    uint64_t addr;

    memset(ret, 0, sizeof(*ret));
    if (!f)
        return -errno;
    /* two passes: starts first, then ends (kallsyms is not sorted) */
    while (fgets(line, sizeof(line), f)) {
        if (sscanf(line, "%" SCNx64 " %c %255s", &addr, &type, name) != 3 || !addr)
            continue;
        if (strcmp(name, "__irqentry_text_start") == 0)
            ret->irq_entry.start = addr;
        else if (strcmp(name, "__irqentry_text_end") == 0)
            ret->irq_entry.end = addr;
        else if (strcmp(name, "__softirqentry_text_start") == 0)
            ret->softirq_entry.start = addr;
        else if (strcmp(name, "__softirqentry_text_end") == 0)
            ret->softirq_entry.end = addr;
        for (size_t i = 0; i < ARRAY_SIZE(funcs); i++)
            if (strcmp(name, funcs[i].name) == 0)
                funcs[i].r->start = addr;
    }
    rewind(f);
    while (fgets(line, sizeof(line), f)) {
        if (sscanf(line, "%" SCNx64 " %c", &addr, &type) != 2)
            continue;
        for (size_t i = 0; i < ARRAY_SIZE(funcs); i++) {
            struct text_range *r = funcs[i].r;

            if (r->start && addr > r->start && (!r->end || addr < r->end))
                r->end = addr;
        }
    }
    if (!ret->irq_entry.start || ret->irq_entry.end <= ret->irq_entry.start) {
        memset(ret, 0, sizeof(*ret));
        return -ENOENT;
    }
    return 0;
}
