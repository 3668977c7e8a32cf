/* SPDX-License-Identifier: GPL-2.0-only */
#include "frame_detail.h"

#include "frame_where.h"
#include "name_escape.h"

/* offset and file are the ring's two strings of where (NULL: not known). */
static json_t *frame_json(const char *name, const char *offset, const char *file)
{
    json_t *o = json_pack("{s:o}", "name", name_json(name));
    struct frame_where w;

    if (!o || frame_where_parse(offset, file, &w) < 0)
        return o;
    if (w.line) { /* a Python function's: its source line */
        json_object_set_new(o, "file", name_json(w.module));
        json_object_set_new(o, "line", json_integer(w.line));
        return o;
    }
    json_object_set_new(o, "module", name_json(w.module));
    json_object_set_new(o, "offset", json_integer((json_int_t)w.offset));
    if (w.build_id[0])
        json_object_set_new(o, "build_id", json_string(w.build_id));
    return o;
}

json_t *frame_detail_json(const struct intern *in, uint32_t ustack, uint32_t uwhere)
{
    uint32_t n = 0, nwhere = 0;
    const uint32_t *names = ustack ? intern_stack_get(in, ustack, &n) : NULL;
    const uint32_t *wheres = uwhere ? intern_stack_get(in, uwhere, &nwhere) : NULL;
    json_t *a = json_array();

    /* built together, two where strings per name; anything else is not trusted */
    if (nwhere != 2 * n)
        wheres = NULL;
    for (uint32_t i = 0; a && i < n; i++)
        json_array_append_new(a,
                              frame_json(intern_string_get(in, names[i]),
                                         wheres ? intern_string_get(in, wheres[2 * i]) : NULL,
                                         wheres ? intern_string_get(in, wheres[2 * i + 1]) : NULL));
    return a;
}
