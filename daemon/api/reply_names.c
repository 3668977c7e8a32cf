/* SPDX-License-Identifier: GPL-2.0-only */
#include "reply_names.h"

#include <errno.h>
#include <stdlib.h>

#include "name_escape.h"

int reply_names_init(struct reply_names *m, const struct intern *in)
{
    /* calloc of what may be megabytes: untouched pages cost nothing */
    *m = (struct reply_names){
        .in = in, .nstrings = in->strings.nslots, .nstacks = in->stacks.nslots};
    m->strings = calloc(m->nstrings ?: 1, sizeof(*m->strings));
    m->stacks = calloc(m->nstacks ?: 1, sizeof(*m->stacks));
    if (!m->strings || !m->stacks) {
        reply_names_done(m);
        return -ENOMEM;
    }
    return 0;
}

void reply_names_done(struct reply_names *m)
{
    for (uint32_t i = 0; m->strings && i < m->nstrings; i++)
        json_decref(m->strings[i]);
    for (uint32_t i = 0; m->stacks && i < m->nstacks; i++)
        json_decref(m->stacks[i]);
    free(m->strings);
    free(m->stacks);
    *m = (struct reply_names){0};
}

json_t *reply_names_string(struct reply_names *m, uint32_t id)
{
    if (id >= m->nstrings)
        return name_json(intern_string_get(m->in, id));
    if (!m->strings[id])
        m->strings[id] = name_json(intern_string_get(m->in, id));
    return json_incref(m->strings[id]);
}

json_t *reply_names_stack(struct reply_names *m, uint32_t id)
{
    const uint32_t *frames;
    uint32_t n;
    json_t *a;

    if (id < m->nstacks && m->stacks[id])
        return json_incref(m->stacks[id]);
    a = json_array();
    frames = intern_stack_get(m->in, id, &n);
    for (uint32_t i = 0; a && i < n; i++)
        if (json_array_append_new(a, reply_names_string(m, frames[i])) < 0) {
            json_decref(a);
            return NULL;
        }
    if (a && id < m->nstacks)
        m->stacks[id] = json_incref(a);
    return a;
}
