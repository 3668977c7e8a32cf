/* SPDX-License-Identifier: GPL-2.0-only */
#include "frame_where.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define BUILD_ID_UNKNOWN "-"

void frame_where_set(struct frame_where *w, const char *module, uint64_t offset,
                     const uint8_t *build_id, size_t build_id_len)
{
    w->in_file = true;
    w->offset = offset;
    w->build_id[0] = '\0';
    for (size_t i = 0; i < build_id_len && i < FRAME_WHERE_BUILD_ID_MAX; i++)
        snprintf(w->build_id + 2 * i, 3, "%02x", build_id[i]);
    snprintf(w->module, sizeof(w->module), "%s", module);
}

void frame_where_set_source(struct frame_where *w, const char *path, uint32_t line)
{
    *w = (struct frame_where){.in_file = true, .line = line};
    snprintf(w->module, sizeof(w->module), "%s", path);
}

void frame_where_format(const struct frame_where *w, char *offset, char *file)
{
    if (!w->in_file) {
        offset[0] = file[0] = '\0';
        return;
    }
    if (w->line)
        snprintf(offset, FRAME_WHERE_TEXT_MAX, "line %" PRIu32, w->line);
    else
        snprintf(offset, FRAME_WHERE_TEXT_MAX, "0x%" PRIx64, w->offset);
    snprintf(file, FRAME_WHERE_TEXT_MAX, "%s %s", w->build_id[0] ? w->build_id : BUILD_ID_UNKNOWN,
             w->module);
}

int frame_where_parse(const char *offset, const char *file, struct frame_where *w)
{
    const char *path = file ? strchr(file, ' ') : NULL;
    size_t id_len = path ? (size_t)(path - file) : 0;
    char end;

    *w = (struct frame_where){0};
    if (!path || !offset ||
        (sscanf(offset, "0x%" SCNx64 "%c", &w->offset, &end) != 1 &&
         (sscanf(offset, "line %" SCNu32 "%c", &w->line, &end) != 1 || !w->line)) ||
        id_len >= sizeof(w->build_id) || strlen(path + 1) >= sizeof(w->module))
        return -EINVAL;
    if (strncmp(file, BUILD_ID_UNKNOWN " ", 2) != 0)
        memcpy(w->build_id, file, id_len);
    strcpy(w->module, path + 1);
    w->in_file = true;
    return 0;
}
